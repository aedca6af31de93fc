//! A connection that served a session holding state the pool cannot keep
//! (a branch synced to `autocommit=0`, a `sql_select_limit`) is reset and
//! pooled again (`backend/pool.rs`), not closed: an ORM-style session
//! running many transactions across backends opens a few backend
//! connections, not one per transaction.

use super::*;

/// Connections the backends accepted so far (`Connections`), each
/// counting the one that asks.
async fn connections() -> [u64; 2] {
    let mut n = [0; 2];
    for (b, slot) in n.iter_mut().enumerate() {
        let mut bc = backend_conn(b, None).await;
        let row: (String, u64) = bc
            .query_first("SHOW GLOBAL STATUS LIKE 'Connections'")
            .await
            .unwrap()
            .unwrap();
        *slot = row.1;
        bc.disconnect().await.unwrap();
    }
    n
}

/// New connections on each backend since `before`, without the ones
/// `connections()` itself made (one per backend per call).
async fn opened_since(before: [u64; 2]) -> [u64; 2] {
    let after = connections().await;
    [after[0] - before[0] - 1, after[1] - before[1] - 1]
}

const TRANSACTIONS: i64 = 40;

#[tokio::test]
async fn branches_of_autocommit_off_sessions_are_pooled_again() {
    let _serial = SERIAL.lock().await;
    let c = accounts("txn_pooled").await;
    c.disconnect().await.unwrap();
    let mut orm = proxy_conn(Some("txn_pooled")).await;
    orm.query_drop("SET autocommit=0").await.unwrap();
    // Warm up: the home (shard1, odd ids) and a branch on shard0.
    orm.query_drop("UPDATE accounts SET balance = balance WHERE id = 1")
        .await
        .unwrap();
    orm.query_drop("UPDATE accounts SET balance = balance WHERE id = 2")
        .await
        .unwrap();
    orm.query_drop("COMMIT").await.unwrap();
    let before = connections().await;
    for i in 0..TRANSACTIONS {
        let (odd, even) = (1 + 2 * (i % 10), 2 + 2 * ((i + 3) % 10));
        orm.query_drop(format!(
            "UPDATE accounts SET balance = balance - 1 WHERE id = {odd}"
        ))
        .await
        .unwrap();
        orm.query_drop(format!(
            "UPDATE accounts SET balance = balance + 1 WHERE id = {even}"
        ))
        .await
        .unwrap();
        let end = if i % 4 == 3 { "ROLLBACK" } else { "COMMIT" };
        orm.query_drop(end).await.unwrap();
    }
    let opened = opened_since(before).await;
    // Each branch (shard0) used to be closed at the end of its
    // transaction: one new connection per transaction. Reset and pooled,
    // the branch's connection serves the next ones (a second one at most
    // while the first is being reset).
    assert!(
        opened[0] + opened[1] <= 4,
        "backend connections opened during {TRANSACTIONS} transactions: {opened:?}"
    );
    orm.query_drop("SET autocommit=1").await.unwrap();
    orm.disconnect().await.unwrap();

    // A session's sql_select_limit: the connection of every statement
    // used to be closed after it.
    let mut limited = proxy_conn(Some("txn_pooled")).await;
    limited
        .query_drop("SET sql_select_limit = 1")
        .await
        .unwrap();
    let before = connections().await;
    for i in 0..TRANSACTIONS {
        let ids: Vec<i64> = limited
            .query(format!(
                "SELECT id FROM accounts WHERE id IN ({}, {}) ORDER BY id",
                1 + 2 * (i % 10),
                3 + 2 * (i % 9)
            ))
            .await
            .unwrap();
        assert_eq!(ids.len(), 1, "{ids:?}");
    }
    let opened = opened_since(before).await;
    assert!(
        opened[0] + opened[1] <= 4,
        "backend connections opened during {TRANSACTIONS} statements under sql_select_limit: {opened:?}"
    );
    limited.disconnect().await.unwrap();

    // What the pooled connections hold now is what the others expect:
    // transactions across backends in an autocommit session (XA START on a
    // connection the proxy's own queries may have used), reads of every row.
    let mut c = proxy_conn(Some("txn_pooled")).await;
    for _ in 0..5 {
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop("UPDATE accounts SET balance = balance - 2 WHERE id = 3")
            .await
            .unwrap();
        c.query_drop("UPDATE accounts SET balance = balance + 2 WHERE id = 4")
            .await
            .unwrap();
        c.query_drop("COMMIT").await.unwrap();
    }
    let n: i64 = c
        .query_first("SELECT COUNT(*) FROM accounts")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 20);
    c.disconnect().await.unwrap();
    assert_eq!(total_on_backends("txn_pooled").await, TOTAL);
    assert_eq!(prepared_branches().await, 0);
}
