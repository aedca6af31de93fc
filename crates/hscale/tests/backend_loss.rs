#![allow(clippy::unwrap_used)]
//! Lost backend connections (issue 10, item 6): a lost connection that
//! held the session's state closes the client connection, as a server's
//! would (the client sees 2013 and its pool discards the connection); a
//! pooled connection that the server closed while idle costs the next
//! statement nothing (it runs again on another connection).

mod common;

use std::time::Duration;

use common::*;
use mysql_async::prelude::*;

/// The tests kill backend threads: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn info() -> Info {
    cluster_with(1, |c| {
        c.proxy.workers = 1;
    })
}

/// Kill, directly on the backend, every idle connection of hscale's pools
/// (user `hscale`, sleeping), except the killer's own; how many.
async fn kill_idle_pool_connections(port: u16) -> usize {
    let mut k = mysql_async::Conn::new(backend_opts(port, None))
        .await
        .unwrap();
    let ids: Vec<u64> = k
        .query(
            "SELECT ID FROM information_schema.PROCESSLIST \
             WHERE USER = 'hscale' AND COMMAND = 'Sleep' AND ID <> CONNECTION_ID()",
        )
        .await
        .unwrap();
    for id in &ids {
        // One may have ended in between.
        let _ = k.query_drop(format!("KILL CONNECTION {id}")).await;
    }
    k.disconnect().await.unwrap();
    ids.len()
}

/// Inside a transaction the client's backend connection is killed while
/// idle: the next statement finds the connection closed, not error 1158
/// on a connection that stays open, and nothing of the transaction is
/// committed.
#[tokio::test]
async fn lost_pinned_connection_closes_the_client() {
    let _serial = SERIAL.lock().await;
    let info = info();
    fresh_db("loss_pin").await;
    let mut c = mysql_async::Conn::new(proxy_opts(info.proxy_port, Some("loss_pin")))
        .await
        .unwrap();
    c.query_drop("CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB")
        .await
        .unwrap();
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO t VALUES (1)").await.unwrap();
    let mut k = mysql_async::Conn::new(backend_opts(info.backend_ports[0], None))
        .await
        .unwrap();
    // INNODB_TRX is refreshed at most every 100 ms.
    let mut thread = None;
    for _ in 0..50 {
        thread = k
            .query_first(
                "SELECT t.trx_mysql_thread_id FROM information_schema.INNODB_TRX t \
                 JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id \
                 WHERE p.DB = 'loss_pin'",
            )
            .await
            .unwrap();
        if thread.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let thread: u64 = thread.expect("the transaction's backend thread");
    k.query_drop(format!("KILL CONNECTION {thread}"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let e = c.query_drop("INSERT INTO t VALUES (2)").await.unwrap_err();
    assert!(
        matches!(e, mysql_async::Error::Io(_)),
        "expected a lost connection (2013), got {e:?}"
    );
    let n: Option<i64> = k
        .query_first("SELECT COUNT(*) FROM loss_pin.t")
        .await
        .unwrap();
    assert_eq!(n, Some(0));
    k.disconnect().await.unwrap();
    // A new client connection works.
    let mut c = mysql_async::Conn::new(proxy_opts(info.proxy_port, Some("loss_pin")))
        .await
        .unwrap();
    c.query_drop("INSERT INTO t VALUES (3)").await.unwrap();
    c.disconnect().await.unwrap();
}

/// The pool's idle connections are killed on the backend right after use:
/// statements outside a transaction, and a transaction's first statement,
/// run on another connection (before the fix a connection used within the
/// last second was handed out unchecked, and the statement failed with
/// 1158).
#[tokio::test]
async fn killed_pooled_connection_is_replaced() {
    let _serial = SERIAL.lock().await;
    let info = info();
    fresh_db("loss_pool").await;
    let mut c = mysql_async::Conn::new(proxy_opts(info.proxy_port, Some("loss_pool")))
        .await
        .unwrap();
    c.query_drop("CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB")
        .await
        .unwrap();
    for round in 0..3i64 {
        let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
        assert_eq!(one, Some(1));
        assert!(kill_idle_pool_connections(info.backend_ports[0]).await > 0);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let n: Option<i64> = c
            .query_first(format!("SELECT {round} + 1"))
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e:?}"));
        assert_eq!(n, Some(round + 1));

        kill_idle_pool_connections(info.backend_ports[0]).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop(format!("INSERT INTO t VALUES ({round})"))
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e:?}"));
        c.query_drop("COMMIT").await.unwrap();
    }
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM t").await.unwrap();
    assert_eq!(n, Some(3));
    c.disconnect().await.unwrap();
}
