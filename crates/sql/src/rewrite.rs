//! Statement rewrites made before planning: system variables whose value
//! through the proxy is the proxy's own, not the backend's
//! (`@@max_allowed_packet` is the limit hscale enforces on commands).

use std::fmt::Write;

use crate::lexer::{tokenize, TokenKind};

/// Words that may end a select item.
const ITEM_END: &[&str] = &[
    "FROM", "INTO", "UNION", "WHERE", "LIMIT", "ORDER", "GROUP", "HAVING", "FOR", "LOCK",
];

/// `sql` with every read of `@@[session.|local.|global.]name` replaced by
/// the unsigned integer `value`, in SELECT statements; `None` when the
/// statement reads no such variable. A variable that is a whole select
/// item keeps its column name (`AS` the text as written).
pub fn replace_sysvar(sql: &str, name: &str, value: u64) -> Option<String> {
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
        let starts_item = i > 0 && {
            let p = tokens[i - 1];
            p.is_word(sql, "SELECT") || p.is_punct(sql, ",")
        };
        let ends_item = match tokens.get(i + 1) {
            None => true,
            Some(n) => {
                n.kind == TokenKind::Semicolon
                    || n.is_punct(sql, ",")
                    || ITEM_END.iter().any(|w| n.is_word(sql, w))
            }
        };
        out.push_str(&sql[copied..t.start as usize]);
        let _ = write!(out, "CAST({value} AS UNSIGNED)");
        if depth == 0 && starts_item && ends_item {
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
}
