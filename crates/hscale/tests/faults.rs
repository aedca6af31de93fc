#![allow(clippy::unwrap_used)]
//! Bad input and faults: wrong passwords, broken packets, unreachable and
//! dying backends. Each must give the client a clear error and leave the
//! proxy serving everyone else. This binary's proxy announces
//! caching_sha2_password.

mod common;

use std::time::Duration;

use common::raw::{err_code, Raw, CLIENT_CAPS};
use common::*;
use hscale_wire::consts::com;
use mysql_async::prelude::*;

fn sha2_cluster() -> Info {
    cluster_with(1, |c| {
        add_app_user(c);
        c.proxy.auth_plugin = "caching_sha2_password".into();
        c.proxy.max_allowed_packet = 1024 * 1024;
        c.proxy.acquire_timeout_ms = 3000;
    })
}

async fn still_serving(port: u16) {
    let mut c = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .expect("proxy still accepts clients");
    let one: Option<i32> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    c.disconnect().await.unwrap();
}

fn app_opts(port: u16, pass: &str) -> mysql_async::Opts {
    mysql_async::OptsBuilder::from_opts(proxy_opts(port, None))
        .user(Some("app"))
        .pass(Some(pass))
        .into()
}

#[tokio::test]
async fn passwords_with_both_plugins() {
    let info = sha2_cluster();
    // mysql_async answers the caching_sha2_password handshake directly.
    let mut c = mysql_async::Conn::new(app_opts(info.proxy_port, "secret"))
        .await
        .unwrap();
    let u: Option<String> = c.query_first("SELECT 'ok'").await.unwrap();
    assert_eq!(u.as_deref(), Some("ok"));
    c.disconnect().await.unwrap();
    let e = mysql_async::Conn::new(app_opts(info.proxy_port, "wrong"))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1045);
    let e = mysql_async::Conn::new(
        mysql_async::OptsBuilder::from_opts(app_opts(info.proxy_port, "x")).user(Some("nobody")),
    )
    .await
    .unwrap_err();
    assert_eq!(code(&e), 1045);
    // A raw client using mysql_native_password against the sha2 default.
    let (_, p) = Raw::login(info.proxy_port, "app", "secret", CLIENT_CAPS).await;
    assert_eq!(p.first(), Some(0x00), "native password login must succeed");
    let (_, p) = Raw::login(info.proxy_port, "app", "nope", CLIENT_CAPS).await;
    assert_eq!(err_code(&p.payload), Some(1045));
    still_serving(info.proxy_port).await;
}

#[tokio::test]
async fn malformed_packets_get_an_error_and_a_closed_connection() {
    let info = sha2_cluster();
    // Garbage instead of a handshake response.
    let mut r = Raw::open(info.proxy_port).await;
    r.send(1, b"\x01\x02garbage").await;
    let p = r.read().await.expect("an error packet");
    assert_eq!(p.first(), Some(0xff));
    assert!(r.is_closed().await);

    // Wrong sequence id on a command.
    let (mut r, ok) = Raw::login(info.proxy_port, "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0));
    r.send(5, b"\x03SELECT 1").await;
    let p = r.read().await.expect("an error packet");
    assert_eq!(err_code(&p.payload), Some(1156));
    assert!(r.is_closed().await);

    // A command larger than max_allowed_packet (1 MiB here).
    let (mut r, _) = Raw::login(info.proxy_port, "root", "", CLIENT_CAPS).await;
    let mut big = vec![com::QUERY];
    big.extend(std::iter::repeat_n(b' ', 2 * 1024 * 1024));
    r.send(0, &big).await;
    let p = r.read().await.expect("an error packet");
    assert_eq!(err_code(&p.payload), Some(1153));
    assert!(r.is_closed().await);

    // Truncated prepared-statement packets and unknown commands.
    let (mut r, _) = Raw::login(info.proxy_port, "root", "", CLIENT_CAPS).await;
    r.send(0, &[com::STMT_EXECUTE, 1]).await;
    let p = r.read().await.expect("an error packet");
    assert_eq!(p.first(), Some(0xff));
    let (mut r, _) = Raw::login(info.proxy_port, "root", "", CLIENT_CAPS).await;
    r.send(0, &[0x55, 1, 2, 3]).await;
    let p = r.read().await.expect("an error packet");
    assert_eq!(err_code(&p.payload), Some(1047));
    r.send(0, &[com::STMT_EXECUTE, 9, 0, 0, 0, 0, 1, 0, 0, 0])
        .await;
    let p = r.read().await.expect("an error packet");
    assert_eq!(err_code(&p.payload), Some(1243));
    // An empty packet.
    r.send(0, &[]).await;
    let p = r.read().await.expect("an error packet");
    assert_eq!(p.first(), Some(0xff));
    assert!(r.is_closed().await);

    // Random bytes thrown at a fresh connection at every stage.
    for seed in 0u32..50 {
        let mut r = Raw::open(info.proxy_port).await;
        let junk: Vec<u8> = (0..(seed * 7 % 300))
            .map(|i| (i.wrapping_mul(2654435761u32.wrapping_add(seed)) >> 13) as u8)
            .collect();
        r.send((seed % 3) as u8, &junk).await;
        let _ = r.is_closed().await;
    }
    still_serving(info.proxy_port).await;
}

#[tokio::test]
async fn statistics_ping_field_list_and_set_option() {
    let info = sha2_cluster();
    let (mut r, _) = Raw::login(info.proxy_port, "root", "", CLIENT_CAPS).await;
    r.send(0, &[com::PING]).await;
    assert_eq!(r.read().await.unwrap().first(), Some(0));
    r.send(0, &[com::STATISTICS]).await;
    let p = r.read().await.unwrap();
    assert!(String::from_utf8_lossy(&p.payload).contains("Uptime"));
    r.send(0, b"\x02mysql").await;
    assert_eq!(r.read().await.unwrap().first(), Some(0));
    // COM_FIELD_LIST: column definitions, then EOF.
    r.send(0, b"\x04db\0").await;
    let mut n = 0;
    loop {
        let p = r.read().await.unwrap();
        if p.first() == Some(0xfe) && p.payload.len() < 9 {
            break;
        }
        assert_ne!(p.first(), Some(0xff));
        n += 1;
    }
    assert!(n > 5, "mysql.db has many columns, got {n}");
    // COM_SET_OPTION off: multi-statements are refused afterwards.
    r.send(0, &[com::SET_OPTION, 1, 0]).await;
    assert_eq!(r.read().await.unwrap().first(), Some(0xfe));
    r.send(0, b"\x03SELECT 1; SELECT 2").await;
    let p = r.read().await.unwrap();
    assert_eq!(err_code(&p.payload), Some(1064));
    r.send(0, &[com::SET_OPTION, 0, 0]).await;
    assert_eq!(r.read().await.unwrap().first(), Some(0xfe));
}

#[tokio::test]
async fn unreachable_backend_is_named() {
    let info = sha2_cluster();
    // A second proxy whose only backend is a closed port.
    let mut cfg = hscale::Config::parse(&format!(
        "[[users]]\nname='root'\n[[backends]]\nname='ghost'\naddress='127.0.0.1:{}'\nuser='u'\nmin_connections=0\n",
        hscale::playground::mariadb::free_port().unwrap()
    ))
    .unwrap();
    cfg.proxy.connect_timeout_ms = 1000;
    let proxy = hscale::RunningProxy::start(cfg, "127.0.0.1:0").unwrap();
    // mysql_async's own first query already fails, with the backend named.
    let e = mysql_async::Conn::new(proxy_opts(proxy.addr.port(), None))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1429);
    assert!(e.to_string().contains("ghost"), "{e}");
    // Login itself works; every statement gets the clear error, and the
    // session stays open for the next one.
    let (mut r, ok) = Raw::login(proxy.addr.port(), "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0));
    for _ in 0..2 {
        r.send(0, b"\x03SELECT 1").await;
        let p = r.read().await.expect("an error packet");
        assert_eq!(err_code(&p.payload), Some(1429));
        assert!(String::from_utf8_lossy(&p.payload).contains("ghost"));
    }
    drop(r);
    // The other proxy, with a live backend, is unaffected.
    still_serving(info.proxy_port).await;
}

/// The backend thread of a session inside a transaction is killed while
/// a statement runs: the client finds its connection closed, as a
/// server's would be (its transaction is gone), never error 1158 on a
/// connection that stays open; the statement does not run again; other
/// clients are unaffected.
#[tokio::test]
async fn backend_connection_killed_mid_query() {
    let info = sha2_cluster();
    let mut c = mysql_async::Conn::new(proxy_opts(info.proxy_port, None))
        .await
        .unwrap();
    c.query_drop("BEGIN").await.unwrap();
    let port = info.backend_ports[0];
    let killer = tokio::spawn(async move {
        let mut k = mysql_async::Conn::new(backend_opts(port, None))
            .await
            .unwrap();
        let sql = "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(10)'";
        let backend_id = loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if let Some(id) = k.query_first::<u64, _>(sql).await.unwrap() {
                break id;
            }
        };
        k.query_drop(format!("KILL CONNECTION {backend_id}"))
            .await
            .unwrap();
        k.disconnect().await.unwrap();
    });
    let e = c.query_drop("SELECT SLEEP(10)").await.unwrap_err();
    killer.await.unwrap();
    // MariaDB closes a connection killed in SLEEP() without a word (the
    // client sees 2013); in other statements it may send 1927 first.
    if !matches!(e, mysql_async::Error::Io(_)) {
        assert_eq!(code(&e), 1927, "{e}");
        let e = c.query_drop("SELECT 1").await.unwrap_err();
        assert!(
            matches!(e, mysql_async::Error::Io(_)),
            "the client connection stays open: {e:?}"
        );
    }
    still_serving(info.proxy_port).await;
}

/// COM_STMT_SEND_LONG_DATA chunks are buffered by hscale and replayed on
/// whichever backend connection runs the execute; they are cleared after it.
#[tokio::test]
async fn long_data_and_statement_reset() {
    let info = sha2_cluster();
    let (mut r, ok) = Raw::login(info.proxy_port, "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0));
    r.send(0, b"\x16SELECT CONCAT(?, '|'), ? + 1").await;
    let first = r.read().await.unwrap();
    let prep = hscale_wire::stmt::PrepareOk::decode(&first.payload).unwrap();
    assert_eq!((prep.num_params, prep.num_columns), (2, 2));
    for _ in 0..(2 + 1 + 2 + 1) {
        r.read().await.unwrap();
    }
    let id = prep.statement_id.to_le_bytes();
    for (round, chunks) in [["hello ", "world"], ["second ", "value"]]
        .iter()
        .enumerate()
    {
        for chunk in chunks {
            let mut p = vec![com::STMT_SEND_LONG_DATA];
            p.extend_from_slice(&id);
            p.extend_from_slice(&0u16.to_le_bytes());
            p.extend_from_slice(chunk.as_bytes());
            r.send(0, &p).await;
        }
        // Other sessions churn the pool in between.
        still_serving(info.proxy_port).await;
        let mut exec = vec![com::STMT_EXECUTE];
        exec.extend_from_slice(&id);
        exec.push(0);
        exec.extend_from_slice(&1u32.to_le_bytes());
        exec.push(0); // null bitmap
        exec.push(1); // types follow
        exec.extend_from_slice(&[0xfe, 0, 0x08, 0]); // STRING (long data), LONGLONG
        exec.extend_from_slice(&(41i64 + round as i64).to_le_bytes());
        r.send(0, &exec).await;
        let mut packets = Vec::new();
        loop {
            let p = r.read().await.unwrap();
            assert_ne!(
                p.first(),
                Some(0xff),
                "{}",
                String::from_utf8_lossy(&p.payload)
            );
            let done = p.first() == Some(0xfe) && p.payload.len() < 9 && packets.len() > 3;
            packets.push(p);
            if done {
                break;
            }
        }
        // count, 2 defs, EOF, row, EOF
        assert_eq!(packets.len(), 6);
        let row = &packets[4].payload;
        let want = format!("{}{}|", chunks[0], chunks[1]);
        let text = String::from_utf8_lossy(row);
        assert!(text.contains(&want), "row {text:?} lacks {want:?}");
        assert_eq!(&row[row.len() - 8..], &(42i64 + round as i64).to_le_bytes());
    }
    let mut reset = vec![com::STMT_RESET];
    reset.extend_from_slice(&id);
    r.send(0, &reset).await;
    assert_eq!(r.read().await.unwrap().first(), Some(0));
    let mut close = vec![com::STMT_CLOSE];
    close.extend_from_slice(&id);
    r.send(0, &close).await;
    r.send(0, &reset).await;
    assert_eq!(err_code(&r.read().await.unwrap().payload), Some(1243));
}
