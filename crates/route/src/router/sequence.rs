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

use hscale_sql::Token;

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
    let refuse = |what: &str| {
        Some(Err(format!(
            "{what} into {}, whose AUTO_INCREMENT column {column} hscale fills from a sequence",
            table.name
        )))
    };
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
    let mut out = AutoInsert {
        table: table.name.clone(),
        needed: 0,
        max_explicit: None,
        edits: Vec::new(),
    };
    if pos.is_none() {
        let at = tokens[close].start as usize;
        out.edits.push((
            at,
            at,
            Fill::Text(format!(", `{}`", column.replace('`', "``"))),
        ));
    }
    loop {
        if !tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
            return refuse("an unreadable VALUES row");
        }
        // The row's values, split at commas of depth 1.
        let mut depth = 0;
        let mut start = i + 1;
        let mut values: Vec<(usize, usize)> = Vec::new();
        let mut end = None;
        for (k, t) in tokens[i..].iter().enumerate() {
            let k = i + k;
            if t.is_punct(sql, "(") {
                depth += 1;
            } else if t.is_punct(sql, ")") {
                depth -= 1;
                if depth == 0 {
                    values.push((start, k));
                    end = Some(k);
                    break;
                }
            } else if depth == 1 && t.is_punct(sql, ",") {
                values.push((start, k));
                start = k + 1;
            }
        }
        let Some(end) = end else {
            return refuse("an unreadable VALUES row");
        };
        if values.len() != columns.len() {
            return refuse("a VALUES row with a different number of values than columns");
        }
        match pos {
            None => {
                let at = tokens[end].start as usize;
                out.edits.push((at, at, Fill::CommaId));
                out.needed += 1;
            }
            Some(p) => {
                let (a, b) = values[p];
                let v = &tokens[a..b];
                let generate = match v {
                    [t] if t.is_word(sql, "DEFAULT") => true,
                    _ => match literal(sql, v) {
                        Some(KeyValue::Null) => true,
                        Some(KeyValue::Int(n)) => {
                            n == 0 && !is_zero_kept || {
                                note_explicit(&mut out, n);
                                false
                            }
                        }
                        Some(KeyValue::Str(s)) => match s.trim().parse::<i128>() {
                            Ok(n) => {
                                n == 0 && !is_zero_kept || {
                                    note_explicit(&mut out, n);
                                    false
                                }
                            }
                            Err(_) => {
                                return refuse("an AUTO_INCREMENT value that is not an integer")
                            }
                        },
                        _ => {
                            return refuse(
                                "an AUTO_INCREMENT value given by an expression or parameter",
                            )
                        }
                    },
                };
                if generate {
                    let range = (tokens[a].start as usize, tokens[b - 1].end as usize);
                    out.edits.push((range.0, range.1, Fill::Id));
                    out.needed += 1;
                }
            }
        }
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
    Some(Ok(out))
}

fn note_explicit(out: &mut AutoInsert, n: i128) {
    if n > 0 {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        out.max_explicit = Some(out.max_explicit.map_or(n, |m| m.max(n)));
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
