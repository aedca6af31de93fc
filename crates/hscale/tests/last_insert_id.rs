#![allow(clippy::unwrap_used)]
//! LAST_INSERT_ID() and LAST_INSERT_ID(expr) through hscale, compared
//! statement by statement with one server: the same statements run on a
//! partitioned table through the proxy and on a plain copy of it directly
//! on a backend, and every answer (rows, the OK packet's insert id and
//! affected rows, then `SELECT LAST_INSERT_ID()`) must be the same.
//! Statements over several partitions and parts on backends whose
//! connections never saw the value are included.

mod common;

use common::*;
use mysql_async::prelude::*;

const DB: &str = "lii_proxy";
const REF: &str = "lii_ref";
const TABLE: &str = "CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, n BIGINT NULL, \
                     PRIMARY KEY (id, k))";

/// `DB.t` partitioned by `k` with MOD(4) (1 and 3 on shard1, the rest in
/// the default partition on shard0), and `REF.t` a plain copy on shard1.
async fn setup() {
    fresh_db(DB).await;
    let rows = "INSERT INTO t (id, k, n) VALUES (1, 0, 10), (2, 1, 20), (3, 2, 30), \
                (4, 3, 40), (5, 1, 50), (6, 2, 60)";
    let mut c = backend_conn(0, Some(DB)).await;
    c.query_drop(TABLE).await.unwrap();
    c.query_drop(rows).await.unwrap();
    c.disconnect().await.unwrap();
    let mut r = backend_conn(1, None).await;
    r.query_drop(format!("DROP DATABASE IF EXISTS {REF}"))
        .await
        .unwrap();
    r.query_drop(format!("CREATE DATABASE {REF}"))
        .await
        .unwrap();
    r.query_drop(format!("USE {REF}")).await.unwrap();
    r.query_drop(TABLE).await.unwrap();
    r.query_drop(rows).await.unwrap();
    r.disconnect().await.unwrap();
    let mut p = proxy_conn(None).await;
    p.query_drop(format!(
        "HSCALE SETUP_TABLE('{DB}.t', 'k', 't_default', 'shard0', 'MOD(4)')"
    ))
    .await
    .unwrap();
    for (part, v) in [("p1", 1), ("p3", 3)] {
        p.query_drop(format!(
            "HSCALE ADD_PARTITION('{DB}.t', '{part}', '{v}', 'shard1')"
        ))
        .await
        .unwrap();
    }
    p.disconnect().await.unwrap();
}

/// One statement's whole answer, then the session's LAST_INSERT_ID().
async fn answer(c: &mut mysql_async::Conn, sql: &str, prepared: bool) -> String {
    let rows: Result<Vec<mysql_async::Row>, _> = if prepared {
        c.exec(sql, ()).await
    } else {
        c.query(sql).await
    };
    let rows = match rows {
        Ok(rows) => rows
            .into_iter()
            .map(|r| {
                r.unwrap()
                    .into_iter()
                    .map(|v| v.as_sql(true))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect::<Vec<_>>()
            .join(" | "),
        Err(e) => format!("error {e}"),
    };
    let (insert_id, affected) = (c.last_insert_id(), c.affected_rows());
    let last: Option<u64> = c.query_first("SELECT LAST_INSERT_ID()").await.unwrap();
    format!("rows [{rows}] insert_id {insert_id:?} affected {affected} last {last:?}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_insert_id_follows_one_server() {
    cluster(2);
    setup().await;
    let mut p = proxy_conn(Some(DB)).await;
    let mut d = backend_conn(1, Some(REF)).await;
    let statements: &[(&str, bool)] = &[
        ("SELECT LAST_INSERT_ID()", false),
        // Set in a SELECT (a result set carries no insert id), then read
        // on a partition of the other backend, in a point read and over
        // every partition.
        ("SELECT LAST_INSERT_ID(42)", false),
        (
            "SELECT id, LAST_INSERT_ID() FROM t WHERE k = 1 ORDER BY id",
            false,
        ),
        ("SELECT id, n, LAST_INSERT_ID() FROM t ORDER BY id", false),
        ("SELECT COUNT(*) FROM t WHERE n < LAST_INSERT_ID()", false),
        // Set by a write over several partitions that touches one row.
        (
            "UPDATE t SET n = LAST_INSERT_ID(n + 100) WHERE id = 4",
            false,
        ),
        (
            "SELECT id, n FROM t WHERE n = LAST_INSERT_ID() ORDER BY id",
            false,
        ),
        // A write that evaluates nothing leaves it alone.
        ("UPDATE t SET n = LAST_INSERT_ID(7) WHERE id = 999", false),
        // Read by writes over several partitions.
        (
            "INSERT INTO t (id, k, n) VALUES (50, 2, LAST_INSERT_ID()), (51, 3, LAST_INSERT_ID())",
            false,
        ),
        (
            "UPDATE t SET n = LAST_INSERT_ID() + id WHERE k IN (1, 2)",
            false,
        ),
        ("SELECT id, k, n FROM t ORDER BY id, k", false),
        ("DELETE FROM t WHERE n > LAST_INSERT_ID() + 50", false),
        ("SELECT id, k, n FROM t ORDER BY id, k", false),
        // DO, zero, and prepared statements.
        ("DO LAST_INSERT_ID(0)", false),
        (
            "SELECT id FROM t WHERE k = 3 AND LAST_INSERT_ID() = 0 ORDER BY id",
            false,
        ),
        ("SELECT LAST_INSERT_ID(77)", true),
        (
            "SELECT id, LAST_INSERT_ID() FROM t WHERE k = 3 ORDER BY id",
            true,
        ),
        ("UPDATE t SET n = LAST_INSERT_ID(n) WHERE id = 2", true),
        ("SELECT LAST_INSERT_ID(LAST_INSERT_ID() + 1)", false),
    ];
    for (sql, prepared) in statements {
        let direct = answer(&mut d, sql, *prepared).await;
        let through = answer(&mut p, sql, *prepared).await;
        assert_eq!(through, direct, "{sql} (prepared: {prepared})");
    }
    // A read over several partitions that sets it is refused: which
    // part's value would win depends on the order rows are read in.
    let e = p
        .query_drop("SELECT LAST_INSERT_ID(n) FROM t")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235, "{e}");
    p.disconnect().await.unwrap();
    d.disconnect().await.unwrap();
}
