//! SELECTs that join several tables, at least one of them partitioned.
//!
//! - **One backend**: when every partitioned table is limited to one
//!   partition and those are on one backend (the main backend if the join
//!   reads unpartitioned tables), the join runs there as written.
//! - **Slots**: tables partitioned like the first partitioned table and
//!   joined on its key run once per partition of it; global tables are read
//!   from the copy on that partition's backend.
//! - **Shipping**: any other table is copied into a temporary table next to
//!   each partition (`MergePlan::ship`). When a LEFT JOIN preserves an
//!   unpartitioned or global table, the join runs once on the main backend
//!   with every partitioned table shipped there.
//!
//! A table is limited by the conditions that hold on every row it
//! contributes: the WHERE clause and the ON clauses of inner joins; the
//! inner side of a LEFT JOIN only by its own ON (`WHERE u.k IS NULL` also
//! holds for outer rows without a match). Equalities among those conditions
//! carry key values from one table to another: `a.k = b.k AND a.k = 5`
//! limits `b` to `b.k = 5`.

use std::collections::{BTreeSet, HashMap};

use hscale_sql::{Token, TokenKind};

use super::merge::{Ship, Slot, What};
use super::{is_name, prune, unquote, where_clause, Plan, StatementKind, TableRef, MAX_TABLES};
use crate::dictionary::{Dictionary, PartitionedTable, Target};
use crate::known::Known;
use crate::BackendId;

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
    has_alias: bool,
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
        let mut has_alias = false;
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
                has_alias = true;
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
                } else if depth == 0 && (x.is_word(sql, "ON") || x.is_word(sql, "USING")) {
                    return Err("nested joins without parentheses".into());
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
            has_alias,
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

/// The tables of the FROM clause starting after token `from`, each as
/// (its database as written, if it names one; its name; its qualifier).
pub(super) fn from_list(
    sql: &str,
    t: &[Token],
    from: usize,
) -> Result<Vec<(Option<String>, String, String)>, String> {
    Ok(parse_from(sql, t, from)?
        .into_iter()
        .map(|it| {
            let db = (it.name_at >= 2 && t[it.name_at - 1].is_punct(sql, "."))
                .then(|| unquote(&t[it.name_at - 2], sql));
            (db, unquote(&t[it.name_at], sql), it.qualifier)
        })
        .collect())
}

/// Plan a SELECT joining tables, given the partitioned references in it.
pub(super) fn plan_join(
    sql: &str,
    t: &[Token],
    refs: &[TableRef],
    session_db: Option<&str>,
    dict: &Dictionary,
    known: &Known<'_>,
) -> Plan {
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
    if items.len() > MAX_TABLES {
        return refuse(format!(
            "a join of more than {MAX_TABLES} tables (MariaDB's limit)"
        ));
    }
    let tables = match resolve_tables(sql, t, &items, refs, session_db, dict, known) {
        Ok(tables) => tables,
        Err(why) => return refuse(why),
    };
    let FromTables {
        resolved,
        plain,
        has_plain,
        plain_without_db,
    } = tables;
    if resolved.len() != refs.len() {
        return refuse("a partitioned table is named outside the FROM clause".into());
    }
    let Some(first) = resolved.first() else {
        return Plan::Passthrough;
    };
    if let Some(targets) = one_backend(&resolved, has_plain) {
        let backend = targets[0].backend;
        let slot = slot_on(backend, resolved.iter().map(|x| x.r).zip(targets).collect());
        return one_or_merged(
            sql,
            t,
            vec![slot],
            &resolved[0].item.qualifier,
            first.table,
            false,
        );
    }
    // Tables partitioned like the first one and joined on its key run in
    // each of its partitions. Any other table is shipped: its rows are
    // copied into a temporary table on every part's connection first.
    let first_key = (
        first.item.qualifier.clone(),
        first.table.column.to_ascii_lowercase(),
    );
    let aligned: Vec<Option<Vec<Target>>> = resolved
        .iter()
        .map(|x| {
            aligned_targets(first.table, x.table)
                .filter(|_| x.item.qualifier == first.item.qualifier || x.keys.contains(&first_key))
        })
        .collect();
    let Some(driver) = aligned[0].clone() else {
        return refuse(format!("{} cannot be read by partition", first.r.name));
    };
    let shipped_any = aligned.iter().any(Option::is_none) || !plain.is_empty();
    if shipped_any && plain_without_db {
        return refuse("an unpartitioned table without a database".into());
    }
    // A preserved (outer) table must be the one read by partition, or its
    // unmatched rows would come once per partition. When it is
    // unpartitioned (or global), the whole join runs once on the main
    // backend, every partitioned table shipped there.
    let has_left = items.iter().any(|i| i.join == Join::Left);
    if has_left && items[0].name_at != first.item.name_at {
        if plain_without_db {
            return refuse("an unpartitioned table without a database".into());
        }
        let parts: Vec<_> = resolved
            .iter()
            .map(|x| (x.r, x.table, x.allowed.as_ref()))
            .collect();
        return main_backend_join(sql, t, &parts, first.table);
    }
    if shipped_any {
        if let Some(why) = other_database(&resolved, &aligned, &plain) {
            return refuse(why);
        }
    }
    let shipping = Shipping::new(&resolved, &aligned, &plain);
    let mut slots = Vec::new();
    for s in 0..driver.len() {
        // A partition whose inner-joined tables are excluded holds no rows.
        let excluded = resolved.iter().zip(&aligned).any(|(x, ts)| {
            x.item.join == Join::Inner
                && match ts {
                    Some(ts) => x.allowed.as_ref().is_some_and(|a| !a.contains(&ts[s])),
                    None => false,
                }
        });
        if excluded {
            continue;
        }
        let refs = shipping.slot_refs(&resolved, &aligned, &plain, &driver, s);
        slots.push(slot_on(driver[s].backend, refs));
    }
    if slots.is_empty() {
        // No partition can hold a row: the first one answers (no rows).
        slots.push(Slot {
            target: driver[0].clone(),
            refs: shipping.slot_refs(&resolved, &aligned, &plain, &driver, 0),
            lists: &[],
        });
    }
    let plan = one_or_merged(
        sql,
        t,
        slots,
        &first.item.qualifier,
        first.table,
        !shipping.ships.is_empty(),
    );
    match plan {
        Plan::Merge(mut m) => {
            m.ship = shipping.ships;
            Plan::Merge(m)
        }
        other => other,
    }
}

/// A slot on `backend` reading `refs`, named by the tables it reads.
fn slot_on<'a>(backend: BackendId, refs: Vec<(&'a TableRef, Target)>) -> Slot<'a> {
    Slot {
        target: Target {
            backend,
            physical_table: refs
                .iter()
                .map(|(_, t)| t.physical_table.as_str())
                .collect::<Vec<_>>()
                .join(" + "),
        },
        refs,
        lists: &[],
    }
}

/// Each partitioned table of a join: its reference, the partitions its
/// conditions allow (`None`: all) and the column references equal to its
/// key.
struct Resolved<'i> {
    item: &'i Item,
    r: &'i TableRef,
    table: &'i PartitionedTable,
    allowed: Option<BTreeSet<Target>>,
    keys: BTreeSet<(String, String)>,
}

/// The tables of a join's FROM clause, as the dictionary knows them.
struct FromTables<'i> {
    resolved: Vec<Resolved<'i>>,
    /// Unpartitioned, non-global tables (only on the main backend).
    plain: Vec<TableRef>,
    has_plain: bool,
    plain_without_db: bool,
}

/// Each table of `items`: a partitioned one (one of `refs`) with the
/// partitions the conditions on its rows allow, or an unpartitioned one;
/// global tables are left out (a copy is on every backend). `Err`: why
/// the join is refused.
fn resolve_tables<'i>(
    sql: &str,
    t: &[Token],
    items: &'i [Item],
    refs: &'i [TableRef],
    session_db: Option<&str>,
    dict: &'i Dictionary,
    known: &Known<'_>,
) -> Result<FromTables<'i>, String> {
    let where_cond = where_clause(sql, t);
    let inner_ons: Vec<&[Token]> = items
        .iter()
        .filter(|i| i.join == Join::Inner)
        .filter_map(|i| i.on.map(|(a, b)| &t[a..b]))
        .collect();
    let mut tables = FromTables {
        resolved: Vec::new(),
        plain: Vec::new(),
        has_plain: false,
        plain_without_db: false,
    };
    for item in items {
        let Some(r) = refs.iter().find(|r| r.end == item.name_at + 1) else {
            tables.add_unpartitioned(sql, t, item, session_db, dict);
            continue;
        };
        let Some(table) = dict.table(&r.name) else {
            return Err(format!("{} left the dictionary", r.name));
        };
        // The inner side of a LEFT JOIN is limited by its own ON only:
        // WHERE conditions such as `u.k IS NULL` also hold for outer rows
        // without a match.
        let conds: Vec<&[Token]> = if item.join == Join::Left {
            item.on.map(|(a, b)| &t[a..b]).into_iter().collect()
        } else {
            let mut c = inner_ons.clone();
            c.extend(where_cond);
            c
        };
        let keys = key_class(sql, &conds, item, table);
        let is_key = |c: &[Token]| column_ref(sql, c).is_some_and(|cr| keys.contains(&cr));
        let mut allowed: Option<BTreeSet<Target>> = None;
        for cond in &conds {
            if let Some(set) = prune::targets(sql, cond, &is_key, table, known) {
                allowed = Some(match allowed {
                    None => set,
                    Some(prev) => prev.intersection(&set).cloned().collect(),
                });
            }
        }
        tables.resolved.push(Resolved {
            item,
            r,
            table,
            allowed,
            keys,
        });
    }
    Ok(tables)
}

impl FromTables<'_> {
    /// `item`, a table the dictionary does not partition: nothing for a
    /// global table (a copy is on every backend), else a plain one.
    fn add_unpartitioned(
        &mut self,
        sql: &str,
        t: &[Token],
        item: &Item,
        session_db: Option<&str>,
        dict: &Dictionary,
    ) {
        let qualified = item.name_at >= 2 && t[item.name_at - 1].is_punct(sql, ".");
        let db = if qualified {
            Some(unquote(&t[item.name_at - 2], sql))
        } else {
            session_db.map(str::to_string)
        };
        let is_global = db.is_some_and(|db| {
            dict.is_global(&crate::dictionary::TableName::new(
                &db,
                &unquote(&t[item.name_at], sql),
            ))
        });
        if is_global {
            return;
        }
        self.has_plain = true;
        let qualified_db = qualified.then(|| unquote(&t[item.name_at - 2], sql));
        self.plain_without_db |= qualified_db.is_none() && session_db.is_none();
        if let Some(db) = qualified_db.or_else(|| session_db.map(str::to_string)) {
            self.plain.push(TableRef {
                start: if qualified {
                    item.name_at - 2
                } else {
                    item.name_at
                },
                end: item.name_at + 1,
                name: crate::dictionary::TableName::new(&db, &unquote(&t[item.name_at], sql)),
                alias: item.has_alias.then(|| item.qualifier.clone()),
            });
        }
    }
}

/// The one partition of each table, when every table is limited to one
/// and those are on one backend (the main backend if the join reads
/// unpartitioned tables): the join runs there as written. (On different
/// backends, or with unpartitioned tables away from the main backend, the
/// general path ships tables instead.)
fn one_backend(resolved: &[Resolved<'_>], has_plain: bool) -> Option<Vec<Target>> {
    let single: Option<Vec<Target>> = resolved
        .iter()
        .map(|x| {
            let mut ts: Vec<Target> = match &x.allowed {
                Some(set) => set.iter().cloned().collect(),
                None => x.table.all_targets(),
            };
            if ts.is_empty() {
                ts.push(x.table.default_target());
            }
            (ts.len() == 1).then(|| ts.remove(0))
        })
        .collect();
    single.filter(|targets| {
        let backend = targets[0].backend;
        targets.iter().all(|t| t.backend == backend) && (!has_plain || backend.is_main())
    })
}

/// Why the tables a join ships cannot be: one of another database than
/// the first partitioned table's would be copied next to its partitions.
fn other_database(
    resolved: &[Resolved<'_>],
    aligned: &[Option<Vec<Target>>],
    plain: &[TableRef],
) -> Option<String> {
    let db = &resolved[0].r.name.db;
    let other_db = resolved
        .iter()
        .zip(aligned)
        .filter(|(_, a)| a.is_none())
        .map(|(x, _)| &x.r.name.db)
        .chain(plain.iter().map(|p| &p.name.db))
        .find(|d| *d != db)?;
    Some(format!(
        "it would copy a table of database {other_db} next to partitions of database {db}"
    ))
}

/// The tables a join ships, and the temporary table each becomes.
struct Shipping {
    ships: Vec<Ship>,
    /// Per resolved table: its ship, if it is not read by partition.
    ship_of: Vec<Option<usize>>,
    /// Per plain table: its ship.
    plain_ship: Vec<usize>,
}

impl Shipping {
    fn new(
        resolved: &[Resolved<'_>],
        aligned: &[Option<Vec<Target>>],
        plain: &[TableRef],
    ) -> Shipping {
        let mut ships: Vec<Ship> = Vec::new();
        let mut ship_of: Vec<Option<usize>> = Vec::new();
        for (x, a) in resolved.iter().zip(aligned) {
            if a.is_some() {
                ship_of.push(None);
                continue;
            }
            ships.push(Ship::partitioned(
                ships.len(),
                &x.r.name.db,
                x.table,
                x.allowed.as_ref(),
            ));
            ship_of.push(Some(ships.len() - 1));
        }
        let mut plain_ship = Vec::new();
        for p in plain {
            ships.push(Ship::plain(ships.len(), &p.name));
            plain_ship.push(ships.len() - 1);
        }
        Shipping {
            ships,
            ship_of,
            plain_ship,
        }
    }

    /// What each table reads in the slot of the driving table's partition
    /// `s`: its own aligned partition, or its temporary copy on that
    /// partition's backend.
    fn slot_refs<'r>(
        &self,
        resolved: &[Resolved<'r>],
        aligned: &[Option<Vec<Target>>],
        plain: &'r [TableRef],
        driver: &[Target],
        s: usize,
    ) -> Vec<(&'r TableRef, Target)> {
        let backend = driver[s].backend;
        let temp = |i: usize| Target {
            backend,
            physical_table: self.ships[i].temp.clone(),
        };
        let mut refs: Vec<(&TableRef, Target)> = resolved
            .iter()
            .zip(aligned)
            .zip(&self.ship_of)
            .map(|((x, a), sh)| match (a, sh) {
                (Some(ts), _) => (x.r, ts[s].clone()),
                (None, Some(i)) => (x.r, temp(*i)),
                (None, None) => (x.r, driver[s].clone()),
            })
            .collect();
        for (p, i) in plain.iter().zip(&self.plain_ship) {
            refs.push((p, temp(*i)));
        }
        refs
    }
}

/// A join run once on the main backend, every partitioned table shipped
/// there (into a temporary table).
fn main_backend_join(
    sql: &str,
    t: &[Token],
    partitioned: &[(&TableRef, &PartitionedTable, Option<&BTreeSet<Target>>)],
    first: &PartitionedTable,
) -> Plan {
    let mut ships = Vec::new();
    let mut refs: Vec<(&TableRef, Target)> = Vec::new();
    for (r, table, allowed) in partitioned {
        let ship = Ship::partitioned(ships.len(), &r.name.db, table, *allowed);
        let temp = ship.temp.clone();
        ships.push(ship);
        refs.push((
            r,
            Target {
                backend: BackendId::MAIN,
                physical_table: temp,
            },
        ));
    }
    let slot = Slot {
        target: Target {
            backend: BackendId::MAIN,
            physical_table: refs
                .iter()
                .map(|(_, t)| t.physical_table.as_str())
                .collect::<Vec<_>>()
                .join(" + "),
        },
        refs,
        lists: &[],
    };
    match one_or_merged(sql, t, vec![slot], "", first, true) {
        Plan::Merge(mut m) => {
            m.ship = ships;
            Plan::Merge(m)
        }
        other => other,
    }
}

/// One statement per slot: concatenated, or merged when the statement
/// orders, limits or aggregates.
fn one_or_merged(
    sql: &str,
    t: &[Token],
    slots: Vec<Slot<'_>>,
    qualifier: &str,
    table: &PartitionedTable,
    ships: bool,
) -> Plan {
    if (slots.len() > 1 || ships) && super::needs_merge(sql, t) {
        let what = What {
            table: format!("the join with {}", table.name),
            hint: format!(
                "limit it to one partition with {qualifier}.{} = <value>",
                table.column
            ),
        };
        return super::merge::plan_merge(sql, t, &slots, &what);
    }
    let parts: Vec<(Target, String)> = slots
        .iter()
        .map(|slot| {
            (
                slot.target.clone(),
                super::merge::rewrite_slot_labelled(sql, t, slot),
            )
        })
        .collect();
    if ships {
        // Shipped tables are set up by the merge executor.
        return Plan::Merge(super::merge::MergePlan {
            parts,
            mode: super::merge::Mode::Sort { hidden: 0 },
            order: Vec::new(),
            offset: 0,
            limit: None,
            ship: Vec::new(),
            fallback: None,
            aliased: None,
        });
    }
    Plan::Targets {
        kind: StatementKind::Select,
        parts,
    }
}

/// For tables partitioned like `first` (same function, key kind, values,
/// and each partition's values on the same backend), `other`'s target for
/// each of `first.all_targets()`; `None` when they are partitioned
/// differently.
fn aligned_targets(first: &PartitionedTable, other: &PartitionedTable) -> Option<Vec<Target>> {
    if first.function != other.function
        || first.default_backend != other.default_backend
        || first.is_key_integer != other.is_key_integer
        || !first.is_key_exact
        || !other.is_key_exact
        || first.key_enum != other.key_enum
        || !first.values.keys().eq(other.values.keys())
    {
        return None;
    }
    let mut out = vec![other.default_target()];
    for (name, p) in &first.partitions {
        let values: Vec<&String> = first
            .values
            .iter()
            .filter(|(_, n)| *n == name)
            .map(|(v, _)| v)
            .collect();
        let theirs = other.values.get(*values.first()?)?;
        let same_set = values.iter().all(|v| other.values.get(*v) == Some(theirs))
            && other.values.values().filter(|n| *n == theirs).count() == values.len();
        let q = other.partitions.get(theirs)?;
        if !same_set || q.backend != p.backend {
            return None;
        }
        out.push(Target {
            backend: q.backend,
            physical_table: q.physical_table(&other.name.table),
        });
    }
    Some(out)
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
    // Column references joined by `x = y` conjuncts, both ways.
    let mut equal: HashMap<(String, String), Vec<(String, String)>> = HashMap::new();
    for cond in conds {
        let Some(conjuncts) = super::conjuncts(sql, cond) else {
            continue;
        };
        for c in conjuncts {
            let Some(eq) = c.iter().position(|x| x.is_punct(sql, "=")) else {
                continue;
            };
            if let (Some(a), Some(b)) = (column_ref(sql, &c[..eq]), column_ref(sql, &c[eq + 1..])) {
                equal.entry(a.clone()).or_default().push(b.clone());
                equal.entry(b).or_default().push(a);
            }
        }
    }
    // Everything reachable from the key, each reference visited once.
    let mut todo: Vec<(String, String)> = class.iter().cloned().collect();
    while let Some(x) = todo.pop() {
        for y in equal.remove(&x).unwrap_or_default() {
            if class.insert(y.clone()) {
                todo.push(y);
            }
        }
    }
    class
}
