//! Global unique indexes (`docs/src/unique-keys.md`): statements on a
//! table whose UNIQUE key lacks the partition key, kept in step with the
//! key's lookup table (`dictionary::Lookup`, itself a partitioned table of
//! the dictionary, partitioned by the key's value).
//!
//! ```text
//!  INSERT ─► the rows' parts, then each index's rows (planned on its lookup table)  ─► UniqueWrite
//!  DELETE ─► the parts with RETURNING the indexed columns, then their lookup rows deleted ─► UniqueWrite
//!  UPDATE of an indexed column ─► UniqueWrite with an IndexUpdate
//!  INSERT IGNORE / ON DUPLICATE KEY UPDATE ─► UniqueWrite row by row (`lookup_rows.rs`)
//!  REPLACE ─► refused
//!  ... WHERE col = c / col IN (c, ..) over several partitions ─► ByLookup: the lookup read, then
//!      the statement on the partitions of the keys it found
//! ```
//!
//! Planned only for a table with lookups: [`wrap`] is called after the
//! table's own plan, behind one `table.lookups.is_empty()` check.

use hscale_sql::Token;

use super::insert::{insert_rows, top_level_items, InsertRows};
use super::lookup_rows::{OnDuplicate, RowByRow};
use super::single::key_assignment;
use super::syntax::{conjuncts, is_constant, is_name, unquote, where_clause};
use super::{plan, Plan, Scope, StatementKind, TableRef};
use crate::dictionary::{Lookup, PartitionedTable, TableName, Target};

/// A write to a table with global unique indexes and the writes of its
/// lookup tables, run as one statement (all of them or none: in its own
/// transaction, two-phase across backends, or behind the statement
/// savepoint inside the client's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueWrite {
    pub table: TableName,
    pub kind: StatementKind,
    /// The write as planned without the indexes. A DELETE's parts end
    /// with `RETURNING` the indexed columns (`deletes`, in order).
    pub parts: Vec<(Target, String)>,
    /// INSERT: each index's new rows (in the order of their text),
    /// planned on its lookup table; run before the rows
    /// (`exec/unique.rs` says why).
    pub inserts: Vec<IndexRows>,
    /// DELETE: the indexes whose rows go with the rows deleted.
    pub deletes: Vec<Lookup>,
    /// UPDATE of indexed columns: how the rows it changes are read.
    pub update: Option<IndexUpdate>,
    /// An INSERT of one row: when its index row is refused, its own
    /// insert tells whether one server names another key first (a row
    /// colliding on PRIMARY and on the indexed column is named PRIMARY).
    pub is_one_row: bool,
    /// INSERT IGNORE, ON DUPLICATE KEY UPDATE: the rows one by one
    /// (`lookup_rows.rs`), in place of `parts` and `inserts`.
    pub row_by_row: Option<RowByRow>,
}

/// An UPDATE that assigns indexed columns (`exec/unique.rs`): the keys of
/// the rows it matches read and locked first, the rows of those keys read
/// before and after it, and the index changed by the difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexUpdate {
    /// `SELECT key FROM <the UPDATE's table and WHERE> FOR UPDATE`.
    pub select: String,
    /// The indexes whose columns the UPDATE assigns.
    pub lookups: Vec<Lookup>,
}

/// The read of the rows of `table` whose partition key is one of `keys`
/// (literals): the key, then each of `lookups`' columns; locked when
/// `is_locking`.
pub fn rows_by_keys_sql(
    table: &PartitionedTable,
    lookups: &[Lookup],
    keys: &[String],
    is_locking: bool,
) -> String {
    let columns: Vec<String> = std::iter::once(&table.column)
        .chain(lookups.iter().map(|l| &l.column))
        .map(|c| quoted(c))
        .collect();
    format!(
        "SELECT {} FROM {} WHERE {} IN ({}){}",
        columns.join(", "),
        qualified(&table.name),
        quoted(&table.column),
        keys.join(", "),
        if is_locking { " FOR UPDATE" } else { "" }
    )
}

/// The new rows of one index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRows {
    pub lookup: Lookup,
    pub parts: Vec<(Target, String)>,
}

/// A statement that finds its rows by an indexed column: `read` on the
/// lookup table gives the partition keys of the rows, and `inner` runs on
/// their partitions only (every part when the read gives no key: then on
/// its first part, which answers as the others would, with no row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByLookup {
    pub table: TableName,
    pub lookup: Lookup,
    /// `SELECT key FROM lookup WHERE column IN (values)`, planned.
    pub read: Vec<(Target, String)>,
    pub inner: Box<Plan>,
}

impl ByLookup {
    /// Keep only the inner plan's parts that hold `targets` (the
    /// partitions of the keys the lookup read found); the first part when
    /// none does (it answers as the others would: no row). A merge's part
    /// may read several partitions of its backend in one fragment: its
    /// parts are kept by backend.
    pub fn narrow(&mut self, targets: &[Target]) {
        let (parts, by_backend) = match self.inner.as_mut() {
            Plan::Targets { parts, .. } => (parts, false),
            Plan::Merge(m) => (&mut m.parts, true),
            Plan::UniqueWrite(w) => (&mut w.parts, false),
            _ => return,
        };
        let first = parts.first().cloned();
        parts.retain(|(t, _)| {
            targets
                .iter()
                .any(|x| x == t || (by_backend && x.backend == t.backend))
        });
        if parts.is_empty() {
            parts.extend(first);
        }
    }
}

/// A backquoted name.
fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

pub(super) fn qualified(name: &TableName) -> String {
    format!("{}.{}", quoted(&name.db), quoted(&name.table))
}

/// `plan`, the table's own plan of the statement, made to keep `table`'s
/// global unique indexes (see the module).
pub(super) fn wrap(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    (kind, prepared): (StatementKind, bool),
    plan: Plan,
    scope: Scope<'_>,
) -> Plan {
    let columns = || {
        table
            .lookups
            .iter()
            .map(|l| l.column.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let refuse = |what: &str| {
        Plan::Refuse(format!(
            "{what} on {}, whose UNIQUE {} is enforced across partitions by a global unique index, is not supported yet",
            table.name,
            columns()
        ))
    };
    let first = tokens.first().map(|t| t.text(sql).to_ascii_uppercase());
    match kind {
        StatementKind::Insert => {
            if first.as_deref() == Some("REPLACE") {
                return refuse("REPLACE");
            }
            let on_duplicate = if tokens[r.end..].iter().any(|t| t.is_word(sql, "DUPLICATE")) {
                Some(OnDuplicate::Update)
            } else if tokens[..r.start].iter().any(|t| t.is_word(sql, "IGNORE")) {
                Some(OnDuplicate::Ignore)
            } else {
                None
            };
            // A prepared INSERT runs as its text at each execution
            // (`exec/prepared/routing.rs`), planned here again then.
            if prepared {
                return plan;
            }
            match (plan, on_duplicate) {
                (Plan::Targets { .. }, Some(d)) => {
                    super::lookup_rows::row_by_row(sql, tokens, r, table, d, scope)
                }
                (Plan::Targets { kind, parts }, None) => {
                    insert(sql, tokens, r, table, kind, parts, scope)
                }
                (other, _) => other,
            }
        }
        StatementKind::Update | StatementKind::Delete => {
            if kind == StatementKind::Update {
                let assigned = assigned_lookups(sql, tokens, table);
                if !assigned.is_empty() {
                    return update(sql, tokens, r, table, (assigned, prepared), plan, scope);
                }
            }
            if prepared {
                // Each execution runs as its text (see INSERT above).
                return match plan {
                    Plan::KeyMove(_) => refuse("UPDATE of the partition key"),
                    other => other,
                };
            }
            let plan = match plan {
                Plan::KeyMove(_) => return refuse("UPDATE of the partition key"),
                Plan::OrderedWrite(_) if kind == StatementKind::Delete => {
                    return refuse("DELETE with ORDER BY or LIMIT over several partitions")
                }
                Plan::Targets { kind, parts } if kind == StatementKind::Delete => {
                    if tokens.iter().any(|t| {
                        t.is_word(sql, "RETURNING")
                            || t.is_word(sql, "LIMIT")
                            || t.is_word(sql, "ORDER")
                    }) {
                        return refuse("DELETE with ORDER BY, LIMIT or RETURNING");
                    }
                    let returning = table
                        .lookups
                        .iter()
                        .map(|l| quoted(&l.column))
                        .collect::<Vec<_>>()
                        .join(", ");
                    Plan::UniqueWrite(Box::new(UniqueWrite {
                        table: table.name.clone(),
                        kind,
                        parts: parts
                            .into_iter()
                            .map(|(t, s)| (t, format!("{} RETURNING {returning}", s.trim_end())))
                            .collect(),
                        inserts: Vec::new(),
                        deletes: table.lookups.clone(),
                        update: None,
                        is_one_row: false,
                        row_by_row: None,
                    }))
                }
                other => other,
            };
            by_lookup(sql, tokens, r, table, plan, scope)
        }
        StatementKind::Select => by_lookup(sql, tokens, r, table, plan, scope),
        StatementKind::Schema => plan,
    }
}

/// The indexes whose columns an UPDATE's SET clause assigns.
fn assigned_lookups(sql: &str, tokens: &[Token], table: &PartitionedTable) -> Vec<Lookup> {
    table
        .lookups
        .iter()
        .filter(|l| {
            let is_it = |t: &[Token]| {
                let c = match t {
                    [c] => c,
                    [_, dot, c] if dot.is_punct(sql, ".") => c,
                    _ => return false,
                };
                is_name(c) && unquote(c, sql).eq_ignore_ascii_case(&l.column)
            };
            key_assignment(sql, tokens, is_it).is_some()
        })
        .cloned()
        .collect()
}

/// An UPDATE that assigns indexed columns (`assigned`): a `UniqueWrite`
/// with its [`IndexUpdate`], or a refusal of the forms it does not keep.
fn update(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    (assigned, prepared): (Vec<Lookup>, bool),
    plan: Plan,
    scope: Scope<'_>,
) -> Plan {
    let what = |form: &str| {
        Plan::Refuse(format!(
            "{form} on {}, whose UNIQUE {} is enforced across partitions by a global unique index, is not supported yet",
            table.name,
            assigned.iter().map(|l| l.column.as_str()).collect::<Vec<_>>().join(", ")
        ))
    };
    if tokens.iter().take(4).any(|t| t.is_word(sql, "IGNORE")) {
        return what("UPDATE IGNORE of a column with a global unique index");
    }
    let parts = match plan {
        Plan::KeyMove(_) => {
            return what("UPDATE of the partition key together with a column with a global unique index")
        }
        Plan::OrderedWrite(_) => {
            return what("UPDATE with ORDER BY or LIMIT over several partitions of a column with a global unique index")
        }
        // Each execution runs as its text, planned here again then.
        other if prepared => return other,
        Plan::Targets {
            kind: StatementKind::Update,
            parts,
        } => parts,
        Plan::Refuse(why) => return Plan::Refuse(why),
        _ => return what("this UPDATE of a column with a global unique index"),
    };
    let Some(set_at) = tokens.iter().position(|t| t.is_word(sql, "SET")) else {
        return Plan::Refuse("internal: an UPDATE without SET".into());
    };
    let list = super::key_move::assignments(sql, tokens, set_at);
    let column = quoted(&table.column);
    let select =
        match super::key_move::locking_read(sql, tokens, r, &list, &|q| format!("{q}.{column}")) {
            Ok(s) => s,
            Err(why) => return Plan::Refuse(why),
        };
    let w = Plan::UniqueWrite(Box::new(UniqueWrite {
        table: table.name.clone(),
        kind: StatementKind::Update,
        parts,
        inserts: Vec::new(),
        deletes: Vec::new(),
        update: Some(IndexUpdate {
            select,
            lookups: assigned,
        }),
        is_one_row: false,
        row_by_row: None,
    }));
    by_lookup(sql, tokens, r, table, w, scope)
}

/// An INSERT's rows with each index's rows (see [`UniqueWrite::inserts`]).
fn insert(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    kind: StatementKind,
    parts: Vec<(Target, String)>,
    scope: Scope<'_>,
) -> Plan {
    let InsertRows {
        columns,
        names,
        key_pos,
        rows,
        ..
    } = match insert_rows(sql, tokens, r, table) {
        Ok(p) => p,
        Err(why) => return Plan::Refuse(format!("{why} (partitioned table {})", table.name)),
    };
    let Some(key_pos) = key_pos else {
        return Plan::Refuse(format!(
            "an INSERT into {} without its partition key {}: its global unique index needs each row's key",
            table.name, table.column
        ));
    };
    let mut inserts = Vec::with_capacity(table.lookups.len());
    for lookup in &table.lookups {
        // A column the INSERT does not name takes its default, which
        // SETUP_TABLE made sure is NULL: no index row.
        let Some(at) = names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(&lookup.column))
        else {
            continue;
        };
        let mut values = Vec::new();
        for &(a, b) in &rows {
            let items = top_level_items(sql, &tokens[a + 1..b]);
            if items.len() != columns {
                // The server refuses the row (1136) before it writes.
                return Plan::Targets { kind, parts };
            }
            let (v, k) = (items[at], items[key_pos]);
            if matches!(v, [n] if n.is_word(sql, "NULL")) {
                continue;
            }
            if !is_constant(sql, v) || !is_constant(sql, k) {
                return Plan::Refuse(format!(
                    "a value of {} or of the partition key {} that is not a constant, in an INSERT into {} (its global unique index on {} stores the values)",
                    lookup.column, table.column, table.name, lookup.column
                ));
            }
            let text = |t: &[Token]| &sql[t[0].start as usize..t[t.len() - 1].end as usize];
            values.push(format!("({}, {})", text(v), text(k)));
        }
        if values.is_empty() {
            continue;
        }
        // In one order for every statement: two INSERTs of the same
        // values in other orders wait for each other, never deadlock.
        values.sort();
        let write = format!(
            "INSERT INTO {} ({}, {}) VALUES {}",
            qualified(&lookup.table),
            quoted(&lookup.column),
            quoted(&table.column),
            values.join(", ")
        );
        match plan(&write, None, scope.dict, scope.known) {
            Plan::Targets { parts, .. } => inserts.push(IndexRows {
                lookup: lookup.clone(),
                parts,
            }),
            Plan::Refuse(why) => return Plan::Refuse(why),
            _ => {
                return Plan::Refuse(format!(
                    "the lookup table {} of {} is not a partitioned table",
                    lookup.table, table.name
                ))
            }
        }
    }
    Plan::UniqueWrite(Box::new(UniqueWrite {
        table: table.name.clone(),
        kind,
        parts,
        inserts,
        deletes: Vec::new(),
        update: None,
        is_one_row: rows.len() == 1,
        row_by_row: None,
    }))
}

/// `plan` over several partitions narrowed by an index: a top-level
/// `column = constant` or `column IN (constants)` of an indexed column.
fn by_lookup(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    plan: Plan,
    scope: Scope<'_>,
) -> Plan {
    let parts = match &plan {
        Plan::Targets { parts, .. } => parts.len(),
        Plan::Merge(m) if m.ship.is_empty() => m.parts.len(),
        Plan::UniqueWrite(w) => w.parts.len(),
        _ => 0,
    };
    if parts < 2 {
        return plan;
    }
    let Some(found) = indexed_values(sql, tokens, r, table) else {
        return plan;
    };
    let (lookup, values) = found;
    let read = format!(
        "SELECT {} FROM {} WHERE {} IN ({}){}",
        quoted(&table.column),
        qualified(&lookup.table),
        quoted(&lookup.column),
        values.join(", "),
        lookup_lock(sql, tokens)
    );
    match super::plan(&read, None, scope.dict, scope.known) {
        Plan::Targets { parts, .. } => Plan::ByLookup(Box::new(ByLookup {
            table: table.name.clone(),
            lookup: lookup.clone(),
            read: parts,
            inner: Box::new(plan),
        })),
        _ => plan,
    }
}

/// How the lookup read of a statement by an indexed value locks: as the
/// statement locks its rows (a write, a locking read), so that a change
/// of the value's row in progress elsewhere (a DELETE and an INSERT of the
/// value under another key) is waited for and its outcome read, as one
/// server's locking read of the unique index waits and reads the row the
/// value has then. A plain read reads the index without locks.
fn lookup_lock(sql: &str, tokens: &[Token]) -> &'static str {
    let first = tokens.first();
    if first.is_some_and(|t| t.is_word(sql, "UPDATE") || t.is_word(sql, "DELETE")) {
        return " FOR UPDATE";
    }
    let at = |i: usize, w: &str| tokens.get(i).is_some_and(|t| t.is_word(sql, w));
    for i in 0..tokens.len() {
        if at(i, "FOR") && at(i + 1, "UPDATE") {
            return " FOR UPDATE";
        }
        if (at(i, "FOR") && at(i + 1, "SHARE")) || (at(i, "LOCK") && at(i + 1, "IN")) {
            return " LOCK IN SHARE MODE";
        }
    }
    ""
}

/// Whether prepared statement `sql` (on `table`) holds an indexed column
/// to a parameter in a top-level conjunct (`column = ?`, `column IN (?,
/// ..)`): each execution can then run as its text through the index
/// (`exec/prepared/routing.rs`).
pub fn reads_by_index(sql: &str, table: &PartitionedTable) -> bool {
    if table.lookups.is_empty() {
        return false;
    }
    let Ok(tokens) = hscale_sql::tokenize(sql) else {
        return false;
    };
    let Some(cond) = where_clause(sql, &tokens) else {
        return false;
    };
    let Some(parts) = conjuncts(sql, cond) else {
        return false;
    };
    let is_indexed = |t: &[Token]| {
        let c = match t {
            [c] => c,
            [_, dot, c] if dot.is_punct(sql, ".") => c,
            _ => return false,
        };
        is_name(c)
            && table
                .lookups
                .iter()
                .any(|l| unquote(c, sql).eq_ignore_ascii_case(&l.column))
    };
    let is_param = |t: &[Token]| matches!(t, [p] if p.kind == hscale_sql::TokenKind::Placeholder);
    parts.iter().any(|c| {
        if let Some(eq) = c.iter().position(|t| t.is_punct(sql, "=")) {
            return is_indexed(&c[..eq]) && is_param(&c[eq + 1..]);
        }
        c.iter()
            .position(|t| t.is_word(sql, "IN"))
            .is_some_and(|at| {
                is_indexed(&c[..at])
                    && c[at + 1..]
                        .iter()
                        .any(|t| t.kind == hscale_sql::TokenKind::Placeholder)
            })
    })
}

/// The first index whose column a top-level conjunct of the WHERE clause
/// holds to constants, and their texts.
fn indexed_values<'a>(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &'a PartitionedTable,
) -> Option<(&'a Lookup, Vec<String>)> {
    let cond = where_clause(sql, tokens)?;
    // Not a subquery's WHERE: the statement's own level only.
    let w = tokens.iter().position(|t| t.is_word(sql, "WHERE"))?;
    let depth: i32 = tokens[..w]
        .iter()
        .map(|t| i32::from(t.is_punct(sql, "(")) - i32::from(t.is_punct(sql, ")")))
        .sum();
    if depth != 0 {
        return None;
    }
    let qualifiers: Vec<&str> = [Some(r.name.table.as_str()), r.alias.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let column_of = |t: &[Token]| -> Option<&'a Lookup> {
        let c = match t {
            [c] => c,
            [q, dot, c]
                if is_name(q)
                    && dot.is_punct(sql, ".")
                    && qualifiers
                        .iter()
                        .any(|x| unquote(q, sql).eq_ignore_ascii_case(x)) =>
            {
                c
            }
            _ => return None,
        };
        if !is_name(c) {
            return None;
        }
        let name = unquote(c, sql);
        table
            .lookups
            .iter()
            .find(|l| l.column.eq_ignore_ascii_case(&name))
    };
    let text = |t: &[Token]| sql[t[0].start as usize..t[t.len() - 1].end as usize].to_string();
    let is_value = |t: &[Token]| is_constant(sql, t) && !t.is_empty();
    for c in conjuncts(sql, cond)? {
        // col = constant, constant = col
        if let Some(eq) = c.iter().position(|t| t.is_punct(sql, "=")) {
            let (a, b) = (&c[..eq], &c[eq + 1..]);
            if let (Some(l), true) = (column_of(a), is_value(b)) {
                return Some((l, vec![text(b)]));
            }
            if let (Some(l), true) = (column_of(b), is_value(a)) {
                return Some((l, vec![text(a)]));
            }
            continue;
        }
        // col IN (constant, ...)
        let Some(at) = c.iter().position(|t| t.is_word(sql, "IN")) else {
            continue;
        };
        let Some(l) = column_of(&c[..at]) else {
            continue;
        };
        let list = &c[at + 1..];
        if list.len() < 2 || !list[0].is_punct(sql, "(") || !list[list.len() - 1].is_punct(sql, ")")
        {
            continue;
        }
        let items = top_level_items(sql, &list[1..list.len() - 1]);
        if items.iter().all(|i| is_value(i)) {
            return Some((l, items.iter().map(|i| text(i)).collect()));
        }
    }
    None
}
