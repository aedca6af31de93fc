#![allow(clippy::unwrap_used)]
//! Merges across partitions stream or are bounded: a full ORDER BY over 5
//! million rows in four partitions keeps the proxy's RSS under 200 MB; a
//! GROUP BY with more groups than `[proxy] merge_max_rows`, and a statement
//! that would copy more than `[proxy] ship_max_rows` rows between backends,
//! fail with a clear error instead of growing the proxy.

mod common;

use common::*;
use mysql_async::prelude::*;

const ROWS_PER_PARTITION: u64 = 1_250_000;

async fn setup() {
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE mm").await.unwrap();
    c.query_drop("USE mm").await.unwrap();
    c.query_drop(
        "CREATE TABLE big (id BIGINT NOT NULL, k INT NOT NULL, pad CHAR(12) NOT NULL, PRIMARY KEY (id, k))",
    )
    .await
    .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('big', 'k', 'big_default', 'shard0', 'MOD(4)')")
        .await
        .unwrap();
    for (p, v, b) in [
        ("p1", 1, "shard1"),
        ("p2", 2, "shard0"),
        ("p3", 3, "shard1"),
    ] {
        c.query_drop(format!("HSCALE ADD_PARTITION('big', '{p}', '{v}', '{b}')"))
            .await
            .unwrap();
    }
    c.disconnect().await.unwrap();
    // Fill the partitions directly on their backends, in parallel.
    let names = physical_tables("mm.big").await;
    let name = |p: &str| names[p].1.clone();
    let fill = |backend: usize, table: String, k: u64| async move {
        let mut b = backend_conn(backend, Some("mm")).await;
        b.query_drop(format!(
            "INSERT INTO {table} SELECT seq * 4 + {k}, {k}, 'row' FROM seq_0_to_{}",
            ROWS_PER_PARTITION - 1
        ))
        .await
        .unwrap();
        b.disconnect().await.unwrap();
    };
    tokio::join!(
        async {
            fill(0, name(""), 0).await;
            fill(0, name("p2"), 2).await;
        },
        async {
            fill(1, name("p1"), 1).await;
            fill(1, name("p3"), 3).await;
        }
    );
}

#[tokio::test]
async fn order_by_over_five_million_rows_streams_and_groups_are_bounded() {
    cluster(2);
    setup().await;
    let mut config = cluster_config();
    config.proxy.merge_max_rows = 10_000;
    config.proxy.ship_max_rows = 1_000;
    let proxy = ProxyProcess::start(config);
    let mut c = mysql_async::Conn::new(proxy_opts(proxy.port, Some("mm")))
        .await
        .unwrap();
    let before = proxy.status_kb("VmRSS:");
    let mut rows = 0u64;
    let mut last = -1i64;
    let mut ordered = true;
    let mut r = c
        .query_iter("SELECT id, k, pad FROM big ORDER BY id")
        .await
        .unwrap();
    r.for_each(|row: mysql_async::Row| {
        let id: i64 = row.get(0).unwrap();
        ordered &= id > last;
        last = id;
        rows += 1;
    })
    .await
    .unwrap();
    drop(r);
    assert_eq!(rows, 4 * ROWS_PER_PARTITION);
    assert!(ordered, "rows out of order");
    assert_eq!(last, (4 * ROWS_PER_PARTITION - 1) as i64);
    let peak = proxy.status_kb("VmHWM:");
    eprintln!("proxy RSS before {before} kB, peak {peak} kB after merging {rows} rows");
    assert!(peak < 200 * 1024, "proxy peak RSS {peak} kB exceeds 200 MB");
    // More groups than merge_max_rows: a clear error, and the session goes on.
    let e = c
        .query_drop("SELECT id, COUNT(*) FROM big WHERE id < 100000 GROUP BY id")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1038, "{e}");
    assert!(e.to_string().contains("merge_max_rows"), "{e}");
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM big WHERE id < 100000")
        .await
        .unwrap();
    assert_eq!(n, Some(100_000));
    // A read answered from copies of the tables (a subquery) copies at most
    // ship_max_rows rows, then fails clearly.
    let e = c
        .query_drop("SELECT COUNT(*) FROM big WHERE id IN (SELECT id FROM big WHERE k = 1)")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1038, "{e}");
    assert!(e.to_string().contains("ship_max_rows"), "{e}");
    let peak = proxy.status_kb("VmHWM:");
    assert!(peak < 200 * 1024, "proxy peak RSS {peak} kB exceeds 200 MB");
    c.disconnect().await.unwrap();
}
