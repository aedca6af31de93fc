#![allow(clippy::unwrap_used)]
//! Automatic failover (issue 34 item 3, `[proxy] failover_after_ms`): a
//! backend's primary killed (SIGKILL) under writes through two proxies;
//! one proxy promotes the most advanced replica, the other follows, every
//! write acknowledged with semi-synchronous replication on is on the new
//! primary, and the old primary, restarted, is written by no one.
//!
//! Servers of this binary's own: the main backend (shard0) and shard1's
//! three servers (a primary and two replicas), each with a binary log
//! (`log_slave_updates`) and semi-synchronous replication on as primary
//! and as replica (`AFTER_SYNC`, a 30 s timeout, so it never falls back
//! to asynchronous replication during the test).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hscale::playground::mariadb::MariaDb;
use mysql_async::prelude::*;

/// main, shard1's first server (its primary at start), its two replicas.
static SERVERS: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();

extern "C" fn stop_servers() {
    if let Some(m) = SERVERS.get() {
        if let Ok(mut s) = m.lock() {
            for db in s.iter_mut() {
                db.stop();
            }
            let _ = std::fs::remove_dir_all(base_dir());
        }
    }
}

fn base_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hscale-failover-{}", std::process::id()))
}

fn opts(port: u16) -> mysql_async::Opts {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("hscale"))
        .pass(Some("hscale"))
        .prefer_socket(false)
        .into()
}

async fn server(port: u16) -> mysql_async::Conn {
    mysql_async::Conn::new(opts(port)).await.unwrap()
}

/// Ports of main and shard1's three servers; started once, the second
/// and third replicating from the first.
async fn servers() -> [u16; 4] {
    let start = |name: &'static str, args: Vec<String>| {
        std::thread::spawn(move || MariaDb::start_with(&base_dir().join(name), &args).unwrap())
    };
    let logged = |id: u32| {
        vec![
            "--log-bin=server-bin".to_string(),
            "--log-slave-updates".to_string(),
            format!("--server-id={id}"),
            "--binlog-format=ROW".to_string(),
            "--rpl-semi-sync-master-enabled=ON".to_string(),
            "--rpl-semi-sync-slave-enabled=ON".to_string(),
            "--rpl-semi-sync-master-timeout=30000".to_string(),
            "--rpl-semi-sync-master-wait-point=AFTER_SYNC".to_string(),
        ]
    };
    let handles = [
        start("main", vec!["--server-id=100".to_string()]),
        start("a", logged(1)),
        start("b", logged(2)),
        start("c", logged(3)),
    ];
    let s: Vec<MariaDb> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let ports = [s[0].port, s[1].port, s[2].port, s[3].port];
    let mut a = server(ports[1]).await;
    let pos: String = a
        .query_first("SELECT @@gtid_binlog_pos")
        .await
        .unwrap()
        .unwrap();
    for r in [ports[2], ports[3]] {
        let mut c = server(r).await;
        c.query_drop(format!(
            "SET GLOBAL gtid_slave_pos = '{pos}'; \
             CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, \
             MASTER_USER = 'hscale', MASTER_PASSWORD = 'hscale', \
             MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1; START SLAVE",
            ports[1]
        ))
        .await
        .unwrap();
    }
    // Both replicas acknowledge before the writes start.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let clients: Option<(String, String)> = a
            .query_first("SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'")
            .await
            .unwrap();
        if clients.map(|c| c.1).as_deref() == Some("2") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "semi-synchronous replicas did not connect"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if SERVERS.set(Mutex::new(s)).is_ok() {
        #[allow(unsafe_code)]
        // SAFETY: registering a plain extern "C" function with atexit.
        unsafe {
            libc::atexit(stop_servers);
        }
    }
    ports
}

fn config(ports: [u16; 4]) -> hscale::Config {
    let mut c = common::replication::config(&[
        ("shard0", ports[0], &[]),
        ("shard1", ports[1], &[ports[2], ports[3]]),
    ]);
    c.proxy.failover_after_ms = 2_000;
    c
}

async fn connect(port: u16) -> mysql_async::Conn {
    common::replication::connect(port).await
}

/// shard1's primary as `HSCALE SHOW BACKENDS` shows it.
async fn primary_of_shard1(c: &mut mysql_async::Conn) -> String {
    let rows: Vec<mysql_async::Row> = c.query("HSCALE SHOW BACKENDS").await.unwrap();
    rows.iter()
        .find(|r| r.get::<String, _>(0).as_deref() == Some("shard1"))
        .and_then(|r| r.get::<String, _>(1))
        .unwrap()
}

/// The partition's physical table on shard1 (its only table of `fo`).
async fn physical(c: &mut mysql_async::Conn) -> String {
    c.query_first("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'fo'")
        .await
        .unwrap()
        .unwrap()
}

/// Writers through `proxies`, two each, until `stop`: ids `base + n` and
/// the times of their acknowledgements.
struct Writers {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<(i64, Instant)>>>,
    failed: Arc<Mutex<Vec<(String, Instant)>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    fn start(proxies: [u16; 2], base: i64) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let failed = Arc::new(Mutex::new(Vec::new()));
        let tasks = (0..4i64)
            .map(|w| {
                let (stop, acked, failed) = (stop.clone(), acked.clone(), failed.clone());
                let port = proxies[(w % 2) as usize];
                tokio::spawn(async move {
                    let mut c = connect(port).await;
                    let mut n = 0i64;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let id = base + w * 1_000_000 + n;
                        let sql = format!("INSERT INTO fo.t (id, k, v) VALUES ({id}, 1, {w})");
                        match c.query_drop(sql).await {
                            Ok(()) => acked.lock().unwrap().push((id, Instant::now())),
                            Err(e) => {
                                failed.lock().unwrap().push((e.to_string(), Instant::now()));
                                tokio::time::sleep(Duration::from_millis(20)).await;
                                if let Ok(fresh) = mysql_async::Conn::new(
                                    mysql_async::OptsBuilder::default()
                                        .ip_or_hostname("127.0.0.1")
                                        .tcp_port(port)
                                        .user(Some("root"))
                                        .pass(Some(""))
                                        .prefer_socket(false),
                                )
                                .await
                                {
                                    c = fresh;
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        Writers {
            stop,
            acked,
            failed,
            tasks,
        }
    }

    fn acked(&self) -> usize {
        self.acked.lock().unwrap().len()
    }

    async fn finish(self) -> (Vec<(i64, Instant)>, Vec<(String, Instant)>) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        let acked = self.acked.lock().unwrap().clone();
        let failed = self.failed.lock().unwrap().clone();
        (acked, failed)
    }
}

/// The example: the primary of a partition killed (SIGKILL) under
/// writes through two proxies, semi-synchronous replication on. After the
/// failover every acknowledged row is on the new primary, once; the
/// partition was unavailable at most 10 s (printed); the old primary,
/// restarted, is made read-only and receives no write through either
/// proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_primary_is_replaced_and_nothing_acknowledged_is_lost() {
    let ports = servers().await;
    let p1 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let p2 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let proxies = [p1.addr.port(), p2.addr.port()];
    let mut admin = connect(proxies[0]).await;
    for sql in [
        "CREATE DATABASE fo",
        "CREATE TABLE fo.t (id BIGINT, k INT, v INT, PRIMARY KEY (id, k))",
        "HSCALE SETUP_TABLE('fo.t', 'k', 't_default', 'shard0', 'NONE()')",
        "HSCALE ADD_PARTITION('fo.t', 'p1', '1', 'shard1')",
    ] {
        admin.query_drop(sql).await.unwrap();
    }
    let addr = |p: u16| format!("127.0.0.1:{p}");
    assert_eq!(primary_of_shard1(&mut admin).await, addr(ports[1]));

    let writers = Writers::start(proxies, 0);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let before = writers.acked();
    assert!(before > 0, "writes before the kill");
    let killed_at = Instant::now();
    SERVERS.get().unwrap().lock().unwrap()[1].kill();
    // Writes succeed again once a replica is the primary.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let after = writers
            .acked
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, t)| *t > killed_at)
            .count();
        if after >= 100 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no write succeeded after the kill"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (acked, failed) = writers.finish().await;
    let last_before = acked
        .iter()
        .filter(|(_, t)| *t <= killed_at)
        .map(|(_, t)| *t)
        .max()
        .unwrap();
    let first_after = acked
        .iter()
        .filter(|(_, t)| *t > killed_at)
        .map(|(_, t)| *t)
        .min()
        .unwrap();
    // The longest time without an acknowledgement.
    let mut times: Vec<Instant> = acked.iter().map(|(_, t)| *t).collect();
    times.sort();
    let gap = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap()
        .max(first_after - last_before);
    println!(
        "failover: partition unavailable {} ms (failover_after_ms 2000); {} writes acknowledged, {} failed meanwhile: {:?}",
        gap.as_millis(),
        acked.len(),
        failed.len(),
        failed.iter().take(2).map(|f| &f.0).collect::<Vec<_>>()
    );
    assert!(gap < Duration::from_secs(10), "unavailable for {gap:?}");

    // One of the replicas is the primary, on both proxies.
    let primary = primary_of_shard1(&mut admin).await;
    assert!(
        primary == addr(ports[2]) || primary == addr(ports[3]),
        "{primary}"
    );
    let mut other = connect(proxies[1]).await;
    assert_eq!(primary_of_shard1(&mut other).await, primary);
    let new_port: u16 = primary.rsplit(':').next().unwrap().parse().unwrap();
    let mut new = server(new_port).await;
    let table = physical(&mut new).await;
    let ids: Vec<i64> = new
        .query(format!("SELECT id FROM fo.{table}"))
        .await
        .unwrap();
    let there: std::collections::HashSet<i64> = ids.iter().copied().collect();
    assert_eq!(there.len(), ids.len(), "every row once");
    let lost: Vec<i64> = acked
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| !there.contains(id))
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged rows lost: {lost:?}",
        lost.len()
    );
    let ro: i64 = new
        .query_first("SELECT @@read_only")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ro, 0);

    // The old primary returns: made read-only, and written by no one.
    let old_port = ports[1];
    let restarting = Instant::now();
    // Without semi-synchronous replication as a primary: the harness's
    // init file writes (CREATE USER) would wait for a replica's
    // acknowledgement (30 s) before the server accepts connections.
    tokio::task::spawn_blocking(|| {
        let mut s = SERVERS.get().unwrap().lock().unwrap();
        s[1].extra
            .push("--rpl-semi-sync-master-enabled=OFF".to_string());
        s[1].restart().unwrap()
    })
    .await
    .unwrap();
    println!(
        "old primary restarted in {} ms",
        restarting.elapsed().as_millis()
    );
    let mut old = server(old_port).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ro: i64 = old
            .query_first("SELECT @@read_only")
            .await
            .unwrap()
            .unwrap();
        if ro == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the old primary was not made read-only"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pos = "SELECT @@gtid_binlog_pos";
    let old_pos: String = old.query_first(pos).await.unwrap().unwrap();
    let old_rows: i64 = old
        .query_first(format!("SELECT COUNT(*) FROM fo.{table}"))
        .await
        .unwrap()
        .unwrap();
    let writers = Writers::start(proxies, 10_000_000);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let (acked, _) = writers.finish().await;
    assert!(!acked.is_empty(), "writes after the old primary returned");
    let mut old = server(old_port).await;
    assert_eq!(
        old.query_first::<String, _>(pos).await.unwrap().unwrap(),
        old_pos
    );
    let now: i64 = old
        .query_first(format!("SELECT COUNT(*) FROM fo.{table}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(now, old_rows, "nothing was written to the old primary");
    let on_new: i64 = new
        .query_first(format!(
            "SELECT COUNT(*) FROM fo.{table} WHERE id >= 10000000"
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(on_new as usize, acked.len());
}
