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
//! header, or as the `[[users]]` entry whose `http_token` its
//! `Authorization: Bearer` header carries (every token compared in
//! constant time), and sends its statement there: the session, its grants, limits,
//! routing, fences, two-phase commit and sequences are the MySQL
//! protocol's, with no second executor to keep equal. A failed login is
//! 401, an access error 403, an unknown database or table 404, a refused
//! statement (1235) 422, a lost or unreachable backend 503, any other
//! error 400, each with the server's code, SQLSTATE and message; none of
//! them says more than the MySQL protocol would. An account bound to a host (`[[users]] host`) is refused: over
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
//! **Sessions** (`"session": true`, then its token): a transaction across
//! requests (`sessions.rs`).
//!
//! **HTTPS** (`[http] tls = true`): `[tls]`'s certificate and key, HTTP/2
//! or HTTP/1.1 by ALPN; a plain-HTTP client on that port is closed
//! without an answer (`http.rs`, `tls::http_acceptor`).

use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRequest, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine;
use hscale_wire::response::{decode_eof, is_eof, ErrPacket, OkPacket};
use hscale_wire::resultset::ColumnInfo;
use serde_json::{json, Map, Value};

use crate::backend::{BackendConn, BackendWatch};
use crate::config::{BackendConfig, UserConfig};
use crate::runtime::Context;

mod rows;
mod sessions;

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
    /// Sessions carried across requests (`sessions.rs`).
    sessions: Arc<sessions::Sessions>,
}

/// The API's routes, logging in to the MySQL listener at `mysql`.
pub fn routes(mysql: SocketAddr, ctx: &Arc<Context>) -> Router {
    let api = Api {
        mysql,
        ctx: Arc::downgrade(ctx),
        watch: Arc::new(BackendWatch::new(None, CONNECT_TIMEOUT)),
        sessions: Arc::new(sessions::Sessions::new(Duration::from_millis(
            ctx.config.http.session_idle_ms,
        ))),
    };
    Router::new()
        .route("/v1/sql", post(sql))
        .route("/v1/sessions/{token}", axum::routing::delete(close_session))
        .route("/v1/{db}/{table}/_get", post(rows::rows_by_keys))
        .route(
            "/v1/{db}/{table}/{key}",
            get(rows::get)
                .put(rows::put)
                .patch(rows::patch)
                .delete(rows::delete),
        )
        .route(
            "/v1/{db}/{table}",
            get(rows::get)
                .put(rows::put)
                .patch(rows::patch)
                .delete(rows::delete),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(api)
}

/// A request's body, at most [`MAX_BODY`] bytes. A longer one is 413 as
/// JSON: refused by its `Content-Length` before any of it is read (a
/// client that sent `Expect: 100-continue` sends none of it), else once
/// the bytes read pass the limit.
pub(super) struct Body(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Response> {
        let too_large = || problem(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large");
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_BODY as u64) {
            return Err(too_large());
        }
        match <Bytes as FromRequest<S>>::from_request(req, state).await {
            Ok(b) if b.len() > MAX_BODY => Err(too_large()),
            Ok(b) => Ok(Body(b)),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(too_large()),
            Err(e) => Err(problem(e.status(), &e.body_text())),
        }
    }
}

async fn not_found() -> Response {
    problem(StatusCode::NOT_FOUND, "no such endpoint")
}

/// A method an endpoint does not take: 405 as JSON, as every other error.
async fn method_not_allowed(method: axum::http::Method) -> Response {
    problem(
        StatusCode::METHOD_NOT_ALLOWED,
        &format!("this endpoint does not take {method}"),
    )
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
        // No such database or table.
        1049 | 1146 => StatusCode::NOT_FOUND,
        // A statement hscale refuses (ER_NOT_SUPPORTED_YET, naming the
        // form): well formed, not run.
        1235 => StatusCode::UNPROCESSABLE_ENTITY,
        // A backend that cannot be reached or was lost mid-statement
        // (ER_CONNECT_TO_FOREIGN_DATA_SOURCE, ER_NET_READ_ERROR, ...).
        1429 | 1158 | 1159 | 2006 | 2013 => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    };
    let body = json!({ "error": {
        "code": e.code,
        "sqlstate": String::from_utf8_lossy(&e.sql_state),
        "message": e.message,
    }});
    let mut r = (status, json_body(&body)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        challenge(&mut r);
    }
    r
}

fn unauthorized() -> Response {
    let mut r = problem(StatusCode::UNAUTHORIZED, "authentication required");
    challenge(&mut r);
    r
}

/// A 401's `WWW-Authenticate`: Basic or a bearer token.
fn challenge(r: &mut Response) {
    for scheme in ["Basic realm=\"hscale\"", "Bearer realm=\"hscale\""] {
        r.headers_mut().append(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static(scheme),
        );
    }
}

/// The user and password a request runs as: those of its `Authorization:
/// Basic` header, or those of the `[[users]]` entry whose `http_token` its
/// `Authorization: Bearer` header carries.
fn credentials(api: &Api, headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return basic_auth(headers);
    }
    let ctx = api.ctx.upgrade()?;
    let live = ctx.live();
    let user = bearer_user(&live.users, token.trim())?;
    Some((user.name.clone(), user.password.clone()))
}

/// The user whose `http_token` is `token`. Every token is compared, each
/// in time that does not depend on where it differs from `token`.
fn bearer_user<'a>(users: &'a [UserConfig], token: &str) -> Option<&'a UserConfig> {
    let mut found = None;
    for u in users {
        if let Some(t) = &u.http_token {
            if same_secret(token.as_bytes(), t.as_bytes()) && found.is_none() {
                found = Some(u);
            }
        }
    }
    found
}

/// Whether `given` is `secret`, in time that depends on `secret`'s length
/// only.
fn same_secret(given: &[u8], secret: &[u8]) -> bool {
    let mut differ = u8::from(given.len() != secret.len());
    for (i, s) in secret.iter().enumerate() {
        differ |= given.get(i).copied().unwrap_or(0) ^ s;
    }
    std::hint::black_box(differ) == 0
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
    let Some((user, password)) = credentials(api, headers) else {
        return Err(unauthorized());
    };
    let Some(ctx) = api.ctx.upgrade() else {
        return Err(problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "the proxy is stopping",
        ));
    };
    // A bound account's password is checked first: a wrong one is 401
    // as for any other account, so the refusal says nothing to a guesser.
    let bound = ctx.live().user(&user).and_then(|u| {
        let is_bound = u.host.as_deref().is_some_and(|h| h != "%");
        is_bound.then(|| same_secret(password.as_bytes(), u.password.as_bytes()))
    });
    drop(ctx);
    if bound == Some(false) {
        return Err(unauthorized());
    }
    if bound == Some(true) {
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
async fn sql(State(api): State<Api>, headers: HeaderMap, Body(body): Body) -> Response {
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
    let close = request.get("close").and_then(Value::as_bool) == Some(true);
    // The session this request runs in: its own, a new one kept, or one
    // named by its token.
    let mut one_shot = None;
    let session = match request.get("session") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {
            match log_in(&api, &headers).await {
                Ok(c) => one_shot = Some(tokio::sync::Mutex::new(Some(c))),
                Err(r) => return r,
            }
            None
        }
        Some(Value::Bool(true)) => {
            let conn = match log_in(&api, &headers).await {
                Ok(c) => c,
                Err(r) => return r,
            };
            let (user, password) = credentials(&api, &headers).unwrap_or_default();
            match api.sessions.open(&user, &password, conn) {
                Ok(opened) => Some(opened),
                Err(_) => {
                    return problem(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "too many HTTP sessions are open",
                    )
                }
            }
        }
        Some(Value::String(token)) => {
            let Some((user, password)) = credentials(&api, &headers) else {
                return unauthorized();
            };
            match api.sessions.find(token, &user, &password) {
                Ok(held) => Some((token.clone(), held)),
                Err(_) => return problem(StatusCode::NOT_FOUND, "no such session"),
            }
        }
        Some(_) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "\"session\" is true (open one) or a session's token",
            )
        }
    };
    let slot = match (&session, &one_shot) {
        (Some((_, held)), _) => &held.conn,
        (None, Some(own)) => own,
        (None, None) => return problem(StatusCode::NOT_FOUND, "no such session"),
    };
    let Ok(mut guard) = slot.try_lock() else {
        return problem(
            StatusCode::CONFLICT,
            "another request of this session is running",
        );
    };
    let Some(conn) = guard.as_mut() else {
        return problem(StatusCode::NOT_FOUND, "no such session");
    };
    let mut answer = run_request(conn, &request, &statement).await;
    let is_new = request.get("session") == Some(&Value::Bool(true));
    if let Some((token, held)) = &session {
        held.touch();
        // A session whose first statement failed is not kept: its token
        // was never given.
        if close || (is_new && answer.is_err()) {
            api.sessions.remove(token);
            guard.take();
        } else if let Ok(body) = &mut answer {
            body["session"] = json!(token);
        }
    }
    match answer {
        Ok(body) => (StatusCode::OK, json_body(&body)).into_response(),
        Err(r) => r,
    }
}

/// The statement of a `POST /v1/sql` on `conn`, after its `USE`.
async fn run_request(
    conn: &mut BackendConn,
    request: &Value,
    statement: &str,
) -> Result<Value, Response> {
    if let Some(db) = request.get("database").and_then(Value::as_str) {
        run(conn, &format!("USE {}", quoted(db))).await?;
    }
    let answers = run(conn, statement).await?;
    let mut body = answer_json(&answers[0]);
    if answers.len() > 1 {
        body["more"] = Value::Array(answers[1..].iter().map(answer_json).collect());
    }
    Ok(body)
}

/// `DELETE /v1/sessions/{token}`: close a session (its transaction, if
/// one is open, rolled back).
async fn close_session(
    State(api): State<Api>,
    axum::extract::Path(token): axum::extract::Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some((user, password)) = credentials(&api, &headers) else {
        return unauthorized();
    };
    if api.sessions.find(&token, &user, &password).is_err() {
        return problem(StatusCode::NOT_FOUND, "no such session");
    }
    if let Some(h) = api.sessions.remove(&token) {
        h.conn.lock().await.take();
    }
    (StatusCode::OK, json_body(&json!({ "closed": true }))).into_response()
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
    fn bearer_tokens_are_compared_whole() {
        let user = |name: &str, token: Option<&str>| UserConfig {
            name: name.into(),
            http_token: token.map(str::to_string),
            ..Default::default()
        };
        let users = [
            user("a", None),
            user("b", Some("0123456789abcdef")),
            user("c", Some("fedcba9876543210")),
        ];
        let name = |t: &str| bearer_user(&users, t).map(|u| u.name.as_str());
        assert_eq!(name("0123456789abcdef"), Some("b"));
        assert_eq!(name("fedcba9876543210"), Some("c"));
        for wrong in [
            "",
            "0123456789abcde",
            "0123456789abcdef0",
            "0123456789abcdeF",
        ] {
            assert_eq!(name(wrong), None, "{wrong}");
        }
        assert!(same_secret(b"", b""));
        assert!(!same_secret(b"\0", b""));
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
