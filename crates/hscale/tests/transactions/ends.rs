//! How transactions end: `COMMIT` / `ROLLBACK` with `AND CHAIN` and
//! `RELEASE` across backends (`exec/txn/ends.rs::in_distributed_transaction`),
//! on one backend and on none (`exec/txn/ends.rs::end_and_release`).

use super::*;

/// `COMMIT AND CHAIN` / `ROLLBACK AND CHAIN` end a transaction across
/// backends and begin the next at once, as one server does; `COMMIT
/// RELEASE` commits and closes the connection.
#[tokio::test]
async fn chained_and_released_ends_across_backends() {
    let _serial = SERIAL.lock().await;
    let mut c = accounts("txn_chain").await;
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 10 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 10 WHERE id = 2")
        .await
        .unwrap();
    c.query_drop("COMMIT AND CHAIN").await.unwrap();
    // The chained transaction is open: its writes roll back together.
    c.query_drop("UPDATE accounts SET balance = balance - 50 WHERE id = 3")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 50 WHERE id = 4")
        .await
        .unwrap();
    c.query_drop("ROLLBACK AND CHAIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 7 WHERE id = 5")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 7 WHERE id = 6")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    // On one backend the server chains by itself; hscale keeps the session
    // on that transaction.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 1 WHERE id = 8")
        .await
        .unwrap();
    c.query_drop("COMMIT AND CHAIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 1000 WHERE id = 10")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    for (id, want) in [
        (1, 90),
        (2, 110),
        (3, 100),
        (4, 100),
        (5, 100),
        (6, 100),
        (8, 99),
        (10, 100),
    ] {
        assert_eq!(balance(&mut c, id).await, want, "account {id}");
    }
    // COMMIT RELEASE: committed, then the server side closes.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 1 WHERE id = 11")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 2 WHERE id = 12")
        .await
        .unwrap();
    c.query_drop("COMMIT RELEASE").await.unwrap();
    assert!(
        c.query_drop("SELECT 1").await.is_err(),
        "the connection stayed open"
    );
    let mut c = proxy_conn(Some("txn_chain")).await;
    assert_eq!(balance(&mut c, 11).await, 99);
    assert_eq!(balance(&mut c, 12).await, 102);
    assert_eq!(prepared_branches().await, 0);
}

/// `COMMIT RELEASE` / `ROLLBACK RELEASE` of a transaction on one backend,
/// of one that touched no backend yet, of an autocommit-off session and
/// outside any transaction: the transaction ends as asked, the OK arrives,
/// then the connection is closed, as a server closes it.
#[tokio::test]
async fn release_closes_the_connection_on_one_backend_and_none() {
    let _serial = SERIAL.lock().await;
    let db = "txn_release";
    let mut c = accounts(db).await;
    // One backend (odd ids: shard1).
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 3 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 3 WHERE id = 3")
        .await
        .unwrap();
    c.query_drop("COMMIT RELEASE").await.unwrap();
    assert!(is_closed(&mut c).await, "open after COMMIT RELEASE");
    let mut c = proxy_conn(Some(db)).await;
    assert_eq!(balance(&mut c, 1).await, 97);
    assert_eq!(balance(&mut c, 3).await, 103);
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 1000 WHERE id = 5")
        .await
        .unwrap();
    c.query_drop("ROLLBACK WORK AND NO CHAIN RELEASE")
        .await
        .unwrap();
    assert!(is_closed(&mut c).await, "open after ROLLBACK RELEASE");
    let mut c = proxy_conn(Some(db)).await;
    assert_eq!(balance(&mut c, 5).await, 100);
    // No backend yet.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("COMMIT RELEASE").await.unwrap();
    assert!(
        is_closed(&mut c).await,
        "open after an empty COMMIT RELEASE"
    );
    // Autocommit off (an ORM's session).
    let mut c = proxy_conn(Some(db)).await;
    c.query_drop("SET autocommit = 0").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 1 WHERE id = 7")
        .await
        .unwrap();
    c.query_drop("COMMIT RELEASE").await.unwrap();
    assert!(
        is_closed(&mut c).await,
        "open after COMMIT RELEASE, autocommit off"
    );
    // No transaction at all.
    let mut c = proxy_conn(Some(db)).await;
    c.query_drop("ROLLBACK RELEASE").await.unwrap();
    assert!(
        is_closed(&mut c).await,
        "open after ROLLBACK RELEASE in autocommit"
    );
    let mut c = proxy_conn(Some(db)).await;
    assert_eq!(balance(&mut c, 7).await, 101);
    // Not a release: the connection stays.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("COMMIT NO RELEASE").await.unwrap();
    assert!(!is_closed(&mut c).await);
    assert_eq!(total_on_backends(db).await, TOTAL + 1);
    assert_eq!(prepared_branches().await, 0);
}

/// The server closed the connection (a statement fails).
async fn is_closed(c: &mut mysql_async::Conn) -> bool {
    c.query_drop("SELECT 1").await.is_err()
}

/// A merge that fails inside a transaction across backends (an unknown
/// column: the first part's error ends the statement) ends that statement
/// only, as on one server: its part's connection (the transaction's home
/// or a branch) is given back, not closed, and COMMIT commits the whole
/// transaction, whichever backend was the home. (It used to close that
/// connection, rolling its branch back, and COMMIT answered 1402.)
#[tokio::test]
async fn a_merge_that_fails_in_a_transaction_fails_alone() {
    let _serial = SERIAL.lock().await;
    let db = "txn_lost_branch";
    let mut c = accounts(db).await;
    for (first, second) in [(1, 2), (2, 1)] {
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop(format!(
            "UPDATE accounts SET balance = balance - 10 WHERE id = {first}"
        ))
        .await
        .unwrap();
        c.query_drop(format!(
            "UPDATE accounts SET balance = balance + 10 WHERE id = {second}"
        ))
        .await
        .unwrap();
        let e = c
            .query_drop("SELECT id, no_such_column FROM accounts ORDER BY id")
            .await
            .unwrap_err();
        assert_eq!(code(&e), 1054, "{e}");
        c.query_drop("COMMIT").await.unwrap();
        let mut other = proxy_conn(Some(db)).await;
        assert_eq!(balance(&mut other, first).await, 90, "home {first}");
        assert_eq!(balance(&mut other, second).await, 110, "home {first}");
        // Back to 100 each for the next round.
        c.query_drop(format!(
            "UPDATE accounts SET balance = 100 WHERE id IN ({first}, {second})"
        ))
        .await
        .unwrap();
        assert_eq!(balance(&mut c, 1).await, 100);
    }
    assert_eq!(total_on_backends(db).await, TOTAL);
    assert_eq!(prepared_branches().await, 0);
}

/// A statement that only starts like BEGIN (`BEGIN?`, found by
/// `session_fuzz.rs`) is the server's to refuse: it gets its own 1064 and
/// no transaction begins. It used to be answered OK by the proxy and sent
/// later in front of the next statement, which then got its error; the
/// next statement's answer was lost. A valid BEGIN is still answered by
/// the proxy and its transaction holds the next statements.
#[tokio::test]
async fn a_statement_that_only_starts_like_begin_gets_its_own_error() {
    let _serial = SERIAL.lock().await;
    let mut c = accounts("txn_begin_typo").await;
    for bad in ["BEGIN?", "BEGIN WORK WORK", "START TRANSACTION READ"] {
        let e = c.query_drop(bad).await.unwrap_err();
        match e {
            mysql_async::Error::Server(e) => assert_eq!(e.code, 1064, "{bad}: {e:?}"),
            other => panic!("{bad}: {other:?}"),
        }
        let n: Option<i64> = c.query_first("SELECT 4242").await.unwrap();
        assert_eq!(n, Some(4242), "after {bad}");
        let in_txn: Option<i64> = c.query_first("SELECT @@in_transaction").await.unwrap();
        assert_eq!(in_txn, Some(0), "after {bad}");
    }
    c.query_drop("START TRANSACTION READ WRITE, WITH CONSISTENT SNAPSHOT")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 5 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    assert_eq!(balance(&mut c, 1).await, 100);
}
