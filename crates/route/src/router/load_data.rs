//! `LOAD DATA LOCAL INFILE ... INTO TABLE T` for a partitioned T: the
//! statement read into a [`LoadData`] (its file name, FIELDS and LINES
//! format, column list) and the same statement for each partition's
//! physical table. The proxy asks the client for the file, cuts it into
//! rows (`crate::load_split`), reads each row's key with [`load_key`] and
//! sends each partition its rows as that statement's file
//! (`hscale::exec::load_data`).
//!
//! Refused with a reason (1235): server-side `LOAD DATA INFILE` (the file
//! is on one backend's disk), LOAD XML, a column list that leaves out the
//! key or reads it into a variable, a SET clause that assigns the key,
//! tables with a sequence or auto-partitioning, formats whose rows the
//! proxy would not cut as the server does (fixed-width rows, empty or
//! non-ASCII terminators, character sets whose multi-byte characters hold
//! ASCII bytes), hex terminators and `PARTITION (...)`.

use hscale_sql::{Token, TokenKind};

use super::{is_name, rewrite, unescape, unquote, Plan, StatementKind, TableRef};
use crate::dictionary::{PartitionedTable, TableName, Target};
use crate::known::Known;
use crate::load_split::{KeyField, LoadFormat};
use crate::KeyValue;

/// A LOAD DATA LOCAL INFILE into a partitioned table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadData {
    pub table: TableName,
    /// The client's statement, planned again when a partition change
    /// renamed a partition's table under it (the fence).
    pub statement: String,
    /// The file name as the statement names it: the client is asked for it.
    pub file_name: String,
    /// The statement for each partition (every target: the ones that get
    /// rows are picked once the file is read).
    pub parts: Vec<(Target, String)>,
    pub format: LoadFormat,
    /// CHARACTER SET, if given (else the database's).
    pub charset: Option<String>,
    pub ignore_lines: u64,
    /// The fields each row is read into: a column's name or `None` for a
    /// user variable. `None`: the table's columns, in order.
    pub fields: Option<Vec<Option<String>>>,
    /// A global table: the whole file goes to every copy (`parts` holds
    /// the statement once, as the client sent it).
    pub is_global: bool,
}

impl LoadData {
    /// The field that holds the key, among `columns` when the statement
    /// lists none; with the number of fields a row is read into.
    pub fn key_field(&self, key: &str, columns: &[String]) -> Option<(usize, usize)> {
        match &self.fields {
            Some(f) => f
                .iter()
                .position(|c| c.as_deref().is_some_and(|c| c.eq_ignore_ascii_case(key)))
                .map(|k| (k, f.len())),
            None => columns
                .iter()
                .position(|c| c.eq_ignore_ascii_case(key))
                .map(|k| (k, columns.len())),
        }
    }

    /// The statement of `target`.
    pub fn statement_for(&self, target: &Target) -> Option<&str> {
        self.parts
            .iter()
            .find(|(t, _)| t == target)
            .map(|(_, s)| s.as_str())
    }
}

/// Character sets whose multi-byte characters can hold ASCII bytes (so
/// the server's reader would step over a `\` or `,` inside one), and the
/// ones a file cannot be read in: the proxy does not cut files in them.
pub fn is_splittable_charset(cs: &str) -> bool {
    const NOT: &[&str] = &[
        "big5", "cp932", "gbk", "sjis", "gb18030", "ucs2", "utf16", "utf16le", "utf32",
    ];
    !NOT.iter().any(|n| cs.eq_ignore_ascii_case(n))
}

/// Whether text in character set `cs` is read as UTF-8.
pub fn is_utf8_charset(cs: &str) -> bool {
    ["utf8", "utf8mb3", "utf8mb4"]
        .iter()
        .any(|n| cs.eq_ignore_ascii_case(n))
}

/// What the proxy knows of the key column, to read a key from a file's
/// text as the column would store it, or to say it cannot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadKeyColumn {
    pub is_nullable: bool,
    /// An integer column: the values it holds.
    pub int_range: Option<(i128, i128)>,
    /// A string column: the most characters it holds.
    pub max_chars: Option<u64>,
    /// The column's character set is UTF-8 (non-ASCII text of a UTF-8
    /// file is stored as it is).
    pub is_utf8: bool,
}

impl LoadKeyColumn {
    /// From information_schema.COLUMNS: DATA_TYPE, COLUMN_TYPE,
    /// IS_NULLABLE, CHARACTER_MAXIMUM_LENGTH, CHARACTER_SET_NAME.
    pub fn from_schema(
        data_type: &str,
        column_type: &str,
        is_nullable: bool,
        max_chars: Option<u64>,
        charset: Option<&str>,
    ) -> LoadKeyColumn {
        let unsigned = column_type.to_ascii_lowercase().contains("unsigned");
        let bits = match data_type.to_ascii_lowercase().as_str() {
            "tinyint" => Some(8),
            "smallint" => Some(16),
            "mediumint" => Some(24),
            "int" | "integer" => Some(32),
            "bigint" => Some(64),
            _ => None,
        };
        let int_range = bits.map(|b: u32| {
            if unsigned {
                (0, (1i128 << b) - 1)
            } else {
                (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
            }
        });
        LoadKeyColumn {
            is_nullable,
            int_range,
            max_chars,
            is_utf8: charset.is_some_and(is_utf8_charset),
        }
    }
}

/// Why a row's key does not give its partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadKeyError {
    /// The proxy cannot be sure where the row goes.
    Unsure(String),
    /// The key's weight under the column's collation is not known yet
    /// (noted in `crate::weights`): ask the backend, then read again.
    Unweighed,
    /// What the column makes of the key is not known yet (noted in
    /// `crate::conversions`): ask the backend, then read again.
    Unconverted,
}

fn routed(r: Result<Target, crate::HashError>) -> Result<Target, LoadKeyError> {
    r.map_err(|e| match e {
        crate::HashError::WeightUnknown { .. } => LoadKeyError::Unweighed,
        e => LoadKeyError::Unsure(e.to_string()),
    })
}

/// The partition of a row whose key field is `field`, read as the column
/// stores it; `Err` says why the proxy cannot be sure where the row goes.
///
/// A key the column would store as another value (`'7abc'` in an INT
/// column, a number beyond its range, a string longer than it holds, a
/// time whose fraction rounds into the next hour) goes where the value
/// the backend said the column makes of it goes (`crate::conversions`,
/// preset around the split); without that answer it is noted and, when
/// `may_ask`, [`LoadKeyError::Unconverted`].
pub fn load_key(
    table: &PartitionedTable,
    column: &LoadKeyColumn,
    is_file_utf8: bool,
    may_ask: bool,
    field: KeyField<'_>,
    known: &Known<'_>,
) -> Result<Target, LoadKeyError> {
    let key = &table.column;
    let text = match field {
        KeyField::Missing => {
            return Err(LoadKeyError::Unsure(format!(
                "the row has no field for partition key {key} (it would take the column's default)"
            )))
        }
        KeyField::Null if column.is_nullable => return routed(table.route(&KeyValue::Null, known)),
        KeyField::Null => {
            return Err(LoadKeyError::Unsure(format!(
            "NULL for partition key {key}, which is NOT NULL (the server would store its default)"
        )))
        }
        KeyField::Text(t) => t,
    };
    let text = match std::str::from_utf8(text) {
        Ok(s) if s.is_ascii() || (is_file_utf8 && column.is_utf8) => s,
        _ => {
            return Err(LoadKeyError::Unsure(format!(
            "partition key {key} holds non-ASCII text in a character set the proxy does not read"
        )))
        }
    };
    // What the column makes of the text, asked of the backend: the text
    // as a string of its character set, whatever the sql_mode.
    let doubtful = |why: String| {
        let charset = if text.is_ascii() || is_file_utf8 {
            "_utf8mb4"
        } else {
            "_binary"
        };
        let hex: String = text.bytes().map(|b| format!("{b:02X}")).collect();
        match crate::conversions::route_converted(table, &format!("{charset} X'{hex}'"), known) {
            Some(r) => routed(r),
            None if may_ask => Err(LoadKeyError::Unconverted),
            None => Err(LoadKeyError::Unsure(why)),
        }
    };
    let stored = table.stored_key(KeyValue::Str(text.to_string()));
    let stored = match (stored, column.int_range) {
        (Some(KeyValue::Int(i)), Some((lo, hi))) if (lo..=hi).contains(&i) => KeyValue::Int(i),
        (_, Some(_)) => {
            return doubtful(format!(
                "partition key {key} value {text:?} is not an integer the column holds as written"
            ))
        }
        (Some(v), None)
            if column
                .max_chars
                .is_none_or(|m| text.chars().count() as u64 <= m) =>
        {
            v
        }
        _ => {
            return doubtful(format!(
                "partition key {key} value {text:?} is not a value the column holds as written"
            ))
        }
    };
    match table.route(&stored, known) {
        Err(e @ crate::HashError::BadValue { .. }) => doubtful(e.to_string()),
        r => routed(r),
    }
}

/// Plan `LOAD ...` into partitioned table `table` (referenced at `r`).
pub(super) fn plan_load(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
) -> Plan {
    match parse(sql, tokens, r, table) {
        Ok(Parsed::Load(load)) => Plan::LoadData(load),
        // The server answers it with its error before asking for a file.
        Ok(Parsed::ServerRefuses) => {
            let t = table.default_target();
            let s = rewrite(sql, tokens, r, &t, false);
            Plan::Targets {
                kind: StatementKind::Insert,
                parts: vec![(t, s)],
            }
        }
        Err(why) => Plan::Refuse(format!("{why} (partitioned table {})", table.name)),
    }
}

enum Parsed {
    Load(Box<LoadData>),
    ServerRefuses,
}

/// `LOAD DATA` into partitioned `table`, clause by clause in the order of
/// the statement's grammar: what the plan needs, or why it is refused.
fn parse(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
) -> Result<Parsed, String> {
    let word = |i: usize, w: &str| tokens.get(i).is_some_and(|t| t.is_word(sql, w));
    let file_name = load_head(sql, tokens, r)?;
    let mut i = r.end;
    if word(i, "PARTITION") {
        return Err("LOAD DATA ... PARTITION (...) is not supported".into());
    }
    let mut format = LoadFormat::default();
    let mut charset = None;
    let mut ignore_lines = 0u64;
    let charset_at = if word(i, "CHARACTER") && word(i + 1, "SET") {
        Some(i + 2)
    } else if word(i, "CHARSET") {
        Some(i + 1)
    } else {
        None
    };
    if let Some(at) = charset_at {
        let cs = tokens
            .get(at)
            .map(|t| match t.kind {
                TokenKind::Str => unescape(t.text(sql)),
                _ => unquote(t, sql),
            })
            .ok_or("unreadable CHARACTER SET")?;
        charset = Some(cs);
        i = at + 1;
    }
    let server_refuses = terminators(sql, tokens, &mut i, &mut format)?;
    if word(i, "IGNORE") {
        let n = tokens
            .get(i + 1)
            .filter(|t| t.kind == TokenKind::Number)
            .and_then(|t| t.text(sql).parse().ok())
            .ok_or("unreadable IGNORE n LINES")?;
        if !(word(i + 2, "LINES") || word(i + 2, "ROWS")) {
            return Err("unreadable IGNORE n LINES".into());
        }
        ignore_lines = n;
        i += 3;
    }
    let fields = column_list(sql, tokens, &mut i)?;
    if word(i, "SET") {
        let assigns_key = tokens[i + 1..].split(|t| t.is_punct(sql, ",")).any(|a| {
            a.iter()
                .position(|t| t.is_punct(sql, "="))
                .and_then(|eq| a[..eq].last())
                .is_some_and(|c| is_name(c) && unquote(c, sql).eq_ignore_ascii_case(&table.column))
        });
        if assigns_key {
            return Err(format!(
                "LOAD DATA whose SET clause assigns partition key {}",
                table.column
            ));
        }
    } else if let Some(t) = tokens.get(i) {
        return Err(format!(
            "LOAD DATA with {:?} at this place is not supported",
            t.text(sql)
        ));
    }
    if server_refuses {
        return Ok(Parsed::ServerRefuses);
    }
    if let Some(f) = &fields {
        let listed = f.iter().any(|c| {
            c.as_deref()
                .is_some_and(|c| c.eq_ignore_ascii_case(&table.column))
        });
        if !listed {
            return Err(format!(
                "LOAD DATA whose column list does not read partition key {} from the file",
                table.column
            ));
        }
    }
    if table.auto_column.is_some() {
        return Err("LOAD DATA into a table whose AUTO_INCREMENT column hscale serves from a sequence is not supported (the file's rows would need ids filled in)".into());
    }
    if table.auto.is_some() {
        return Err("LOAD DATA into a table with auto-partitioning is not supported".into());
    }
    check_format(&format, charset.as_deref())?;
    let parts = table
        .all_targets()
        .into_iter()
        .map(|t| {
            let s = rewrite(sql, tokens, r, &t, false);
            (t, s)
        })
        .collect();
    Ok(Parsed::Load(Box::new(LoadData {
        table: table.name.clone(),
        statement: sql.to_string(),
        file_name,
        parts,
        format,
        charset,
        ignore_lines,
        fields,
        is_global: false,
    })))
}

/// `LOAD DATA [LOW_PRIORITY | CONCURRENT] LOCAL INFILE 'file' [REPLACE |
/// IGNORE] INTO TABLE`, up to the table at `r`: the file's name.
fn load_head(sql: &str, tokens: &[Token], r: &TableRef) -> Result<String, String> {
    let word = |i: usize, w: &str| tokens.get(i).is_some_and(|t| t.is_word(sql, w));
    if !word(1, "DATA") {
        return Err("LOAD XML into a partitioned table is not supported".into());
    }
    let mut i = 2;
    if word(i, "LOW_PRIORITY") || word(i, "CONCURRENT") {
        i += 1;
    }
    if !word(i, "LOCAL") {
        return Err(
            "LOAD DATA INFILE without LOCAL (a file on one backend's disk) is not supported: use LOAD DATA LOCAL INFILE"
                .into(),
        );
    }
    i += 1;
    if !word(i, "INFILE") {
        return Err("unreadable LOAD DATA statement".into());
    }
    let Some(name) = tokens.get(i + 1).filter(|t| t.kind == TokenKind::Str) else {
        return Err("LOAD DATA whose file name is not a string literal is not supported".into());
    };
    let file_name = unescape(name.text(sql));
    i += 2;
    if word(i, "REPLACE") || word(i, "IGNORE") {
        i += 1;
    }
    if !(word(i, "INTO") && word(i + 1, "TABLE") && r.start == i + 2) {
        return Err("unreadable LOAD DATA statement".into());
    }
    Ok(file_name)
}

/// A string after BY at `i`: its bytes (hex and bit literals are refused).
fn by_string(sql: &str, tokens: &[Token], i: usize) -> Result<Vec<u8>, String> {
    match tokens.get(i) {
        Some(t) if t.kind == TokenKind::Str => Ok(unescape(t.text(sql)).into_bytes()),
        _ => Err("LOAD DATA with a terminator that is not a quoted string is not supported".into()),
    }
}

/// The FIELDS (or COLUMNS) and LINES clauses from `i` on, into `format`;
/// `i` is left after them. True when the server refuses them (an
/// enclosure or escape of more than one character).
fn terminators(
    sql: &str,
    tokens: &[Token],
    i: &mut usize,
    format: &mut LoadFormat,
) -> Result<bool, String> {
    let word = |i: usize, w: &str| tokens.get(i).is_some_and(|t| t.is_word(sql, w));
    let string = |i: usize| by_string(sql, tokens, i);
    let mut server_refuses = false;
    if word(*i, "FIELDS") || word(*i, "COLUMNS") {
        *i += 1;
        loop {
            if word(*i, "TERMINATED") && word(*i + 1, "BY") {
                format.field_term = string(*i + 2)?;
                *i += 3;
            } else if word(*i, "OPTIONALLY") && word(*i + 1, "ENCLOSED") && word(*i + 2, "BY") {
                let e = string(*i + 3)?;
                server_refuses |= e.len() > 1;
                format.enclosed = e.first().copied();
                *i += 4;
            } else if word(*i, "ENCLOSED") && word(*i + 1, "BY") {
                let e = string(*i + 2)?;
                server_refuses |= e.len() > 1;
                format.enclosed = e.first().copied();
                *i += 3;
            } else if word(*i, "ESCAPED") && word(*i + 1, "BY") {
                let e = string(*i + 2)?;
                server_refuses |= e.len() > 1;
                format.escape = e.first().copied();
                format.is_escape_given = true;
                *i += 3;
            } else {
                break;
            }
        }
    }
    if word(*i, "LINES") {
        *i += 1;
        loop {
            if word(*i, "STARTING") && word(*i + 1, "BY") {
                format.line_start = string(*i + 2)?;
                *i += 3;
            } else if word(*i, "TERMINATED") && word(*i + 1, "BY") {
                format.line_term = string(*i + 2)?;
                *i += 3;
            } else {
                break;
            }
        }
    }
    Ok(server_refuses)
}

/// The list of columns and user variables the file's fields go to, at
/// `i` if it is there; `i` is left after it.
fn column_list(
    sql: &str,
    tokens: &[Token],
    i: &mut usize,
) -> Result<Option<Vec<Option<String>>>, String> {
    let at = *i;
    if !tokens.get(at).is_some_and(|t| t.is_punct(sql, "(")) {
        return Ok(None);
    }
    let close = at
        + tokens[at..]
            .iter()
            .position(|t| t.is_punct(sql, ")"))
            .ok_or("unreadable column list")?;
    let mut list = Vec::new();
    for item in tokens[at + 1..close].split(|t| t.is_punct(sql, ",")) {
        match item {
            [v] if v.kind == TokenKind::UserVar => list.push(None),
            [.., c] if is_name(c) => list.push(Some(unquote(c, sql))),
            [] if close == at + 1 => {}
            _ => return Err("unreadable column list".into()),
        }
    }
    *i = close + 1;
    Ok((!list.is_empty()).then_some(list))
}

/// `LOAD DATA LOCAL INFILE` into global table `table`: the file as it is
/// to every copy. `Err` says why it is refused.
pub(super) fn plan_global_load(
    sql: &str,
    tokens: &[Token],
    table: &TableName,
) -> Result<LoadData, String> {
    let word = |i: usize, w: &str| tokens.get(i).is_some_and(|t| t.is_word(sql, w));
    if !word(1, "DATA") {
        return Err("LOAD XML".into());
    }
    let local = if word(2, "LOW_PRIORITY") || word(2, "CONCURRENT") {
        3
    } else {
        2
    };
    if !word(local, "LOCAL") {
        return Err("LOAD DATA INFILE without LOCAL (a file on one backend's disk)".into());
    }
    let name = tokens
        .get(local + 2)
        .filter(|t| word(local + 1, "INFILE") && t.kind == TokenKind::Str)
        .ok_or("a LOAD DATA whose file name is not a string literal")?;
    Ok(LoadData {
        table: table.clone(),
        statement: sql.to_string(),
        file_name: unescape(name.text(sql)),
        parts: vec![(
            Target {
                backend: crate::BackendId::MAIN,
                physical_table: table.table.clone(),
            },
            sql.to_string(),
        )],
        format: LoadFormat::default(),
        charset: None,
        ignore_lines: 0,
        fields: None,
        is_global: true,
    })
}

/// The formats whose rows the proxy cuts exactly as the server does.
fn check_format(f: &LoadFormat, charset: Option<&str>) -> Result<(), String> {
    if f.field_term.is_empty() || f.line_term.is_empty() {
        return Err("LOAD DATA with an empty FIELDS or LINES TERMINATED BY (fixed-width rows) is not supported".into());
    }
    if f.field_term == f.line_term {
        return Err(
            "LOAD DATA whose fields and lines end with the same terminator is not supported".into(),
        );
    }
    let all = [&f.field_term, &f.line_term, &f.line_start];
    let ascii = all.iter().all(|t| t.is_ascii())
        && f.enclosed.is_none_or(|c| c.is_ascii())
        && f.escape.is_none_or(|c| c.is_ascii());
    if !ascii {
        return Err("LOAD DATA with non-ASCII terminators is not supported".into());
    }
    if let Some(cs) = charset {
        if !is_splittable_charset(cs) {
            return Err(format!(
                "LOAD DATA ... CHARACTER SET {cs} (multi-byte characters holding ASCII bytes) is not supported"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dictionary::Dictionary;
    use crate::{BackendId, HashingFunction};

    fn dict() -> Dictionary {
        let mut d = Dictionary::default();
        let t = TableName::new("app", "orders");
        d.setup_table(
            t.clone(),
            "customer_id",
            "orders_default",
            BackendId::MAIN,
            HashingFunction::Mod(4),
        )
        .unwrap();
        d.add_partition(&t, "p1", "1", BackendId::new(1)).unwrap();
        d
    }

    fn load(sql: &str) -> Result<LoadData, String> {
        match super::super::plan(sql, Some("app"), &dict(), &crate::known::Known::nothing()) {
            Plan::LoadData(l) => Ok(*l),
            Plan::Refuse(why) => Err(why),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn every_clause_is_read_and_each_partition_gets_the_statement() {
        let l = load("LOAD DATA LOCAL INFILE '/tmp/f\\'s.csv' REPLACE INTO TABLE orders CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' LINES STARTING BY 'x' TERMINATED BY '\\r\\n' IGNORE 2 ROWS (@a, customer_id, `c`) SET d = @a").unwrap();
        assert_eq!(l.file_name, "/tmp/f's.csv");
        assert_eq!(l.charset.as_deref(), Some("utf8mb4"));
        assert_eq!(l.ignore_lines, 2);
        assert_eq!(
            l.format,
            LoadFormat {
                field_term: b",".to_vec(),
                enclosed: Some(b'"'),
                escape: None,
                is_escape_given: true,
                line_start: b"x".to_vec(),
                line_term: b"\r\n".to_vec(),
            }
        );
        assert_eq!(
            l.fields,
            Some(vec![None, Some("customer_id".into()), Some("c".into())])
        );
        assert_eq!(l.key_field("customer_id", &[]), Some((1, 3)));
        let table = dict()
            .table(&TableName::new("app", "orders"))
            .cloned()
            .unwrap();
        assert_eq!(l.parts.len(), table.all_targets().len());
        for (t, sql) in &l.parts {
            assert!(sql.contains(&t.physical_table), "{sql}");
            assert!(sql.starts_with("LOAD DATA LOCAL INFILE"), "{sql}");
        }
    }

    #[test]
    fn what_the_proxy_cannot_cut_or_place_is_refused() {
        for (sql, why) in [
            ("LOAD DATA INFILE 'f' INTO TABLE orders", "without LOCAL"),
            ("LOAD XML LOCAL INFILE 'f' INTO TABLE orders", "LOAD XML"),
            (
                "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (a, b)",
                "does not read partition key",
            ),
            (
                "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders (a, @k) SET customer_id = @k",
                "assigns partition key",
            ),
            (
                "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders PARTITION (p)",
                "PARTITION",
            ),
            (
                "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders FIELDS TERMINATED BY ''",
                "fixed-width",
            ),
            (
                "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders CHARACTER SET sjis",
                "sjis",
            ),
            (
                "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders FIELDS TERMINATED BY X'2C'",
                "quoted string",
            ),
        ] {
            let e = load(sql).unwrap_err();
            assert!(e.contains(why), "{sql}: {e}");
        }
        // The server refuses it before asking for the file: sent as it is.
        assert!(matches!(
            super::super::plan(
                "LOAD DATA LOCAL INFILE 'f' INTO TABLE orders FIELDS ENCLOSED BY 'ab'",
                Some("app"),
                &dict(),
                &crate::known::Known::nothing()
            ),
            Plan::Targets { .. }
        ));
    }

    #[test]
    fn keys_are_read_as_the_column_stores_them_or_refused() {
        let d = dict();
        let mut table = d.table(&TableName::new("app", "orders")).cloned().unwrap();
        table.is_key_integer = true;
        let int = LoadKeyColumn::from_schema("int", "int(11)", false, None, None);
        let p1 = table
            .route(&KeyValue::Int(5), &crate::known::Known::nothing())
            .unwrap();
        assert_eq!(
            load_key(
                &table,
                &int,
                true,
                false,
                KeyField::Text(b" 5 "),
                &crate::known::Known::nothing()
            ),
            Ok(p1)
        );
        for bad in [&b"5abc"[..], b"5.0", b"", b"99999999999", "５".as_bytes()] {
            assert!(
                load_key(
                    &table,
                    &int,
                    true,
                    false,
                    KeyField::Text(bad),
                    &crate::known::Known::nothing()
                )
                .is_err(),
                "{bad:?}"
            );
        }
        assert!(load_key(
            &table,
            &int,
            true,
            false,
            KeyField::Null,
            &crate::known::Known::nothing()
        )
        .is_err());
        assert!(load_key(
            &table,
            &int,
            true,
            false,
            KeyField::Missing,
            &crate::known::Known::nothing()
        )
        .is_err());
        let nullable = LoadKeyColumn {
            is_nullable: true,
            ..int
        };
        assert_eq!(
            load_key(
                &table,
                &nullable,
                true,
                false,
                KeyField::Null,
                &crate::known::Known::nothing()
            ),
            Ok(table.default_target())
        );
        let small = LoadKeyColumn::from_schema("tinyint", "tinyint(3) unsigned", false, None, None);
        assert_eq!(small.int_range, Some((0, 255)));
    }
}
