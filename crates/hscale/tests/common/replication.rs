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
    use hscale::playground::mariadb::MariaDb;
    use mysql_async::prelude::Queryable;
    let start = |name: &str, args: Vec<String>| {
        let dir = dir.join(format!("{tag}{name}"));
        std::thread::spawn(move || MariaDb::start_with(&dir, &args).unwrap())
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
            "--rpl-semi-sync-master-wait-no-slave=OFF".to_string(),
        ]
    };
    let handles = [
        start("m1", logged(1)),
        start("m2", logged(2)),
        start("s1", vec!["--server-id=101".to_string()]),
        start("s2", vec!["--server-id=102".to_string()]),
    ];
    let s: Vec<MariaDb> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut m1 = server(s[0].port).await;
    let pos: String = m1
        .query_first("SELECT @@gtid_binlog_pos")
        .await
        .unwrap()
        .unwrap();
    let mut m2 = server(s[1].port).await;
    m2.query_drop(format!(
        "SET GLOBAL gtid_slave_pos = '{pos}'; \
         CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, \
         MASTER_USER = 'hscale', MASTER_PASSWORD = 'hscale', \
         MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1; START SLAVE; \
         SET GLOBAL read_only = 1",
        s[0].port
    ))
    .await
    .unwrap();
    s
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

/// A main backend without replicas and another backend's three servers,
/// in `dir`, each a directory `{tag}{name}`: main, then a (the other
/// backend's primary at start), b and c replicating from it; a, b and c
/// with a binary log (`log_slave_updates`) and semi-synchronous
/// replication as primary and as replica (`AFTER_SYNC`, a 30 s timeout,
/// so it never falls back to asynchronous replication during a test).
/// Returns once both replicas acknowledge. `failover.rs` and
/// `failover_cut_short.rs`.
pub async fn shard_set(
    dir: &std::path::Path,
    tag: &str,
) -> Vec<hscale::playground::mariadb::MariaDb> {
    use hscale::playground::mariadb::MariaDb;
    use mysql_async::prelude::Queryable;
    use std::time::{Duration, Instant};
    let start = |name: &str, args: Vec<String>| {
        let dir = dir.join(format!("{tag}{name}"));
        std::thread::spawn(move || MariaDb::start_with(&dir, &args).unwrap())
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
    let mut a = server(s[1].port).await;
    let pos: String = a
        .query_first("SELECT @@gtid_binlog_pos")
        .await
        .unwrap()
        .unwrap();
    for r in [s[2].port, s[3].port] {
        let mut c = server(r).await;
        c.query_drop(format!(
            "SET GLOBAL gtid_slave_pos = '{pos}'; \
             CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, \
             MASTER_USER = 'hscale', MASTER_PASSWORD = 'hscale', \
             MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1; START SLAVE",
            s[1].port
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
    s
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
