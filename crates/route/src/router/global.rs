//! Statements on global tables (a full copy on every backend) that name no
//! partitioned table. Reads go to the main backend's copy; writes go to
//! every copy (`Plan::GlobalWrite`), which only works when they do exactly
//! the same on each: no subqueries or other tables, no values that differ
//! from one server to the next (NOW(), RAND(), UUID(), @@port, ...).

use hscale_sql::{Token, TokenKind};

use super::refs::table_starts;
use super::{is_name, unquote, Plan};
use crate::dictionary::{Dictionary, TableName};

/// Functions whose value differs between servers or between runs.
const NONDETERMINISTIC: &[&str] = &[
    "NOW",
    "SYSDATE",
    "CURDATE",
    "CURTIME",
    "CURRENT_DATE",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "UTC_DATE",
    "UTC_TIME",
    "UTC_TIMESTAMP",
    "UNIX_TIMESTAMP",
    "RAND",
    "UUID",
    "UUID_SHORT",
    "SYS_GUID",
    "LAST_INSERT_ID",
    "CONNECTION_ID",
    "USER",
    "CURRENT_USER",
    "SESSION_USER",
    "SYSTEM_USER",
    "DATABASE",
    "SCHEMA",
    "FOUND_ROWS",
    "ROW_COUNT",
    "NEXTVAL",
    "LASTVAL",
    "SETVAL",
];

/// The global tables a statement names where tables go (`table_starts`),
/// not columns, aliases or `g.col` qualifiers spelled like one.
fn globals_named(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Vec<TableName> {
    let mut out: Vec<TableName> = Vec::new();
    for start in table_starts(sql, tokens) {
        let qualified = tokens.get(start + 1).is_some_and(|d| d.is_punct(sql, "."))
            && tokens.get(start + 2).is_some_and(is_name);
        let (db, t) = if qualified {
            (unquote(&tokens[start], sql), &tokens[start + 2])
        } else {
            match session_db {
                Some(d) => (d.to_string(), &tokens[start]),
                None => continue,
            }
        };
        let name = TableName::new(&db, &unquote(t, sql));
        if dict.is_global(&name) && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

pub(super) fn plan_global(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Plan {
    let named = globals_named(sql, tokens, session_db, dict);
    let Some(first_global) = named.first() else {
        return Plan::Passthrough;
    };
    let first = tokens
        .first()
        .map(|t| t.text(sql).to_ascii_uppercase())
        .unwrap_or_default();
    let word = |w: &str| tokens.iter().any(|t| t.is_word(sql, w));
    let refuse = |why: &str| {
        Plan::Refuse(format!(
            "{why} on global table {first_global} is not supported (every copy must change the same way)"
        ))
    };
    match first.as_str() {
        "INSERT" | "REPLACE" | "UPDATE" | "DELETE" | "TRUNCATE" | "ALTER" | "CREATE" | "DROP"
        | "RENAME" | "LOAD" | "OPTIMIZE" | "ANALYZE" | "REPAIR" => {}
        _ => return Plan::Passthrough,
    }
    if named.len() != 1 {
        return refuse("a statement naming several global tables");
    }
    if first == "DROP" {
        let is_drop_table = tokens.get(1).is_some_and(|t| t.is_word(sql, "TABLE"))
            && !word("TEMPORARY")
            && !tokens.iter().any(|t| t.is_punct(sql, ","));
        if is_drop_table {
            return Plan::DropGlobal(first_global.clone());
        }
        if !word("INDEX") {
            return refuse("this DROP");
        }
    }
    if first == "RENAME" || (first == "ALTER" && word("RENAME")) {
        return refuse("renaming");
    }
    if matches!(first.as_str(), "OPTIMIZE" | "ANALYZE" | "REPAIR")
        || word("RETURNING")
        || word("TEMPORARY")
    {
        return refuse("a statement that returns rows or creates a temporary table");
    }
    if word("SELECT")
        || word("JOIN")
        || tokens
            .iter()
            .any(|t| t.kind == hscale_sql::TokenKind::Semicolon)
    {
        return refuse("a write with a subquery, a join, INSERT ... SELECT or several statements");
    }
    // Other tables in the statement exist only on the main backend.
    let region_end = |stop: &[&str]| {
        tokens
            .iter()
            .position(|t| stop.iter().any(|w| t.is_word(sql, w)))
            .unwrap_or(tokens.len())
    };
    let table_list = match first.as_str() {
        "UPDATE" => &tokens[..region_end(&["SET"])],
        "DELETE" => &tokens[..region_end(&["WHERE", "ORDER", "LIMIT"])],
        _ => &tokens[..0],
    };
    if table_list.iter().any(|t| t.is_punct(sql, ",")) {
        return refuse("a write naming several tables");
    }
    // `UUID()` and `` `UUID`() `` call the same function.
    if let Some(f) = tokens.windows(2).find_map(|w| {
        let name = is_name(&w[0]).then(|| unquote(&w[0], sql).to_ascii_uppercase())?;
        (w[1].is_punct(sql, "(") && NONDETERMINISTIC.contains(&name.as_str())).then_some(name)
    }) {
        return refuse(&format!(
            "a write using {f}(), whose value differs between servers,"
        ));
    }
    // A system variable (@@port, @@hostname, @@server_id,
    // @@pseudo_thread_id, @@datadir, ...) is read on each backend, and
    // many differ from one server to the next.
    if let Some(v) = tokens.iter().find(|t| t.kind == TokenKind::SysVar) {
        return refuse(&format!(
            "a write reading {}, whose value may differ between servers,",
            v.text(sql)
        ));
    }
    if word("CURRENT_TIMESTAMP") || word("LOCALTIMESTAMP") || word("CURRENT_DATE") {
        return refuse("a write using the current time,");
    }
    if first == "LOAD" {
        return match super::load_data::plan_global_load(sql, tokens, first_global) {
            Ok(load) => Plan::LoadData(Box::new(load)),
            Err(why) => refuse(&why),
        };
    }
    Plan::GlobalWrite {
        table: first_global.clone(),
        sql: sql.to_string(),
    }
}
