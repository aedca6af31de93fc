//! Small readers over lexed tokens shared by the planners: names, string
//! and number literals, the WHERE clause and its top-level conjuncts, and
//! the statement's shape (a plain read, `is_plain_read`; its WITH clause's
//! names, `cte_names`; the keywords `plan_statement` dispatches on,
//! `Keywords`; whether a read over several partitions needs a merge,
//! `needs_merge`).

use hscale_sql::{Token, TokenKind};

use super::merge;
use crate::KeyValue;

pub(super) fn unquote(t: &Token, sql: &str) -> String {
    let s = t.text(sql);
    if t.kind == TokenKind::QuotedIdent {
        s[1..s.len() - 1].replace("``", "`")
    } else {
        s.to_string()
    }
}

pub(super) fn is_name(t: &Token) -> bool {
    matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent)
}

/// The tokens of the WHERE clause, up to the next clause.
pub(super) fn where_clause<'t>(sql: &str, tokens: &'t [Token]) -> Option<&'t [Token]> {
    const ENDS: &[&str] = &[
        "GROUP",
        "ORDER",
        "LIMIT",
        "HAVING",
        "FOR",
        "LOCK",
        "INTO",
        "WINDOW",
        "PROCEDURE",
        "RETURNING",
    ];
    let w = tokens.iter().position(|t| t.is_word(sql, "WHERE"))?;
    let end = tokens[w + 1..]
        .iter()
        .position(|t| is_any_word(t, sql, ENDS))
        .map_or(tokens.len(), |p| w + 1 + p);
    Some(&tokens[w + 1..end])
}

/// Whether `t` is a name (bare or quoted) equal to `name` ignoring ASCII
/// case, compared without allocating for bare names.
pub(super) fn is_named(t: &Token, sql: &str, name: &str) -> bool {
    match t.kind {
        TokenKind::Word => t.text(sql).eq_ignore_ascii_case(name),
        TokenKind::QuotedIdent => unquote(t, sql).eq_ignore_ascii_case(name),
        _ => false,
    }
}

/// Whether `t` is one of the keywords `words` (in any case).
pub(super) fn is_any_word(t: &Token, sql: &str, words: &[&str]) -> bool {
    t.kind == TokenKind::Word && {
        let text = t.text(sql);
        words.iter().any(|w| text.eq_ignore_ascii_case(w))
    }
}

/// A condition split at its top-level ANDs; `None` if it has a top-level
/// OR / XOR (then no conjunct alone limits the rows).
pub(super) fn conjuncts<'t>(sql: &str, cond: &'t [Token]) -> Option<Vec<&'t [Token]>> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, t) in cond.iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 {
            if t.is_word(sql, "OR") || t.is_word(sql, "XOR") || t.is_punct(sql, "||") {
                return None;
            }
            if t.is_word(sql, "AND") || t.is_punct(sql, "&&") {
                out.push(&cond[start..i]);
                start = i + 1;
            }
        }
    }
    out.push(&cond[start..]);
    Some(out)
}

pub(super) fn literal(sql: &str, t: &[Token]) -> Option<KeyValue> {
    match t {
        [l] if l.kind == TokenKind::Str => Some(KeyValue::Str(unescape(l.text(sql)))),
        [l] if l.kind == TokenKind::Number => number(l.text(sql), false),
        [m, l] if m.is_punct(sql, "-") && l.kind == TokenKind::Number => number(l.text(sql), true),
        [l] if l.is_word(sql, "NULL") => Some(KeyValue::Null),
        _ => None,
    }
}

/// Whether `t` is one constant the server reads by itself: a string or
/// number token (`1.5`, `1e1`, `0x1F`), a signed number, or a string with
/// an introducer or a prefix (`_latin1'..'`, `X'..'`, `B'..'`, `N'..'`).
pub(super) fn is_constant(sql: &str, t: &[Token]) -> bool {
    match t {
        [l] => matches!(l.kind, TokenKind::Str | TokenKind::Number),
        [s, n] if s.is_punct(sql, "-") || s.is_punct(sql, "+") => n.kind == TokenKind::Number,
        [w, l] => {
            let w_text = w.text(sql);
            w.kind == TokenKind::Word
                && l.kind == TokenKind::Str
                && (w_text.starts_with('_')
                    || ["X", "B", "N"]
                        .iter()
                        .any(|p| w_text.eq_ignore_ascii_case(p)))
        }
        _ => false,
    }
}

pub(super) fn number(text: &str, negative: bool) -> Option<KeyValue> {
    // Only plain integers; decimals, exponents and hex are not pruned.
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i128 = text.parse().ok()?;
    Some(KeyValue::Int(if negative { -v } else { v }))
}

/// The text of a quoted string literal.
pub(super) fn unescape(q: &str) -> String {
    let quote = q.chars().next().unwrap_or('\'');
    let inner = &q[1..q.len().saturating_sub(1).max(1)];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('0') => out.push('\0'),
                Some('Z') => out.push('\x1a'),
                Some('b') => out.push('\x08'),
                Some(other) => out.push(other),
                None => {}
            }
        } else if c == quote && chars.peek() == Some(&quote) {
            chars.next();
            out.push(quote);
        } else {
            out.push(c);
        }
    }
    out
}

/// A SELECT that only reads: no INTO, locking clause or several
/// statements. A SELECT with a WITH clause is one too (its common table
/// expressions are read like derived tables).
pub(super) fn is_plain_read(sql: &str, tokens: &[Token]) -> bool {
    tokens
        .iter()
        .find(|t| !t.is_punct(sql, "("))
        .is_some_and(|t| t.is_word(sql, "SELECT") || with_select(sql, tokens))
        && !tokens.iter().enumerate().any(|(i, t)| {
            t.kind == TokenKind::Semicolon
                || t.is_word(sql, "INTO")
                || is_locking_for(sql, tokens, i)
                || t.is_word(sql, "LOCK")
                || t.is_punct(sql, ":=")
        })
}

/// Whether token `i` is a FOR that may lock (`FOR UPDATE`, `FOR SHARE`;
/// JSON_TABLE's `FOR ORDINALITY` locks nothing).
pub(super) fn is_locking_for(sql: &str, tokens: &[Token], i: usize) -> bool {
    tokens[i].is_word(sql, "FOR")
        && !tokens
            .get(i + 1)
            .is_some_and(|n| n.is_word(sql, "ORDINALITY"))
}

/// Whether the statement is `WITH [RECURSIVE] cte, ... SELECT ...`: the
/// statement after its common table expressions is a SELECT (not an
/// UPDATE or DELETE).
pub(super) fn with_select(sql: &str, tokens: &[Token]) -> bool {
    let Some(first) = tokens.first() else {
        return false;
    };
    if !first.is_word(sql, "WITH") {
        return false;
    }
    let mut depth = 0i32;
    for t in &tokens[1..] {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 && t.kind == TokenKind::Word {
            let w = t.text(sql);
            if ["SELECT", "UPDATE", "DELETE", "INSERT", "REPLACE"]
                .iter()
                .any(|k| w.eq_ignore_ascii_case(k))
            {
                return w.eq_ignore_ascii_case("SELECT");
            }
        }
    }
    false
}

/// The token after the parenthesized group that opens at or after `i`
/// (the end of the tokens if it never closes).
pub(super) fn skip_parens(sql: &str, tokens: &[Token], mut i: usize) -> usize {
    let mut depth = 0i32;
    while let Some(t) = tokens.get(i) {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
        i += 1;
    }
    i
}

/// The names of a WITH clause's common table expressions.
pub(super) fn cte_names(sql: &str, tokens: &[Token]) -> Vec<String> {
    let mut out = Vec::new();
    if !tokens.first().is_some_and(|t| t.is_word(sql, "WITH")) {
        return out;
    }
    let mut i = 1 + usize::from(tokens.get(1).is_some_and(|t| t.is_word(sql, "RECURSIVE")));
    // name [(columns)] AS (body) [, ...]
    while let Some(name) = tokens.get(i).filter(|t| is_name(t)) {
        out.push(unquote(name, sql));
        i += 1;
        if tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
            i = skip_parens(sql, tokens, i);
        }
        if !tokens.get(i).is_some_and(|t| t.is_word(sql, "AS")) {
            break;
        }
        i = skip_parens(sql, tokens, i + 1);
        if !tokens.get(i).is_some_and(|t| t.is_punct(sql, ",")) {
            break;
        }
        i += 1;
    }
    out
}

/// Whether every UNION of `tokens` is inside parentheses.
pub(super) fn unions_are_nested(sql: &str, tokens: &[Token]) -> bool {
    let mut depth = 0i32;
    for t in tokens {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if depth <= 0 && t.is_word(sql, "UNION") {
            return false;
        }
    }
    true
}

/// Whether a SELECT over several partitions needs their rows merged
/// (ordering, limits, grouping, aggregates) rather than concatenated.
pub(super) fn needs_merge(sql: &str, tokens: &[Token]) -> bool {
    const WORDS: &[&str] = &[
        "ORDER",
        "GROUP",
        "LIMIT",
        "HAVING",
        "DISTINCT",
        "DISTINCTROW",
        "SQL_CALC_FOUND_ROWS",
        "INTO",
        "OFFSET",
        "WINDOW",
        "OVER",
        "FETCH",
    ];
    merge::calls_aggregate(sql, tokens) || tokens.iter().any(|t| is_any_word(t, sql, WORDS))
}

/// The keywords `plan_statement` looks for, found in one pass.
pub(super) struct Keywords {
    pub(super) has_join: bool,
    pub(super) has_union: bool,
    pub(super) has_semicolon: bool,
    /// How many SELECTs (the statement's and its subqueries').
    pub(super) selects: usize,
}

impl Keywords {
    pub(super) fn of(sql: &str, tokens: &[Token]) -> Keywords {
        let mut k = Keywords {
            has_join: false,
            has_union: false,
            has_semicolon: false,
            selects: 0,
        };
        for t in tokens {
            if t.kind == TokenKind::Semicolon {
                k.has_semicolon = true;
            } else if t.kind == TokenKind::Word {
                let w = t.text(sql);
                k.has_join |=
                    w.eq_ignore_ascii_case("JOIN") || w.eq_ignore_ascii_case("STRAIGHT_JOIN");
                k.has_union |= w.eq_ignore_ascii_case("UNION");
                k.selects += usize::from(w.eq_ignore_ascii_case("SELECT"));
            }
        }
        k
    }
}
