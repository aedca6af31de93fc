#![allow(clippy::unwrap_used)]
//! The availability issue's last example: a proxy paused between writing
//! its commit decision and committing it (its `hscale.decisions` row
//! uncommitted on the home backend) must not stall other proxies'
//! commits. Before, another proxy's background clean-up
//! `DELETE FROM hscale.decisions WHERE xid IN (...)` ran as a full scan
//! whenever the list covered most of the (small) table, waited on the
//! paused row for innodb_lock_wait_timeout, and its next-key locks made
//! every new decision INSERT on that backend wait behind it. Its own
//! binary: the held row would slow other tests' commits.

mod common;

use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

const DB: &str = "paused_commit";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_decision_row_does_not_stall_other_commits() {
    cluster(2);
    let mut c = proxy_conn(None).await;
    for sql in [
        format!("DROP DATABASE IF EXISTS {DB}"),
        format!("CREATE DATABASE {DB}"),
        format!("USE {DB}"),
        "CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance INT NOT NULL)".into(),
        "HSCALE SETUP_TABLE('accounts', 'id', 'accounts_even', 'shard0', 'MOD(2)')".into(),
        "HSCALE ADD_PARTITION('accounts', 'odd', '1', 'shard1')".into(),
        "INSERT INTO accounts (id, balance) VALUES (1, 1000), (2, 1000)".into(),
    ] {
        c.query_drop(&sql).await.unwrap();
    }
    // A transfer first, so that the decisions table exists everywhere.
    c.query_drop("BEGIN; UPDATE accounts SET balance = balance - 1 WHERE id = 1; UPDATE accounts SET balance = balance + 1 WHERE id = 2; COMMIT")
        .await
        .unwrap();

    // The paused proxy's decision row, uncommitted, on both backends.
    let held = "hscale:0:999999:1:1";
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
    assert_eq!(total, Some(2000));
}
