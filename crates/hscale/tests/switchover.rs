#![allow(clippy::unwrap_used)]
//! `HSCALE SWITCHOVER('backend', 'replica address')` (issue 34 item 3):
//! a backend's replica made its primary while two proxies write to it,
//! nothing acknowledged lost; the old primary a replica of the new one.
//!
//! Servers of this binary's own: the main backend (shard0) and shard1's
//! two servers, each with a binary log (a replica that is promoted must
//! keep one, `log_slave_updates`, for the other to replicate from it),
//! server ids 1 and 2 so that a row's server is known.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hscale::playground::mariadb::MariaDb;
use mysql_async::prelude::*;

/// main, shard1's first server (its primary at start), shard1's second.
static SERVERS: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
    std::env::temp_dir().join(format!("hscale-switchover-{}", std::process::id()))
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

/// Ports of main, shard1's first and second server; started once, the
/// second replicating from the first.
async fn servers() -> [u16; 3] {
    if let Some(m) = SERVERS.get() {
        let s = m.lock().unwrap();
        return [s[0].port, s[1].port, s[2].port];
    }
    let start = |name: &'static str, args: Vec<String>| {
        std::thread::spawn(move || MariaDb::start_with(&base_dir().join(name), &args).unwrap())
    };
    let logged = |id: u32| {
        vec![
            "--log-bin=server-bin".to_string(),
            "--log-slave-updates".to_string(),
            format!("--server-id={id}"),
            "--binlog-format=ROW".to_string(),
        ]
    };
    let handles = [
        start("main", vec!["--server-id=100".to_string()]),
        start("a", logged(1)),
        start("b", logged(2)),
    ];
    let s: Vec<MariaDb> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let ports = [s[0].port, s[1].port, s[2].port];
    let mut a = server(ports[1]).await;
    let pos: String = a
        .query_first("SELECT @@gtid_binlog_pos")
        .await
        .unwrap()
        .unwrap();
    let mut b = server(ports[2]).await;
    b.query_drop(format!(
        "SET GLOBAL gtid_slave_pos = '{pos}'; \
         CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, \
         MASTER_USER = 'hscale', MASTER_PASSWORD = 'hscale', \
         MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1; START SLAVE",
        ports[1]
    ))
    .await
    .unwrap();
    if SERVERS.set(Mutex::new(s)).is_ok() {
        #[allow(unsafe_code)]
        // SAFETY: registering a plain extern "C" function with atexit.
        unsafe {
            libc::atexit(stop_servers);
        }
    }
    ports
}

fn config(ports: [u16; 3]) -> hscale::Config {
    common::replication::config(&[("shard0", ports[0], &[]), ("shard1", ports[1], &[ports[2]])])
}

async fn connect(port: u16) -> mysql_async::Conn {
    common::replication::connect(port).await
}

fn code(e: &mysql_async::Error) -> u16 {
    match e {
        mysql_async::Error::Server(s) => s.code,
        e => panic!("not a server error: {e}"),
    }
}

/// shard1's primary as `HSCALE SHOW BACKENDS` shows it.
async fn primary_of_shard1(c: &mut mysql_async::Conn) -> String {
    let rows: Vec<mysql_async::Row> = c.query("HSCALE SHOW BACKENDS").await.unwrap();
    rows.iter()
        .find(|r| r.get::<String, _>(0).as_deref() == Some("shard1"))
        .and_then(|r| r.get::<String, _>(1))
        .unwrap()
}

/// The partition's physical table on shard1 (its only table of `sw`).
async fn physical(c: &mut mysql_async::Conn) -> String {
    c.query_first("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sw'")
        .await
        .unwrap()
        .unwrap()
}

/// Both of shard1's servers have the same rows of the partition (the
/// replica caught up with the primary's position), and the replica
/// replicates.
async fn assert_replicating(primary: u16, replica: u16) {
    let mut p = server(primary).await;
    let pos: String = p
        .query_first("SELECT @@gtid_binlog_pos")
        .await
        .unwrap()
        .unwrap();
    let mut r = server(replica).await;
    let reached: i64 = r
        .query_first(format!("SELECT MASTER_GTID_WAIT('{pos}', 20)"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reached, 0, "the replica on {replica} did not reach {pos}");
    let all = format!(
        "SELECT id, k, v FROM sw.{} ORDER BY id",
        physical(&mut p).await
    );
    let on_p: Vec<(i64, i64, i64)> = p.query(&all).await.unwrap();
    let on_r: Vec<(i64, i64, i64)> = r.query(&all).await.unwrap();
    assert_eq!(on_p, on_r);
    let ro: i64 = r.query_first("SELECT @@read_only").await.unwrap().unwrap();
    assert_eq!(ro, 1, "a replica is read-only");
}

/// `sw.t` (id, k, v), partitioned by k: p1 (value 1) on shard1; made
/// once, whichever test runs first.
async fn set_up(admin: &mut mysql_async::Conn) {
    let parts: Vec<mysql_async::Row> = admin.query("HSCALE SHOW PARTITIONS").await.unwrap();
    if !parts.is_empty() {
        return;
    }
    for sql in [
        "CREATE DATABASE sw",
        "CREATE TABLE sw.t (id BIGINT, k INT, v INT, PRIMARY KEY (id, k))",
        "HSCALE SETUP_TABLE('sw.t', 'k', 't_default', 'shard0', 'NONE()')",
        "HSCALE ADD_PARTITION('sw.t', 'p1', '1', 'shard1')",
    ] {
        admin.query_drop(sql).await.unwrap();
    }
}

/// The example: `HSCALE SWITCHOVER(backend, replica)` while two
/// proxies write to the backend's partition; every acknowledged row is on
/// the new primary, the old primary is its replica, and both proxies
/// write to the new primary afterwards. Run twice: there and back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn switchover_under_writes_through_two_proxies_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let ports = servers().await;
    let p1 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let p2 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let proxies = [p1.addr.port(), p2.addr.port()];
    let mut admin = connect(proxies[0]).await;
    set_up(&mut admin).await;
    let addr = |p: u16| format!("127.0.0.1:{p}");
    let (first, second) = if primary_of_shard1(&mut admin).await == addr(ports[1]) {
        (ports[1], ports[2])
    } else {
        (ports[2], ports[1])
    };

    for (round, (from, to)) in [(first, second), (second, first)].into_iter().enumerate() {
        // Writers: two per proxy, each its own ids, k = 1 (shard1).
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::<i64>::new()));
        let failed = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut writers = Vec::new();
        for w in 0..4i64 {
            let (stop, acked, failed) = (stop.clone(), acked.clone(), failed.clone());
            let port = proxies[(w % 2) as usize];
            writers.push(tokio::spawn(async move {
                let mut c = connect(port).await;
                let mut n = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let id = (round as i64 * 10 + w) * 1_000_000 + n;
                    match c
                        .query_drop(format!("INSERT INTO sw.t (id, k, v) VALUES ({id}, 1, {w})"))
                        .await
                    {
                        Ok(()) => acked.lock().unwrap().push(id),
                        Err(e) => {
                            failed.lock().unwrap().push(e.to_string());
                            c = connect(port).await;
                        }
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = acked.lock().unwrap().len();
        let started = Instant::now();
        let info: Vec<mysql_async::Row> = admin
            .query(format!("HSCALE SWITCHOVER('shard1', '{}')", addr(to)))
            .await
            .unwrap();
        let took = started.elapsed();
        drop(info);
        let at_switch = acked.lock().unwrap().len();
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.await.unwrap();
        }
        let acked = acked.lock().unwrap().clone();
        let failed = failed.lock().unwrap().clone();
        println!(
            "round {round}: switchover {} ms; {} writes acknowledged ({before} before, {} during, {} after), {} failed: {:?}",
            took.as_millis(),
            acked.len(),
            at_switch - before,
            acked.len() - at_switch,
            failed.len(),
            failed.iter().take(3).collect::<Vec<_>>()
        );
        assert!(acked.len() > at_switch, "writes went on after the switch");

        // Every acknowledged row is on the new primary, once.
        let mut new = server(to).await;
        let table = physical(&mut new).await;
        let ids: Vec<i64> = new
            .query(format!(
                "SELECT id FROM sw.{table} WHERE id DIV 1000000 BETWEEN {} AND {}",
                round * 10,
                round * 10 + 3
            ))
            .await
            .unwrap();
        let there: std::collections::HashSet<i64> = ids.iter().copied().collect();
        assert_eq!(there.len(), ids.len());
        let lost: Vec<&i64> = acked.iter().filter(|id| !there.contains(id)).collect();
        assert!(lost.is_empty(), "acknowledged rows lost: {lost:?}");
        // The dictionary names it on both proxies, and both write there.
        for port in proxies {
            let mut c = connect(port).await;
            assert_eq!(primary_of_shard1(&mut c).await, addr(to));
            let id: i64 = c
                .query_first("SELECT @@server_id FROM sw.t WHERE k = 1 LIMIT 1")
                .await
                .unwrap()
                .unwrap();
            let want: i64 = new
                .query_first("SELECT @@server_id")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(id, want, "proxy {port} reads shard1 from the new primary");
        }
        let ro: i64 = new
            .query_first("SELECT @@read_only")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ro, 0, "the new primary is writable");
        // The old primary replicates from the new one.
        assert_replicating(to, from).await;
    }
}

/// What SWITCHOVER refuses: a server that is not one of the backend's
/// (for the main backend too), its primary itself, an unknown backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switchover_refusals() {
    let _serial = SERIAL.lock().await;
    let ports = servers().await;
    let p = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let mut c = connect(p.addr.port()).await;
    let primary = primary_of_shard1(&mut c).await;
    for (sql, want) in [
        (
            "HSCALE SWITCHOVER('shard1', '127.0.0.1:1')".to_string(),
            1210,
        ),
        (format!("HSCALE SWITCHOVER('shard1', '{primary}')"), 1210),
        (
            format!("HSCALE SWITCHOVER('shard0', '127.0.0.1:{}')", ports[2]),
            1210,
        ),
        (
            "HSCALE SWITCHOVER('shard9', '127.0.0.1:1')".to_string(),
            1210,
        ),
        ("HSCALE SWITCHOVER('shard1')".to_string(), 1210),
    ] {
        let e = c.query_drop(&sql).await.unwrap_err();
        assert_eq!(code(&e), want, "{sql}: {e}");
    }
}

/// A transaction that wrote on the old primary and is still open when
/// the switchover starts is not committed anywhere: its connection is
/// killed with the old primary's clients, its COMMIT fails, and its row
/// is on neither server. (Switched there and back.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_open_transaction_on_the_old_primary_is_not_committed() {
    let _serial = SERIAL.lock().await;
    let ports = servers().await;
    let p = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let port = p.addr.port();
    let mut admin = connect(port).await;
    set_up(&mut admin).await;
    let addr = |p: u16| format!("127.0.0.1:{p}");
    let primary = primary_of_shard1(&mut admin).await;
    let (from, to) = if primary == addr(ports[1]) {
        (ports[1], ports[2])
    } else {
        (ports[2], ports[1])
    };
    let mut t = connect(port).await;
    t.query_drop("BEGIN").await.unwrap();
    t.query_drop("INSERT INTO sw.t (id, k, v) VALUES (900000001, 1, 0)")
        .await
        .unwrap();
    let started = Instant::now();
    admin
        .query_drop(format!("HSCALE SWITCHOVER('shard1', '{}')", addr(to)))
        .await
        .unwrap();
    println!(
        "switchover beside an open transaction: {} ms",
        started.elapsed().as_millis()
    );
    assert!(t.query_drop("COMMIT").await.is_err(), "the COMMIT fails");
    for port in [from, to] {
        assert_replicating(to, from).await;
        let mut c = server(port).await;
        let table = physical(&mut c).await;
        let n: i64 = c
            .query_first(format!(
                "SELECT COUNT(*) FROM sw.{table} WHERE id = 900000001"
            ))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 0, "the open transaction's row on {port}");
    }
    // Back as it was, and writable through the proxy.
    admin
        .query_drop(format!("HSCALE SWITCHOVER('shard1', '{}')", addr(from)))
        .await
        .unwrap();
    admin
        .query_drop("INSERT INTO sw.t (id, k, v) VALUES (900000002, 1, 0)")
        .await
        .unwrap();
}
