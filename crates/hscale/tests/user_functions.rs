#![allow(clippy::unwrap_used)]
//! USER(), CURRENT_USER() and the host part of hscale's accounts (issue
//! 29, item 6): through hscale they answer what one server answers for
//! the same client and account: `USER()` the client's user and host (its
//! IP, as the backends here run with skip_name_resolve; a loopback client
//! is `localhost` on a server that resolves names), `CURRENT_USER()` the
//! account it matched in hscale's `[[users]]`, whose `host` also decides
//! who may log in. The reference is a backend reached directly as
//! `root@127.0.0.1`, which the test servers have, by a client on
//! 127.0.0.1; hscale's root account is given the same host.

mod common;

use common::*;
use mysql_async::prelude::*;

fn tweak(c: &mut hscale::Config) {
    for u in &mut c.users {
        if u.name == "root" {
            u.host = Some("127.0.0.1".into());
        }
    }
    for (name, host) in [("near", "127.0.0._"), ("far", "10.9.%"), ("any", "%")] {
        c.users.push(hscale::config::UserConfig {
            name: name.into(),
            password: "pw".into(),
            host: Some(host.into()),
            ..Default::default()
        });
    }
}

fn info() -> Info {
    cluster_with(2, tweak)
}

async fn conn(port: u16, user: &str, password: &str) -> Result<mysql_async::Conn, u16> {
    let opts: mysql_async::Opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(password))
        .prefer_socket(false)
        .into();
    mysql_async::Conn::new(opts).await.map_err(|e| code(&e))
}

/// A statement's column names and rows as text.
async fn shown(c: &mut mysql_async::Conn, sql: &str) -> (Vec<String>, Vec<String>) {
    let mut r = c.query_iter(sql).await.unwrap();
    let columns = r
        .columns()
        .map(|cs| cs.iter().map(|c| c.name_str().into_owned()).collect())
        .unwrap_or_default();
    let rows: Vec<mysql_async::Row> = r.collect().await.unwrap();
    let rows = rows
        .into_iter()
        .map(|r| format!("{:?}", r.unwrap()))
        .collect();
    (columns, rows)
}

/// Issue 29, item 6.
#[tokio::test]
async fn user_and_current_user_answer_as_one_server() {
    let info = info();
    let mut direct = conn(info.backend_ports[0], "root", "").await.unwrap();
    let mut proxied = conn(info.proxy_port, "root", "").await.unwrap();
    let sql = "SELECT USER(), CURRENT_USER()";
    assert_eq!(
        shown(&mut proxied, sql).await,
        shown(&mut direct, sql).await
    );
}

/// The class: the functions' other names and forms, inside expressions
/// and conditions, their column labels, prepared.
#[tokio::test]
async fn user_functions_in_every_form_answer_as_one_server() {
    let info = info();
    let mut direct = conn(info.backend_ports[0], "root", "").await.unwrap();
    let mut proxied = conn(info.proxy_port, "root", "").await.unwrap();
    let mut wrong = Vec::new();
    for sql in [
        "SELECT USER(), CURRENT_USER()",
        "SELECT user(), current_user(), CURRENT_USER",
        "SELECT SESSION_USER(), SYSTEM_USER()",
        "SELECT USER() = CURRENT_USER()",
        "SELECT SUBSTRING_INDEX(USER(), '@', -1) AS host",
        "SELECT SUBSTRING_INDEX(CURRENT_USER(), '@', -1) AS account_host",
        "SELECT LENGTH(USER()), LENGTH(CURRENT_USER())",
        "SELECT 1 FROM DUAL WHERE CURRENT_USER() LIKE 'root@127%'",
        "SELECT CONCAT('by ', CURRENT_USER()) AS who",
        "SELECT UPPER(USER())",
    ] {
        let (got, want) = (
            shown(&mut proxied, sql).await,
            shown(&mut direct, sql).await,
        );
        if got != want {
            wrong.push(format!(
                "{sql}\n  hscale:    {got:?}\n  reference: {want:?}"
            ));
        }
        let got: Vec<mysql_async::Row> = proxied.exec(sql, ()).await.unwrap();
        let want: Vec<mysql_async::Row> = direct.exec(sql, ()).await.unwrap();
        let text = |rows: Vec<mysql_async::Row>| -> Vec<String> {
            rows.into_iter()
                .map(|r| format!("{:?}", r.unwrap()))
                .collect()
        };
        let (got, want) = (text(got), text(want));
        if got != want {
            wrong.push(format!(
                "{sql} (prepared)\n  hscale:    {got:?}\n  reference: {want:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// An account's host decides who logs in (1045 otherwise, as a server's
/// account for another host), and CURRENT_USER() names it.
#[tokio::test]
async fn accounts_are_matched_by_host() {
    let info = info();
    let mut near = conn(info.proxy_port, "near", "pw").await.unwrap();
    let who: Option<(String, String)> = near
        .query_first("SELECT USER(), CURRENT_USER()")
        .await
        .unwrap();
    assert_eq!(
        who,
        Some(("near@127.0.0.1".to_string(), "near@127.0.0._".to_string()))
    );
    let mut any = conn(info.proxy_port, "any", "pw").await.unwrap();
    let who: Option<String> = any.query_first("SELECT CURRENT_USER()").await.unwrap();
    assert_eq!(who.as_deref(), Some("any@%"));
    assert_eq!(conn(info.proxy_port, "far", "pw").await.err(), Some(1045));
    // COM_CHANGE_USER checks the host too.
    let e = any
        .change_user(
            mysql_async::ChangeUserOpts::default()
                .with_user(Some("far".into()))
                .with_pass(Some("pw".into())),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1045, "{e}");
}
