#![allow(clippy::unwrap_used)]
//! The differential suite for statements hscale used to refuse where one
//! server answers (issue 15, "Refused, but one server answers"): UPDATE
//! and DELETE with ORDER BY ... LIMIT across partitions
//! (`differential/ordered_writes.rs`), multi-statement queries naming
//! partitioned tables (`differential/batches.rs`), WITH, derived tables and
//! window functions (`differential/ctes.rs`), user variables
//! (`differential/user_vars.rs`), and the constructs still refused, each
//! with 1235 naming it (`differential/refused.rs`); views over partitioned
//! tables (`differential/views.rs`), a latin1 client's non-ASCII keys
//! (`differential/latin1.rs`) and those of clients in the other
//! single-byte character sets (`differential/single_byte.rs`).
//!
//! Each test has its own pair of databases with the same rows: one
//! partitioned through hscale over four backends, one plain (the
//! reference, one database of one server, reached through hscale too: it
//! names no partitioned table, so it passes through). Every statement runs
//! on both; every result of it (columns, rows, affected rows, info,
//! warnings, or the error code) must be the same, and after a write every
//! table's rows must be the same. A statement hscale refuses (1235) while
//! one server answers is counted by construct and fails the test unless
//! the module expects it.

#[path = "differential/batches.rs"]
mod batches;
mod common;
#[path = "differential/ctes.rs"]
mod ctes;
#[path = "differential/latin1.rs"]
mod latin1;
#[path = "differential/locking.rs"]
mod locking;
#[path = "differential/ordered_writes.rs"]
mod ordered_writes;
#[path = "differential/refused.rs"]
mod refused;
#[path = "differential/single_byte.rs"]
mod single_byte;
#[path = "differential/user_vars.rs"]
mod user_vars;
#[path = "differential/views.rs"]
mod views;

use std::collections::BTreeMap;

use common::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

/// A deterministic generator (an LCG): the same statements on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, n INT NULL, s VARCHAR(16) NULL, d DATE NULL, PRIMARY KEY (id, k))",
    "CREATE TABLE ev (id INT NOT NULL, day DATE NOT NULL, v INT NOT NULL, PRIMARY KEY (id, day))",
    "CREATE TABLE g (gid INT NOT NULL PRIMARY KEY, label VARCHAR(16) NOT NULL)",
    "CREATE TABLE plain (a INT NOT NULL PRIMARY KEY, b INT NULL)",
];

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_GLOBAL_TABLE('g')",
    "HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('t', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('t', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('t', 'm3', '3', 'shard3')",
    "HSCALE ADD_PARTITION('t', 'm1', '-1', 'shard1')",
    "HSCALE ADD_PARTITION('t', 'm3', '-3', 'shard3')",
    "HSCALE SETUP_TABLE('ev', 'day', 'ev_default', 'shard3', \"DATE('%Y-%m')\")",
    "HSCALE ADD_PARTITION('ev', 'e1', '2024-01', 'shard1')",
    "HSCALE ADD_PARTITION('ev', 'e2', '2024-02', 'shard2')",
    "HSCALE ADD_PARTITION('ev', 'e3', '2024-03', 'shard0')",
];

/// The rows every table starts with (and is reset to).
pub fn data() -> Vec<String> {
    let t: Vec<String> = (1..=240)
        .map(|id| {
            let n = if id % 17 == 0 {
                "NULL".to_string()
            } else {
                ((id * 13) % 37).to_string()
            };
            format!(
                "({id}, {}, {n}, 's{}', '2024-01-01' + INTERVAL {} DAY)",
                (id * 7) % 23 - 3,
                id % 11,
                id % 75
            )
        })
        .collect();
    let ev: Vec<String> = (1..=90)
        .map(|id| {
            format!(
                "({id}, '2024-01-01' + INTERVAL {} DAY, {})",
                (id * 5) % 120,
                (id * 3) % 19
            )
        })
        .collect();
    let g: Vec<String> = (0..12).map(|i| format!("({i}, 'g{}')", i % 5)).collect();
    let plain: Vec<String> = (1..=20).map(|a| format!("({a}, {})", a * 2)).collect();
    vec![
        format!("INSERT INTO t VALUES {}", t.join(", ")),
        format!("INSERT INTO ev VALUES {}", ev.join(", ")),
        format!("INSERT INTO g VALUES {}", g.join(", ")),
        format!("INSERT INTO plain VALUES {}", plain.join(", ")),
    ]
}

/// Every table's rows, in one order.
const CONTENTS: &[&str] = &[
    "SELECT id, k, n, s, d FROM t ORDER BY id, k",
    "SELECT id, day, v FROM ev ORDER BY id, day",
    "SELECT gid, label FROM g ORDER BY gid",
    "SELECT a, b FROM plain ORDER BY a",
];

/// One result of a statement: columns, rows, affected rows, info and
/// warnings; or the error that ended it.
#[derive(Debug, Clone, PartialEq)]
pub enum Res {
    Set {
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
        affected: u64,
        info: String,
        warnings: u16,
    },
    Error(u16),
}

fn cell(v: &Value) -> Option<String> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        other => Some(other.as_sql(true)),
    }
}

/// Every result of `sql` (several for a multi-statement query), up to the
/// first error.
pub async fn answer(c: &mut Conn, sql: &str) -> Vec<Res> {
    let mut out = Vec::new();
    let mut res = match c.query_iter(sql).await {
        Ok(r) => r,
        Err(e) => return vec![Res::Error(code(&e))],
    };
    loop {
        let columns: Vec<String> = res
            .columns()
            .map(|cs| cs.iter().map(|c| c.name_str().into_owned()).collect())
            .unwrap_or_default();
        let rows: Vec<Row> = match res.collect().await {
            Ok(r) => r,
            Err(e) => {
                out.push(Res::Error(code(&e)));
                break;
            }
        };
        let rows = rows
            .iter()
            .map(|r| (0..r.len()).map(|i| cell(r.as_ref(i).unwrap())).collect())
            .collect();
        out.push(Res::Set {
            columns,
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

/// One test's databases, connections and counts.
pub struct Harness {
    pub p: Conn,
    pub r: Conn,
    pub part: String,
    pub reference: String,
    pub identical: usize,
    pub refused: BTreeMap<String, usize>,
    pub wrong: Vec<String>,
}

impl Harness {
    /// Fresh databases `<name>_p` (partitioned) and `<name>_r` with the
    /// schema and rows above.
    pub async fn new(name: &str) -> Harness {
        cluster(4);
        let part = format!("{name}_p");
        let reference = format!("{name}_r");
        let mut setup = proxy_conn(None).await;
        for db in [&part, &reference] {
            setup
                .query_drop(format!("CREATE DATABASE {db}"))
                .await
                .unwrap();
            setup.query_drop(format!("USE {db}")).await.unwrap();
            for s in SCHEMA {
                setup.query_drop(*s).await.unwrap();
            }
        }
        setup.query_drop(format!("USE {part}")).await.unwrap();
        for s in PARTITIONING {
            setup
                .query_drop(*s)
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        setup.disconnect().await.unwrap();
        let mut h = Harness {
            p: proxy_conn(Some(&part)).await,
            r: proxy_conn(Some(&reference)).await,
            part,
            reference,
            identical: 0,
            refused: BTreeMap::new(),
            wrong: Vec::new(),
        };
        h.reset().await;
        h
    }

    /// Every table back to the rows of `data()`, on both sides.
    pub async fn reset(&mut self) {
        for c in [&mut self.p, &mut self.r] {
            for t in ["t", "ev", "g", "plain"] {
                c.query_drop(format!("DELETE FROM {t}")).await.unwrap();
            }
            for s in data() {
                c.query_drop(&s).await.unwrap();
            }
        }
    }

    /// Run `sql` on both sides; `ordered`: rows compared in order, else
    /// as multisets. `true` when hscale refused it.
    pub async fn check(&mut self, sql: &str, ordered: bool) -> bool {
        let want = answer(&mut self.r, sql).await;
        let got = answer(&mut self.p, sql).await;
        self.judge(sql, ordered, got, want)
    }

    /// Compare hscale's results with one server's; `true` when hscale
    /// refused where one server answered.
    pub fn judge(&mut self, sql: &str, ordered: bool, got: Vec<Res>, want: Vec<Res>) -> bool {
        let sort = |v: Vec<Res>| -> Vec<Res> {
            v.into_iter()
                .map(|r| match r {
                    Res::Set {
                        columns,
                        mut rows,
                        affected,
                        info,
                        warnings,
                    } if !ordered => {
                        rows.sort();
                        Res::Set {
                            columns,
                            rows,
                            affected,
                            info,
                            warnings,
                        }
                    }
                    other => other,
                })
                .collect()
        };
        let (got, want) = (sort(got), sort(want));
        if got == want {
            self.identical += 1;
            return false;
        }
        // A refusal where one server answered: the same results before it.
        if let Some(Res::Error(1235)) = got.last() {
            if got[..got.len() - 1] == want[..(got.len() - 1).min(want.len())] {
                println!("refused: {sql}");
                *self.refused.entry(construct(sql)).or_default() += 1;
                return true;
            }
        }
        let show = |v: &[Res]| -> String {
            v.iter()
                .map(|r| match r {
                    Res::Set {
                        columns,
                        rows,
                        affected,
                        info,
                        warnings,
                    } => format!(
                        "{columns:?} {} rows {:?} affected {affected} info {info:?} warnings {warnings}",
                        rows.len(),
                        &rows[..rows.len().min(5)]
                    ),
                    Res::Error(c) => format!("error {c}"),
                })
                .collect::<Vec<_>>()
                .join(" | ")
        };
        self.wrong.push(format!(
            "{sql}\n  hscale:    {}\n  reference: {}",
            show(&got),
            show(&want)
        ));
        false
    }

    /// Every table's rows the same on both sides (after `sql`).
    pub async fn same_contents(&mut self, sql: &str) {
        for q in CONTENTS {
            let got = answer(&mut self.p, q).await;
            let want = answer(&mut self.r, q).await;
            if got != want {
                self.wrong.push(format!(
                    "after {sql}: {q} differs\n  hscale:    {got:?}\n  reference: {want:?}"
                ));
                return;
            }
        }
    }

    /// Print the counts; fail on any wrong answer, and on refusals other
    /// than `expected_refusals` (constructs named by a part of the
    /// statement).
    pub fn report(&self, class: &str, min_identical: usize) {
        println!(
            "{class}: {} statements identical, {} refused {:?}, {} wrong",
            self.identical,
            self.refused.values().sum::<usize>(),
            self.refused,
            self.wrong.len()
        );
        for w in &self.wrong {
            println!("WRONG: {w}");
        }
        assert!(self.wrong.is_empty(), "{} wrong answers", self.wrong.len());
        assert!(
            self.refused.is_empty(),
            "refused where one server answers: {:?}",
            self.refused
        );
        assert!(
            self.identical >= min_identical,
            "only {} statements compared",
            self.identical
        );
    }
}

/// The statement's leading words, naming what was refused.
fn construct(sql: &str) -> String {
    sql.split_whitespace().take(4).collect::<Vec<_>>().join(" ")
}

#[tokio::test]
async fn ordered_writes_match_one_server() {
    let mut h = Harness::new("dc_ordered").await;
    ordered_writes::run(&mut h).await;
    h.report("UPDATE/DELETE ... ORDER BY ... LIMIT", 150);
}

#[tokio::test]
async fn batches_match_one_server() {
    let mut h = Harness::new("dc_batch").await;
    batches::run(&mut h).await;
    h.report("multi-statement queries", 80);
}

#[tokio::test]
async fn ctes_derived_tables_and_windows_match_one_server() {
    let mut h = Harness::new("dc_cte").await;
    ctes::run(&mut h).await;
    h.report("WITH, derived tables, window functions", 60);
}

#[tokio::test]
async fn user_variables_match_one_server() {
    let mut h = Harness::new("dc_vars").await;
    user_vars::run(&mut h).await;
    h.report("user variables", 40);
}

#[tokio::test]
async fn views_over_partitioned_tables_match_one_server() {
    let mut h = Harness::new("dc_view").await;
    views::run(&mut h).await;
    // hscale kept the views of partitioned tables: no backend holds them.
    for i in 0..4 {
        let mut c = backend_conn(i, None).await;
        let n: Option<u64> = c
            .query_first(format!(
                "SELECT COUNT(*) FROM information_schema.VIEWS WHERE TABLE_SCHEMA = '{}'",
                h.part
            ))
            .await
            .unwrap();
        assert_eq!(n, Some(0), "views on backend {i}");
        c.disconnect().await.unwrap();
    }
    h.report("views", 130);
}

/// A view created through one proxy is read through another proxy
/// process on the same dictionary at once: that proxy's reload timer is
/// off (10 minutes), so its dictionary is the one from before the view;
/// the statement meets 1146 on the main backend and the fence's reload
/// finds the view. A DROP TABLE under the view then makes it 1356 there.
#[tokio::test]
async fn a_view_made_through_one_proxy_is_read_through_another_at_once() {
    let h = Harness::new("dc_view2").await;
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 600_000;
    let other = ProxyProcess::start(config);
    let mut b = mysql_async::Conn::new(proxy_opts(other.port, Some(&h.part)))
        .await
        .unwrap();
    let mut a = h.p;
    // The other proxy has read the dictionary (without the view).
    let n: Option<u64> = b.query_first("SELECT COUNT(*) FROM t").await.unwrap();
    assert_eq!(n, Some(240));
    a.query_drop("CREATE VIEW v2 (key_, total) AS SELECT k, SUM(n) FROM t GROUP BY k")
        .await
        .unwrap();
    let want: Vec<(i64, Option<String>)> = a
        .query("SELECT key_, total FROM v2 ORDER BY key_")
        .await
        .unwrap();
    let got: Vec<(i64, Option<String>)> = b
        .query("SELECT key_, total FROM v2 ORDER BY key_")
        .await
        .unwrap();
    assert_eq!(got, want);
    assert_eq!(got.len(), 23);
    let tables: Vec<(String, String)> = b.query("SHOW FULL TABLES LIKE 'v2'").await.unwrap();
    assert_eq!(tables, vec![("v2".to_string(), "VIEW".to_string())]);
    a.query_drop("DROP TABLE t").await.unwrap();
    let e = b.query_drop("SELECT * FROM v2").await.unwrap_err();
    assert_eq!(code(&e), 1356, "{e}");
    let e = a.query_drop("SELECT * FROM v2").await.unwrap_err();
    assert_eq!(code(&e), 1356, "{e}");
    let e = a.prep("SELECT * FROM v2 WHERE key_ = ?").await.unwrap_err();
    assert_eq!(code(&e), 1356, "prepared: {e}");
    // DROP DATABASE takes the views hscale keeps in it along.
    let part = h.part.clone();
    a.query_drop(format!("DROP DATABASE {part}")).await.unwrap();
    a.query_drop(format!("CREATE DATABASE {part}"))
        .await
        .unwrap();
    a.query_drop(format!("USE {part}")).await.unwrap();
    let tables: Vec<(String, String)> = a.query("SHOW FULL TABLES").await.unwrap();
    assert!(tables.is_empty(), "{tables:?}");
    let e = a.query_drop("SELECT * FROM v2").await.unwrap_err();
    assert_eq!(code(&e), 1146, "{e}");
}

#[tokio::test]
async fn latin1_clients_route_non_ascii_keys_as_the_column_holds_them() {
    latin1::run().await;
}

#[tokio::test]
async fn single_byte_clients_route_non_ascii_keys_as_the_column_holds_them() {
    single_byte::run().await;
}

#[tokio::test]
async fn single_byte_tables_are_the_servers() {
    single_byte::tables_are_the_servers().await;
}

#[tokio::test]
async fn single_byte_bytes_without_a_character_are_refused() {
    single_byte::unreadable_bytes_are_refused().await;
}

#[tokio::test]
async fn locking_reads_over_partitions_match_one_server() {
    locking::run().await;
}

#[tokio::test]
async fn a_failed_merge_in_a_transaction_keeps_its_writes() {
    locking::failed_merge_keeps_the_transaction().await;
}

#[tokio::test]
async fn a_lost_part_of_a_merge_ends_its_transaction() {
    locking::lost_part_ends_the_transaction().await;
}

#[tokio::test]
async fn a_failed_write_over_partitions_in_a_transaction_is_undone_whole() {
    locking::failed_write_is_undone_whole().await;
}

#[tokio::test]
async fn a_failed_prepared_write_over_partitions_in_a_transaction_is_undone_whole() {
    locking::failed_prepared_write_is_undone_whole().await;
}

#[tokio::test]
async fn prepared_keys_read_as_doubles_ask_every_partition() {
    locking::unreadable_key_parameters_ask_every_partition().await;
}

#[tokio::test]
async fn prepared_keys_the_column_converts_land_where_reads_find_them() {
    locking::prepared_keys_the_column_converts_land_where_reads_find_them().await;
}

#[tokio::test]
async fn still_refused_constructs_are_named() {
    let mut h = Harness::new("dc_refused").await;
    refused::run(&mut h).await;
}

/// The table and original table a result's column definitions name (what
/// Connector/J's `getTableName` returns): the partitioned table, as on one
/// server, never a partition's physical table, on one partition, over
/// several (concatenated and merged), under an alias, prepared, and for
/// DELETE ... RETURNING. (Copies shipped for joins and rewritten
/// information_schema reads still name their own: see the issue.)
#[tokio::test]
async fn column_definitions_name_the_partitioned_table() {
    let mut h = Harness::new("dc_orgtable").await;
    let tables = |cols: Option<std::sync::Arc<[mysql_async::Column]>>| -> Vec<(String, String)> {
        cols.map(|cols| {
            cols.iter()
                .map(|c| (c.table_str().into_owned(), c.org_table_str().into_owned()))
                .collect()
        })
        .unwrap_or_default()
    };
    let mut wrong = Vec::new();
    for sql in [
        "SELECT id, k FROM t WHERE k = 1",
        "SELECT id, k, n FROM t",
        "SELECT x.id, x.s FROM t x WHERE x.k = 2",
        "SELECT id FROM t ORDER BY id LIMIT 3",
        "SELECT k, COUNT(*), MAX(n) FROM t GROUP BY k ORDER BY k",
        "SELECT DISTINCT s FROM t ORDER BY s",
        "SELECT a.id, b.id FROM t a JOIN t b ON b.id = a.id AND b.k = a.k WHERE a.k = 3",
        "SELECT t.id, g.label FROM t JOIN g ON g.gid = t.id WHERE t.k = 1",
        "SELECT id, day FROM ev WHERE day = '2024-02-10'",
        "SELECT id, day FROM ev ORDER BY id",
    ] {
        for prepared in [false, true] {
            let (got, want) = if prepared {
                let got = tables(h.p.exec_iter(sql, ()).await.unwrap().columns());
                let want = tables(h.r.exec_iter(sql, ()).await.unwrap().columns());
                (got, want)
            } else {
                let got = tables(h.p.query_iter(sql).await.unwrap().columns());
                let want = tables(h.r.query_iter(sql).await.unwrap().columns());
                (got, want)
            };
            if got != want {
                wrong.push(format!(
                    "{sql} (prepared: {prepared})\n  hscale:    {got:?}\n  reference: {want:?}"
                ));
            }
        }
    }
    let sql = "DELETE FROM t WHERE k = 2 AND id = 2 RETURNING id, s";
    let got = tables(h.p.query_iter(sql).await.unwrap().columns());
    let want = tables(h.r.query_iter(sql).await.unwrap().columns());
    if got != want {
        wrong.push(format!(
            "{sql}\n  hscale:    {got:?}\n  reference: {want:?}"
        ));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
