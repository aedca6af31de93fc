//! The window a commit across backends leaves open after its answer
//! (`exec/txn_commit.rs`: the branches' XA COMMIT goes out after the
//! client's OK): the session that committed reads its own writes at once,
//! and another connection may see a branch's old rows until its commit
//! lands, never a total that does not add up once it has.

use super::*;

/// The branches commit 5 s after the answer (a test hook): in that window
/// the branches are still prepared and another connection reads their old
/// rows, while the committing session's next statement waits for the
/// commits and sees every write.
#[test]
fn the_committing_session_reads_its_writes_while_branches_commit() {
    let rt = rt();
    let _serial = rt.block_on(SERIAL.lock());
    let db = "txnf_read_own";
    rt.block_on(accounts(db));
    let mut slow = ProxyProcess::start_with_env(
        cluster_config(),
        &[("HSCALE_TEST_PAUSE_AFTER_ANSWER_MS", "5000")],
    );
    let port = slow.port;
    rt.block_on(async move {
        let mut c = mysql_async::Conn::new(proxy_opts(port, Some(db)))
            .await
            .unwrap();
        transfer(&mut c).await.unwrap();
        c.query_drop("COMMIT").await.unwrap();
        // Answered, and both branches (shard2, shard0) still prepared.
        let p = prepared().await;
        assert_eq!(p.len(), 2, "{p:?}");
        // Another connection: the home's writes are committed, the
        // branches' are not visible yet.
        let seen = balances(db).await;
        assert_eq!(&seen[..3], &[(1, 40), (2, 100), (3, 100)], "{seen:?}");
        // The same session: its next statement waits for the commits.
        let mine: Vec<(i64, i64)> = c
            .query("SELECT id, balance FROM accounts WHERE id IN (1, 2, 3) ORDER BY id")
            .await
            .unwrap();
        assert_eq!(mine, vec![(1, 40), (2, 130), (3, 130)]);
        assert!(prepared().await.is_empty());
        assert_eq!(balances(db).await, after(true));
        assert_eq!(total_on_backends(db).await, TOTAL);
        c.disconnect().await.unwrap();
    });
    slow.child.kill().unwrap();
    slow.child.wait().unwrap();
}
