//! INSERT IGNORE and INSERT ... ON DUPLICATE KEY UPDATE on a table with
//! global unique indexes (`docs/src/unique-keys.md`): one server decides
//! each row in turn, by the keys it collides with, so the statement is
//! planned row by row, each row with the index writes and reads
//! `exec/unique_rows.rs` runs around it.
//!
//! ```text
//!  per row, in the statement's order:
//!    take     INSERT IGNORE INTO lookup (col, key) VALUES (v, k)   per indexed value
//!    part     the row's INSERT IGNORE / ... ON DUPLICATE KEY UPDATE on its partition
//!    release  DELETE FROM lookup WHERE col = v                      a value taken, row not stored
//!    holder   SELECT key FROM lookup WHERE col = v FOR UPDATE       a value another row holds
//!    unstore  DELETE FROM <the row's partition> WHERE col = v       the row stored, against the index
//!    on       the row's statement on the holder's partition         ON DUPLICATE KEY UPDATE
//! ```

use hscale_sql::Token;

use super::insert::{insert_rows, qualifiers_renamed, row_targets, top_level_items, InsertRows};
use super::syntax::{is_constant, is_name, unquote};
use super::{plan, Plan, Scope, StatementKind, TableRef, UniqueWrite};
use crate::dictionary::{Lookup, PartitionedTable, Target};

/// How a row that collides with a stored row is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDuplicate {
    /// INSERT IGNORE: skipped, with warning 1062 naming the key.
    Ignore,
    /// ON DUPLICATE KEY UPDATE: the row it collides with is updated.
    Update,
}

/// The rows of an INSERT IGNORE or ON DUPLICATE KEY UPDATE, one by one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowByRow {
    pub on_duplicate: OnDuplicate,
    pub rows: Vec<OneRow>,
}

/// One row: its statement on its partition, the same statement on any
/// other partition ([`OneRow::on`]), and its indexed values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneRow {
    pub part: (Target, String),
    /// The row's statement before and after its table's name.
    pub around: (String, String),
    pub db: String,
    pub table: String,
    /// The row's partition key, as written.
    pub key: String,
    pub values: Vec<RowValue>,
}

impl OneRow {
    /// The row's statement on `target` (a partition of its table).
    pub fn on(&self, target: &Target) -> String {
        let physical = format!(
            "`{}`.`{}`",
            self.db.replace('`', "``"),
            target.physical_table.replace('`', "``")
        );
        let sql = format!("{}{physical}{}", self.around.0, self.around.1);
        qualifiers_renamed(
            &sql,
            &crate::dictionary::TableName::new(&self.db, &self.table),
            target,
        )
    }
}

/// A row's non-NULL value of one indexed column, and the statements on
/// its lookup table (see the module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowValue {
    pub lookup: Lookup,
    pub take: (Target, String),
    pub release: (Target, String),
    pub holder: (Target, String),
    /// `DELETE FROM <the row's partition> WHERE col = v`.
    pub unstore: String,
    /// `SELECT 1 FROM <the row's partition> WHERE col = v`: whether the
    /// row's statement stored it (under CLIENT_FOUND_ROWS an update that
    /// changed nothing counts 1 row, as an insert does).
    pub is_stored: String,
}

/// A backquoted name.
fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `sql`'s one part, planned (the statements on a lookup table name one
/// value: one partition); `Err`: why it is refused.
fn one_part(sql: &str, scope: Scope<'_>) -> Result<(Target, String), String> {
    match plan(sql, None, scope.dict, scope.known) {
        Plan::Targets { mut parts, .. } if parts.len() == 1 => Ok(parts.remove(0)),
        Plan::Refuse(why) => Err(why),
        other => Err(format!(
            "internal: a statement on a lookup table planned as {other:?}"
        )),
    }
}

/// INSERT IGNORE / ON DUPLICATE KEY UPDATE into `table` (`plan`, the
/// table's own plan of it, a `Targets`), row by row (see the module).
pub(super) fn row_by_row(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    on_duplicate: OnDuplicate,
    scope: Scope<'_>,
) -> Plan {
    let InsertRows {
        columns,
        names,
        key_pos,
        rows,
        tail_start,
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
    let tail = tokens
        .get(tail_start)
        .map_or("", |t| &sql[t.start as usize..]);
    if on_duplicate == OnDuplicate::Update {
        if let Some(l) = table
            .lookups
            .iter()
            .find(|l| assigns(sql, &tokens[tail_start..], &l.column))
        {
            return Plan::Refuse(format!(
                "INSERT ... ON DUPLICATE KEY UPDATE of {} on {}, whose UNIQUE {} is enforced across partitions by a global unique index, is not supported yet",
                l.column, table.name, l.column
            ));
        }
    }
    if tokens[tail_start..]
        .iter()
        .any(|t| t.is_word(sql, "RETURNING"))
    {
        return Plan::Refuse(format!(
            "INSERT ... RETURNING into {}, which has a global unique index",
            table.name
        ));
    }
    let targets = match row_targets(sql, tokens, table, scope.known, &rows, (columns, key_pos)) {
        Ok(t) => t,
        Err(why) => return Plan::Refuse(why),
    };
    let head_start = &sql[..tokens[r.start].start as usize];
    let values_at = super::insert::rows_first_start(tokens, sql, r);
    let head_rest = &sql[tokens[r.end - 1].end as usize..tokens[values_at].start as usize];
    let text = |t: &[Token]| &sql[t[0].start as usize..t[t.len() - 1].end as usize];
    let mut out = Vec::with_capacity(rows.len());
    for (&(a, b), target) in rows.iter().zip(targets) {
        let items = top_level_items(sql, &tokens[a + 1..b]);
        if items.len() != columns {
            // The server refuses it (1136) before it writes anything.
            return plan(sql, None, scope.dict, scope.known);
        }
        let row = &sql[tokens[a].start as usize..tokens[b].end as usize];
        let mut one = OneRow {
            part: (target.clone(), String::new()),
            around: (
                head_start.to_string(),
                format!("{head_rest}{row} {tail}").trim_end().to_string(),
            ),
            db: table.name.db.clone(),
            table: table.name.table.clone(),
            key: text(items[key_pos]).to_string(),
            values: Vec::new(),
        };
        one.part.1 = one.on(&target);
        let k = items[key_pos];
        for lookup in &table.lookups {
            let Some(at) = names
                .iter()
                .position(|n| n.eq_ignore_ascii_case(&lookup.column))
            else {
                continue;
            };
            let v = items[at];
            if matches!(v, [n] if n.is_word(sql, "NULL")) {
                continue;
            }
            if !is_constant(sql, v) || !is_constant(sql, k) {
                return Plan::Refuse(format!(
                    "a value of {} or of the partition key {} that is not a constant, in an INSERT into {} (its global unique index on {} stores the values)",
                    lookup.column, table.column, table.name, lookup.column
                ));
            }
            let (lt, col, key) = (
                super::lookups::qualified(&lookup.table),
                quoted(&lookup.column),
                quoted(&table.column),
            );
            let (v, k) = (text(v), text(k));
            let parts = (
                one_part(
                    &format!("INSERT IGNORE INTO {lt} ({col}, {key}) VALUES ({v}, {k})"),
                    scope,
                ),
                one_part(&format!("DELETE FROM {lt} WHERE {col} = {v}"), scope),
                one_part(
                    &format!("SELECT {key} FROM {lt} WHERE {col} = {v} FOR UPDATE"),
                    scope,
                ),
            );
            let (take, release, holder) = match parts {
                (Ok(a), Ok(b), Ok(c)) => (a, b, c),
                (Err(why), _, _) | (_, Err(why), _) | (_, _, Err(why)) => return Plan::Refuse(why),
            };
            let partition = format!(
                "`{}`.{}",
                table.name.db.replace('`', "``"),
                quoted(&target.physical_table)
            );
            one.values.push(RowValue {
                lookup: lookup.clone(),
                take,
                release,
                holder,
                unstore: format!("DELETE FROM {partition} WHERE {col} = {v}"),
                is_stored: format!("SELECT 1 FROM {partition} WHERE {col} = {v}"),
            });
        }
        out.push(one);
    }
    Plan::UniqueWrite(Box::new(UniqueWrite {
        table: table.name.clone(),
        kind: StatementKind::Insert,
        parts: out.iter().map(|o| o.part.clone()).collect(),
        inserts: Vec::new(),
        deletes: Vec::new(),
        update: None,
        is_one_row: rows.len() == 1,
        row_by_row: Some(RowByRow {
            on_duplicate,
            rows: out,
        }),
    }))
}

/// Whether the ON DUPLICATE KEY UPDATE clause (`tail`) assigns `column`.
fn assigns(sql: &str, tail: &[Token], column: &str) -> bool {
    let Some(up) = tail.iter().position(|t| t.is_word(sql, "UPDATE")) else {
        return false;
    };
    tail[up + 1..].split(|t| t.is_punct(sql, ",")).any(|a| {
        let eq = a
            .iter()
            .position(|e| e.is_punct(sql, "=") || e.is_punct(sql, ":="));
        eq.is_some_and(|eq| {
            a[..eq]
                .last()
                .is_some_and(|c| is_name(c) && unquote(c, sql).eq_ignore_ascii_case(column))
        })
    })
}
