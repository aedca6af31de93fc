//! information_schema's TABLES, COLUMNS, STATISTICS, KEY_COLUMN_USAGE,
//! TABLE_CONSTRAINTS and CHECK_CONSTRAINTS
//! as one server with the logical tables would show them: a statement
//! that reads them is rewritten before it is planned (text and prepared,
//! by `session/rewrite.rs`) with each of those tables replaced by a
//! derived table where one physical table of each partitioned table is
//! named as the table and its other partitions are left out; it then runs
//! on the main backend. That table is the default partition, or when the
//! default partition is on another backend, a partition on the main
//! backend (every partition has the table's columns and indexes). A
//! partitioned table with no partition on the main backend gets rows of
//! its own, under its name: the rows its default partition has in each
//! view, which the proxy reads from that partition's backend and passes
//! in ([`RemoteRows`]; without them, TABLES shows its name and type with
//! NULL figures). The figures of a row (TABLE_ROWS,
//! DATA_LENGTH, CARDINALITY, ...) are that one partition's, except TABLES'
//! AUTO_INCREMENT of a table with a sequence: the sequence's next value,
//! which the proxy reads and passes in (`auto_increments`; the partitions'
//! own counters are not the table's). A statement
//! naming a table whose default partition is on another backend in a
//! literal is answered from that backend instead
//! (`schema::plan_information_schema`).

use hscale_sql::show::replace_table;
use hscale_sql::{Token, TokenKind};

use crate::dictionary::{Dictionary, TableName};
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
    (
        "TABLE_CONSTRAINTS",
        "CONSTRAINT_CATALOG, CONSTRAINT_SCHEMA, CONSTRAINT_NAME, TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_TYPE",
        &["TABLE_NAME"],
    ),
    (
        "CHECK_CONSTRAINTS",
        "CONSTRAINT_CATALOG, CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, LEVEL, CHECK_CLAUSE",
        &["TABLE_NAME"],
    ),
];

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// The columns of information_schema view `view` that [`logical_views`]
/// rewrites (`TABLES`, `COLUMNS`, `STATISTICS`, `KEY_COLUMN_USAGE`,
/// `TABLE_CONSTRAINTS`, `CHECK_CONSTRAINTS`), in
/// their order; `None` for another view.
pub fn view_columns(view: &str) -> Option<&'static str> {
    VIEWS
        .iter()
        .find(|(v, _, _)| *v == view)
        .map(|(_, columns, _)| *columns)
}

/// The views of [`view_columns`].
pub const LOGICAL_VIEWS: [&str; 6] = [
    "TABLES",
    "COLUMNS",
    "STATISTICS",
    "KEY_COLUMN_USAGE",
    "TABLE_CONSTRAINTS",
    "CHECK_CONSTRAINTS",
];

/// The partitioned tables with no partition on the main backend, which
/// the main backend's information_schema does not know: each with its
/// default partition's backend and physical table, where they are read.
pub fn absent_tables(dict: &Dictionary) -> Vec<(TableName, BackendId, String)> {
    dict.tables()
        .filter(|t| {
            t.default_backend != BackendId::MAIN
                && t.partitions.values().all(|p| p.backend != BackendId::MAIN)
        })
        .map(|t| (t.name.clone(), t.default_backend, t.default_table.clone()))
        .collect()
}

/// A value of an information_schema row, typed as its column is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Text(Option<Vec<u8>>),
    Unsigned(Option<u64>),
    Signed(Option<i64>),
    /// A DATETIME, as the server prints it.
    DateTime(Option<String>),
}

impl Cell {
    /// The value as an expression of the column's type and character set
    /// (information_schema's utf8mb3), with no string literal in it. A
    /// NULL is typed too: a bare NULL would make an integer column of the
    /// union DECIMAL.
    fn sql(&self) -> String {
        match self {
            Cell::Text(None) => "NULL".into(),
            Cell::Text(Some(b)) => hidden_bytes(b),
            Cell::Unsigned(n) => format!("CAST({} AS UNSIGNED)", number(n)),
            Cell::Signed(n) => format!("CAST({} AS SIGNED)", number(n)),
            Cell::DateTime(None) => "CAST(NULL AS DATETIME)".into(),
            Cell::DateTime(Some(s)) => format!("CAST({} AS DATETIME)", hidden_literal(s)),
        }
    }
}

fn number<N: std::fmt::Display>(n: &Option<N>) -> String {
    n.as_ref().map_or("NULL".into(), |n| n.to_string())
}

/// The rows view `view` has of a partitioned table with no partition on
/// the main backend ([`absent_tables`]): every column of [`view_columns`],
/// read from its default partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRows {
    pub table: TableName,
    pub view: &'static str,
    pub rows: Vec<Vec<Cell>>,
}

fn hidden_literal(s: &str) -> String {
    hscale_sql::show::hidden_literal(s)
}

fn hidden_bytes(b: &[u8]) -> String {
    let hex: String = b.iter().map(|b| format!("{b:02X}")).collect();
    format!("CONVERT(X'{hex}' USING utf8mb3)")
}

/// `sql` with TABLES' AUTO_INCREMENT of the tables in `auto_increments`
/// whose default partition is on another backend as that value, for a
/// statement [`logical_views`] leaves to the planner (a literal names
/// such a table: it is asked of that backend, `schema::plan_information_schema`,
/// which renames the literal and relabels the answer). Physical names
/// are written with no string literal ([`char_codes`]), so the planner
/// takes the statement as before. `None` when there is nothing to change.
pub fn remote_auto_increments(
    sql: &str,
    dict: &Dictionary,
    auto_increments: &[(TableName, u64)],
) -> Option<String> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let literals: Vec<String> = tokens
        .iter()
        .filter(|t| t.kind == TokenKind::Str)
        .map(|t| super::unescape(t.text(sql)))
        .collect();
    // Only the tables the statement names (the planner refuses a
    // question naming others), with no literal of their own.
    let counters: Vec<(String, String, u64)> = dict
        .tables()
        .filter(|t| {
            t.default_backend != BackendId::MAIN
                && literals
                    .iter()
                    .any(|v| t.name.table.eq_ignore_ascii_case(v))
        })
        .filter_map(|t| {
            let (_, next) = auto_increments.iter().find(|(n, _)| *n == t.name)?;
            Some((char_codes(&t.name.db), char_codes(&t.default_table), *next))
        })
        .collect();
    if counters.is_empty() {
        return None;
    }
    let (_, columns, _) = VIEWS.iter().find(|(v, _, _)| *v == "TABLES")?;
    let select: Vec<String> = columns
        .split(", ")
        .map(|c| {
            if c == "AUTO_INCREMENT" {
                auto_increment(&counters)
            } else {
                c.to_string()
            }
        })
        .collect();
    let derived = format!(
        "SELECT {} FROM information_schema.TABLES",
        select.join(", ")
    );
    replace_table(sql, "information_schema", "TABLES", &derived)
}

/// TABLES' AUTO_INCREMENT with each `(schema, physical, next)` of
/// `counters` as `next`: BIGINT UNSIGNED as the server's column (a bare
/// integer literal would make the column DECIMAL).
fn auto_increment(counters: &[(String, String, u64)]) -> String {
    let mut case = String::from("CASE");
    for (db, physical, next) in counters {
        case.push_str(&format!(
            " WHEN TABLE_SCHEMA = {db} AND TABLE_NAME = {physical} THEN CAST({next} AS UNSIGNED)"
        ));
    }
    case.push_str(" ELSE AUTO_INCREMENT END AS AUTO_INCREMENT");
    case
}

/// `s` as an expression with no string literal in it (the planner reads
/// every string literal as a name): `CHAR(byte, ... USING utf8mb3)`.
fn char_codes(s: &str) -> String {
    let codes: Vec<String> = s.bytes().map(|b| b.to_string()).collect();
    format!("CHAR({} USING utf8mb3)", codes.join(", "))
}

/// Marks a statement rewritten here: the planner leaves its literals
/// alone (`schema::plan_information_schema`).
pub(super) const MARK: &str = "/* hscale: logical tables */";

/// `sql` with the views above showing logical table names, and TABLES'
/// AUTO_INCREMENT of the tables in `auto_increments` (a sequence's next
/// value, by logical table) as that value; `None` when it reads none of
/// them, there is no partitioned table, or a string literal names a
/// partitioned table whose default partition is on another backend (the
/// planner answers that from there).
pub fn logical_views(
    sql: &str,
    dict: &Dictionary,
    auto_increments: &[(TableName, u64)],
    remote: &[RemoteRows],
) -> Option<String> {
    if dict.tables().next().is_none() && !dict.has_views() {
        return None;
    }
    let tokens = hscale_sql::tokenize(sql).ok()?;
    if names_remote(sql, &tokens, dict) {
        return None;
    }
    // (schema, physical) → logical name; physical tables left out.
    let mut renamed = Vec::new();
    let mut hidden = Vec::new();
    // Tables with no partition on the main backend: (schema, logical,
    // the sequence's next value).
    let mut absent = Vec::new();
    // (schema, physical) -> the sequence's next value.
    let mut counters = Vec::new();
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
        let next = auto_increments
            .iter()
            .find(|(n, _)| *n == t.name)
            .map(|(_, next)| *next);
        match shown {
            Some(physical) => {
                renamed.push((db.clone(), quote(physical), hidden_literal(&t.name.table)));
                if let Some(next) = next {
                    counters.push((db.clone(), quote(physical), next));
                }
            }
            None => absent.push((t.name.clone(), hidden_literal(&t.name.table), next, false)),
        }
        for p in t.partitions.values() {
            if Some(p.physical.as_str()) != shown {
                hidden.push(format!("({db}, {})", quote(&p.physical)));
            }
        }
    }
    // The views hscale keeps: rows of their own in TABLES.
    for v in dict.views() {
        absent.push((v.name.clone(), hidden_literal(&v.name.table), None, true));
    }
    let mut out: Option<String> = None;
    for (view, columns, named) in VIEWS {
        let current = out.as_deref().unwrap_or(sql);
        // CHECK_CONSTRAINTS names its table's database CONSTRAINT_SCHEMA.
        let table_schema = if *view == "CHECK_CONSTRAINTS" {
            "CONSTRAINT_SCHEMA"
        } else {
            "TABLE_SCHEMA"
        };
        let schema_of = |column: &str| {
            if column == "REFERENCED_TABLE_NAME" {
                "REFERENCED_TABLE_SCHEMA"
            } else {
                table_schema
            }
        };
        let select: Vec<String> = columns
            .split(", ")
            .map(|c| {
                if *view == "TABLES" && c == "AUTO_INCREMENT" && !counters.is_empty() {
                    return auto_increment(&counters);
                }
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
                " WHERE ({table_schema}, TABLE_NAME) NOT IN ({})",
                hidden.join(", ")
            ));
        }
        for (name, logical, next, is_view) in &absent {
            let read = remote.iter().find(|r| r.view == *view && r.table == *name);
            if let Some(read) = read {
                // Its default partition's rows, under its name.
                for row in &read.rows {
                    let cells: Vec<String> = columns
                        .split(", ")
                        .zip(row)
                        .map(|(c, v)| match (c, next) {
                            ("TABLE_NAME", _) => logical.clone(),
                            ("AUTO_INCREMENT", Some(n)) if *view == "TABLES" => {
                                format!("CAST({n} AS UNSIGNED)")
                            }
                            _ => v.sql(),
                        })
                        .collect();
                    derived.push_str(&format!(" UNION ALL SELECT {}", cells.join(", ")));
                }
                continue;
            }
            if *view == "TABLES" {
                let row = absent_tables_row(columns, name, logical, *next, *is_view);
                derived.push_str(&format!(" UNION ALL SELECT {row}"));
            }
        }
        if let Some(s) = replace_table(current, "information_schema", view, &derived) {
            out = Some(s);
        }
    }
    if dict.has_views() {
        let current = out.as_deref().unwrap_or(sql);
        if let Some(s) = replace_table(current, "information_schema", "VIEWS", &views_table(dict)) {
            out = Some(s);
        }
    }
    out
}

/// Whether `sql` may read the rows of a partitioned table whose default
/// partition is on another backend than the main one: a literal names
/// the table, and its schema is named by a literal too or may be the
/// current database (not known here).
fn names_remote(sql: &str, tokens: &[Token], dict: &Dictionary) -> bool {
    let literals: Vec<String> = tokens
        .iter()
        .filter(|t| t.kind == TokenKind::Str)
        .map(|t| super::unescape(t.text(sql)))
        .collect();
    let uses_current_db = tokens.windows(2).any(|w| {
        (w[0].is_word(sql, "DATABASE") || w[0].is_word(sql, "SCHEMA")) && w[1].is_punct(sql, "(")
    });
    dict.tables().any(|p| {
        p.default_backend != BackendId::MAIN
            && literals
                .iter()
                .any(|v| p.name.table.eq_ignore_ascii_case(v))
            && (uses_current_db || literals.contains(&p.name.db))
    })
}

/// The TABLES row (its `columns`' values, comma-separated) of `name`, a
/// logical table with no partition on the main backend (or a view hscale
/// keeps), shown as `logical`, its AUTO_INCREMENT the sequence's `next`.
fn absent_tables_row(
    columns: &str,
    name: &TableName,
    logical: &str,
    next: Option<u64>,
    is_view: bool,
) -> String {
    let db = quote(&name.db);
    let (kind, comment) = if is_view {
        ("'VIEW'", "'VIEW'")
    } else {
        ("'BASE TABLE'", "''")
    };
    let row: Vec<String> = columns
        .split(", ")
        .map(|c| match c {
            "TABLE_CATALOG" => "'def'".to_string(),
            "TABLE_SCHEMA" => db.clone(),
            "TABLE_NAME" => logical.to_string(),
            "TABLE_TYPE" => kind.to_string(),
            "TEMPORARY" if !is_view => "'N'".to_string(),
            "TABLE_COMMENT" => comment.to_string(),
            // Typed, so the union keeps the view's column types.
            "CREATE_TIME" | "UPDATE_TIME" | "CHECK_TIME" => "CAST(NULL AS DATETIME)".to_string(),
            "AUTO_INCREMENT" => match next {
                Some(n) => format!("CAST({n} AS UNSIGNED)"),
                None => "CAST(NULL AS UNSIGNED)".to_string(),
            },
            "VERSION" | "TABLE_ROWS" | "AVG_ROW_LENGTH" | "DATA_LENGTH" | "MAX_DATA_LENGTH"
            | "INDEX_LENGTH" | "DATA_FREE" | "CHECKSUM" | "MAX_INDEX_LENGTH" => {
                "CAST(NULL AS UNSIGNED)".to_string()
            }
            _ => "NULL".to_string(),
        })
        .collect();
    row.join(", ")
}

/// information_schema.VIEWS with a row for each view hscale keeps.
fn views_table(dict: &Dictionary) -> String {
    let text = |s: &str| {
        let hex: String = s.bytes().map(|b| format!("{b:02X}")).collect();
        format!("CONVERT(X'{hex}' USING utf8mb4)")
    };
    let mut derived = format!(
        "SELECT {MARK} TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION, CHECK_OPTION, IS_UPDATABLE, DEFINER, SECURITY_TYPE, CHARACTER_SET_CLIENT, COLLATION_CONNECTION, ALGORITHM FROM information_schema.VIEWS"
    );
    for v in dict.views() {
        let definer = v.definer.replace('`', "");
        derived.push_str(&format!(
            " UNION ALL SELECT 'def', {}, {}, {}, {}, 'NO', {}, {}, 'utf8mb4', 'utf8mb4_general_ci', {}",
            text(&v.name.db),
            text(&v.name.table),
            text(&v.select),
            text(v.check_option.as_deref().unwrap_or("NONE")),
            text(&definer),
            text(&v.security),
            text(&v.algorithm),
        ));
    }
    derived
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashingFunction;

    #[test]
    fn tables_auto_increment_is_the_sequences_value() {
        let mut d = Dictionary::default();
        let t = TableName::new("app", "orders");
        d.setup_table(
            t.clone(),
            "k",
            "orders_default",
            BackendId::MAIN,
            HashingFunction::Mod(4),
        )
        .unwrap();
        d.set_auto_column(&t, Some("id"), 1);
        let sql = "SELECT AUTO_INCREMENT FROM information_schema.TABLES";
        let out = logical_views(sql, &d, &[(t.clone(), 42)], &[]).unwrap();
        assert!(
            out.contains(
                "CASE WHEN TABLE_SCHEMA = 'app' AND TABLE_NAME = 'orders_default' THEN CAST(42 AS UNSIGNED) ELSE AUTO_INCREMENT END AS AUTO_INCREMENT"
            ),
            "{out}"
        );
        // Without a value, and in the other views, the server's column.
        let plain = logical_views(sql, &d, &[], &[]).unwrap();
        assert!(!plain.contains("CAST("), "{plain}");
        // A table of that name elsewhere, its default partition away from
        // the main backend, is another schema's: the views stay logical.
        let far = TableName::new("other", "orders");
        d.setup_table(
            far,
            "k",
            "orders_default",
            BackendId::new(1),
            HashingFunction::Mod(4),
        )
        .unwrap();
        let named = "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'app' AND TABLE_NAME = 'orders'";
        assert!(logical_views(named, &d, &[], &[]).is_some());
        let far = named.replace("'app'", "'other'");
        assert!(logical_views(&far, &d, &[], &[]).is_none());
        let current = named.replace("'app'", "DATABASE()");
        assert!(logical_views(&current, &d, &[], &[]).is_none());
        // Asked of the far table's backend: its AUTO_INCREMENT written
        // in, its name as no string literal.
        d.set_auto_column(&TableName::new("other", "orders"), Some("id"), 1);
        let far_named = named.replace("'app'", "'other'");
        let out = remote_auto_increments(&far_named, &d, &[(TableName::new("other", "orders"), 7)])
            .unwrap();
        assert!(
            out.contains("WHEN TABLE_SCHEMA = CHAR(111, 116, 104, 101, 114 USING utf8mb3) AND TABLE_NAME = CHAR(111, 114, 100, 101, 114, 115, 95, 100, 101, 102, 97, 117, 108, 116 USING utf8mb3) THEN CAST(7 AS UNSIGNED)"),
            "{out}"
        );
        assert!(remote_auto_increments(&far_named, &d, &[(t.clone(), 7)]).is_none());
        let unnamed = far_named.replace("'orders'", "'items'");
        let far_counter = [(TableName::new("other", "orders"), 7)];
        assert!(remote_auto_increments(&unnamed, &d, &far_counter).is_none());
        let columns = "SELECT COLUMN_NAME FROM information_schema.COLUMNS";
        assert!(!logical_views(columns, &d, &[(t, 42)], &[])
            .unwrap()
            .contains("CAST("));
    }

    #[test]
    fn a_table_with_no_partition_on_main_shows_its_default_partitions_rows() {
        let mut d = Dictionary::default();
        let t = TableName::new("app", "far");
        d.setup_table(
            t.clone(),
            "k",
            "far_default",
            BackendId::new(1),
            HashingFunction::Mod(2),
        )
        .unwrap();
        assert_eq!(
            absent_tables(&d),
            vec![(t.clone(), BackendId::new(1), "far_default".to_string())]
        );
        let columns = view_columns("COLUMNS").unwrap().split(", ").count();
        let mut row = vec![Cell::Text(None); columns];
        row[1] = Cell::Text(Some(b"app".to_vec()));
        row[2] = Cell::Text(Some(b"far_default".to_vec()));
        row[3] = Cell::Text(Some(b"k".to_vec()));
        row[4] = Cell::Unsigned(Some(1));
        row[8] = Cell::Unsigned(None);
        let remote = [RemoteRows {
            table: t.clone(),
            view: "COLUMNS",
            rows: vec![row],
        }];
        let sql = "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'app'";
        let out = logical_views(sql, &d, &[], &remote).unwrap();
        assert!(
            out.contains(" UNION ALL SELECT NULL, CONVERT(X'617070' USING utf8mb3), CONVERT(X'666172' USING utf8mb3), CONVERT(X'6B' USING utf8mb3), CAST(1 AS UNSIGNED), NULL, NULL, NULL, CAST(NULL AS UNSIGNED)"),
            "{out}"
        );
        // Without rows read, TABLES still names it; the others do not.
        let tables = "SELECT TABLE_NAME FROM information_schema.TABLES";
        assert!(logical_views(tables, &d, &[], &[])
            .unwrap()
            .contains("UNION ALL"));
        assert!(!logical_views(sql, &d, &[], &[])
            .unwrap()
            .contains("UNION ALL"));
    }
}
