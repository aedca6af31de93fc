#![allow(clippy::unwrap_used)]
//! TLS to backends: two MariaDB servers started with ssl_cert / ssl_key /
//! ssl_ca from a CA this test makes (rcgen), `require_secure_transport`
//! on, and a backend account that `REQUIRE X509`; so every connection the
//! proxy opens (pooled, admin, change, heartbeat, transaction branches)
//! works only over verified TLS with the client certificate. A wrong CA or
//! a wrong server name fails the connection.

use std::path::{Path, PathBuf};

use hscale::config::{BackendConfig, UserConfig};
use hscale::playground::mariadb::MariaDb;
use mysql_async::prelude::*;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

fn write(dir: &Path, name: &str, text: String) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// A CA and, signed by it, a server certificate for 127.0.0.1 / localhost
/// and a client certificate; plus a second CA that signed nothing here.
fn make_pki(dir: &Path) -> Pki {
    std::fs::create_dir_all(dir).unwrap();
    let ca = |cn: &str| {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        p.distinguished_name.push(DnType::CommonName, cn);
        let cert = p.self_signed(&key).unwrap();
        (cert.pem(), Issuer::new(p, key))
    };
    let (ca_pem, issuer) = ca("hscale test CA");
    write(dir, "ca.pem", ca_pem);
    let (other_pem, _) = ca("another CA");
    write(dir, "other-ca.pem", other_pem);
    let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose, stem: &str| {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(names).unwrap();
        p.distinguished_name.push(DnType::CommonName, stem);
        p.extended_key_usages = vec![usage];
        let cert = p.signed_by(&key, &issuer).unwrap();
        write(dir, &format!("{stem}-cert.pem"), cert.pem());
        write(dir, &format!("{stem}-key.pem"), key.serialize_pem());
    };
    leaf(
        vec!["127.0.0.1".into(), "localhost".into()],
        ExtendedKeyUsagePurpose::ServerAuth,
        "server",
    );
    leaf(vec![], ExtendedKeyUsagePurpose::ClientAuth, "client");
    Pki {
        dir: dir.to_path_buf(),
    }
}

/// Root on a backend over TLS (not verified: the test only reads there).
async fn root_tls(port: u16) -> mysql_async::Conn {
    let ssl = mysql_async::SslOpts::default()
        .with_danger_accept_invalid_certs(true)
        .with_danger_skip_domain_validation(true);
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .prefer_socket(false)
        .ssl_opts(Some(ssl));
    mysql_async::Conn::new(opts).await.unwrap()
}

fn proxy_opts(port: u16) -> mysql_async::Opts {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(""))
        .prefer_socket(false)
        .into()
}

fn config(pki: &Pki, servers: &[MariaDb], tweak: impl Fn(&mut BackendConfig)) -> hscale::Config {
    let mut c = hscale::Config::parse("").unwrap();
    c.proxy.listen = "127.0.0.1:0".into();
    c.proxy.reload_interval_ms = 300;
    c.users = vec![UserConfig {
        name: "root".into(),
        admin: true,
        ..Default::default()
    }];
    c.backends = servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut b = BackendConfig {
                name: format!("shard{i}"),
                address: s.address(),
                user: "x509".into(),
                password: "x509pw".into(),
                min_connections: 1,
                max_connections: 16,
                tls: true,
                ca: Some(pki.path("ca.pem")),
                cert: Some(pki.path("client-cert.pem")),
                key: Some(pki.path("client-key.pem")),
                server_name: None,
                replicas: Vec::new(),
            };
            tweak(&mut b);
            b
        })
        .collect();
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_backend_connection_is_verified_tls_with_a_client_certificate() {
    let base = std::env::temp_dir().join(format!("hscale-backend-tls-{}", std::process::id()));
    let pki = make_pki(&base.join("pki"));
    let ssl_args = vec![
        format!("--ssl-ca={}", pki.path("ca.pem")),
        format!("--ssl-cert={}", pki.path("server-cert.pem")),
        format!("--ssl-key={}", pki.path("server-key.pem")),
    ];
    let servers: Vec<MariaDb> = (0..2)
        .map(|i| MariaDb::start_with(&base.join(format!("shard{i}")), &ssl_args).unwrap())
        .collect();
    for s in &servers {
        let mut c = root_tls(s.port).await;
        for sql in [
            "CREATE USER 'x509'@'%' IDENTIFIED BY 'x509pw' REQUIRE X509",
            "GRANT ALL PRIVILEGES ON *.* TO 'x509'@'%'",
            "SET GLOBAL require_secure_transport = ON",
        ] {
            c.query_drop(sql).await.unwrap();
        }
        c.disconnect().await.unwrap();
    }

    let mut proxy = hscale::RunningProxy::start(config(&pki, &servers, |_| {}), "127.0.0.1:0")
        .expect("proxy starts");
    let mut p = mysql_async::Conn::new(proxy_opts(proxy.addr.port()))
        .await
        .unwrap();
    // A pooled connection: the backend session is TLS.
    let version: Option<String> = p
        .query_first(
            "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS \
             WHERE VARIABLE_NAME = 'Ssl_version'",
        )
        .await
        .unwrap();
    assert!(
        version.as_deref().is_some_and(|v| v.starts_with("TLS")),
        "{version:?}"
    );
    // Admin and change connections on both backends: SETUP_TABLE, a
    // partition copied to shard1, moved back, dropped.
    p.query_drop("CREATE DATABASE tlsdb").await.unwrap();
    p.query_drop("CREATE TABLE tlsdb.t (k INT PRIMARY KEY, v INT NOT NULL)")
        .await
        .unwrap();
    let values: Vec<String> = (0..200).map(|k| format!("({k}, {k})")).collect();
    p.query_drop(format!("INSERT INTO tlsdb.t VALUES {}", values.join(",")))
        .await
        .unwrap();
    for cmd in [
        "HSCALE SETUP_TABLE('tlsdb.t', 'k', 't_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('tlsdb.t', 'p1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('tlsdb.t', 'p2', '2', 'shard1')",
        "HSCALE MOVE_PARTITION('tlsdb.t', 'p2', 'shard0')",
    ] {
        p.query_drop(cmd)
            .await
            .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    }
    // A transaction across both backends (an XA branch on shard1).
    p.query_drop("BEGIN").await.unwrap();
    p.query_drop("UPDATE tlsdb.t SET v = v + 1000 WHERE k = 1")
        .await
        .unwrap();
    p.query_drop("UPDATE tlsdb.t SET v = v + 1000 WHERE k = 4")
        .await
        .unwrap();
    p.query_drop("COMMIT").await.unwrap();
    let (n, sum): (u64, i64) = p
        .query_first("SELECT COUNT(*), SUM(v) FROM tlsdb.t")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((n, sum), (200, 199 * 200 / 2 + 2000));
    // Rows really on shard1 (read there directly).
    let mut s1 = root_tls(servers[1].port).await;
    let on_shard1: Vec<(String,)> = s1
        .query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tlsdb'")
        .await
        .unwrap();
    assert_eq!(on_shard1.len(), 1, "{on_shard1:?}");
    let rows: u64 = s1
        .query_first(format!("SELECT COUNT(*) FROM tlsdb.`{}`", on_shard1[0].0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rows, 50);
    s1.disconnect().await.unwrap();
    // The fleet's heartbeat reached the main backend too.
    let proxies: Vec<mysql_async::Row> = p.query("HSCALE SHOW PROXIES").await.unwrap();
    assert_eq!(proxies.len(), 1);
    p.disconnect().await.unwrap();
    proxy.stop();

    // A CA that did not sign the server's certificate: refused.
    let wrong_ca = |b: &mut BackendConfig| b.ca = Some(Pki::path(&pki, "other-ca.pem"));
    // The right CA, a name the certificate does not carry: refused.
    let wrong_name = |b: &mut BackendConfig| b.server_name = Some("db.example".into());
    for (what, tweak, expect) in [
        (
            "wrong CA",
            &wrong_ca as &dyn Fn(&mut BackendConfig),
            "UnknownIssuer",
        ),
        ("wrong name", &wrong_name, "not valid for name"),
    ] {
        let mut bad = hscale::RunningProxy::start(config(&pki, &servers, tweak), "127.0.0.1:0")
            .expect("proxy starts");
        // The driver's first statement at connect already needs a backend.
        let e = match mysql_async::Conn::new(proxy_opts(bad.addr.port())).await {
            Ok(mut c) => c.query_drop("SELECT 1").await.unwrap_err(),
            Err(e) => e,
        };
        let text = e.to_string();
        assert!(
            matches!(&e, mysql_async::Error::Server(s) if s.code == 1429) && text.contains(expect),
            "{what}: {text}"
        );
        bad.stop();
    }
    drop(servers);
    let _ = std::fs::remove_dir_all(&base);
}
