//! The statistics of a partitioned table as one server holding all its
//! rows would show them (`SHOW TABLE STATUS`: Rows, Data_length,
//! Index_length, Data_free; `SHOW INDEX`: Cardinality): summed over the
//! physical tables of its partitions, read from each backend's
//! information_schema in one query per backend. The server's own figures
//! are estimates (InnoDB samples), so these are too; they cover every
//! partition's rows. `session/figures.rs` puts them in the answers.

use std::collections::HashMap;

use hscale_route::dictionary::PartitionedTable;
use hscale_route::BackendId;

use super::conn;
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::partition::store::server_error;
use crate::runtime::Context;

/// One logical table's figures, summed over its physical tables.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Figures {
    pub rows: u64,
    pub data_length: u64,
    pub index_length: u64,
    pub data_free: u64,
}

impl Figures {
    /// `Avg_row_length` as the server computes it: data over rows.
    pub fn avg_row_length(&self) -> u64 {
        self.data_length.checked_div(self.rows).unwrap_or(0)
    }
}

/// A physical table: its schema, its name, and the index of its logical
/// table in the list asked about.
type Physical = (String, String, usize);

/// The physical tables of `tables`, by backend.
fn by_backend(tables: &[&PartitionedTable]) -> Vec<(BackendId, Vec<Physical>)> {
    let mut out: Vec<(BackendId, Vec<Physical>)> = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        for target in t.all_targets() {
            let entry = (t.name.db.clone(), target.physical_table, i);
            match out.iter_mut().find(|(b, _)| *b == target.backend) {
                Some((_, list)) => list.push(entry),
                None => out.push((target.backend, vec![entry])),
            }
        }
    }
    out
}

/// `(TABLE_SCHEMA, TABLE_NAME) IN (...)` for `list`.
fn names_in(list: &[Physical]) -> String {
    let names: Vec<String> = list
        .iter()
        .map(|(db, t, _)| format!("({}, {})", quote_str(db), quote_str(t)))
        .collect();
    format!("(TABLE_SCHEMA, TABLE_NAME) IN ({})", names.join(", "))
}

fn number(v: &Option<Vec<u8>>) -> Option<u64> {
    std::str::from_utf8(v.as_deref()?).ok()?.parse().ok()
}

/// The figures of each of `tables` (in its order).
pub async fn table_figures(
    ctx: &Context,
    worker: usize,
    tables: &[&PartitionedTable],
) -> Result<Vec<Figures>, ProxyError> {
    let mut out = vec![Figures::default(); tables.len()];
    for (backend, list) in by_backend(tables) {
        let sql = format!(
            "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS, DATA_LENGTH, INDEX_LENGTH, DATA_FREE \
             FROM information_schema.TABLES WHERE {}",
            names_in(&list)
        );
        let mut c = conn(ctx, worker, backend).await?;
        let r = c
            .query_rows(&sql)
            .await?
            .map_err(|e| server_error(&c, &sql, e))?;
        for row in &r.rows {
            let (Some(db), Some(name)) = (&row[0], &row[1]) else {
                continue;
            };
            let Some((_, _, i)) = list
                .iter()
                .find(|(d, t, _)| d.as_bytes() == &db[..] && t.as_bytes() == &name[..])
            else {
                continue;
            };
            let f = &mut out[*i];
            f.rows += number(&row[2]).unwrap_or(0);
            f.data_length += number(&row[3]).unwrap_or(0);
            f.index_length += number(&row[4]).unwrap_or(0);
            f.data_free += number(&row[5]).unwrap_or(0);
        }
    }
    Ok(out)
}

/// The cardinality of each (index, position in it) of `table`, summed
/// over its physical tables; `None` where no partition knows one.
pub async fn index_cardinality(
    ctx: &Context,
    worker: usize,
    table: &PartitionedTable,
) -> Result<HashMap<(String, u64), Option<u64>>, ProxyError> {
    let mut out: HashMap<(String, u64), Option<u64>> = HashMap::new();
    for (backend, list) in by_backend(&[table]) {
        let sql = format!(
            "SELECT INDEX_NAME, SEQ_IN_INDEX, CARDINALITY FROM information_schema.STATISTICS WHERE {}",
            names_in(&list)
        );
        let mut c = conn(ctx, worker, backend).await?;
        let r = c
            .query_rows(&sql)
            .await?
            .map_err(|e| server_error(&c, &sql, e))?;
        for row in &r.rows {
            let (Some(index), Some(seq)) = (&row[0], number(&row[1])) else {
                continue;
            };
            let key = (String::from_utf8_lossy(index).into_owned(), seq);
            let sum = out.entry(key).or_insert(None);
            if let Some(n) = number(&row[2]) {
                *sum = Some(sum.unwrap_or(0) + n);
            }
        }
    }
    Ok(out)
}
