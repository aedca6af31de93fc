//! The logical AUTO_INCREMENT of partitioned tables with a sequence, for
//! the rows hscale shows for them in `information_schema.TABLES` and
//! `SHOW TABLE STATUS` (each partition's own counter is not the table's:
//! the sequence hands out the ids). `SHOW CREATE TABLE` uses
//! [`super::next_value`] for one table; this reads every table in one
//! query, and `hscale_route::router::logical_views` writes the values into
//! the SQL that answers those rows (`exec/rewrite.rs`).

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::BackendId;

use crate::error::ProxyError;
use crate::partition::{qualified, quote_str};
use crate::runtime::Context;

/// The sequence's next value of every table of `dict` with a sequence
/// (one query on the main backend; none when no table has one).
pub async fn auto_increments(
    ctx: &Context,
    worker: usize,
    dict: &Dictionary,
) -> Result<Vec<(TableName, u64)>, ProxyError> {
    let keys: Vec<String> = dict
        .tables()
        .filter(|t| t.auto_column.is_some())
        .map(|t| {
            format!(
                "({}, {}, {})",
                quote_str(&t.name.db),
                quote_str(&t.name.table),
                t.sequence_generation
            )
        })
        .collect();
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT db, tbl, next_id FROM {} WHERE (db, tbl, generation) IN ({})",
        qualified("hscale", "sequences"),
        keys.join(", ")
    );
    let mut c = ctx.pool(worker, BackendId::MAIN).get(false).await?;
    let rows = c
        .query_rows(&sql)
        .await?
        .map_err(|err| ProxyError::Backend {
            backend: ctx.config.backends[BackendId::MAIN.index()].name.clone(),
            during: "reading the sequences".into(),
            err,
        })?;
    Ok(rows
        .strings()
        .into_iter()
        .filter_map(|r| match r.as_slice() {
            [Some(db), Some(tbl), Some(next)] => {
                Some((TableName::new(db, tbl), next.parse().ok()?))
            }
            _ => None,
        })
        .collect())
}
