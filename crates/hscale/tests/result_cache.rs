#![allow(clippy::unwrap_used)]
//! The result cache (issue 33, item 2: `exec/cache.rs`, `admin/cache.rs`).
//!
//! The proxy of these tests has `[cache] max_bytes` set; tables opt in
//! with `HSCALE CACHE_TABLE`. Each test compares what a cached read gets
//! with what a session that neither coalesces nor caches gets (`SET
//! hscale_coalesce = OFF`: the same bytes), and checks the counters of
//! `/metrics` that say the cache answered. Exact mode: every write, through
//! this proxy, through another one or on a backend directly, is seen by
//! the next read.

mod common;

use std::time::{Duration, Instant};

use common::raw::{Raw, CLIENT_CAPS};
use common::*;
use mysql_async::prelude::*;

/// The tests read shared counters: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const DB: &str = "result_cache";
/// The proxy's bound: small, so the eviction test fills it.
const MAX_BYTES: u64 = 256 * 1024;

fn with_cache(c: &mut hscale::Config) {
    add_app_user(c);
    c.cache.max_bytes = MAX_BYTES;
}

fn info() -> Info {
    cluster_with(2, with_cache)
}

async fn conn() -> mysql_async::Conn {
    let info = info();
    mysql_async::Conn::new(proxy_opts(info.proxy_port, Some(DB)))
        .await
        .unwrap()
}

/// The database, once: `wide` (rows of many types, strings that warn when
/// read as numbers), `counter`, `tz`, cached
/// EXACT; `p` (partitioned over both backends) cached EXACT; `stale`
/// cached TTL 3000 ms.
async fn setup() {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    DONE.get_or_init(|| async {
        info();
        let mut c = proxy_conn(None).await;
        for sql in [
            format!("DROP DATABASE IF EXISTS {DB}"),
            format!("CREATE DATABASE {DB}"),
            format!("USE {DB}"),
            "CREATE TABLE wide (id INT NOT NULL PRIMARY KEY, d DECIMAL(10,3), f DOUBLE, \
             dt DATETIME(3), ts TIMESTAMP NULL, s VARCHAR(20) CHARACTER SET latin1, b VARBINARY(8), \
             j TEXT, n INT NULL)"
                .into(),
            "INSERT INTO wide VALUES (1, 1.5, 2.25, '2024-01-02 03:04:05.678', '2024-01-02 03:04:05', 'é1x', 0x00ff, 'long text', NULL), \
             (2, -3.125, 1e300, '1999-12-31 23:59:59.999', NULL, 'abc', '', REPEAT('z', 300), 7), \
             (3, 0, 0, '2000-02-29 00:00:00', '2038-01-01 00:00:00', '12x', NULL, '', -1)"
                .into(),
            "CREATE TABLE counter (id INT PRIMARY KEY, v BIGINT NOT NULL)".into(),
            "INSERT INTO counter VALUES (1, 0)".into(),
            "CREATE TABLE tz (id INT PRIMARY KEY, ts TIMESTAMP NOT NULL, s VARCHAR(10))".into(),
            "INSERT INTO tz VALUES (1, '2024-06-01 12:00:00', 'a'), (2, '2024-12-01 00:30:00', 'b')".into(),
            "CREATE TABLE stale (id INT PRIMARY KEY, v INT NOT NULL)".into(),
            "INSERT INTO stale VALUES (1, 1)".into(),
            "CREATE TABLE p (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, v VARCHAR(20))".into(),
            "HSCALE SETUP_TABLE('p', 'id', 'p_default', 'shard0', 'MOD(2)')".into(),
            "HSCALE ADD_PARTITION('p', 'one', '1', 'shard1')".into(),
            format!(
                "INSERT INTO p VALUES {}",
                (1..=200)
                    .map(|i| format!("({i}, {}, 'v{}')", i % 13, i * 3))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            "CREATE TABLE big (id INT PRIMARY KEY, s VARCHAR(2000))".into(),
            "INSERT INTO big SELECT seq, REPEAT('b', 1500) FROM seq_1_to_100".into(),
            "HSCALE CACHE_TABLE('wide', 'EXACT')".into(),
            "HSCALE CACHE_TABLE('counter', 'EXACT')".into(),
            "HSCALE CACHE_TABLE('tz', 'EXACT')".into(),
            "HSCALE CACHE_TABLE('p', 'EXACT')".into(),
            "HSCALE CACHE_TABLE('big', 'EXACT')".into(),
            "HSCALE CACHE_TABLE('stale', 'TTL', 3000)".into(),
        ] {
            c.query_drop(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    })
    .await;
}

async fn raw_session(setup: &[&str]) -> Raw {
    let (mut r, ok) = Raw::login(info().proxy_port, "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0x00), "login");
    r.query(&format!("USE {DB}")).await.unwrap();
    for sql in setup {
        r.query(sql).await.unwrap();
    }
    r
}

/// One whole answer as framed (sequence id, payload), and SHOW WARNINGS.
type Answer = (Vec<(u8, Vec<u8>)>, Vec<Vec<Option<String>>>);

async fn ask(r: &mut Raw, sql: &str) -> Answer {
    let mut payload = vec![hscale_wire::consts::com::QUERY];
    payload.extend_from_slice(sql.as_bytes());
    r.send(0, &payload).await;
    let mut out = Vec::new();
    let first = r.read().await.expect("answer");
    out.push((first.seq, first.payload.to_vec()));
    if !matches!(first.first(), Some(0x00 | 0xff)) {
        let n = hscale_wire::buf::Reader::new(&first.payload)
            .lenenc()
            .unwrap() as usize;
        for _ in 0..=n {
            let p = r.read().await.expect("definition");
            out.push((p.seq, p.payload.to_vec()));
        }
        loop {
            let p = r.read().await.expect("row");
            out.push((p.seq, p.payload.to_vec()));
            if p.first() == Some(0xff) || hscale_wire::response::is_eof(&p.payload) {
                break;
            }
        }
    }
    let warnings = r.query("SHOW WARNINGS").await.unwrap();
    (out, warnings)
}

/// The answer of a session that neither coalesces nor caches.
async fn uncached(sql: &str, setup: &[&str]) -> Answer {
    let mut s = raw_session(setup).await;
    s.query("SET hscale_coalesce = OFF").await.unwrap();
    ask(&mut s, sql).await
}

async fn value(c: &mut mysql_async::Conn, sql: &str) -> Option<String> {
    let rows: Vec<mysql_async::Row> = c.query(sql).await.unwrap();
    rows.first()
        .and_then(|r| r.get::<Option<String>, _>(0).flatten())
}

/// Cached answers are the bytes of uncached ones (column definitions,
/// rows, EOF with the warning count, SHOW WARNINGS after): stored on the
/// first read, served on the next ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cached_answers_are_byte_identical() {
    setup().await;
    let _g = SERIAL.lock().await;
    for sql in [
        "SELECT id, d, f, dt, ts, s, b, j, n FROM wide ORDER BY id",
        "SELECT id, s + 0, d * 2 FROM wide ORDER BY id",
        "SELECT k, COUNT(*), SUM(id), MAX(v) FROM p GROUP BY k ORDER BY k",
        "SELECT * FROM p WHERE id = 7",
    ] {
        let reference = uncached(sql, &[]).await;
        let hits = metric("hscale_result_cache_hits");
        let mut s = raw_session(&[]).await;
        for round in 0..3 {
            let a = ask(&mut s, sql).await;
            assert_eq!(a, reference, "{sql}: round {round}");
        }
        assert!(
            metric("hscale_result_cache_hits") >= hits + 2,
            "{sql}: served from the cache"
        );
    }
}

/// Exact mode: a write through this proxy, through a second proxy and on
/// the backend directly is seen by the next read, every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exact_mode_sees_every_write() {
    setup().await;
    let _g = SERIAL.lock().await;
    // Not cold from another test's writes (`exec/cache.rs`).
    proxy_conn(None)
        .await
        .query_drop("HSCALE FLUSH CACHE")
        .await
        .unwrap();
    let other = ProxyProcess::start(cluster_config());
    let mut here = conn().await;
    let mut there = mysql_async::Conn::new(proxy_opts(other.port, Some(DB)))
        .await
        .unwrap();
    let mut direct = backend_conn(0, Some(DB)).await;
    let read = "SELECT v FROM counter WHERE id = 1";
    let mut expected: i64 = value(&mut here, read).await.unwrap().parse().unwrap();
    for round in 0..10 {
        let hits = metric("hscale_result_cache_hits");
        assert_eq!(value(&mut here, read).await, Some(expected.to_string()));
        assert_eq!(
            metric("hscale_result_cache_hits"),
            hits + 1,
            "round {round}: a read without a write in between is a hit"
        );
        let writer: &mut mysql_async::Conn = match round % 3 {
            0 => &mut here,
            1 => &mut there,
            _ => &mut direct,
        };
        writer
            .query_drop("UPDATE counter SET v = v + 1 WHERE id = 1")
            .await
            .unwrap();
        expected += 1;
        assert_eq!(
            value(&mut here, read).await,
            Some(expected.to_string()),
            "round {round}: the write is seen"
        );
    }
    // Also a write in a transaction, seen once committed (and not before
    // by other sessions, as on one server).
    direct.query_drop("BEGIN").await.unwrap();
    direct
        .query_drop("UPDATE counter SET v = v + 100 WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(value(&mut here, read).await, Some(expected.to_string()));
    direct.query_drop("COMMIT").await.unwrap();
    assert_eq!(
        value(&mut here, read).await,
        Some((expected + 100).to_string())
    );
}

/// TTL mode: a read within the TTL is served from the cache even after a
/// write (stale, as asked for); after the TTL, the fresh answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ttl_mode_serves_stale_within_the_ttl_and_fresh_after() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut c = conn().await;
    let mut direct = backend_conn(0, Some(DB)).await;
    let read = "SELECT v FROM stale WHERE id = 1";
    let ttl = Duration::from_millis(3000);
    // Forget what an earlier read stored: the next read stores, not
    // before `stored`, so it is served until `stored + ttl` at least.
    c.query_drop("HSCALE FLUSH CACHE").await.unwrap();
    let stored = Instant::now();
    let before: i64 = value(&mut c, read).await.unwrap().parse().unwrap();
    c.query_drop("UPDATE stale SET v = v + 1 WHERE id = 1")
        .await
        .unwrap();
    direct
        .query_drop("UPDATE stale SET v = v + 1 WHERE id = 1")
        .await
        .unwrap();
    // Every read that starts within the TTL is stale; once it is over,
    // the fresh answer comes.
    let mut stale_reads = 0;
    loop {
        let asked = Instant::now();
        let v: i64 = value(&mut c, read).await.unwrap().parse().unwrap();
        if asked < stored + ttl {
            assert_eq!(v, before, "stale within the TTL");
            stale_reads += 1;
        } else if v == before + 2 {
            break;
        }
        assert!(stored.elapsed() < ttl * 10, "still {v} after the TTL");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(stale_reads > 0, "a read within the TTL");
}

/// Sessions with another time_zone or sql_mode never share a cached
/// answer: each gets what it gets uncached.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_with_other_state_never_share() {
    setup().await;
    let _g = SERIAL.lock().await;
    let cases: [(&str, [&[&str]; 3]); 2] = [
        (
            "SELECT id, ts, UNIX_TIMESTAMP(ts) FROM tz ORDER BY id",
            [
                &[],
                &["SET time_zone = '+00:00'"],
                &["SET time_zone = '+05:30'"],
            ],
        ),
        (
            "SELECT id, s || 'x', 1 / 0 FROM tz ORDER BY id",
            [
                &[],
                &["SET sql_mode = 'PIPES_AS_CONCAT'"],
                &["SET sql_mode = 'ERROR_FOR_DIVISION_BY_ZERO,STRICT_ALL_TABLES'"],
            ],
        ),
    ];
    for (sql, setups) in cases {
        let mut references = Vec::new();
        for setup in setups {
            references.push(uncached(sql, setup).await);
        }
        assert_ne!(
            references[1], references[2],
            "{sql}: the states answer differently"
        );
        // Each state reads twice (stored, then served), in turns.
        for round in 0..2 {
            for (setup, reference) in setups.iter().zip(&references) {
                let mut s = raw_session(setup).await;
                assert_eq!(
                    &ask(&mut s, sql).await,
                    reference,
                    "{sql} {setup:?} round {round}"
                );
            }
        }
    }
}

/// The cache stays within `[cache] max_bytes`, evicting the least
/// recently used answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_bound_evicts() {
    setup().await;
    let _g = SERIAL.lock().await;
    let evictions = metric("hscale_result_cache_evictions");
    let mut c = conn().await;
    // 100 answers of about 1.5 KiB, then 100 of about 15 KiB: 1.6 MB,
    // over the 256 KiB bound.
    for i in 1..=100 {
        value(&mut c, &format!("SELECT s FROM big WHERE id = {i}")).await;
    }
    for i in 1..=100 {
        let sql = format!("SELECT id, s FROM big WHERE id BETWEEN {i} AND {}", i + 9);
        let rows: Vec<(i64, String)> = c.query(&sql).await.unwrap();
        assert_eq!(rows.len(), (100 - i + 1).min(10) as usize);
    }
    assert!(
        metric("hscale_result_cache_bytes") <= MAX_BYTES,
        "within the bound"
    );
    assert!(
        metric("hscale_result_cache_evictions") > evictions,
        "answers were evicted"
    );
    // An evicted answer is read again, right.
    let rows: Vec<(i64, String)> = c
        .query("SELECT id, s FROM big WHERE id BETWEEN 1 AND 10")
        .await
        .unwrap();
    assert_eq!(rows.len(), 10);
}

/// A partitioned table cached EXACT stays exact through a partition move
/// and an online ALTER (new physical tables get the version triggers):
/// writes on the backend directly, into the new physical tables, are seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn partition_change_and_online_alter_keep_exactness() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut c = conn().await;
    let direct_write = |b: usize, table: String| async move {
        let mut d = backend_conn(b, Some(DB)).await;
        d.query_drop(format!("UPDATE {table} SET k = k + 1 WHERE id = 7"))
            .await
            .unwrap();
    };
    let first = sum(&mut c).await;
    assert_eq!(sum(&mut c).await, first);
    c.query_drop("HSCALE MOVE_PARTITION('p', 'one', 'shard0')")
        .await
        .unwrap();
    assert_eq!(sum(&mut c).await, first);
    let hits = metric("hscale_result_cache_hits");
    assert_eq!(sum(&mut c).await, first, "stored again after the move");
    assert_eq!(
        metric("hscale_result_cache_hits"),
        hits + 1,
        "served after the move"
    );
    let (b, t) = physical_tables(&format!("{DB}.p"))
        .await
        .get("one")
        .cloned()
        .unwrap();
    direct_write(b, t.rsplit('.').next().unwrap().to_string()).await;
    assert_eq!(
        sum(&mut c).await,
        first + 1,
        "a direct write after the move"
    );
    c.query_drop("ALTER TABLE p MODIFY k BIGINT NOT NULL")
        .await
        .unwrap();
    assert_eq!(sum(&mut c).await, first + 1);
    let hits = metric("hscale_result_cache_hits");
    assert_eq!(sum(&mut c).await, first + 1);
    assert_eq!(
        metric("hscale_result_cache_hits"),
        hits + 1,
        "stored after the ALTER"
    );
    let (b, altered) = physical_tables(&format!("{DB}.p"))
        .await
        .get("one")
        .cloned()
        .unwrap();
    assert_ne!(altered, t, "the ALTER ran online, into new physical tables");
    direct_write(b, altered.rsplit('.').next().unwrap().to_string()).await;
    assert_eq!(
        sum(&mut c).await,
        first + 2,
        "a direct write after the ALTER"
    );
    // And the default partition, moved to the other backend and back.
    c.query_drop("HSCALE MOVE_PARTITION('p', 'one', 'shard1')")
        .await
        .unwrap();
    assert_eq!(sum(&mut c).await, first + 2);
    c.query_drop("UPDATE p SET k = k + 1 WHERE id = 7")
        .await
        .unwrap();
    assert_eq!(sum(&mut c).await, first + 3);
}

async fn sum(c: &mut mysql_async::Conn) -> i64 {
    let rows: Vec<(i64, i64)> = c.query("SELECT SUM(k), COUNT(*) FROM p").await.unwrap();
    rows[0].0
}

async fn triggers(c: &mut mysql_async::Conn) -> String {
    let sql = format!(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{DB}' AND EVENT_OBJECT_TABLE = 'audited'"
    );
    value(c, &sql).await.unwrap()
}

/// The commands: a view is refused, a missing table is 1146, UNCACHE drops
/// the triggers (a user's own trigger stays and still fires), SHOW CACHE
/// lists the rules, FLUSH CACHE empties this proxy's cache, and SHOW
/// DIGESTS counts hits per statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn commands_and_triggers() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut c = conn().await;
    c.query_drop("CREATE OR REPLACE VIEW v_wide AS SELECT id FROM wide")
        .await
        .unwrap();
    let e = c
        .query_drop("HSCALE CACHE_TABLE('v_wide', 'EXACT')")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1347, "{e}");
    let e = c
        .query_drop("HSCALE CACHE_TABLE('nothere', 'TTL', 10)")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1146, "{e}");
    // A user's trigger on the table stays beside ours.
    c.query_drop("CREATE TABLE audited (id INT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    c.query_drop("CREATE TABLE audit_log (n INT)")
        .await
        .unwrap();
    c.query_drop(
        "CREATE TRIGGER audited_ai AFTER INSERT ON audited FOR EACH ROW INSERT INTO audit_log VALUES (NEW.id)",
    )
    .await
    .unwrap();
    c.query_drop("HSCALE CACHE_TABLE('audited', 'EXACT')")
        .await
        .unwrap();
    let mut direct = backend_conn(0, Some(DB)).await;
    assert_eq!(triggers(&mut direct).await, "4");
    assert_eq!(
        value(&mut c, "SELECT COUNT(*) FROM audited").await.unwrap(),
        "0"
    );
    c.query_drop("INSERT INTO audited VALUES (1, 1)")
        .await
        .unwrap();
    assert_eq!(
        value(&mut c, "SELECT COUNT(*) FROM audited").await.unwrap(),
        "1"
    );
    assert_eq!(
        value(&mut c, "SELECT COUNT(*) FROM audit_log")
            .await
            .unwrap(),
        "1"
    );
    let rules: Vec<mysql_async::Row> = c.query("HSCALE SHOW CACHE").await.unwrap();
    assert!(rules
        .iter()
        .any(|r| r.get::<String, _>(1).unwrap() == "audited"));
    c.query_drop("HSCALE UNCACHE_TABLE('audited')")
        .await
        .unwrap();
    assert_eq!(triggers(&mut direct).await, "1", "the user's trigger stays");
    c.query_drop("INSERT INTO audited VALUES (2, 2)")
        .await
        .unwrap();
    assert_eq!(
        value(&mut c, "SELECT COUNT(*) FROM audit_log")
            .await
            .unwrap(),
        "2"
    );
    let e = c
        .query_drop("HSCALE UNCACHE_TABLE('audited')")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not cached"), "{e}");
    // Hits per digest.
    c.query_drop("HSCALE FLUSH CACHE").await.unwrap();
    assert_eq!(metric("hscale_result_cache_entries"), 0);
    for _ in 0..3 {
        value(&mut c, "SELECT MAX(d) FROM wide WHERE id < 3").await;
    }
    let digests: Vec<mysql_async::Row> = c.query("HSCALE SHOW DIGESTS").await.unwrap();
    let row = digests
        .iter()
        .find(|r| {
            let text: String = r.get("digest_text").unwrap();
            text.contains("MAX") && text.contains("wide")
        })
        .expect("digest");
    let hits: String = row.get("cache_hits").unwrap();
    assert_eq!(hits, "2");
}

/// `HSCALE CACHE_STATEMENT`: reads of one statement's shape (any
/// literals) of a table that is not cached are kept for the TTL; other
/// statements of the table are not.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn statement_ttl_rule() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut c = conn().await;
    c.query_drop("CREATE TABLE IF NOT EXISTS plain (id INT PRIMARY KEY, v INT NOT NULL)")
        .await
        .unwrap();
    c.query_drop("REPLACE INTO plain VALUES (1, 10), (2, 20)")
        .await
        .unwrap();
    c.query_drop("HSCALE CACHE_STATEMENT('SELECT v FROM plain WHERE id = 99', 'TTL', 60000)")
        .await
        .unwrap();
    let rules: Vec<mysql_async::Row> = c.query("HSCALE SHOW CACHE").await.unwrap();
    assert!(rules
        .iter()
        .any(|r| r.get::<String, _>(1).unwrap().contains("FROM plain")));
    assert_eq!(
        value(&mut c, "SELECT v FROM plain WHERE id = 2")
            .await
            .unwrap(),
        "20"
    );
    assert_eq!(
        value(&mut c, "SELECT v + 0 FROM plain WHERE id = 2")
            .await
            .unwrap(),
        "20"
    );
    let mut direct = backend_conn(0, Some(DB)).await;
    direct
        .query_drop("UPDATE plain SET v = 21 WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(
        value(&mut c, "SELECT v FROM plain WHERE id = 2")
            .await
            .unwrap(),
        "20",
        "kept for the TTL"
    );
    assert_eq!(
        value(&mut c, "SELECT v + 0 FROM plain WHERE id = 2")
            .await
            .unwrap(),
        "21",
        "another shape is not cached"
    );
    c.query_drop("HSCALE UNCACHE_STATEMENT('SELECT v FROM plain WHERE id = 1')")
        .await
        .unwrap();
    assert_eq!(
        value(&mut c, "SELECT v FROM plain WHERE id = 2")
            .await
            .unwrap(),
        "21",
        "uncached"
    );
    let e = c
        .query_drop("HSCALE CACHE_STATEMENT('SELECT v FROM plain', 'EXACT', 10)")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("'EXACT' takes none"), "{e}");
}

/// Issue 33's read-your-writes test with the cache EXACT: 200 clients run
/// the same read of `counter` through this proxy while writers commit
/// increments through two other proxies and directly on a backend. Every
/// read returns at least the value of every write acknowledged before it
/// was sent, and a client that wrote through this proxy reads its own
/// write next. 20 rounds (about 20,000 reads).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exact_cache_reads_see_every_write_acknowledged_before_them() {
    use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
    use std::sync::Arc;
    setup().await;
    let _g = SERIAL.lock().await;
    let other = [
        ProxyProcess::start(cluster_config()),
        ProxyProcess::start(cluster_config()),
    ];
    let writer_opts = vec![
        proxy_opts(other[0].port, Some(DB)),
        proxy_opts(other[1].port, Some(DB)),
        backend_opts(info().backend_ports[0], Some(DB)),
    ];
    let mut readers = Vec::new();
    for _ in 0..200 {
        readers.push(conn().await);
    }
    let acked = Arc::new(AtomicI64::new(0));
    let hits = metric("hscale_result_cache_hits");
    let read = "SELECT v FROM counter WHERE id = 1";
    for round in 0..20 {
        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for opts in &writer_opts {
            let (opts, acked, stop) = (opts.clone(), acked.clone(), stop.clone());
            writers.push(tokio::spawn(async move {
                let mut c = mysql_async::Conn::new(opts).await.unwrap();
                while !stop.load(Ordering::SeqCst) {
                    let v = increment_counter(&mut c).await;
                    acked.fetch_max(v, Ordering::SeqCst);
                    // Room between writes for hits.
                    tokio::time::sleep(Duration::from_millis(3)).await;
                }
            }));
        }
        let mut tasks = Vec::new();
        for (i, mut c) in readers.drain(..).enumerate() {
            let acked = acked.clone();
            tasks.push(tokio::spawn(async move {
                for n in 0..5 {
                    let mut floor = acked.load(Ordering::SeqCst);
                    if (i + n + round) % 40 == 0 {
                        floor = increment_counter(&mut c).await;
                        acked.fetch_max(floor, Ordering::SeqCst);
                    }
                    let v: i64 = c.query_first(read).await.unwrap().unwrap();
                    assert!(
                        v >= floor,
                        "round {round}, client {i}: read {v}, acknowledged {floor}"
                    );
                }
                c
            }));
        }
        for t in tasks {
            readers.push(t.await.unwrap());
        }
        stop.store(true, Ordering::SeqCst);
        for w in writers {
            w.await.unwrap();
        }
    }
    // A run may see no hit while writers write this often (and the
    // statement goes cold): once they stop and the longest cold pause
    // (250 ms) is over, the statement is cached again and hit.
    let mut c = readers.pop().unwrap();
    assert!(metric("hscale_result_cache_hits") >= hits);
    let hits = metric("hscale_result_cache_hits");
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric("hscale_result_cache_hits") == hits {
        let _: Option<i64> = c.query_first(read).await.unwrap();
        assert!(Instant::now() < deadline, "no hit in 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Connections of `backend` until two share `CONNECTION_ID() % 32` (the
/// first release's version slot: those two waited on one row).
async fn two_on_one_old_slot(backend: usize) -> (mysql_async::Conn, mysql_async::Conn) {
    let mut by_slot: std::collections::HashMap<u64, mysql_async::Conn> = Default::default();
    loop {
        let mut c = backend_conn(backend, Some(DB)).await;
        let id: u64 = c
            .query_first("SELECT CONNECTION_ID()")
            .await
            .unwrap()
            .unwrap();
        if let Some(first) = by_slot.remove(&(id % 32)) {
            return (first, c);
        }
        by_slot.insert(id % 32, c);
    }
}

/// Two transactions write two cached tables in opposite orders (other
/// rows, so one server runs both without waiting): neither waits for the
/// other because of the cache, on the backend directly (the two
/// connections are ones that shared a version row in the first release,
/// and their first writes insert their version rows) and through the
/// proxy; both commit, and the cached reads see both.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opposite_orders_never_wait_on_version_rows() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut c = conn().await;
    for sql in [
        "DROP TABLE IF EXISTS oa, ob",
        "CREATE TABLE oa (id INT PRIMARY KEY, v INT NOT NULL)",
        "CREATE TABLE ob (id INT PRIMARY KEY, v INT NOT NULL)",
        "INSERT INTO oa VALUES (1, 0), (2, 0)",
        "INSERT INTO ob VALUES (1, 0), (2, 0)",
        "HSCALE CACHE_TABLE('oa', 'EXACT')",
        "HSCALE CACHE_TABLE('ob', 'EXACT')",
    ] {
        c.query_drop(sql).await.unwrap();
    }
    let read = "SELECT SUM(oa.v), SUM(ob.v) FROM oa JOIN ob USING (id)";
    value(&mut c, read).await;
    async fn step(c: &mut mysql_async::Conn, sql: String, what: &str) {
        tokio::time::timeout(Duration::from_secs(3), c.query_drop(sql))
            .await
            .unwrap_or_else(|_| panic!("{what}: waited"))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    for round in 0..4i64 {
        let (mut one, mut two) = if round % 2 == 0 {
            two_on_one_old_slot(0).await
        } else {
            (conn().await, conn().await)
        };
        one.query_drop("BEGIN").await.unwrap();
        two.query_drop("BEGIN").await.unwrap();
        let sql = |t: &str, id: u32| format!("UPDATE {t} SET v = v + 1 WHERE id = {id}");
        let what = format!("round {round}");
        step(&mut one, sql("oa", 1), &what).await;
        step(&mut two, sql("ob", 2), &what).await;
        step(&mut one, sql("ob", 1), &what).await;
        step(&mut two, sql("oa", 2), &what).await;
        one.query_drop("COMMIT").await.unwrap();
        two.query_drop("COMMIT").await.unwrap();
        let expected = (round + 1) * 2;
        let got: (i64, i64) = c.query_first(read).await.unwrap().unwrap();
        assert_eq!(got, (expected, expected), "round {round}");
    }
}

async fn marks(direct: &mut mysql_async::Conn) -> String {
    value(
        direct,
        "SELECT COUNT(*) FROM hscale.cache_versions WHERE slot >= 9223372036854775808",
    )
    .await
    .unwrap()
}

async fn version_triggers(direct: &mut mysql_async::Conn, table: &str) -> String {
    let sql = format!(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{DB}' \
         AND EVENT_OBJECT_TABLE = '{table}' AND TRIGGER_NAME LIKE 'hscale\\_w%'"
    );
    value(direct, &sql).await.unwrap()
}

/// `read` through each of two proxies, twice (a miss or a hit, then a
/// hit), answers what the backend answers directly.
async fn same(
    read: &str,
    direct: &mut mysql_async::Conn,
    proxies: [&mut mysql_async::Conn; 2],
    what: &str,
) {
    let truth = value(direct, read).await;
    for p in proxies {
        for _ in 0..2 {
            assert_eq!(value(p, read).await, truth, "{what}");
        }
    }
}

/// TRUNCATE, DROP and CREATE of a cached table through the proxy: TRUNCATE
/// fires no trigger, yet neither this proxy nor another serves an answer
/// from before it; the table dropped and created again has its version
/// triggers back, so a write on the backend directly is seen; no mark is
/// left. Every answer is the backend's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn truncate_drop_and_create_through_the_proxy() {
    setup().await;
    let _g = SERIAL.lock().await;
    let other = ProxyProcess::start(cluster_config());
    let mut here = conn().await;
    let mut there = mysql_async::Conn::new(proxy_opts(other.port, Some(DB)))
        .await
        .unwrap();
    let mut direct = backend_conn(0, Some(DB)).await;
    for sql in [
        "DROP TABLE IF EXISTS tr",
        "CREATE TABLE tr (id INT PRIMARY KEY, v INT NOT NULL)",
        "INSERT INTO tr VALUES (1, 10), (2, 20), (3, 30)",
        "HSCALE CACHE_TABLE('tr', 'EXACT')",
    ] {
        here.query_drop(sql).await.unwrap();
    }
    let read = "SELECT CONCAT(COUNT(*), '/', IFNULL(SUM(v), 0)) FROM tr";
    same(read, &mut direct, [&mut here, &mut there], "first reads").await;
    let hits = metric("hscale_result_cache_hits");
    same(read, &mut direct, [&mut here, &mut there], "hits").await;
    assert!(metric("hscale_result_cache_hits") > hits);
    here.query_drop("TRUNCATE TABLE tr").await.unwrap();
    same(read, &mut direct, [&mut here, &mut there], "after TRUNCATE").await;
    here.query_drop("INSERT INTO tr VALUES (4, 40)")
        .await
        .unwrap();
    same(
        read,
        &mut direct,
        [&mut here, &mut there],
        "after an INSERT",
    )
    .await;
    here.query_drop("DROP TABLE tr").await.unwrap();
    here.query_drop("CREATE TABLE tr (id INT PRIMARY KEY, v INT NOT NULL)")
        .await
        .unwrap();
    // The session's next statement runs once the triggers are back.
    same(read, &mut direct, [&mut here, &mut there], "created again").await;
    assert_eq!(version_triggers(&mut direct, "tr").await, "3");
    direct
        .query_drop("INSERT INTO tr VALUES (5, 50)")
        .await
        .unwrap();
    same(read, &mut direct, [&mut here, &mut there], "a direct write").await;
    // RENAME another table onto the cached name: triggers put on it.
    for sql in [
        "CREATE TABLE tr_new (id INT PRIMARY KEY, v INT NOT NULL)",
        "INSERT INTO tr_new VALUES (6, 60)",
        "RENAME TABLE tr TO tr_old, tr_new TO tr",
    ] {
        here.query_drop(sql).await.unwrap();
    }
    same(read, &mut direct, [&mut here, &mut there], "renamed onto").await;
    assert_eq!(version_triggers(&mut direct, "tr").await, "3");
    direct.query_drop("UPDATE tr SET v = v + 1").await.unwrap();
    same(
        read,
        &mut direct,
        [&mut here, &mut there],
        "renamed, written",
    )
    .await;
    assert_eq!(marks(&mut direct).await, "0", "no mark left");
    here.query_drop("DROP TABLE tr_old").await.unwrap();
}

/// A cached table dropped and created again, and another table renamed
/// onto its name, on the backend directly (no proxy sees the DDL, and the
/// new table has no version triggers): no proxy serves an answer from
/// before, the next miss puts the triggers back (its version moved
/// first, so answers other proxies kept are out of date too), and a
/// write on the backend directly is seen after each.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dropped_and_created_again_on_a_backend_directly() {
    setup().await;
    let _g = SERIAL.lock().await;
    let other = ProxyProcess::start(cluster_config());
    let mut here = conn().await;
    let mut there = mysql_async::Conn::new(proxy_opts(other.port, Some(DB)))
        .await
        .unwrap();
    let mut direct = backend_conn(0, Some(DB)).await;
    for sql in [
        "DROP TABLE IF EXISTS dd, dd_new, dd_old",
        "CREATE TABLE dd (id INT PRIMARY KEY, v INT NOT NULL)",
        "INSERT INTO dd VALUES (1, 10), (2, 20)",
        "HSCALE CACHE_TABLE('dd', 'EXACT')",
    ] {
        here.query_drop(sql).await.unwrap();
    }
    let read = "SELECT CONCAT(COUNT(*), '/', IFNULL(SUM(v), 0)) FROM dd";
    same(read, &mut direct, [&mut here, &mut there], "first reads").await;
    let hits = metric("hscale_result_cache_hits");
    same(read, &mut direct, [&mut here, &mut there], "hits").await;
    assert!(metric("hscale_result_cache_hits") > hits);
    for sql in [
        "DROP TABLE dd",
        "CREATE TABLE dd (id INT PRIMARY KEY, v INT NOT NULL)",
        "INSERT INTO dd VALUES (1, 99)",
    ] {
        direct.query_drop(sql).await.unwrap();
    }
    same(read, &mut direct, [&mut here, &mut there], "created again").await;
    assert_eq!(version_triggers(&mut direct, "dd").await, "3");
    direct
        .query_drop("INSERT INTO dd VALUES (2, 5)")
        .await
        .unwrap();
    same(read, &mut direct, [&mut here, &mut there], "then written").await;
    // Cached again, past any cold pause (answers stored and invalidated
    // unhit), with the same answers.
    let hits = metric("hscale_result_cache_hits");
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric("hscale_result_cache_hits") == hits {
        same(read, &mut direct, [&mut here, &mut there], "hits again").await;
        assert!(Instant::now() < deadline, "not cached again in 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for sql in [
        "CREATE TABLE dd_new (id INT PRIMARY KEY, v INT NOT NULL)",
        "INSERT INTO dd_new VALUES (7, 70)",
        "RENAME TABLE dd TO dd_old, dd_new TO dd",
    ] {
        direct.query_drop(sql).await.unwrap();
    }
    same(read, &mut direct, [&mut here, &mut there], "renamed onto").await;
    direct.query_drop("UPDATE dd SET v = v + 1").await.unwrap();
    same(
        read,
        &mut direct,
        [&mut here, &mut there],
        "renamed, written",
    )
    .await;
    assert_eq!(version_triggers(&mut direct, "dd").await, "3");
    here.query_drop("DROP TABLE dd_old").await.unwrap();
}

/// What a proxy killed in the middle leaves: a read's miss keeps nothing
/// on a server (the triggers are in place, no mark); a DDL statement's
/// mark left behind only stops caching the table (reads stay right),
/// until `HSCALE CACHE_TABLE` clears it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_proxy_leaves_nothing_half_done() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut here = conn().await;
    let mut direct = backend_conn(0, Some(DB)).await;
    for sql in [
        "DROP TABLE IF EXISTS slow_big",
        "CREATE TABLE slow_big (id INT PRIMARY KEY, v INT NOT NULL)",
    ] {
        here.query_drop(sql).await.unwrap();
    }
    direct
        .query_drop("INSERT INTO slow_big SELECT seq, seq % 7 FROM seq_1_to_3000")
        .await
        .unwrap();
    here.query_drop("HSCALE CACHE_TABLE('slow_big', 'EXACT')")
        .await
        .unwrap();
    // A slow miss on a proxy of its own, killed while it runs.
    let mut other = ProxyProcess::start(cluster_config());
    let port = other.port;
    let slow = tokio::spawn(async move {
        let mut c = mysql_async::Conn::new(proxy_opts(port, Some(DB)))
            .await
            .unwrap();
        c.query_drop(
            "SELECT COUNT(*), SUM(a.v * b.v) FROM slow_big a JOIN slow_big b ON a.v <= b.v",
        )
        .await
    });
    // Killed once the read runs on the backend.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let running: usize = direct
            .query_first(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE INFO LIKE 'SELECT COUNT(*), SUM(a.v * b.v) FROM slow_big%' AND COMMAND = 'Query'",
            )
            .await
            .unwrap()
            .unwrap();
        if running == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the slow read never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    other.child.kill().unwrap();
    other.child.wait().unwrap();
    assert!(
        slow.await.unwrap().is_err(),
        "the read ended with its proxy"
    );
    assert_eq!(version_triggers(&mut direct, "slow_big").await, "3");
    assert_eq!(marks(&mut direct).await, "0");
    let read = "SELECT COUNT(*), SUM(v) FROM slow_big";
    let truth: (i64, i64) = direct.query_first(read).await.unwrap().unwrap();
    let got: (i64, i64) = here.query_first(read).await.unwrap().unwrap();
    assert_eq!(got, truth);
    // A mark a proxy killed during a DDL statement left.
    direct
        .query_drop(format!(
            "INSERT INTO hscale.cache_versions VALUES ('{DB}', 'slow_big', 9223372036854775809, 1)"
        ))
        .await
        .unwrap();
    let hits = metric("hscale_result_cache_hits");
    for i in 0..3 {
        direct
            .query_drop(format!(
                "UPDATE slow_big SET v = v + 1 WHERE id = {}",
                i + 1
            ))
            .await
            .unwrap();
        for _ in 0..2 {
            let truth: (i64, i64) = direct.query_first(read).await.unwrap().unwrap();
            let got: (i64, i64) = here.query_first(read).await.unwrap().unwrap();
            assert_eq!(got, truth);
        }
    }
    assert_eq!(
        metric("hscale_result_cache_hits"),
        hits,
        "marked: not cached"
    );
    here.query_drop("HSCALE CACHE_TABLE('slow_big', 'EXACT')")
        .await
        .unwrap();
    assert_eq!(marks(&mut direct).await, "0");
    for _ in 0..2 {
        let got: (i64, i64) = here.query_first(read).await.unwrap().unwrap();
        assert_eq!(got, direct.query_first(read).await.unwrap().unwrap());
    }
    assert_eq!(metric("hscale_result_cache_hits"), hits + 1, "cached again");
}

/// Version rows stay few: 70 connections writing a cached table leave 70
/// rows, which the next version reads fold into one (`versions::fold`)
/// without moving the table's sum: the answer stored before the fold is
/// still served after it, and writes after it are still seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn version_rows_are_folded_without_moving_the_sum() {
    setup().await;
    let _g = SERIAL.lock().await;
    let mut c = conn().await;
    for sql in [
        "DROP TABLE IF EXISTS fo",
        "CREATE TABLE fo (id INT PRIMARY KEY, v INT NOT NULL)",
        "INSERT INTO fo SELECT seq, 0 FROM seq_1_to_70",
        "HSCALE CACHE_TABLE('fo', 'EXACT')",
    ] {
        c.query_drop(sql).await.unwrap();
    }
    let mut direct = backend_conn(0, Some(DB)).await;
    let rows = "SELECT CONCAT(COUNT(*), '/', SUM(version)) FROM hscale.cache_versions \
                WHERE db = 'result_cache' AND tbl = 'fo'";
    let mut writers = Vec::new();
    for i in 1..=70 {
        let mut w = backend_conn(0, Some(DB)).await;
        w.query_drop(format!("UPDATE fo SET v = v + 1 WHERE id = {i}"))
            .await
            .unwrap();
        writers.push(w);
    }
    let before = value(&mut direct, rows).await.unwrap();
    let (count, sum) = before.split_once('/').unwrap();
    assert!(count.parse::<u64>().unwrap() >= 70, "{before}");
    let read = "SELECT SUM(v) FROM fo";
    assert_eq!(value(&mut c, read).await.as_deref(), Some("70"));
    let start = std::time::Instant::now();
    loop {
        let now = value(&mut direct, rows).await.unwrap();
        let (n, s) = now.split_once('/').unwrap();
        assert_eq!(s, sum, "the sum stays");
        if n.parse::<u64>().unwrap() < 10 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "folded: {now}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Each read of the table reads its versions (and asks for a fold).
        assert_eq!(value(&mut c, read).await.as_deref(), Some("70"));
    }
    let hits = metric("hscale_result_cache_hits");
    assert_eq!(value(&mut c, read).await.as_deref(), Some("70"));
    assert_eq!(metric("hscale_result_cache_hits"), hits + 1, "still served");
    // A connection whose row was folded writes again: a new row, seen.
    writers[0]
        .query_drop("UPDATE fo SET v = v + 1 WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(value(&mut c, read).await.as_deref(), Some("71"));
}
