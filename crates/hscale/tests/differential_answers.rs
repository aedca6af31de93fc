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
#[path = "differential_answers/merges.rs"]
mod merges;
#[path = "differential_answers/schema.rs"]
mod schema;
#[path = "differential_answers/session.rs"]
mod session;
#[path = "differential_answers/writes.rs"]
mod writes;

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
