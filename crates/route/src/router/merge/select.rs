//! The select list and clauses of a SELECT to be merged: its items (with
//! their aliases), which aggregates it calls, where each clause starts and
//! its LIMIT.

use hscale_sql::{Token, TokenKind};

use super::super::{is_name, unescape, unquote};

/// One item of the select list.
pub(super) struct Item<'t> {
    pub(super) tokens: &'t [Token],
    /// The expression (without the alias).
    pub(super) expr: &'t [Token],
    pub(super) alias: Option<String>,
}

pub(crate) const AGGREGATES: &[&str] = &[
    "COUNT", "SUM", "MIN", "MAX", "AVG", "BIT_AND", "BIT_OR", "BIT_XOR",
];

/// The group aggregates the merge does not do (yet): with [`AGGREGATES`],
/// every function that makes a SELECT grouped (`found_rows.rs`).
pub(crate) const UNMERGED_AGGREGATES: &[&str] = &[
    "GROUP_CONCAT",
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
    "JSON_ARRAYAGG",
    "JSON_OBJECTAGG",
];

/// Functions the merge does not do (yet) besides the
/// [`UNMERGED_AGGREGATES`]: window functions and FOUND_ROWS().
pub(super) const UNMERGEABLE_OTHERS: &[&str] = &[
    "FOUND_ROWS",
    "ROW_NUMBER",
    "RANK",
    "DENSE_RANK",
    "PERCENT_RANK",
    "CUME_DIST",
    "NTILE",
    "LAG",
    "LEAD",
    "FIRST_VALUE",
    "LAST_VALUE",
    "NTH_VALUE",
    "MEDIAN",
    "PERCENTILE_CONT",
    "PERCENTILE_DISC",
];

/// Split `t` at depth-0 commas.
pub(super) fn split_commas<'t>(sql: &str, t: &'t [Token]) -> Vec<&'t [Token]> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, x) in t.iter().enumerate() {
        if x.is_punct(sql, "(") {
            depth += 1;
        } else if x.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 && x.is_punct(sql, ",") {
            out.push(&t[start..i]);
            start = i + 1;
        }
    }
    out.push(&t[start..]);
    out
}

/// The source text of a token range.
pub(super) fn text<'s>(sql: &'s str, t: &[Token]) -> &'s str {
    match (t.first(), t.last()) {
        (Some(a), Some(b)) => &sql[a.start as usize..b.end as usize],
        _ => "",
    }
}

/// An expression normalized for matching (`ORDER BY SUM(x)` against the
/// select item `sum( x )`): tokens joined by spaces, words lowercased.
pub(super) fn norm(sql: &str, t: &[Token]) -> String {
    let mut out = String::new();
    for x in t {
        if !out.is_empty() {
            out.push(' ');
        }
        match x.kind {
            TokenKind::Word => out.push_str(&x.text(sql).to_ascii_lowercase()),
            TokenKind::QuotedIdent => out.push_str(&unquote(x, sql).to_ascii_lowercase()),
            _ => out.push_str(x.text(sql)),
        }
    }
    out
}

pub(super) fn parse_item<'t>(sql: &str, t: &'t [Token]) -> Item<'t> {
    // `expr AS alias`, `expr alias` (a name after a complete expression).
    let n = t.len();
    if n >= 3
        && t[n - 2].is_word(sql, "AS")
        && (is_name(&t[n - 1]) || t[n - 1].kind == TokenKind::Str)
    {
        return Item {
            tokens: t,
            expr: &t[..n - 2],
            alias: Some(alias_text(sql, &t[n - 1])),
        };
    }
    if n >= 2 && (is_name(&t[n - 1]) || t[n - 1].kind == TokenKind::Str) {
        let prev = &t[n - 2];
        let ends_expr = is_name(prev)
            || prev.is_punct(sql, ")")
            || matches!(prev.kind, TokenKind::Str | TokenKind::Number);
        let is_qualified = prev.is_punct(sql, ".");
        if ends_expr && !is_qualified && !(n == 2 && prev.is_word(sql, "DISTINCT")) {
            return Item {
                tokens: t,
                expr: &t[..n - 1],
                alias: Some(alias_text(sql, &t[n - 1])),
            };
        }
    }
    Item {
        tokens: t,
        expr: t,
        alias: None,
    }
}

pub(super) fn alias_text(sql: &str, t: &Token) -> String {
    match t.kind {
        TokenKind::Str => unescape(t.text(sql)),
        _ => unquote(t, sql),
    }
}

/// `FUNC ( args )` when the whole expression is one aggregate call.
pub(super) fn aggregate_call<'t>(sql: &str, e: &'t [Token]) -> Option<(String, &'t [Token])> {
    let f = e.first()?;
    if f.kind != TokenKind::Word
        || e.len() < 3
        || !e[1].is_punct(sql, "(")
        || !e[e.len() - 1].is_punct(sql, ")")
    {
        return None;
    }
    let name = f.text(sql).to_ascii_uppercase();
    if !AGGREGATES.contains(&name.as_str()) {
        return None;
    }
    // The parentheses must enclose the rest.
    let mut depth = 0;
    for (i, x) in e[1..].iter().enumerate() {
        if x.is_punct(sql, "(") {
            depth += 1;
        } else if x.is_punct(sql, ")") {
            depth -= 1;
            if depth == 0 && i + 2 != e.len() {
                return None;
            }
        }
    }
    Some((name, &e[2..e.len() - 1]))
}

/// Whether a token range calls any aggregate function.
pub(in crate::router) fn calls_aggregate(sql: &str, t: &[Token]) -> bool {
    t.windows(2).any(|w| {
        w[1].is_punct(sql, "(")
            && w[0].kind == TokenKind::Word
            && (AGGREGATES
                .iter()
                .chain(UNMERGED_AGGREGATES)
                .chain(UNMERGEABLE_OTHERS)
                .any(|f| w[0].is_word(sql, f)))
    })
}

/// The clauses of a single SELECT, by token index.
pub(super) struct Clauses {
    pub(super) items: (usize, usize),
    pub(super) distinct: bool,
    pub(super) from: usize,
    pub(super) body_end: usize,
    pub(super) group: Option<(usize, usize)>,
    pub(super) having: Option<(usize, usize)>,
    pub(super) order: Option<(usize, usize)>,
    pub(super) limit: Option<(usize, usize)>,
    /// A locking clause at the end (`FOR UPDATE [NOWAIT | WAIT n | SKIP
    /// LOCKED]`, `LOCK IN SHARE MODE [...]`): where it starts.
    pub(super) lock: Option<usize>,
}

pub(super) fn clauses(sql: &str, t: &[Token]) -> Result<Clauses, String> {
    let mut depth = 0i32;
    let mut at: Vec<(usize, &'static str)> = Vec::new();
    let mut seen_from = false;
    for (i, x) in t.iter().enumerate() {
        if x.is_punct(sql, "(") {
            depth += 1;
            continue;
        }
        if x.is_punct(sql, ")") {
            depth -= 1;
            continue;
        }
        if depth != 0 || x.kind != TokenKind::Word {
            continue;
        }
        let next_is = |i: usize, w: &str| t.get(i + 1).is_some_and(|n| n.is_word(sql, w));
        let next_by = next_is(i, "BY");
        let k = match x.text(sql).to_ascii_uppercase().as_str() {
            "FROM" if !seen_from => {
                seen_from = true;
                "FROM"
            }
            "GROUP" if next_by => "GROUP",
            "ORDER" if next_by => "ORDER",
            "HAVING" => "HAVING",
            "LIMIT" => "LIMIT",
            "WITH" => return Err("WITH ROLLUP".into()),
            "INTO" => return Err("SELECT ... INTO".into()),
            // A locking clause ends the statement: the parts keep it.
            "FOR" if next_is(i, "UPDATE") => "LOCK",
            "LOCK" if next_is(i, "IN") => "LOCK",
            "FOR" | "LOCK" => return Err("locking reads (FOR UPDATE, LOCK IN SHARE MODE)".into()),
            "WINDOW" | "OVER" => return Err("window functions".into()),
            "PROCEDURE" => return Err("PROCEDURE".into()),
            "SQL_CALC_FOUND_ROWS" => return Err("SQL_CALC_FOUND_ROWS".into()),
            "FETCH" => return Err("FETCH FIRST/NEXT".into()),
            // `LIMIT n OFFSET m` only: elsewhere `offset` is a name.
            "OFFSET"
                if i >= 2
                    && t[i - 2].is_word(sql, "LIMIT")
                    && t[i - 1].kind == TokenKind::Number =>
            {
                "OFFSET"
            }
            _ => continue,
        };
        at.push((i, k));
        if k == "LOCK" {
            break;
        }
    }
    let Some(from) = at.iter().find(|a| a.1 == "FROM").map(|a| a.0) else {
        return Err("a SELECT without FROM".into());
    };
    let mut items_start = 1;
    let mut distinct = false;
    while let Some(m) = t.get(items_start) {
        let up = m.text(sql).to_ascii_uppercase();
        match up.as_str() {
            "DISTINCT" | "DISTINCTROW" => distinct = true,
            "ALL" | "HIGH_PRIORITY" | "STRAIGHT_JOIN" | "SQL_SMALL_RESULT" | "SQL_BIG_RESULT"
            | "SQL_BUFFER_RESULT" | "SQL_NO_CACHE" | "SQL_CACHE" => {}
            _ => break,
        }
        items_start += 1;
    }
    let range_of = |k: &str| -> Option<(usize, usize)> {
        let pos = at.iter().position(|a| a.1 == k)?;
        let start = at[pos].0 + if k == "GROUP" || k == "ORDER" { 2 } else { 1 };
        let end = at
            .iter()
            .skip(pos + 1)
            .find(|a| a.1 != "OFFSET" || k != "LIMIT")
            .map_or(t.len(), |a| a.0);
        Some((start, end))
    };
    let body_end = at
        .iter()
        .find(|a| a.0 > from && a.1 != "FROM")
        .map_or(t.len(), |a| a.0);
    Ok(Clauses {
        items: (items_start, from),
        distinct,
        from,
        body_end,
        group: range_of("GROUP"),
        having: range_of("HAVING"),
        order: range_of("ORDER"),
        limit: range_of("LIMIT"),
        lock: at.iter().find(|a| a.1 == "LOCK").map(|a| a.0),
    })
}

/// `LIMIT n`, `LIMIT m, n`, `LIMIT n OFFSET m`: (offset, count).
pub(super) fn limit_values(sql: &str, t: &[Token]) -> Option<(u64, u64)> {
    let num = |x: &Token| -> Option<u64> {
        (x.kind == TokenKind::Number)
            .then(|| x.text(sql).parse().ok())
            .flatten()
    };
    match t {
        [n] => Some((0, num(n)?)),
        [m, c, n] if c.is_punct(sql, ",") => Some((num(m)?, num(n)?)),
        [n, o, m] if o.is_word(sql, "OFFSET") => Some((num(m)?, num(n)?)),
        _ => None,
    }
}
