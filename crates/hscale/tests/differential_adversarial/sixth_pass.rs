//! A sixth pass (issue 29, round three, transp11), written from README's
//! promise in classes the earlier passes do not reach: window frames by
//! value (RANGE) and by rows around each row, windows over joins and
//! unions; recursive CTEs driving reads and writes of partitioned tables;
//! JSON_TABLE and JSON aggregates; GROUP BY ... WITH ROLLUP over every
//! merge; case and accents in keys, DISTINCT, GROUP BY and ORDER BY;
//! DECIMAL and BIGINT UNSIGNED in SUM / AVG / VARIANCE merges and in
//! expressions over them; date arithmetic and keys computed under session
//! time zones and a fixed `timestamp`; LIMIT with offsets over merges;
//! INSERT ... ON DUPLICATE KEY UPDATE with VALUES(), table-qualified
//! columns and row aliases over several partitions; REPLACE over several
//! partitions and unique keys; prepared forms of each; writes under
//! sql_mode variants that change what a value is (dates, zero ids,
//! fractional seconds, empty strings, operators).

use mysql_async::Value;

use super::statements::{o, step, u, w, How, Step};

fn p(s: &mut Vec<Step>, sql: &str, params: Vec<Value>, how: How) {
    s.push(step(sql, Some(params), how))
}

pub fn push(s: &mut Vec<Step>) {
    windows(s);
    recursive(s);
    json(s);
    rollup(s);
    collations(s);
    numbers(s);
    time_zones(s);
    offsets(s);
    upserts(s);
    replaces(s);
    modes(s);
}

fn windows(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT oid, k, SUM(qty) OVER (ORDER BY qty RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING) AS s FROM od ORDER BY oid, k",
            "SELECT oid, k, COUNT(*) OVER (PARTITION BY k ORDER BY oid RANGE BETWEEN 5 PRECEDING AND CURRENT ROW) AS c FROM od ORDER BY oid, k",
            "SELECT oid, k, SUM(qty) OVER (ORDER BY oid, k ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING) AS s FROM od ORDER BY oid, k",
            "SELECT oid, k, MAX(price) OVER (PARTITION BY qty ORDER BY oid, k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS m FROM od ORDER BY oid, k",
            "SELECT id, k, SUM(de) OVER (PARTITION BY k) AS s, AVG(de) OVER (PARTITION BY k) AS a FROM ty ORDER BY id, k",
            "SELECT id, k, MAX(bu) OVER () AS m, MIN(bi) OVER () AS n FROM ty ORDER BY id, k LIMIT 6",
            "SELECT * FROM (SELECT oid, k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY oid DESC) AS rn FROM od) t WHERE rn <= 2 ORDER BY k, rn",
            "SELECT od.oid, od.k, gl.name, COUNT(*) OVER (PARTITION BY gl.name) AS c FROM od JOIN gl ON gl.gid = od.qty ORDER BY od.oid, od.k",
            "SELECT x, SUM(x) OVER (ORDER BY x ROWS UNBOUNDED PRECEDING) AS s FROM (SELECT oid AS x FROM od WHERE k = 1 UNION ALL SELECT gid FROM gl) t ORDER BY x, s",
            "SELECT k, SUM(qty) AS s, SUM(SUM(qty)) OVER (ORDER BY k) AS running FROM od GROUP BY k ORDER BY k",
            "SELECT oid, k, qty, RANK() OVER (ORDER BY qty DESC) AS r FROM od ORDER BY r, oid, k LIMIT 5 OFFSET 3",
            "SELECT id, at, COUNT(*) OVER (ORDER BY at RANGE BETWEEN INTERVAL 7 DAY PRECEDING AND CURRENT ROW) AS c FROM ev ORDER BY id",
            "SELECT id, amt, SUM(amt) OVER (PARTITION BY kind ORDER BY amt RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s FROM ev ORDER BY id",
            "SELECT name, v, LAG(name) OVER (ORDER BY name) AS prev FROM sk ORDER BY name",
            "SELECT oid, k, NTILE(3) OVER (PARTITION BY k ORDER BY qty, oid) AS t FROM od ORDER BY oid, k",
        ],
    );
    p(
        s,
        "SELECT oid, k, SUM(qty) OVER (PARTITION BY k ORDER BY oid ROWS ? PRECEDING) AS s FROM od WHERE qty > ? ORDER BY oid, k",
        vec![Value::Int(1), Value::Int(2)],
        How::Ordered,
    );
    p(
        s,
        "SELECT oid, k, ROW_NUMBER() OVER (ORDER BY oid, k) AS rn FROM od WHERE k IN (?, ?) ORDER BY rn",
        vec![Value::Int(1), Value::Int(3)],
        How::Ordered,
    );
}

fn recursive(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT n, (SELECT COUNT(*) FROM od WHERE od.oid = r.n) AS c FROM r ORDER BY n",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 6) SELECT od.oid, od.k, od.qty FROM od JOIN r ON od.oid = r.n ORDER BY od.oid, od.k",
            "WITH RECURSIVE r AS (SELECT oid, k, 1 AS d FROM od WHERE oid = 1 UNION ALL SELECT od.oid, od.k, r.d + 1 FROM od JOIN r ON od.oid = r.oid + 1 WHERE r.d < 6) SELECT * FROM r ORDER BY oid, k",
            "WITH RECURSIVE r(x) AS (SELECT -3 UNION ALL SELECT x + 1 FROM r WHERE x < 3) SELECT x, (SELECT SUM(qty) FROM od WHERE k = x) AS s FROM r ORDER BY x",
            "WITH RECURSIVE r(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM r WHERE x < 2) SELECT COUNT(*), SUM(qty) FROM od WHERE k IN (SELECT x FROM r)",
            "WITH RECURSIVE d(day) AS (SELECT DATE('2023-12-01') UNION ALL SELECT day + INTERVAL 1 MONTH FROM d WHERE day < '2024-04-01') SELECT day, (SELECT COUNT(*) FROM ev WHERE at >= day AND at < day + INTERVAL 1 MONTH) AS c FROM d ORDER BY day",
            "WITH RECURSIVE r AS (SELECT gid, name, 0 AS lvl FROM gl WHERE gid = 0 UNION ALL SELECT gl.gid, gl.name, lvl + 1 FROM gl JOIN r ON gl.gid = r.gid + 1) SELECT * FROM r ORDER BY gid",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n * 2 FROM r WHERE n < 32) SELECT r.n, COUNT(od.oid) FROM r LEFT JOIN od ON od.oid = r.n GROUP BY r.n ORDER BY r.n",
            "WITH RECURSIVE r(n, s) AS (SELECT 1, CAST('a' AS CHAR(20)) UNION ALL SELECT n + 1, CONCAT(s, 'a') FROM r WHERE n < 4) SELECT n, s, (SELECT COUNT(*) FROM sk WHERE CHAR_LENGTH(name) > n) AS c FROM r ORDER BY n",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT COUNT(*) FROM r, od WHERE od.k = r.n",
        ],
    );
    p(
        s,
        "WITH RECURSIVE r(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM r WHERE n < ?) SELECT n, (SELECT MAX(qty) FROM od WHERE oid = n) AS m FROM r ORDER BY n",
        vec![Value::Int(3), Value::Int(7)],
        How::Ordered,
    );
    w(
        s,
        &[
            "INSERT INTO od (oid, k, qty) SELECT 7000 + n, n % 4, n FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 8) SELECT n FROM r) t",
            "UPDATE od SET qty = qty + 10 WHERE oid IN (WITH RECURSIVE r(n) AS (SELECT 7001 UNION ALL SELECT n + 3 FROM r WHERE n < 7007) SELECT n FROM r)",
            "UPDATE od SET qty = qty + 1 WHERE oid IN (SELECT 7001 UNION SELECT 7004)",
            "UPDATE od SET qty = qty + 1 WHERE k = 1 AND oid IN (WITH RECURSIVE r(n) AS (SELECT 7001 UNION ALL SELECT n + 4 FROM r WHERE n < 7009) SELECT n FROM r)",
            "DELETE FROM od WHERE oid IN (WITH RECURSIVE r(n) AS (SELECT 7002 UNION ALL SELECT n + 2 FROM r WHERE n < 7008) SELECT n FROM r)",
            "INSERT INTO od (oid, k, qty) WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT 7100 + n, -n, n FROM r",
        ],
    );
}

fn json(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT id, k, jt.v FROM ty, JSON_TABLE(ty.js, '$.b[*]' COLUMNS (v INT PATH '$')) jt ORDER BY id, k, jt.v",
            "SELECT od.oid, od.k, jt.w FROM JSON_TABLE('[{\"k\":1,\"w\":\"one\"},{\"k\":2,\"w\":\"two\"}]', '$[*]' COLUMNS (k INT PATH '$.k', w VARCHAR(8) PATH '$.w')) jt JOIN od ON od.k = jt.k ORDER BY od.oid, od.k",
            "SELECT COUNT(*) FROM ty, JSON_TABLE(ty.js, '$[*]' COLUMNS (x VARCHAR(10) PATH '$')) jt",
            "SELECT id, k, jt.x FROM ty, JSON_TABLE(ty.js, '$[*]' COLUMNS (x VARCHAR(10) PATH '$')) jt WHERE ty.k = 1 ORDER BY id, jt.x",
            "SELECT id, k, jt.i FROM ty, JSON_TABLE(ty.js, '$[*]' COLUMNS (i FOR ORDINALITY)) jt WHERE ty.k IN (1, 2) ORDER BY id, k, jt.i",
            "SELECT jt.a, COUNT(*) FROM ty, JSON_TABLE(ty.js, '$' COLUMNS (a VARCHAR(8) PATH '$.a' DEFAULT 'none' ON EMPTY)) jt GROUP BY jt.a ORDER BY jt.a",
            "SELECT id, k, jt.i, jt.v FROM ty, JSON_TABLE(ty.js, '$[*]' COLUMNS (i FOR ORDINALITY, v VARCHAR(10) PATH '$')) jt WHERE ty.k = 1 ORDER BY id, k, jt.i",
            "SELECT jt.x, SUM(od.qty) FROM JSON_TABLE('[0,1,2,3]', '$[*]' COLUMNS (x INT PATH '$')) jt LEFT JOIN od ON od.k = jt.x GROUP BY jt.x ORDER BY jt.x",
            "SELECT JSON_LENGTH(JSON_OBJECTAGG(CONCAT(oid, '/', k), qty)) FROM od",
            "SELECT JSON_ARRAYAGG(oid ORDER BY oid, k) FROM od WHERE qty > 5",
            "SELECT JSON_EXTRACT(JSON_ARRAYAGG(qty ORDER BY oid, k), '$[3]') FROM od",
            "SELECT k, JSON_ARRAYAGG(oid ORDER BY oid) FROM od GROUP BY k ORDER BY k",
            "SELECT DISTINCT JSON_TYPE(js) AS t FROM ty ORDER BY t",
            "SELECT MAX(JSON_VALUE(js, '$.a')), MIN(JSON_VALUE(js, '$.a')) FROM ty",
            "SELECT id, JSON_DETAILED(js) FROM ty WHERE k = 3 ORDER BY id",
            "SELECT SUM(JSON_LENGTH(js)), AVG(JSON_DEPTH(js)) FROM ty",
        ],
    );
    p(
        s,
        "SELECT id, k, jt.v FROM ty, JSON_TABLE(ty.js, ? COLUMNS (v VARCHAR(10) PATH '$')) jt WHERE ty.k = ? ORDER BY id, jt.v",
        vec![Value::Bytes(b"$.a".to_vec()), Value::Int(2)],
        How::Ordered,
    );
    w(
        s,
        &[
            "INSERT INTO od (oid, k, qty) SELECT jt.o, jt.k, 1 FROM JSON_TABLE('[[8001,1],[8002,2],[8003,-3]]', '$[*]' COLUMNS (o INT PATH '$[0]', k INT PATH '$[1]')) jt",
            "UPDATE ty SET js = JSON_SET(js, '$.n', id) WHERE JSON_TYPE(js) = 'OBJECT'",
            "UPDATE ty SET js = JSON_ARRAY_APPEND(js, '$', k) WHERE JSON_TYPE(js) = 'ARRAY'",
        ],
    );
}

fn rollup(s: &mut Vec<Step>) {
    u(
        s,
        &[
            "SELECT k, en, COUNT(*) FROM ty GROUP BY k, en WITH ROLLUP",
            "SELECT k, SUM(de), COUNT(de) FROM ty GROUP BY k WITH ROLLUP",
            "SELECT k, AVG(bu), SUM(bu) FROM ty GROUP BY k WITH ROLLUP",
            "SELECT kind, SUM(amt), AVG(amt), COUNT(amt) FROM ev GROUP BY kind WITH ROLLUP",
            "SELECT k, MIN(note), MAX(note) FROM od GROUP BY k WITH ROLLUP",
            "SELECT YEAR(at), MONTH(at), COUNT(*) FROM ev GROUP BY YEAR(at), MONTH(at) WITH ROLLUP",
            "SELECT k, COUNT(DISTINCT qty) FROM od GROUP BY k WITH ROLLUP",
            "SELECT name, COUNT(*) FROM sk GROUP BY name WITH ROLLUP",
            "SELECT qty % 3 AS g, k, SUM(price) FROM od GROUP BY g, k WITH ROLLUP",
            "SELECT * FROM (SELECT k, SUM(qty) AS s FROM od GROUP BY k WITH ROLLUP) t WHERE s > 10",
        ],
    );
    o(
        s,
        &[
            "SELECT k, SUM(qty) FROM od GROUP BY k WITH ROLLUP ORDER BY k",
            "SELECT k, SUM(qty) FROM od WHERE oid < 20 GROUP BY k WITH ROLLUP LIMIT 3",
            "SELECT k, SUM(qty) FROM od GROUP BY k DESC WITH ROLLUP",
            "SELECT * FROM (SELECT k, SUM(qty) AS s FROM od GROUP BY k WITH ROLLUP) t ORDER BY k IS NULL, k",
            "SELECT k, qty, COUNT(*) FROM od WHERE k IN (1, 2) GROUP BY k, qty WITH ROLLUP LIMIT 4 OFFSET 2",
        ],
    );
    p(
        s,
        "SELECT k, SUM(qty), MAX(price) FROM od WHERE qty > ? GROUP BY k WITH ROLLUP",
        vec![Value::Int(3)],
        How::Unordered,
    );
}

fn collations(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT name, v FROM sk WHERE name = 'EPSILON'",
            "SELECT name, v FROM sk WHERE name IN ('ALPHA', 'strase', 'ETA') ORDER BY v",
            "SELECT name, v FROM sk WHERE name = 'eta'",
            "SELECT DISTINCT LOWER(LEFT(name, 1)) AS c FROM sk ORDER BY c",
            "SELECT name FROM sk ORDER BY name COLLATE utf8mb4_unicode_ci, v",
            "SELECT name FROM sk ORDER BY name COLLATE utf8mb4_unicode_ci LIMIT 3 OFFSET 2",
            "SELECT COUNT(DISTINCT vc), COUNT(DISTINCT vc COLLATE utf8mb4_bin) FROM ty",
            "SELECT COUNT(DISTINCT ch), COUNT(DISTINCT BINARY ch) FROM ty",
            "SELECT COUNT(*) FROM ty WHERE vc = 'abc '",
            "SELECT UPPER(vc) AS uv, COUNT(*) FROM ty GROUP BY vc ORDER BY uv",
            "SELECT MIN(vc), MAX(vc) FROM ty",
            "SELECT vc = 'ABC' AS e, COUNT(*) FROM ty GROUP BY e ORDER BY e",
            "SELECT GROUP_CONCAT(DISTINCT vc ORDER BY vc COLLATE utf8mb4_bin SEPARATOR '|') FROM ty",
            "SELECT vc COLLATE utf8mb4_unicode_ci AS c, COUNT(*) FROM ty WHERE vc IN ('ss', 'ß') GROUP BY c ORDER BY c",
            "SELECT name FROM sk WHERE name LIKE 'e%' ORDER BY name",
            "SELECT name FROM sk ORDER BY CONVERT(name USING latin1), v",
        ],
    );
    p(
        s,
        "SELECT name, v FROM sk WHERE name = ?",
        vec![Value::Bytes("ÉPSILON".as_bytes().to_vec())],
        How::Ordered,
    );
    p(
        s,
        "SELECT name, v FROM sk WHERE name IN (?, ?) ORDER BY v",
        vec![
            Value::Bytes(b"GAMMA".to_vec()),
            Value::Bytes(b"iota  ".to_vec()),
        ],
        How::Ordered,
    );
    // Keys one server finds equal under the table's collation: the
    // same row, whatever their case, accents or trailing spaces.
    w(
        s,
        &[
            "INSERT INTO sk VALUES ('EPSILON', 50)",
            "INSERT INTO sk VALUES ('ALPHA', 52)",
            "INSERT INTO sk VALUES ('eta', 53)",
            "INSERT INTO sk VALUES ('Kappa', 54) ON DUPLICATE KEY UPDATE v = VALUES(v)",
            "INSERT IGNORE INTO sk VALUES ('THETA', 55), ('mu', 56)",
            "UPDATE sk SET v = 57 WHERE name = 'ZETA'",
            "DELETE FROM sk WHERE name = 'IOTA'",
        ],
    );
    p(
        s,
        "INSERT INTO sk VALUES (?, ?) ON DUPLICATE KEY UPDATE v = v + 100",
        vec![Value::Bytes(b"DELTA ".to_vec()), Value::Int(1)],
        How::Write,
    );
}

fn numbers(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT k, AVG(de) FROM ty GROUP BY k ORDER BY k",
            "SELECT AVG(de / 7), SUM(de / 3) FROM ty",
            "SELECT SUM(de) / COUNT(de) FROM ty",
            "SELECT AVG(price * 1.5), SUM(price / 3), AVG(price / 7) FROM od",
            "SELECT STDDEV(price), VARIANCE(qty), STDDEV_SAMP(qty) FROM od",
            "SELECT VAR_SAMP(bu), STD(bi) FROM ty",
            "SELECT AVG(CAST(bu AS DECIMAL(30,0))) FROM ty",
            "SELECT SUM(bu) - SUM(bu), SUM(bu) * 2, AVG(bu) * 3 FROM ty",
            "SELECT MAX(bu) + 0 FROM ty",
            "SELECT MAX(bu) + 1 FROM ty",
            "SELECT MIN(bi) - 1 FROM ty",
            "SELECT k, MAX(bu) - MIN(bu) - 1 FROM ty GROUP BY k ORDER BY k",
            "SELECT SUM(bi) FROM ty WHERE bi > 0",
            "SELECT AVG(ti), AVG(su), SUM(su) FROM ty",
            "SELECT SUM(db) FROM ty",
            "SELECT k, SUM(db) FROM ty GROUP BY k ORDER BY k",
            "SELECT ROUND(AVG(de), 2), ROUND(SUM(de), -3) FROM ty",
            "SELECT AVG(DISTINCT price), SUM(DISTINCT qty), COUNT(DISTINCT price) FROM od",
            "SELECT CAST(AVG(qty) AS DECIMAL(10,6)), AVG(qty) FROM od",
            "SELECT k, AVG(qty), SUM(qty) / COUNT(*) FROM od GROUP BY k ORDER BY k",
            "SELECT AVG(price) / 3, SUM(price) DIV 7, SUM(price) MOD 7 FROM od",
            "SELECT k, SUM(de) AS s FROM ty GROUP BY k HAVING s > 0 ORDER BY k",
            "SELECT SUM(bu) FROM ty WHERE bu > 1",
            "SELECT SUM(CAST(de AS DECIMAL(30,10))) FROM ty",
            "SELECT SUM(1e0 * de), AVG(1e0 * price) FROM od, ty WHERE od.oid = ty.id AND od.k = ty.k",
        ],
    );
    p(
        s,
        "SELECT SUM(de * ?), AVG(price + ?) FROM ty JOIN od ON od.oid = ty.id",
        vec![Value::Bytes(b"0.5".to_vec()), Value::Double(0.25)],
        How::Ordered,
    );
    p(
        s,
        "SELECT k, SUM(bu) + ? FROM ty GROUP BY k ORDER BY k",
        vec![Value::UInt(u64::MAX)],
        How::Ordered,
    );
}

fn time_zones(s: &mut Vec<Step>) {
    for zone in ["'+00:00'", "'-05:00'", "'+09:00'"] {
        s.push(step(&format!("SET time_zone = {zone}"), None, How::Write));
        o(
            s,
            &[
                "SELECT id, UNIX_TIMESTAMP(at) FROM ev WHERE kind = 'edge' ORDER BY id",
                "SELECT id FROM ev WHERE at = FROM_UNIXTIME(1706745600) ORDER BY id",
                "SELECT COUNT(*) FROM ev WHERE at < FROM_UNIXTIME(1706745600)",
                "SELECT DATE_FORMAT(CONVERT_TZ(at, @@session.time_zone, '+00:00'), '%Y-%m') AS m, COUNT(*) FROM ev GROUP BY m ORDER BY m",
            ],
        );
    }
    // Keys computed under the session's zone and timestamp: stored where
    // one server's value routes, and found again by key.
    w(
        s,
        &[
            "SET time_zone = '-05:00'",
            "INSERT INTO ev (id, at, kind, amt) VALUES (901, FROM_UNIXTIME(1706745600), 'tz', 1)",
            "SET time_zone = '+09:00'",
            "INSERT INTO ev (id, at, kind, amt) VALUES (902, FROM_UNIXTIME(1706745600), 'tz', 2)",
            "SET timestamp = 1706745599",
            "INSERT INTO ev (id, at, kind, amt) VALUES (903, NOW(), 'ts', 3)",
            "INSERT INTO ev (id, at, kind, amt) VALUES (904, CURRENT_DATE + INTERVAL 1 MONTH, 'ts', 4)",
            "SET time_zone = '+00:00'",
            "INSERT INTO ev (id, at, kind, amt) VALUES (905, NOW(), 'ts', 5)",
            "INSERT INTO ev (id, at, kind) VALUES (906, CONVERT_TZ('2024-02-29 23:30:00', '+00:00', '+01:00'), 'tz')",
            "INSERT INTO ev (id, at, kind) VALUES (907, '2024-01-31 23:00:00' + INTERVAL 90 MINUTE, 'tz')",
            "INSERT INTO ev (id, at, kind) VALUES (908, TIMESTAMP('2024-02-29', '24:00:00'), 'tz')",
        ],
    );
    o(
        s,
        &[
            "SELECT id, at FROM ev WHERE at = '2024-01-31 19:00:00'",
            "SELECT id, at FROM ev WHERE at = '2024-02-01 09:00:00'",
            "SELECT id, at FROM ev WHERE at = '2024-01-31 23:59:59' ORDER BY id",
            "SELECT id, at FROM ev WHERE at = '2024-03-01 00:30:00'",
            "SELECT id, at FROM ev WHERE at = '2024-02-01 00:30:00'",
            "SELECT id, at FROM ev WHERE at = '2024-03-01 00:00:00'",
            "SELECT id, at FROM ev WHERE at >= NOW() - INTERVAL 1 DAY AND at <= NOW() ORDER BY id",
            "SELECT id, at FROM ev WHERE id >= 900 ORDER BY id",
        ],
    );
    p(
        s,
        "SELECT id, at FROM ev WHERE at = FROM_UNIXTIME(?) ORDER BY id",
        vec![Value::Int(1706745599)],
        How::Ordered,
    );
    w(
        s,
        &[
            "SET time_zone = '-05:00'",
            "UPDATE ev SET amt = amt + 1 WHERE at < FROM_UNIXTIME(1704067200)",
            "DELETE FROM ev WHERE at = FROM_UNIXTIME(1706745600)",
            "SET time_zone = DEFAULT",
            "SET timestamp = DEFAULT",
        ],
    );
}

fn offsets(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT oid, k FROM od ORDER BY oid, k LIMIT 5, 5",
            "SELECT oid, k FROM od ORDER BY qty DESC, oid, k LIMIT 3 OFFSET 28",
            "SELECT oid, k FROM od ORDER BY oid, k LIMIT 100 OFFSET 30",
            "SELECT oid, k FROM od ORDER BY oid, k LIMIT 0, 0",
            "SELECT k, COUNT(*) FROM od GROUP BY k ORDER BY k LIMIT 2 OFFSET 1",
            "SELECT k, SUM(qty) AS s FROM od GROUP BY k ORDER BY s DESC, k LIMIT 1, 2",
            "SELECT DISTINCT qty FROM od ORDER BY qty DESC LIMIT 3, 3",
            "SELECT * FROM (SELECT oid, k FROM od ORDER BY oid, k LIMIT 10 OFFSET 3) t ORDER BY k, oid",
            "SELECT oid, k FROM od WHERE k IN (1, 2) ORDER BY oid DESC, k LIMIT 4 OFFSET 4",
            "SELECT oid, k FROM od ORDER BY oid, k LIMIT 18446744073709551615 OFFSET 36",
            "(SELECT oid FROM od WHERE k = 1) UNION ALL (SELECT oid FROM od WHERE k = 2) ORDER BY oid LIMIT 3 OFFSET 5",
            "SELECT name FROM sk ORDER BY v DESC, name LIMIT 2 OFFSET 3",
            "SELECT oid, k FROM od ORDER BY note, oid, k LIMIT 5 OFFSET 1",
            "SELECT id, k FROM ty ORDER BY de DESC, id, k LIMIT 3 OFFSET 36",
            "SELECT oid, k, qty FROM od WHERE qty > 3 ORDER BY qty, oid, k LIMIT 2 OFFSET 10",
            "SELECT k, GROUP_CONCAT(oid ORDER BY oid) FROM od GROUP BY k ORDER BY k LIMIT 10 OFFSET 4",
            "SELECT od.oid, od.k, gl.name FROM od JOIN gl ON gl.gid = od.qty ORDER BY od.oid, od.k LIMIT 3 OFFSET 4",
            "SELECT oid, k FROM od ORDER BY oid + k DESC, oid LIMIT 2 OFFSET 2",
        ],
    );
    for (limit, offset) in [(3, 4), (2, 29), (5, 0), (0, 3)] {
        p(
            s,
            "SELECT oid, k FROM od ORDER BY oid, k LIMIT ? OFFSET ?",
            vec![Value::Int(limit), Value::Int(offset)],
            How::Ordered,
        );
    }
    p(
        s,
        "SELECT k, COUNT(*) FROM od WHERE qty > ? GROUP BY k ORDER BY k LIMIT ?, ?",
        vec![Value::Int(2), Value::Int(1), Value::Int(2)],
        How::Ordered,
    );
}

fn upserts(s: &mut Vec<Step>) {
    w(
        s,
        &[
            "INSERT INTO od (oid, k, qty) VALUES (1, 0, 5), (2, 1, 6), (6001, 2, 7) ON DUPLICATE KEY UPDATE qty = qty + VALUES(qty)",
            "INSERT INTO od (oid, k, qty) VALUES (3, 2, 1), (4, 3, 1) ON DUPLICATE KEY UPDATE qty = VALUES(qty) * 10, note = CONCAT(note, '+')",
            "INSERT INTO od (oid, k, qty, note) VALUES (6002, 1, 1, 'n2') ON DUPLICATE KEY UPDATE qty = 99",
            "INSERT INTO od (oid, k, qty) VALUES (7, 1, 2) AS n ON DUPLICATE KEY UPDATE qty = n.qty",
            "INSERT INTO od (oid, k, qty) VALUES (8, 2, 3), (9, 3, 4) ON DUPLICATE KEY UPDATE qty = od.qty + VALUES(qty)",
            "INSERT INTO od (oid, k, qty) VALUES (10, -1, 1) ON DUPLICATE KEY UPDATE qty = VALUES(qty) + VALUES(oid)",
            "INSERT INTO od (oid, k, qty) VALUES (11, 0, 0), (12, 1, 0) ON DUPLICATE KEY UPDATE qty = qty",
            "INSERT INTO od (oid, k, qty) SELECT gid + 6100, gid % 4, gid FROM gl ON DUPLICATE KEY UPDATE qty = VALUES(qty) + 1",
            "INSERT INTO od (oid, k, qty) SELECT gid + 6100, gid % 4, gid FROM gl ON DUPLICATE KEY UPDATE qty = VALUES(qty) + 1",
            "INSERT INTO od (oid, k, qty) SELECT oid, k, 1 FROM od WHERE oid <= 5 ON DUPLICATE KEY UPDATE qty = od.qty + 100",
            "INSERT INTO od (oid, k, qty) SELECT oid, k, 1 FROM od WHERE oid <= 5 ON DUPLICATE KEY UPDATE qty = qty + 100",
            "INSERT INTO od (oid, k, qty) SELECT s.oid, s.k, 1 FROM od AS s WHERE s.oid <= 5 ON DUPLICATE KEY UPDATE qty = s.qty + 100",
            "INSERT INTO od (oid, k, qty) SELECT s.oid, s.k, 1 FROM od AS s WHERE s.oid <= 5 ON DUPLICATE KEY UPDATE qty = od.qty + 1",
            "INSERT INTO od (oid, k, qty) SELECT gid, gid % 4, 1 FROM gl ON DUPLICATE KEY UPDATE qty = qty + gl.gid",
            "INSERT INTO od (oid, k, qty) SELECT gid, gid % 4, 1 FROM gl ON DUPLICATE KEY UPDATE qty = qty + gid",
            "INSERT INTO od (oid, k, qty) SELECT o2.oid, o2.k, 1 FROM od o2 JOIN gl ON gl.gid = o2.k WHERE o2.oid < 9 ON DUPLICATE KEY UPDATE qty = od.qty + gl.gid",
            "INSERT INTO od (oid, k, qty) SELECT oid, k, 1 FROM od WHERE oid <= 5 ON DUPLICATE KEY UPDATE note = 'dup'",
            "INSERT INTO od (oid, k, qty, price) VALUES (13, 2, 1, 1.00), (14, 3, 1, 1.00) ON DUPLICATE KEY UPDATE price = IF(VALUES(price) > price, VALUES(price), price + 0.5)",
            "INSERT INTO od SET oid = 15, k = -1, qty = 3 ON DUPLICATE KEY UPDATE qty = qty * 2",
            "INSERT INTO ev (id, at, kind) VALUES (31, '2024-01-31 23:59:59', 'x') ON DUPLICATE KEY UPDATE amt = amt * 2, kind = VALUES(kind)",
            "INSERT INTO gl VALUES (1, 'g1'), (77, 'g77') ON DUPLICATE KEY UPDATE name = CONCAT(name, VALUES(name))",
        ],
    );
    p(
        s,
        "INSERT INTO od (oid, k, qty) VALUES (?, ?, ?), (?, ?, ?) ON DUPLICATE KEY UPDATE qty = VALUES(qty) + 1",
        vec![
            Value::Int(16),
            Value::Int(0),
            Value::Int(5),
            Value::Int(6003),
            Value::Int(3),
            Value::Int(5),
        ],
        How::Write,
    );
    p(
        s,
        "INSERT INTO od (oid, k, qty) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE qty = od.qty + ?",
        vec![Value::Int(17), Value::Int(1), Value::Int(1), Value::Int(40)],
        How::Write,
    );
}

fn replaces(s: &mut Vec<Step>) {
    w(
        s,
        &[
            "REPLACE INTO od VALUES (15, -1, 50, 1.00, 'r15'), (16, 0, 60, 2.00, 'r16'), (6004, 3, 1, NULL, NULL)",
            "REPLACE INTO od VALUES (6005, 1, 1, 1.00, 'n7')",
            "REPLACE INTO od VALUES (17, 1, 1, 1.00, 'n22')",
            "REPLACE INTO od SELECT oid, k, qty + 1, price, note FROM od WHERE k = 2",
            "REPLACE INTO od SELECT oid + 10000, k, qty, price, CONCAT(note, 'x') FROM od WHERE oid < 6",
            "REPLACE INTO sk VALUES ('BETA', 20), ('Gamma', 30), ('new1', 31)",
            "REPLACE INTO gl VALUES (1, 'g1')",
            "REPLACE INTO ev (id, at, kind, amt) VALUES (1, '2023-12-24 05:00:00', 'r', 1)",
            "REPLACE INTO ty (id, k) VALUES (1, 1), (1, -2)",
            "REPLACE INTO od SET oid = 20, k = -1, qty = 3",
            "REPLACE INTO od (oid, k, qty) SELECT 6200 + gid, gid % 4, gid FROM gl",
        ],
    );
    p(
        s,
        "REPLACE INTO od (oid, k, qty) VALUES (?, ?, ?), (?, ?, ?)",
        vec![
            Value::Int(18),
            Value::Int(2),
            Value::Int(7),
            Value::Int(19),
            Value::Int(3),
            Value::Int(8),
        ],
        How::Write,
    );
    p(
        s,
        "REPLACE INTO sk VALUES (?, ?)",
        vec![Value::Bytes("STRASSE".as_bytes().to_vec()), Value::Int(60)],
        How::Write,
    );
}

fn modes(s: &mut Vec<Step>) {
    w(
        s,
        &[
            "SET sql_mode = ''",
            "INSERT INTO od (oid, k, qty) VALUES (6010, 1, 'abc'), (6011, 2, NULL)",
            "INSERT INTO od (oid, k, qty, note) VALUES (6012, 3, 1, REPEAT('x', 30))",
            "INSERT INTO ev (id, at, kind) VALUES (920, '2024-02-30 10:00:00', 'bad')",
            "INSERT INTO ev (id, at, kind) VALUES (921, '2024-13-01', 'bad')",
            "UPDATE od SET qty = qty * 300000000 WHERE qty > 6",
            "SET sql_mode = 'STRICT_ALL_TABLES'",
            "UPDATE od SET qty = qty * 300000000 WHERE qty > 0",
            "INSERT INTO od (oid, k, qty) VALUES (6013, 1, 1), (6014, 2, 'x')",
            "INSERT INTO ev (id, at, kind) VALUES (922, '2024-02-30 10:00:00', 'bad')",
            "SET sql_mode = 'ALLOW_INVALID_DATES'",
            "INSERT INTO ev (id, at, kind) VALUES (923, '2024-02-30 10:00:00', 'inv')",
            "SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO'",
            "INSERT INTO ev (id, at, kind) VALUES (0, '2024-03-03', 'zero')",
            "SET sql_mode = 'STRICT_TRANS_TABLES,NO_ZERO_DATE'",
            "INSERT INTO ev (id, at, kind) VALUES (924, '0000-00-00', 'z')",
            "SET sql_mode = DEFAULT",
            "INSERT INTO ev (id, at, kind) VALUES (925, '2024-01-31 23:59:59.7', 'frac')",
            "SET sql_mode = 'TIME_ROUND_FRACTIONAL'",
            "INSERT INTO ev (id, at, kind) VALUES (926, '2024-01-31 23:59:59.7', 'frac')",
            "INSERT INTO ev (id, at, kind) VALUES (927, '2024-02-29 23:59:59.5', 'frac')",
            "SET sql_mode = 'PIPES_AS_CONCAT'",
            "INSERT INTO sk VALUES ('pi' || 'pe', 3)",
            "SET sql_mode = 'EMPTY_STRING_IS_NULL'",
            "INSERT INTO od (oid, k, qty, note) VALUES (6015, 1, 1, ''), (6016, 2, 1, '')",
            "SET sql_mode = 'ERROR_FOR_DIVISION_BY_ZERO,STRICT_ALL_TABLES'",
            "UPDATE od SET qty = qty DIV 0 WHERE k IN (2, 3)",
            "SET sql_mode = 'NO_UNSIGNED_SUBTRACTION'",
        ],
    );
    o(
        s,
        &[
            "SELECT MIN(bu) - 1 FROM ty",
            "SELECT k, MIN(bu) - MAX(bu) FROM ty GROUP BY k ORDER BY k",
            "SELECT id, at FROM ev WHERE at = '0000-00-00 00:00:00' ORDER BY id",
            "SELECT id, at FROM ev WHERE at = '2024-02-01 00:00:00' ORDER BY id",
            "SELECT id, at FROM ev WHERE at = '2024-03-01 00:00:00' ORDER BY id",
            "SELECT id, at FROM ev WHERE at = '2024-01-31 23:59:59' ORDER BY id",
            "SELECT id, at FROM ev WHERE at = '2024-02-30 10:00:00' ORDER BY id",
            "SELECT id, at, kind FROM ev WHERE id >= 900 OR id = 0 ORDER BY id",
            "SELECT name, v FROM sk WHERE name = 'pipe'",
        ],
    );
    w(
        s,
        &[
            "SET sql_mode = 'HIGH_NOT_PRECEDENCE'",
            "UPDATE od SET qty = 77 WHERE NOT k IN (0)",
            "SET sql_mode = 'ANSI'",
            "INSERT INTO \"sk\" (\"name\", \"v\") VALUES ('ansi1', 1)",
            "UPDATE \"od\" SET \"qty\" = 5 WHERE \"oid\" = 3 AND \"k\" = 2",
            "SET sql_mode = 'SIMULTANEOUS_ASSIGNMENT'",
            "UPDATE od SET qty = oid, note = qty WHERE oid < 6",
            "SET sql_mode = DEFAULT",
        ],
    );
    p(
        s,
        "INSERT INTO ev (id, at, kind) VALUES (?, ?, 'prep'), (?, ?, 'prep')",
        vec![
            Value::Int(930),
            Value::Bytes(b"2024-01-31 23:59:59.9".to_vec()),
            Value::Int(931),
            Value::Bytes(b"2024-02-31 00:00:00".to_vec()),
        ],
        How::Write,
    );
    s.push(step(
        "SET sql_mode = 'TIME_ROUND_FRACTIONAL'",
        None,
        How::Write,
    ));
    p(
        s,
        "INSERT INTO ev (id, at, kind) VALUES (?, ?, 'prep')",
        vec![
            Value::Int(932),
            Value::Date(2024, 1, 31, 23, 59, 59, 900_000),
        ],
        How::Write,
    );
    s.push(step("SET sql_mode = DEFAULT", None, How::Write));
}
