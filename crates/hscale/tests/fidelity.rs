#![allow(clippy::unwrap_used)]
//! Protocol and session fidelity (issue 10): what a client gets through
//! hscale is what the server would give it. One worker with one backend
//! connection, so clients one after another share that connection.

mod common;

use common::raw::{Raw, CLIENT_CAPS};
use common::{cluster_with, rt};
use hscale_wire::consts::cap;

/// hscale's limit on commands here (the backends allow 1 GiB).
const MAX_ALLOWED_PACKET: usize = 48 << 20;

fn info() -> common::Info {
    cluster_with(1, |c| {
        common::add_app_user(c);
        c.proxy.workers = 1;
        c.proxy.max_allowed_packet = MAX_ALLOWED_PACKET;
        for b in &mut c.backends {
            b.min_connections = 1;
            b.max_connections = 1;
        }
    })
}

/// The tests share the one backend connection; each runs alone.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const CHARSET_VARS: &str =
    "SELECT @@character_set_client, @@collation_connection, @@character_set_results";

/// Log in naming `collation` and read the character set variables, or the
/// error code of the refused login.
async fn charset_vars(
    port: u16,
    user: &str,
    password: &str,
    collation: u8,
) -> Result<Vec<Option<String>>, u16> {
    let (mut r, p) = Raw::login_as(port, user, password, CLIENT_CAPS, collation).await;
    if p.first() == Some(0xff) {
        return Err(common::raw::err_code(&p.payload).unwrap_or(0));
    }
    let mut rows = r.query(CHARSET_VARS).await?;
    r.send(0, &[hscale_wire::consts::com::QUIT]).await;
    Ok(rows.remove(0))
}

/// Every handshake collation id gives the session the server itself gives
/// it: the named character set and collation (cp1257, latin2, sjis, big5,
/// the utf8mb4 collations, ...), the server's default for an id it does
/// not know, a refusal for ucs2/utf16/utf32.
#[test]
fn handshake_collations_as_the_server() {
    let info = info();
    let _serial = serial();
    rt().block_on(async {
        let mut named = std::collections::BTreeMap::new();
        for id in 1..=255u8 {
            let direct = charset_vars(info.backend_ports[0], "hscale", "hscale", id).await;
            let proxied = charset_vars(info.proxy_port, "root", "", id).await;
            assert_eq!(proxied, direct, "collation id {id}");
            if let Ok(v) = &direct {
                named.insert(id, v[1].clone().unwrap_or_default());
            }
        }
        for (id, collation) in [
            (1, "big5_chinese_ci"),
            (9, "latin2_general_ci"),
            (13, "sjis_japanese_ci"),
            (26, "cp1250_general_ci"),
            (28, "gbk_chinese_ci"),
            (51, "cp1251_general_ci"),
            (59, "cp1257_general_ci"),
            (246, "utf8mb4_unicode_520_ci"),
        ] {
            assert_eq!(named[&id], collation, "collation id {id}");
        }
        // ucs2 is refused as the server refuses it.
        assert_eq!(
            charset_vars(info.proxy_port, "root", "", 35).await,
            Err(1231)
        );
    });
}

/// Clients with different options and character sets one after another on
/// the one pooled backend connection each see their own settings, also
/// after a client whose pinned connection was reset (COM_CHANGE_USER keeps
/// the multi-statements option on the server).
#[test]
fn pooled_connection_follows_each_client() {
    let info = info();
    let _serial = serial();
    let single = CLIENT_CAPS & !cap::MULTI_STATEMENTS;
    rt().block_on(async {
        for round in 0..3 {
            // A client without multi-statements and with latin2, inside a
            // transaction when it leaves: its connection is reset.
            let (mut a, p) = Raw::login_as(info.proxy_port, "app", "secret", single, 9).await;
            assert_eq!(p.first(), Some(0x00), "login");
            assert_eq!(
                a.query("SELECT 1; SELECT 2").await,
                Err(1064),
                "round {round}"
            );
            assert_eq!(a.query("BEGIN").await, Ok(vec![]));
            let vars = a.query(CHARSET_VARS).await.unwrap();
            assert_eq!(vars[0][0].as_deref(), Some("latin2"));
            a.send(0, &[hscale_wire::consts::com::QUIT]).await;
            drop(a);

            // A multi-statement client with utf8mb4 right after it.
            let (mut b, p) = Raw::login_as(info.proxy_port, "app", "secret", CLIENT_CAPS, 45).await;
            assert_eq!(p.first(), Some(0x00), "login");
            let rows = b.query("SELECT 1; SELECT 2").await;
            assert_eq!(
                rows,
                Ok(vec![vec![Some("1".into())], vec![Some("2".into())]]),
                "round {round}: a multi-statement client after one without"
            );
            let vars = b.query(CHARSET_VARS).await.unwrap();
            assert_eq!(vars[0][0].as_deref(), Some("utf8mb4"));
            // Also after switching the option off and on itself.
            b.send(0, &[hscale_wire::consts::com::SET_OPTION, 1, 0])
                .await;
            b.read().await.expect("EOF");
            assert_eq!(b.query("SELECT 1; SELECT 2").await, Err(1064));
            assert_eq!(b.query("BEGIN").await, Ok(vec![]));
            assert_eq!(b.query("SELECT 3").await.unwrap().len(), 1);
            b.send(0, &[hscale_wire::consts::com::QUIT]).await;
            drop(b);

            // A client without multi-statements after one with them, whose
            // connection was reset with the option off.
            let (mut c, p) = Raw::login_as(info.proxy_port, "app", "secret", single, 8).await;
            assert_eq!(p.first(), Some(0x00), "login");
            assert_eq!(
                c.query("SELECT 1; SELECT 2").await,
                Err(1064),
                "round {round}"
            );
            let vars = c.query(CHARSET_VARS).await.unwrap();
            assert_eq!(vars[0][0].as_deref(), Some("latin1"));
            c.send(0, &[hscale_wire::consts::com::QUIT]).await;
        }
    });
}

/// Commands and rows of 16 MiB and more (several packets each way) through
/// hscale, as text and as prepared statements, with the sequence ids a
/// driver checks; `@@max_allowed_packet` is the limit hscale enforces.
#[test]
fn commands_over_16_mib() {
    use mysql_async::prelude::*;
    let info = info();
    let _serial = serial();
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(common::proxy_opts(info.proxy_port, None))
            .await
            .expect("connect through hscale");
        let limit: u64 = c
            .query_first("SELECT @@max_allowed_packet")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(limit, MAX_ALLOWED_PACKET as u64);
        let (named, wait): (u64, u64) = c
            .query_first("SELECT @@session.max_allowed_packet, @@wait_timeout")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(named, limit);
        assert!(wait > 0);
        c.query_drop("CREATE DATABASE IF NOT EXISTS fidelity_big")
            .await
            .unwrap();
        c.query_drop("USE fidelity_big").await.unwrap();
        c.query_drop("DROP TABLE IF EXISTS big").await.unwrap();
        c.query_drop("CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB)")
            .await
            .unwrap();
        let size = 17 << 20;
        let text = "x".repeat(size);
        // Text: a 17 MiB INSERT (two packets) and a 17 MiB row back.
        c.query_drop(format!("INSERT INTO big VALUES (1, '{text}')"))
            .await
            .unwrap();
        let n: u64 = c
            .query_first("SELECT LENGTH(b) FROM big WHERE id = 1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, size as u64);
        let back: Vec<u8> = c
            .query_first("SELECT b FROM big WHERE id = 1")
            .await
            .unwrap()
            .unwrap();
        assert!(back.len() == size && back.iter().all(|&b| b == b'x'));
        // The same statement again: the connection is still in step.
        let back: String = c
            .query_first(format!("SELECT '{text}'"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(back.len(), size);
        // Prepared: a 17 MiB parameter in, a 17 MiB binary row back.
        let blob = vec![b'y'; size + 3];
        c.exec_drop("INSERT INTO big VALUES (?, ?)", (2, blob.clone()))
            .await
            .unwrap();
        let back: Vec<u8> = c
            .exec_first("SELECT b FROM big WHERE id = ?", (2,))
            .await
            .unwrap()
            .unwrap();
        assert!(back == blob);
        let ok: u64 = c
            .query_first("SELECT COUNT(*) FROM big")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ok, 2);
        c.query_drop("DROP DATABASE fidelity_big").await.unwrap();
        c.disconnect().await.unwrap();
    });
}

/// The sequence ids themselves: a reply to a command of two packets (ids
/// 0 and 1) starts at 2, for COM_QUERY and for COM_STMT_EXECUTE with a
/// parameter sent inline.
#[test]
fn replies_to_split_commands_continue_the_sequence() {
    use bytes::{BufMut, BytesMut};
    use hscale_wire::consts::com;
    let info = info();
    let _serial = serial();
    rt().block_on(async {
        let (mut r, p) = Raw::login(info.proxy_port, "app", "secret", CLIENT_CAPS).await;
        assert_eq!(p.first(), Some(0x00), "login");
        let size = 17 << 20;
        let mut q = vec![com::QUERY];
        q.extend_from_slice(format!("SELECT LENGTH('{}')", "z".repeat(size)).as_bytes());
        r.send(0, &q).await;
        let first = r.read().await.expect("answer");
        assert_eq!(
            first.seq, 2,
            "first packet of the reply to a split COM_QUERY"
        );
        let mut seq = first.seq;
        loop {
            let p = r.read().await.expect("answer");
            assert_eq!(p.seq, seq.wrapping_add(1));
            seq = p.seq;
            if hscale_wire::response::is_eof(&p.payload) && seq >= 5 {
                break;
            }
        }
        // COM_STMT_PREPARE, then an execution whose parameter is inline.
        let mut prep = vec![com::STMT_PREPARE];
        prep.extend_from_slice(b"SELECT LENGTH(?)");
        r.send(0, &prep).await;
        let ok = r.read().await.expect("prepare answer");
        let ok = hscale_wire::stmt::PrepareOk::decode(&ok.payload).expect("prepare OK");
        for _ in 0..(ok.num_params + 1 + ok.num_columns + 1) {
            r.read().await.expect("definitions");
        }
        let mut e = BytesMut::new();
        e.put_u8(com::STMT_EXECUTE);
        e.put_u32_le(ok.statement_id);
        e.put_u8(0);
        e.put_u32_le(1);
        e.put_u8(0); // null bitmap
        e.put_u8(1); // types follow
        e.put_slice(&[0xfb, 0]); // LONG_BLOB
        hscale_wire::buf::put_lenenc_bytes(&mut e, &vec![b'w'; size]);
        r.send(0, &e).await;
        let first = r.read().await.expect("execute answer");
        assert_eq!(first.first(), Some(1), "one column");
        assert_eq!(
            first.seq, 2,
            "first packet of the reply to a split COM_STMT_EXECUTE"
        );
        let def = r.read().await.unwrap();
        assert_eq!(def.seq, 3);
        let eof = r.read().await.unwrap();
        assert_eq!(eof.seq, 4);
        let row = r.read().await.unwrap();
        assert_eq!(row.seq, 5);
        // LENGTH(?) is an INT here: header, null bitmap, 4 bytes.
        assert_eq!(row.payload[2..], (size as u32).to_le_bytes());
        let eof = r.read().await.unwrap();
        assert_eq!(
            (eof.seq, hscale_wire::response::is_eof(&eof.payload)),
            (6, true)
        );
        // The connection is in step: a plain query answers from 1.
        assert_eq!(r.query("SELECT 1").await, Ok(vec![vec![Some("1".into())]]));
    });
}

/// A global default changed after the pool's one backend connection was
/// opened reaches every later session, as on a server: at once when the
/// change goes through hscale, within a health-check round when it is made
/// on the backend itself; a session's own SET still wins over it.
#[test]
fn global_defaults_reach_pooled_connections() {
    use mysql_async::prelude::*;
    let info = info();
    let _serial = serial();
    rt().block_on(async {
        let proxy = || async {
            mysql_async::Conn::new(common::proxy_opts(info.proxy_port, None))
                .await
                .unwrap()
        };
        let read = |sql: &'static str| async move {
            let mut c = mysql_async::Conn::new(common::proxy_opts(info.proxy_port, None))
                .await
                .unwrap();
            let v: u64 = c.query_first(sql).await.unwrap().unwrap();
            c.disconnect().await.unwrap();
            v
        };
        // The pool's connection exists and has the old defaults.
        let old = read("SELECT @@div_precision_increment").await;
        assert_eq!(old, 4);
        let mut own = proxy().await;
        own.query_drop("SET SESSION div_precision_increment = 7")
            .await
            .unwrap();
        let mut admin = proxy().await;
        admin
            .query_drop("SET GLOBAL div_precision_increment = 9, GLOBAL wait_timeout = 2")
            .await
            .unwrap();
        assert_eq!(read("SELECT @@div_precision_increment").await, 9);
        assert_eq!(read("SELECT @@session.wait_timeout").await, 2);
        let third: String = own.query_first("SELECT 1/3").await.unwrap().unwrap();
        assert_eq!(third, "0.3333333", "the session's own SET is kept");
        admin
            .query_drop("SET GLOBAL wait_timeout = DEFAULT")
            .await
            .unwrap();
        // Changed on the backend, not through hscale.
        let mut direct = mysql_async::Conn::new(common::backend_opts(info.backend_ports[0], None))
            .await
            .unwrap();
        direct
            .query_drop("SET GLOBAL div_precision_increment = 11")
            .await
            .unwrap();
        let mut polls = 0;
        while read("SELECT @@div_precision_increment").await != 11 {
            polls += 1;
            assert!(
                polls < 600,
                "a change on the backend never reached the pool"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        direct
            .query_drop("SET GLOBAL div_precision_increment = DEFAULT")
            .await
            .unwrap();
        let third: String = own.query_first("SELECT 1/3").await.unwrap().unwrap();
        assert_eq!(third, "0.3333333");
    });
}
