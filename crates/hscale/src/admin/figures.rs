//! The statistics of a partitioned table as one server holding all its
//! rows would show them (`SHOW TABLE STATUS`: Rows, Data_length,
//! Index_length, Data_free; `SHOW INDEX`: Cardinality), from the figures
//! each backend's information_schema gives of the physical tables of its
//! partitions, read in one query per backend ([`per_physical`]).
//! `exec/figures.rs` puts them in the answers.
//!
//! Rows and lengths are sums. A Cardinality is the number of distinct
//! values of an index's first columns; the server's own is an estimate
//! (InnoDB samples pages), and so is this one ([`estimate`]): when those
//! columns contain the partition column, a value lives in one partition
//! only and the partitions' counts add up; otherwise the same value may be
//! in every partition, and the count is estimated from the largest
//! partition as if values were spread over partitions independently of
//! the partition key (the sum when that partition's values are all
//! distinct, about the partitions' largest count when they repeat), never
//! below the largest partition's count, nor above their sum or the
//! table's rows.

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

/// A row an information_schema view gives of a physical table.
struct Read {
    /// The index of its logical table in the list asked about.
    table: usize,
    /// Where the physical table is, and its name.
    physical: (BackendId, Vec<u8>),
    /// The columns asked for.
    cells: Vec<Option<Vec<u8>>>,
}

/// The rows of information_schema view `view` (`columns` of it) about the
/// physical tables of `tables`: one query per backend.
async fn per_physical(
    ctx: &Context,
    worker: usize,
    tables: &[&PartitionedTable],
    view: &str,
    columns: &str,
) -> Result<Vec<Read>, ProxyError> {
    let mut out = Vec::new();
    for (backend, list) in by_backend(tables) {
        let sql = format!(
            "SELECT TABLE_SCHEMA, TABLE_NAME, {columns} FROM information_schema.{view} WHERE {}",
            names_in(&list)
        );
        let mut c = conn(ctx, worker, backend).await?;
        let r = c
            .query_rows(&sql)
            .await?
            .map_err(|e| server_error(&c, &sql, e))?;
        for mut row in r.rows {
            let found = match (&row[0], &row[1]) {
                (Some(db), Some(name)) => list
                    .iter()
                    .find(|(d, t, _)| d.as_bytes() == &db[..] && t.as_bytes() == &name[..])
                    .map(|(_, _, i)| *i),
                _ => None,
            };
            let Some(table) = found else { continue };
            let cells = row.split_off(2);
            let name = row.pop().flatten().unwrap_or_default();
            out.push(Read {
                table,
                physical: (backend, name),
                cells,
            });
        }
    }
    Ok(out)
}

/// The figures of each of `tables` (in its order).
pub async fn table_figures(
    ctx: &Context,
    worker: usize,
    tables: &[&PartitionedTable],
) -> Result<Vec<Figures>, ProxyError> {
    let mut out = vec![Figures::default(); tables.len()];
    let columns = "TABLE_ROWS, DATA_LENGTH, INDEX_LENGTH, DATA_FREE";
    for r in per_physical(ctx, worker, tables, "TABLES", columns).await? {
        let f = &mut out[r.table];
        f.rows += number(&r.cells[0]).unwrap_or(0);
        f.data_length += number(&r.cells[1]).unwrap_or(0);
        f.index_length += number(&r.cells[2]).unwrap_or(0);
        f.data_free += number(&r.cells[3]).unwrap_or(0);
    }
    Ok(out)
}

/// The estimated cardinality of each (index, position in it) of `table`
/// over all its partitions ([`estimate`]); `None` where no partition
/// knows one.
pub async fn index_cardinality(
    ctx: &Context,
    worker: usize,
    table: &PartitionedTable,
) -> Result<HashMap<(String, u64), Option<u64>>, ProxyError> {
    let rows: HashMap<(BackendId, Vec<u8>), u64> =
        per_physical(ctx, worker, &[table], "TABLES", "TABLE_ROWS")
            .await?
            .into_iter()
            .map(|r| (r.physical, number(&r.cells[0]).unwrap_or(0)))
            .collect();
    let columns = "INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, CARDINALITY";
    let stats = per_physical(ctx, worker, &[table], "STATISTICS", columns).await?;
    // Per (index, position): each partition's (rows, cardinality).
    let mut parts: HashMap<(String, u64), Vec<(u64, u64)>> = HashMap::new();
    // The positions at which each index has the partition column.
    let mut key_at: HashMap<String, u64> = HashMap::new();
    for r in &stats {
        let (Some(index), Some(seq)) = (&r.cells[0], number(&r.cells[1])) else {
            continue;
        };
        let index = String::from_utf8_lossy(index).into_owned();
        let is_key = r.cells[2]
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case(table.column.as_bytes()));
        if is_key {
            let at = key_at.entry(index.clone()).or_insert(seq);
            *at = (*at).min(seq);
        }
        let list = parts.entry((index, seq)).or_default();
        if let Some(n) = number(&r.cells[3]) {
            list.push((rows.get(&r.physical).copied().unwrap_or(0), n));
        }
    }
    let total: u64 = rows.values().sum();
    Ok(parts
        .into_iter()
        .map(|((index, seq), list)| {
            let is_disjoint = key_at.get(&index).is_some_and(|at| *at <= seq);
            let n = (!list.is_empty()).then(|| estimate(&list, is_disjoint, total));
            ((index, seq), n)
        })
        .collect())
}

/// The number of distinct values of an index prefix over a whole table,
/// from each partition's `(rows, distinct values)`: their sum when the
/// prefix holds the partition column (`is_disjoint`: no value in two
/// partitions); otherwise estimated from the largest partition by the
/// occupancy model (`n` equally likely values give `n(1 - e^(-r/n))`
/// distinct ones in `r` rows): the domain that explains that partition's
/// count, seen through all the partitions' rows. Never below the largest
/// partition's count, above the sum, or above `rows` (the table's, when it
/// is known and not below that largest count).
pub fn estimate(parts: &[(u64, u64)], is_disjoint: bool, rows: u64) -> u64 {
    let sum: u64 = parts.iter().map(|p| p.1).sum();
    let max = parts.iter().map(|p| p.1).max().unwrap_or(0);
    // Rows of 0 with values counted: the table's figures are not known.
    let cap = if rows == 0 { u64::MAX } else { rows.max(max) };
    if is_disjoint {
        return sum.min(cap);
    }
    let Some(&(r, c)) = parts.iter().max_by_key(|p| (p.0, p.1)) else {
        return 0;
    };
    let all: u64 = parts.iter().map(|p| p.0).sum();
    let d = if c >= r || c == 0 {
        sum
    } else {
        let n = domain(r as f64, c as f64);
        (n * (1.0 - (-(all as f64) / n).exp())).floor() as u64
    };
    d.clamp(max, sum).min(cap)
}

/// The `n` with `n(1 - e^(-r/n)) = c`, for `0 < c < r` (it grows with `n`
/// from 0 towards `r`).
fn domain(r: f64, c: f64) -> f64 {
    let seen = |n: f64| n * (1.0 - (-r / n).exp());
    let (mut lo, mut hi) = (c, c * 2.0);
    while seen(hi) < c && hi < 1e15 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if seen(mid) < c {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::estimate;

    #[test]
    fn cardinality_over_partitions() {
        // With the partition column: values never repeat across partitions.
        assert_eq!(
            estimate(&[(200, 200), (171, 171), (229, 229)], true, 600),
            600
        );
        assert_eq!(estimate(&[(200, 40), (171, 40)], true, 371), 80);
        // Unique in each partition: unique overall, as far as one can tell.
        assert_eq!(
            estimate(&[(257, 257), (171, 171), (172, 172)], false, 600),
            600
        );
        // Forty values repeated in every partition: forty.
        assert_eq!(estimate(&[(257, 40), (171, 40), (172, 40)], false, 600), 40);
        // Two values: two.
        assert_eq!(estimate(&[(300, 2), (300, 2)], false, 600), 2);
        // In between: more than the largest, less than the sum.
        let mid = estimate(&[(300, 200), (300, 200)], false, 600);
        assert!(mid > 200 && mid < 400, "{mid}");
        // Never above the table's rows, never below the largest count.
        assert_eq!(estimate(&[(10, 10), (10, 10)], true, 15), 15);
        assert_eq!(estimate(&[(0, 7), (0, 5)], false, 0), 12);
        assert_eq!(estimate(&[], false, 0), 0);
    }
}
