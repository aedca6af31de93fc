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
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    c.query_drop(then).await.unwrap();
    c.query_drop("COMMIT").await.unwrap();
    task.await.unwrap()
}

/// The known race of a read by the index (issue 35): a DELETE of a row by
/// its email and an INSERT of the email under another id (another
/// partition), in a transaction in progress while a locking read by that
/// email starts. One server's locking read of the unique index waits for
/// the transaction and then finds the row under its new id; here the
/// lookup read locks as the statement does, waits the same, and reads the
/// new id. (A plain read reads the index and the row in two steps without
/// locks: docs/src/unique-keys.md, Limits. The same interleaving with a
/// DELETE by id first and LOCK IN SHARE MODE did not show a lock wait on
/// the backends within 30 s here, on one side or the other: not shown.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locking_read_by_email_waits_for_a_delete_and_insert_in_progress() {
    const DB: &str = "uw_race";
    const REF: &str = "uw_race_ref";
    let (mut p, mut r) = users(DB, REF).await;
    let proc_ = ProxyProcess::start(cluster_config());
    let mut own = mysql_async::Conn::new(proxy_opts(proc_.port, Some(DB)))
        .await
        .unwrap();
    let mut one = backend_conn(0, Some(REF)).await;
    for (first, blocked, then) in [(
        "DELETE FROM users WHERE email = 'user5@example.com'",
        "SELECT id, name FROM users WHERE email = 'user5@example.com' FOR UPDATE",
        "INSERT INTO users (id, email, name) VALUES (6000, 'user5@example.com', 'moved')",
    )] {
        // One server: the reference database on its backend, directly;
        // hscale: a proxy of this test's own.
        let want = interleaved(
            &mut one,
            backend_conn(0, Some(REF)).await,
            first,
            blocked,
            then,
        )
        .await;
        let b = mysql_async::Conn::new(proxy_opts(proc_.port, Some(DB)))
            .await
            .unwrap();
        let got = interleaved(&mut own, b, first, blocked, then).await;
        assert_eq!(got, want, "{blocked}");
        assert_eq!(
            twin::rows(&mut p, CONTENTS).await,
            twin::rows(&mut r, CONTENTS).await,
            "after {blocked}"
        );
        assert_index_right(DB).await;
    }
}
