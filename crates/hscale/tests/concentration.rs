#![allow(clippy::unwrap_used)]
//! M:N connection concentration: many client sessions served by few
//! backend connections, each session keeping its own state.

mod common;

use std::collections::{HashMap, HashSet};

use common::raw::{Raw, CLIENT_CAPS};
use common::*;
use futures_util::future::join_all;
use mysql_async::prelude::*;

/// Twenty sessions with different SET variables share four backend
/// connections; each statement sees its own session's values.
#[tokio::test]
async fn session_state_follows_the_session_across_backend_connections() {
    cluster(1);
    backend_thread_probe().await;
    let mut config = cluster_config();
    config.backends[0].max_connections = 4;
    config.backends[0].min_connections = 4;
    let proxy = hscale::RunningProxy::start(config, "127.0.0.1:0").unwrap();
    let port = proxy.addr.port();
    let sessions = (0..20).map(|i| async move {
        let mut c = mysql_async::Conn::new(proxy_opts(port, None)).await.unwrap();
        let tz = format!("+{:02}:00", i % 13);
        let mode = if i % 2 == 0 { "ANSI_QUOTES" } else { "NO_ZERO_DATE" };
        let wait = 1000 + i;
        c.query_drop(format!("SET time_zone = '{tz}', sql_mode = '{mode}'")).await.unwrap();
        c.query_drop(format!("SET SESSION wait_timeout = {wait}")).await.unwrap();
        if i % 3 == 0 {
            c.query_drop("SET NAMES latin1").await.unwrap();
        }
        let iso = if i % 4 == 1 { "READ-COMMITTED" } else { "REPEATABLE-READ" };
        if i % 4 == 1 {
            c.query_drop("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED").await.unwrap();
        }
        let mut seen = HashSet::new();
        for _ in 0..30 {
            let (got_tz, got_mode, got_wait, cs, id): (String, String, u64, String, u64) = c
                // The backend connection's own thread id (`@@pseudo_thread_id`
                // and CONNECTION_ID() through hscale are the session's id).
                .query_first("SELECT @@time_zone, @@sql_mode, @@wait_timeout, @@character_set_client, backend_probe.backend_thread()")
                .await
                .unwrap()
                .unwrap();
            let got_iso: Option<String> = c.query_first("SELECT @@tx_isolation").await.unwrap();
            assert_eq!(got_iso.as_deref(), Some(iso));
            assert_eq!(got_tz, tz);
            assert_eq!(got_mode, mode);
            assert_eq!(got_wait, wait);
            assert_eq!(cs, if i % 3 == 0 { "latin1" } else { "utf8mb4" });
            seen.insert(id);
            tokio::task::yield_now().await;
        }
        c.disconnect().await.unwrap();
        (i, seen)
    });
    // The backend connections open at once, sampled while the sessions
    // run: never more than the maximum, whichever workers serve the
    // sessions (a connection closed and opened again, e.g. after a health
    // check timed out on a busy machine, shows a new thread id without
    // exceeding it).
    let ctx = proxy.context.clone();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let open: u64 = ctx.pool_samples().iter().map(|p| p.open).sum();
                most = most.max(open);
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            most
        })
    };
    let results = join_all(sessions).await;
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = sampler.await.unwrap();
    assert!(
        most <= 4,
        "{most} backend connections open at once, more than the pool maximum"
    );
    let mut users: HashMap<u64, usize> = HashMap::new();
    for (_, seen) in &results {
        for id in seen {
            *users.entry(*id).or_default() += 1;
        }
    }
    assert!(
        users.values().any(|&n| n > 1),
        "no backend connection served two sessions"
    );
}

/// 10,000 idle clients are served by at most 64 backend connections, and
/// every one of them can still run a statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_idle_clients_on_sixty_four_backend_connections() {
    let info = cluster(1);
    let mut config = cluster_config();
    config.backends[0].max_connections = 64;
    config.proxy.max_connections = 20_000;
    let proxy = ProxyProcess::start(config);
    let mut clients = Vec::with_capacity(10_000);
    for chunk in 0..100 {
        let logins = (0..100).map(|_| Raw::login(proxy.port, "root", "", CLIENT_CAPS));
        for (r, ok) in join_all(logins).await {
            assert_eq!(ok.first(), Some(0), "login {} failed", chunk * 100);
            clients.push(r);
        }
    }
    assert_eq!(clients.len(), 10_000);
    // Every client runs a statement, 500 at a time.
    let mut n = 0;
    for batch in clients.chunks_mut(500) {
        let runs = batch.iter_mut().map(|r| async move {
            r.send(0, b"\x03SELECT 1").await;
            loop {
                let p = r.read().await.expect("answer");
                assert_ne!(
                    p.first(),
                    Some(0xff),
                    "{:?}",
                    String::from_utf8_lossy(&p.payload)
                );
                if p.first() == Some(0xfe) && p.payload.len() < 9 {
                    // Metadata EOF then the final EOF: count them.
                    return p.payload.len();
                }
            }
        });
        n += join_all(runs).await.len();
    }
    assert_eq!(n, 10_000);
    let mut b = mysql_async::Conn::new(backend_opts(info.backend_ports[0], None))
        .await
        .unwrap();
    let backend_conns: i64 = b
        .query_first("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'hscale' AND ID <> CONNECTION_ID()")
        .await
        .unwrap()
        .unwrap();
    // The shared cluster's own in-process proxy holds a few more.
    assert!(
        backend_conns <= 64 + 8,
        "{backend_conns} backend connections for 10,000 clients"
    );
    b.disconnect().await.unwrap();
    drop(clients);
}
