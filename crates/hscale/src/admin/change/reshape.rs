//! The row work of an online schema change (`admin/online_alter.rs`): a
//! move whose destination is a shadow of its source with another
//! definition, on the same backend (`Move::reshape`). Copy, replays and
//! verification run server-side, as `INSERT ... SELECT` from the source
//! into the shadow with an explicit column mapping, so every value is
//! converted by the server as its own ALTER would (in the server's default
//! `sql_mode` and time zone), never through the proxy.
//!
//! - **Copy** ([`copy`]): bounded batches in primary key order, each
//!   `INSERT INTO shadow (mapped columns) SELECT ... WHERE key > last AND
//!   key <= bound`, in READ COMMITTED (the source's rows are not locked
//!   against the application's writers). A row the new definition refuses
//!   fails the batch, and the change (the client then gets one server's
//!   error, `online_alter.rs`).
//! - **Replays** ([`replay_statements`]): the captured keys deleted from
//!   the shadow and inserted again from the source, in one transaction.
//! - **Verification** ([`verify`]): one consistent snapshot of the
//!   source's server sees the source, the shadow and the changelog at one
//!   point: every key without a pending changelog entry must be in both,
//!   with equal values in the columns both definitions type alike. Ranges
//!   (buckets of the key's hash) that differ are copied again.

use super::running::{key_in_list, Running};
use super::verify::RANGES;
use crate::admin::wrong;
use crate::error::ProxyError;
use crate::partition::qualified;
use crate::partition::store::{exec, server_error};
use std::collections::BTreeMap;

/// Rows per copy batch.
const COPY_BATCH: u64 = 5000;

/// How a move's destination differs from its source (see the module).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(in crate::admin) struct Reshape {
    /// The ALTER TABLE that gives the shadow (the destination, created
    /// `LIKE` the source) its new definition, naming the shadow.
    pub alter: String,
    /// What the copy reads from the source, one quoted source column per
    /// entry of `write`.
    pub read: String,
    /// The shadow's columns the copy writes (quoted; the others get
    /// their defaults).
    pub write: String,
    /// Columns compared by the verification: (source, shadow) quoted
    /// names, comma-separated each, of the columns typed alike in both.
    pub same_source: String,
    pub same_shadow: String,
}

impl Reshape {
    /// The session of every connection of a reshape: the server's own
    /// `sql_mode` and time zone (a value converts as one server's ALTER
    /// converts it), a 0 in an AUTO_INCREMENT column kept as 0.
    pub fn session() -> Vec<String> {
        vec![
            "SET SESSION time_zone = @@GLOBAL.time_zone".to_string(),
            "SET SESSION sql_mode = CONCAT(@@GLOBAL.sql_mode, ',NO_AUTO_VALUE_ON_ZERO')"
                .to_string(),
        ]
    }

    /// The replay of the keys of `in_list` (`key_in_list`): deleted from
    /// the shadow `into_q`, inserted again from the source `src_q`.
    pub fn replay_statements(&self, into_q: &str, src_q: &str, in_list: &str) -> [String; 2] {
        [
            format!("DELETE FROM {into_q} WHERE {in_list}"),
            format!(
                "INSERT INTO {into_q} ({}) SELECT {} FROM {src_q} WHERE {in_list}",
                self.write, self.read
            ),
        ]
    }
}

/// The reshape of `r`'s move.
fn of<'a>(r: &Running<'a>) -> Result<&'a Reshape, ProxyError> {
    r.m.reshape
        .as_ref()
        .ok_or_else(|| wrong("a reshape without its mapping"))
}

/// Copy every row of `r`'s source into its shadow in primary key order,
/// on `c` (a connection to the source's backend in [`Reshape::session`]).
/// Returns the rows copied; the journal's `rows_copied` grows with each
/// batch.
pub(super) async fn copy(
    ctx: &crate::runtime::Context,
    worker: usize,
    r: &Running<'_>,
    c: &mut crate::backend::BackendConn,
) -> Result<u64, ProxyError> {
    let rs = of(r)?;
    let pk = r.pk_list("");
    let quoted =
        r.pk.iter()
            .map(|(k, ty)| bound_literal(&crate::partition::quote_ident(k), ty))
            .collect::<Vec<_>>()
            .join(", ");
    let src_q = qualified(&r.m.db, &r.src_name);
    let into_q = qualified(&r.m.db, &r.into);
    c.ensure_utf8().await?;
    exec(
        c,
        &["SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string()],
    )
    .await?;
    let mut after: Option<String> = None;
    let mut rows = 0u64;
    let rate = ctx.config.proxy.change_copy_rows_per_s;
    // Paced: a batch holds at most a quarter of a second's rows.
    let batch = match rate {
        0 => COPY_BATCH,
        r => (r / 4).clamp(1, COPY_BATCH),
    };
    let started = std::time::Instant::now();
    loop {
        let from = match &after {
            Some(k) => format!("({pk}) > {k}"),
            None => "1 = 1".to_string(),
        };
        // The batch's last key, if a whole batch is left.
        // Read as literals that compare in the key's own order
        // (`bound_literal`).
        let bound_sql = format!(
            "SELECT CONCAT('(', CONCAT_WS(', ', {quoted}), ')') FROM {src_q} WHERE {from} ORDER BY {pk} LIMIT {}, 1",
            batch - 1
        );
        let bound = c
            .query_rows(&bound_sql)
            .await?
            .map_err(|e| server_error(c, &bound_sql, e))?
            .strings()
            .into_iter()
            .next()
            .and_then(|r| r[0].clone());
        let upto = match &bound {
            Some(k) => format!(" AND ({pk}) <= {k}"),
            None => String::new(),
        };
        let sql = format!(
            "INSERT INTO {into_q} ({}) SELECT {} FROM {src_q} WHERE {from}{upto} ORDER BY {pk}",
            rs.write, rs.read
        );
        // A refused row is numbered in the partition (the batch's row
        // after the rows copied before it), as a server numbers it.
        let ok = c
            .command(&crate::backend::BackendConn::payload_for_query(&sql))
            .await?
            .map_err(|mut e| {
                if let Some((head, n)) = e.message.rsplit_once(" at row ") {
                    if let Ok(n) = n.parse::<u64>() {
                        e.message = format!("{head} at row {}", rows + n);
                    }
                }
                server_error(c, &sql, e)
            })?;
        rows += ok.affected_rows;
        super::journal(
            ctx,
            worker,
            format!(
                "UPDATE `hscale`.`operations` SET rows_copied = rows_copied + {} WHERE id = {}",
                ok.affected_rows, r.id
            ),
        )
        .await?;
        let Some(k) = bound else {
            return Ok(rows);
        };
        after = Some(k);
        if rate > 0 {
            let due = started + std::time::Duration::from_secs_f64(rows as f64 / rate as f64);
            tokio::time::sleep_until(due.into()).await;
        }
    }
}

/// The SQL expression that reads key column `col` (of column type `ty`)
/// as a literal of its value, for a batch's bound: integers and decimals
/// as their digits (a quoted string would compare as a DOUBLE, which
/// rounds a BIGINT past 2^53), binary strings as hex (compared bytewise,
/// their own order), anything else quoted (compared in the column's
/// collation).
fn bound_literal(col: &str, ty: &str) -> String {
    let ty = ty.to_ascii_lowercase();
    if ty.contains("int") || ty.starts_with("decimal") {
        col.to_string()
    } else if ty.contains("binary") || ty.contains("blob") {
        format!("CONCAT('X''', HEX({col}), '''')")
    } else {
        format!("QUOTE({col})")
    }
}

/// What a verification found: ranges compared, ranges copied again.
pub(super) struct Checked {
    pub ranges: u64,
    pub recopied: u64,
}

/// Verify `r`'s shadow against its source in one snapshot of their
/// server (see the module), on `c` (a connection to it in
/// [`Reshape::session`]), and copy again the ranges that differ.
pub(super) async fn verify(
    r: &Running<'_>,
    c: &mut crate::backend::BackendConn,
) -> Result<Checked, ProxyError> {
    let rs = of(r)?;
    let src_q = qualified(&r.m.db, &r.src_name);
    let into_q = qualified(&r.m.db, &r.into);
    let pk = r.pk_list("");
    let log = r.changelog();
    let keys = r.log_keys();
    let settled = format!("({pk}) NOT IN (SELECT {keys} FROM {log})");
    let bucket = format!("CRC32(CONCAT_WS(',', {pk})) % {RANGES}");
    let text = |cols: &str| {
        if cols.is_empty() {
            "0".to_string()
        } else {
            let quoted: Vec<String> = cols.split(", ").map(|c| format!("QUOTE({c})")).collect();
            format!("CRC32(CONCAT_WS(',', {}))", quoted.join(", "))
        }
    };
    let sums = |table: &str, cols: &str| {
        format!(
            "SELECT {bucket}, COUNT(*), SUM({}) FROM {table} WHERE {settled} GROUP BY 1",
            text(cols)
        )
    };
    exec(
        c,
        &[
            "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ".to_string(),
            "START TRANSACTION WITH CONSISTENT SNAPSHOT".to_string(),
        ],
    )
    .await?;
    let src = read_sums(c, &sums(&src_q, &rs.same_source)).await;
    let dst = read_sums(c, &sums(&into_q, &rs.same_shadow)).await;
    exec(c, &["ROLLBACK".to_string()]).await?;
    let (src, dst) = (src?, dst?);
    let differing: Vec<u32> = (0..RANGES).filter(|b| src.get(b) != dst.get(b)).collect();
    if !differing.is_empty() {
        tracing::warn!(
            operation = r.id,
            ranges = differing.len(),
            "the shadow differs from the source in some ranges; copying them again"
        );
        let list = differing
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        exec(
            c,
            &[
                "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string(),
                "BEGIN".to_string(),
                format!("DELETE FROM {into_q} WHERE {bucket} IN ({list})"),
                format!(
                    "INSERT INTO {into_q} ({}) SELECT {} FROM {src_q} WHERE {bucket} IN ({list})",
                    rs.write, rs.read
                ),
                "COMMIT".to_string(),
            ],
        )
        .await?;
    }
    Ok(Checked {
        ranges: u64::from(RANGES),
        recopied: differing.len() as u64,
    })
}

/// Per-range (rows, checksum) read by `sql`; ranges without rows absent.
async fn read_sums(
    c: &mut crate::backend::BackendConn,
    sql: &str,
) -> Result<BTreeMap<u32, (u64, u64)>, ProxyError> {
    let r = c
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(c, sql, e))?;
    let mut out = BTreeMap::new();
    for row in r.strings() {
        let n = |i: usize| -> u64 { row[i].as_deref().and_then(|v| v.parse().ok()).unwrap_or(0) };
        if n(1) > 0 {
            out.insert(n(0) as u32, (n(1), n(2)));
        }
    }
    Ok(out)
}

/// The replay of `keys` on the lane pair (`dst`: a connection to the
/// source's backend in READ COMMITTED and [`Reshape::session`]): one
/// transaction, run again after a deadlock or lock wait.
pub(super) async fn replay_lane(
    rs: &Reshape,
    dst: &mut crate::backend::BackendConn,
    into_q: &str,
    src_q: &str,
    pk: &str,
    chunks: &[&[String]],
) -> Result<(), ProxyError> {
    let mut statements = vec!["BEGIN".to_string()];
    for chunk in chunks {
        statements.extend(rs.replay_statements(into_q, src_q, &key_in_list(pk, chunk)));
    }
    statements.push("COMMIT".to_string());
    let mut attempt = 0;
    loop {
        match exec(dst, &statements).await {
            Err(ProxyError::Backend { err, .. })
                if matches!(err.code, 1205 | 1213) && attempt < 5 =>
            {
                attempt += 1;
                tracing::debug!(code = err.code, attempt, "a reshape replay runs again");
                exec(dst, &["ROLLBACK".to_string()]).await?;
            }
            Err(e) => {
                let _ = exec(dst, &["ROLLBACK".to_string()]).await;
                return Err(e);
            }
            Ok(()) => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_bounds_read_exact_literals() {
        assert_eq!(bound_literal("`id`", "bigint(20) unsigned"), "`id`");
        assert_eq!(bound_literal("`d`", "decimal(30,10)"), "`d`");
        assert_eq!(bound_literal("`s`", "varchar(20)"), "QUOTE(`s`)");
        assert_eq!(bound_literal("`t`", "datetime"), "QUOTE(`t`)");
        assert_eq!(
            bound_literal("`b`", "varbinary(16)"),
            "CONCAT('X''', HEX(`b`), '''')"
        );
    }
}
