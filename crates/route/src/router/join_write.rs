//! Multi-table UPDATE and DELETE (`UPDATE t1 JOIN t2 ON ... SET ...`,
//! `DELETE t1 FROM t1 JOIN t2 ...`): planned through the SELECT that reads
//! their rows (`join.rs`), run as written in the one slot that holds them.

use hscale_sql::Token;

use super::join::plan_join;
use super::merge::Slot;
use super::{is_name, unquote, Plan, StatementKind, TableRef};
use crate::dictionary::{Dictionary, Target};
use crate::known::Known;

/// A multi-table UPDATE or DELETE (`UPDATE t1 JOIN t2 ON ... SET ...`,
/// `DELETE t1 FROM t1 JOIN t2 ...`) whose rows lie on one backend: the
/// join of its table list under its WHERE clause, planned as the SELECT
/// that reads those rows, runs in one slot (every partitioned table
/// limited to one partition, all on one backend; unpartitioned tables
/// only on the main backend). The statement then runs there as written,
/// each table renamed to its partition's table under the name the client
/// used. `None` (the caller refuses) for anything else: a global table
/// (its copies would differ), `DELETE ... USING`, a table list the join
/// planner does not read, rows on several partitions or backends.
pub(super) fn plan_join_write(
    sql: &str,
    t: &[Token],
    refs: &[TableRef],
    session_db: Option<&str>,
    dict: &Dictionary,
    known: &Known<'_>,
) -> Option<Plan> {
    let first = t.first()?;
    let (list, kind) = if first.is_word(sql, "UPDATE") {
        let mut i = 1;
        while t
            .get(i)
            .is_some_and(|x| x.is_word(sql, "LOW_PRIORITY") || x.is_word(sql, "IGNORE"))
        {
            i += 1;
        }
        let set = top_level_word(sql, t, i, "SET")?;
        match assigned_key(sql, t, (i..set, set), refs, dict) {
            KeyAssigned::No => {}
            KeyAssigned::Yes(why) => return Some(Plan::Refuse(why)),
            // Resolved with the tables' columns by the join's read
            // (`join_input.rs`): the server's 1052 when two tables have
            // it, the refusal when it is the key.
            KeyAssigned::Unqualified => return None,
        }
        (i..set, StatementKind::Update)
    } else if first.is_word(sql, "DELETE") {
        if top_level_word(sql, t, 1, "USING").is_some() {
            return None;
        }
        let from = top_level_word(sql, t, 1, "FROM")?;
        let end = top_level_word(sql, t, from + 1, "WHERE").unwrap_or(t.len());
        (from + 1..end, StatementKind::Delete)
    } else {
        return None;
    };
    if list.is_empty() {
        return None;
    }
    // A global table's copies are written one by one elsewhere: not here.
    let names_global = t[list.clone()].iter().enumerate().any(|(k, x)| {
        let at = list.start + k;
        if !is_name(x) {
            return false;
        }
        let qualified = at >= list.start + 2 && t[at - 1].is_punct(sql, ".");
        let db = if qualified {
            Some(unquote(&t[at - 2], sql))
        } else {
            session_db.map(str::to_string)
        };
        db.is_some_and(|db| {
            dict.is_global(&crate::dictionary::TableName::new(&db, &unquote(x, sql)))
        })
    });
    if names_global {
        return None;
    }
    let list_text = &sql[t[list.start].start as usize..t[list.end - 1].end as usize];
    let where_text =
        top_level_word(sql, t, list.end, "WHERE").map_or("", |w| &sql[t[w].start as usize..]);
    let select = format!("SELECT 1 FROM {list_text} {where_text}");
    let st = hscale_sql::tokenize(&select).ok()?;
    let srefs = super::refs::table_refs(&select, &st, session_db, dict);
    let Plan::Targets { parts, .. } = plan_join(&select, &st, &srefs, session_db, dict, known)
    else {
        return None;
    };
    let [(target, _)] = parts.as_slice() else {
        return None;
    };
    // The slot's tables, in the order of the SELECT's references, which
    // are the write's table list's.
    let tables: Vec<&str> = target.physical_table.split(" + ").collect();
    let written: Vec<&TableRef> = refs.iter().filter(|r| list.contains(&r.start)).collect();
    if tables.len() != srefs.len() || written.len() != srefs.len() {
        return None;
    }
    let slot = Slot {
        target: target.clone(),
        refs: written
            .into_iter()
            .zip(&tables)
            .map(|(r, p)| {
                (
                    r,
                    Target {
                        backend: target.backend,
                        physical_table: (*p).to_string(),
                    },
                )
            })
            .collect(),
        lists: &[],
    };
    Some(Plan::Targets {
        kind,
        parts: vec![(target.clone(), super::merge::rewrite_slot(sql, t, &slot))],
    })
}

/// Whether a multi-table UPDATE assigns a partition key.
enum KeyAssigned {
    No,
    /// Why it is refused.
    Yes(String),
    /// A column named like a key, unqualified: which table's it is only
    /// the tables' columns tell.
    Unqualified,
}

/// Whether an UPDATE whose table list spans `list` and whose SET clause
/// starts at `set` assigns the partition key of one of the list's
/// partitioned tables. Run here as written, the rows would keep their old
/// key's partition with the new key, where reads by it miss them; the
/// single-table UPDATE moves them.
fn assigned_key(
    sql: &str,
    t: &[Token],
    (list, set): (std::ops::Range<usize>, usize),
    refs: &[TableRef],
    dict: &Dictionary,
) -> KeyAssigned {
    for ((start, end), _) in super::key_move::assignments(sql, t, set) {
        let Some(column) = end.checked_sub(1).and_then(|c| t.get(c)) else {
            continue;
        };
        let column = unquote(column, sql);
        let qualifier =
            (end >= start + 3 && t[end - 2].is_punct(sql, ".")).then(|| unquote(&t[end - 3], sql));
        for r in refs.iter().filter(|r| list.contains(&r.start)) {
            let Some(table) = dict.table(&r.name) else {
                continue;
            };
            let names_it = qualifier.as_deref().is_none_or(|q| {
                r.alias.as_deref().map_or_else(
                    || q.eq_ignore_ascii_case(&r.name.table),
                    |a| q.eq_ignore_ascii_case(a),
                )
            });
            if names_it && column.eq_ignore_ascii_case(&table.column) {
                if qualifier.is_none() {
                    return KeyAssigned::Unqualified;
                }
                return KeyAssigned::Yes(format!(
                    "multi-table UPDATE that assigns the partition key {column} of {} is not supported yet (update the key with a single-table UPDATE, which moves rows between partitions)",
                    r.name
                ));
            }
        }
    }
    KeyAssigned::No
}

/// Index of the first `word` at parenthesis depth 0 at or after `from`.
fn top_level_word(sql: &str, t: &[Token], from: usize, word: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, x) in t.iter().enumerate().skip(from) {
        if x.is_punct(sql, "(") {
            depth += 1;
        } else if x.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 && x.is_word(sql, word) {
            return Some(i);
        }
    }
    None
}
