//! A third pass: strings under a collation in merges (MIN, MAX, ORDER
//! BY, GROUP BY, DISTINCT), arithmetic over merged aggregates, empty
//! answers, the case of table and column names, comments and whitespace
//! around keys, HAVING without GROUP BY, long IN lists and parenthesized
//! set operations; INSERT values that are expressions, DEFAULT or
//! subqueries, column lists in another order, statement modifiers;
//! INSERT ... SELECT with ORDER BY / LIMIT / GROUP BY / DISTINCT / WITH /
//! window functions, under sql_select_limit and inside a transaction;
//! affected rows of writes over partitions for a client that set
//! CLIENT_FOUND_ROWS.

use mysql_async::Value;

use super::statements::{o, step, w, How, Step};

pub fn push(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT MIN(name), MAX(name) FROM sk",
            "SELECT name FROM sk ORDER BY name LIMIT 4",
            "SELECT name FROM sk ORDER BY name DESC LIMIT 4",
            "SELECT MAX(vc), MIN(HEX(vc)) FROM ty WHERE vc <> ''",
            "SELECT name COLLATE utf8mb4_bin AS b, COUNT(*) FROM sk GROUP BY b ORDER BY b",
            "SELECT LOWER(name) l, COUNT(*) FROM sk GROUP BY l ORDER BY l",
            "SELECT COUNT(DISTINCT name COLLATE utf8mb4_bin), COUNT(DISTINCT LOWER(name)) FROM sk",
            "SELECT ch, COUNT(*) FROM ty GROUP BY ch ORDER BY ch",
            "SELECT DISTINCT ch FROM ty ORDER BY ch DESC",
            "SELECT MIN(ch), MAX(ch), MIN(st), MAX(en) FROM ty WHERE k IN (1, 2)",
            "SELECT SUM(db) FROM ty",
            "SELECT k, SUM(qty) / 3 FROM od GROUP BY k ORDER BY k",
            "SELECT k, AVG(qty) + 0.5 FROM od GROUP BY k ORDER BY k",
            "SELECT ROUND(SUM(price) / COUNT(*), 3) FROM od",
            "SELECT COUNT(*) * 1.0 / 7 FROM od",
            "SELECT SUM(qty) DIV 3, SUM(qty) MOD 3 FROM od",
            "SELECT CAST(SUM(qty) AS CHAR), CONCAT(COUNT(*)) FROM od",
            "SELECT MAX(oid) FROM od WHERE 1 = 0",
            "SELECT k, MAX(oid) FROM od WHERE 1 = 0 GROUP BY k",
            "SELECT oid FROM od WHERE FALSE ORDER BY oid LIMIT 3",
            "SELECT COUNT(*), SUM(qty) FROM od WHERE k = 99",
            "SELECT oid FROM od ORDER BY oid LIMIT 1000, 5",
            "SELECT COUNT(*) FROM OD",
            "SELECT COUNT(*) FROM `od`",
            "SELECT OID, K FROM od ORDER BY Oid LIMIT 2",
            "SELECT od.OID FROM od WHERE OD2.k = 1",
            "SELECT COUNT(*) FROM od AS OD2 WHERE OD2.k = 1",
            "SELECT COUNT(*) FROM od -- trailing comment",
            "SELECT COUNT(*) FROM od # hash comment",
            "SELECT COUNT(*)\nFROM\tod\nWHERE k\n= 1",
            "/* lead */ SELECT oid FROM od WHERE k = 2 ORDER BY oid",
            "SELECT oid FROM od WHERE k = 1 /* AND k = 2 */ ORDER BY oid",
            "SELECT oid FROM od WHERE k = 1 -- AND k = 2\n ORDER BY oid",
            "SELECT COUNT(*) FROM od WHERE note = '-- not a comment' OR k = 3",
            "SELECT COUNT(*) FROM od WHERE note = '/* x */' OR k = 2",
            "SELECT COUNT(*) AS c FROM od HAVING c > 5",
            "SELECT MAX(qty) m FROM od HAVING m < 5",
            "SELECT COUNT(*) FROM od ORDER BY COUNT(*)",
            "SELECT COUNT(*) FROM od WHERE k IN (0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,-1,-2,-3,-4,-5,-6,-7,-8,-9)",
            "SELECT oid FROM od WHERE (oid, k) IN ((1, 0), (2, 1), (3, 2), (4, 3), (5, 9)) ORDER BY oid",
            "(SELECT oid FROM od WHERE k = 1 ORDER BY oid LIMIT 2) UNION (SELECT oid FROM od WHERE k = 2 ORDER BY oid LIMIT 2) ORDER BY oid",
            "(SELECT oid FROM od ORDER BY oid DESC LIMIT 3) ORDER BY oid",
            "SELECT * FROM (SELECT oid, k FROM od ORDER BY oid LIMIT 5) x ORDER BY k, oid",
            "SELECT oid FROM od WHERE k = 1 AND oid IN (SELECT oid FROM od WHERE k = 1 AND qty > 3) ORDER BY oid",
            "SELECT COUNT(*) FROM od WHERE k BETWEEN 3 AND 1",
            "SELECT COUNT(*) FROM od WHERE k > 1 AND k < 3",
            "SELECT COUNT(*) FROM od WHERE NOT k = 0",
            "SELECT COUNT(*) FROM od WHERE k != 1 AND k <> 2",
            "SELECT DISTINCT k, 0 FROM od ORDER BY k",
            "SELECT DISTINCT k, 2 FROM od ORDER BY k",
            "SELECT DISTINCT k, 0 AS z FROM od ORDER BY k",
            "SELECT DISTINCT k, -1 FROM od ORDER BY k",
            "SELECT DISTINCT 0, k FROM od ORDER BY k",
            "SELECT DISTINCT k, 99 FROM od ORDER BY k",
            "SELECT DISTINCT k, 'x' FROM od ORDER BY k",
            "SELECT DISTINCT 1 FROM od",
            "SELECT DISTINCT qty + 1, 1 FROM od ORDER BY 1",
            "SELECT COUNT(DISTINCT k, 1) FROM od",
            "SELECT k, 1, COUNT(*) FROM od GROUP BY k, 1 ORDER BY k",
        ],
    );
    w(
        s,
        &[
            "INSERT INTO od (oid, k, qty) VALUES (5000, 1, k + 1), (5001, 2, oid - 5000)",
            "INSERT INTO od (oid, k, qty) VALUES (5013, 1, k + 1)",
            "INSERT INTO od (oid, k, qty) VALUES (5014, 1, k + 1), (5015, 1, oid)",
            "INSERT INTO od (oid, k, qty, note) VALUES (5016, 2, 1, CONCAT('n', oid)), (5017, 3, 1, CONCAT('n', oid))",
            "INSERT INTO od (oid, k, qty) VALUES (5018, 1, 1), (5019, 2, 2) ON DUPLICATE KEY UPDATE qty = qty + k",
            "INSERT INTO od SET oid = 5002, k = 3, qty = oid",
            "INSERT INTO od VALUES (5003, 0, 1, DEFAULT, DEFAULT)",
            "INSERT INTO od (oid, k, qty) VALUES (5004, 1, 1), (5005, 2, (SELECT COUNT(*) FROM gl))",
            "INSERT INTO od (k, note, qty, oid) VALUES (3, 'perm', 4, 5006), (-2, 'perm', 5, 5007)",
            "INSERT INTO od (oid, k, qty, k) VALUES (5008, 1, 1, 2)",
            "INSERT HIGH_PRIORITY INTO od (oid, k, qty) VALUES (5009, 1, 1), (5010, 2, 2)",
            "INSERT DELAYED INTO od (oid, k, qty) VALUES (5011, 3, 1)",
            "UPDATE LOW_PRIORITY od SET qty = 1 WHERE oid >= 5000",
            "UPDATE od SET note = CONCAT(note, oid) WHERE k = 2 ORDER BY oid LIMIT 1",
            "DELETE QUICK FROM od WHERE oid = 5002",
            "DELETE LOW_PRIORITY IGNORE FROM od WHERE oid >= 5000 AND k IN (1, 3)",
            "REPLACE INTO od (oid, k, qty, note) VALUES (5001, 2, 9, 'n5001'), (5001, 2, 10, 'n5001b')",
            "INSERT INTO od (oid, k, qty) VALUES (5012, 1, 1) ON DUPLICATE KEY UPDATE qty = VALUES(qty) + 1, note = VALUES(note)",
            "INSERT INTO od (oid, k, qty) VALUES (5012, 1, 1) ON DUPLICATE KEY UPDATE qty = VALUES(qty) + 1, note = 'again'",
            "UPDATE od SET qty = DEFAULT WHERE oid = 5012",
            "UPDATE od SET price = NULL, note = NULL WHERE oid = 5012 AND k = 1",
        ],
    );
    w(
        s,
        &[
            "INSERT INTO od (oid, k, qty) SELECT oid + 6000, k, qty FROM od ORDER BY oid LIMIT 3",
            "INSERT INTO od (oid, k, qty) SELECT oid + 6100, k, qty FROM od WHERE k = 1 ORDER BY oid DESC LIMIT 2",
            "INSERT INTO od (oid, k, qty) SELECT DISTINCT qty + 6200, k, 0 FROM od WHERE oid < 100",
            "INSERT INTO od (oid, k, qty) SELECT MAX(oid) + 7000, k, COUNT(*) FROM od GROUP BY k",
            "INSERT INTO sk (name, v) SELECT UPPER(name), v FROM sk",
            "INSERT IGNORE INTO sk (name, v) SELECT CONCAT(name, '2'), v FROM sk WHERE v < 5",
            "UPDATE od SET qty = qty + 1 WHERE k = 1 ORDER BY qty DESC, oid LIMIT 2",
            "DELETE FROM od WHERE k IN (2, 3) ORDER BY qty, oid LIMIT 3",
            "REPLACE INTO od (oid, k, qty, note) SELECT oid, k, qty + 100, note FROM od WHERE oid BETWEEN 6000 AND 6999",
            "INSERT INTO od (oid, k, qty) WITH c AS (SELECT oid, k FROM od WHERE k = 3) SELECT oid + 6400, k, 1 FROM c",
            "INSERT INTO od (oid, k, qty) SELECT oid + 6500, k, ROW_NUMBER() OVER (ORDER BY oid) FROM od WHERE k = 0",
            "INSERT INTO od (oid, k, qty) SELECT oid + 6600, k, qty FROM od WHERE k = 2 UNION ALL SELECT oid + 6700, k, qty FROM od WHERE k = 3",
        ],
    );
    o(s, &["SET SESSION sql_select_limit = 2"]);
    w(
        s,
        &["INSERT INTO od (oid, k, qty) SELECT oid + 6800, k, qty FROM od WHERE k IN (1, 2) AND oid < 100"],
    );
    o(
        s,
        &[
            "SELECT COUNT(*) FROM od WHERE oid BETWEEN 6800 AND 6999",
            "SET SESSION sql_select_limit = DEFAULT",
            "BEGIN",
        ],
    );
    w(
        s,
        &[
            "INSERT INTO od (oid, k, qty) SELECT oid + 8000, k, qty FROM od WHERE oid < 10",
            "ROLLBACK",
        ],
    );
    s.push(step("", None, How::FoundRows));
    w(
        s,
        &[
            "UPDATE od SET qty = qty WHERE k IN (1, 2)",
            "UPDATE od SET qty = qty + 0 WHERE oid < 10",
            "UPDATE od SET qty = 1 WHERE oid = 99999",
            "INSERT INTO od (oid, k, qty) VALUES (1, 0, 7), (2, 1, 3) ON DUPLICATE KEY UPDATE qty = qty",
            "INSERT INTO od (oid, k, qty, price, note) VALUES (3, 2, 10, 39.21, 'n3'), (9000, 1, 1, 1, 'fr') ON DUPLICATE KEY UPDATE qty = VALUES(qty)",
            "UPDATE od SET note = note WHERE k = 3 AND oid < 20",
        ],
    );
    o(s, &["SELECT ROW_COUNT()"]);
    s.push(step(
        "UPDATE od SET qty = qty WHERE k = ?",
        Some(vec![Value::Int(0)]),
        How::Write,
    ));
    o(s, &["SELECT ROW_COUNT()"]);
}
