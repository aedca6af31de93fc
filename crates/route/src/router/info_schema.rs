//! information_schema's TABLES, COLUMNS, STATISTICS and KEY_COLUMN_USAGE
//! as one server with the logical tables would show them: a statement
//! that reads them is rewritten before it is planned (text and prepared,
//! by `session/rewrite.rs`) with each of those tables replaced by a
//! derived table where one physical table of each partitioned table is
//! named as the table and its other partitions are left out; it then runs
//! on the main backend. That table is the default partition, or when the
//! default partition is on another backend, a partition on the main
//! backend (every partition has the table's columns and indexes). A
//! partitioned table with no partition on the main backend gets a row of
//! its own in TABLES (its name and type; the engine and figures NULL) and
//! is missing from the other views. The figures of a row (TABLE_ROWS,
//! DATA_LENGTH, CARDINALITY, ...) are that one partition's. A statement
//! naming a table whose default partition is on another backend in a
//! literal is answered from that backend instead
//! (`schema::plan_information_schema`).

use hscale_sql::show::replace_table;
use hscale_sql::TokenKind;

use crate::dictionary::Dictionary;
use crate::BackendId;

/// Each view, its columns (MariaDB 10.x) and the columns that name a table.
const VIEWS: &[(&str, &str, &[&str])] = &[
    (
        "TABLES",
        "TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ENGINE, VERSION, ROW_FORMAT, TABLE_ROWS, AVG_ROW_LENGTH, DATA_LENGTH, MAX_DATA_LENGTH, INDEX_LENGTH, DATA_FREE, AUTO_INCREMENT, CREATE_TIME, UPDATE_TIME, CHECK_TIME, TABLE_COLLATION, CHECKSUM, CREATE_OPTIONS, TABLE_COMMENT, MAX_INDEX_LENGTH, TEMPORARY",
        &["TABLE_NAME"],
    ),
    (
        "COLUMNS",
        "TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_TYPE, COLUMN_KEY, EXTRA, PRIVILEGES, COLUMN_COMMENT, IS_GENERATED, GENERATION_EXPRESSION",
        &["TABLE_NAME"],
    ),
    (
        "STATISTICS",
        "TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, NON_UNIQUE, INDEX_SCHEMA, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, COLLATION, CARDINALITY, SUB_PART, PACKED, NULLABLE, INDEX_TYPE, COMMENT, INDEX_COMMENT, IGNORED",
        &["TABLE_NAME"],
    ),
    (
        "KEY_COLUMN_USAGE",
        "CONSTRAINT_CATALOG, CONSTRAINT_SCHEMA, CONSTRAINT_NAME, TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, POSITION_IN_UNIQUE_CONSTRAINT, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME",
        &["TABLE_NAME", "REFERENCED_TABLE_NAME"],
    ),
];

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// A logical table's name as a string that is no string literal, so the
/// planner does not take the rewritten statement for one about the table.
fn hidden_literal(s: &str) -> String {
    let hex: String = s.bytes().map(|b| format!("{b:02X}")).collect();
    format!("CONVERT(X'{hex}' USING utf8mb3)")
}

/// Marks a statement rewritten here: the planner leaves its literals
/// alone (`schema::plan_information_schema`).
pub(super) const MARK: &str = "/* hscale: logical tables */";

/// `sql` with the views above showing logical table names; `None` when
/// it reads none of them, there is no partitioned table, or a string
/// literal names a partitioned table whose default partition is on
/// another backend (the planner answers that from there).
pub fn logical_views(sql: &str, dict: &Dictionary) -> Option<String> {
    dict.tables().next()?;
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let names_remote = tokens.iter().filter(|t| t.kind == TokenKind::Str).any(|t| {
        let v = super::unescape(t.text(sql));
        dict.tables()
            .any(|p| p.name.table.eq_ignore_ascii_case(&v) && p.default_backend != BackendId::MAIN)
    });
    if names_remote {
        return None;
    }
    // (schema, physical) → logical name; physical tables left out.
    let mut renamed = Vec::new();
    let mut hidden = Vec::new();
    // Tables with no partition on the main backend: (schema, logical).
    let mut absent = Vec::new();
    for t in dict.tables() {
        let db = quote(&t.name.db);
        // The physical table on the main backend that stands for T.
        let shown = if t.default_backend == BackendId::MAIN {
            Some(t.default_table.as_str())
        } else {
            t.partitions
                .values()
                .find(|p| p.backend == BackendId::MAIN)
                .map(|p| p.physical.as_str())
        };
        match shown {
            Some(physical) => {
                renamed.push((db.clone(), quote(physical), hidden_literal(&t.name.table)))
            }
            None => absent.push((db.clone(), hidden_literal(&t.name.table))),
        }
        for p in t.partitions.values() {
            if Some(p.physical.as_str()) != shown {
                hidden.push(format!("({db}, {})", quote(&p.physical)));
            }
        }
    }
    let mut out: Option<String> = None;
    for (view, columns, named) in VIEWS {
        let current = out.as_deref().unwrap_or(sql);
        let schema_of = |column: &str| {
            if column == "REFERENCED_TABLE_NAME" {
                "REFERENCED_TABLE_SCHEMA"
            } else {
                "TABLE_SCHEMA"
            }
        };
        let select: Vec<String> = columns
            .split(", ")
            .map(|c| {
                if !named.contains(&c) || renamed.is_empty() {
                    return c.to_string();
                }
                let mut case = String::from("CASE");
                for (db, physical, logical) in &renamed {
                    case.push_str(&format!(
                        " WHEN {} = {db} AND {c} = {physical} THEN {logical}",
                        schema_of(c)
                    ));
                }
                format!("{case} ELSE {c} END AS {c}")
            })
            .collect();
        let mut derived = format!(
            "SELECT {MARK} {} FROM information_schema.{view}",
            select.join(", ")
        );
        if !hidden.is_empty() {
            derived.push_str(&format!(
                " WHERE (TABLE_SCHEMA, TABLE_NAME) NOT IN ({})",
                hidden.join(", ")
            ));
        }
        if *view == "TABLES" {
            for (db, logical) in &absent {
                let row: Vec<String> = columns
                    .split(", ")
                    .map(|c| match c {
                        "TABLE_CATALOG" => "'def'".to_string(),
                        "TABLE_SCHEMA" => db.clone(),
                        "TABLE_NAME" => logical.clone(),
                        "TABLE_TYPE" => "'BASE TABLE'".to_string(),
                        "TEMPORARY" => "'N'".to_string(),
                        "TABLE_COMMENT" => "''".to_string(),
                        // Typed, so the union keeps the view's column types.
                        "CREATE_TIME" | "UPDATE_TIME" | "CHECK_TIME" => {
                            "CAST(NULL AS DATETIME)".to_string()
                        }
                        "VERSION" | "TABLE_ROWS" | "AVG_ROW_LENGTH" | "DATA_LENGTH"
                        | "MAX_DATA_LENGTH" | "INDEX_LENGTH" | "DATA_FREE" | "AUTO_INCREMENT"
                        | "CHECKSUM" | "MAX_INDEX_LENGTH" => "CAST(NULL AS UNSIGNED)".to_string(),
                        _ => "NULL".to_string(),
                    })
                    .collect();
                derived.push_str(&format!(" UNION ALL SELECT {}", row.join(", ")));
            }
        }
        if let Some(s) = replace_table(current, "information_schema", view, &derived) {
            out = Some(s);
        }
    }
    out
}
