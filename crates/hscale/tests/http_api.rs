#![allow(clippy::unwrap_used)]
//! The HTTP API (issue 36): SQL and rows by key as JSON, every statement
//! run by the proxy's own session; values compared with what a MySQL
//! client reads through the proxy.

mod common;

use std::io::{Read, Write};
use std::sync::OnceLock;

use base64::Engine;
use common::*;
use mysql_async::prelude::*;
use serde_json::{json, Value};

const DB: &str = "http_api";

static HTTP_PORT: OnceLock<u16> = OnceLock::new();

/// Sessions left idle close after this long here (60 s by default).
const SESSION_IDLE_MS: u64 = 1500;

fn with_http(c: &mut hscale::Config) {
    add_app_user(c);
    for (name, host) in [("idler", None), ("local", Some("127.0.0.1"))] {
        c.users.push(hscale::config::UserConfig {
            name: name.into(),
            password: "pw".into(),
            host: host.map(str::to_string),
            ..Default::default()
        });
    }
    let port = *HTTP_PORT.get_or_init(|| hscale::playground::mariadb::free_port().unwrap());
    c.http.listen = format!("127.0.0.1:{port}");
    c.http.session_idle_ms = SESSION_IDLE_MS;
}

fn http_port() -> u16 {
    cluster_with(2, with_http);
    *HTTP_PORT
        .get()
        .expect("the cluster was started with the HTTP API")
}

/// One HTTP/1.1 exchange: the status and the body as JSON.
fn request(method: &str, path: &str, auth: Option<(&str, &str)>, body: &str) -> (u16, Value) {
    let (status, _, body) = request_raw(method, path, auth, body);
    let v = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (status, v)
}

fn request_raw(
    method: &str,
    path: &str,
    auth: Option<(&str, &str)>,
    body: &str,
) -> (u16, String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", http_port())).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some((u, p)) = auth {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        head.push_str(&format!("Authorization: Basic {token}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (headers, body) = text.split_once("\r\n\r\n").unwrap();
    let status = headers
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap();
    (status, headers.to_string(), body.to_string())
}

fn sql(body: Value) -> (u16, Value) {
    request("POST", "/v1/sql", Some(("root", "")), &body.to_string())
}

async fn setup() {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    DONE.get_or_init(|| async {
        http_port();
        let mut c = proxy_conn(None).await;
        c.query_drop(format!("CREATE DATABASE IF NOT EXISTS {DB}"))
            .await
            .unwrap();
        c.query_drop(format!("USE {DB}")).await.unwrap();
        c.query_drop(
            "CREATE TABLE types (id INT PRIMARY KEY, big BIGINT, ubig BIGINT UNSIGNED, \
             d DECIMAL(30,10), f DOUBLE, fl FLOAT, vb VARBINARY(10), bl BLOB, bits BIT(12), \
             dt DATETIME(6), dd DATE, t TIME, y YEAR, s VARCHAR(40), e ENUM('a','b'), n INT NULL, j JSON)",
        )
        .await
        .unwrap();
        c.query_drop(
            "INSERT INTO types VALUES \
             (1, 9007199254740993, 18446744073709551615, 12345678901234567890.0123456789, 0.1, 1.5, \
              0x00ff, 0xdeadbeef, b'101', '2024-02-29 12:34:56.123456', '2024-02-29', '-838:59:59', 2024, \
              'it''s \\\\ \"é\" 日本', 'b', NULL, '{\"a\": [1, 2.5]}'), \
             (2, 9007199254740992, 0, -0.0000000001, 1e300, -3.25, '', NULL, b'0', NULL, NULL, NULL, NULL, '', NULL, 7, NULL), \
             (3, -9007199254740993, 42, 0, -2.5e-300, 0, NULL, '', NULL, '1000-01-01 00:00:00', '9999-12-31', '00:00:00', 1901, NULL, 'a', -1, 'null')",
        )
        .await
        .unwrap();
        c.query_drop("CREATE TABLE p (id INT NOT NULL PRIMARY KEY, v VARCHAR(20), b VARBINARY(4))")
            .await
            .unwrap();
        c.query_drop(format!(
            "HSCALE SETUP_TABLE('{DB}.p', 'id', 'p_default', 'shard0', 'MOD(2)')"
        ))
        .await
        .unwrap();
        c.query_drop(format!("HSCALE ADD_PARTITION('{DB}.p', 'one', '1', 'shard1')"))
            .await
            .unwrap();
        c.query_drop("INSERT INTO p VALUES (4, 'four', 0x04), (5, 'five', NULL)")
            .await
            .unwrap();
        c.query_drop("CREATE TABLE ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))")
            .await
            .unwrap();
    })
    .await;
}

/// What a MySQL client reads through the proxy: each value's bytes.
async fn mysql_values(statement: &str) -> Vec<Vec<Option<Vec<u8>>>> {
    let mut c = proxy_conn(Some(DB)).await;
    let rows: Vec<mysql_async::Row> = c.query(statement).await.unwrap();
    rows.into_iter()
        .map(|r| {
            (0..r.len())
                .map(|i| match r.as_ref(i).unwrap() {
                    mysql_async::Value::NULL => None,
                    mysql_async::Value::Bytes(b) => Some(b.clone()),
                    other => Some(other.as_sql(true).into_bytes()),
                })
                .collect()
        })
        .collect()
}

/// Every column type's values as the module's comment says, each checked
/// against the bytes a MySQL client reads: integers as numbers while
/// exact in a double, strings beyond; DECIMAL as its digits; binary as
/// base64; NULL as null.
#[tokio::test]
async fn values_of_every_type_are_lossless() {
    setup().await;
    let statement = "SELECT * FROM types ORDER BY id";
    let (status, body) = sql(json!({ "sql": statement, "database": DB }));
    assert_eq!(status, 200, "{body}");
    let reference = mysql_values(statement).await;
    let columns = body["columns"].as_array().unwrap();
    let rows = body["rows"].as_array().unwrap();
    assert_eq!(rows.len(), reference.len());
    for (row, want) in rows.iter().zip(&reference) {
        for ((c, got), want) in columns.iter().zip(row.as_array().unwrap()).zip(want) {
            let name = c["name"].as_str().unwrap();
            let Some(want) = want else {
                assert_eq!(*got, Value::Null, "{name}");
                continue;
            };
            // FLOAT and DOUBLE: the same value (JSON spells 1e300 1e+300).
            if matches!(c["type"].as_str(), Some("float" | "double")) {
                let want: f64 = String::from_utf8_lossy(want).parse().unwrap();
                assert_eq!(got.as_f64(), Some(want), "{name}");
                continue;
            }
            let bytes = match got {
                Value::String(s) if c["encoding"] == "base64" => {
                    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
                }
                Value::String(s) => s.clone().into_bytes(),
                Value::Number(n) => n.to_string().into_bytes(),
                other => panic!("{name}: {other}"),
            };
            assert_eq!(&bytes, want, "{name}: {got}");
        }
    }
    // The types: numbers only where a double holds them.
    assert_eq!(rows[1][1], json!(9007199254740992u64), "2^53 is a number");
    assert_eq!(
        rows[0][1],
        json!("9007199254740993"),
        "2^53 + 1 is a string"
    );
    assert_eq!(rows[0][2], json!("18446744073709551615"));
    assert_eq!(rows[2][2], json!(42));
    assert_eq!(rows[0][3], json!("12345678901234567890.0123456789"));
    assert!(rows[0][4].is_number() && rows[1][4].is_number());
    assert_eq!(rows[2][15], json!(-1));
    let kinds: Vec<(&str, &str, bool)> = columns
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
                c["encoding"] == "base64",
            )
        })
        .collect();
    assert_eq!(kinds[1], ("big", "bigint", false));
    assert_eq!(kinds[3], ("d", "decimal", false));
    assert_eq!(kinds[6], ("vb", "varbinary", true));
    assert_eq!(kinds[7], ("bl", "blob", true));
    assert!(kinds[8].2, "BIT is base64");
    assert_eq!(kinds[13], ("s", "varchar", false));
}

/// Parameters are literals the server reads back exactly, whatever they
/// hold (quotes, backslashes, non-ASCII, bytes, NULL, numbers).
#[tokio::test]
async fn params_store_exactly_what_was_sent() {
    setup().await;
    let text = "O'Reilly \\ \"q\" 日本 ?";
    let (status, body) = sql(json!({
        "sql": "INSERT INTO p (id, v, b) VALUES (?, ?, ?), (?, ?, ?)",
        "params": [10, text, {"base64": "AP8nXA=="}, 11, null, null],
        "database": DB,
    }));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["affected_rows"], json!(2));
    let stored = mysql_values("SELECT v, b FROM p WHERE id IN (10, 11) ORDER BY id").await;
    assert_eq!(stored[0][0].as_deref(), Some(text.as_bytes()));
    assert_eq!(
        stored[0][1].as_deref(),
        Some(&[0x00, 0xff, b'\'', b'\\'][..])
    );
    assert_eq!(stored[1], vec![None, None]);
    // A placeholder inside a string or a comment is text.
    let (status, body) = sql(json!({
        "sql": "SELECT '?' AS q, ? AS a /* ? */",
        "params": ["x"],
    }));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["rows"], json!([["?", "x"]]));
    let (status, body) = sql(json!({ "sql": "SELECT ?", "params": [] }));
    assert_eq!(status, 400, "{body}");
}

/// An INSERT's OK: affected rows and the first generated id, as a MySQL
/// client gets them.
#[tokio::test]
async fn writes_report_affected_rows_and_insert_ids() {
    setup().await;
    let (status, body) = sql(json!({
        "sql": "INSERT INTO ai (v) VALUES ('a'), ('b')",
        "database": DB,
    }));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["affected_rows"], json!(2));
    let id = body["last_insert_id"].as_u64().unwrap();
    let stored = mysql_values("SELECT MIN(id) FROM ai WHERE v = 'a'").await;
    assert_eq!(stored[0][0].as_deref(), Some(id.to_string().as_bytes()));
    let (_, body) = sql(json!({
        "sql": "UPDATE ai SET v = 'c' WHERE v IN ('a', 'b')",
        "database": DB,
    }));
    assert_eq!(body["affected_rows"], json!(2));
}

/// A row by its primary key, from the partition that holds it.
#[tokio::test]
async fn rows_by_key_of_a_partitioned_table() {
    setup().await;
    let path = format!("/v1/{DB}/p/4");
    let (status, body) = request("GET", &path, Some(("root", "")), "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({ "row": { "id": 4, "v": "four", "b": "BA==" }, "base64": ["b"] })
    );
    let (status, body) = request("GET", &format!("/v1/{DB}/p/5"), Some(("root", "")), "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["row"]["b"], Value::Null);
    let (status, _) = request("GET", &format!("/v1/{DB}/p/404"), Some(("root", "")), "");
    assert_eq!(status, 404);
}

/// The MySQL protocol's users and rights: no credentials or a wrong
/// password is 401 (with a Basic challenge, nothing more), an access
/// error 403, a statement error 400 with the server's code and message.
#[tokio::test]
async fn same_users_same_rights_same_errors() {
    setup().await;
    let body = json!({ "sql": "SELECT 1" }).to_string();
    let (status, headers, _) = request_raw("POST", "/v1/sql", None, &body);
    assert_eq!(status, 401);
    assert!(headers.contains("Basic realm"), "{headers}");
    let (status, _) = request("POST", "/v1/sql", Some(("app", "wrong")), &body);
    assert_eq!(status, 401);
    let (status, answer) = request("POST", "/v1/sql", Some(("app", "secret")), &body);
    assert_eq!((status, &answer["rows"]), (200, &json!([[1]])));
    // hscale's own schema is the proxy's: denied to a client as the MySQL
    // protocol denies it.
    let denied = json!({ "sql": "SELECT * FROM hscale.journal" }).to_string();
    let (status, answer) = request("POST", "/v1/sql", Some(("app", "secret")), &denied);
    assert_eq!(status, 403, "{answer}");
    let mut c = mysql_async::Conn::new(
        mysql_async::OptsBuilder::from_opts(proxy_opts(cluster(2).proxy_port, None))
            .user(Some("app"))
            .pass(Some("secret")),
    )
    .await
    .unwrap();
    let e = c
        .query_drop("SELECT * FROM hscale.journal")
        .await
        .unwrap_err();
    assert_eq!(answer["error"]["code"], json!(code(&e)));
    // A syntax error: the server's.
    let bad = "SELEC 1";
    let (status, answer) = sql(json!({ "sql": bad }));
    assert_eq!(status, 400);
    let e = c.query_drop(bad).await.unwrap_err();
    let mysql_async::Error::Server(server) = e else {
        panic!("{e:?}")
    };
    assert_eq!(answer["error"]["code"], json!(server.code));
    assert_eq!(answer["error"]["sqlstate"], json!(server.state));
    assert_eq!(answer["error"]["message"], json!(server.message));
    let (status, _) = request("POST", "/v1/nothing", Some(("root", "")), "{}");
    assert_eq!(status, 404);
    let (status, _) = request("POST", "/v1/sql", Some(("root", "")), "not json");
    assert_eq!(status, 400);
}

/// PUT inserts or replaces a row by its key (201, then 200), PATCH updates
/// the given columns, DELETE deletes; each is a statement the proxy routes
/// to the key's partition, and what it stored is what a MySQL client reads
/// back. A missing row is 404; a body whose key is not the path's is 400.
#[tokio::test]
async fn put_patch_and_delete_rows_by_key() {
    setup().await;
    let root = Some(("root", ""));
    let path = format!("/v1/{DB}/p/6");
    let (status, body) = request(
        "PUT",
        &path,
        root,
        r#"{"v": "six", "b": {"base64": "AQI="}}"#,
    );
    assert_eq!((status, &body["affected_rows"]), (201, &json!(1)), "{body}");
    assert_eq!(
        mysql_values("SELECT id, v, b FROM p WHERE id = 6").await,
        vec![vec![
            Some(b"6".to_vec()),
            Some(b"six".to_vec()),
            Some(vec![1, 2])
        ]]
    );
    // Replaced whole: the column not given is back to its default.
    let (status, body) = request("PUT", &path, root, r#"{"id": 6, "v": "SIX"}"#);
    assert_eq!((status, &body["affected_rows"]), (200, &json!(2)), "{body}");
    assert_eq!(
        mysql_values("SELECT id, v, b FROM p WHERE id = 6").await,
        vec![vec![Some(b"6".to_vec()), Some(b"SIX".to_vec()), None]]
    );
    let (status, body) = request("PUT", &path, root, r#"{"id": 7, "v": "x"}"#);
    assert_eq!(status, 400, "{body}");
    let (status, body) = request("PATCH", &path, root, r#"{"v": "patched"}"#);
    assert_eq!((status, &body["affected_rows"]), (200, &json!(1)), "{body}");
    // Unchanged is still found (matched, 0 changed), as UPDATE reports it.
    let (status, body) = request("PATCH", &path, root, r#"{"v": "patched"}"#);
    assert_eq!((status, &body["affected_rows"]), (200, &json!(0)), "{body}");
    assert_eq!(
        mysql_values("SELECT v FROM p WHERE id = 6").await,
        vec![vec![Some(b"patched".to_vec())]]
    );
    let (status, _) = request("PATCH", &format!("/v1/{DB}/p/404"), root, r#"{"v": "x"}"#);
    assert_eq!(status, 404);
    let (status, _) = request("PATCH", &path, root, "{}");
    assert_eq!(status, 400);
    // A server's error is the server's: a column that does not exist.
    let (status, body) = request("PATCH", &path, root, r#"{"nope": 1}"#);
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!(1054)),
        "{body}"
    );
    let (status, body) = request("DELETE", &path, root, "");
    assert_eq!((status, &body["affected_rows"]), (200, &json!(1)), "{body}");
    assert!(mysql_values("SELECT id FROM p WHERE id = 6")
        .await
        .is_empty());
    let (status, _) = request("DELETE", &path, root, "");
    assert_eq!(status, 404);
    // The same rights as over the MySQL protocol: app may not write
    // hscale's own schema.
    let (status, _) = request(
        "DELETE",
        "/v1/hscale/journal/1",
        Some(("app", "secret")),
        "",
    );
    assert_eq!(status, 403);
}

/// A composite primary key is named column by column in the query
/// (`?a=1&b=x`, percent-decoded); a key missing a column, naming one that
/// is not in it or naming one twice is 400, as is a path key for it.
#[tokio::test]
async fn composite_keys_by_query_parameters() {
    setup().await;
    let root = Some(("root", ""));
    let mut c = proxy_conn(Some(DB)).await;
    c.query_drop("CREATE TABLE IF NOT EXISTS ck (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))")
        .await
        .unwrap();
    let at = |q: &str| format!("/v1/{DB}/ck?{q}");
    let (status, body) = request("PUT", &at("a=1&b=x%20y"), root, r#"{"v": 10}"#);
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        mysql_values("SELECT a, b, v FROM ck").await,
        vec![vec![
            Some(b"1".to_vec()),
            Some(b"x y".to_vec()),
            Some(b"10".to_vec())
        ]]
    );
    let (status, body) = request("GET", &at("b=x+y&a=1"), root, "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["row"], json!({ "a": 1, "b": "x y", "v": 10 }));
    for bad in ["a=1", "a=1&b=x%20y&c=2", "a=1&a=2&b=x"] {
        let (status, body) = request("GET", &at(bad), root, "");
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (status, _) = request("GET", &format!("/v1/{DB}/ck/1"), root, "");
    assert_eq!(status, 400);
    let (status, _) = request("PATCH", &at("a=1&b=x%20y"), root, r#"{"v": 11}"#);
    assert_eq!(status, 200);
    let (status, body) = request(
        "POST",
        &format!("/v1/{DB}/ck/_get"),
        root,
        r#"[{"a": 1, "b": "x y"}, {"a": 2, "b": "z"}]"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["rows"], json!([{ "a": 1, "b": "x y", "v": 11 }]));
    let (status, _) = request("DELETE", &at("a=1&b=x%20y"), root, "");
    assert_eq!(status, 200);
    let (status, _) = request("GET", &at("a=1&b=x%20y"), root, "");
    assert_eq!(status, 404);
}

/// A batch get: the rows of many keys of a partitioned table in one
/// request, from every partition holding one, as a MySQL client reads
/// `SELECT * ... WHERE id IN (...) ORDER BY id`; keys without a row are
/// absent.
#[tokio::test]
async fn batch_get_reads_keys_from_every_partition() {
    setup().await;
    let root = Some(("root", ""));
    let path = format!("/v1/{DB}/p/_get");
    let (status, body) = request("POST", &path, root, r#"[5, "4", 404, 30]"#);
    assert_eq!(status, 200, "{body}");
    let expected =
        mysql_values("SELECT id, v FROM p WHERE id IN (5, 4, 404, 30) ORDER BY id").await;
    let got: Vec<Vec<Option<Vec<u8>>>> = body["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            ["id", "v"]
                .iter()
                .map(|c| match &r[*c] {
                    Value::Null => None,
                    Value::String(s) => Some(s.as_bytes().to_vec()),
                    other => Some(other.to_string().into_bytes()),
                })
                .collect()
        })
        .collect();
    assert_eq!(got, expected);
    assert!(got.len() >= 2, "{body}");
    assert_eq!(body["base64"], json!(["b"]));
    for bad in ["[]", "{}", "[[1]]", "[null]"] {
        let (status, body) = request("POST", &path, root, bad);
        assert_eq!(status, 400, "{bad}: {body}");
    }
}

/// A transaction across requests: `"session": true` opens a session whose
/// token later requests name; its uncommitted rows are its own until
/// COMMIT; `"close": true` ends it; a session closed (DELETE) or left idle
/// past its idle time rolls its transaction back, as a MySQL client that
/// goes away does. The token is nobody else's: another user, another
/// password or a closed session is 404.
#[tokio::test]
async fn a_transaction_spans_requests_in_a_session() {
    setup().await;
    let root = Some(("root", ""));
    let in_session = |body: Value| request("POST", "/v1/sql", root, &body.to_string());
    let (status, body) = in_session(json!({ "sql": "BEGIN", "session": true, "database": DB }));
    assert_eq!(status, 200, "{body}");
    let token = body["session"].as_str().unwrap().to_string();
    let (status, body) =
        in_session(json!({ "sql": "INSERT INTO p VALUES (8, 'eight', NULL)", "session": token }));
    assert_eq!((status, &body["affected_rows"]), (200, &json!(1)), "{body}");
    assert!(mysql_values("SELECT id FROM p WHERE id = 8")
        .await
        .is_empty());
    let (status, body) =
        in_session(json!({ "sql": "SELECT v FROM p WHERE id = 8", "session": token }));
    assert_eq!(
        (status, &body["rows"]),
        (200, &json!([["eight"]])),
        "{body}"
    );
    let other = json!({ "sql": "SELECT 1", "session": token }).to_string();
    let (status, _) = request("POST", "/v1/sql", Some(("app", "secret")), &other);
    assert_eq!(status, 404);
    let (status, _) = request("POST", "/v1/sql", Some(("root", "wrong")), &other);
    assert_eq!(status, 404);
    let (status, body) = in_session(json!({ "sql": "COMMIT", "session": token, "close": true }));
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        mysql_values("SELECT v FROM p WHERE id = 8").await,
        vec![vec![Some(b"eight".to_vec())]]
    );
    let (status, _) = in_session(json!({ "sql": "SELECT 1", "session": token }));
    assert_eq!(status, 404);
    let (status, _) = in_session(json!({ "sql": "SELECT 1", "session": 5 }));
    assert_eq!(status, 400);

    // Closed by DELETE, and left idle (by another user, whose MySQL
    // session the processlist shows): each rolled back.
    let wait_gone = |id: u32| async move {
        let start = std::time::Instant::now();
        while !mysql_values(&format!("SELECT id FROM p WHERE id = {id}"))
            .await
            .is_empty()
            || start.elapsed().as_millis() < 10
        {
            assert!(start.elapsed().as_secs() < 20, "row {id} was committed");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    };
    for (id, by_delete) in [(20, true), (21, false)] {
        let who = if by_delete {
            root
        } else {
            Some(("idler", "pw"))
        };
        let in_session = |body: Value| request("POST", "/v1/sql", who, &body.to_string());
        let (_, body) = in_session(json!({ "sql": "BEGIN", "session": true, "database": DB }));
        let token = body["session"].as_str().unwrap().to_string();
        let (status, body) = in_session(
            json!({ "sql": format!("INSERT INTO p VALUES ({id}, 'x', NULL)"), "session": token }),
        );
        assert_eq!(status, 200, "{body}");
        let last_used = std::time::Instant::now();
        if by_delete {
            let (status, _) = request("DELETE", &format!("/v1/sessions/{token}"), root, "");
            assert_eq!(status, 200);
        } else {
            wait_idler_gone(last_used).await;
        }
        let (status, _) = in_session(json!({ "sql": "SELECT 1", "session": token }));
        assert_eq!(status, 404, "session of row {id}");
        wait_gone(id).await;
        // The row's lock was released with the transaction.
        let mut c = proxy_conn(Some(DB)).await;
        c.query_drop(format!("INSERT INTO p VALUES ({id}, 'later', NULL)"))
            .await
            .unwrap();
        c.query_drop(format!("DELETE FROM p WHERE id = {id}"))
            .await
            .unwrap();
    }
}

/// Wait until the idle HTTP session of `idler` (last used at `last_used`)
/// was closed by `[http] session_idle_ms`: its MySQL session leaves the
/// processlist, not before the idle time and well before the 60 s default.
async fn wait_idler_gone(last_used: std::time::Instant) {
    let mut c = proxy_conn(None).await;
    let idle = std::time::Duration::from_millis(SESSION_IDLE_MS);
    tokio::time::sleep(idle.saturating_sub(last_used.elapsed())).await;
    loop {
        let users: Vec<String> = c
            .query_map("SHOW PROCESSLIST", |r: mysql_async::Row| {
                r.get::<String, _>("User").unwrap()
            })
            .await
            .unwrap();
        if !users.iter().any(|u| u == "idler") {
            break;
        }
        assert!(
            last_used.elapsed().as_secs() < 20,
            "the idle session is still open"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(last_used.elapsed() >= idle, "closed before its idle time");
}

/// Send a `method` request head with `Expect: 100-continue` and a `Content-Length`
/// of `len`, then `body` only if the server says 100 Continue: the final
/// status and the body of the answer.
fn request_expecting(method: &str, path: &str, len: usize, body: &[u8]) -> (u16, Value) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", http_port())).unwrap();
    let token = base64::engine::general_purpose::STANDARD.encode("root:");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Authorization: Basic {token}\r\nExpect: 100-continue\r\nContent-Length: {len}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).unwrap();
        text.extend_from_slice(&buf[..n]);
        let so_far = String::from_utf8_lossy(&text);
        if so_far.starts_with("HTTP/1.1 100 ") && so_far.contains("\r\n\r\n") {
            text.clear();
            s.write_all(body).unwrap();
        }
        if n == 0 {
            break;
        }
    }
    let text = String::from_utf8(text).unwrap();
    let (headers, body) = text.split_once("\r\n\r\n").unwrap();
    let status = headers.split_whitespace().nth(1).unwrap().parse().unwrap();
    (
        status,
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {headers}\n\n{body}")),
    )
}

/// A body over the limit (16 MiB) is 413 with a JSON error, before any of
/// it is read, so its statement never runs; one over axum's own default
/// (2 MiB) but under the limit runs. Malformed JSON is 400 with a JSON
/// error on every route that reads a body, and nothing is applied.
#[tokio::test]
async fn oversized_and_malformed_bodies_are_refused_as_json() {
    setup().await;
    let insert = json!({ "sql": "INSERT INTO p VALUES (30, ?, NULL)", "database": DB,
                         "params": ["x".repeat(16 << 20)] })
    .to_string();
    let (status, body) = request_expecting("POST", "/v1/sql", insert.len(), insert.as_bytes());
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["message"], json!("the body is too large"));
    let put = format!("{{\"v\": \"{}\"}}", "y".repeat(16 << 20));
    let (status, body) =
        request_expecting("PUT", &format!("/v1/{DB}/p/30"), put.len(), put.as_bytes());
    assert_eq!(status, 413, "{body}");
    assert!(mysql_values("SELECT id FROM p WHERE id = 30")
        .await
        .is_empty());
    // 3 MB: more than axum's default limit, less than ours.
    let long = json!({ "sql": "SELECT LENGTH(?)", "params": ["z".repeat(3_000_000)] }).to_string();
    let (status, body) = request_expecting("POST", "/v1/sql", long.len(), long.as_bytes());
    assert_eq!(
        (status, &body["rows"]),
        (200, &json!([[3_000_000]])),
        "{body}"
    );

    let root = Some(("root", ""));
    for (method, path) in [
        ("POST", "/v1/sql".to_string()),
        ("PUT", format!("/v1/{DB}/p/31")),
        ("PATCH", format!("/v1/{DB}/p/4")),
        ("POST", format!("/v1/{DB}/p/_get")),
    ] {
        let (status, body) = request(method, &path, root, "{\"sql\": \"INSERT INTO");
        assert_eq!(status, 400, "{method} {path}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("the body: "), "{method} {path}: {body}");
    }
    assert!(mysql_values("SELECT id FROM p WHERE id = 31")
        .await
        .is_empty());
    assert_eq!(
        mysql_values("SELECT v FROM p WHERE id = 4").await,
        vec![vec![Some(b"four".to_vec())]]
    );
}

/// An account bound to a host is refused over HTTP (403 with the right
/// password, 401 with a wrong one; bound to 127.0.0.1 here, from where a
/// MySQL client logs in as it), since the loopback login could not check
/// the HTTP client's address.
#[tokio::test]
async fn an_account_bound_to_a_host_is_refused() {
    setup().await;
    let mut c = mysql_async::Conn::new(
        mysql_async::OptsBuilder::from_opts(proxy_opts(cluster(2).proxy_port, None))
            .user(Some("local"))
            .pass(Some("pw")),
    )
    .await
    .unwrap();
    let one: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    let body = json!({ "sql": "SELECT 1" }).to_string();
    let (status, answer) = request("POST", "/v1/sql", Some(("local", "pw")), &body);
    assert_eq!(status, 403, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        json!("an account bound to a host cannot be used over HTTP")
    );
    let (status, _) = request("GET", &format!("/v1/{DB}/p/4"), Some(("local", "pw")), "");
    assert_eq!(status, 403);
    // A wrong password is 401, as for any account.
    let (status, answer) = request("POST", "/v1/sql", Some(("local", "nope")), &body);
    assert_eq!(status, 401, "{answer}");
    assert_eq!(answer["error"]["message"], json!("authentication required"));
}

/// The issue's bad inputs, each with its status and the error a MySQL
/// client gets for the same statement: an unknown table is 404 (over SQL
/// and by key), an unknown column 400 (1054), a statement hscale refuses
/// 422 (1235, client XA here); nothing is applied.
#[tokio::test]
async fn unknown_tables_columns_and_refused_statements_have_their_status() {
    setup().await;
    let mut c = proxy_conn(Some(DB)).await;
    let mysql_code = |e: mysql_async::Error| match e {
        mysql_async::Error::Server(s) => s.code,
        e => panic!("{e:?}"),
    };
    let (status, body) = sql(json!({ "sql": "SELECT * FROM nosuch", "database": DB }));
    assert_eq!(status, 404, "{body}");
    let e = c.query_drop("SELECT * FROM nosuch").await.unwrap_err();
    assert_eq!(body["error"]["code"], json!(mysql_code(e)));
    let root = Some(("root", ""));
    let (status, body) = request("GET", &format!("/v1/{DB}/nosuch/1"), root, "");
    assert_eq!(status, 404, "{body}");
    let (status, body) = request("PATCH", &format!("/v1/{DB}/p/4"), root, r#"{"nope": 1}"#);
    assert_eq!(status, 400, "{body}");
    let e = c
        .query_drop("UPDATE p SET nope = 1 WHERE id = 4")
        .await
        .unwrap_err();
    assert_eq!(body["error"]["code"], json!(mysql_code(e)));
    assert_eq!(body["error"]["code"], json!(1054));
    let (status, body) = sql(json!({ "sql": "XA START 'mine'", "database": DB }));
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], json!(1235));
    assert_eq!(
        mysql_values("SELECT v FROM p WHERE id = 4").await,
        vec![vec![Some(b"four".to_vec())]]
    );
}

/// A method an endpoint does not take is 405 with a JSON error, as every
/// other error of the API (axum answered it with an empty body).
#[test]
fn a_method_an_endpoint_does_not_take_is_405_as_json() {
    for (method, path) in [
        ("GET", "/v1/sql"),
        ("POST", "/v1/db/t/1"),
        ("PATCH", "/v1/db/t/_get"),
    ] {
        let (status, headers, body) = request_raw(method, path, Some(("root", "")), "");
        assert_eq!(status, 405, "{method} {path}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(message, format!("this endpoint does not take {method}"));
        assert!(
            headers
                .to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{headers}"
        );
    }
}
