#![allow(clippy::unwrap_used)]
//! Issue 29, the adversarial run's F2 and F3: a name that is both a select
//! alias and a column of the table, in GROUP BY, HAVING and ORDER BY of a
//! read over several partitions. MariaDB reads GROUP BY's name as the
//! column (warning 1052 "Column 'x' in GROUP BY is ambiguous") and ORDER
//! BY's as the alias. Each example of docs/adversarial-findings.md is a
//! test of its own, with its statement, table and rows, compared with one
//! plain database of the same server (`REF`, not partitioned): columns,
//! rows, warnings (code and message) or the error code.
//!
//! Four backends; `od` partitioned MOD(4) on k as in the adversarial run.

mod common;

use common::twin::*;
use mysql_async::prelude::*;
use mysql_async::Value;

const DB: &str = "sn_part";
const REF: &str = "sn_ref";

const SCHEMA: &[&str] = &[
    "CREATE TABLE od (oid INT NOT NULL, k INT NOT NULL, qty INT NOT NULL, price DECIMAL(8,2), note VARCHAR(20), PRIMARY KEY (oid, k), UNIQUE KEY uq (k, note))",
    "CREATE TABLE gl (gid INT NOT NULL PRIMARY KEY, name VARCHAR(16) NOT NULL)",
];

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('od', 'k', 'od_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('od', 'od1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('od', 'od2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('od', 'od3', '3', 'shard3')",
];

/// The adversarial run's rows of `od`: oid 1..32, `k = oid % 5 - 1`,
/// `qty = oid * 7 % 11`, a NULL price every 9th, a NULL note every 6th.
fn od_rows() -> String {
    let rows: Vec<String> = (1..=32usize)
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
    format!("INSERT INTO od VALUES {}", rows.join(", "))
}

const TWIN: Twin = Twin {
    shards: 4,
    db: DB,
    reference: REF,
    schema: SCHEMA,
    partitioning: PARTITIONING,
};

static SET_UP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

async fn set_up() {
    SET_UP
        .get_or_init(|| async {
            TWIN.create(&[
                od_rows(),
                "INSERT INTO gl VALUES (0, 'n1'), (1, 'n2'), (2, 'zero'), (3, 'n12'), (4, 'three'), (5, 'n30')".into(),
            ])
            .await
        })
        .await;
}

/// `sql` through hscale and on one server: the same answer, which is
/// returned.
async fn same(sql: &str) -> Answer {
    same_with(sql, None).await
}

async fn same_with(sql: &str, params: Option<Vec<Value>>) -> Answer {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    let want = answer(&mut r, sql, params.clone()).await;
    let got = answer(&mut p, sql, params).await;
    assert_eq!(got, want, "{sql}");
    want
}

/// [`same`] for a statement whose ORDER BY leaves ties (an alias whose
/// value several groups share): the rows compared as a multiset, and
/// hscale's in the order of their first column.
async fn same_unordered(sql: &str) -> Answer {
    same_unordered_with(sql, None).await
}

async fn same_unordered_with(sql: &str, params: Option<Vec<Value>>) -> Answer {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    let mut want = answer(&mut r, sql, params.clone()).await;
    let mut got = answer(&mut p, sql, params).await;
    if let Answer::Rows { rows, .. } = &got {
        let firsts: Vec<i64> = rows
            .iter()
            .map(|r| r[0].as_deref().map_or(i64::MIN, |v| v.parse().unwrap()))
            .collect();
        assert!(firsts.is_sorted(), "{sql}: {firsts:?}");
    }
    for a in [&mut want, &mut got] {
        if let Answer::Rows { rows, .. } = a {
            rows.sort();
        }
    }
    assert_eq!(got, want, "{sql}");
    want
}

// F2: GROUP BY a name that is both a select alias and a column.

/// The findings' first example: one server groups by the column qty
/// (11 groups, warning 1052) and orders by the alias (k); the merge
/// grouped by the alias (5 groups, 5 warnings).
#[tokio::test]
async fn group_by_alias_shadowing_a_column_groups_by_the_column() {
    let a = same_unordered("SELECT k AS qty, SUM(qty) FROM od GROUP BY qty ORDER BY qty").await;
    assert_eq!(a.row_count(), 11);
    assert_eq!(a.warning_codes(), ["1052"]);
}

#[tokio::test]
async fn group_by_alias_shadowing_a_varchar_column() {
    let a = same("SELECT k AS note, COUNT(*) FROM od GROUP BY note ORDER BY 1, 2").await;
    assert_eq!(a.row_count(), 28);
}

#[tokio::test]
async fn group_by_a_constant_aliased_like_the_partition_key() {
    let a = same("SELECT 'x' AS k, COUNT(*) FROM od GROUP BY k ORDER BY k").await;
    assert_eq!(a.row_count(), 5);
}

#[tokio::test]
async fn group_by_shadowing_alias_with_having_and_limit() {
    same("SELECT k AS oid, COUNT(*) FROM od GROUP BY oid HAVING COUNT(*) > 0 ORDER BY oid LIMIT 3")
        .await;
}

#[tokio::test]
async fn group_by_shadowing_alias_of_max_with_limit() {
    same("SELECT k AS price, MAX(qty) FROM od GROUP BY price ORDER BY 1, 2 LIMIT 3").await;
}

/// Where alias and column group alike only the warning differed (one per
/// partition): now one.
#[tokio::test]
async fn group_by_shadowing_alias_that_groups_alike_warns_once() {
    for sql in [
        "SELECT -k AS k, COUNT(*) FROM od GROUP BY k ORDER BY k",
        "SELECT qty AS k, COUNT(*) FROM od GROUP BY k ORDER BY k",
    ] {
        let a = same(sql).await;
        assert_eq!(a.warning_codes(), ["1052"], "{sql}");
    }
}

/// Prepared.
#[tokio::test]
async fn prepared_group_by_shadowing_alias_groups_by_the_column() {
    let sql = "SELECT k AS qty, SUM(qty) FROM od WHERE oid > ? GROUP BY qty ORDER BY qty";
    let a = same_unordered_with(sql, Some(vec![Value::Int(0)])).await;
    assert_eq!(a.row_count(), 11);
}

/// The class: other aggregates, HAVING naming the alias, ORDER BY the
/// alias or an aggregate, DISTINCT beside it, WHERE, several keys, an
/// alias named like a column of the other case, and the aliases that are
/// no column (grouped by the alias as before, no warning).
#[tokio::test]
async fn group_by_names_resolve_as_one_server_class() {
    for sql in [
        "SELECT k AS qty, AVG(price), MIN(note), MAX(oid) FROM od GROUP BY qty ORDER BY qty, 2",
        "SELECT k AS qty, COUNT(*) AS n FROM od GROUP BY qty HAVING n > 2 ORDER BY n, qty",
        "SELECT k AS qty, COUNT(*) FROM od GROUP BY qty HAVING qty > 0 ORDER BY 2, 1",
        "SELECT oid % 3 AS k, SUM(qty) FROM od WHERE price > 5 GROUP BY k ORDER BY 2, 1",
        "SELECT k AS qty, note AS k, COUNT(*) FROM od GROUP BY qty, k ORDER BY 3, 1, 2",
        "SELECT qty + 1 AS qty, SUM(price) FROM od GROUP BY qty ORDER BY qty",
        "SELECT `k` AS `qty`, GROUP_CONCAT(oid ORDER BY oid) FROM od GROUP BY `qty` ORDER BY 2",
        "SELECT k AS qty, COUNT(*) FROM od WHERE k IN (1, 2) GROUP BY qty ORDER BY qty, 2",
        "SELECT UPPER(note) AS note, COUNT(*) FROM od GROUP BY note ORDER BY note",
        // No column of that name: the alias, grouped as before.
        "SELECT k AS g, SUM(qty) FROM od GROUP BY g ORDER BY g",
        "SELECT qty % 3 AS bucket, COUNT(*), MAX(price) FROM od GROUP BY bucket HAVING bucket > 0 ORDER BY bucket",
        // The alias is the column itself: no ambiguity.
        "SELECT qty AS qty, COUNT(*) FROM od GROUP BY qty ORDER BY qty",
        "SELECT od.k AS k, COUNT(*) FROM od GROUP BY k ORDER BY k",
    ] {
        same(sql).await;
    }
    for sql in [
        "SELECT k AS QTY, BIT_OR(oid), COUNT(DISTINCT note) FROM od GROUP BY qty ORDER BY 1",
        "SELECT k AS qty, BIT_AND(oid), BIT_XOR(oid) FROM od GROUP BY qty ORDER BY qty",
    ] {
        same_unordered(sql).await;
    }
}

// F3: ORDER BY an alias that shadows a selected column.

/// The findings' example: ORDER BY reads the aliases (k is oid, oid is
/// k); hscale answered 1052 "Column 'k' in ORDER BY is ambiguous".
#[tokio::test]
async fn order_by_aliases_swapping_two_columns() {
    let a = same("SELECT oid AS k, k AS oid FROM od ORDER BY k, oid LIMIT 5").await;
    assert_eq!(a.row_count(), 5);
}

#[tokio::test]
async fn order_by_alias_of_the_key_desc_beside_another_alias() {
    let a = same("SELECT k AS oid, oid AS x FROM od ORDER BY oid DESC, x LIMIT 4").await;
    assert_eq!(a.row_count(), 4);
}

#[tokio::test]
async fn order_by_alias_shadowing_the_primary_key() {
    let a = same("SELECT qty AS oid, oid AS id2 FROM od ORDER BY oid, id2 LIMIT 4").await;
    assert_eq!(a.row_count(), 4);
}

/// The class: one or more ORDER BY items, aliases over expressions,
/// positions, an alias inside an expression, the shadowed column not
/// selected, OFFSET, no LIMIT, WHERE on the key, prepared.
#[tokio::test]
async fn order_by_shadowing_aliases_class() {
    for sql in [
        "SELECT oid AS qty, qty AS oid FROM od ORDER BY qty LIMIT 3",
        "SELECT oid AS k FROM od ORDER BY k LIMIT 5",
        "SELECT -oid AS oid FROM od ORDER BY oid LIMIT 3",
        "SELECT oid, -qty AS qty FROM od ORDER BY qty, oid LIMIT 3",
        "SELECT oid, -qty AS qty FROM od ORDER BY qty + 0, oid LIMIT 3",
        "SELECT oid AS k, k AS oid, qty FROM od ORDER BY qty, k LIMIT 6",
        "SELECT oid AS k, k AS oid FROM od ORDER BY oid DESC, k DESC LIMIT 5 OFFSET 2",
        "SELECT oid AS k, k AS oid FROM od ORDER BY 2, 1",
        "SELECT note AS k, k AS note, oid FROM od ORDER BY k, note, oid LIMIT 7",
        "SELECT oid AS k, k, qty AS oid FROM od ORDER BY oid, k LIMIT 5",
        "SELECT price AS qty, qty AS price, oid FROM od WHERE k IN (1, 2, 3) ORDER BY qty DESC, price, oid LIMIT 5",
        "SELECT k AS oid, oid AS k FROM od ORDER BY oid, k",
        "SELECT UPPER(note) AS k, k AS note FROM od ORDER BY k, note LIMIT 6",
    ] {
        same(sql).await;
    }
    same_with(
        "SELECT oid AS k, k AS oid FROM od WHERE qty > ? ORDER BY k, oid LIMIT 5",
        Some(vec![Value::Int(2)]),
    )
    .await;
}

/// A session whose `max_error_count` hides the warning 1052 still gets
/// the groups of one server.
#[tokio::test]
async fn group_by_shadowing_alias_under_a_small_max_error_count() {
    set_up().await;
    let sql = "SELECT k AS qty, SUM(qty) FROM od GROUP BY qty ORDER BY 1, 2";
    let (mut p, mut r) = TWIN.conns().await;
    for c in [&mut p, &mut r] {
        c.query_drop("SET SESSION max_error_count = 0")
            .await
            .unwrap();
    }
    let got: Vec<(i64, String)> = p.query(sql).await.unwrap();
    let want: Vec<(i64, String)> = r.query(sql).await.unwrap();
    assert_eq!(got, want);
    assert_eq!(got.len(), 11);
}
