//! information_schema rows of partitioned tables with no partition on the
//! main backend (`hscale_route::router::absent_tables`): a statement that
//! reads the views runs on the main backend, whose information_schema
//! does not know them, so their rows are read here from each one's default
//! partition, typed as the view's columns, and `exec/rewrite.rs` passes them
//! to `hscale_route::router::logical_views`, which shows them under the
//! table's name. Only for a statement that names one of the views, when
//! such a table exists: one query per table and view.

use hscale_route::dictionary::Dictionary;
use hscale_route::router::{absent_tables, view_columns, Cell, RemoteRows, LOGICAL_VIEWS};
use hscale_wire::resultset::ColumnInfo;

use crate::error::ProxyError;
use crate::exec::Bindings;
use crate::partition::quote_str;
use crate::partition::store::server_error;

const UNSIGNED_FLAG: u16 = 0x20;

/// A text value of column `c` as the typed cell `logical_views` writes.
fn cell(c: &ColumnInfo, v: Option<Vec<u8>>) -> Cell {
    let text = v.as_deref().and_then(|v| std::str::from_utf8(v).ok());
    match c.column_type {
        // TINY, SHORT, LONG, LONGLONG, INT24, YEAR
        0x01 | 0x02 | 0x03 | 0x08 | 0x09 | 0x0d => {
            let is_unsigned = c.flags & UNSIGNED_FLAG != 0;
            match (is_unsigned, text) {
                (true, None) => Cell::Unsigned(None),
                (false, None) => Cell::Signed(None),
                (true, Some(t)) => t.parse().map_or(Cell::Text(v), |n| Cell::Unsigned(Some(n))),
                (false, Some(t)) => t.parse().map_or(Cell::Text(v), |n| Cell::Signed(Some(n))),
            }
        }
        // DATETIME, TIMESTAMP
        0x07 | 0x0c => match (&v, text) {
            (None, _) => Cell::DateTime(None),
            (Some(_), Some(t)) => Cell::DateTime(Some(t.to_string())),
            (Some(_), None) => Cell::Text(v),
        },
        _ => Cell::Text(v),
    }
}

impl Bindings {
    /// The rows of the views `sql` reads for the tables of `dict` with no
    /// partition on the main backend; empty when there are none.
    pub async fn remote_view_rows(
        &mut self,
        sql: &str,
        dict: &Dictionary,
    ) -> Result<Vec<RemoteRows>, ProxyError> {
        let absent = absent_tables(dict);
        if absent.is_empty() {
            return Ok(Vec::new());
        }
        let views: Vec<&'static str> = LOGICAL_VIEWS
            .into_iter()
            .filter(|v| hscale_sql::mentions::contains_ci(sql.as_bytes(), v.as_bytes()))
            .collect();
        let mut out = Vec::new();
        for (table, backend, physical) in absent {
            for view in &views {
                let Some(columns) = view_columns(view) else {
                    continue;
                };
                // CHECK_CONSTRAINTS names the table's database CONSTRAINT_SCHEMA.
                let schema = if *view == "CHECK_CONSTRAINTS" {
                    "CONSTRAINT_SCHEMA"
                } else {
                    "TABLE_SCHEMA"
                };
                let q = format!(
                    "SELECT {columns} FROM information_schema.{view} WHERE {schema} = {} AND TABLE_NAME = {}",
                    quote_str(&table.db),
                    quote_str(&physical)
                );
                let mut c = self.ctx.pool(self.worker, backend).get(false).await?;
                let (defs, rows) = c
                    .query_raw(&q)
                    .await?
                    .map_err(|e| server_error(&c, &q, e))?;
                let defs = defs
                    .iter()
                    .map(|d| ColumnInfo::decode(d))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ProxyError::Wrong(format!("information_schema's columns: {e}")))?;
                let rows = rows
                    .into_iter()
                    .map(|row| defs.iter().zip(row).map(|(d, v)| cell(d, v)).collect())
                    .collect();
                out.push(RemoteRows {
                    table: table.clone(),
                    view,
                    rows,
                });
            }
        }
        Ok(out)
    }
}
