//! Statement rewrites made before planning: system variables whose value
//! through the proxy is the proxy's own, not the backend's
//! (`@@max_allowed_packet` is the limit hscale enforces on commands), and
//! `CONNECTION_ID()`, which is hscale's id of the client connection.

use std::fmt::Write;

use crate::lexer::{tokenize, Token, TokenKind};

/// Words that may end a select item.
const ITEM_END: &[&str] = &[
    "FROM", "INTO", "UNION", "WHERE", "LIMIT", "ORDER", "GROUP", "HAVING", "FOR", "LOCK",
];

/// `sql` with every read of `@@[session.|local.|global.]name` replaced by
/// the unsigned integer `value`, in SELECT statements; `None` when the
/// statement reads no such variable. A variable that is a whole select
/// item keeps its column name (`AS` the text as written).
pub fn replace_sysvar(sql: &str, name: &str, value: u64) -> Option<String> {
    replace_sysvar_with(sql, name, &format!("CAST({value} AS UNSIGNED)"))
}

/// `sql` with every read of `@@[session.|local.|global.]name` replaced by
/// the expression `expr` (in parentheses), in SELECT statements, as
/// [`replace_sysvar`] does.
pub fn replace_sysvar_with(sql: &str, name: &str, expr: &str) -> Option<String> {
    if !sql.as_bytes().windows(2).any(|w| w == b"@@") {
        return None;
    }
    let tokens = tokenize(sql).ok()?;
    if !tokens.first()?.is_word(sql, "SELECT") {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 32);
    let mut copied = 0;
    let mut depth = 0i32;
    for (i, t) in tokens.iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        }
        if t.kind != TokenKind::SysVar || !is_variable(t.text(sql), name) {
            continue;
        }
        let is_item = is_whole_item(&tokens, sql, i, i + 1);
        out.push_str(&sql[copied..t.start as usize]);
        out.push_str(expr);
        if depth == 0 && is_item {
            let _ = write!(out, " AS `{}`", t.text(sql).replace('`', "``"));
        }
        copied = t.end as usize;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&sql[copied..]);
    Some(out)
}

/// Statements whose `CONNECTION_ID()` is evaluated now (not stored in a
/// routine or view body).
const RUNS_NOW: &[&str] = &[
    "SELECT", "DO", "SET", "INSERT", "REPLACE", "UPDATE", "DELETE", "WITH",
];

/// `sql` with every call of `CONNECTION_ID()` replaced by the unsigned
/// integer `id` (hscale's id of the client connection, the one KILL takes),
/// in statements that run now; `None` when there is none. A call that is a
/// whole select item keeps its column name.
pub fn replace_connection_id(sql: &str, id: u64) -> Option<String> {
    replace_calls(sql, &[("CONNECTION_ID", format!("CAST({id} AS UNSIGNED)"))])
}

/// `sql` with `ROW_COUNT()` and `FOUND_ROWS()` replaced by what the
/// session's previous statement left (`found_rows`: `None` leaves it to
/// the backend, which holds it after SQL_CALC_FOUND_ROWS), in statements
/// that run now; `None` when there is none.
pub fn replace_last_statement(
    sql: &str,
    row_count: i64,
    found_rows: Option<u64>,
) -> Option<String> {
    // BIGINT as the functions are (a small CAST would be INT).
    let bigint = |n: String| format!("COALESCE({n}, 9223372036854775807)");
    let mut calls = vec![("ROW_COUNT", bigint(row_count.to_string()))];
    if let Some(n) = found_rows {
        calls.push(("FOUND_ROWS", bigint(n.to_string())));
    }
    replace_calls(sql, &calls)
}

/// `sql` with `CURRENT_USER()` (and `CURRENT_USER` without parentheses)
/// replaced by the string `current` and `USER()`, `SESSION_USER()` and
/// `SYSTEM_USER()` by `user`, in statements that run now: through the proxy
/// the account is the proxy user, never the backend account it runs as.
pub fn replace_user_functions(sql: &str, user: &str, current: &str) -> Option<String> {
    let bytes = sql.as_bytes();
    if !bytes.windows(4).any(|w| w.eq_ignore_ascii_case(b"USER")) {
        return None;
    }
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"));
    replace_calls(
        sql,
        &[
            ("CURRENT_USER", quote(current)),
            ("USER", quote(user)),
            ("SESSION_USER", quote(user)),
            ("SYSTEM_USER", quote(user)),
        ],
    )
}

/// Replace every call `NAME()` of the functions in `calls` by its
/// replacement (`CURRENT_USER` also without parentheses), in statements
/// that run now; a call that is a whole select item keeps its column name.
fn replace_calls(sql: &str, calls: &[(&str, String)]) -> Option<String> {
    let bytes = sql.as_bytes();
    let is_named = calls.iter().any(|(name, _)| {
        bytes
            .windows(name.len())
            .any(|w| w.eq_ignore_ascii_case(name.as_bytes()))
    });
    if !is_named {
        return None;
    }
    let tokens = tokenize(sql).ok()?;
    let first = tokens.first()?;
    if !RUNS_NOW.iter().any(|w| first.is_word(sql, w)) {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 32);
    let mut copied = 0;
    let mut depth = 0i32;
    let mut i = 0;
    // Select items of a SELECT with a call inside an expression keep
    // their label too: (end of the item's text, the label).
    let items = if first.is_word(sql, "SELECT") {
        select_items(&tokens, sql)
    } else {
        Vec::new()
    };
    let mut labels: Vec<(usize, String)> = Vec::new();
    while i < tokens.len() {
        let t = tokens[i];
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        }
        let is_qualified = i > 0 && tokens[i - 1].is_punct(sql, ".");
        let has_parens = tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, "("))
            && tokens.get(i + 2).is_some_and(|n| n.is_punct(sql, ")"));
        let call = calls.iter().find(|(name, _)| t.is_word(sql, name));
        let len = match call {
            Some(_) if is_qualified => 0,
            Some(_) if has_parens => 3,
            Some((name, _))
                if name.eq_ignore_ascii_case("CURRENT_USER")
                    && !tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, "(")) =>
            {
                1
            }
            _ => 0,
        };
        let Some((_, replacement)) = call.filter(|_| len > 0) else {
            i += 1;
            continue;
        };
        let last = tokens[i + len - 1];
        let is_item = is_whole_item(&tokens, sql, i, i + len);
        // An item this call is inside of (not the whole of it), without
        // an alias: labelled once, after its last token.
        if let Some(&(a, b)) = items.iter().find(|(a, b)| (*a..*b).contains(&i)) {
            let end = tokens[b - 1].end as usize;
            if !is_item && !has_alias(&tokens[a..b], sql) && !labels.iter().any(|l| l.0 == end) {
                let text = &sql[tokens[a].start as usize..end];
                let label: String = text.chars().take(256).collect();
                labels.push((end, label));
            }
        }
        while let Some(l) = labels.first().filter(|l| l.0 <= t.start as usize) {
            out.push_str(&sql[copied..l.0]);
            let _ = write!(out, " AS `{}`", l.1.replace('`', "``"));
            copied = l.0;
            labels.remove(0);
        }
        out.push_str(&sql[copied..t.start as usize]);
        out.push_str(replacement);
        if depth == 0 && is_item && first.is_word(sql, "SELECT") {
            let text = &sql[t.start as usize..last.end as usize];
            let _ = write!(out, " AS `{}`", text.replace('`', "``"));
        }
        copied = last.end as usize;
        i += len;
    }
    if copied == 0 {
        return None;
    }
    for (end, label) in labels {
        out.push_str(&sql[copied..end]);
        let _ = write!(out, " AS `{}`", label.replace('`', "``"));
        copied = end;
    }
    out.push_str(&sql[copied..]);
    Some(out)
}

/// The token ranges of the first SELECT's items (after its modifiers,
/// up to FROM or another clause, split at top-level commas).
fn select_items(tokens: &[Token], sql: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 1;
    while tokens.get(start).is_some_and(|t| {
        [
            "ALL",
            "DISTINCT",
            "DISTINCTROW",
            "SQL_NO_CACHE",
            "SQL_CACHE",
            "STRAIGHT_JOIN",
        ]
        .iter()
        .any(|w| t.is_word(sql, w))
    }) {
        start += 1;
    }
    for (i, t) in tokens.iter().enumerate().skip(start) {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 {
            if t.is_punct(sql, ",") {
                out.push((start, i));
                start = i + 1;
            } else if t.kind == TokenKind::Semicolon || ITEM_END.iter().any(|w| t.is_word(sql, w)) {
                out.push((start, i));
                return out;
            }
        }
    }
    if start < tokens.len() {
        out.push((start, tokens.len()));
    }
    out
}

/// Whether a select item names its own label: `... AS name`, or a name
/// after the expression (`LENGTH(USER()) len`), which follows a value or
/// a closing parenthesis, not an operator.
fn has_alias(item: &[Token], sql: &str) -> bool {
    const OPERATORS: &[&str] = &[
        "IS", "NOT", "AND", "OR", "XOR", "LIKE", "RLIKE", "REGEXP", "DIV", "MOD", "BETWEEN", "IN",
        "ESCAPE", "SOUNDS", "BINARY", "COLLATE", "INTERVAL", "CASE", "WHEN", "THEN", "ELSE",
    ];
    const VALUES: &[&str] = &["NULL", "TRUE", "FALSE", "UNKNOWN", "END"];
    match item {
        [.., a, _] if a.is_word(sql, "AS") => true,
        [.., p, n] => {
            let is_label = match n.kind {
                TokenKind::QuotedIdent | TokenKind::Str => true,
                TokenKind::Word => !VALUES.iter().any(|w| n.is_word(sql, w)),
                _ => false,
            };
            let after_value = match p.kind {
                TokenKind::Punct => p.is_punct(sql, ")"),
                TokenKind::Word => !OPERATORS.iter().any(|w| p.is_word(sql, w)),
                TokenKind::Semicolon | TokenKind::Placeholder => false,
                _ => true,
            };
            is_label && after_value && !(p.kind == TokenKind::Str && n.kind == TokenKind::Str)
        }
        _ => false,
    }
}

/// `@@name`, `@@session.name`, `@@local.name` or `@@global.name`.
fn is_variable(text: &str, name: &str) -> bool {
    let var = text.trim_start_matches('@');
    let var = match var.split_once('.') {
        Some((scope, v))
            if ["session", "local", "global"]
                .iter()
                .any(|s| scope.eq_ignore_ascii_case(s)) =>
        {
            v
        }
        _ => var,
    };
    var.trim_matches('`').eq_ignore_ascii_case(name)
}

/// Whether the expression from token `first` up to (not including) token
/// `next` is a whole select-list item: it follows SELECT or a comma, and
/// the statement, a comma or a clause keyword comes after it.
fn is_whole_item(tokens: &[Token], sql: &str, first: usize, next: usize) -> bool {
    let starts = first > 0 && {
        let p = tokens[first - 1];
        p.is_word(sql, "SELECT") || p.is_punct(sql, ",")
    };
    let ends = match tokens.get(next) {
        None => true,
        Some(n) => {
            n.kind == TokenKind::Semicolon
                || n.is_punct(sql, ",")
                || ITEM_END.iter().any(|w| n.is_word(sql, w))
        }
    };
    starts && ends
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_reads_and_keeps_column_names() {
        let r = |sql| replace_sysvar(sql, "max_allowed_packet", 1024);
        assert_eq!(
            r("SELECT @@max_allowed_packet,@@wait_timeout").as_deref(),
            Some("SELECT CAST(1024 AS UNSIGNED) AS `@@max_allowed_packet`,@@wait_timeout")
        );
        assert_eq!(
            r("select @@SESSION.max_allowed_packet / 2").as_deref(),
            Some("select CAST(1024 AS UNSIGNED) / 2")
        );
        assert_eq!(
            r("SELECT 1 IN (2, @@global.max_allowed_packet, 3)").as_deref(),
            Some("SELECT 1 IN (2, CAST(1024 AS UNSIGNED), 3)")
        );
        assert_eq!(r("SELECT @@wait_timeout"), None);
        assert_eq!(r("SET @@max_allowed_packet = 5"), None);
        assert_eq!(r("SELECT '@@max_allowed_packet'"), None);
        assert_eq!(r("SELECT 1"), None);
    }

    #[test]
    fn user_calls_inside_select_items_keep_the_items_labels() {
        let r = |sql| replace_user_functions(sql, "u@h", "u@%");
        assert_eq!(
            r("SELECT USER() = CURRENT_USER(), 1").as_deref(),
            Some("SELECT 'u@h' = 'u@%' AS `USER() = CURRENT_USER()`, 1")
        );
        assert_eq!(
            r("SELECT LENGTH(USER()) len, UPPER(user()) AS up FROM t").as_deref(),
            Some("SELECT LENGTH('u@h') len, UPPER('u@h') AS up FROM t")
        );
        assert_eq!(
            r("SELECT CURRENT_USER u").as_deref(),
            Some("SELECT 'u@%' u")
        );
        assert_eq!(
            r("SELECT 1 FROM t WHERE USER() LIKE 'u%'").as_deref(),
            Some("SELECT 1 FROM t WHERE 'u@h' LIKE 'u%'")
        );
        assert_eq!(
            r("SELECT CONCAT(USER(), CURRENT_USER()) IS NULL").as_deref(),
            Some("SELECT CONCAT('u@h', 'u@%') IS NULL AS `CONCAT(USER(), CURRENT_USER()) IS NULL`")
        );
    }

    #[test]
    fn replaces_connection_id_calls() {
        let r = |sql| replace_connection_id(sql, 7);
        assert_eq!(
            r("SELECT CONNECTION_ID()").as_deref(),
            Some("SELECT CAST(7 AS UNSIGNED) AS `CONNECTION_ID()`")
        );
        assert_eq!(
            r("select connection_id() AS id, 1").as_deref(),
            Some("select CAST(7 AS UNSIGNED) AS id, 1")
        );
        assert_eq!(
            r("INSERT INTO t VALUES (CONNECTION_ID())").as_deref(),
            Some("INSERT INTO t VALUES (CAST(7 AS UNSIGNED))")
        );
        assert_eq!(
            r("SELECT * FROM p WHERE ID <> CONNECTION_ID ( )").as_deref(),
            Some("SELECT * FROM p WHERE ID <> CAST(7 AS UNSIGNED)")
        );
        assert_eq!(r("SELECT 'CONNECTION_ID()'"), None);
        assert_eq!(r("CREATE VIEW v AS SELECT CONNECTION_ID()"), None);
        assert_eq!(r("SELECT connection_id"), None);
    }

    #[test]
    fn replaces_user_functions() {
        let r = |sql| replace_user_functions(sql, "al'ice@10.0.0.1", "al'ice@%");
        assert_eq!(
            r("SELECT CURRENT_USER(), user()").as_deref(),
            Some("SELECT 'al''ice@%' AS `CURRENT_USER()`, 'al''ice@10.0.0.1' AS `user()`")
        );
        assert_eq!(
            r("select current_user").as_deref(),
            Some("select 'al''ice@%' AS `current_user`")
        );
        assert_eq!(
            r("INSERT INTO log VALUES (SESSION_USER(), SYSTEM_USER())").as_deref(),
            Some("INSERT INTO log VALUES ('al''ice@10.0.0.1', 'al''ice@10.0.0.1')")
        );
        assert_eq!(r("SELECT user FROM t"), None);
        assert_eq!(r("SELECT t.user() FROM t"), None);
        assert_eq!(r("SHOW GRANTS FOR CURRENT_USER"), None);
    }
}
