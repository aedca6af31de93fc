#![allow(clippy::unwrap_used)]
//! Issue 12: a backend killed during a partition change's copy. In a test
//! binary of its own, because it kills one of the cluster's servers.
//!
//! The change cannot finish without its destination: it is undone as far as
//! the live backends allow (capture triggers and changelog dropped, so
//! writes go on as before), and the journal keeps it active in
//! 'rolling_back' until the destination is back, when a take-over drops the
//! copy's table and ends it 'failed'. Then the change runs again.
//!
//! The take-over kills the connections the change's owner registered; the
//! restarted destination hands their thread ids out again, and a take-over
//! must not kill the unrelated connections that now hold them.

mod common;

use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

/// The cluster's proxy waits only briefly for another change of a table
/// (`change_wait_ms`), so the change refused below answers at once.
fn short_change_wait(c: &mut hscale::Config) {
    add_app_user(c);
    c.proxy.change_wait_ms = 300;
}

async fn count(c: &mut mysql_async::Conn, sql: &str) -> i64 {
    c.query_first::<i64, _>(sql).await.unwrap().unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_killed_during_the_copy_is_cleaned_up_when_it_returns() {
    cluster_with(2, short_change_wait);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE fault").await.unwrap();
    c.query_drop(
        "CREATE TABLE fault.t (id BIGINT NOT NULL, k INT NOT NULL, v VARCHAR(100) NOT NULL, PRIMARY KEY (id, k))",
    )
    .await
    .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('fault.t', 'k', 't_default', 'shard0', 'MOD(4)')")
        .await
        .unwrap();
    let default = physical("fault.t", None).await;
    let mut b0 = backend_conn(0, Some("fault")).await;
    b0.query_drop(format!(
        "INSERT INTO {default} (id, k, v) SELECT seq, seq * 4 + 1, REPEAT('x', 80) FROM seq_1_to_300000"
    ))
    .await
    .unwrap();
    let port = cluster(2).proxy_port;
    let change = tokio::spawn(async move {
        let mut c = mysql_async::Conn::new(proxy_opts(port, Some("fault")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('fault.t', 'p1', '1', 'shard1')")
            .await
    });
    let triggers =
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'fault'";
    let t = Instant::now();
    while count(&mut b0, triggers).await != 3 {
        assert!(t.elapsed() < Duration::from_secs(20), "no capture triggers");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    tokio::task::spawn_blocking(|| with_cluster(|cl| cl.servers[1].kill()))
        .await
        .unwrap();
    let r = tokio::time::timeout(Duration::from_secs(90), change)
        .await
        .expect("the change answers")
        .unwrap();
    eprintln!("change with its destination killed: {r:?}");
    assert!(r.is_err(), "the change cannot succeed: {r:?}");
    let journal = "SELECT state, active IS NOT NULL FROM hscale.operations WHERE db = 'fault' AND command LIKE 'ADD_PARTITION%' ORDER BY id DESC LIMIT 1";
    let (state, active): (String, bool) = b0.query_first(journal).await.unwrap().unwrap();
    assert_eq!((state.as_str(), active), ("rolling_back", true));
    assert_eq!(count(&mut b0, triggers).await, 0, "the source is clean");
    // The table works as before meanwhile, and cannot be changed.
    c.query_drop("INSERT INTO fault.t (id, k, v) VALUES (300001, 1, 'during')")
        .await
        .unwrap();
    assert_eq!(
        count(&mut c, "SELECT COUNT(*) FROM fault.t WHERE k = 1 OR k > 0").await,
        300_001
    );
    let refused = c
        .query_drop("HSCALE ADD_PARTITION('fault.t', 'p2', '2', 'shard0')")
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("rolling_back"), "{refused}");
    assert_eq!(code(&refused), 1205, "{refused}");
    // The owner's registered connections on the destination (thread ids of
    // the server's run that was killed).
    let (op, fence): (u64, String) = b0
        .query_first("SELECT id, IFNULL(fence, '') FROM hscale.operations WHERE db = 'fault' ORDER BY id DESC LIMIT 1")
        .await
        .unwrap()
        .unwrap();
    let registered: Vec<u32> = fence
        .split(';')
        .filter_map(|e| {
            let p: Vec<&str> = e.split('/').collect();
            (p.len() >= 3 && p[1] == "shard1").then(|| p[2].parse().unwrap())
        })
        .collect();
    assert!(!registered.is_empty(), "registered on shard1: {fence}");
    // Hold the take-over back (its compare-and-set of the epoch waits for
    // this row lock) until unrelated connections hold those ids again.
    let mut hold = backend_conn(0, None).await;
    hold.query_drop("BEGIN").await.unwrap();
    hold.query_drop(format!(
        "SELECT id FROM hscale.operations WHERE id = {op} FOR UPDATE"
    ))
    .await
    .unwrap();
    tokio::task::spawn_blocking(|| with_cluster(|cl| cl.servers[1].restart()))
        .await
        .unwrap()
        .expect("restart");
    let highest = *registered.iter().max().unwrap();
    let mut bystanders = Vec::new();
    while bystanders.len() < 140 {
        let b = backend_conn(1, None).await;
        let id = b.id();
        bystanders.push(b);
        if id > highest {
            break;
        }
    }
    let reused: Vec<u32> = bystanders
        .iter()
        .map(|b| b.id())
        .filter(|id| registered.contains(id))
        .collect();
    eprintln!(
        "registered on shard1 before its restart: {registered:?}; reused by bystanders: {reused:?}"
    );
    assert!(!reused.is_empty(), "no bystander got a registered id");
    hold.query_drop("COMMIT").await.unwrap();
    let t = Instant::now();
    loop {
        let (state, active): (String, bool) = b0.query_first(journal).await.unwrap().unwrap();
        if !active {
            assert_eq!(state, "failed");
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "still {state} after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The take-over killed nothing of the new run of shard1.
    for mut b in bystanders {
        let id = b.id();
        let alive = b.query_drop("SELECT 1").await;
        assert!(
            alive.is_ok(),
            "bystander connection {id} was killed: {alive:?}"
        );
        let _ = b.disconnect().await;
    }
    hold.disconnect().await.unwrap();
    let mut b1 = backend_conn(1, None).await;
    let left: Vec<String> = b1
        .query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'fault'")
        .await
        .unwrap();
    assert!(left.is_empty(), "shard1 keeps {left:?}");
    // The change runs again, to its end.
    c.query_drop("HSCALE ADD_PARTITION('fault.t', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    let p1 = physical("fault.t", Some("p1")).await;
    assert_eq!(
        count(&mut b1, &format!("SELECT COUNT(*) FROM fault.{p1}")).await,
        300_001
    );
    for c in [b0, b1, c] {
        c.disconnect().await.unwrap();
    }
}
