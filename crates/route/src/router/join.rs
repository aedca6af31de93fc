//! SELECTs that join several tables, at least one of them partitioned.
//!
//! Such a join runs as it is written, on one backend, when every
//! partitioned table in it is limited to one partition and all those
//! partitions are on one backend (the main backend if the join also reads
//! unpartitioned tables). A table is limited by the conditions that hold on
//! every row it contributes: the WHERE clause, the ON clauses of inner
//! joins, and its own ON clause if it is the right side of a LEFT JOIN.
//! Equalities among those conditions carry key values from one table to
//! another: `a.k = b.k AND a.k = 5` limits `b` to `b.k = 5`.

use std::collections::BTreeSet;

use hscale_sql::{Token, TokenKind};

use super::{is_name, physical_name, prune, unquote, where_clause, Plan, StatementKind, TableRef};
use crate::dictionary::{Dictionary, PartitionedTable, Target};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    /// The first table, `,`, `[INNER | CROSS] JOIN`, `STRAIGHT_JOIN`.
    Inner,
    Left,
}

/// One table of the FROM clause.
struct Item {
    /// Token index of the name (after `db .`).
    name_at: usize,
    /// What columns are qualified with: the alias, else the table name.
    qualifier: String,
    join: Join,
    /// Token range of the ON condition.
    on: Option<(usize, usize)>,
}

const FROM_END: &[&str] = &[
    "WHERE",
    "GROUP",
    "HAVING",
    "ORDER",
    "LIMIT",
    "WINDOW",
    "FOR",
    "LOCK",
    "INTO",
    "PROCEDURE",
];

const JOIN_WORDS: &[&str] = &[
    "JOIN",
    "INNER",
    "CROSS",
    "LEFT",
    "RIGHT",
    "NATURAL",
    "STRAIGHT_JOIN",
    "OUTER",
];

fn is_any(t: &Token, sql: &str, words: &[&str]) -> bool {
    t.kind == TokenKind::Word && words.iter().any(|w| t.text(sql).eq_ignore_ascii_case(w))
}

/// The tables of the FROM clause starting after token `from`.
fn parse_from(sql: &str, t: &[Token], from: usize) -> Result<Vec<Item>, String> {
    let mut items = Vec::new();
    let mut i = from + 1;
    let mut join = Join::Inner;
    loop {
        let Some(first) = t.get(i) else {
            return Err("a FROM clause that ends early".into());
        };
        if first.is_punct(sql, "(") {
            return Err("parenthesized table references or derived tables".into());
        }
        if !is_name(first) {
            return Err(format!("{:?} in the FROM clause", first.text(sql)));
        }
        let mut name_at = i;
        if t.get(i + 1).is_some_and(|x| x.is_punct(sql, ".")) && t.get(i + 2).is_some_and(is_name) {
            name_at = i + 2;
        }
        i = name_at + 1;
        if t.get(i).is_some_and(|x| x.is_word(sql, "AS")) {
            i += 1;
        }
        let mut qualifier = unquote(&t[name_at], sql);
        if let Some(a) = t.get(i) {
            let reserved = is_any(a, sql, FROM_END)
                || is_any(a, sql, JOIN_WORDS)
                || is_any(
                    a,
                    sql,
                    &["ON", "USING", "USE", "FORCE", "IGNORE", "PARTITION"],
                );
            if is_name(a) && !reserved {
                qualifier = unquote(a, sql);
                i += 1;
            }
        }
        // Index hints: USE | FORCE | IGNORE {INDEX | KEY} [FOR ...] (list)
        while t
            .get(i)
            .is_some_and(|x| is_any(x, sql, &["USE", "FORCE", "IGNORE"]))
        {
            let Some(open) = t[i..].iter().position(|x| x.is_punct(sql, "(")) else {
                return Err("an index hint without a list".into());
            };
            let Some(close) = t[i + open..].iter().position(|x| x.is_punct(sql, ")")) else {
                return Err("an index hint without a list".into());
            };
            i += open + close + 1;
        }
        let mut on = None;
        if t.get(i).is_some_and(|x| x.is_word(sql, "ON")) {
            let start = i + 1;
            let mut depth = 0i32;
            let mut j = start;
            while let Some(x) = t.get(j) {
                if x.is_punct(sql, "(") {
                    depth += 1;
                } else if x.is_punct(sql, ")") {
                    depth -= 1;
                } else if depth == 0
                    && (x.is_punct(sql, ",")
                        || is_any(x, sql, JOIN_WORDS)
                        || is_any(x, sql, FROM_END))
                {
                    break;
                }
                j += 1;
            }
            on = Some((start, j));
            i = j;
        } else if t.get(i).is_some_and(|x| x.is_word(sql, "USING")) {
            let Some(close) = t[i..].iter().position(|x| x.is_punct(sql, ")")) else {
                return Err("USING without a column list".into());
            };
            i += close + 1;
        }
        items.push(Item {
            name_at,
            qualifier,
            join,
            on,
        });
        // What joins the next table.
        let Some(x) = t.get(i) else {
            return Ok(items);
        };
        if x.is_punct(sql, ",") {
            join = Join::Inner;
            i += 1;
            continue;
        }
        if is_any(x, sql, FROM_END) {
            return Ok(items);
        }
        let mut words = Vec::new();
        while let Some(w) = t.get(i).filter(|w| is_any(w, sql, JOIN_WORDS)) {
            words.push(w.text(sql).to_ascii_uppercase());
            i += 1;
            if words
                .last()
                .is_some_and(|w| w == "JOIN" || w == "STRAIGHT_JOIN")
            {
                break;
            }
        }
        join = match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["JOIN"] | ["INNER", "JOIN"] | ["CROSS", "JOIN"] | ["STRAIGHT_JOIN"] => Join::Inner,
            ["LEFT", "JOIN"] | ["LEFT", "OUTER", "JOIN"] => Join::Left,
            ["NATURAL", ..] => return Err("NATURAL JOIN".into()),
            ["RIGHT", ..] => return Err("RIGHT JOIN (write it as a LEFT JOIN)".into()),
            _ => return Err(format!("{:?} in the FROM clause", x.text(sql))),
        };
    }
}

/// Plan a SELECT joining tables, given the partitioned references in it.
pub(super) fn plan_join(sql: &str, t: &[Token], refs: &[TableRef], dict: &Dictionary) -> Plan {
    let refuse = |why: String| {
        Plan::Refuse(format!(
            "this join of partitioned tables is not supported yet: {why}"
        ))
    };
    let Some(from) = t.iter().position(|x| x.is_word(sql, "FROM")) else {
        return refuse("no FROM clause".into());
    };
    let items = match parse_from(sql, t, from) {
        Ok(items) => items,
        Err(why) => return refuse(why),
    };
    let where_cond = where_clause(sql, t);
    let inner_ons: Vec<&[Token]> = items
        .iter()
        .filter(|i| i.join == Join::Inner)
        .filter_map(|i| i.on.map(|(a, b)| &t[a..b]))
        .collect();
    let mut backend = None;
    let mut has_plain = false;
    let mut chosen: Vec<(&TableRef, Target)> = Vec::new();
    for item in &items {
        let Some(r) = refs.iter().find(|r| r.end == item.name_at + 1) else {
            has_plain = true;
            continue;
        };
        let Some(table) = dict.table(&r.name) else {
            return refuse(format!("{} left the dictionary", r.name));
        };
        let mut conds: Vec<&[Token]> = inner_ons.clone();
        conds.extend(where_cond);
        if item.join == Join::Left {
            conds.extend(item.on.map(|(a, b)| &t[a..b]));
        }
        let keys = key_class(sql, &conds, item, table);
        let is_key = |c: &[Token]| column_ref(sql, c).is_some_and(|cr| keys.contains(&cr));
        let mut targets: Option<BTreeSet<Target>> = None;
        for cond in &conds {
            if let Some(set) = prune::targets(sql, cond, &is_key, table) {
                targets = Some(match targets {
                    None => set,
                    Some(prev) => prev.intersection(&set).cloned().collect(),
                });
            }
        }
        let mut targets: Vec<Target> = match targets {
            Some(set) => set.into_iter().collect(),
            None => table.all_targets(),
        };
        if targets.is_empty() {
            targets.push(table.default_target());
        }
        if targets.len() > 1 {
            return refuse(format!(
                "{} is not limited to one partition; add {}.{} = <value> (or join it on its key to a table that is)",
                item.qualifier, item.qualifier, table.column
            ));
        }
        let target = targets.remove(0);
        if *backend.get_or_insert(target.backend) != target.backend {
            return refuse(format!(
                "the partitions it reads are on different backends ({} is on #{})",
                target.physical_table, target.backend
            ));
        }
        chosen.push((r, target));
    }
    if chosen.len() != refs.len() {
        return refuse("a partitioned table is named outside the FROM clause".into());
    }
    let Some(backend) = backend else {
        return Plan::Passthrough;
    };
    if has_plain && backend != 0 {
        return refuse(format!(
            "it reads unpartitioned tables, which are on the main backend, and partitions on backend #{backend}"
        ));
    }
    let mut out = sql.to_string();
    let mut names = Vec::new();
    chosen.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    for (r, target) in &chosen {
        let a = t[r.start].start as usize;
        let b = t[r.end - 1].end as usize;
        out.replace_range(a..b, &physical_name(r, target, true));
        names.push(target.physical_table.clone());
    }
    names.reverse();
    let target = Target {
        backend,
        physical_table: names.join(" + "),
    };
    Plan::Targets {
        kind: StatementKind::Select,
        parts: vec![(target, out)],
    }
}

/// A column reference: (qualifier or "" when unqualified, lowercase column).
fn column_ref(sql: &str, c: &[Token]) -> Option<(String, String)> {
    match c {
        [col] if is_name(col) => Some((String::new(), unquote(col, sql).to_ascii_lowercase())),
        [q, dot, col] if is_name(q) && dot.is_punct(sql, ".") && is_name(col) => {
            Some((unquote(q, sql), unquote(col, sql).to_ascii_lowercase()))
        }
        _ => None,
    }
}

/// The column references equal to `item`'s key under `conds`: the key
/// itself (qualified, or unqualified, which in a valid statement can only
/// mean this table's column or a USING column equal to it) and whatever
/// top-level `x = y` conjuncts chain to it.
fn key_class(
    sql: &str,
    conds: &[&[Token]],
    item: &Item,
    table: &PartitionedTable,
) -> BTreeSet<(String, String)> {
    let key = table.column.to_ascii_lowercase();
    let mut class: BTreeSet<(String, String)> =
        [(item.qualifier.clone(), key.clone()), (String::new(), key)].into();
    let mut pairs = Vec::new();
    for cond in conds {
        let Some(conjuncts) = super::conjuncts(sql, cond) else {
            continue;
        };
        for c in conjuncts {
            let Some(eq) = c.iter().position(|x| x.is_punct(sql, "=")) else {
                continue;
            };
            if let (Some(a), Some(b)) = (column_ref(sql, &c[..eq]), column_ref(sql, &c[eq + 1..])) {
                pairs.push((a, b));
            }
        }
    }
    loop {
        let before = class.len();
        for (a, b) in &pairs {
            if class.contains(a) {
                class.insert(b.clone());
            }
            if class.contains(b) {
                class.insert(a.clone());
            }
        }
        if class.len() == before {
            return class;
        }
    }
}
