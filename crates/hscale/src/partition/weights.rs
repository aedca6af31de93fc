//! Weights of keys under collations hscale has no table for
//! (`hscale_route::key_compare::Weighed`), asked of a backend: routing
//! returns the keys it has no weight for as questions
//! (`hscale_route::known`), the planning driver (`crate::planning`) asks
//! here in one query, and routes again, keeping the answers in the
//! worker's book. The backend computes them with the same expression as
//! the copy filter of a partition change (`Weighed::sql`), so a key is
//! placed as its rows are moved. Every query, and every one that failed
//! (a connection that could not be had included), is told to the
//! caller's `note` (the planning driver counts them in the worker's
//! metrics).

use std::sync::Arc;

use hscale_route::key_compare::Weighed;

use super::store::server_error;
use crate::backend::pool::Pool;
use crate::backend::BackendConn;
use crate::error::ProxyError;

/// Keys per query.
const CHUNK: usize = 256;

/// A weight the backend gave: the collation, the key, its weight.
pub type Weight = (Weighed, String, String);

/// [`fetch`] on a connection of `pool` (the main backend's).
pub async fn fetch_from(
    pool: &Arc<Pool>,
    keys: Vec<(Weighed, String)>,
    note: impl Fn(bool),
) -> Result<Vec<Weight>, ProxyError> {
    match pool.get(false).await {
        Ok(mut c) => fetch(&mut c, keys, note).await,
        Err(e) => {
            note(true);
            Err(e)
        }
    }
}

/// Ask `c` for the weights of `keys`; `note(is_failed)` for each query.
pub async fn fetch(
    c: &mut BackendConn,
    keys: Vec<(Weighed, String)>,
    note: impl Fn(bool),
) -> Result<Vec<Weight>, ProxyError> {
    let mut out = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(CHUNK) {
        let items: Vec<String> = chunk
            .iter()
            .map(|(w, key)| w.sql(&hex_literal(key)))
            .collect();
        let sql = format!("SELECT {}", items.join(", "));
        let rows = match c.query_rows(&sql).await {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => {
                note(true);
                return Err(server_error(c, &sql, e));
            }
            Err(e) => {
                note(true);
                return Err(e);
            }
        };
        let row = rows.strings().into_iter().next().unwrap_or_default();
        let is_complete = row.len() == chunk.len() && row.iter().all(Option::is_some);
        note(!is_complete);
        for ((w, key), weight) in chunk.iter().zip(row) {
            let Some(weight) = weight else {
                return Err(ProxyError::Refused(format!(
                    "the backend gave no weight under {} for a key",
                    w.name
                )));
            };
            out.push((w.clone(), key.clone(), weight));
        }
    }
    Ok(out)
}

/// `key` as a utf8mb4 string literal that means the same under any
/// `sql_mode` and connection character set.
pub(crate) fn hex_literal(key: &str) -> String {
    let mut out = String::with_capacity(2 * key.len() + 12);
    out.push_str("_utf8mb4 X'");
    for b in key.bytes() {
        out.push_str(&format!("{b:02X}"));
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_hex_literals() {
        assert_eq!(hex_literal("a'é"), "_utf8mb4 X'6127C3A9'");
        assert_eq!(hex_literal(""), "_utf8mb4 X''");
    }
}
