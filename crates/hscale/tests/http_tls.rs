#![allow(clippy::unwrap_used)]
//! The HTTP API over HTTPS (`[http] tls`, issue 36) with the MySQL
//! listener's certificate, HTTP/1.1 and HTTP/2 by ALPN, asked by curl that
//! trusts the playground's certificate; and bearer tokens from
//! `[[users]] http_token`, running as their user as Basic does.

mod common;

use std::io::{Read, Write};
use std::process::Command;
use std::sync::OnceLock;

use common::*;
use mysql_async::prelude::*;
use serde_json::{json, Value};

static HTTP_PORT: OnceLock<u16> = OnceLock::new();
const ROOT_TOKEN: &str = "root-token-0123456789";
const APP_TOKEN: &str = "app-token-abcdefghij";

fn with_https(c: &mut hscale::Config) {
    add_app_user(c);
    for u in &mut c.users {
        u.http_token = match u.name.as_str() {
            "root" => Some(ROOT_TOKEN.into()),
            "app" => Some(APP_TOKEN.into()),
            _ => None,
        };
    }
    let port = *HTTP_PORT.get_or_init(|| hscale::playground::mariadb::free_port().unwrap());
    c.http.listen = format!("127.0.0.1:{port}");
    c.http.tls = true;
}

fn started() -> (u16, Info) {
    let info = cluster_with(2, with_https);
    (*HTTP_PORT.get().expect("the HTTP API is served"), info)
}

/// What curl read: the HTTP version, the status, the head and the body.
struct Reply {
    version: String,
    status: u16,
    head: String,
    body: Value,
}

/// `POST /v1/sql` with `body` by curl over HTTPS (`version`: `--http1.1`
/// or `--http2`), trusting only the proxy's certificate, with an
/// `Authorization` header if given.
fn curl(version: &str, authorization: Option<&str>, body: &Value) -> Reply {
    let (port, info) = started();
    let cert = info.dir.join("hscale-cert.pem");
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-i", version, "--cacert"])
        .arg(&cert)
        .args(["--resolve", &format!("localhost:{port}:127.0.0.1")])
        .args(["-H", "Content-Type: application/json"])
        .args(["-w", "\n%{http_version}", "-d", &body.to_string()]);
    if let Some(a) = authorization {
        cmd.args(["-H", &format!("Authorization: {a}")]);
    }
    cmd.arg(format!("https://localhost:{port}/v1/sql"));
    let out = cmd.output().expect("curl runs (run `make deps`)");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (reply, version) = text.rsplit_once('\n').unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    Reply {
        version: version.to_string(),
        status: head.split_whitespace().nth(1).unwrap().parse().unwrap(),
        head: head.to_string(),
        body: serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}")),
    }
}

/// HTTPS with the certificate of the MySQL listener (`[tls]`): HTTP/1.1
/// and HTTP/2 (ALPN) answer the same; plain HTTP to the port gets no
/// answer, only a closed connection, and the listener serves on.
#[test]
fn https_with_the_mysql_listeners_certificate() {
    let (port, _) = started();
    let select = json!({ "sql": "SELECT 1 AS one, 'é' AS s" });
    for (flag, version) in [("--http1.1", "1.1"), ("--http2", "2")] {
        let r = curl(flag, Some(&format!("Bearer {ROOT_TOKEN}")), &select);
        assert_eq!((r.version.as_str(), r.status), (version, 200), "{}", r.head);
        assert_eq!(r.body["rows"], json!([[1, "é"]]));
    }
    // Plain HTTP to the HTTPS port: curl gets no reply.
    let out = Command::new("curl")
        .args(["-sS", "-w", "%{http_code}", "-d", "{}"])
        .arg(format!("http://127.0.0.1:{port}/v1/sql"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "000");
    // Byte by byte: the connection closes with no HTTP answer.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    s.write_all(b"GET /v1/sql HTTP/1.1\r\nHost: h\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    // A TLS alert, or a reset: either way not HTTP and not left open.
    match s.read_to_end(&mut answer) {
        Ok(_) => assert!(!answer.starts_with(b"HTTP"), "{answer:?}"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
    let r = curl("--http2", Some(&format!("Bearer {ROOT_TOKEN}")), &select);
    assert_eq!(r.status, 200);
}

/// `Authorization: Bearer` with a user's `http_token` runs as that user,
/// as Basic with its name and password does; a wrong token is 401 with
/// both challenges and no details; a token whose user's grants refuse the
/// statement is 403 with the MySQL protocol's error.
#[tokio::test]
async fn bearer_tokens_run_as_their_user() {
    let who = json!({ "sql": "SELECT CURRENT_USER()" });
    for (auth, user) in [
        (format!("Bearer {ROOT_TOKEN}"), "root@%"),
        (format!("bearer {APP_TOKEN}"), "app@%"),
        ("Basic YXBwOnNlY3JldA==".to_string(), "app@%"),
    ] {
        let r = curl("--http2", Some(&auth), &who);
        assert_eq!(
            (r.status, &r.body["rows"]),
            (200, &json!([[user]])),
            "{auth}"
        );
    }
    for wrong in [
        format!("Bearer {APP_TOKEN}x"),
        format!("Bearer {}", &APP_TOKEN[1..]),
        "Bearer ".to_string(),
        format!("Basic {APP_TOKEN}"),
    ] {
        let r = curl("--http1.1", Some(&wrong), &who);
        assert_eq!(r.status, 401, "{wrong}");
        assert_eq!(
            r.body,
            json!({ "error": { "message": "authentication required" } })
        );
        let head = r.head.to_ascii_lowercase();
        assert!(head.contains("www-authenticate: basic realm"), "{head}");
        assert!(head.contains("www-authenticate: bearer realm"), "{head}");
    }
    // hscale's own schema is refused to app, as over the MySQL protocol.
    let denied = "SELECT * FROM hscale.journal";
    let r = curl(
        "--http2",
        Some(&format!("Bearer {APP_TOKEN}")),
        &json!({ "sql": denied }),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let (_, info) = started();
    let mut c = mysql_async::Conn::new(
        mysql_async::OptsBuilder::from_opts(proxy_opts(info.proxy_port, None))
            .user(Some("app"))
            .pass(Some("secret")),
    )
    .await
    .unwrap();
    let e = c.query_drop(denied).await.unwrap_err();
    let mysql_async::Error::Server(server) = e else {
        panic!("{e:?}")
    };
    assert_eq!(r.body["error"]["code"], json!(server.code));
    assert_eq!(r.body["error"]["message"], json!(server.message));
    // A session opened with a token is continued with it.
    let bearer = format!("Bearer {APP_TOKEN}");
    let r = curl(
        "--http2",
        Some(&bearer),
        &json!({ "sql": "SET @x = 5", "session": true }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let token = r.body["session"].as_str().unwrap();
    let r = curl(
        "--http1.1",
        Some(&bearer),
        &json!({ "sql": "SELECT @x", "session": token, "close": true }),
    );
    assert_eq!(
        (r.status, &r.body["rows"]),
        (200, &json!([[5]])),
        "{}",
        r.body
    );
}
