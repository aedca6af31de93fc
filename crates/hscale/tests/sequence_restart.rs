#![allow(clippy::unwrap_used)]
//! The main backend (home of `hscale.sequences`) restarted while a proxy
//! needs a new block of ids. In a test binary of its own, because it stops
//! the cluster's main server.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use mysql_async::prelude::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn main_backend_restarted_during_allocation_repeats_no_id() {
    const DB: &str = "seq_restart";
    let info = cluster(2);
    fresh_db(DB).await;
    let mut b = backend_conn(0, Some(DB)).await;
    b.query_drop(
        "CREATE TABLE t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, n INT NULL)",
    )
    .await
    .unwrap();
    b.disconnect().await.unwrap();
    let mut c = mysql_async::Conn::new(proxy_opts(info.proxy_port, Some(DB)))
        .await
        .unwrap();
    c.query_drop(format!(
        "HSCALE SETUP_TABLE('{DB}.t', 'k', 't_default', 'shard0', 'MOD(4)')"
    ))
    .await
    .unwrap();
    // Rows with k = 1 live on shard1: only the ids need the main backend.
    c.query_drop(format!(
        "HSCALE ADD_PARTITION('{DB}.t', 'p1', '1', 'shard1')"
    ))
    .await
    .unwrap();
    let mut ids = Vec::new();
    // The first block is small: these use it up.
    for n in 0..8 {
        c.query_drop(format!("INSERT INTO t (k, n) VALUES (1, {n})"))
            .await
            .unwrap();
        ids.push(c.last_insert_id().unwrap());
    }
    tokio::task::spawn_blocking(|| with_cluster(|cl| cl.servers[0].kill()))
        .await
        .unwrap();
    // This insert needs a new block while the main backend is down: the
    // proxy retries until it is back.
    let insert = tokio::spawn(async move {
        let r = c.query_drop("INSERT INTO t (k, n) VALUES (1, 100)").await;
        let id = c.last_insert_id();
        (c, r, id)
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    tokio::task::spawn_blocking(|| with_cluster(|cl| cl.servers[0].restart()))
        .await
        .unwrap()
        .expect("restart");
    let (mut c, r, id) = tokio::time::timeout(Duration::from_secs(30), insert)
        .await
        .expect("the insert finishes")
        .unwrap();
    r.unwrap();
    ids.push(id.unwrap());
    for n in 200..230 {
        c.query_drop(format!(
            "INSERT INTO t (k, n) VALUES (1, {n}), (1, {})",
            n + 100
        ))
        .await
        .unwrap();
        ids.push(c.last_insert_id().unwrap());
    }
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert!(ids[8] > ids[7], "{ids:?}");
    c.disconnect().await.unwrap();
    // On the backend: every row once.
    let table = physical(&format!("{DB}.t"), Some("p1")).await;
    let mut s1 = backend_conn(1, Some(DB)).await;
    let rows: Vec<u64> = s1.query(format!("SELECT id FROM `{table}`")).await.unwrap();
    let distinct: BTreeSet<u64> = rows.iter().copied().collect();
    assert_eq!(rows.len(), 8 + 1 + 60);
    assert_eq!(distinct.len(), rows.len());
    s1.disconnect().await.unwrap();
}
