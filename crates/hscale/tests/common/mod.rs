//! Shared set-up for the integration tests: one cluster of real MariaDB
//! servers and an hscale proxy per test binary, started on first use and
//! stopped when the test process exits.

#![allow(dead_code)]

pub mod raw;
pub mod replication;
pub mod twin;
pub mod unique;

use std::sync::{Mutex, OnceLock};

use hscale::playground::{Cluster, ClusterOptions};
use mysql_async::prelude::*;

static CLUSTER: OnceLock<Mutex<Option<Cluster>>> = OnceLock::new();
static INFO: OnceLock<Info> = OnceLock::new();

/// What tests need to know about the shared cluster.
#[derive(Debug, Clone)]
pub struct Info {
    pub proxy_port: u16,
    pub backend_ports: Vec<u16>,
    pub dir: std::path::PathBuf,
    /// The proxy's `/metrics` endpoint.
    pub metrics_addr: Option<std::net::SocketAddr>,
}

extern "C" fn stop_cluster() {
    if let Some(m) = CLUSTER.get() {
        if let Ok(mut g) = m.lock() {
            if let Some(mut c) = g.take() {
                c.stop();
            }
        }
    }
}

/// Start (once) a cluster with `shards` servers; later calls reuse it.
pub fn cluster(shards: usize) -> Info {
    cluster_with(shards, add_app_user)
}

/// A second, non-admin client user with a password.
pub fn add_app_user(c: &mut hscale::Config) {
    c.users.push(hscale::config::UserConfig {
        name: "app".into(),
        password: "secret".into(),
        admin: false,
        ..Default::default()
    });
}

/// Like [`cluster`], with the generated config changed by `tweak` (the
/// first call in a test binary decides).
pub fn cluster_with(shards: usize, tweak: fn(&mut hscale::Config)) -> Info {
    INFO.get_or_init(|| {
        let c = Cluster::start(ClusterOptions {
            shards,
            tweak,
            ..ClusterOptions::default()
        })
        .unwrap_or_else(|e| panic!("cannot start the test cluster: {e}"));
        let info = Info {
            proxy_port: c.proxy_port(),
            backend_ports: c.servers.iter().map(|s| s.port).collect(),
            dir: c.dir.clone(),
            metrics_addr: c.proxy.metrics_addr,
        };
        let _ = CLUSTER.set(Mutex::new(Some(c)));
        #[allow(unsafe_code)]
        // SAFETY: registering a plain extern "C" function with atexit.
        unsafe {
            libc::atexit(stop_cluster);
        }
        info
    })
    .clone()
}

/// Run `f` with the shared cluster itself (for tests that stop servers).
pub fn with_cluster<R>(f: impl FnOnce(&mut Cluster) -> R) -> R {
    let m = CLUSTER.get().expect("cluster not started");
    let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
    f(g.as_mut().expect("cluster stopped"))
}

/// A figure of the shared proxy's `/metrics`: a counter (`name_total`) or
/// a gauge (`name`).
pub fn metric(name: &str) -> u64 {
    let info = INFO.get().expect("cluster started");
    metric_at(info.metrics_addr.expect("metrics served"), name)
}

/// [`metric`] of the proxy serving `/metrics` at `addr`.
pub fn metric_at(addr: std::net::SocketAddr, name: &str) -> u64 {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to /metrics");
    std::io::Write::write_all(&mut s, b"GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n")
        .expect("ask /metrics");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut s, &mut text).expect("read /metrics");
    let (total, plain) = (format!("{name}_total "), format!("{name} "));
    text.lines()
        .find_map(|l| {
            l.strip_prefix(total.as_str())
                .or(l.strip_prefix(plain.as_str()))
        })
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("{name} is rendered"))
}

/// A seeded SplitMix64 for tests that make random choices: `seeded`
/// reads `HSCALE_SEED` (or takes the clock) and prints it, so a failed
/// run replays with `HSCALE_SEED=<n>`.
pub struct Rng(pub u64);

impl Rng {
    pub fn seeded(test: &str) -> u64 {
        let seed = std::env::var("HSCALE_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        eprintln!("{test}: HSCALE_SEED={seed}");
        seed
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub fn proxy_opts(port: u16, db: Option<&str>) -> mysql_async::Opts {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(""))
        .db_name(db)
        .prefer_socket(false)
        .into()
}

pub fn backend_opts(port: u16, db: Option<&str>) -> mysql_async::Opts {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("hscale"))
        .pass(Some("hscale"))
        .db_name(db)
        .prefer_socket(false)
        .into()
}

pub async fn proxy_conn(db: Option<&str>) -> mysql_async::Conn {
    let info = cluster(2);
    mysql_async::Conn::new(proxy_opts(info.proxy_port, db))
        .await
        .expect("connect through hscale")
}

pub async fn backend_conn(i: usize, db: Option<&str>) -> mysql_async::Conn {
    let info = cluster(2);
    mysql_async::Conn::new(backend_opts(info.backend_ports[i], db))
        .await
        .expect("connect to backend")
}

/// A read of the thread id of the backend connection that runs it, which
/// a client of hscale otherwise never sees (`CONNECTION_ID()`,
/// `@@pseudo_thread_id` and information_schema's SESSION_VARIABLES answer
/// the client session's id): a stored function's body, which hscale does
/// not rewrite. [`backend_thread_probe`] creates it.
pub const BACKEND_THREAD: &str = "SELECT backend_probe.backend_thread()";

/// Create the function [`BACKEND_THREAD`] calls on every backend.
pub async fn backend_thread_probe() {
    let info = cluster(1);
    for port in &info.backend_ports {
        let mut c = mysql_async::Conn::new(backend_opts(*port, None))
            .await
            .expect("connect to backend");
        c.query_drop("CREATE DATABASE IF NOT EXISTS backend_probe")
            .await
            .unwrap();
        c.query_drop(
            "CREATE FUNCTION IF NOT EXISTS backend_probe.backend_thread() RETURNS BIGINT UNSIGNED NO SQL RETURN CONNECTION_ID()",
        )
        .await
        .unwrap();
        c.disconnect().await.unwrap();
    }
}

/// Create a fresh database for one test, directly on the main backend.
pub async fn fresh_db(name: &str) {
    let mut c = backend_conn(0, None).await;
    c.query_drop(format!("DROP DATABASE IF EXISTS {name}"))
        .await
        .unwrap();
    c.query_drop(format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    c.disconnect().await.unwrap();
}

/// The server error code of a failed call.
/// The rows of a statement's answer as text, or its error code: what
/// differential tests compare between hscale and one server.
pub fn shown_rows(
    answer: Result<Vec<mysql_async::Row>, mysql_async::Error>,
) -> Result<Vec<String>, u16> {
    answer
        .map(|rows| {
            rows.into_iter()
                .map(|r| format!("{:?}", r.unwrap()))
                .collect()
        })
        .map_err(|e| code(&e))
}

pub fn code(e: &mysql_async::Error) -> u16 {
    match e {
        mysql_async::Error::Server(s) => s.code,
        other => panic!("expected a server error, got {other:?}"),
    }
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// An `hscale serve` process of its own (for tests that measure the
/// proxy's memory or need more file descriptors than one process has).
pub struct ProxyProcess {
    pub child: std::process::Child,
    pub port: u16,
    pub config_path: std::path::PathBuf,
}

impl ProxyProcess {
    /// The exit status of a proxy that is to end by itself (at a
    /// failpoint), waited for on a blocking thread for at most `within`.
    pub async fn exit_status(mut self, within: std::time::Duration) -> std::process::ExitStatus {
        tokio::task::spawn_blocking(move || {
            let deadline = std::time::Instant::now() + within;
            loop {
                if let Some(status) = self.child.try_wait().unwrap() {
                    return status;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the proxy did not end"
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
        .await
        .unwrap()
    }

    pub fn start(config: hscale::Config) -> ProxyProcess {
        Self::start_with_env(config, &[])
    }

    /// [`ProxyProcess::start`] with extra environment variables.
    pub fn start_with_env(mut config: hscale::Config, env: &[(&str, &str)]) -> ProxyProcess {
        let port = hscale::playground::mariadb::free_port().unwrap();
        config.proxy.listen = format!("127.0.0.1:{port}");
        let path = std::env::temp_dir().join(format!("hscale-test-{port}.toml"));
        std::fs::write(&path, toml::to_string(&config).unwrap()).unwrap();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_hscale"))
            .args(["serve", "--config"])
            .arg(&path)
            .env(
                "RUST_LOG",
                std::env::var("HSCALE_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("start hscale serve");
        let start = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed().as_secs() < 30,
                "hscale serve did not start listening"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        ProxyProcess {
            child,
            port,
            config_path: path,
        }
    }

    /// A field of /proc/PID/status in kB (VmRSS, VmHWM, ...).
    pub fn status_kb(&self, field: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        s.lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config_path);
    }
}

/// The shared cluster's config (backends and users), for extra proxies.
pub fn cluster_config() -> hscale::Config {
    with_cluster(|c| c.config.clone())
}

/// The physical tables of a partitioned table ('db.t'), as HSCALE SHOW
/// PARTITIONS names them: partition name ("" for the default partition)
/// to (backend index, physical table). Partition changes give tables new
/// names (`_g<operation>`), so tests look them up.
pub async fn physical_tables(table: &str) -> std::collections::HashMap<String, (usize, String)> {
    let mut c = proxy_conn(None).await;
    let rows: Vec<mysql_async::Row> = c
        .query(format!("HSCALE SHOW PARTITIONS('{table}')"))
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    rows.into_iter()
        .map(|r| {
            let name: Option<String> = r.get(1).unwrap();
            let backend: String = r.get(3).unwrap();
            let physical: String = r.get(4).unwrap();
            let b = backend.trim_start_matches("shard").parse().unwrap();
            (name.unwrap_or_default(), (b, physical))
        })
        .collect()
}

/// The physical table of one partition (`None`: the default partition).
pub async fn physical(table: &str, partition: Option<&str>) -> String {
    let all = physical_tables(table).await;
    all.get(partition.unwrap_or(""))
        .unwrap_or_else(|| panic!("{table} has no partition {partition:?}: {all:?}"))
        .1
        .clone()
}

/// `s` with the generation suffixes of physical table names removed
/// (`orders_p1_g12` → `orders_p1`), for comparing plans by their shape.
pub fn strip_generations(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'_' && b.get(i + 1) == Some(&b'g') {
            let mut j = i + 2;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let ends = j == b.len() || !(b[j].is_ascii_alphanumeric() || b[j] == b'_');
            if j > i + 2 && ends {
                i = j;
                continue;
            }
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

/// Plan rows with generation suffixes removed.
pub fn plan_shape(plan: Vec<(String, String, String)>) -> Vec<(String, String, String)> {
    plan.into_iter()
        .map(|(a, b, c)| (a, strip_generations(&b), strip_generations(&c)))
        .collect()
}

/// One increment of `counter`'s row 1 (`v`) in a transaction that reads
/// it FOR UPDATE first: the value it committed. The writers of the
/// read-your-writes tests (`coalescing.rs`, `result_cache.rs`).
pub async fn increment_counter(c: &mut mysql_async::Conn) -> i64 {
    let mut t = c
        .start_transaction(mysql_async::TxOpts::default())
        .await
        .unwrap();
    let v: i64 = t
        .query_first("SELECT v FROM counter WHERE id = 1 FOR UPDATE")
        .await
        .unwrap()
        .unwrap();
    t.query_drop("UPDATE counter SET v = v + 1 WHERE id = 1")
        .await
        .unwrap();
    t.commit().await.unwrap();
    v + 1
}
