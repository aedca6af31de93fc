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

/// Set-ups valid on one server and through hscale, whose sessions then
/// idle past the global wait_timeout of 2 s set before they started.
const GLOBAL_TIMEOUT_SETUPS: &[&[&str]] = &[
    &["SELECT 1"],
    &["INSERT INTO plain VALUES (3)"],
    &["SET sql_mode = 'ANSI'", "SELECT 1"],
    &["BEGIN", "COMMIT"],
    &["SET autocommit = 1", "SELECT 2"],
    // The session's own timeout, longer than the idle time: open.
    &["SET SESSION wait_timeout = 30", "SELECT 1"],
    &["SET @@wait_timeout = 30"],
    // Shorter than the global one: closed.
    &["SET SESSION wait_timeout = 1"],
];

/// Issue 29, item 12, the session's side: after `SET GLOBAL wait_timeout
/// = 2` through hscale, a session that starts later and holds nothing is
/// closed while idle past 2 s, as one server closes it (so a driver's
/// pool sees the closed socket), unless it set its own longer timeout.
/// Compared with the main backend's answer for each set-up.
#[tokio::test]
async fn sessions_take_the_global_wait_timeout_as_one_server() {
    let _serial = SERIAL.lock().await;
    let info = common::cluster(2);
    let port = info.proxy_port;
    schema(port).await;
    set_global_timeouts(port, 2).await;
    let direct = GLOBAL_TIMEOUT_SETUPS
        .iter()
        .map(|s| after_idle(info.backend_ports[0], "hscale", "hscale", s));
    let through = GLOBAL_TIMEOUT_SETUPS
        .iter()
        .map(|s| after_idle(port, "root", "", s));
    let (direct, through) = tokio::join!(
        futures_util::future::join_all(direct),
        futures_util::future::join_all(through)
    );
    set_global_timeouts(port, 28800).await;
    for ((setup, d), t) in GLOBAL_TIMEOUT_SETUPS.iter().zip(direct).zip(through) {
        assert_eq!(t, d, "{setup:?}");
    }
}

/// What PyMySQL sees of a connection idle past the global wait_timeout
/// of 2 s: the first query's outcome, then after `ping(reconnect=True)`
/// (what pools do) a query's.
const PYMYSQL_IDLE: &str = r#"
import sys, time, pymysql
host, port, user, password = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
c = pymysql.connect(host=host, port=port, user=user, password=password, database="idle_db", autocommit=True)
cur = c.cursor()
cur.execute("SELECT 1")
time.sleep(3.5)
try:
    cur.execute("SELECT 1")
    print("open", cur.fetchall())
except pymysql.err.OperationalError as e:
    # 2006 when the send fails (one server resets the connection), 2013
    # when the answer's read finds it closed (hscale closes it): both
    # are the lost connection drivers' pools look for.
    print("closed", "lost" if e.args[0] in (2006, 2013) else e.args[0])
c.ping(reconnect=True)
cur = c.cursor()
cur.execute("SELECT 2")
print("after ping", cur.fetchall())
"#;

/// Issue 29, item 12 with PyMySQL: a connection idle past the global
/// wait_timeout answers as one server's: closed (a lost connection on the
/// next query, which a pool's ping replaces), then usable after
/// `ping(reconnect=True)`. (One server resets the socket, so PyMySQL's
/// send fails with 2006; hscale closes it, so its read fails with 2013.)
#[tokio::test]
async fn pymysql_sees_an_idle_connection_as_on_one_server() {
    let _serial = SERIAL.lock().await;
    let info = common::cluster(2);
    let port = info.proxy_port;
    schema(port).await;
    set_global_timeouts(port, 2).await;
    let py = |port: u16, user: &'static str, password: &'static str| {
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("python3")
                .args([
                    "-c",
                    PYMYSQL_IDLE,
                    "127.0.0.1",
                    &port.to_string(),
                    user,
                    password,
                ])
                .output()
        })
    };
    let (direct, through) = tokio::join!(
        py(info.backend_ports[0], "hscale", "hscale"),
        py(port, "root", "")
    );
    set_global_timeouts(port, 28800).await;
    let (direct, through) = (direct.unwrap(), through.unwrap());
    let text = |o: std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let (direct, through) = (text(direct.unwrap()), text(through.unwrap()));
    assert!(direct.contains("after ping"), "{direct}");
    assert_eq!(through, direct);
}
