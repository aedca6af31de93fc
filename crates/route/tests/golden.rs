//! Golden plan files: every `tests/plans/*.txt` holds statements and the
//! plan the router makes for each, as `HSCALE EXPLAIN` prints it
//! (`Plan::describe`), over the dictionary built by `dictionary()` below.
//!
//! A file is a header (lines starting with `#`), then cases separated by
//! blank lines. A case is:
//! - optional directives: `@db name` (session database; default `app`,
//!   `@db none` for none) and `@prepared` (plan as a prepared statement);
//! - the statement on one or more lines starting with `-- `;
//! - the described rows, one a line: `backend | operation | sql`.
//!
//! Lines starting with `#` inside a case are comments and are kept.
//!
//! When the planner changes on purpose, rewrite the files and review the
//! diff before committing it:
//!
//! ```text
//! HSCALE_ACCEPT=1 cargo test -p hscale-route --test golden
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::router::{plan, plan_prepared};
use hscale_route::{BackendId, HashingFunction};

const BACKENDS: &[&str] = &["main", "shard1", "shard2", "shard3"];

/// A partitioned table: (db, table, key, function, key type, partitions as
/// (name, value, backend)). The default partition is `<table>_default` on
/// the main backend. An empty key type leaves the key inexact (never
/// pruned), as for a table whose key type was never recorded.
type Spec<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    &'a [(&'a str, &'a str, usize)],
);

const ENUM_KEY: &str = "enum('books','music','films') COLLATE utf8mb4_general_ci";

const TABLES: &[Spec<'static>] = &[
    // MOD, co-partitioned: orders and items.
    (
        "app",
        "orders",
        "customer_id",
        "MOD(4)",
        "int",
        &[("p1", "1", 1), ("p2", "2", 2)],
    ),
    (
        "app",
        "items",
        "customer_id",
        "MOD(4)",
        "int",
        &[("p1", "1", 1), ("p2", "2", 2)],
    ),
    // MOD on a key whose type was never recorded: never pruned.
    (
        "app",
        "loose",
        "customer_id",
        "MOD(4)",
        "",
        &[("p1", "1", 1), ("p2", "2", 2)],
    ),
    // DIV: ranges.
    (
        "app",
        "r",
        "k",
        "DIV(100)",
        "int",
        &[("a", "0", 1), ("a", "1", 1), ("b", "2", 2), ("c", "3", 3)],
    ),
    // HASH: CRC32 of the key's text.
    (
        "app",
        "users",
        "id",
        "HASH(4)",
        "bigint",
        &[("h0", "0", 1), ("h1", "1", 2), ("h2", "2", 3)],
    ),
    // PREFIX on an integer key (points only) and on a string under a
    // collation (never pruned).
    (
        "app",
        "zips",
        "zip",
        "PREFIX(2)",
        "int",
        &[("z10", "10", 1), ("z20", "20", 2)],
    ),
    (
        "app",
        "tags",
        "tag",
        "PREFIX(1)",
        "varchar(20) COLLATE utf8mb4_general_ci",
        &[("a", "a", 1)],
    ),
    // DATE with an ordered pattern on a DATE key: ranges.
    (
        "app",
        "ev",
        "day",
        "DATE('%Y-%m')",
        "date",
        &[
            ("m03", "2024-03", 1),
            ("m04", "2024-04", 2),
            ("m05", "2024-05", 3),
        ],
    ),
    // DATE with a pattern that does not sort as dates do: points only.
    (
        "cal",
        "ev",
        "day",
        "DATE('%m')",
        "date",
        &[("m03", "03", 1)],
    ),
    // NONE on an integer key (ranges), on a string under a collation
    // (never pruned), on an ENUM key (by member).
    (
        "app",
        "acct",
        "region",
        "NONE()",
        "int",
        &[("r1", "1", 1), ("r2", "2", 2), ("r3", "3", 3)],
    ),
    (
        "app",
        "s",
        "name",
        "NONE()",
        "varchar(20) COLLATE utf8mb4_general_ci",
        &[("x", "x", 1)],
    ),
    (
        "app",
        "small",
        "category",
        "NONE()",
        ENUM_KEY,
        &[("b", "books", 1)],
    ),
    // Partitioned differently: items has one more partition than orders.
    (
        "alt",
        "orders",
        "customer_id",
        "MOD(4)",
        "int",
        &[("p1", "1", 1), ("p2", "2", 2)],
    ),
    (
        "alt",
        "items",
        "customer_id",
        "MOD(4)",
        "int",
        &[("p1", "1", 1), ("p2", "2", 2), ("p3", "3", 2)],
    ),
];

/// Global tables: a copy on every backend.
const GLOBALS: &[(&str, &str)] = &[("app", "countries"), ("app", "currencies")];

fn dictionary() -> Dictionary {
    let mut d = Dictionary::default();
    for (db, table, key, function, key_type, partitions) in TABLES {
        let t = TableName::new(db, table);
        let f = HashingFunction::parse(function).expect("hashing function");
        d.setup_table(
            t.clone(),
            key,
            &format!("{table}_default"),
            BackendId::MAIN,
            f,
        )
        .expect("setup_table");
        if !key_type.is_empty() {
            d.set_key_type(&t, key_type);
        }
        for (name, value, backend) in *partitions {
            d.add_partition(&t, name, value, BackendId::new(*backend))
                .expect("add_partition");
        }
    }
    for (db, table) in GLOBALS {
        d.add_global(TableName::new(db, table)).expect("add_global");
    }
    d
}

/// One case of a golden file.
struct Case {
    /// Directives and comments, as written.
    head: Vec<String>,
    db: Option<String>,
    is_prepared: bool,
    sql: String,
    /// The case as the file holds it, each line ending in a newline.
    written: String,
}

/// A golden file: its header lines and its cases.
fn parse(text: &str) -> (Vec<String>, Vec<Case>) {
    let mut lines = text.lines().peekable();
    let mut header = Vec::new();
    while let Some(l) = lines.next_if(|l| l.starts_with('#')) {
        header.push(l.to_string());
    }
    let rest: Vec<&str> = lines.collect();
    let mut cases = Vec::new();
    for block in rest.split(|l| l.trim().is_empty()) {
        if block.is_empty() {
            continue;
        }
        let mut case = Case {
            head: Vec::new(),
            db: Some("app".to_string()),
            is_prepared: false,
            sql: String::new(),
            written: block.iter().map(|l| format!("{l}\n")).collect(),
        };
        let mut sql_lines = Vec::new();
        for l in block {
            if let Some(s) = l.strip_prefix("-- ") {
                sql_lines.push(s);
            } else if let Some(db) = l.strip_prefix("@db ") {
                case.db = (db.trim() != "none").then(|| db.trim().to_string());
                case.head.push(l.to_string());
            } else if l.trim() == "@prepared" {
                case.is_prepared = true;
                case.head.push(l.to_string());
            } else if l.starts_with('#') {
                case.head.push(l.to_string());
            }
            // Anything else is a described row: regenerated.
        }
        assert!(
            !sql_lines.is_empty(),
            "a case without a statement: {block:?}"
        );
        case.sql = sql_lines.join("\n");
        cases.push(case);
    }
    (header, cases)
}

/// A case with its rows, as the file holds it.
fn render(case: &Case, dict: &Dictionary) -> String {
    let p = if case.is_prepared {
        plan_prepared(
            &case.sql,
            case.db.as_deref(),
            dict,
            &hscale_route::known::Known::nothing(),
        )
    } else {
        plan(
            &case.sql,
            case.db.as_deref(),
            dict,
            &hscale_route::known::Known::nothing(),
        )
    };
    let mut out = String::new();
    for h in &case.head {
        let _ = writeln!(out, "{h}");
    }
    for l in case.sql.lines() {
        let _ = writeln!(out, "-- {l}");
    }
    for r in p.describe(&case.sql, BACKENDS) {
        let _ = writeln!(out, "{} | {} | {}", r.backend, r.operation, r.sql);
    }
    out
}

fn plans_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plans")
}

/// Every golden file, sorted.
fn golden_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(plans_dir())
        .expect("tests/plans")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    files
}

#[test]
fn golden_plans() {
    let dict = dictionary();
    let is_accept = std::env::var("HSCALE_ACCEPT").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut total = 0;
    for path in golden_files() {
        let name = path.display();
        let text = std::fs::read_to_string(&path).expect("read golden file");
        let (header, cases) = parse(&text);
        assert!(!header.is_empty(), "{name}: no header");
        let mut seen = std::collections::HashSet::new();
        let mut blocks = Vec::new();
        for case in &cases {
            let key = (case.db.clone(), case.is_prepared, case.sql.clone());
            assert!(seen.insert(key), "{name}: {} appears twice", case.sql);
            let fresh = render(case, &dict);
            if fresh != case.written {
                failures.push(format!(
                    "{name}:\n--- file\n{}--- planner\n{fresh}",
                    case.written
                ));
            }
            blocks.push(fresh);
        }
        total += cases.len();
        let out = format!("{}\n\n{}", header.join("\n"), blocks.join("\n"));
        if is_accept {
            std::fs::write(&path, &out).expect("write golden file");
        } else if out != text && failures.is_empty() {
            failures.push(format!("{name}: blank lines differ from the written form"));
        }
    }
    assert!(total > 0, "no golden cases under {}", plans_dir().display());
    assert!(
        is_accept || failures.is_empty(),
        "{} golden case(s) differ; if the planner changed on purpose, \
         rewrite with HSCALE_ACCEPT=1 and review the diff:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}
