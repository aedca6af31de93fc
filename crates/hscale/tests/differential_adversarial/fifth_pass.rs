//! A fifth pass (issue 29, round three), written from README's promise in
//! classes the earlier passes cover thinly or not at all: window
//! functions over several partitions (frames, LAG / LEAD / NTH_VALUE,
//! named windows, filters on ranks), GROUP BY ... WITH ROLLUP, DISTINCT
//! with ORDER BY and LIMIT, JSON functions, collations in ORDER BY and
//! GROUP BY, NULL ordering, integer overflow in SUM / AVG and in
//! expressions over merged aggregates, DECIMAL edges, date and time
//! edges, string functions on multi-byte data, UNION ALL / UNION DISTINCT
//! across partitioned and global tables, subqueries in select lists, and
//! keys holding a backslash under NO_BACKSLASH_ESCAPES.

use super::statements::{o, u, w, Step};

pub fn push(s: &mut Vec<Step>) {
    // Window functions over several partitions.
    o(
        s,
        &[
            "SELECT oid, k, SUM(qty) OVER (PARTITION BY k) AS s FROM od ORDER BY oid, k",
            "SELECT oid, k, ROW_NUMBER() OVER (ORDER BY qty DESC, oid, k) AS rn FROM od ORDER BY rn",
            "SELECT k, oid, RANK() OVER (PARTITION BY k ORDER BY qty) AS r FROM od ORDER BY k, oid",
            "SELECT oid, k, LAG(oid, 1, 0) OVER (PARTITION BY k ORDER BY oid) AS p FROM od ORDER BY oid, k",
            "SELECT oid, k, LEAD(note) OVER (ORDER BY oid, k) AS nx FROM od ORDER BY oid, k",
            "SELECT oid, k, FIRST_VALUE(qty) OVER (PARTITION BY k ORDER BY oid ROWS UNBOUNDED PRECEDING) AS f FROM od ORDER BY oid, k",
            "SELECT oid, k, LAST_VALUE(qty) OVER (PARTITION BY k ORDER BY oid ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS l FROM od ORDER BY oid, k",
            "SELECT oid, k, NTH_VALUE(oid, 2) OVER (PARTITION BY k ORDER BY oid) AS n2 FROM od ORDER BY oid, k",
            "SELECT oid, k, AVG(qty) OVER (ORDER BY oid, k ROWS 2 PRECEDING) AS a FROM od ORDER BY oid, k",
            "SELECT oid, k, COUNT(note) OVER (PARTITION BY k ORDER BY oid RANGE UNBOUNDED PRECEDING) AS c FROM od ORDER BY oid, k",
            "SELECT id, k, SUM(bi) OVER (PARTITION BY k ORDER BY id) AS s FROM ty ORDER BY id, k",
            "SELECT name, DENSE_RANK() OVER (ORDER BY v) AS r FROM sk ORDER BY name",
            "SELECT kind, id, PERCENT_RANK() OVER (PARTITION BY kind ORDER BY at, id) AS pr FROM ev ORDER BY kind, id",
            "SELECT id, CUME_DIST() OVER (ORDER BY amt) AS cd FROM ev ORDER BY id",
            "SELECT id, NTILE(4) OVER (ORDER BY at, id) AS t FROM ev ORDER BY id",
            "SELECT oid, k, qty - LAG(qty) OVER (ORDER BY oid, k) AS d FROM od ORDER BY oid, k",
            "SELECT * FROM (SELECT oid, k, RANK() OVER (PARTITION BY k ORDER BY qty DESC, oid) AS r FROM od) t WHERE r = 1 ORDER BY k",
            "SELECT oid, k, SUM(qty) OVER w1 AS s, MIN(qty) OVER w1 AS m FROM od WINDOW w1 AS (PARTITION BY k ORDER BY oid) ORDER BY oid, k",
            "SELECT DISTINCT k, COUNT(*) OVER (PARTITION BY k) AS c FROM od ORDER BY k",
            "SELECT k, SUM(qty) AS s, RANK() OVER (ORDER BY SUM(qty) DESC, k) AS r FROM od GROUP BY k ORDER BY r",
        ],
    );
    // GROUP BY ... WITH ROLLUP.
    u(
        s,
        &[
            "SELECT k, SUM(qty) FROM od GROUP BY k WITH ROLLUP",
            "SELECT k, COUNT(*), MAX(price) FROM od GROUP BY k WITH ROLLUP",
            "SELECT kind, DATE(at) AS d, COUNT(*) FROM ev GROUP BY kind, d WITH ROLLUP",
            "SELECT k, note IS NULL AS n, SUM(qty) FROM od GROUP BY k, n WITH ROLLUP",
            "SELECT COALESCE(k, -99) AS g, SUM(qty) FROM od GROUP BY k WITH ROLLUP",
            "SELECT k, SUM(qty) AS s FROM od GROUP BY k WITH ROLLUP HAVING s > 20",
            "SELECT en, COUNT(*) FROM ty GROUP BY en WITH ROLLUP",
            "SELECT yr, AVG(ti) FROM ty GROUP BY yr WITH ROLLUP",
            "SELECT k, GROUP_CONCAT(oid ORDER BY oid) FROM od GROUP BY k WITH ROLLUP",
        ],
    );
    o(
        s,
        &["SELECT k, SUM(qty) FROM od WHERE k IN (1, 2) GROUP BY k WITH ROLLUP LIMIT 2"],
    );
    // DISTINCT with ORDER BY and LIMIT.
    o(
        s,
        &[
            "SELECT DISTINCT k FROM od ORDER BY k DESC LIMIT 3",
            "SELECT DISTINCT qty FROM od ORDER BY qty LIMIT 4 OFFSET 2",
            "SELECT DISTINCT note FROM od WHERE note IS NOT NULL ORDER BY note DESC LIMIT 5",
            "SELECT DISTINCT k, qty FROM od ORDER BY qty DESC, k LIMIT 5",
            "SELECT DISTINCT en FROM ty ORDER BY en",
            "SELECT DISTINCT k % 2 AS p FROM od ORDER BY p",
            "SELECT DISTINCT YEAR(at) FROM ev ORDER BY 1",
            "SELECT COUNT(DISTINCT k), COUNT(DISTINCT qty, k) FROM od",
            "SELECT DISTINCT kind FROM ev ORDER BY kind LIMIT 1 OFFSET 1",
            "SELECT DISTINCT qty * 0 FROM od",
            "SELECT DISTINCT k FROM od WHERE qty > 100 ORDER BY k LIMIT 5",
            "SELECT DISTINCT price FROM od ORDER BY price DESC LIMIT 3",
        ],
    );
    // JSON functions.
    o(
        s,
        &[
            "SELECT id, JSON_EXTRACT(js, '$.a') FROM ty ORDER BY id, k LIMIT 10",
            "SELECT id, JSON_TYPE(js) FROM ty WHERE js IS NOT NULL ORDER BY id, k",
            "SELECT JSON_VALUE(js, '$.a') AS v, COUNT(*) FROM ty GROUP BY v ORDER BY v",
            "SELECT id FROM ty WHERE JSON_CONTAINS(js, '1', '$.b') ORDER BY id",
            "SELECT id, JSON_LENGTH(js) FROM ty ORDER BY JSON_LENGTH(js) DESC, id LIMIT 5",
            "SELECT MAX(JSON_EXTRACT(js, '$.a')), MIN(JSON_LENGTH(js)) FROM ty",
            "SELECT JSON_ARRAYAGG(k ORDER BY k) FROM (SELECT DISTINCT k FROM od) t",
            "SELECT JSON_OBJECT('k', k, 'n', COUNT(*)) FROM od GROUP BY k ORDER BY k",
            "SELECT id, JSON_UNQUOTE(JSON_EXTRACT(js, '$.a')) FROM ty WHERE JSON_EXISTS(js, '$.a') ORDER BY id",
            "SELECT JSON_KEYS(js) AS k2, COUNT(*) FROM ty GROUP BY k2 ORDER BY k2",
            "SELECT id, JSON_SEARCH(js, 'one', 'x') FROM ty ORDER BY id LIMIT 8",
            "SELECT id FROM ty WHERE js->'$.a' = 1",
            "SELECT id, JSON_MERGE_PATCH('{\"a\":1}', js) FROM ty WHERE k = 2 ORDER BY id",
            "SELECT id, JSON_QUOTE(vc) FROM ty ORDER BY id LIMIT 5",
            "SELECT JSON_ARRAYAGG(DISTINCT en ORDER BY en) FROM ty",
        ],
    );
    // Collations in ORDER BY and GROUP BY.
    o(
        s,
        &[
            "SELECT name FROM sk ORDER BY name COLLATE utf8mb4_bin",
            "SELECT name FROM sk ORDER BY name DESC",
            "SELECT UPPER(name) AS up, COUNT(*) FROM sk GROUP BY up ORDER BY up",
            "SELECT name FROM sk ORDER BY BINARY name",
            "SELECT LOWER(name) AS l FROM sk ORDER BY l COLLATE utf8mb4_unicode_ci, name",
            "SELECT ch, COUNT(*) FROM ty GROUP BY ch ORDER BY ch",
            "SELECT ch, id FROM ty ORDER BY ch COLLATE utf8mb4_bin, id",
            "SELECT vc COLLATE utf8mb4_bin AS b, COUNT(*) FROM ty GROUP BY b ORDER BY b",
            "SELECT MIN(name), MAX(name) FROM sk",
            "SELECT MIN(name COLLATE utf8mb4_bin), MAX(name COLLATE utf8mb4_bin) FROM sk",
            "SELECT name FROM sk WHERE name > 'delta' ORDER BY name",
            "SELECT GROUP_CONCAT(name ORDER BY name DESC) FROM sk",
        ],
    );
    // NULL ordering.
    o(
        s,
        &[
            "SELECT oid, price FROM od ORDER BY price, oid, k",
            "SELECT oid, price FROM od ORDER BY price DESC, oid, k",
            "SELECT oid, note FROM od ORDER BY note IS NULL, note, oid, k",
            "SELECT oid, price FROM od ORDER BY -price DESC, oid, k",
            "SELECT id, da FROM ty ORDER BY da DESC, id LIMIT 10",
            "SELECT id, bu FROM ty ORDER BY bu, id LIMIT 12",
            "SELECT DISTINCT price FROM od ORDER BY price LIMIT 3",
            "SELECT k, MIN(price), MAX(note) FROM od GROUP BY k ORDER BY MIN(price), k",
            "SELECT ISNULL(price) AS n, COUNT(*) FROM od GROUP BY n ORDER BY n",
            "SELECT id, tm FROM ty ORDER BY tm, id LIMIT 8",
        ],
    );
    // Integer overflow in SUM and AVG and in expressions over merged
    // aggregates.
    o(
        s,
        &[
            "SELECT SUM(bi) FROM ty",
            "SELECT SUM(bu) FROM ty",
            "SELECT AVG(bu), AVG(bi) FROM ty",
            "SELECT k, SUM(bu) FROM ty GROUP BY k ORDER BY k",
            "SELECT SUM(bi * 2) FROM ty",
            "SELECT SUM(bu + 1) FROM ty",
            "SELECT SUM(bi) + 9223372036854775807 FROM ty",
            "SELECT k, AVG(bi) FROM ty GROUP BY k ORDER BY k",
            "SELECT SUM(CAST(bu AS SIGNED)) FROM ty",
            "SELECT MAX(bi) - MIN(bi) FROM ty",
            "SELECT MAX(bu) - MIN(bu) FROM ty",
            "SELECT BIT_OR(bu), BIT_AND(bi), BIT_XOR(bi) FROM ty",
        ],
    );
    // DECIMAL edges.
    o(
        s,
        &[
            "SELECT SUM(de), AVG(de) FROM ty",
            "SELECT k, SUM(de) FROM ty GROUP BY k ORDER BY k",
            "SELECT MIN(de), MAX(de) FROM ty",
            "SELECT SUM(de * 10) FROM ty",
            "SELECT SUM(de / 3) FROM ty",
            "SELECT AVG(price / 7) FROM od",
            "SELECT ROUND(SUM(price), 1), TRUNCATE(AVG(price), 3) FROM od",
            "SELECT k, AVG(price) AS a FROM od GROUP BY k ORDER BY a DESC, k",
            "SELECT SUM(price) FROM od WHERE price > 1000",
            "SELECT CAST(SUM(price) AS DECIMAL(5,1)) FROM od",
        ],
    );
    // Date and time edges.
    o(
        s,
        &[
            "SELECT MIN(dt), MAX(dt) FROM ty",
            "SELECT id, DATE_ADD(dt, INTERVAL 1 DAY) FROM ty ORDER BY id LIMIT 10",
            "SELECT YEAR(da) AS y, COUNT(*) FROM ty GROUP BY y ORDER BY y",
            "SELECT MIN(tm), MAX(tm), SUM(tm) FROM ty",
            "SELECT id, TIMEDIFF(tm, '00:00:01') FROM ty ORDER BY id LIMIT 8",
            "SELECT DATE_FORMAT(at, '%Y-%m') AS m, MIN(at), MAX(at) FROM ev GROUP BY m ORDER BY m",
            "SELECT id FROM ev WHERE at BETWEEN '2024-01-31 23:59:59' AND '2024-02-01 00:00:00' ORDER BY id",
            "SELECT id FROM ev WHERE at >= '2024-02-01' AND at < '2024-03-01' ORDER BY id",
            "SELECT DAYNAME(at) AS d, COUNT(*) FROM ev GROUP BY d ORDER BY d",
            "SELECT id, UNIX_TIMESTAMP(at) FROM ev WHERE kind = 'edge' ORDER BY id",
            "SELECT AVG(yr), MIN(yr), MAX(yr) FROM ty",
            "SELECT id, LAST_DAY(da) FROM ty WHERE da IS NOT NULL ORDER BY id LIMIT 6",
            "SELECT MAX(at) - INTERVAL 1 SECOND FROM ev",
        ],
    );
    // String functions on multi-byte data.
    o(
        s,
        &[
            "SELECT name, LENGTH(name), CHAR_LENGTH(name) FROM sk ORDER BY name",
            "SELECT UPPER(name), LOWER(name) FROM sk ORDER BY name",
            "SELECT name, SUBSTRING(name, 2, 3) FROM sk ORDER BY name",
            "SELECT name, REVERSE(name) FROM sk ORDER BY name",
            "SELECT LEFT(name, 1) COLLATE utf8mb4_bin AS l, COUNT(*) FROM sk GROUP BY l ORDER BY l",
            "SELECT name, HEX(name) FROM sk ORDER BY name",
            "SELECT MAX(CHAR_LENGTH(name)), SUM(LENGTH(name)) FROM sk",
            "SELECT name, LPAD(name, 8, 'ñ') FROM sk ORDER BY name",
            "SELECT name, INSTR(name, 'ß') FROM sk ORDER BY name",
            "SELECT GROUP_CONCAT(LEFT(name, 2) ORDER BY name SEPARATOR '·') FROM sk",
            "SELECT name FROM sk WHERE name LIKE '%ß%' OR name LIKE 'É%' ORDER BY name",
            "SELECT id, vc, CONCAT(vc, 'é'), CHAR_LENGTH(CONCAT(vc, 'é')) FROM ty ORDER BY id LIMIT 8",
        ],
    );
    // UNION ALL / UNION DISTINCT across partitioned and global tables.
    o(
        s,
        &[
            "SELECT oid AS x FROM od WHERE k = 1 UNION ALL SELECT gid FROM gl ORDER BY x",
            "SELECT k FROM od UNION SELECT gid FROM gl ORDER BY k",
            "SELECT note FROM od UNION SELECT name FROM gl ORDER BY 1",
            "SELECT name FROM sk UNION ALL SELECT name FROM gl ORDER BY name",
            "SELECT COUNT(*) FROM (SELECT k FROM od UNION ALL SELECT gid FROM gl) t",
            "SELECT k, COUNT(*) FROM (SELECT k FROM od UNION ALL SELECT k FROM ty) t GROUP BY k ORDER BY k",
            "SELECT oid FROM od WHERE k = 2 UNION DISTINCT SELECT oid FROM od WHERE k = 3 ORDER BY oid",
            "SELECT id FROM ev WHERE kind = 'edge' UNION SELECT gid FROM gl WHERE gid > 3 ORDER BY id DESC",
            "SELECT 'od' AS src, COUNT(*) FROM od UNION ALL SELECT 'gl', COUNT(*) FROM gl ORDER BY src",
            "SELECT MAX(x) FROM (SELECT qty AS x FROM od UNION SELECT gid FROM gl) u",
            "SELECT name FROM gl UNION SELECT name FROM sk WHERE v > 5 ORDER BY name LIMIT 4",
        ],
    );
    u(
        s,
        &["(SELECT oid FROM od ORDER BY oid DESC, k LIMIT 2) UNION ALL (SELECT gid FROM gl ORDER BY gid LIMIT 2)"],
    );
    // Subqueries in select lists.
    o(
        s,
        &[
            "SELECT gid, (SELECT COUNT(*) FROM od WHERE od.k = gl.gid) AS c FROM gl ORDER BY gid",
            "SELECT oid, k, (SELECT name FROM gl WHERE gl.gid = od.k) AS n FROM od ORDER BY oid, k",
            "SELECT (SELECT MAX(qty) FROM od), (SELECT MIN(v) FROM sk)",
            "SELECT k, (SELECT COUNT(*) FROM ty WHERE ty.k = od.k) AS c FROM od GROUP BY k ORDER BY k",
            "SELECT name, (SELECT SUM(qty) FROM od WHERE od.k = sk.v) AS s FROM sk ORDER BY name",
            "SELECT oid, k, (SELECT COUNT(*) FROM od o2 WHERE o2.k = od.k AND o2.oid < od.oid) AS r FROM od ORDER BY oid, k",
            "SELECT id, (SELECT kind FROM ev e2 WHERE e2.id = ev.id + 1) AS nk FROM ev ORDER BY id",
            "SELECT gid, EXISTS(SELECT 1 FROM od WHERE od.k = gl.gid AND qty > 5) AS e FROM gl ORDER BY gid",
            "SELECT (SELECT GROUP_CONCAT(name ORDER BY name) FROM gl) AS g, COUNT(*) FROM od",
            "SELECT oid, k, qty = (SELECT MAX(qty) FROM od o2 WHERE o2.k = od.k) AS is_max FROM od ORDER BY oid, k",
            "SELECT oid FROM od WHERE qty > (SELECT AVG(qty) FROM od) ORDER BY oid, k",
            "SELECT (SELECT COUNT(*) FROM od WHERE k = 1) + (SELECT COUNT(*) FROM od WHERE k = 2)",
            "SELECT gid, (SELECT MAX(at) FROM ev WHERE ev.id = gl.gid) AS m FROM gl ORDER BY gid",
        ],
    );
    // Keys holding a backslash under NO_BACKSLASH_ESCAPES: stored where
    // one server's key routes, and read back by key in both modes.
    w(
        s,
        &[
            "SET sql_mode = 'NO_BACKSLASH_ESCAPES'",
            r"INSERT INTO sk VALUES ('back\slash', 40), ('end\', 41)",
        ],
    );
    o(
        s,
        &[
            r"SELECT name, v FROM sk WHERE name = 'back\slash'",
            r"SELECT name, v FROM sk WHERE name IN ('end\', 'backslash') ORDER BY name",
            r"SELECT COUNT(*), MAX(v) FROM sk WHERE name LIKE '%\\%'",
        ],
    );
    w(
        s,
        &[
            r"UPDATE sk SET v = 42 WHERE name = 'back\slash'",
            r"DELETE FROM sk WHERE name = 'end\'",
            "SET sql_mode = DEFAULT",
        ],
    );
    o(
        s,
        &[
            r"SELECT name, v FROM sk WHERE name = 'back\\slash'",
            r"SELECT name, v FROM sk WHERE name = 'end\\'",
        ],
    );
}
