#![allow(clippy::unwrap_used)]
//! The returning old primary and a proxy that missed the failover (issue
//! 34 item 3: "no proxy and no returning server can accept writes"). A
//! proxy stopped with SIGSTOP names a backend's old primary; that server
//! is killed, another proxy fails it over to a replica and stops, the old
//! primary is restarted (writable: `read_only` is not kept across a
//! restart, and no proxy's replica monitor is left to fence it), and the
//! stopped proxy is continued with clients waiting on it. Nothing it runs
//! may land on the old primary: its connections there were lost with the
//! restart, and the first new one is confirmed against the newest
//! dictionary (`backend/pool/primary_check.rs`), which names the replica.
//! The main backend (its servers' records) and another backend (the main
//! backend's dictionary).
//!
//! Servers of this binary's own: `common::replication::main_set` (the
//! main backend's m1 and its replica m2, shard1, shard2) and
//! `common::replication::shard_set` (the main backend, shard1's a and its
//! replicas b and c).

mod common;

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use hscale::playground::mariadb::MariaDb;
use mysql_async::prelude::*;

/// m1, m2, shard1, shard2.
static MAIN_SET: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();
/// main, shard1's a, b and c.
static SHARD_SET: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();
/// One test at a time: each stops a proxy and kills a server.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

extern "C" fn stop_servers() {
    for set in [&MAIN_SET, &SHARD_SET] {
        if let Some(m) = set.get() {
            if let Ok(mut s) = m.lock() {
                for db in s.iter_mut() {
                    db.stop();
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(base_dir());
}

fn base_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hscale-stale-proxy-{}", std::process::id()))
}

/// Keep the servers of `set` (stopped at exit); their ports.
fn keep(set: &'static OnceLock<Mutex<Vec<MariaDb>>>, s: Vec<MariaDb>) -> [u16; 4] {
    let ports = [s[0].port, s[1].port, s[2].port, s[3].port];
    let is_first = MAIN_SET.get().is_none() && SHARD_SET.get().is_none();
    if set.set(Mutex::new(s)).is_ok() && is_first {
        #[allow(unsafe_code)]
        // SAFETY: registering a plain extern "C" function with atexit.
        unsafe {
            libc::atexit(stop_servers);
        }
    }
    ports
}

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

/// `backend`'s primary as `HSCALE SHOW BACKENDS` on `port` shows it.
async fn primary(port: u16, backend: &str) -> String {
    let mut c = common::replication::connect(port).await;
    let rows: Vec<mysql_async::Row> = c.query("HSCALE SHOW BACKENDS").await.unwrap();
    rows.iter()
        .find(|r| r.get::<String, _>(0).as_deref() == Some(backend))
        .and_then(|r| r.get::<String, _>(1))
        .unwrap()
}

fn signal(pid: u32, sig: libc::c_int) {
    #[allow(unsafe_code)]
    // SAFETY: signalling a child process this test started.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// One write of id `id`: a row of the unpartitioned `st.ledger` (on the
/// main backend) and one of `st.pair` in its partition 1 (on the last
/// backend), in one transaction.
async fn write(c: &mut mysql_async::Conn, id: i64) -> Result<(), mysql_async::Error> {
    for sql in [
        "BEGIN".to_string(),
        format!("INSERT INTO st.ledger (id) VALUES ({id})"),
        format!("INSERT INTO st.pair (id, k) VALUES ({id}, 1)"),
        "COMMIT".to_string(),
    ] {
        c.query_drop(sql).await?;
    }
    Ok(())
}

/// Writers on `port` from ids `base`: each connects first (to a stopped
/// proxy the connect waits in its listen queue) and then writes until
/// `until`, reconnecting after an error; the ids acknowledged and the
/// errors.
async fn writers(port: u16, base: i64, until: Instant) -> (Vec<i64>, Vec<String>) {
    let tasks: Vec<_> = (0..4i64)
        .map(|w| {
            tokio::spawn(async move {
                let (mut acked, mut failed) = (Vec::new(), Vec::new());
                let connect = || mysql_async::Conn::new(common::proxy_opts(port, None));
                let mut c = connect().await.map_err(|e| e.to_string());
                let mut n = 0;
                while Instant::now() < until {
                    n += 1;
                    let id = base + w * 1_000_000 + n;
                    let r = match c.as_mut() {
                        Ok(c) => write(c, id).await.map_err(|e| e.to_string()),
                        Err(e) => Err(e.clone()),
                    };
                    match r {
                        Ok(()) => acked.push(id),
                        Err(e) => {
                            failed.push(e);
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            c = connect().await.map_err(|e| e.to_string());
                        }
                    }
                }
                (acked, failed)
            })
        })
        .collect();
    let (mut acked, mut failed) = (Vec::new(), Vec::new());
    for t in tasks {
        let (a, f) = t.await.unwrap();
        acked.extend(a);
        failed.extend(f);
    }
    (acked, failed)
}

/// The ids of the rows of `st` on the server at `port` (the ledger's and
/// the partitions' there).
async fn ids_on(port: u16) -> std::collections::HashSet<i64> {
    let mut c = common::replication::server(port).await;
    let tables: Vec<String> = c
        .query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'st'")
        .await
        .unwrap();
    let mut ids = std::collections::HashSet::new();
    for t in tables {
        let got: Vec<i64> = c.query(format!("SELECT id FROM st.`{t}`")).await.unwrap();
        ids.extend(got);
    }
    ids
}

/// One case: a set of servers, its backends (name, primary, replicas), the
/// backend failed over and its servers' indexes in the set (the primary
/// at start first).
struct Case {
    set: &'static OnceLock<Mutex<Vec<MariaDb>>>,
    ports: [u16; 4],
    backends: Vec<(&'static str, u16, Vec<u16>)>,
    backend: &'static str,
    servers: Vec<usize>,
}

impl Case {
    fn config(&self, failover_after_ms: u64) -> hscale::Config {
        let list: Vec<(&str, u16, &[u16])> = self
            .backends
            .iter()
            .map(|(n, p, r)| (*n, *p, r.as_slice()))
            .collect();
        let mut c = common::replication::config(&list);
        c.proxy.failover_after_ms = failover_after_ms;
        c
    }
}

/// The case: a proxy SIGSTOPped through the main backend's
/// failover, continued once the old primary is back and writable, writes
/// nothing to it (checked on that server: its own GTID does not move and
/// it holds none of the rows) and serves through the new primary.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_proxy_stopped_through_a_failover_writes_nothing_to_the_returning_old_primary() {
    let _serial = SERIAL.lock().await;
    let p = keep(
        &MAIN_SET,
        common::replication::main_set(&base_dir(), "m-").await,
    );
    stopped_through_failover(Case {
        set: &MAIN_SET,
        ports: p,
        backends: vec![
            ("shard0", p[0], vec![p[1]]),
            ("shard1", p[2], vec![]),
            ("shard2", p[3], vec![]),
        ],
        backend: "shard0",
        servers: vec![0, 1],
    })
    .await;
}

/// The same for a backend other than the main one: shard1's primary
/// killed while a proxy is stopped, failed over to one of its two
/// replicas by another proxy, restarted writable; the continued proxy
/// writes nothing there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_proxy_stopped_through_another_backends_failover_writes_nothing_to_its_old_primary() {
    let _serial = SERIAL.lock().await;
    let p = keep(
        &SHARD_SET,
        common::replication::shard_set(&base_dir(), "s-").await,
    );
    stopped_through_failover(Case {
        set: &SHARD_SET,
        ports: p,
        backends: vec![("shard0", p[0], vec![]), ("shard1", p[1], vec![p[2], p[3]])],
        backend: "shard1",
        servers: vec![1, 2, 3],
    })
    .await;
}

/// A proxy stopped through `case`'s failover, continued once the old
/// primary is back: nothing lands on the old primary, everything on the
/// new one.
async fn stopped_through_failover(case: Case) {
    let ports = case.ports;
    let old_port = ports[case.servers[0]];
    let mut deciding = hscale::RunningProxy::start(case.config(1_000), "127.0.0.1:0").unwrap();
    let mut admin = common::replication::connect(deciding.addr.port()).await;
    let last = case.backends.len() - 1;
    for sql in [
        "CREATE DATABASE st".to_string(),
        "CREATE TABLE st.pair (id BIGINT, k INT, PRIMARY KEY (id, k))".to_string(),
        "HSCALE SETUP_TABLE('st.pair', 'k', 'pair_default', 'shard0', 'NONE()')".to_string(),
        format!("HSCALE ADD_PARTITION('st.pair', 'p1', '1', 'shard{last}')"),
        "CREATE TABLE st.ledger (id BIGINT PRIMARY KEY)".to_string(),
    ] {
        admin.query_drop(sql).await.unwrap();
    }
    drop(admin);
    // Its reload and heartbeat not due when it runs again: only its
    // clients' statements meet the old primary first (a reload that
    // fails on a dead pooled connection would ask the main backend's
    // servers and move it too).
    let mut stale = case.config(0);
    stale.proxy.reload_interval_ms = 60_000;
    stale.proxy.heartbeat_interval_ms = 60_000;
    let stale = common::ProxyProcess::start(stale);
    // The stale proxy holds connections to the old primary and names it.
    let until = Instant::now() + Duration::from_millis(700);
    let (before, failed) = writers(stale.port, 0, until).await;
    assert!(!before.is_empty() && failed.is_empty(), "{failed:?}");
    assert_eq!(primary(stale.port, case.backend).await, addr(old_port));

    signal(stale.child.id(), libc::SIGSTOP);
    case.set.get().unwrap().lock().unwrap()[case.servers[0]].kill();
    let deadline = Instant::now() + Duration::from_secs(30);
    let new = loop {
        let now = primary(deciding.addr.port(), case.backend).await;
        if now != addr(old_port) {
            break now;
        }
        assert!(Instant::now() < deadline, "no failover");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let new_port: u16 = new.rsplit(':').next().unwrap().parse().unwrap();
    assert!(
        case.servers[1..].iter().any(|&i| ports[i] == new_port),
        "{new}"
    );
    let mut c = common::replication::connect(deciding.addr.port()).await;
    write(&mut c, 900_000_000).await.unwrap();
    drop(c);
    // No proxy is left whose replica monitor would fence the old primary.
    deciding.shutdown(Duration::from_secs(5));
    let (set, killed) = (case.set, case.servers[0]);
    tokio::task::spawn_blocking(move || {
        let mut s = set.get().unwrap().lock().unwrap();
        // (Its init file's writes would wait for a replica's
        // acknowledgement: none replicates from it.)
        s[killed]
            .extra
            .push("--rpl-semi-sync-master-enabled=OFF".to_string());
        s[killed].restart().unwrap()
    })
    .await
    .unwrap();
    let mut old = common::replication::server(old_port).await;
    let ro: i64 = old
        .query_first("SELECT @@read_only")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        ro, 0,
        "the old primary is back writable: the window is open"
    );
    let untouched = common::replication::own_gtid(old_port).await;
    let on_old = ids_on(old_port).await;

    // Clients wait on the stopped proxy; it runs again with them.
    let until = Instant::now() + Duration::from_millis(3_000);
    let writing = tokio::spawn(writers(stale.port, 100_000_000, until));
    tokio::time::sleep(Duration::from_millis(200)).await;
    signal(stale.child.id(), libc::SIGCONT);
    let (after, failed) = writing.await.unwrap();
    println!(
        "{}: after SIGCONT {} transactions acknowledged, {} failed: {:?}",
        case.backend,
        after.len(),
        failed.len(),
        failed.iter().take(3).collect::<Vec<_>>()
    );
    assert_eq!(
        common::replication::own_gtid(old_port).await,
        untouched,
        "the old primary wrote nothing of its own"
    );
    assert_eq!(
        ids_on(old_port).await,
        on_old,
        "no row landed on the old primary"
    );
    assert!(!after.is_empty(), "the continued proxy writes again");
    let on_new = ids_on(new_port).await;
    let lost: Vec<&i64> = after.iter().filter(|id| !on_new.contains(id)).collect();
    assert!(lost.is_empty(), "acknowledged rows not on {new}: {lost:?}");
    assert_eq!(primary(stale.port, case.backend).await, new);
    let ro: i64 = old
        .query_first("SELECT @@read_only")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ro, 1, "the old primary was fenced");
}
