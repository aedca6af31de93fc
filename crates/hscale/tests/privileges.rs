#![allow(clippy::unwrap_used)]
//! Privileges through the proxy: a proxy user runs as its own backend
//! account, so the backends' grants apply (the server's own 1142); no
//! client reaches hscale's schema except through HSCALE commands, whatever
//! its backend account may do; SHOW GRANTS and CURRENT_USER() answer for
//! the proxy user and never show a backend account's credentials.

mod common;

use common::*;
use mysql_async::prelude::*;

/// Backend accounts made on every backend by the test: `hs_reader` may
/// only read `priv_db`, `hs_writer` may read it and do anything in hscale.*
/// on the backends. Once per test binary (the tests run at once).
async fn make_accounts() {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    DONE.get_or_init(make_accounts_once).await;
}

async fn make_accounts_once() {
    let info = cluster(2);
    for i in 0..info.backend_ports.len() {
        let mut c = backend_conn(i, None).await;
        for sql in [
            "DROP USER IF EXISTS hs_reader@'%', hs_writer@'%'",
            "CREATE USER hs_reader@'%' IDENTIFIED BY 'reader-backend-pw'",
            "CREATE USER hs_writer@'%' IDENTIFIED BY 'writer-backend-pw'",
            "CREATE DATABASE IF NOT EXISTS priv_db",
            "GRANT SELECT ON priv_db.* TO hs_reader@'%'",
            "GRANT SELECT, INSERT, UPDATE ON priv_db.* TO hs_writer@'%'",
            // Even a backend account allowed everything on hscale.* must not
            // reach it through the proxy.
            "GRANT ALL ON hscale.* TO hs_writer@'%'",
        ] {
            c.query_drop(sql).await.unwrap();
        }
        c.disconnect().await.unwrap();
    }
}

fn proxy() -> hscale::RunningProxy {
    cluster(2);
    let mut config = cluster_config();
    for (name, backend, pw) in [
        ("reader", "hs_reader", "reader-backend-pw"),
        ("writer", "hs_writer", "writer-backend-pw"),
    ] {
        config.users.push(hscale::config::UserConfig {
            name: name.into(),
            password: format!("{name}-pw"),
            admin: false,
            backend_user: Some(backend.into()),
            backend_password: pw.into(),
            host: None,
            ..Default::default()
        });
    }
    config.users.push(hscale::config::UserConfig {
        name: "app".into(),
        password: "secret".into(),
        ..Default::default()
    });
    hscale::RunningProxy::start(config, "127.0.0.1:0").unwrap()
}

fn opts(port: u16, user: &str, password: &str, db: Option<&str>) -> mysql_async::Opts {
    mysql_async::OptsBuilder::from_opts(proxy_opts(port, db))
        .user(Some(user))
        .pass(Some(password))
        .into()
}

async fn login(port: u16, user: &str, password: &str) -> mysql_async::Conn {
    mysql_async::Conn::new(opts(port, user, password, None))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mapped_user_meets_its_backend_accounts_grants() {
    make_accounts().await;
    let p = proxy();
    let port = p.addr.port();
    let mut admin = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .unwrap();
    admin
        .query_drop("DROP TABLE IF EXISTS priv_db.t")
        .await
        .unwrap();
    admin
        .query_drop("CREATE TABLE priv_db.t (id INT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    admin
        .query_drop("HSCALE SETUP_TABLE('priv_db.t', 'id', 't_default', 'shard0', 'NONE()')")
        .await
        .unwrap();
    admin
        .query_drop("HSCALE ADD_PARTITION('priv_db.t', 'p2', '2', 'shard1')")
        .await
        .unwrap();
    admin
        .query_drop("INSERT INTO priv_db.t (id, v) VALUES (1, 10), (2, 20)")
        .await
        .unwrap();

    let mut reader = login(port, "reader", "reader-pw").await;
    // Reads over both backends run as hs_reader, which may read.
    let sum: Option<i64> = reader
        .query_first("SELECT SUM(v) FROM priv_db.t")
        .await
        .unwrap();
    assert_eq!(sum, Some(30));
    // Writes are the server's to refuse, on whichever backend they go to.
    for sql in [
        "INSERT INTO priv_db.t (id, v) VALUES (3, 30)",
        "UPDATE priv_db.t SET v = 0 WHERE id = 2",
        "DELETE FROM priv_db.t WHERE id = 1",
    ] {
        let e = reader.query_drop(sql).await.unwrap_err();
        assert_eq!(code(&e), 1142, "{sql}: {e}");
        assert!(e.to_string().contains("hs_reader"), "{e}");
    }
    // A prepared statement and a transaction across backends, too.
    let e = reader
        .exec_drop("UPDATE priv_db.t SET v = ? WHERE id = ?", (5, 2))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1142, "{e}");
    reader.query_drop("BEGIN").await.unwrap();
    let n: Option<i64> = reader
        .query_first("SELECT COUNT(*) FROM priv_db.t WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    let e = reader
        .query_drop("UPDATE priv_db.t SET v = 0 WHERE id = 2")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1142, "{e}");
    reader.query_drop("ROLLBACK").await.unwrap();
    // A transaction across both backends as a mapped account: its home
    // branch records the decision in hscale.decisions (the account's grant
    // there is what docs/src/security.md asks for), the client never names it.
    let mut writer = login(port, "writer", "writer-pw").await;
    writer.query_drop("BEGIN").await.unwrap();
    writer
        .query_drop("UPDATE priv_db.t SET v = 21 WHERE id = 2")
        .await
        .unwrap();
    writer
        .query_drop("UPDATE priv_db.t SET v = 12 WHERE id = 1")
        .await
        .unwrap();
    writer.query_drop("COMMIT").await.unwrap();
    writer.disconnect().await.unwrap();
    // An unmapped user still runs as the proxy's own account.
    let mut app = login(port, "app", "secret").await;
    app.query_drop("UPDATE priv_db.t SET v = 11 WHERE id = 1")
        .await
        .unwrap();
    let rows: Vec<(i32, i32)> = admin
        .query("SELECT id, v FROM priv_db.t ORDER BY id")
        .await
        .unwrap();
    assert_eq!(rows, vec![(1, 11), (2, 21)]);
    for c in [reader, app, admin] {
        c.disconnect().await.unwrap();
    }
}

/// Every way into hscale's schema, for every kind of user: the admin on
/// the proxy's all-powerful account, an unmapped user, and a mapped one
/// whose backend account has every right on hscale.*.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_client_reaches_hscales_own_schema() {
    make_accounts().await;
    let p = proxy();
    let port = p.addr.port();
    let mut admin = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .unwrap();
    admin
        .query_drop("DROP TABLE IF EXISTS priv_db.s")
        .await
        .unwrap();
    admin
        .query_drop("CREATE TABLE priv_db.s (id INT PRIMARY KEY)")
        .await
        .unwrap();
    admin
        .query_drop("HSCALE SETUP_TABLE('priv_db.s', 'id', 's_default', 'shard0', 'NONE()')")
        .await
        .unwrap();
    let statements = [
        "SELECT * FROM hscale.partitioned_tables",
        "SELECT COUNT(*) FROM `hscale`.`operations`",
        "select * from HSCALE . partitions",
        "SELECT * FROM priv_db.s WHERE id IN (SELECT 1 FROM hscale/**/.decisions)",
        "SELECT * FROM /*!hscale.sequences*/",
        "INSERT INTO hscale.decisions VALUES ('x', 'committed', NOW())",
        "UPDATE hscale.partitioned_tables SET db = 'x'",
        "DELETE FROM hscale.operations",
        "REPLACE INTO hscale.sequences SELECT * FROM hscale.sequences",
        "CREATE TABLE priv_db.copy AS SELECT * FROM hscale.partitions",
        "DROP TABLE hscale.partitions",
        "RENAME TABLE hscale.partitions TO priv_db.stolen",
        "USE hscale",
        "DROP DATABASE hscale",
        "SHOW TABLES FROM hscale",
        "SET @q = 'SELECT * FROM hscale.operations'",
        "PREPARE s FROM @q",
        "EXECUTE IMMEDIATE CONCAT('SELECT * FROM hsc', 'ale.operations')",
        "PREPARE s FROM 'SELECT * FROM hsc' 'ale.operations'",
        "SELECT 1; SELECT * FROM hscale.operations",
    ];
    for (user, password) in [("root", ""), ("app", "secret"), ("writer", "writer-pw")] {
        let mut c = login(port, user, password).await;
        for sql in statements {
            if sql.starts_with("SET @q") {
                c.query_drop(sql).await.unwrap();
                continue;
            }
            let e = c.query_drop(sql).await.unwrap_err();
            assert!(matches!(code(&e), 1142 | 1044 | 1235), "{user}: {sql}: {e}");
        }
        // The binary protocol, and a database chosen at login.
        let e = c
            .exec_drop("SELECT * FROM hscale.operations WHERE id = ?", (1,))
            .await
            .unwrap_err();
        assert_eq!(code(&e), 1142, "{user}: {e}");
        let e = mysql_async::Conn::new(opts(port, user, password, Some("hscale")))
            .await
            .unwrap_err();
        assert_eq!(code(&e), 1044, "{user}: {e}");
        // The session is still usable.
        let one: Option<i32> = c.query_first("SELECT 1").await.unwrap();
        assert_eq!(one, Some(1));
        c.disconnect().await.unwrap();
    }
    // Nothing was dropped or changed: HSCALE commands still see the table.
    let rows: Vec<mysql_async::Row> = admin.query("HSCALE SHOW TABLES").await.unwrap();
    assert!(!rows.is_empty());
    let mut direct = backend_conn(0, None).await;
    let n: Option<i64> = direct
        .query_first(
            "SELECT COUNT(*) FROM hscale.partitioned_tables WHERE db = 'priv_db' AND tbl = 's'",
        )
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    direct.disconnect().await.unwrap();
    admin.disconnect().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_grants_answers_for_the_proxy_user_without_backend_credentials() {
    make_accounts().await;
    let p = proxy();
    let port = p.addr.port();
    let mut direct = backend_conn(0, None).await;
    let hashes: Vec<String> = direct
        .query("SELECT PASSWORD('reader-backend-pw') UNION ALL SELECT PASSWORD('hscale')")
        .await
        .unwrap();
    direct.disconnect().await.unwrap();
    for (user, password, backend_user) in
        [("reader", "reader-pw", "hs_reader"), ("root", "", "hscale")]
    {
        let mut c = login(port, user, password).await;
        for sql in [
            "SHOW GRANTS",
            "SHOW GRANTS FOR CURRENT_USER",
            "SHOW GRANTS FOR CURRENT_USER()",
        ] {
            let rows: Vec<String> = c.query(sql).await.unwrap();
            assert!(!rows.is_empty(), "{user}: {sql}");
            for g in &rows {
                assert!(g.contains(&format!("`{user}`@`%`")), "{user}: {g}");
                assert!(!g.contains(backend_user), "{user}: {g}");
                assert!(!g.contains("IDENTIFIED") && !g.contains("PASSWORD"), "{g}");
                for h in &hashes {
                    assert!(!g.contains(h.as_str()), "{user}: {g}");
                }
            }
        }
        if user == "reader" {
            let rows: Vec<String> = c.query("SHOW GRANTS").await.unwrap();
            assert!(
                rows.iter()
                    .any(|g| g.starts_with("GRANT SELECT ON `priv_db`.*")),
                "{rows:?}"
            );
        }
        for sql in [
            "SHOW GRANTS FOR 'hscale'@'%'",
            "SHOW GRANTS FOR hs_reader",
            "SHOW CREATE USER hscale",
        ] {
            let e = c.query_drop(sql).await.unwrap_err();
            assert_eq!(code(&e), 1044, "{user}: {sql}: {e}");
        }
        let (current, session): (String, String) = c
            .query_first("SELECT CURRENT_USER(), USER()")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(current, format!("{user}@%"));
        assert_eq!(session, format!("{user}@127.0.0.1"));
        c.disconnect().await.unwrap();
    }
}
