//! The logical AUTO_INCREMENT of partitioned tables with a sequence, for
//! the rows hscale shows for them in `information_schema.TABLES` and
//! `SHOW TABLE STATUS` (each partition's own counter is not the table's:
//! the sequence hands out the ids). `SHOW CREATE TABLE` uses
//! [`super::next_value`] for one table; this reads every table in one
//! query, and `hscale_route::router::logical_views` writes the values into
//! the SQL that answers those rows (`exec/rewrite.rs`).

use hscale_route::dictionary::{Dictionary, TableName};

use std::sync::Arc;

use crate::backend::Pool;
use crate::error::ProxyError;
use hscale_sql::quote::{qualified, quote_str};

/// The sequence's next value of every table of `dict` with a sequence
/// (one query on `main`, a pool of the main backend; none when no table
/// has one).
pub async fn auto_increments(
    main: &Arc<Pool>,
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
    let mut c = main.get(false).await?;
    let rows = c
        .query_rows(&sql)
        .await?
        .map_err(|err| ProxyError::Backend {
            backend: main.cfg.name.clone(),
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
