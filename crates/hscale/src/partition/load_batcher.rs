//! Rows written as the file of `LOAD DATA LOCAL INFILE`, the proxy's
//! cheapest way to write copied rows on a destination (`copy.rs`): the
//! server reads the fields without parsing SQL, and a byte takes one byte
//! instead of two hex digits. On MariaDB 10.11, 400,000 rows of
//! `bench/moves.sh`'s table cost the server 1.13-1.19 s of CPU loaded by
//! one connection 5,000 rows at a time (1,000 at a time: 1.11-1.15 s),
//! against 1.27-1.39 s as 500-row `REPLACE` statements on one connection
//! and 1.74-1.77 s on three at once (bench/RESULTS.md).
//!
//! The file is byte exact whatever the column types: the statement reads
//! it `CHARACTER SET binary` (no conversion), so every field reaches the
//! column as `Field::store` of its bytes in the binary character set,
//! exactly what an `X'..'` literal of [`super::copy::value_literal`] gives.
//! Fields are tab-separated, rows end with a newline, NULL is `\N`, and a
//! backslash, tab or newline inside a value is escaped with a backslash
//! (MariaDB's `READ_INFO::unescape`: `\t`, `\n`, and any other escaped
//! byte stands for itself); no enclosing quotes. The separators are hex
//! literals in the statement, so `sql_mode` (NO_BACKSLASH_ESCAPES) does
//! not change them.

use std::sync::{Arc, Mutex};

use hscale_wire::response::{ErrPacket, OkPacket};

use crate::backend::BackendConn;
use crate::error::ProxyError;

/// Rows per file at most.
pub const LOAD_ROWS: usize = 2000;
/// Bytes per file at most (a single larger row makes a larger one).
pub const LOAD_BYTES: usize = 256 << 10;
/// File bytes per packet sent to the server.
const PACKET: usize = 64 * 1024;

/// `LOAD DATA LOCAL INFILE ... REPLACE INTO TABLE table_q` reading the
/// files of [`LoadBatcher`] into all columns of the table, in order.
pub fn load_statement(table_q: &str) -> String {
    format!(
        "LOAD DATA LOCAL INFILE 'hscale-copy' REPLACE INTO TABLE {table_q} CHARACTER SET binary \
         FIELDS TERMINATED BY X'09' ENCLOSED BY '' ESCAPED BY X'5C' \
         LINES STARTING BY '' TERMINATED BY X'0A'"
    )
}

/// Files sent and emptied, kept for the next ones: a copy allocates its
/// few buffers (the files in flight) once instead of growing a new one per
/// file, which left the proxy's RSS several MB higher in some runs of
/// `bench/moves.sh`.
#[derive(Default, Clone)]
pub struct Spares(Arc<Mutex<Vec<Vec<u8>>>>);

impl Spares {
    /// Keep `file`'s buffer for a next file (not one a huge row grew).
    pub fn give(&self, mut file: Vec<u8>) {
        if file.capacity() <= 2 * LOAD_BYTES {
            file.clear();
            if let Ok(mut spares) = self.0.lock() {
                spares.push(file);
            }
        }
    }

    fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .ok()
            .and_then(|mut spares| spares.pop())
            .unwrap_or_else(|| Vec::with_capacity(LOAD_BYTES / 2))
    }
}

/// Turns rows into files for [`load_statement`] of at most [`LOAD_ROWS`]
/// rows (or fewer: [`LoadBatcher::with_rows`]) and about [`LOAD_BYTES`]
/// bytes each.
pub struct LoadBatcher {
    file: Vec<u8>,
    rows: usize,
    max_rows: usize,
    spares: Spares,
}

impl Default for LoadBatcher {
    fn default() -> Self {
        LoadBatcher::with_rows(LOAD_ROWS, Spares::default())
    }
}

impl LoadBatcher {
    /// Files of at most `max_rows` rows (at least 1, at most
    /// [`LOAD_ROWS`]), in buffers from `spares` (give them back there).
    pub fn with_rows(max_rows: usize, spares: Spares) -> LoadBatcher {
        LoadBatcher {
            file: Vec::new(),
            rows: 0,
            max_rows: max_rows.clamp(1, LOAD_ROWS),
            spares,
        }
    }

    /// Add a row; returns a file when the batch is full.
    pub fn push(&mut self, row: &[Option<&[u8]>]) -> Option<Vec<u8>> {
        if self.rows == 0 && self.file.capacity() == 0 {
            self.file = self.spares.take();
        }
        for (i, v) in row.iter().enumerate() {
            if i > 0 {
                self.file.push(b'\t');
            }
            push_field(&mut self.file, *v);
        }
        self.file.push(b'\n');
        self.rows += 1;
        (self.rows >= self.max_rows || self.file.len() >= LOAD_BYTES).then(|| self.take())
    }

    /// The last, partly filled file, if any row is left.
    pub fn finish(mut self) -> Option<Vec<u8>> {
        (self.rows > 0).then(|| self.take())
    }

    fn take(&mut self) -> Vec<u8> {
        self.rows = 0;
        std::mem::take(&mut self.file)
    }
}

/// One value as a field: `\N` for NULL, else its bytes with `\`, tab and
/// newline escaped.
fn push_field(out: &mut Vec<u8>, v: Option<&[u8]>) {
    let Some(mut rest) = v else {
        out.extend_from_slice(b"\\N");
        return;
    };
    while let Some(i) = rest
        .iter()
        .position(|&c| matches!(c, b'\\' | b'\t' | b'\n'))
    {
        out.extend_from_slice(&rest[..i]);
        out.push(b'\\');
        out.push(match rest[i] {
            b'\t' => b't',
            b'\n' => b'n',
            c => c,
        });
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
}

/// Run `sql` (a [`load_statement`]) on `dst` with `file` as the file the
/// server asks for (whatever name it asks for: the proxy opens no file). `Ok(Err(..))` is the server's error, sent instead of
/// asking for the file or after reading it. The connection is marked
/// broken until the answer is read: a copy dropped half-way (a cancel)
/// leaves the server waiting for the rest of the file.
pub async fn load_file(
    dst: &mut BackendConn,
    sql: &str,
    file: &[u8],
) -> Result<Result<OkPacket, ErrPacket>, ProxyError> {
    let was_broken = dst.is_broken;
    dst.is_broken = true;
    let lost = |dst: &BackendConn, e: hscale_wire::WireError| ProxyError::BackendLost {
        backend: dst.backend.to_string(),
        reason: e.to_string(),
    };
    if let Err(e) = dst
        .stream
        .send_command(&BackendConn::payload_for_query(sql))
        .await
    {
        return Err(lost(dst, e));
    }
    let asked = dst.stream.read_packet().await.map_err(|e| lost(dst, e))?;
    match asked.first() {
        Some(0xfb) => {}
        Some(0xff) => {
            let err = ErrPacket::decode(&asked.payload).map_err(|e| dst.protocol_error(e))?;
            dst.is_broken = was_broken;
            return Ok(Err(err));
        }
        _ => {
            return Err(ProxyError::BackendProtocol {
                backend: dst.backend.to_string(),
                reason: "LOAD DATA LOCAL INFILE answered without asking for the file".into(),
            })
        }
    }
    let mut seq = asked.seq;
    for chunk in file.chunks(PACKET) {
        seq = seq.wrapping_add(1);
        dst.stream.write_packet(seq, chunk);
        dst.stream.maybe_flush().await.map_err(|e| lost(dst, e))?;
    }
    dst.stream.write_packet(seq.wrapping_add(1), &[]);
    dst.stream.flush().await.map_err(|e| lost(dst, e))?;
    let answer = dst.read_response().await?;
    dst.is_broken = was_broken;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_of(rows: &[&[Option<&[u8]>]]) -> Vec<u8> {
        let mut b = LoadBatcher::default();
        let mut out = Vec::new();
        for row in rows {
            out.extend(b.push(row).into_iter().flatten());
        }
        out.extend(b.finish().into_iter().flatten());
        out
    }

    #[test]
    fn fields_are_escaped_and_nulls_marked() {
        let file = file_of(&[
            &[Some(b"1"), None, Some(b"")],
            &[Some(b"a\tb\nc\\d"), Some(b"\\N"), Some(b"N")],
            &[Some(&[0x00, 0xff, b'\r', b'\'', b'"']), Some(b"NULL"), None],
        ]);
        assert_eq!(
            file,
            b"1\t\\N\t\n\
              a\\tb\\nc\\\\d\t\\\\N\tN\n\
              \x00\xff\r'\"\tNULL\t\\N\n"
                .to_vec()
        );
    }

    #[test]
    fn files_are_bounded_by_rows_and_bytes() {
        let mut b = LoadBatcher::default();
        let full: Vec<Vec<u8>> = (0..LOAD_ROWS * 2 + 1)
            .filter_map(|_| b.push(&[Some(b"7")]))
            .collect();
        assert_eq!(full.len(), 2);
        assert_eq!(full[0].len(), 2 * LOAD_ROWS);
        assert_eq!(b.finish(), Some(b"7\n".to_vec()));
        let spares = Spares::default();
        let mut b = LoadBatcher::with_rows(2, spares.clone());
        assert_eq!(b.push(&[None]), None);
        let file = b.push(&[None]).expect("a full file");
        assert_eq!(file, b"\\N\n\\N\n".to_vec());
        // Its buffer, given back, holds the next file.
        let at = file.as_ptr();
        spares.give(file);
        assert_eq!(b.push(&[Some(b"x")]), None);
        let next = b.push(&[Some(b"y")]).expect("a full file");
        assert_eq!((next.as_ptr(), &next[..]), (at, &b"x\ny\n"[..]));
        let mut b = LoadBatcher::default();
        let big = vec![b'x'; 100_000];
        // Each row is 100,001 bytes: a file is cut once it passes
        // LOAD_BYTES, so every third row.
        let cut: Vec<Vec<u8>> = (0..8).filter_map(|_| b.push(&[Some(&big)])).collect();
        assert_eq!(cut.len(), 2);
        assert!(cut.iter().all(|f| f.len() == 3 * 100_001));
        assert_eq!(b.finish().map(|f| f.len()), Some(2 * 100_001));
    }

    #[test]
    fn the_statement_does_not_depend_on_sql_mode() {
        let s = load_statement("`d`.`t`");
        assert!(s.contains("REPLACE INTO TABLE `d`.`t` CHARACTER SET binary"));
        assert!(!s.contains('\\'), "{s}");
    }
}
