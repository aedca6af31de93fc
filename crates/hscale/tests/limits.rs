#![allow(clippy::unwrap_used)]
//! What one client may cost the proxy before and after it logs in:
//! connection slots taken only after authentication, the handshake
//! allowance and timeout, wait_timeout, packet buffers that grow only as
//! bytes arrive, the limit on prepared-statement long data, the
//! failed-login throttle, the client write timeout and the planning
//! budget. Each test runs a proxy of its own with the limits it checks.

mod common;

use std::time::{Duration, Instant};

use common::raw::{err_code, Raw, CLIENT_CAPS};
use common::*;
use hscale_wire::consts::com;
use mysql_async::prelude::*;
use tokio::io::AsyncWriteExt;

fn proxy_with(tweak: impl FnOnce(&mut hscale::Config)) -> hscale::RunningProxy {
    cluster(1);
    let mut config = cluster_config();
    tweak(&mut config);
    hscale::RunningProxy::start(config, "127.0.0.1:0").unwrap()
}

async fn select_one(port: u16) -> Result<Option<i32>, mysql_async::Error> {
    let mut c = mysql_async::Conn::new(proxy_opts(port, None)).await?;
    let one = c.query_first("SELECT 1").await?;
    c.disconnect().await?;
    Ok(one)
}

/// A hundred connections that open and never log in take no client slot
/// and hold at most `max_handshakes` places: a real client still logs in
/// and runs a statement, and `max_connections` counts logged-in clients.
#[tokio::test]
async fn half_open_connections_do_not_lock_out_clients() {
    let proxy = proxy_with(|c| {
        c.proxy.max_connections = 3;
        c.proxy.max_handshakes = 20;
        c.proxy.handshake_timeout_ms = 60_000;
    });
    let port = proxy.addr.port();
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle.push(Raw::open(port).await);
    }
    assert!(proxy.context.handshakes() <= 20);
    assert_eq!(select_one(port).await.unwrap(), Some(1));
    // Three clients logged in fill max_connections; the fourth gets 1040
    // once it authenticated.
    let mut logged_in = Vec::new();
    for _ in 0..3 {
        let (r, ok) = Raw::login(port, "root", "", CLIENT_CAPS).await;
        assert_eq!(ok.first(), Some(0));
        logged_in.push(r);
    }
    let (_, p) = Raw::login(port, "root", "", CLIENT_CAPS).await;
    assert_eq!(err_code(&p.payload), Some(1040));
    drop(logged_in);
    drop(idle);
}

/// A connection that sends nothing after the handshake is closed when the
/// handshake timeout passes.
#[tokio::test]
async fn silent_connection_is_closed_after_the_handshake_timeout() {
    let proxy = proxy_with(|c| c.proxy.handshake_timeout_ms = 500);
    let start = Instant::now();
    let mut r = Raw::open(proxy.addr.port()).await;
    assert!(r.is_closed().await, "still open after 10 s");
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(5),
        "closed after {took:?}"
    );
    assert_eq!(proxy.context.handshakes(), 0);
    assert_eq!(select_one(proxy.addr.port()).await.unwrap(), Some(1));
}

/// A logged-in client silent for longer than wait_timeout is disconnected:
/// `[proxy] wait_timeout_ms`, or the session's own `SET wait_timeout`. A
/// client that keeps talking is not.
#[tokio::test]
async fn idle_sessions_end_at_wait_timeout() {
    let proxy = proxy_with(|c| c.proxy.wait_timeout_ms = 1_000);
    let port = proxy.addr.port();
    let start = Instant::now();
    let (mut idle, ok) = Raw::login(port, "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0));
    let mut busy = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .unwrap();
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        busy.query_drop("DO 1").await.unwrap();
    }
    assert!(idle.is_closed().await);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "closed after {took:?}");
    busy.disconnect().await.unwrap();

    let proxy = proxy_with(|_| {});
    let mut c = mysql_async::Conn::new(proxy_opts(proxy.addr.port(), None))
        .await
        .unwrap();
    c.query_drop("SET wait_timeout = 1").await.unwrap();
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert!(
        c.query_drop("DO 1").await.is_err(),
        "session outlived its wait_timeout"
    );
    let mut c = mysql_async::Conn::new(proxy_opts(proxy.addr.port(), None))
        .await
        .unwrap();
    c.query_drop("SET wait_timeout = 1").await.unwrap();
    c.query_drop("SET wait_timeout = DEFAULT").await.unwrap();
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    c.query_drop("DO 1").await.unwrap();
    c.disconnect().await.unwrap();
}

/// Bytes allocated and not yet freed in this test process (the proxy
/// runs in it): a reservation counts here even while its pages are
/// untouched, unlike in the resident set.
struct Counting;

static LIVE: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(0);

#[allow(unsafe_code)]
// SAFETY: every call is passed on to the system allocator unchanged; only
// a counter is updated besides.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, std::sync::atomic::Ordering::Relaxed);
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE.fetch_sub(layout.size() as isize, std::sync::atomic::Ordering::Relaxed);
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(
            new as isize - layout.size() as isize,
            std::sync::atomic::Ordering::Relaxed,
        );
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live_mib() -> isize {
    LIVE.load(std::sync::atomic::Ordering::Relaxed) >> 20
}

/// Clients that announce 16 MiB packets and send ten bytes of each make
/// the proxy hold about what arrived, not 16 MiB each (counted by this
/// process's allocator); before login such a header is refused at once.
#[tokio::test]
async fn announced_packets_are_not_reserved() {
    let proxy = proxy_with(|_| {});
    let port = proxy.addr.port();
    let mut clients = Vec::new();
    for _ in 0..64 {
        let (r, ok) = Raw::login(port, "root", "", CLIENT_CAPS).await;
        assert_eq!(ok.first(), Some(0));
        clients.push(r);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = live_mib();
    for r in &mut clients {
        let s = r.s.get_mut();
        s.write_all(&[0xff, 0xff, 0xff, 0]).await.unwrap();
        s.write_all(&[com::QUERY; 10]).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = live_mib();
    eprintln!("{before} MiB allocated, {after} MiB after 64 announced 16 MiB packets");
    assert!(
        after < before + 128,
        "64 announced packets grew the allocations from {before} MiB to {after} MiB"
    );
    drop(clients);

    // Before login the limit is small: the header alone is refused.
    let mut r = Raw::open(port).await;
    r.s.get_mut()
        .write_all(&[0xff, 0xff, 0xff, 1])
        .await
        .unwrap();
    let p = r.read().await.expect("an error packet");
    assert_eq!(err_code(&p.payload), Some(1153));
    assert!(r.is_closed().await);
}

/// Read one prepare answer: the statement id.
async fn prepare(r: &mut Raw, sql: &str) -> u32 {
    let mut p = vec![com::STMT_PREPARE];
    p.extend_from_slice(sql.as_bytes());
    r.send(0, &p).await;
    let ok = r.read().await.unwrap();
    assert_eq!(
        ok.first(),
        Some(0),
        "{:?}",
        String::from_utf8_lossy(&ok.payload)
    );
    let id = u32::from_le_bytes(ok.payload[1..5].try_into().unwrap());
    let columns = u16::from_le_bytes([ok.payload[5], ok.payload[6]]) as usize;
    let params = u16::from_le_bytes([ok.payload[7], ok.payload[8]]) as usize;
    let mut rest = 0;
    for n in [params, columns] {
        if n > 0 {
            rest += n + 1;
        }
    }
    for _ in 0..rest {
        r.read().await.unwrap();
    }
    id
}

fn long_data(id: u32, chunk: &[u8]) -> Vec<u8> {
    let mut p = vec![com::STMT_SEND_LONG_DATA];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&0u16.to_le_bytes());
    p.extend_from_slice(chunk);
    p
}

/// COM_STMT_EXECUTE of one BLOB parameter sent as long data.
fn execute(id: u32) -> Vec<u8> {
    let mut p = vec![com::STMT_EXECUTE];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0);
    p.extend_from_slice(&1u32.to_le_bytes());
    p.extend_from_slice(&[0, 1, 0xfc, 0]);
    p
}

/// Long data past max_allowed_packet for one statement is dropped, and
/// executions fail with the server's error until COM_STMT_RESET.
#[tokio::test]
async fn long_data_is_limited_per_statement() {
    let proxy = proxy_with(|c| c.proxy.max_allowed_packet = 1024 * 1024);
    let (mut r, ok) = Raw::login(proxy.addr.port(), "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0));
    let id = prepare(&mut r, "SELECT LENGTH(?)").await;
    let chunk = vec![b'x'; 400 * 1024];
    for _ in 0..3 {
        r.send(0, &long_data(id, &chunk)).await;
    }
    for _ in 0..2 {
        r.send(0, &execute(id)).await;
        let p = r.read().await.unwrap();
        assert_eq!(err_code(&p.payload), Some(1105));
        assert!(
            String::from_utf8_lossy(&p.payload).contains("longer than 'max_allowed_packet'"),
            "{:?}",
            String::from_utf8_lossy(&p.payload)
        );
    }
    let mut reset = vec![com::STMT_RESET];
    reset.extend_from_slice(&id.to_le_bytes());
    r.send(0, &reset).await;
    assert_eq!(r.read().await.unwrap().first(), Some(0));
    // Within the limit: the value arrives whole.
    r.send(0, &long_data(id, &chunk)).await;
    r.send(0, &long_data(id, &chunk)).await;
    r.send(0, &execute(id)).await;
    let mut packets = Vec::new();
    loop {
        let p = r.read().await.unwrap();
        assert_ne!(
            p.first(),
            Some(0xff),
            "{:?}",
            String::from_utf8_lossy(&p.payload)
        );
        let is_eof = p.first() == Some(0xfe) && p.payload.len() < 9;
        packets.push(p);
        if is_eof && packets.len() > 3 {
            break;
        }
    }
    // Binary row: header, null bitmap, then LENGTH() as an INT.
    let row = &packets[3].payload;
    let n = i32::from_le_bytes(row[2..6].try_into().unwrap());
    assert_eq!(n, 800 * 1024);
}

/// The failed-login throttle: past the threshold, each failed login from
/// an address is answered later; a successful one (answered late too)
/// clears the count.
#[tokio::test]
async fn failed_logins_are_throttled_per_address() {
    let proxy = proxy_with(|c| {
        c.proxy.failed_login_threshold = 2;
        c.proxy.failed_login_delay_ms = 1_500;
        c.proxy.failed_login_max_delay_ms = 3_000;
    });
    let port = proxy.addr.port();
    let attempt = |password: &'static str| async move {
        let start = Instant::now();
        let (_, p) = Raw::login(port, "app", password, CLIENT_CAPS).await;
        (p.first(), start.elapsed())
    };
    // Bounds far apart, so a loaded machine's slow login is never mistaken
    // for a delay: undelayed logins take well under a second here.
    let fast = Duration::from_millis(1_000);
    for _ in 0..2 {
        let (first, took) = attempt("wrong").await;
        assert_eq!(first, Some(0xff));
        assert!(took < fast, "failure within the threshold took {took:?}");
    }
    let (_, took) = attempt("wrong").await;
    assert!(
        took >= Duration::from_millis(1_500) && took < Duration::from_millis(3_000),
        "{took:?}"
    );
    let (_, took) = attempt("wrong").await;
    assert!(took >= Duration::from_millis(3_000), "{took:?}");
    let (_, took) = attempt("wrong").await;
    assert!(
        took >= Duration::from_millis(3_000) && took < Duration::from_millis(4_500),
        "capped (uncapped would be 6 s): {took:?}"
    );
    // The right password still logs in, late, and clears the count.
    let (first, took) = attempt("secret").await;
    assert_eq!(first, Some(0));
    assert!(took >= Duration::from_millis(3_000), "{took:?}");
    let (first, took) = attempt("wrong").await;
    assert_eq!(first, Some(0xff));
    assert!(took < fast, "count not cleared: {took:?}");
    // Off by default: another proxy answers at once.
    let plain = proxy_with(|_| {});
    for _ in 0..5 {
        let start = Instant::now();
        let (_, p) = Raw::login(plain.addr.port(), "app", "wrong", CLIENT_CAPS).await;
        assert_eq!(p.first(), Some(0xff));
        assert!(start.elapsed() < fast);
    }
}

/// A client that asks for a large result and stops reading holds its
/// backend connection no longer than `client_write_timeout_ms`: with a
/// pool of one connection per backend, another client is served once the
/// stalled one is cut off, and the stalled client's connection is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_frees_its_backend_connection() {
    let proxy = proxy_with(|c| {
        c.proxy.workers = 1;
        c.proxy.client_write_timeout_ms = 1_000;
        c.proxy.acquire_timeout_ms = 60_000;
        for b in &mut c.backends {
            b.min_connections = 0;
            b.max_connections = 1;
        }
    });
    let port = proxy.addr.port();
    let (mut stalled, ok) = Raw::login(port, "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.payload[0], 0, "login");
    // About 100 MB of rows (over 300 x 300 collations), far beyond what
    // socket buffers hold; the client reads the first packet, then nothing.
    let mut q = vec![com::QUERY];
    q.extend_from_slice(b"SELECT a.ID, REPEAT('x', 1000) FROM information_schema.COLLATIONS a, information_schema.COLLATIONS b");
    stalled.send(0, &q).await;
    let first = stalled.read().await.expect("an answer");
    assert_ne!(first.payload[0], 0xff, "the query failed");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The only backend connection is streaming to the stalled client; this
    // one needs it. (The timeout is a hang guard, not a measurement.)
    let served = tokio::time::timeout(Duration::from_secs(45), select_one(port))
        .await
        .expect("a second client waited for the stalled one's backend connection");
    assert_eq!(served.unwrap(), Some(1));
    // The stalled client was cut off: after what was buffered, the stream ends.
    let drained = tokio::time::timeout(Duration::from_secs(30), async {
        let mut bytes = 0usize;
        while let Ok(p) = stalled.s.read_packet().await {
            bytes += p.payload.len();
        }
        bytes
    })
    .await
    .expect("the stalled client's connection stays open");
    assert!(
        drained < 100_000 * 1000,
        "the whole result arrived ({drained} bytes)"
    );
}

async fn sum_v(c: &mut mysql_async::Conn) -> Option<i64> {
    c.query_first("SELECT CAST(SUM(v) AS SIGNED) FROM plan_budget.t")
        .await
        .unwrap()
}

/// Planning has a budget: a statement of `plan_offload_bytes` or more is
/// planned on a thread of its own, and refused with 1969 (SQLSTATE 70100)
/// when planning takes longer than `plan_timeout_ms`, before any part of
/// it ran (text statements and PREPARE); shorter statements plan on the
/// worker as before. With room in the budget the same statements run.
#[tokio::test]
async fn planning_past_its_budget_is_refused() {
    let tight = proxy_with(|c| c.proxy.plan_timeout_ms = 1);
    let mut c = mysql_async::Conn::new(proxy_opts(tight.addr.port(), None))
        .await
        .unwrap();
    for sql in [
        "CREATE DATABASE plan_budget",
        "CREATE TABLE plan_budget.t (id INT PRIMARY KEY, v INT NOT NULL)",
        "HSCALE SETUP_TABLE('plan_budget.t', 'id', 't_default', 'shard0', 'MOD(2)')",
        "HSCALE ADD_PARTITION('plan_budget.t', 'odd', '1', 'shard0')",
        "INSERT INTO plan_budget.t VALUES (1, 0), (2, 0), (3, 0), (4, 0)",
    ] {
        c.query_drop(sql).await.unwrap();
    }
    // About 2 MB: planning it takes far longer than 1 ms.
    let ids: Vec<String> = (1..=300_000).map(|i| i.to_string()).collect();
    let big = format!(
        "UPDATE plan_budget.t SET v = v + 1 WHERE id IN ({})",
        ids.join(",")
    );
    let err = c.query_drop(&big).await.unwrap_err();
    assert_eq!(code(&err), 1969, "{err}");
    assert_eq!(sum_v(&mut c).await, Some(0), "nothing of it ran");
    // Being prepared, too.
    let select = format!(
        "SELECT id FROM plan_budget.t WHERE id IN ({}) AND v >= ?",
        ids.join(",")
    );
    let err = c.prep(&select).await.unwrap_err();
    assert_eq!(code(&err), 1969, "{err}");
    // Short statements plan on the worker, whatever the budget.
    c.query_drop("UPDATE plan_budget.t SET v = v + 1 WHERE id IN (1, 2)")
        .await
        .unwrap();
    assert_eq!(sum_v(&mut c).await, Some(2));
    c.disconnect().await.unwrap();
    // With room in the budget: planned on its own thread, and run.
    let roomy = proxy_with(|c| c.proxy.plan_timeout_ms = 600_000);
    let mut c = mysql_async::Conn::new(proxy_opts(roomy.addr.port(), None))
        .await
        .unwrap();
    // Read the dictionary now (the proxy reloads it at start, in the background).
    c.query_drop("HSCALE SHOW PARTITIONS('plan_budget.t')")
        .await
        .unwrap();
    c.query_drop(&big).await.unwrap();
    assert_eq!(sum_v(&mut c).await, Some(6));
    let mut rows: Vec<i64> = c.exec(&select, (0,)).await.unwrap();
    rows.sort();
    assert_eq!(rows, vec![1, 2, 3, 4]);
    c.query_drop("DROP DATABASE plan_budget").await.unwrap();
    c.disconnect().await.unwrap();
}
