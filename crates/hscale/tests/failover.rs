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

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use hscale::playground::mariadb::MariaDb;
use mysql_async::prelude::*;

/// main, shard1's first server (its primary at start), its two replicas.
static SERVERS: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();
/// The failovers cut short's own, one set each.
static CUT_PROMOTE_SERVERS: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();
static CUT_ADDRESS_SERVERS: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();
const SETS: [&OnceLock<Mutex<Vec<MariaDb>>>; 3] =
    [&SERVERS, &CUT_PROMOTE_SERVERS, &CUT_ADDRESS_SERVERS];

extern "C" fn stop_servers() {
    for set in SETS {
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
    std::env::temp_dir().join(format!("hscale-failover-{}", std::process::id()))
}

async fn server(port: u16) -> mysql_async::Conn {
    common::replication::server(port).await
}

/// Ports of main and shard1's three servers of the set `set`
/// (`common::replication::shard_set`, its directories named with `tag`);
/// started once, the second and third replicating from the first.
async fn servers_of(set: &'static OnceLock<Mutex<Vec<MariaDb>>>, tag: &str) -> [u16; 4] {
    let s = common::replication::shard_set(&base_dir(), tag).await;
    let ports = [s[0].port, s[1].port, s[2].port, s[3].port];
    let is_first = SETS.iter().all(|s| s.get().is_none());
    if set.set(Mutex::new(s)).is_ok() && is_first {
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

use common::replication::Writers;

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

/// `fo.t` partitioned by k, its partition 1 on shard1.
async fn set_up(admin: &mut mysql_async::Conn) {
    for sql in [
        "CREATE DATABASE fo",
        "CREATE TABLE fo.t (id BIGINT, k INT, v INT, PRIMARY KEY (id, k))",
        "HSCALE SETUP_TABLE('fo.t', 'k', 't_default', 'shard0', 'NONE()')",
        "HSCALE ADD_PARTITION('fo.t', 'p1', '1', 'shard1')",
    ] {
        admin.query_drop(sql).await.unwrap();
    }
}

/// The rows of the partition on the server at `port`: every id in
/// `acked` is there, and none twice.
async fn assert_all_once(port: u16, acked: &[(i64, Instant)]) {
    let mut c = server(port).await;
    let table = physical(&mut c).await;
    let ids: Vec<i64> = c.query(format!("SELECT id FROM fo.{table}")).await.unwrap();
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
}

/// The writers' statement: row `id` of writer `w` in the partition on
/// shard1.
fn row(id: i64, w: i64) -> String {
    format!("INSERT INTO fo.t (id, k, v) VALUES ({id}, 1, {w})")
}

/// The example: the primary of a partition killed (SIGKILL) under
/// writes through two proxies, semi-synchronous replication on. After the
/// failover every acknowledged row is on the new primary, once; the
/// partition was unavailable at most 10 s (printed); the old primary,
/// restarted, is made read-only and receives no write through either
/// proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_primary_is_replaced_and_nothing_acknowledged_is_lost() {
    let ports = servers_of(&SERVERS, "").await;
    let p1 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let p2 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let proxies = [p1.addr.port(), p2.addr.port()];
    let mut admin = connect(proxies[0]).await;
    set_up(&mut admin).await;
    assert_eq!(primary_of_shard1(&mut admin).await, addr(ports[1]));

    let writers = Writers::start(proxies, 0, row);
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
    assert_all_once(new_port, &acked).await;
    let mut new = server(new_port).await;
    let table = physical(&mut new).await;
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
    let writers = Writers::start(proxies, 10_000_000, row);
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

/// Issue 34 item 3 for a backend other than the main one: the deciding
/// proxy (a process of its own, `failover_after_ms` 1 s) dies between the
/// promotion (the journal's row on the main backend, the chosen replica's
/// replication stopped) and the dictionary's change; the other proxy
/// (`failover_after_ms` 8 s) carries the failover on, the replica that
/// kept its replication settings being a candidate again. Nothing
/// acknowledged is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failover_cut_short_after_the_promotion_is_finished_by_another_proxy() {
    failover_cut_short("after_promote", &CUT_PROMOTE_SERVERS, "cp-").await;
}

/// The other half: the deciding proxy dies after the dictionary names
/// the replica, before it is writable; the other proxy's reload finds the
/// journal's row and finishes the switch (the replica writable, its
/// replication settings gone, the backend's other replica repointed to
/// it, the row `done`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failover_cut_short_after_the_address_change_is_finished_by_another_proxy() {
    failover_cut_short("after_address", &CUT_ADDRESS_SERVERS, "ca-").await;
}

/// shard1's primary killed under a failover whose deciding proxy ends at
/// `failpoint`; the other proxy finishes it.
async fn failover_cut_short(
    failpoint: &str,
    set: &'static OnceLock<Mutex<Vec<MariaDb>>>,
    tag: &str,
) {
    let ports = servers_of(set, tag).await;
    let with_failover = |ms: u64| {
        let mut c = config(ports);
        c.proxy.failover_after_ms = ms;
        c
    };
    let p1 = hscale::RunningProxy::start(with_failover(8_000), "127.0.0.1:0").unwrap();
    let mut admin = connect(p1.addr.port()).await;
    set_up(&mut admin).await;
    let (writers, died, resumed) = common::replication::cut_short(
        with_failover(1_000),
        failpoint,
        |dying| Writers::start([p1.addr.port(), dying], 0, row),
        Writers::acked,
        || set.get().unwrap().lock().unwrap()[1].kill(),
    )
    .await;
    let (acked, failed) = writers.finish().await;
    println!(
        "a failover of shard1 cut short {failpoint}: the deciding proxy died {} ms after the kill, writes resumed {} ms after the kill; {} writes acknowledged, {} failed",
        died.as_millis(),
        resumed.as_millis(),
        acked.len(),
        failed.len()
    );
    let primary = primary_of_shard1(&mut admin).await;
    let (new_port, other) = if primary == addr(ports[2]) {
        (ports[2], ports[3])
    } else {
        assert_eq!(primary, addr(ports[3]), "a replica is the primary");
        (ports[3], ports[2])
    };
    let mut new = server(new_port).await;
    let ro: i64 = new
        .query_first("SELECT @@read_only")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ro, 0, "the new primary is writable");
    let status: Vec<mysql_async::Row> = new.query("SHOW SLAVE STATUS").await.unwrap();
    assert!(status.is_empty(), "the new primary replicates from no one");
    let mut main = server(ports[0]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state: Option<String> = main
            .query_first("SELECT state FROM hscale.switches WHERE backend = 'shard1'")
            .await
            .unwrap();
        if state.as_deref() == Some("done") {
            break;
        }
        assert!(Instant::now() < deadline, "the switch row is {state:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_all_once(new_port, &acked).await;
    // The backend's other replica replicates from the new primary.
    let pos: String = new
        .query_first("SELECT @@gtid_binlog_pos")
        .await
        .unwrap()
        .unwrap();
    let mut r = server(other).await;
    let reached: i64 = r
        .query_first(format!("SELECT MASTER_GTID_WAIT('{pos}', 20)"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        reached, 0,
        "the other replica caught up with the new primary"
    );
}
