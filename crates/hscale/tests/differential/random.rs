//! The seeded random query generator of the differential suite: tables of
//! edge values (keys near their type's limits, NULLs, strings that
//! collations call equal, ENUM and SET members out of string order,
//! DECIMALs, dates, BIGINT UNSIGNED near 2^64), partitioned by MOD, DIV,
//! HASH, PREFIX, DATE and NONE over four backends, plus a global and a plain
//! table; the same rows in one database of one plain server (the
//! reference, reached directly). Random SELECTs (WHERE, GROUP BY, HAVING,
//! ORDER BY, LIMIT, DISTINCT, joins, subqueries) run on both; the column
//! metadata (name, type, character set), the rows (in order where the ORDER
//! BY is total, as a multiset otherwise), the warning count and error codes
//! must match. Refusals (1235) are counted by construct and printed.
//!
//! `HSCALE_DIFF_SEED=<n>` replays a run, `HSCALE_DIFF_QUERIES=<n>` sets how
//! many queries run (10,000 by default).

use crate::common::*;
use mysql_async::prelude::*;

#[path = "compare.rs"]
mod compare;
use compare::{check, check_prepared, Tally, Weights};

const DB: &str = "rnd_part";
const REF: &str = "rnd_ref";
const ROWS: u64 = 120;

/// SplitMix64: a seed per query, so any query replays alone.
pub struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

// ---------------------------------------------------------------- data

const KS: &[&str] = &[
    "-9223372036854775808",
    "9223372036854775807",
    "-9223372036854775807",
    "9223372036854775806",
    "0",
    "1",
    "-1",
    "2",
    "3",
    "-3",
    "4",
    "5",
    "7",
    "99",
    "100",
    "101",
    "999",
    "1000",
    "2047",
];
const US: &[&str] = &[
    "18446744073709551615",
    "18446744073709551614",
    "9223372036854775808",
    "0",
    "1",
    "42",
    "NULL",
];
const DS: &[&str] = &[
    "-9999999999999999.9999",
    "9999999999999999.9999",
    "0.0001",
    "-0.0001",
    "1.5",
    "2.25",
    "0",
    "-7.1250",
    "NULL",
];
const FS: &[&str] = &[
    "0.25", "-0.5", "1000.75", "-999.25", "0", "3", "NULL", "12.5",
];
/// Strings some collations call equal: case, trailing spaces, ß/ss, accents.
const SS: &[&str] = &[
    "a", "A", "a ", "b", "B ", "ß", "ss", "À", "à", "z", "", " ", "x y", "é", "E", "NULL",
];
const ES: &[&str] = &["zeta", "alpha", "mid", "", "NULL"];
const SETS: &[&str] = &["x", "a", "x,a", "m", "", "a,m", "x,a,m", "NULL"];
const DTS: &[&str] = &[
    "1000-01-01",
    "9999-12-31",
    "2024-01-31",
    "2024-02-29",
    "2024-03-01",
    "1970-01-01",
    "2024-05-15",
    "2023-12-31",
    "NULL",
];
const TMS: &[&str] = &[
    "2024-01-01 00:00:00.000001",
    "2024-01-01 00:00:00.999999",
    "2024-01-01 00:00:01",
    "1999-12-31 23:59:59.5",
    "NULL",
];
const NS: &[&str] = &[
    "-5",
    "0",
    "1",
    "2",
    "3",
    "10",
    "49",
    "2147483647",
    "-2147483648",
    "NULL",
];

/// Column name, SQL type, value pool.
const COLUMNS: &[(&str, &str, &[&str])] = &[
    ("k", "BIGINT", KS),
    ("u", "BIGINT UNSIGNED", US),
    ("d", "DECIMAL(20,4)", DS),
    ("f", "DOUBLE", FS),
    ("s", "VARCHAR(12) COLLATE utf8mb4_general_ci", SS),
    ("b", "VARCHAR(12) COLLATE utf8mb4_bin", SS),
    ("np", "VARCHAR(12) COLLATE utf8mb4_general_nopad_ci", SS),
    ("e", "ENUM('zeta','alpha','mid','')", ES),
    ("st", "SET('x','a','m')", SETS),
    ("dt", "DATE", DTS),
    ("tm", "DATETIME(6)", TMS),
    ("n", "INT", NS),
];

const NUMERIC: &[&str] = &["k", "u", "d", "n", "f"];
/// Columns MIN and MAX take here: not ENUM or SET, whose MIN/MAX one
/// server types STRING+ENUM or VAR_STRING by whether its plan used a
/// temporary table (and then compares by member or by text), and whose
/// partial values hscale cannot tell from strings when a partition
/// answers VAR_STRING. A known difference, not yet fixed. (ORDER BY,
/// GROUP BY and DISTINCT on them are answered: the whole statement on
/// copies.)
const ORDERED: [&str; 11] = ["id", "k", "u", "d", "f", "s", "b", "np", "dt", "tm", "n"];
const INTEGRAL: &[&str] = &["k", "u", "n"];
const STRINGS: &[&str] = &["s", "b", "np"];

/// A table of the suite: name, key column, hashing function, partitions
/// (name, value, backend). An empty function: a global table; `None`: plain.
struct Spec {
    name: &'static str,
    key: &'static str,
    function: Option<&'static str>,
    parts: &'static [(&'static str, &'static str, &'static str)],
}

const TABLES: &[Spec] = &[
    Spec {
        name: "r_mod",
        key: "k",
        function: Some("MOD(4)"),
        parts: &[
            ("m1", "1", "shard1"),
            ("m2", "2", "shard2"),
            ("m3", "3", "shard3"),
            ("m1", "-1", "shard1"),
            ("m3", "-3", "shard3"),
        ],
    },
    Spec {
        name: "r_mod2",
        key: "k",
        function: Some("MOD(4)"),
        parts: &[
            ("m1", "1", "shard1"),
            ("m2", "2", "shard2"),
            ("m3", "3", "shard3"),
            ("m1", "-1", "shard1"),
            ("m3", "-3", "shard3"),
        ],
    },
    Spec {
        name: "r_div",
        key: "k",
        function: Some("DIV(100)"),
        parts: &[
            ("d0", "0", "shard0"),
            ("d1", "1", "shard2"),
            ("dn", "-1", "shard3"),
        ],
    },
    Spec {
        name: "r_hash",
        key: "s",
        function: Some("HASH(4)"),
        parts: &[
            ("h0", "0", "shard1"),
            ("h2", "2", "shard2"),
            ("h3", "3", "shard3"),
        ],
    },
    Spec {
        name: "r_prefix",
        key: "b",
        function: Some("PREFIX(1)"),
        parts: &[
            ("pa", "a", "shard1"),
            ("pz", "z", "shard2"),
            ("pb", "B", "shard3"),
        ],
    },
    Spec {
        name: "r_date",
        key: "dt",
        function: Some("DATE('%Y-%m')"),
        parts: &[
            ("q1", "2024-01", "shard1"),
            ("q1", "2024-02", "shard1"),
            ("q2", "2024-03", "shard2"),
            ("old", "1000-01", "shard0"),
            ("end", "9999-12", "shard3"),
        ],
    },
    Spec {
        name: "r_enum",
        key: "e",
        function: Some("NONE()"),
        parts: &[
            ("ea", "alpha", "shard1"),
            ("em", "mid", "shard2"),
            ("ez", "zeta", "shard3"),
        ],
    },
    Spec {
        name: "r_nopad",
        key: "np",
        function: Some("NONE()"),
        parts: &[
            ("na", "a", "shard1"),
            ("nz", "z", "shard2"),
            ("nb", "b", "shard3"),
        ],
    },
    Spec {
        name: "g",
        key: "k",
        function: Some(""),
        parts: &[],
    },
    Spec {
        name: "plain",
        key: "k",
        function: None,
        parts: &[],
    },
];

fn create_table(spec: &Spec) -> String {
    let cols: Vec<String> = COLUMNS
        .iter()
        .map(|(c, ty, _)| {
            let null = if *c == spec.key { "NOT NULL" } else { "NULL" };
            format!("{c} {ty} {null}")
        })
        .collect();
    format!(
        "CREATE TABLE {} (id INT NOT NULL, {}, PRIMARY KEY (id, {}))",
        spec.name,
        cols.join(", "),
        spec.key
    )
}

fn quote(v: &str, col: &str) -> String {
    if v == "NULL" || NUMERIC.contains(&col) {
        v.to_string()
    } else {
        format!("'{v}'")
    }
}

fn insert_rows(spec: &Spec, seed: u64) -> String {
    let mut r = Rng(seed);
    let names: Vec<&str> = COLUMNS.iter().map(|c| c.0).collect();
    let mut rows = Vec::new();
    for id in 1..=ROWS {
        let vals: Vec<String> = COLUMNS
            .iter()
            .map(|(c, _, pool)| {
                let mut v = *r.pick(pool);
                while v == "NULL" && *c == spec.key {
                    v = *r.pick(pool);
                }
                quote(v, c)
            })
            .collect();
        rows.push(format!("({id}, {})", vals.join(", ")));
    }
    format!(
        "INSERT INTO {} (id, {}) VALUES {}",
        spec.name,
        names.join(", "),
        rows.join(", ")
    )
}

// ---------------------------------------------------------------- queries

/// A generated query; `ordered` when its ORDER BY fixes the row order.
pub struct Query {
    pub sql: String,
    pub ordered: bool,
}

const PARTITIONED: &[&str] = &[
    "r_mod", "r_mod", "r_mod2", "r_div", "r_hash", "r_prefix", "r_date", "r_enum", "r_nopad",
];
const ANY_TABLE: &[&str] = &[
    "r_mod", "r_mod2", "r_div", "r_hash", "r_prefix", "r_date", "r_enum", "r_nopad", "g", "plain",
];

fn col_names() -> Vec<&'static str> {
    let mut v = vec!["id"];
    v.extend(COLUMNS.iter().map(|c| c.0));
    v
}

fn pool(col: &str) -> &'static [&'static str] {
    COLUMNS
        .iter()
        .find(|c| c.0 == col)
        .map(|c| c.2)
        .unwrap_or(NS)
}

/// A literal for `col`, now and then of another form than the column's
/// (numbers as strings, strings with trailing spaces, executable comments).
fn literal(r: &mut Rng, col: &str) -> String {
    let v = *r.pick(pool(col));
    let v = if v == "NULL" { *r.pick(pool(col)) } else { v };
    if v == "NULL" {
        return "NULL".into();
    }
    if NUMERIC.contains(&col) {
        match r.below(12) {
            0 => format!("'{v}'"),
            1 => format!("'{v} '"),
            2 => format!("{v}.0"),
            _ => v.to_string(),
        }
    } else {
        match r.below(10) {
            0 => format!("'{v} '"),
            1 => format!("'{}'", v.to_uppercase()),
            _ => format!("'{v}'"),
        }
    }
}

/// One condition on the columns of `a` (an alias or table name, with a dot).
fn condition(r: &mut Rng, a: &str, key: &str) -> String {
    let cols = col_names();
    let c = if r.chance(45) { key } else { *r.pick(&cols) };
    match r.below(16) {
        0..=3 => format!("{a}{c} = {}", literal(r, c)),
        4 => format!(
            "{a}{c} IN ({}, {}, {})",
            literal(r, c),
            literal(r, c),
            literal(r, c)
        ),
        5 => format!("{a}{c} < {}", literal(r, c)),
        6 => format!("{a}{c} >= {}", literal(r, c)),
        7 => format!("{a}{c} BETWEEN {} AND {}", literal(r, c), literal(r, c)),
        8 => format!("{a}{c} IS NULL"),
        9 => format!("{a}{c} IS NOT NULL"),
        10 => format!("({a}{c} = {} OR {a}{c} = {})", literal(r, c), literal(r, c)),
        11 => format!("NOT ({a}{c} <=> {})", literal(r, c)),
        12 => format!("{a}{c} = {} /*! OR {a}id < 30 */", literal(r, c)),
        13 => format!("{a}{c} = {} /*M!100000 OR {a}id > 100 */", literal(r, c)),
        14 => format!("{a}id % {} = {}", 2 + r.below(4), r.below(2)),
        _ => format!("{a}{c} <> {}", literal(r, c)),
    }
}

fn where_clause(r: &mut Rng, a: &str, key: &str) -> String {
    let n = r.below(4);
    if n == 0 {
        return String::new();
    }
    let conds: Vec<String> = (0..n).map(|_| condition(r, a, key)).collect();
    let glue = if r.chance(25) { " OR " } else { " AND " };
    format!(" WHERE {}", conds.join(glue))
}

fn key_of(table: &str) -> &'static str {
    TABLES
        .iter()
        .find(|t| t.name == table)
        .map(|t| t.key)
        .unwrap_or("k")
}

/// The label of select item `i`: some are named like partitioned tables.
fn label(i: usize) -> &'static str {
    ["x0", "r_hash", "x2", "r_date"][i % 4]
}

/// An expression for the select list, with a label now and then.
fn expr(r: &mut Rng, a: &str, i: usize) -> (String, bool) {
    let cols = col_names();
    let c = *r.pick(&cols);
    let e = match r.below(12) {
        // Arithmetic only where it cannot overflow: which rows a server
        // evaluates a select item for (and so whether it fails) is its own.
        0 => format!("{a}{} + 1", r.pick(&["n", "d", "f"])),
        1 => format!("{a}n * 2"),
        2 => format!("CONCAT({a}{}, '|')", r.pick(STRINGS)),
        3 => format!("{a}e + 0"),
        4 => format!("COALESCE({a}n, -1)"),
        _ => return (format!("{a}{c}"), false),
    };
    if r.chance(60) {
        (format!("{e} AS {}", label(i)), true)
    } else {
        (e, false)
    }
}

fn aggregate(r: &mut Rng, a: &str) -> String {
    let cols = col_names();
    let any = *r.pick(&cols);
    let num = *r.pick(NUMERIC);
    let int = *r.pick(INTEGRAL);
    match r.below(11) {
        0 => "COUNT(*)".into(),
        1 => format!("COUNT({a}{any})"),
        2 => format!("SUM({a}{num})"),
        3 => format!("AVG({a}{num})"),
        4 | 5 => format!("MIN({a}{})", r.pick(&ORDERED)),
        6 | 7 => format!("MAX({a}{})", r.pick(&ORDERED)),
        8 => format!("COUNT(DISTINCT {a}{any})"),
        9 => format!("BIT_OR({a}{int})"),
        _ => format!("SUM({a}{int})"),
    }
}

fn limit(r: &mut Rng) -> String {
    match r.below(4) {
        0 => format!(" LIMIT {}", 1 + r.below(20)),
        1 => format!(" LIMIT {}, {}", r.below(30), 1 + r.below(15)),
        _ => String::new(),
    }
}

pub fn generate(r: &mut Rng) -> Query {
    let tables = if r.chance(80) { PARTITIONED } else { ANY_TABLE };
    let t = *r.pick(tables);
    let key = key_of(t);
    // Aliases now and then named like another partitioned table.
    let alias = match r.below(10) {
        0..=1 => Some("t1"),
        2 => Some(*r.pick(&["r_div", "r_hash", "g", "r_mod"])).filter(|x| *x != t),
        _ => None,
    };
    let dotted = alias.map(|x| format!("{x}."));
    let (from, a) = match (alias, &dotted) {
        (Some(x), Some(d)) => (format!("{t} AS {x}"), d.as_str()),
        _ => (t.to_string(), ""),
    };
    let cols = col_names();
    match r.below(20) {
        // Plain rows.
        0..=5 => {
            let n = 1 + r.below(4) as usize;
            let items: Vec<(String, bool)> = (0..n).map(|i| expr(r, a, i)).collect();
            let list: Vec<&str> = items.iter().map(|x| x.0.as_str()).collect();
            let w = where_clause(r, a, key);
            if r.chance(25) {
                return Query {
                    sql: format!("SELECT {} FROM {from}{w}", list.join(", ")),
                    ordered: false,
                };
            }
            let mut order = Vec::new();
            for (i, (e, labelled)) in items.iter().enumerate() {
                if r.chance(50) {
                    let dir = if r.chance(50) { " DESC" } else { "" };
                    if *labelled && r.chance(50) {
                        order.push(format!("{}{dir}", label(i)));
                    } else if !*labelled && r.chance(30) {
                        order.push(format!("{}{dir}", i + 1));
                    } else {
                        let bare = e.split(" AS ").next().unwrap_or(e);
                        order.push(format!("{bare}{dir}"));
                    }
                }
            }
            if r.chance(40) {
                order.push(format!("{a}{}", r.pick(&cols)));
            }
            order.push(format!("{a}id{}", if r.chance(50) { " DESC" } else { "" }));
            Query {
                sql: format!(
                    "SELECT {a}id, {} FROM {from}{w} ORDER BY {}{}",
                    list.join(", "),
                    order.join(", "),
                    limit(r)
                ),
                ordered: true,
            }
        }
        // Aggregates over the whole table.
        6..=8 => {
            let n = 1 + r.below(5);
            let aggs: Vec<String> = (0..n).map(|_| aggregate(r, a)).collect();
            Query {
                sql: format!(
                    "SELECT {} FROM {from}{}",
                    aggs.join(", "),
                    where_clause(r, a, key)
                ),
                ordered: true,
            }
        }
        // GROUP BY, HAVING, ORDER BY the groups.
        9..=13 => {
            let g1 = *r.pick(&cols[1..]);
            let mut groups = vec![format!("{a}{g1}")];
            if r.chance(30) {
                let g2 = *r.pick(&cols[1..]);
                if g2 != g1 {
                    groups.push(format!("{a}{g2}"));
                }
            }
            let n = 1 + r.below(3);
            let aggs: Vec<String> = (0..n).map(|_| aggregate(r, a)).collect();
            let labelled = r.chance(40);
            let list = if labelled {
                aggs.iter()
                    .enumerate()
                    .map(|(i, x)| format!("{x} AS a{i}"))
                    .collect::<Vec<_>>()
            } else {
                aggs.clone()
            };
            let having = match r.below(6) {
                0 => format!(" HAVING COUNT(*) > {}", r.below(6)),
                1 => format!(" HAVING SUM({a}u) > 18446744073709551615"),
                2 => format!(" HAVING MAX({a}{}) IS NOT NULL", r.pick(&cols)),
                3 if labelled => format!(" HAVING a0 IS NOT NULL OR COUNT(*) = {}", r.below(4)),
                _ => String::new(),
            };
            let w = where_clause(r, a, key);
            let ordered = r.chance(70);
            let order = if ordered {
                let mut o = Vec::new();
                if r.chance(40) {
                    let dir = if r.chance(50) { " DESC" } else { "" };
                    o.push(if labelled {
                        format!("a0{dir}")
                    } else {
                        format!("{}{dir}", aggs[0])
                    });
                }
                for g in &groups {
                    o.push(format!("{g}{}", if r.chance(30) { " DESC" } else { "" }));
                }
                format!(" ORDER BY {}{}", o.join(", "), limit(r))
            } else {
                String::new()
            };
            Query {
                sql: format!(
                    "SELECT {}, {} FROM {from}{w} GROUP BY {}{having}{order}",
                    groups.join(", "),
                    list.join(", "),
                    groups.join(", ")
                ),
                ordered,
            }
        }
        // DISTINCT.
        14 | 15 => {
            let c1 = *r.pick(&cols[1..]);
            let c2 = *r.pick(&cols[1..]);
            let list = if c1 == c2 {
                format!("{a}{c1}")
            } else {
                format!("{a}{c1}, {a}{c2}")
            };
            let ordered = r.chance(50);
            let order = if ordered {
                format!(" ORDER BY {list}")
            } else {
                String::new()
            };
            Query {
                sql: format!(
                    "SELECT DISTINCT {list} FROM {from}{}{order}",
                    where_clause(r, a, key)
                ),
                ordered,
            }
        }
        // Joins.
        16 | 17 => {
            let t2 = *r.pick(ANY_TABLE);
            let on = *r.pick(&["k", "k", "s", "e", "dt", "id", "np", "b"]);
            let kind = *r.pick(&["JOIN", "JOIN", "LEFT JOIN"]);
            let c1 = *r.pick(&cols);
            let c2 = *r.pick(&cols);
            let w = where_clause(r, "a.", key);
            if r.chance(30) {
                let g = *r.pick(&cols[1..]);
                let m = *r.pick(&ORDERED);
                return Query {
                    sql: format!(
                        "SELECT a.{g}, COUNT(*), MAX(b.{m}) FROM {t} a {kind} {t2} b ON b.{on} = a.{on}{w} GROUP BY a.{g} ORDER BY a.{g}"
                    ),
                    ordered: true,
                };
            }
            let ordered = r.chance(60);
            let order = if ordered {
                format!(" ORDER BY a.id, b.id{}", limit(r))
            } else {
                String::new()
            };
            Query {
                sql: format!(
                    "SELECT a.id, b.id, a.{c1}, b.{c2} FROM {t} a {kind} {t2} b ON b.{on} = a.{on}{w}{order}"
                ),
                ordered,
            }
        }
        // Subqueries.
        _ => {
            let t2 = *r.pick(ANY_TABLE);
            let c = *r.pick(&["k", "s", "e", "dt", "n", "np"]);
            let inner_w = where_clause(r, "", key_of(t2));
            let w = match r.below(4) {
                0 => format!(" WHERE {a}{c} IN (SELECT {c} FROM {t2}{inner_w})"),
                1 => format!(" WHERE {a}{c} NOT IN (SELECT {c} FROM {t2} WHERE {c} IS NOT NULL)"),
                2 => format!(
                    " WHERE EXISTS (SELECT 1 FROM {t2} x WHERE x.{c} = {}{c})",
                    if a.is_empty() {
                        format!("{t}.")
                    } else {
                        a.to_string()
                    }
                ),
                _ => String::new(),
            };
            let scalar = if r.chance(40) {
                format!(", (SELECT MAX({c}) FROM {t2})")
            } else {
                String::new()
            };
            Query {
                sql: format!(
                    "SELECT {a}id, {a}{c}{scalar} FROM {from}{w} ORDER BY {a}id{}",
                    limit(r)
                ),
                ordered: true,
            }
        }
    }
}

async fn set_up() {
    let mut setup = proxy_conn(None).await;
    setup
        .query_drop(format!("CREATE DATABASE {DB}"))
        .await
        .unwrap();
    setup.query_drop(format!("USE {DB}")).await.unwrap();
    for spec in TABLES {
        setup.query_drop(create_table(spec)).await.unwrap();
        match spec.function {
            None => {}
            Some("") => setup
                .query_drop(format!("HSCALE SETUP_GLOBAL_TABLE('{}')", spec.name))
                .await
                .unwrap(),
            Some(f) => {
                let cmd = format!(
                    "HSCALE SETUP_TABLE('{0}', '{1}', '{0}_default', 'shard0', \"{f}\")",
                    spec.name, spec.key
                );
                setup
                    .query_drop(&cmd)
                    .await
                    .unwrap_or_else(|e| panic!("{cmd}: {e}"));
                for (p, v, b) in spec.parts {
                    let cmd = format!("HSCALE ADD_PARTITION('{}', '{p}', '{v}', '{b}')", spec.name);
                    setup
                        .query_drop(&cmd)
                        .await
                        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
                }
            }
        }
    }
    let mut reference = backend_conn(0, None).await;
    reference
        .query_drop(format!("CREATE DATABASE {REF}"))
        .await
        .unwrap();
    reference.query_drop(format!("USE {REF}")).await.unwrap();
    for (i, spec) in TABLES.iter().enumerate() {
        reference.query_drop(create_table(spec)).await.unwrap();
        let rows = insert_rows(spec, 1000 + i as u64);
        reference.query_drop(&rows).await.unwrap();
        setup
            .query_drop(&rows)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    }
    setup.disconnect().await.unwrap();
    reference.disconnect().await.unwrap();
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test]
async fn random_queries_match_one_server() {
    cluster(4);
    set_up().await;
    let seed = env_u64("HSCALE_DIFF_SEED", 15_2026);
    let count = env_u64("HSCALE_DIFF_QUERIES", 10_000);
    println!("random differential: seed {seed} (HSCALE_DIFF_SEED={seed} replays), {count} queries");
    let mut p = proxy_conn(Some(DB)).await;
    let mut r = backend_conn(0, Some(REF)).await;
    let mut weights = Weights::default();
    let mut t = Tally::default();
    let mut seeds = Rng(seed);
    for _ in 0..count {
        let seed = seeds.next();
        let q = generate(&mut Rng(seed));
        let is_refused = check(&mut p, &mut r, &mut weights, &q, &mut t).await;
        // One in five again through the binary protocol.
        if seed.is_multiple_of(5) {
            check_prepared(&mut p, &mut r, &mut weights, &q, seed, is_refused, &mut t).await;
        }
    }
    let refused: usize = t.refused.values().sum();
    println!(
        "random differential: {count} queries, {} of them also prepared: {} identical, {} identical up to collation-equal strings, {} failed alike, {refused} refused, {} wrong, {} known to differ in the warning count",
        t.prepared,
        t.identical,
        t.equal_under_collation,
        t.both_failed,
        t.wrong.len(),
        t.known.len()
    );
    for k in &t.known {
        println!("KNOWN: {k}");
    }
    for (what, n) in &t.refused {
        println!("  refused {n:5}: {what}");
    }
    for w in t.wrong.iter().take(40) {
        println!("WRONG: {w}");
    }
    assert!(
        t.wrong.is_empty(),
        "{} wrong answers (seed {seed})",
        t.wrong.len()
    );
    p.disconnect().await.unwrap();
    r.disconnect().await.unwrap();
}
