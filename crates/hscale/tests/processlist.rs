#![allow(clippy::unwrap_used)]
//! Connection ids and PROCESSLIST through hscale (issue 10, item 3), and
//! the variables whose value is hscale's own: `CONNECTION_ID()` (text and
//! prepared), `SHOW [FULL] PROCESSLIST`, `information_schema.PROCESSLIST`
//! and KILL all speak the hscale id of the handshake, for the whole
//! session; a client without the admin right sees and kills only its own
//! user's sessions; `SHOW VARIABLES` answers the limits hscale enforces.

mod common;

use common::{cluster_with, code, rt};
use mysql_async::prelude::*;
use mysql_async::{Conn, Opts, OptsBuilder, Row};

const MAX_ALLOWED_PACKET: usize = 40 << 20;
const MAX_CONNECTIONS: usize = 321;

fn info() -> common::Info {
    cluster_with(1, |c| {
        common::add_app_user(c);
        c.proxy.max_allowed_packet = MAX_ALLOWED_PACKET;
        c.proxy.max_connections = MAX_CONNECTIONS;
    })
}

fn opts(port: u16, user: &str, password: &str) -> Opts {
    OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(password))
        .prefer_socket(false)
        .into()
}

async fn root() -> Conn {
    Conn::new(opts(info().proxy_port, "root", ""))
        .await
        .unwrap()
}

async fn app() -> Conn {
    Conn::new(opts(info().proxy_port, "app", "secret"))
        .await
        .unwrap()
}

/// One PROCESSLIST row: id, user, host, db, command, state, info.
type Process = (
    u64,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
);

async fn show_processlist(c: &mut Conn, full: bool) -> Vec<Process> {
    let sql = if full {
        "SHOW FULL PROCESSLIST"
    } else {
        "SHOW PROCESSLIST"
    };
    let rows: Vec<Row> = c.query(sql).await.unwrap();
    rows.into_iter()
        .map(|mut r| {
            assert_eq!(r.len(), 9, "a server's nine columns");
            (
                r.take::<u64, _>("Id").unwrap(),
                r.take("User").unwrap(),
                r.take("Host").unwrap(),
                r.take("db").unwrap(),
                r.take("Command").unwrap(),
                r.take("State").unwrap(),
                r.take("Info").unwrap(),
            )
        })
        .collect()
}

/// Three sessions: one runs a statement that waits on a lock another
/// holds, one lists. Every id PROCESSLIST shows is the session's hscale
/// id (its handshake's, `CONNECTION_ID()`'s and `@@pseudo_thread_id`'s in
/// text and prepared statements), with the session's command, statement and database; the
/// id read there is the one KILL takes.
#[test]
fn processlist_shows_hscale_sessions_under_their_ids() {
    rt().block_on(async {
        let mut lister = root().await;
        let mut holder = root().await;
        let mut waiter = root().await;
        lister
            .query_drop("CREATE DATABASE IF NOT EXISTS pl_ids")
            .await
            .unwrap();
        lister.query_drop("USE pl_ids").await.unwrap();
        // The same id in the handshake, in text and in prepared statements,
        // statement after statement (on whichever backend connection).
        for c in [&mut lister, &mut holder, &mut waiter] {
            let handshake = u64::from(c.id());
            for _ in 0..3 {
                let text: u64 = c.query_first("SELECT CONNECTION_ID()").await.unwrap().unwrap();
                let prepared: u64 = c
                    .exec_first("SELECT CONNECTION_ID() + ?", (0,))
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!((text, prepared), (handshake, handshake));
                // @@pseudo_thread_id is the same id, text and prepared.
                let text: u64 = c
                    .query_first("SELECT @@pseudo_thread_id")
                    .await
                    .unwrap()
                    .unwrap();
                let prepared: u64 = c
                    .exec_first("SELECT @@session.pseudo_thread_id + ?", (0,))
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!((text, prepared), (handshake, handshake));
                // So is its row in information_schema.SESSION_VARIABLES and
                // SHOW VARIABLES, text and prepared.
                let handshake = handshake.to_string();
                for sql in [
                    "SELECT VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES WHERE VARIABLE_NAME = 'pseudo_thread_id'",
                    "SELECT v.VARIABLE_VALUE FROM INFORMATION_SCHEMA.session_variables v WHERE v.VARIABLE_NAME = 'Pseudo_Thread_Id'",
                ] {
                    let text: String = c.query_first(sql).await.unwrap().unwrap();
                    let prepared: String = c.exec_first(sql, ()).await.unwrap().unwrap();
                    assert_eq!((&text, &prepared), (&handshake, &handshake), "{sql}");
                }
                for sql in [
                    "SHOW VARIABLES LIKE 'pseudo_thread_id'",
                    "SHOW SESSION VARIABLES WHERE Variable_name = 'pseudo_thread_id'",
                ] {
                    let text: (String, String) = c.query_first(sql).await.unwrap().unwrap();
                    let prepared: (String, String) = c.exec_first(sql, ()).await.unwrap().unwrap();
                    assert_eq!(text.1, handshake, "{sql}");
                    assert_eq!(prepared.1, handshake, "{sql}");
                }
            }
        }
        // A session that sets it sees its own value.
        let mut setter = root().await;
        setter
            .query_drop("SET pseudo_thread_id = 424242")
            .await
            .unwrap();
        let own: String = setter
            .query_first("SELECT VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES WHERE VARIABLE_NAME = 'PSEUDO_THREAD_ID'")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(own, "424242");
        setter.disconnect().await.unwrap();
        let waiter_id = u64::from(waiter.id());
        let holder_id = u64::from(holder.id());
        let lister_id = u64::from(lister.id());
        let got: Option<i64> = holder
            .query_first("SELECT GET_LOCK('pl_ids', 60)")
            .await
            .unwrap();
        assert_eq!(got, Some(1));
        // Longer than the 100 characters SHOW PROCESSLIST (not FULL) shows.
        let wait_sql = format!("SELECT GET_LOCK('pl_ids', 60), '{}'", "y".repeat(150));
        let sent = wait_sql.clone();
        let waiting = tokio::spawn(async move {
            let r = waiter.query_drop(sent).await;
            (waiter, r)
        });
        // Until the waiter's statement runs.
        let rows = loop {
            let rows = show_processlist(&mut lister, true).await;
            let runs = rows
                .iter()
                .any(|r| r.0 == waiter_id && r.4 == "Query");
            if runs {
                break rows;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        let row = |id| rows.iter().find(|r| r.0 == id).unwrap().clone();
        let w = row(waiter_id);
        assert_eq!(w.1, "root");
        assert!(w.2.starts_with("127.0.0.1:"), "host {:?}", w.2);
        assert_eq!(w.6.as_deref(), Some(wait_sql.as_str()));
        let h = row(holder_id);
        assert_eq!((h.4.as_str(), h.5.as_deref(), h.6.as_deref()), ("Sleep", Some(""), None));
        let l = row(lister_id);
        assert_eq!(
            (l.3.as_deref(), l.4.as_str(), l.6.as_deref()),
            (Some("pl_ids"), "Query", Some("SHOW FULL PROCESSLIST"))
        );
        // information_schema.PROCESSLIST: the same sessions, filtered and
        // computed by the server as any table.
        let (id, command, info): (u64, String, String) = lister
            .query_first(format!(
                "SELECT p.ID, COMMAND, INFO FROM information_schema.PROCESSLIST p WHERE p.ID = {waiter_id}"
            ))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((id, command.as_str()), (waiter_id, "Query"));
        assert_eq!(info, wait_sql);
        let me: u64 = lister
            .query_first("SELECT ID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(me, lister_id);
        // Not FULL: Info cut to 100 characters, as a server cuts it.
        let short = show_processlist(&mut lister, false).await;
        let w = short.iter().find(|r| r.0 == waiter_id).unwrap();
        assert_eq!(w.6.as_deref(), Some(&wait_sql[..100]));
        // The id read in the session is the one KILL takes.
        lister
            .query_drop(format!("KILL CONNECTION {waiter_id}"))
            .await
            .unwrap();
        let (mut waiter, _) = waiting.await.unwrap();
        assert!(
            waiter.query_drop("SELECT 1").await.is_err(),
            "the killed session is closed"
        );
        // Gone from the list once its session ended (a server's KILL is
        // asynchronous too).
        let mut polls = 0;
        while show_processlist(&mut lister, false).await.iter().any(|r| r.0 == waiter_id) {
            polls += 1;
            assert!(polls < 1000, "the killed session stays in PROCESSLIST");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        holder.query_drop("DO RELEASE_LOCK('pl_ids')").await.unwrap();
        lister.query_drop("DROP DATABASE pl_ids").await.unwrap();
    });
}

/// The ids of `SHOW FULL PROCESSLIST` as a prepared statement.
async fn prepared_show_ids(c: &mut Conn) -> Vec<u64> {
    let rows: Vec<Row> = c.exec("SHOW FULL PROCESSLIST", ()).await.unwrap();
    rows.into_iter()
        .map(|mut r| {
            assert_eq!(r.len(), 9, "a server's nine columns");
            r.take::<u64, _>("Id").unwrap()
        })
        .collect()
}

/// PROCESSLIST read through statements prepared with COM_STMT_PREPARE
/// (mysql_async prepares once per connection and executes that statement
/// again): hscale's ids, users and statements as in text, filtered by
/// user, and at each execution the sessions of that moment.
#[test]
fn prepared_statements_read_processlist_under_hscale_ids() {
    rt().block_on(async {
        let mut c = root().await;
        let me = u64::from(c.id());
        let sql = "SELECT ID, USER, COMMAND, INFO FROM information_schema.PROCESSLIST \
                   WHERE ID IN (?, ?) ORDER BY ID";
        type Seen = Vec<(u64, String, String, Option<String>)>;
        let rows: Seen = c.exec(sql, (me, 0)).await.unwrap();
        assert_eq!(
            rows,
            vec![(me, "root".into(), "Execute".into(), Some(sql.into()))]
        );
        // A session opened after the PREPARE is seen by the next execution.
        let mut other = app().await;
        let other_id = u64::from(other.id());
        let mut want = vec![(me, "root", "Execute"), (other_id, "app", "Sleep")];
        want.sort();
        // The other session shows its last command until it marks itself
        // asleep, just after its answer went out (as a server's thread
        // does): look again for a moment.
        for polls in 0.. {
            let rows: Seen = c.exec(sql, (me, other_id)).await.unwrap();
            let ids: Vec<(u64, &str, &str)> = rows
                .iter()
                .map(|r| (r.0, r.1.as_str(), r.2.as_str()))
                .collect();
            if ids == want {
                break;
            }
            assert!(polls < 100, "{ids:?}");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        // SHOW FULL PROCESSLIST prepared: a server's nine columns.
        let ids = prepared_show_ids(&mut c).await;
        assert!(ids.contains(&me) && ids.contains(&other_id), "{ids:?}");
        // Without the admin right: only its own user's sessions.
        let seen: Vec<(u64, String)> = other
            .exec("SELECT ID, USER FROM information_schema.PROCESSLIST", ())
            .await
            .unwrap();
        assert!(seen.iter().any(|(id, _)| *id == other_id), "{seen:?}");
        assert!(seen.iter().all(|(_, u)| u == "app"), "{seen:?}");
        // Gone from the next execution once its session ended.
        other.disconnect().await.unwrap();
        let mut polls = 0;
        while prepared_show_ids(&mut c).await.contains(&other_id) {
            polls += 1;
            assert!(polls < 1000, "the ended session stays in PROCESSLIST");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        // SHOW VARIABLES prepared: hscale's limits, as in text.
        let v: Vec<(String, String)> = c
            .exec("SHOW VARIABLES LIKE 'max_allowed_packet'", ())
            .await
            .unwrap();
        assert_eq!(
            v,
            vec![("max_allowed_packet".into(), MAX_ALLOWED_PACKET.to_string())]
        );
    });
}

/// Without the admin right (a server's PROCESS and SUPER), a client sees
/// only its own user's sessions and can KILL only those.
#[test]
fn a_client_without_the_right_sees_and_kills_only_its_own_sessions() {
    rt().block_on(async {
        let mut admin = root().await;
        let mut a = app().await;
        let mut b = app().await;
        let admin_id = u64::from(admin.id());
        let (a_id, b_id) = (u64::from(a.id()), u64::from(b.id()));
        let seen: Vec<(u64, String)> = a
            .query("SELECT ID, USER FROM information_schema.PROCESSLIST ORDER BY ID")
            .await
            .unwrap();
        assert!(seen.iter().all(|(_, u)| u == "app"), "{seen:?}");
        assert!(seen.iter().any(|(id, _)| *id == a_id));
        assert!(seen.iter().any(|(id, _)| *id == b_id));
        let ids: Vec<u64> = show_processlist(&mut admin, false)
            .await
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert!(
            [admin_id, a_id, b_id].iter().all(|id| ids.contains(id)),
            "{ids:?}"
        );
        let denied = a.query_drop(format!("KILL {admin_id}")).await.unwrap_err();
        assert_eq!(code(&denied), 1095);
        let _: Option<u64> = admin.query_first("SELECT 1").await.unwrap();
        a.query_drop(format!("KILL {b_id}")).await.unwrap();
        assert!(b.query_drop("SELECT 1").await.is_err());
        admin.query_drop(format!("KILL {a_id}")).await.unwrap();
        assert!(a.query_drop("SELECT 1").await.is_err());
    });
}

/// `SHOW VARIABLES` and `@@` reads, text and prepared, answer the limits
/// hscale enforces; other variables are the backend's.
#[test]
fn show_variables_answers_the_limits_hscale_enforces() {
    rt().block_on(async {
        let mut c = root().await;
        let packet = MAX_ALLOWED_PACKET.to_string();
        let connections = MAX_CONNECTIONS.to_string();
        let show = |sql: &'static str| async move {
            let mut c = root().await;
            let rows: Vec<(String, String)> = c.query(sql).await.unwrap();
            rows
        };
        assert_eq!(
            show("SHOW VARIABLES LIKE 'max_allowed_packet'").await,
            vec![("max_allowed_packet".to_string(), packet.clone())]
        );
        assert_eq!(
            show("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('max_connections', 'max_allowed_packet')").await,
            vec![
                ("max_allowed_packet".to_string(), packet.clone()),
                ("max_connections".to_string(), connections.clone())
            ]
        );
        let max: Vec<(String, String)> = show("SHOW SESSION VARIABLES LIKE 'MAX\\_%'").await;
        assert!(max.contains(&("max_connections".to_string(), connections.clone())));
        assert!(max.windows(2).all(|w| w[0].0 < w[1].0), "ordered by name");
        // Every other variable as the backend has it.
        let mut direct = Conn::new(common::backend_opts(info().backend_ports[0], None))
            .await
            .unwrap();
        let backend: Vec<(String, String)> = direct.query("SHOW VARIABLES LIKE 'max\\_%'").await.unwrap();
        assert_eq!(max.len(), backend.len());
        for (ours, theirs) in max.iter().zip(&backend) {
            if !["max_allowed_packet", "max_connections"].contains(&ours.0.as_str()) {
                assert_eq!(ours, theirs);
            }
        }
        let prepared: u64 = c
            .exec_first("SELECT @@max_allowed_packet + ?", (0,))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(prepared, MAX_ALLOWED_PACKET as u64);
    });
}
