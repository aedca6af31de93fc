//! A plan as rows of (backend, operation, SQL): what `HSCALE EXPLAIN`
//! prints, and what the golden plan files under `tests/plans/` hold.
//!
//! The proxy's admin command calls [`Plan::describe`] with the backends'
//! names; nothing here looks at a backend.

use super::{
    ByLookup, CreateSelect, InsertSelect, KeyMove, Maintenance, MergePlan, Mode, OrderedWrite,
    Output, Plan, StatementKind, UniqueWrite,
};
use crate::BackendId;

/// One row of a described plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplainRow {
    /// The backend's name, `proxy` for the merge step, `every backend`.
    pub backend: String,
    /// What happens there.
    pub operation: String,
    /// The statement sent there (for the merge step: its description).
    pub sql: String,
}

impl ExplainRow {
    fn new(backend: &str, operation: impl Into<String>, sql: impl Into<String>) -> ExplainRow {
        ExplainRow {
            backend: backend.to_string(),
            operation: operation.into(),
            sql: sql.into(),
        }
    }
}

impl Plan {
    /// The plan of `statement` as rows, the backends named by
    /// `backend_names` (index 0: the main backend). `Refuse` is one row
    /// whose operation is `refused` (the proxy answers it with an error).
    pub fn describe(&self, statement: &str, backend_names: &[&str]) -> Vec<ExplainRow> {
        // A backend the names do not cover (never, for a dictionary the
        // proxy loaded) is shown by number, as dictionary errors do.
        let name = |b: BackendId| -> String {
            backend_names
                .get(b.index())
                .map_or_else(|| format!("backend #{}", b.number()), |n| n.to_string())
        };
        let main = name(BackendId::MAIN);
        let one = |operation: String| vec![ExplainRow::new(&main, operation, statement)];
        match self {
            Plan::Passthrough => one("passthrough".to_string()),
            Plan::Refuse(why) => vec![ExplainRow::new(&main, "refused", why.as_str())],
            Plan::PreparedAsText(what) => one(format!(
                "{what}: each execution runs as the text statement with its parameters written in"
            )),
            Plan::DropTable(t) => one(format!(
                "drop every partition of {t} and its dictionary entry"
            )),
            Plan::LoadData(l) if l.is_global => vec![ExplainRow::new(
                "every backend",
                format!(
                    "load the client's file into every copy of global table {}",
                    l.table
                ),
                statement,
            )],
            Plan::LoadData(l) => l
                .parts
                .iter()
                .map(|(t, sql)| {
                    ExplainRow::new(
                        &name(t.backend),
                        format!(
                            "load the rows of the client's file whose key is in {}",
                            t.physical_table
                        ),
                        sql.as_str(),
                    )
                })
                .collect(),
            Plan::ShowTables { db, .. } => one(format!(
                "tables of {db} with partitioned tables shown as one"
            )),
            Plan::GlobalWrite { table, sql } => BackendId::all(backend_names.len())
                .map(|b| {
                    ExplainRow::new(
                        &name(b),
                        format!("copy of global table {table}"),
                        sql.as_str(),
                    )
                })
                .collect(),
            Plan::DropGlobal(t) => vec![ExplainRow::new(
                "every backend",
                format!("drop every copy of global table {t} and its entry"),
                statement,
            )],
            Plan::Merge(m) => describe_merge(m, &name),
            Plan::OrderedWrite(w) => describe_ordered_write(w, statement),
            Plan::KeyMove(m) => describe_key_move(m, statement, &name),
            Plan::JoinWrite(w) => describe_join_write(w, statement),
            Plan::UniqueWrite(w) => describe_unique_write(w, &name),
            Plan::ByLookup(l) => describe_by_lookup(l, statement, backend_names, &name),
            Plan::InsertSelect(i) => describe_insert_select(i, backend_names),
            Plan::CreateSelect(c) => describe_create_select(c, &main, &name),
            Plan::Maintenance(m) => describe_maintenance(m, &name),
            Plan::Relabeled {
                target,
                sql,
                from,
                to,
            } => vec![ExplainRow::new(
                &name(target.backend),
                format!("single partition, {from} shown as {to}"),
                sql.as_str(),
            )],
            Plan::RenameTable { from, to } => one(format!(
                "rename every partition of {from} to {to} and its dictionary entry"
            )),
            Plan::ShowCreate(t) => one(format!("definition of {t} from its default partition")),
            Plan::CreateView(v) => one(format!("store view {} in the dictionary", v.view.name)),
            Plan::DropViews { names, .. } => one(format!(
                "drop view(s) {} from the dictionary",
                names
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Plan::ShowCreateView(t) => one(format!("definition of view {t} from the dictionary")),
            Plan::ViewError(e) => vec![ExplainRow::new(&main, "refused", e.to_string())],
            Plan::SchemaChange { parts, .. } => parts
                .iter()
                .map(|(t, sql)| {
                    ExplainRow::new(
                        &name(t.backend),
                        format!("on every partition: {}", t.physical_table),
                        sql.as_str(),
                    )
                })
                .collect(),
            Plan::Targets { kind, parts } => {
                let how = match (kind, parts.len()) {
                    (_, 1) => "single partition",
                    (StatementKind::Select, _) => "concatenate rows",
                    (StatementKind::Schema, _) => "on every partition",
                    (_, _) => "add up affected rows",
                };
                parts
                    .iter()
                    .map(|(t, sql)| {
                        ExplainRow::new(
                            &name(t.backend),
                            format!("{how}: {}", t.physical_table),
                            sql.as_str(),
                        )
                    })
                    .collect()
            }
        }
    }
}

/// A write to a table with global unique indexes: its parts, then each
/// index's new rows and the deleted values' index rows, in the same
/// transaction.
fn describe_unique_write(w: &UniqueWrite, name: &dyn Fn(BackendId) -> String) -> Vec<ExplainRow> {
    let mut rows: Vec<ExplainRow> = w
        .parts
        .iter()
        .map(|(t, sql)| {
            ExplainRow::new(
                &name(t.backend),
                format!("partition of {} ({})", w.table, t.physical_table),
                sql.as_str(),
            )
        })
        .collect();
    for index in &w.inserts {
        for (t, sql) in &index.parts {
            rows.push(ExplainRow::new(
                &name(t.backend),
                format!(
                    "global unique index {} of {}: new rows, in the same transaction",
                    index.lookup.key, w.table
                ),
                sql.as_str(),
            ));
        }
    }
    if let Some(rr) = &w.row_by_row {
        for v in rr.rows.iter().flat_map(|row| &row.values) {
            rows.push(ExplainRow::new(
                &name(v.take.0.backend),
                format!(
                    "global unique index {} of {}: the row's value taken before its row ({:?}: a value another row holds decides as one server's key), in the same transaction",
                    v.lookup.key, w.table, rr.on_duplicate
                ),
                v.take.1.as_str(),
            ));
        }
    }
    if let Some(u) = &w.update {
        let mut steps = vec![ExplainRow::new(
            "proxy",
            format!(
                "the keys of the rows the UPDATE of {} matches, locked",
                w.table
            ),
            u.select.as_str(),
        )];
        steps.push(ExplainRow::new(
            "proxy",
            "the rows of those keys, before and after the UPDATE, in the same transaction",
            "SELECT <key, indexed columns> WHERE <key> IN (<keys>) FOR UPDATE",
        ));
        for l in &u.lookups {
            rows.push(ExplainRow::new(
                "proxy",
                format!(
                    "global unique index {} of {}: the rows of the values the UPDATE removed deleted, of the values it set inserted, in the same transaction",
                    l.key, w.table
                ),
                format!(
                    "DELETE FROM {} WHERE {} IN (<removed>); INSERT INTO {} VALUES (<set>)",
                    l.table, l.column, l.table
                ),
            ));
        }
        steps.append(&mut rows);
        rows = steps;
    }
    for l in &w.deletes {
        rows.push(ExplainRow::new(
            "proxy",
            format!(
                "global unique index {} of {}: the rows of the values returned deleted from {}, in the same transaction",
                l.key, w.table, l.table
            ),
            format!("DELETE FROM {} WHERE {} IN (<returned>)", l.table, l.column),
        ));
    }
    rows
}

/// A read or write by a globally unique value: the index read for the
/// keys, then the inner plan's parts where those keys are.
fn describe_by_lookup(
    l: &ByLookup,
    statement: &str,
    backend_names: &[&str],
    name: &dyn Fn(BackendId) -> String,
) -> Vec<ExplainRow> {
    let mut rows: Vec<ExplainRow> = l
        .read
        .iter()
        .map(|(t, sql)| {
            ExplainRow::new(
                &name(t.backend),
                format!(
                    "global unique index {} of {}: the keys of the rows",
                    l.lookup.key, l.table
                ),
                sql.as_str(),
            )
        })
        .collect();
    for mut row in l.inner.describe(statement, backend_names) {
        row.operation = format!("only where the keys found are: {}", row.operation);
        rows.push(row);
    }
    rows
}

/// CREATE TABLE ... SELECT over partitioned tables: each source shipped
/// into a temporary table on the main backend, then the statement there.
fn describe_create_select(
    c: &CreateSelect,
    main: &str,
    name: &dyn Fn(BackendId) -> String,
) -> Vec<ExplainRow> {
    let mut rows = Vec::new();
    for ship in &c.ship {
        for (t, sql) in &ship.sources {
            rows.push(ExplainRow::new(
                &name(t.backend),
                format!("ship into temporary table {}", ship.temp),
                sql.as_str(),
            ));
        }
    }
    rows.push(ExplainRow::new(
        main,
        "create the table from the copies",
        c.sql.as_str(),
    ));
    rows
}

/// CHECKSUM / ANALYZE / CHECK / OPTIMIZE / REPAIR TABLE on every
/// partition, the answers shown as the logical table's.
fn describe_maintenance(m: &Maintenance, name: &dyn Fn(BackendId) -> String) -> Vec<ExplainRow> {
    m.parts
        .iter()
        .map(|(t, sql)| {
            ExplainRow::new(
                &name(t.backend),
                if m.is_checksum {
                    format!("partition of {}, checksums summed", m.table)
                } else {
                    format!("partition of {}, rows shown as {}", m.table, m.table)
                },
                sql.as_str(),
            )
        })
        .collect()
}

/// An ordered write: the keys read, then each partition's share.
fn describe_ordered_write(w: &OrderedWrite, statement: &str) -> Vec<ExplainRow> {
    vec![
        ExplainRow::new(
            "proxy",
            "read the keys of the rows to write, merged",
            w.select.as_str(),
        ),
        ExplainRow::new(
            "proxy",
            format!(
                "then on each partition of {} holding some: the statement with LIMIT its share of {}",
                w.table, w.limit
            ),
            statement,
        ),
    ]
}

/// A multi-table write from its join's rows (`join_input.rs`).
fn describe_join_write(w: &super::JoinWrite, statement: &str) -> Vec<ExplainRow> {
    let targets: Vec<String> = w.tables.iter().map(|t| t.name.to_string()).collect();
    vec![
        ExplainRow::new(
            "proxy",
            "in one transaction: read the join's rows (each written table's primary key, the values other tables give)",
            format!("SELECT ... FROM {} {}", w.list, w.where_clause),
        ),
        ExplainRow::new(
            "proxy",
            format!(
                "then each written row once, by its primary key, on its partition (tables: {})",
                targets.join(", ")
            ),
            statement,
        ),
    ]
}

/// A key move: the keys read, the UPDATE in place, then the moves.
fn describe_key_move(
    m: &KeyMove,
    statement: &str,
    name: &dyn Fn(BackendId) -> String,
) -> Vec<ExplainRow> {
    let mut rows = vec![ExplainRow::new(
        "proxy",
        "in one transaction: read each matched row's key and new key",
        m.select.as_str(),
    )];
    for (t, s) in &m.parts {
        rows.push(ExplainRow::new(
            &name(t.backend),
            "the UPDATE in place",
            s.as_str(),
        ));
    }
    rows.push(ExplainRow::new(
        "proxy",
        format!("then rows whose new key belongs to another partition of {} are moved there (INSERT, then DELETE from where they were)", m.table),
        statement,
    ));
    rows
}

/// INSERT ... SELECT: step 1, the SELECT's own plan, its rows kept by the
/// proxy; step 2, the INSERT of those rows.
fn describe_insert_select(i: &InsertSelect, backend_names: &[&str]) -> Vec<ExplainRow> {
    let mut rows = vec![ExplainRow::new(
        "proxy",
        "step 1: read the rows to insert into the proxy's memory",
        i.select.as_str(),
    )];
    for r in i.read.describe(&i.select, backend_names) {
        rows.push(ExplainRow::new(
            &r.backend,
            format!("step 1, {}", r.operation),
            r.sql,
        ));
    }
    rows.push(ExplainRow::new(
        "proxy",
        "step 2: insert the rows read as literal VALUES, planned like any INSERT",
        i.write("<the rows read>"),
    ));
    rows
}

/// A merge: the column definitions query (grouping), the shipped tables'
/// reads, the fragments, then the proxy's step.
fn describe_merge(m: &MergePlan, name: &dyn Fn(BackendId) -> String) -> Vec<ExplainRow> {
    let mut rows = Vec::new();
    if let Mode::Group(g) = &m.mode {
        rows.push(ExplainRow::new(
            &name(g.meta.0.backend),
            "column definitions",
            g.meta.1.as_str(),
        ));
    }
    for ship in &m.ship {
        for (t, sql) in &ship.sources {
            rows.push(ExplainRow::new(
                &name(t.backend),
                format!("ship into temporary table {} on every part", ship.temp),
                sql.as_str(),
            ));
        }
    }
    for (t, sql) in &m.parts {
        rows.push(ExplainRow::new(
            &name(t.backend),
            format!("fragment: {}", t.physical_table),
            sql.as_str(),
        ));
    }
    rows.push(ExplainRow::new("proxy", "merge", merge_description(m)));
    rows
}

/// What the proxy does with the partitions' rows.
fn merge_description(m: &MergePlan) -> String {
    let mut steps = Vec::new();
    match &m.mode {
        Mode::Sort { .. } if m.order.is_empty() => {
            steps.push(format!("concatenate {} partitions", m.parts.len()))
        }
        Mode::Sort { .. } => steps.push(format!(
            "k-way merge of {} sorted partitions on {} key(s)",
            m.parts.len(),
            m.order.len()
        )),
        Mode::Group(g) => {
            let aggs: Vec<&str> = g
                .outputs
                .iter()
                .filter_map(|o| match o {
                    Output::Key(_) => None,
                    Output::Count(_) => Some("COUNT (sum of counts)"),
                    Output::Sum(_) => Some("SUM (sum of sums)"),
                    Output::Min(_) => Some("MIN"),
                    Output::Max(_) => Some("MAX"),
                    Output::Avg { .. } => Some("AVG (sum of sums / sum of counts)"),
                    Output::BitAnd(_) => Some("BIT_AND"),
                    Output::BitOr(_) => Some("BIT_OR"),
                    Output::BitXor(_) => Some("BIT_XOR"),
                    Output::CountDistinct(_) => Some("COUNT(DISTINCT) (distinct values gathered)"),
                    Output::GroupConcat { .. } => Some("GROUP_CONCAT (partial lists joined)"),
                })
                .collect();
            steps.push(format!(
                "combine partial groups of {} fragments on {} key(s){}{}",
                m.parts.len(),
                g.keys.len(),
                if aggs.is_empty() { "" } else { ": " },
                aggs.join(", ")
            ));
            if !m.order.is_empty() {
                steps.push(format!("sort on {} key(s)", m.order.len()));
            }
        }
    }
    if m.offset > 0 {
        steps.push(format!("skip {}", m.offset));
    }
    if let Some(l) = m.limit {
        steps.push(format!("limit {l}"));
    }
    steps.join("; ")
}
