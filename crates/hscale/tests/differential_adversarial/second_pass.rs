//! A second pass over the book: names a merge must resolve as one server
//! does (aliases, qualified columns, labels), GROUP BY's implicit order
//! on MariaDB, escapes and edge numbers in key literals, multi-table
//! writes and writes with subqueries, ON DUPLICATE KEY UPDATE of the key,
//! JSON_TABLE, named windows, EXCEPT ALL / INTERSECT ALL, and session
//! variables a backend must share with the client's session
//! (lc_time_names, time_zone, default_week_format, sql_safe_updates).

use mysql_async::Value;

use super::statements::{o, step, u, w, How, Step};

pub fn push(s: &mut Vec<Step>) {
    // Names and labels in merged reads.
    o(
        s,
        &[
            "SELECT k AS kk, SUM(qty) s FROM od GROUP BY kk ORDER BY s, kk",
            "SELECT od.k, COUNT(*) FROM od GROUP BY od.k ORDER BY od.k",
            "SELECT x.k, MAX(x.qty) FROM od x GROUP BY x.k ORDER BY x.k DESC",
            "SELECT od.* FROM od ORDER BY od.oid LIMIT 3",
            "SELECT *, k FROM od ORDER BY oid LIMIT 2",
            "SELECT k, k FROM od GROUP BY k ORDER BY k",
            "SELECT COUNT(*) AS cnt FROM od GROUP BY k ORDER BY CNT, 1",
            "SELECT k AS `K`, COUNT(*) FROM od GROUP BY `K` ORDER BY `k`",
            "SELECT SUM(qty)  +  1 FROM od",
            "SELECT sum(qty), Count( * ), max(Price) FROM od",
            "SELECT /* c */ COUNT(*) FROM od",
            "SELECT MAX(price) AS \"m\", MIN(price) 'n' FROM od",
            "SELECT k 'my k', COUNT(*) FROM od GROUP BY k ORDER BY k",
            "SELECT AVG(NULLIF(qty, 0)), SUM(IF(note IS NULL, 1, 0)), COUNT(IF(qty > 5, 1, NULL)) FROM od",
            "SELECT * FROM (SELECT k, COUNT(*) c FROM od GROUP BY k) x ORDER BY c DESC, k LIMIT 2",
            "SELECT k, (SELECT COUNT(*) FROM ty WHERE ty.k = od.k) c FROM od GROUP BY k ORDER BY k",
            "SELECT oid, k FROM od WHERE oid = 7 AND k IN (SELECT k FROM od WHERE oid = 7)",
            "SELECT oid, qty FROM od ORDER BY od.qty DESC, od.oid LIMIT 3",
            "SELECT 'x' AS k, COUNT(*) FROM od GROUP BY k ORDER BY k",
        ],
    );
    // MariaDB still sorts by GROUP BY without ORDER BY.
    o(
        s,
        &[
            "SELECT k, COUNT(*) FROM od GROUP BY k",
            "SELECT k, COUNT(*) FROM od GROUP BY k LIMIT 2",
            "SELECT k, COUNT(*) FROM od GROUP BY k LIMIT 1, 2",
            "SELECT note, COUNT(*) FROM od GROUP BY note LIMIT 4",
            "SELECT k, qty > 5, COUNT(*) FROM od GROUP BY k, qty > 5",
            "SELECT en, COUNT(*) FROM ty GROUP BY en",
            "SELECT name, v FROM sk GROUP BY name",
        ],
    );
    // JSON_TABLE, named windows, EXCEPT ALL, INTERSECT ALL.
    o(
        s,
        &[
            "SELECT t.id, j.v FROM ty t, JSON_TABLE(t.js, '$[*]' COLUMNS (v VARCHAR(10) PATH '$')) j ORDER BY t.id, j.v",
            "SELECT oid, SUM(qty) OVER w FROM od WINDOW w AS (PARTITION BY k ORDER BY oid) ORDER BY oid",
            "SELECT k FROM od EXCEPT ALL SELECT k FROM ty ORDER BY k",
            "SELECT k FROM od INTERSECT ALL SELECT k FROM ty ORDER BY k",
            "SELECT k FROM ty EXCEPT ALL SELECT k FROM od ORDER BY k",
        ],
    );
    // Escapes and edge numbers in key literals.
    w(
        s,
        &[
            "INSERT INTO sk VALUES ('O''Brien', 1), ('a\\\\b', 2), ('tab\\there', 3), ('😀', 4), ('quote\"d', 5)",
            "INSERT INTO sk VALUES ('o''brien', 9)",
            "INSERT INTO od VALUES (990, -2147483648, 1, 1, 'minint'), (991, 2147483647, 1, 1, 'maxint')",
            "INSERT INTO od VALUES (992, 2147483648, 1, 1, 'over')",
            "INSERT IGNORE INTO od VALUES (993, 2147483648, 1, 1, 'over'), (994, -2147483649, 1, 1, 'under')",
            "INSERT INTO ev (id, at, kind) VALUES (800, '2024-01-31 23:59:59.9', 'frac')",
            "INSERT INTO ev (id, at, kind) VALUES (801, '2024-02-29 24:00:00', 'bad')",
            "INSERT INTO ev (id, at, kind) VALUES (802, '2024-03-31 23:59:59.999999', 'frac2')",
        ],
    );
    o(
        s,
        &[
            "SELECT name, v FROM sk WHERE name = 'O''BRIEN'",
            "SELECT name, v FROM sk WHERE name = 'a\\\\b'",
            "SELECT name, v FROM sk WHERE name = 'TAB\\tHERE'",
            "SELECT name, v FROM sk WHERE name = '😀'",
            "SELECT name, v FROM sk WHERE name = \"quote\\\"d\"",
            "SELECT name, v FROM sk WHERE name IN ('o\\'brien', 'A\\\\B') ORDER BY v",
            "SELECT oid, k FROM od WHERE k = -2147483648",
            "SELECT oid, k FROM od WHERE k = 2147483647 ORDER BY oid",
            "SELECT oid, k FROM od WHERE k IN (-2147483648, 2147483647) ORDER BY oid",
            "SELECT oid, k FROM od WHERE k > 2147483646 ORDER BY oid",
            "SELECT id, at FROM ev WHERE at = '2024-01-31 23:59:59' ORDER BY id",
            "SELECT id, at FROM ev WHERE id >= 800 ORDER BY id",
        ],
    );
    // Multi-table writes, writes with subqueries, the partition key in
    // ON DUPLICATE KEY UPDATE and SET.
    w(
        s,
        &[
            "UPDATE od JOIN gl ON gl.gid = od.k SET od.qty = od.qty + 1 WHERE gl.name = 'n2'",
            "DELETE od FROM od JOIN gl ON gl.gid = od.k WHERE gl.name = 'zero' AND od.qty > 5",
            "UPDATE od SET qty = (SELECT COUNT(*) FROM gl) WHERE oid = 8",
            "UPDATE od SET qty = qty + 1 WHERE k IN (SELECT gid FROM gl WHERE name LIKE 'n%')",
            "DELETE FROM od WHERE qty = (SELECT MAX(gid) FROM gl) AND k = 3",
            "INSERT INTO od (oid, k, qty) SELECT gid + 3000, gid, 1 FROM gl",
            "REPLACE INTO od (oid, k, qty, note) SELECT gid + 3000, gid, 2, 'rep' FROM gl WHERE gid < 3",
            "INSERT INTO gl (gid, name) SELECT 100 + k, CONCAT('k', k) FROM od WHERE oid < 4",
            "DELETE FROM gl WHERE gid >= 100",
            "UPDATE od SET k = k WHERE oid = 7",
            "UPDATE od SET k = k + 4 WHERE oid = 7",
            "UPDATE od SET k = 2 WHERE oid = 7",
            "INSERT INTO od VALUES (7, 5, 1, 1, 'n7') ON DUPLICATE KEY UPDATE k = 3",
            "INSERT INTO od VALUES (7, 5, 1, 1, 'n7') ON DUPLICATE KEY UPDATE qty = 77, note = 'odku'",
        ],
    );
    // Session variables a backend must share with the session.
    o(
        s,
        &[
            "SET SESSION lc_time_names = 'de_DE'",
            "SELECT MONTHNAME(at) mn, COUNT(*) FROM ev GROUP BY mn ORDER BY mn",
            "SELECT DATE_FORMAT(MIN(at), '%W %M'), DAYNAME(MAX(at)) FROM ev",
            "SET SESSION lc_time_names = DEFAULT",
            "SET SESSION default_week_format = 1",
            "SELECT WEEK(at) wk, COUNT(*) FROM ev GROUP BY wk ORDER BY wk",
            "SET SESSION default_week_format = DEFAULT",
            "SET SESSION time_zone = '+05:00'",
            "SELECT id FROM ev WHERE at = FROM_UNIXTIME(1706745599) ORDER BY id",
            "SELECT COUNT(*) FROM ev WHERE at < NOW()",
            "SET SESSION time_zone = DEFAULT",
            "SET SESSION sql_safe_updates = 1",
            "UPDATE od SET qty = 1",
            "DELETE FROM od WHERE qty = 3",
            "UPDATE od SET qty = qty WHERE k = 1 AND oid = 7",
            "SET SESSION sql_safe_updates = DEFAULT",
            "SET SESSION TRANSACTION READ ONLY",
            "INSERT INTO od (oid, k, qty) VALUES (4000, 1, 1)",
            "SET SESSION TRANSACTION READ WRITE",
            "SET SESSION collation_connection = utf8mb4_bin",
            "SELECT name FROM sk WHERE name = 'alpha' OR name = 'BETA' ORDER BY v",
            "SELECT COUNT(*) FROM sk WHERE name = 'gamma' COLLATE utf8mb4_bin",
            "SET SESSION collation_connection = DEFAULT",
            "SET SESSION sql_mode = 'NO_UNSIGNED_SUBTRACTION'",
            "SELECT k, MIN(su) - 1 AS m FROM ty GROUP BY k ORDER BY k",
            "SELECT k, MIN(su) - 1 AS m FROM ty GROUP BY k HAVING m < 0 ORDER BY k",
            "SET SESSION sql_mode = DEFAULT",
        ],
    );
    // Prepared: more parameter types against keys.
    let p = |s: &mut Vec<Step>, sql: &str, params: Vec<Value>| {
        s.push(step(sql, Some(params), How::Ordered))
    };
    p(
        s,
        "SELECT id FROM ev WHERE at = ? ORDER BY id",
        vec![Value::Date(2024, 2, 1, 0, 0, 0, 0)],
    );
    p(
        s,
        "SELECT id FROM ty WHERE k = ? ORDER BY id",
        vec![Value::UInt(u64::MAX)],
    );
    p(
        s,
        "SELECT name FROM sk WHERE name = ?",
        vec![Value::Bytes(b"alpha  ".to_vec())],
    );
    p(
        s,
        "SELECT id FROM ty WHERE k <=> ? ORDER BY id",
        vec![Value::NULL],
    );
    p(
        s,
        "SELECT name FROM sk WHERE name IN (?, ?) ORDER BY v",
        vec![
            Value::Bytes(b"GAMMA".to_vec()),
            Value::Bytes(b"zeta".to_vec()),
        ],
    );
    p(
        s,
        "SELECT k, COUNT(*) FROM od WHERE k BETWEEN ? AND ? GROUP BY k",
        vec![Value::Int(-1), Value::Bytes(b"2".to_vec())],
    );
    // Around F1 of docs/adversarial-findings.md: DELETE ... RETURNING in
    // other shapes.
    s.extend(
        [
            "DELETE FROM od WHERE k IN (1, 2) AND qty > 8 RETURNING oid, k, qty",
            "DELETE FROM od WHERE oid = 12 RETURNING oid * 2 AS twice, UPPER(note)",
            "DELETE FROM gl WHERE gid = 5 RETURNING gid, name",
            "DELETE FROM ev WHERE amt > 9 RETURNING id, amt",
        ]
        .iter()
        .map(|q| step(q, None, How::WriteAnyOrder)),
    );
    s.push(step(
        "DELETE FROM od WHERE qty = ? RETURNING oid",
        Some(vec![Value::Int(0)]),
        How::WriteAnyOrder,
    ));
    // Around F2: names that are both an alias and a column, in HAVING,
    // ORDER BY, DISTINCT and prepared.
    o(
        s,
        &[
            "SELECT k AS qty, COUNT(*) FROM od GROUP BY k HAVING qty > 1 ORDER BY 1",
            "SELECT k AS oid, COUNT(*) FROM od GROUP BY oid HAVING COUNT(*) > 0 ORDER BY oid LIMIT 3",
            "SELECT k AS price, MAX(qty) FROM od GROUP BY price ORDER BY 1, 2 LIMIT 3",
            "SELECT k AS qty, oid FROM od ORDER BY qty, oid LIMIT 5",
            "SELECT qty AS k, oid FROM od WHERE k = 1 ORDER BY k, oid",
            "SELECT k AS qty, SUM(qty) FROM od GROUP BY od.qty ORDER BY od.qty",
            "SELECT MAX(qty) AS k FROM od GROUP BY k ORDER BY k",
            "SELECT oid AS qty, qty AS oid FROM od ORDER BY qty LIMIT 3",
            "SELECT k AS oid, oid AS x FROM od ORDER BY oid DESC, x LIMIT 4",
            "SELECT qty AS oid, oid AS id2 FROM od ORDER BY oid, id2 LIMIT 4",
            "SELECT -oid AS oid FROM od ORDER BY oid LIMIT 3",
            "SELECT oid, -qty AS qty FROM od ORDER BY qty, oid LIMIT 3",
            "SELECT k, SUM(qty) AS qty FROM od GROUP BY k ORDER BY qty, k",
            "SELECT k, MAX(oid) AS oid FROM od GROUP BY k HAVING oid > 20 ORDER BY k",
            "SELECT note AS k, oid FROM od WHERE k = 2 ORDER BY k, oid",
        ],
    );
    // Grouped by the column qty, ordered by the alias (k): the groups
    // that share a k come in any order.
    s.push(step(
        "SELECT k AS qty, SUM(qty) FROM od WHERE oid > ? GROUP BY qty ORDER BY qty",
        Some(vec![Value::Int(0)]),
        How::Unordered,
    ));
    // Around F4 and F6: keys no date can hold, without strict mode.
    w(
        s,
        &[
            "INSERT IGNORE INTO ev (id, at, kind) VALUES (900, 'bad', 'ig')",
            "INSERT INTO ev (id, at, kind) VALUES (901, '2024-13-01', 'bad')",
        ],
    );
    o(s, &["SET SESSION sql_mode = ''"]);
    w(
        s,
        &[
            "INSERT INTO ev (id, at, kind) VALUES (902, 'bad', 'ns')",
            "INSERT INTO ev (id, at, kind) VALUES (903, '2024-02-30', 'ns')",
        ],
    );
    o(
        s,
        &[
            "SELECT id, at FROM ev WHERE id >= 900 ORDER BY id",
            "SET SESSION sql_mode = DEFAULT",
        ],
    );
    // TRUNCATE, then the ids one server and the sequence hand out.
    u(s, &["SELECT COUNT(*) FROM ev"]);
    w(
        s,
        &[
            "TRUNCATE TABLE ev",
            "INSERT INTO ev (at, kind) VALUES ('2024-01-02', 'new')",
        ],
    );
}
