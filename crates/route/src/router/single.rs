//! Single-table SELECT, UPDATE and DELETE: the partitions the WHERE clause
//! can match, the statement rewritten for each, and the point shapes the
//! plan cache and prepared statements reuse.

use hscale_sql::{Token, TokenKind};

use super::{
    conjuncts, is_name, is_named, literal, merge, needs_merge, prune, rewrite, unquote,
    where_clause, Plan, PointHint, StatementKind, TableRef,
};
use crate::dictionary::{PartitionedTable, Target};
use crate::known::Known;

/// SELECT, UPDATE, DELETE: prune by the WHERE clause.
pub(super) fn plan_filtered(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    kind: StatementKind,
    hint: &mut Option<PointHint>,
    known: &Known<'_>,
) -> Plan {
    let qualifiers: Vec<&str> = [Some(r.name.table.as_str()), r.alias.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let is_key = |t: &[Token]| -> bool {
        match t {
            [c] => is_named(c, sql, &table.column),
            [q, dot, c] => {
                is_name(q)
                    && dot.is_punct(sql, ".")
                    && is_name(c)
                    && qualifiers
                        .iter()
                        .any(|x| unquote(q, sql).eq_ignore_ascii_case(x))
                    && unquote(c, sql).eq_ignore_ascii_case(&table.column)
            }
            _ => false,
        }
    };
    // SET key = ...: the row could belong to another partition afterwards
    // (`key_move.rs`).
    let key_set = match kind {
        StatementKind::Update => key_assignment(sql, tokens, is_key),
        _ => None,
    };
    let (pruned, converts_per_row) = match where_clause(sql, tokens) {
        Some(w) => prune::walk_condition(sql, w, &is_key, table, known),
        None => (None, false),
    };
    let mut targets: Vec<Target> = match pruned {
        Some(set) => set.into_iter().collect(),
        None => table.all_targets(),
    };
    targets.sort();
    targets.dedup();
    if targets.is_empty() {
        targets.push(table.default_target());
    }
    // Over several partitions, each part gets only its own keys of the
    // key IN lists (`in_lists.rs`).
    let lists = match where_span(sql, tokens) {
        Some(span) if targets.len() > 1 && !converts_per_row => {
            super::in_lists::key_lists(sql, tokens, span, &is_key, table, known)
        }
        _ => Vec::new(),
    };
    if targets.len() > 1 {
        let needs = needs_merge(sql, tokens);
        if needs && kind == StatementKind::Select {
            let slots: Vec<merge::Slot> = targets
                .iter()
                .map(|t| merge::Slot {
                    target: t.clone(),
                    refs: vec![(r, t.clone())],
                    lists: &lists,
                })
                .collect();
            let what = merge::What {
                table: table.name.to_string(),
                hint: format!(
                    "restrict it to one partition with {} = <value>",
                    table.column
                ),
            };
            return merge::plan_merge(sql, tokens, &slots, &what);
        }
        if needs && key_set.is_some() {
            return Plan::Refuse(format!(
                "UPDATE of the partition key {} of {} with ORDER BY or LIMIT over several partitions",
                table.column, table.name
            ));
        }
        // A prepared `... WHERE key = ? ORDER BY .. LIMIT n`: every row it
        // matches is in the partition of its parameter, where each
        // execution runs it whole (`exec/prepared/routing.rs`); on any
        // other partition it matches nothing.
        let is_key_param =
            needs && kind != StatementKind::Select && key_placeholder(sql, &table.column).is_some();
        if needs && !is_key_param {
            if let Some(p) = super::ordered_write::plan(sql, tokens, r, table, kind) {
                return p;
            }
            return Plan::Refuse(format!(
                "this statement needs {} partitions of {} merged (ORDER BY or LIMIT in an UPDATE or DELETE over several partitions is not supported); restrict it to one partition with {} = <value>",
                targets.len(),
                table.name,
                table.column
            ));
        }
    }
    let keep_alias = kind != StatementKind::Delete;
    if targets.len() == 1 && key_set.is_none() {
        *hint = point_hint(sql, tokens, &table.column, &is_key).map(|key_token| PointHint {
            table: table.name.clone(),
            kind,
            ref_start: r.start,
            ref_end: r.end,
            has_alias: r.alias.is_some(),
            keep_alias,
            key_token,
        });
    }
    let parts = targets
        .into_iter()
        .map(|t| {
            let s = if lists.is_empty() {
                rewrite(sql, tokens, r, &t, keep_alias)
            } else {
                let span = (
                    tokens[r.start].start as usize,
                    tokens[r.end - 1].end as usize,
                );
                let name = super::refs::physical_name(r, &t, keep_alias);
                super::in_lists::rewrite(sql, span, &name, &lists, &t)
            };
            (t, s)
        })
        .collect();
    if let Some(eq_at) = key_set {
        return super::key_move::plan(sql, tokens, r, table, eq_at, parts);
    }
    Plan::Targets { kind, parts }
}

/// The token of the `=` of an UPDATE's `SET key = ...` (`is_key` names
/// the partition key's column), if it assigns the key.
pub(super) fn key_assignment(
    sql: &str,
    tokens: &[Token],
    is_key: impl Fn(&[Token]) -> bool,
) -> Option<usize> {
    if let Some(set) = tokens.iter().position(|t| t.is_word(sql, "SET")) {
        let end = tokens
            .iter()
            .position(|t| t.is_word(sql, "WHERE"))
            .unwrap_or(tokens.len());
        for (i, t) in tokens[set..end].iter().enumerate() {
            let at = set + i;
            if t.is_punct(sql, "=") || t.is_punct(sql, ":=") {
                let lhs_start = (set + 1).max(at.saturating_sub(3));
                let lhs = &tokens[lhs_start..at];
                let lhs = lhs
                    .iter()
                    .rposition(|x| x.is_punct(sql, ",") || x.is_word(sql, "SET"))
                    .map_or(lhs, |p| &lhs[p + 1..]);
                if is_key(lhs) {
                    return Some(at);
                }
            }
        }
    }
    None
}

/// The token range of the WHERE clause of the statement's own level (not
/// a subquery's): after its `WHERE`, to the clause that ends it.
fn where_span(sql: &str, tokens: &[Token]) -> Option<(usize, usize)> {
    let clause = where_clause(sql, tokens)?;
    // `where_clause` starts after the first WHERE.
    let w = tokens.iter().position(|t| t.is_word(sql, "WHERE"))?;
    let depth: i32 = tokens[..w]
        .iter()
        .map(|t| i32::from(t.is_punct(sql, "(")) - i32::from(t.is_punct(sql, ")")))
        .sum();
    (depth == 0).then_some((w + 1, w + 1 + clause.len()))
}

/// The token index of the literal in the WHERE clause's only mention of
/// the key, when that mention is a top-level `key = literal` conjunct: then
/// the literal alone decides the partition.
pub(super) fn point_hint(
    sql: &str,
    tokens: &[Token],
    column: &str,
    is_key: &dyn Fn(&[Token]) -> bool,
) -> Option<usize> {
    let w = where_clause(sql, tokens)?;
    let mentions = w.iter().filter(|t| is_named(t, sql, column)).count();
    if mentions != 1 {
        return None;
    }
    for c in conjuncts(sql, w)? {
        let Some(eq) = c.iter().position(|t| t.is_punct(sql, "=")) else {
            continue;
        };
        let (l, r) = (&c[..eq], &c[eq + 1..]);
        let lit = if is_key(l) {
            r
        } else if is_key(r) {
            l
        } else {
            continue;
        };
        literal(sql, lit)?;
        let last = lit.last()?;
        if !matches!(last.kind, TokenKind::Str | TokenKind::Number) {
            return None;
        }
        return tokens.iter().position(|t| t.start == last.start);
    }
    None
}

/// For a prepared statement: the ordinal of the `?` in a top-level
/// `key = ?` (or `? = key`) conjunct of the WHERE clause, whose value then
/// picks the partition at each execution.
pub fn key_placeholder(sql: &str, column: &str) -> Option<usize> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    // Only single-table statements: in a join or subquery `x.k = ?` may
    // name another table's column.
    let selects = tokens.iter().filter(|t| t.is_word(sql, "SELECT")).count();
    let from = tokens.iter().position(|t| t.is_word(sql, "FROM"));
    let wh = tokens.iter().position(|t| t.is_word(sql, "WHERE"));
    let comma_join = match (from, wh) {
        (Some(f), Some(w)) if f < w => tokens[f..w].iter().any(|t| t.is_punct(sql, ",")),
        _ => false,
    };
    if selects > 1
        || comma_join
        || tokens
            .iter()
            .any(|t| t.is_word(sql, "JOIN") || t.is_word(sql, "STRAIGHT_JOIN"))
    {
        return None;
    }
    let is_col = |t: &Token| is_name(t) && unquote(t, sql).eq_ignore_ascii_case(column);
    let is_eq = |t: &Token| t.is_punct(sql, "=");
    let is_p = |t: &Token| t.kind == TokenKind::Placeholder;
    for c in conjuncts(sql, where_clause(sql, &tokens)?)? {
        let p = match c {
            [k, eq, p] if is_col(k) && is_eq(eq) && is_p(p) => p,
            [_, dot, k, eq, p] if dot.is_punct(sql, ".") && is_col(k) && is_eq(eq) && is_p(p) => p,
            [p, eq, k] if is_col(k) && is_eq(eq) && is_p(p) => p,
            _ => continue,
        };
        return Some(
            tokens
                .iter()
                .filter(|t| is_p(t) && t.start < p.start)
                .count(),
        );
    }
    None
}
