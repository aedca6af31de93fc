//! The assignments of a SET statement: which items the proxy replays on
//! other connections, what pins the session, and the expressions a SET
//! of session variables evaluates first (`set_expressions`).

use super::*;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Session,
    Global,
}

/// Parse the assignments of a SET statement (tokens after `SET`). Returns
/// the replayable items and the pins for anything that is not replayable.
pub(super) fn set_items(sql: &str, t: &[Token]) -> (Vec<SetItem>, Pins) {
    let mut items = Vec::new();
    let mut pins = Pins::NONE;
    if t.first().is_some_and(|x| x.is_word(sql, "STATEMENT")) {
        // MariaDB's SET STATEMENT ... FOR <stmt>: no lasting effect.
        return (items, pins);
    }
    if t.first()
        .is_some_and(|x| x.is_word(sql, "PASSWORD") || x.is_word(sql, "DEFAULT"))
    {
        return (items, pins);
    }
    if t.first().is_some_and(|x| x.is_word(sql, "ROLE")) {
        return (items, Pins::COMPLEX_SET);
    }
    // SET [GLOBAL | SESSION] TRANSACTION characteristic [, characteristic]
    let (scope_word, rest) = match t.first() {
        Some(f)
            if f.is_word(sql, "GLOBAL") || f.is_word(sql, "SESSION") || f.is_word(sql, "LOCAL") =>
        {
            (Some(f.text(sql).to_ascii_uppercase()), &t[1..])
        }
        _ => (None, t),
    };
    if rest.first().is_some_and(|x| x.is_word(sql, "TRANSACTION")) {
        match scope_word.as_deref() {
            None => pins.insert(Pins::NEXT_TRANSACTION),
            Some("GLOBAL") => {}
            Some(_) => {
                for c in split_top_level_commas(sql, &rest[1..]) {
                    let text = span_text(sql, c);
                    let key = if c.first().is_some_and(|x| x.is_word(sql, "ISOLATION")) {
                        "tx_isolation"
                    } else if c.first().is_some_and(|x| x.is_word(sql, "READ")) {
                        "tx_read_only"
                    } else {
                        pins.insert(Pins::COMPLEX_SET);
                        continue;
                    };
                    items.push(SetItem {
                        key: key.into(),
                        assign: format!("SESSION TRANSACTION {text}"),
                        is_standalone: true,
                    });
                }
            }
        }
        return (items, pins);
    }
    let mut scope = Scope::Session;
    for part in split_top_level_commas(sql, t) {
        let mut p = part;
        let mut scoped = false;
        if let Some(first) = p.first() {
            if first.is_word(sql, "GLOBAL") || first.is_word(sql, "PERSIST") {
                scope = Scope::Global;
                scoped = true;
                p = &p[1..];
            } else if first.is_word(sql, "SESSION") || first.is_word(sql, "LOCAL") {
                scope = Scope::Session;
                scoped = true;
                p = &p[1..];
            }
        }
        let Some(name) = p.first() else {
            pins.insert(Pins::COMPLEX_SET);
            continue;
        };
        let _ = scoped;
        if name.is_word(sql, "NAMES")
            || name.is_word(sql, "CHARSET")
            || (name.is_word(sql, "CHARACTER") && p.get(1).is_some_and(|x| x.is_word(sql, "SET")))
        {
            items.push(SetItem {
                key: "names".into(),
                assign: span_text(sql, p).to_string(),
                is_standalone: false,
            });
            continue;
        }
        if name.kind == TokenKind::UserVar {
            pins.insert(Pins::USER_VARIABLE);
            continue;
        }
        let (var, var_scope) = match name.kind {
            TokenKind::SysVar => sysvar_name(name.text(sql), scope),
            TokenKind::Word | TokenKind::QuotedIdent => {
                (unquote_ident(name.text(sql)).to_ascii_lowercase(), scope)
            }
            _ => {
                pins.insert(Pins::COMPLEX_SET);
                continue;
            }
        };
        let is_assign = p
            .get(1)
            .is_some_and(|x| x.is_punct(sql, "=") || x.is_punct(sql, ":="));
        if !is_assign || var.contains('.') {
            pins.insert(Pins::COMPLEX_SET);
            continue;
        }
        if var_scope == Scope::Global {
            continue;
        }
        let value = &p[2..];
        if !is_simple_value(sql, value) {
            pins.insert(Pins::COMPLEX_SET);
            continue;
        }
        items.push(SetItem {
            assign: format!("@@session.{var} = {}", span_text(sql, value)),
            key: var,
            is_standalone: false,
        });
    }
    (items, pins)
}

/// The byte spans of the values a SET assigns to session variables as
/// expressions (`SET sql_mode = CONCAT(@@sql_mode, ',X')`), when they are
/// all that keeps it from being replayed: the proxy evaluates them in the
/// session's state and runs the SET with their values as literals, which
/// it can replay on any connection. `None` for anything else (user
/// variables, roles, TRANSACTION, STATEMENT, several statements).
pub fn set_expressions(sql: &str) -> Option<Vec<(usize, usize)>> {
    let t = crate::tokenize(sql).ok()?;
    if !t.first()?.is_word(sql, "SET") || t.iter().any(|x| x.kind == TokenKind::Semicolon) {
        return None;
    }
    let rest = &t[1..];
    if rest.first().is_some_and(|x| {
        [
            "STATEMENT",
            "PASSWORD",
            "DEFAULT",
            "ROLE",
            "TRANSACTION",
            "NAMES",
            "CHARSET",
        ]
        .iter()
        .any(|w| x.is_word(sql, w))
    }) {
        return None;
    }
    let mut out = Vec::new();
    for part in split_top_level_commas(sql, rest) {
        let mut p = part;
        if p.first().is_some_and(|f| {
            [
                "GLOBAL",
                "PERSIST",
                "SESSION",
                "LOCAL",
                "TRANSACTION",
                "NAMES",
                "CHARACTER",
            ]
            .iter()
            .any(|w| f.is_word(sql, w))
        }) {
            if !p
                .first()
                .is_some_and(|f| f.is_word(sql, "SESSION") || f.is_word(sql, "LOCAL"))
            {
                return None;
            }
            p = &p[1..];
        }
        let name = p.first()?;
        let is_session_var = match name.kind {
            TokenKind::SysVar => sysvar_name(name.text(sql), Scope::Session).1 == Scope::Session,
            TokenKind::Word | TokenKind::QuotedIdent => true,
            _ => false,
        };
        let is_assign = p
            .get(1)
            .is_some_and(|x| x.is_punct(sql, "=") || x.is_punct(sql, ":="));
        if !is_session_var || !is_assign || p.len() < 3 {
            return None;
        }
        let value = &p[2..];
        if !is_simple_value(sql, value) {
            let (a, b) = (value[0].start as usize, value[value.len() - 1].end as usize);
            out.push((a, b));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `@@session.x` / `@@global.x` / `@@x` to a name and a scope.
fn sysvar_name(text: &str, default: Scope) -> (String, Scope) {
    let name = text.trim_start_matches('@').to_ascii_lowercase();
    if let Some(rest) = name.strip_prefix("global.") {
        (rest.to_string(), Scope::Global)
    } else if let Some(rest) = name
        .strip_prefix("session.")
        .or_else(|| name.strip_prefix("local."))
    {
        (rest.to_string(), Scope::Session)
    } else {
        let _ = default;
        (name, Scope::Session)
    }
}

/// A literal, a bare word (ON, OFF, DEFAULT, a name) or a negative number.
fn is_simple_value(sql: &str, v: &[Token]) -> bool {
    match v {
        [one] => matches!(
            one.kind,
            TokenKind::Str | TokenKind::Number | TokenKind::Word | TokenKind::QuotedIdent
        ),
        [minus, num] => minus.is_punct(sql, "-") && num.kind == TokenKind::Number,
        _ => false,
    }
}

fn span_text<'a>(sql: &'a str, t: &[Token]) -> &'a str {
    match (t.first(), t.last()) {
        (Some(a), Some(b)) => sql.get(a.start as usize..b.end as usize).unwrap_or(""),
        _ => "",
    }
}

/// Split tokens at commas that are not inside parentheses.
fn split_top_level_commas<'t>(sql: &str, t: &'t [Token]) -> Vec<&'t [Token]> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, tok) in t.iter().enumerate() {
        if tok.is_punct(sql, "(") {
            depth += 1;
        } else if tok.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 && tok.is_punct(sql, ",") {
            out.push(&t[start..i]);
            start = i + 1;
        }
    }
    out.push(&t[start..]);
    out
}
