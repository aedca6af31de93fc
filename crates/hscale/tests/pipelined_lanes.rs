#![allow(clippy::unwrap_used)]
//! Pipelined lanes (`backend/lane.rs`, `exec/pipeline.rs`): under a crowd
//! of sessions, autocommit reads of one worker share a backend connection,
//! written together and answered in order. Each test runs a crowd of point
//! reads on its own proxy with one worker (so that the crowd is on the
//! lanes) and checks that what the lanes answer is what one server
//! answers: rows, column metadata, warnings, errors; that a read waiting
//! for a lock holds up no other; and that the lanes were used.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

const DB: &str = "pipelined";
const ROWS: i64 = 200;

/// One test at a time: each runs a crowd.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn setup() {
    cluster(2);
    fresh_db(DB).await;
    let mut c = backend_conn(0, Some(DB)).await;
    c.query_drop(
        "CREATE TABLE t (id INT PRIMARY KEY, c VARCHAR(20), d DECIMAL(10,2), ts DATETIME(3), b VARBINARY(8))",
    )
    .await
    .unwrap();
    c.query_drop("CREATE TABLE u (id INT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO u VALUES (1, 10)").await.unwrap();
    let values: Vec<String> = (1..=ROWS)
        .map(|i| {
            format!(
                "({i}, 'row-{i}', {i}.25, '2026-12-0{} 10:00:00.{:03}', X'{:04x}')",
                i % 9 + 1,
                i % 1000,
                i
            )
        })
        .collect();
    c.query_drop(format!("INSERT INTO t VALUES {}", values.join(", ")))
        .await
        .unwrap();
}

/// A proxy of its own, one worker, `/metrics` served.
fn own_proxy() -> (ProxyProcess, std::net::SocketAddr) {
    let mut config = cluster_config();
    let port = hscale::playground::mariadb::free_port().unwrap();
    config.metrics.listen = format!("127.0.0.1:{port}");
    config.proxy.workers = 1;
    let proxy = ProxyProcess::start(config);
    let at = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    // `/metrics` may come up a moment after the MySQL listener.
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(at).is_err() {
        assert!(Instant::now() < deadline, "/metrics not served");
        std::thread::sleep(Duration::from_millis(10));
    }
    (proxy, at)
}

/// `n` sessions reading rows of `t` by key until `stop`; each answer is
/// checked against the row's known values. Returns the count of reads.
fn crowd(port: u16, n: usize, stop: Arc<AtomicBool>) -> Vec<tokio::task::JoinHandle<u64>> {
    (0..n)
        .map(|k| {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut c = mysql_async::Conn::new(proxy_opts(port, Some(DB)))
                    .await
                    .unwrap();
                let mut done = 0u64;
                let mut id = (k as i64 * 7) % ROWS + 1;
                while !stop.load(Ordering::Relaxed) {
                    let row: Option<(i64, String, String)> = c
                        .query_first(format!(
                            "SELECT id, c, CAST(d AS CHAR) FROM t WHERE id = {id}"
                        ))
                        .await
                        .unwrap();
                    assert_eq!(row, Some((id, format!("row-{id}"), format!("{id}.25"))));
                    done += 1;
                    id = id % ROWS + 1;
                }
                c.disconnect().await.unwrap();
                done
            })
        })
        .collect()
}

async fn end(stop: &AtomicBool, crowd: Vec<tokio::task::JoinHandle<u64>>) -> u64 {
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for h in crowd {
        total += tokio::time::timeout(Duration::from_secs(60), h)
            .await
            .expect("a crowd session hangs")
            .unwrap();
    }
    total
}

/// Wait until the lanes answered at least `n` reads.
async fn until_pipelined(at: std::net::SocketAddr, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric_at(at, "hscale_pipelined_statements") < n {
        assert!(
            Instant::now() < deadline,
            "the lanes answered too few reads"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Rows and column metadata of `sql` as the session `c` gets them.
async fn answer(
    c: &mut mysql_async::Conn,
    sql: &str,
) -> (Vec<Vec<mysql_async::Value>>, Vec<String>) {
    let result: Vec<mysql_async::Row> = c.query(sql).await.unwrap();
    let columns = result
        .first()
        .map(|r| {
            r.columns_ref()
                .iter()
                .map(|col| {
                    format!(
                        "{} {} {:?} {:?} {} {} {}",
                        col.name_str(),
                        col.org_name_str(),
                        col.column_type(),
                        col.flags(),
                        col.column_length(),
                        col.decimals(),
                        col.character_set()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let rows = result.into_iter().map(|r| r.unwrap()).collect();
    (rows, columns)
}

/// Under a crowd the lanes answer most reads; every answer is the row's,
/// and a session's reads of every column type (rows and column metadata)
/// equal one server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowds_reads_are_answered_on_lanes_as_one_server_answers_them() {
    let _one = SERIAL.lock().await;
    setup().await;
    let (proxy, at) = own_proxy();
    let stop = Arc::new(AtomicBool::new(false));
    let before = metric_at(at, "hscale_pipelined_statements");
    let readers = crowd(proxy.port, 32, stop.clone());
    until_pipelined(at, before + 500).await;
    let mut mine = mysql_async::Conn::new(proxy_opts(proxy.port, Some(DB)))
        .await
        .unwrap();
    let mut direct = backend_conn(0, Some(DB)).await;
    let on_lanes = metric_at(at, "hscale_pipelined_statements");
    for id in [1, 17, 99, ROWS] {
        for sql in [
            format!("SELECT * FROM t WHERE id = {id}"),
            format!("SELECT id, d * 2, ts + INTERVAL 1 DAY, HEX(b) FROM t WHERE id = {id}"),
            format!("SELECT COUNT(*), SUM(d), MAX(c) FROM t WHERE id <= {id}"),
            format!("SELECT * FROM t WHERE id = {id} + 100000"),
        ] {
            assert_eq!(
                answer(&mut mine, &sql).await,
                answer(&mut direct, &sql).await,
                "{sql}"
            );
        }
    }
    let total = end(&stop, readers).await;
    let pipelined = metric_at(at, "hscale_pipelined_statements") - before;
    assert!(
        metric_at(at, "hscale_pipelined_statements") > on_lanes,
        "the session's own reads went on lanes too"
    );
    eprintln!("{pipelined} of {total} crowd reads on lanes");
    assert!(
        pipelined * 2 > total,
        "{pipelined} of {total} reads on lanes"
    );
}

/// A read with a warning, or an error, under a crowd: the client gets the
/// warning count, SHOW WARNINGS and the error one server gives (a lane
/// cannot read a statement's warnings back: such a read runs again the
/// ordinary way; an error is relayed as it is, or kept as the ordinary
/// way keeps it: a missing table, a syntax error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warnings_and_errors_under_a_crowd_are_one_servers() {
    let _one = SERIAL.lock().await;
    setup().await;
    let (proxy, at) = own_proxy();
    let stop = Arc::new(AtomicBool::new(false));
    let before = metric_at(at, "hscale_pipelined_statements");
    let readers = crowd(proxy.port, 32, stop.clone());
    until_pipelined(at, before + 500).await;
    let mut mine = mysql_async::Conn::new(proxy_opts(proxy.port, Some(DB)))
        .await
        .unwrap();
    let mut direct = backend_conn(0, Some(DB)).await;
    for sql in [
        "SELECT CAST('12x' AS SIGNED) AS v FROM t WHERE id = 3",
        "SELECT id FROM t WHERE c = 5 ORDER BY id LIMIT 2",
    ] {
        for _ in 0..20 {
            let got = answer(&mut mine, sql).await;
            let warnings = mine.get_warnings();
            let shown: Vec<(String, u32, String)> = mine.query("SHOW WARNINGS").await.unwrap();
            let want = answer(&mut direct, sql).await;
            let want_warnings = direct.get_warnings();
            let want_shown: Vec<(String, u32, String)> =
                direct.query("SHOW WARNINGS").await.unwrap();
            assert_eq!(
                (got, warnings, shown),
                (want, want_warnings, want_shown),
                "{sql}"
            );
        }
    }
    for sql in [
        "SELECT nope FROM t WHERE id = 1",
        "SELECT * FROM missing_table WHERE id = 1",
        "SELECT id FROM t WHERE id = 1 AND (SELECT 1 UNION SELECT 2) = 1",
    ] {
        for _ in 0..20 {
            let got = mine.query_drop(sql).await.unwrap_err().to_string();
            let want = direct.query_drop(sql).await.unwrap_err().to_string();
            assert_eq!(got, want, "{sql}");
        }
    }
    end(&stop, readers).await;
}

/// A read waiting for a table lock on the backend is the first statement
/// of its lane: the reads behind it run the ordinary way after a moment
/// and no read goes to the stalled lane, so the crowd goes on; the waiting
/// read gets its answer once the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_waiting_for_a_lock_holds_up_no_other() {
    let _one = SERIAL.lock().await;
    setup().await;
    let (proxy, at) = own_proxy();
    let stop = Arc::new(AtomicBool::new(false));
    let before = metric_at(at, "hscale_pipelined_statements");
    let readers = crowd(proxy.port, 32, stop.clone());
    until_pipelined(at, before + 500).await;
    let mut lock = backend_conn(0, Some(DB)).await;
    lock.query_drop("LOCK TABLES u WRITE").await.unwrap();
    let port = proxy.port;
    let waiting = tokio::spawn(async move {
        let mut c = mysql_async::Conn::new(proxy_opts(port, Some(DB)))
            .await
            .unwrap();
        c.query_first::<i64, _>("SELECT v FROM u WHERE id = 1")
            .await
            .unwrap()
    });
    // The read waits for the lock on the backend.
    let mut direct = backend_conn(0, None).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n: i64 = direct
            .query_first(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE INFO = 'SELECT v FROM u WHERE id = 1' AND STATE LIKE 'Waiting for table%'",
            )
            .await
            .unwrap()
            .unwrap();
        if n > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the read never waited for the lock"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The crowd goes on while the read waits.
    let reads = Arc::new(AtomicU64::new(0));
    let mut c = mysql_async::Conn::new(proxy_opts(port, Some(DB)))
        .await
        .unwrap();
    let started = Instant::now();
    for id in 1..=200 {
        let v: Option<String> = c
            .query_first(format!("SELECT c FROM t WHERE id = {id}"))
            .await
            .unwrap();
        assert_eq!(v, Some(format!("row-{id}")));
        reads.fetch_add(1, Ordering::Relaxed);
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "200 reads took {:?} beside a read waiting for a lock",
        started.elapsed()
    );
    assert!(!waiting.is_finished(), "the locked read was answered");
    lock.query_drop("UNLOCK TABLES").await.unwrap();
    let v = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the locked read hangs")
        .unwrap();
    assert_eq!(v, Some(10));
    end(&stop, readers).await;
}
