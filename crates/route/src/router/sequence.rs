//! Ids for a table whose AUTO_INCREMENT column a sequence serves: which
//! values of an `INSERT` / `REPLACE ... VALUES` the proxy generates, and the
//! statement with them filled in. This runs BEFORE routing (the id may be
//! the partition key); the ids themselves come from the proxy's block of
//! the table's sequence (`hscale::seq`).
//!
//! As MySQL does: a missing column, `NULL` and `DEFAULT` generate; `0`
//! generates unless the session's sql_mode has NO_AUTO_VALUE_ON_ZERO. An
//! explicit id is kept, and the largest one is reported so the sequence can
//! move past it. Anything hscale cannot fill in correctly (INSERT ...
//! SELECT, INSERT ... SET, an id computed by an expression) is refused with
//! the construct named, rather than risking a duplicate.

use hscale_sql::{Token, TokenKind};

use super::{literal, refs::table_refs, unquote};
use crate::dictionary::{Dictionary, TableName};
use crate::KeyValue;

/// An INSERT into a table with a sequence, read: how many ids it needs and
/// where they go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoInsert {
    pub table: TableName,
    /// Ids to generate, one per row that needs one, in row order.
    pub needed: usize,
    /// The largest explicit id given (the sequence moves past it).
    pub max_explicit: Option<u64>,
    /// Byte ranges of the statement replaced by text; `Fill::Id` takes
    /// the next generated id.
    edits: Vec<(usize, usize, Fill)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Fill {
    /// The next id.
    Id,
    /// `, ` and the next id (a row that did not list the column).
    CommaId,
    /// Fixed text (the column added to the column list).
    Text(String),
}

impl AutoInsert {
    /// The statement with `ids` (exactly [`AutoInsert::needed`]) filled in.
    pub fn fill(&self, sql: &str, ids: &[u64]) -> String {
        let mut out = String::with_capacity(sql.len() + 24 * ids.len());
        let mut at = 0;
        let mut next = ids.iter();
        for (a, b, fill) in &self.edits {
            out.push_str(&sql[at..*a]);
            match fill {
                Fill::Id => out.push_str(&next.next().copied().unwrap_or(0).to_string()),
                Fill::CommaId => {
                    out.push_str(", ");
                    out.push_str(&next.next().copied().unwrap_or(0).to_string());
                }
                Fill::Text(t) => out.push_str(t),
            }
            at = *b;
        }
        out.push_str(&sql[at..]);
        out
    }
}

/// For an INSERT or REPLACE into a table whose AUTO_INCREMENT column a
/// sequence serves: `Some(Ok)` what to fill in, `Some(Err)` why hscale
/// refuses it. `None` for any other statement.
/// `is_zero_kept`: the session's sql_mode has NO_AUTO_VALUE_ON_ZERO.
pub fn auto_insert(
    sql: &str,
    session_db: Option<&str>,
    dict: &Dictionary,
    is_zero_kept: bool,
) -> Option<Result<AutoInsert, String>> {
    let read = match read_insert(sql, session_db, dict)? {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    let mut out = AutoInsert {
        table: read.table.clone(),
        needed: 0,
        max_explicit: None,
        edits: Vec::new(),
    };
    if let Some(at) = read.add_column_at {
        out.edits.push((at, at, Fill::Text(read.column_text())));
    }
    for row in &read.rows {
        match row {
            RowId::Missing { at } => {
                out.edits.push((*at, *at, Fill::CommaId));
                out.needed += 1;
            }
            RowId::Generate { range } => {
                out.edits.push((range.0, range.1, Fill::Id));
                out.needed += 1;
            }
            RowId::Zero { range } if !is_zero_kept => {
                out.edits.push((range.0, range.1, Fill::Id));
                out.needed += 1;
            }
            RowId::Zero { .. } => {}
            RowId::Explicit(n) => note_explicit(&mut out.max_explicit, *n),
            RowId::Param(_) => {
                return Some(Err(read.refusal(
                    "an AUTO_INCREMENT value given by an expression or parameter",
                )))
            }
        }
    }
    Some(Ok(out))
}

/// Where each `?` of a prepared INSERT's backend statement takes its value
/// from ([`PreparedIds::params`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdParam {
    /// The client's parameter of this index, as bound.
    Client(u16),
    /// The client's parameter of this index holds the id: NULL generates,
    /// 0 generates unless NO_AUTO_VALUE_ON_ZERO, any other value is an
    /// explicit id.
    ClientId(u16),
    /// A generated id (the row named no id, NULL or DEFAULT).
    New,
    /// A literal 0: generated unless NO_AUTO_VALUE_ON_ZERO (decided at
    /// each execution: the session's sql_mode may change after PREPARE).
    Zero,
}

/// A prepared INSERT or REPLACE into a table whose AUTO_INCREMENT column a
/// sequence serves, read at PREPARE: the statement the backends prepare
/// (a `?` wherever an id may be generated) and where each of its
/// parameters comes from. Each execution fills in the ids and runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedIds {
    pub table: TableName,
    /// The statement with `?` for the ids.
    pub sql: String,
    /// One per `?` of [`PreparedIds::sql`], in order.
    pub params: Vec<IdParam>,
    /// The largest literal explicit id (the sequence moves past it).
    pub max_explicit: Option<u64>,
}

/// [`auto_insert`] for a statement being prepared: `?` may stand for an
/// id, and literal ids that may generate become parameters.
pub fn prepared_ids(
    sql: &str,
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<Result<PreparedIds, String>> {
    let read = match read_insert(sql, session_db, dict)? {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    // Edits at byte positions: (from, to, text, the parameter it adds).
    let mut edits: Vec<(usize, usize, &str, Option<IdParam>)> = Vec::new();
    let column = read.column_text();
    if let Some(at) = read.add_column_at {
        edits.push((at, at, &column, None));
    }
    let mut max_explicit = None;
    let mut id_params = Vec::new();
    for row in &read.rows {
        match row {
            RowId::Missing { at } => edits.push((*at, *at, ", ?", Some(IdParam::New))),
            RowId::Generate { range } => edits.push((range.0, range.1, "?", Some(IdParam::New))),
            RowId::Zero { range } => edits.push((range.0, range.1, "?", Some(IdParam::Zero))),
            RowId::Explicit(n) => note_explicit(&mut max_explicit, *n),
            RowId::Param(i) => id_params.push(*i),
        }
    }
    // The client's `?`s, in order, between the edits.
    let mut client = read
        .placeholders
        .iter()
        .enumerate()
        .map(|(i, at)| {
            let i = i as u16;
            let p = if id_params.contains(&i) {
                IdParam::ClientId(i)
            } else {
                IdParam::Client(i)
            };
            (*at, p)
        })
        .peekable();
    let mut out = String::with_capacity(sql.len() + 8 * read.rows.len() + column.len());
    let mut params = Vec::with_capacity(read.placeholders.len() + read.rows.len());
    let mut at = 0;
    for (a, b, text, param) in edits {
        while let Some((_, p)) = client.next_if(|(pos, _)| *pos < a) {
            params.push(p);
        }
        out.push_str(&sql[at..a]);
        out.push_str(text);
        params.extend(param);
        at = b;
    }
    params.extend(client.map(|(_, p)| p));
    out.push_str(&sql[at..]);
    Some(Ok(PreparedIds {
        table: read.table,
        sql: out,
        params,
        max_explicit,
    }))
}

/// The id column's value in one VALUES row.
enum RowId {
    /// Not in the column list: added before the row's `)`, at this byte.
    Missing {
        at: usize,
    },
    /// NULL or DEFAULT, at these bytes.
    Generate {
        range: (usize, usize),
    },
    /// A literal 0, at these bytes.
    Zero {
        range: (usize, usize),
    },
    Explicit(i128),
    /// The client's parameter of this index.
    Param(u16),
}

/// An INSERT into a sequence table, read.
struct ReadInsert {
    table: TableName,
    column: String,
    /// The column list lacks the id column: added before its `)`, here.
    add_column_at: Option<usize>,
    rows: Vec<RowId>,
    /// Byte offsets of the statement's `?`s.
    placeholders: Vec<usize>,
}

impl ReadInsert {
    fn column_text(&self) -> String {
        format!(", `{}`", self.column.replace('`', "``"))
    }

    fn refusal(&self, what: &str) -> String {
        format!(
            "{what} into {}, whose AUTO_INCREMENT column {} hscale fills from a sequence",
            self.table, self.column
        )
    }
}

fn read_insert(
    sql: &str,
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<Result<ReadInsert, String>> {
    if !dict.has_sequences() {
        return None;
    }
    let trimmed = sql.trim_start();
    // Cheap for the usual statement; one with a leading comment is read.
    if trimmed.starts_with(|c: char| c.is_ascii_alphabetic()) {
        let first = trimmed.get(..7).unwrap_or(trimmed).to_ascii_uppercase();
        if !first.starts_with("INSERT") && !first.starts_with("REPLACE") {
            return None;
        }
    }
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let first = tokens.first()?;
    if !first.is_word(sql, "INSERT") && !first.is_word(sql, "REPLACE") {
        return None;
    }
    let refs = table_refs(sql, &tokens, session_db, dict);
    let r = refs.first()?;
    let table = dict.table(&r.name)?;
    let column = table.auto_column.as_deref()?;
    let mut out = ReadInsert {
        table: table.name.clone(),
        column: column.to_string(),
        add_column_at: None,
        rows: Vec::new(),
        placeholders: tokens
            .iter()
            .filter(|t| t.kind == TokenKind::Placeholder)
            .map(|t| t.start as usize)
            .collect(),
    };
    let refuse = |what: &str| Some(Err(out.refusal(what)));
    if refs.len() > 1 {
        return refuse("INSERT ... SELECT or a statement naming other tables");
    }
    let mut i = r.end;
    if tokens.get(i).is_some_and(|t| t.is_word(sql, "PARTITION")) {
        return refuse("INSERT ... PARTITION");
    }
    if !tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
        return refuse(
            "an INSERT without a column list (INSERT ... SET, or VALUES for every column)",
        );
    }
    let open = i;
    let close = open + tokens[open..].iter().position(|t| t.is_punct(sql, ")"))?;
    let columns: Vec<&[Token]> = tokens[open + 1..close]
        .split(|t| t.is_punct(sql, ","))
        .collect();
    if close == open + 1 {
        return refuse("an INSERT with an empty column list");
    }
    let pos = columns.iter().position(|c| {
        c.last()
            .is_some_and(|t| unquote(t, sql).eq_ignore_ascii_case(column))
    });
    i = close + 1;
    if !tokens
        .get(i)
        .is_some_and(|t| t.is_word(sql, "VALUES") || t.is_word(sql, "VALUE"))
    {
        return refuse("INSERT ... SELECT");
    }
    i += 1;
    let add_column_at = pos.is_none().then(|| tokens[close].start as usize);
    let mut rows = Vec::new();
    loop {
        if !tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
            return refuse("an unreadable VALUES row");
        }
        let Some((values, end)) = row_values(sql, &tokens, i) else {
            return refuse("an unreadable VALUES row");
        };
        if values.len() != columns.len() {
            return refuse("a VALUES row with a different number of values than columns");
        }
        let row = match pos {
            None => RowId::Missing {
                at: tokens[end].start as usize,
            },
            Some(p) => match given_id(sql, &tokens, values[p], &out.placeholders) {
                Ok(id) => id,
                Err(what) => return refuse(what),
            },
        };
        rows.push(row);
        i = end + 1;
        if tokens.get(i).is_some_and(|t| t.is_punct(sql, ",")) {
            i += 1;
            continue;
        }
        break;
    }
    if tokens[i..].iter().any(|t| t.is_word(sql, "SELECT")) {
        return refuse("a subquery in INSERT");
    }
    if let Some(semi) = tokens[i..].iter().position(|t| t.is_punct(sql, ";")) {
        if i + semi + 1 < tokens.len() {
            return refuse("an INSERT followed by more statements in one query");
        }
    }
    out.rows = rows;
    out.add_column_at = add_column_at;
    Some(Ok(out))
}

/// The values of the VALUES row whose `(` is token `i`, as token ranges
/// split at the commas of its depth, and the token of its `)`.
fn row_values(sql: &str, tokens: &[Token], i: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    let mut depth = 0;
    let mut start = i + 1;
    let mut values: Vec<(usize, usize)> = Vec::new();
    for (k, t) in tokens[i..].iter().enumerate() {
        let k = i + k;
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
            if depth == 0 {
                values.push((start, k));
                return Some((values, k));
            }
        } else if depth == 1 && t.is_punct(sql, ",") {
            values.push((start, k));
            start = k + 1;
        }
    }
    None
}

/// What a row gives its AUTO_INCREMENT column, the value in tokens
/// `a..b` (`placeholders`: the statement's parameters' offsets). `Err`:
/// what is refused.
fn given_id(
    sql: &str,
    tokens: &[Token],
    (a, b): (usize, usize),
    placeholders: &[usize],
) -> Result<RowId, &'static str> {
    let v = &tokens[a..b];
    let range = || {
        (
            tokens[a].start as usize,
            tokens[b.max(a + 1) - 1].end as usize,
        )
    };
    let int = |n: i128| {
        if n == 0 {
            RowId::Zero { range: range() }
        } else {
            RowId::Explicit(n)
        }
    };
    Ok(match v {
        [t] if t.is_word(sql, "DEFAULT") => RowId::Generate { range: range() },
        [t] if t.kind == TokenKind::Placeholder => {
            let n = placeholders.partition_point(|p| *p < t.start as usize);
            RowId::Param(n as u16)
        }
        _ => match literal(sql, v) {
            Some(KeyValue::Null) => RowId::Generate { range: range() },
            Some(KeyValue::Int(n)) => int(n),
            Some(KeyValue::Str(s)) => match crate::key::trim_server_space(&s).parse::<i128>() {
                Ok(n) => int(n),
                Err(_) => return Err("an AUTO_INCREMENT value that is not an integer"),
            },
            _ => return Err("an AUTO_INCREMENT value given by an expression or parameter"),
        },
    })
}

fn note_explicit(max: &mut Option<u64>, n: i128) {
    if n > 0 {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        *max = Some(max.map_or(n, |m| m.max(n)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashingFunction;

    fn dict(key: &str) -> Dictionary {
        let mut d = Dictionary::default();
        let name = TableName::new("db", "t");
        d.setup_table(
            name.clone(),
            key,
            "t_default",
            crate::BackendId::MAIN,
            HashingFunction::Mod(4),
        )
        .unwrap();
        d.set_key_type(&name, "int(11)");
        d.set_auto_column(&name, Some("id"), 1);
        d
    }

    fn fill(sql: &str, zero_kept: bool) -> Result<(String, AutoInsert), String> {
        let a = auto_insert(sql, Some("db"), &dict("k"), zero_kept).unwrap()?;
        let ids: Vec<u64> = (0..a.needed as u64).map(|i| 100 + i).collect();
        Ok((a.fill(sql, &ids), a))
    }

    #[test]
    fn missing_column_is_added() {
        let (s, a) = fill("INSERT INTO t (k, v) VALUES (1, 'a'), (2, 'b')", false).unwrap();
        assert_eq!(
            s,
            "INSERT INTO t (k, v, `id`) VALUES (1, 'a', 100), (2, 'b', 101)"
        );
        assert_eq!(a.needed, 2);
        assert_eq!(a.max_explicit, None);
    }

    #[test]
    fn null_default_and_zero_generate() {
        let (s, a) = fill(
            "insert into t (id, k) values (NULL, 1), (DEFAULT, 2), (0, 3), (7, 4), ('0', 5)",
            false,
        )
        .unwrap();
        assert_eq!(
            s,
            "insert into t (id, k) values (100, 1), (101, 2), (102, 3), (7, 4), (103, 5)"
        );
        assert_eq!(a.max_explicit, Some(7));
    }

    #[test]
    fn zero_kept_under_no_auto_value_on_zero() {
        let (s, a) = fill("REPLACE INTO t (id, k) VALUES (0, 1), (NULL, 2)", true).unwrap();
        assert_eq!(s, "REPLACE INTO t (id, k) VALUES (0, 1), (100, 2)");
        assert_eq!(a.needed, 1);
    }

    #[test]
    fn key_may_be_the_id() {
        let d = dict("id");
        let sql = "INSERT INTO t (v) VALUES ('x')";
        let a = auto_insert(sql, Some("db"), &d, false).unwrap().unwrap();
        assert_eq!(a.fill(sql, &[5]), "INSERT INTO t (v, `id`) VALUES ('x', 5)");
    }

    #[test]
    fn refused_constructs_are_named() {
        for (sql, what) in [
            (
                "INSERT INTO t (k, v) SELECT k, v FROM u",
                "INSERT ... SELECT",
            ),
            ("INSERT INTO t SET k = 1", "without a column list"),
            ("INSERT INTO t (id, k) VALUES (1 + 1, 2)", "expression"),
            ("INSERT INTO t (id, k) VALUES (?, 2)", "parameter"),
        ] {
            let e = fill(sql, false).unwrap_err();
            assert!(e.contains(what), "{sql}: {e}");
        }
    }

    #[test]
    fn prepared_ids_become_parameters() {
        use IdParam::*;
        let d = dict("k");
        let p = |sql: &str| prepared_ids(sql, Some("db"), &d).unwrap().unwrap();
        let a = p("INSERT INTO t (k, v) VALUES (?, ?), (?, 'x')");
        assert_eq!(
            a.sql,
            "INSERT INTO t (k, v, `id`) VALUES (?, ?, ?), (?, 'x', ?)"
        );
        assert_eq!(a.params, [Client(0), Client(1), New, Client(2), New]);
        let a = p(
            "INSERT INTO t (id, k) VALUES (?, ?), (NULL, ?), (0, 1), (9, ?) \
             ON DUPLICATE KEY UPDATE v = ?",
        );
        assert_eq!(
            a.sql,
            "INSERT INTO t (id, k) VALUES (?, ?), (?, ?), (?, 1), (9, ?) \
             ON DUPLICATE KEY UPDATE v = ?"
        );
        assert_eq!(
            a.params,
            [
                ClientId(0),
                Client(1),
                New,
                Client(2),
                Zero,
                Client(3),
                Client(4)
            ]
        );
        assert_eq!(a.max_explicit, Some(9));
        // The key may be the id itself.
        let d = dict("id");
        let a = prepared_ids("INSERT INTO t (v) VALUES (?)", Some("db"), &d)
            .unwrap()
            .unwrap();
        assert_eq!(a.sql, "INSERT INTO t (v, `id`) VALUES (?, ?)");
        assert_eq!(a.params, [Client(0), New]);
        let e = prepared_ids("INSERT INTO t (id, k) VALUES (? + 1, ?)", Some("db"), &d)
            .unwrap()
            .unwrap_err();
        assert!(e.contains("expression"), "{e}");
    }

    #[test]
    fn other_statements_and_tables_are_left_alone() {
        let d = dict("k");
        assert!(auto_insert("SELECT 1", Some("db"), &d, false).is_none());
        assert!(auto_insert("INSERT INTO u (a) VALUES (1)", Some("db"), &d, false).is_none());
        assert!(auto_insert(
            "INSERT INTO t (k) VALUES (1)",
            Some("db"),
            &Dictionary::default(),
            false
        )
        .is_none());
    }
}
