#![allow(clippy::unwrap_used)]
//! Transactions across backends (`crates/hscale/src/exec/txn/mod.rs`): one
//! branch per backend, XA two-phase commit when several backends wrote,
//! the decision in `hscale.decisions`, recovery of prepared branches.
//!
//! `accounts` is partitioned by `id` with MOD(2): even ids on shard0, odd
//! ids on shard1, so a transfer between 1 and 2 spans both backends.

mod common;

use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

const TOTAL: i64 = 100 * 20;

/// A database `db` with `accounts` 1..=20 holding 100 each, on both backends.
async fn accounts(db: &str) -> mysql_async::Conn {
    cluster(2);
    let mut c = proxy_conn(None).await;
    c.query_drop(format!("DROP DATABASE IF EXISTS {db}"))
        .await
        .unwrap();
    c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    c.query_drop(format!("USE {db}")).await.unwrap();
    c.query_drop("CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance INT NOT NULL)")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('accounts', 'id', 'accounts_even', 'shard0', 'MOD(2)')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('accounts', 'odd', '1', 'shard1')")
        .await
        .unwrap();
    let values: Vec<String> = (1..=20).map(|i| format!("({i}, 100)")).collect();
    c.query_drop(format!(
        "INSERT INTO accounts (id, balance) VALUES {}",
        values.join(", ")
    ))
    .await
    .unwrap();
    c
}

async fn balance(c: &mut mysql_async::Conn, id: i64) -> i64 {
    c.query_first(format!("SELECT balance FROM accounts WHERE id = {id}"))
        .await
        .unwrap()
        .unwrap()
}

/// The sum of every account, read on the backends themselves.
async fn total_on_backends(db: &str) -> i64 {
    let mut sum = 0;
    for (b, part) in [(0, None), (1, Some("odd"))] {
        let table = physical(&format!("{db}.accounts"), part).await;
        let mut bc = backend_conn(b, Some(db)).await;
        let s: Option<i64> = bc
            .query_first(format!("SELECT CAST(SUM(balance) AS SIGNED) FROM {table}"))
            .await
            .unwrap();
        sum += s.unwrap_or(0);
        bc.disconnect().await.unwrap();
    }
    sum
}

/// hscale's prepared branches on every backend.
/// The tests of this file run one at a time: they count every prepared
/// XA branch on the backends (`XA RECOVER`), which another test's commit in
/// flight (or its kill point) would add to.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn prepared_branches() -> usize {
    let mut n = 0;
    for b in 0..2 {
        let mut bc = backend_conn(b, None).await;
        let rows: Vec<mysql_async::Row> = bc.query("XA RECOVER").await.unwrap();
        n += rows.len();
        bc.disconnect().await.unwrap();
    }
    n
}

/// A transfer between accounts on two backends commits both rows or
/// neither; inside the transaction it reads its own writes on both, and
/// another connection sees neither before COMMIT.
#[tokio::test]
async fn transfer_across_backends_commits_atomically() {
    let _serial = SERIAL.lock().await;
    let mut c = accounts("txn_transfer").await;
    let mut other = proxy_conn(Some("txn_transfer")).await;
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 30 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 30 WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(balance(&mut c, 1).await, 70);
    assert_eq!(balance(&mut c, 2).await, 130);
    // A read over both partitions inside the transaction uses its branches.
    let both: Vec<(i64, i64)> = c
        .query("SELECT id, balance FROM accounts WHERE id IN (1, 2)")
        .await
        .unwrap();
    let mut both = both;
    both.sort();
    assert_eq!(both, vec![(1, 70), (2, 130)]);
    // Merged reads (aggregates, GROUP BY, ORDER BY) run on the branches
    // and see the transaction's own writes; another connection does not.
    let sum: Option<i64> = c
        .query_first("SELECT SUM(balance) FROM accounts")
        .await
        .unwrap();
    assert_eq!(sum, Some(TOTAL));
    let top: Vec<(i64, i64)> = c
        .query("SELECT id, balance FROM accounts ORDER BY balance DESC, id LIMIT 2")
        .await
        .unwrap();
    assert_eq!(top, vec![(2, 130), (3, 100)]);
    let groups: Vec<(i64, i64)> = c
        .query("SELECT balance, COUNT(*) FROM accounts GROUP BY balance ORDER BY balance")
        .await
        .unwrap();
    assert_eq!(groups, vec![(70, 1), (100, 18), (130, 1)]);
    let ordered: Vec<i64> = c
        .query("SELECT id FROM accounts WHERE balance <> 100 ORDER BY id")
        .await
        .unwrap();
    assert_eq!(ordered, vec![1, 2]);
    let seen: Vec<(i64, i64)> = other
        .query("SELECT balance, COUNT(*) FROM accounts GROUP BY balance")
        .await
        .unwrap();
    assert_eq!(seen, vec![(100, 20)]);
    assert_eq!(balance(&mut other, 1).await, 100);
    assert_eq!(balance(&mut other, 2).await, 100);
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(balance(&mut other, 1).await, 70);
    assert_eq!(balance(&mut other, 2).await, 130);
    assert_eq!(total_on_backends("txn_transfer").await, TOTAL);

    // ROLLBACK undoes both sides.
    c.query_drop("START TRANSACTION").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 5 WHERE id = 3")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 5 WHERE id = 4")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    assert_eq!(balance(&mut other, 3).await, 100);
    assert_eq!(balance(&mut other, 4).await, 100);

    // A write over every partition inside a transaction, rolled back.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 1")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 20);
    c.query_drop("ROLLBACK").await.unwrap();
    assert_eq!(total_on_backends("txn_transfer").await, TOTAL);
    assert_eq!(prepared_branches().await, 0);
    // The session is usable afterwards, in autocommit.
    c.query_drop("UPDATE accounts SET balance = balance WHERE id = 1")
        .await
        .unwrap();
}

/// An ORM-style session: `SET autocommit=0`, statements on both backends,
/// COMMIT, then more statements and ROLLBACK.
#[tokio::test]
async fn autocommit_off_session_spans_backends() {
    let _serial = SERIAL.lock().await;
    let mut c = accounts("txn_orm").await;
    let mut other = proxy_conn(Some("txn_orm")).await;
    c.query_drop("SET autocommit=0").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 7 WHERE id = 5")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 7 WHERE id = 6")
        .await
        .unwrap();
    assert_eq!(balance(&mut other, 5).await, 100);
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(balance(&mut other, 5).await, 93);
    assert_eq!(balance(&mut other, 6).await, 107);
    c.query_drop("UPDATE accounts SET balance = 0 WHERE id = 7")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = 0 WHERE id = 8")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    assert_eq!(balance(&mut other, 7).await, 100);
    assert_eq!(balance(&mut other, 8).await, 100);
    // SET autocommit=1 commits the open transaction on every backend.
    c.query_drop("UPDATE accounts SET balance = balance - 1 WHERE id = 9")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 1 WHERE id = 10")
        .await
        .unwrap();
    c.query_drop("SET autocommit=1").await.unwrap();
    assert_eq!(balance(&mut other, 9).await, 99);
    assert_eq!(balance(&mut other, 10).await, 101);
    assert_eq!(total_on_backends("txn_orm").await, TOTAL);
    assert_eq!(prepared_branches().await, 0);
}

/// Client XA statements are refused with 1235; the transaction stays usable.
#[tokio::test]
async fn refusals() {
    let _serial = SERIAL.lock().await;
    let mut c = accounts("txn_refuse").await;
    let e = c.query_drop("XA START 'mine'").await.unwrap_err();
    assert_eq!(code(&e), 1235);
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 1 WHERE id = 11")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 1 WHERE id = 12")
        .await
        .unwrap();
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(total_on_backends("txn_refuse").await, TOTAL);
}

/// Savepoints hold on every branch: one set before a branch joined is set
/// on it too, ROLLBACK TO undoes the later writes on every backend (a
/// branch that joined after the savepoint is left with nothing to commit),
/// RELEASE drops it and the later ones, unknown names answer 1305 and the
/// transaction goes on.
#[tokio::test]
async fn savepoints_span_every_branch() {
    let _serial = SERIAL.lock().await;
    let mut c = accounts("txn_savepoint").await;
    let mut other = proxy_conn(Some("txn_savepoint")).await;
    c.query_drop("BEGIN").await.unwrap();
    // The home branch is shard1 (odd ids); `a` is set there alone.
    c.query_drop("UPDATE accounts SET balance = balance - 10 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("SAVEPOINT a").await.unwrap();
    // shard0 joins after `a`.
    c.query_drop("UPDATE accounts SET balance = balance + 10 WHERE id = 2")
        .await
        .unwrap();
    c.query_drop("SAVEPOINT `b`").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 5 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 5 WHERE id = 4")
        .await
        .unwrap();
    assert_eq!(balance(&mut c, 1).await, 85);
    assert_eq!(balance(&mut c, 4).await, 105);
    c.query_drop("ROLLBACK TO SAVEPOINT B").await.unwrap();
    assert_eq!(balance(&mut c, 1).await, 90);
    assert_eq!(balance(&mut c, 2).await, 110);
    assert_eq!(balance(&mut c, 4).await, 100);
    let e = c.query_drop("ROLLBACK TO nope").await.unwrap_err();
    assert_eq!(code(&e), 1305);
    // Rolling back to `a` empties the branch that joined after it.
    c.query_drop("ROLLBACK WORK TO a").await.unwrap();
    assert_eq!(balance(&mut c, 2).await, 100);
    assert_eq!(balance(&mut c, 1).await, 90);
    // `b` went with the rollback to `a`.
    let e = c.query_drop("ROLLBACK TO b").await.unwrap_err();
    assert_eq!(code(&e), 1305);
    c.query_drop("UPDATE accounts SET balance = balance + 10 WHERE id = 6")
        .await
        .unwrap();
    c.query_drop("SAVEPOINT c").await.unwrap();
    // Rolling back to a savepoint set after shard0 joined keeps what
    // shard0 wrote before it.
    c.query_drop("UPDATE accounts SET balance = balance + 1 WHERE id = 6")
        .await
        .unwrap();
    c.query_drop("ROLLBACK TO c").await.unwrap();
    c.query_drop("RELEASE SAVEPOINT a").await.unwrap();
    let e = c.query_drop("ROLLBACK TO c").await.unwrap_err();
    assert_eq!(code(&e), 1305);
    assert_eq!(balance(&mut other, 1).await, 100);
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(balance(&mut other, 1).await, 90);
    assert_eq!(balance(&mut other, 2).await, 100);
    assert_eq!(balance(&mut other, 4).await, 100);
    assert_eq!(balance(&mut other, 6).await, 110);
    assert_eq!(total_on_backends("txn_savepoint").await, TOTAL);
    assert_eq!(prepared_branches().await, 0);

    // A savepoint of a transaction that stayed on one backend, then a
    // branch: the branch has it too.
    c.query_drop("SET autocommit=0").await.unwrap();
    c.query_drop("SAVEPOINT s").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 1 WHERE id = 8")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 1 WHERE id = 9")
        .await
        .unwrap();
    c.query_drop("ROLLBACK TO SAVEPOINT s").await.unwrap();
    c.query_drop("COMMIT").await.unwrap();
    c.query_drop("SET autocommit=1").await.unwrap();
    assert_eq!(balance(&mut other, 8).await, 100);
    assert_eq!(balance(&mut other, 9).await, 100);
    assert_eq!(prepared_branches().await, 0);
}

/// An autocommit write over partitions on both backends is one statement:
/// when a part fails (a CHECK on one backend, a duplicate key in a
/// multi-row INSERT) nothing of it stays, on either backend; when every
/// part succeeds it is committed before the OK, with the sum of affected
/// rows, and another connection sees it at once.
#[tokio::test]
async fn autocommit_writes_over_backends_are_atomic() {
    let _serial = SERIAL.lock().await;
    let db = "txn_atomic";
    let mut c = accounts(db).await;
    c.query_drop("ALTER TABLE accounts ADD CONSTRAINT nonneg CHECK (balance >= 0)")
        .await
        .ok();
    // The CHECK on the backends themselves (ALTER through hscale may
    // refuse or not reach every partition: set it on each table).
    for (b, part) in [(0, None), (1, Some("odd"))] {
        let table = physical(&format!("{db}.accounts"), part).await;
        let mut bc = backend_conn(b, Some(db)).await;
        bc.query_drop(format!(
            "ALTER TABLE {table} DROP CONSTRAINT IF EXISTS nonneg, ADD CONSTRAINT nonneg CHECK (balance >= 0)"
        ))
        .await
        .unwrap();
        bc.disconnect().await.unwrap();
    }
    let mut other = proxy_conn(Some(db)).await;
    // Account 3 (odd, the last part) cannot pay 50: the even part, which
    // ran first, must be undone.
    c.query_drop("UPDATE accounts SET balance = 10 WHERE id = 3")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = 190 WHERE id = 5")
        .await
        .unwrap();
    let e = c
        .query_drop("UPDATE accounts SET balance = balance - 50")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 4025, "{e}");
    assert_eq!(balance(&mut other, 2).await, 100);
    assert_eq!(balance(&mut other, 1).await, 100);
    assert_eq!(total_on_backends(db).await, TOTAL);
    // A multi-row INSERT with a duplicate on one backend: no row stays.
    let e = c
        .query_drop("INSERT INTO accounts (id, balance) VALUES (22, 1), (24, 1), (1, 1)")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1062, "{e}");
    let n: Option<i64> = other
        .query_first("SELECT COUNT(*) FROM accounts WHERE id IN (22, 24)")
        .await
        .unwrap();
    assert_eq!(n, Some(0));
    // Every part succeeds: committed before the OK, affected rows summed.
    c.query_drop("UPDATE accounts SET balance = balance + 1 WHERE id IN (1, 2, 3, 4)")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 4);
    assert_eq!(balance(&mut other, 1).await, 101);
    assert_eq!(balance(&mut other, 4).await, 101);
    c.query_drop("INSERT INTO accounts (id, balance) VALUES (21, 0), (22, 0)")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 2);
    let n: Option<i64> = other
        .query_first("SELECT COUNT(*) FROM accounts WHERE id IN (21, 22)")
        .await
        .unwrap();
    assert_eq!(n, Some(2));
    // The session is still in autocommit, outside any transaction.
    let in_txn: Option<i64> = c.query_first("SELECT @@in_transaction").await.unwrap();
    assert_eq!(in_txn, Some(0));
    assert_eq!(total_on_backends(db).await, TOTAL + 4);
    assert_eq!(prepared_branches().await, 0);
}

/// Writes to a global table change every copy or none: in autocommit a
/// copy that refuses the write undoes the main copy's change; inside a
/// transaction the copies change with the rest of it, on COMMIT or not
/// at all on ROLLBACK.
#[tokio::test]
async fn global_table_writes_change_every_copy_or_none() {
    let _serial = SERIAL.lock().await;
    let db = "txn_global";
    let mut c = accounts(db).await;
    c.query_drop("CREATE TABLE rates (code CHAR(3) NOT NULL PRIMARY KEY, rate INT NOT NULL)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO rates VALUES ('EUR', 100), ('USD', 90)")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_GLOBAL_TABLE('rates')")
        .await
        .unwrap();
    let copies = || async {
        let mut out = Vec::new();
        for b in 0..2 {
            let mut bc = backend_conn(b, Some(db)).await;
            let rows: Vec<(String, i64)> = bc
                .query("SELECT code, rate FROM rates ORDER BY code")
                .await
                .unwrap();
            bc.disconnect().await.unwrap();
            out.push(rows);
        }
        out
    };
    // shard1's copy refuses rates above 1000; the main copy does not.
    let mut bc = backend_conn(1, Some(db)).await;
    bc.query_drop("ALTER TABLE rates ADD CONSTRAINT cap CHECK (rate <= 1000)")
        .await
        .unwrap();
    bc.disconnect().await.unwrap();
    let e = c
        .query_drop("UPDATE rates SET rate = 5000 WHERE code = 'EUR'")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 4025, "{e}");
    let before = vec![("EUR".to_string(), 100), ("USD".to_string(), 90)];
    assert_eq!(copies().await, vec![before.clone(), before.clone()]);
    // Inside a transaction with partitioned writes: ROLLBACK undoes every copy.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 1 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("UPDATE rates SET rate = rate + 1")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 2);
    c.query_drop("ROLLBACK").await.unwrap();
    assert_eq!(copies().await, vec![before.clone(), before.clone()]);
    // ... and COMMIT changes every copy with the rest.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE rates SET rate = rate + 1")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 1 WHERE id = 2")
        .await
        .unwrap();
    c.query_drop("COMMIT").await.unwrap();
    let after = vec![("EUR".to_string(), 101), ("USD".to_string(), 91)];
    assert_eq!(copies().await, vec![after.clone(), after.clone()]);
    assert_eq!(balance(&mut c, 2).await, 99);
    // A copy that refuses a write inside a transaction fails that
    // statement alone, as one server fails a statement: the main copy's
    // change is undone and the transaction goes on. Before, the whole
    // transaction was rolled back under the client, and its next
    // statements ran in autocommit.
    for (open, end) in [
        ("BEGIN", "COMMIT"),
        ("BEGIN", "ROLLBACK"),
        ("SET autocommit = 0", "COMMIT"),
        ("SET autocommit = 0", "ROLLBACK"),
    ] {
        for is_first in [true, false] {
            let b = [balance(&mut c, 3).await, balance(&mut c, 4).await];
            c.query_drop(open).await.unwrap();
            if !is_first {
                c.query_drop("UPDATE accounts SET balance = balance - 1 WHERE id = 3")
                    .await
                    .unwrap();
            }
            let e = c
                .query_drop("UPDATE rates SET rate = 5000 WHERE code = 'USD'")
                .await
                .unwrap_err();
            assert_eq!(code(&e), 4025, "{open} {end} first {is_first}: {e}");
            c.query_drop("UPDATE accounts SET balance = balance - 1 WHERE id = 4")
                .await
                .unwrap();
            c.query_drop(end).await.unwrap();
            if open.starts_with("SET") {
                c.query_drop("SET autocommit = 1").await.unwrap();
            }
            let change = i64::from(end == "COMMIT");
            let want = [b[0] - if is_first { 0 } else { change }, b[1] - change];
            let got = [balance(&mut c, 3).await, balance(&mut c, 4).await];
            assert_eq!(
                got, want,
                "{open} ... {end}, global write first: {is_first}"
            );
            assert_eq!(
                copies().await,
                vec![after.clone(), after.clone()],
                "{open} ... {end}, global write first: {is_first}"
            );
        }
    }
    assert_eq!(prepared_branches().await, 0);
}

/// Transfers between random accounts from several clients at once: the
/// total never changes, through the proxy and on the backends, and nothing
/// stays prepared.
#[tokio::test]
async fn concurrent_transfers_keep_the_total() {
    let _serial = SERIAL.lock().await;
    let mut c = accounts("txn_concurrent").await;
    let decisions_before = decisions().await;
    let mut tasks = Vec::new();
    for client in 0..6u64 {
        tasks.push(tokio::spawn(async move {
            let mut c = proxy_conn(Some("txn_concurrent")).await;
            // A deadlock across backends is seen by neither backend: it
            // ends at the lock wait timeout, replayed onto every branch.
            c.query_drop("SET SESSION innodb_lock_wait_timeout = 2")
                .await
                .unwrap();
            let mut seed = client * 7919 + 17;
            let mut next = |n: u64| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (seed >> 33) % n
            };
            let mut committed = 0;
            for _ in 0..25 {
                let from = next(20) as i64 + 1;
                let mut to = next(20) as i64 + 1;
                if to == from {
                    to = from % 20 + 1;
                }
                let amount = next(10) as i64 + 1;
                let r: Result<(), mysql_async::Error> = async {
                    c.query_drop("BEGIN").await?;
                    c.query_drop(format!(
                        "UPDATE accounts SET balance = balance - {amount} WHERE id = {from}"
                    ))
                    .await?;
                    c.query_drop(format!(
                        "UPDATE accounts SET balance = balance + {amount} WHERE id = {to}"
                    ))
                    .await?;
                    if next(4) == 0 {
                        c.query_drop("ROLLBACK").await
                    } else {
                        c.query_drop("COMMIT").await
                    }
                }
                .await;
                match r {
                    Ok(()) => committed += 1,
                    // Deadlocks and lock waits end the transaction.
                    Err(e) if [1213, 1205].contains(&code(&e)) => {
                        let _ = c.query_drop("ROLLBACK").await;
                    }
                    Err(e) => panic!("transfer failed: {e}"),
                }
            }
            committed
        }));
    }
    let mut committed = 0;
    for t in tasks {
        committed += t.await.unwrap();
    }
    assert!(committed > 50, "only {committed} transfers went through");
    let sum: Option<i64> = c
        .query_first("SELECT CAST(SUM(balance) AS SIGNED) FROM accounts")
        .await
        .unwrap();
    assert_eq!(sum, Some(TOTAL));
    assert_eq!(total_on_backends("txn_concurrent").await, TOTAL);
    assert_eq!(prepared_branches().await, 0);
    // Every finished transaction's decision is deleted soon after.
    let start = Instant::now();
    while decisions().await > decisions_before {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "decisions left behind: {} (before: {decisions_before})",
            decisions().await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Commit decisions on every backend.
async fn decisions() -> i64 {
    let mut n = 0;
    for b in 0..2 {
        let mut bc = backend_conn(b, None).await;
        let k: Option<i64> = bc
            .query_first("SELECT COUNT(*) FROM hscale.decisions")
            .await
            .unwrap();
        n += k.unwrap_or(0);
        bc.disconnect().await.unwrap();
    }
    n
}

/// A proxy SIGKILLed after the decision committed and before its branches
/// did: the other proxy's recovery commits the prepared branch.
#[test]
fn recovery_commits_after_the_owner_died() {
    let rt = rt();
    let _serial = rt.block_on(SERIAL.lock());
    rt.block_on(async {
        let c = accounts("txn_kill").await;
        c.disconnect().await.unwrap();
    });
    let doomed = ProxyProcess::start_with_env(
        cluster_config(),
        &[("HSCALE_TEST_PAUSE_AFTER_DECISION_MS", "60000")],
    );
    let port = doomed.port;
    let mut doomed = doomed;
    rt.block_on(async move {
        let mut c = mysql_async::Conn::new(proxy_opts(port, Some("txn_kill")))
            .await
            .unwrap();
        // Decisions already there (an earlier test's, awaiting cleanup):
        // this transaction's is a new one.
        let mut bc = backend_conn(1, None).await;
        let before: Vec<Vec<u8>> = bc
            .query("SELECT xid FROM hscale.decisions")
            .await
            .unwrap_or_default();
        bc.disconnect().await.unwrap();
        // The home branch is shard1 (id 13 first), the XA branch shard0.
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop("UPDATE accounts SET balance = balance - 50 WHERE id = 13")
            .await
            .unwrap();
        c.query_drop("UPDATE accounts SET balance = balance + 50 WHERE id = 14")
            .await
            .unwrap();
        let commit = tokio::spawn(async move { c.query_drop("COMMIT").await });
        // Wait for the decision row on the home backend (shard1).
        let start = Instant::now();
        loop {
            let mut bc = backend_conn(1, None).await;
            let committed: Vec<Vec<u8>> = bc
                .query("SELECT xid FROM hscale.decisions WHERE state = 'committed'")
                .await
                .unwrap();
            bc.disconnect().await.unwrap();
            if committed.iter().any(|x| !before.contains(x)) {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "no decision");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The branch is prepared, or already committed by the shared
        // proxy's recovery: a committed decision is carried out by any
        // proxy, its owner alive or not (`exec/txn/recovery.rs`).
        assert!(prepared_branches().await <= 1);
        doomed.child.kill().unwrap();
        doomed.child.wait().unwrap();
        assert!(commit.await.unwrap().is_err());
        // The shared cluster's proxy recovers it within a few reload rounds.
        let start = Instant::now();
        while prepared_branches().await > 0 {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the prepared branch was not recovered"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let mut other = proxy_conn(Some("txn_kill")).await;
        assert_eq!(balance(&mut other, 13).await, 50);
        assert_eq!(balance(&mut other, 14).await, 150);
        assert_eq!(total_on_backends("txn_kill").await, TOTAL);
    });
}

/// A deadlock between backends is seen by neither server: it ends by the
/// branches' lock wait, `[proxy] cross_backend_lock_wait_ms` (1 s here,
/// where the servers' own default is 50 s), with 1205 to one of the two
/// transactions; the other then commits, the total holds, and sessions
/// after the transaction see the server's own lock wait again.
#[test]
fn a_deadlock_between_backends_ends_at_the_configured_lock_wait() {
    let rt = rt();
    let _serial = rt.block_on(SERIAL.lock());
    rt.block_on(async {
        let c = accounts("txn_deadlock").await;
        c.disconnect().await.unwrap();
    });
    let mut config = cluster_config();
    config.proxy.cross_backend_lock_wait_ms = 1000;
    let proxy = ProxyProcess::start(config);
    let port = proxy.port;
    rt.block_on(async move {
        let conn = || async move {
            mysql_async::Conn::new(proxy_opts(port, Some("txn_deadlock")))
                .await
                .unwrap()
        };
        let mut bc = backend_conn(0, None).await;
        let server_wait: i64 = bc
            .query_first("SELECT @@global.innodb_lock_wait_timeout")
            .await
            .unwrap()
            .unwrap();
        assert!(server_wait > 20, "the servers' own lock wait: {server_wait}");
        // Even ids live on shard0, odd ids on shard1.
        let (mut a, mut b) = (conn().await, conn().await);
        a.query_drop("BEGIN").await.unwrap();
        a.query_drop("UPDATE accounts SET balance = balance - 10 WHERE id = 2")
            .await
            .unwrap();
        b.query_drop("BEGIN").await.unwrap();
        b.query_drop("UPDATE accounts SET balance = balance - 10 WHERE id = 1")
            .await
            .unwrap();
        let start = Instant::now();
        let a_waits = tokio::spawn(async move {
            let r = a
                .query_drop("UPDATE accounts SET balance = balance + 10 WHERE id = 1")
                .await;
            (a, r)
        });
        let b_waits = tokio::spawn(async move {
            let r = b
                .query_drop("UPDATE accounts SET balance = balance + 10 WHERE id = 2")
                .await;
            (b, r)
        });
        // Whichever times out first rolls back; the other then gets its lock.
        let (mut a_waits, mut b_waits) = (a_waits, b_waits);
        let (first, other) = tokio::select! {
            r = &mut a_waits => (r.unwrap(), b_waits),
            r = &mut b_waits => (r.unwrap(), a_waits),
        };
        let waited = start.elapsed();
        let (mut loser, result) = first;
        let err = result.expect_err("a deadlock between backends must end with an error");
        assert_eq!(code(&err), 1205, "{err}");
        assert!(
            waited < Duration::from_secs(20),
            "the deadlock lasted {waited:?}: the servers' own {server_wait} s wait, not the configured 1 s"
        );
        loser.query_drop("ROLLBACK").await.unwrap();
        let (mut winner, result) = other.await.unwrap();
        if let Err(e) = result {
            // Both may time out at about the same moment.
            assert_eq!(code(&e), 1205, "{e}");
            winner.query_drop("ROLLBACK").await.unwrap();
        } else {
            winner.query_drop("COMMIT").await.unwrap();
        }
        // A session's own lock wait wins inside a transaction across backends.
        winner.query_drop("SET SESSION innodb_lock_wait_timeout = 7").await.unwrap();
        winner.query_drop("BEGIN").await.unwrap();
        winner
            .query_drop("UPDATE accounts SET balance = balance WHERE id IN (3, 4)")
            .await
            .unwrap();
        let own: i64 = winner
            .query_first("SELECT @@innodb_lock_wait_timeout")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(own, 7);
        winner.query_drop("COMMIT").await.unwrap();
        winner.disconnect().await.unwrap();
        loser.disconnect().await.unwrap();
        // After the transactions, pooled connections carry the servers' own
        // lock wait again.
        for _ in 0..4 {
            let mut fresh = conn().await;
            for id in [5, 6] {
                fresh
                    .query_drop(format!("SELECT balance FROM accounts WHERE id = {id}"))
                    .await
                    .unwrap();
            }
            let seen: i64 = fresh
                .query_first("SELECT @@innodb_lock_wait_timeout")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(seen, server_wait);
            fresh.disconnect().await.unwrap();
        }
        assert_eq!(total_on_backends("txn_deadlock").await, TOTAL);
        assert_eq!(prepared_branches().await, 0);
    });
    drop(proxy);
}

/// A backend that cannot take part in two-phase commit (here: hscale's
/// backend user lacks PROCESS, without which recovery cannot tell a live
/// home connection from a dead one) refuses transactions across backends
/// with 1235 and the reason; transactions on one backend still work.
#[test]
fn backends_without_what_recovery_needs_refuse_transactions_across_them() {
    let rt = rt();
    let _serial = rt.block_on(SERIAL.lock());
    rt.block_on(async {
        let c = accounts("txn_noproc").await;
        c.disconnect().await.unwrap();
        for b in 0..2 {
            let mut bc = backend_conn(b, None).await;
            for sql in [
                "DROP USER IF EXISTS 'xa_noproc'@'%'",
                "CREATE USER 'xa_noproc'@'%' IDENTIFIED BY 'noproc'",
                "GRANT ALL ON txn_noproc.* TO 'xa_noproc'@'%'",
                "GRANT ALL ON hscale.* TO 'xa_noproc'@'%'",
            ] {
                bc.query_drop(sql).await.unwrap();
            }
        }
    });
    let mut config = cluster_config();
    for b in &mut config.backends {
        b.user = "xa_noproc".into();
        b.password = "noproc".into();
    }
    let proxy = ProxyProcess::start(config);
    let port = proxy.port;
    rt.block_on(async move {
        let mut c = mysql_async::Conn::new(proxy_opts(port, Some("txn_noproc")))
            .await
            .unwrap();
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop("UPDATE accounts SET balance = balance - 5 WHERE id = 2")
            .await
            .unwrap();
        let err = c
            .query_drop("UPDATE accounts SET balance = balance + 5 WHERE id = 1")
            .await
            .unwrap_err();
        assert_eq!(code(&err), 1235, "{err}");
        assert!(err.to_string().contains("PROCESS"), "{err}");
        c.query_drop("ROLLBACK").await.unwrap();
        // One backend: a plain transaction, as without hscale.
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop("UPDATE accounts SET balance = balance - 5 WHERE id = 2")
            .await
            .unwrap();
        c.query_drop("UPDATE accounts SET balance = balance + 5 WHERE id = 4")
            .await
            .unwrap();
        c.query_drop("COMMIT").await.unwrap();
        // Reads over both backends in a READ ONLY transaction need no XA.
        c.query_drop("START TRANSACTION READ ONLY").await.unwrap();
        let sum: i64 = c
            .query_first("SELECT SUM(balance) FROM accounts")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(sum, TOTAL);
        c.query_drop("COMMIT").await.unwrap();
        c.disconnect().await.unwrap();
        assert_eq!(total_on_backends("txn_noproc").await, TOTAL);
        assert_eq!(prepared_branches().await, 0);
        for b in 0..2 {
            let mut bc = backend_conn(b, None).await;
            bc.query_drop("DROP USER 'xa_noproc'@'%'").await.unwrap();
        }
    });
    drop(proxy);
}

/// COMMIT / ROLLBACK with CHAIN and RELEASE, on several backends, one and none.
#[path = "transactions/ends.rs"]
mod ends;

/// Shipped reads and multi-statement queries inside transactions across backends.
#[path = "transactions/reads.rs"]
mod reads;

/// The queries a transfer sends each backend.
#[path = "transactions/round_trips.rs"]
mod round_trips;

/// Connections of branches and of sessions with state the pool cannot keep
/// are reset and pooled again.
#[path = "transactions/pooling.rs"]
mod pooling;

/// Transfers across backends while their partitions move.
#[path = "transactions/moves.rs"]
mod moves;
