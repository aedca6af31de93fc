//! Rows written as the file of `LOAD DATA LOCAL INFILE`, the proxy's
//! cheapest way to write copied rows on a destination (`copy.rs`): the
//! server reads the fields without parsing SQL, and a byte takes one byte
//! instead of two hex digits. On MariaDB 10.11, 400,000 rows of
//! `bench/moves.sh`'s table cost the server 1.13-1.19 s of CPU loaded by
//! one connection 5,000 rows at a time, against 1.27-1.39 s as 500-row
//! `REPLACE` statements on one connection and 1.74-1.77 s on three at once
//! (bench/RESULTS.md).
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

use hscale_wire::response::{ErrPacket, OkPacket};

use crate::backend::BackendConn;
use crate::error::ProxyError;

/// Rows per file at most.
pub const LOAD_ROWS: usize = 5000;
/// Bytes per file at most (a single larger row makes a larger one).
pub const LOAD_BYTES: usize = 1 << 20;
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

/// Turns rows into files for [`load_statement`] of at most [`LOAD_ROWS`]
/// rows (or fewer: [`LoadBatcher::with_rows`]) and about [`LOAD_BYTES`]
/// bytes each.
pub struct LoadBatcher {
    file: Vec<u8>,
    rows: usize,
    max_rows: usize,
}

impl Default for LoadBatcher {
    fn default() -> Self {
        LoadBatcher::with_rows(LOAD_ROWS)
    }
}

impl LoadBatcher {
    /// Files of at most `max_rows` rows (at least 1, at most [`LOAD_ROWS`]).
    pub fn with_rows(max_rows: usize) -> LoadBatcher {
        LoadBatcher {
            file: Vec::new(),
            rows: 0,
            max_rows: max_rows.clamp(1, LOAD_ROWS),
        }
    }

    /// Add a row; returns a file when the batch is full.
    pub fn push(&mut self, row: &[Option<&[u8]>]) -> Option<Vec<u8>> {
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
/// server asks for. `Ok(Err(..))` is the server's error, sent instead of
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
        let mut b = LoadBatcher::with_rows(2);
        assert_eq!(b.push(&[None]), None);
        assert_eq!(b.push(&[None]), Some(b"\\N\n\\N\n".to_vec()));
        let mut b = LoadBatcher::default();
        let big = vec![b'x'; 300_000];
        // Each row is 300,001 bytes: a file is cut once it passes
        // LOAD_BYTES, so every fourth row.
        let cut: Vec<Vec<u8>> = (0..8).filter_map(|_| b.push(&[Some(&big)])).collect();
        assert_eq!(cut.len(), 2);
        assert!(cut.iter().all(|f| f.len() < LOAD_BYTES + 300_001));
        assert_eq!(b.finish(), None);
    }

    #[test]
    fn the_statement_does_not_depend_on_sql_mode() {
        let s = load_statement("`d`.`t`");
        assert!(s.contains("REPLACE INTO TABLE `d`.`t` CHARACTER SET binary"));
        assert!(!s.contains('\\'), "{s}");
    }
}
