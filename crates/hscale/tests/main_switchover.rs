#![allow(clippy::unwrap_used)]
//! The main backend switched over (issue 34 item 4): it holds the
//! dictionary, the journal, the decisions of transactions across backends
//! whose home branch is on it, and the sequences. Writers through two
//! proxies, the main backend switched to its replica and back: nothing
//! acknowledged lost, every transaction across backends all-or-nothing on
//! the servers, generated ids unique; a proxy started after the switch
//! (its config naming the old primary) finds the new one; a proxy stopped
//! (SIGSTOP) during the switch writes nothing to the old primary once it
//! runs again (the fencing hole, item 2).
//!
//! The main backend killed (SIGKILL) under writes with `failover_after_ms`
//! set: its replica takes over, nothing acknowledged is lost, the old
//! primary restarted is fenced and rejoined by hand as documented.
//!
//! Servers of this binary's own: the main backend's two servers (m1, its
//! primary at start, and m2 replicating from it, both with a binary log and
//! semi-synchronous replication), shard1 and shard2.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hscale::playground::mariadb::MariaDb;
use mysql_async::prelude::*;

/// m1, m2, shard1, shard2.
static SERVERS: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();
/// The failover test's own (it kills the main backend's primary).
static FAILOVER_SERVERS: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();
/// The failovers cut short's own, one set each.
static CUT_PROMOTE_SERVERS: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();
static CUT_ADDRESS_SERVERS: OnceLock<Mutex<Vec<MariaDb>>> = OnceLock::new();
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

extern "C" fn stop_servers() {
    for set in [
        &SERVERS,
        &FAILOVER_SERVERS,
        &CUT_PROMOTE_SERVERS,
        &CUT_ADDRESS_SERVERS,
    ] {
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
    std::env::temp_dir().join(format!("hscale-main-switchover-{}", std::process::id()))
}

async fn server(port: u16) -> mysql_async::Conn {
    common::replication::server(port).await
}

async fn connect(port: u16) -> mysql_async::Conn {
    common::replication::connect(port).await
}

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

/// Ports of m1, m2, shard1, shard2; started once, m2 replicating from m1.
async fn servers() -> [u16; 4] {
    servers_of(&SERVERS, "").await
}

/// [`servers`] of the set `set`, their directories named with `tag`.
async fn servers_of(set: &'static OnceLock<Mutex<Vec<MariaDb>>>, tag: &'static str) -> [u16; 4] {
    if let Some(m) = set.get() {
        let s = m.lock().unwrap();
        return [s[0].port, s[1].port, s[2].port, s[3].port];
    }
    let s = common::replication::main_set(&base_dir(), tag).await;
    let ports = [s[0].port, s[1].port, s[2].port, s[3].port];
    let is_first = [
        &SERVERS,
        &FAILOVER_SERVERS,
        &CUT_PROMOTE_SERVERS,
        &CUT_ADDRESS_SERVERS,
    ]
    .iter()
    .all(|s| s.get().is_none());
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
    common::replication::config(&[
        ("shard0", ports[0], &[ports[1]]),
        ("shard1", ports[2], &[]),
        ("shard2", ports[3], &[]),
    ])
}

/// The main backend's primary as `HSCALE SHOW BACKENDS` shows it.
async fn main_primary(c: &mut mysql_async::Conn) -> String {
    let rows: Vec<mysql_async::Row> = c.query("HSCALE SHOW BACKENDS").await.unwrap();
    rows.iter()
        .find(|r| r.get::<String, _>(0).as_deref() == Some("shard0"))
        .and_then(|r| r.get::<String, _>(1))
        .unwrap()
}

/// `ms.pair` (id, k) partitioned by k (1 on shard1, 2 on shard2), `ms.seqd`
/// (an AUTO_INCREMENT id, partitioned the same way: a sequence on the main
/// backend) and `ms.ledger` (unpartitioned: on the main backend). Made
/// once, whichever test runs first.
async fn set_up(admin: &mut mysql_async::Conn) {
    let parts: Vec<mysql_async::Row> = admin.query("HSCALE SHOW PARTITIONS").await.unwrap();
    if !parts.is_empty() {
        return;
    }
    for sql in [
        "CREATE DATABASE ms",
        "CREATE TABLE ms.pair (id BIGINT, k INT, PRIMARY KEY (id, k))",
        "HSCALE SETUP_TABLE('ms.pair', 'k', 'pair_default', 'shard0', 'NONE()')",
        "HSCALE ADD_PARTITION('ms.pair', 'p1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('ms.pair', 'p2', '2', 'shard2')",
        "CREATE TABLE ms.seqd (id BIGINT AUTO_INCREMENT, k INT, PRIMARY KEY (id, k))",
        "HSCALE SETUP_TABLE('ms.seqd', 'k', 'seqd_default', 'shard0', 'NONE()')",
        "HSCALE ADD_PARTITION('ms.seqd', 'p1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('ms.seqd', 'p2', '2', 'shard2')",
        "CREATE TABLE ms.ledger (id BIGINT PRIMARY KEY)",
    ] {
        admin.query_drop(sql).await.unwrap();
    }
}

/// What the writers were acknowledged: transactions across the three
/// backends (a ledger row on the main backend, the home branch with the
/// decision, and a pair row on shard1 and on shard2), generated ids.
#[derive(Default)]
struct Acked {
    txns: Vec<i64>,
    ids: Vec<i64>,
    failed: Vec<String>,
}

struct Writers {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Acked>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    /// Two writers per proxy; transaction ids `base + w * 1_000_000 + n`.
    fn start(proxies: &[u16], base: i64) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Acked::default()));
        let tasks = (0..2 * proxies.len())
            .map(|w| {
                let (stop, acked) = (stop.clone(), acked.clone());
                let port = proxies[w % proxies.len()];
                tokio::spawn(async move {
                    let mut c = connect(port).await;
                    let mut n = 0i64;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let id = base + w as i64 * 1_000_000 + n;
                        let txn = format!(
                            "BEGIN; INSERT INTO ms.ledger (id) VALUES ({id}); \
                             INSERT INTO ms.pair (id, k) VALUES ({id}, 1); \
                             INSERT INTO ms.pair (id, k) VALUES ({id}, 2); COMMIT"
                        );
                        let r = async {
                            for sql in txn.split("; ") {
                                c.query_drop(sql).await?;
                            }
                            acked.lock().unwrap().txns.push(id);
                            let k = 1 + n % 2;
                            c.query_drop(format!("INSERT INTO ms.seqd (k) VALUES ({k})"))
                                .await?;
                            let got = c.last_insert_id().unwrap_or(0) as i64;
                            acked.lock().unwrap().ids.push(got);
                            Ok::<(), mysql_async::Error>(())
                        }
                        .await;
                        if let Err(e) = r {
                            acked.lock().unwrap().failed.push(e.to_string());
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
                })
            })
            .collect();
        Writers { stop, acked, tasks }
    }

    fn count(&self) -> usize {
        self.acked.lock().unwrap().txns.len()
    }

    async fn finish(self) -> Acked {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        std::mem::take(&mut *self.acked.lock().unwrap())
    }
}

/// The ids of `table`'s rows on the server at `port`, from its physical
/// tables there (partitions and default table).
async fn ids_on(port: u16, prefix: &str) -> Vec<i64> {
    let mut c = server(port).await;
    let tables: Vec<String> = c
        .query(format!(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'ms' \
             AND TABLE_NAME LIKE '{prefix}%'"
        ))
        .await
        .unwrap();
    let mut ids = Vec::new();
    for t in tables {
        let got: Vec<i64> = c.query(format!("SELECT id FROM ms.`{t}`")).await.unwrap();
        ids.extend(got);
    }
    ids
}

/// The checks on the servers: every acknowledged transaction's three rows
/// are there (the ledger row on the main backend's primary `main`), and no
/// transaction is there in part; every acknowledged generated id is
/// stored, and no id twice.
async fn check_servers(ports: [u16; 4], main: u16, acked: &Acked) {
    let ledger: HashSet<i64> = ids_on(main, "ledger").await.into_iter().collect();
    let on1: HashSet<i64> = ids_on(ports[2], "pair").await.into_iter().collect();
    let on2: HashSet<i64> = ids_on(ports[3], "pair").await.into_iter().collect();
    let lost: Vec<&i64> = acked
        .txns
        .iter()
        .filter(|id| !(ledger.contains(id) && on1.contains(id) && on2.contains(id)))
        .collect();
    assert!(lost.is_empty(), "acknowledged transactions lost: {lost:?}");
    let partial: Vec<&i64> = ledger
        .symmetric_difference(&on1)
        .chain(on1.symmetric_difference(&on2))
        .collect();
    assert!(
        partial.is_empty(),
        "transactions committed in part: {partial:?}"
    );
    let mut stored = ids_on(ports[2], "seqd").await;
    stored.extend(ids_on(ports[3], "seqd").await);
    let unique: HashSet<i64> = stored.iter().copied().collect();
    assert_eq!(unique.len(), stored.len(), "a generated id stored twice");
    let missing: Vec<&i64> = acked.ids.iter().filter(|i| !unique.contains(i)).collect();
    assert!(missing.is_empty(), "acknowledged ids lost: {missing:?}");
}

/// `replica` has everything `primary` has, replicates from it and is
/// read-only.
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
    if reached != 0 {
        let status: Vec<mysql_async::Row> = r.query("SHOW SLAVE STATUS").await.unwrap();
        let field = |name: &str| {
            status
                .first()
                .and_then(|row| row.get::<Option<String>, _>(name).flatten())
                .unwrap_or_default()
        };
        let (own, state): (String, String) = r
            .query_first("SELECT @@gtid_binlog_pos, @@gtid_binlog_state")
            .await
            .unwrap()
            .unwrap();
        // Its last events: what it wrote that the primary lacks.
        let file: Option<String> = r
            .query_first("SHOW MASTER STATUS")
            .await
            .ok()
            .flatten()
            .map(|row: mysql_async::Row| row.get::<String, _>(0).unwrap_or_default());
        if let Some(file) = file {
            let events: Vec<mysql_async::Row> = r
                .query(format!("SHOW BINLOG EVENTS IN '{file}'"))
                .await
                .unwrap_or_default();
            for e in events.iter().rev().take(30).rev() {
                eprintln!(
                    "  {replica} binlog: {:?} {:?}",
                    e.get::<Option<String>, _>(2).flatten(),
                    e.get::<Option<String>, _>(5).flatten()
                );
            }
        }
        panic!(
            "the replica on {replica} did not reach {pos}: its own position {own} (state {state}); IO {} SQL {}, last IO error {:?}, last SQL error {:?}",
            field("Slave_IO_Running"),
            field("Slave_SQL_Running"),
            field("Last_IO_Error"),
            field("Last_SQL_Error"),
        );
    }
    let ro: i64 = r.query_first("SELECT @@read_only").await.unwrap().unwrap();
    assert_eq!(ro, 1, "a replica is read-only");
    let count = "SELECT COUNT(*) FROM ms.ledger";
    let a: i64 = p.query_first(count).await.unwrap().unwrap();
    let b: i64 = r.query_first(count).await.unwrap().unwrap();
    assert_eq!(a, b);
}

/// The example (item 4): writers through two proxies, the main
/// backend switched to its replica and back. Every acknowledged
/// transaction across backends (its decision on the main backend) is on
/// the servers whole, none in part; every generated id once; both proxies
/// follow. Between the two switches a third proxy, whose config still
/// names the old primary, starts and finds the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_main_backend_switched_over_and_back_under_writes_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let ports = servers().await;
    let p1 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let p2 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let proxies = [p1.addr.port(), p2.addr.port()];
    let mut admin = connect(proxies[0]).await;
    set_up(&mut admin).await;
    let (first, second) = if main_primary(&mut admin).await == addr(ports[0]) {
        (ports[0], ports[1])
    } else {
        (ports[1], ports[0])
    };

    for (round, (from, to)) in [(first, second), (second, first)].into_iter().enumerate() {
        let writers = Writers::start(&proxies, round as i64 * 100_000_000);
        tokio::time::sleep(Duration::from_millis(700)).await;
        let before = writers.count();
        assert!(before > 0, "writes before the switch");
        let started = Instant::now();
        let info: Option<String> = admin
            .query_first(format!("HSCALE SWITCHOVER('shard0', '{}')", addr(to)))
            .await
            .unwrap()
            .map(|r: mysql_async::Row| format!("{r:?}"));
        let took = started.elapsed();
        let at_switch = writers.count();
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let acked = writers.finish().await;
        println!(
            "round {round}: switchover of the main backend {} ms ({info:?}); {} transactions acknowledged ({before} before, {} during, {} after), {} ids, {} failed: {:?}",
            took.as_millis(),
            acked.txns.len(),
            at_switch - before,
            acked.txns.len() - at_switch,
            acked.ids.len(),
            acked.failed.len(),
            acked.failed.iter().take(3).collect::<Vec<_>>()
        );
        assert!(
            acked.txns.len() > at_switch,
            "writes went on after the switch"
        );
        // Prepared branches of transactions whose home was cut by the
        // switch are resolved by recovery before the check.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        check_servers(ports, to, &acked).await;
        for port in proxies {
            let mut c = connect(port).await;
            assert_eq!(main_primary(&mut c).await, addr(to), "proxy {port}");
        }
        assert_replicating(to, from).await;

        if round == 0 {
            // A proxy started now, its config naming the old primary
            // (a read-only replica now), finds the new one and writes
            // there.
            let p3 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
            let mut c = connect(p3.addr.port()).await;
            assert_eq!(main_primary(&mut c).await, addr(to));
            for sql in [
                "BEGIN",
                "INSERT INTO ms.ledger (id) VALUES (999000001)",
                "INSERT INTO ms.pair (id, k) VALUES (999000001, 1)",
                "INSERT INTO ms.pair (id, k) VALUES (999000001, 2)",
                "COMMIT",
            ] {
                c.query_drop(sql).await.unwrap();
            }
            let mut new = server(to).await;
            let n: i64 = new
                .query_first("SELECT COUNT(*) FROM ms.ledger WHERE id = 999000001")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(n, 1, "the new proxy wrote to the new primary");
        }
    }
}

async fn own_gtid(port: u16) -> String {
    common::replication::own_gtid(port).await
}

/// Item 2, the fencing hole: a proxy (a process of its own) stopped with
/// SIGSTOP while another switches the main backend over, then continued,
/// writes nothing to the old primary: its connections there were killed,
/// and the new ones find it read-only, so it follows the new primary.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_proxy_stopped_during_the_switch_writes_nothing_to_the_old_primary() {
    let _serial = SERIAL.lock().await;
    let ports = servers().await;
    let p1 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let mut admin = connect(p1.addr.port()).await;
    set_up(&mut admin).await;
    let p2 = common::ProxyProcess::start(config(ports));
    let (from, to) = if main_primary(&mut admin).await == addr(ports[0]) {
        (ports[0], ports[1])
    } else {
        (ports[1], ports[0])
    };
    // p2 holds connections to the main backend and a sequence block.
    let writers = Writers::start(&[p2.port], 200_000_000);
    tokio::time::sleep(Duration::from_millis(700)).await;
    let before = writers.finish().await;
    assert!(!before.txns.is_empty());
    let pid = p2.child.id() as i32;
    #[allow(unsafe_code)]
    // SAFETY: signalling a child process this test started.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
    }
    let switched = admin
        .query_drop(format!("HSCALE SWITCHOVER('shard0', '{}')", addr(to)))
        .await;
    // (The switch wrote its journal row there before the fence.)
    let untouched = own_gtid(from).await;
    #[allow(unsafe_code)]
    // SAFETY: as above.
    unsafe {
        libc::kill(pid, libc::SIGCONT);
    }
    switched.unwrap();
    let writers = Writers::start(&[p2.port], 300_000_000);
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let after = writers.finish().await;
    println!(
        "after SIGCONT: {} transactions acknowledged, {} failed: {:?}",
        after.txns.len(),
        after.failed.len(),
        after.failed.iter().take(3).collect::<Vec<_>>()
    );
    assert!(!after.txns.is_empty(), "the continued proxy writes again");
    assert_eq!(
        own_gtid(from).await,
        untouched,
        "the old primary wrote nothing of its own"
    );
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    check_servers(ports, to, &after).await;
    assert_replicating(to, from).await;
    // Back as it was.
    admin
        .query_drop(format!("HSCALE SWITCHOVER('shard0', '{}')", addr(from)))
        .await
        .unwrap();
}

/// Item 3: a proxy that dies between the promotion and the address
/// change (a failpoint ends its process there) leaves the old primary
/// read-only and the replica no longer replicating; another proxy finds
/// the journal's row and undoes the switch: the old primary takes writes
/// again, the replica replicates again, the row says `undone`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_switch_cut_short_after_the_promotion_is_undone_by_another_proxy() {
    cut_short("after_promote").await;
}

/// Item 3, the other half: a proxy that dies after the address change,
/// before the new primary is writable; another proxy follows the new
/// record and finishes the switch: the new primary writable, the old one
/// its replica, the row `done`, and it catches up with the new primary.
///
/// It failed before the owner killed the old primary's other connections
/// with its read lock: the other proxy's heartbeat, through a connection
/// pooled before the fence, wrote to the old primary once the owner's
/// death released the lock (GTID 0-1-181 after the journal row's
/// 0-1-180), so the old primary held a transaction the new one lacked and
/// its replication from it stopped with error 1236.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_switch_cut_short_after_the_address_change_is_finished_by_another_proxy() {
    cut_short("after_address").await;
}

/// A switchover of the main backend through a proxy process that ends at
/// `failpoint`; another proxy repairs it (undone before the address
/// change, finished after).
async fn cut_short(failpoint: &str) {
    let is_finished = failpoint == "after_address";
    let _serial = SERIAL.lock().await;
    let ports = servers().await;
    let p1 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let mut admin = connect(p1.addr.port()).await;
    set_up(&mut admin).await;
    let (from, to) = if main_primary(&mut admin).await == addr(ports[0]) {
        (ports[0], ports[1])
    } else {
        (ports[1], ports[0])
    };
    let mut dying =
        common::ProxyProcess::start_with_env(config(ports), &[("HSCALE_FAILPOINT", failpoint)]);
    let mut c = connect(dying.port).await;
    let e = c
        .query_drop(format!("HSCALE SWITCHOVER('shard0', '{}')", addr(to)))
        .await;
    assert!(e.is_err(), "the proxy died in the switch");
    let status = dying.child.wait().unwrap();
    assert_eq!(status.code(), Some(86), "ended at the failpoint");
    let cut = Instant::now();
    let (primary, replica) = if is_finished { (to, from) } else { (from, to) };
    let want = if is_finished { "done" } else { "undone" };
    let mut old = server(primary).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let state: Option<String> = old
            .query_first("SELECT state FROM hscale.switches WHERE backend = 'shard0'")
            .await
            .unwrap();
        if state.as_deref() == Some(want) {
            break;
        }
        assert!(Instant::now() < deadline, "not {want}: {state:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "the switch cut short {failpoint} was {want} {} ms after",
        cut.elapsed().as_millis()
    );
    // Writes through the other proxy succeed.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut w = connect(p1.addr.port()).await;
    let mut n = 0;
    loop {
        n += 1;
        let id = 400_000_000 + n;
        let r = async {
            for sql in [
                "BEGIN".to_string(),
                format!("INSERT INTO ms.ledger (id) VALUES ({id})"),
                format!("INSERT INTO ms.pair (id, k) VALUES ({id}, 1)"),
                format!("INSERT INTO ms.pair (id, k) VALUES ({id}, 2)"),
                "COMMIT".to_string(),
            ] {
                w.query_drop(sql).await?;
            }
            Ok::<(), mysql_async::Error>(())
        }
        .await;
        if r.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "no write after the cut: {r:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        w = connect(p1.addr.port()).await;
    }
    assert_eq!(main_primary(&mut admin).await, addr(primary));
    let ro: i64 = old
        .query_first("SELECT @@read_only")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ro, 0, "the primary is writable");
    assert_replicating(primary, replica).await;
    // HSCALE REJOIN of a server that has nothing the primary lacks (here
    // its replica): it replicates from the primary again; of the primary
    // itself: refused.
    admin
        .query_drop(format!("HSCALE REJOIN('shard0', '{}')", addr(replica)))
        .await
        .unwrap();
    assert_replicating(primary, replica).await;
    let e = admin
        .query_drop(format!("HSCALE REJOIN('shard0', '{}')", addr(primary)))
        .await
        .unwrap_err();
    assert_eq!(common::code(&e), 1210);
}

/// Item 4, automatic failover of the main backend: m1 (or whichever is the
/// primary) killed with SIGKILL under writes through two proxies with
/// `failover_after_ms = 2000` and semi-synchronous replication; one proxy
/// promotes the replica, the other follows; every acknowledged transaction
/// across backends (decision on the main backend) is on the servers whole
/// and none in part, every generated id once; the old primary, restarted,
/// is made read-only and written by no one; a proxy started afterwards,
/// its config naming the old primary, finds the new one; the old primary
/// is then rejoined as a replica by HSCALE REJOIN, or refused by it when it
/// holds transactions no replica received.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_main_backend_killed_fails_over_and_nothing_acknowledged_is_lost() {
    let _serial = SERIAL.lock().await;
    let ports = servers_of(&FAILOVER_SERVERS, "fo-").await;
    let with_failover = || {
        let mut c = config(ports);
        c.proxy.failover_after_ms = 2_000;
        c
    };
    let p1 = hscale::RunningProxy::start(with_failover(), "127.0.0.1:0").unwrap();
    let p2 = hscale::RunningProxy::start(with_failover(), "127.0.0.1:0").unwrap();
    let proxies = [p1.addr.port(), p2.addr.port()];
    let mut admin = connect(proxies[0]).await;
    set_up(&mut admin).await;
    let (from, to, dead) = if main_primary(&mut admin).await == addr(ports[0]) {
        (ports[0], ports[1], 0)
    } else {
        (ports[1], ports[0], 1)
    };
    let writers = Writers::start(&proxies, 500_000_000);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert!(writers.count() > 0, "writes before the kill");
    let killed_at = Instant::now();
    let at_kill = writers.count();
    FAILOVER_SERVERS.get().unwrap().lock().unwrap()[dead].kill();
    let deadline = Instant::now() + Duration::from_secs(40);
    while writers.count() < at_kill + 50 {
        assert!(
            Instant::now() < deadline,
            "no write succeeded after the kill"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let resumed = killed_at.elapsed();
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let acked = writers.finish().await;
    println!(
        "main backend failover: writes resumed {} ms after the kill (failover_after_ms 2000); {} transactions acknowledged, {} failed: {:?}",
        resumed.as_millis(),
        acked.txns.len(),
        acked.failed.len(),
        acked.failed.iter().take(2).collect::<Vec<_>>()
    );
    assert!(resumed < Duration::from_secs(15), "unavailable {resumed:?}");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    check_servers(ports, to, &acked).await;
    for port in proxies {
        let mut c = connect(port).await;
        assert_eq!(main_primary(&mut c).await, addr(to), "proxy {port}");
    }

    // The old primary returns: made read-only, written by no one.
    tokio::task::spawn_blocking(move || {
        FAILOVER_SERVERS.get().unwrap().lock().unwrap()[dead]
            .restart()
            .unwrap()
    })
    .await
    .unwrap();
    let mut old = server(from).await;
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
    let untouched = own_gtid(from).await;
    // A proxy started now, its config naming the old primary.
    let p3 = hscale::RunningProxy::start(config(ports), "127.0.0.1:0").unwrap();
    let mut c3 = connect(p3.addr.port()).await;
    assert_eq!(main_primary(&mut c3).await, addr(to));
    let writers = Writers::start(&[proxies[0], proxies[1], p3.addr.port()], 600_000_000);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let after = writers.finish().await;
    assert!(!after.txns.is_empty());
    assert_eq!(
        own_gtid(from).await,
        untouched,
        "nothing written to the old primary"
    );
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    check_servers(ports, to, &after).await;

    // HSCALE REJOIN: refused (1210, it stays read-only) when the old
    // primary holds a transaction the new one lacks (one it wrote to its
    // binary log but no replica had acknowledged when it was killed, so
    // never acknowledged to a client): it must be rebuilt; otherwise it
    // replicates from the new one.
    let (old_state, old_id): (String, i64) = old
        .query_first("SELECT @@gtid_binlog_state, @@server_id")
        .await
        .unwrap()
        .unwrap();
    let mut new = server(to).await;
    let new_state: String = new
        .query_first("SELECT @@gtid_binlog_state")
        .await
        .unwrap()
        .unwrap();
    let last_of = |state: &str| {
        state
            .split(',')
            .find(|g| g.split('-').nth(1) == Some(&old_id.to_string()))
            .map(str::to_string)
    };
    let rejoin = admin
        .query_drop(format!("HSCALE REJOIN('shard0', '{}')", addr(from)))
        .await;
    if last_of(&old_state) != last_of(&new_state) {
        println!(
            "the old primary holds transactions no replica received ({:?}, the new primary has {:?}): REJOIN refused it: {rejoin:?}",
            last_of(&old_state),
            last_of(&new_state)
        );
        assert_eq!(common::code(rejoin.as_ref().unwrap_err()), 1210);
        // (REJOIN killed the old primary's clients, this test's too.)
        let mut old = server(from).await;
        let ro: i64 = old
            .query_first("SELECT @@read_only")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ro, 1, "a refused server stays read-only");
        return;
    }
    rejoin.unwrap();
    assert_replicating(to, from).await;
}

/// Item 3 for an automatic failover: the deciding proxy (a process of its
/// own, `failover_after_ms` 1 s) dies between the promotion (the replica's
/// replication stopped, the journal's row written on it) and the
/// dictionary's change; the other proxy (`failover_after_ms` 8 s) carries
/// the failover on: the replica, which kept its replication settings, is
/// its candidate again. Nothing acknowledged before the kill is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failover_cut_short_after_the_promotion_is_finished_by_another_proxy() {
    failover_cut_short("after_promote", &CUT_PROMOTE_SERVERS, "cp-").await;
}

/// Item 3, the other half: the deciding proxy dies after the dictionary
/// (the main backend's record on the replica) names the replica, before
/// it is writable; the other proxy follows the record, finds the
/// journal's row there and finishes the switch (the replica writable,
/// its replication settings gone, the row `done`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failover_cut_short_after_the_address_change_is_finished_by_another_proxy() {
    failover_cut_short("after_address", &CUT_ADDRESS_SERVERS, "ca-").await;
}

/// The main backend's primary killed under a failover whose deciding
/// proxy ends at `failpoint`; another proxy finishes it.
async fn failover_cut_short(
    failpoint: &str,
    set: &'static OnceLock<Mutex<Vec<MariaDb>>>,
    tag: &'static str,
) {
    let _serial = SERIAL.lock().await;
    let ports = servers_of(set, tag).await;
    let with_failover = |ms: u64| {
        let mut c = config(ports);
        c.proxy.failover_after_ms = ms;
        c
    };
    let p1 = hscale::RunningProxy::start(with_failover(8_000), "127.0.0.1:0").unwrap();
    let mut admin = connect(p1.addr.port()).await;
    set_up(&mut admin).await;
    assert_eq!(main_primary(&mut admin).await, addr(ports[0]));
    let (writers, died, resumed) = common::replication::cut_short(
        with_failover(1_000),
        failpoint,
        |dying| Writers::start(&[p1.addr.port(), dying], 700_000_000),
        Writers::count,
        || set.get().unwrap().lock().unwrap()[0].kill(),
    )
    .await;
    let acked = writers.finish().await;
    println!(
        "a failover cut short {failpoint}: the deciding proxy died {} ms after the kill, writes resumed {} ms after the kill; {} transactions acknowledged",
        died.as_millis(),
        resumed.as_millis(),
        acked.txns.len()
    );
    assert_eq!(main_primary(&mut admin).await, addr(ports[1]));
    let mut new = server(ports[1]).await;
    let (ro, state): (i64, String) = new
        .query_first(
            "SELECT @@read_only, (SELECT state FROM hscale.switches WHERE backend = 'shard0')",
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ro, 0, "the new primary is writable");
    let status: Vec<mysql_async::Row> = new.query("SHOW SLAVE STATUS").await.unwrap();
    assert!(status.is_empty(), "the new primary replicates from no one");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut state = state;
    while state != "done" {
        assert!(Instant::now() < deadline, "the switch row is {state}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        state = new
            .query_first("SELECT state FROM hscale.switches WHERE backend = 'shard0'")
            .await
            .unwrap()
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    check_servers(ports, ports[1], &acked).await;
}
