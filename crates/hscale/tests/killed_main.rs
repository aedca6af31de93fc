#![allow(clippy::unwrap_used)]
//! The availability issue's third example: the main backend killed. New
//! connections and statements on tables whose partitions live on healthy
//! backends keep working (before, every new connection failed with 1429
//! "can't connect to backend 'shard0'"), and everything resumes when the
//! main backend is back, without a proxy restart. Its own binary: it kills
//! the main backend of its cluster.

mod common;

use std::time::Duration;

use common::*;
use mysql_async::prelude::*;

/// Restarts the main backend even when the test fails half-way.
struct Restart;

impl Drop for Restart {
    fn drop(&mut self) {
        let _ = with_cluster(|c| c.servers[0].restart());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_main_backend_does_not_stop_healthy_partitions() {
    cluster(2);
    fresh_db("killed_main").await;
    let mut setup = proxy_conn(None).await;
    for sql in [
        "CREATE TABLE killed_main.t (id INT PRIMARY KEY, v INT)",
        "HSCALE SETUP_TABLE('killed_main.t', 'id', 't_default', 'shard0', 'NONE()')",
        "HSCALE ADD_PARTITION('killed_main.t', 'p2', '2', 'shard1')",
        "INSERT INTO killed_main.t (id, v) VALUES (1, 10), (2, 20)",
    ] {
        setup.query_drop(sql).await.unwrap();
    }
    setup.disconnect().await.unwrap();

    let mut config = cluster_config();
    config.proxy.health_check_interval_ms = 300;
    config.proxy.backend_ping_timeout_ms = 1_000;
    config.proxy.connect_timeout_ms = 1_000;
    let proxy = hscale::RunningProxy::start(config, "127.0.0.1:0").unwrap();
    let port = proxy.addr.port();
    let mut admin = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .unwrap();
    let v: Option<i32> = admin
        .query_first("SELECT v FROM killed_main.t WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(v, Some(20));

    with_cluster(|c| c.servers[0].kill());
    let restart = Restart;
    // Past a few dictionary reloads (every second), which now fail.
    tokio::time::sleep(Duration::from_millis(2_500)).await;

    // Every attempt counted: connections and statements on shard1's rows.
    let work = async {
        let (mut tried, mut failed) = (0u32, Vec::new());
        for round in 0..10 {
            for db in [None, Some("killed_main")] {
                tried += 1;
                let mut c = match mysql_async::Conn::new(proxy_opts(port, db)).await {
                    Ok(c) => c,
                    Err(e) => {
                        failed.push(format!("connect {db:?}: {e}"));
                        continue;
                    }
                };
                for sql in [
                    "SET NAMES utf8mb4",
                    "SET autocommit = 1",
                    "SET SESSION sql_mode = 'STRICT_ALL_TABLES'",
                ] {
                    tried += 1;
                    if let Err(e) = c.query_drop(sql).await {
                        failed.push(format!("{sql}: {e}"));
                    }
                }
                tried += 2;
                match c
                    .query_first::<i32, _>("SELECT v FROM killed_main.t WHERE id = 2")
                    .await
                {
                    Ok(v) => assert_eq!(v, Some(20 + round)),
                    Err(e) => failed.push(format!("read: {e}")),
                }
                if let Err(e) = c
                    .query_drop("UPDATE killed_main.t SET v = v + 1 WHERE id = 2")
                    .await
                {
                    failed.push(format!("write: {e}"));
                }
                // A transaction on shard1 alone needs no commit decision.
                tried += 1;
                if let Err(e) = c
                    .query_drop("BEGIN; UPDATE killed_main.t SET v = v + 0 WHERE id = 2; COMMIT")
                    .await
                {
                    failed.push(format!("transaction: {e}"));
                }
                // Only one of the two connections of a round writes.
                if db.is_none() {
                    tried += 1;
                    if let Err(e) = c
                        .query_drop("UPDATE killed_main.t SET v = v - 1 WHERE id = 2")
                        .await
                    {
                        failed.push(format!("write back: {e}"));
                    }
                }
                let _ = c.disconnect().await;
            }
        }
        (tried, failed)
    };
    let (tried, failed) = tokio::time::timeout(Duration::from_secs(120), work)
        .await
        .expect("clients of shard1 hang while the main backend is down");
    assert!(
        failed.is_empty(),
        "{} of {tried} attempts failed with the main backend down: {failed:#?}",
        failed.len()
    );

    // HSCALE SHOW BACKENDS says what is down and since when.
    let rows: Vec<(String, String, String, String, String, Option<String>)> =
        admin.query("HSCALE SHOW BACKENDS").await.unwrap();
    let main = rows.iter().find(|r| r.0 == "shard0").unwrap();
    assert_eq!(main.2, "down", "{rows:?}");
    assert!(
        main.5.as_deref().is_some_and(|t| t.starts_with("20")),
        "{rows:?}"
    );
    let other = rows.iter().find(|r| r.0 == "shard1").unwrap();
    assert_eq!(
        (other.2.as_str(), other.5.as_deref()),
        ("up", None),
        "{rows:?}"
    );

    // A row on the main backend fails cleanly, naming it.
    let e = admin
        .query_first::<i32, _>("SELECT v FROM killed_main.t WHERE id = 1")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("shard0"), "{e}");

    // Back: everything resumes without a proxy restart.
    drop(restart);
    let mut is_back = false;
    for _ in 0..100 {
        if let Ok(mut c) = mysql_async::Conn::new(proxy_opts(port, Some("killed_main"))).await {
            if let Ok(Some(v)) = c
                .query_first::<i32, _>("SELECT v FROM t WHERE id = 1")
                .await
            {
                assert_eq!(v, 10);
                is_back = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        is_back,
        "the main backend's rows are not served after its restart"
    );
}
