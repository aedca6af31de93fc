//! Row copies between backends, streamed: rows are read one at a time from
//! the source ([`BackendConn::query_stream`]) and written as `INSERT`
//! statements of bounded size ([`InsertBatcher`]), so the proxy's memory
//! does not grow with the number of rows copied. Used by the admin
//! commands' row moves and by shipping tables for joins (`exec/`).
//!
//! Values are copied byte-exact ([`value_literal`]): read with
//! `character_set_results = NULL`, written as numbers, ASCII dates or
//! `X'..'`, which neither `sql_mode` nor the connection's character set
//! changes.

use hscale_wire::resultset::ColumnInfo;

use super::store::{exec, server_error};
use crate::backend::BackendConn;
use crate::error::ProxyError;

/// Rows per `INSERT` at most.
pub const BATCH_ROWS: usize = 500;
/// Bytes per `INSERT` at most (a single larger row makes a larger one).
pub const BATCH_BYTES: usize = 1 << 20;

/// A value as a literal that stores the same value again: numbers as
/// written (a hex literal would be read as a number), dates and times as
/// their (ASCII) text, everything else as its exact bytes, `X'...'`, which
/// neither `sql_mode` nor the connection's character set changes. Read the
/// rows with `character_set_results = NULL` for the bytes to be the
/// column's own.
pub fn value_literal(v: Option<&[u8]>, col: &ColumnInfo) -> String {
    let mut out = String::new();
    push_literal(&mut out, v, col);
    out
}

fn push_literal(out: &mut String, v: Option<&[u8]>, col: &ColumnInfo) {
    use hscale_route::value::{Decimal, Kind};
    let Some(b) = v else {
        out.push_str("NULL");
        return;
    };
    let text = std::str::from_utf8(b).ok();
    match (Kind::of(col.column_type, col.charset, col.flags), text) {
        (Kind::Decimal | Kind::Float, Some(t))
            if Decimal::parse(t.as_bytes()).is_some() || t.parse::<f64>().is_ok() =>
        {
            out.push_str(t)
        }
        (Kind::Temporal | Kind::Time, Some(t))
            if t.bytes()
                .all(|c| c.is_ascii_digit() || b"-:. ".contains(&c)) =>
        {
            out.push('\'');
            out.push_str(t);
            out.push('\'');
        }
        _ => {
            // By table, not `write!` per byte: the copy's hottest loop.
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.reserve(3 + 2 * b.len());
            out.push_str("X'");
            for &x in b {
                out.push(char::from(HEX[usize::from(x >> 4)]));
                out.push(char::from(HEX[usize::from(x & 15)]));
            }
            out.push('\'');
        }
    }
}

/// Turns rows into `INSERT INTO table VALUES ...` statements of at most
/// [`BATCH_ROWS`] rows and about [`BATCH_BYTES`] bytes each.
pub struct InsertBatcher<'a> {
    table_q: &'a str,
    columns: &'a [ColumnInfo],
    sql: String,
    rows: usize,
    verb: &'static str,
}

impl<'a> InsertBatcher<'a> {
    pub fn new(table_q: &'a str, columns: &'a [ColumnInfo]) -> InsertBatcher<'a> {
        InsertBatcher {
            table_q,
            columns,
            sql: String::new(),
            rows: 0,
            verb: "INSERT",
        }
    }

    /// `REPLACE` instead of `INSERT`: a row whose key is there already is
    /// overwritten (copies that may run again, change replays).
    pub fn replacing(mut self) -> Self {
        self.verb = "REPLACE";
        self
    }

    /// Add a row; returns a statement when the batch is full.
    pub fn push(&mut self, row: &[Option<Vec<u8>>]) -> Option<String> {
        if self.rows == 0 {
            self.sql = format!("{} INTO {} VALUES (", self.verb, self.table_q);
        } else {
            self.sql.push_str(", (");
        }
        for (i, (v, col)) in row.iter().zip(self.columns).enumerate() {
            if i > 0 {
                self.sql.push_str(", ");
            }
            push_literal(&mut self.sql, v.as_deref(), col);
        }
        self.sql.push(')');
        self.rows += 1;
        (self.rows >= BATCH_ROWS || self.sql.len() >= BATCH_BYTES).then(|| self.take())
    }

    /// The last, partly filled statement, if any row is left.
    pub fn finish(mut self) -> Option<String> {
        (self.rows > 0).then(|| self.take())
    }

    fn take(&mut self) -> String {
        self.rows = 0;
        std::mem::take(&mut self.sql)
    }
}

/// Stream the rows of `select` on `src` into `dst_q` on `dst`, in batches,
/// inside one transaction on `dst`. `src` is left with
/// `character_set_results = NULL` and marked broken, so it is closed
/// rather than pooled. Returns the number of rows copied.
pub async fn copy_rows(
    src: &mut BackendConn,
    select: &str,
    dst: &mut BackendConn,
    dst_q: &str,
) -> Result<u64, ProxyError> {
    exec(dst, &["BEGIN".to_string()]).await?;
    let n = stream_rows(src, select, dst, dst_q, false).await?;
    exec(dst, &["COMMIT".to_string()]).await?;
    Ok(n)
}

/// Stream the rows of `select` on `src` into `dst_q` on `dst` as bounded
/// `INSERT` (or, `is_replace`, `REPLACE`) statements, each committed by
/// itself unless the caller opened a transaction on `dst`. The next
/// statement is read while `dst` runs the last one (at most
/// [`READ_AHEAD`] statements wait between them).
pub async fn stream_rows(
    src: &mut BackendConn,
    select: &str,
    dst: &mut BackendConn,
    dst_q: &str,
    is_replace: bool,
) -> Result<u64, ProxyError> {
    let copied = stream_rows_to(src, select, vec![dst], dst_q, is_replace, false, 0).await?;
    Ok(copied.rows)
}

/// What [`stream_rows_to`] copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    pub rows: u64,
    /// The sum of the select's last column over its rows, when it is a
    /// checksum (`has_checksum`), else 0.
    pub checksum: u64,
}

/// [`stream_rows`] into several connections to the destination's backend:
/// each statement runs on whichever is free, so the destination inserts
/// batches on several threads at once while the source is read once.
/// Statements commit out of order: only for autocommitted, idempotent
/// copies of disjoint rows (a `REPLACE` copy). With `has_checksum`, the
/// select's last column is a number the source computed per row (a
/// checksum), summed instead of copied. With `rows_per_s` (0: no limit)
/// the source is read no faster than that, a statement at a time.
pub async fn stream_rows_to(
    src: &mut BackendConn,
    select: &str,
    dsts: Vec<&mut BackendConn>,
    dst_q: &str,
    is_replace: bool,
    has_checksum: bool,
    rows_per_s: u64,
) -> Result<Copied, ProxyError> {
    if !src.is_results_raw {
        exec(src, &["SET character_set_results = NULL".to_string()]).await?;
        src.is_results_raw = true;
    }
    let columns = src
        .query_stream(select)
        .await?
        .map_err(|e| server_error(src, select, e))?;
    src.is_broken = true;
    let width = columns.len();
    let copied_width = width - usize::from(has_checksum && width > 1);
    let started = std::time::Instant::now();
    let (tx, rx) = tokio::sync::mpsc::channel::<String>(READ_AHEAD + dsts.len());
    // Shared by the writers; taken per statement, not per row.
    let rx = tokio::sync::Mutex::new(rx);
    let read = async {
        let mut batcher = InsertBatcher::new(dst_q, &columns[..copied_width]);
        if is_replace {
            batcher = batcher.replacing();
        }
        let mut copied = Copied {
            rows: 0,
            checksum: 0,
        };
        let mut is_writing = true;
        // Time the reader waited for a writer: the destination is the
        // slower side.
        let mut waited = std::time::Duration::ZERO;
        while let Some(row) = src.next_row(width).await? {
            let row = row.map_err(|e| server_error(src, select, e))?;
            copied.rows += 1;
            if let Some(sum) = row.get(copied_width..).and_then(|r| r.first()) {
                let n = sum
                    .as_deref()
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .and_then(|t| t.parse::<u64>().ok())
                    .ok_or_else(|| ProxyError::Wrong("unreadable row checksum".into()))?;
                copied.checksum = copied.checksum.wrapping_add(n);
            }
            if let Some(sql) = batcher.push(&row[..copied_width]) {
                // A failed writer dropped its end: read the rest, so `src`
                // can be used again (a caller may retry after a deadlock).
                let t = std::time::Instant::now();
                is_writing = is_writing && tx.send(sql).await.is_ok();
                waited += t.elapsed();
                if rows_per_s > 0 {
                    // Paced: the rows read so far are due no sooner than
                    // at the limit's rate from the start.
                    let due = started
                        + std::time::Duration::from_secs_f64(
                            copied.rows as f64 / rows_per_s as f64,
                        );
                    tokio::time::sleep_until(due.into()).await;
                }
            }
        }
        if let Some(sql) = batcher.finish() {
            let _ = tx.send(sql).await;
        }
        drop(tx);
        Ok::<_, ProxyError>((copied, waited))
    };
    let writers = dsts.into_iter().map(|dst| {
        let rx = &rx;
        async move {
            loop {
                let Some(sql) = rx.lock().await.recv().await else {
                    return Ok(());
                };
                if let Err(e) = exec(dst, &[sql]).await {
                    rx.lock().await.close();
                    return Err(e);
                }
            }
        }
    });
    let (read, written) = tokio::join!(read, futures_util::future::try_join_all(writers));
    src.is_broken = true;
    written?;
    let (copied, waited) = read?;
    tracing::debug!(
        rows = copied.rows,
        ms = started.elapsed().as_millis() as u64,
        reader_waited_ms = waited.as_millis() as u64,
        "rows streamed"
    );
    Ok(copied)
}

/// Statements read ahead of the one the destination runs.
const READ_AHEAD: usize = 2;

#[cfg(test)]
mod tests {
    use super::*;

    fn col(column_type: u8, charset: u16) -> ColumnInfo {
        ColumnInfo {
            name: "c".into(),
            charset,
            column_type,
            length: 10,
            flags: 0,
            decimals: 0,
        }
    }

    #[test]
    fn batches_are_bounded_by_rows_and_bytes() {
        let cols = [col(0x03, 63), col(0xfd, 45)];
        let mut b = InsertBatcher::new("`d`.`t`", &cols);
        let mut full = Vec::new();
        for i in 0..1201u32 {
            let row = vec![Some(i.to_string().into_bytes()), None];
            full.extend(b.push(&row));
        }
        full.extend(b.finish());
        assert_eq!(full.len(), 3);
        assert!(full[0].starts_with("INSERT INTO `d`.`t` VALUES (0, NULL), (1, NULL)"));
        assert!(full[2].ends_with("(1200, NULL)"));
        let mut b = InsertBatcher::new("t", &cols);
        let big = vec![Some(b"1".to_vec()), Some(vec![b'x'; 300_000])];
        // Each row is 600,000 bytes of hex: a statement is cut once it
        // passes BATCH_BYTES, so every second row.
        let cut: Vec<String> = (0..10).filter_map(|_| b.push(&big)).collect();
        assert_eq!(cut.len(), 5);
        assert!(cut.iter().all(|s| s.len() < BATCH_BYTES + 700_000));
    }

    #[test]
    fn literals_are_byte_exact() {
        assert_eq!(value_literal(None, &col(0x03, 63)), "NULL");
        assert_eq!(value_literal(Some(b"-12"), &col(0x03, 63)), "-12");
        assert_eq!(value_literal(Some(b"it's"), &col(0xfd, 45)), "X'69742773'");
        assert_eq!(
            value_literal(Some(&[0x00, 0x0f, 0xa0, 0xff]), &col(0xfc, 63)),
            "X'000FA0FF'"
        );
        assert_eq!(
            value_literal(Some(b"2024-01-02"), &col(0x0a, 63)),
            "'2024-01-02'"
        );
    }
}
