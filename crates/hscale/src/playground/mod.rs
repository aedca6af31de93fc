//! The playground (`hscale playground`) and the test harness: N real
//! MariaDB servers on loopback ports plus a proxy in front of them. Tests
//! use [`Cluster`] exactly as the playground does.

pub mod mariadb;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::backend::BackendConn;
use crate::config::{
    BackendConfig, Config, LogConfig, MetricsConfig, ProxyConfig, TlsConfig, UserConfig,
};
use crate::server::RunningProxy;
pub use mariadb::MariaDb;

/// The demo schema loaded by `hscale playground --demo`.
pub const DEMO_SQL: &str = include_str!("demo.sql");

/// Servers, and a proxy in front of them.
pub struct Cluster {
    pub config: Config,
    pub proxy: RunningProxy,
    pub servers: Vec<MariaDb>,
    /// Replicas of the servers (`ClusterOptions::replicas` each), GTID
    /// replication from theirs: `servers[i]`'s are `replicas[i * n..][..n]`.
    pub replicas: Vec<MariaDb>,
    pub dir: PathBuf,
    is_temporary: bool,
}

/// How to build a cluster.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    pub shards: usize,
    /// Proxy address; port 0 picks a free one.
    pub listen: String,
    /// Where the data directories go; a temporary directory if `None`.
    pub data_dir: Option<PathBuf>,
    /// Applied to the generated config before the proxy starts.
    pub tweak: fn(&mut Config),
    /// `[proxy] change_copy_rows_per_s` (`hscale playground --copy-rows-per-s`).
    pub copy_rows_per_s: u64,
    /// The servers' InnoDB buffer pool in MiB; `None` keeps the harness's
    /// 64 MiB (`hscale playground --buffer-pool-mb`, for benchmarks whose
    /// data should fit in memory as on a server sized for it).
    pub buffer_pool_mb: Option<u64>,
    /// More options for every server (`hscale playground --server-option`).
    pub server_options: Vec<String>,
    /// Replicas per server (`hscale playground --replicas`): the servers
    /// then keep binary logs, and each replica replicates its server with
    /// MariaDB GTID replication, listed in `[[backends]] replicas`.
    pub replicas: usize,
    /// `[proxy] failover_after_ms` (`hscale playground --failover-after-ms`).
    pub failover_after_ms: u64,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            shards: 1,
            listen: "127.0.0.1:0".into(),
            data_dir: None,
            tweak: |_| {},
            copy_rows_per_s: 0,
            buffer_pool_mb: None,
            server_options: Vec::new(),
            replicas: 0,
            failover_after_ms: 0,
        }
    }
}

/// Replication of each replica from its primary (`n` replicas each, in
/// order), set up once per data directory.
fn replicate(servers: &[MariaDb], replicas: &[MariaDb], n: usize) -> Result<(), String> {
    for (r, replica) in replicas.iter().enumerate() {
        // Once per data directory: a restarted replica goes on where it was.
        if replica.dir.join("master.info").exists() {
            continue;
        }
        let primary = &servers[r / n];
        // From the start of the fresh server's binary log: only the
        // harness's idempotent init statements precede it.
        let sql = format!(
            "SET GLOBAL gtid_slave_pos = '';\n\
             CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, \
             MASTER_USER = '{}', MASTER_PASSWORD = '{}', MASTER_USE_GTID = slave_pos, \
             MASTER_CONNECT_RETRY = 1;\nSTART SLAVE;",
            primary.port,
            mariadb::BACKEND_USER,
            mariadb::BACKEND_PASSWORD
        );
        let cfg = BackendConfig {
            name: format!("replica {}", replica.address()),
            address: replica.address(),
            user: mariadb::BACKEND_USER.into(),
            password: mariadb::BACKEND_PASSWORD.into(),
            ..BackendConfig::default()
        };
        run_script(&cfg, &sql)?;
    }
    Ok(())
}

/// The proxy's configuration for the started servers: each primary a
/// backend with its `n` replicas, a TLS certificate, the root user, and
/// metrics and the HTTP API on free loopback ports.
fn proxy_config(
    opts: &ClusterOptions,
    (cert, key): (&Path, &Path),
    servers: &[MariaDb],
    replicas: &[MariaDb],
    n: usize,
) -> Config {
    Config {
        proxy: ProxyConfig {
            listen: opts.listen.clone(),
            change_copy_rows_per_s: opts.copy_rows_per_s,
            ..ProxyConfig::default()
        },
        log: LogConfig::default(),
        // Prometheus metrics on a free loopback port.
        metrics: MetricsConfig {
            listen: "127.0.0.1:0".into(),
            ..MetricsConfig::default()
        },
        tls: TlsConfig {
            cert: Some(cert.display().to_string()),
            key: Some(key.display().to_string()),
            require: false,
        },
        users: vec![UserConfig {
            name: "root".into(),
            password: String::new(),
            admin: true,
            ..Default::default()
        }],
        user_defaults: Default::default(),
        cache: Default::default(),
        // The HTTP API on a free loopback port.
        http: crate::config::HttpConfig {
            listen: "127.0.0.1:0".into(),
            ..Default::default()
        },
        backends: servers
            .iter()
            .enumerate()
            .map(|(i, s)| BackendConfig {
                name: format!("shard{i}"),
                address: s.address(),
                user: mariadb::BACKEND_USER.into(),
                password: mariadb::BACKEND_PASSWORD.into(),
                min_connections: 1,
                max_connections: 64,
                replicas: replicas[i * n..(i + 1) * n]
                    .iter()
                    .map(MariaDb::address)
                    .collect(),
                ..BackendConfig::default()
            })
            .collect(),
    }
}

fn temp_dir() -> PathBuf {
    let mut r = [0u8; 6];
    let _ = getrandom::fill(&mut r);
    let suffix: String = r.iter().map(|b| format!("{b:02x}")).collect();
    std::env::temp_dir().join(format!("hscale-{suffix}"))
}

impl Cluster {
    pub fn start(opts: ClusterOptions) -> Result<Cluster, String> {
        let is_temporary = opts.data_dir.is_none();
        let dir = opts.data_dir.clone().unwrap_or_else(temp_dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        // A self-signed certificate, so `mariadb --ssl` and the drivers'
        // TLS modes work with no set-up (without verifying the server).
        let (cert, key) = crate::tls::self_signed(&dir).map_err(|e| e.to_string())?;
        let shards = opts.shards.max(1);
        let n = opts.replicas;
        // (data directory, server id) of the servers, then of the replicas.
        let dirs: Vec<(PathBuf, usize)> = (0..shards)
            .map(|i| (dir.join(format!("shard{i}")), i + 1))
            .chain((0..shards * n).map(|r| {
                let (i, k) = (r / n.max(1), r % n.max(1) + 1);
                (dir.join(format!("shard{i}-replica{k}")), 100 * (i + 1) + k)
            }))
            .collect();
        // Start the servers in parallel: each takes a second or two.
        let server_options: Vec<String> = opts
            .buffer_pool_mb
            .map(|mb| format!("--innodb-buffer-pool-size={mb}M"))
            .into_iter()
            .chain(opts.server_options.iter().cloned())
            .collect();
        let started: Vec<Result<MariaDb, String>> = std::thread::scope(|s| {
            let server_options = &server_options;
            let handles: Vec<_> = dirs
                .iter()
                .map(|(d, id)| {
                    let mut args = server_options.clone();
                    if n > 0 {
                        // After the harness's --skip-log-bin, which it overrides.
                        args.push(format!("--server-id={id}"));
                        // Replicas too: one may become the primary
                        // (`HSCALE SWITCHOVER`, failover), and the others
                        // then replicate from it.
                        args.push("--log-bin=primary-bin".into());
                        args.push("--binlog-format=ROW".into());
                        args.push("--log-slave-updates".into());
                    }
                    s.spawn(move || MariaDb::start_with(d, &args))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("server start panicked".into()))
                })
                .collect()
        });
        let mut servers = Vec::new();
        for s in started {
            match s {
                Ok(s) => servers.push(s),
                Err(e) => {
                    drop(servers);
                    if is_temporary {
                        let _ = std::fs::remove_dir_all(&dir);
                    }
                    return Err(e);
                }
            }
        }
        let replicas = servers.split_off(shards);
        replicate(&servers, &replicas, n)?;
        let mut config = proxy_config(
            &opts,
            (cert.as_path(), key.as_path()),
            &servers,
            &replicas,
            n,
        );
        config.proxy.failover_after_ms = opts.failover_after_ms;
        (opts.tweak)(&mut config);
        let proxy = RunningProxy::start(config.clone(), &opts.listen)
            .map_err(|e| format!("proxy cannot listen on {}: {e}", opts.listen))?;
        // `[metrics] listen` stays port 0: copies of this config (more
        // proxies in tests) each pick a free port (`RunningProxy::metrics_addr`).
        config.proxy.listen = proxy.addr.to_string();
        // The written config serves no HTTP API: its copies (more proxies
        // in tests, older binaries in benchmarks) start without it.
        config.http = Default::default();
        let text = toml::to_string_pretty(&config).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("hscale.toml"), text).map_err(|e| e.to_string())?;
        Ok(Cluster {
            config,
            proxy,
            servers,
            replicas,
            dir,
            is_temporary,
        })
    }

    pub fn proxy_port(&self) -> u16 {
        self.proxy.addr.port()
    }

    /// Run SQL statements (separated by `;` at line ends) on backend `i`
    /// directly, as the backend user.
    pub fn run_sql_on_backend(&self, i: usize, sql: &str) -> Result<(), String> {
        run_script(&self.config.backends[i], sql)
    }

    /// Run SQL statements (separated by `;` at line ends) through the
    /// proxy, as its admin user.
    pub fn run_sql_through_proxy(&self, sql: &str) -> Result<(), String> {
        let cfg = BackendConfig {
            name: "hscale".into(),
            address: self.proxy.addr.to_string(),
            user: "root".into(),
            password: String::new(),
            min_connections: 1,
            max_connections: 1,
            ..BackendConfig::default()
        };
        run_script(&cfg, sql)
    }

    /// Stop the proxy and the servers; remove a temporary directory.
    pub fn stop(&mut self) {
        self.proxy.stop();
        for s in self.replicas.iter_mut().chain(&mut self.servers) {
            s.stop();
        }
        if self.is_temporary {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Run a script's statements one by one on a server `cfg` names (a backend,
/// or the proxy itself); the first error stops it.
fn run_script(cfg: &BackendConfig, sql: &str) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let tls = crate::backend::tls::connector(cfg).map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let mut conn = BackendConn::connect(
            cfg,
            tls.as_ref(),
            false,
            Duration::from_secs(10),
            &Default::default(),
        )
        .await
        .map_err(|e| e.to_string())?;
        for stmt in split_script(sql) {
            if let Err(e) = conn.query_rows(&stmt).await.map_err(|e| e.to_string())? {
                return Err(format!("{stmt}: {}: {}", e.code, e.message));
            }
        }
        Ok(())
    })
}

/// How the demo partitions its tables, run through the proxy once the demo
/// schema is loaded on the main backend: `orders` by `MOD(4)` of the
/// customer, `customers` by the first letter of their country (`PREFIX`),
/// `visits` by month (`DATE`), and `products` copied to every backend
/// (global). Partitions go to the backends in turn.
pub fn demo_sharding(shards: usize) -> String {
    let b = |i: usize| format!("shard{}", i % shards.max(1));
    let mut s = String::new();
    s.push_str(
        "HSCALE SETUP_TABLE('demo.orders', 'customer_id', 'orders_default', 'shard0', 'MOD(4)');\n",
    );
    for v in 0..4 {
        s.push_str(&format!(
            "HSCALE ADD_PARTITION('demo.orders', 'p{v}', '{v}', '{}');\n",
            b(v)
        ));
    }
    s.push_str(
        "HSCALE SETUP_TABLE('demo.customers', 'country', 'customers_default', 'shard0', 'PREFIX(1)');\n",
    );
    for (i, letter) in ["B", "C", "I", "M"].iter().enumerate() {
        s.push_str(&format!(
            "HSCALE ADD_PARTITION('demo.customers', '{}', '{letter}', '{}');\n",
            letter.to_ascii_lowercase(),
            b(i + 1)
        ));
    }
    s.push_str(
        "HSCALE SETUP_TABLE('demo.visits', 'visited_on', 'visits_default', 'shard0', 'DATE(''%Y-%m'')');\n",
    );
    for (i, month) in ["07", "08", "09"].iter().enumerate() {
        s.push_str(&format!(
            "HSCALE ADD_PARTITION('demo.visits', 'm{month}', '2024-{month}', '{}');\n",
            b(i + 1)
        ));
    }
    s.push_str("HSCALE SETUP_GLOBAL_TABLE('demo.products');\n");
    s
}

/// Five statements to try on the demo, printed by `hscale playground --demo`.
pub const DEMO_TRY: &str = concat!(
    "  USE demo;\n",
    "  SELECT * FROM orders WHERE customer_id = 7;  -- one partition\n",
    "  HSCALE EXPLAIN SELECT page, COUNT(*) FROM visits GROUP BY page;  -- every month, merged\n",
    "  SELECT visited_on, COUNT(*) FROM visits WHERE visited_on BETWEEN '2024-08-30' AND '2024-09-02' GROUP BY visited_on;\n",
    "  HSCALE MOVE_PARTITION('demo.visits', 'm07', 'shard0');  -- online, while you write\n",
    "  HSCALE SHOW OPERATIONS;"
);

/// Split a script into statements at `;` ending a line (enough for our own
/// demo and test scripts, which keep semicolons out of strings).
pub fn split_script(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in sql.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with("--") {
            continue;
        }
        cur.push_str(line);
        cur.push('\n');
        if t.ends_with(';') {
            let stmt = cur.trim().trim_end_matches(';').to_string();
            if !stmt.is_empty() {
                out.push(stmt);
            }
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// `hscale playground`: start, print `ready:`, wait for Ctrl-C or SIGTERM.
#[allow(clippy::too_many_arguments)]
pub fn run_playground(
    shards: usize,
    listen: &str,
    data_dir: Option<&Path>,
    demo: bool,
    copy_rows_per_s: u64,
    buffer_pool_mb: Option<u64>,
    server_options: Vec<String>,
    (replicas, failover_after_ms): (usize, u64),
) -> Result<(), String> {
    mariadb::server_binary()?;
    let mut cluster = Cluster::start(ClusterOptions {
        shards,
        listen: listen.to_string(),
        data_dir: data_dir.map(Path::to_path_buf),
        copy_rows_per_s,
        buffer_pool_mb,
        server_options,
        replicas,
        failover_after_ms,
        ..ClusterOptions::default()
    })?;
    if demo {
        cluster.run_sql_on_backend(0, DEMO_SQL)?;
        cluster.run_sql_through_proxy(&demo_sharding(cluster.servers.len()))?;
    }
    let addr = cluster.proxy.addr;
    eprintln!(
        "playground: {} MariaDB server(s) ({}), data in {}, config {}",
        cluster.servers.len(),
        cluster
            .servers
            .iter()
            .map(|s| s.address())
            .collect::<Vec<_>>()
            .join(", "),
        cluster.dir.display(),
        cluster.dir.join("hscale.toml").display()
    );
    if demo {
        eprintln!(
            "playground: demo database `demo`: orders (MOD(4) on customer_id), customers \
             (PREFIX(1) on country), visits (DATE('%Y-%m') on visited_on) partitioned over \
             the backends, products global. Try:\n{DEMO_TRY}"
        );
    }
    if !cluster.replicas.is_empty() {
        eprintln!(
            "playground: replicas (GTID replication; reads go to them with SET hscale_read_from = 'replica'): {}",
            cluster
                .config
                .backends
                .iter()
                .map(|b| format!("{} <- {}", b.name, b.replicas.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        );
        if let Some(b) = cluster.config.backends.get(1) {
            eprintln!(
                "playground: make a replica the primary with HSCALE SWITCHOVER('{}', '{}'){}",
                b.name,
                b.replicas[0],
                match failover_after_ms {
                    0 => " (automatic failover is off: --failover-after-ms)".to_string(),
                    ms => format!(
                        "; a primary down {ms} ms is replaced by its most advanced replica: \
                         try kill -9 {} ({}'s primary), then HSCALE SHOW BACKENDS",
                        cluster.servers[1].pid().unwrap_or(0),
                        b.name
                    ),
                }
            );
        }
    }
    if let Some(m) = cluster.proxy.metrics_addr {
        eprintln!("playground: Prometheus metrics at http://{m}/metrics");
    }
    if let Some(h) = cluster.proxy.http_addr {
        eprintln!(
            "playground: HTTP API at http://{h}/v1/sql (curl -u root: -d '{{\"sql\": \"SELECT 1\"}}' http://{h}/v1/sql)"
        );
    }
    println!("ready: mariadb -h{} -P{} -uroot", addr.ip(), addr.port());
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(crate::server::shutdown_signal());
    eprintln!("playground: stopping");
    cluster.stop();
    Ok(())
}
