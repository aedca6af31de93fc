//! The adversarial statements, their fixture (schema, partitioning, rows)
//! and what is known to differ. Written from the README and docs/src
//! alone: each class names the promise of the book it tests.

use mysql_async::Value;

/// How a statement's answer is compared.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum How {
    /// Rows in order (ORDER BY fixes it, or at most one row).
    Ordered,
    /// Rows as multisets.
    Unordered,
    /// A write: its answer, then every table's rows.
    Write,
    /// A write whose rows (RETURNING) come in no defined order.
    WriteAnyOrder,
    /// Not a statement: both sides start again, on new connections (no
    /// session state kept) with the fixture's rows.
    Reset,
    /// Not a statement: both sides go on over new connections that set
    /// CLIENT_FOUND_ROWS (affected rows are the rows matched).
    FoundRows,
}

pub struct Step {
    pub sql: String,
    /// Parameters of a prepared statement; `None`: a text query.
    pub params: Option<Vec<Value>>,
    pub how: How,
}

impl Step {
    /// The statement's name in the lists below.
    pub fn key(&self) -> String {
        match &self.params {
            None => self.sql.clone(),
            Some(p) => format!("{} -- prepared {p:?}", self.sql),
        }
    }
}

pub const SCHEMA: &[&str] = &[
    "CREATE TABLE ty (id INT NOT NULL, k INT NOT NULL, ti TINYINT NULL, su SMALLINT UNSIGNED NULL, bi BIGINT NULL, bu BIGINT UNSIGNED NULL, de DECIMAL(20,6) NULL, db DOUBLE NULL, ch CHAR(8) NULL, vc VARCHAR(32) NULL, vb VARBINARY(16) NULL, dt DATETIME(3) NULL, da DATE NULL, tm TIME NULL, yr YEAR NULL, js JSON NULL, bt BIT(8) NULL, en ENUM('x','y','z') NULL, st SET('a','b','c') NULL, PRIMARY KEY (id, k), KEY (vc)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
    "CREATE TABLE od (oid INT NOT NULL, k INT NOT NULL, qty INT NOT NULL, price DECIMAL(8,2) NULL, note VARCHAR(20) NULL, PRIMARY KEY (oid, k), UNIQUE KEY uq (k, note)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
    "CREATE TABLE sk (name VARCHAR(20) NOT NULL, v INT NULL, PRIMARY KEY (name)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
    "CREATE TABLE ev (id BIGINT NOT NULL AUTO_INCREMENT, at DATETIME NOT NULL, kind VARCHAR(8) NOT NULL, amt DECIMAL(10,2) NULL, PRIMARY KEY (id, at)) DEFAULT CHARSET=utf8mb4",
    "CREATE TABLE gl (gid INT NOT NULL PRIMARY KEY, name VARCHAR(16) NOT NULL) DEFAULT CHARSET=utf8mb4",
];

pub const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_GLOBAL_TABLE('gl')",
    "HSCALE SETUP_TABLE('ty', 'k', 'ty_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('ty', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('ty', 'm1', '-1', 'shard1')",
    "HSCALE ADD_PARTITION('ty', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('ty', 'm2', '-2', 'shard2')",
    "HSCALE ADD_PARTITION('ty', 'm3', '3', 'shard3')",
    "HSCALE ADD_PARTITION('ty', 'm3', '-3', 'shard3')",
    "HSCALE SETUP_TABLE('od', 'k', 'od_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('od', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('od', 'm1', '-1', 'shard1')",
    "HSCALE ADD_PARTITION('od', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('od', 'm2', '-2', 'shard2')",
    "HSCALE ADD_PARTITION('od', 'm3', '3', 'shard3')",
    "HSCALE ADD_PARTITION('od', 'm3', '-3', 'shard3')",
    "HSCALE SETUP_TABLE('sk', 'name', 'sk_default', 'shard0', 'HASH(4)')",
    "HSCALE ADD_PARTITION('sk', 'h1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('sk', 'h2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('sk', 'h3', '3', 'shard3')",
    "HSCALE SETUP_TABLE('ev', 'at', 'ev_default', 'shard0', \"DATE('%Y-%m')\")",
    "HSCALE ADD_PARTITION('ev', 'e01', '2024-01', 'shard1')",
    "HSCALE ADD_PARTITION('ev', 'e02', '2024-02', 'shard2')",
    "HSCALE ADD_PARTITION('ev', 'e03', '2024-03', 'shard3')",
];

fn pick(xs: &[&str], i: usize) -> String {
    xs[i % xs.len()].to_string()
}

/// The rows every table starts with.
pub fn data() -> Vec<String> {
    let ty: Vec<String> = (1..=40usize)
        .map(|i| {
            let cols = [
                i.to_string(),
                ((i % 7) as i64 - 3).to_string(),
                pick(&["-128", "127", "0", "NULL", "-1", "1"], i),
                pick(&["0", "65535", "NULL", "1", "300"], i),
                pick(
                    &[
                        "-9223372036854775808",
                        "9223372036854775807",
                        "0",
                        "NULL",
                        "-1",
                        "42",
                    ],
                    i + 1,
                ),
                pick(
                    &[
                        "0",
                        "18446744073709551615",
                        "NULL",
                        "1",
                        "9223372036854775808",
                    ],
                    i,
                ),
                pick(
                    &[
                        "-99999999999999.999999",
                        "99999999999999.999999",
                        "0.000001",
                        "NULL",
                        "-0.000001",
                        "1.5",
                        "2.50",
                    ],
                    i * 3,
                ),
                pick(
                    &["1e308", "-1e308", "0", "NULL", "2.5", "-0.5", "1e-300"],
                    i * 2,
                ),
                pick(&["''", "'a'", "'b '", "'c'", "NULL", "'é'", "'Z'"], i * 5),
                pick(
                    &[
                        "'abc'", "'ABC'", "'Abc '", "'abd'", "''", "NULL", "'ß'", "'ss'", "'zz'",
                        "'Ä'", "'a'",
                    ],
                    i,
                ),
                pick(&["0x00", "0xff", "''", "NULL", "'abc'", "'ABC'"], i * 5),
                pick(
                    &[
                        "'1000-01-01 00:00:00.000'",
                        "'9999-12-31 23:59:59.999'",
                        "'2024-02-29 12:00:00.500'",
                        "NULL",
                        "'2024-03-01 00:00:00'",
                        "'1970-01-01 00:00:01'",
                    ],
                    i + 2,
                ),
                pick(
                    &[
                        "'1000-01-01'",
                        "'9999-12-31'",
                        "'2024-02-29'",
                        "NULL",
                        "'2023-12-31'",
                        "'2024-01-01'",
                    ],
                    i + 3,
                ),
                pick(
                    &[
                        "'-838:59:59'",
                        "'838:59:59'",
                        "'00:00:00'",
                        "NULL",
                        "'12:30:00'",
                        "'-00:00:01'",
                    ],
                    i + 4,
                ),
                pick(&["1901", "2155", "0", "NULL", "2024"], i + 2),
                pick(
                    &[
                        "'{\"a\":1,\"b\":[1,2]}'",
                        "'[]'",
                        "'null'",
                        "NULL",
                        "'{\"a\":\"x\"}'",
                        "'\"str\"'",
                        "'{\"a\":2}'",
                        "'[1,\"2\",3.5]'",
                    ],
                    i,
                ),
                pick(&["b'0'", "b'11111111'", "NULL", "b'1010'"], i),
                pick(&["'z'", "'x'", "'y'", "NULL"], i + 1),
                pick(&["'a'", "'a,b'", "''", "NULL", "'c'", "'a,b,c'"], i + 5),
            ];
            format!("({})", cols.join(", "))
        })
        .collect();
    let od: Vec<String> = (1..=32usize)
        .map(|o| {
            let price = if o % 9 == 0 {
                "NULL".to_string()
            } else {
                format!("{}.{:02}", (o * 13) % 50, (o * 7) % 100)
            };
            let note = if o % 6 == 0 {
                "NULL".to_string()
            } else {
                format!("'n{o}'")
            };
            format!(
                "({o}, {}, {}, {price}, {note})",
                (o % 5) as i64 - 1,
                (o * 7) % 11
            )
        })
        .collect();
    let ev: Vec<String> = (1..=30usize)
        .map(|i| {
            let amt = if i % 7 == 0 {
                "NULL".to_string()
            } else {
                format!("{}.{:02}", (i * 37) % 1000 / 100, (i * 37) % 100)
            };
            format!(
                "({i}, '2023-12-20 00:00:00' + INTERVAL {} DAY + INTERVAL {} HOUR, '{}', {amt})",
                i * 4,
                (i * 5) % 24,
                ["a", "b", "c"][i % 3]
            )
        })
        .chain([
            "(31, '2024-01-31 23:59:59', 'edge', 1.00)".to_string(),
            "(32, '2024-02-01 00:00:00', 'edge', 2.00)".to_string(),
            "(33, '2024-02-10 10:00:00', 'edge', 3.00)".to_string(),
        ])
        .collect();
    vec![
        format!("INSERT INTO ty VALUES {}", ty.join(", ")),
        format!("INSERT INTO od VALUES {}", od.join(", ")),
        "INSERT INTO sk VALUES ('alpha', 1), ('Beta', 2), ('gamma', 3), ('DELTA', 4), ('épsilon', 5), ('zeta', 6), ('eta ', 7), ('Theta', 8), ('iota', 9), ('kappa', 10), ('Straße', 11), ('lambda', NULL)".to_string(),
        format!("INSERT INTO ev VALUES {}", ev.join(", ")),
        "INSERT INTO gl VALUES (0, 'n1'), (1, 'n2'), (2, 'zero'), (3, 'n12'), (4, 'three'), (5, 'n30')".to_string(),
    ]
}

pub fn step(sql: &str, params: Option<Vec<Value>>, how: How) -> Step {
    Step {
        sql: sql.to_string(),
        params,
        how,
    }
}

/// Rows of `xs` compared in order.
pub fn o(s: &mut Vec<Step>, xs: &[&str]) {
    s.extend(xs.iter().map(|q| step(q, None, How::Ordered)))
}

/// Rows of `xs` compared as multisets.
pub fn u(s: &mut Vec<Step>, xs: &[&str]) {
    s.extend(xs.iter().map(|q| step(q, None, How::Unordered)))
}

/// Writes, then every table's rows.
pub fn w(s: &mut Vec<Step>, xs: &[&str]) {
    s.extend(xs.iter().map(|q| step(q, None, How::Write)))
}

/// A module's statements, appended in order.
type Push = fn(&mut Vec<Step>);

/// Every statement, in the order they run (writes change what later
/// statements read, on both sides alike).
pub fn steps() -> Vec<Step> {
    let mut s = Vec::new();
    let modules: [(&str, Push); 11] = [
        ("reads", super::reads::push),
        ("writes", super::writes::push),
        ("prepared", super::prepared::push),
        ("session", super::session::push),
        ("spellings", super::spellings::push),
        ("second_pass", super::second_pass::push),
        ("third_pass", super::third_pass::push),
        ("fourth_pass", super::fourth_pass::push),
        ("fifth_pass", super::fifth_pass::push),
        ("sixth_pass", super::sixth_pass::push),
        ("seventh_pass", super::seventh_pass::push),
    ];
    // ADV_ONLY=<module> runs one module alone (while working on it; the
    // final comparison with EXPECTED_DIFFERENCES is then skipped).
    let only = std::env::var("ADV_ONLY").ok();
    for (name, push) in modules {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        if name == "second_pass" || name == "sixth_pass" || name == "seventh_pass" {
            s.push(step("", None, How::Reset));
        }
        let before = s.len();
        push(&mut s);
        let statements = s[before..]
            .iter()
            .filter(|s| !matches!(s.how, How::Reset | How::FoundRows))
            .count();
        println!("{name}: {statements} statements");
    }
    s
}

/// Statements hscale refuses with 1235 where one server answers, each
/// listed in docs/src/refusals.md (the line that lists it in the
/// comment).
pub const DOCUMENTED_REFUSALS: &[&str] = &[
    // "prepared statements that need a merge across partitions when ...
    // [their] string parameter ... is not UTF-8"
    "SELECT id FROM ty WHERE vb = ? ORDER BY id -- prepared [Bytes(\"\u{fffd}\")]",
    // "writes whose rows would move between partitions (an UPDATE of the
    // partition column to another partition's value)"
    "UPDATE od SET k = 2 WHERE oid = 7",
    // "any write over several partitions while the session holds user
    // variables"
    "UPDATE od SET qty = qty WHERE oid = 99999",
    // "UPDATE or DELETE over several partitions with a subquery (also one
    // that reads no table ... or a recursive CTE's rows)"
    "UPDATE od SET qty = qty + 10 WHERE oid IN (WITH RECURSIVE r(n) AS (SELECT 7001 UNION ALL SELECT n + 3 FROM r WHERE n < 7007) SELECT n FROM r)",
    "UPDATE od SET qty = qty + 1 WHERE oid IN (SELECT 7001 UNION SELECT 7004)",
    "UPDATE od SET qty = qty + 1 WHERE k = 1 AND oid IN (WITH RECURSIVE r(n) AS (SELECT 7001 UNION ALL SELECT n + 4 FROM r WHERE n < 7009) SELECT n FROM r)",
    "DELETE FROM od WHERE oid IN (WITH RECURSIVE r(n) AS (SELECT 7002 UNION ALL SELECT n + 2 FROM r WHERE n < 7008) SELECT n FROM r)",
    // "`INSERT ... SELECT ... ON DUPLICATE KEY UPDATE` over partitioned
    // tables whose UPDATE reads a column only the SELECT's tables have"
    "INSERT INTO od (oid, k, qty) SELECT s.oid, s.k, 1 FROM od AS s WHERE s.oid <= 5 ON DUPLICATE KEY UPDATE qty = s.qty + 100",
    "INSERT INTO od (oid, k, qty) SELECT gid, gid % 4, 1 FROM gl ON DUPLICATE KEY UPDATE qty = qty + gl.gid",
    "INSERT INTO od (oid, k, qty) SELECT gid, gid % 4, 1 FROM gl ON DUPLICATE KEY UPDATE qty = qty + gid",
    "INSERT INTO od (oid, k, qty) SELECT o2.oid, o2.k, 1 FROM od o2 JOIN gl ON gl.gid = o2.k WHERE o2.oid < 9 ON DUPLICATE KEY UPDATE qty = od.qty + gl.gid",
];

/// Statements whose answer through hscale differs from one server's
/// (and writes after which the tables differ, as "after <statement>"),
/// described in docs/adversarial-findings.md. Exactly these differ.
pub const EXPECTED_DIFFERENCES: &[&str] = &[
    "UPDATE IGNORE od SET price = 1000000 WHERE k IN (2, 3) AND oid < 20",
    "INSERT INTO od VALUES (?, ?, ?, ?, ?) -- prepared [Int(701), Double(2.0), Int(3), Bytes(\"2.25\"), Bytes(\"p701\")]",
    "after INSERT INTO od VALUES (?, ?, ?, ?, ?) -- prepared [Int(701), Double(2.0), Int(3), Bytes(\"2.25\"), Bytes(\"p701\")]",
    "SELECT id FROM ty WHERE vc = 1 ORDER BY id",
    "INSERT INTO od VALUES (950, 1, 1, 1, 'r1'), (951, 2, 2, 2, 'r2'), (952, 0, 3, 3, 'r3') RETURNING oid, k, qty * 2",
    "after INSERT INTO od VALUES (950, 1, 1, 1, 'r1'), (951, 2, 2, 2, 'r2'), (952, 0, 3, 3, 'r3') RETURNING oid, k, qty * 2",
    "INSERT IGNORE INTO od VALUES (950, 1, 1, 1, 'r1'), (953, 3, 4, 4, 'r4') RETURNING oid",
    "after INSERT IGNORE INTO od VALUES (950, 1, 1, 1, 'r1'), (953, 3, 4, 4, 'r4') RETURNING oid",
    // F1: refused with 1235 before any part runs (refusals.md), so the
    // rows one server deleted are still there.
    "after DELETE FROM od WHERE qty = ? RETURNING oid -- prepared [Int(0)]",
    "SHOW CREATE TABLE ev",
    "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ev'",
    "DELETE FROM od WHERE qty = (SELECT MAX(gid) FROM gl) AND k = 3",
    "INSERT INTO ev (at, kind) VALUES ('2024-01-02', 'new')",
    "INSERT INTO od VALUES (7, 5, 1, 1, 'n7') ON DUPLICATE KEY UPDATE k = 3",
    "UPDATE od SET qty = (SELECT COUNT(*) FROM gl) WHERE oid = 8",
    "UPDATE od SET qty = qty + 1 WHERE k IN (SELECT gid FROM gl WHERE name LIKE 'n%')",
    "after DELETE FROM od WHERE qty = (SELECT MAX(gid) FROM gl) AND k = 3",
    "after INSERT INTO ev (at, kind) VALUES ('2024-01-02', 'new')",
    "after INSERT INTO od VALUES (7, 5, 1, 1, 'n7') ON DUPLICATE KEY UPDATE k = 3",
    "after UPDATE od SET qty = (SELECT COUNT(*) FROM gl) WHERE oid = 8",
    "after UPDATE od SET qty = qty + 1 WHERE k IN (SELECT gid FROM gl WHERE name LIKE 'n%')",
    "DELETE FROM gl WHERE gid = 5 RETURNING gid, name",
    "DELETE FROM od WHERE qty = ? RETURNING oid -- prepared [Int(0)]",
    "after DELETE FROM gl WHERE gid = 5 RETURNING gid, name",
    "INSERT INTO od (oid, k, qty) VALUES (5004, 1, 1), (5005, 2, (SELECT COUNT(*) FROM gl))",
    "after INSERT INTO od (oid, k, qty) VALUES (5004, 1, 1), (5005, 2, (SELECT COUNT(*) FROM gl))",
    "INSERT INTO sk (name, v) SELECT UPPER(name), v FROM sk",
    "INSERT INTO od (oid, k, qty) VALUES (1, 0, 7), (2, 1, 3) ON DUPLICATE KEY UPDATE qty = qty",
    "INSERT INTO od (oid, k, qty, price, note) VALUES (3, 2, 10, 39.21, 'n3'), (9000, 1, 1, 1, 'fr') ON DUPLICATE KEY UPDATE qty = VALUES(qty)",
    // The sixth pass (F11 in docs/adversarial-findings.md).
    "SELECT SUM(de * ?), AVG(price + ?) FROM ty JOIN od ON od.oid = ty.id -- prepared [Bytes(\"0.5\"), Double(0.25)]",
    "SELECT k, SUM(bu) + ? FROM ty GROUP BY k ORDER BY k -- prepared [UInt(18446744073709551615)]",
    "WITH RECURSIVE r(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM r WHERE n < ?) SELECT n, (SELECT MAX(qty) FROM od WHERE oid = n) AS m FROM r ORDER BY n -- prepared [Int(3), Int(7)]",
    "UPDATE od SET qty = qty * 300000000 WHERE qty > 6",
    // The seventh pass (F12): the "at row N" of warnings.
    "INSERT INTO od (oid, k, qty, price, note) SELECT id + 8000, k, 1, de, CONCAT('c', id) FROM ty WHERE de IS NOT NULL AND ABS(de) < 1000000 ORDER BY id LIMIT 5",
    "UPDATE od SET price = price * 1000000 WHERE oid BETWEEN 8101 AND 8106",
];

/// Statements that differ in some runs only ("Intermittent" in
/// docs/adversarial-findings.md): reported, not asserted either way.
pub const INTERMITTENT: &[&str] =
    &["SELECT SUM(qty) FROM od WHERE k = ? -- prepared [Bytes(\"1abc\")]"];
