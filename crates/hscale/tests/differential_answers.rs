#![allow(clippy::unwrap_used)]
//! The exact reproductions of issue 29 ("Answer like one server, round
//! three"), each a test of its own, and the class around each: the same
//! shape with other types, functions, merges and statement forms.
//!
//! Every test has its own pair of databases (`<name>_p`, partitioned
//! through hscale over four backends, and `<name>_r`, plain: one database
//! of one server, reached through hscale too, which passes it through as
//! it names no partitioned table) holding the same rows. Each statement
//! runs on both and every result (column names, rows, affected rows, info,
//! warnings, or the error code; column types and flags where the test
//! says so) must be the same; after a write every table's rows must be
//! the same.

mod common;

use common::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

/// One result of a statement; or the error that ended it.
#[derive(Debug, Clone, PartialEq)]
enum Res {
    Set {
        columns: Vec<String>,
        /// Each column's type and flags, compared only by
        /// [`Pair::check_defs`].
        defs: Vec<(u8, u16)>,
        rows: Vec<Vec<Option<String>>>,
        affected: u64,
        info: String,
        warnings: u16,
    },
    Error(u16, String),
}

fn cell(v: &Value) -> Option<String> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        other => Some(other.as_sql(true)),
    }
}

/// Every result of `sql`, up to the first error.
async fn answer(c: &mut Conn, sql: &str) -> Vec<Res> {
    let error = |e: mysql_async::Error| match e {
        mysql_async::Error::Server(s) => Res::Error(s.code, s.message),
        other => panic!("{sql}: expected a server error, got {other:?}"),
    };
    let mut out = Vec::new();
    let mut res = match c.query_iter(sql).await {
        Ok(r) => r,
        Err(e) => return vec![error(e)],
    };
    loop {
        let cols = res.columns();
        let columns: Vec<String> = cols
            .as_ref()
            .map(|cs| cs.iter().map(|c| c.name_str().into_owned()).collect())
            .unwrap_or_default();
        let defs = cols
            .as_ref()
            .map(|cs| {
                cs.iter()
                    .map(|c| (c.column_type() as u8, c.flags().bits()))
                    .collect()
            })
            .unwrap_or_default();
        let rows: Vec<Row> = match res.collect().await {
            Ok(r) => r,
            Err(e) => {
                out.push(error(e));
                break;
            }
        };
        let rows = rows
            .iter()
            .map(|r| (0..r.len()).map(|i| cell(r.as_ref(i).unwrap())).collect())
            .collect();
        out.push(Res::Set {
            columns,
            defs,
            rows,
            affected: res.affected_rows(),
            info: res.info().into_owned(),
            warnings: res.warnings(),
        });
        if res.is_empty() {
            break;
        }
    }
    drop(res);
    out
}

/// How two answers are compared.
#[derive(Clone, Copy, PartialEq)]
enum Compare {
    /// Rows in order (ORDER BY fixes it, or one row).
    Ordered,
    /// Rows as multisets.
    Unordered,
    /// In order, and column types and flags too.
    Defs,
}

fn normalized(v: Vec<Res>, how: Compare) -> Vec<Res> {
    v.into_iter()
        .map(|r| match r {
            Res::Set {
                columns,
                mut defs,
                mut rows,
                affected,
                info,
                warnings,
            } => {
                if how != Compare::Defs {
                    defs.clear();
                }
                if how == Compare::Unordered {
                    rows.sort();
                }
                Res::Set {
                    columns,
                    defs,
                    rows,
                    affected,
                    info,
                    warnings,
                }
            }
            // Messages name tables: hscale's and one server's differ in
            // the database name only, so the code is what is compared.
            Res::Error(code, _) => Res::Error(code, String::new()),
        })
        .collect()
}

fn shown(v: &[Res]) -> String {
    v.iter()
        .map(|r| match r {
            Res::Set {
                columns,
                defs,
                rows,
                affected,
                info,
                warnings,
            } => format!(
                "{columns:?} {defs:?} {} rows {:?} affected {affected} info {info:?} warnings {warnings}",
                rows.len(),
                &rows[..rows.len().min(6)]
            ),
            Res::Error(c, m) => format!("error {c} {m}"),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn shown_messages(v: &[Res]) -> String {
    v.iter()
        .map(|r| match r {
            Res::Error(c, m) => format!("error {c} {m}"),
            other => shown(std::slice::from_ref(other)),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// One test's two databases and what differed.
struct Pair {
    p: Conn,
    r: Conn,
    part: String,
    tables: Vec<String>,
    identical: usize,
    wrong: Vec<String>,
}

#[allow(dead_code)] // the comparisons the next items use
impl Pair {
    /// Fresh databases `<name>_p` (with `partitioning` run in it) and
    /// `<name>_r`, both with `schema` and `data`.
    async fn new(name: &str, schema: &[&str], partitioning: &[&str], data: &[&str]) -> Pair {
        cluster(4);
        let part = format!("{name}_p");
        let reference = format!("{name}_r");
        let mut setup = proxy_conn(None).await;
        for db in [&part, &reference] {
            setup
                .query_drop(format!("DROP DATABASE IF EXISTS {db}"))
                .await
                .unwrap();
            setup
                .query_drop(format!("CREATE DATABASE {db}"))
                .await
                .unwrap();
            setup.query_drop(format!("USE {db}")).await.unwrap();
            for s in schema {
                setup
                    .query_drop(*s)
                    .await
                    .unwrap_or_else(|e| panic!("{s}: {e}"));
            }
            if *db == part {
                for s in partitioning {
                    setup
                        .query_drop(*s)
                        .await
                        .unwrap_or_else(|e| panic!("{s}: {e}"));
                }
            }
            for s in data {
                setup
                    .query_drop(*s)
                    .await
                    .unwrap_or_else(|e| panic!("{s}: {e}"));
            }
        }
        setup.disconnect().await.unwrap();
        let tables = schema
            .iter()
            .filter_map(|s| {
                let rest = s.strip_prefix("CREATE TABLE ")?;
                Some(rest.split([' ', '(']).next()?.to_string())
            })
            .collect();
        Pair {
            p: proxy_conn(Some(&part)).await,
            r: proxy_conn(Some(&reference)).await,
            part,
            tables,
            identical: 0,
            wrong: Vec::new(),
        }
    }

    /// Run `sql` on both sides and compare; `true` when the same.
    async fn compare(&mut self, sql: &str, how: Compare) -> bool {
        let want = normalized(answer(&mut self.r, sql).await, how);
        let got = normalized(answer(&mut self.p, sql).await, how);
        if got == want {
            self.identical += 1;
            return true;
        }
        self.wrong.push(format!(
            "{sql}\n  hscale:    {}\n  reference: {}",
            shown(&got),
            shown(&want)
        ));
        false
    }

    /// Rows in order.
    async fn check(&mut self, sql: &str) -> bool {
        self.compare(sql, Compare::Ordered).await
    }

    /// Rows as multisets.
    async fn check_any_order(&mut self, sql: &str) -> bool {
        self.compare(sql, Compare::Unordered).await
    }

    /// Rows in order, column types and flags too.
    async fn check_defs(&mut self, sql: &str) -> bool {
        self.compare(sql, Compare::Defs).await
    }

    /// A write: its result, then every table's rows.
    async fn check_write(&mut self, sql: &str) -> bool {
        let same = self.check(sql).await;
        let mut contents = true;
        for t in self.tables.clone() {
            let q = format!("SELECT * FROM {t}");
            let want = normalized(answer(&mut self.r, &q).await, Compare::Unordered);
            let got = normalized(answer(&mut self.p, &q).await, Compare::Unordered);
            if got != want {
                self.wrong.push(format!(
                    "after {sql}: {t} differs\n  hscale:    {}\n  reference: {}",
                    shown(&got),
                    shown(&want)
                ));
                contents = false;
            }
        }
        same && contents
    }

    /// Run `sql` on both sides and compare, error messages too (each
    /// side's database name written as `DB`).
    async fn compare_messages(&mut self, sql: &str) -> bool {
        let part = self.part.clone();
        let reference = format!("{}_r", part.trim_end_matches("_p"));
        let fix = |v: Vec<Res>, db: &str| -> Vec<Res> {
            v.into_iter()
                .map(|r| match r {
                    Res::Error(c, m) => Res::Error(c, m.replace(db, "DB")),
                    other => other,
                })
                .collect()
        };
        let want = fix(answer(&mut self.r, sql).await, &reference);
        let got = fix(answer(&mut self.p, sql).await, &part);
        if got == want {
            self.identical += 1;
            return true;
        }
        self.wrong.push(format!(
            "{sql}\n  hscale:    {}\n  reference: {}",
            shown_messages(&got),
            shown_messages(&want)
        ));
        false
    }

    /// Run `sql` on both sides, expecting success (set-up within a test).
    async fn both(&mut self, sql: &str) {
        for c in [&mut self.p, &mut self.r] {
            c.query_drop(sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }

    /// Fail on any difference; at least `min_identical` statements
    /// compared.
    fn report(&self, class: &str, min_identical: usize) {
        println!(
            "{class} ({}): {} identical, {} wrong",
            self.part,
            self.identical,
            self.wrong.len()
        );
        for w in &self.wrong {
            println!("WRONG: {w}");
        }
        assert!(self.wrong.is_empty(), "{} wrong answers", self.wrong.len());
        assert!(
            self.identical >= min_identical,
            "only {} statements compared",
            self.identical
        );
    }
}

/// `pl` of the issue: MOD(2) on id over two backends, the rows.
const PL_SCHEMA: &[&str] = &[
    "CREATE TABLE pl (id INT PRIMARY KEY, plan ENUM('team','pro','free'), u BIGINT UNSIGNED, KEY(plan))",
];
const PL_PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('pl', 'id', 'pl_default', 'shard0', 'MOD(2)')",
    "HSCALE ADD_PARTITION('pl', 'p1', '1', 'shard1')",
];
const PL_DATA: &[&str] = &[
    "INSERT INTO pl VALUES (1,'team',18446744073709551615), (2,'free',1), (3,'pro',5), (4,NULL,2)",
];

async fn pl(name: &str) -> Pair {
    Pair::new(name, PL_SCHEMA, PL_PARTITIONING, PL_DATA).await
}

// ---- 3. Executable comments steer pruning -------------------------------

/// Issue 29, item 3: a comment for version 99.99.99 is skipped by MariaDB
/// 10.11, so the row with id 1 is found.
#[tokio::test]
async fn executable_comment_above_the_server_version_does_not_prune() {
    let mut h = pl("ec_issue").await;
    h.check("SELECT id, plan FROM pl WHERE id = 1 /*M!999999 AND id = 2 */")
        .await;
    h.report("version comments", 1);
}

/// The class: `/*!` and `/*M!` comments with versions below and above the
/// server's, MySQL 5.7's range (skipped by MariaDB unless marked `M`),
/// comments without a version, one nested comment inside a skipped one,
/// in reads, writes and the select list.
#[tokio::test]
async fn executable_comments_are_code_only_where_the_server_runs_them() {
    let mut h = pl("ec_class").await;
    for sql in [
        "SELECT id, plan FROM pl WHERE id = 1 /*!999999 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*M!999999 AND id = 2 */ ORDER BY id",
        "SELECT id, plan FROM pl WHERE id = 1 /*!100000 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*M!100000 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*!40000 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*!50700 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*!80023 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*M!50700 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*! AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*M! AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*!999999 AND id = 2 /* nested */ */",
        "SELECT id, plan FROM pl WHERE id = 1 /*!99999 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 3 /*!999999 OR id = 2 */ ORDER BY id",
        "SELECT id, plan FROM pl WHERE id = 3 /*!100000 OR id = 2 */ ORDER BY id",
        "SELECT id, plan FROM pl WHERE /*!999999 id = 2 AND */ id = 1",
        "SELECT id, plan FROM pl WHERE id IN (1 /*!999999 , 2 */) ORDER BY id",
        "SELECT id, plan FROM pl WHERE id IN (1 /*!100000 , 2 */) ORDER BY id",
        "SELECT /*!999999 plan, */ id FROM pl WHERE id = 3",
        "SELECT COUNT(*) FROM pl WHERE id = 1 /*!999999 AND id = 2 */",
        "SELECT id FROM pl WHERE id = 1 /*!999999 AND id = 2 */ UNION ALL SELECT id FROM pl WHERE id = 4 /*!999999 AND id = 3 */ ORDER BY id",
        "SELECT id, plan FROM pl WHERE id = 1 /*M!999999 AND id = 2 */ /*!40000 AND u > 0 */",
    ] {
        h.check(sql).await;
    }
    for sql in [
        "UPDATE pl SET u = 7 WHERE id = 1 /*!999999 OR id = 2 */",
        "UPDATE pl SET u = u + 1 WHERE id = 3 /*M!100000 OR id = 2 */",
        "DELETE FROM pl WHERE id = 4 /*!999999 OR id = 3 */",
        "INSERT INTO pl VALUES (5, 'pro', 3) /*!999999 , (6, 'pro', 3) */",
        "INSERT INTO pl VALUES (7, 'pro', 3) /*!100000 , (8, 'free', 4) */",
    ] {
        h.check_write(sql).await;
    }
    h.report("version comments", 26);
}

// ---- 7. INSERT into a table with a column named `value` -----------------

const EVENTS_SCHEMA: &[&str] = &[
    "CREATE TABLE events (id BIGINT, happened DATETIME NOT NULL, kind VARCHAR(16), value INT, PRIMARY KEY (id, happened))",
];
const EVENTS_PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('events', 'happened', 'events_default', 'shard0', 'DATE(\"%Y-%m\")')",
    "HSCALE ADD_PARTITION('events', 'e2311', '2023-11', 'shard1')",
    "HSCALE ADD_PARTITION('events', 'e2312', '2023-12', 'shard2')",
    "HSCALE ADD_PARTITION('events', 'e2401', '2024-01', 'shard3')",
    "HSCALE ADD_PARTITION('events', 'e2402', '2024-02', 'shard1')",
    "HSCALE ADD_PARTITION('events', 'e2403', '2024-03', 'shard2')",
    "HSCALE ADD_PARTITION('events', 'e2404', '2024-04', 'shard3')",
];

/// Issue 29, item 7: one row for a partition, one for the default, in a
/// table whose last column is named `value` (the keyword of `INSERT ...
/// VALUE (...)`), set up with a double-quoted DATE pattern.
#[tokio::test]
async fn insert_over_partitions_into_a_column_named_value() {
    let mut h = Pair::new("ev_issue", EVENTS_SCHEMA, EVENTS_PARTITIONING, &[]).await;
    h.check_write(
        "INSERT INTO events (id, happened, kind, value) VALUES (90001, '2024-02-10 10:10:10', 'buy', 5), (90002, '2025-12-01 00:00:00', 'view', 6)",
    )
    .await;
    h.report("INSERT with a column named value", 1);
}

/// The class: column lists naming `value` / `values` / `VALUE` where the
/// INSERT splits over partitions, in every INSERT form that splits.
#[tokio::test]
async fn inserts_over_partitions_with_keyword_named_columns() {
    let schema = &[
        EVENTS_SCHEMA[0],
        "CREATE TABLE kv (`values` INT, value INT, happened DATE NOT NULL, PRIMARY KEY (happened, value))",
    ];
    let partitioning: Vec<&str> = EVENTS_PARTITIONING
        .iter()
        .copied()
        .chain([
            "HSCALE SETUP_TABLE('kv', 'happened', 'kv_default', 'shard0', \"DATE('%Y-%m')\")",
            "HSCALE ADD_PARTITION('kv', 'k1', '2024-01', 'shard1')",
            "HSCALE ADD_PARTITION('kv', 'k2', '2024-02', 'shard2')",
        ])
        .collect();
    let mut h = Pair::new("ev_class", schema, &partitioning, &[]).await;
    for sql in [
        "INSERT INTO events (id, happened, kind, value) VALUES (1, '2023-11-10 10:10:10', 'buy', 5), (2, '2023-12-01 00:00:00', 'view', 6), (3, '2024-04-30 23:59:59', 'buy', 7)",
        "INSERT INTO events (id, happened, kind, value) VALUE (4, '2024-01-10 10:10:10', 'buy', 5), (5, '2026-01-01 00:00:00', 'view', 6)",
        "INSERT INTO events (value, id, kind, happened) VALUES (8, 6, 'x', '2024-03-03'), (9, 7, 'y', '2022-03-03')",
        "INSERT INTO events (`value`, id, kind, happened) VALUES (8, 16, 'x', '2024-03-03'), (9, 17, 'y', '2023-12-03')",
        "INSERT IGNORE INTO events (id, happened, kind, value) VALUES (1, '2023-11-10 10:10:10', 'dup', 0), (8, '2024-02-02', 'new', 1)",
        "REPLACE INTO events (id, happened, kind, value) VALUES (2, '2023-12-01 00:00:00', 'again', 60), (9, '2024-04-01', 'new', 2)",
        "INSERT INTO events (id, happened, kind, value) VALUES (3, '2024-04-30 23:59:59', 'buy', 1), (10, '2024-03-01', 'z', 2) ON DUPLICATE KEY UPDATE value = value + VALUES(value)",
        "INSERT INTO events (id, happened, kind, value) VALUES (3, '2024-04-30 23:59:59', 'buy', 1), (11, '2023-11-01', 'z', 2) ON DUPLICATE KEY UPDATE kind = VALUE(kind)",
        "INSERT INTO events (id, happened, kind, value) VALUES (12, '2024-02-10', 'a', 1), (13, '2024-03-10', 'b', NULL), (14, '2030-01-01', 'c', 3), (15, '2023-11-11', 'd', 4)",
        "INSERT INTO kv (`values`, value, happened) VALUES (1, 1, '2024-01-05'), (2, 2, '2024-02-05'), (3, 3, '2024-05-05')",
        "INSERT INTO kv (value, `values`, happened) VALUES (4, 40, '2024-01-06'), (5, 50, '2023-02-05')",
        "INSERT INTO kv VALUES (6, 6, '2024-01-07'), (7, 7, '2024-02-07')",
        "INSERT INTO kv (happened, value) VALUES ('2024-01-08', 8), ('2024-02-08', 9) ON DUPLICATE KEY UPDATE `values` = value",
        "UPDATE events SET value = value * 2 WHERE happened >= '2024-01-01'",
        "UPDATE kv SET `values` = value + 1 WHERE value > 2",
        "DELETE FROM events WHERE value = 6",
    ] {
        h.check_write(sql).await;
    }
    for sql in [
        "SELECT id, happened, kind, value FROM events ORDER BY id",
        "SELECT kind, SUM(value) AS value FROM events GROUP BY kind ORDER BY value, kind",
        "SELECT value, `values` FROM kv ORDER BY value",
    ] {
        h.check(sql).await;
    }
    h.report("INSERTs with keyword-named columns", 19);
}

// ---- 2. Integer overflow in HAVING over a merge --------------------------

/// Issue 29, item 2: `m + 1` of a BIGINT UNSIGNED maximum is 1690 on one
/// server.
#[tokio::test]
async fn having_overflow_of_an_unsigned_maximum_is_an_error() {
    let mut h = pl("hv_issue").await;
    h.check("SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m + 1 > 0")
        .await;
    h.report("HAVING overflow", 1);
}

/// Issue 29, item 2: `m - 1` of an UNSIGNED minimum of 0 is 1690 too.
#[tokio::test]
async fn having_underflow_of_an_unsigned_minimum_is_an_error() {
    let mut h = pl("hv_issue_min").await;
    h.both("INSERT INTO pl VALUES (6, 'pro', 0)").await;
    h.check("SELECT id % 2 AS g, MIN(u) AS m FROM pl GROUP BY g HAVING m - 1 < 100")
        .await;
    h.report("HAVING overflow", 1);
}

/// The class: integer arithmetic in HAVING over merged groups follows
/// the server's BIGINT (signed or UNSIGNED) rules: +, -, * and unary
/// minus, over MAX / MIN / COUNT of signed and unsigned columns, hidden
/// aggregates, decimals (no overflow), NO_UNSIGNED_SUBTRACTION, and
/// conditions that stop before the overflowing operand.
#[tokio::test]
async fn having_integer_arithmetic_is_the_servers() {
    let schema = &[
        PL_SCHEMA[0],
        "CREATE TABLE nums (id INT PRIMARY KEY, b BIGINT, i INT, ui INT UNSIGNED, d DECIMAL(20,2))",
    ];
    let partitioning: Vec<&str> = PL_PARTITIONING
        .iter()
        .copied()
        .chain([
            "HSCALE SETUP_TABLE('nums', 'id', 'nums_default', 'shard0', 'MOD(4)')",
            "HSCALE ADD_PARTITION('nums', 'n1', '1', 'shard1')",
            "HSCALE ADD_PARTITION('nums', 'n2', '2', 'shard2')",
            "HSCALE ADD_PARTITION('nums', 'n3', '3', 'shard3')",
        ])
        .collect();
    let data = &[
        PL_DATA[0],
        "INSERT INTO nums VALUES (1, 9223372036854775807, 5, 3, 1.50), (2, -9223372036854775808, -7, 0, 2.25), (3, 10, 2147483647, 4294967295, -3.00), (4, -10, -2147483648, 9, NULL), (5, 0, 0, 1, 0.01), (6, NULL, NULL, NULL, 99999999999999999.99)",
    ];
    let mut h = Pair::new("hv_class", schema, &partitioning, data).await;
    for sql in [
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m + 1 > 0",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m + 0 > 0 ORDER BY g",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m * 2 > 0",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING -m < 0",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m * -1 < 0",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m + 1.5 > 0 ORDER BY g",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m - 18446744073709551615 = 0",
        "SELECT id % 2 AS g FROM pl GROUP BY g HAVING MAX(u) + 1 > 0",
        "SELECT id % 2 AS g, COUNT(*) AS c FROM pl GROUP BY g HAVING MIN(u) - 2 >= 0 ORDER BY g",
        "SELECT id % 2 AS g, MIN(u) AS m FROM pl GROUP BY g HAVING m - 1 >= 0 ORDER BY g",
        "SELECT id % 2 AS g, MIN(u) AS m FROM pl GROUP BY g HAVING m < 3 AND m - 2 < 0 ORDER BY g",
        "SELECT id % 2 AS g, COUNT(*) AS c FROM pl GROUP BY g HAVING c - 5 < 0 ORDER BY g",
        "SELECT id % 2 AS g, COUNT(*) AS c FROM pl GROUP BY g HAVING c * 9223372036854775807 > 0",
        "SELECT id % 2 AS g, MAX(b) AS m FROM nums GROUP BY g HAVING m + 1 > 0",
        "SELECT id % 2 AS g, MAX(b) AS m FROM nums GROUP BY g HAVING m - 1 > 0 ORDER BY g",
        "SELECT id % 2 AS g, MIN(b) AS m FROM nums GROUP BY g HAVING m - 1 < 0",
        "SELECT id % 2 AS g, MIN(b) AS m FROM nums GROUP BY g HAVING m + 1 < 0 ORDER BY g",
        "SELECT id % 2 AS g, MIN(b) AS m FROM nums GROUP BY g HAVING -m > 0",
        "SELECT id % 2 AS g, MAX(ui) AS m FROM nums GROUP BY g HAVING m - 5 > 0",
        "SELECT id % 2 AS g, MIN(ui) AS m FROM nums GROUP BY g HAVING m - 1 < 10",
        "SELECT id % 2 AS g, MAX(i) AS m FROM nums GROUP BY g HAVING m * m > 0 ORDER BY g",
        "SELECT id % 2 AS g, MAX(i) AS m FROM nums GROUP BY g HAVING m * m * m * 10 > 0",
        "SELECT id % 2 AS g, SUM(i) AS s FROM nums GROUP BY g HAVING s * 1000000000000 > 0 ORDER BY g",
        "SELECT id % 2 AS g, SUM(b) AS s FROM nums GROUP BY g HAVING s + 1 > 0 ORDER BY g",
        "SELECT id % 2 AS g, MAX(d) AS m FROM nums GROUP BY g HAVING m * 100 > 0 ORDER BY g",
        "SELECT id % 3 AS g, MAX(b) AS m FROM nums GROUP BY g HAVING m IS NULL OR m + 1 > 0",
        "SELECT id % 3 AS g, MAX(ui) AS m FROM nums GROUP BY g HAVING m < 4 AND m - 3 < 0",
    ] {
        h.check(sql).await;
    }
    h.both("SET sql_mode = 'STRICT_TRANS_TABLES,NO_UNSIGNED_SUBTRACTION'")
        .await;
    for sql in [
        "SELECT id % 2 AS g, MIN(u) AS m FROM pl GROUP BY g HAVING m - 5 < 100 ORDER BY g",
        "SELECT id % 2 AS g, MAX(ui) AS m FROM nums GROUP BY g HAVING m - 10 < 0 ORDER BY g",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m - 1 > 0",
    ] {
        h.check(sql).await;
    }
    h.report("HAVING integer arithmetic", 30);
}

// ---- 4. ORDER BY an alias inside an expression --------------------------

/// `acct` of the issue: MOD(4) on uid over four backends.
const ACCT_SCHEMA: &[&str] = &[
    "CREATE TABLE acct (uid INT PRIMARY KEY, handle VARCHAR(20), flags INT, balance DECIMAL(10,2))",
];
const ACCT_PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('acct', 'uid', 'acct_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('acct', 'a1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('acct', 'a2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('acct', 'a3', '3', 'shard3')",
];

fn acct_data() -> Vec<String> {
    let rows: Vec<String> = (1001..=1040)
        .map(|uid| {
            let balance = if uid % 9 == 0 {
                "NULL".to_string()
            } else {
                format!("{}.{:02}", (uid * 37) % 200 - 60, (uid * 13) % 100)
            };
            format!("({uid}, 'h{}', {}, {balance})", (uid * 7) % 13, uid % 5)
        })
        .collect();
    vec![format!("INSERT INTO acct VALUES {}", rows.join(", "))]
}

async fn acct(name: &str) -> Pair {
    let data = acct_data();
    let data: Vec<&str> = data.iter().map(String::as_str).collect();
    Pair::new(name, ACCT_SCHEMA, ACCT_PARTITIONING, &data).await
}

/// Issue 29, item 4.
#[tokio::test]
async fn order_by_an_alias_inside_an_expression() {
    let mut h = acct("oa_issue").await;
    h.check("SELECT uid, balance AS b FROM acct ORDER BY b + 1, uid LIMIT 5")
        .await;
    h.report("ORDER BY alias expressions", 1);
}

/// The class: aliases inside ORDER BY expressions (arithmetic, functions,
/// several aliases, quoted ones, with OFFSET, DESC, WHERE, DISTINCT); a
/// table column of the alias's name, which wins inside an expression;
/// names that are neither (1054, as on one server).
#[tokio::test]
async fn order_by_aliases_inside_expressions() {
    let mut h = acct("oa_class").await;
    for sql in [
        "SELECT uid, balance AS b FROM acct ORDER BY b + 1, uid LIMIT 5",
        "SELECT uid, balance AS b FROM acct ORDER BY -b, uid",
        "SELECT uid, balance AS b FROM acct ORDER BY b * 2 DESC, uid LIMIT 7",
        "SELECT uid, balance AS b FROM acct ORDER BY ABS(b), uid LIMIT 9",
        "SELECT uid, balance AS b FROM acct ORDER BY COALESCE(b, 0), uid LIMIT 9",
        "SELECT uid, handle AS h FROM acct ORDER BY CONCAT(h, 'x') DESC, uid LIMIT 6",
        "SELECT uid, balance AS b, flags AS f FROM acct ORDER BY b + f, uid LIMIT 8",
        "SELECT uid, balance AS `b b` FROM acct ORDER BY `b b` + 1, uid LIMIT 3",
        "SELECT uid, balance + flags AS t FROM acct ORDER BY t % 7, uid",
        "SELECT uid AS id, balance AS b FROM acct ORDER BY id % 3, b, id",
        "SELECT uid, balance AS b FROM acct ORDER BY IF(b > 5, 0, 1), uid LIMIT 10",
        "SELECT uid, balance AS b FROM acct ORDER BY b + 1, uid LIMIT 2, 3",
        "SELECT uid, balance AS b FROM acct WHERE flags = 3 ORDER BY b - 1 DESC, uid LIMIT 4",
        "SELECT uid, balance AS B FROM acct ORDER BY b / 2, uid LIMIT 4",
        "SELECT uid, flags AS balance FROM acct ORDER BY balance + 0, uid LIMIT 6",
        "SELECT uid, flags AS handle FROM acct ORDER BY CONCAT(handle, ''), uid LIMIT 6",
        "SELECT uid, balance AS b FROM acct ORDER BY acct.b + 1, uid",
        "SELECT uid, balance AS b FROM acct ORDER BY nope + 1, uid",
        "SELECT DISTINCT flags AS f FROM acct ORDER BY f + 1",
        "SELECT flags AS f, COUNT(*) AS c FROM acct GROUP BY flags ORDER BY c + 0, f",
        "SELECT uid, balance AS b FROM acct WHERE uid IN (1001, 1002, 1003, 1004, 1005) ORDER BY b + 1",
    ] {
        h.check(sql).await;
    }
    h.report("ORDER BY alias expressions", 21);
}

// ---- 5. Labels of scalar subqueries over shipped tables -----------------

/// `orders` MOD(8) on customer_id and `customers` MOD(8) on id, eight
/// partitions each over the four backends.
async fn shop(name: &str) -> Pair {
    let schema = &[
        "CREATE TABLE orders (id INT NOT NULL, customer_id INT NOT NULL, amount DECIMAL(10,2), PRIMARY KEY (id, customer_id))",
        "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(20))",
    ];
    let mut partitioning = vec![
        "HSCALE SETUP_TABLE('orders', 'customer_id', 'orders_default', 'shard0', 'MOD(8)')"
            .to_string(),
        "HSCALE SETUP_TABLE('customers', 'id', 'customers_default', 'shard0', 'MOD(8)')"
            .to_string(),
    ];
    for v in 1..8 {
        for t in ["orders", "customers"] {
            partitioning.push(format!(
                "HSCALE ADD_PARTITION('{t}', '{t}{v}', '{v}', 'shard{}')",
                v % 4
            ));
        }
    }
    let partitioning: Vec<&str> = partitioning.iter().map(String::as_str).collect();
    let orders: Vec<String> = (1..=60)
        .map(|id| format!("({id}, {}, {}.{:02})", id % 23, (id * 17) % 300, id % 100))
        .collect();
    let customers: Vec<String> = (0..23).map(|id| format!("({id}, 'c{}')", id % 7)).collect();
    let data = [
        format!("INSERT INTO orders VALUES {}", orders.join(", ")),
        format!("INSERT INTO customers VALUES {}", customers.join(", ")),
    ];
    let data: Vec<&str> = data.iter().map(String::as_str).collect();
    Pair::new(name, schema, &partitioning, &data).await
}

/// Issue 29, item 5.
#[tokio::test]
async fn scalar_subqueries_over_shipped_tables_keep_their_labels() {
    let mut h = shop("sl_issue").await;
    h.check("SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM customers)")
        .await;
    h.report("subquery labels", 1);
}

/// The class: select items without an alias that read partitioned
/// tables, in statements without FROM, with FROM DUAL, beside other
/// items, inside expressions, EXISTS, IN, joins, modifiers, derived
/// tables and UNION ALL: each labelled with the client's own text.
#[tokio::test]
async fn select_items_over_partitioned_tables_are_labelled_with_the_clients_text() {
    let mut h = shop("sl_class").await;
    for sql in [
        "SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM customers)",
        "SELECT (select count(*) from orders)",
        "SELECT   (SELECT  SUM(amount)   FROM orders)",
        "SELECT (SELECT COUNT(*) FROM orders) FROM DUAL",
        "SELECT (SELECT COUNT(*) FROM orders) AS n, (SELECT MAX(id) FROM customers)",
        "SELECT 1 + (SELECT COUNT(*) FROM customers), 'x'",
        "SELECT EXISTS(SELECT 1 FROM orders WHERE amount > 250)",
        "SELECT 5 IN (SELECT customer_id FROM orders)",
        "SELECT (SELECT name FROM customers WHERE id = 9)",
        "SELECT (SELECT MAX(amount) FROM orders WHERE customer_id = 3) + 1",
        "SELECT (SELECT COUNT(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.name = 'c2')",
        "SELECT SQL_NO_CACHE (SELECT COUNT(*) FROM orders)",
        "SELECT DISTINCT (SELECT MIN(name) FROM customers)",
        "SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM customers) UNION ALL SELECT 1, 2",
        "SELECT * FROM (SELECT (SELECT COUNT(*) FROM orders)) AS x",
        "SELECT (SELECT COUNT(*) FROM orders WHERE orders.customer_id = customers.id) FROM customers ORDER BY id LIMIT 5",
        "SELECT name, (SELECT COUNT(*) FROM orders) FROM customers WHERE id = 4",
    ] {
        h.check(sql).await;
    }
    h.report("subquery labels", 17);
}

// ---- Table-qualified columns in ON DUPLICATE KEY UPDATE -----------------

async fn stock(name: &str) -> Pair {
    let schema = &[
        "CREATE TABLE stock (sku INT PRIMARY KEY, qty INT, note VARCHAR(20))",
        "CREATE TABLE arch (id INT PRIMARY KEY, amount DECIMAL(10,2))",
        "CREATE TABLE src (id INT PRIMARY KEY, amount DECIMAL(10,2))",
    ];
    let partitioning = &[
        "HSCALE SETUP_TABLE('stock', 'sku', 'stock_default', 'shard0', 'MOD(2)')",
        "HSCALE ADD_PARTITION('stock', 's1', '1', 'shard1')",
        "HSCALE SETUP_TABLE('arch', 'id', 'arch_default', 'shard2', 'MOD(2)')",
        "HSCALE ADD_PARTITION('arch', 'a1', '1', 'shard3')",
    ];
    let data = &[
        "INSERT INTO stock VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, NULL), (4, 4, 'd')",
        "INSERT INTO arch VALUES (1, 10.00), (2, 20.00)",
        "INSERT INTO src VALUES (1, 1.50), (2, 2.50), (3, 3.50), (4, 4.50), (5, 5.50)",
    ];
    Pair::new(name, schema, partitioning, data).await
}

/// Issue 29 ("Other classes"): `qty = stock.qty + 1` over partitions.
#[tokio::test]
async fn on_duplicate_key_update_with_a_table_qualified_column() {
    let mut h = stock("od_issue").await;
    h.check_write(
        "INSERT INTO stock (sku, qty) VALUES (1, 5), (2, 5) ON DUPLICATE KEY UPDATE qty = stock.qty + 1",
    )
    .await;
    h.report("ON DUPLICATE KEY UPDATE t.col", 1);
}

/// Issue 29 ("Other classes"): `arch.amount` in the INSERT ... SELECT form.
#[tokio::test]
async fn insert_select_on_duplicate_key_update_with_a_table_qualified_column() {
    let mut h = stock("od_issue_sel").await;
    h.check_write(
        "INSERT INTO arch (id, amount) SELECT id, amount FROM src ON DUPLICATE KEY UPDATE amount = arch.amount + VALUES(amount)",
    )
    .await;
    h.report("ON DUPLICATE KEY UPDATE t.col", 1);
}

/// The class: qualified columns of the target in ON DUPLICATE KEY UPDATE,
/// on one partition and several, quoted, in functions, in the SET and
/// SELECT forms, on new and existing rows, and an unknown qualifier.
#[tokio::test]
async fn on_duplicate_key_update_reads_the_target_by_its_name() {
    let mut h = stock("od_class").await;
    for sql in [
        "INSERT INTO stock (sku, qty) VALUES (3, 1) ON DUPLICATE KEY UPDATE qty = stock.qty * 2",
        "INSERT INTO stock (sku, qty) VALUES (1, 1), (2, 1) ON DUPLICATE KEY UPDATE `qty` = `stock`.`qty` + 3",
        "INSERT INTO stock (sku, qty, note) VALUES (1, 1, 'x'), (4, 1, 'y') ON DUPLICATE KEY UPDATE note = CONCAT(IFNULL(stock.note, '-'), VALUES(note))",
        "INSERT INTO stock (sku, qty) VALUES (2, 9), (3, 9) ON DUPLICATE KEY UPDATE qty = IF(stock.qty > 3, stock.qty, VALUES(qty))",
        "INSERT INTO stock VALUES (1, 1, 'a'), (2, 2, 'b'), (9, 9, 'c') ON DUPLICATE KEY UPDATE note = CONCAT(stock.note, stock.sku)",
        "INSERT INTO stock (sku, qty) VALUES (5, 1), (6, 1) ON DUPLICATE KEY UPDATE qty = stock.qty + 1",
        "INSERT INTO stock (sku, qty) VALUES (5, 1), (6, 1), (7, 1) ON DUPLICATE KEY UPDATE qty = stock.qty + 1, note = 'again'",
        "INSERT INTO stock SET sku = 4, qty = 1 ON DUPLICATE KEY UPDATE qty = stock.qty + 10",
        "INSERT IGNORE INTO stock (sku, qty) VALUES (1, 0), (2, 0) ON DUPLICATE KEY UPDATE qty = stock.qty - 1",
        "INSERT INTO arch (id, amount) SELECT id, amount * 2 FROM src WHERE id < 5 ON DUPLICATE KEY UPDATE amount = arch.amount + 1",
        "INSERT INTO stock (sku, qty) VALUES (1, 1), (2, 1) ON DUPLICATE KEY UPDATE qty = nope.qty",
        "INSERT INTO stock (sku, qty) VALUES (1, 1), (2, 1) ON DUPLICATE KEY UPDATE qty = stock.nope",
    ] {
        h.check_write(sql).await;
    }
    h.report("ON DUPLICATE KEY UPDATE t.col", 12);
}

// ---- SUM / AVG of DECIMAL division --------------------------------------

/// Issue 29 ("Other classes"): a division's SUM and AVG over partitions
/// carry the server's inner digits, rounded once for the total.
#[tokio::test]
async fn sums_and_averages_of_decimal_divisions_keep_the_servers_digits() {
    let schema = &[
        "CREATE TABLE cust (cid INT PRIMARY KEY, credit DECIMAL(12,2), qty INT, rate DECIMAL(5,3), f DOUBLE)",
    ];
    let partitioning = &[
        "HSCALE SETUP_TABLE('cust', 'cid', 'cust_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('cust', 'c1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('cust', 'c2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('cust', 'c3', '3', 'shard3')",
    ];
    let rows: Vec<String> = (1..=400)
        .map(|cid| {
            format!(
                "({cid}, {}.{:02}, {}, {}.{:03}, {}.25)",
                (cid * 7919) % 250_000,
                (cid * 37) % 100,
                cid % 13,
                1 + cid % 4,
                (cid * 7) % 1000,
                cid % 9
            )
        })
        .collect();
    let data = [format!("INSERT INTO cust VALUES {}", rows.join(", "))];
    let data: Vec<&str> = data.iter().map(String::as_str).collect();
    let mut h = Pair::new("dv", schema, partitioning, &data).await;
    // The two.
    h.check("SELECT SUM(credit / 3) FROM cust").await;
    h.check("SELECT AVG(credit / 7) FROM cust").await;
    for sql in [
        "SELECT SUM(credit / 3), AVG(credit / 7), COUNT(*) FROM cust",
        "SELECT SUM(credit / 7) FROM cust WHERE cid > 100",
        "SELECT qty, SUM(credit / 3) AS s FROM cust GROUP BY qty ORDER BY qty",
        "SELECT qty % 3 AS g, AVG(credit / 11) FROM cust GROUP BY g ORDER BY g",
        "SELECT SUM(credit / rate), AVG(credit / rate) FROM cust",
        "SELECT SUM(credit / 3 / 7), AVG(credit / 3 / 7) FROM cust",
        "SELECT SUM(qty / 3), AVG(qty / 7) FROM cust",
        "SELECT SUM(credit * 1.5 / 9) FROM cust",
        "SELECT SUM(f / 3) FROM cust",
        "SELECT AVG(f / 3) FROM cust",
        "SELECT qty, SUM(credit / 3) AS s FROM cust GROUP BY qty HAVING s > 1000000 ORDER BY qty",
        "SELECT SUM(credit) / 3, SUM(credit / 3) FROM cust",
        "SELECT MAX(credit / 3), MIN(credit / 7) FROM cust",
        "SELECT SUM(DISTINCT credit / 3) FROM cust",
        "SELECT qty, SUM(credit / 3) FROM cust WHERE qty IN (1, 5, 9) GROUP BY qty ORDER BY 2 DESC",
    ] {
        h.check(sql).await;
    }
    h.report("SUM/AVG of divisions", 17);
}

// ---- 1. ENUM order in merges ---------------------------------------------

/// Issue 29, item 1: MIN and MAX of an ENUM with an index on it (one
/// server reads the index's ends: member order).
#[tokio::test]
async fn min_and_max_of_an_enum_over_partitions() {
    let mut h = pl("en_issue").await;
    h.check_defs("SELECT MIN(plan), MAX(plan) FROM pl").await;
    h.report("ENUM MIN/MAX", 1);
}

/// Issue 29, item 1: an ENUM partition key, one partition per member.
#[tokio::test]
async fn min_and_max_of_an_enum_partition_key() {
    let mut h = Pair::new(
        "en_key",
        &["CREATE TABLE ekey (color ENUM('red','green','blue'), id INT, PRIMARY KEY (color, id))"],
        &[
            "HSCALE SETUP_TABLE('ekey', 'color', 'ekey_default', 'shard0', 'NONE()')",
            "HSCALE ADD_PARTITION('ekey', 'red', 'red', 'shard1')",
            "HSCALE ADD_PARTITION('ekey', 'green', 'green', 'shard2')",
            "HSCALE ADD_PARTITION('ekey', 'blue', 'blue', 'shard3')",
        ],
        &["INSERT INTO ekey VALUES ('red', 1), ('green', 2), ('blue', 3), ('red', 4)"],
    )
    .await;
    h.check_defs("SELECT MIN(color), MAX(color) FROM ekey")
        .await;
    h.report("ENUM MIN/MAX", 1);
}

/// Issue 29, item 1: MAX of an ENUM grouped, ordered by it: its column
/// type (254 with the ENUM flag) and the rows' order.
#[tokio::test]
async fn max_of_an_enum_grouped_and_ordered() {
    let mut h = pl("en_group").await;
    h.check_defs("SELECT id % 2 AS g, MAX(plan) AS m FROM pl GROUP BY g ORDER BY m, g")
        .await;
    h.report("ENUM MIN/MAX", 1);
}

/// The class: MIN and MAX of ENUM and SET columns with and without an
/// index, with WHERE (no index read), beside other aggregates, grouped,
/// DISTINCT, ordered; and strings, which merge as before.
#[tokio::test]
async fn min_and_max_of_enums_and_sets_answer_as_one_server() {
    let schema = &[
        PL_SCHEMA[0],
        "CREATE TABLE tags (id INT PRIMARY KEY, flags SET('x','y','z'), mood ENUM('sad','ok','glad'), name VARCHAR(10), KEY (flags))",
    ];
    let partitioning: Vec<&str> = PL_PARTITIONING
        .iter()
        .copied()
        .chain([
            "HSCALE SETUP_TABLE('tags', 'id', 'tags_default', 'shard0', 'MOD(4)')",
            "HSCALE ADD_PARTITION('tags', 't1', '1', 'shard1')",
            "HSCALE ADD_PARTITION('tags', 't2', '2', 'shard2')",
            "HSCALE ADD_PARTITION('tags', 't3', '3', 'shard3')",
        ])
        .collect();
    let data = &[
        PL_DATA[0],
        "INSERT INTO tags VALUES (1, 'z', 'glad', 'b'), (2, 'x,y', 'sad', 'a'), (3, 'y', 'ok', NULL), (4, '', NULL, 'c'), (5, 'x,z', 'glad', 'aa'), (6, NULL, 'sad', 'B')",
    ];
    let mut h = Pair::new("en_class", schema, &partitioning, data).await;
    for sql in [
        "SELECT MIN(plan), MAX(plan) FROM pl",
        "SELECT MIN(plan) FROM pl",
        "SELECT MAX(plan), COUNT(*) FROM pl",
        "SELECT MIN(plan), MAX(plan) FROM pl WHERE u > 0",
        "SELECT MIN(plan), MAX(plan) FROM pl WHERE id < 10",
        "SELECT MIN(pl.plan) AS lo, MAX(pl.plan) AS hi FROM pl",
        "SELECT MIN(flags), MAX(flags) FROM tags",
        "SELECT MIN(mood), MAX(mood) FROM tags",
        "SELECT MIN(mood), MAX(name), MIN(name) FROM tags",
        "SELECT MIN(name), MAX(name) FROM tags",
        "SELECT id % 2 AS g, MIN(plan) AS m FROM pl GROUP BY g ORDER BY g",
        "SELECT id % 2 AS g, MIN(mood) AS m, MAX(flags) AS f FROM tags GROUP BY g ORDER BY m, g",
        "SELECT DISTINCT plan FROM pl ORDER BY plan",
        "SELECT plan, COUNT(*) FROM pl GROUP BY plan ORDER BY plan",
        "SELECT MAX(mood) FROM tags WHERE name IS NOT NULL",
    ] {
        h.check_defs(sql).await;
    }
    h.report("ENUM MIN/MAX", 15);
}

// ---- 8. An UPDATE that changes the partition key -------------------------

/// Issue 29, item 8: the statement on `acct` (MOD(4) on uid).
#[tokio::test]
async fn update_that_changes_the_partition_key() {
    let mut h = acct("km_issue").await;
    h.check_write("UPDATE acct SET uid = uid + 8 WHERE uid = 1003")
        .await;
    for uid in [1003, 1011] {
        h.check(&format!("SELECT * FROM acct WHERE uid = {uid}"))
            .await;
    }
    h.report("UPDATE of the partition key", 3);
}

/// The class: rows moving to other partitions and staying, one row and
/// several, with other columns assigned before and after the key,
/// aliases, a duplicate key (nothing moves), no row, NULL into a NOT NULL
/// key, a DECIMAL value, inside transactions (committed, rolled back, a
/// failing move that leaves the transaction going); every moved row read
/// back by its key (so it sits in its partition).
#[tokio::test]
async fn updates_that_move_rows_between_partitions() {
    let mut h = acct("km_class").await;
    for sql in [
        "UPDATE acct SET uid = uid + 1 WHERE uid = 1005",
        "UPDATE acct SET uid = 2001, handle = 'moved' WHERE uid = 1006",
        "UPDATE acct SET handle = CONCAT(handle, '!'), uid = uid + 101 WHERE uid = 1007",
        "UPDATE acct SET uid = uid + 1000 WHERE flags = 2",
        "UPDATE acct SET uid = uid * 10 WHERE uid IN (1010, 1011, 1013)",
        "UPDATE acct AS a SET a.uid = a.uid + 3 WHERE a.uid = 1014",
        "UPDATE acct SET uid = 1002 WHERE uid = 1001",
        "UPDATE acct SET uid = uid WHERE uid = 1015",
        "UPDATE acct SET uid = uid + 4 WHERE uid = 99999",
        "UPDATE acct SET uid = 3000 + uid, balance = balance * 2 WHERE uid BETWEEN 1020 AND 1025",
        "UPDATE acct SET uid = uid + 1.0 WHERE uid = 1030",
        "UPDATE acct SET uid = NULL WHERE uid = 1031",
        "UPDATE acct SET `uid` = `uid` - 2000 WHERE handle = 'h3'",
        "UPDATE acct SET uid = 5000 + flags WHERE uid = 1033",
    ] {
        h.check_write(sql).await;
    }
    for sql in [
        "BEGIN",
        "UPDATE acct SET uid = uid + 7 WHERE uid = 1034",
        "SELECT * FROM acct WHERE uid IN (1034, 1041)",
        "ROLLBACK",
        "SELECT * FROM acct WHERE uid IN (1034, 1041)",
        "START TRANSACTION",
        "UPDATE acct SET handle = 'kept' WHERE uid = 1035",
        "UPDATE acct SET uid = 1036 WHERE uid = 1035",
        "UPDATE acct SET uid = uid + 2 WHERE uid = 1037",
        "COMMIT",
        "SET autocommit = 0",
        "UPDATE acct SET uid = uid + 1 WHERE uid = 1038",
        "COMMIT",
        "SET autocommit = 1",
    ] {
        h.check_write(sql).await;
    }
    for uid in [
        1005, 1006, 1007, 1014, 1017, 1033, 1035, 1036, 1037, 1039, 1040, 1041, 2001, 5003, 10100,
        10110, 10130, 2002, 4020, 4021, 4025, 1031,
    ] {
        h.check(&format!("SELECT * FROM acct WHERE uid = {uid}"))
            .await;
    }
    h.check("SELECT LAST_INSERT_ID(), ROW_COUNT()").await;
    h.report("UPDATE of the partition key", 50);
}

/// Rows moved keep their other columns and ids: a generated column is
/// computed again where the row lands, the AUTO_INCREMENT id (filled by
/// hscale's sequence) stays, and LAST_INSERT_ID() is not changed.
#[tokio::test]
async fn moved_rows_keep_their_ids_and_generated_columns() {
    let schema = &[
        "CREATE TABLE mv (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, v VARCHAR(10), twice INT AS (k * 2) STORED)",
    ];
    let partitioning = &[
        "HSCALE SETUP_TABLE('mv', 'k', 'mv_default', 'shard0', 'MOD(3)')",
        "HSCALE ADD_PARTITION('mv', 'm1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('mv', 'm2', '2', 'shard2')",
    ];
    let data =
        &["INSERT INTO mv (id, k, v) VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c'), (4, 4, 'd')"];
    let mut h = Pair::new("km_ids", schema, partitioning, data).await;
    for sql in [
        "UPDATE mv SET k = k + 1 WHERE id = 1",
        "UPDATE mv SET v = 'x', k = 7 WHERE k = 3",
        "UPDATE mv SET k = k + 10",
        "SELECT LAST_INSERT_ID()",
        "SELECT * FROM mv WHERE k = 12",
        "SELECT * FROM mv WHERE k = 17",
        "SELECT * FROM mv WHERE k = 14",
    ] {
        h.check_write(sql).await;
    }
    h.report("moved rows keep ids", 7);
}

/// The shapes not run exactly by moving rows are refused with 1235, on
/// the partitioned table only (the reference runs them).
#[tokio::test]
async fn updates_of_the_partition_key_that_are_refused() {
    let mut h = acct("km_refused").await;
    for sql in [
        "UPDATE acct SET uid = uid + 1 ORDER BY uid LIMIT 2",
        "UPDATE acct SET uid = FLOOR(RAND() * 10) WHERE uid = 1001",
        "UPDATE acct SET flags = 9, uid = flags + 5000 WHERE uid = 1002",
        "UPDATE IGNORE acct SET uid = uid + 1 WHERE uid = 1003",
        "UPDATE acct SET uid = @v WHERE uid = 1004",
        "UPDATE acct SET uid = uid + 0.5 WHERE uid = 1005",
    ] {
        let err = h.p.query_drop(sql).await.unwrap_err();
        assert_eq!(code(&err), 1235, "{sql}: {err}");
    }
    h.check("SELECT * FROM acct ORDER BY uid").await;
    h.report("refused key updates", 1);
}

// ---- 10. SQL_CALC_FOUND_ROWS over several partitions --------------------

/// Issue 29, item 10: the SELECT over several partitions, then
/// FOUND_ROWS().
#[tokio::test]
async fn sql_calc_found_rows_over_several_partitions() {
    let mut h = acct("fr_issue").await;
    h.check("SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags = 3 ORDER BY uid LIMIT 4")
        .await;
    h.check("SELECT FOUND_ROWS()").await;
    h.report("SQL_CALC_FOUND_ROWS", 2);
}

/// The class: OFFSET and `LIMIT m, n`, no ORDER BY, no LIMIT, no row,
/// LIMIT 0, GROUP BY, DISTINCT, aggregates, HAVING, an alias, a key IN
/// list over two partitions, one partition, inside a transaction, and
/// FOUND_ROWS() after the next plain SELECT (its own rows again).
#[tokio::test]
async fn found_rows_after_calc_found_rows_over_partitions() {
    let mut h = acct("fr_class").await;
    for sql in [
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags = 3 ORDER BY uid LIMIT 4 OFFSET 2",
        "SELECT SQL_CALC_FOUND_ROWS uid, handle FROM acct ORDER BY uid DESC LIMIT 3, 5",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags < 2 LIMIT 0",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags > 100 ORDER BY uid LIMIT 3",
        "SELECT SQL_CALC_FOUND_ROWS flags, COUNT(*) FROM acct GROUP BY flags ORDER BY flags LIMIT 2",
        "SELECT SQL_CALC_FOUND_ROWS DISTINCT handle FROM acct ORDER BY handle LIMIT 3",
        "SELECT SQL_CALC_FOUND_ROWS COUNT(*), SUM(balance) FROM acct WHERE flags = 1",
        "SELECT SQL_CALC_FOUND_ROWS flags, COUNT(*) AS n FROM acct GROUP BY flags HAVING n > 7 ORDER BY flags LIMIT 1",
        "SELECT SQL_CALC_FOUND_ROWS a.uid AS u FROM acct AS a WHERE a.balance > 0 ORDER BY u LIMIT 5",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE uid IN (1001, 1002, 1005, 1006) ORDER BY uid LIMIT 1",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE uid = 1004 LIMIT 1",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct ORDER BY balance, uid LIMIT 6",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE handle LIKE 'h1%' ORDER BY uid LIMIT 2",
    ] {
        h.check(sql).await;
        h.check("SELECT FOUND_ROWS()").await;
    }
    for sql in [
        "BEGIN",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags = 4 ORDER BY uid LIMIT 2",
        "SELECT FOUND_ROWS()",
        "COMMIT",
        "SELECT SQL_CALC_FOUND_ROWS uid FROM acct ORDER BY uid LIMIT 1",
        "SELECT uid FROM acct WHERE flags = 0 ORDER BY uid",
        "SELECT FOUND_ROWS()",
        "SELECT SQL_CALC_FOUND_ROWS nope FROM acct LIMIT 1",
        "SELECT FOUND_ROWS()",
    ] {
        h.check(sql).await;
    }
    h.report("SQL_CALC_FOUND_ROWS", 35);
}

// ---- 9. Prepared multi-row INSERT over several partitions ---------------

/// A prepared statement executed on both sides: its affected rows and
/// LAST_INSERT_ID, or its error code.
async fn exec_both(h: &mut Pair, sql: &str, params: Vec<Value>) {
    let mut out = Vec::new();
    for c in [&mut h.r, &mut h.p] {
        let r = match c.exec_drop(sql, params.clone()).await {
            Ok(()) => Ok((c.affected_rows(), c.last_insert_id(), c.get_warnings())),
            Err(e) => Err(code(&e)),
        };
        out.push(r);
    }
    if out[0] == out[1] {
        h.identical += 1;
    } else {
        h.wrong.push(format!(
            "prepared {sql} {params:?}\n  hscale:    {:?}\n  reference: {:?}",
            out[1], out[0]
        ));
    }
}

/// Issue 29, item 9: the prepared INSERT, its two rows for two
/// partitions of `acct`.
#[tokio::test]
async fn prepared_multi_row_insert_over_several_partitions() {
    let mut h = acct("pi_issue").await;
    exec_both(
        &mut h,
        "INSERT INTO acct (uid, handle, flags) VALUES (?, ?, ?), (?, ?, ?)",
        vec![
            Value::from(2001),
            Value::from("a"),
            Value::from(1),
            Value::from(2002),
            Value::from("b"),
            Value::from(2),
        ],
    )
    .await;
    h.check_write("SELECT * FROM acct WHERE uid IN (2001, 2002) ORDER BY uid")
        .await;
    h.check("SELECT * FROM acct WHERE uid = 2002").await;
    h.report("prepared multi-row INSERT", 3);
}

/// The class: rows for two, three and four partitions; with strings that
/// need quoting, NULLs, DECIMALs; a duplicate key (nothing stored);
/// REPLACE and INSERT IGNORE; ON DUPLICATE KEY UPDATE; a table whose ids
/// hscale's sequence fills (LAST_INSERT_ID the first id); the same
/// statement executed again; then every row read back by its key.
#[tokio::test]
async fn prepared_multi_row_inserts_split_by_rows() {
    let mut h = acct("pi_class").await;
    let three = "INSERT INTO acct (uid, handle, flags, balance) VALUES (?, ?, ?, ?), (?, ?, ?, ?), (?, ?, ?, ?)";
    let rows = |a: [i64; 3], names: [&str; 3]| -> Vec<Value> {
        let mut v = Vec::new();
        for (i, n) in a.iter().zip(names) {
            v.extend([
                Value::from(*i),
                Value::from(n),
                Value::from(*i % 7),
                Value::from(format!("{}.25", i % 100)),
            ]);
        }
        v
    };
    exec_both(
        &mut h,
        three,
        rows([3001, 3002, 3003], ["x", "it's", "back\\slash"]),
    )
    .await;
    exec_both(
        &mut h,
        three,
        rows([3004, 3008, 3012], ["same", "part", "ition"]),
    )
    .await;
    exec_both(
        &mut h,
        three,
        rows([3005, 3006, 3001], ["dup", "dup", "dup"]),
    )
    .await;
    exec_both(&mut h, three, rows([3009, 3010, 3011], ["é", "ü", "ñ"])).await;
    exec_both(
        &mut h,
        "INSERT INTO acct (uid, handle, flags, balance) VALUES (?, ?, ?, ?), (?, ?, ?, ?)",
        vec![
            Value::from(3013),
            Value::NULL,
            Value::NULL,
            Value::NULL,
            Value::from(3014),
            Value::from("n"),
            Value::from(1),
            Value::NULL,
        ],
    )
    .await;
    exec_both(
        &mut h,
        "REPLACE INTO acct (uid, handle) VALUES (?, ?), (?, ?)",
        vec![
            Value::from(3001),
            Value::from("r1"),
            Value::from(3015),
            Value::from("r2"),
        ],
    )
    .await;
    exec_both(
        &mut h,
        "INSERT IGNORE INTO acct (uid, handle) VALUES (?, ?), (?, ?)",
        vec![
            Value::from(3002),
            Value::from("i1"),
            Value::from(3016),
            Value::from("i2"),
        ],
    )
    .await;
    exec_both(
        &mut h,
        "INSERT INTO acct (uid, flags) VALUES (?, ?), (?, ?) ON DUPLICATE KEY UPDATE flags = flags + 10",
        vec![
            Value::from(3003),
            Value::from(1),
            Value::from(3017),
            Value::from(1),
        ],
    )
    .await;
    for uid in 3001..=3017 {
        h.check(&format!("SELECT * FROM acct WHERE uid = {uid}"))
            .await;
    }
    h.check_write("SELECT COUNT(*) FROM acct").await;
    h.report("prepared multi-row INSERT", 26);
}

/// A table whose ids hscale's sequence fills: a prepared multi-row INSERT
/// over several partitions answers LAST_INSERT_ID() with its first id,
/// and the ids are the ones a read finds (one server's ids may differ).
#[tokio::test]
async fn prepared_multi_row_insert_with_sequence_ids() {
    cluster(4);
    let mut c = proxy_conn(None).await;
    for s in [
        "DROP DATABASE IF EXISTS pi_seq",
        "CREATE DATABASE pi_seq",
        "USE pi_seq",
        "CREATE TABLE ev (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, v VARCHAR(10))",
        "HSCALE SETUP_TABLE('ev', 'k', 'ev_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('ev', 'e1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('ev', 'e2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('ev', 'e3', '3', 'shard3')",
    ] {
        c.query_drop(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    c.exec_drop(
        "INSERT INTO ev (k, v) VALUES (?, ?), (?, ?), (?, ?)",
        (1, "a", 2, "b", 3, "c"),
    )
    .await
    .unwrap();
    assert_eq!(c.affected_rows(), 3);
    let first = c.last_insert_id().unwrap();
    let lid: u64 = c
        .query_first("SELECT LAST_INSERT_ID()")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lid, first);
    let ids: Vec<(u64, i64)> = c.query("SELECT id, k FROM ev ORDER BY k").await.unwrap();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[0], (first, 1));
    let mut sorted: Vec<u64> = ids.iter().map(|r| r.0).collect();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 3, "{ids:?}");
}

// ---- SET of session variables to expressions ----------------------------

/// Issue 29 ("Refused, but one server answers"): `SET sql_mode =
/// CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')` no longer pins the session:
/// statements over several partitions after it run, under the new mode.
#[tokio::test]
async fn set_sql_mode_to_an_expression_keeps_the_session_unpinned() {
    let mut h = acct("sv_issue").await;
    for sql in [
        "SET sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')",
        "SELECT @@sql_mode",
        "SELECT COUNT(*) FROM acct",
        "SELECT uid, handle || '-' || flags AS hf FROM acct WHERE flags = 2 ORDER BY uid",
    ] {
        h.check(sql).await;
    }
    h.report("SET to an expression", 4);
}

/// The class: other variables and expressions (arithmetic, IF, REPLACE,
/// a variable's own value, system variables, several assignments, SESSION
/// and @@session forms, a subquery over a partitioned table), each
/// followed by reads over several partitions and a write; an expression
/// the server refuses answers its own error.
#[tokio::test]
async fn set_session_variables_to_expressions() {
    let mut h = acct("sv_class").await;
    for sql in [
        "SET sql_mode = REPLACE(@@sql_mode, 'STRICT_TRANS_TABLES', '')",
        "SELECT @@sql_mode",
        "SET SESSION div_precision_increment = 2 + 3",
        "SELECT @@div_precision_increment",
        "SELECT SUM(balance) / 7 FROM acct",
        "SET @@session.group_concat_max_len = IF(1 > 0, 64, 128), max_join_size = 1000 * 1000",
        "SELECT @@group_concat_max_len, @@max_join_size",
        "SELECT GROUP_CONCAT(uid ORDER BY uid) FROM acct WHERE flags = 4",
        "SET sql_mode = CONCAT_WS(',', @@sql_mode, 'ANSI_QUOTES')",
        "SELECT \"uid\" FROM \"acct\" WHERE \"uid\" = 1007",
        "SET sql_mode = DEFAULT",
        "SET sql_select_limit = (SELECT COUNT(*) FROM acct WHERE flags = 1) - 5",
        "SELECT @@sql_select_limit",
        "SELECT uid FROM acct ORDER BY uid",
        "SET sql_select_limit = DEFAULT",
        "SET sql_mode = CONCAT(@@sql_mode, ',NO_SUCH_MODE')",
        "SET lock_wait_timeout = LEAST(@@lock_wait_timeout, 40)",
        "SELECT @@lock_wait_timeout",
        "SET sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT'), @@session.auto_increment_increment = 1 + 1",
        "SELECT @@auto_increment_increment, 'a' || 'b'",
    ] {
        h.check(sql).await;
    }
    h.check_write("UPDATE acct SET handle = handle || '+' WHERE flags = 1")
        .await;
    h.check_any_order("SELECT uid, handle FROM acct WHERE flags IN (1, 2)")
        .await;
    h.report("SET to an expression", 22);
}

// ---- A common table expression named like a partitioned table ----------

/// Issue 29 ("Refused, but one server answers"): a CTE named like the
/// partitioned table hides it in the statement.
#[tokio::test]
async fn a_cte_named_like_a_partitioned_table() {
    let mut h = acct("cte_issue").await;
    h.check("WITH acct AS (SELECT 1 AS uid) SELECT * FROM acct")
        .await;
    h.report("CTE named like a table", 1);
}

/// The class: the CTE reading the table it hides, several CTEs (an
/// earlier one reading the table), RECURSIVE, aggregates, joins with the
/// CTE, subqueries and UNION ALL naming it, a CTE of another name.
#[tokio::test]
async fn ctes_that_hide_partitioned_tables() {
    let mut h = acct("cte_class").await;
    for sql in [
        "WITH acct AS (SELECT uid FROM acct WHERE flags = 1) SELECT COUNT(*) FROM acct",
        "WITH acct AS (SELECT uid, flags FROM acct) SELECT flags, COUNT(*) FROM acct GROUP BY flags ORDER BY flags",
        "WITH a AS (SELECT uid FROM acct WHERE flags = 2), acct AS (SELECT uid FROM a WHERE uid > 1010) SELECT * FROM acct ORDER BY uid",
        "WITH RECURSIVE acct (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM acct WHERE n < 5) SELECT * FROM acct",
        "WITH acct AS (SELECT uid, handle FROM acct WHERE uid = 1003) SELECT * FROM acct",
        "WITH x AS (SELECT * FROM acct WHERE flags = 3) SELECT COUNT(*), SUM(balance) FROM x",
        "WITH acct AS (SELECT COUNT(*) AS n FROM acct) SELECT n FROM acct",
        "WITH acct AS (SELECT 7 AS uid) SELECT uid FROM acct UNION ALL SELECT 8",
        "WITH acct AS (SELECT uid FROM acct WHERE flags = 4) SELECT (SELECT COUNT(*) FROM acct)",
        "WITH acct AS (SELECT 1 AS uid) SELECT COUNT(*) FROM acct AS t WHERE t.uid = 1",
        "WITH `acct` AS (SELECT 2 AS uid) SELECT uid FROM `acct`",
        "WITH acct AS (SELECT uid FROM acct WHERE flags = 0) SELECT a.uid, b.uid FROM acct a JOIN acct b ON b.uid = a.uid + 5 ORDER BY a.uid",
    ] {
        h.check(sql).await;
    }
    h.report("CTE named like a table", 12);
}

// ---- SELECT ... INTO @v over several partitions -------------------------

/// Issue 29 ("Refused, but one server answers"): `SELECT ... INTO @v`
/// over several partitions.
#[tokio::test]
async fn select_into_a_variable_over_several_partitions() {
    let mut h = acct("si_issue").await;
    h.check("SELECT COUNT(*) INTO @v FROM acct").await;
    h.check("SELECT @v").await;
    h.report("SELECT INTO @v", 2);
}

/// The class: aggregates, one row by ORDER BY ... LIMIT 1, several
/// variables, INTO at the end, no row (warning 1329, the variables keep
/// their values), several rows (1172), a wrong number of variables, a
/// point read on one partition, the variables used by later reads over
/// several partitions, inside a transaction.
#[tokio::test]
async fn select_into_variables_over_partitions() {
    let mut h = acct("si_class").await;
    for sql in [
        "BEGIN",
        "SELECT COUNT(DISTINCT handle) INTO @d FROM acct",
        "COMMIT",
        "SELECT @d, @v IS NULL",
        "SELECT uid INTO @w FROM acct WHERE flags = 3 ORDER BY uid LIMIT 1",
        "SELECT @w",
        "SELECT MIN(balance), MAX(balance), SUM(flags) INTO @lo, @hi, @s FROM acct",
        "SELECT @lo, @hi, @s",
        "SELECT handle, balance FROM acct WHERE flags = 2 ORDER BY balance DESC LIMIT 1 INTO @h, @b",
        "SELECT @h, @b",
        "SELECT uid INTO @w FROM acct WHERE flags = 99",
        "SELECT @w",
        "SELECT uid INTO @w FROM acct WHERE flags = 1 ORDER BY uid",
        "SELECT @w",
        "SELECT uid, handle INTO @w FROM acct WHERE uid = 1001",
        "SELECT handle INTO @one FROM acct WHERE uid = 1002",
        "SELECT @one",
        "SELECT COUNT(*) FROM acct WHERE uid > @w",
        "SELECT uid FROM acct WHERE flags = @s % 5 ORDER BY uid",
    ] {
        h.check(sql).await;
    }
    h.report("SELECT INTO @v", 19);
}

// ---- Prepared UPDATE / DELETE ... ORDER BY ... LIMIT on one partition ---

async fn stockw(name: &str) -> Pair {
    let schema = &[
        "CREATE TABLE stockw (wh INT NOT NULL, item INT NOT NULL, qty INT, PRIMARY KEY (wh, item))",
    ];
    let partitioning = &[
        "HSCALE SETUP_TABLE('stockw', 'wh', 'stockw_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('stockw', 'w1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('stockw', 'w2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('stockw', 'w3', '3', 'shard3')",
    ];
    let rows: Vec<String> = (1..=8)
        .flat_map(|wh| {
            (1..=6).map(move |item| format!("({wh}, {item}, {})", (wh * 7 + item * 3) % 11))
        })
        .collect();
    let data = format!("INSERT INTO stockw VALUES {}", rows.join(", "));
    Pair::new(name, schema, partitioning, &[data.as_str()]).await
}

/// Issue 29 ("Refused, but one server answers"): a prepared UPDATE ...
/// ORDER BY ... LIMIT whose `WHERE wh = ?` names one partition.
#[tokio::test]
async fn prepared_update_order_by_limit_on_one_partition() {
    let mut h = stockw("pu_issue").await;
    exec_both(
        &mut h,
        "UPDATE stockw SET qty = qty - 1 WHERE wh = ? ORDER BY qty DESC, item LIMIT 2",
        vec![Value::from(3)],
    )
    .await;
    h.check_write("SELECT * FROM stockw WHERE wh = 3 ORDER BY item")
        .await;
    h.report("prepared ordered writes", 2);
}

/// The class: UPDATE and DELETE, other keys and limits, more conditions,
/// the key parameter last or first, `? = wh`, LIMIT 0, a key matching no
/// row, the same statement executed for several partitions in turn.
#[tokio::test]
async fn prepared_ordered_writes_whose_key_is_a_parameter() {
    let mut h = stockw("pu_class").await;
    let cases: Vec<(&str, Vec<Value>)> = vec![
        (
            "UPDATE stockw SET qty = qty + 10 WHERE wh = ? ORDER BY item DESC LIMIT 1",
            vec![Value::from(1)],
        ),
        (
            "UPDATE stockw SET qty = qty + 10 WHERE wh = ? ORDER BY item DESC LIMIT 1",
            vec![Value::from(2)],
        ),
        (
            "UPDATE stockw SET qty = qty + 10 WHERE wh = ? ORDER BY item DESC LIMIT 1",
            vec![Value::from(8)],
        ),
        (
            "UPDATE stockw SET qty = 0 WHERE qty > ? AND wh = ? ORDER BY qty, item LIMIT 3",
            vec![Value::from(4), Value::from(5)],
        ),
        (
            "UPDATE stockw SET qty = qty * 2 WHERE ? = wh ORDER BY item LIMIT 2",
            vec![Value::from(6)],
        ),
        (
            "UPDATE stockw SET qty = 1 WHERE wh = ? ORDER BY item LIMIT 0",
            vec![Value::from(7)],
        ),
        (
            "UPDATE stockw SET qty = 1 WHERE wh = ? ORDER BY item LIMIT 2",
            vec![Value::from(99)],
        ),
        (
            "DELETE FROM stockw WHERE wh = ? ORDER BY item LIMIT 2",
            vec![Value::from(4)],
        ),
        (
            "DELETE FROM stockw WHERE wh = ? AND qty < ? ORDER BY qty DESC, item LIMIT 1",
            vec![Value::from(3), Value::from(9)],
        ),
        (
            "DELETE FROM stockw WHERE wh = ? LIMIT 1",
            vec![Value::from(1)],
        ),
        (
            "UPDATE stockw SET qty = qty - 1 WHERE wh = ? LIMIT 2",
            vec![Value::from(2)],
        ),
    ];
    for (sql, params) in cases {
        exec_both(&mut h, sql, params).await;
    }
    h.check_write("SELECT * FROM stockw ORDER BY wh, item")
        .await;
    h.report("prepared ordered writes", 12);
}

// ---- CREATE TABLE ... LIKE a partitioned table, INSERT ... SELECT with a computed key

/// Issue 29 ("Refused, but one server answers"): CREATE TABLE ... LIKE a
/// partitioned table makes a plain table with its definition.
#[tokio::test]
async fn create_table_like_a_partitioned_table() {
    let mut h = acct("cl_issue").await;
    h.check("CREATE TABLE x LIKE acct").await;
    h.check("SHOW CREATE TABLE x").await;
    h.report("CREATE TABLE LIKE", 2);
}

/// The class: IF NOT EXISTS, the parenthesised form, an existing name
/// (1050), the new table written and read, TEMPORARY, then INSERT ...
/// SELECT into and out of it, and INSERT ... SELECT with computed keys
/// into the partitioned table (several partitions, functions, a key
/// that is another column, duplicates under IGNORE).
#[tokio::test]
async fn tables_like_partitioned_ones_and_computed_keys() {
    let mut h = acct("cl_class").await;
    for sql in [
        "CREATE TABLE IF NOT EXISTS x LIKE acct",
        "CREATE TABLE IF NOT EXISTS x LIKE acct",
        "CREATE TABLE x LIKE acct",
        "CREATE TABLE y (LIKE acct)",
        "SHOW CREATE TABLE y",
        "INSERT INTO x SELECT * FROM acct WHERE flags = 2",
        "SELECT * FROM x ORDER BY uid",
        "INSERT INTO acct (uid, handle) SELECT uid + 100, handle FROM acct WHERE flags = 1",
        "INSERT INTO acct (uid, handle, flags) SELECT uid * 3, CONCAT(handle, '*'), flags FROM x",
        "INSERT INTO acct (uid, handle) SELECT flags + 5000, MAX(handle) FROM acct GROUP BY flags",
        "INSERT IGNORE INTO acct (uid, handle) SELECT uid - uid % 2, 'even' FROM acct WHERE uid < 1010",
        "INSERT INTO acct (uid, handle) SELECT uid + 1, 'dup' FROM acct WHERE uid = 1001",
        "SELECT * FROM acct ORDER BY uid",
    ] {
        h.check_write(sql).await;
    }
    h.report("CREATE TABLE LIKE", 13);
}

// ---- CREATE TABLE ... SELECT from a partitioned table -------------------

/// Issue 29 (refused list): CREATE TABLE ... SELECT from a partitioned
/// table makes a plain table on the main backend, filled with every row
/// the SELECT reads, as one server makes it (its definition, rows and
/// `Records:` answer).
#[tokio::test]
async fn create_table_select_from_a_partitioned_table() {
    let mut h = acct("cs_issue").await;
    h.check("CREATE TABLE x SELECT * FROM acct").await;
    h.check("SHOW CREATE TABLE x").await;
    h.check_defs("SELECT * FROM x ORDER BY uid").await;
    h.report("CREATE TABLE SELECT", 3);
}

/// The class: WHERE on one partition and on several, aggregates, AS,
/// declared columns and keys beside the selected ones, IGNORE and
/// REPLACE over duplicates, a duplicate without them (1062, no table),
/// IF NOT EXISTS (note 1050), an existing name (1050), OR REPLACE, a
/// self-join, DISTINCT with LIMIT, a scalar subquery, UNION ALL, a CTE,
/// TEMPORARY, sql_select_limit, inside a transaction (committed first),
/// then every new table's definition and rows.
#[tokio::test]
async fn tables_created_from_selects_over_partitions() {
    let mut h = acct("cs_class").await;
    for sql in [
        "CREATE TABLE s1 SELECT uid, handle FROM acct WHERE flags = 2",
        "CREATE TABLE s2 AS SELECT flags, COUNT(*) AS n, SUM(balance) AS total, AVG(balance) AS a FROM acct GROUP BY flags",
        "CREATE TABLE s3 (id INT PRIMARY KEY, note VARCHAR(5) DEFAULT 'n') SELECT uid AS id FROM acct WHERE uid < 1010",
        "CREATE TABLE s4 (PRIMARY KEY (flags)) IGNORE SELECT flags, uid FROM acct ORDER BY uid",
        "CREATE TABLE s5 (PRIMARY KEY (flags)) REPLACE SELECT flags, uid FROM acct ORDER BY uid",
        "CREATE TABLE s6 (PRIMARY KEY (flags)) SELECT flags, uid FROM acct",
        "CREATE TABLE IF NOT EXISTS s1 SELECT uid FROM acct",
        "SHOW WARNINGS",
        "CREATE TABLE s1 SELECT uid FROM acct",
        "CREATE OR REPLACE TABLE s1 SELECT uid, balance * 2 AS b2 FROM acct WHERE uid = 1003",
        "CREATE TABLE s7 SELECT a.uid, b.uid AS other FROM acct a JOIN acct b ON b.uid = a.uid + 1",
        "CREATE TABLE s8 SELECT DISTINCT handle FROM acct ORDER BY handle LIMIT 5",
        "CREATE TABLE s9 SELECT (SELECT MAX(uid) FROM acct) AS m, handle FROM acct WHERE uid = 1001",
        "CREATE TABLE s10 SELECT uid FROM acct UNION ALL SELECT uid + 100 FROM acct WHERE flags = 1",
        "CREATE TABLE s11 (x INT) SELECT uid, CAST(balance AS CHAR) AS c FROM acct WHERE flags = 4",
        "CREATE TABLE s12 WITH c AS (SELECT uid FROM acct WHERE flags = 0) SELECT * FROM c",
        "CREATE TABLE s13 SELECT flags, GROUP_CONCAT(uid ORDER BY uid) AS uids, MIN(handle) AS h FROM acct GROUP BY flags",
        "SET sql_select_limit = 2",
        "CREATE TABLE s15 SELECT uid FROM acct",
        "SET sql_select_limit = DEFAULT",
        "BEGIN",
        "INSERT INTO acct (uid, handle, flags) VALUES (2001, 'txn', 1)",
        "CREATE TABLE s16 SELECT uid, handle FROM acct WHERE uid > 2000",
        "ROLLBACK",
        "SELECT * FROM acct WHERE uid > 2000",
        "CREATE TABLE s17 SELECT uid, handle FROM acct WHERE nope = 1",
        "CREATE TABLE s18 SELECT * FROM acct WHERE uid = 1002",
        "CREATE TEMPORARY TABLE s14 SELECT uid, flags FROM acct WHERE flags > 2",
        "SELECT * FROM s14 ORDER BY uid",
    ] {
        h.check(sql).await;
    }
    for t in [
        "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s15",
        "s16", "s17", "s18",
    ] {
        h.check(&format!("SHOW CREATE TABLE {t}")).await;
        h.check_any_order(&format!("SELECT * FROM {t}")).await;
    }
    h.check("SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1")
        .await;
    h.report("CREATE TABLE SELECT", 60);
}

// ---- A temporary table joined with a partitioned table ------------------

/// Issue 29 ("Other classes"): a temporary table joined with a
/// partitioned table, over several partitions and on one.
#[tokio::test]
async fn temporary_table_joined_with_a_partitioned_table() {
    let mut h = acct("tt_issue").await;
    for sql in [
        "CREATE TEMPORARY TABLE tt (uid INT PRIMARY KEY, note VARCHAR(10))",
        "INSERT INTO tt VALUES (1001, 'a'), (1002, 'b'), (1006, 'c'), (1040, 'd'), (7, 'none')",
        "SELECT a.uid, tt.note FROM acct a JOIN tt ON tt.uid = a.uid ORDER BY a.uid",
        "SELECT a.uid, tt.note FROM acct a JOIN tt ON tt.uid = a.uid WHERE a.uid = 1001",
    ] {
        h.check(sql).await;
    }
    h.report("temporary tables", 4);
}

/// The class: LEFT JOIN, aggregates over the join, a subquery on the
/// temporary table, the temporary table first, a write from the join's
/// keys, reads of the partitioned table alone beside the temporary
/// table, a temporary table named like a plain table it hides, after the
/// temporary table is dropped.
#[tokio::test]
async fn temporary_tables_beside_partitioned_tables() {
    let mut h = acct("tt_class").await;
    for sql in [
        "CREATE TABLE plain (uid INT PRIMARY KEY, note VARCHAR(10))",
        "INSERT INTO plain VALUES (1003, 'real')",
        "CREATE TEMPORARY TABLE tt (uid INT PRIMARY KEY, note VARCHAR(10))",
        "INSERT INTO tt VALUES (1003, 'x'), (1004, 'y'), (1005, 'z'), (2000, 'w')",
        "CREATE TEMPORARY TABLE plain (uid INT PRIMARY KEY, note VARCHAR(10))",
        "INSERT INTO plain VALUES (1010, 'temp')",
        "SELECT tt.uid, a.handle FROM tt LEFT JOIN acct a ON a.uid = tt.uid ORDER BY tt.uid",
        "SELECT COUNT(*), SUM(a.balance) FROM acct a JOIN tt ON tt.uid = a.uid",
        "SELECT uid FROM acct WHERE uid IN (SELECT uid FROM tt) ORDER BY uid",
        "SELECT a.uid, p.note FROM acct a JOIN plain p ON p.uid = a.uid",
        "SELECT COUNT(*) FROM acct",
        "SELECT uid, handle FROM acct WHERE flags = 2 ORDER BY uid LIMIT 3",
        "SELECT * FROM acct WHERE uid = 1007",
        "DROP TEMPORARY TABLE plain",
        "SELECT a.uid, p.note FROM acct a JOIN plain p ON p.uid = a.uid",
        "DROP TEMPORARY TABLE tt",
        "SELECT COUNT(*) FROM acct WHERE flags = 1",
    ] {
        h.check(sql).await;
    }
    h.report("temporary tables", 17);
}

// ---- 6. Constraints and errors name the logical table -------------------

/// Issue 29 ("Other classes"): information_schema's CHECK_CONSTRAINTS and
/// TABLE_CONSTRAINTS list the partitioned table, not its partitions'
/// physical tables; errors of ALTER (1060) and of generated columns
/// (1906) are one server's.
#[tokio::test]
async fn constraints_and_schema_errors_name_the_partitioned_table() {
    let mut h = acct("cc_issue").await;
    for sql in [
        "ALTER TABLE acct ADD CONSTRAINT chk_flags CHECK (flags >= 0)",
        "SELECT CONSTRAINT_NAME, TABLE_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1, 2",
        "SELECT CONSTRAINT_NAME, TABLE_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() ORDER BY 1, 2",
        "ALTER TABLE acct ADD COLUMN handle INT",
        "ALTER TABLE acct ADD COLUMN g INT AS (flags * 2) VIRTUAL",
        "INSERT INTO acct (uid, g) VALUES (5000, 1)",
        "UPDATE acct SET g = 3 WHERE uid = 1001",
    ] {
        h.compare_messages(sql).await;
    }
    h.report("constraints and schema errors", 7);
}

/// The class: a UNIQUE and a second CHECK constraint, constraints listed
/// with other columns and filters (by table name, by type), a CHECK
/// violated over several partitions (4025), a duplicate key name (1061),
/// dropping an unknown column (1091), a generated column written over
/// several partitions and by a multi-row INSERT.
#[tokio::test]
async fn constraints_and_errors_of_partitioned_tables() {
    let mut h = acct("cc_class").await;
    for sql in [
        "ALTER TABLE acct ADD CONSTRAINT chk_bal CHECK (balance > -1000)",
        "ALTER TABLE acct ADD COLUMN g INT AS (flags + 1) STORED",
        "SELECT CONSTRAINT_CATALOG, CONSTRAINT_NAME, TABLE_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'acct' ORDER BY CONSTRAINT_NAME",
        "SELECT CONSTRAINT_NAME, LEVEL FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = 'acct'",
        "SELECT COUNT(*) FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() AND CONSTRAINT_TYPE = 'CHECK'",
        "SELECT TABLE_NAME FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'acct%' ORDER BY 1",
        "UPDATE acct SET balance = -5000 WHERE flags = 2",
        "ALTER TABLE acct ADD INDEX ix (flags)",
        "ALTER TABLE acct ADD INDEX ix (handle)",
        "ALTER TABLE acct DROP COLUMN nope",
        "UPDATE acct SET g = 1 WHERE flags = 3",
        "INSERT INTO acct (uid, g) VALUES (6001, 1), (6002, 2)",
        "INSERT INTO acct (uid, flags) VALUES (6003, 1), (6004, 2)",
        "SELECT uid, g FROM acct WHERE uid > 6000 ORDER BY uid",
    ] {
        h.compare_messages(sql).await;
    }
    h.report("constraints and schema errors", 14);
}

/// A table with no partition on the main backend: its constraints are
/// read from its default partition's backend, under its name.
#[tokio::test]
async fn constraints_of_a_table_with_no_partition_on_the_main_backend() {
    let schema = &["CREATE TABLE far (id INT PRIMARY KEY, n INT, CONSTRAINT chk_n CHECK (n >= 0))"];
    let partitioning = &[
        "HSCALE SETUP_TABLE('far', 'id', 'far_default', 'shard1', 'MOD(2)')",
        "HSCALE ADD_PARTITION('far', 'f1', '1', 'shard2')",
    ];
    let mut h = Pair::new(
        "cc_far",
        schema,
        partitioning,
        &["INSERT INTO far VALUES (1, 1), (2, 2)"],
    )
    .await;
    for sql in [
        "SELECT CONSTRAINT_NAME, TABLE_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1",
        "SELECT CONSTRAINT_NAME, TABLE_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() ORDER BY 1",
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()",
    ] {
        h.compare_messages(sql).await;
    }
    h.report("constraints of a remote table", 3);
}

// ---- SHOW CREATE TABLE in the client's sql_mode ---------------------------

/// transp14, issue 29 left open: SHOW CREATE TABLE of a partitioned
/// table asked under ANSI_QUOTES writes its names in double quotes, as
/// one server does (hscale asked on a connection in its own sql_mode and
/// answered backquotes).
#[tokio::test]
async fn show_create_table_under_ansi_quotes() {
    let mut h = acct("sq_issue").await;
    h.both("SET sql_mode = 'ANSI_QUOTES'").await;
    h.check("SHOW CREATE TABLE acct").await;
    h.report("SHOW CREATE TABLE under ANSI_QUOTES", 1);
}

/// The class: every sql_mode that changes SHOW CREATE TABLE's text
/// (ANSI_QUOTES alone and within ANSI, MSSQL, POSTGRESQL, ORACLE; the
/// NO_*_OPTIONS modes), the name written in double quotes, a table with
/// an AUTO_INCREMENT sequence, keys and comments, and back in the default
/// mode.
#[tokio::test]
async fn show_create_table_follows_the_clients_sql_mode() {
    let mut h = acct("sq_class").await;
    h.both("CREATE TABLE seqd (id BIGINT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, note VARCHAR(10) DEFAULT 'x' COMMENT 'a note', UNIQUE KEY (id, k), KEY kn (note) COMMENT 'by note') COMMENT 'with a sequence'")
        .await;
    h.p.query_drop("HSCALE SETUP_TABLE('seqd', 'id', 'seqd_default', 'shard1', 'MOD(2)')")
        .await
        .unwrap();
    h.p.query_drop("HSCALE ADD_PARTITION('seqd', 's1', '1', 'shard2')")
        .await
        .unwrap();
    let mut n = 0;
    for mode in [
        "'ANSI_QUOTES'",
        "'ANSI'",
        "'MSSQL'",
        "'POSTGRESQL'",
        "'ORACLE'",
        "'ANSI_QUOTES,NO_TABLE_OPTIONS'",
        "'NO_KEY_OPTIONS,NO_FIELD_OPTIONS'",
        "'NO_TABLE_OPTIONS,NO_KEY_OPTIONS,NO_FIELD_OPTIONS,ANSI_QUOTES'",
        "DEFAULT",
    ] {
        h.both(&format!("SET sql_mode = {mode}")).await;
        for sql in ["SHOW CREATE TABLE acct", "SHOW CREATE TABLE seqd"] {
            h.check(sql).await;
            n += 1;
        }
        if mode.contains("ANSI") || mode.contains("SQL") || mode.contains("ORACLE") {
            h.check("SHOW CREATE TABLE \"seqd\"").await;
            n += 1;
        }
    }
    h.report("SHOW CREATE TABLE in sql_modes", n);
}
