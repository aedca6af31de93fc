//! Whether an INSERT's OK packet reports an id the server generated.
//!
//! MariaDB's OK packet after an INSERT or REPLACE carries, in this order
//! (`sql_insert.cc`, `mysql_insert`): the first AUTO_INCREMENT value the
//! statement generated; else the argument of a `LAST_INSERT_ID(expr)` it
//! called; else, when the table has an AUTO_INCREMENT column and rows
//! were written, the last row's value of that column, which the statement
//! gave explicitly. Only the first two change the session's
//! LAST_INSERT_ID(): after `INSERT INTO t (id) VALUES (100)` the OK says
//! 100 and LAST_INSERT_ID() keeps its previous value.
//!
//! hscale keeps the session's LAST_INSERT_ID() itself (the statement's
//! next one may run on another pooled connection), so it must tell the
//! third case from the first. An explicit value is one the statement
//! supplied: when the OK's id cannot be one of the values the statement
//! holds (its integer literals, the strings that read as that integer,
//! the parameters of an execution), the server generated it. Otherwise
//! (the id is among them, or the statement computes values: a SELECT,
//! arithmetic, variables) the connection's LAST_INSERT_ID() is read back
//! (`Exec::forward_with`) and compared with what the connection held
//! before the statement.

use bytes::Bytes;
use hscale_sql::{Token, TokenKind};
use hscale_wire::stmt::Execute;

use super::interpolate::{literals, Literal};

/// What an INSERT or REPLACE supplies for its rows' values.
#[derive(Debug, Clone, Copy, Default)]
pub enum Supplied<'a> {
    /// Not an INSERT or REPLACE: an OK's insert id is the server's
    /// LAST_INSERT_ID() (from `LAST_INSERT_ID(expr)`) or 0.
    #[default]
    Nothing,
    /// A text statement and its tokens (the session's one analysis;
    /// empty when it did not lex).
    Text { sql: &'a [u8], tokens: &'a [Token] },
    /// A prepared statement's text, its tokens (lexed at its PREPARE) and
    /// one execution's parameters.
    Prepared {
        sql: &'a [u8],
        tokens: &'a [Token],
        exec: &'a Execute<'a>,
        types: &'a [u8],
        count: usize,
        long_data: &'a [(u16, Bytes)],
    },
}

impl Supplied<'_> {
    /// Whether `id` may be a value the statement gave an AUTO_INCREMENT
    /// column itself (then the OK's id is not LAST_INSERT_ID()).
    pub fn may_hold(&self, id: u64) -> bool {
        match *self {
            Supplied::Nothing => false,
            Supplied::Text { sql, tokens } => text_may_hold(sql, tokens, id),
            Supplied::Prepared {
                sql,
                tokens,
                exec,
                types,
                count,
                long_data,
            } => {
                text_may_hold(sql, tokens, id)
                    || match literals(exec, types, count, long_data) {
                        Ok(values) => values.iter().any(|v| match v {
                            Literal::Sql(s) => reads_as(s.as_bytes(), id),
                            Literal::Str(b) => reads_as(b, id),
                        }),
                        Err(_) => true,
                    }
            }
        }
    }

    /// An `INSERT [INTO] t (columns) VALUES ...`'s table and rows.
    pub fn insert_values(&self) -> Option<InsertValues> {
        let (sql, tokens) = self.text()?;
        InsertValues::read(sql, tokens)
    }

    fn text(&self) -> Option<(&str, &[Token])> {
        let (sql, tokens) = match *self {
            Supplied::Nothing => return None,
            Supplied::Text { sql, tokens } | Supplied::Prepared { sql, tokens, .. } => {
                (sql, tokens)
            }
        };
        Some((std::str::from_utf8(sql).ok()?, tokens))
    }
}

/// A row's value for one column, as far as ids go.
enum Field {
    /// A literal of digits, not 0.
    Digits(u64),
    /// The n-th parameter (from 0), alone.
    Param(usize),
    Other,
}

/// `INSERT|REPLACE [modifiers] [INTO] [db.]t (columns) VALUES (...), ...`.
pub struct InsertValues {
    /// The database and table as the client wrote them.
    pub db: Option<String>,
    pub table: String,
    columns: Vec<String>,
    rows: Vec<Vec<Field>>,
}

impl InsertValues {
    /// When every row gives `column` a positive integer (a literal of
    /// digits or a parameter of `supplied` bound to one), nothing is
    /// generated for it: the last row's value, which the server's OK then
    /// reports. `None` for anything else (NULL, 0, DEFAULT, an
    /// expression, a string, a column the statement does not list).
    pub fn explicit_value(&self, supplied: &Supplied<'_>, column: &str) -> Option<u64> {
        let at = self
            .columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(column))?;
        let params = match *supplied {
            Supplied::Prepared {
                exec,
                types,
                count,
                long_data,
                ..
            } => Some(literals(exec, types, count, long_data).ok()?),
            _ => None,
        };
        let mut last = None;
        for row in &self.rows {
            let v = match row.get(at)? {
                Field::Digits(v) => *v,
                Field::Param(n) => match params.as_ref()?.get(*n)? {
                    Literal::Sql(s) => positive(s)?,
                    Literal::Str(_) => return None,
                },
                Field::Other => return None,
            };
            last = Some(v);
        }
        last
    }

    fn read(sql: &str, tokens: &[Token]) -> Option<InsertValues> {
        let word = |i: usize, w: &str| tokens.get(i).is_some_and(|t| t.is_word(sql, w));
        let punct = |i: usize, p: &str| tokens.get(i).is_some_and(|t| t.is_punct(sql, p));
        let name = |i: usize| {
            let t = tokens.get(i)?;
            let text = t.text(sql);
            match t.kind {
                TokenKind::Word => Some(text.to_owned()),
                TokenKind::QuotedIdent => {
                    Some(text.get(1..text.len().checked_sub(1)?)?.replace("``", "`"))
                }
                _ => None,
            }
        };
        if !(word(0, "INSERT") || word(0, "REPLACE")) {
            return None;
        }
        let mut i = 1;
        while ["LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE"]
            .iter()
            .any(|w| word(i, w))
        {
            i += 1;
        }
        if word(i, "INTO") {
            i += 1;
        }
        let mut db = None;
        let mut table = name(i)?;
        i += 1;
        if punct(i, ".") {
            db = Some(table);
            table = name(i + 1)?;
            i += 2;
        }
        if !punct(i, "(") {
            return None;
        }
        i += 1;
        let mut columns = Vec::new();
        loop {
            columns.push(name(i)?);
            i += 1;
            if punct(i, ")") {
                break;
            }
            if !punct(i, ",") {
                return None;
            }
            i += 1;
        }
        i += 1;
        if !(word(i, "VALUES") || word(i, "VALUE")) {
            return None;
        }
        i += 1;
        // Placeholders before token `i`, for the parameters' ordinals.
        let mut params = tokens[..i]
            .iter()
            .filter(|t| t.kind == TokenKind::Placeholder)
            .count();
        let mut rows = Vec::new();
        while punct(i, "(") {
            i += 1;
            let mut row = Vec::with_capacity(columns.len());
            let mut depth = 0usize;
            let mut start = i;
            loop {
                let t = tokens.get(i)?;
                if t.is_punct(sql, "(") {
                    depth += 1;
                } else if t.is_punct(sql, ")") && depth > 0 {
                    depth -= 1;
                } else if depth == 0 && (t.is_punct(sql, ",") || t.is_punct(sql, ")")) {
                    let field = &tokens[start..i];
                    row.push(match field {
                        [t] if t.kind == TokenKind::Number => {
                            positive(t.text(sql)).map_or(Field::Other, Field::Digits)
                        }
                        [t] if t.kind == TokenKind::Placeholder => Field::Param(params),
                        _ => Field::Other,
                    });
                    params += field
                        .iter()
                        .filter(|t| t.kind == TokenKind::Placeholder)
                        .count();
                    start = i + 1;
                    if t.is_punct(sql, ")") {
                        break;
                    }
                }
                i += 1;
            }
            if row.len() != columns.len() {
                return None;
            }
            rows.push(row);
            i += 1;
            if !punct(i, ",") {
                break;
            }
            i += 1;
        }
        (!rows.is_empty()).then_some(InsertValues {
            db,
            table,
            columns,
            rows,
        })
    }
}

/// A literal of digits only, read as a positive integer (stored as given
/// in any integer column, so never a request for a generated id).
fn positive(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u64>().ok().filter(|v| *v != 0)
}

/// The statement's text holds `id` as a literal, or computes values
/// (`tokens`: its tokens; none when it did not lex).
fn text_may_hold(sql: &[u8], tokens: &[Token], id: u64) -> bool {
    let Ok(sql) = std::str::from_utf8(sql) else {
        return true;
    };
    if tokens.is_empty() {
        return true;
    }
    tokens.iter().any(|t| {
        let text = t.text(sql);
        match t.kind {
            TokenKind::Number => reads_as(text.as_bytes(), id),
            TokenKind::Str => {
                let inner = text.get(1..text.len().saturating_sub(1)).unwrap_or("");
                // Hex and bit strings (X'64', B'1100100') read as numbers.
                let is_radix = text.len() > 1
                    && text.as_bytes()[0].is_ascii_alphabetic()
                    && text.as_bytes()[1] == b'\'';
                is_radix || reads_as(inner.as_bytes(), id)
            }
            TokenKind::Placeholder | TokenKind::UserVar | TokenKind::SysVar => true,
            TokenKind::Punct => matches!(
                text,
                "+" | "-" | "*" | "/" | "%" | "<<" | ">>" | "|" | "&" | "^" | "~"
            ),
            TokenKind::Word => ["SELECT", "DIV", "MOD"]
                .iter()
                .any(|w| text.eq_ignore_ascii_case(w)),
            _ => false,
        }
    })
}

/// `text` (a number's or a string's) reads as the integer `id` where the
/// server stores it in an integer column: leading spaces, a sign, digits,
/// a fraction (rounded), an exponent, hexadecimal `0x`.
fn reads_as(text: &[u8], id: u64) -> bool {
    let Ok(s) = std::str::from_utf8(text) else {
        return true;
    };
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_or(true, |v| v == id);
    }
    if let Ok(v) = s.parse::<u64>() {
        return v == id;
    }
    // A string read as a number takes its longest numeric prefix.
    let end = s
        .char_indices()
        .find(|(i, c)| {
            !(c.is_ascii_digit()
                || matches!(c, '.' | 'e' | 'E')
                || (matches!(c, '+' | '-') && (*i == 0 || s[..*i].ends_with(['e', 'E']))))
        })
        .map_or(s.len(), |(i, _)| i);
    match s[..end].parse::<f64>() {
        Ok(v) => v.round() == id as f64,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_computations() {
        let t = |sql: &str, id| {
            let tokens = hscale_sql::tokenize(sql).unwrap();
            Supplied::Text {
                sql: sql.as_bytes(),
                tokens: &tokens,
            }
            .may_hold(id)
        };
        assert!(t("INSERT INTO t (id) VALUES (100)", 100));
        assert!(!t("INSERT INTO t (v) VALUES (1)", 7));
        assert!(t("INSERT INTO t (id, v) VALUES (200, 1), (201, 2)", 201));
        assert!(t("INSERT INTO t (id) VALUES ('300')", 300));
        assert!(t("INSERT INTO t (id) VALUES (3e2)", 300));
        assert!(t("INSERT INTO t (id) VALUES (299.6)", 300));
        assert!(t("INSERT INTO t (id) VALUES (0x12c)", 300));
        assert!(t("INSERT INTO t (id) VALUES (299 + 1)", 300));
        assert!(t("INSERT INTO t (id) SELECT id FROM u", 300));
        assert!(t("INSERT INTO t (id) VALUES (@v)", 300));
        assert!(!t("INSERT INTO t (v, w) VALUES ('a', 'b')", 300));
        assert!(!t("INSERT INTO t (id, v) VALUES (NULL, 5)", 7));
        assert!(!Supplied::Nothing.may_hold(5));
    }

    #[test]
    fn explicit_values_of_a_column() {
        let e = |sql: &str, column| {
            let tokens = hscale_sql::tokenize(sql).unwrap();
            let s = Supplied::Text {
                sql: sql.as_bytes(),
                tokens: &tokens,
            };
            s.insert_values()?.explicit_value(&s, column)
        };
        assert_eq!(
            e("INSERT INTO t (id, v) VALUES (5, 1), (9, 2)", "id"),
            Some(9)
        );
        assert_eq!(
            e("INSERT INTO t (`ID`, v) VALUES (5, f(1, 2))", "id"),
            Some(5)
        );
        assert_eq!(
            e("REPLACE LOW_PRIORITY d.t (v, id) VALUE ('a', 7)", "id"),
            Some(7)
        );
        assert_eq!(
            e("INSERT INTO t (id, v) VALUES (5, 1), (NULL, 2)", "id"),
            None
        );
        assert_eq!(e("INSERT INTO t (id, v) VALUES (0, 1)", "id"), None);
        assert_eq!(e("INSERT INTO t (id, v) VALUES (-5, 1)", "id"), None);
        assert_eq!(e("INSERT INTO t (id, v) VALUES (5.0, 1)", "id"), None);
        assert_eq!(e("INSERT INTO t (id, v) VALUES ('5', 1)", "id"), None);
        assert_eq!(e("INSERT INTO t (id, v) VALUES (DEFAULT, 1)", "id"), None);
        assert_eq!(e("INSERT INTO t (v) VALUES (5)", "id"), None);
        assert_eq!(e("INSERT INTO t (id, v) SELECT 5, 1", "id"), None);
        assert_eq!(e("INSERT INTO t SET id = 5", "id"), None);
        assert_eq!(e("INSERT INTO t (id, v) VALUES (5)", "id"), None);
        assert_eq!(
            e(
                "INSERT INTO t (id, v) VALUES (5, 1) ON DUPLICATE KEY UPDATE v = 2",
                "id"
            ),
            Some(5)
        );
        let tokens = hscale_sql::tokenize("INSERT INTO `d`.`t` (id) VALUES (1)").unwrap();
        let s = Supplied::Text {
            sql: b"INSERT INTO `d`.`t` (id) VALUES (1)",
            tokens: &tokens,
        };
        let v = s.insert_values().unwrap();
        assert_eq!((v.db.as_deref(), v.table.as_str()), (Some("d"), "t"));
    }
}
