//! The differential suite through server-side prepared statements (the
//! binary protocol, as Connector/J and mysql_async send them): a query's
//! literals after its select list become `?` parameters of several types
//! (integers, BIGINT UNSIGNED, DOUBLE, strings, DATETIME), its LIMIT
//! values too, and the statement is prepared and executed through hscale
//! and on one server; metadata and rows must match as for the text query.

use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

/// `sql` with the literals after its first FROM (outside comments and
/// ORDER BY lists) replaced by `?`, and their values; `salt` picks each
/// value's type where several fit (a decimal as DOUBLE or string, a date
/// as DATETIME or string).
pub fn parametrize(sql: &str, salt: u64) -> (String, Vec<Value>) {
    let b = sql.as_bytes();
    // The FROM of the statement itself, not of a subquery in its select
    // list: a parameter there would change the column's label.
    let mut depth = 0i32;
    let top_from = (0..b.len()).find(|&i| {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
        depth == 0 && sql[i..].starts_with(" FROM ")
    });
    let Some(start) = top_from else {
        return (sql.to_string(), Vec::new());
    };
    let mut out = String::from(&sql[..start]);
    let mut params = Vec::new();
    let mut i = start;
    let mut in_order = false;
    let mut salt = salt;
    let mut flip = || {
        salt = salt.rotate_left(7) ^ 0x9E37_79B9;
        salt & 1 == 0
    };
    while i < b.len() {
        let rest = &sql[i..];
        if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(b.len(), |e| i + e + 2);
            out.push_str(&sql[i..end]);
            i = end;
            continue;
        }
        if rest.starts_with(" ORDER BY ") {
            in_order = true;
        } else if rest.starts_with(" LIMIT ") {
            in_order = false;
        }
        let c = b[i];
        let prev = out.as_bytes().last().copied().unwrap_or(b' ');
        let after_word = prev.is_ascii_alphanumeric() || prev == b'_' || prev == b'.';
        if c == b'\'' {
            let end = sql[i + 1..].find('\'').map_or(b.len(), |e| i + 1 + e);
            let v = &sql[i + 1..end];
            let is_date = v.len() == 10 && v.as_bytes()[4] == b'-' && v.as_bytes()[7] == b'-';
            let value = match (is_date, flip()) {
                (true, true) => {
                    let n = |a: usize, z: usize| v[a..z].parse::<u32>().unwrap_or(0);
                    Value::Date(n(0, 4) as u16, n(5, 7) as u8, n(8, 10) as u8, 0, 0, 0, 0)
                }
                _ => Value::Bytes(v.as_bytes().to_vec()),
            };
            params.push(value);
            out.push('?');
            i = end + 1;
            continue;
        }
        let signed = c == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit) && !after_word;
        if !in_order && !after_word && (c.is_ascii_digit() || signed) {
            let mut end = i + 1;
            while end < b.len() && (b[end].is_ascii_digit() || b[end] == b'.') {
                end += 1;
            }
            let text = &sql[i..end];
            let value = if text.contains('.') {
                match text.parse::<f64>() {
                    Ok(f) if flip() => Value::Double(f),
                    _ => Value::Bytes(text.as_bytes().to_vec()),
                }
            } else if let Ok(n) = text.parse::<i64>() {
                Value::Int(n)
            } else if let Ok(n) = text.parse::<u64>() {
                Value::UInt(n)
            } else {
                out.push_str(text);
                i = end;
                continue;
            };
            params.push(value);
            out.push('?');
            i = end;
            continue;
        }
        out.push(c as char);
        i += 1;
    }
    (out, params)
}

/// Metadata (name, type, character set), rows and warning count of an
/// execution.
pub type Answer = (Vec<(String, u8, u16)>, Vec<Vec<Option<String>>>, u16);

fn cell(v: &Value) -> Option<String> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        other => Some(other.as_sql(true)),
    }
}

/// Prepare and execute `sql` with `params` (the binary protocol).
pub async fn exec(c: &mut Conn, sql: &str, params: &[Value]) -> Result<Answer, mysql_async::Error> {
    let params = if params.is_empty() {
        mysql_async::Params::Empty
    } else {
        mysql_async::Params::Positional(params.to_vec())
    };
    let mut res = c.exec_iter(sql, params).await?;
    let meta = res
        .columns()
        .map(|cols| {
            cols.iter()
                .map(|c| {
                    (
                        c.name_str().into_owned(),
                        c.column_type() as u8,
                        c.character_set(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let rows: Vec<Row> = res.collect().await?;
    drop(res);
    let rows = rows
        .iter()
        .map(|r| (0..r.len()).map(|i| cell(r.as_ref(i).unwrap())).collect())
        .collect();
    Ok((meta, rows, c.get_warnings()))
}

#[test]
fn literals_become_typed_parameters() {
    let (sql, params) = parametrize(
        "SELECT a.id, n * 2 FROM r_mod AS a WHERE a.k = -3 AND a.s IN ('x y', 'B ') /*! OR a.id < 30 */ AND a.d < 1.5 AND u > 18446744073709551614 ORDER BY 2, a.id LIMIT 3, 7",
        0,
    );
    assert_eq!(
        sql,
        "SELECT a.id, n * 2 FROM r_mod AS a WHERE a.k = ? AND a.s IN (?, ?) /*! OR a.id < 30 */ AND a.d < ? AND u > ? ORDER BY 2, a.id LIMIT ?, ?"
    );
    assert_eq!(params.len(), 7);
    assert_eq!(params[0], Value::Int(-3));
    assert_eq!(params[1], Value::Bytes(b"x y".to_vec()));
    assert_eq!(params[4], Value::UInt(18446744073709551614));
    assert_eq!(params[6], Value::Int(7));
}
