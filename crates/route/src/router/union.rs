//! `SELECT ... UNION ALL SELECT ...` over partitioned tables.

use hscale_sql::Token;

use super::{plan_nested, MergePlan, Mode, Plan, StatementKind};
use crate::dictionary::{Dictionary, Target};
use crate::known::Known;
use crate::BackendId;

/// `SELECT ... UNION ALL SELECT ...` with partitioned tables: every
/// branch planned on its own (one or several partitions, concatenated, or
/// the main backend), the branches' rows concatenated in order.
pub(super) fn plan_union(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
    prepared: bool,
    nesting: usize,
    known: &Known<'_>,
) -> Plan {
    let refuse = |why: &str| {
        Plan::Refuse(format!(
            "{why} in a UNION with partitioned tables is not supported yet"
        ))
    };
    // Branches at depth-0 UNION ALL.
    let mut branches: Vec<&[Token]> = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 && t.is_word(sql, "UNION") {
            if !tokens.get(i + 1).is_some_and(|n| n.is_word(sql, "ALL")) {
                return refuse("UNION without ALL (removing duplicates)");
            }
            branches.push(&tokens[start..i]);
            start = i + 2;
            i += 2;
            continue;
        }
        i += 1;
    }
    branches.push(&tokens[start..]);
    if branches.len() == 1 {
        // The UNION is inside a subquery or derived table.
        return refuse("a UNION inside a subquery");
    }
    let mut parts: Vec<(Target, String)> = Vec::new();
    let mut touches_partitions = false;
    for (n, b) in branches.iter().enumerate() {
        let mut b: &[Token] = b;
        // `( SELECT ... )`
        while b.len() >= 2 && b[0].is_punct(sql, "(") && b[b.len() - 1].is_punct(sql, ")") {
            b = &b[1..b.len() - 1];
        }
        let (Some(first), Some(last)) = (b.first(), b.last()) else {
            return refuse("an empty branch");
        };
        let text = &sql[first.start as usize..last.end as usize];
        let Ok(bt) = hscale_sql::tokenize(text) else {
            return refuse("an unreadable branch");
        };
        let mut depth = 0i32;
        let tail_clause = bt.iter().any(|t| {
            if t.is_punct(text, "(") {
                depth += 1;
            } else if t.is_punct(text, ")") {
                depth -= 1;
            }
            depth == 0 && (t.is_word(text, "ORDER") || t.is_word(text, "LIMIT"))
        });
        if tail_clause && n + 1 == branches.len() && !tokens[tokens.len() - 1].is_punct(sql, ")") {
            return refuse("ORDER BY or LIMIT after the last branch");
        }
        match plan_nested(
            text,
            &bt,
            super::Scope::new(session_db, dict, known),
            prepared,
            &mut None,
            nesting + 1,
        ) {
            Plan::Passthrough => parts.push((
                Target {
                    backend: BackendId::MAIN,
                    physical_table: "(main backend)".into(),
                },
                text.to_string(),
            )),
            Plan::Targets {
                kind: StatementKind::Select,
                parts: p,
            } => {
                touches_partitions = true;
                parts.extend(p);
            }
            Plan::Refuse(why) => return Plan::Refuse(why),
            _ => return refuse("a branch that needs its partitions merged"),
        }
    }
    if !touches_partitions {
        return Plan::Passthrough;
    }
    Plan::Merge(MergePlan {
        parts,
        mode: Mode::Sort { hidden: 0 },
        order: Vec::new(),
        offset: 0,
        limit: None,
        ship: Vec::new(),
        fallback: None,
        aliased: None,
    })
}
