//! The router: from a statement that names a partitioned table to the
//! partitions it must run on, with the table name rewritten for each.
//!
//! Version 1 handles single-table statements and refuses the rest with a
//! reason (joins, subqueries, unions, schema statements, aggregates or
//! ordering over several partitions). Keys are pruned only on `=` and
//! `IN (...)` with literals, for keys whose comparison is exact (integers,
//! binary strings); for any other key every partition is scanned, which is
//! always correct.

use hscale_sql::{Token, TokenKind};

use crate::dictionary::{Dictionary, PartitionedTable, TableName, Target};
use crate::KeyValue;

mod cache;
mod explain;
mod global;
mod insert;
mod join;
mod merge;
mod prune;
mod schema;

pub use cache::{CacheStats, PlanCache};
pub use explain::ExplainRow;
pub use insert::insert_key_placeholders;
use insert::plan_insert;
pub use merge::{ArithOp, CmpOp, GroupPlan, Having, MergePlan, Mode, OrderKey, Output, Ship, Val};
pub use schema::like_matches;
use schema::{plan_schema, plan_show_tables};

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
    /// `DROP TABLE T`: every physical table and the dictionary entry.
    DropTable(TableName),
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

/// A reference to a partitioned table in the statement.
struct TableRef {
    /// Token range of `[db .] table`.
    start: usize,
    end: usize,
    name: TableName,
    /// The alias, if the statement gives one.
    alias: Option<String>,
}

fn unquote(t: &Token, sql: &str) -> String {
    let s = t.text(sql);
    if t.kind == TokenKind::QuotedIdent {
        s[1..s.len() - 1].replace("``", "`")
    } else {
        s.to_string()
    }
}

fn is_name(t: &Token) -> bool {
    matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent)
}

const CLAUSE_WORDS: &[&str] = &[
    "WHERE",
    "GROUP",
    "ORDER",
    "LIMIT",
    "HAVING",
    "FOR",
    "LOCK",
    "SET",
    "VALUES",
    "VALUE",
    "ON",
    "JOIN",
    "INNER",
    "LEFT",
    "RIGHT",
    "CROSS",
    "NATURAL",
    "STRAIGHT_JOIN",
    "UNION",
    "INTO",
    "PROCEDURE",
    "WINDOW",
    "USE",
    "IGNORE",
    "FORCE",
    "PARTITION",
    "SELECT",
    "RETURNING",
];

/// Plan a statement.
pub fn plan(sql: &str, session_db: Option<&str>, dict: &Dictionary) -> Plan {
    if dict.is_empty() {
        return Plan::Passthrough;
    }
    let Ok(tokens) = hscale_sql::tokenize(sql) else {
        return Plan::Passthrough;
    };
    plan_tokens(sql, &tokens, session_db, dict, false, &mut None)
}

/// `plan` for a statement being prepared: an INSERT whose keys are all
/// parameters gets every partition as a target (each execution picks one
/// by `insert_key_placeholders`).
pub fn plan_prepared(sql: &str, session_db: Option<&str>, dict: &Dictionary) -> Plan {
    if dict.is_empty() {
        return Plan::Passthrough;
    }
    let Ok(tokens) = hscale_sql::tokenize(sql) else {
        return Plan::Passthrough;
    };
    plan_tokens(sql, &tokens, session_db, dict, true, &mut None)
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
) -> Plan {
    match plan_statement(sql, tokens, session_db, dict, prepared, hint) {
        // A read hscale cannot split: one server answers it, with copies of
        // the partitioned tables it reads.
        Plan::Refuse(why) if !prepared && is_plain_read(sql, tokens) => {
            *hint = None;
            ship_to_main(sql, tokens, session_db, dict).unwrap_or(Plan::Refuse(why))
        }
        Plan::Merge(mut m) if !prepared && m.ship.is_empty() && is_plain_read(sql, tokens) => {
            if let Some(Plan::Merge(f)) = ship_to_main(sql, tokens, session_db, dict) {
                m.fallback = Some(Box::new(f));
            }
            Plan::Merge(m)
        }
        other => other,
    }
}

/// A SELECT that only reads: no INTO, locking clause or several statements.
fn is_plain_read(sql: &str, tokens: &[Token]) -> bool {
    tokens
        .iter()
        .find(|t| !t.is_punct(sql, "("))
        .is_some_and(|t| t.is_word(sql, "SELECT"))
        && !tokens.iter().any(|t| {
            t.kind == TokenKind::Semicolon
                || t.is_word(sql, "INTO")
                || t.is_word(sql, "FOR")
                || t.is_word(sql, "LOCK")
                || t.is_punct(sql, ":=")
        })
}

/// The whole statement on the main backend, every reference to a
/// partitioned table replaced by a temporary copy of all its rows there
/// (`MergePlan::ship`, bounded by `[proxy] merge_max_rows`).
fn ship_to_main(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<Plan> {
    let (refs, _) = table_refs(sql, tokens, session_db, dict);
    if refs.is_empty() {
        return None;
    }
    let mut ship = Vec::new();
    let mut targets = Vec::new();
    for r in &refs {
        let table = dict.table(&r.name)?;
        let shipped = merge::Ship::partitioned(ship.len(), &r.name.db, table, None);
        let temp = shipped.temp.clone();
        ship.push(shipped);
        targets.push(Target {
            backend: 0,
            physical_table: temp,
        });
    }
    let slot = merge::Slot {
        target: Target {
            backend: 0,
            physical_table: "whole statement on copies".into(),
        },
        refs: refs.iter().zip(targets).collect(),
    };
    Some(Plan::Merge(MergePlan {
        parts: vec![(slot.target.clone(), merge::rewrite_slot(sql, tokens, &slot))],
        mode: Mode::Sort { hidden: 0 },
        order: Vec::new(),
        offset: 0,
        limit: None,
        ship,
        fallback: None,
    }))
}

/// `plan_tokens` without the fallback for reads it cannot split.
fn plan_statement(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
    prepared: bool,
    hint: &mut Option<PointHint>,
) -> Plan {
    // `db.T.col`: once T is renamed `db.T_p AS T`, only `T.col` names the
    // column; plan the statement with the database prefixes dropped.
    if let Some(stripped) = strip_db_qualifiers(sql, tokens, dict) {
        let Ok(t2) = hscale_sql::tokenize(&stripped) else {
            return Plan::Passthrough;
        };
        return plan_tokens(&stripped, &t2, session_db, dict, prepared, &mut None);
    }
    if let Some(p) = plan_show_tables(sql, tokens, session_db, dict) {
        return p;
    }
    if tokens.iter().any(|t| t.is_word(sql, "information_schema")) {
        if let Some(p) = schema::plan_information_schema(sql, tokens, session_db, dict) {
            return p;
        }
    }
    let (refs, mentions) = table_refs(sql, tokens, session_db, dict);
    if mentions == 0 {
        return global::plan_global(sql, tokens, session_db, dict);
    }
    let word = |w: &str| tokens.iter().any(|t| t.is_word(sql, w));
    let selects = tokens.iter().filter(|t| t.is_word(sql, "SELECT")).count();
    let is_select = tokens.first().is_some_and(|t| t.is_word(sql, "SELECT"));
    let joins_tables = refs.len() > 1
        || word("JOIN")
        || word("STRAIGHT_JOIN")
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
    if starts_select && word("UNION") && !tokens.iter().any(|t| t.kind == TokenKind::Semicolon) {
        return plan_union(sql, tokens, session_db, dict, prepared);
    }
    if is_select
        && selects == 1
        && joins_tables
        && !word("UNION")
        && !tokens.iter().any(|t| t.kind == TokenKind::Semicolon)
    {
        return join::plan_join(sql, tokens, &refs, session_db, dict);
    }
    if refs.len() != 1 {
        return Plan::Refuse(
            "statements that name a partitioned table more than once (joins, self-joins) are not supported yet".into(),
        );
    }
    if word("JOIN")
        || word("UNION")
        || word("STRAIGHT_JOIN")
        || tokens.iter().any(|t| t.kind == TokenKind::Semicolon)
    {
        return Plan::Refuse(
            "joins, unions and multi-statements with partitioned tables are not supported yet"
                .into(),
        );
    }
    let r = &refs[0];
    let Some(table) = dict.table(&r.name) else {
        return Plan::Passthrough;
    };
    let first = tokens
        .first()
        .map(|t| t.text(sql).to_ascii_uppercase())
        .unwrap_or_default();
    if let Some(p) = plan_schema(sql, tokens, r, table, &first, selects) {
        return p;
    }
    let kind = match first.as_str() {
        "SELECT" => StatementKind::Select,
        "INSERT" | "REPLACE" => StatementKind::Insert,
        "UPDATE" => StatementKind::Update,
        "DELETE" => StatementKind::Delete,
        _ => {
            return Plan::Refuse(format!(
                "{first} statements on partitioned table {} are not supported yet",
                r.name
            ))
        }
    };
    let max_selects = usize::from(kind == StatementKind::Select);
    if selects > max_selects {
        return Plan::Refuse("subqueries on partitioned tables are not supported yet".into());
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
        return Plan::Refuse(format!(
            "only single-table statements on partitioned table {} are supported yet",
            r.name
        ));
    }
    match kind {
        StatementKind::Insert => plan_insert(sql, tokens, r, table, prepared),
        _ => plan_filtered(sql, tokens, r, table, kind, hint),
    }
}

/// The statement without the `db.` of column references `db.T.col` to a
/// partitioned table T; `None` when there are none.
fn strip_db_qualifiers(sql: &str, tokens: &[Token], dict: &Dictionary) -> Option<String> {
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    for i in 0..tokens.len().saturating_sub(4) {
        let [db, d1, t, d2, col] = &tokens[i..i + 5] else {
            continue;
        };
        if is_name(db)
            && d1.is_punct(sql, ".")
            && is_name(t)
            && d2.is_punct(sql, ".")
            && (is_name(col) || col.is_punct(sql, "*"))
            && dict
                .table(&TableName::new(&unquote(db, sql), &unquote(t, sql)))
                .is_some()
        {
            cuts.push((db.start as usize, t.start as usize));
        }
    }
    if cuts.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len());
    let mut at = 0;
    for (a, b) in cuts {
        out.push_str(&sql[at..a]);
        at = b;
    }
    out.push_str(&sql[at..]);
    Some(out)
}

/// `SELECT ... UNION ALL SELECT ...` with partitioned tables: every
/// branch planned on its own (one or several partitions, concatenated, or
/// the main backend), the branches' rows concatenated in order.
fn plan_union(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
    prepared: bool,
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
        match plan_tokens(text, &bt, session_db, dict, prepared, &mut None) {
            Plan::Passthrough => parts.push((
                Target {
                    backend: 0,
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
    })
}

/// Every reference to a partitioned table (table positions, not `t.col`
/// qualifiers), and how often any partitioned table's name is mentioned.
/// Names are case-sensitive, as table names are on Linux.
fn table_refs(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> (Vec<TableRef>, usize) {
    let mut refs: Vec<TableRef> = Vec::new();
    let mut mentions = 0;
    for (i, t) in tokens.iter().enumerate() {
        if !is_name(t) {
            continue;
        }
        let name = unquote(t, sql);
        let qualified_db = (i >= 2 && tokens[i - 1].is_punct(sql, ".") && is_name(&tokens[i - 2]))
            .then(|| unquote(&tokens[i - 2], sql));
        let db = match (&qualified_db, session_db) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) => d.to_string(),
            (None, None) => continue,
        };
        let candidates: Vec<&PartitionedTable> = dict
            .tables()
            .filter(|p| p.name.table == name && p.name.db == db)
            .collect();
        let Some(table) = candidates.first() else {
            continue;
        };
        mentions += 1;
        // `t.col`: a column qualifier, not a table reference.
        if tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, ".")) {
            continue;
        }
        let start = if qualified_db.is_some() { i - 2 } else { i };
        let mut alias = None;
        let mut j = i + 1;
        if tokens.get(j).is_some_and(|n| n.is_word(sql, "AS")) {
            j += 1;
        }
        if let Some(a) = tokens.get(j) {
            let is_clause = a.kind == TokenKind::Word
                && CLAUSE_WORDS
                    .iter()
                    .any(|w| a.text(sql).eq_ignore_ascii_case(w));
            if is_name(a) && !is_clause {
                alias = Some(unquote(a, sql));
            }
        }
        refs.push(TableRef {
            start,
            end: i + 1,
            name: table.name.clone(),
            alias,
        });
    }
    (refs, mentions)
}

/// Whether a SELECT over several partitions needs their rows merged
/// (ordering, limits, grouping, aggregates) rather than concatenated.
fn needs_merge(sql: &str, tokens: &[Token]) -> bool {
    merge::calls_aggregate(sql, tokens)
        || [
            "ORDER",
            "GROUP",
            "LIMIT",
            "HAVING",
            "DISTINCT",
            "DISTINCTROW",
            "SQL_CALC_FOUND_ROWS",
            "INTO",
            "OFFSET",
            "WINDOW",
            "OVER",
            "FETCH",
        ]
        .iter()
        .any(|w| tokens.iter().any(|t| t.is_word(sql, w)))
}

/// The physical name for one target: `` `db`.`T_p` `` and, where the
/// statement gave no alias, `` AS `T` `` so qualified columns still work.
fn physical_name(r: &TableRef, target: &Target, keep_name_as_alias: bool) -> String {
    let mut physical = format!(
        "`{}`.`{}`",
        r.name.db.replace('`', "``"),
        target.physical_table.replace('`', "``")
    );
    if keep_name_as_alias && r.alias.is_none() {
        physical.push_str(&format!(" AS `{}`", r.name.table.replace('`', "``")));
    }
    physical
}

/// `text` with the reference's span replaced by its physical name.
fn rewrite(
    text: &str,
    tokens: &[Token],
    r: &TableRef,
    target: &Target,
    keep_name_as_alias: bool,
) -> String {
    let a = tokens[r.start].start as usize;
    let b = tokens[r.end - 1].end as usize;
    format!(
        "{}{}{}",
        &text[..a],
        physical_name(r, target, keep_name_as_alias),
        &text[b..]
    )
}

/// SELECT, UPDATE, DELETE: prune by the WHERE clause.
fn plan_filtered(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    kind: StatementKind,
    hint: &mut Option<PointHint>,
) -> Plan {
    let qualifiers: Vec<&str> = [Some(r.name.table.as_str()), r.alias.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let is_key = |t: &[Token]| -> bool {
        match t {
            [c] => is_name(c) && unquote(c, sql).eq_ignore_ascii_case(&table.column),
            [q, dot, c] => {
                is_name(q)
                    && dot.is_punct(sql, ".")
                    && is_name(c)
                    && qualifiers
                        .iter()
                        .any(|x| unquote(q, sql).eq_ignore_ascii_case(x))
                    && unquote(c, sql).eq_ignore_ascii_case(&table.column)
            }
            _ => false,
        }
    };
    if kind == StatementKind::Update {
        // SET key = ...: the row could belong to another partition afterwards.
        if let Some(set) = tokens.iter().position(|t| t.is_word(sql, "SET")) {
            let end = tokens
                .iter()
                .position(|t| t.is_word(sql, "WHERE"))
                .unwrap_or(tokens.len());
            for (i, t) in tokens[set..end].iter().enumerate() {
                let at = set + i;
                if t.is_punct(sql, "=") || t.is_punct(sql, ":=") {
                    let lhs_start = (set + 1).max(at.saturating_sub(3));
                    let lhs = &tokens[lhs_start..at];
                    let lhs = lhs
                        .iter()
                        .rposition(|x| x.is_punct(sql, ",") || x.is_word(sql, "SET"))
                        .map_or(lhs, |p| &lhs[p + 1..]);
                    if is_key(lhs) {
                        return Plan::Refuse(format!(
                            "UPDATE of the partition key {} of {} is not supported (the row could move to another partition)",
                            table.column, table.name
                        ));
                    }
                }
            }
        }
    }
    let mut targets: Vec<Target> =
        match where_clause(sql, tokens).and_then(|w| prune::targets(sql, w, &is_key, table)) {
            Some(set) => set.into_iter().collect(),
            None => table.all_targets(),
        };
    targets.sort();
    targets.dedup();
    if targets.is_empty() {
        targets.push(table.default_target());
    }
    if targets.len() > 1 {
        let needs = needs_merge(sql, tokens);
        if needs && kind == StatementKind::Select {
            let slots: Vec<merge::Slot> = targets
                .iter()
                .map(|t| merge::Slot {
                    target: t.clone(),
                    refs: vec![(r, t.clone())],
                })
                .collect();
            let what = merge::What {
                table: table.name.to_string(),
                hint: format!(
                    "restrict it to one partition with {} = <value>",
                    table.column
                ),
            };
            return merge::plan_merge(sql, tokens, &slots, &what);
        }
        if needs {
            return Plan::Refuse(format!(
                "this statement needs {} partitions of {} merged (ORDER BY or LIMIT in an UPDATE or DELETE over several partitions is not supported); restrict it to one partition with {} = <value>",
                targets.len(),
                table.name,
                table.column
            ));
        }
    }
    let keep_alias = kind != StatementKind::Delete;
    if targets.len() == 1 {
        *hint = point_hint(sql, tokens, &table.column, &is_key).map(|key_token| PointHint {
            table: table.name.clone(),
            kind,
            ref_start: r.start,
            ref_end: r.end,
            has_alias: r.alias.is_some(),
            keep_alias,
            key_token,
        });
    }
    let parts = targets
        .into_iter()
        .map(|t| {
            let s = rewrite(sql, tokens, r, &t, keep_alias);
            (t, s)
        })
        .collect();
    Plan::Targets { kind, parts }
}

/// The token index of the literal in the WHERE clause's only mention of
/// the key, when that mention is a top-level `key = literal` conjunct: then
/// the literal alone decides the partition.
fn point_hint(
    sql: &str,
    tokens: &[Token],
    column: &str,
    is_key: &dyn Fn(&[Token]) -> bool,
) -> Option<usize> {
    let w = where_clause(sql, tokens)?;
    let mentions = w
        .iter()
        .filter(|t| is_name(t) && unquote(t, sql).eq_ignore_ascii_case(column))
        .count();
    if mentions != 1 {
        return None;
    }
    for c in conjuncts(sql, w)? {
        let Some(eq) = c.iter().position(|t| t.is_punct(sql, "=")) else {
            continue;
        };
        let (l, r) = (&c[..eq], &c[eq + 1..]);
        let lit = if is_key(l) {
            r
        } else if is_key(r) {
            l
        } else {
            continue;
        };
        literal(sql, lit)?;
        let last = lit.last()?;
        if !matches!(last.kind, TokenKind::Str | TokenKind::Number) {
            return None;
        }
        return tokens.iter().position(|t| t.start == last.start);
    }
    None
}

/// For a prepared statement: the ordinal of the `?` in a top-level
/// `key = ?` (or `? = key`) conjunct of the WHERE clause, whose value then
/// picks the partition at each execution.
pub fn key_placeholder(sql: &str, column: &str) -> Option<usize> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    // Only single-table statements: in a join or subquery `x.k = ?` may
    // name another table's column.
    let selects = tokens.iter().filter(|t| t.is_word(sql, "SELECT")).count();
    let from = tokens.iter().position(|t| t.is_word(sql, "FROM"));
    let wh = tokens.iter().position(|t| t.is_word(sql, "WHERE"));
    let comma_join = match (from, wh) {
        (Some(f), Some(w)) if f < w => tokens[f..w].iter().any(|t| t.is_punct(sql, ",")),
        _ => false,
    };
    if selects > 1
        || comma_join
        || tokens
            .iter()
            .any(|t| t.is_word(sql, "JOIN") || t.is_word(sql, "STRAIGHT_JOIN"))
    {
        return None;
    }
    let is_col = |t: &Token| is_name(t) && unquote(t, sql).eq_ignore_ascii_case(column);
    let is_eq = |t: &Token| t.is_punct(sql, "=");
    let is_p = |t: &Token| t.kind == TokenKind::Placeholder;
    for c in conjuncts(sql, where_clause(sql, &tokens)?)? {
        let p = match c {
            [k, eq, p] if is_col(k) && is_eq(eq) && is_p(p) => p,
            [_, dot, k, eq, p] if dot.is_punct(sql, ".") && is_col(k) && is_eq(eq) && is_p(p) => p,
            [p, eq, k] if is_col(k) && is_eq(eq) && is_p(p) => p,
            _ => continue,
        };
        return Some(
            tokens
                .iter()
                .filter(|t| is_p(t) && t.start < p.start)
                .count(),
        );
    }
    None
}

/// The tokens of the WHERE clause, up to the next clause.
fn where_clause<'t>(sql: &str, tokens: &'t [Token]) -> Option<&'t [Token]> {
    let w = tokens.iter().position(|t| t.is_word(sql, "WHERE"))?;
    let end = tokens[w + 1..]
        .iter()
        .position(|t| {
            [
                "GROUP",
                "ORDER",
                "LIMIT",
                "HAVING",
                "FOR",
                "LOCK",
                "INTO",
                "WINDOW",
                "PROCEDURE",
                "RETURNING",
            ]
            .iter()
            .any(|k| t.is_word(sql, k))
        })
        .map_or(tokens.len(), |p| w + 1 + p);
    Some(&tokens[w + 1..end])
}

/// A condition split at its top-level ANDs; `None` if it has a top-level
/// OR / XOR (then no conjunct alone limits the rows).
fn conjuncts<'t>(sql: &str, cond: &'t [Token]) -> Option<Vec<&'t [Token]>> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, t) in cond.iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 {
            if t.is_word(sql, "OR") || t.is_word(sql, "XOR") || t.is_punct(sql, "||") {
                return None;
            }
            if t.is_word(sql, "AND") || t.is_punct(sql, "&&") {
                out.push(&cond[start..i]);
                start = i + 1;
            }
        }
    }
    out.push(&cond[start..]);
    Some(out)
}

fn literal(sql: &str, t: &[Token]) -> Option<KeyValue> {
    match t {
        [l] if l.kind == TokenKind::Str => Some(KeyValue::Str(unescape(l.text(sql)))),
        [l] if l.kind == TokenKind::Number => number(l.text(sql), false),
        [m, l] if m.is_punct(sql, "-") && l.kind == TokenKind::Number => number(l.text(sql), true),
        [l] if l.is_word(sql, "NULL") => Some(KeyValue::Null),
        _ => None,
    }
}

fn number(text: &str, negative: bool) -> Option<KeyValue> {
    // Only plain integers; decimals, exponents and hex are not pruned.
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i128 = text.parse().ok()?;
    Some(KeyValue::Int(if negative { -v } else { v }))
}

/// The text of a quoted string literal.
fn unescape(q: &str) -> String {
    let quote = q.chars().next().unwrap_or('\'');
    let inner = &q[1..q.len().saturating_sub(1).max(1)];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('0') => out.push('\0'),
                Some('Z') => out.push('\x1a'),
                Some('b') => out.push('\x08'),
                Some(other) => out.push(other),
                None => {}
            }
        } else if c == quote && chars.peek() == Some(&quote) {
            chars.next();
            out.push(quote);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests;
