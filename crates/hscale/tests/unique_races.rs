#![allow(clippy::unwrap_used)]
//! The known races of a global unique index (issue 35,
//! docs/src/unique-keys.md, Limits), each shown against one server: the
//! reference database on its backend, driven directly, and hscale through
//! a proxy of this binary's own. In a binary of their own: they wait for
//! lock waits the backends show, which other tests' load slows.

mod common;

use common::twin;
use common::unique::*;
use common::*;
use mysql_async::prelude::*;

/// `blocked` run on `b` while `c` holds `first` in a transaction, `then`
/// and COMMIT run on `c` once `blocked` waits for a lock on a backend
/// (INNODB_TRX shows it): what `blocked` answered (rows read, or the
/// affected rows of a write as `(n, "affected")`).
async fn interleaved(
    c: &mut mysql_async::Conn,
    mut b: mysql_async::Conn,
    first: &str,
    blocked: &'static str,
    then: &str,
) -> Result<Vec<(i64, String)>, (u16, String)> {
    // The blocked statement, or its lookup read, names the email it
    // reads (other tests of this binary may wait for locks of their own).
    let email = blocked.split('\'').nth(1).unwrap();
    let waiting = format!(
        "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE '%{email}%'"
    );
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop(first).await.unwrap();
    let task = tokio::spawn(async move {
        let got: Result<Vec<(i64, String)>, _> = b.query(blocked).await.map_err(|e| error_of(&e));
        let affected = b.affected_rows();
        b.disconnect().await.unwrap();
        got.map(|rows| {
            if rows.is_empty() && affected > 0 {
                vec![(affected as i64, "affected".to_string())]
            } else {
                rows
            }
        })
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    'wait: loop {
        for i in 0..2 {
            let mut bc = backend_conn(i, None).await;
            let n: Option<u64> = bc.query_first(&waiting).await.unwrap();
            bc.disconnect().await.unwrap();
            if n.unwrap_or(0) > 0 {
                break 'wait;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{blocked} never waited"
        );
        // Polled less often than every 100 ms: the server refreshes
        // INNODB_TRX only when it was not read for that long, so faster
        // polling reads one old picture forever.
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    c.query_drop(then).await.unwrap();
    c.query_drop("COMMIT").await.unwrap();
    task.await.unwrap()
}

/// The interleaving of [`interleaved`] on one server (the reference
/// database on its backend, driven directly) and through a proxy of this
/// test's own: the same answer, the same rows after, the index right.
async fn race(
    db: &'static str,
    reference: &'static str,
    (first, blocked, then): (&str, &'static str, &str),
) {
    // One race at a time: each polls INNODB_TRX, whose picture another's
    // polling would keep from being refreshed.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = ONE_AT_A_TIME.lock().await;
    let (mut p, mut r) = users(db, reference).await;
    let proc_ = ProxyProcess::start(cluster_config());
    let mut own = mysql_async::Conn::new(proxy_opts(proc_.port, Some(db)))
        .await
        .unwrap();
    let mut one = backend_conn(0, Some(reference)).await;
    let want = interleaved(
        &mut one,
        backend_conn(0, Some(reference)).await,
        first,
        blocked,
        then,
    )
    .await;
    let b = mysql_async::Conn::new(proxy_opts(proc_.port, Some(db)))
        .await
        .unwrap();
    let got = interleaved(&mut own, b, first, blocked, then).await;
    assert_eq!(got, want, "{blocked}");
    assert_eq!(
        twin::rows(&mut p, CONTENTS).await,
        twin::rows(&mut r, CONTENTS).await,
        "after {blocked}"
    );
    assert_index_right(db).await;
}

/// The known race of a read by the index (issue 35): a DELETE of a row by
/// its email and an INSERT of the email under another id (another
/// partition), in a transaction in progress while a locking read by that
/// email starts. One server's locking read of the unique index waits for
/// the transaction and then finds the row under its new id; here the
/// lookup read locks as the statement does, waits the same, and reads the
/// new id. (A plain read reads the index and the row in two steps without
/// locks: docs/src/unique-keys.md, Limits.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locking_read_by_email_waits_for_a_delete_and_insert_in_progress() {
    race(
        "uw_race",
        "uw_race_ref",
        (
            "DELETE FROM users WHERE email = 'user5@example.com'",
            "SELECT id, name FROM users WHERE email = 'user5@example.com' FOR UPDATE",
            "INSERT INTO users (id, email, name) VALUES (6000, 'user5@example.com', 'moved')",
        ),
    )
    .await;
}

/// The same race with a shared lock: LOCK IN SHARE MODE by the email
/// waits for the DELETE and INSERT in progress and reads the new id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_read_by_email_waits_for_a_delete_and_insert_in_progress() {
    race(
        "uw_race_share",
        "uw_race_share_ref",
        (
            "DELETE FROM users WHERE email = 'user6@example.com'",
            "SELECT id, name FROM users WHERE email = 'user6@example.com' LOCK IN SHARE MODE",
            "INSERT INTO users (id, email, name) VALUES (6001, 'user6@example.com', 'moved')",
        ),
    )
    .await;
}

/// The same race with a DELETE by the email: it waits, then deletes the
/// row under its new id (1 row), leaving neither the row nor its index row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_by_email_waits_for_a_delete_and_insert_in_progress() {
    race(
        "uw_race_delete",
        "uw_race_delete_ref",
        (
            "DELETE FROM users WHERE email = 'user7@example.com'",
            "DELETE FROM users WHERE email = 'user7@example.com'",
            "INSERT INTO users (id, email, name) VALUES (6002, 'user7@example.com', 'moved')",
        ),
    )
    .await;
}
