#![allow(clippy::unwrap_used)]
//! Idle sessions and the backends' wait_timeout (issue 29, item 12): a
//! session that holds a backend connection (a transaction, session state)
//! whose server closes it while the session is idle is closed towards the
//! client at once, as one server closes its idle client, so that a
//! driver's pool sees the closed socket and replaces the connection before
//! its next query; a session holding nothing stays usable. Never does the
//! next query fail with 2013. The globals are changed through hscale (as
//! aiomysql's `test_drop_connection_if_timedout` does), so this binary
//! has a cluster of its own.

mod common;

use common::raw::{Raw, CLIENT_CAPS};
use std::time::Duration;

/// Longer than the 2 s wait_timeout the tests set.
const IDLE: Duration = Duration::from_millis(3500);

async fn set_global_timeouts(port: u16, secs: u32) {
    let (mut r, ok) = Raw::login(port, "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0x00), "login");
    for var in ["wait_timeout", "interactive_timeout"] {
        r.query(&format!("SET GLOBAL {var} = {secs}"))
            .await
            .unwrap_or_else(|e| panic!("SET GLOBAL {var}: {e}"));
    }
}

/// What became of a session that ran `setup`, then idled past the
/// wait_timeout: `Ok(true)` closed before the client sent anything,
/// `Ok(false)` open and `SELECT 1` answered, `Err(code)` open and the
/// query failed.
async fn after_idle(port: u16, user: &str, password: &str, setup: &[&str]) -> Result<bool, u16> {
    let (mut r, ok) = Raw::login(port, user, password, CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0x00), "login");
    r.query("USE idle_db").await.unwrap();
    for s in setup {
        r.query(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    tokio::time::sleep(IDLE).await;
    // Closed: the socket is at its end before anything is sent.
    let closed = tokio::time::timeout(Duration::from_millis(200), r.s.read_packet()).await;
    if matches!(closed, Ok(Err(_))) {
        return Ok(true);
    }
    r.query("SELECT 1").await.map(|rows| {
        assert_eq!(rows, vec![vec![Some("1".to_string())]]);
        false
    })
}

/// Set-ups after which a session holds a backend connection (or one
/// server's session state that only its connection keeps).
const HOLDING: &[&[&str]] = &[
    // Issue 29, item 12: a pooled connection with autocommit off (what
    // aiomysql's pool opens) that read once.
    &["SET autocommit = 0", "SELECT 1"],
    &["SET autocommit = 0", "SELECT COUNT(*) FROM pt"],
    &["BEGIN", "SELECT 1"],
    &["START TRANSACTION", "INSERT INTO pt VALUES (100, 1)"],
    &[
        "START TRANSACTION",
        "INSERT INTO pt VALUES (101, 1), (102, 2)",
    ],
    &["START TRANSACTION", "UPDATE pt SET v = v + 1"],
    &["START TRANSACTION READ ONLY", "SELECT * FROM pt"],
    &["CREATE TEMPORARY TABLE tmp (a INT)"],
    &["SELECT GET_LOCK('idle_lock', 0)"],
    &["SET autocommit = 0", "INSERT INTO plain VALUES (1)"],
];

/// Set-ups after which a session holds nothing: it stays usable.
const NOT_HOLDING: &[&[&str]] = &[
    &["SELECT 1"],
    &["SELECT COUNT(*) FROM pt"],
    &["INSERT INTO pt VALUES (200, 0)"],
    &["SET sql_mode = 'ANSI'", "SELECT 1"],
    &["BEGIN", "COMMIT"],
];

/// The tests change the backends' globals: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The tables the set-ups use, fresh.
async fn schema(port: u16) {
    {
        let (mut r, _) = Raw::login(port, "root", "", CLIENT_CAPS).await;
        for s in [
            "DROP DATABASE IF EXISTS idle_db",
            "CREATE DATABASE idle_db",
            "USE idle_db",
            "CREATE TABLE pt (id INT PRIMARY KEY, v INT)",
            "HSCALE SETUP_TABLE('pt', 'id', 'pt_default', 'shard0', 'MOD(2)')",
            "HSCALE ADD_PARTITION('pt', 'p1', '1', 'shard1')",
            "INSERT INTO pt VALUES (1, 1), (2, 2), (3, 3)",
            "CREATE TABLE plain (a INT)",
        ] {
            r.query(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    }
}

/// Issue 29, item 12: after `SET GLOBAL wait_timeout = 2`, a connection
/// with autocommit off that read once (an aiomysql pool's) is closed
/// while idle, as one server closes it, instead of failing its next
/// query with 2013.
#[tokio::test]
async fn an_idle_session_is_closed_when_the_server_closes_its_transaction() {
    let _serial = SERIAL.lock().await;
    let info = common::cluster(2);
    let port = info.proxy_port;
    schema(port).await;
    set_global_timeouts(port, 2).await;
    let setup = &["SET autocommit = 0", "SELECT 1"];
    let direct = after_idle(info.backend_ports[0], "hscale", "hscale", setup).await;
    let got = after_idle(port, "root", "", setup).await;
    set_global_timeouts(port, 28800).await;
    assert_eq!(direct, Ok(true), "one server closes the idle session");
    assert_eq!(got, Ok(true), "hscale closes it too");
}

/// The class: transactions (reads, writes on one and several
/// partitions, READ ONLY), temporary tables, locks, autocommit off: each
/// closed while idle; sessions holding nothing stay usable.
#[tokio::test]
async fn sessions_idle_past_the_backends_wait_timeout_never_fail_their_next_query() {
    let _serial = SERIAL.lock().await;
    let info = common::cluster(2);
    let port = info.proxy_port;
    schema(port).await;
    set_global_timeouts(port, 2).await;
    let mut wrong = Vec::new();
    let run = async {
        // One server closes every idle session (here the main backend,
        // with its own account).
        let direct = after_idle(info.backend_ports[0], "hscale", "hscale", HOLDING[0]).await;
        assert_eq!(direct, Ok(true), "one server closes the idle session");
        // The sessions idle side by side.
        let holding = HOLDING.iter().map(|s| after_idle(port, "root", "", s));
        let not_holding = NOT_HOLDING.iter().map(|s| after_idle(port, "root", "", s));
        let (holding, not_holding) = tokio::join!(
            futures_util::future::join_all(holding),
            futures_util::future::join_all(not_holding)
        );
        for (setup, got) in HOLDING.iter().zip(holding) {
            if got != Ok(true) {
                wrong.push(format!("{setup:?}: {got:?}, not closed while idle"));
            }
        }
        for (setup, got) in NOT_HOLDING.iter().zip(not_holding) {
            if got.is_err() {
                wrong.push(format!("{setup:?}: the next query failed: {got:?}"));
            }
        }
    };
    run.await;
    set_global_timeouts(port, 28800).await;
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
