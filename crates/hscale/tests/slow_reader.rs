#![allow(clippy::unwrap_used)]
//! A client that reads a scan over two partitions slower than the
//! backends' net_write_timeout still gets every row: the partition sent
//! ahead waits for its turn instead of dropping its connection. The same
//! for a streamed merge (ORDER BY), whose later partition waits while the
//! first one's rows reach the client.

mod common;

use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

const ROWS: u64 = 100_000;

/// The tests set the backends' global net_write_timeout: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_gets_every_row_of_a_scan_over_partitions() {
    let _serial = SERIAL.lock().await;
    cluster(2);
    fresh_db("slow_db").await;
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE TABLE slow_db.t (id INT PRIMARY KEY, pad VARCHAR(200))")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('slow_db.t', 'id', 't_default', 'shard0', 'MOD(2)')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('slow_db.t', 'odd', '1', 'shard1')")
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    let tables = physical_tables("slow_db.t").await;
    for (b, table) in tables.values() {
        let first = if *b == 0 { 0 } else { 1 };
        let mut d = backend_conn(*b, Some("slow_db")).await;
        d.query_drop(format!(
            "INSERT INTO {table} SELECT seq * 2 + {first}, REPEAT('x', 200) FROM seq_0_to_{}",
            ROWS - 1
        ))
        .await
        .unwrap();
        // Servers give up on a reader after 2 s instead of 60.
        d.query_drop("SET GLOBAL net_write_timeout = 2")
            .await
            .unwrap();
        d.disconnect().await.unwrap();
    }
    // A proxy whose backend connections start after that.
    let proxy = hscale::RunningProxy::start(cluster_config(), "127.0.0.1:0").unwrap();
    let mut c = mysql_async::Conn::new(proxy_opts(proxy.addr.port(), None))
        .await
        .unwrap();
    let start = Instant::now();
    let mut rows = 0u64;
    let mut r = c.query_iter("SELECT id, pad FROM slow_db.t").await.unwrap();
    while let Some(row) = r
        .next()
        .await
        .unwrap_or_else(|e| panic!("after {rows} rows and {:?}: {e}", start.elapsed()))
    {
        let _: mysql_async::Row = row;
        rows += 1;
        // The first partition is read over about 5 s.
        if rows < ROWS && rows.is_multiple_of(100) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    drop(r);
    eprintln!("{rows} rows in {:?}", start.elapsed());
    assert_eq!(rows, 2 * ROWS);
    assert!(start.elapsed() > Duration::from_secs(3));
    // The connection's net_write_timeout is set back for the next statement.
    let n: Option<u64> = c
        .query_first("SELECT @@session.net_write_timeout FROM slow_db.t WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(n, Some(2));
    c.disconnect().await.unwrap();
    for b in 0..2 {
        let mut d = backend_conn(b, None).await;
        d.query_drop("SET GLOBAL net_write_timeout = 60")
            .await
            .unwrap();
        d.disconnect().await.unwrap();
    }
}

/// ORDER BY over two partitions that hold ranges of keys (DIV), read
/// slower than the backends' net_write_timeout: the streamed merge reads
/// the first partition to its end while the second waits for its turn,
/// and the client still gets every row, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_gets_every_row_of_a_merge_over_partitions() {
    let _serial = SERIAL.lock().await;
    cluster(2);
    fresh_db("slow_merge").await;
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE TABLE slow_merge.t (id INT PRIMARY KEY, pad VARCHAR(200))")
        .await
        .unwrap();
    c.query_drop(format!(
        "HSCALE SETUP_TABLE('slow_merge.t', 'id', 't_default', 'shard0', 'DIV({ROWS})')"
    ))
    .await
    .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('slow_merge.t', 'second', '1', 'shard1')")
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    let tables = physical_tables("slow_merge.t").await;
    for (b, table) in tables.values() {
        let first = if *b == 0 { 0 } else { ROWS };
        let mut d = backend_conn(*b, Some("slow_merge")).await;
        d.query_drop(format!(
            "INSERT INTO {table} SELECT seq + {first}, REPEAT('x', 200) FROM seq_0_to_{}",
            ROWS - 1
        ))
        .await
        .unwrap();
        d.query_drop("SET GLOBAL net_write_timeout = 2")
            .await
            .unwrap();
        d.disconnect().await.unwrap();
    }
    let proxy = hscale::RunningProxy::start(cluster_config(), "127.0.0.1:0").unwrap();
    let mut c = mysql_async::Conn::new(proxy_opts(proxy.addr.port(), None))
        .await
        .unwrap();
    let start = Instant::now();
    let mut rows = 0u64;
    let mut r = c
        .query_iter("SELECT id, pad FROM slow_merge.t ORDER BY id")
        .await
        .unwrap();
    while let Some(row) = r
        .next()
        .await
        .unwrap_or_else(|e| panic!("after {rows} rows and {:?}: {e}", start.elapsed()))
    {
        let (id, _): (u64, String) = mysql_async::from_row(row);
        assert_eq!(id, rows, "in order");
        rows += 1;
        // The first partition is read over about 5 s.
        if rows < ROWS && rows.is_multiple_of(100) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    drop(r);
    assert_eq!(rows, 2 * ROWS);
    assert!(start.elapsed() > Duration::from_secs(3));
    c.disconnect().await.unwrap();
    for b in 0..2 {
        let mut d = backend_conn(b, None).await;
        d.query_drop("SET GLOBAL net_write_timeout = 60")
            .await
            .unwrap();
        d.disconnect().await.unwrap();
    }
}
