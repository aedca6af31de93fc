//! The HTTP API (`[http] listen`, issue 36): SQL and rows by key as JSON,
//! for clients that cannot keep a MySQL connection (serverless and edge
//! platforms, scripts).
//!
//! ```text
//!  POST   /v1/sql                  {"sql": "...", "params": [...], "database": "db"}
//!  GET    /v1/{db}/{table}/{key}   the row whose one-column primary key is key
//!  PUT    /v1/{db}/{table}/{key}   insert or replace the row: {"column": value, ...}
//!  PATCH  /v1/{db}/{table}/{key}   update the given columns of the row
//!  DELETE /v1/{db}/{table}/{key}   delete the row
//!  (the same four on /v1/{db}/{table}?a=1&b=2: a composite key, every
//!   primary-key column named once)
//!  POST   /v1/{db}/{table}/_get    [key, ...]: the rows of many keys at once
//! ```
//!
//! **Rows by key are statements too**: `SELECT * ... WHERE key = ...`,
//! `REPLACE INTO`, `UPDATE` and `DELETE` by the primary key (read with
//! `SHOW KEYS`), sent like any other, so the proxy routes each to the
//! partition that holds the key (a batch get's `IN` list to each partition
//! holding some of its keys, in parallel).
//!
//! **One way a statement runs.** A request logs in to the proxy's own
//! MySQL listener over loopback as the user of its `Authorization: Basic`
//! header and sends its statement there: the session, its grants, limits,
//! routing, fences, two-phase commit and sequences are the MySQL
//! protocol's, with no second executor to keep equal. A failed login is
//! 401, an access error 403, any other error 400 with the server's code,
//! SQLSTATE and message; none of them says more than the MySQL protocol
//! would. An account bound to a host (`[[users]] host`) is refused: over
//! the loopback hop its client's address would not be the one checked.
//!
//! **JSON fidelity** (`value`): integers are numbers while a JSON reader's
//! double holds them exactly (|n| <= 2^53), strings beyond; DECIMAL is a
//! string (its digits as the server wrote them); FLOAT and DOUBLE are
//! numbers of the value the server wrote; dates and times are strings; binary
//! values (BLOB, BINARY, VARBINARY, BIT: the binary character set) are
//! base64 strings, and their column says `"encoding": "base64"`; NULL is
//! null. Parameters (`?` outside strings and comments) are sent as
//! literals: null, true/false, numbers as written, strings as
//! `_utf8mb4 X'...'` (no escaping to get wrong under any sql_mode), and
//! `{"base64": "..."}` as `X'...'`.
//!
//! Not yet: sessions carrying a transaction across requests, TLS on this
//! listener.

use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine;
use hscale_wire::response::{decode_eof, is_eof, ErrPacket, OkPacket};
use hscale_wire::resultset::ColumnInfo;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

use crate::backend::{BackendConn, BackendWatch};
use crate::config::BackendConfig;
use crate::runtime::Context;

/// How long a request's login to the proxy may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest JSON body read.
const MAX_BODY: usize = 16 << 20;

/// What the handlers share.
#[derive(Clone)]
pub struct Api {
    /// The proxy's MySQL listener.
    mysql: SocketAddr,
    ctx: Weak<Context>,
    watch: Arc<BackendWatch>,
}

/// The API's routes, logging in to the MySQL listener at `mysql`.
pub fn routes(mysql: SocketAddr, ctx: &Arc<Context>) -> Router {
    let api = Api {
        mysql,
        ctx: Arc::downgrade(ctx),
        watch: Arc::new(BackendWatch::new(None, CONNECT_TIMEOUT)),
    };
    Router::new()
        .route("/v1/sql", post(sql))
        .route("/v1/{db}/{table}/_get", post(rows_by_keys))
        .route(
            "/v1/{db}/{table}/{key}",
            get(row_by_key)
                .put(put_by_key)
                .patch(patch_by_key)
                .delete(delete_by_key),
        )
        .route(
            "/v1/{db}/{table}",
            get(row_by_query)
                .put(put_by_query)
                .patch(patch_by_query)
                .delete(delete_by_query),
        )
        .fallback(not_found)
        .with_state(api)
}

async fn not_found() -> Response {
    problem(StatusCode::NOT_FOUND, "no such endpoint")
}

/// An error answer: `{"error": {"message": ...}}`.
fn problem(status: StatusCode, message: &str) -> Response {
    (
        status,
        json_body(&json!({ "error": { "message": message } })),
    )
        .into_response()
}

fn json_body(v: &Value) -> ([(header::HeaderName, &'static str); 1], String) {
    ([(header::CONTENT_TYPE, "application/json")], v.to_string())
}

/// A statement's error as the MySQL protocol gives it, with its status.
fn sql_error(e: &ErrPacket) -> Response {
    let status = match e.code {
        // Login refused (wrong password, unknown user, host).
        1045 | 1698 => StatusCode::UNAUTHORIZED,
        // Access denied to a database, table, column or command.
        1044 | 1142 | 1143 | 1227 | 1370 => StatusCode::FORBIDDEN,
        _ => StatusCode::BAD_REQUEST,
    };
    let body = json!({ "error": {
        "code": e.code,
        "sqlstate": String::from_utf8_lossy(&e.sql_state),
        "message": e.message,
    }});
    let mut r = (status, json_body(&body)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Basic realm=\"hscale\""),
        );
    }
    r
}

fn unauthorized() -> Response {
    let mut r = problem(StatusCode::UNAUTHORIZED, "authentication required");
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Basic realm=\"hscale\""),
    );
    r
}

/// The user and password of an `Authorization: Basic` header.
fn basic_auth(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// A MySQL session of the request's user on the proxy.
async fn log_in(api: &Api, headers: &HeaderMap) -> Result<BackendConn, Response> {
    let Some((user, password)) = basic_auth(headers) else {
        return Err(unauthorized());
    };
    let Some(ctx) = api.ctx.upgrade() else {
        return Err(problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "the proxy is stopping",
        ));
    };
    let bound = ctx
        .config
        .users
        .iter()
        .any(|u| u.name == user && u.host.as_deref().is_some_and(|h| h != "%"));
    drop(ctx);
    if bound {
        return Err(problem(
            StatusCode::FORBIDDEN,
            "an account bound to a host cannot be used over HTTP",
        ));
    }
    let cfg = BackendConfig {
        name: "http".into(),
        address: api.mysql.to_string(),
        user,
        password,
        max_connections: 1,
        ..BackendConfig::default()
    };
    match BackendConn::connect(&cfg, None, false, CONNECT_TIMEOUT, &api.watch).await {
        Ok(c) => Ok(c),
        Err(crate::error::ProxyError::BackendConnect { reason, .. })
            if reason.contains("(1045)") || reason.contains("(1698)") =>
        {
            Err(unauthorized())
        }
        Err(e) => Err(problem(StatusCode::BAD_GATEWAY, &e.to_string())),
    }
}

/// One result of a statement.
struct Answer {
    columns: Vec<ColumnInfo>,
    rows: Vec<Vec<Option<Vec<u8>>>>,
    ok: Option<OkPacket>,
    warnings: u16,
}

/// Run `sql` on `conn`: its results, or the server's error.
async fn run(conn: &mut BackendConn, sql: &str) -> Result<Vec<Answer>, Response> {
    let lost = |e: hscale_wire::WireError| problem(StatusCode::BAD_GATEWAY, &e.to_string());
    conn.stream
        .send_command(&BackendConn::payload_for_query(sql))
        .await
        .map_err(lost)?;
    let mut answers = Vec::new();
    loop {
        let first = conn.stream.read_packet().await.map_err(lost)?;
        let more = match first.first() {
            Some(0xff) => return Err(err_of(&first.payload)),
            Some(0x00) => {
                let ok = OkPacket::decode(&first.payload).map_err(lost)?;
                let more = ok.status & hscale_wire::consts::status::MORE_RESULTS_EXISTS != 0;
                answers.push(Answer {
                    columns: Vec::new(),
                    rows: Vec::new(),
                    warnings: ok.warnings,
                    ok: Some(ok),
                });
                more
            }
            _ => {
                let n = hscale_wire::buf::Reader::new(&first.payload)
                    .lenenc()
                    .map_err(lost)? as usize;
                let mut columns = Vec::with_capacity(n);
                for _ in 0..n {
                    let p = conn.stream.read_packet().await.map_err(lost)?;
                    columns.push(ColumnInfo::decode(&p.payload).map_err(lost)?);
                }
                conn.stream.read_packet().await.map_err(lost)?; // EOF
                let mut rows = Vec::new();
                let (warnings, status) = loop {
                    let p = conn.stream.read_packet().await.map_err(lost)?;
                    if is_eof(&p.payload) {
                        break decode_eof(&p.payload).map_err(lost)?;
                    }
                    if p.first() == Some(0xff) {
                        return Err(err_of(&p.payload));
                    }
                    let row = hscale_wire::resultset::decode_row(&p.payload, n).map_err(lost)?;
                    rows.push(row.into_iter().map(|v| v.map(|b| b.to_vec())).collect());
                };
                answers.push(Answer {
                    columns,
                    rows,
                    ok: None,
                    warnings,
                });
                status & hscale_wire::consts::status::MORE_RESULTS_EXISTS != 0
            }
        };
        if !more {
            return Ok(answers);
        }
    }
}

fn err_of(payload: &[u8]) -> Response {
    match ErrPacket::decode(payload) {
        Ok(e) => sql_error(&e),
        Err(e) => problem(StatusCode::BAD_GATEWAY, &e.to_string()),
    }
}

/// The name of a column type, as `information_schema` spells it.
fn type_name(c: &ColumnInfo) -> &'static str {
    let binary = c.charset == 63;
    match c.column_type {
        0x00 | 0xf6 => "decimal",
        0x01 => "tinyint",
        0x02 => "smallint",
        0x03 => "int",
        0x04 => "float",
        0x05 => "double",
        0x06 => "null",
        0x07 => "timestamp",
        0x08 => "bigint",
        0x09 => "mediumint",
        0x0a | 0x0e => "date",
        0x0b => "time",
        0x0c => "datetime",
        0x0d => "year",
        0x10 => "bit",
        0xf5 => "json",
        0xf7 => "enum",
        0xf8 => "set",
        0xff => "geometry",
        0xf9..=0xfc if binary => "blob",
        0xf9..=0xfc => "text",
        0x0f | 0xfd if binary => "varbinary",
        0x0f | 0xfd => "varchar",
        0xfe if binary => "binary",
        0xfe => "char",
        _ => "unknown",
    }
}

/// Whether the column's values are sent as base64.
fn is_base64(c: &ColumnInfo) -> bool {
    c.is_binary()
}

/// A value as JSON (see the module's comment).
fn value(c: &ColumnInfo, v: Option<&[u8]>) -> Value {
    let Some(v) = v else {
        return Value::Null;
    };
    if is_base64(c) {
        return Value::String(base64::engine::general_purpose::STANDARD.encode(v));
    }
    let text = String::from_utf8_lossy(v);
    match c.column_type {
        0x01 | 0x02 | 0x03 | 0x08 | 0x09 | 0x0d => {
            const EXACT: u64 = 1 << 53;
            let exact = match text.strip_prefix('-') {
                Some(n) => n.parse::<u64>().is_ok_and(|n| n <= EXACT),
                None => text.parse::<u64>().is_ok_and(|n| n <= EXACT),
            };
            match (exact, serde_json::from_str::<Value>(&text)) {
                (true, Ok(n @ Value::Number(_))) => n,
                _ => Value::String(text.into_owned()),
            }
        }
        // The value of the server's text (`1e300` written `1e+300`).
        0x04 | 0x05 => match serde_json::from_str::<serde_json::Number>(&text) {
            Ok(n) => Value::Number(n),
            Err(_) => Value::String(text.into_owned()),
        },
        _ => Value::String(text.into_owned()),
    }
}

/// A result as JSON: columns, rows (arrays), and the OK's counts.
fn answer_json(a: &Answer) -> Value {
    let mut o = Map::new();
    if let Some(ok) = &a.ok {
        o.insert("affected_rows".into(), json!(ok.affected_rows));
        o.insert("last_insert_id".into(), json!(ok.last_insert_id));
    } else {
        let columns: Vec<Value> = a
            .columns
            .iter()
            .map(|c| {
                let mut col = json!({ "name": c.name, "type": type_name(c) });
                if is_base64(c) {
                    col["encoding"] = json!("base64");
                }
                col
            })
            .collect();
        let rows: Vec<Value> = a
            .rows
            .iter()
            .map(|r| {
                Value::Array(
                    a.columns
                        .iter()
                        .zip(r)
                        .map(|(c, v)| value(c, v.as_deref()))
                        .collect(),
                )
            })
            .collect();
        o.insert("columns".into(), Value::Array(columns));
        o.insert("rows".into(), Value::Array(rows));
    }
    o.insert("warnings".into(), json!(a.warnings));
    Value::Object(o)
}

/// A parameter as a literal of the statement.
fn literal(p: &Value) -> Result<String, String> {
    let hex = |b: &[u8]| b.iter().map(|c| format!("{c:02X}")).collect::<String>();
    Ok(match p {
        Value::Null => "NULL".into(),
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.is_empty() => "''".into(),
        Value::String(s) => format!("_utf8mb4 X'{}'", hex(s.as_bytes())),
        Value::Object(o) => match o.get("base64") {
            Some(Value::String(b)) if o.len() == 1 => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(|e| format!("a base64 parameter: {e}"))?;
                if bytes.is_empty() {
                    "X''".into()
                } else {
                    format!("X'{}'", hex(&bytes))
                }
            }
            _ => return Err("an object parameter must be {\"base64\": \"...\"}".into()),
        },
        Value::Array(_) => return Err("a parameter is a scalar, not an array".into()),
    })
}

/// `sql` with its placeholders replaced by `params`' literals.
fn bind(sql: &str, params: &[Value]) -> Result<String, String> {
    let tokens = hscale_sql::tokenize(sql).map_err(|e| e.to_string())?;
    let marks: Vec<_> = tokens
        .iter()
        .filter(|t| t.kind == hscale_sql::TokenKind::Placeholder)
        .collect();
    if marks.len() != params.len() {
        return Err(format!(
            "the statement has {} placeholders and {} params were given",
            marks.len(),
            params.len()
        ));
    }
    let mut out = String::with_capacity(sql.len() + 16 * params.len());
    let mut at = 0;
    for (t, p) in marks.iter().zip(params) {
        out.push_str(&sql[at..t.start as usize]);
        out.push_str(&literal(p)?);
        at = t.end as usize;
    }
    out.push_str(&sql[at..]);
    Ok(out)
}

/// A name between backquotes.
fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `POST /v1/sql`.
async fn sql(State(api): State<Api>, headers: HeaderMap, body: Bytes) -> Response {
    if body.len() > MAX_BODY {
        return problem(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large");
    }
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return problem(StatusCode::BAD_REQUEST, "the body must be a JSON object"),
        Err(e) => return problem(StatusCode::BAD_REQUEST, &format!("the body: {e}")),
    };
    let Some(text) = request.get("sql").and_then(Value::as_str) else {
        return problem(StatusCode::BAD_REQUEST, "\"sql\" (a string) is required");
    };
    let params = match request.get("params") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return problem(StatusCode::BAD_REQUEST, "\"params\" must be an array"),
    };
    let statement = match bind(text, &params) {
        Ok(s) => s,
        Err(e) => return problem(StatusCode::BAD_REQUEST, &e),
    };
    let mut conn = match log_in(&api, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if let Some(db) = request.get("database").and_then(Value::as_str) {
        if let Err(r) = run(&mut conn, &format!("USE {}", quoted(db))).await {
            return r;
        }
    }
    match run(&mut conn, &statement).await {
        Ok(answers) => {
            let mut body = answer_json(&answers[0]);
            if answers.len() > 1 {
                body["more"] = Value::Array(answers[1..].iter().map(answer_json).collect());
            }
            (StatusCode::OK, json_body(&body)).into_response()
        }
        Err(r) => r,
    }
}

/// The largest number of keys of one batch get.
const MAX_BATCH_KEYS: usize = 1000;

/// A row's key as a request gives it.
enum Key {
    /// The path's last segment: a one-column primary key.
    One(String),
    /// Query parameters naming every primary-key column.
    Named(BTreeMap<String, String>),
}

/// The table's primary-key columns, in their order in the key.
async fn primary_key(conn: &mut BackendConn, target: &str) -> Result<Vec<String>, Response> {
    let keys = run(
        conn,
        &format!("SHOW KEYS FROM {target} WHERE Key_name = 'PRIMARY'"),
    )
    .await?;
    let at = |name: &str| keys[0].columns.iter().position(|c| c.name == name);
    let (Some(column), Some(seq)) = (at("Column_name"), at("Seq_in_index")) else {
        return Err(problem(
            StatusCode::BAD_GATEWAY,
            "SHOW KEYS answered otherwise",
        ));
    };
    let text = |v: &Option<Vec<u8>>| {
        String::from_utf8_lossy(v.as_deref().unwrap_or_default()).into_owned()
    };
    let mut names: Vec<(u32, String)> = keys[0]
        .rows
        .iter()
        .map(|r| (text(&r[seq]).parse().unwrap_or(0), text(&r[column])))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(problem(
            StatusCode::BAD_REQUEST,
            "rows by key need a table with a primary key",
        ));
    }
    Ok(names.into_iter().map(|(_, n)| n).collect())
}

/// `key = value [AND ...]` for `key`, checked against the primary key.
fn key_condition(names: &[String], key: &Key) -> Result<String, Response> {
    let bad = |m: String| problem(StatusCode::BAD_REQUEST, &m);
    match key {
        Key::One(v) => {
            let [name] = names else {
                return Err(bad(format!(
                    "the primary key has {} columns: name each as a query parameter (?{}=...)",
                    names.len(),
                    names.join("=...&")
                )));
            };
            Ok(format!(
                "{} = {}",
                quoted(name),
                literal(&Value::String(v.clone())).map_err(bad)?
            ))
        }
        Key::Named(given) => {
            let missing: Vec<&str> = names
                .iter()
                .filter(|n| !given.contains_key(*n))
                .map(String::as_str)
                .collect();
            let extra: Vec<&str> = given
                .keys()
                .filter(|g| !names.contains(g))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() || !extra.is_empty() {
                return Err(bad(format!(
                    "the key is the primary key's columns ({}), each once; missing: [{}], not in it: [{}]",
                    names.join(", "),
                    missing.join(", "),
                    extra.join(", ")
                )));
            }
            let parts: Result<Vec<String>, String> = names
                .iter()
                .map(|n| {
                    Ok(format!(
                        "{} = {}",
                        quoted(n),
                        literal(&Value::String(given[n].clone()))?
                    ))
                })
                .collect();
            Ok(parts.map_err(bad)?.join(" AND "))
        }
    }
}

/// The query parameters of a key named column by column; a column named
/// twice is refused.
fn named(uri: &Uri) -> Result<Key, Response> {
    let mut key = BTreeMap::new();
    for (name, v) in form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()) {
        if key.insert(name.to_string(), v.into_owned()).is_some() {
            return Err(problem(
                StatusCode::BAD_REQUEST,
                &format!("{name} is named twice in the key"),
            ));
        }
    }
    Ok(Key::Named(key))
}

/// A request's login, its `db.table` and the condition selecting its key.
async fn keyed(
    api: &Api,
    headers: &HeaderMap,
    db: &str,
    table: &str,
    key: &Key,
) -> Result<(BackendConn, String, Vec<String>, String), Response> {
    let mut conn = log_in(api, headers).await?;
    let target = format!("{}.{}", quoted(db), quoted(table));
    let names = primary_key(&mut conn, &target).await?;
    let condition = key_condition(&names, key)?;
    Ok((conn, target, names, condition))
}

/// Rows as JSON objects, and the names of the base64 columns.
fn rows_json(a: &Answer) -> (Vec<Value>, Vec<Value>) {
    let rows = a
        .rows
        .iter()
        .map(|row| {
            let mut object = Map::new();
            for (c, v) in a.columns.iter().zip(row) {
                object.insert(c.name.clone(), value(c, v.as_deref()));
            }
            Value::Object(object)
        })
        .collect();
    let binary = a
        .columns
        .iter()
        .filter(|c| is_base64(c))
        .map(|c| json!(c.name))
        .collect();
    (rows, binary)
}

/// The body of a PUT or PATCH: a non-empty JSON object of columns.
fn columns_of(body: &Bytes) -> Result<Map<String, Value>, Response> {
    if body.len() > MAX_BODY {
        return Err(problem(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body is too large",
        ));
    }
    match serde_json::from_slice(body) {
        Ok(Value::Object(o)) if !o.is_empty() => Ok(o),
        Ok(_) => Err(problem(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object of one or more columns",
        )),
        Err(e) => Err(problem(StatusCode::BAD_REQUEST, &format!("the body: {e}"))),
    }
}

async fn get_row(api: Api, headers: HeaderMap, db: String, table: String, key: Key) -> Response {
    let (mut conn, target, _, condition) = match keyed(&api, &headers, &db, &table, &key).await {
        Ok(k) => k,
        Err(r) => return r,
    };
    let answers = match run(
        &mut conn,
        &format!("SELECT * FROM {target} WHERE {condition}"),
    )
    .await
    {
        Ok(a) => a,
        Err(r) => return r,
    };
    let (rows, binary) = rows_json(&answers[0]);
    let Some(row) = rows.into_iter().next() else {
        return problem(StatusCode::NOT_FOUND, "no row has this key");
    };
    let mut body = json!({ "row": row });
    if !binary.is_empty() {
        body["base64"] = Value::Array(binary);
    }
    (StatusCode::OK, json_body(&body)).into_response()
}

/// PUT: `REPLACE INTO` the row with the key's columns from the path (a
/// body naming one of them with another value is refused): 201 when it
/// was inserted, 200 when it replaced a row.
async fn put_row(
    api: Api,
    headers: HeaderMap,
    db: String,
    table: String,
    key: Key,
    body: Bytes,
) -> Response {
    let mut columns = match columns_of(&body) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let (mut conn, target, names, _) = match keyed(&api, &headers, &db, &table, &key).await {
        Ok(k) => k,
        Err(r) => return r,
    };
    let key_values: Vec<(String, String)> = match &key {
        Key::One(v) => vec![(names[0].clone(), v.clone())],
        Key::Named(given) => given.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    };
    for (name, v) in key_values {
        match columns.get(&name) {
            Some(given) if !same_key_value(given, &v) => {
                return problem(
                    StatusCode::BAD_REQUEST,
                    &format!("the body's {name} is not the key's"),
                )
            }
            Some(_) => {}
            None => {
                columns.insert(name, Value::String(v));
            }
        }
    }
    let mut list = Vec::with_capacity(columns.len());
    let mut values = Vec::with_capacity(columns.len());
    for (name, v) in &columns {
        list.push(quoted(name));
        match literal(v) {
            Ok(l) => values.push(l),
            Err(e) => return problem(StatusCode::BAD_REQUEST, &format!("{name}: {e}")),
        }
    }
    let sql = format!(
        "REPLACE INTO {target} ({}) VALUES ({})",
        list.join(", "),
        values.join(", ")
    );
    match run(&mut conn, &sql).await {
        Ok(a) => {
            let affected = a[0].ok.as_ref().map_or(0, |ok| ok.affected_rows);
            let status = if affected == 1 {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            let body = json!({ "affected_rows": affected, "warnings": a[0].warnings });
            (status, json_body(&body)).into_response()
        }
        Err(r) => r,
    }
}

/// A body's value for a key column given as text in the path or query.
fn same_key_value(given: &Value, key: &str) -> bool {
    match given {
        Value::String(s) => s == key,
        Value::Number(n) => n.to_string() == key,
        _ => false,
    }
}

/// PATCH: `UPDATE` the given columns of the row; 404 when no row has the key.
async fn patch_row(
    api: Api,
    headers: HeaderMap,
    db: String,
    table: String,
    key: Key,
    body: Bytes,
) -> Response {
    let columns = match columns_of(&body) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let (mut conn, target, _, condition) = match keyed(&api, &headers, &db, &table, &key).await {
        Ok(k) => k,
        Err(r) => return r,
    };
    let mut set = Vec::with_capacity(columns.len());
    for (name, v) in &columns {
        match literal(v) {
            Ok(l) => set.push(format!("{} = {l}", quoted(name))),
            Err(e) => return problem(StatusCode::BAD_REQUEST, &format!("{name}: {e}")),
        }
    }
    let sql = format!("UPDATE {target} SET {} WHERE {condition}", set.join(", "));
    match run(&mut conn, &sql).await {
        Ok(a) => {
            let Some(ok) = a[0].ok.as_ref() else {
                return problem(StatusCode::BAD_GATEWAY, "UPDATE answered rows");
            };
            let matched = match ok.info {
                hscale_wire::response::OkInfo::Matched { matched, .. } => matched,
                _ => ok.affected_rows,
            };
            if matched == 0 {
                return problem(StatusCode::NOT_FOUND, "no row has this key");
            }
            let body = json!({ "affected_rows": ok.affected_rows, "warnings": a[0].warnings });
            (StatusCode::OK, json_body(&body)).into_response()
        }
        Err(r) => r,
    }
}

/// DELETE: the row; 404 when no row has the key.
async fn delete_row(api: Api, headers: HeaderMap, db: String, table: String, key: Key) -> Response {
    let (mut conn, target, _, condition) = match keyed(&api, &headers, &db, &table, &key).await {
        Ok(k) => k,
        Err(r) => return r,
    };
    match run(
        &mut conn,
        &format!("DELETE FROM {target} WHERE {condition}"),
    )
    .await
    {
        Ok(a) => {
            let affected = a[0].ok.as_ref().map_or(0, |ok| ok.affected_rows);
            if affected == 0 {
                return problem(StatusCode::NOT_FOUND, "no row has this key");
            }
            let body = json!({ "affected_rows": affected, "warnings": a[0].warnings });
            (StatusCode::OK, json_body(&body)).into_response()
        }
        Err(r) => r,
    }
}

/// `GET /v1/{db}/{table}/{key}`: the row as an object, 404 when none.
async fn row_by_key(
    State(api): State<Api>,
    Path((db, table, key)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    get_row(api, headers, db, table, Key::One(key)).await
}

async fn put_by_key(
    State(api): State<Api>,
    Path((db, table, key)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    put_row(api, headers, db, table, Key::One(key), body).await
}

async fn patch_by_key(
    State(api): State<Api>,
    Path((db, table, key)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    patch_row(api, headers, db, table, Key::One(key), body).await
}

async fn delete_by_key(
    State(api): State<Api>,
    Path((db, table, key)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    delete_row(api, headers, db, table, Key::One(key)).await
}

/// `GET /v1/{db}/{table}?a=1&b=2`: the row of a key named column by column.
async fn row_by_query(
    State(api): State<Api>,
    Path((db, table)): Path<(String, String)>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    get_row(
        api,
        headers,
        db,
        table,
        match named(&uri) {
            Ok(k) => k,
            Err(r) => return r,
        },
    )
    .await
}

async fn put_by_query(
    State(api): State<Api>,
    Path((db, table)): Path<(String, String)>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    put_row(
        api,
        headers,
        db,
        table,
        match named(&uri) {
            Ok(k) => k,
            Err(r) => return r,
        },
        body,
    )
    .await
}

async fn patch_by_query(
    State(api): State<Api>,
    Path((db, table)): Path<(String, String)>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    patch_row(
        api,
        headers,
        db,
        table,
        match named(&uri) {
            Ok(k) => k,
            Err(r) => return r,
        },
        body,
    )
    .await
}

async fn delete_by_query(
    State(api): State<Api>,
    Path((db, table)): Path<(String, String)>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    delete_row(
        api,
        headers,
        db,
        table,
        match named(&uri) {
            Ok(k) => k,
            Err(r) => return r,
        },
    )
    .await
}

/// `POST /v1/{db}/{table}/_get` with a JSON list of keys (values of a
/// one-column primary key, or objects naming every primary-key column):
/// the rows found, in primary-key order; keys without a row are absent.
/// One statement (`key IN (...)`, or ORed conditions for a composite
/// key), which the proxy sends to every partition holding a key at once.
async fn rows_by_keys(
    State(api): State<Api>,
    Path((db, table)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if body.len() > MAX_BODY {
        return problem(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large");
    }
    let keys = match serde_json::from_slice(&body) {
        Ok(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_BATCH_KEYS => a,
        Ok(_) => {
            return problem(
                StatusCode::BAD_REQUEST,
                &format!("the body must be a JSON list of 1 to {MAX_BATCH_KEYS} keys"),
            )
        }
        Err(e) => return problem(StatusCode::BAD_REQUEST, &format!("the body: {e}")),
    };
    let mut conn = match log_in(&api, &headers).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let target = format!("{}.{}", quoted(&db), quoted(&table));
    let names = match primary_key(&mut conn, &target).await {
        Ok(n) => n,
        Err(r) => return r,
    };
    let bad = |m: String| problem(StatusCode::BAD_REQUEST, &m);
    let condition = if let ([name], true) = (&names[..], keys.iter().all(|k| !k.is_object())) {
        let values: Result<Vec<String>, String> = keys
            .iter()
            .map(|k| match k {
                Value::String(_) | Value::Number(_) => literal(k),
                _ => Err("a key is a string or a number".into()),
            })
            .collect();
        match values {
            Ok(v) => format!("{} IN ({})", quoted(name), v.join(", ")),
            Err(e) => return bad(e),
        }
    } else {
        let mut each = Vec::with_capacity(keys.len());
        for k in &keys {
            let Value::Object(o) = k else {
                return bad(format!(
                    "the primary key has {} columns: each key is an object naming them",
                    names.len()
                ));
            };
            let given: Result<BTreeMap<String, String>, String> = o
                .iter()
                .map(|(n, v)| match v {
                    Value::String(s) => Ok((n.clone(), s.clone())),
                    Value::Number(x) => Ok((n.clone(), x.to_string())),
                    _ => Err(format!("{n}: a key's value is a string or a number")),
                })
                .collect();
            let given = match given {
                Ok(g) => g,
                Err(e) => return bad(e),
            };
            match key_condition(&names, &Key::Named(given)) {
                Ok(c) => each.push(format!("({c})")),
                Err(r) => return r,
            }
        }
        each.join(" OR ")
    };
    let order: Vec<String> = names.iter().map(|n| quoted(n)).collect();
    let sql = format!(
        "SELECT * FROM {target} WHERE {condition} ORDER BY {}",
        order.join(", ")
    );
    let answers = match run(&mut conn, &sql).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let (rows, binary) = rows_json(&answers[0]);
    let mut body = json!({ "rows": rows });
    if !binary.is_empty() {
        body["base64"] = Value::Array(binary);
    }
    (StatusCode::OK, json_body(&body)).into_response()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn placeholders_outside_strings_take_literals() {
        let sql = "SELECT ?, '?', `?`, ? /* ? */ FROM t WHERE a = ?";
        let params = [json!(1), json!("it's"), json!(null)];
        assert_eq!(
            bind(sql, &params).unwrap(),
            "SELECT 1, '?', `?`, _utf8mb4 X'6974277300' /* ? */ FROM t WHERE a = NULL"
                .replace("6974277300", "69742773")
        );
        assert!(bind("SELECT ?", &[]).is_err());
        assert_eq!(
            bind("SELECT ?", &[json!({"base64": "AP8="})]).unwrap(),
            "SELECT X'00FF'"
        );
        assert!(bind("SELECT ?", &[json!([1])]).is_err());
    }

    #[test]
    fn basic_auth_is_read() {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            header::HeaderValue::from_static("Basic cm9vdDpzM2NyZXQ6eA=="),
        );
        assert_eq!(
            basic_auth(&h),
            Some(("root".to_string(), "s3cret:x".to_string()))
        );
    }
}
