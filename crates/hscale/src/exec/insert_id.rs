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
use hscale_sql::lexer::{tokenize, TokenKind};
use hscale_wire::stmt::Execute;

use super::interpolate::{literals, Literal};

/// What an INSERT or REPLACE supplies for its rows' values.
#[derive(Debug, Clone, Copy, Default)]
pub enum Supplied<'a> {
    /// Not an INSERT or REPLACE: an OK's insert id is the server's
    /// LAST_INSERT_ID() (from `LAST_INSERT_ID(expr)`) or 0.
    #[default]
    Nothing,
    /// A text statement.
    Text(&'a [u8]),
    /// A prepared statement's text and one execution's parameters.
    Prepared {
        sql: &'a [u8],
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
            Supplied::Text(sql) => text_may_hold(sql, id),
            Supplied::Prepared {
                sql,
                exec,
                types,
                count,
                long_data,
            } => {
                text_may_hold(sql, id)
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
}

/// The statement's text holds `id` as a literal, or computes values.
fn text_may_hold(sql: &[u8], id: u64) -> bool {
    let Ok(sql) = std::str::from_utf8(sql) else {
        return true;
    };
    let Ok(tokens) = tokenize(sql) else {
        return true;
    };
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
        let t = |sql: &str, id| Supplied::Text(sql.as_bytes()).may_hold(id);
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
}
