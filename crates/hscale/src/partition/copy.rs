//! Row copies between backends, streamed: rows are read one at a time from
//! the source ([`BackendConn::query_stream`]) and written as `INSERT`
//! statements of bounded size ([`InsertBatcher`]) or, for a change's copy,
//! as bounded `LOAD DATA LOCAL INFILE` files (`load_batcher.rs`), so the
//! proxy's memory does not grow with the number of rows copied. Used by the
//! admin commands' row moves and by shipping tables for joins (`exec/`).
//!
//! Values are copied byte-exact ([`value_literal`]): read with
//! `character_set_results = NULL`, written as numbers, ASCII dates or
//! `X'..'`, which neither `sql_mode` nor the connection's character set
//! changes (a file: every value as its bytes, read `CHARACTER SET binary`).

use hscale_wire::resultset::{decode_row_into, ColumnInfo};

use super::load_batcher::{load_file, load_statement, LoadBatcher, Spares, LOAD_ROWS};
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

/// [`value_literal`] written at the end of `out`.
pub fn push_literal(out: &mut String, v: Option<&[u8]>, col: &ColumnInfo) {
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

/// The state in which a statement stores values a table already holds
/// as they are, whatever the session's sql_mode (a shipped table's copy,
/// a row moved to another partition): not strict and without
/// NO_ZERO_DATE / NO_ZERO_IN_DATE (a zero date, '2024-02-00' and a zero
/// DEFAULT would fail with 1292 or 1067), ALLOW_INVALID_DATES
/// ('2024-02-30' would become the zero date), no EMPTY_STRING_IS_NULL,
/// NO_AUTO_VALUE_ON_ZERO (an AUTO_INCREMENT 0 would get a new id), CHECK
/// constraints unchecked (a row stored while they were off). The modes
/// the server applies while it parses (EMPTY_STRING_IS_NULL, ANSI_QUOTES,
/// NO_BACKSLASH_ESCAPES, ...) are the session's under `SET STATEMENT ...
/// FOR`, which is parsed whole first: its statement must read the same
/// in any of them.
pub const STORED_AS_IS: &str = "sql_mode = 'NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION', check_constraint_checks = 0";

/// `sql`, which writes values a table already holds, run in
/// [`STORED_AS_IS`].
pub fn stored_as_is(sql: &str) -> String {
    format!("SET STATEMENT {STORED_AS_IS} FOR {sql}")
}

/// `sql`, a read of rows the proxy writes back, or their write, in UTC:
/// a TIMESTAMP read and written in the session's time zone could come
/// back as another instant (the hour a zone repeats when its clocks go
/// back shows two instants as one text). [`in_utc`]`(`[`stored_as_is`]`)`
/// is one `SET STATEMENT` ([`stored_as_is_in_utc`]).
pub fn in_utc(sql: &str) -> String {
    format!("SET STATEMENT time_zone = '+00:00' FOR {sql}")
}

/// [`stored_as_is`] in UTC ([`in_utc`]).
pub fn stored_as_is_in_utc(sql: &str) -> String {
    format!("SET STATEMENT {STORED_AS_IS}, time_zone = '+00:00' FOR {sql}")
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
        let values: Vec<Option<&[u8]>> = row.iter().map(|v| v.as_deref()).collect();
        self.push_values(&values)
    }

    /// [`InsertBatcher::push`] of borrowed values.
    pub fn push_values(&mut self, row: &[Option<&[u8]>]) -> Option<String> {
        if self.rows == 0 {
            self.sql = format!("{} INTO {} VALUES (", self.verb, self.table_q);
        } else {
            self.sql.push_str(", (");
        }
        for (i, (v, col)) in row.iter().zip(self.columns).enumerate() {
            if i > 0 {
                self.sql.push_str(", ");
            }
            push_literal(&mut self.sql, *v, col);
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
    let how = Copy {
        is_replace,
        ..Copy::new(select, dst_q)
    };
    Ok(stream_rows_to(src, vec![dst], &how).await?.rows)
}

/// What [`stream_rows_to`] copies and how.
pub struct Copy<'a> {
    /// The rows, read on the source.
    pub select: &'a str,
    /// The destination table, qualified and quoted.
    pub dst_q: &'a str,
    /// `REPLACE` rows whose key is there already (else `INSERT`).
    pub is_replace: bool,
    /// Written as `LOAD DATA LOCAL INFILE ... REPLACE` files
    /// (`load_batcher.rs`) when the destination allows it
    /// (`@@local_infile`), else as statements; only with `is_replace`.
    pub is_load_data: bool,
    /// The select's last column is a number the source computed per row
    /// (a checksum), summed instead of copied.
    pub has_checksum: bool,
    /// The source is read no faster than this, a batch at a time (0: no
    /// limit); a file then holds at most a quarter of a second's rows.
    pub rows_per_s: u64,
}

impl<'a> Copy<'a> {
    /// `INSERT` statements, no checksum, no limit.
    pub fn new(select: &'a str, dst_q: &'a str) -> Copy<'a> {
        Copy {
            select,
            dst_q,
            is_replace: false,
            is_load_data: false,
            has_checksum: false,
            rows_per_s: 0,
        }
    }
}

/// What [`stream_rows_to`] copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    pub rows: u64,
    /// The sum of the select's last column over its rows, when it is a
    /// checksum (`has_checksum`), else 0.
    pub checksum: u64,
}

/// One batch of rows for the destination.
enum Batch {
    Statement(String),
    /// A file for `load_batcher::load_statement`.
    File(Vec<u8>),
}

/// Turns rows into [`Batch`]es of either kind.
enum Batcher<'a> {
    Statements(InsertBatcher<'a>),
    Files(LoadBatcher),
}

impl Batcher<'_> {
    fn push(&mut self, row: &[Option<&[u8]>]) -> Option<Batch> {
        match self {
            Batcher::Statements(b) => b.push_values(row).map(Batch::Statement),
            Batcher::Files(b) => b.push(row).map(Batch::File),
        }
    }

    fn finish(self) -> Option<Batch> {
        match self {
            Batcher::Statements(b) => b.finish().map(Batch::Statement),
            Batcher::Files(b) => b.finish().map(Batch::File),
        }
    }
}

/// Whether the server behind `c` takes `LOAD DATA LOCAL INFILE`.
async fn takes_local_files(c: &mut BackendConn) -> bool {
    match c.query_rows("SELECT @@local_infile").await {
        Ok(Ok(r)) => matches!(
            r.strings().first().and_then(|row| row[0].as_deref()),
            Some("1" | "ON")
        ),
        _ => false,
    }
}

/// [`stream_rows`] into several connections to the destination's backend:
/// each batch runs on whichever is free, so the destination writes on
/// several threads at once while the source is read once. Batches commit
/// out of order with several connections: only for autocommitted,
/// idempotent copies of disjoint rows (a `REPLACE` copy).
pub async fn stream_rows_to(
    src: &mut BackendConn,
    mut dsts: Vec<&mut BackendConn>,
    how: &Copy<'_>,
) -> Result<Copied, ProxyError> {
    let select = how.select;
    let is_load_data = how.is_load_data
        && how.is_replace
        && match dsts.first_mut() {
            Some(d) => takes_local_files(d).await,
            None => false,
        };
    // Each row stored again as it is, whatever the server's sql_mode.
    let load_sql = stored_as_is(&load_statement(how.dst_q));
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
    let copied_width = width - usize::from(how.has_checksum && width > 1);
    let started = std::time::Instant::now();
    let (tx, rx) = tokio::sync::mpsc::channel::<Batch>(READ_AHEAD + dsts.len());
    // Shared by the writers; taken per batch, not per row.
    let rx = tokio::sync::Mutex::new(rx);
    let spares = Spares::default();
    let read = async {
        let mut batcher = if is_load_data {
            let max_rows = match how.rows_per_s {
                0 => LOAD_ROWS,
                r => usize::try_from(r / 4).unwrap_or(LOAD_ROWS),
            };
            Batcher::Files(LoadBatcher::with_rows(max_rows, spares.clone()))
        } else {
            let mut b = InsertBatcher::new(how.dst_q, &columns[..copied_width]);
            if how.is_replace {
                b = b.replacing();
            }
            Batcher::Statements(b)
        };
        let mut copied = Copied {
            rows: 0,
            checksum: 0,
        };
        let mut is_writing = true;
        // Time the reader waited for a writer: the destination is the
        // slower side.
        let mut waited = std::time::Duration::ZERO;
        while let Some(row) = src.next_row_payload(width).await? {
            let payload = row.map_err(|e| server_error(src, select, e))?;
            let mut values: Vec<Option<&[u8]>> = Vec::with_capacity(width);
            decode_row_into(&payload, width, &mut values).map_err(|e| src.protocol_error(e))?;
            copied.rows += 1;
            if let Some(sum) = values.get(copied_width..).and_then(|r| r.first()) {
                let n = sum
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .and_then(|t| t.parse::<u64>().ok())
                    .ok_or_else(|| ProxyError::Wrong("unreadable row checksum".into()))?;
                copied.checksum = copied.checksum.wrapping_add(n);
            }
            if let Some(batch) = batcher.push(&values[..copied_width]) {
                // A failed writer dropped its end: read the rest, so `src`
                // can be used again (a caller may retry after a deadlock).
                let t = std::time::Instant::now();
                is_writing = is_writing && tx.send(batch).await.is_ok();
                waited += t.elapsed();
                if how.rows_per_s > 0 {
                    // Paced: the rows read so far are due no sooner than
                    // at the limit's rate from the start.
                    let due = started
                        + std::time::Duration::from_secs_f64(
                            copied.rows as f64 / how.rows_per_s as f64,
                        );
                    tokio::time::sleep_until(due.into()).await;
                }
            }
        }
        if let Some(batch) = batcher.finish() {
            let _ = tx.send(batch).await;
        }
        drop(tx);
        Ok::<_, ProxyError>((copied, waited))
    };
    let load_sql = &load_sql;
    let spares = &spares;
    let writers = dsts.into_iter().map(|dst| {
        let rx = &rx;
        async move {
            loop {
                let Some(batch) = rx.lock().await.recv().await else {
                    return Ok(());
                };
                let written = match batch {
                    Batch::Statement(sql) => exec(dst, &[stored_as_is(&sql)]).await,
                    Batch::File(file) => {
                        let loaded = load_file(dst, load_sql, &file).await;
                        spares.give(file);
                        match loaded {
                            Ok(Ok(_)) => Ok(()),
                            Ok(Err(e)) => Err(server_error(dst, load_sql, e)),
                            Err(e) => Err(e),
                        }
                    }
                };
                if let Err(e) = written {
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
        is_load_data,
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
