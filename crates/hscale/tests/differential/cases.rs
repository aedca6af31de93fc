//! The schema, rows and cases of `classes.rs`: per class of issue 15's
//! "Answers that differ", statements built from lists of tables, columns,
//! values and the statements before them.

use super::Case;

/// `t` (MOD on a BIGINT: every type the merges treat apart), `c` (MOD, its
/// columns named like the partitioned tables), `sk` (NONE on a string),
/// `tk` (DATE on a DATETIME), `gl` (global), `pl` (plain), `rd` (MOD,
/// its default partition away from the main backend, one partition on it)
/// and `nm` (MOD, no partition on the main backend).
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE t (id INT NOT NULL, k BIGINT NOT NULL, b VARCHAR(12) COLLATE utf8mb4_bin NULL, np VARCHAR(12) COLLATE utf8mb4_general_nopad_ci NULL, e ENUM('zeta','alpha','mid') NULL, st SET('x','a','m') NULL, u BIGINT UNSIGNED NULL, d DECIMAL(20,4) NULL, f DOUBLE NULL, dt DATETIME(6) NULL, PRIMARY KEY (id, k), KEY kb (b))",
    "CREATE TABLE c (k BIGINT NOT NULL PRIMARY KEY, name VARCHAR(20) NOT NULL, t INT NULL, tk INT NULL)",
    "CREATE TABLE sk (s VARCHAR(20) NOT NULL PRIMARY KEY, v INT NOT NULL)",
    "CREATE TABLE tk (dt DATETIME NOT NULL PRIMARY KEY, v INT NOT NULL)",
    "CREATE TABLE gl (id INT NOT NULL PRIMARY KEY, label VARCHAR(10) NOT NULL)",
    "CREATE TABLE pl (id INT NOT NULL PRIMARY KEY, k BIGINT NOT NULL, note VARCHAR(10) NOT NULL)",
    "CREATE TABLE rd (k BIGINT NOT NULL PRIMARY KEY, v INT NULL, KEY kv (v))",
    "CREATE TABLE nm (k BIGINT NOT NULL, v INT NULL, w VARCHAR(8) NOT NULL DEFAULT 'x', at DATETIME NULL, PRIMARY KEY (k), KEY kvw (v, w))",
];

pub const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_GLOBAL_TABLE('gl')",
    "HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('t', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('t', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('t', 'm3', '3', 'shard3')",
    "HSCALE ADD_PARTITION('t', 'm1', '-1', 'shard1')",
    "HSCALE ADD_PARTITION('t', 'm3', '-3', 'shard3')",
    "HSCALE SETUP_TABLE('c', 'k', 'c_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('c', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('c', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('c', 'm3', '3', 'shard3')",
    "HSCALE ADD_PARTITION('c', 'm1', '-1', 'shard1')",
    "HSCALE SETUP_TABLE('sk', 's', 'sk_default', 'shard0', 'NONE()')",
    "HSCALE ADD_PARTITION('sk', 'pa', 'a', 'shard1')",
    "HSCALE ADD_PARTITION('sk', 'pb', 'b', 'shard2')",
    "HSCALE ADD_PARTITION('sk', 'p1', '1', 'shard3')",
    "HSCALE ADD_PARTITION('sk', 'p10', '10', 'shard1')",
    "HSCALE SETUP_TABLE('tk', 'dt', 'tk_default', 'shard0', \"DATE('%Y-%m')\")",
    "HSCALE ADD_PARTITION('tk', 'jan', '2024-01', 'shard1')",
    "HSCALE ADD_PARTITION('tk', 'feb', '2024-02', 'shard2')",
    "HSCALE ADD_PARTITION('tk', 'mar', '2024-03', 'shard3')",
    "HSCALE SETUP_TABLE('rd', 'k', 'rd_default', 'shard1', 'MOD(2)')",
    "HSCALE ADD_PARTITION('rd', 'm1', '1', 'shard0')",
    "HSCALE SETUP_TABLE('nm', 'k', 'nm_default', 'shard1', 'MOD(2)')",
    "HSCALE ADD_PARTITION('nm', 'm1', '1', 'shard2')",
];

const BS: &[&str] = &["a", "A", "b", "B", "ab", "", "z", "Zz"];
const NPS: &[&str] = &["a", "a ", "b", "b  ", "c", "", " ", "cc"];
const ES: &[&str] = &["zeta", "alpha", "mid", "NULL"];
const STS: &[&str] = &["x", "a", "x,a", "m", "", "a,m", "x,a,m", "NULL"];
const US: &[&str] = &[
    "18446744073709551615",
    "18446744073709551000",
    "9223372036854775808",
    "0",
    "1",
    "NULL",
];
const DS: &[&str] = &[
    "9999999999999999.9999",
    "-0.0001",
    "1.5000",
    "2.2500",
    "0",
    "NULL",
];
const FS: &[&str] = &["0.5", "-0.25", "1000000000000000", "-3.5", "0", "NULL"];
const DTS: &[&str] = &[
    "2024-01-31 23:59:59.999999",
    "2024-02-01 00:00:00",
    "2024-01-01 00:00:00.5",
    "NULL",
];

fn q(v: &str) -> String {
    if v == "NULL" {
        v.to_string()
    } else {
        format!("'{v}'")
    }
}

pub fn data() -> Vec<String> {
    let mut rows = Vec::new();
    for id in 1..=48usize {
        let k = id as i64 % 9 - 4;
        let pick = |xs: &[&str], m: usize| xs[(id * m + id / 5) % xs.len()].to_string();
        rows.push(format!(
            "({id}, {k}, {}, {}, {}, {}, {}, {}, {}, {})",
            q(&pick(BS, 3)),
            q(&pick(NPS, 5)),
            q(&pick(ES, 7)),
            q(&pick(STS, 11)),
            pick(US, 13),
            pick(DS, 17),
            pick(FS, 19),
            q(&pick(DTS, 23)),
        ));
    }
    let mut out = vec![format!(
        "INSERT INTO t (id, k, b, np, e, st, u, d, f, dt) VALUES {}",
        rows.join(", ")
    )];
    let c: Vec<String> = (-4i64..=12)
        .map(|k| format!("({k}, 'n{}', {}, {})", (k * 7).rem_euclid(5), k % 3, 10 - k))
        .collect();
    out.push(format!(
        "INSERT INTO c (k, name, t, tk) VALUES {}",
        c.join(", ")
    ));
    out.push(
        "INSERT INTO sk (s, v) VALUES ('a', 1), ('b', 2), ('1', 3), ('10', 4), ('c', 5), ('2', 6), ('01', 7), (' 1', 8), ('ab', 9), ('1.0', 10)".into(),
    );
    out.push(
        "INSERT INTO tk (dt, v) VALUES ('2024-01-31 23:59:59', 1), ('2024-02-01 00:00:00', 2), ('2024-02-29 23:59:59', 3), ('2024-03-01 00:00:00', 4), ('2024-01-15 12:00:00', 5), ('2024-04-01 00:00:00', 6), ('2024-01-01 00:00:01', 7)".into(),
    );
    out.push("INSERT INTO gl (id, label) VALUES (1, 'one'), (2, 'two'), (3, 'three')".into());
    out.push(
        "INSERT INTO nm (k, v, w, at) VALUES (1, 1, 'a', '2024-01-01 00:00:00'), (2, 1, 'b', NULL), (3, 2, 'a', NULL), (4, NULL, 'c', NULL)".into(),
    );
    out.push(
        "INSERT INTO pl (id, k, note) VALUES (1, 1, 'p1'), (2, 2, 'p2'), (3, -1, 'p3'), (4, 0, 'p4')"
            .into(),
    );
    out
}

fn one(class: &'static str, sql: String) -> Case {
    Case {
        class,
        statements: vec![sql],
        prepared: true,
    }
}

fn session(class: &'static str, statements: Vec<String>, prepared: bool) -> Case {
    Case {
        class,
        statements,
        prepared,
    }
}

/// Where clauses reaching one partition, several, or all.
const SPANS: &[&str] = &["WHERE k = 2", "WHERE k IN (1, -3)", "WHERE id > 3", ""];

/// Errors name what one server names: unknown columns and tables in every
/// clause, over one partition, several, a join with a shipped table, a
/// subquery over a shipped table.
fn names(out: &mut Vec<Case>) {
    let bad = ["nosuch", "t.nosuch", "x.id", "sk.k"];
    for span in SPANS {
        for b in bad {
            for shape in [
                "SELECT {b} FROM t {w}",
                "SELECT id FROM t {w} ORDER BY {b}",
                "SELECT id, COUNT(*) FROM t {w} GROUP BY {b}",
                "SELECT id FROM t {w} {and} {b} = 1",
                "SELECT k, COUNT(*) FROM t {w} GROUP BY k HAVING {b} > 0",
            ] {
                let and = if span.is_empty() { "WHERE" } else { "AND" };
                let sql = shape
                    .replace("{b}", b)
                    .replace("{w}", span)
                    .replace("{and}", and);
                out.push(one("internal names in errors", sql));
            }
        }
    }
    for sql in [
        "SELECT t.id FROM t JOIN sk ON sk.v = t.id WHERE sk.nosuch = 1",
        "SELECT t.id FROM t JOIN sk ON sk.nosuch = t.id",
        "SELECT t.id FROM t JOIN tk ON tk.v = t.id ORDER BY tk.nosuch",
        "SELECT id FROM t WHERE id IN (SELECT nosuch FROM sk)",
        "SELECT id FROM t WHERE id IN (SELECT v FROM sk WHERE nosuch = 1)",
        "SELECT id, (SELECT nosuch FROM sk LIMIT 1) FROM t",
        "SELECT id FROM t WHERE EXISTS (SELECT 1 FROM tk WHERE tk.nosuch = t.id)",
        "SELECT * FROM t JOIN nosuch ON 1 = 1",
        "SELECT * FROM nosuch JOIN t ON 1 = 1 WHERE t.k = 1",
        "SELECT t.id FROM t, sk, tk WHERE x.v = 1",
        "SELECT id FROM t WHERE k = 1 AND id IN (SELECT id FROM nosuch)",
        "SELECT c.k FROM c JOIN sk ON sk.v = c.k GROUP BY c.nosuch",
        "SELECT k FROM c WHERE k > 0 UNION ALL SELECT nosuch FROM sk",
        "SELECT id FROM t ORDER BY 99",
        "SELECT id FROM t WHERE k = 1 ORDER BY 99",
        "SELECT id, k FROM t GROUP BY 7",
        "SELECT id FROM t WHERE k = 2 AND nosuch(k) = 1",
    ] {
        out.push(one("internal names in errors", sql.to_string()));
    }
}

/// Aliases and columns named like partitioned tables, and ORDER BY an
/// alias of an expression, across partitions.
fn aliases(out: &mut Vec<Case>) {
    for span in SPANS {
        for sql in [
            "SELECT t.k AS t, t.name AS sk FROM c AS t {w} ORDER BY t",
            "SELECT c.t, c.tk FROM c {w} ORDER BY c.t, c.tk, c.k",
            "SELECT t, tk, k FROM c {w} ORDER BY tk, k",
            "SELECT sk.k FROM t AS sk {w} ORDER BY 1, sk.id",
            "SELECT tk.id AS c FROM t tk {w} ORDER BY c, tk.k",
            "SELECT k * 2 AS kk, id FROM t {w} ORDER BY kk, id",
            "SELECT k * 2 AS kk, id FROM t {w} ORDER BY kk DESC, id DESC LIMIT 5",
            "SELECT CONCAT(b, '-', id) AS t FROM t {w} ORDER BY t",
            "SELECT id + k AS tk FROM t {w} ORDER BY tk DESC, id",
            "SELECT k AS t, COUNT(*) AS c FROM t {w} GROUP BY t ORDER BY c DESC, t",
            "SELECT MOD(id, 5) AS sk, SUM(k) AS s FROM t {w} GROUP BY sk ORDER BY s, sk",
            "SELECT id, -k AS neg FROM t {w} ORDER BY neg, id LIMIT 3, 4",
            "SELECT t.id, c.name AS tk FROM t JOIN c ON c.k = t.k {w2} ORDER BY tk, t.id",
            "SELECT sk.v AS t FROM sk {w3} ORDER BY t",
            "SELECT tk.v AS sk FROM tk ORDER BY sk",
            "SELECT COUNT(*) AS t FROM t {w}",
        ] {
            let w2 = span.replace("k ", "t.k ").replace("id ", "t.id ");
            let w3 = if span.contains("id") {
                "WHERE v > 3"
            } else if span.is_empty() {
                ""
            } else {
                "WHERE s = 'a'"
            };
            let sql = sql
                .replace("{w}", span)
                .replace("{w2}", &w2)
                .replace("{w3}", w3);
            out.push(one("aliases named like tables", sql));
        }
    }
}

/// NO PAD and binary collations: grouping, DISTINCT, sorting and the
/// collation ids of the metadata, across partitions.
fn collations(out: &mut Vec<Case>) {
    for span in SPANS {
        for col in ["b", "np"] {
            for sql in [
                "SELECT {c}, COUNT(*) FROM t {w} GROUP BY {c} ORDER BY {c}",
                "SELECT DISTINCT {c} FROM t {w} ORDER BY {c}",
                "SELECT {c}, id FROM t {w} ORDER BY {c} DESC, id",
                "SELECT MIN({c}), MAX({c}), COUNT(DISTINCT {c}) FROM t {w}",
                "SELECT CONCAT({c}, '|') AS x FROM t {w} ORDER BY x, id",
                "SELECT {c}, LENGTH({c}) FROM t {w} GROUP BY {c} HAVING COUNT(*) > 1 ORDER BY {c}",
                "SELECT UPPER({c}) AS x, COUNT(*) FROM t {w} GROUP BY x ORDER BY x",
            ] {
                let sql = sql.replace("{c}", col).replace("{w}", span);
                out.push(one("NO PAD collations", sql));
            }
        }
    }
}

/// ENUM and SET: MIN, MAX, ORDER BY, GROUP BY, DISTINCT and metadata.
fn enums(out: &mut Vec<Case>) {
    for span in SPANS {
        for col in ["e", "st"] {
            for sql in [
                "SELECT MIN({c}), MAX({c}) FROM t {w}",
                "SELECT {c}, COUNT(*) FROM t {w} GROUP BY {c} ORDER BY {c}",
                "SELECT DISTINCT {c} FROM t {w} ORDER BY {c} DESC",
                "SELECT id, {c} FROM t {w} ORDER BY {c}, id",
                "SELECT k, MIN({c}), MAX({c}) FROM t {w} GROUP BY k ORDER BY k",
                "SELECT {c} + 0 AS n, COUNT(*) FROM t {w} GROUP BY n ORDER BY n",
                "SELECT {c}, id FROM t {w} ORDER BY {c} DESC, id LIMIT 4",
            ] {
                let sql = sql.replace("{c}", col).replace("{w}", span);
                out.push(one("ENUM and SET", sql));
            }
        }
    }
}

/// Merged aggregates over BIGINT UNSIGNED near 2^64, DECIMAL and DOUBLE,
/// and HAVING over them.
fn numbers(out: &mut Vec<Case>) {
    for span in SPANS {
        for col in ["u", "d", "f"] {
            for sql in [
                "SELECT SUM({c}), AVG({c}), MIN({c}), MAX({c}), COUNT({c}) FROM t {w}",
                "SELECT k, SUM({c}) AS s FROM t {w} GROUP BY k ORDER BY k",
                "SELECT k, SUM({c}) AS s FROM t {w} GROUP BY k HAVING s > 18446744073709551000 ORDER BY k",
                "SELECT k, AVG({c}) FROM t {w} GROUP BY k HAVING AVG({c}) > 1 ORDER BY k",
                "SELECT SUM({c}) + 1, SUM({c}) * 2, SUM({c}) / 3 FROM t {w}",
                "SELECT k, SUM({c}) - 18446744073709551615 AS s FROM t {w} GROUP BY k ORDER BY s, k",
                "SELECT MOD(id, 3) AS g, SUM({c}), MAX({c}) FROM t {w} GROUP BY g HAVING SUM({c}) IS NOT NULL ORDER BY g",
                "SELECT {c} FROM t {w} ORDER BY {c} DESC, id LIMIT 3",
                "SELECT SUM(DISTINCT {c}), COUNT(DISTINCT {c}) FROM t {w}",
            ] {
                let sql = sql.replace("{c}", col).replace("{w}", span);
                out.push(one("integer, DECIMAL, DOUBLE merges", sql));
            }
        }
    }
}

/// ROW_COUNT(), FOUND_ROWS(), the warning count, SHOW WARNINGS and
/// sql_select_limit after statements on one partition (on the main
/// backend and others), several, merged, and writes.
fn diagnostics(out: &mut Vec<Case>) {
    let before = [
        "SELECT id FROM t WHERE k = 0",
        "SELECT id FROM t WHERE k = 2",
        "SELECT id FROM t ORDER BY id LIMIT 3",
        "SELECT CAST(b AS INT) FROM t WHERE k = 0",
        "SELECT CAST(b AS INT) FROM t WHERE k = 3",
        "SELECT CAST(b AS INT) FROM t WHERE k IN (1, 2)",
        "SELECT CAST(b AS INT) AS x FROM t ORDER BY id",
        "SELECT k, SUM(CAST(b AS INT)) FROM t GROUP BY k ORDER BY k",
        "UPDATE c SET t = t + 1 WHERE k = 0",
        "UPDATE c SET t = t + 1 WHERE k = 2",
        "UPDATE c SET t = t + 1 WHERE k > 0",
        "UPDATE c SET t = t WHERE k > 0",
        "DELETE FROM c WHERE k = 1000",
        "INSERT INTO c (k, name) VALUES (100, 'x'), (101, 'y'), (102, 'z')",
        "SELECT nosuch FROM t WHERE k = 2",
        // Writes whose OK counts warnings: on one partition, on several,
        // and on a plain table.
        "INSERT IGNORE INTO c (k, name, t) VALUES (103, 'w', 'x9')",
        "INSERT IGNORE INTO c (k, name, t) VALUES (104, 'w', 'x9'), (105, 'v', 99999999999)",
        "UPDATE IGNORE c SET t = 'q' WHERE k = 2",
        "UPDATE IGNORE c SET tk = 99999999999 WHERE k > 0",
        "INSERT IGNORE INTO pl (id, k, note) VALUES (50, 1, 'abcdefghijklmno')",
        "INSERT IGNORE INTO c (k, name, t) VALUES (106, 'a', 1e20), (107, 'b', 2), (110, 'c', 'x'), (111, 'd', -1e20), (114, 'e', 'y')",
        // Errors (strict mode) that name a row.
        "INSERT INTO c (k, name, t) VALUES (104, 'w', 1), (105, 'v', 'x9')",
        "INSERT INTO c (k, name, t) VALUES (104, 'w', 1), (108, 'u', 2), (105, 'v', 99999999999)",
        "UPDATE c SET tk = 99999999999 WHERE k > 0",
    ];
    let readers = [
        "SELECT ROW_COUNT()",
        "SELECT FOUND_ROWS()",
        "SHOW WARNINGS",
        "SHOW COUNT(*) WARNINGS",
        "SELECT @@warning_count",
        "SHOW ERRORS",
    ];
    for b in before {
        for r in readers {
            let mut statements = vec![b.to_string(), r.to_string()];
            if b.starts_with("INSERT") {
                statements.push("DELETE FROM c WHERE k >= 100".into());
                statements.push("DELETE FROM pl WHERE id = 50".into());
                statements.push("SELECT ROW_COUNT()".into());
            }
            if b.starts_with("UPDATE") {
                statements.push("UPDATE c SET t = k % 3, tk = 10 - k".into());
            }
            out.push(session(
                "previous statement's diagnostics",
                statements,
                false,
            ));
        }
    }
    // Result sets that set FOUND_ROWS() and ones that leave it (answered
    // by hscale itself or passed through).
    for mid in [
        "SHOW WARNINGS",
        "SHOW ERRORS",
        "SHOW COUNT(*) WARNINGS",
        "SHOW TABLES",
        "SHOW FULL TABLES",
        "SHOW CREATE TABLE t",
        "SHOW CREATE TABLE pl",
        "SHOW COLUMNS FROM t",
        "DESC c",
        "SELECT 1 UNION SELECT 2",
        "SHOW SESSION VARIABLES LIKE 'sql_mode'",
        "CHECK TABLE pl",
    ] {
        out.push(session(
            "previous statement's diagnostics",
            vec![
                "SELECT id FROM t ORDER BY id LIMIT 3".into(),
                mid.into(),
                "SELECT FOUND_ROWS()".into(),
                "SELECT ROW_COUNT()".into(),
            ],
            false,
        ));
    }
    for limit in ["2", "5", "DEFAULT"] {
        for sql in [
            "SELECT id FROM t ORDER BY id",
            "SELECT id FROM t WHERE k = 1 ORDER BY id",
            "SELECT id FROM t WHERE k IN (1, 2) ORDER BY id",
            "SELECT k, COUNT(*) FROM t GROUP BY k ORDER BY k",
            "SELECT DISTINCT k FROM t ORDER BY k",
            "SELECT id FROM t ORDER BY id LIMIT 4",
            "SELECT t.id, c.name FROM t JOIN c ON c.k = t.k ORDER BY t.id",
            "SELECT t.id FROM t JOIN sk ON sk.v = t.id ORDER BY t.id",
            "SELECT COUNT(*) FROM t",
            "SELECT id FROM t WHERE id IN (SELECT v FROM sk) ORDER BY id",
        ] {
            out.push(session(
                "sql_select_limit",
                vec![format!("SET sql_select_limit = {limit}"), sql.to_string()],
                true,
            ));
        }
    }
}

/// SHOW WARNINGS, SHOW ERRORS and the counts after statements whose
/// conditions come from several partitions (concatenated, merged, written,
/// an error), from one partition on another backend, and after the
/// statements between that leave the list (no tables) or empty it.
fn conditions(out: &mut Vec<Case>) {
    let raising = [
        "SELECT CAST(b AS INT) FROM t",
        "SELECT CAST(b AS INT) FROM t WHERE k IN (1, 2)",
        "SELECT COUNT(*) FROM t WHERE CAST(b AS INT) = 0",
        "SELECT k, COUNT(*) FROM t WHERE CAST(np AS INT) = 0 GROUP BY k ORDER BY k",
        "SELECT CAST('x' AS INT) FROM t",
        "UPDATE c SET t = t WHERE CAST(name AS INT) = 0",
        "SELECT nosuch FROM t",
        "SELECT CAST(b AS INT) FROM t WHERE k = 3",
        // A literal compared with a column is converted once per
        // statement: one warning, however many partitions run it.
        "SELECT id FROM t WHERE k = '1x'",
        "SELECT id FROM t WHERE id = '3y' ORDER BY id",
        "SELECT COUNT(*) FROM t WHERE id >= '40z' AND '2w' <> k",
        "SELECT id, CAST('9q' AS INT) FROM t WHERE id > '45r'",
    ];
    let between = [
        None,
        Some("SELECT 1"),
        Some("SET @x = 1"),
        Some("SELECT id FROM t WHERE k = 1"),
        Some("SELECT COUNT(*) FROM t"),
        Some("SELECT id FROM pl"),
    ];
    let readers = [
        "SHOW WARNINGS",
        "SHOW ERRORS",
        "SHOW COUNT(*) WARNINGS",
        "SHOW COUNT(*) ERRORS",
        "SELECT @@warning_count, @@session.error_count",
    ];
    for r in raising {
        for b in between {
            for reader in readers {
                let mut statements = vec![r.to_string()];
                statements.extend(b.map(str::to_string));
                statements.push(reader.to_string());
                out.push(session("conditions over partitions", statements, true));
            }
        }
    }
    // The warning count of the result itself (its EOF or OK), as one
    // server's, over several partitions: concatenated, merged (sorted,
    // grouped, DISTINCT), written; literals compared once per statement,
    // IN lists of strings, constant conditions, conversions per row.
    let counted = [
        "SELECT id FROM t WHERE k IN ('1x', '2y')",
        "SELECT id FROM t WHERE k NOT IN ('1x', '2y', '0z')",
        "SELECT id FROM t WHERE id IN ('3y', '40z') ORDER BY id LIMIT 3",
        "SELECT id FROM t WHERE id > '30w' ORDER BY id DESC LIMIT 2, 4",
        "SELECT k, COUNT(*) FROM t WHERE id <> '7w' GROUP BY k ORDER BY k",
        "SELECT DISTINCT k FROM t WHERE id >= '20v' ORDER BY k",
        "SELECT COUNT(*), SUM(k) FROM t WHERE k = 1 OR 'a'",
        "SELECT id FROM t WHERE k = 1 OR k = '2x' ORDER BY id",
        "SELECT k, CAST(b AS INT) FROM t WHERE id < '9q' ORDER BY id",
        "UPDATE c SET t = t WHERE k IN ('1x', '2y', '3z')",
        "UPDATE c SET t = t WHERE k > '0q'",
        "DELETE FROM c WHERE k IN ('100x', '101y')",
    ];
    for sql in counted {
        for reader in ["SHOW WARNINGS", "SHOW COUNT(*) WARNINGS"] {
            out.push(session(
                "conditions over partitions",
                vec![sql.to_string(), reader.to_string()],
                true,
            ));
        }
    }
    // The list is bounded by max_error_count, the count is not; LIMIT.
    for reader in [
        "SHOW WARNINGS",
        "SHOW WARNINGS LIMIT 2",
        "SHOW WARNINGS LIMIT 1, 2",
        "SHOW COUNT(*) WARNINGS",
    ] {
        for limit in ["3", "DEFAULT"] {
            out.push(session(
                "conditions over partitions",
                vec![
                    format!("SET max_error_count = {limit}"),
                    "SELECT CAST('x' AS INT) FROM t".into(),
                    reader.to_string(),
                ],
                true,
            ));
        }
    }
}

/// Routing by literal: the server's comparison decides which partitions
/// hold the rows, under strict and non-strict sql_modes.
fn routing(out: &mut Vec<Case>) {
    let ints = [
        "2",
        "'2'",
        "' 2'",
        "'2 '",
        "'2abc'",
        "2.0",
        "'2.0'",
        "1.5",
        "'0x2'",
        "0x2",
        "'2e0'",
        "2e0",
        "-1",
        "'-1'",
        "' -1 '",
        "TRUE",
        "18446744073709551615",
        "-9223372036854775809",
        "'\u{3000}2'",
        "'2\u{a0}'",
        "/*! 2 */",
        "/*M!100000 2 */",
        "2 /*!99999 + 1 */",
    ];
    for v in ints {
        out.push(one(
            "routing by literal",
            format!("SELECT k, name FROM c WHERE k = {v} ORDER BY k"),
        ));
        out.push(one(
            "routing by literal",
            format!("SELECT k FROM c WHERE k IN ({v}, 3) ORDER BY k"),
        ));
    }
    let strs = [
        "'a'",
        "'A'",
        "'a '",
        "' a'",
        "'a\u{3000}'",
        "'a\u{a0}'",
        "1",
        "10",
        "1.0",
        "'1.0'",
        "01",
        "'01'",
        "1e1",
        "' 1'",
        "'b' /*! OR s = 'c' */",
        "/*M! 'ab' OR */ 'a'",
    ];
    for v in strs {
        out.push(one(
            "routing by literal",
            format!("SELECT s, v FROM sk WHERE s = {v} ORDER BY v"),
        ));
    }
    let dates = [
        "'2024-01-31 23:59:59'",
        "'2024-01-31 23:59:59.5'",
        "'2024-01-31 23:59:59.9999999'",
        "'2024-02-01'",
        "20240201",
        "'20240201000000'",
        "'2024-2-1 0:0:0'",
        "'2024/02/01'",
        "' 2024-02-01'",
        "'2024-02-01 junk'",
        "'2024-02-30'",
        "TIMESTAMP'2024-03-01 00:00:00'",
        "DATE'2024-03-01'",
    ];
    for mode in ["DEFAULT", "''", "'TIME_ROUND_FRACTIONAL'"] {
        for v in dates {
            out.push(session(
                "routing by literal",
                vec![
                    format!("SET sql_mode = {mode}"),
                    format!("SELECT dt, v FROM tk WHERE dt = {v} ORDER BY v"),
                ],
                true,
            ));
        }
        // Writes whose key the server rounds or truncates: the row must
        // land where a read by its stored value finds it.
        for (i, (v, next)) in [
            ("'2024-01-31 23:59:59.7'", "2024-02-01 00:00:00"),
            ("'2024-02-29 23:59:59.4'", "2024-03-01 00:00:00"),
            ("'2024-03-31 23:59:59.5'", "2024-04-01 00:00:00"),
            ("'2024-01-10 10:59:59.9'", "2024-01-10 11:00:00"),
        ]
        .iter()
        .enumerate()
        {
            out.push(session(
                "routing by literal",
                vec![
                    format!("SET sql_mode = {mode}"),
                    format!("INSERT INTO tk (dt, v) VALUES ({v}, {})", 100 + i),
                    format!("SELECT dt, v FROM tk WHERE v = {}", 100 + i),
                    format!(
                        "SELECT v FROM tk WHERE dt = (SELECT dt FROM tk WHERE v = {}) ORDER BY v",
                        100 + i
                    ),
                    // Pruned to the partition of either value it may hold.
                    format!("SELECT v FROM tk WHERE dt = '{}' ORDER BY v", &v[1..20]),
                    format!("SELECT v FROM tk WHERE dt = '{next}' ORDER BY v"),
                    format!("DELETE FROM tk WHERE v = {}", 100 + i),
                ],
                false,
            ));
        }
        // Writes whose key only the column's own conversion tells (hscale
        // asks the backend): then a read pruned to the partition of the
        // value the column holds (in a mode without strict, the only one
        // where the row is written) must find the row.
        for (i, (v, stored)) in [
            ("'1.5'", "2"),
            ("1.5", "2"),
            ("2.5e0", "2"),
            ("-2.5", "-3"),
            ("0x11", "17"),
            ("'0x11'", "0"),
            ("'1e1'", "10"),
            ("1e1", "10"),
            ("' 13e1x'", "130"),
            ("9223372036854775808", "9223372036854775807"),
            ("-9223372036854775809", "-9223372036854775808"),
            ("X'13'", "0"),
            ("'\u{3000}5'", "0"),
            ("'5\u{a0}'", "5"),
            ("_latin1'6x'", "6"),
        ]
        .iter()
        .enumerate()
        {
            let name = format!("c{i}");
            out.push(session(
                "routing by literal",
                vec![
                    format!("SET sql_mode = {mode}"),
                    format!("DELETE FROM c WHERE k IN ({stored}) AND name LIKE 'c%'"),
                    format!("INSERT INTO c (k, name) VALUES ({v}, '{name}')"),
                    format!("SELECT k, name FROM c WHERE name = '{name}'"),
                    format!("SELECT name FROM c WHERE k = {stored}"),
                    format!("INSERT IGNORE INTO c (k, name) VALUES ({v}, '{name}i')"),
                    format!("SELECT name FROM c WHERE k = {stored}"),
                    format!("REPLACE INTO c (k, name) VALUES ({v}, '{name}r')"),
                    format!("INSERT INTO c (k, name) VALUES ({v}, '{name}') ON DUPLICATE KEY UPDATE name = CONCAT(name, 'u')"),
                    format!("SELECT name FROM c WHERE k = {stored}"),
                    format!("DELETE FROM c WHERE name LIKE '{name}%'"),
                    // In a transaction, with a row of another partition.
                    "BEGIN".to_string(),
                    format!("INSERT IGNORE INTO c (k, name) VALUES (1000, '{name}t'), ({v}, '{name}t')"),
                    format!("SELECT name FROM c WHERE k = {stored}"),
                    "ROLLBACK".to_string(),
                    format!("SELECT name FROM c WHERE k IN (1000, {stored})"),
                    format!("DELETE FROM c WHERE name LIKE '{name}%'"),
                ],
                false,
            ));
        }
        for (i, v) in ["'7abc'", "' 7 '", "99999999999999999999", "'-7x'"]
            .iter()
            .enumerate()
        {
            out.push(session(
                "routing by literal",
                vec![
                    format!("SET sql_mode = {mode}"),
                    format!("INSERT INTO c (k, name) VALUES ({v}, 'w{i}')"),
                    format!("SELECT k, name FROM c WHERE name = 'w{i}'"),
                    format!("SELECT name FROM c WHERE k = (SELECT k FROM c WHERE name = 'w{i}')"),
                    format!("DELETE FROM c WHERE name = 'w{i}'"),
                ],
                false,
            ));
        }
    }
}

/// Multi-row INSERTs into the DATE-partitioned table with rows for the
/// default partition among rows for others.
fn default_rows(out: &mut Vec<Case>) {
    for rows in [
        "('2024-01-05 00:00:00', 11), ('2025-06-01', 12), ('2024-02-03', 13)",
        "('2031-01-05', 11), ('2024-02-01 10:00', 12)",
        "('1999-12-31 23:59:59', 11), ('2024-03-02', 12), ('2030-01-01', 13), ('2024-01-02', 14)",
    ] {
        for form in ["INSERT INTO tk (dt, v) VALUES", "INSERT INTO tk VALUES"] {
            // Text only: prepared, rows of several partitions in one
            // statement are refused (docs/src/refusals.md).
            out.push(session(
                "multi-row INSERT with default rows",
                vec![
                    format!("{form} {rows}"),
                    "SELECT dt, v FROM tk ORDER BY v".into(),
                    "SELECT v FROM tk WHERE dt >= '2025-01-01' ORDER BY v".into(),
                    "DELETE FROM tk WHERE v > 10".into(),
                ],
                false,
            ));
        }
    }
    // INSERT ... SET and without a column list (prepared in the column
    // form, as the text is planned), one row per statement, text and
    // prepared.
    for (i, dt) in ["2024-01-05", "2024-02-07 10:00:00", "2030-01-01"]
        .iter()
        .enumerate()
    {
        for insert in [
            format!("INSERT INTO tk SET v = {}, dt = '{dt}'", 20 + i),
            format!("INSERT INTO tk VALUES ('{dt}', {})", 20 + i),
            format!("REPLACE INTO tk VALUES ('{dt}', {})", 20 + i),
            format!("INSERT INTO c SET name = 'set{i}', k = {}", 200 + i),
            format!(
                "INSERT INTO c VALUES ({}, 'nolist{i}', NULL, NULL)",
                200 + i
            ),
        ] {
            out.push(session(
                "multi-row INSERT with default rows",
                vec![
                    insert,
                    format!("SELECT dt, v FROM tk WHERE dt = '{dt}'"),
                    format!("SELECT k, name FROM c WHERE k = {}", 200 + i),
                    "DELETE FROM tk WHERE v >= 20".into(),
                    "DELETE FROM c WHERE k >= 200".into(),
                ],
                true,
            ));
        }
    }
}

/// information_schema and SHOW over a database with partitioned tables.
fn schema(out: &mut Vec<Case>) {
    for filter in [
        "TABLE_SCHEMA = DATABASE()",
        "TABLE_SCHEMA = '<db>'",
        "TABLE_SCHEMA IN ('<db>', 'mysql')",
    ] {
        for sql in [
            "SELECT TABLE_NAME, TABLE_TYPE, ENGINE FROM information_schema.TABLES WHERE {f} ORDER BY 1",
            "SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE, COLUMN_KEY FROM information_schema.COLUMNS WHERE {f} ORDER BY 1, 3",
            "SELECT TABLE_NAME, INDEX_NAME, COLUMN_NAME, SEQ_IN_INDEX, NON_UNIQUE FROM information_schema.STATISTICS WHERE {f} ORDER BY 1, 2, 4",
            "SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, ORDINAL_POSITION FROM information_schema.KEY_COLUMN_USAGE WHERE {f} ORDER BY 1, 2, 4",
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE {f}",
            "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE {f} AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION",
            "SELECT t.TABLE_NAME, COUNT(c.COLUMN_NAME) FROM information_schema.TABLES t JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME WHERE t.{f} GROUP BY t.TABLE_NAME ORDER BY 1",
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE {f} AND TABLE_NAME LIKE 't%' ORDER BY 1",
            "SELECT s.TABLE_NAME, s.INDEX_NAME FROM information_schema.STATISTICS s WHERE s.{f} AND s.NON_UNIQUE = 1 ORDER BY 1, 2",
        ] {
            out.push(one("information_schema and SHOW", sql.replace("{f}", filter)));
        }
    }
    for table in ["t", "c", "sk", "tk", "rd", "nm"] {
        for sql in [
            "SHOW COLUMNS FROM {t}",
            "SHOW FULL COLUMNS FROM {t}",
            "SHOW INDEX FROM {t}",
            "DESCRIBE {t}",
        ] {
            out.push(session(
                "information_schema and SHOW",
                vec![sql.replace("{t}", table)],
                true,
            ));
        }
        // Each table once, under its name, with its columns and indexes.
        for sql in [
            "SELECT TABLE_NAME, TABLE_TYPE, ENGINE, ROW_FORMAT, TABLE_COLLATION, CREATE_OPTIONS, TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '{t}'",
            "SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_TYPE, COLUMN_KEY, EXTRA, COLUMN_COMMENT, IS_GENERATED, GENERATION_EXPRESSION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '{t}' ORDER BY TABLE_NAME, ORDINAL_POSITION",
            "SELECT TABLE_NAME, NON_UNIQUE, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, COLLATION, SUB_PART, PACKED, NULLABLE, INDEX_TYPE, COMMENT, INDEX_COMMENT, IGNORED FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '{t}' ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX",
            "SELECT CONSTRAINT_NAME, TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, POSITION_IN_UNIQUE_CONSTRAINT FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '{t}' ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION",
        ] {
            // A LIKE pattern names no table to the planner: the views are
            // read whole, as for a listing.
            out.push(one(
                "information_schema and SHOW",
                sql.replace("LIKE '{t}'", &format!("LIKE '{table}%'")),
            ));
        }
    }
    for sql in [
        "SHOW TABLES",
        "SHOW FULL TABLES",
        "SHOW TABLES LIKE 't%'",
        "SHOW TABLE STATUS",
        "SHOW TABLE STATUS LIKE 't'",
        "SHOW TABLE STATUS LIKE 'nm'",
    ] {
        out.push(session(
            "information_schema and SHOW",
            vec![sql.into()],
            sql.contains("STATUS"),
        ));
    }
}

/// Key IN lists over several partitions: each part gets only its own
/// keys (`hscale_route` `in_lists.rs`); the answers must not change,
/// whatever surrounds the list (NOT, IS NULL, a comparison, a function,
/// OR, NULL items, a subquery whose `k` is another table's).
fn in_lists(out: &mut Vec<Case>) {
    let lists = [
        "k IN (1, 2, 5, -3)",
        "k IN (1, NULL, 6)",
        "k IN (NULL)",
        "k IN (7, 11)",
        "k IN ('1', '2', '03')",
        "k IN (1, '2')",
        "t.k IN (9223372036854775807, -9223372036854775808, 0, 4)",
        "x.k IN (1, 2, 3)",
    ];
    let shapes = [
        "SELECT id, k FROM t {a} WHERE {l}",
        "SELECT id, k FROM t {a} WHERE NOT ({l})",
        "SELECT id, k FROM t {a} WHERE ({l}) IS NULL",
        "SELECT id, k FROM t {a} WHERE {l} IS NOT TRUE",
        "SELECT id, k FROM t {a} WHERE {l} = 0",
        "SELECT id, k FROM t {a} WHERE IF({l}, 1, 0) = 1",
        "SELECT id, k FROM t {a} WHERE COALESCE({l}, 7) = 7",
        "SELECT id, k FROM t {a} WHERE id > 2 AND {l} OR k = 2",
        "SELECT id, k, {l} AS hit FROM t {a} WHERE {l} OR id < 3",
        "SELECT id, k FROM t {a} WHERE {l} AND id IN (SELECT id FROM pl WHERE k IN (1, 2))",
        "SELECT id, k FROM t {a} WHERE {l} AND EXISTS (SELECT 1 FROM pl WHERE pl.k IN (1, -1) AND pl.id = id)",
        "SELECT id, k FROM t {a} WHERE k NOT IN (1, 2) AND {l}",
        // Merged over the partitions.
        "SELECT id, k FROM t {a} WHERE {l} ORDER BY id DESC, k LIMIT 3",
        "SELECT k, COUNT(*) FROM t {a} WHERE {l} GROUP BY k ORDER BY k",
        "SELECT COUNT(*), SUM(id) FROM t {a} WHERE NOT ({l})",
        "SELECT DISTINCT k FROM t {a} WHERE ({l}) IS NOT FALSE ORDER BY k",
    ];
    for l in lists {
        let alias = if l.starts_with("x.") { "AS x" } else { "" };
        for shape in shapes {
            let sql = shape.replace("{l}", l).replace("{a}", alias);
            out.push(one("key IN lists per partition", sql));
        }
    }
    for sql in [
        "SELECT s, v FROM sk WHERE s IN ('a', 'b', 'A', 'zz', '1', '10')",
        "SELECT s, v FROM sk WHERE NOT (s IN ('a', 'B', NULL))",
        "SELECT s, v FROM sk WHERE s IN ('a ', '1', ' 1')",
        "SELECT dt, v FROM tk WHERE dt IN ('2024-01-31 23:59:59', '2024-02-01 00:00:00', '2024-04-01')",
        "SELECT dt, v FROM tk WHERE (dt IN ('2024-01-15 12:00:00', '2024-03-01 00:00:00')) = 0",
        "SELECT k, name FROM c WHERE k IN (1, 2, 3, 4, 5, 6, 7, 8) AND name <> ''",
    ] {
        out.push(one("key IN lists per partition", sql.to_string()));
    }
    for l in [
        "k IN (1, 2, 3, 5)",
        "k IN (1, NULL)",
        "NOT (k IN (2, 3, NULL))",
    ] {
        out.push(session(
            "key IN lists per partition",
            vec![
                format!("UPDATE t SET f = f + 1 WHERE {l}"),
                "SELECT ROW_COUNT()".into(),
                "SELECT id, k, f FROM t ORDER BY id, k".into(),
                format!("DELETE FROM t WHERE {l} AND id > 5"),
                "SELECT ROW_COUNT()".into(),
                "SELECT id, k FROM t ORDER BY id, k".into(),
            ],
            false,
        ));
    }
}

pub fn all() -> Vec<Case> {
    let mut out = Vec::new();
    names(&mut out);
    aliases(&mut out);
    collations(&mut out);
    enums(&mut out);
    numbers(&mut out);
    diagnostics(&mut out);
    conditions(&mut out);
    routing(&mut out);
    default_rows(&mut out);
    schema(&mut out);
    in_lists(&mut out);
    out
}
