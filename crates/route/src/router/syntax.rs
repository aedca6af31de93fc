//! Small readers over lexed tokens shared by the planners: names, string
//! and number literals, the WHERE clause and its top-level conjuncts.

use hscale_sql::{Token, TokenKind};

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
