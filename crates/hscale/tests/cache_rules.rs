#![allow(clippy::unwrap_used)]
//! The result cache's rules beside `HSCALE CACHE_TABLE` (issue 33, item
//! 2): statements cached EXACT (`HSCALE CACHE_STATEMENT(..., 'EXACT')`,
//! `exec/cache.rs`, `admin/cache.rs`) and a proxy's own rules in its
//! config file (`[[cache.rules]]`, replaced by SIGHUP:
//! `exec/cache/local_rules.rs`). Every answer is compared with what the
//! backend answers directly; hits are counted by `/metrics`.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

/// The tests read shared counters: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const DB: &str = "cache_rules";

fn with_cache(c: &mut hscale::Config) {
    c.cache.max_bytes = 1 << 20;
}

fn info() -> Info {
    cluster_with(2, with_cache)
}

/// The database, once: `se`, `se_other` (statement rules), `cfg_t`,
/// `cfg_s` (config rules), none cached by CACHE_TABLE.
async fn setup() {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    DONE.get_or_init(|| async {
        info();
        let mut c = proxy_conn(None).await;
        for sql in [
            format!("DROP DATABASE IF EXISTS {DB}"),
            format!("CREATE DATABASE {DB}"),
            format!("USE {DB}"),
            "CREATE TABLE se (id INT PRIMARY KEY, v INT NOT NULL)".into(),
            "INSERT INTO se VALUES (1, 10), (2, 20)".into(),
            "CREATE TABLE se_other (id INT PRIMARY KEY, v INT NOT NULL)".into(),
            "INSERT INTO se_other VALUES (1, 5)".into(),
            "CREATE TABLE cfg_t (id INT PRIMARY KEY, v INT NOT NULL)".into(),
            "INSERT INTO cfg_t VALUES (1, 100)".into(),
            "CREATE TABLE cfg_s (id INT PRIMARY KEY, v INT NOT NULL)".into(),
            "INSERT INTO cfg_s VALUES (1, 1000)".into(),
        ] {
            c.query_drop(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    })
    .await;
}

async fn conn_at(port: u16) -> mysql_async::Conn {
    mysql_async::Conn::new(proxy_opts(port, Some(DB)))
        .await
        .unwrap()
}

async fn value(c: &mut mysql_async::Conn, sql: &str) -> Option<String> {
    let rows: Vec<mysql_async::Row> = c.query(sql).await.unwrap();
    rows.first()
        .and_then(|r| r.get::<Option<String>, _>(0).flatten())
}

async fn version_triggers(direct: &mut mysql_async::Conn, table: &str) -> String {
    let sql = format!(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{DB}' \
         AND EVENT_OBJECT_TABLE = '{table}' AND TRIGGER_NAME LIKE 'hscale\\_w%'"
    );
    value(direct, &sql).await.unwrap()
}

/// `read` through `c` (of the proxy whose `/metrics` is at `at`) twice:
/// the first answers what the backend answers directly now (after a
/// write, never an answer stored before it), the second the same, a hit.
async fn read_then_hit(
    c: &mut mysql_async::Conn,
    at: SocketAddr,
    direct: &mut mysql_async::Conn,
    read: &str,
    what: &str,
) {
    let truth = value(direct, read).await;
    assert_eq!(value(c, read).await, truth, "{what}: {read}");
    let hits = metric_at(at, "hscale_result_cache_hits");
    assert_eq!(value(c, read).await, truth, "{what}: {read}");
    assert_eq!(
        metric_at(at, "hscale_result_cache_hits"),
        hits + 1,
        "{what}: {read} is a hit"
    );
}

/// `read` twice through `c`: neither is a hit.
async fn never_hit(c: &mut mysql_async::Conn, at: SocketAddr, read: &str) {
    let hits = metric_at(at, "hscale_result_cache_hits");
    value(c, read).await;
    value(c, read).await;
    assert_eq!(metric_at(at, "hscale_result_cache_hits"), hits, "{read}");
}

fn shared() -> SocketAddr {
    info().metrics_addr.unwrap()
}

/// `HSCALE CACHE_STATEMENT('SELECT v FROM se WHERE id = 1', 'EXACT')`
/// keeps reads of that shape (any literals) of a table no CACHE_TABLE
/// names, and the next read after a write through this proxy, through
/// another proxy or directly on the backend answers the write; a TRUNCATE
/// through the proxy (no trigger fires) too. Another shape is not cached.
/// UNCACHE_STATEMENT removes the rule and the triggers it put.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_statement_cached_exact_sees_every_write() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut c = conn_at(info().proxy_port).await;
    let mut direct = backend_conn(0, Some(DB)).await;
    let other = ProxyProcess::start(cluster_config());
    let mut there = conn_at(other.port).await;
    c.query_drop("HSCALE CACHE_STATEMENT('SELECT v FROM se WHERE id = 1', 'EXACT')")
        .await
        .unwrap();
    assert_eq!(version_triggers(&mut direct, "se").await, "3");
    let rules: Vec<(Option<String>, String, String, String, String)> =
        c.query("HSCALE SHOW CACHE").await.unwrap();
    assert!(
        rules
            .iter()
            .any(|r| r.1 == "SELECT v FROM se WHERE id = 1" && r.2 == "EXACT" && r.3 == "0"),
        "{rules:?}"
    );
    let (one, two) = (
        "SELECT v FROM se WHERE id = 1",
        "SELECT v FROM se WHERE id = 2",
    );
    let at = shared();
    read_then_hit(&mut c, at, &mut direct, one, "stored").await;
    read_then_hit(&mut c, at, &mut direct, two, "any literals").await;
    c.query_drop("UPDATE se SET v = v + 1 WHERE id = 1")
        .await
        .unwrap();
    read_then_hit(&mut c, at, &mut direct, one, "written through this proxy").await;
    there
        .query_drop("UPDATE se SET v = v + 1 WHERE id = 1")
        .await
        .unwrap();
    read_then_hit(
        &mut c,
        at,
        &mut direct,
        one,
        "written through another proxy",
    )
    .await;
    direct
        .query_drop("UPDATE se SET v = v + 1 WHERE id = 1")
        .await
        .unwrap();
    read_then_hit(&mut c, at, &mut direct, one, "written on the backend").await;
    assert_eq!(value(&mut c, one).await.as_deref(), Some("13"));
    direct
        .query_drop("INSERT INTO se VALUES (3, 30)")
        .await
        .unwrap();
    read_then_hit(
        &mut c,
        at,
        &mut direct,
        "SELECT v FROM se WHERE id = 3",
        "a new row",
    )
    .await;
    never_hit(&mut c, at, "SELECT v + 0 FROM se WHERE id = 1").await;
    c.query_drop("TRUNCATE TABLE se").await.unwrap();
    read_then_hit(&mut c, at, &mut direct, one, "truncated through the proxy").await;
    assert_eq!(value(&mut c, one).await, None);
    c.query_drop("INSERT INTO se VALUES (1, 10), (2, 20)")
        .await
        .unwrap();
    read_then_hit(&mut c, at, &mut direct, one, "written again").await;
    c.query_drop("HSCALE UNCACHE_STATEMENT('SELECT v FROM se WHERE id = 7')")
        .await
        .unwrap();
    assert_eq!(version_triggers(&mut direct, "se").await, "0");
    never_hit(&mut c, at, one).await;
}

/// Two statements cached EXACT read one table: removing one rule leaves
/// the table's triggers to the other, which stays exact; a statement
/// cached EXACT over a table cached TTL by CACHE_TABLE is exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn statements_cached_exact_share_their_tables_triggers() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut c = conn_at(info().proxy_port).await;
    let mut direct = backend_conn(0, Some(DB)).await;
    let at = shared();
    for sql in [
        "HSCALE CACHE_STATEMENT('SELECT v FROM se_other WHERE id = 1', 'EXACT')",
        "HSCALE CACHE_STATEMENT('SELECT SUM(v) FROM se_other', 'EXACT')",
        "HSCALE CACHE_STATEMENT('SELECT v FROM se_other WHERE id = 1', 'TTL', 60000)",
        "HSCALE CACHE_TABLE('se_other', 'TTL', 60000)",
    ] {
        c.query_drop(sql).await.unwrap();
    }
    assert_eq!(version_triggers(&mut direct, "se_other").await, "3");
    let sum = "SELECT SUM(v) FROM se_other";
    read_then_hit(&mut c, at, &mut direct, sum, "stored").await;
    direct
        .query_drop("UPDATE se_other SET v = v + 1")
        .await
        .unwrap();
    read_then_hit(&mut c, at, &mut direct, sum, "written on the backend").await;
    for sql in [
        "HSCALE UNCACHE_TABLE('se_other')",
        "HSCALE UNCACHE_STATEMENT('SELECT v FROM se_other WHERE id = 1')",
    ] {
        c.query_drop(sql).await.unwrap();
    }
    // UNCACHE_TABLE of a TTL table takes no trigger away.
    assert_eq!(version_triggers(&mut direct, "se_other").await, "3");
    c.query_drop("HSCALE UNCACHE_STATEMENT('SELECT SUM(v) FROM se_other')")
        .await
        .unwrap();
    assert_eq!(version_triggers(&mut direct, "se_other").await, "0");
}

/// What CACHE_STATEMENT refuses: EXACT over nothing hscale can tell (no
/// table), over a table that does not exist (the server's 1146), and a
/// mode with the wrong arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_cache_statement_refuses() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut c = conn_at(info().proxy_port).await;
    let e = c
        .query_drop("HSCALE CACHE_STATEMENT('SELECT 1', 'EXACT')")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("which tables"), "{e}");
    let e = c
        .query_drop("HSCALE CACHE_STATEMENT('SELECT v FROM nowhere', 'EXACT')")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1146, "{e}");
    let e = c
        .query_drop("HSCALE CACHE_STATEMENT('SELECT v FROM se', 'TTL')")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("'TTL' a time"), "{e}");
    let e = c
        .query_drop("HSCALE CACHE_STATEMENT('UPDATE se SET v = 1', 'EXACT')")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("one SELECT"), "{e}");
}

/// A proxy with `[[cache.rules]]` of its own and `/metrics` at the
/// returned address, from `rules` (TOML).
fn proxy_with_rules(rules: &str) -> (ProxyProcess, SocketAddr) {
    let mut config = cluster_config();
    let port = hscale::playground::mariadb::free_port().unwrap();
    config.metrics.listen = format!("127.0.0.1:{port}");
    config.cache = toml::from_str(rules).unwrap();
    (
        ProxyProcess::start(config),
        SocketAddr::from(([127, 0, 0, 1], port)),
    )
}

/// `[[cache.rules]]` in the config file: a table cached EXACT, a
/// statement cached TTL, on this proxy only (the shared proxy, without
/// them, caches neither). SIGHUP with other rules: the TTL statement is
/// no longer cached (its next read is fresh, not the answer it kept),
/// and a statement now cached EXACT sees a write on the backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn config_rules_cache_and_are_reloaded_by_sighup() {
    setup().await;
    let _g = SERIAL.lock().await;
    let first = format!(
        "max_bytes = 1048576\n\
         [[rules]]\ntable = \"{DB}.cfg_t\"\nmode = \"exact\"\n\
         [[rules]]\nstatement = \"SELECT v FROM cfg_s WHERE id = 1\"\nmode = \"ttl\"\nttl_ms = 600000\n"
    );
    let (proxy, at) = proxy_with_rules(&first);
    let mut c = conn_at(proxy.port).await;
    let mut direct = backend_conn(0, Some(DB)).await;
    let (t, s) = (
        "SELECT v FROM cfg_t WHERE id = 1",
        "SELECT v FROM cfg_s WHERE id = 1",
    );
    read_then_hit(&mut c, at, &mut direct, t, "a table of the config").await;
    assert_eq!(version_triggers(&mut direct, "cfg_t").await, "3");
    direct
        .query_drop("UPDATE cfg_t SET v = v + 1")
        .await
        .unwrap();
    read_then_hit(&mut c, at, &mut direct, t, "written on the backend").await;
    read_then_hit(&mut c, at, &mut direct, s, "a statement of the config").await;
    direct
        .query_drop("UPDATE cfg_s SET v = v + 1")
        .await
        .unwrap();
    assert_eq!(value(&mut c, s).await.as_deref(), Some("1000"), "TTL");
    // The shared proxy has no such rules.
    let mut shared_conn = conn_at(info().proxy_port).await;
    never_hit(&mut shared_conn, shared(), t).await;
    never_hit(&mut shared_conn, shared(), s).await;
    // SIGHUP: the TTL statement's rule goes, an EXACT one comes.
    let mut config: hscale::Config =
        toml::from_str(&std::fs::read_to_string(&proxy.config_path).unwrap()).unwrap();
    config.cache = toml::from_str(&format!(
        "max_bytes = 1048576\n\
         [[rules]]\ntable = \"{DB}.cfg_t\"\nmode = \"exact\"\n\
         [[rules]]\nstatement = \"SELECT v + 1 FROM cfg_s WHERE id = 1\"\nmode = \"exact\"\n"
    ))
    .unwrap();
    std::fs::write(&proxy.config_path, toml::to_string(&config).unwrap()).unwrap();
    #[allow(unsafe_code)]
    // SAFETY: sending a signal to a child process this test started.
    unsafe {
        libc::kill(proxy.child.id() as i32, libc::SIGHUP);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while value(&mut c, s).await.as_deref() != Some("1001") {
        assert!(Instant::now() < deadline, "the TTL rule stays after SIGHUP");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    never_hit(&mut c, at, s).await;
    let plus = "SELECT v + 1 FROM cfg_s WHERE id = 1";
    read_then_hit(
        &mut c,
        at,
        &mut direct,
        plus,
        "an EXACT statement after SIGHUP",
    )
    .await;
    direct
        .query_drop("UPDATE cfg_s SET v = v + 1")
        .await
        .unwrap();
    read_then_hit(&mut c, at, &mut direct, plus, "written on the backend").await;
    read_then_hit(&mut c, at, &mut direct, t, "the table's rule stays").await;
}

/// `hscale check` names what is wrong with `[[cache.rules]]`.
#[test]
fn config_rules_are_checked() {
    let bad = "[cache]\nmax_bytes = 1024\n\
               [[cache.rules]]\ntable = \"nodb\"\nmode = \"exact\"\n\
               [[cache.rules]]\nstatement = \"SELECT 1\"\nmode = \"exact\"\n\
               [[cache.rules]]\ntable = \"d.t\"\nmode = \"ttl\"\n\
               [[cache.rules]]\ntable = \"d.t\"\nstatement = \"SELECT v FROM t\"\nmode = \"exact\"\n\
               [[cache.rules]]\nstatement = \"DELETE FROM t\"\nmode = \"ttl\"\nttl_ms = 5\n";
    let config = hscale::Config::parse(bad).unwrap();
    let problems = config.problems().join("\n");
    for expected in [
        "#1: table = \"nodb\" is not \"db.table\"",
        "#2: statement = \"SELECT 1\": hscale cannot tell which tables it reads",
        "#3: mode = \"ttl\" with ttl_ms = 0",
        "#4: give one of table or statement",
        "#5: statement = \"DELETE FROM t\": not one SELECT",
    ] {
        assert!(problems.contains(expected), "{expected} in:\n{problems}");
    }
    let none =
        hscale::Config::parse("[[cache.rules]]\ntable = \"d.t\"\nmode = \"exact\"\n").unwrap();
    assert!(none
        .problems()
        .join("\n")
        .contains("[[cache.rules]] need a result cache"));
}

/// HSCALE SHOW DIGESTS counts, per statement fingerprint, the result
/// cache's hits, misses and invalidations: a miss, a hit, a write on the
/// backend, an invalidation (run and stored again), a hit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn show_digests_counts_hits_misses_and_invalidations() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut c = conn_at(info().proxy_port).await;
    let mut direct = backend_conn(0, Some(DB)).await;
    c.query_drop("HSCALE CACHE_STATEMENT('SELECT MAX(v) - 7 FROM se_other', 'EXACT')")
        .await
        .unwrap();
    let read = "SELECT MAX(v) - 7 FROM se_other";
    read_then_hit(&mut c, shared(), &mut direct, read, "stored").await;
    direct
        .query_drop("UPDATE se_other SET v = v + 1")
        .await
        .unwrap();
    read_then_hit(&mut c, shared(), &mut direct, read, "written").await;
    let rows: Vec<mysql_async::Row> = c.query("HSCALE SHOW DIGESTS").await.unwrap();
    let row = rows
        .iter()
        .find(|r| {
            r.get::<String, _>("digest_text")
                .unwrap()
                .contains("MAX ( v ) - ?")
        })
        .or_else(|| {
            rows.iter().find(|r| {
                let t: String = r.get("digest_text").unwrap();
                t.contains("MAX") && t.contains("se_other")
            })
        })
        .expect("the statement's digest");
    let num = |c: &str| row.get::<String, _>(c).unwrap().parse::<u64>().unwrap();
    assert_eq!(
        (
            num("count"),
            num("cache_hits"),
            num("cache_misses"),
            num("cache_invalidations")
        ),
        (4, 2, 1, 1)
    );
    c.query_drop("HSCALE UNCACHE_STATEMENT('SELECT MAX(v) - 7 FROM se_other')")
        .await
        .unwrap();
}
