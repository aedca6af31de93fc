//! The router: from a statement that names a partitioned table to the
//! partitions it must run on, with the table name rewritten for each.
//!
//! Version 1 handles single-table statements and refuses the rest with a
//! reason (joins, subqueries, unions, schema statements, aggregates or
//! ordering over several partitions). Keys are pruned only on `=` and
//! `IN (...)` with literals, for keys whose comparison is exact (integers,
//! binary strings); for any other key every partition is scanned, which is
//! always correct.
//!
//! Here: the `Plan` type, the entry points and the refusals of statements
//! hscale does not split. Table references are found by `refs`,
//! single-table SELECT/UPDATE/DELETE planned by `single`, UNION ALL by
//! `union`; `syntax` holds the token readers they share.

use hscale_sql::Token;

use crate::dictionary::{Dictionary, TableName, Target};
use crate::known::Known;

mod cache;
mod create_select;
mod explain;
mod found_rows;
mod global;
mod info_schema;
pub use info_schema::{
    absent_tables, logical_views, remote_auto_increments, view_columns, Cell, RemoteRows,
    LOGICAL_VIEWS,
};
mod in_lists;
mod insert;
mod insert_form;
mod join;
mod join_input;
mod join_write;
mod key_move;
mod levels;
mod load_data;
mod lookup_rows;
mod lookups;
pub use lookup_rows::{OnDuplicate, OneRow, RowByRow, RowValue};
mod merge;
mod on_copies;
pub use on_copies::on_copies_at;
use on_copies::ship_to_main;
mod ordered_write;
mod prune;
mod refs;
mod row_numbers;
pub use row_numbers::insert_part_rows;
mod schema;
mod select_into;
mod sequence;
mod single;
mod syntax;
mod union;
mod views;
pub use refs::tables_named;
pub use views::{view_probe, ViewDdl};

pub use cache::{CacheStats, PlanCache};
pub use create_select::CreateSelect;
pub use explain::ExplainRow;
pub use found_rows::calc_found_rows;
use insert::plan_insert;
pub use insert::{insert_key_placeholders, insert_without_key_column, unplaced_values};
pub use insert_form::{
    insert_form, upsert_names, upsert_resolution, with_columns, with_keys, InsertForm,
    InsertSelect, UpsertNames,
};
pub use join_input::{
    columns_query, input as join_input, write_sql as join_write_sql, Columns, Input, InputTarget,
    JoinWrite, ListTable, NoInput,
};
pub use key_move::{
    key_moves, moved_rows_insert, moved_rows_sql, stored_columns_query, stored_columns_sql, KeyMove,
};
pub use load_data::{
    is_splittable_charset, is_utf8_charset, load_key, LoadData, LoadKeyColumn, LoadKeyError,
};
pub use lookups::{
    reads_by_index, rows_by_keys_sql, ByLookup, IndexRows, IndexUpdate, UniqueWrite,
};
pub use merge::{ArithOp, CmpOp, GroupPlan, Having, MergePlan, Mode, OrderKey, Output, Ship, Val};
pub use ordered_write::{ordered_write_parts, OrderedWrite};
use refs::{physical_name, rewrite, strip_db_qualifiers, table_refs, TableRef};
pub use schema::like_matches;
use schema::{plan_schema, plan_show_tables};
pub use select_into::{select_into_variables, SelectInto};
pub use sequence::{auto_insert, prepared_ids, AutoInsert, IdParam, PreparedIds};
pub use single::key_placeholder;
use single::plan_filtered;
use syntax::{
    conjuncts, cte_names, is_any_word, is_locking_for, is_name, is_named, is_plain_read, literal,
    needs_merge, skip_parens, unescape, unions_are_nested, unquote, where_clause, with_select,
    Keywords,
};
use union::plan_union;

/// The deepest nesting the planner follows in a client's statement where
/// it has to keep a stack for it: the parentheses, NOTs and unary minuses
/// around any part of a HAVING condition, and the depth of the `Having`
/// tree it becomes (OR and AND chains become balanced trees). Deeper
/// statements are refused with a reason that says so (a plain read may
/// still run on one server with copies of its tables, `ship_to_main`),
/// never followed into a stack overflow. Walks over WHERE and ON
/// conditions and over select lists keep their own stacks or none.
pub const MAX_DEPTH: usize = 200;

/// The most tables MariaDB joins in one SELECT. The join planner, whose
/// work per table is linear in the statement's conditions, refuses joins
/// of more; a read is not shipped to the main backend with more partitioned
/// references than this (one temporary copy each).
const MAX_TABLES: usize = 61;

/// How deep the planner plans statements inside statements (a UNION's
/// branches, each of which may be a UNION in parentheses), each level on
/// the thread's stack; deeper ones are refused.
const MAX_NESTED_STATEMENTS: usize = 8;

/// What to do with a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// It names no partitioned table: send it to the main backend as it is.
    Passthrough,
    /// Run `sql` on each target; several targets: concatenate row results
    /// or add up affected rows.
    Targets {
        kind: StatementKind,
        parts: Vec<(Target, String)>,
    },
    /// A clear reason why hscale does not run it.
    Refuse(String),
    /// A prepared statement each execution of which runs as its text
    /// statement with the parameters written in, planned then (a
    /// multi-table UPDATE or DELETE over several partitions, an UPDATE of
    /// the partition key): what it is, for EXPLAIN.
    PreparedAsText(String),
    /// `DROP TABLE T`: every physical table and the dictionary entry.
    DropTable(TableName),
    /// DDL on every partition of `table` (ALTER TABLE, CREATE / DROP
    /// INDEX, TRUNCATE): one operation of the journal, `sql` on each target
    /// in turn.
    SchemaChange {
        table: TableName,
        parts: Vec<(Target, String)>,
    },
    /// `SHOW CREATE TABLE T`: the default partition's definition, named T.
    ShowCreate(TableName),
    /// Run `sql` on `target` and show every result value equal to `from`
    /// as `to`: questions about T (information_schema, SHOW INDEX) asked
    /// of its default partition, which has T's definition.
    Relabeled {
        target: Target,
        sql: String,
        from: String,
        to: String,
    },
    /// A SELECT over several partitions whose rows the proxy merges
    /// (ORDER BY, LIMIT, aggregates, GROUP BY, DISTINCT).
    Merge(MergePlan),
    /// An UPDATE or DELETE over several partitions with ORDER BY ...
    /// LIMIT: the keys of the rows it writes are read first
    /// (`ordered_write`).
    OrderedWrite(OrderedWrite),
    /// An UPDATE that assigns the partition key: rows whose new key
    /// belongs elsewhere are moved (`key_move`).
    KeyMove(KeyMove),
    /// A multi-table UPDATE or DELETE whose rows lie on several partitions
    /// or backends: the join read, then each target row written by its
    /// primary key (`join_input`).
    JoinWrite(Box<JoinWrite>),
    /// A write to a global table: run on every backend, answered with the
    /// main backend's result.
    GlobalWrite { table: TableName, sql: String },
    /// `DROP TABLE G` for a global table: every copy and its entry.
    DropGlobal(TableName),
    /// `RENAME TABLE T TO U`, `ALTER TABLE T RENAME [TO | AS] U`: every
    /// physical table and the dictionary entry.
    RenameTable { from: TableName, to: TableName },
    /// `SHOW [FULL] TABLES [FROM db] [LIKE 'pattern']` in a database with
    /// partitioned tables: list them, hide their physical tables.
    ShowTables {
        db: String,
        is_full: bool,
        like: Option<String>,
    },
    /// `CREATE [OR REPLACE] VIEW` / `ALTER VIEW` of a view hscale keeps
    /// (`crate::view`): stored in the dictionary.
    CreateView(Box<ViewDdl>),
    /// `DROP VIEW [IF EXISTS] ...` naming a view hscale keeps or a
    /// partitioned or global table.
    DropViews {
        names: Vec<TableName>,
        if_exists: bool,
    },
    /// `SHOW CREATE VIEW V` (or `SHOW CREATE TABLE V`) of a kept view.
    ShowCreateView(TableName),
    /// A statement on a view that one server refuses too, with its error
    /// (and a PARTITION clause naming a partitioned table, 1747).
    ViewError(crate::view::ViewError),
    /// `LOAD DATA LOCAL INFILE` into a partitioned table: the proxy reads
    /// the file and sends each partition its rows (`load_data`).
    LoadData(Box<LoadData>),
    /// CHECKSUM, ANALYZE, CHECK, OPTIMIZE or REPAIR TABLE of a partitioned
    /// table: run on every partition, answered as one table.
    Maintenance(Maintenance),
    /// `INSERT [INTO] t [(columns)] SELECT ...` that reads or writes a
    /// partitioned table: a read feeding a write (`insert_form`).
    InsertSelect(Box<InsertSelect>),
    /// `CREATE TABLE u ... SELECT` reading partitioned tables: the new
    /// table made by the main backend from copies of them
    /// (`create_select`).
    CreateSelect(Box<CreateSelect>),
    /// An INSERT or DELETE on a table with a global unique index, with
    /// the writes of its lookup tables (`lookups`).
    UniqueWrite(Box<UniqueWrite>),
    /// A statement whose rows an indexed column's value finds: the lookup
    /// read, then the statement on those rows' partitions (`lookups`).
    ByLookup(Box<ByLookup>),
}

/// A table maintenance statement on every partition of `table`. One
/// server's CHECKSUM TABLE is the sum of its rows' checksums, modulo 2^32
/// (`handler::calculate_checksum`), so the partitions' sum is the whole
/// table's; the other statements answer their rows with the table's name,
/// each distinct row once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Maintenance {
    pub table: TableName,
    pub is_checksum: bool,
    pub parts: Vec<(Target, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    Select,
    Insert,
    Update,
    Delete,
    /// DDL applied to every partition (TRUNCATE, ALTER TABLE, CREATE/DROP INDEX).
    Schema,
}

/// What a statement is planned in: the session's database, the
/// dictionary, and what the planning knows beyond it (`crate::known`).
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub db: Option<&'a str>,
    pub dict: &'a Dictionary,
    pub known: &'a Known<'a>,
}

impl<'a> Scope<'a> {
    pub(crate) fn new(db: Option<&'a str>, dict: &'a Dictionary, known: &'a Known<'a>) -> Self {
        Scope { db, dict, known }
    }
}

/// Plan a statement.
pub fn plan(sql: &str, session_db: Option<&str>, dict: &Dictionary, known: &Known<'_>) -> Plan {
    if dict.is_empty() {
        return Plan::Passthrough;
    }
    let Ok(tokens) = hscale_sql::tokenize(sql) else {
        return Plan::Passthrough;
    };
    plan_tokens(sql, &tokens, session_db, dict, false, &mut None, known)
}

/// `plan` for a statement being prepared: an INSERT whose keys are all
/// parameters gets every partition as a target (each execution picks one
/// by `insert_key_placeholders`).
pub fn plan_prepared(
    sql: &str,
    session_db: Option<&str>,
    dict: &Dictionary,
    known: &Known<'_>,
) -> Plan {
    if dict.is_empty() {
        return Plan::Passthrough;
    }
    let Ok(tokens) = hscale_sql::tokenize(sql) else {
        return Plan::Passthrough;
    };
    plan_tokens(sql, &tokens, session_db, dict, true, &mut None, known)
}

/// For a prepared read that [`plan_prepared`] cannot run on its
/// partitions as it is (it needs a merge, a shipped table, or is
/// refused): the whole statement on copies of its partitioned tables on
/// the main backend (the plan a text read falls back to). Preparing it
/// there gives the statement's parameters and columns as one server
/// would; each execution then runs as the text statement with its
/// parameters written in. `None` for statements that are not plain reads.
pub fn prepared_on_copies(
    sql: &str,
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<MergePlan> {
    let expanded = views::expanded(sql, session_db, dict);
    let sql = expanded.as_deref().unwrap_or(sql);
    let tokens = hscale_sql::tokenize(sql).ok()?;
    if !is_plain_read(sql, &tokens) {
        return None;
    }
    match ship_to_main(sql, &tokens, session_db, dict)? {
        Plan::Merge(m) => Some(m),
        _ => None,
    }
}

/// What makes a single-partition plan reusable for the same statement with
/// other literals (see `cache`): the table reference and the one literal
/// that picks the partition.
#[derive(Debug, Clone)]
pub(crate) struct PointHint {
    pub table: TableName,
    pub kind: StatementKind,
    /// Token range of the reference, and whether it has an alias.
    pub ref_start: usize,
    pub ref_end: usize,
    pub has_alias: bool,
    pub keep_alias: bool,
    /// Token index of the key's literal (the number, after any `-`).
    pub key_token: usize,
}

/// `plan` on lexed tokens; sets `hint` when the plan depends on its
/// literals only through one `key = literal` conjunct.
pub(crate) fn plan_tokens(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
    prepared: bool,
    hint: &mut Option<PointHint>,
    known: &Known<'_>,
) -> Plan {
    if let Some(p) = views::plan_view_statement(sql, tokens, session_db, dict, prepared, known) {
        *hint = None;
        return p;
    }
    match plan_nested(
        sql,
        tokens,
        Scope::new(session_db, dict, known),
        prepared,
        hint,
        0,
    ) {
        // INSERT ... SELECT naming a partitioned table, which no one
        // statement on a partition can run: the SELECT's rows read first,
        // then written as VALUES (looked for only on this refusal).
        Plan::Refuse(why) if !prepared => {
            insert_form::insert_select(sql, tokens, session_db, dict, known)
                .unwrap_or(Plan::Refuse(why))
        }
        other => other,
    }
}

/// `plan_tokens` for a statement inside `depth` others (UNION branches,
/// the statement with `db.` qualifiers dropped), refused past
/// `MAX_NESTED_STATEMENTS`.
fn plan_nested(
    sql: &str,
    tokens: &[Token],
    scope: Scope<'_>,
    prepared: bool,
    hint: &mut Option<PointHint>,
    depth: usize,
) -> Plan {
    let Scope {
        db: session_db,
        dict,
        ..
    } = scope;
    if depth > MAX_NESTED_STATEMENTS {
        return Plan::Refuse(format!(
            "statements nested more than {MAX_NESTED_STATEMENTS} levels deep (UNION ALL inside UNION ALL) are not supported"
        ));
    }
    match plan_statement(sql, tokens, scope, prepared, hint, depth) {
        // A read hscale cannot split: one server answers it, with copies of
        // the partitioned tables it reads.
        Plan::Refuse(why) if !prepared && is_plain_read(sql, tokens) => {
            *hint = None;
            ship_to_main(sql, tokens, session_db, dict).unwrap_or(Plan::Refuse(why))
        }
        // Values the merge cannot combine exactly (floating-point sums,
        // ENUM and SET values, which order by member) make it fall back to
        // the whole statement on copies, joins that ship a table too.
        Plan::Merge(mut m) if !prepared && is_plain_read(sql, tokens) => {
            if let Some(Plan::Merge(f)) = ship_to_main(sql, tokens, session_db, dict) {
                m.fallback = Some(Box::new(f));
            }
            Plan::Merge(m)
        }
        other => other,
    }
}

/// `plan_tokens` without the fallback for reads it cannot split.
fn plan_statement(
    sql: &str,
    tokens: &[Token],
    scope: Scope<'_>,
    prepared: bool,
    hint: &mut Option<PointHint>,
    depth: usize,
) -> Plan {
    let Scope {
        db: session_db,
        dict,
        known,
    } = scope;
    // `db.T.col`: once T is renamed `db.T_p AS T`, only `T.col` names the
    // column; plan the statement with the database prefixes dropped.
    if let Some(stripped) = strip_db_qualifiers(sql, tokens, dict) {
        let Ok(t2) = hscale_sql::tokenize(&stripped) else {
            return Plan::Passthrough;
        };
        return plan_nested(&stripped, &t2, scope, prepared, &mut None, depth + 1);
    }
    if let Some(p) = plan_show_tables(sql, tokens, session_db, dict) {
        return p;
    }
    if tokens.iter().any(|t| t.is_word(sql, "information_schema")) {
        if let Some(p) = schema::plan_information_schema(sql, tokens, session_db, dict) {
            return p;
        }
    }
    let refs = table_refs(sql, tokens, session_db, dict);
    if refs.is_empty() {
        return global::plan_global(sql, tokens, session_db, dict);
    }
    if let Some(p) = create_select::create_select(sql, tokens, session_db, dict) {
        return p;
    }
    // `t PARTITION (p)`: one server holding t unpartitioned answers 1747,
    // as would each partition's table (renamed, the clause is a syntax
    // error after the alias hscale adds).
    let has_partition_clause = |r: &TableRef| {
        dict.table(&r.name).is_some()
            && tokens
                .get(r.end)
                .is_some_and(|t| t.is_word(sql, "PARTITION"))
            && tokens.get(r.end + 1).is_some_and(|t| t.is_punct(sql, "("))
    };
    // (LOAD DATA keeps its own refusal, `load_data.rs`.)
    let is_load = tokens.first().is_some_and(|t| t.is_word(sql, "LOAD"));
    if !is_load && refs.iter().any(has_partition_clause) {
        return Plan::ViewError(crate::view::ViewError::PartitionClause);
    }
    let Keywords {
        has_join,
        has_union,
        has_semicolon,
        selects,
    } = Keywords::of(sql, tokens);
    let is_select = tokens.first().is_some_and(|t| t.is_word(sql, "SELECT"));
    let joins_tables = refs.len() > 1
        || has_join
        || refs.first().is_some_and(|r| {
            let after = r.end
                + usize::from(r.alias.is_some())
                + usize::from(tokens.get(r.end).is_some_and(|t| t.is_word(sql, "AS")));
            tokens.get(after).is_some_and(|t| t.is_punct(sql, ","))
        })
        || tokens
            .iter()
            .position(|t| t.is_word(sql, "FROM"))
            .is_some_and(|f| refs.first().is_some_and(|r| r.start > f + 1));
    let starts_select = tokens
        .iter()
        .find(|t| !t.is_punct(sql, "("))
        .is_some_and(|t| t.is_word(sql, "SELECT"));
    if starts_select && has_union && !has_semicolon {
        return plan_union(sql, tokens, session_db, dict, prepared, depth, known);
    }
    let first_word = tokens.first().map(|t| t.text(sql).to_ascii_uppercase());
    // UPDATE t1 JOIN t2 ... SET / DELETE t1 FROM t1 JOIN t2 (t2 may be t1
    // again), without subqueries (refused as such below): named as such.
    let is_write = matches!(first_word.as_deref(), Some("UPDATE" | "DELETE"));
    if is_write && joins_tables && selects == 0 && !has_semicolon {
        return plan_join_write(sql, tokens, &refs, scope, first_word.unwrap_or_default());
    }
    if is_select && selects == 1 && joins_tables && !has_union && !has_semicolon {
        return join::plan_join(sql, tokens, &refs, session_db, dict, known);
    }
    let is_maintenance = matches!(
        first_word.as_deref(),
        Some("CHECKSUM" | "ANALYZE" | "CHECK" | "OPTIMIZE" | "REPAIR")
    ) && tokens.iter().take(3).any(|t| t.is_word(sql, "TABLE"));
    if is_maintenance && refs.len() > 1 {
        return Plan::Refuse(format!(
            "{} TABLE naming several tables, one of them partitioned (name the partitioned table alone)",
            first_word.unwrap_or_default()
        ));
    }
    if refs.len() != 1 {
        return Plan::Refuse(
            "statements that name a partitioned table more than once (joins, self-joins) are not supported yet".into(),
        );
    }
    // A UNION inside a write's subquery (`WHERE id IN (SELECT 1 UNION
    // SELECT 2)`, a recursive CTE) is a subquery like any other: the one
    // partitioned table is the written one.
    let is_union_nested = has_union && is_write && unions_are_nested(sql, tokens);
    if has_join || has_union && !is_union_nested || has_semicolon {
        return Plan::Refuse(
            "joins, unions and multi-statements with partitioned tables are not supported yet"
                .into(),
        );
    }
    plan_single_table(sql, tokens, &refs[0], scope, (prepared, selects), hint)
}

/// A statement naming one partitioned table, once: refused where the
/// table's global unique index cannot follow it, else planned by its
/// kind (schema statements, LOAD DATA, INSERT, SELECT / UPDATE /
/// DELETE), then wrapped by the table's global unique indexes if it has
/// any (`lookups.rs`).
fn plan_single_table(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    scope: Scope<'_>,
    (prepared, selects): (bool, usize),
    hint: &mut Option<PointHint>,
) -> Plan {
    let Scope { dict, known, .. } = scope;
    let Some(table) = dict.table(&r.name) else {
        return Plan::Passthrough;
    };
    let first = tokens
        .first()
        .map(|t| t.text(sql).to_ascii_uppercase())
        .unwrap_or_default();
    if !table.lookups.is_empty() && matches!(first.as_str(), "TRUNCATE" | "LOAD") {
        return Plan::Refuse(format!(
            "{first} of {}, whose UNIQUE key is enforced across partitions by a global unique index, is not supported yet",
            r.name
        ));
    }
    if let Some(p) = plan_schema(sql, tokens, r, table, &first, selects) {
        return p;
    }
    if first == "LOAD" {
        return load_data::plan_load(sql, tokens, r, table);
    }
    let kind = match single_table_kind(sql, tokens, r, &first, selects) {
        Ok(kind) => kind,
        Err(why) => return Plan::Refuse(why),
    };
    let plan = match kind {
        StatementKind::Insert => plan_insert(sql, tokens, r, table, prepared, known),
        _ => plan_filtered(sql, tokens, r, table, kind, hint, known),
    };
    // The one check a table without a global unique index pays.
    if table.lookups.is_empty() {
        return plan;
    }
    let wrapped = lookups::wrap(sql, tokens, r, table, (kind, prepared), plan, scope);
    if matches!(
        wrapped,
        Plan::UniqueWrite(_) | Plan::ByLookup(_) | Plan::Refuse(_)
    ) {
        *hint = None;
    }
    wrapped
}

/// UPDATE t1 JOIN t2 ... SET / DELETE t1 FROM t1 JOIN t2 (t2 may be t1
/// again), without subqueries, naming a partitioned table (`first_word`
/// is UPDATE or DELETE): run as written when the rows are on one
/// backend, else the join read then each row written by key; refused
/// when neither plans it.
fn plan_join_write(
    sql: &str,
    tokens: &[Token],
    refs: &[TableRef],
    scope: Scope<'_>,
    first_word: String,
) -> Plan {
    let Scope {
        db: session_db,
        dict,
        known,
    } = scope;
    if let Some(t) = refs
        .iter()
        .filter_map(|r| dict.table(&r.name))
        .find(|t| !t.lookups.is_empty())
    {
        return Plan::Refuse(format!(
            "multi-table {first_word} naming {}, whose UNIQUE key is enforced across partitions by a global unique index, is not supported yet",
            t.name
        ));
    }
    // Rows on one backend: run there as written.
    if let Some(plan) = join_write::plan_join_write(sql, tokens, refs, session_db, dict, known) {
        return plan;
    }
    // Rows anywhere: the join read, then each row written by key.
    if let Some(plan) = join_input::plan(sql, tokens, session_db, dict) {
        return plan;
    }
    let named = refs
        .iter()
        .find(|r| dict.table(&r.name).is_some())
        .map_or_else(String::new, |r| format!(" {}", r.name));
    Plan::Refuse(format!(
        "multi-table {first_word} naming partitioned table{named} (joined with itself or with another table) whose rows may lie on several partitions or backends, or naming a global table, is not supported yet (limit every partitioned table to one partition by its key, or read the rows the join selects, then write them by key)",
    ))
}

/// The kind of a statement on one partitioned table, from its first
/// word; `Err` says why it is refused (subqueries, the table not alone
/// in FROM / UPDATE / INTO, CREATE VIEW of another form). LOAD DATA is
/// planned apart (`load_data.rs`).
fn single_table_kind(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    first: &str,
    selects: usize,
) -> Result<StatementKind, String> {
    let kind = match first {
        "SELECT" => StatementKind::Select,
        "INSERT" | "REPLACE" => StatementKind::Insert,
        "UPDATE" => StatementKind::Update,
        "DELETE" => StatementKind::Delete,
        "CREATE" if tokens.iter().any(|t| t.is_word(sql, "VIEW")) => {
            return Err(format!(
                "this form of CREATE VIEW over partitioned table {} (hscale keeps views of the form CREATE [OR REPLACE] [ALGORITHM = ..] [DEFINER = ..] [SQL SECURITY ..] VIEW v [(columns)] AS SELECT ..)",
                r.name
            ))
        }
        _ => {
            return Err(format!(
                "{first} statements on partitioned table {} are not supported yet",
                r.name
            ))
        }
    };
    let max_selects = usize::from(kind == StatementKind::Select);
    if selects > max_selects {
        return Err("subqueries on partitioned tables are not supported yet".into());
    }
    // Only one table: the reference must be the only thing in FROM / UPDATE / INTO.
    let before = r
        .start
        .checked_sub(1)
        .map(|p| tokens[p].text(sql).to_ascii_uppercase());
    let ok_position = match kind {
        StatementKind::Select | StatementKind::Delete => before.as_deref() == Some("FROM"),
        StatementKind::Schema => false,
        StatementKind::Update => {
            r.start == 1
                || before.as_deref() == Some("IGNORE")
                || before.as_deref() == Some("LOW_PRIORITY")
        }
        StatementKind::Insert => {
            before.as_deref() == Some("INTO") || before.as_deref() == Some("IGNORE")
        }
    };
    let after_alias = r.end
        + usize::from(r.alias.is_some())
        + usize::from(tokens.get(r.end).is_some_and(|t| t.is_word(sql, "AS")));
    if !ok_position
        || tokens
            .get(after_alias)
            .is_some_and(|t| t.is_punct(sql, ","))
    {
        return Err(format!(
            "only single-table statements on partitioned table {} are supported yet",
            r.name
        ));
    }
    Ok(kind)
}

#[cfg(test)]
mod tests;
