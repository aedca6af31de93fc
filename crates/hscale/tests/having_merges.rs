#![allow(clippy::unwrap_used)]
//! Issue 29, fourth pass finding F9: HAVING over groups merged from several
//! partitions that names an aggregate of a select alias
//! (`SELECT k, COUNT(*) c FROM od GROUP BY k HAVING c = MAX(c)`). hscale
//! sent `MAX(c)` to every partition, where `c` names nothing (a select
//! list sees no aliases): 1054, where one server answers. What one server
//! answers there depends on its plan (an aggregate of an aggregate's alias
//! reads that aggregate while it is still being computed: 0 or a running
//! count through a temporary table, the group's partial count through an
//! index), so no merge can compute it: the statement runs on one server
//! with copies of the tables (`MergePlan`'s fallback), text or prepared.
//!
//! The class around it, each compared with one plain database of the same
//! server (`REF`): aggregates HAVING names that the select list lacks,
//! select aliases, expressions and functions over them (division,
//! modulo, ROUND, COALESCE, BETWEEN, LIKE, subqueries), without GROUP BY,
//! with ORDER BY and LIMIT, text and prepared.
//!
//! Four backends; `od` MOD(4) on k, as in the adversarial suite.

mod common;

use common::twin::*;
use mysql_async::Value;

const DB: &str = "hv_part";
const REF: &str = "hv_ref";

const TWIN: Twin = Twin {
    shards: 4,
    db: DB,
    reference: REF,
    schema: &[
        "CREATE TABLE od (oid INT NOT NULL, k INT NOT NULL, qty INT NOT NULL, price DECIMAL(8,2) NULL, note VARCHAR(20) NULL, PRIMARY KEY (oid, k), UNIQUE KEY uq (k, note)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
    ],
    partitioning: &[
        "HSCALE SETUP_TABLE('od', 'k', 'od_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('od', 'm1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('od', 'm1', '-1', 'shard1')",
        "HSCALE ADD_PARTITION('od', 'm2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('od', 'm2', '-2', 'shard2')",
        "HSCALE ADD_PARTITION('od', 'm3', '3', 'shard3')",
        "HSCALE ADD_PARTITION('od', 'm3', '-3', 'shard3')",
    ],
};

static SET_UP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

async fn set_up() {
    SET_UP
        .get_or_init(|| async {
            let od: Vec<String> = (1..=40)
                .map(|o: i64| {
                    let price = if o % 5 == 0 {
                        "NULL".to_string()
                    } else {
                        format!("{}.{:02}", o * 7 % 23, o * 13 % 100)
                    };
                    let note = if o % 9 == 0 {
                        "NULL".to_string()
                    } else {
                        format!("'n{o}'")
                    };
                    format!("({o}, {}, {}, {price}, {note})", o % 7 - 3, o * 5 % 11)
                })
                .collect();
            TWIN.create(&[format!("INSERT INTO od VALUES {}", od.join(", "))])
                .await
        })
        .await;
}

/// The rows of an answer sorted (for statements whose order nothing
/// fixes).
fn sorted(a: Answer) -> Answer {
    match a {
        Answer::Rows {
            columns,
            mut rows,
            warnings,
        } => {
            rows.sort();
            Answer::Rows {
                columns,
                rows,
                warnings,
            }
        }
        e => e,
    }
}

/// Each statement (with its parameters, when prepared) through hscale and
/// on one server: the same answer.
async fn same_answers(cases: &[(&str, Option<Vec<Value>>)]) {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    let mut wrong = Vec::new();
    for (sql, params) in cases {
        let is_ordered = sql.contains("ORDER BY");
        let want = answer(&mut r, sql, params.clone()).await;
        let got = answer(&mut p, sql, params.clone()).await;
        let (want, got) = if is_ordered {
            (want, got)
        } else {
            (sorted(want), sorted(got))
        };
        if got != want {
            wrong.push(format!(
                "{sql} {params:?}\n  hscale:    {got:?}\n  reference: {want:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// F9, the exact statement: one server's answer, not 1054.
#[tokio::test]
async fn having_names_an_aggregate_of_a_count_alias() {
    same_answers(&[(
        "SELECT k, COUNT(*) c FROM od GROUP BY k HAVING c = MAX(c) ORDER BY k",
        None,
    )])
    .await;
}

/// The class: aggregates of aliases, aggregates the select list lacks,
/// aliases, and expressions and functions over them.
#[tokio::test]
async fn having_over_merged_groups_class() {
    let text = [
        "SELECT k, SUM(qty) s FROM od GROUP BY k HAVING s > MIN(s) ORDER BY k",
        "SELECT k, SUM(qty) s FROM od GROUP BY k HAVING SUM(s) IS NULL ORDER BY k",
        "SELECT k, COUNT(*) AS c FROM od GROUP BY k HAVING COUNT(c) > 0 ORDER BY k",
        "SELECT k, k + 10 AS q FROM od GROUP BY k HAVING MAX(q) > 11 ORDER BY k",
        "SELECT k, qty AS oid FROM od WHERE qty = 3 GROUP BY k, qty HAVING MAX(oid) > 20 ORDER BY k",
        "SELECT k, COUNT(*) AS c FROM od GROUP BY k HAVING MAX(qty) > 8 ORDER BY k",
        "SELECT k FROM od GROUP BY k HAVING SUM(qty) / COUNT(*) > 5 ORDER BY k",
        "SELECT k, SUM(qty) s FROM od GROUP BY k HAVING s DIV 3 > 9 ORDER BY k",
        "SELECT k, SUM(qty) s FROM od GROUP BY k HAVING s % 2 = 1 ORDER BY k",
        "SELECT k, SUM(qty) s FROM od GROUP BY k HAVING MOD(s, 3) = 0 ORDER BY k",
        "SELECT k, AVG(qty) a FROM od GROUP BY k HAVING a > 4 AND MIN(price) IS NOT NULL ORDER BY k",
        "SELECT k FROM od GROUP BY k HAVING ROUND(AVG(qty)) >= 5 ORDER BY k",
        "SELECT k, MAX(price) m FROM od GROUP BY k HAVING COALESCE(m, 0) > 15 ORDER BY k",
        "SELECT k, MAX(price) m FROM od GROUP BY k HAVING IFNULL(MIN(price), -1) < 3 ORDER BY k",
        "SELECT k, COUNT(*) c FROM od GROUP BY k HAVING c BETWEEN 5 AND 6 ORDER BY k",
        "SELECT k FROM od GROUP BY k HAVING COUNT(DISTINCT qty) > 4 ORDER BY k",
        "SELECT k, SUM(qty) s FROM od GROUP BY k HAVING s > (SELECT COUNT(*) FROM od) ORDER BY k",
        "SELECT COUNT(*) c FROM od HAVING c > 0",
        "SELECT COUNT(*) c FROM od HAVING MAX(qty) > 100",
        "SELECT SUM(qty) c FROM od HAVING MAX(c) IS NULL",
        "SELECT k, COUNT(*) AS c FROM od GROUP BY k HAVING c > 1 ORDER BY c DESC, k LIMIT 2",
        "SELECT k, SUM(qty) AS s FROM od GROUP BY k HAVING s - MIN(qty) > 25 ORDER BY k",
        "SELECT k, GROUP_CONCAT(note ORDER BY oid) g FROM od GROUP BY k HAVING g LIKE '%n1%' ORDER BY k",
        "SELECT k % 2 AS g, SUM(qty) FROM od GROUP BY g HAVING g = 1",
        "SELECT note, COUNT(*) FROM od GROUP BY note HAVING note > 'n3' ORDER BY note",
        "SELECT k, AVG(qty) a FROM od GROUP BY k HAVING a = MAX(a) ORDER BY k",
        "SELECT k, COUNT(*) c, SUM(qty) s FROM od GROUP BY k HAVING c * 2 < s AND NOT s > 40 ORDER BY k",
        "SELECT k, SUM(qty) s FROM od GROUP BY k HAVING ABS(s - 30) < 10 ORDER BY k",
        "SELECT k, COUNT(*) FROM od GROUP BY k HAVING COUNT(*) = MAX(k) + 3 ORDER BY k",
    ];
    let mut cases: Vec<(&str, Option<Vec<Value>>)> = text.iter().map(|s| (*s, None)).collect();
    cases.extend([
        (
            "SELECT k, SUM(qty) s FROM od GROUP BY k HAVING s > ? ORDER BY k",
            Some(vec![Value::Int(30)]),
        ),
        (
            "SELECT k, COUNT(*) c FROM od GROUP BY k HAVING c = ? OR MAX(qty) > ? ORDER BY k",
            Some(vec![Value::Int(6), Value::Int(9)]),
        ),
    ]);
    same_answers(&cases).await;
}

/// Prepared, the same statements: answered by one server with copies of
/// the tables where the merge cannot compute them (a prepared read over
/// copies gets that server's binary rows as they are).
#[tokio::test]
async fn prepared_having_over_merged_groups() {
    same_answers(&[
        (
            "SELECT k, COUNT(*) c FROM od GROUP BY k HAVING c = MAX(c) ORDER BY k",
            Some(Vec::new()),
        ),
        (
            "SELECT k, SUM(qty) s FROM od WHERE qty > ? GROUP BY k HAVING SUM(s) IS NULL ORDER BY k",
            Some(vec![Value::Int(0)]),
        ),
        (
            "SELECT k FROM od GROUP BY k HAVING SUM(qty) / COUNT(*) > ? ORDER BY k",
            Some(vec![Value::Int(5)]),
        ),
        (
            "SELECT k FROM od GROUP BY k HAVING ROUND(AVG(qty)) >= ? ORDER BY k",
            Some(vec![Value::Int(5)]),
        ),
        (
            "SELECT k, k + 10 AS q FROM od GROUP BY k HAVING MAX(q) > ? ORDER BY k",
            Some(vec![Value::Int(11)]),
        ),
        (
            "SELECT k, SUM(qty) s FROM od GROUP BY k HAVING s > MIN(s) ORDER BY k",
            Some(Vec::new()),
        ),
    ])
    .await;
}
