//! Spellings of key literals, INSERT / DELETE / REPLACE ... RETURNING,
//! expressions over merged aggregates and aliases that shadow columns,
//! table maintenance and statement modifiers, information_schema and
//! SHOW.

use super::statements::{o, step, u, w, How, Step};

pub fn push(s: &mut Vec<Step>) {
    // Spellings of a key literal (partitioning.md, "Keys the column
    // converts"; queries.md, "Which partitions a statement reaches").
    o(
        s,
        &[
            "SELECT id FROM ty WHERE k = '1' ORDER BY id",
            "SELECT id FROM ty WHERE k = ' 1' ORDER BY id",
            "SELECT id FROM ty WHERE k = '+1' ORDER BY id",
            "SELECT id FROM ty WHERE k = '01' ORDER BY id",
            "SELECT id FROM ty WHERE k = 1.0 ORDER BY id",
            "SELECT id FROM ty WHERE k = 1e0 ORDER BY id",
            "SELECT id FROM ty WHERE k = -0 ORDER BY id",
            "SELECT id FROM ty WHERE k = '-0' ORDER BY id",
            "SELECT id FROM ty WHERE k = '1.0' ORDER BY id",
            "SELECT id FROM ty WHERE k = 0x01 ORDER BY id",
            "SELECT id FROM ty WHERE k = b'10' ORDER BY id",
            "SELECT id FROM ty WHERE k = TRUE ORDER BY id",
            "SELECT id FROM ty WHERE k = '1abc' ORDER BY id",
            "SELECT id FROM ty WHERE k IN (1.0, '2', 3e0) ORDER BY id",
            "SELECT id FROM ty WHERE k BETWEEN '1' AND '2' ORDER BY id",
            "SELECT id FROM ty WHERE k = 1.4 ORDER BY id",
            "SELECT id FROM ty WHERE k = -1.0 ORDER BY id",
            "SELECT id FROM ty WHERE k = 18446744073709551617 ORDER BY id",
            "SELECT id FROM ty WHERE k = '' ORDER BY id",
            "SELECT id FROM ty WHERE k = (1) ORDER BY id",
            "SELECT id FROM ty WHERE k = 1 + 1 ORDER BY id",
            "SELECT id FROM ty WHERE k = CAST('2' AS SIGNED) ORDER BY id",
            "SELECT id FROM ty WHERE (k) IN ((1), (-2)) ORDER BY id",
            "SELECT id FROM ty WHERE k IN (SELECT 3) ORDER BY id",
            "SELECT id FROM ty WHERE k NOT IN (0, 1, -1) ORDER BY id",
            "SELECT id FROM ty WHERE -k = 1 ORDER BY id",
            "SELECT id FROM ty WHERE k = 1 AND k = 2",
            "SELECT id FROM ty WHERE k = 1 OR id = 5 ORDER BY id",
            "SELECT id FROM ty WHERE k = 1 XOR k = 2 ORDER BY id",
            "SELECT id FROM ty WHERE k = 2 AND (id = 2 OR id = 9) ORDER BY id",
            "SELECT id FROM ty WHERE k = '2 ' AND id = '9' ORDER BY id",
            "SELECT id FROM ev WHERE at = '2024-2-1' ORDER BY id",
            "SELECT id FROM ev WHERE at = '2024/02/01 00:00:00' ORDER BY id",
            "SELECT id FROM ev WHERE at = '24-02-01' ORDER BY id",
            "SELECT id FROM ev WHERE at = '2024-02-01 00:00:00.000000' ORDER BY id",
            "SELECT id FROM ev WHERE at = DATE '2024-02-01' ORDER BY id",
            "SELECT id FROM ev WHERE at = TIMESTAMP '2024-01-31 23:59:59' ORDER BY id",
            "SELECT id FROM ev WHERE at = '2024-01-31T23:59:59' ORDER BY id",
            "SELECT id FROM ev WHERE at IN (DATE '2024-02-01', '2024-02-10 10:00') ORDER BY id",
            "SELECT id FROM ev WHERE at = '20240201' ORDER BY id",
            "SELECT name FROM sk WHERE name = 'alpha' COLLATE utf8mb4_bin",
            "SELECT name FROM sk WHERE name = _latin1'alpha'",
            "SELECT name FROM sk WHERE name = X'616C706861'",
            "SELECT name FROM sk WHERE name = CONCAT('AL', 'pha')",
            "SELECT name FROM sk WHERE name IN ('alpha ', 'BETA  ') ORDER BY v",
            "SELECT name FROM sk WHERE name = 'kappa' OR name = 'KAPPA '",
            "SELECT name FROM sk WHERE name = 'Theta' AND v = 77",
        ],
    );
    w(s, &[
        "UPDATE ty SET ti = 5 WHERE k = '2' AND id = 2",
        "UPDATE ty SET ti = 6 WHERE k = 2.0 AND id = 9",
        "DELETE FROM ty WHERE k = '+3' AND id = 3",
        "UPDATE sk SET v = 1000 WHERE name = 'DELTA '",
        "DELETE FROM ev WHERE at = '2024-2-1'",
        "INSERT INTO ty (id, k) VALUES (900, '  3'), (901, '-0'), (902, 0x02)",
        "INSERT INTO ev (id, at, kind) VALUES (700, '2024-2-5', 'sp'), (701, 20240306, 'num'), (702, '2024/01/07 10:00', 'sl')",
    ]);
    // INSERT / DELETE / REPLACE ... RETURNING (MariaDB).
    w(s, &[
        "INSERT INTO od VALUES (950, 1, 1, 1, 'r1'), (951, 2, 2, 2, 'r2'), (952, 0, 3, 3, 'r3') RETURNING oid, k, qty * 2",
        "INSERT IGNORE INTO od VALUES (950, 1, 1, 1, 'r1'), (953, 3, 4, 4, 'r4') RETURNING oid",
        "REPLACE INTO od VALUES (950, 1, 5, 5, 'r1') RETURNING *",
        "DELETE FROM od WHERE oid IN (950, 951, 952, 953) RETURNING oid, note",
        "DELETE FROM sk WHERE name = 'ALPHA' RETURNING name, v",
    ]);
    s.extend(
        [
            "DELETE FROM od WHERE oid IN (1, 2, 3, 4) RETURNING oid, k",
            "DELETE FROM od WHERE oid = 5 OR note = 'n6' RETURNING *",
        ]
        .iter()
        .map(|q| step(q, None, How::WriteAnyOrder)),
    );
    w(
        s,
        &["INSERT INTO ev (at, kind) VALUES ('2024-01-09', 'ret') RETURNING id, at"],
    );
    // Expressions over merged aggregates, aliases that shadow columns.
    o(s, &[
        "SELECT ROUND(AVG(price), 1), STDDEV_POP(qty), VAR_SAMP(qty) FROM od",
        "SELECT k, STDDEV(qty), VARIANCE(price) FROM od GROUP BY k ORDER BY k",
        "SELECT MIN(oid) + MAX(oid), COUNT(*) * 2 FROM od",
        "SELECT CONCAT(MIN(note), '/', MAX(note)) FROM od",
        "SELECT GROUP_CONCAT(DISTINCT k ORDER BY k DESC SEPARATOR '') FROM od",
        "SELECT k, COUNT(*) FROM od GROUP BY k HAVING MIN(oid) > 1 AND MAX(qty) < 11 ORDER BY k",
        "SELECT IF(k > 0, 'pos', 'neg') sg, COUNT(*) FROM od GROUP BY sg ORDER BY sg",
        "SELECT CASE WHEN qty > 5 THEN 'hi' ELSE 'lo' END b, SUM(price) FROM od GROUP BY b ORDER BY b",
        "SELECT k, COUNT(*) FROM od GROUP BY k ORDER BY MAX(price) DESC, k",
        "SELECT k FROM od GROUP BY k ORDER BY SUM(qty) DESC, k LIMIT 2",
        "SELECT k, MIN(price) FROM od GROUP BY k HAVING MIN(price) IS NOT NULL ORDER BY 2 DESC LIMIT 1 OFFSET 1",
        "SELECT COUNT(*) FROM od GROUP BY k HAVING k > 0 ORDER BY k",
        "SELECT oid AS k FROM od ORDER BY k LIMIT 5",
        "SELECT oid AS k, k AS oid FROM od ORDER BY k, oid LIMIT 5",
        "SELECT k AS x FROM od GROUP BY x HAVING x > 1 ORDER BY x",
        "SELECT -k AS k, COUNT(*) FROM od GROUP BY k ORDER BY k",
        "SELECT qty AS k, COUNT(*) FROM od GROUP BY k ORDER BY k",
        "SELECT k AS note, COUNT(*) FROM od GROUP BY note ORDER BY 1, 2",
        "SELECT oid AS qty FROM od ORDER BY qty LIMIT 5",
        "SELECT oid AS qty FROM od ORDER BY qty + 0, oid LIMIT 5",
        "SELECT k, COUNT(*) AS qty FROM od GROUP BY k HAVING qty > 6 ORDER BY k",
        "SELECT DISTINCT k AS qty FROM od ORDER BY qty",
        "SELECT oid, qty FROM od ORDER BY qty, oid OFFSET 2 ROWS FETCH FIRST 3 ROWS ONLY",
        "SELECT oid, qty FROM od ORDER BY qty FETCH FIRST 3 ROWS WITH TIES",
    ]);
    // Ties under ORDER BY c come in any order.
    u(
        s,
        &["SELECT k, COUNT(*) c FROM od GROUP BY k ORDER BY c DESC FETCH FIRST 1 ROWS WITH TIES"],
    );
    // Grouped by the column qty, ordered by the alias (k): the groups
    // that share a k come in any order.
    u(
        s,
        &["SELECT k AS qty, SUM(qty) FROM od GROUP BY qty ORDER BY qty"],
    );
    // Table maintenance and statement modifiers.
    o(s, &[
        "CHECKSUM TABLE od",
        "CHECKSUM TABLE gl",
        "ANALYZE TABLE sk",
        "CHECK TABLE od",
        "SELECT COUNT(*) FROM od PARTITION (p0)",
        "SELECT oid FROM od USE INDEX (uq) WHERE k = 1 ORDER BY oid",
        "SELECT oid FROM od FORCE INDEX (nosuch) WHERE k = 1",
        "SELECT SQL_NO_CACHE COUNT(*) FROM od",
        "SELECT HIGH_PRIORITY oid FROM od ORDER BY oid LIMIT 2",
        "SELECT STRAIGHT_JOIN t.id, o.oid FROM ty t JOIN od o ON o.k = t.k AND o.oid = t.id ORDER BY t.id",
        "DO (SELECT COUNT(*) FROM od)",
        "SELECT MAX(oid) FROM od INTO @mx",
        "SELECT @mx",
        "UPDATE od SET qty = qty WHERE oid = 99999",
        "SELECT oid FROM od ORDER BY oid LIMIT 2 INTO @one",
        "SELECT SQL_BUFFER_RESULT k, COUNT(*) FROM od GROUP BY k ORDER BY k",
        "SELECT DISTINCTROW k FROM od ORDER BY k",
        "SELECT ALL k FROM od ORDER BY k, oid LIMIT 3",
    ]);
    // information_schema and SHOW (queries.md, "Schema statements").
    o(s, &[
        "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, COLUMN_DEFAULT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ty' ORDER BY ORDINAL_POSITION",
        "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME",
        "SELECT INDEX_NAME, COLUMN_NAME, SEQ_IN_INDEX, NON_UNIQUE FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'od' ORDER BY INDEX_NAME, SEQ_IN_INDEX",
        "SELECT CONSTRAINT_NAME, COLUMN_NAME, ORDINAL_POSITION FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'od' ORDER BY 1, 3",
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()",
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'o%'",
        "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()",
        "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME = 'k' ORDER BY TABLE_NAME",
        "SHOW TABLES",
        "SHOW FULL TABLES",
        "SHOW TABLES LIKE 's%'",
        "SHOW COLUMNS FROM od",
        "SHOW FULL COLUMNS FROM sk",
        "SHOW COLUMNS FROM ty LIKE 'b%'",
        "DESCRIBE sk",
        "SHOW CREATE TABLE od",
        "SHOW CREATE TABLE ev",
        "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ev'",
        "SHOW COLUMNS FROM nosuchtable",
        "SHOW INDEX FROM nosuchtable",
    ]);
}
