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

/// The tests of this binary kill the same main backend: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Restarts the main backend even when the test fails half-way.
struct Restart;

impl Drop for Restart {
    fn drop(&mut self) {
        let _ = with_cluster(|c| c.servers[0].restart());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_main_backend_does_not_stop_healthy_partitions() {
    let _serial = SERIAL.lock().await;
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

/// The same under load, through two proxies: 16 clients (8 per proxy)
/// connect, read and write rows of shard1 without pause while the main
/// backend is killed, stays down 4 s and comes back. All but at most two
/// of their connections and statements succeed (the issue asks for 99%); a transfer that needs a
/// commit decision (across shard0 and shard1) fails within a bounded
/// time naming the main backend; both proxies report it down within a
/// health-check interval or two, and both serve its rows again after it
/// returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_main_backend_under_load_through_two_proxies() {
    let _serial = SERIAL.lock().await;
    cluster(2);
    fresh_db("killed_main_load").await;
    let mut setup = proxy_conn(None).await;
    let mut rows = String::new();
    for id in 0..32 {
        rows.push_str(&format!("{}({id}, 0)", if id == 0 { "" } else { ", " }));
    }
    for sql in [
        "CREATE TABLE killed_main_load.t (id INT PRIMARY KEY, v INT)".to_string(),
        "HSCALE SETUP_TABLE('killed_main_load.t', 'id', 't_even', 'shard0', 'MOD(2)')".into(),
        "HSCALE ADD_PARTITION('killed_main_load.t', 'odd', '1', 'shard1')".into(),
        format!("INSERT INTO killed_main_load.t (id, v) VALUES {rows}"),
    ] {
        setup.query_drop(sql).await.unwrap();
    }
    setup.disconnect().await.unwrap();

    let mut config = cluster_config();
    config.proxy.health_check_interval_ms = 300;
    config.proxy.backend_ping_timeout_ms = 1_000;
    config.proxy.connect_timeout_ms = 1_000;
    let proxies = [
        hscale::RunningProxy::start(config.clone(), "127.0.0.1:0").unwrap(),
        hscale::RunningProxy::start(config, "127.0.0.1:0").unwrap(),
    ];
    let ports: Vec<u16> = proxies.iter().map(|p| p.addr.port()).collect();

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut clients = Vec::new();
    for k in 0..16u32 {
        let (port, stop) = (ports[(k % 2) as usize], stop.clone());
        // Odd ids: shard1's rows, each client its own.
        let id = 2 * k + 1;
        clients.push(tokio::spawn(async move {
            let (mut tried, mut failed) = (0u32, Vec::<String>::new());
            // Acknowledged writes, and the value last read.
            let (mut acked, mut seen) = (0i64, 0i64);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tried += 1;
                let mut c = match mysql_async::Conn::new(proxy_opts(port, Some("killed_main_load")))
                    .await
                {
                    Ok(c) => c,
                    Err(e) => {
                        failed.push(format!("connect: {e}"));
                        continue;
                    }
                };
                for _ in 0..5 {
                    tried += 2;
                    match c
                        .query_drop(format!("UPDATE t SET v = v + 1 WHERE id = {id}"))
                        .await
                    {
                        Ok(()) => acked += 1,
                        Err(e) => failed.push(format!("write: {e}")),
                    }
                    match c
                        .query_first::<i64, _>(format!("SELECT v FROM t WHERE id = {id}"))
                        .await
                    {
                        Ok(Some(v)) => {
                            // Only this client writes its row: every
                            // acknowledged write is in what it reads.
                            assert!(
                                v >= acked && v >= seen,
                                "client {k} lost a write: {v} < {acked}"
                            );
                            seen = v;
                        }
                        Ok(None) => panic!("client {k}: row {id} gone"),
                        Err(e) => failed.push(format!("read: {e}")),
                    }
                }
                let _ = c.disconnect().await;
            }
            (tried, failed, acked)
        }));
    }
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    with_cluster(|c| c.servers[0].kill());
    let restart = Restart;
    tokio::time::sleep(Duration::from_millis(1_000)).await;

    // Both proxies say the main backend is down.
    for port in &ports {
        let mut admin = mysql_async::Conn::new(proxy_opts(*port, None))
            .await
            .unwrap();
        let rows: Vec<(String, String, String, String, String, Option<String>)> =
            admin.query("HSCALE SHOW BACKENDS").await.unwrap();
        let main = rows.iter().find(|r| r.0 == "shard0").unwrap();
        assert_eq!(main.2, "down", "proxy on {port}: {rows:?}");
        // A transfer that needs a commit decision on the main backend:
        // refused within a bounded time, naming it.
        let started = std::time::Instant::now();
        let e = admin
            .query_drop(
                "BEGIN; UPDATE killed_main_load.t SET v = v WHERE id = 1; \
                 UPDATE killed_main_load.t SET v = v WHERE id = 0; COMMIT",
            )
            .await
            .unwrap_err();
        assert!(e.to_string().contains("shard0"), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the transfer took {:?} to fail",
            started.elapsed()
        );
    }
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    drop(restart);
    // Back: both proxies serve the main backend's rows again.
    for port in &ports {
        let mut is_back = false;
        for _ in 0..100 {
            if let Ok(mut c) =
                mysql_async::Conn::new(proxy_opts(*port, Some("killed_main_load"))).await
            {
                if let Ok(Some(v)) = c
                    .query_first::<i64, _>("SELECT v FROM t WHERE id = 0")
                    .await
                {
                    assert_eq!(v, 0);
                    is_back = true;
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(
            is_back,
            "proxy on {port}: the main backend's rows are not served after its restart"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut tried, mut failed, mut acked) = (0u32, Vec::new(), 0i64);
    for c in clients {
        let (t, f, a) = tokio::time::timeout(Duration::from_secs(60), c)
            .await
            .expect("a client of shard1 hangs")
            .unwrap();
        tried += t;
        failed.extend(f);
        acked += a;
    }
    eprintln!(
        "{} of {tried} attempts failed across the main backend's kill: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    // The issue asks for 99%. Statements that name no table (a driver's
    // first queries, USE) move to a backend that answers when the main one
    // refuses or resets (`Exec::is_movable`, `Bindings::use_database`):
    // before, 9 to 19 of about 30,000 attempts failed with 1429 or 1158 in
    // the instant after the kill. A connect refused after two idle
    // connections found dead, or racing a connect that counted the backend
    // up again, moves too (`Bindings::retry_backend`): 0 failed in 8 runs,
    // where before about a third of the runs failed 1 to 3 (1429). A plain
    // close before the answer (1158) stays an error: the statement may
    // have run.
    assert!(
        failed.len() <= 2,
        "{} of {tried} attempts failed: {:#?}",
        failed.len(),
        &failed[..failed.len().min(20)]
    );
    // Every acknowledged write is on the backend (shard1).
    let mut b = backend_conn(1, None).await;
    let stored: Option<i64> = b
        .query_first(format!(
            "SELECT CAST(SUM(v) AS SIGNED) FROM killed_main_load.{}",
            physical("killed_main_load.t", Some("odd"))
                .await
                .split('.')
                .next_back()
                .unwrap()
        ))
        .await
        .unwrap();
    assert!(
        acked > 0 && stored.unwrap_or(0) >= acked,
        "{stored:?} stored, {acked} acknowledged"
    );
}
