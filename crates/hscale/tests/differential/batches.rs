//! Multi-statement queries (CLIENT_MULTI_STATEMENTS, which mysql_async
//! asks for) naming partitioned and global tables: every statement
//! answered in order, each result with its own rows, affected rows and
//! info; an error ends the query as on one server (the statements after
//! it do not run). Generated batches of two to five statements from reads
//! on one partition, merged reads, aggregates, joins with the global
//! table, writes on one and several partitions, statements on no table,
//! and errors; then fixed ones: transactions opened and ended inside a
//! batch, empty statements, a trailing semicolon, strings holding `;`.

use super::{Harness, Rng};

const PIECES: &[&str] = &[
    "SELECT id, n FROM t WHERE k = 2 ORDER BY id",
    "SELECT COUNT(*), SUM(n), MIN(s), MAX(d) FROM t",
    "SELECT k, COUNT(*) AS c FROM t GROUP BY k ORDER BY k",
    "SELECT id, k, n FROM t ORDER BY n DESC, id LIMIT 4",
    "SELECT t.id, g.label FROM t JOIN g ON g.gid = t.k WHERE t.id < 30 ORDER BY t.id",
    "SELECT DISTINCT s FROM t ORDER BY s",
    "SELECT id, v FROM ev WHERE day >= '2024-02-01' ORDER BY id",
    "SELECT 1 AS one",
    "SELECT a, b FROM plain WHERE a < 4 ORDER BY a",
    "SELECT label, COUNT(*) FROM g GROUP BY label ORDER BY label",
    "UPDATE t SET n = n + 1 WHERE k = 3",
    "UPDATE t SET s = CONCAT(s, 'b') WHERE id % 9 = 0",
    "INSERT INTO t VALUES (1000, 5, 1, 'new', '2024-05-05'), (1001, 6, 2, 'new', NULL)",
    "DELETE FROM t WHERE id IN (1000, 1001)",
    "UPDATE plain SET b = b + 1 WHERE a = 3",
    "UPDATE g SET label = CONCAT(label, 'x') WHERE gid = 4",
    "INSERT INTO ev VALUES (500, '2024-02-20', 4)",
    "DELETE FROM ev WHERE id = 500",
    "UPDATE t SET n = n - 1 ORDER BY id DESC LIMIT 3",
    "SELECT nosuch FROM t",
    "INSERT INTO t VALUES (1, 4, 0, 'dup', NULL)",
    "DO 1",
    "SELECT COUNT(*) FROM t WHERE n > 20",
];

pub async fn run(h: &mut Harness) {
    let mut rng = Rng(77);
    for i in 0..90 {
        if i % 30 == 29 {
            h.reset().await;
        }
        let n = 2 + rng.below(4) as usize;
        let batch: Vec<&str> = (0..n).map(|_| *rng.pick(PIECES)).collect();
        let sql = batch.join("; ");
        h.check(&sql, true).await;
        h.same_contents(&sql).await;
    }
    h.reset().await;
    let fixed: &[&str] = &[
        "SELECT COUNT(*) FROM t; SELECT COUNT(*) FROM ev;",
        "SELECT COUNT(*) FROM t;;  ; SELECT 2",
        "UPDATE t SET s = 'a;b' WHERE id = 5; SELECT s FROM t WHERE id = 5",
        "SELECT ';' AS semi, COUNT(*) FROM t /* ; */; SELECT 'x'",
        "BEGIN; UPDATE t SET n = n + 1 WHERE k = 1; UPDATE t SET n = n + 1 WHERE k = 2; COMMIT",
        "BEGIN; DELETE FROM t WHERE k = 0; SELECT COUNT(*) FROM t; ROLLBACK",
        "SELECT COUNT(*) FROM t",
        "START TRANSACTION; UPDATE t SET n = 1 WHERE id < 10; SELECT SUM(n) FROM t; COMMIT; SELECT SUM(n) FROM t",
        "SELECT id FROM t WHERE k = 1 ORDER BY id LIMIT 2; SELECT nosuch; SELECT 3",
        "INSERT INTO t VALUES (2000, 1, 1, 'x', NULL); INSERT INTO t VALUES (2000, 1, 1, 'dup', NULL); SELECT 'not run'",
        "DELETE FROM t WHERE id = 2000; SELECT COUNT(*) FROM t WHERE id = 2000",
        // Variables set in a batch: the session keeps them.
        "SET @b := 1; SELECT COUNT(*) FROM t WHERE k = 2; SELECT @b",
        "SELECT @b + 1, COUNT(*) FROM t WHERE k = 3",
    ];
    for sql in fixed {
        h.check(sql, true).await;
        h.same_contents(sql).await;
    }
}
