#![allow(clippy::unwrap_used)]
//! The fleet: three `hscale serve` processes on one dictionary register in
//! `hscale.proxies` and `HSCALE SHOW PROXIES` lists them; one SIGKILLed is
//! marked stale and later forgotten; one stopped with SIGTERM leaves.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

/// One row of HSCALE SHOW PROXIES, by column name.
type Row = HashMap<String, String>;

async fn show_proxies(port: u16) -> Vec<Row> {
    let mut c = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .unwrap();
    let rows: Vec<mysql_async::Row> = c.query("HSCALE SHOW PROXIES").await.unwrap();
    c.disconnect().await.unwrap();
    rows.into_iter()
        .map(|r| {
            let cols: Vec<String> = r
                .columns_ref()
                .iter()
                .map(|c| c.name_str().to_string())
                .collect();
            cols.into_iter()
                .enumerate()
                .map(|(i, name)| {
                    let v: Option<String> = r.get(i).unwrap();
                    (name, v.unwrap_or_default())
                })
                .collect()
        })
        .collect()
}

/// The row of the proxy listening on `port`, if listed.
fn row_of(rows: &[Row], port: u16) -> Option<&Row> {
    let addr = format!("127.0.0.1:{port}");
    rows.iter().find(|r| r["address"] == addr)
}

/// Ask `via` until `done` holds for its answer (at most 30 s).
async fn until(via: u16, what: &str, done: impl Fn(&[Row]) -> bool) -> Vec<Row> {
    let start = Instant::now();
    loop {
        let rows = show_proxies(via).await;
        if done(&rows) {
            return rows;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what}: never happened; last answer {rows:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn stored_version() -> String {
    let mut c = backend_conn(0, None).await;
    let v: Option<u64> = c
        .query_first("SELECT version FROM hscale.dictionary_version WHERE id = 1")
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    v.unwrap().to_string()
}

fn serve() -> ProxyProcess {
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 200;
    config.proxy.heartbeat_interval_ms = 200;
    config.proxy.proxy_stale_after_ms = 1_500;
    config.proxy.proxy_forget_after_ms = 5_000;
    ProxyProcess::start(config)
}

fn signal(p: &ProxyProcess, sig: i32) {
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on the pid of a child this test started.
    let r = unsafe { libc::kill(p.child.id() as i32, sig) };
    assert_eq!(r, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_proxies_see_each_other_and_a_killed_one_goes_stale_then_away() {
    cluster(2);
    let mut procs: Vec<ProxyProcess> = (0..3).map(|_| serve()).collect();
    let ports: Vec<u16> = procs.iter().map(|p| p.port).collect();
    let (a, b) = (ports[0], ports[1]);

    // Every proxy registers: address, version, pid, up; `this` marks the
    // proxy that answers.
    let rows = until(a, "three proxies up", |rows| {
        ports
            .iter()
            .all(|p| row_of(rows, *p).is_some_and(|r| r["status"] == "up"))
    })
    .await;
    for (p, port) in procs.iter().zip(&ports) {
        let r = row_of(&rows, *port).unwrap();
        assert_eq!(r["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(r["pid"], p.child.id().to_string());
        assert_eq!(r["this"], if *port == a { "yes" } else { "" });
        assert_eq!(r["id"].len(), 12, "{r:?}");
        assert!(r["started_at"] <= r["last_heartbeat"], "{r:?}");
        assert!(r["uptime_s"].parse::<u64>().unwrap() < 600, "{r:?}");
    }
    let ids: std::collections::HashSet<&String> = rows.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids.len(), rows.len(), "ids are unique: {rows:#?}");

    // A change of the dictionary through one proxy: every proxy reports
    // the new version it loaded.
    fresh_db("fleet").await;
    let mut c = backend_conn(0, Some("fleet")).await;
    c.query_drop("CREATE TABLE t (k INT PRIMARY KEY)")
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    let mut pa = mysql_async::Conn::new(proxy_opts(a, None)).await.unwrap();
    pa.query_drop("HSCALE SETUP_TABLE('fleet.t', 'k', 't_default', 'shard0', 'MOD(4)')")
        .await
        .unwrap();
    pa.disconnect().await.unwrap();
    let version = stored_version().await;
    until(b, "every proxy on the new dictionary", |rows| {
        ports
            .iter()
            .all(|p| row_of(rows, *p).is_some_and(|r| r["dictionary_version"] == version))
    })
    .await;

    // SIGKILL the third: stale (the others stay up), then forgotten.
    let c_port = ports[2];
    procs[2].child.kill().unwrap();
    procs[2].child.wait().unwrap();
    let rows = until(b, "the killed proxy marked stale", |rows| {
        row_of(rows, c_port).is_some_and(|r| r["status"] == "stale")
    })
    .await;
    for p in [a, b] {
        assert_eq!(row_of(&rows, p).unwrap()["status"], "up", "{rows:#?}");
    }
    let age: u64 = row_of(&rows, c_port).unwrap()["heartbeat_age_ms"]
        .parse()
        .unwrap();
    assert!(age >= 1_500, "stale after 1.5 s without a heartbeat: {age}");
    let rows = until(a, "the killed proxy forgotten", |rows| {
        row_of(rows, c_port).is_none()
    })
    .await;
    assert!(row_of(&rows, a).is_some() && row_of(&rows, b).is_some());

    // SIGTERM the second: it deletes its own row before it exits.
    signal(&procs[1], libc::SIGTERM);
    let start = Instant::now();
    while procs[1].child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(30), "no exit");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rows = show_proxies(a).await;
    assert!(row_of(&rows, b).is_none(), "left on SIGTERM: {rows:#?}");
    assert_eq!(row_of(&rows, a).unwrap()["status"], "up");
}
