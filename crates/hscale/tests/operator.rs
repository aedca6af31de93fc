#![allow(clippy::unwrap_used)]
//! An operator's day: the Prometheus endpoint (scraped over HTTP, counters
//! must move with what clients do), query digests (`HSCALE SHOW DIGESTS`,
//! `HSCALE RESET DIGESTS`), and `hscale serve` processes for the slow-
//! statement log, graceful shutdown on SIGTERM and SIGHUP reloads.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};

use common::raw::{Raw, CLIENT_CAPS};
use common::*;
use mysql_async::prelude::*;

/// `db.t` (`id` AUTO_INCREMENT, partitioned by `k` with MOD(2): the default
/// partition on shard0, p1 on shard1), holding rows 1..=`rows` with k = 1.
async fn setup(db: &str, rows: u32) {
    fresh_db(db).await;
    let mut c = backend_conn(0, Some(db)).await;
    c.query_drop(
        "CREATE TABLE t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, \
         v VARCHAR(20) NULL)",
    )
    .await
    .unwrap();
    c.disconnect().await.unwrap();
    let mut p = proxy_conn(Some(db)).await;
    p.query_drop(format!(
        "HSCALE SETUP_TABLE('{db}.t', 'k', 't_default', 'shard0', 'MOD(2)')"
    ))
    .await
    .unwrap();
    p.query_drop(format!(
        "HSCALE ADD_PARTITION('{db}.t', 'p1', '1', 'shard1')"
    ))
    .await
    .unwrap();
    for i in 1..=rows {
        p.query_drop(format!("INSERT INTO t (id, k, v) VALUES ({i}, 1, 'v{i}')"))
            .await
            .unwrap();
    }
    p.disconnect().await.unwrap();
}

/// GET `path` from `addr`: (status line, body).
fn http_get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: hscale\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// Every sample of a scrape: `name{labels}` → value.
fn scrape(addr: std::net::SocketAddr) -> HashMap<String, f64> {
    let (status, body) = http_get(addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse::<f64>().unwrap())
        })
        .collect()
}

fn delta(a: &HashMap<String, f64>, b: &HashMap<String, f64>, key: &str) -> f64 {
    let get = |m: &HashMap<String, f64>| m.get(key).copied().unwrap_or(0.0);
    get(b) - get(a)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint_counts_what_clients_and_changes_do() {
    let info = cluster(2);
    let addr = info.metrics_addr.expect("the playground serves /metrics");
    let (status, _) = http_get(addr, "/other");
    assert!(status.contains("404"), "{status}");
    let before = scrape(addr);
    setup("ops_metrics", 0).await;
    let mut c = proxy_conn(Some("ops_metrics")).await;
    // Ids from the table's sequence: a block reserved.
    for i in 0..20 {
        c.query_drop(format!("INSERT INTO t (k, v) VALUES ({}, 'x')", i % 2))
            .await
            .unwrap();
    }
    for i in 0..20 {
        let _: Vec<String> = c
            .query(format!("SELECT v FROM t WHERE k = 1 AND id > {i}"))
            .await
            .unwrap();
    }
    let all: Vec<String> = c.query("SELECT v FROM t").await.unwrap();
    assert_eq!(all.len(), 20);
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM t")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 20);
    let e = c
        .query_drop("SELECT no_such_column FROM t WHERE k = 1")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1054);
    let e = c
        .query_drop("LOAD DATA INFILE '/nonexistent/v_a.tsv' INTO TABLE t")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235);
    c.disconnect().await.unwrap();
    let after = scrape(addr);

    let d = |k: &str| delta(&before, &after, k);
    assert!(
        d("hscale_statements_total{kind=\"single\"}") >= 40.0,
        "single"
    );
    assert!(
        d("hscale_statements_total{kind=\"scatter\"}") >= 1.0,
        "scatter"
    );
    assert!(d("hscale_statements_total{kind=\"merge\"}") >= 1.0, "merge");
    assert!(
        d("hscale_statements_total{kind=\"refused\"}") >= 1.0,
        "refused"
    );
    assert!(d("hscale_statements_total{kind=\"admin\"}") >= 2.0, "admin");
    assert!(
        d("hscale_statement_seconds_count{kind=\"single\"}") >= 40.0,
        "latency histogram"
    );
    assert!(
        d("hscale_statement_seconds_bucket{kind=\"single\",le=\"+Inf\"}") >= 40.0,
        "latency buckets"
    );
    assert!(d("hscale_rows_sent_total") >= 20.0 + 20.0 + 1.0, "rows");
    assert!(d("hscale_errors_total{code=\"1054\"}") >= 1.0, "1054");
    assert!(d("hscale_errors_total{code=\"1235\"}") >= 1.0, "1235");
    assert!(d("hscale_plan_cache_hits_total") >= 15.0, "plan cache hits");
    assert!(d("hscale_sequence_blocks_total") >= 1.0, "sequence blocks");
    // ADD_PARTITION moved keys with a cutover.
    assert!(d("hscale_changes_started_total") >= 1.0, "changes started");
    assert!(d("hscale_changes_done_total") >= 1.0, "changes done");
    assert!(d("hscale_change_pauses_total") >= 1.0, "cutover pauses");
    for b in ["shard0", "shard1"] {
        assert!(
            after[&format!("hscale_pool_connections_open{{backend=\"{b}\"}}")] >= 1.0,
            "{b} pool"
        );
        assert_eq!(after[&format!("hscale_backend_up{{backend=\"{b}\"}}")], 1.0);
    }
    assert!(after.contains_key("hscale_transactions_in_doubt"));
    assert!(after.contains_key("hscale_stale_route_retries_total"));
}

/// The workers' caches of key weights (keys under a collation the backend
/// weighs, here utf8mb4_unicode_ci) count in /metrics: a key met for the
/// first time is a miss and a fetch from the main backend, the same key
/// again (text or prepared) a hit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weight_cache_counts_in_metrics() {
    let info = cluster(2);
    let addr = info.metrics_addr.expect("the playground serves /metrics");
    fresh_db("ops_weights").await;
    let mut c = proxy_conn(Some("ops_weights")).await;
    c.query_drop("CREATE TABLE w (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL PRIMARY KEY, n INT)")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('ops_weights.w', 'k', 'w_default', 'shard0', 'HASH(2)')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('ops_weights.w', 'h1', '1', 'shard1')")
        .await
        .unwrap();
    let before = scrape(addr);
    c.query_drop("INSERT INTO w (k, n) VALUES ('straße-ops', 1), ('noël-ops', 2)")
        .await
        .unwrap();
    for _ in 0..5 {
        let n: Option<i32> = c
            .query_first("SELECT n FROM w WHERE k = 'STRASSE-ops'")
            .await
            .unwrap();
        assert_eq!(n, Some(1));
        let n: Option<i32> = c
            .exec_first("SELECT n FROM w WHERE k = ?", ("NOEL-OPS",))
            .await
            .unwrap();
        assert_eq!(n, Some(2));
    }
    let after = scrape(addr);
    let d = |k: &str| delta(&before, &after, k);
    // 'straße-ops' and 'noël-ops' at the INSERT, their twins at the
    // first reads: at least those four missed and were fetched.
    assert!(d("hscale_weight_cache_misses_total") >= 4.0, "misses");
    assert!(d("hscale_weight_fetches_total") >= 3.0, "fetches");
    // Each of the ten reads routes its key again from the cache.
    assert!(d("hscale_weight_cache_hits_total") >= 8.0, "hits");
    assert!(after["hscale_weight_cache_entries"] >= 4.0, "entries");
    for k in [
        "hscale_weight_fetch_errors_total",
        "hscale_weight_cache_evictions_total",
    ] {
        assert!(after.contains_key(k), "{k}");
    }
    c.disconnect().await.unwrap();
}

/// `HSCALE SHOW DIGESTS` rows by digest text: column name → value.
async fn digests(c: &mut mysql_async::Conn) -> HashMap<String, HashMap<String, String>> {
    let rows: Vec<mysql_async::Row> = c.query("HSCALE SHOW DIGESTS").await.unwrap();
    rows.into_iter()
        .map(|r| {
            let cols: Vec<String> = r
                .columns_ref()
                .iter()
                .map(|c| c.name_str().to_string())
                .collect();
            let mut m = HashMap::new();
            for (i, name) in cols.into_iter().enumerate() {
                let v: Option<String> = r.get(i).unwrap();
                m.insert(name, v.unwrap_or_default());
            }
            (m["digest_text"].clone(), m)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digests_group_statements_by_fingerprint() {
    setup("ops_digests", 30).await;
    let mut c = proxy_conn(Some("ops_digests")).await;
    // Statement texts of this test only (digests are per proxy).
    for i in 1..=30 {
        let v: Option<(String, u64)> = c
            .query_first(format!("SELECT v, id FROM t WHERE k = 1 AND id = {i}"))
            .await
            .unwrap();
        assert_eq!(v, Some((format!("v{i}"), i as u64)));
    }
    let all: Vec<(u64, String)> = c.query("SELECT id, v FROM t").await.unwrap();
    assert_eq!(all.len(), 30);
    for _ in 0..2 {
        let e = c
            .query_drop("SELECT no_such_column, id FROM t WHERE k = 1")
            .await
            .unwrap_err();
        assert_eq!(code(&e), 1054);
    }
    let e = c
        .query_drop("LOAD XML INFILE '/nonexistent/v_dg.xml' INTO TABLE t")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235);

    let d = digests(&mut c).await;
    let point = &d["SELECT v , id FROM t WHERE k = ? AND id = ?"];
    assert_eq!(point["count"], "30");
    assert_eq!(point["plan"], "single");
    assert_eq!(point["rows_sent"], "30");
    assert_eq!(point["errors"], "0");
    assert_eq!(point["refusals"], "0");
    assert_eq!(point["avg_partitions"], "1.0");
    let ms = |k: &str| point[k].parse::<f64>().unwrap();
    assert!(ms("total_ms") > 0.0);
    assert!(ms("p99_ms") > 0.0 && ms("p99_ms") <= ms("max_ms"));
    assert!(ms("avg_ms") <= ms("max_ms"));
    assert!(point["first_seen"] <= point["last_seen"]);
    assert!(point["first_seen"].starts_with("20"), "{point:?}");
    let scan = &d["SELECT id , v FROM t"];
    assert_eq!(scan["plan"], "scatter");
    assert_eq!(scan["max_partitions"], "2");
    assert_eq!(scan["rows_sent"], "30");
    let failed = &d["SELECT no_such_column , id FROM t WHERE k = ?"];
    assert_eq!(failed["count"], "2");
    assert_eq!(failed["errors"], "2");
    let refused = d
        .iter()
        .find(|(k, _)| k.contains("LOAD XML"))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no digest of the refused statement: {d:?}"));
    assert_eq!(refused["refusals"], "1");
    assert_eq!(refused["plan"], "refused");

    // A user without the admin right cannot read them.
    let mut app = mysql_async::Conn::new(
        mysql_async::OptsBuilder::from_opts(proxy_opts(cluster(2).proxy_port, None))
            .user(Some("app"))
            .pass(Some("secret")),
    )
    .await
    .unwrap();
    assert!(app.query_drop("HSCALE SHOW DIGESTS").await.is_err());
    app.disconnect().await.unwrap();

    c.query_drop("HSCALE RESET DIGESTS").await.unwrap();
    let d = digests(&mut c).await;
    assert!(
        !d.contains_key("SELECT v , id FROM t WHERE k = ? AND id = ?"),
        "{d:?}"
    );
    c.disconnect().await.unwrap();
}

/// An `hscale serve` process with its log in a file.
struct Served {
    child: std::process::Child,
    port: u16,
    config: hscale::Config,
    config_path: std::path::PathBuf,
    log_path: std::path::PathBuf,
}

impl Served {
    fn start(mut config: hscale::Config) -> Served {
        let port = hscale::playground::mariadb::free_port().unwrap();
        config.proxy.listen = format!("127.0.0.1:{port}");
        config.metrics.listen = String::new();
        let dir = std::env::temp_dir();
        let config_path = dir.join(format!("hscale-operator-{port}.toml"));
        let log_path = dir.join(format!("hscale-operator-{port}.log"));
        std::fs::write(&config_path, toml::to_string(&config).unwrap()).unwrap();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_hscale"))
            .args(["serve", "--config"])
            .arg(&config_path)
            .env("RUST_LOG", "warn,hscale=info")
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .expect("start hscale serve");
        let start = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed().as_secs() < 30,
                "hscale serve did not listen"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Served {
            child,
            port,
            config,
            config_path,
            log_path,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    fn signal(&self, sig: i32) {
        #[allow(unsafe_code)]
        // SAFETY: kill(2) on the pid of a child this test started.
        let r = unsafe { libc::kill(self.child.id() as i32, sig) };
        assert_eq!(r, 0);
    }

    fn opts(&self, user: &str, password: &str) -> mysql_async::Opts {
        mysql_async::OptsBuilder::from_opts(proxy_opts(self.port, None))
            .user(Some(user))
            .pass(Some(password))
            .into()
    }

    /// Wait (at most 60 s) for the process to exit; its status.
    fn wait(&mut self) -> std::process::ExitStatus {
        let start = std::time::Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(start.elapsed().as_secs() < 60, "hscale serve did not exit");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config_path);
        let _ = std::fs::remove_file(&self.log_path);
    }
}

/// The server processlist entries on `backend` whose statement starts with `prefix`.
async fn running_on_backend(backend: usize, prefix: &str) -> u64 {
    let mut b = backend_conn(backend, None).await;
    let n: u64 = b
        .exec_first(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE CONCAT(?, '%')",
            (prefix,),
        )
        .await
        .unwrap()
        .unwrap();
    b.disconnect().await.unwrap();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_statements_are_logged_past_the_threshold() {
    cluster(2);
    let mut config = cluster_config();
    config.log.slow_statement_ms = 300;
    let served = Served::start(config);
    let mut c = mysql_async::Conn::new(served.opts("root", ""))
        .await
        .unwrap();
    c.query_drop("SELECT 'fast one'").await.unwrap();
    c.query_drop("SELECT SLEEP(0.5), 'slow one'").await.unwrap();
    c.disconnect().await.unwrap();
    let start = std::time::Instant::now();
    while !served.log().contains("slow one") {
        assert!(
            start.elapsed().as_secs() < 20,
            "no slow log: {}",
            served.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let log = served.log();
    let line = log.lines().find(|l| l.contains("slow one")).unwrap();
    assert!(line.contains("slow statement"), "{line}");
    assert!(line.contains("user=\"root\""), "{line}");
    assert!(line.contains("plan=\"passthrough\""), "{line}");
    assert!(!log.contains("fast one"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_running_statements_finish_and_exits_zero() {
    cluster(2);
    let mut config = cluster_config();
    config.proxy.shutdown_timeout_ms = 60_000;
    let mut served = Served::start(config);
    let (mut idle, ok) = Raw::login(served.port, "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0x00));
    let (mut busy, ok) = Raw::login(served.port, "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0x00));
    let sql = "SELECT SLEEP(4), 'draining'";
    let mut payload = vec![hscale_wire::consts::com::QUERY];
    payload.extend_from_slice(sql.as_bytes());
    busy.send(0, &payload).await;
    while running_on_backend(0, "SELECT SLEEP(4)").await == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    served.signal(libc::SIGTERM);
    // New connections are refused while the statement still runs.
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", served.port)).is_ok() {
        assert!(
            start.elapsed().as_secs() < 20,
            "still accepting after SIGTERM"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(running_on_backend(0, "SELECT SLEEP(4)").await, 1);
    // The idle session is closed without waiting for the busy one.
    assert!(idle.is_closed().await, "the idle session stayed open");
    assert_eq!(running_on_backend(0, "SELECT SLEEP(4)").await, 1);
    assert!(
        served.child.try_wait().unwrap().is_none(),
        "exited before the running statement finished"
    );
    // The running statement gets its whole answer, then the session closes.
    let columns = busy.read().await.expect("column count");
    assert_ne!(columns.first(), Some(0xff), "the statement failed");
    assert!(busy.is_closed().await);
    let status = served.wait();
    assert!(status.success(), "exit status {status:?}");
    let log = served.log();
    assert!(log.contains("stopping"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_after_the_timeout_when_statements_run_on() {
    cluster(2);
    let mut config = cluster_config();
    config.proxy.shutdown_timeout_ms = 500;
    let mut served = Served::start(config);
    let (mut busy, ok) = Raw::login(served.port, "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0x00));
    let mut payload = vec![hscale_wire::consts::com::QUERY];
    payload.extend_from_slice(b"SELECT SLEEP(40), 'too long'");
    busy.send(0, &payload).await;
    while running_on_backend(0, "SELECT SLEEP(40)").await == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    served.signal(libc::SIGTERM);
    // Exits (status 0) long before the statement could finish.
    let status = served.wait();
    assert!(status.success(), "exit status {status:?}");
    assert!(busy.is_closed().await);
    // The backend ends the statement of the closed connection by itself;
    // nothing else to check there.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_users_and_limits_without_dropping_sessions() {
    cluster(2);
    let mut config = cluster_config();
    config.proxy.max_connections = 100;
    let mut served = Served::start(config);
    let mut app = mysql_async::Conn::new(served.opts("app", "secret"))
        .await
        .unwrap();
    assert!(mysql_async::Conn::new(served.opts("newbie", "fresh"))
        .await
        .is_err());

    // The new file: a new user, app's password changed, two connections at most.
    let mut new = served.config.clone();
    new.users.push(hscale::config::UserConfig {
        name: "newbie".into(),
        password: "fresh".into(),
        admin: false,
        backend_user: None,
        backend_password: String::new(),
        host: None,
        ..Default::default()
    });
    for u in &mut new.users {
        if u.name == "app" {
            u.password = "changed".into();
        }
    }
    new.proxy.max_connections = 2;
    std::fs::write(&served.config_path, toml::to_string(&new).unwrap()).unwrap();
    served.signal(libc::SIGHUP);
    let start = std::time::Instant::now();
    let newbie = loop {
        match mysql_async::Conn::new(served.opts("newbie", "fresh")).await {
            Ok(c) => break c,
            Err(e) => {
                assert!(start.elapsed().as_secs() < 20, "newbie never let in: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    // The session opened before the reload is still there.
    let one: u8 = app.query_first("SELECT 1").await.unwrap().unwrap();
    assert_eq!(one, 1);
    // The old password no longer logs in; two sessions are the limit now.
    let e = mysql_async::Conn::new(served.opts("app", "secret"))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1045);
    let (_, refused) = Raw::login(served.port, "app", "changed", CLIENT_CAPS).await;
    assert_eq!(common::raw::err_code(&refused.payload), Some(1040));
    newbie.disconnect().await.unwrap();
    // The proxy counts newbie's session gone once it has read its
    // COM_QUIT, a moment after the client returns (as one server does).
    let start = std::time::Instant::now();
    let mut again = loop {
        match mysql_async::Conn::new(served.opts("app", "changed")).await {
            Ok(c) => break c,
            Err(e) => {
                assert_eq!(code(&e), 1040, "{e}");
                assert!(start.elapsed().as_secs() < 20, "never let in again: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    again.query_drop("SELECT 1").await.unwrap();
    again.disconnect().await.unwrap();
    app.disconnect().await.unwrap();

    // A broken file is not taken: the proxy keeps serving as before.
    std::fs::write(&served.config_path, "[proxy]\nno_such_setting = 1\n").unwrap();
    served.signal(libc::SIGHUP);
    let start = std::time::Instant::now();
    while !served.log().contains("config not reloaded") {
        assert!(start.elapsed().as_secs() < 20, "{}", served.log());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mut c = mysql_async::Conn::new(served.opts("newbie", "fresh"))
        .await
        .unwrap();
    c.query_drop("SELECT 1").await.unwrap();
    c.disconnect().await.unwrap();
    served.signal(libc::SIGTERM);
    assert!(served.wait().success());
}

/// Connections opened at once are spread evenly over the workers, and
/// each is served. Every worker accepts from one shared socket and the
/// first to wake takes what is queued: before, a burst of connects (a
/// pool filling up, mariadb-slap) landed mostly on one worker (80% of the
/// proxy's CPU on one of two workers in a profile) while the others idled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_opened_at_once_are_spread_over_the_workers() {
    cluster(2);
    let mut config = cluster_config();
    config.proxy.workers = 4;
    config.metrics.listen = "127.0.0.1:0".into();
    let mut proxy = hscale::RunningProxy::start(config, "127.0.0.1:0").unwrap();
    let port = proxy.addr.port();
    let metrics = proxy.metrics_addr.unwrap();
    let loads = |m: &HashMap<String, f64>| -> Vec<f64> {
        (0..4)
            .map(|w| m[&format!("hscale_worker_connections{{worker=\"{w}\"}}")])
            .collect()
    };
    for round in 0..3 {
        let conns = futures_util::future::join_all(
            (0..12).map(|_| mysql_async::Conn::new(proxy_opts(port, None))),
        )
        .await;
        let m = tokio::task::spawn_blocking(move || scrape(metrics))
            .await
            .unwrap();
        assert_eq!(loads(&m), vec![3.0; 4], "round {round}");
        for c in conns {
            let mut c = c.unwrap();
            let one: Option<u8> = c.query_first("SELECT 1").await.unwrap();
            assert_eq!(one, Some(1));
            c.disconnect().await.unwrap();
        }
        // Closed connections leave their workers' counts.
        let mut left = Vec::new();
        for _ in 0..200 {
            let m = tokio::task::spawn_blocking(move || scrape(metrics))
                .await
                .unwrap();
            left = loads(&m);
            if left == vec![0.0; 4] {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(left, vec![0.0; 4], "round {round}");
    }
    proxy.stop();
}
