#![allow(clippy::unwrap_used)]
//! TLS to clients: the SSLRequest handshake byte by byte (a rustls client
//! that verifies the playground's certificate), mysql_async, the mariadb
//! CLI, PyMySQL and Connector/J over TLS, and `[tls] require` refusing a
//! plain client as MariaDB's require_secure_transport does.

mod common;

use std::process::Command;
use std::sync::Arc;

use common::*;
use hscale_wire::consts::{cap, com};
use hscale_wire::handshake::{HandshakeResponse, InitialHandshake, SSL_REQUEST_LEN};
use hscale_wire::PacketStream;
use mysql_async::prelude::*;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

fn port() -> u16 {
    cluster(2).proxy_port
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (run `make deps`)"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}:\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

fn tls_opts(port: u16) -> mysql_async::Opts {
    let ssl = mysql_async::SslOpts::default()
        .with_danger_accept_invalid_certs(true)
        .with_danger_skip_domain_validation(true);
    mysql_async::OptsBuilder::from_opts(proxy_opts(port, None))
        .ssl_opts(Some(ssl))
        .into()
}

/// The greeting offers CLIENT_SSL; an SSLRequest at seq 1 turns the socket
/// into TLS (the certificate verifies for "localhost" against the
/// playground's own PEM), the response follows at seq 2, the OK at seq 3,
/// and statements run over TLS.
#[test]
fn ssl_request_then_login_over_tls() {
    let info = cluster(2);
    rt().block_on(async {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", info.proxy_port))
            .await
            .unwrap();
        let mut plain = PacketStream::new(tcp);
        let greeting = plain.read_packet().await.unwrap();
        let hs = InitialHandshake::decode(&greeting.payload).unwrap();
        assert_ne!(hs.capabilities & cap::SSL, 0, "greeting lacks CLIENT_SSL");
        let caps = raw::CLIENT_CAPS | cap::SSL;
        let resp = HandshakeResponse {
            capabilities: caps,
            max_packet: 1 << 24,
            collation: 45,
            user: "root".into(),
            auth_response: hscale_wire::auth::native_scramble(b"", &hs.scramble),
            database: None,
            auth_plugin: Some(hscale_wire::auth::NATIVE_PASSWORD.into()),
        };
        let encoded = resp.encode();
        plain.write_payload(1, &encoded[..SSL_REQUEST_LEN]);
        plain.flush().await.unwrap();
        let tcp = plain.into_inner();

        let mut roots = rustls::RootCertStore::empty();
        let pem = info.dir.join("hscale-cert.pem");
        for cert in CertificateDer::pem_file_iter(&pem).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let name = ServerName::try_from("localhost").unwrap();
        let tls = connector.connect(name, tcp).await.expect("TLS handshake");
        let (_, session) = tls.get_ref();
        assert!(session.negotiated_cipher_suite().is_some());

        let mut s = PacketStream::new(tls);
        s.write_payload(2, &encoded);
        s.flush().await.unwrap();
        let ok = s.read_packet().await.unwrap();
        assert_eq!(ok.seq, 3, "the OK follows the response at seq 2");
        assert_eq!(ok.first(), Some(0x00), "login over TLS: {:?}", ok.payload);

        let mut query = vec![com::QUERY];
        query.extend_from_slice(b"SELECT 40 + 2");
        s.write_payload(0, &query);
        s.flush().await.unwrap();
        let mut last = None;
        for _ in 0..8 {
            let p = s.read_packet().await.unwrap();
            if p.payload.len() > 1 && p.payload[..] == [2, b'4', b'2'][..] {
                last = Some(p);
                break;
            }
        }
        assert!(last.is_some(), "no row '42' over TLS");
    });
}

/// mysql_async with TLS on (not verifying the self-signed certificate).
#[test]
fn mysql_async_over_tls() {
    let port = port();
    rt().block_on(async {
        let mut c = mysql_async::Conn::new(tls_opts(port)).await.unwrap();
        let v: Option<i64> = c.query_first("SELECT 6 * 7").await.unwrap();
        assert_eq!(v, Some(42));
        let v: Option<i64> = c.exec_first("SELECT ? + 1", (41,)).await.unwrap();
        assert_eq!(v, Some(42));
        c.disconnect().await.unwrap();
    });
}

/// `SHOW STATUS` answers `Ssl_version` and `Ssl_cipher` from the client's
/// own TLS session with hscale (empty for a plain client), whatever the
/// backend connection is; every other status row is the backend's, under
/// the names a server prints (compared with the backend directly).
#[test]
fn ssl_status_is_the_clients_own_session() {
    let info = cluster(2);
    rt().block_on(async {
        let status = |rows: Vec<(String, String)>| -> std::collections::BTreeMap<String, String> {
            rows.into_iter().collect()
        };
        let mut t = mysql_async::Conn::new(tls_opts(info.proxy_port))
            .await
            .unwrap();
        let ssl = status(t.query("SHOW STATUS LIKE 'Ssl_%'").await.unwrap());
        assert_eq!(ssl["Ssl_version"], "TLSv1.3", "{ssl:?}");
        assert!(
            ssl["Ssl_cipher"].starts_with("TLS_") && ssl["Ssl_cipher"].len() > 10,
            "{ssl:?}"
        );
        let one: Vec<(String, String)> = t
            .query("SHOW SESSION STATUS WHERE Variable_name = 'Ssl_cipher'")
            .await
            .unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].1, ssl["Ssl_cipher"]);
        let through: Vec<(String, String)> = t.query("SHOW STATUS").await.unwrap();
        t.disconnect().await.unwrap();

        let mut p = mysql_async::Conn::new(proxy_opts(info.proxy_port, None))
            .await
            .unwrap();
        let plain = status(p.query("SHOW LOCAL STATUS LIKE 'ssl_c%'").await.unwrap());
        assert_eq!(
            plain.get("Ssl_cipher").map(String::as_str),
            Some(""),
            "{plain:?}"
        );
        p.disconnect().await.unwrap();

        let mut d = backend_conn(0, None).await;
        let direct: Vec<(String, String)> = d.query("SHOW SESSION STATUS").await.unwrap();
        d.disconnect().await.unwrap();
        let names =
            |rows: &[(String, String)]| rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&through), names(&direct));
    });
}

/// `mariadb --ssl`: the client's own status line names the cipher.
#[test]
fn mariadb_cli_with_ssl() {
    let out = run(Command::new("mariadb").args([
        "-h127.0.0.1",
        &format!("-P{}", port()),
        "-uroot",
        "--ssl",
        "--skip-ssl-verify-server-cert",
        "-e",
        "status",
    ]));
    let line = out
        .lines()
        .find(|l| l.starts_with("SSL:"))
        .unwrap_or_else(|| panic!("no SSL line in:\n{out}"));
    assert!(line.contains("Cipher in use is"), "{line}");
}

/// PyMySQL with an SSLContext that does not verify; the socket it reads
/// from is a TLS socket.
#[test]
fn pymysql_with_ssl() {
    let script = r#"
import ssl, sys, pymysql
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", password="", ssl=ctx)
with c.cursor() as cur:
    cur.execute("SELECT %s + 1", (41,))
    assert cur.fetchone() == (42,)
print("pymysql tls", c._sock.version())
c.close()
"#;
    let out = run(Command::new("python3").args(["-c", script, &port().to_string()]));
    assert!(out.starts_with("pymysql tls TLSv1."), "{out}");
}

/// Connector/J with sslMode=REQUIRED (it refuses to go on without TLS).
#[test]
fn jdbc_ssl_mode_required() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/jdbc");
    run(Command::new("mvn").current_dir(dir).args([
        "-q",
        "-B",
        "dependency:copy-dependencies",
        "-DoutputDirectory=target/lib",
    ]));
    // Another test binary may compile the same classes at the same time.
    let classes = format!("target/classes-tls-{}", std::process::id());
    std::fs::create_dir_all(format!("{dir}/{classes}")).unwrap();
    run(Command::new("javac").current_dir(dir).args([
        "-d",
        &classes,
        "-cp",
        "target/lib/*",
        "src/main/java/JdbcCheck.java",
    ]));
    let out = run(Command::new("java").current_dir(dir).args([
        "-cp",
        &format!("{classes}:target/lib/*"),
        "JdbcCheck",
        "127.0.0.1",
        &port().to_string(),
        "information_schema",
        "tls",
    ]));
    let _ = std::fs::remove_dir_all(format!("{dir}/{classes}"));
    assert!(out.contains("jdbc tls ok"), "{out}");
}

/// `[tls] require = true`: a plain TCP client gets error 3159 after its
/// login, as from MariaDB with require_secure_transport; TLS clients log in.
#[test]
fn require_refuses_plain_clients() {
    cluster(2);
    let mut config = cluster_config();
    config.tls.require = true;
    let proxy = hscale::server::RunningProxy::start(config, "127.0.0.1:0").unwrap();
    let port = proxy.addr.port();
    rt().block_on(async {
        let e = mysql_async::Conn::new(proxy_opts(port, None))
            .await
            .expect_err("a plain client must be refused");
        assert_eq!(code(&e), 3159, "{e:?}");
        if let mysql_async::Error::Server(s) = &e {
            assert_eq!(s.state, "HY000");
            assert!(s.message.contains("require_secure_transport"), "{e:?}");
        }
        let mut c = mysql_async::Conn::new(tls_opts(port)).await.unwrap();
        let v: Option<i64> = c.query_first("SELECT 1").await.unwrap();
        assert_eq!(v, Some(1));
        c.disconnect().await.unwrap();
    });
    let out = Command::new("mariadb")
        .args(["-h127.0.0.1", &format!("-P{port}"), "-uroot", "--skip-ssl"])
        .args(["-e", "SELECT 1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ERROR 3159"), "{err}");
}
