//! Transactions with savepoints, session variables the merges must
//! follow, global tables and joins.

use super::statements::{o, step, w, How, Step};

pub fn push(s: &mut Vec<Step>) {
    // Transactions with savepoints (transactions.md, "Savepoints").
    for (sql, how) in [
        ("BEGIN", How::Ordered),
        (
            "INSERT INTO od VALUES (800, 1, 1, 1, 't1'), (801, 2, 1, 1, 't2')",
            How::Write,
        ),
        ("SAVEPOINT s1", How::Ordered),
        ("UPDATE od SET qty = 99 WHERE oid IN (800, 801)", How::Write),
        (
            "SELECT oid, qty FROM od WHERE oid >= 800 ORDER BY oid",
            How::Ordered,
        ),
        ("SAVEPOINT s2", How::Ordered),
        ("DELETE FROM od WHERE oid = 800", How::Write),
        ("INSERT INTO od VALUES (802, 3, 1, 1, 't3')", How::Write),
        ("ROLLBACK TO SAVEPOINT s2", How::Ordered),
        (
            "SELECT oid, qty FROM od WHERE oid >= 800 ORDER BY oid",
            How::Ordered,
        ),
        ("ROLLBACK WORK TO s1", How::Ordered),
        (
            "SELECT oid, qty FROM od WHERE oid >= 800 ORDER BY oid",
            How::Ordered,
        ),
        ("RELEASE SAVEPOINT s1", How::Ordered),
        ("ROLLBACK TO s1", How::Ordered),
        (
            "INSERT INTO od VALUES (803, 3, 1, 1, 't3'), (1, 0, 1, 1, 'dup')",
            How::Write,
        ),
        (
            "SELECT COUNT(*), SUM(qty) FROM od WHERE oid >= 800",
            How::Ordered,
        ),
        ("SAVEPOINT s3", How::Ordered),
        ("UPDATE od SET qty = qty + 1000 WHERE k = 3", How::Write),
        ("SAVEPOINT s3", How::Ordered),
        ("UPDATE od SET qty = qty + 1000 WHERE k = 0", How::Write),
        ("ROLLBACK TO s3", How::Ordered),
        (
            "SELECT k, SUM(qty) FROM od GROUP BY k ORDER BY k",
            How::Ordered,
        ),
        ("COMMIT", How::Write),
        ("START TRANSACTION READ ONLY", How::Ordered),
        ("SELECT COUNT(*) FROM od", How::Ordered),
        ("INSERT INTO od VALUES (810, 1, 1, 1, 'ro')", How::Write),
        ("COMMIT", How::Ordered),
        ("SET autocommit = 0", How::Ordered),
        ("UPDATE od SET qty = 0 WHERE k IN (1, 2, 3)", How::Write),
        ("SELECT SUM(qty) FROM od", How::Ordered),
        ("ROLLBACK", How::Write),
        ("SET autocommit = 1", How::Ordered),
        ("SELECT @@autocommit, @@in_transaction", How::Ordered),
    ] {
        s.push(step(sql, None, how));
    }
    // Session variables the merge must follow (queries.md, "Session
    // state").
    o(
        s,
        &[
            "SET SESSION sql_mode = 'ONLY_FULL_GROUP_BY'",
            "SELECT k, oid FROM od GROUP BY k",
            "SELECT k, COUNT(*) FROM od GROUP BY k ORDER BY k",
            "SET SESSION sql_mode = 'PIPES_AS_CONCAT'",
            "SELECT oid, note || '-' FROM od WHERE k = 1 ORDER BY oid",
            "SELECT oid, note || '-' FROM od ORDER BY oid LIMIT 4",
            "SET SESSION sql_mode = ''",
        ],
    );
    w(
        s,
        &[
            "INSERT INTO od VALUES (900, 1, 'abc', 1, 'nm')",
            "INSERT INTO od VALUES (901, 2, NULL, 1, 'nn')",
            "INSERT INTO od VALUES (902, 2, 1, 1, 'no'), (903, 3, 1, 99999999, 'np')",
            "UPDATE od SET qty = 'x' WHERE oid = 902",
        ],
    );
    o(
        s,
        &[
            "SET SESSION sql_mode = DEFAULT",
            "SET SESSION div_precision_increment = 8",
            "SELECT AVG(qty), SUM(price) / 7, AVG(price) FROM od",
            "SELECT k, AVG(qty) FROM od GROUP BY k ORDER BY k",
            "SET SESSION div_precision_increment = DEFAULT",
            "SET SESSION group_concat_max_len = 10",
            "SELECT GROUP_CONCAT(oid ORDER BY oid) FROM od",
            "SELECT k, GROUP_CONCAT(note ORDER BY oid) FROM od GROUP BY k ORDER BY k",
            "SET SESSION group_concat_max_len = DEFAULT",
            "SET SESSION sql_select_limit = 3",
            "SELECT oid FROM od ORDER BY oid",
            "SELECT k, COUNT(*) FROM od GROUP BY k ORDER BY k",
            "SET SESSION sql_select_limit = DEFAULT",
            "SET SESSION max_error_count = 2",
            "SELECT id FROM ty WHERE vc = 1 ORDER BY id",
            "SET SESSION max_error_count = DEFAULT",
        ],
    );
    // Global tables and joins.
    o(s, &[
        "SELECT g.name, COUNT(*) FROM od JOIN gl g ON g.gid = od.k GROUP BY g.name ORDER BY g.name",
        "SELECT od.oid, g.name FROM od LEFT JOIN gl g ON g.gid = od.qty ORDER BY od.oid LIMIT 10",
        "SELECT t.id, o.oid FROM ty t JOIN od o ON o.k = t.k AND o.oid = t.id ORDER BY t.id",
        "SELECT t.id, s.name FROM ty t JOIN sk s ON s.v = t.ti ORDER BY t.id, s.name",
        "SELECT o.k, COUNT(t.id) FROM od o LEFT JOIN ty t ON t.k = o.k AND t.ti = o.qty GROUP BY o.k ORDER BY o.k",
    ]);
    w(
        s,
        &[
            "INSERT INTO gl VALUES (50, 'fifty'), (51, 'fifty-one')",
            "UPDATE gl SET name = UPPER(name) WHERE gid < 3",
            "INSERT INTO gl VALUES (50, 'again')",
            "DELETE FROM gl WHERE gid >= 50",
        ],
    );
}
