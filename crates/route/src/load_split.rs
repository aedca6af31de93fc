//! The rows of a `LOAD DATA LOCAL INFILE` file, found the way the server
//! reads them (MariaDB's `READ_INFO::read_field` / `next_line` in
//! `sql_load.cc`), so the proxy can send each row to the partition its key
//! names as a file of that partition's own: the backend then parses every
//! row exactly as one server would (types, defaults, warnings, duplicates).
//!
//! ```text
//!  file ─► the IGNORE n LINES prefix (sent to every partition, which skips it)
//!       ─► rows: up to `fields` fields each (FIELDS TERMINATED / ENCLOSED /
//!          ESCAPED BY), the rest of the line skipped (LINES STARTING /
//!          TERMINATED BY); each row's bytes verbatim, its key field unescaped
//! ```
//!
//! The proxy only finds row boundaries and the key field's text: it needs
//! terminators of ASCII bytes and a character set whose multi-byte
//! characters hold no ASCII bytes (the router refuses others), so the
//! server's multi-byte handling never moves a boundary here.

/// How the file is cut into fields and lines (the statement's FIELDS and
/// LINES clauses, with the server's defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFormat {
    pub field_term: Vec<u8>,
    pub enclosed: Option<u8>,
    /// `None`: no escape character (ESCAPED BY '', or NO_BACKSLASH_ESCAPES
    /// when the statement names none: see [`LoadFormat::escape_for`]).
    pub escape: Option<u8>,
    /// Whether the statement gave ESCAPED BY.
    pub is_escape_given: bool,
    pub line_start: Vec<u8>,
    pub line_term: Vec<u8>,
}

impl Default for LoadFormat {
    fn default() -> Self {
        LoadFormat {
            field_term: b"\t".to_vec(),
            enclosed: None,
            escape: Some(b'\\'),
            is_escape_given: false,
            line_start: Vec::new(),
            line_term: b"\n".to_vec(),
        }
    }
}

impl LoadFormat {
    /// The format as the server reads it under the session's sql_mode: a
    /// default escape character is dropped under NO_BACKSLASH_ESCAPES.
    pub fn escape_for(&self, sql_mode: &str) -> LoadFormat {
        let mut f = self.clone();
        let no_backslash = sql_mode
            .split(',')
            .any(|m| m.trim().eq_ignore_ascii_case("NO_BACKSLASH_ESCAPES"));
        if !f.is_escape_given && no_backslash {
            f.escape = None;
        }
        f
    }
}

/// The key field of one row, as the server would store it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyField<'a> {
    /// The row has fewer fields: the column takes its default.
    Missing,
    /// `\N`, or an unenclosed `NULL` when fields are enclosed.
    Null,
    /// The unescaped text.
    Text(&'a [u8]),
}

/// Where a file's rows begin, and each row: its byte range and the group
/// (partition) the caller's key reader chose for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// `file[..prefix_end]`: the lines IGNORE n LINES skips.
    pub prefix_end: usize,
    /// `(start, end, group)` in file order.
    pub rows: Vec<(usize, usize, usize)>,
}

/// Why a row cannot be routed: its number (from 1, after the ignored
/// lines) and what the key reader said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowRefused {
    pub row: u64,
    pub why: String,
}

/// Cut `file` into rows of `fields` fields each and let `route` pick each
/// row's group from its field number `key` (0-based).
pub fn split(
    file: &[u8],
    format: &LoadFormat,
    fields: usize,
    key: usize,
    ignore_lines: u64,
    route: &mut dyn FnMut(KeyField<'_>) -> Result<usize, String>,
) -> Result<Split, RowRefused> {
    let mut r = Reader::new(file, format);
    if !r.line_term.is_empty() {
        for _ in 0..ignore_lines {
            if r.next_line() {
                break;
            }
        }
    }
    let mut out = Split {
        prefix_end: r.pos,
        rows: Vec::new(),
    };
    let mut value = Vec::new();
    let mut row_no = 0u64;
    loop {
        let start = r.pos;
        let mut read = 0usize;
        let mut key_field = KeyField::Missing;
        let mut key_text = false;
        while read < fields {
            if r.read_field() {
                break;
            }
            if read == key {
                let v = r.value();
                let is_null = (!r.enclosed && format.enclosed.is_some() && v == b"NULL")
                    || (v.len() == 1 && r.found_null);
                if is_null {
                    key_field = KeyField::Null;
                } else {
                    value.clear();
                    value.extend_from_slice(v);
                    key_text = true;
                }
            }
            read += 1;
        }
        if read == 0 {
            break;
        }
        row_no += 1;
        if key_text {
            key_field = KeyField::Text(&value);
        }
        let group = route(key_field).map_err(|why| RowRefused { row: row_no, why })?;
        let at_end = r.next_line();
        out.rows.push((start, r.pos, group));
        if at_end {
            break;
        }
    }
    Ok(out)
}

/// The server's reader over a file held in memory: a byte pushed back is
/// always the byte just before the position, so pushing back is stepping
/// back.
struct Reader<'a> {
    file: &'a [u8],
    pos: usize,
    field_term: &'a [u8],
    line_term: &'a [u8],
    line_start: &'a [u8],
    enclosed_char: Option<u8>,
    escape: Option<u8>,
    /// The field read (the server's `data`), and where its value starts.
    data: Vec<u8>,
    value_from: usize,
    found_end_of_line: bool,
    start_of_line: bool,
    eof: bool,
    found_null: bool,
    /// The last field read was enclosed.
    enclosed: bool,
}

impl<'a> Reader<'a> {
    fn new(file: &'a [u8], f: &'a LoadFormat) -> Reader<'a> {
        // FIELDS TERMINATED BY the line terminator: lines are not used.
        let line_term: &[u8] = if f.field_term == f.line_term {
            &[]
        } else {
            &f.line_term
        };
        Reader {
            file,
            pos: 0,
            field_term: &f.field_term,
            line_term,
            line_start: &f.line_start,
            enclosed_char: f.enclosed,
            escape: f.escape,
            data: Vec::new(),
            value_from: 0,
            found_end_of_line: false,
            start_of_line: !f.line_start.is_empty(),
            eof: false,
            found_null: false,
            enclosed: false,
        }
    }

    fn get(&mut self) -> Option<u8> {
        let b = self.file.get(self.pos).copied()?;
        self.pos += 1;
        Some(b)
    }

    /// The rest of `term` follows (its first byte was just read); if not,
    /// nothing more is consumed.
    fn terminator(&mut self, term: &[u8]) -> bool {
        let from = self.pos;
        for &t in term.iter().skip(1) {
            if self.get() != Some(t) {
                self.pos = from;
                return false;
            }
        }
        true
    }

    /// `chr` (just read) starts `term`, and the rest follows.
    fn is_term(&mut self, chr: Option<u8>, term: &[u8]) -> bool {
        chr.is_some() && term.first().copied() == chr && self.terminator(term)
    }

    fn unescape(&mut self, c: u8) -> u8 {
        match c {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'b' => 0x08,
            b'0' => 0,
            b'Z' => 0x1a,
            b'N' => {
                self.found_null = true;
                c
            }
            other => other,
        }
    }

    /// The value of the field just read.
    fn value(&self) -> &[u8] {
        self.data.get(self.value_from..).unwrap_or_default()
    }

    /// Read one field; `true`: there is none (end of line or of file).
    fn read_field(&mut self) -> bool {
        self.found_null = false;
        if self.found_end_of_line {
            return true;
        }
        if self.start_of_line {
            self.start_of_line = false;
            if self.find_start_of_fields() {
                return true;
            }
        }
        let Some(first) = self.get() else {
            self.found_end_of_line = true;
            self.eof = true;
            return true;
        };
        self.data.clear();
        let found_enclosed = if Some(first) == self.enclosed_char {
            self.data.push(first);
            Some(first)
        } else {
            self.pos -= 1;
            None
        };
        loop {
            let Some(mut chr) = self.get() else {
                return self.found_eof();
            };
            if Some(chr) == self.escape {
                let Some(next) = self.get() else {
                    self.data.push(chr);
                    return self.found_eof();
                };
                if self.escape != self.enclosed_char || Some(next) == self.escape {
                    let c = self.unescape(next);
                    self.data.push(c);
                    continue;
                }
                self.pos -= 1;
            }
            if found_enclosed.is_none()
                && self.line_term.first() == Some(&chr)
                && self.terminator(self.line_term)
            {
                return self.field_end(false, true);
            }
            if Some(chr) == found_enclosed {
                let next = self.get();
                if next == found_enclosed {
                    self.data.push(chr);
                    continue;
                }
                if next.is_none() || self.is_term(next, self.line_term) {
                    return self.field_end(true, true);
                }
                if self.is_term(next, self.field_term) {
                    return self.field_end(true, false);
                }
                self.pos -= 1;
                chr = first;
            } else if found_enclosed.is_none()
                && self.field_term.first() == Some(&chr)
                && self.terminator(self.field_term)
            {
                return self.field_end(false, false);
            }
            self.data.push(chr);
        }
    }

    fn field_end(&mut self, enclosed: bool, is_end_of_line: bool) -> bool {
        self.enclosed = enclosed;
        self.value_from = usize::from(enclosed);
        if is_end_of_line {
            self.found_end_of_line = true;
        }
        false
    }

    fn found_eof(&mut self) -> bool {
        self.enclosed = false;
        self.value_from = 0;
        self.found_end_of_line = true;
        self.eof = true;
        false
    }

    /// Skip to the next line; `true` at the end of the file.
    fn next_line(&mut self) -> bool {
        self.start_of_line = !self.line_start.is_empty();
        if self.found_end_of_line || self.eof {
            self.found_end_of_line = false;
            return self.eof;
        }
        if self.line_term.is_empty() {
            return false;
        }
        loop {
            let Some(c) = self.get() else {
                return true;
            };
            if Some(c) == self.escape {
                if self.get().is_none() {
                    return true;
                }
                continue;
            }
            if self.is_term(Some(c), self.line_term) {
                return false;
            }
        }
    }

    /// Skip to LINES STARTING BY; `true` when the file ends first.
    fn find_start_of_fields(&mut self) -> bool {
        while let Some(c) = self.get() {
            if self.is_term(Some(c), self.line_start) {
                return false;
            }
        }
        self.found_end_of_line = true;
        self.eof = true;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row's bytes and its key field, as `split` found them.
    fn rows(
        file: &[u8],
        f: &LoadFormat,
        fields: usize,
        key: usize,
        ignore: u64,
    ) -> Vec<(String, String)> {
        let mut keys = Vec::new();
        let s = split(file, f, fields, key, ignore, &mut |k| {
            keys.push(match k {
                KeyField::Missing => "<missing>".to_string(),
                KeyField::Null => "<null>".to_string(),
                KeyField::Text(t) => String::from_utf8_lossy(t).into_owned(),
            });
            Ok(0)
        })
        .unwrap();
        s.rows
            .iter()
            .zip(keys)
            .map(|(&(a, b, _), k)| (String::from_utf8_lossy(&file[a..b]).into_owned(), k))
            .collect()
    }

    fn csv() -> LoadFormat {
        LoadFormat {
            field_term: b",".to_vec(),
            enclosed: Some(b'"'),
            ..LoadFormat::default()
        }
    }

    #[test]
    fn tab_separated_rows_with_escapes_and_nulls() {
        let f = LoadFormat::default();
        let got = rows(b"1\ta\\\nb\n\\N\tx\n3\n", &f, 2, 0, 0);
        assert_eq!(
            got,
            vec![
                ("1\ta\\\nb\n".into(), "1".into()),
                ("\\N\tx\n".into(), "<null>".into()),
                ("3\n".into(), "3".into()),
            ]
        );
    }

    #[test]
    fn enclosed_fields_hold_terminators_and_doubled_quotes() {
        let got = rows(b"\"a,\n\"\"b\",7\n\"NULL\",NULL\nx,\"8\"", &csv(), 2, 1, 0);
        assert_eq!(
            got,
            vec![
                ("\"a,\n\"\"b\",7\n".into(), "7".into()),
                ("\"NULL\",NULL\n".into(), "<null>".into()),
                ("x,\"8\"".into(), "8".into()),
            ]
        );
    }

    #[test]
    fn ignored_lines_extra_fields_and_short_rows() {
        let f = csv();
        let file = b"id,name\n1,a,extra,\"x\ny\"\n2\n";
        let s = split(file, &f, 2, 0, 1, &mut |_| Ok(0)).unwrap();
        assert_eq!(&file[..s.prefix_end], b"id,name\n");
        // The rest of a line is skipped by lines, not fields: the
        // enclosed line break ends the row (as the server reads it).
        let got = rows(file, &f, 2, 1, 1);
        assert_eq!(got[0], ("1,a,extra,\"x\n".into(), "a".into()));
        assert_eq!(got[1], ("y\"\n".into(), "<missing>".into()));
        assert_eq!(got[2], ("2\n".into(), "<missing>".into()));
    }

    #[test]
    fn lines_starting_by_and_long_terminators() {
        let f = LoadFormat {
            field_term: b"||".to_vec(),
            line_start: b"xx".to_vec(),
            line_term: b"\r\n".to_vec(),
            ..LoadFormat::default()
        };
        let got = rows(b"junk xx1||a\r\nnone\r\nxx2|b||c\r\n", &f, 2, 0, 0);
        assert_eq!(
            got,
            vec![
                ("junk xx1||a\r\n".into(), "1".into()),
                ("none\r\nxx2|b||c\r\n".into(), "2|b".into()),
            ]
        );
    }

    #[test]
    fn a_refused_key_names_its_row() {
        let f = LoadFormat::default();
        let e = split(b"1\n2\n", &f, 1, 0, 0, &mut |k| match k {
            KeyField::Text(b"2") => Err("no".into()),
            _ => Ok(0),
        })
        .unwrap_err();
        assert_eq!(e.row, 2);
    }
}
