//! Where a client's prepared statement on a partitioned table runs: the
//! routing planned at PREPARE (again when the dictionary changed), and
//! the parts each execution picks from its key parameters. A write to a
//! global table runs on every copy (`Exec::run_prepared_global`).

use std::sync::Arc;

use hscale_route::dictionary::{PartitionedTable, TableName, Target};
use hscale_route::key_compare::KeyCompare;
use hscale_route::known::Known;
use hscale_route::router::{MergePlan, Plan, StatementKind};
use hscale_route::KeyValue;
use hscale_wire::stmt::Execute;

use crate::error::ProxyError;
use crate::exec::params;
use crate::partition::Partitioning;

/// How a prepared statement runs.
#[derive(Debug, Clone)]
pub enum Routed {
    /// It names no partitioned table: on the main backend as it is.
    Plain,
    /// On the parts, each execution picking its own.
    Parts(Arc<PreparedRouting>),
    /// A read that needs the proxy's merge (ORDER BY, LIMIT, aggregates,
    /// GROUP BY, DISTINCT, joins or subqueries across partitions): each
    /// execution runs as the text statement with its parameters written
    /// in (`merge/prepared.rs`); the plan here only prepares it, on
    /// copies of its tables, for the metadata.
    Merged(Arc<MergedRead>),
    /// A write each execution of which runs as its text statement with
    /// the parameters written in (`Plan::PreparedAsText`: a multi-table
    /// UPDATE or DELETE over several partitions, an UPDATE of the
    /// partition key), planned then as the query is; its OK is the same
    /// packet in both protocols. The `?` offsets, in order.
    AsText(Arc<[u32]>),
}

/// A prepared read run as its text statement at each execution.
#[derive(Debug)]
pub struct MergedRead {
    /// The statement on copies of its tables, prepared for the metadata.
    pub copies: MergePlan,
    /// Byte offsets of the `?` placeholders, in order.
    pub placeholders: Vec<u32>,
}

impl Routed {
    /// The routing over parts, if any.
    pub fn parts(&self) -> Option<Arc<PreparedRouting>> {
        match self {
            Routed::Parts(r) => Some(r.clone()),
            _ => None,
        }
    }
}

/// One part: a target and the statement rewritten for it.
pub type Part = (Target, Arc<[u8]>);

/// Where one execution runs.
#[derive(Debug)]
pub enum Pick {
    Parts(Vec<Part>),
    /// A multi-row INSERT whose rows belong to different partitions: run
    /// as its text statement with the parameters written in, which the
    /// router splits by rows (`Executed::SplitRows`, `session/commands.rs`).
    SplitRows,
}

/// Where a prepared statement on a partitioned table runs.
#[derive(Debug)]
pub struct PreparedRouting {
    pub kind: StatementKind,
    /// Each target with the statement rewritten for it.
    pub parts: Vec<Part>,
    /// The `?`s holding the key (one per INSERT row; at most one otherwise):
    /// each execution runs on the partition of their values.
    pub key_params: Vec<usize>,
    /// An INSERT without the key column: each execution runs on the
    /// partition of the column's default (`conversions::route_default`).
    pub is_by_default: bool,
    /// The partitioned table (`None` for a write to a global table).
    pub table: Option<PartitionedTable>,
    /// A write to this global table: every copy, as the text path writes
    /// it (`parts` is the main copy, where it is prepared for its metadata).
    pub global: Option<TableName>,
    /// A write to a table with a global unique index: each execution runs
    /// as its text, with its parameters written in (`exec/unique.rs`).
    pub is_by_text: bool,
}

impl PreparedRouting {
    /// How statement `sql`, prepared in database `db`, reaches partitioned
    /// tables: `None` when it names none.
    pub fn plan(
        sql: &[u8],
        db: Option<&str>,
        partitioning: &Partitioning,
    ) -> Result<Routed, ProxyError> {
        if partitioning.is_empty() {
            return Ok(Routed::Plain);
        }
        let Ok(text) = std::str::from_utf8(sql) else {
            return match partitioning.refusal(sql) {
                Some(why) => Err(ProxyError::Refused(why)),
                None => Ok(Routed::Plain),
            };
        };
        let dict = partitioning.dictionary();
        let merged = || -> Option<Routed> {
            let copies = hscale_route::router::prepared_on_copies(text, db, &dict)?;
            let placeholders = hscale_sql::tokenize(text)
                .ok()?
                .iter()
                .filter(|t| t.kind == hscale_sql::TokenKind::Placeholder)
                .map(|t| t.start)
                .collect();
            Some(Routed::Merged(Arc::new(MergedRead {
                copies,
                placeholders,
            })))
        };
        match crate::planning::plan_now(&dict, text, db, crate::planning::Form::Prepared) {
            Plan::Passthrough => Ok(Routed::Plain),
            Plan::PreparedAsText(_) => Ok(Routed::AsText(
                hscale_sql::tokenize(text)
                    .map_err(|_| ProxyError::Wrong("internal: a prepared write that does not lex".into()))?
                    .iter()
                    .filter(|t| t.kind == hscale_sql::TokenKind::Placeholder)
                    .map(|t| t.start)
                    .collect(),
            )),
            plan @ (Plan::Merge(_) | Plan::Refuse(_)) => match merged() {
                Some(m) => Ok(m),
                None => match plan {
                    Plan::Refuse(why) => Err(ProxyError::Refused(why)),
                    _ => Err(ProxyError::Refused(
                        "this statement on a partitioned table cannot be prepared (run it as a query)".into(),
                    )),
                },
            },
            Plan::Targets { kind, parts } => {
                // The table whose partition the first part names, in the
                // database the rewritten statement names.
                let (first, first_sql) = &parts[0];
                let table = dict
                    .tables()
                    .find(|t| {
                        t.all_targets().contains(first)
                            && first_sql.contains(&crate::partition::qualified(
                                &t.name.db,
                                &first.physical_table,
                            ))
                    })
                    .cloned();
                let Some(table) = table else {
                    // Parts that are no one table's partitions (a join of
                    // co-partitioned tables): run like the query.
                    return merged().ok_or_else(|| {
                        ProxyError::Refused("the dictionary changed".into())
                    });
                };
                // A read by a global unique index's column: each execution
                // as its text, through the index (`exec/unique.rs`).
                if kind == StatementKind::Select
                    && parts.len() > 1
                    && hscale_route::router::reads_by_index(text, &table)
                {
                    if let Some(m) = merged() {
                        return Ok(m);
                    }
                }
                let key_params = match kind {
                    StatementKind::Insert => {
                        hscale_route::router::insert_key_placeholders(text, &table.column)
                            .unwrap_or_default()
                    }
                    // A string key under a collation: `key = ?` picks the
                    // partition of a string parameter's weight.
                    _ if table.is_key_exact || is_collated_string(&table) => {
                        hscale_route::router::key_placeholder(text, &table.column)
                            .into_iter()
                            .collect()
                    }
                    _ => Vec::new(),
                };
                let is_by_default = kind == StatementKind::Insert
                    && key_params.is_empty()
                    && hscale_route::router::insert_without_key_column(text, &table.column);
                if kind == StatementKind::Insert
                    && key_params.is_empty()
                    && parts.len() > 1
                    && !is_by_default
                    && table.lookups.is_empty()
                {
                    return Err(ProxyError::Refused(format!(
                        "a prepared INSERT whose rows go to different partitions of {} (use a parameter for the key, or one statement per partition)",
                        table.name
                    )));
                }
                // With a key parameter, `parts` lists every partition and
                // each execution picks its own; otherwise it runs on them all.
                Ok(Routed::Parts(Arc::new(PreparedRouting {
                    kind,
                    parts: parts
                        .into_iter()
                        .map(|(t, s)| (t, Arc::from(s.as_bytes())))
                        .collect(),
                    key_params,
                    is_by_default,
                    is_by_text: kind != StatementKind::Select && !table.lookups.is_empty(),
                    table: Some(table),
                    global: None,
                })))
            }
            Plan::GlobalWrite { table, sql } => Ok(Routed::Parts(Arc::new(PreparedRouting {
                kind: StatementKind::Update,
                parts: vec![(
                    Target {
                        backend: hscale_route::BackendId::MAIN,
                        physical_table: table.table.clone(),
                    },
                    Arc::from(sql.as_bytes()),
                )],
                key_params: Vec::new(),
                is_by_default: false,
                is_by_text: false,
                table: None,
                global: Some(table),
            }))),
            // A view whose table is gone, as one server answers at PREPARE.
            Plan::ViewError(e) => Err(ProxyError::View(e)),
            _ => Err(ProxyError::Refused(
                "this statement on a partitioned table cannot be prepared (run it as a query)"
                    .into(),
            )),
        }
    }

    /// The parts one execution runs on: the partition its key parameters
    /// name, or every part; [`Pick::SplitRows`] for an INSERT whose rows
    /// belong to different partitions. `long` lists the parameters sent as
    /// long data.
    pub fn parts_for(
        &self,
        exec: &Execute<'_>,
        types: &[u8],
        long: &[u16],
        client: params::ClientText,
        known: &Known<'_>,
    ) -> Result<Pick, ProxyError> {
        let is_insert = self.kind == StatementKind::Insert;
        if self.is_by_text {
            return Ok(Pick::SplitRows);
        }
        if let Some(table) = self.table.as_ref().filter(|_| self.is_by_default) {
            // Every row takes the key's default: its partition, once the
            // backend said what the column stores (asked by the caller).
            return match hscale_route::conversions::route_default(table, known) {
                Some(Ok(t)) => {
                    let chosen: Vec<Part> = self
                        .parts
                        .iter()
                        .filter(|(p, _)| *p == t)
                        .cloned()
                        .collect();
                    if chosen.is_empty() {
                        return Err(ProxyError::Refused(format!(
                            "the partitions of {} changed while the statement was prepared (prepare it again)",
                            table.name
                        )));
                    }
                    Ok(Pick::Parts(chosen))
                }
                Some(Err(e)) => Err(ProxyError::Refused(e.to_string())),
                None => Err(ProxyError::Refused(format!(
                    "INSERT without the partition key column {}: its default is not known yet",
                    table.column
                ))),
            };
        }
        let Some(table) = self.table.as_ref().filter(|_| !self.key_params.is_empty()) else {
            return Ok(Pick::Parts(self.parts.clone()));
        };
        let mut target: Option<Target> = None;
        for &i in &self.key_params {
            let v = match params::key_value_as(exec, types, i, long, client) {
                Ok(v) => v,
                // A key parameter that cannot be read as the column's value
                // (sent as a DOUBLE, a byte the client's character set has
                // no character for, ...): a read or a write of existing rows
                // asks every partition, as its text form would; an INSERT
                // needs the key to place its row.
                Err(_) if !is_insert => {
                    target = None;
                    break;
                }
                Err(why) => return Err(ProxyError::Refused(why)),
            };
            if client == params::ClientText::Other
                && matches!(&v, hscale_route::KeyValue::Str(s) if !s.is_ascii())
            {
                // Its bytes are in the client's character set (cp1251, ...),
                // not the UTF-8 text a string key is placed by (latin1's are
                // read as the server reads them).
                return Err(ProxyError::Refused(format!(
                    "a non-ASCII string partition key of {} on a connection whose character set is not UTF-8",
                    table.name
                )));
            }
            // A read on a string key under a collation: only a string
            // parameter compares as the column does (a number compares
            // as a number: '05' = 5); anything else reads every partition.
            if !is_insert && !table.is_key_exact && !is_string_param(table, types, i, &v) {
                target = None;
                break;
            }
            let shown = v.to_string();
            let stored = table.stored_key(v.clone()).filter(|s| table.holds(s));
            let t = match stored.map(|v| table.route(&v, known)) {
                // A key the backend weighs, met for the first time: the
                // planning driver asks for its weight and picks again.
                Some(Err(e @ hscale_route::HashError::WeightUnknown { .. })) => {
                    return Err(ProxyError::Refused(e.to_string()))
                }
                Some(Ok(t)) => Some(t),
                // A row's key the column stores as another value ('7abc',
                // beyond its range, a fraction that rounds): where the value
                // the backend said the column makes of it goes; without that
                // answer the literal is noted (`hscale_route::conversions`)
                // for the caller to ask, and the INSERT refused meanwhile.
                _ if is_insert => param_literal(&v, client)
                    .and_then(|lit| hscale_route::conversions::route_converted(table, &lit, known))
                    .and_then(Result::ok),
                _ => None,
            };
            match (t, &target) {
                (Some(t), Some(prev)) if t != *prev => return Ok(Pick::SplitRows),
                (Some(t), _) => target = Some(t),
                (None, _) if is_insert => {
                    return Err(ProxyError::Refused(format!(
                        "the partition key value {shown} cannot be placed in {} (key {})",
                        table.name, table.column
                    )))
                }
                // A value that cannot be placed ('abc' for an integer key)
                // matches no key exactly: every partition answers.
                (None, _) => {
                    target = None;
                    break;
                }
            }
        }
        let chosen: Vec<_> = self
            .parts
            .iter()
            .filter(|(t, _)| target.as_ref().is_none_or(|target| t == target))
            .cloned()
            .collect();
        Ok(Pick::Parts(if chosen.is_empty() {
            // A literal key already excluded this partition: the predicates
            // contradict, any one partition answers (empty).
            self.parts[..1].to_vec()
        } else {
            chosen
        }))
    }

    /// The partition value an INSERT into the default partition of a table
    /// with auto-partitioning names (`admin::auto_partition` creates its
    /// partition), when `parts` is that one default partition.
    pub fn auto_value(
        &self,
        exec: &Execute<'_>,
        types: &[u8],
        long: &[u16],
        parts: &[Part],
    ) -> Option<String> {
        let table = self.table.as_ref()?;
        match self.key_params.as_slice() {
            [i] if self.kind == StatementKind::Insert
                && table.auto.is_some()
                && parts.len() == 1
                && parts[0].0 == table.default_target() =>
            {
                params::key_value(exec, types, *i, long)
                    .ok()
                    .and_then(|v| table.stored_key(v))
                    .and_then(|v| {
                        crate::planning::Learnt::new()
                            .attempt(|known| table.partition_value_of(&v, known))
                            .0
                            .ok()
                            .flatten()
                    })
            }
            _ => None,
        }
    }
}

/// A key parameter's value as a literal the server reads as that value
/// whatever the sql_mode: an integer as its digits, a string of a UTF-8
/// client as `_utf8mb4 X'..'`; `None` for anything else.
fn param_literal(v: &KeyValue, client: params::ClientText) -> Option<String> {
    match v {
        KeyValue::Int(i) => Some(i.to_string()),
        KeyValue::Str(s) if client == params::ClientText::Utf8 => {
            Some(crate::partition::weights::hex_literal(s))
        }
        _ => None,
    }
}

/// A string key under a collation (not a DECIMAL's scale).
fn is_collated_string(table: &PartitionedTable) -> bool {
    matches!(
        table.key_compare,
        Some(KeyCompare::Collated(_) | KeyCompare::Weighed(_))
    )
}

/// Whether parameter `i`, of value `v`, is a string (VARCHAR, VAR_STRING,
/// STRING or a BLOB type) whose weight names the one partition of the rows
/// `key = ?` matches.
fn is_string_param(table: &PartitionedTable, types: &[u8], i: usize, v: &KeyValue) -> bool {
    let is_string = matches!(types.get(2 * i), Some(0x0f | 0xf9..=0xfe));
    match (v, &table.key_compare) {
        (KeyValue::Str(s), Some(c)) if is_string => c.prunes_equality(s),
        (KeyValue::Null, Some(_)) => true,
        _ => false,
    }
}
