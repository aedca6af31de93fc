//! Writes: multi-row writes failing part-way, INSERT IGNORE, REPLACE, ON
//! DUPLICATE KEY UPDATE, affected rows, insert ids; warnings, SHOW
//! WARNINGS and the error codes of bad statements.

use super::statements::{o, u, w, Step};

pub fn push(s: &mut Vec<Step>) {
    // Multi-row writes failing part-way; INSERT IGNORE, REPLACE, ON
    // DUPLICATE KEY UPDATE; affected rows (transactions.md: "a failed
    // statement is undone whole"; queries.md: "Records: / Rows matched:
    // info is added up").
    w(s, &[
        "INSERT INTO od VALUES (100, 1, 1, 1.00, 'n100'), (101, 2, 1, 2.00, 'n101'), (1, 0, 1, 1.00, 'dup')",
        "INSERT IGNORE INTO od VALUES (102, 1, 1, 1.00, 'n102'), (1, 0, 9, 9.00, 'dupe'), (103, 2, 1, 'x', 'n103')",
        "INSERT INTO od VALUES (104, 3, 99999999999, 1, 'big')",
        "INSERT IGNORE INTO od VALUES (104, 3, 99999999999, 1, 'big'), (105, -1, -5, 1234567.891, 'big2')",
        "REPLACE INTO od VALUES (1, 0, 50, 5.00, 'rep1'), (200, 1, 1, 1.00, 'rep2')",
        "REPLACE INTO od VALUES (2, 1, 7, 7.00, 'n11')",
        "INSERT INTO od VALUES (3, 2, 1, 1.00, 'x3') ON DUPLICATE KEY UPDATE qty = qty + VALUES(qty)",
        "INSERT INTO od VALUES (3, 2, 5, 1.00, 'x3') ON DUPLICATE KEY UPDATE qty = qty",
        "INSERT INTO od (oid, k, qty, price, note) VALUES (300, 1, 1, 1, 'a'), (301, 2, 2, 2, 'b'), (302, 3, 3, 3, 'c'), (303, 0, 4, 4, 'd') ON DUPLICATE KEY UPDATE qty = VALUES(qty) * 10",
        "INSERT INTO od (oid, k, qty, price, note) VALUES (300, 1, 1, 1, 'a'), (301, 2, 2, 2, 'b'), (302, 3, 3, 3, 'c'), (303, 0, 4, 4, 'd') ON DUPLICATE KEY UPDATE qty = VALUES(qty) * 10",
        "INSERT INTO od VALUES (400, 1, 1, 1, 'n'), (400, 1, 2, 2, 'n2') ON DUPLICATE KEY UPDATE qty = qty + 100",
        "INSERT INTO od SET oid = 401, k = 2, qty = 1, price = NULL, note = NULL",
        "INSERT INTO od VALUES (402, 3, NULL, 1, 'z')",
        "INSERT INTO od VALUES (403, 3, 1, 1, 'z'), (404, 0, NULL, 1, 'y')",
        "INSERT INTO od (oid, k, qty) VALUES (405, 1, 1)",
        "INSERT INTO od (oid, qty) VALUES (406, 1)",
        "INSERT INTO od VALUES (407, '2', 1, 1, 'q')",
        "INSERT INTO od VALUES (408, 2.4, 1, 1, 'q2')",
        "INSERT INTO od VALUES (409, '3abc', 1, 1, 'q3')",
        "INSERT IGNORE INTO od VALUES (410, '3abc', 1, 1, 'q4')",
        "UPDATE od SET qty = qty + 1 WHERE oid < 10",
        "UPDATE od SET qty = 2147483647 + oid WHERE oid BETWEEN 5 AND 8",
        "UPDATE IGNORE od SET qty = 2147483647 + oid WHERE oid BETWEEN 5 AND 8",
        "UPDATE od SET note = 'same' WHERE k = 1 AND oid IN (2, 7)",
        "UPDATE IGNORE od SET note = 'same2' WHERE k IN (1, 2)",
        "UPDATE od SET qty = qty WHERE k = 3",
        "DELETE FROM od WHERE qty > 1000",
        "DELETE FROM od WHERE k = 2 ORDER BY oid DESC LIMIT 2",
        "INSERT INTO od SELECT oid + 1000, k, qty, price, CONCAT(note, 'x') FROM od WHERE k = 1",
        "INSERT INTO od SELECT oid + 2000, k, qty, price, note FROM od WHERE k = 1",
        "INSERT IGNORE INTO od SELECT oid + 2000, k, qty, price, note FROM od WHERE k IN (1, 2)",
        "INSERT INTO od (oid, k, qty) VALUES (500, 1, 1), (501, 2, 2), (502, 3, 3), (503, 0, 4), (500, 1, 5)",
        "INSERT INTO od (oid, k, qty) VALUES (510, -1, 1), (511, -2, 2), (512, -3, 3), (513, 3, 4), (514, 1, 9999999999)",
        "DELETE FROM od WHERE oid >= 1000",
        "UPDATE od SET price = price / 0 WHERE k = 1",
        "UPDATE IGNORE od SET price = 1000000 WHERE k IN (2, 3) AND oid < 20",
    ]);
    // Insert ids and the affected rows the session reads back
    // (sequences.md: the OK's insert id and LAST_INSERT_ID()).
    w(
        s,
        &["INSERT INTO ev (at, kind, amt) VALUES ('2024-01-20 00:00:00', 'a', 1)"],
    );
    o(s, &["SELECT LAST_INSERT_ID(), ROW_COUNT()"]);
    w(s, &[
        "INSERT INTO ev (at, kind, amt) VALUES ('2024-02-20 00:00:00', 'b', 2), ('2024-03-20 00:00:00', 'c', 3)",
    ]);
    o(s, &["SELECT LAST_INSERT_ID(), ROW_COUNT()"]);
    w(s, &[
        "INSERT INTO ev (id, at, kind, amt) VALUES (500, '2024-01-05', 'x', 1)",
        "INSERT INTO ev (at, kind, amt) VALUES ('2024-01-06', 'y', 1)",
        "INSERT INTO ev (id, at, kind, amt) VALUES (0, '2024-02-06', 'z', 1)",
        "INSERT INTO ev (id, at, kind, amt) VALUES (NULL, '2024-02-07', 'z', 1), (DEFAULT, '2024-05-07', 'z', 2)",
        "INSERT INTO ev (at, kind) VALUES ('2024-05-01', 'no')",
        "INSERT INTO ev (id, at, kind) VALUES (600, 'not a date', 'q')",
    ]);
    o(s, &["SELECT ROW_COUNT()"]);
    w(
        s,
        &[
            "INSERT INTO ev (id, at, kind) VALUES (1, '2023-12-24 05:00:00', 'dup')",
            "UPDATE ev SET amt = amt * 2 WHERE kind = 'a'",
        ],
    );
    o(s, &["SELECT ROW_COUNT(), LAST_INSERT_ID()"]);
    w(
        s,
        &["INSERT INTO ev (at, kind) VALUES ('2024-03-03', 'r') ON DUPLICATE KEY UPDATE amt = 1"],
    );
    o(s, &["SELECT LAST_INSERT_ID()"]);
    // Warnings, SHOW WARNINGS and the error codes of bad statements.
    o(s, &["SELECT id FROM ty WHERE vc = 0 ORDER BY id"]);
    // Which condition SHOW WARNINGS lists first is the scan order.
    u(s, &["SHOW WARNINGS"]);
    o(
        s,
        &[
            "SELECT CAST('abc' AS SIGNED), id FROM ty WHERE k = 1 ORDER BY id",
            "SHOW COUNT(*) WARNINGS",
            "SELECT @@warning_count",
            "SELECT 1 / 0, id FROM ty WHERE k = 2 ORDER BY id",
            "SELECT id FROM ty WHERE tm > '25:99:99' ORDER BY id",
            "SHOW WARNINGS LIMIT 1",
            "SELECT nosuchcol FROM ty",
            "SHOW ERRORS",
            "SELECT * FROM nosuchtable",
            "SELECT id FROM ty WHERE",
            "SELECT id FROM ty ORDER BY 99",
            "SELECT SUM(id) FROM ty GROUP BY SUM(id)",
            "SELECT COUNT(*) FROM ty, od",
            "SELECT id FROM ty LIMIT -1",
            "SELECT id, k FROM ty WHERE k = 1 AND id = 'x1' ORDER BY id",
            "SELECT SUM(vc) FROM ty",
            "SELECT k, SUM(CAST(vc AS DECIMAL(5,1))) FROM ty GROUP BY k ORDER BY k",
        ],
    );
    w(
        s,
        &[
            "INSERT INTO ty (id, k) VALUES (1, 1, 1)",
            "INSERT INTO ty (id, k, nosuch) VALUES (1, 1, 1)",
            "UPDATE ty SET nosuch = 1 WHERE k = 1",
            "DELETE FROM nosuchtable WHERE k = 1",
        ],
    );
}
