#![allow(clippy::unwrap_used)]
//! The availability issue's last example: a proxy paused between writing
//! its commit decision and committing it (its `hscale.decisions` row
//! uncommitted on the home backend) must not stall other proxies'
//! commits. Before, another proxy's background clean-up
//! `DELETE FROM hscale.decisions WHERE xid IN (...)` ran as a full scan
//! whenever the list covered most of the (small) table, waited on the
//! paused row for innodb_lock_wait_timeout, and its next-key locks made
//! every new decision INSERT on that backend wait behind it. Its own
//! binary: the held row would slow other tests' commits. The clean-up now
//! deletes each decision by its key (`exec/txn/commit.rs::delete_each`).

mod common;

use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

const DB: &str = "paused_commit";

/// The tests count every decision on the backends: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_decision_row_does_not_stall_other_commits() {
    let _serial = SERIAL.lock().await;
    cluster(2);
    let mut c = proxy_conn(None).await;
    for sql in [
        format!("DROP DATABASE IF EXISTS {DB}"),
        format!("CREATE DATABASE {DB}"),
        format!("USE {DB}"),
        "CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance INT NOT NULL)".into(),
        "HSCALE SETUP_TABLE('accounts', 'id', 'accounts_even', 'shard0', 'MOD(2)')".into(),
        "HSCALE ADD_PARTITION('accounts', 'odd', '1', 'shard1')".into(),
        "INSERT INTO accounts (id, balance) VALUES (1, 1000), (2, 1000), (3, 1000), (4, 1000)"
            .into(),
    ] {
        c.query_drop(&sql).await.unwrap();
    }
    // A transfer first, so that the decisions table exists everywhere.
    c.query_drop("BEGIN; UPDATE accounts SET balance = balance - 1 WHERE id = 1; UPDATE accounts SET balance = balance + 1 WHERE id = 2; COMMIT")
        .await
        .unwrap();

    // The paused proxy's decision row, uncommitted, on both backends.
    // Sorting after every other decision: a full scan locks all of them.
    let held = "hscale:1:999999999:1:1";
    let mut paused = Vec::new();
    for b in 0..2 {
        let mut p = backend_conn(b, None).await;
        p.query_drop("BEGIN").await.unwrap();
        p.query_drop(format!(
            "INSERT INTO hscale.decisions (xid, state) VALUES ('{held}', 'committed')"
        ))
        .await
        .unwrap();
        paused.push(p);
    }

    // Transfers through the proxy, with pauses for the background
    // clean-up (it gathers finished decisions for 50 ms) to run between.
    let mut slowest = Duration::ZERO;
    for i in 0..30 {
        let (from, to) = if i % 2 == 0 { (1, 2) } else { (2, 1) };
        let started = Instant::now();
        let transfer = c.query_drop(format!(
            "BEGIN; UPDATE accounts SET balance = balance - 1 WHERE id = {from}; \
             UPDATE accounts SET balance = balance + 1 WHERE id = {to}; COMMIT"
        ));
        // A hang guard: with the stall, a commit waits up to the backend's
        // innodb_lock_wait_timeout (50 s).
        tokio::time::timeout(Duration::from_secs(20), transfer)
            .await
            .unwrap_or_else(|_| panic!("transfer {i} stalled behind the paused decision row"))
            .unwrap();
        slowest = slowest.max(started.elapsed());
        tokio::time::sleep(Duration::from_millis(80)).await;
    }
    eprintln!("slowest transfer: {slowest:?}");
    assert!(
        slowest < Duration::from_secs(3),
        "a transfer waited {slowest:?} behind the paused decision row"
    );

    // The clean-up still deletes every finished decision around the held row.
    let mut left = u64::MAX;
    for _ in 0..100 {
        left = 0;
        for b in 0..2 {
            let mut r = backend_conn(b, None).await;
            let n: u64 = r
                .query_first(format!(
                    "SELECT COUNT(*) FROM hscale.decisions WHERE xid <> '{held}'"
                ))
                .await
                .unwrap()
                .unwrap();
            left += n;
        }
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left, 0, "finished decisions not deleted");

    for mut p in paused {
        p.query_drop("ROLLBACK").await.unwrap();
    }
    let total: Option<i64> = c
        .query_first("SELECT CAST(SUM(balance) AS SIGNED) FROM accounts")
        .await
        .unwrap();
    assert_eq!(total, Some(4000));
}

/// Run `sql` on `c`: how long it took (20 s at most).
async fn timed(c: &mut mysql_async::Conn, sql: String) -> Duration {
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(20), c.query_drop(sql))
        .await
        .expect("a transfer stalled behind the stopped proxy")
        .unwrap();
    started.elapsed()
}

/// The 99th percentile (the largest but one of 40 and more).
fn p99(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 99 / 100).min(v.len() - 1)]
}

/// The example as it happens: a second proxy process stops
/// (SIGSTOP) between writing its decision and its home's COMMIT, for 5 s.
/// Transfers through this proxy (between other accounts: the stopped
/// transaction's own rows stay locked, as on one server) keep their normal
/// latency (p99 within 2x of the same transfers before, plus 100 ms of
/// this machine's noise); when the stopped proxy resumes its transfer
/// commits, and the money adds up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_proxy_between_decision_and_commit_does_not_stall_others() {
    let _serial = SERIAL.lock().await;
    cluster(2);
    let mut c = proxy_conn(None).await;
    // (The first test's set-up, in a database of its own.)
    let db = "paused_commit_stop";
    for sql in [
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
        format!("USE {db}"),
        "CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance INT NOT NULL)".into(),
        "HSCALE SETUP_TABLE('accounts', 'id', 'accounts_even', 'shard0', 'MOD(2)')".into(),
        "HSCALE ADD_PARTITION('accounts', 'odd', '1', 'shard1')".into(),
        "INSERT INTO accounts (id, balance) VALUES (1, 1000), (2, 1000), (3, 1000), (4, 1000)"
            .into(),
    ] {
        c.query_drop(&sql).await.unwrap();
    }
    let run = |from: u32, to: u32| {
        format!(
            "BEGIN; UPDATE {db}.accounts SET balance = balance - 1 WHERE id = {from}; \
             UPDATE {db}.accounts SET balance = balance + 1 WHERE id = {to}; COMMIT"
        )
    };
    let mut normal = Vec::new();
    for i in 0..40 {
        let (from, to) = if i % 2 == 0 { (3, 4) } else { (4, 3) };
        normal.push(timed(&mut c, run(from, to)).await);
        tokio::time::sleep(Duration::from_millis(60)).await;
    }

    let other = ProxyProcess::start_with_env(
        cluster_config(),
        &[("HSCALE_TEST_PAUSE_AFTER_DECISION_MS", "1500")],
    );
    let mut oc = mysql_async::Conn::new(proxy_opts(other.port, Some(db)))
        .await
        .unwrap();
    let stopped = tokio::spawn({
        let sql = run(1, 2);
        async move {
            let r = tokio::time::timeout(Duration::from_secs(60), oc.query_drop(sql)).await;
            (r, oc)
        }
    });
    // In its pause after the decision: stopped there.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let pid = other.child.id().to_string();
    let signal = |s: &str| {
        assert!(std::process::Command::new("kill")
            .args([s, &pid])
            .status()
            .unwrap()
            .success());
    };
    signal("-STOP");
    let mut during = Vec::new();
    let stop_started = Instant::now();
    let mut i = 0;
    while stop_started.elapsed() < Duration::from_secs(5) {
        let (from, to) = if i % 2 == 0 { (3, 4) } else { (4, 3) };
        during.push(timed(&mut c, run(from, to)).await);
        tokio::time::sleep(Duration::from_millis(60)).await;
        i += 1;
    }
    signal("-CONT");
    let (r, _oc) = stopped.await.unwrap();
    r.expect("the stopped proxy's transfer did not finish after it resumed")
        .unwrap();
    // Its decision's clean-up (gathered for 50 ms) before it is killed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (normal_p99, during_p99) = (p99(normal), p99(during.clone()));
    eprintln!(
        "transfers: p99 {normal_p99:?} before, {during_p99:?} while the other proxy was stopped ({} transfers)",
        during.len()
    );
    assert!(
        during_p99 <= normal_p99 * 2 + Duration::from_millis(100),
        "p99 {during_p99:?} while stopped against {normal_p99:?} before"
    );
    let total: Option<i64> = c
        .query_first("SELECT CAST(SUM(balance) AS SIGNED) FROM accounts")
        .await
        .unwrap();
    assert_eq!(total, Some(4000));
    let moved: Vec<(u32, i64)> = c
        .query("SELECT id, balance FROM accounts WHERE id IN (1, 2) ORDER BY id")
        .await
        .unwrap();
    assert_eq!(moved, vec![(1, 999), (2, 1001)]);
}
