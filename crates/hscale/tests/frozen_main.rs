#![allow(clippy::unwrap_used)]
//! A frozen main backend (its mariadbd stopped with SIGSTOP) does not stop
//! new connections to tables on healthy backends: what a driver runs at
//! connect time and session-only statements (SET NAMES, SET autocommit,
//! SET of session variables, SELECT @@version) are answered by a backend
//! that answers. Its own binary: it stops the main backend of its cluster.

mod common;

use std::time::Duration;

use common::*;
use mysql_async::prelude::*;

fn signal(backend: usize, sig: libc::c_int) {
    let pid = with_cluster(|c| c.servers[backend].pid()).expect("server runs");
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on a child process the harness started.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(rc, 0);
}

/// Resumes the server even when the test fails half-way.
struct Resume(usize);

impl Drop for Resume {
    fn drop(&mut self) {
        signal(self.0, libc::SIGCONT);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_main_backend_does_not_stop_new_connections() {
    cluster(2);
    fresh_db("frozen_main").await;
    let mut setup = proxy_conn(None).await;
    for sql in [
        "CREATE TABLE frozen_main.t (id INT PRIMARY KEY, v INT)",
        "HSCALE SETUP_TABLE('frozen_main.t', 'id', 't_default', 'shard0', 'NONE()')",
        "HSCALE ADD_PARTITION('frozen_main.t', 'p2', '2', 'shard1')",
        "INSERT INTO frozen_main.t (id, v) VALUES (1, 10), (2, 20)",
        // Keys the main backend weighs, every partition on shard1.
        "CREATE TABLE frozen_main.w (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL PRIMARY KEY, n INT)",
        "HSCALE SETUP_TABLE('frozen_main.w', 'k', 'w_default', 'shard1', 'HASH(2)')",
        "HSCALE ADD_PARTITION('frozen_main.w', 'h1', '1', 'shard1')",
        "INSERT INTO frozen_main.w (k, n) VALUES ('straße', 1)",
    ] {
        setup.query_drop(sql).await.unwrap();
    }
    setup.disconnect().await.unwrap();

    let mut config = cluster_config();
    config.proxy.health_check_interval_ms = 300;
    config.proxy.backend_ping_timeout_ms = 1_000;
    config.proxy.workers = 1;
    config.metrics.listen = "127.0.0.1:0".into();
    let proxy = hscale::RunningProxy::start(config, "127.0.0.1:0").unwrap();
    let port = proxy.addr.port();
    let mut admin = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .unwrap();
    let v: Option<i32> = admin
        .query_first("SELECT v FROM frozen_main.t WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(v, Some(20));

    signal(0, libc::SIGSTOP);
    let resume = Resume(0);
    // Wait (bounded) until the health check has found the main backend frozen.
    let mut is_down = false;
    for _ in 0..100 {
        let rows: Vec<(String, String, String, String, String, Option<String>)> =
            admin.query("HSCALE SHOW BACKENDS").await.unwrap();
        if rows
            .iter()
            .any(|r| r.0 == "shard0" && r.2 == "down" && r.5.is_some())
        {
            is_down = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(is_down, "the main backend was never found frozen");

    let work = async {
        for db in [None, Some("frozen_main")] {
            // mysql_async runs SELECT @@max_allowed_packet, @@wait_timeout
            // at connect.
            let mut c = mysql_async::Conn::new(proxy_opts(port, db))
                .await
                .unwrap_or_else(|e| panic!("connect with database {db:?}: {e}"));
            for sql in [
                "SET NAMES utf8mb4",
                "SET autocommit = 1",
                "SET SESSION sql_mode = 'STRICT_ALL_TABLES'",
                "SET @@session.time_zone = '+00:00'",
            ] {
                c.query_drop(sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            let version: Option<String> = c.query_first("SELECT @@version").await.unwrap();
            assert!(version.is_some_and(|v| v.contains("MariaDB")));
            let v: Option<i32> = c
                .query_first("SELECT v FROM frozen_main.t WHERE id = 2")
                .await
                .unwrap();
            assert_eq!(v, Some(20));
            // The session's state reached the healthy backend's connection.
            let mode: Option<String> = c.query_first("SELECT @@sql_mode").await.unwrap();
            assert_eq!(mode.as_deref(), Some("STRICT_ALL_TABLES"));
            c.disconnect().await.unwrap();
        }
    };
    // A hang guard, not a timing assertion.
    tokio::time::timeout(Duration::from_secs(60), work)
        .await
        .expect("new connections wait on the frozen main backend");

    // A key met for the first time needs its weight from the frozen main
    // backend: the fetch fails (counted in /metrics) and the read asks
    // every partition instead, all on shard1.
    let errors = || {
        let addr = proxy.metrics_addr.expect("metrics served");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        std::io::Write::write_all(&mut s, b"GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n").unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut s, &mut text).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("hscale_weight_fetch_errors_total "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .expect("the counter is rendered")
    };
    let before = errors();
    let read = async {
        let mut c = mysql_async::Conn::new(proxy_opts(port, Some("frozen_main")))
            .await
            .unwrap();
        let n: Option<i32> = c
            .query_first("SELECT n FROM w WHERE k = 'STRASSE'")
            .await
            .unwrap();
        assert_eq!(n, Some(1));
        c.disconnect().await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the read waits on the frozen main backend");
    assert!(errors() > before, "a failed weight fetch is counted");
    drop(resume);
    drop(admin);
}
