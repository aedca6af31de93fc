#![allow(clippy::unwrap_used)]
//! Replicas per backend and reads routed to them (issue 34 item 2): two
//! primaries with binary logs, each with a replica (MariaDB GTID
//! replication), servers of this binary's own (binary logs would slow the
//! shared test cluster). Which server answered a read is its
//! `@@server_id` (primaries 1 and 2, their replicas 11 and 12), read
//! through hscale, which forwards it; partitioned reads carry it per row.
//!
//! Reads go to a replica only by the session's or the user's choice, only
//! plain reads outside transactions, never a backend the session wrote on,
//! and never a replica that is stopped, lagging past the bound or gone:
//! the primary answers then, without an error.

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use hscale::config::{BackendConfig, ReadFromName, UserConfig};
use hscale::playground::mariadb::MariaDb;
use mysql_async::prelude::*;

/// The servers: `primaries[i]` with `replicas[i]`.
struct Servers {
    primaries: Vec<MariaDb>,
    replicas: Vec<MariaDb>,
}

static SERVERS: OnceLock<Mutex<Servers>> = OnceLock::new();
/// One test at a time: they stop, lock and kill the same replicas.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

extern "C" fn stop_servers() {
    if let Some(m) = SERVERS.get() {
        if let Ok(mut guard) = m.lock() {
            let s = &mut *guard;
            for db in s.replicas.iter_mut().chain(s.primaries.iter_mut()) {
                db.stop();
            }
            let _ = std::fs::remove_dir_all(
                std::env::temp_dir().join(format!("hscale-replicas-{}", std::process::id())),
            );
        }
    }
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

/// (primary ports, replica ports), the servers started and replicating
/// on first use.
async fn servers() -> (Vec<u16>, Vec<u16>) {
    let ports = |s: &Servers| {
        (
            s.primaries.iter().map(|d| d.port).collect(),
            s.replicas.iter().map(|d| d.port).collect(),
        )
    };
    if let Some(m) = SERVERS.get() {
        return ports(&m.lock().unwrap());
    }
    let start = |name: String, args: Vec<String>| {
        std::thread::spawn(move || MariaDb::start_with(&base_dir(&name), &args).unwrap())
    };
    fn base_dir(name: &str) -> std::path::PathBuf {
        std::env::temp_dir()
            .join(format!("hscale-replicas-{}", std::process::id()))
            .join(name)
    }
    // A later --log-bin overrides the harness's --skip-log-bin.
    let primary_args = |id: u32| {
        vec![
            "--log-bin=primary-bin".to_string(),
            format!("--server-id={id}"),
            "--binlog-format=ROW".to_string(),
        ]
    };
    let handles: Vec<_> = (0..2)
        .map(|i| start(format!("primary{i}"), primary_args(i as u32 + 1)))
        .chain((0..2).map(|i| {
            start(
                format!("replica{i}"),
                vec![format!("--server-id={}", 11 + i)],
            )
        }))
        .collect();
    let mut all: Vec<MariaDb> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let replicas = all.split_off(2);
    let s = Servers {
        primaries: all,
        replicas,
    };
    for (p, r) in s.primaries.iter().zip(&s.replicas) {
        let mut pc = mysql_async::Conn::new(opts(p.port)).await.unwrap();
        let log_bin: i64 = pc.query_first("SELECT @@log_bin").await.unwrap().unwrap();
        assert_eq!(log_bin, 1, "--log-bin after --skip-log-bin turns it on");
        let pos: String = pc
            .query_first("SELECT @@gtid_binlog_pos")
            .await
            .unwrap()
            .unwrap();
        let mut rc = mysql_async::Conn::new(opts(r.port)).await.unwrap();
        // The fresh replica has the primary's history so far (the same
        // template): it starts after it.
        rc.query_drop(format!(
            "SET GLOBAL gtid_slave_pos = '{pos}'; \
             CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, \
             MASTER_USER = 'hscale', MASTER_PASSWORD = 'hscale', \
             MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1; START SLAVE",
            p.port
        ))
        .await
        .unwrap();
    }
    let out = ports(&s);
    if SERVERS.set(Mutex::new(s)).is_ok() {
        #[allow(unsafe_code)]
        // SAFETY: registering a plain extern "C" function with atexit.
        unsafe {
            libc::atexit(stop_servers);
        }
    }
    out
}

/// A proxy config over the servers: shard0 and shard1, each with its
/// replica; users `root` (reads from primaries) and `reader`
/// (`read_from = "replica"`).
fn config(primaries: &[u16], replicas: &[u16], max_lag_ms: u64) -> hscale::Config {
    let mut c = hscale::Config::parse("").unwrap();
    c.proxy.replica_check_interval_ms = 100;
    c.proxy.replica_max_lag_ms = max_lag_ms;
    c.proxy.health_check_interval_ms = 300;
    c.proxy.connect_timeout_ms = 1_000;
    c.proxy.backend_ping_timeout_ms = 1_000;
    c.proxy.workers = 2;
    c.users = vec![
        UserConfig {
            name: "root".into(),
            admin: true,
            ..Default::default()
        },
        UserConfig {
            name: "reader".into(),
            admin: true,
            read_from: Some(ReadFromName::Replica),
            ..Default::default()
        },
    ];
    c.backends = primaries
        .iter()
        .zip(replicas)
        .enumerate()
        .map(|(i, (p, r))| BackendConfig {
            name: format!("shard{i}"),
            address: format!("127.0.0.1:{p}"),
            user: "hscale".into(),
            password: "hscale".into(),
            min_connections: 1,
            max_connections: 16,
            replicas: vec![format!("127.0.0.1:{r}")],
            ..BackendConfig::default()
        })
        .collect();
    c
}

async fn connect(port: u16, user: &str) -> mysql_async::Conn {
    let o = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(""))
        .prefer_socket(false);
    mysql_async::Conn::new(o).await.unwrap()
}

type BackendRow = (
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// HSCALE SHOW BACKENDS until every replica's `usable` is `want` (10 s at
/// most); the rows.
async fn await_usable(c: &mut mysql_async::Conn, want: &[(&str, &str)]) -> Vec<BackendRow> {
    let start = std::time::Instant::now();
    loop {
        let rows: Vec<BackendRow> = c.query("HSCALE SHOW BACKENDS").await.unwrap();
        let is_there = want.iter().all(|(name, usable)| {
            rows.iter()
                .any(|r| r.0 == *name && r.9.as_deref() == Some(*usable))
        });
        if is_there {
            return rows;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "replicas not {want:?}: {rows:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const BOTH_USABLE: &[(&str, &str)] = &[("shard0/replica1", "yes"), ("shard1/replica1", "yes")];

/// The server that answers a table-free read, and the partitioned read's
/// rows with the server of each.
async fn answered_by(c: &mut mysql_async::Conn) -> (u32, Vec<(i32, u32)>) {
    let id: u32 = c.query_first("SELECT @@server_id").await.unwrap().unwrap();
    let rows: Vec<(i32, u32)> = c
        .query("SELECT id, @@server_id FROM rr.pt ORDER BY id")
        .await
        .unwrap();
    (id, rows)
}

/// The test database, made once through a proxy: `rr.pt` partitioned
/// by id (0 on shard0, 1 on shard1), `rr.plain` on the main backend.
async fn schema(proxy_port: u16) {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    DONE.get_or_init(|| async {
        let mut c = connect(proxy_port, "root").await;
        for sql in [
            "CREATE DATABASE rr",
            "CREATE TABLE rr.pt (id INT PRIMARY KEY, v INT)",
            "HSCALE SETUP_TABLE('rr.pt', 'id', 'pt_default', 'shard0', 'NONE()')",
            "HSCALE ADD_PARTITION('rr.pt', 'p1', '1', 'shard1')",
            "INSERT INTO rr.pt (id, v) VALUES (0, 0), (1, 10)",
            "CREATE TABLE rr.plain (id INT PRIMARY KEY)",
            "CREATE TABLE rr.blocker (id INT PRIMARY KEY)",
        ] {
            c.query_drop(sql).await.unwrap();
        }
    })
    .await;
}

/// A proxy, the schema, and both replicas usable and caught up.
async fn start(max_lag_ms: u64) -> (hscale::RunningProxy, u16) {
    let (p, r) = servers().await;
    let proxy = hscale::RunningProxy::start(config(&p, &r, max_lag_ms), "127.0.0.1:0").unwrap();
    let port = proxy.addr.port();
    schema(port).await;
    let mut admin = connect(port, "root").await;
    await_usable(&mut admin, BOTH_USABLE).await;
    for (pp, rp) in p.iter().zip(&r) {
        let mut pc = mysql_async::Conn::new(opts(*pp)).await.unwrap();
        let pos: String = pc
            .query_first("SELECT @@gtid_binlog_pos")
            .await
            .unwrap()
            .unwrap();
        let mut rc = mysql_async::Conn::new(opts(*rp)).await.unwrap();
        let reached: i64 = rc
            .query_first(format!("SELECT MASTER_GTID_WAIT('{pos}', 20)"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(reached, 0, "replica on {rp} did not reach {pos}");
    }
    (proxy, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_reads_go_to_the_primary() {
    let _serial = SERIAL.lock().await;
    let (_proxy, port) = start(1_000).await;
    let mut c = connect(port, "root").await;
    assert_eq!(answered_by(&mut c).await, (1, vec![(0, 1), (1, 2)]));
    // The replicas are listed, after the primaries, with their state.
    let rows = await_usable(&mut c, BOTH_USABLE).await;
    let names: Vec<(&str, &str, Option<&str>)> = rows
        .iter()
        .map(|r| (r.0.as_str(), r.6.as_str(), r.7.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("shard0", "primary", None),
            ("shard1", "primary", None),
            ("shard0/replica1", "replica", Some("shard0")),
            ("shard1/replica1", "replica", Some("shard1")),
        ]
    );
    assert!(rows[2].8.is_some(), "{rows:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_go_to_replicas_when_the_session_chooses() {
    let _serial = SERIAL.lock().await;
    let (_proxy, port) = start(1_000).await;
    let mut c = connect(port, "root").await;
    c.query_drop("SET hscale_read_from = 'replica'")
        .await
        .unwrap();
    // Partitioned reads: each backend's replica.
    assert_eq!(answered_by(&mut c).await, (11, vec![(0, 11), (1, 12)]));
    c.query_drop("SET SESSION hscale_read_from = 'primary'")
        .await
        .unwrap();
    assert_eq!(answered_by(&mut c).await, (1, vec![(0, 1), (1, 2)]));
    let e = c
        .query_drop("SET hscale_read_from = 'nearest'")
        .await
        .unwrap_err();
    match e {
        mysql_async::Error::Server(s) => assert_eq!(s.code, 1231, "{s:?}"),
        e => panic!("{e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_read_from_setting() {
    let _serial = SERIAL.lock().await;
    let (_proxy, port) = start(1_000).await;
    let mut c = connect(port, "reader").await;
    assert_eq!(answered_by(&mut c).await, (11, vec![(0, 11), (1, 12)]));
    c.query_drop("SET hscale_read_from = 'primary'")
        .await
        .unwrap();
    assert_eq!(answered_by(&mut c).await.0, 1);
    c.query_drop("SET hscale_read_from = DEFAULT")
        .await
        .unwrap();
    assert_eq!(answered_by(&mut c).await.0, 11);
    // A reset connection takes the user's setting again.
    c.query_drop("SET hscale_read_from = 'primary'")
        .await
        .unwrap();
    c.reset().await.unwrap();
    assert_eq!(answered_by(&mut c).await.0, 11);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_and_locking_reads_stay_on_the_primary() {
    let _serial = SERIAL.lock().await;
    let (_proxy, port) = start(1_000).await;
    let server = |sql: &'static str| async move {
        let mut c = connect(port, "reader").await;
        let rows: Vec<mysql_async::Row> = c.query(sql).await.unwrap();
        let first = rows.last().unwrap();
        first.get::<u32, _>(0).unwrap()
    };
    for sql in [
        "SELECT @@server_id FROM rr.pt WHERE id = 0 FOR UPDATE",
        "SELECT @@server_id FROM rr.pt WHERE id = 0 LOCK IN SHARE MODE",
        "SELECT @@server_id, @x := 1",
        "SELECT @@server_id, GET_LOCK('replicas_test', 0)",
        "SELECT @@server_id, LAST_INSERT_ID()",
    ] {
        assert_eq!(server(sql).await, 1, "{sql}");
    }
    // In a transaction, explicit or with autocommit off.
    let mut c = connect(port, "reader").await;
    c.query_drop("BEGIN").await.unwrap();
    let id: u32 = c.query_first("SELECT @@server_id").await.unwrap().unwrap();
    assert_eq!(id, 1);
    let rows: Vec<(i32, u32)> = c
        .query("SELECT id, @@server_id FROM rr.pt ORDER BY id")
        .await
        .unwrap();
    assert_eq!(rows, [(0, 1), (1, 2)]);
    c.query_drop("COMMIT").await.unwrap();
    let mut c = connect(port, "reader").await;
    c.query_drop("SET autocommit = 0").await.unwrap();
    let id: u32 = c.query_first("SELECT @@server_id").await.unwrap().unwrap();
    assert_eq!(id, 1);
    // A fresh session of the same user reads its replicas.
    let mut c = connect(port, "reader").await;
    assert_eq!(answered_by(&mut c).await.0, 11);
}

/// Runs `sql` on the server at `port` when dropped, so a test that fails
/// half-way leaves replication running for the next.
struct OnDrop(u16, &'static str);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let (port, sql) = (self.0, self.1);
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok(mut c) = mysql_async::Conn::new(opts(port)).await {
                    let _ = c.query_drop(sql).await;
                }
            })
        })
        .join();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_or_lagging_replica_is_not_used() {
    let _serial = SERIAL.lock().await;
    let (_proxy, port) = start(1_000).await;
    let (p, r) = servers().await;
    let mut c = connect(port, "reader").await;
    assert_eq!(answered_by(&mut c).await, (11, vec![(0, 11), (1, 12)]));

    // Stopped: its SQL thread.
    let mut r0 = mysql_async::Conn::new(opts(r[0])).await.unwrap();
    let restart = OnDrop(r[0], "START SLAVE");
    r0.query_drop("STOP SLAVE SQL_THREAD").await.unwrap();
    let rows = await_usable(&mut c, &[("shard0/replica1", "no")]).await;
    assert!(
        rows[2]
            .10
            .as_deref()
            .unwrap()
            .contains("Slave_SQL_Running = No"),
        "{rows:?}"
    );
    assert_eq!(answered_by(&mut c).await, (1, vec![(0, 1), (1, 12)]));
    r0.query_drop("START SLAVE SQL_THREAD").await.unwrap();
    await_usable(&mut c, BOTH_USABLE).await;
    assert_eq!(answered_by(&mut c).await, (11, vec![(0, 11), (1, 12)]));
    drop(restart);

    // Lagging: its SQL thread waits for a table the replica's own client
    // locked, while Seconds_Behind_Master grows past the bound (1 s).
    r0.query_drop("LOCK TABLES rr.blocker WRITE").await.unwrap();
    let mut p0 = mysql_async::Conn::new(opts(p[0])).await.unwrap();
    p0.query_drop("INSERT INTO rr.blocker VALUES (1)")
        .await
        .unwrap();
    let rows = await_usable(&mut c, &[("shard0/replica1", "no")]).await;
    assert!(
        rows[2].10.as_deref().unwrap().contains("lagging"),
        "{rows:?}"
    );
    assert_eq!(answered_by(&mut c).await, (1, vec![(0, 1), (1, 12)]));
    r0.query_drop("UNLOCK TABLES").await.unwrap();
    await_usable(&mut c, BOTH_USABLE).await;
    p0.query_drop("DELETE FROM rr.blocker").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_leaves_reads_to_the_primary() {
    let _serial = SERIAL.lock().await;
    let (_proxy, port) = start(1_000).await;
    let mut c = connect(port, "reader").await;
    assert_eq!(answered_by(&mut c).await, (11, vec![(0, 11), (1, 12)]));
    SERVERS.get().unwrap().lock().unwrap().replicas[1].kill();
    struct Restart;
    impl Drop for Restart {
        fn drop(&mut self) {
            let _ = SERVERS.get().unwrap().lock().unwrap().replicas[1].restart();
        }
    }
    let restart = Restart;
    // At once, before the monitor looks: the failed connection falls back.
    for _ in 0..20 {
        assert_eq!(answered_by(&mut c).await, (11, vec![(0, 11), (1, 2)]));
    }
    let rows = await_usable(&mut c, &[("shard1/replica1", "no")]).await;
    assert_eq!(rows[3].9.as_deref(), Some("no"), "{rows:?}");
    let mut fresh = connect(port, "reader").await;
    assert_eq!(answered_by(&mut fresh).await, (11, vec![(0, 11), (1, 2)]));
    // Back: it replicates again (it starts its replication at start) and
    // serves again.
    drop(restart);
    await_usable(&mut c, BOTH_USABLE).await;
    assert_eq!(answered_by(&mut c).await, (11, vec![(0, 11), (1, 12)]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_your_writes_while_the_replica_lags() {
    let _serial = SERIAL.lock().await;
    // A bound the lag stays under: the replicas stay usable.
    let (_proxy, port) = start(3_600_000).await;
    let (p, r) = servers().await;
    // Replica 0 holds its SQL thread on rr.blocker: what comes after
    // waits too, while the replica stays usable.
    let mut r0 = mysql_async::Conn::new(opts(r[0])).await.unwrap();
    let _unlock = OnDrop(r[0], "UNLOCK TABLES");
    r0.query_drop("LOCK TABLES rr.blocker WRITE").await.unwrap();
    let mut p0 = mysql_async::Conn::new(opts(p[0])).await.unwrap();
    p0.query_drop("INSERT INTO rr.blocker VALUES (2)")
        .await
        .unwrap();

    let mut writer = connect(port, "reader").await;
    let mut other = connect(port, "reader").await;
    assert_eq!(answered_by(&mut writer).await.0, 11);
    writer
        .query_drop("INSERT INTO rr.plain VALUES (7)")
        .await
        .unwrap();
    // The writer reads the main backend from its primary from now on...
    let seen: Option<i32> = writer
        .query_first("SELECT id FROM rr.plain WHERE id = 7")
        .await
        .unwrap();
    assert_eq!(seen, Some(7));
    assert_eq!(answered_by(&mut writer).await, (1, vec![(0, 1), (1, 12)]));
    // ... while a session that did not write reads the lagging replica.
    let seen: Option<i32> = other
        .query_first("SELECT id FROM rr.plain WHERE id = 7")
        .await
        .unwrap();
    assert_eq!(seen, None, "the replica's SQL thread is held");
    assert_eq!(answered_by(&mut other).await.0, 11);

    // A write on shard1's partition: shard1's reads from its primary.
    writer
        .query_drop("UPDATE rr.pt SET v = v + 1 WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(answered_by(&mut writer).await, (1, vec![(0, 1), (1, 2)]));

    r0.query_drop("UNLOCK TABLES").await.unwrap();
    p0.query_drop("DELETE FROM rr.blocker; DELETE FROM rr.plain")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_follow_the_same_rules() {
    let _serial = SERIAL.lock().await;
    let (_proxy, port) = start(1_000).await;
    let mut c = connect(port, "reader").await;
    assert_eq!((on(&mut c, 0).await, on(&mut c, 1).await), (11, 12));
    let locking = "SELECT @@server_id FROM rr.pt WHERE id = ? FOR UPDATE";
    let id: u32 = c.exec_first(locking, (0,)).await.unwrap().unwrap();
    assert_eq!(id, 1);
    // A prepared write on shard0: shard0's reads from its primary.
    c.exec_drop("UPDATE rr.pt SET v = v + 1 WHERE id = ?", (0,))
        .await
        .unwrap();
    assert_eq!((on(&mut c, 0).await, on(&mut c, 1).await), (1, 12));
}

/// The server a prepared read of `rr.pt`'s row `id` ran on.
async fn on(c: &mut mysql_async::Conn, id: i32) -> u32 {
    c.exec_first("SELECT @@server_id FROM rr.pt WHERE id = ?", (id,))
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_starts_a_replica_per_backend() {
    let _serial = SERIAL.lock().await;
    let cluster = tokio::task::spawn_blocking(|| {
        hscale::playground::Cluster::start(hscale::playground::ClusterOptions {
            shards: 2,
            replicas: 1,
            tweak: |c| c.proxy.replica_check_interval_ms = 100,
            ..Default::default()
        })
        .unwrap()
    })
    .await
    .unwrap();
    let port = cluster.proxy_port();
    let mut c = connect(port, "root").await;
    await_usable(&mut c, BOTH_USABLE).await;
    c.query_drop("CREATE DATABASE pg; CREATE TABLE pg.t (id INT PRIMARY KEY)")
        .await
        .unwrap();
    assert_eq!(cluster.replicas.len(), 2);
    c.query_drop("SET hscale_read_from = 'replica'")
        .await
        .unwrap();
    // The table reached the replica of the main backend, which answers.
    let start = std::time::Instant::now();
    loop {
        match c.query_drop("SELECT * FROM pg.t").await {
            Ok(()) => break,
            Err(e) => assert!(start.elapsed() < Duration::from_secs(10), "{e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let id: u32 = c.query_first("SELECT @@server_id").await.unwrap().unwrap();
    assert_eq!(id, 101, "shard0's replica answers");
    // Its replicas keep binary logs: shard1's can become its primary (the
    // demo's switchover), and the old primary its replica.
    c.query_drop("SET hscale_read_from = 'primary'")
        .await
        .unwrap();
    let replica = cluster.config.backends[1].replicas[0].clone();
    c.query_drop(format!("HSCALE SWITCHOVER('shard1', '{replica}')"))
        .await
        .unwrap();
    let rows: Vec<BackendRow> = c.query("HSCALE SHOW BACKENDS").await.unwrap();
    let shard1: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.0.starts_with("shard1"))
        .map(|r| (r.0.as_str(), r.1.as_str()))
        .collect();
    assert_eq!(
        shard1,
        [
            ("shard1", replica.as_str()),
            (
                "shard1/replica1",
                cluster.config.backends[1].address.as_str()
            )
        ]
    );
    drop(c);
    tokio::task::spawn_blocking(move || drop(cluster))
        .await
        .unwrap();
}

/// Issue 34 item 6, the demo's failover: a playground as `hscale
/// playground --demo --replicas 1 --failover-after-ms 1000` starts it,
/// shard1's primary killed (the playground prints its pid for that): its
/// replica becomes shard1's primary (`HSCALE SHOW BACKENDS`), and the
/// demo's orders of customer 7, on shard1, are read again, all of them,
/// and written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_demo_fails_over_a_killed_primary() {
    use hscale::playground::{demo_sharding, Cluster, ClusterOptions, DEMO_SQL};
    let _serial = SERIAL.lock().await;
    let mut cluster = tokio::task::spawn_blocking(|| {
        let c = Cluster::start(ClusterOptions {
            shards: 2,
            replicas: 1,
            failover_after_ms: 1_000,
            ..Default::default()
        })
        .unwrap();
        c.run_sql_on_backend(0, DEMO_SQL).unwrap();
        c.run_sql_through_proxy(&demo_sharding(2)).unwrap();
        c
    })
    .await
    .unwrap();
    let mut c = connect(cluster.proxy_port(), "root").await;
    let read = "SELECT id, quantity FROM demo.orders WHERE customer_id = 7 ORDER BY id";
    let before: Vec<(i32, i32)> = c.query(read).await.unwrap();
    assert!(!before.is_empty(), "customer 7 has orders");
    // The replica has everything before its primary dies (the playground
    // replicates asynchronously).
    let b = &cluster.config.backends[1];
    let server = |address: &str| {
        let (host, port) = address.rsplit_once(':').unwrap();
        mysql_async::OptsBuilder::default()
            .ip_or_hostname(host.to_string())
            .tcp_port(port.parse().unwrap())
            .user(Some(b.user.clone()))
            .pass(Some(b.password.clone()))
            .prefer_socket(false)
    };
    let mut primary = mysql_async::Conn::new(server(&b.address)).await.unwrap();
    let pos: String = primary
        .query_first("SELECT @@gtid_binlog_pos")
        .await
        .unwrap()
        .unwrap();
    drop(primary);
    let replica = b.replicas[0].clone();
    let mut r = mysql_async::Conn::new(server(&replica)).await.unwrap();
    let reached: i64 = r
        .query_first(format!("SELECT MASTER_GTID_WAIT('{pos}', 20)"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reached, 0);
    drop(r);
    let killed = std::time::Instant::now();
    cluster.servers[1].kill();
    loop {
        let rows: Vec<BackendRow> = c.query("HSCALE SHOW BACKENDS").await.unwrap();
        if rows.iter().any(|r| r.0 == "shard1" && r.1 == replica) {
            break;
        }
        assert!(killed.elapsed() < Duration::from_secs(30), "{rows:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let failed_over = killed.elapsed();
    let after: Vec<(i32, i32)> = loop {
        match c.query(read).await {
            Ok(rows) => break rows,
            Err(e) => assert!(killed.elapsed() < Duration::from_secs(30), "{e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(after, before, "the orders on shard1 after the failover");
    c.query_drop(
        "INSERT INTO demo.orders (id, customer_id, product_id, quantity, ordered_at) \
         VALUES (100001, 7, 1, 1, NOW())",
    )
    .await
    .unwrap();
    println!(
        "the demo's failover: shard1's primary killed, its replica named after {} ms",
        failed_over.as_millis()
    );
    drop(c);
    tokio::task::spawn_blocking(move || drop(cluster))
        .await
        .unwrap();
}
