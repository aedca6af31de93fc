#![allow(clippy::unwrap_used)]
//! Issue 29, the adversarial run's F5 and F7: statement forms naming a
//! partitioned table that hscale refused (1235) or failed with another
//! code than one server: `DO`, which one server evaluates and answers OK,
//! and a `PARTITION (p)` clause, 1747 on one server. The findings'
//! examples are tests of their own, compared with one plain database of
//! the same server (`REF`, not partitioned); the class around each
//! follows.
//!
//! Four backends; `od` partitioned MOD(4) on k as in the adversarial run.

mod common;

use common::twin::Twin;
use common::*;
use mysql_async::prelude::*;
use mysql_async::Conn;

const DB: &str = "sf_part";
const REF: &str = "sf_ref";

const TWIN: Twin = Twin {
    shards: 4,
    db: DB,
    reference: REF,
    schema: &[
        "CREATE TABLE od (oid INT NOT NULL, k INT NOT NULL, qty INT NOT NULL, note VARCHAR(20), PRIMARY KEY (oid, k))",
        "CREATE TABLE lk (id BIGINT NOT NULL, k INT NOT NULL, s VARCHAR(30) DEFAULT 'x' COMMENT 'a column', d DECIMAL(9,3), PRIMARY KEY (id, k), KEY ks (s)) COMMENT 'like me'",
        "CREATE TABLE lx (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))",
        "CREATE TABLE acct (uid INT NOT NULL PRIMARY KEY, handle VARCHAR(20), flags INT NOT NULL)",
        "CREATE TABLE plain (uid INT NOT NULL PRIMARY KEY, flags INT NOT NULL)",
    ],
    partitioning: &[
        "HSCALE SETUP_TABLE('od', 'k', 'od_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('od', 'od1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('od', 'od2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('od', 'od3', '3', 'shard3')",
        // Default partitions away from the main backend (shard0): `lk`
        // has a partition there, `lx` none.
        "HSCALE SETUP_TABLE('lk', 'k', 'lk_default', 'shard1', 'MOD(3)')",
        "HSCALE ADD_PARTITION('lk', 'lk0', '0', 'shard0')",
        "HSCALE ADD_PARTITION('lk', 'lk2', '2', 'shard2')",
        "HSCALE SETUP_TABLE('lx', 'k', 'lx_default', 'shard2', 'MOD(2)')",
        "HSCALE ADD_PARTITION('lx', 'lx1', '1', 'shard3')",
        "HSCALE SETUP_TABLE('acct', 'uid', 'acct_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('acct', 'acct1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('acct', 'acct2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('acct', 'acct3', '3', 'shard3')",
    ],
};

static SET_UP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

async fn set_up() {
    SET_UP
        .get_or_init(|| async {
            let rows: Vec<String> = (1..=32)
                .map(|o| format!("({o}, {}, {}, 'n{o}')", o % 5 - 1, o * 7 % 11))
                .collect();
            let accounts: Vec<String> = (1..=16)
                .map(|u| format!("({u}, 'h{u}', {})", u * 3 % 7))
                .collect();
            TWIN.create(&[
                format!("INSERT INTO od VALUES {}", rows.join(", ")),
                format!("INSERT INTO acct VALUES {}", accounts.join(", ")),
                "INSERT INTO plain VALUES (1, 10), (5, 50), (6, 60)".to_string(),
            ])
            .await
        })
        .await;
}

/// A statement's answer: its OK's affected rows and warnings (with SHOW
/// WARNINGS), or its error code.
async fn answer(c: &mut Conn, sql: &str) -> String {
    match c.query_drop(sql).await {
        Ok(()) => {
            let (affected, warnings) = (c.affected_rows(), c.get_warnings());
            let listed: Vec<(String, u16, String)> = c.query("SHOW WARNINGS").await.unwrap();
            format!("ok {affected} {warnings} {listed:?}")
        }
        Err(e) => format!("error {}", code(&e)),
    }
}

async fn same(sql: &str) -> String {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    let want = answer(&mut r, sql).await;
    assert_eq!(answer(&mut p, sql).await, want, "{sql}");
    want
}

/// The findings' example.
#[tokio::test]
async fn do_a_count_of_a_partitioned_table() {
    assert_eq!(same("DO (SELECT COUNT(*) FROM od)").await, "ok 0 0 []");
}

/// The class: several expressions, a merged read, a subquery over one
/// partition, an expression that warns, one that fails (a subquery of
/// several rows: 1242), an unknown column (1054).
#[tokio::test]
async fn do_statements_answer_as_one_server() {
    for sql in [
        "DO (SELECT MAX(qty) FROM od), 1 + 1",
        "DO (SELECT SUM(qty) FROM od WHERE k = 2)",
        "DO (SELECT note FROM od WHERE oid = 3 AND k = 2)",
        "DO (SELECT COUNT(*) FROM od WHERE note LIKE 'n1%'), (SELECT MIN(oid) FROM od)",
        "do (select count(*) from od group by k having count(*) > 100)",
        "DO (SELECT oid FROM od)",
        "DO (SELECT nothing FROM od)",
        "DO (SELECT COUNT(*) FROM od) + 'x'",
    ] {
        same(sql).await;
    }
}

/// A DO that assigns a user variable keeps its refusal (the read on
/// copies would not keep the assignment).
#[tokio::test]
async fn do_assigning_a_variable_is_still_refused() {
    set_up().await;
    let mut p = proxy_conn(Some(DB)).await;
    let e = p
        .query_drop("DO @n := (SELECT COUNT(*) FROM od)")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235, "{e}");
}

/// The findings' example of F7: hscale's rewrite made the clause a syntax
/// error (1064, its message showing the rewrite).
#[tokio::test]
async fn partition_clause_is_1747_as_on_one_server() {
    assert_eq!(
        same("SELECT COUNT(*) FROM od PARTITION (p0)").await,
        "error 1747"
    );
}

/// The class: every statement form, an alias after the clause, several
/// partition names, prepared; nothing is written.
#[tokio::test]
async fn partition_clauses_answer_as_one_server() {
    for sql in [
        "SELECT oid FROM od PARTITION (p0, p1) AS o WHERE k = 1",
        "SELECT * FROM od PARTITION (od1) ORDER BY oid LIMIT 2",
        "INSERT INTO od PARTITION (p0) (oid, k, qty) VALUES (900, 1, 1)",
        "UPDATE od PARTITION (p1) SET qty = 0 WHERE k = 1",
        "DELETE FROM od PARTITION (p1) WHERE k = 1",
        "SELECT COUNT(*) FROM od PARTITION(p0)",
    ] {
        assert_eq!(same(sql).await, "error 1747", "{sql}");
    }
    set_up().await;
    let mut p = proxy_conn(Some(DB)).await;
    let e = p
        .exec_drop("SELECT oid FROM od PARTITION (p0) WHERE k = ?", (1,))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1747, "{e}");
    let n: Option<u64> = p.query_first("SELECT COUNT(*) FROM od").await.unwrap();
    assert_eq!(n, Some(32));
}

/// CREATE TABLE ... LIKE a partitioned table whose default partition is
/// not on the main backend (refused before): a plain table with its
/// definition, from its partition on the main backend, as one server
/// makes it: the same SHOW CREATE TABLE, the same answers after.
#[tokio::test]
async fn create_table_like_a_table_whose_default_is_elsewhere() {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    for c in [&mut p, &mut r] {
        c.query_drop("DROP TABLE IF EXISTS lk_copy, lk_copy2, lk_tmp")
            .await
            .unwrap();
    }
    for sql in [
        "CREATE TABLE lk_copy LIKE lk",
        "CREATE TABLE lk_copy LIKE lk",
        "CREATE TABLE IF NOT EXISTS lk_copy LIKE lk",
        "CREATE TABLE lk_copy2 (LIKE lk)",
        "CREATE TEMPORARY TABLE lk_tmp LIKE lk",
        "INSERT INTO lk_copy (id, k) VALUES (1, 1), (2, 2)",
        "INSERT INTO lk_tmp (id, k, d) VALUES (3, 0, 1.5)",
        "INSERT INTO lk_copy (id, k, s) VALUES (1, 1, 'dup')",
    ] {
        let want = answer(&mut r, sql).await;
        assert_eq!(answer(&mut p, sql).await, want, "{sql}");
    }
    for sql in [
        "SHOW CREATE TABLE lk_copy",
        "SHOW CREATE TABLE lk_copy2",
        "SHOW CREATE TABLE lk_tmp",
    ] {
        let want: Vec<(String, String)> = r.query(sql).await.unwrap();
        let got: Vec<(String, String)> = p.query(sql).await.unwrap();
        assert_eq!(got, want, "{sql}");
    }
    for sql in [
        "SELECT id, k, s, d FROM lk_copy ORDER BY id",
        "SELECT id, k, s, d FROM lk_tmp",
    ] {
        let want: Vec<(i64, i32, Option<String>, Option<String>)> = r.query(sql).await.unwrap();
        let got: Vec<(i64, i32, Option<String>, Option<String>)> = p.query(sql).await.unwrap();
        assert_eq!(got, want, "{sql}");
    }
    // No partition on the main backend: still refused, naming why.
    let e = p
        .query_drop("CREATE TABLE lx_copy LIKE lx")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235, "{e}");
    assert!(e.to_string().contains("main backend"), "{e}");
}

/// Multi-table UPDATE and DELETE naming a partitioned table (twice, the
/// issue's self-joins, or beside another table), once refused, answer
/// as one server (`join_writes_spread.rs` tests the class); one that
/// writes a table under two names (its answer depends on the order the
/// server joins in) is refused with 1235 naming the form, writing
/// nothing.
#[tokio::test]
async fn multi_table_writes_answer_as_one_server() {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    let contents = "SELECT 'a', uid, handle, flags FROM acct UNION ALL SELECT 'p', uid, NULL, flags FROM plain ORDER BY 1, 2";
    for sql in [
        "UPDATE acct a JOIN acct b ON a.uid = b.uid + 4 SET a.flags = b.flags",
        "DELETE a FROM acct a JOIN acct b ON a.uid = b.uid + 4 WHERE b.flags > 3",
        "update acct a, acct b set a.flags = b.flags where a.uid = b.uid + 8",
        "DELETE FROM a USING acct a JOIN acct b ON a.uid = b.uid WHERE a.flags = 0",
        "UPDATE acct JOIN plain ON plain.uid = acct.uid SET acct.flags = plain.flags",
        "UPDATE acct a LEFT JOIN plain p ON p.uid = a.uid SET a.flags = 0 WHERE p.uid IS NULL",
        "UPDATE acct, plain SET acct.flags = plain.flags WHERE acct.uid = plain.uid AND acct.uid = 6",
        "UPDATE plain JOIN acct ON plain.uid = acct.uid SET plain.flags = acct.flags",
        "DELETE acct, plain FROM acct JOIN plain ON plain.uid = acct.uid WHERE acct.uid = 5",
        "DELETE acct FROM acct JOIN plain ON plain.uid = acct.uid",
    ] {
        let want = answer(&mut r, sql).await;
        assert_eq!(answer(&mut p, sql).await, want, "{sql}");
        let want: Vec<mysql_async::Row> = r.query(contents).await.unwrap();
        let got: Vec<mysql_async::Row> = p.query(contents).await.unwrap();
        assert_eq!(
            got.iter().map(common::twin::cells).collect::<Vec<_>>(),
            want.iter().map(common::twin::cells).collect::<Vec<_>>(),
            "after {sql}"
        );
    }
    let before: Vec<mysql_async::Row> = p.query(contents).await.unwrap();
    let sql = "UPDATE acct a STRAIGHT_JOIN acct b ON a.uid = b.uid SET a.flags = 1, b.flags = 2";
    let e = p.query_drop(sql).await.unwrap_err();
    assert_eq!(code(&e), 1235, "{sql}: {e}");
    assert!(e.to_string().contains("multi-table"), "{sql}: {e}");
    let now: Vec<mysql_async::Row> = p.query(contents).await.unwrap();
    assert_eq!(
        now.iter().map(common::twin::cells).collect::<Vec<_>>(),
        before.iter().map(common::twin::cells).collect::<Vec<_>>()
    );
}
