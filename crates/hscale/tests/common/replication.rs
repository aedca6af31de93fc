//! Set-up shared by the replication tests (`failover.rs`,
//! `switchover.rs`, `main_switchover.rs`), which start their own servers
//! and proxies: the proxies' configuration and a root connection.

use hscale::config::{BackendConfig, UserConfig};

/// A proxy's configuration with fast checks (replicas every 100 ms,
/// health 300 ms, reloads and heartbeats 200 ms, 1 s timeouts), two
/// workers, the admin user root without a password, and `backends`: each
/// its name, its primary's port and its replicas' ports.
pub fn config(backends: &[(&str, u16, &[u16])]) -> hscale::Config {
    let mut c = hscale::Config::parse("").unwrap();
    c.proxy.replica_check_interval_ms = 100;
    c.proxy.health_check_interval_ms = 300;
    c.proxy.reload_interval_ms = 200;
    c.proxy.heartbeat_interval_ms = 200;
    c.proxy.connect_timeout_ms = 1_000;
    c.proxy.backend_ping_timeout_ms = 1_000;
    c.proxy.workers = 2;
    c.users = vec![UserConfig {
        name: "root".into(),
        admin: true,
        ..Default::default()
    }];
    let addr = |port: u16| format!("127.0.0.1:{port}");
    c.backends = backends
        .iter()
        .map(|(name, port, replicas)| BackendConfig {
            name: (*name).into(),
            address: addr(*port),
            user: "hscale".into(),
            password: "hscale".into(),
            min_connections: 1,
            max_connections: 32,
            replicas: replicas.iter().map(|p| addr(*p)).collect(),
            ..BackendConfig::default()
        })
        .collect();
    c
}

/// A connection as root (no password) to the proxy on `port`.
pub async fn connect(port: u16) -> mysql_async::Conn {
    let o = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(""))
        .prefer_socket(false);
    mysql_async::Conn::new(o).await.unwrap()
}

/// A connection as the backends' account (hscale) to the server on `port`.
pub async fn server(port: u16) -> mysql_async::Conn {
    mysql_async::Conn::new(super::backend_opts(port, None))
        .await
        .unwrap()
}

/// A main backend's two servers and two more backends, in `dir`, each a
/// directory `{tag}{name}`: m1 (the main backend's primary at start) and
/// m2 replicating from it (read-only), both with a binary log and
/// semi-synchronous replication (a write is acknowledged once the replica
/// has it; a primary without a replica connected does not wait), then
/// s1 and s2 without. `main_switchover.rs` and `failover_stale_proxy.rs`.
pub async fn main_set(
    dir: &std::path::Path,
    tag: &str,
) -> Vec<hscale::playground::mariadb::MariaDb> {
    let s = start_all(
        dir,
        tag,
        [
            ("m1", semi_sync(1, false)),
            ("m2", semi_sync(2, false)),
            ("s1", vec!["--server-id=101".to_string()]),
            ("s2", vec!["--server-id=102".to_string()]),
        ],
    );
    replicate(s[0].port, &[s[1].port], "; SET GLOBAL read_only = 1").await;
    s
}

/// A main backend without replicas and another backend's three servers,
/// in `dir`, each a directory `{tag}{name}`: main, then a (the other
/// backend's primary at start), b and c replicating from it; a, b and c
/// with a binary log (`log_slave_updates`) and semi-synchronous
/// replication as primary and as replica (`AFTER_SYNC`, a 30 s timeout,
/// so it never falls back to asynchronous replication during a test).
/// Returns once both replicas acknowledge. `failover.rs` and
/// `failover_stale_proxy.rs`.
pub async fn shard_set(
    dir: &std::path::Path,
    tag: &str,
) -> Vec<hscale::playground::mariadb::MariaDb> {
    use mysql_async::prelude::Queryable;
    use std::time::{Duration, Instant};
    let s = start_all(
        dir,
        tag,
        [
            ("main", vec!["--server-id=100".to_string()]),
            ("a", semi_sync(1, true)),
            ("b", semi_sync(2, true)),
            ("c", semi_sync(3, true)),
        ],
    );
    replicate(s[1].port, &[s[2].port, s[3].port], "").await;
    // Both replicas acknowledge before the writes start.
    let mut a = server(s[1].port).await;
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
    s
}

/// A server's options for semi-synchronous replication, as primary and as
/// replica (`AFTER_SYNC`, a 30 s timeout), with a binary log: server id
/// `id`; `waits_without_replica`: a primary with no replica connected
/// waits (the server's default) rather than acknowledging at once.
fn semi_sync(id: u32, waits_without_replica: bool) -> Vec<String> {
    let mut args = vec![
        "--log-bin=server-bin".to_string(),
        "--log-slave-updates".to_string(),
        format!("--server-id={id}"),
        "--binlog-format=ROW".to_string(),
        "--rpl-semi-sync-master-enabled=ON".to_string(),
        "--rpl-semi-sync-slave-enabled=ON".to_string(),
        "--rpl-semi-sync-master-timeout=30000".to_string(),
        "--rpl-semi-sync-master-wait-point=AFTER_SYNC".to_string(),
    ];
    if !waits_without_replica {
        args.push("--rpl-semi-sync-master-wait-no-slave=OFF".to_string());
    }
    args
}

/// Start `servers` (name, options) at once, each in `dir/{tag}{name}`.
fn start_all<const N: usize>(
    dir: &std::path::Path,
    tag: &str,
    servers: [(&str, Vec<String>); N],
) -> Vec<hscale::playground::mariadb::MariaDb> {
    use hscale::playground::mariadb::MariaDb;
    let handles: Vec<_> = servers
        .into_iter()
        .map(|(name, args)| {
            let dir = dir.join(format!("{tag}{name}"));
            std::thread::spawn(move || MariaDb::start_with(&dir, &args).unwrap())
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Make each of `replicas` replicate from `primary` from its current GTID
/// position (retrying the connection every second), then run `then` on it.
async fn replicate(primary: u16, replicas: &[u16], then: &str) {
    use mysql_async::prelude::Queryable;
    let pos: String = server(primary)
        .await
        .query_first("SELECT @@gtid_binlog_pos")
        .await
        .unwrap()
        .unwrap();
    for r in replicas {
        server(*r)
            .await
            .query_drop(format!(
                "SET GLOBAL gtid_slave_pos = '{pos}'; \
                 CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {primary}, \
                 MASTER_USER = 'hscale', MASTER_PASSWORD = 'hscale', \
                 MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1; START SLAVE{then}"
            ))
            .await
            .unwrap();
    }
}

/// The last GTID the server at `port` wrote itself (its own server id's
/// entry in `@@gtid_binlog_state`): what changes when anything is written
/// there by a client, and stays when it only replicates.
pub async fn own_gtid(port: u16) -> String {
    use mysql_async::prelude::Queryable;
    let mut c = server(port).await;
    let (state, id): (String, i64) = c
        .query_first("SELECT @@gtid_binlog_state, @@server_id")
        .await
        .unwrap()
        .unwrap();
    state
        .split(',')
        .find(|g| g.split('-').nth(1) == Some(&id.to_string()))
        .unwrap_or("")
        .to_string()
}

/// A failover cut short: the deciding proxy, a process of its own
/// started with `config` that ends at `failpoint` (`HSCALE_FAILPOINT`:
/// exit code 86), and writers `start`ed through it (given its port) and
/// through a proxy already running. After a second of writes (some
/// acknowledged, as `acked` counts them), `kill` (a primary's death); the
/// deciding proxy ends at the failpoint within 30 s, then 50 more writes
/// are acknowledged through the proxy left within 40 s. The writers, and
/// the times from the kill to the deciding proxy's end and to the writes'
/// return.
pub async fn cut_short<W>(
    config: hscale::Config,
    failpoint: &str,
    start: impl FnOnce(u16) -> W,
    acked: impl Fn(&W) -> usize,
    kill: impl FnOnce(),
) -> (W, std::time::Duration, std::time::Duration) {
    use std::time::{Duration, Instant};
    let dying = super::ProxyProcess::start_with_env(config, &[("HSCALE_FAILPOINT", failpoint)]);
    let writers = start(dying.port);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert!(acked(&writers) > 0, "writes before the kill");
    let killed_at = Instant::now();
    kill();
    let status = dying.exit_status(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(86), "ended at the failpoint");
    let died = killed_at.elapsed();
    let at_death = acked(&writers);
    let deadline = Instant::now() + Duration::from_secs(40);
    while acked(&writers) < at_death + 50 {
        assert!(
            Instant::now() < deadline,
            "no write succeeded after the deciding proxy died"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (writers, died, killed_at.elapsed())
}

/// Writers through two proxies, two each, until `finish`: each runs
/// `sql(id, writer)` with ids `base + writer * 1,000,000 + n`, keeps the
/// ids acknowledged and the times, and the errors, reconnecting after one.
pub struct Writers {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub acked: std::sync::Arc<std::sync::Mutex<Vec<(i64, std::time::Instant)>>>,
    failed: std::sync::Arc<std::sync::Mutex<Vec<(String, std::time::Instant)>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    pub fn start(proxies: [u16; 2], base: i64, sql: fn(i64, i64) -> String) -> Writers {
        use mysql_async::prelude::Queryable;
        use std::sync::atomic::Ordering;
        use std::time::{Duration, Instant};
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let failed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
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
                        match c.query_drop(sql(id, w)).await {
                            Ok(()) => acked.lock().unwrap().push((id, Instant::now())),
                            Err(e) => {
                                failed.lock().unwrap().push((e.to_string(), Instant::now()));
                                tokio::time::sleep(Duration::from_millis(20)).await;
                                if let Ok(fresh) =
                                    mysql_async::Conn::new(super::proxy_opts(port, None)).await
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

    pub fn acked(&self) -> usize {
        self.acked.lock().unwrap().len()
    }

    /// The acknowledged (id, time) and the errors (message, time).
    #[allow(clippy::type_complexity)]
    pub async fn finish(
        self,
    ) -> (
        Vec<(i64, std::time::Instant)>,
        Vec<(String, std::time::Instant)>,
    ) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        let acked = self.acked.lock().unwrap().clone();
        let failed = self.failed.lock().unwrap().clone();
        (acked, failed)
    }
}
