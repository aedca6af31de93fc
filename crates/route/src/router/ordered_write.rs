//! UPDATE and DELETE with `ORDER BY ... LIMIT n` over several partitions,
//! with one server's meaning: the first n rows in that order over the
//! whole table are written.
//!
//! ```text
//!  UPDATE t SET .. WHERE w ORDER BY o LIMIT n
//!    1. SELECT t.key FROM t WHERE w ORDER BY o LIMIT n    (a merged read)
//!    2. the keys counted per partition: c_p rows come from partition p
//!    3. on each p with c_p > 0: UPDATE t_p SET .. WHERE w ORDER BY o LIMIT c_p
//! ```
//!
//! Step 3 writes exactly the rows step 1 chose: the first n rows of the
//! merged order are, in each partition, the first c_p of that partition
//! in the same order (rows that tie at the boundary are any of the tied
//! rows, as on one server). Step 1 is planned and run by the proxy like a
//! client's read (`OrderedWrite::select`), step 3 by [`ordered_write_parts`]
//! like any write over several partitions (atomic in autocommit).
//! Without ORDER BY, `LIMIT n` takes any n rows, as on one server.

use hscale_sql::{Token, TokenKind};

use super::{is_any_word, refs::table_refs, rewrite, unquote, Plan, StatementKind, TableRef};
use crate::dictionary::{Dictionary, PartitionedTable, TableName, Target};
use crate::known::Known;
use crate::KeyValue;

/// An UPDATE or DELETE whose rows are chosen by a merged read first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderedWrite {
    pub table: TableName,
    pub kind: StatementKind,
    /// The read that gives the partition keys of the rows to write, in
    /// order (one column).
    pub select: String,
    /// How many rows the statement writes at most (its LIMIT).
    pub limit: u64,
}

/// The top-level LIMIT of a single-table UPDATE or DELETE: its token index
/// and row count, when it is the statement's last clause.
fn top_level_limit(sql: &str, tokens: &[Token]) -> Option<(usize, u64)> {
    let mut depth = 0i32;
    let mut at = None;
    for (i, t) in tokens.iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 && t.is_word(sql, "LIMIT") {
            at = Some(i);
        }
    }
    let at = at?;
    match &tokens[at + 1..] {
        [n] if n.kind == TokenKind::Number => Some((at, n.text(sql).parse().ok()?)),
        _ => None,
    }
}

/// The plan of an UPDATE or DELETE over several partitions of `table`
/// that orders or limits its rows: `None` when it is not of the form this
/// module runs (see [`OrderedWrite`]); the caller refuses it then.
pub(super) fn plan(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    kind: StatementKind,
) -> Option<Plan> {
    // Subqueries, RETURNING, several statements: not here.
    if tokens.iter().any(|t| {
        t.kind == TokenKind::Semicolon
            || t.kind == TokenKind::Placeholder
            || is_any_word(t, sql, &["SELECT", "RETURNING", "JOIN", "USING"])
    }) {
        return None;
    }
    let (limit_at, limit) = top_level_limit(sql, tokens)?;
    let ref_text_end = {
        let after = r.end
            + usize::from(tokens.get(r.end).is_some_and(|t| t.is_word(sql, "AS")))
            + usize::from(r.alias.is_some());
        tokens[after - 1].end as usize
    };
    let from = &sql[tokens[r.start].start as usize..ref_text_end];
    // The clauses after the table (DELETE) or after SET's assignments
    // (UPDATE): WHERE, ORDER BY, LIMIT.
    let rest_at = match kind {
        StatementKind::Delete => r.end,
        StatementKind::Update => {
            let mut depth = 0i32;
            let mut found = None;
            for (i, t) in tokens.iter().enumerate().skip(r.end) {
                if t.is_punct(sql, "(") {
                    depth += 1;
                } else if t.is_punct(sql, ")") {
                    depth -= 1;
                } else if depth == 0 && is_any_word(t, sql, &["WHERE", "ORDER", "LIMIT"]) {
                    found = Some(i);
                    break;
                }
            }
            found?
        }
        _ => return None,
    };
    let rest_at = match kind {
        // DELETE FROM t [AS a] WHERE ...: skip the alias.
        StatementKind::Delete => tokens[rest_at..]
            .iter()
            .position(|t| is_any_word(t, sql, &["WHERE", "ORDER", "LIMIT"]))
            .map(|p| rest_at + p)?,
        _ => rest_at,
    };
    if rest_at > limit_at {
        return None;
    }
    let qualifier = match (&r.alias, tokens.get(r.end - 1)) {
        (Some(a), _) => a.clone(),
        (None, Some(t)) => unquote(t, sql),
        (None, None) => return None,
    };
    let select = format!(
        "SELECT {}.{} FROM {from} {}",
        quote_ident(&qualifier),
        quote_ident(&table.column),
        &sql[tokens[rest_at].start as usize..]
    );
    Some(Plan::OrderedWrite(OrderedWrite {
        table: table.name.clone(),
        kind,
        select,
        limit,
    }))
}

fn quote_ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// Step 3 (see the module): the statement on each partition that holds
/// some of the chosen rows, its LIMIT the number of them there. `keys`
/// are the chosen rows' partition keys as the read returned them (`None`:
/// NULL). No rows: the statement as it is on one partition, which
/// matches none there either and answers as one server does.
pub fn ordered_write_parts(
    sql: &str,
    session_db: Option<&str>,
    dict: &Dictionary,
    keys: &[Option<String>],
    known: &Known<'_>,
) -> Plan {
    let Ok(tokens) = hscale_sql::tokenize(sql) else {
        return Plan::Refuse("internal: an ordered write that does not lex".into());
    };
    let refs = table_refs(sql, &tokens, session_db, dict);
    let (Some(r), Some((limit_at, _))) = (refs.first(), top_level_limit(sql, &tokens)) else {
        return Plan::Refuse("internal: an ordered write without its table or LIMIT".into());
    };
    let Some(table) = dict.table(&r.name) else {
        return Plan::Refuse(format!("internal: {} is not partitioned", r.name));
    };
    let kind = if tokens.first().is_some_and(|t| t.is_word(sql, "DELETE")) {
        StatementKind::Delete
    } else {
        StatementKind::Update
    };
    let mut counts: Vec<(Target, u64)> = Vec::new();
    for k in keys {
        let v = match k {
            None => KeyValue::Null,
            Some(s) => match table.stored_key(KeyValue::Str(s.clone())) {
                Some(v) => v,
                None => {
                    return Plan::Refuse(format!(
                    "internal: the partition key value {s:?} read back from {} cannot be placed",
                    table.name
                ))
                }
            },
        };
        let target = match table.route(&v, known) {
            Ok(t) => t,
            Err(e) => return Plan::Refuse(e.to_string()),
        };
        match counts.iter_mut().find(|(t, _)| *t == target) {
            Some((_, n)) => *n += 1,
            None => counts.push((target, 1)),
        }
    }
    if counts.is_empty() {
        // No row matches anywhere (or LIMIT 0): the statement as it is on
        // one partition answers as one server does.
        let t = table.default_target();
        let s = rewrite(sql, &tokens, r, &t, kind != StatementKind::Delete);
        return Plan::Targets {
            kind,
            parts: vec![(t, s)],
        };
    }
    let number = &tokens[limit_at + 1];
    let parts = counts
        .into_iter()
        .map(|(target, n)| {
            let text = format!(
                "{}{n}{}",
                &sql[..number.start as usize],
                &sql[number.end as usize..]
            );
            // One number for another: the token positions are unchanged.
            let s = match hscale_sql::tokenize(&text) {
                Ok(t2) => rewrite(&text, &t2, r, &target, kind != StatementKind::Delete),
                Err(_) => rewrite(sql, &tokens, r, &target, kind != StatementKind::Delete),
            };
            (target, s)
        })
        .collect();
    Plan::Targets { kind, parts }
}
