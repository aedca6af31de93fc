//! A fourth pass (issue 29, round three), written from README's promise
//! ("what one server holding all the rows would return") in classes the
//! earlier passes leave out: CREATE TABLE ... SELECT from partitioned
//! tables and the tables it makes; JSON aggregates and GROUP_CONCAT's
//! clauses over merges; window functions partitioned and ordered in
//! other ways; the partition key compared through functions, casts,
//! NULL-safe equality, LIKE and REGEXP; month-partitioned DATETIMEs read
//! through date functions; statistical aggregates; INTERSECT / EXCEPT
//! ALL; correlated, ANY / ALL and NOT IN subqueries; CASE writes, single-
//! partition DELETE ... LIMIT, REPLACE and ON DUPLICATE KEY UPDATE over
//! several partitions; prepared INSERTs without the key column;
//! sql_mode changes read by later statements.

use mysql_async::Value;

use super::statements::{o, step, u, w, How, Step};

pub fn push(s: &mut Vec<Step>) {
    // CREATE TABLE ... SELECT from partitioned tables (queries.md), then
    // what it made.
    w(
        s,
        &[
            "CREATE TABLE c1 SELECT * FROM od",
            "CREATE TABLE c2 AS SELECT k, COUNT(*) AS n, SUM(price) AS p FROM od GROUP BY k",
            "CREATE TABLE c3 (PRIMARY KEY (k)) IGNORE SELECT k, oid FROM od ORDER BY oid",
            "CREATE TABLE c4 (PRIMARY KEY (k)) REPLACE SELECT k, oid FROM od ORDER BY oid",
            "CREATE TABLE c5 (PRIMARY KEY (k)) SELECT k, oid FROM od",
            "CREATE TABLE c6 SELECT id, bi, bu, de, db, dt, js, bt, en, st FROM ty WHERE k IN (1, 2)",
            "CREATE TABLE c7 SELECT a.oid, b.qty FROM od a JOIN od b ON b.oid = a.oid + 1 AND b.k = a.k",
            "CREATE TABLE c8 SELECT name, UPPER(name) AS up FROM sk WHERE name LIKE '%a%'",
            "CREATE TABLE c9 SELECT DATE_FORMAT(at, '%Y-%m') AS m, SUM(amt) AS total FROM ev GROUP BY m",
            "CREATE TABLE IF NOT EXISTS c1 SELECT oid FROM od",
            "CREATE TABLE c1 SELECT oid FROM od",
            "CREATE OR REPLACE TABLE c2 SELECT oid, note FROM od WHERE k = 3",
            "CREATE TABLE c10 (extra INT DEFAULT 7) SELECT oid FROM od WHERE k = -1",
            "CREATE TABLE c11 SELECT oid FROM od WHERE k = 1 UNION SELECT gid FROM gl",
            "CREATE TABLE c12 SELECT * FROM od WHERE nope = 1",
        ],
    );
    for t in ["c1", "c2", "c3", "c4", "c6", "c7", "c8", "c9", "c10", "c11"] {
        s.push(step(&format!("SHOW CREATE TABLE {t}"), None, How::Ordered));
        s.push(step(&format!("SELECT * FROM {t}"), None, How::Unordered));
    }
    w(s, &["DROP TABLE c1, c2, c3, c4, c6, c7, c8, c9, c10, c11"]);
    // JSON aggregates and GROUP_CONCAT's clauses over merges.
    o(
        s,
        &[
            "SELECT k, JSON_ARRAYAGG(oid ORDER BY oid) FROM od GROUP BY k ORDER BY k",
            "SELECT JSON_LENGTH(JSON_ARRAYAGG(oid)) FROM od",
            "SELECT k, JSON_OBJECTAGG(oid, qty) IS NOT NULL FROM od GROUP BY k ORDER BY k",
            "SELECT GROUP_CONCAT(oid ORDER BY oid DESC SEPARATOR '|') FROM od WHERE k = 2",
            "SELECT k, GROUP_CONCAT(DISTINCT qty ORDER BY qty) FROM od GROUP BY k ORDER BY k",
            "SELECT GROUP_CONCAT(oid ORDER BY oid LIMIT 3) FROM od",
            "SELECT GROUP_CONCAT(oid ORDER BY oid LIMIT 2, 3) FROM od",
            "SELECT k, GROUP_CONCAT(note ORDER BY note SEPARATOR '') FROM od GROUP BY k ORDER BY k",
            "SELECT LENGTH(GROUP_CONCAT(name ORDER BY name)) FROM sk",
            "SELECT GROUP_CONCAT(name ORDER BY name COLLATE utf8mb4_bin) FROM sk",
        ],
    );
    // Window functions.
    o(
        s,
        &[
            "SELECT oid, k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY oid) AS rn FROM od ORDER BY k, oid",
            "SELECT oid, RANK() OVER (ORDER BY qty DESC) AS r FROM od ORDER BY r, oid, k",
            "SELECT oid, DENSE_RANK() OVER (ORDER BY qty) AS r FROM od ORDER BY oid, k",
            "SELECT oid, NTILE(3) OVER (ORDER BY oid, k) AS t FROM od ORDER BY oid, k",
            "SELECT oid, LAG(qty) OVER (ORDER BY oid, k) AS prev FROM od ORDER BY oid, k",
            "SELECT oid, LEAD(qty, 2, -1) OVER (PARTITION BY k ORDER BY oid) AS nx FROM od ORDER BY oid, k",
            "SELECT oid, FIRST_VALUE(oid) OVER (PARTITION BY k ORDER BY oid DESC) AS f FROM od ORDER BY oid, k",
            "SELECT oid, SUM(qty) OVER (ORDER BY oid, k ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s FROM od ORDER BY oid, k",
            "SELECT oid, COUNT(*) OVER (PARTITION BY k) AS c FROM od ORDER BY oid, k",
            "SELECT oid, AVG(price) OVER (PARTITION BY k) AS a FROM od WHERE price IS NOT NULL ORDER BY oid, k",
            "SELECT k, SUM(SUM(qty)) OVER (ORDER BY k) AS running FROM od GROUP BY k ORDER BY k",
            "SELECT oid, PERCENT_RANK() OVER (ORDER BY oid, k) AS pr FROM od WHERE k = 1 ORDER BY oid, k",
            "SELECT oid, CUME_DIST() OVER (ORDER BY qty) AS cd FROM od ORDER BY oid, k",
            "SELECT * FROM (SELECT oid, ROW_NUMBER() OVER (ORDER BY qty DESC, oid, k) AS rn FROM od) x WHERE rn <= 3 ORDER BY rn",
            "SELECT name, ROW_NUMBER() OVER (ORDER BY name) AS rn FROM sk ORDER BY rn",
        ],
    );
    // The partition key through functions, casts, NULL-safe equality,
    // LIKE and REGEXP: every partition that may match.
    o(
        s,
        &[
            "SELECT oid FROM od WHERE k <=> 1 ORDER BY oid",
            "SELECT oid FROM od WHERE k <=> NULL ORDER BY oid",
            "SELECT oid FROM od WHERE NOT (k <=> 2) ORDER BY oid",
            "SELECT oid FROM od WHERE k IS NULL",
            "SELECT oid FROM od WHERE k IS NOT NULL AND k = 3 ORDER BY oid",
            "SELECT oid FROM od WHERE k + 0 = 1 ORDER BY oid",
            "SELECT oid FROM od WHERE -k = 1 ORDER BY oid",
            "SELECT oid FROM od WHERE ABS(k) = 1 ORDER BY oid",
            "SELECT oid FROM od WHERE CAST(k AS CHAR) = '2' ORDER BY oid",
            "SELECT oid FROM od WHERE k = '2' ORDER BY oid",
            "SELECT oid FROM od WHERE k = 2.0 ORDER BY oid",
            "SELECT oid FROM od WHERE k = 0x02 ORDER BY oid",
            "SELECT oid FROM od WHERE k = '2abc' ORDER BY oid",
            "SELECT oid FROM od WHERE k = 1.5 ORDER BY oid",
            "SELECT oid FROM od WHERE k IN ('1', 2.0, 0x03) ORDER BY oid",
            "SELECT oid FROM od WHERE k = TRUE ORDER BY oid",
            "SELECT oid FROM od WHERE k LIKE '1' ORDER BY oid",
            "SELECT oid FROM od WHERE k REGEXP '^-?1$' ORDER BY oid",
            "SELECT oid FROM od WHERE k = (SELECT MIN(gid) + 1 FROM gl) ORDER BY oid",
            "SELECT oid FROM od WHERE k = COALESCE(NULL, 3) ORDER BY oid",
            "SELECT name FROM sk WHERE name = 'ALPHA'",
            "SELECT name FROM sk WHERE name = 'alpha ' ",
            "SELECT name FROM sk WHERE name LIKE 'ALP%' ORDER BY name",
            "SELECT name FROM sk WHERE name REGEXP '^[a-d]' ORDER BY name",
            "SELECT name FROM sk WHERE name = 'strasse'",
            "SELECT name FROM sk WHERE name IN ('BETA', 'delta', 'nope') ORDER BY name",
            "SELECT name FROM sk WHERE BINARY name = 'beta'",
            "SELECT name FROM sk WHERE name = _latin1'alpha'",
            "SELECT name FROM sk WHERE name = 'Epsilon'",
            "SELECT name FROM sk WHERE name <=> 'zeta'",
        ],
    );
    // Month-partitioned DATETIMEs read through date functions.
    o(
        s,
        &[
            "SELECT id FROM ev WHERE at >= '2024-02-01' AND at < '2024-03-01' ORDER BY id",
            "SELECT id FROM ev WHERE at BETWEEN '2024-01-15' AND '2024-02-15' ORDER BY id",
            "SELECT id FROM ev WHERE DATE(at) = '2024-02-01' ORDER BY id",
            "SELECT id FROM ev WHERE YEAR(at) = 2024 AND MONTH(at) = 2 ORDER BY id",
            "SELECT id FROM ev WHERE at LIKE '2024-02%' ORDER BY id",
            "SELECT id FROM ev WHERE at = '2024-02-01' ORDER BY id",
            "SELECT id FROM ev WHERE at = 20240201000000 ORDER BY id",
            "SELECT id FROM ev WHERE at = '2024-02-01 00:00:00.000' ORDER BY id",
            "SELECT id FROM ev WHERE at IN ('2024-02-01 00:00:00', '2024-02-10 10:00:00') ORDER BY id",
            "SELECT DATE_FORMAT(at, '%Y-%m') AS m, COUNT(*) FROM ev GROUP BY m ORDER BY m",
            "SELECT EXTRACT(YEAR_MONTH FROM at) AS ym, SUM(amt) FROM ev GROUP BY ym ORDER BY ym",
            "SELECT MIN(at), MAX(at), TIMESTAMPDIFF(DAY, MIN(at), MAX(at)) FROM ev",
            "SELECT LAST_DAY(MAX(at)), DAYNAME(MIN(at)) FROM ev",
            "SELECT kind, MAX(at) FROM ev WHERE at < '2024-02-01' GROUP BY kind ORDER BY kind",
            "SELECT id FROM ev WHERE at > NOW() - INTERVAL 100 YEAR AND id < 4 ORDER BY id",
        ],
    );
    // Statistical aggregates and ROLLUP.
    o(
        s,
        &[
            "SELECT STDDEV_POP(qty), STDDEV_SAMP(qty), VAR_POP(qty), VAR_SAMP(qty) FROM od",
            "SELECT k, STD(price) FROM od GROUP BY k ORDER BY k",
            "SELECT BIT_AND(qty), BIT_OR(qty), BIT_XOR(qty) FROM od WHERE k = 99",
            "SELECT COUNT(*), COUNT(price), COUNT(DISTINCT price) FROM od",
            "SELECT SUM(DISTINCT qty), AVG(DISTINCT qty) FROM od",
            "SELECT MAX(bu) - MIN(bu) FROM ty WHERE bu < 10",
            "SELECT SUM(bu) FROM ty",
            "SELECT SUM(bi) FROM ty WHERE bi > 0",
            "SELECT AVG(de), SUM(de) FROM ty",
            "SELECT MIN(js), MAX(js) FROM ty",
            "SELECT k, COUNT(*) FROM od GROUP BY k WITH ROLLUP",
            "SELECT k, SUM(qty) FROM od WHERE k >= 0 GROUP BY k WITH ROLLUP",
            "SELECT MIN(bt), MAX(bt) + 0 FROM ty",
            "SELECT MIN(tm), MAX(yr), MIN(da) FROM ty",
            "SELECT COUNT(*) FROM ty WHERE js IS NOT NULL AND JSON_VALID(js)",
        ],
    );
    // INTERSECT / EXCEPT (ALL) and set operations with LIMIT.
    u(
        s,
        &[
            "SELECT k FROM od INTERSECT SELECT gid FROM gl",
            "SELECT k FROM od EXCEPT SELECT gid FROM gl",
            "SELECT k FROM od INTERSECT ALL SELECT k FROM od WHERE qty > 5",
            "SELECT k FROM od EXCEPT ALL SELECT k FROM od WHERE qty > 5",
            "SELECT qty FROM od WHERE k = 1 UNION DISTINCT SELECT qty FROM od WHERE k = 2",
        ],
    );
    o(
        s,
        &[
            "SELECT oid FROM od WHERE k = 1 UNION ALL SELECT oid FROM od WHERE k = 2 ORDER BY oid LIMIT 4",
            "SELECT oid FROM od UNION SELECT oid + 1 FROM od ORDER BY oid DESC LIMIT 3",
            "(SELECT k FROM od) EXCEPT (SELECT k FROM od WHERE k > 0) ORDER BY k",
            "SELECT COUNT(*) FROM (SELECT k FROM od INTERSECT SELECT k FROM ty) x",
            "SELECT name FROM sk EXCEPT SELECT 'alpha' ORDER BY name LIMIT 3",
        ],
    );
    // Correlated, ANY / ALL and NOT IN subqueries.
    o(
        s,
        &[
            "SELECT oid FROM od a WHERE EXISTS (SELECT 1 FROM od b WHERE b.k = a.k AND b.qty > a.qty) ORDER BY oid",
            "SELECT oid FROM od a WHERE NOT EXISTS (SELECT 1 FROM gl WHERE gl.gid = a.k) ORDER BY oid",
            "SELECT oid FROM od WHERE qty > ALL (SELECT qty FROM od WHERE k = 1) ORDER BY oid",
            "SELECT oid FROM od WHERE qty = ANY (SELECT gid FROM gl) ORDER BY oid",
            "SELECT oid FROM od WHERE k NOT IN (SELECT gid FROM gl WHERE gid < 2) ORDER BY oid",
            "SELECT oid FROM od WHERE price NOT IN (SELECT price FROM od WHERE k = 3) ORDER BY oid",
            "SELECT oid, (SELECT COUNT(*) FROM od b WHERE b.k = a.k) AS n FROM od a ORDER BY oid",
            "SELECT oid FROM od ORDER BY (SELECT name FROM gl WHERE gid = od.k), oid",
            "SELECT k, (SELECT MAX(qty) FROM od b WHERE b.k = a.k) FROM (SELECT DISTINCT k FROM od) a ORDER BY k",
            "SELECT oid FROM od WHERE (k, qty) IN (SELECT k, MAX(qty) FROM od GROUP BY k) ORDER BY oid",
            "SELECT oid FROM od WHERE qty > (SELECT AVG(qty) FROM od) ORDER BY oid",
            "SELECT x.k, x.n FROM (SELECT k, COUNT(*) n FROM od GROUP BY k) x JOIN gl ON gl.gid = x.k ORDER BY x.k",
            "SELECT oid FROM od WHERE k IN (SELECT k FROM ty WHERE id < 5) ORDER BY oid",
            "SELECT COUNT(*) FROM od WHERE note IN (SELECT note FROM od WHERE k = 0)",
            "SELECT oid FROM od WHERE qty < SOME (SELECT qty FROM od WHERE k = 2) AND k = 3 ORDER BY oid",
        ],
    );
    // Writes: CASE, single-partition DELETE ... LIMIT, REPLACE and ON
    // DUPLICATE KEY UPDATE over several partitions, INSERT IGNORE.
    w(
        s,
        &[
            "UPDATE od SET qty = CASE WHEN qty > 5 THEN qty - 1 ELSE qty + 1 END WHERE k IN (1, 2)",
            "UPDATE od SET note = CONCAT(note, '!') WHERE k = 3 AND note IS NOT NULL",
            "DELETE FROM od WHERE k = 2 ORDER BY oid LIMIT 1",
            "UPDATE od SET price = price * 2 WHERE k = 1 ORDER BY oid DESC LIMIT 2",
            "REPLACE INTO od VALUES (1, 0, 9, 9.99, 'r1'), (2, 1, 9, 9.99, 'r2'), (960, 2, 1, 1, 'r3')",
            "INSERT INTO od VALUES (3, 2, 1, 1, 'x'), (961, 3, 1, 1, 'y') ON DUPLICATE KEY UPDATE qty = VALUES(qty) + qty",
            "INSERT IGNORE INTO od VALUES (4, 3, 1, 1, 'dup4'), (962, 0, 1, 1, 'ok')",
            "INSERT INTO od VALUES (963, 1, 1, 1, NULL), (964, 1, 2, 2, NULL)",
            "INSERT INTO od (oid, k, qty) VALUES (965, -3, 5)",
            "UPDATE od SET qty = qty + 1 WHERE k = -3",
            "DELETE FROM od WHERE oid IN (963, 964) AND k = 1",
            "UPDATE od SET price = NULL WHERE oid = 965 AND k = -3",
            "INSERT INTO sk VALUES ('ALPHA', 99)",
            "INSERT INTO sk VALUES ('mu', 12) ON DUPLICATE KEY UPDATE v = v + 1",
            "INSERT INTO sk VALUES ('MU', 13) ON DUPLICATE KEY UPDATE v = v + 1",
            "UPDATE sk SET v = v * 10 WHERE name IN ('mu', 'Theta')",
            "DELETE FROM sk WHERE name = 'MU'",
            "INSERT INTO ev (id, at, kind, amt) VALUES (980, '2024-02-29 23:59:59', 'leap', 1), (981, '2024-03-01 00:00:00', 'mar', 2)",
            "UPDATE ev SET amt = amt + 1 WHERE at >= '2024-02-29' AND at < '2024-03-02'",
            "DELETE FROM ev WHERE kind IN ('leap', 'mar')",
        ],
    );
    // Prepared INSERTs without the key column (partitioning.md), and
    // prepared reads of the key through casts.
    let p = |s: &mut Vec<Step>, sql: &str, params: Vec<Value>, how: How| {
        s.push(step(sql, Some(params), how))
    };
    p(
        s,
        "INSERT INTO od (oid, qty) VALUES (?, ?)",
        vec![Value::Int(970), Value::Int(1)],
        How::Write,
    );
    p(
        s,
        "INSERT IGNORE INTO od (oid, qty) VALUES (?, ?)",
        vec![Value::Int(971), Value::Int(1)],
        How::Write,
    );
    p(
        s,
        "INSERT INTO ev (kind, amt) VALUES (?, ?)",
        vec![Value::from("nokey"), Value::Int(1)],
        How::Write,
    );
    p(
        s,
        "SELECT oid FROM od WHERE k = CAST(? AS SIGNED) ORDER BY oid",
        vec![Value::from("2")],
        How::Ordered,
    );
    p(
        s,
        "SELECT oid FROM od WHERE k <=> ? ORDER BY oid",
        vec![Value::NULL],
        How::Ordered,
    );
    p(
        s,
        "SELECT name FROM sk WHERE name = ?",
        vec![Value::from("ALPHA")],
        How::Ordered,
    );
    // Expressions as grouping and ordering keys, NULLs first and last.
    o(
        s,
        &[
            "SELECT LEFT(note, 1) AS c, COUNT(*) FROM od GROUP BY c ORDER BY c",
            "SELECT qty % 3 AS r, SUM(qty) FROM od GROUP BY r ORDER BY r DESC",
            "SELECT IF(price > 5, 'hi', 'lo') AS b, COUNT(*) FROM od GROUP BY b ORDER BY b",
            "SELECT CASE WHEN k < 0 THEN 'neg' WHEN k = 0 THEN 'zero' ELSE 'pos' END AS s, COUNT(*) FROM od GROUP BY s ORDER BY s",
            "SELECT oid, price FROM od ORDER BY price IS NULL, price, oid LIMIT 6",
            "SELECT oid, price FROM od ORDER BY price IS NOT NULL, price DESC, oid LIMIT 6",
            "SELECT oid, note FROM od ORDER BY note DESC, oid LIMIT 5",
            "SELECT oid FROM od ORDER BY qty DESC, oid LIMIT 3 OFFSET 10",
            "SELECT oid FROM od ORDER BY RAND(7) LIMIT 0",
            "SELECT COUNT(*) FROM od GROUP BY k HAVING COUNT(*) > 100",
            "SELECT k, COUNT(*) c FROM od GROUP BY k HAVING c = MAX(c) ORDER BY k",
            "SELECT CONCAT(k, ':', COUNT(*)) FROM od GROUP BY k ORDER BY k",
            "SELECT ROUND(AVG(qty), 2), TRUNCATE(SUM(price) / 7, 4) FROM od",
            "SELECT k, MIN(note), MAX(note) FROM od GROUP BY k ORDER BY MIN(note), k",
            "SELECT SUBSTRING_INDEX(name, 'a', 1) AS p, COUNT(*) FROM sk GROUP BY p ORDER BY p",
        ],
    );
    // Questions about the partitioned tables.
    o(
        s,
        &[
            "SELECT COLUMN_NAME, DATA_TYPE, IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'od' ORDER BY ORDINAL_POSITION",
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'o%' ORDER BY 1",
            "SHOW COLUMNS FROM od LIKE 'q%'",
            "SHOW FULL COLUMNS FROM sk",
            "DESCRIBE ev at",
            "SELECT INDEX_NAME, COLUMN_NAME, SEQ_IN_INDEX FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'od' ORDER BY 1, 3",
            "SELECT CONSTRAINT_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'od' ORDER BY 1",
            "SHOW TABLES LIKE 's%'",
        ],
    );
    // sql_mode read by later statements.
    w(
        s,
        &["SET sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')"],
    );
    o(
        s,
        &[
            "SELECT name FROM sk WHERE name = 'al' || 'pha'",
            "SELECT oid || '-' || k FROM od WHERE k = 1 ORDER BY oid",
        ],
    );
    w(s, &["SET sql_mode = 'ANSI'"]);
    o(
        s,
        &[
            "SELECT \"oid\" FROM \"od\" WHERE \"k\" = 2 ORDER BY \"oid\"",
            "SELECT COUNT(*) FROM od WHERE note = 'n' || '3'",
        ],
    );
    w(s, &["SET sql_mode = DEFAULT"]);
}
