#![allow(clippy::unwrap_used)]
//! Partition commands on small pools: one worker, four connections per
//! backend. The commands take several connections of a backend at once
//! (the dictionary, the source and the destination of a copy, the fence);
//! none may wait for a connection it holds itself.

mod common;

use common::*;
use mysql_async::prelude::*;

fn info() -> Info {
    cluster_with(2, |c| {
        c.proxy.workers = 1;
        for b in &mut c.backends {
            b.max_connections = 4;
        }
    })
}

const DB: &str = "small_pools";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_commands_run_on_pools_of_four_connections() {
    let info = info();
    let mut p = mysql_async::Conn::new(proxy_opts(info.proxy_port, None))
        .await
        .unwrap();
    p.query_drop(format!("CREATE DATABASE IF NOT EXISTS {DB}"))
        .await
        .unwrap();
    p.query_drop(format!("USE {DB}")).await.unwrap();
    p.query_drop("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    p.query_drop("INSERT INTO t VALUES (1, 10), (2, 20), (3, 30), (4, 40)")
        .await
        .unwrap();
    for sql in [
        format!("HSCALE SETUP_TABLE('{DB}.t', 'id', 't_default', 'shard0', 'MOD(2)')"),
        format!("HSCALE ADD_PARTITION('{DB}.t', 't_0', '0', 'shard0')"),
        format!("HSCALE ADD_PARTITION('{DB}.t', 't_1', '1', 'shard1')"),
        format!("HSCALE MOVE_PARTITION('{DB}.t', 't_1', 'shard0')"),
        format!("HSCALE DROP_PARTITION('{DB}.t', 't_0')"),
    ] {
        let started = std::time::Instant::now();
        p.query_drop(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e} after {:?}", started.elapsed()));
        eprintln!("{sql}: {:?}", started.elapsed());
    }
    let rows: Vec<(i32, i32)> = p.query("SELECT id, v FROM t ORDER BY id").await.unwrap();
    assert_eq!(rows, vec![(1, 10), (2, 20), (3, 30), (4, 40)]);

    // The connections past the pool's four were closed when returned:
    // on each backend, hscale's connections are back within its pool.
    for port in &info.backend_ports {
        let mut b = mysql_async::Conn::new(backend_opts(*port, None))
            .await
            .unwrap();
        let mut open = u64::MAX;
        for _ in 0..50 {
            open = b
                .query_first("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'hscale' AND ID <> CONNECTION_ID()")
                .await
                .unwrap()
                .unwrap();
            if open <= 4 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(
            (1..=4).contains(&open),
            "backend on port {port}: {open} connections from hscale, pool of 4"
        );
    }
}
