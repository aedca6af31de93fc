//! The tables a read names ([`tables_read`]), for the result cache
//! (`hscale/src/exec/cache.rs`): an answer is kept only when every table
//! the statement reads is cached, and an exact one is checked against the
//! version rows of exactly those tables. So the list must never miss a
//! table: whatever this reader is unsure of (a parenthesised join, a
//! table function, LATERAL, a name in double quotes) makes it answer
//! `None`, and the statement is not cached.
//!
//! A table is named where a table factor starts: after FROM, after a
//! comma or a JOIN in the FROM clause at the FROM's own depth, and after
//! the TABLE of `TABLE t`. Subqueries (in the select list, WHERE, ON or a
//! derived table) have their own FROM, read the same way. A CTE's name
//! reads as a table that is not cached (so nothing is cached): never a
//! missed table.

use crate::lexer::{Token, TokenKind};

/// A table named by a read: `db` when qualified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRead {
    pub db: Option<String>,
    pub table: String,
}

/// Words that end a FROM clause at its own depth.
const ENDS_FROM: &[&str] = &[
    "WHERE",
    "GROUP",
    "HAVING",
    "ORDER",
    "LIMIT",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "WINDOW",
    "FOR",
    "LOCK",
    "INTO",
    "PROCEDURE",
    "RETURNING",
    "FETCH",
    "OFFSET",
];

/// Words that start a subquery after `(`.
const SUBQUERY: &[&str] = &["SELECT", "WITH", "VALUES", "TABLE"];

fn is_punct(t: &Token, sql: &str, p: &str) -> bool {
    t.kind == TokenKind::Punct && t.text(sql) == p
}

fn name(t: &Token, sql: &str) -> Option<String> {
    match t.kind {
        TokenKind::Word => Some(t.text(sql).to_string()),
        TokenKind::QuotedIdent => {
            let s = t.text(sql);
            let inner = s.strip_prefix('`')?.strip_suffix('`')?;
            Some(inner.replace("``", "`"))
        }
        _ => None,
    }
}

/// The table factor starting at `tokens[i]`: `Some(None)` for a derived
/// table or DUAL (its own FROM is read where it stands), `None` when
/// unsure.
fn factor(sql: &str, tokens: &[Token], i: usize) -> Option<Option<TableRead>> {
    let t = tokens.get(i)?;
    if is_punct(t, sql, "(") {
        let next = tokens.get(i + 1)?;
        return SUBQUERY
            .iter()
            .any(|w| next.is_word(sql, w))
            .then_some(None);
    }
    if t.is_word(sql, "DUAL") {
        return Some(None);
    }
    if t.is_word(sql, "LATERAL") {
        return None;
    }
    let first = name(t, sql)?;
    let dot = tokens.get(i + 1).is_some_and(|n| is_punct(n, sql, "."));
    if dot {
        let second = name(tokens.get(i + 2)?, sql)?;
        if tokens.get(i + 3).is_some_and(|n| is_punct(n, sql, "(")) {
            return None;
        }
        return Some(Some(TableRead {
            db: Some(first),
            table: second,
        }));
    }
    if tokens.get(i + 1).is_some_and(|n| is_punct(n, sql, "(")) {
        // A table function (JSON_TABLE, ...).
        return None;
    }
    Some(Some(TableRead {
        db: None,
        table: first,
    }))
}

/// Every table `tokens` (the lexed `sql`) names as a table factor; `None`
/// when the reader is unsure of one.
pub fn tables_read(sql: &str, tokens: &[Token]) -> Option<Vec<TableRead>> {
    let mut out = Vec::new();
    let push = |f: Option<TableRead>, out: &mut Vec<TableRead>| {
        if let Some(t) = f {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    };
    for (i, t) in tokens.iter().enumerate() {
        if t.is_word(sql, "TABLE") {
            // `TABLE t` (alone or after `(`, UNION, ...); a TABLE word
            // elsewhere in a SELECT is not valid syntax.
            push(factor(sql, tokens, i + 1)?, &mut out);
            continue;
        }
        if !t.is_word(sql, "FROM") {
            continue;
        }
        push(factor(sql, tokens, i + 1)?, &mut out);
        // The rest of this FROM clause, at its depth (from its first
        // factor on: a derived table's parentheses count).
        let mut depth = 0usize;
        let mut j = i + 1;
        while let Some(u) = tokens.get(j) {
            if is_punct(u, sql, "(") {
                depth += 1;
            } else if is_punct(u, sql, ")") {
                if depth == 0 {
                    break;
                }
                depth -= 1;
            } else if u.kind == TokenKind::Semicolon {
                break;
            } else if depth == 0 {
                if ENDS_FROM.iter().any(|w| u.is_word(sql, w)) {
                    break;
                }
                if is_punct(u, sql, ",")
                    || u.is_word(sql, "JOIN")
                    || u.is_word(sql, "STRAIGHT_JOIN")
                {
                    push(factor(sql, tokens, j + 1)?, &mut out);
                }
            }
            j += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sql: &str) -> Option<Vec<String>> {
        let tokens = crate::lexer::tokenize(sql).unwrap();
        tables_read(sql, &tokens).map(|v| {
            v.into_iter()
                .map(|t| match t.db {
                    Some(db) => format!("{db}.{}", t.table),
                    None => t.table,
                })
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect()
        })
    }

    fn names(v: &[&str]) -> Option<Vec<String>> {
        let set: std::collections::BTreeSet<String> = v.iter().map(|s| s.to_string()).collect();
        Some(set.into_iter().collect())
    }

    #[test]
    fn factors() {
        assert_eq!(read("SELECT 1"), names(&[]));
        assert_eq!(read("SELECT * FROM t WHERE id = 1"), names(&["t"]));
        assert_eq!(read("SELECT * FROM `d`.`t``x` AS a"), names(&["d.t`x"]));
        assert_eq!(
            read("SELECT * FROM a, b c, d.e WHERE 1"),
            names(&["a", "b", "d.e"])
        );
        assert_eq!(
            read("SELECT * FROM a JOIN b ON a.x = b.x LEFT JOIN c USING (y), d"),
            names(&["a", "b", "c", "d"])
        );
        assert_eq!(
            read("SELECT (SELECT MAX(x) FROM u), f(1, 2) FROM t WHERE y IN (SELECT y FROM v)"),
            names(&["u", "t", "v"])
        );
        assert_eq!(
            read("SELECT * FROM (SELECT * FROM a) x, b"),
            names(&["a", "b"])
        );
        assert_eq!(
            read("SELECT * FROM a UNION SELECT * FROM b"),
            names(&["a", "b"])
        );
        assert_eq!(read("TABLE t"), names(&["t"]));
        assert_eq!(read("SELECT 1 FROM DUAL"), names(&[]));
        assert_eq!(
            read("WITH c AS (SELECT * FROM t) SELECT * FROM c"),
            names(&["t", "c"])
        );
        assert_eq!(
            read("SELECT * FROM t PARTITION (p0) USE INDEX (i), u"),
            names(&["t", "u"])
        );
    }

    #[test]
    fn unsure() {
        assert_eq!(read("SELECT * FROM (a JOIN b)"), None);
        assert_eq!(read("SELECT * FROM a JOIN (b JOIN c ON 1) ON 1"), None);
        assert_eq!(read("SELECT * FROM ((SELECT 1 FROM a)) x"), None);
        assert_eq!(
            read("SELECT * FROM JSON_TABLE('[]', '$' COLUMNS (x INT PATH '$')) j"),
            None
        );
        assert_eq!(read("SELECT * FROM a, LATERAL (SELECT 1) x"), None);
        assert_eq!(read("SELECT * FROM \"t\""), None);
    }
}
