//! Rows by key over HTTP (`GET`, `PUT`, `PATCH`, `DELETE` on
//! `/v1/{db}/{table}/{key}` and on `/v1/{db}/{table}?a=..&b=..`, batch
//! gets on `/v1/{db}/{table}/_get`): each request is one statement by
//! the table's primary key, sent through the proxy's own listener like
//! `POST /v1/sql` (`super`).

use std::collections::{BTreeMap, HashMap};

use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::{
    is_base64, json_body, literal, log_in, problem, quoted, run, value, Answer, Api, Body, MAX_BODY,
};
use crate::backend::BackendConn;

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

/// The row a request names: `/v1/{db}/{table}/{key}` (a one-column
/// key), or `/v1/{db}/{table}?a=1&b=2` (every key column named); the
/// extractor of the four row handlers.
pub(super) struct RowAt {
    db: String,
    table: String,
    key: Key,
}

impl<S: Send + Sync> FromRequestParts<S> for RowAt {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<RowAt, Response> {
        let Path(mut params) = Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let db = params.remove("db").unwrap_or_default();
        let table = params.remove("table").unwrap_or_default();
        let key = match params.remove("key") {
            Some(k) => Key::One(k),
            None => named(&parts.uri)?,
        };
        Ok(RowAt { db, table, key })
    }
}

/// `GET`: the row as an object, 404 when none.
pub(super) async fn get(
    State(api): State<Api>,
    headers: HeaderMap,
    RowAt { db, table, key }: RowAt,
) -> Response {
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
pub(super) async fn put(
    State(api): State<Api>,
    headers: HeaderMap,
    RowAt { db, table, key }: RowAt,
    Body(body): Body,
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
pub(super) async fn patch(
    State(api): State<Api>,
    headers: HeaderMap,
    RowAt { db, table, key }: RowAt,
    Body(body): Body,
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
pub(super) async fn delete(
    State(api): State<Api>,
    headers: HeaderMap,
    RowAt { db, table, key }: RowAt,
) -> Response {
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

/// `POST /v1/{db}/{table}/_get` with a JSON list of keys (values of a
/// one-column primary key, or objects naming every primary-key column):
/// the rows found, in primary-key order; keys without a row are absent.
/// One statement (`key IN (...)`, or ORed conditions for a composite
/// key), which the proxy sends to every partition holding a key at once.
pub(super) async fn rows_by_keys(
    State(api): State<Api>,
    Path((db, table)): Path<(String, String)>,
    headers: HeaderMap,
    Body(body): Body,
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
