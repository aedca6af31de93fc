#![allow(clippy::unwrap_used)]
//! Tenants (issue 31): each user's limits reached and released with
//! MariaDB's error codes, fair sharing of a tiny pool between a noisy user
//! and a quiet one, `HSCALE SHOW USERS`, and a SIGHUP reload changing a
//! limit while the user's sessions stay connected.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

/// One worker and 4 connections to the one backend, so that 12 slow
/// statements fill the pool; users with limits.
fn tweak(c: &mut hscale::Config) {
    add_app_user(c);
    c.proxy.workers = 1;
    c.proxy.acquire_timeout_ms = 20_000;
    for b in &mut c.backends {
        b.max_connections = 4;
        b.min_connections = 1;
    }
    let user = |name: &str| hscale::config::UserConfig {
        name: name.into(),
        password: "pw".into(),
        ..Default::default()
    };
    c.users.push(hscale::config::UserConfig {
        max_connections: Some(2),
        ..user("few")
    });
    c.users.push(hscale::config::UserConfig {
        max_statements_per_s: Some(1),
        statements_burst: Some(3),
        throttle_wait_ms: Some(100),
        ..user("rated")
    });
    c.users.push(hscale::config::UserConfig {
        max_statement_ms: Some(300),
        ..user("brief")
    });
    c.users.push(user("noisy"));
    c.users.push(user("quiet"));
    c.users.push(user("bulk"));
    c.users.push(user("patient"));
    c.users.push(hscale::config::UserConfig {
        priority: Some(hscale::config::PriorityName::High),
        ..user("vip")
    });
}

fn info() -> Info {
    cluster_with(1, tweak)
}

/// The tests that fill the one pool take turns (the file's tests share
/// one proxy).
static POOL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn opts_as(port: u16, user: &str) -> mysql_async::Opts {
    mysql_async::OptsBuilder::from_opts(proxy_opts(port, None))
        .user(Some(user))
        .pass(Some("pw"))
        .into()
}

async fn conn_as(user: &str) -> Result<mysql_async::Conn, mysql_async::Error> {
    mysql_async::Conn::new(opts_as(info().proxy_port, user)).await
}

fn server_error(e: &mysql_async::Error) -> (u16, String) {
    match e {
        mysql_async::Error::Server(s) => (s.code, s.message.clone()),
        other => panic!("not a server error: {other}"),
    }
}

/// `HSCALE SHOW USERS`' row of `user`, by column name.
async fn users_row(user: &str) -> std::collections::HashMap<String, String> {
    users_row_on(&mut proxy_conn(None).await, user).await
}

/// [`users_row`] on an open admin connection (opening one runs a query
/// on a backend, which waits when the pool is busy).
async fn users_row_on(
    admin: &mut mysql_async::Conn,
    user: &str,
) -> std::collections::HashMap<String, String> {
    let rows: Vec<mysql_async::Row> = admin.query("HSCALE SHOW USERS").await.unwrap();
    let row = rows
        .into_iter()
        .find(|r| r.get::<String, _>(0).as_deref() == Some(user))
        .unwrap_or_else(|| panic!("no row for {user}"));
    let names: Vec<String> = row
        .columns_ref()
        .iter()
        .map(|c| c.name_str().to_string())
        .collect();
    names
        .into_iter()
        .enumerate()
        .map(|(i, n)| (n, row.get::<String, _>(i).unwrap_or_default()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_connections_refuses_with_1203_and_releases() {
    let a = conn_as("few").await.unwrap();
    let b = conn_as("few").await.unwrap();
    let e = conn_as("few").await.expect_err("a third connection");
    assert_eq!(
        server_error(&e),
        (
            1203,
            "User 'few' has exceeded the 'max_user_connections' resource (current value: 2)"
                .to_string()
        )
    );
    // Other users are not affected.
    let mut other = conn_as("quiet").await.unwrap();
    other.query_drop("DO 1").await.unwrap();
    drop(a.disconnect().await);
    // The proxy sees the close a moment later.
    let start = Instant::now();
    let mut c = loop {
        match conn_as("few").await {
            Ok(c) => break c,
            Err(e) => {
                assert_eq!(server_error(&e).0, 1203);
                assert!(start.elapsed() < Duration::from_secs(10), "never released");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    c.query_drop("DO 1").await.unwrap();
    let row = users_row("few").await;
    assert_eq!(row["connections"], "2");
    assert_eq!(row["max_connections"], "2");
    assert!(row["refused_connections"].parse::<u64>().unwrap() >= 1);
    drop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_beyond_the_rate_waits_then_is_refused_with_1226() {
    let mut c = conn_as("rated").await.unwrap();
    // One statement a second, a burst of 3, 100 ms of waiting: within a
    // few statements one is refused (the connect's own queries count).
    let mut refused = None;
    let mut ran = 0;
    for _ in 0..10 {
        match c.query_drop("DO 1").await {
            Ok(()) => ran += 1,
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let e = refused.expect("a statement refused");
    assert!(ran <= 3, "{ran} statements ran beyond a burst of 3");
    assert_eq!(
        server_error(&e),
        (
            1226,
            "User 'rated' has exceeded the 'max_statements_per_s' resource (current value: 1)"
                .to_string()
        )
    );
    // The session stays usable; a second later a token is back.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    c.query_drop("DO 1").await.unwrap();
    let row = users_row("rated").await;
    assert!(row["refused"].parse::<u64>().unwrap() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepares_count_against_the_rate_too() {
    let mut c = conn_as("rated").await.unwrap();
    // COM_STMT_PREPARE takes a token as COM_QUERY does: preparing in a
    // loop (each closed at once) meets the same 1226.
    let mut refused = None;
    let mut ran = 0;
    for i in 0..10 {
        match c.prep(format!("SELECT {i} + ?")).await {
            Ok(stmt) => {
                ran += 1;
                c.close(stmt).await.unwrap();
            }
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let e = refused.expect("a prepare refused");
    assert!(ran <= 3, "{ran} prepares ran beyond a burst of 3");
    assert_eq!(
        server_error(&e),
        (
            1226,
            "User 'rated' has exceeded the 'max_statements_per_s' resource (current value: 1)"
                .to_string()
        )
    );
    // Two seconds give two tokens: the PREPARE's and the EXECUTE's.
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    let stmt = c.prep("SELECT 1 + ?").await.unwrap();
    let v: Option<i64> = c.exec_first(&stmt, (1,)).await.unwrap();
    assert_eq!(v, Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_past_max_statement_ms_is_killed_with_1969() {
    let mut c = conn_as("brief").await.unwrap();
    let start = Instant::now();
    let e = c.query_drop("SELECT SLEEP(5)").await.expect_err("killed");
    assert_eq!(
        server_error(&e),
        (
            1969,
            "Query execution was interrupted (max_statement_time exceeded)".to_string()
        )
    );
    assert!(start.elapsed() < Duration::from_secs(5), "ran to its end");
    // Quick statements still run, on the same session.
    let one: Option<u32> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    assert_eq!(users_row("brief").await["killed"], "1");
    // Another user's long statement is not cut at 300 ms.
    let mut other = conn_as("quiet").await.unwrap();
    let slept: Option<u32> = other.query_first("SELECT SLEEP(0.5)").await.unwrap();
    assert_eq!(slept, Some(0));
}

/// `noisy` fills the 4-connection pool with 12 slow statements (3 rounds
/// of 0.4 s if served in turn); `quiet`'s 4 point statements, queued after
/// all of them, are served as soon as the first connections come back,
/// long before the noisy ones run out. First come, first served, they
/// would wait for all 12.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noisy_user_does_not_starve_a_quiet_one() {
    let _turn = POOL.lock().await;
    let mut noisy = Vec::new();
    for _ in 0..12 {
        noisy.push(conn_as("noisy").await.unwrap());
    }
    let mut quiet = Vec::new();
    for _ in 0..4 {
        quiet.push(conn_as("quiet").await.unwrap());
    }
    let mut admin = proxy_conn(None).await;
    // The connections' own first queries are a recent demand of their
    // users for a moment (`backend/fair.rs`): let it pass.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let noisy_done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for mut c in noisy {
        let done = noisy_done.clone();
        tasks.push(tokio::spawn(async move {
            c.query_drop("SELECT SLEEP(0.4)").await.unwrap();
            done.fetch_add(1, Ordering::SeqCst);
        }));
    }
    // All 12 are running or queued before the quiet user asks.
    let start = Instant::now();
    loop {
        let row = users_row_on(&mut admin, "noisy").await;
        if row["backend_connections"] == "4" && row["waiting"] == "8" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the noisy statements never filled the pool: {row:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut quiet_tasks = Vec::new();
    for mut c in quiet {
        let done = noisy_done.clone();
        quiet_tasks.push(tokio::spawn(async move {
            let r: Option<u32> = c.query_first("SELECT SLEEP(0)").await.unwrap();
            assert_eq!(r, Some(0));
            done.load(Ordering::SeqCst)
        }));
    }
    let mut seen = Vec::new();
    for t in quiet_tasks {
        seen.push(t.await.unwrap());
    }
    // Served within the first round or two of returned connections.
    assert!(
        seen.iter().all(|&n| n <= 8),
        "quiet statements finished after {seen:?} of the 12 noisy ones"
    );
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(noisy_done.load(Ordering::SeqCst), 12);
}

/// Waiting with a full pool, a high-priority user's statements take the
/// returned connections before a normal user's that queued earlier.
/// `bulk`'s four connections come back one at a time (0.4, 0.6, 0.8 and
/// 1.0 s); `vip`'s two statements start on the first two, `patient`'s on
/// the last two, although `patient` queued first (its users' fair share
/// of the pool is two connections each; priority orders who goes first
/// within it). Each statement's start is the server's NOW(6).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_high_priority_user_is_served_before_normal_ones_that_waited_longer() {
    let _turn = POOL.lock().await;
    let mut noisy = Vec::new();
    for _ in 0..4 {
        noisy.push(conn_as("bulk").await.unwrap());
    }
    let mut quiet = Vec::new();
    let mut vip = Vec::new();
    for _ in 0..2 {
        quiet.push(conn_as("patient").await.unwrap());
        vip.push(conn_as("vip").await.unwrap());
    }
    let mut admin = proxy_conn(None).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut tasks = Vec::new();
    for (mut c, secs) in noisy.into_iter().zip(["0.4", "0.6", "0.8", "1.0"]) {
        tasks.push(tokio::spawn(async move {
            c.query_drop(format!("SELECT SLEEP({secs})")).await.unwrap();
        }));
    }
    async fn until(admin: &mut mysql_async::Conn, user: &str, field: &str, value: &str) {
        let start = Instant::now();
        loop {
            let row = users_row_on(admin, user).await;
            if row[field] == value {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{user}'s {field} never reached {value}: {row:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    until(&mut admin, "bulk", "backend_connections", "4").await;
    let run = |conns: Vec<mysql_async::Conn>, sql: &'static str| {
        conns
            .into_iter()
            .map(|mut c| {
                tokio::spawn(async move {
                    let started: Option<(String, i64)> = c.query_first(sql).await.unwrap();
                    started.unwrap().0
                })
            })
            .collect::<Vec<_>>()
    };
    let quiet = run(quiet, "SELECT CAST(NOW(6) AS CHAR), SLEEP(0)");
    until(&mut admin, "patient", "waiting", "2").await;
    let vip = run(vip, "SELECT CAST(NOW(6) AS CHAR), SLEEP(1)");
    until(&mut admin, "vip", "waiting", "2").await;
    let mut quiet_starts = Vec::new();
    for t in quiet {
        quiet_starts.push(t.await.unwrap());
    }
    let mut vip_starts = Vec::new();
    for t in vip {
        vip_starts.push(t.await.unwrap());
    }
    for t in tasks {
        t.await.unwrap();
    }
    let last_vip = vip_starts.iter().max().unwrap();
    let first_quiet = quiet_starts.iter().min().unwrap();
    assert!(
        last_vip < first_quiet,
        "vip started at {vip_starts:?}, patient (queued first) at {quiet_starts:?}"
    );
}

/// A `hscale serve` of its own: SIGHUP lowers a user's max_connections and
/// sets its max_statement_ms, then raises and lifts them again; sessions
/// already open stay open and take the new statement limit at their next
/// statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_changes_a_users_limit_without_dropping_its_sessions() {
    info();
    let mut config = cluster_config();
    config.users.push(hscale::config::UserConfig {
        name: "tenant".into(),
        password: "pw".into(),
        max_connections: Some(3),
        ..Default::default()
    });
    let served = ProxyProcess::start(config.clone());
    let opts = |port| opts_as(port, "tenant");
    let mut first = mysql_async::Conn::new(opts(served.port)).await.unwrap();
    let mut second = mysql_async::Conn::new(opts(served.port)).await.unwrap();

    let reload = |max: u32, statement_ms: u64| {
        let mut new = config.clone();
        new.proxy.listen = format!("127.0.0.1:{}", served.port);
        for u in &mut new.users {
            if u.name == "tenant" {
                u.max_connections = Some(max);
                u.max_statement_ms = Some(statement_ms);
            }
        }
        std::fs::write(&served.config_path, toml::to_string(&new).unwrap()).unwrap();
        #[allow(unsafe_code)]
        // SAFETY: sending a signal to our own child process.
        unsafe {
            libc::kill(served.child.id() as i32, libc::SIGHUP);
        }
    };
    // Statements run on a third session all through the reloads.
    let busy = tokio::spawn({
        let opts = opts(served.port);
        async move {
            let mut c = mysql_async::Conn::new(opts).await.unwrap();
            let mut n = 0u32;
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(1500) {
                let one: Option<u32> = c.query_first("SELECT 1").await.unwrap();
                assert_eq!(one, Some(1));
                n += 1;
            }
            n
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    // 2 s, not less: the busy session's `SELECT 1` must never reach it on a
    // loaded machine.
    reload(1, 2000);
    // Applied within moments: a new connection is refused with the new value.
    let start = Instant::now();
    loop {
        match mysql_async::Conn::new(opts(served.port)).await {
            Ok(c) => {
                drop(c.disconnect().await);
                assert!(start.elapsed() < Duration::from_secs(20), "never reloaded");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            // Refused under the old limit (3: first, second and the busy
            // session) before the reload is read: not reloaded yet.
            Err(e)
                if server_error(&e)
                    == (
                        1203,
                        "User 'tenant' has exceeded the 'max_user_connections' resource (current value: 3)"
                            .to_string(),
                    ) =>
            {
                assert!(start.elapsed() < Duration::from_secs(20), "never reloaded");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => {
                assert_eq!(
                    server_error(&e),
                    (
                        1203,
                        "User 'tenant' has exceeded the 'max_user_connections' resource (current value: 1)"
                            .to_string()
                    )
                );
                break;
            }
        }
    }
    assert!(busy.await.unwrap() > 10, "the busy session stalled");
    // The two sessions opened before are still there, under the new
    // statement limit.
    first.query_drop("DO 1").await.unwrap();
    second.query_drop("DO 1").await.unwrap();
    let e = first
        .query_drop("SELECT SLEEP(3)")
        .await
        .expect_err("killed at 2 s");
    assert_eq!(server_error(&e).0, 1969);
    reload(3, 0);
    let start = Instant::now();
    let mut third = loop {
        match mysql_async::Conn::new(opts(served.port)).await {
            Ok(c) => break c,
            Err(e) => {
                assert_eq!(server_error(&e).0, 1203);
                assert!(start.elapsed() < Duration::from_secs(20), "never reloaded");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    third.query_drop("DO 1").await.unwrap();
    // No statement limit any more, on the session that had one.
    let slept: Option<u32> = first.query_first("SELECT SLEEP(0.4)").await.unwrap();
    assert_eq!(slept, Some(0));
}
