#![allow(clippy::unwrap_used)]
//! Issue 29, finding (c): an INSERT whose column list leaves out the
//! partition key column. hscale refused it (1235); one server answers
//! 1364 "Field 'k' doesn't have a default value" in strict mode, and
//! without strict mode (or with IGNORE) stores the column's implicit
//! default (0, '', the zero date, an ENUM's first member) with warning
//! 1364; a key column with a default stores it. hscale now routes such a
//! row by the value the server stores (`conversions::route_default`),
//! and the server at that partition answers as one server does. Each
//! statement is compared with one plain database of the same server
//! (`REF`): affected rows and warning count or the error code, then the
//! rows, then reads by the key (which find the row only in the right
//! partition).
//!
//! Two backends.

mod common;

use common::twin::*;
use mysql_async::prelude::*;
use mysql_async::Value;

const SCHEMA: &[&str] = &[
    "CREATE TABLE kd (id INT NOT NULL, k INT NOT NULL, v VARCHAR(10), PRIMARY KEY (id, k))",
    "CREATE TABLE kdef (id INT NOT NULL, k INT NOT NULL DEFAULT 3, v VARCHAR(10), PRIMARY KEY (id, k))",
    "CREATE TABLE ks (id INT NOT NULL, k VARCHAR(10) NOT NULL DEFAULT 'x', v INT, PRIMARY KEY (id, k))",
    "CREATE TABLE kse (id INT NOT NULL, k VARCHAR(10) NOT NULL, v INT, PRIMARY KEY (id, k))",
    "CREATE TABLE ke (color ENUM('red','green','blue') NOT NULL, id INT NOT NULL, PRIMARY KEY (color, id))",
    "CREATE TABLE kt (id INT NOT NULL, at DATETIME NOT NULL, v INT, PRIMARY KEY (id, at))",
    "CREATE TABLE ktd (id INT NOT NULL, at DATETIME NOT NULL DEFAULT '2024-02-10 10:00:00', v INT, PRIMARY KEY (id, at))",
];

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('kd', 'k', 'kd_default', 'shard0', 'MOD(2)')",
    "HSCALE ADD_PARTITION('kd', 'kd1', '1', 'shard1')",
    "HSCALE SETUP_TABLE('kdef', 'k', 'kdef_default', 'shard0', 'MOD(2)')",
    "HSCALE ADD_PARTITION('kdef', 'kdef1', '1', 'shard1')",
    "HSCALE SETUP_TABLE('ks', 'k', 'ks_default', 'shard0', 'NONE()')",
    "HSCALE ADD_PARTITION('ks', 'ksx', 'x', 'shard1')",
    "HSCALE SETUP_TABLE('kse', 'k', 'kse_default', 'shard1', 'NONE()')",
    "HSCALE ADD_PARTITION('kse', 'kse_empty', '', 'shard0')",
    "HSCALE SETUP_TABLE('ke', 'color', 'ke_default', 'shard0', 'NONE()')",
    "HSCALE ADD_PARTITION('ke', 'ke_red', 'red', 'shard1')",
    "HSCALE ADD_PARTITION('ke', 'ke_blue', 'blue', 'shard0')",
    "HSCALE SETUP_TABLE('kt', 'at', 'kt_default', 'shard1', 'DATE(\"%Y-%m\")')",
    "HSCALE ADD_PARTITION('kt', 'kt_zero', '0000-00', 'shard0')",
    "HSCALE ADD_PARTITION('kt', 'kt_feb', '2024-02', 'shard0')",
    "HSCALE SETUP_TABLE('ktd', 'at', 'ktd_default', 'shard0', 'DATE(\"%Y-%m\")')",
    "HSCALE ADD_PARTITION('ktd', 'ktd_feb', '2024-02', 'shard1')",
];

/// Each test's own pair of databases (`mk_part_<name>`, `mk_ref_<name>`),
/// created afresh.
async fn twin(name: &str) -> Twin<'static> {
    let db: &'static str = Box::leak(format!("mk_part_{name}").into_boxed_str());
    let reference: &'static str = Box::leak(format!("mk_ref_{name}").into_boxed_str());
    let t = Twin {
        shards: 2,
        db,
        reference,
        schema: SCHEMA,
        partitioning: PARTITIONING,
    };
    t.create(&[]).await;
    t
}

/// `statements` on both sides (the same answers), then each of `reads`
/// answers the same rows.
async fn same(twin: &Twin<'_>, statements: &[&str], reads: &[&str]) {
    let (mut p, mut r) = twin.conns().await;
    for s in statements {
        let want = run(&mut r, s).await;
        assert_eq!(run(&mut p, s).await, want, "{s}");
    }
    for q in reads {
        assert_eq!(
            answer(&mut p, q, None).await,
            answer(&mut r, q, None).await,
            "{q}"
        );
    }
}

/// The finding: strict mode answers 1364; without it the row stores the
/// implicit default 0 with warning 1364, and a read by that key finds it.
#[tokio::test]
async fn insert_without_the_partition_key_column() {
    let twin = twin("finding").await;
    same(
        &twin,
        &[
            "INSERT INTO kd (id, v) VALUES (1, 'a')",
            "SET sql_mode = ''",
            "INSERT INTO kd (id, v) VALUES (1, 'a')",
        ],
        &[
            "SELECT * FROM kd ORDER BY id, k",
            "SELECT * FROM kd WHERE k = 0",
            "SHOW WARNINGS",
        ],
    )
    .await;
}

/// The class: several rows, IGNORE in strict mode, REPLACE, ON DUPLICATE
/// KEY UPDATE, a default that is another partition's, string keys with
/// and without a default, an ENUM key (its first member), DATETIME keys
/// with and without a default (the zero date's partition), a wrong column
/// count, and prepared executions.
#[tokio::test]
async fn inserts_without_the_key_column_take_its_default() {
    let twin = twin("class").await;
    same(
        &twin,
        &[
            "INSERT INTO kd (id, v) VALUES (2, 'b'), (3, 'c')",
            "INSERT IGNORE INTO kd (id, v) VALUES (2, 'b'), (3, 'c')",
            "INSERT IGNORE INTO kd (id, v) VALUES (2, 'again')",
            "INSERT INTO kd (id, v) VALUES (2, 'dup') ON DUPLICATE KEY UPDATE v = 'upd'",
            "REPLACE INTO kd (id, v) VALUES (3, 'rep')",
            "INSERT INTO kd (id) VALUES (4, 5)",
            "INSERT INTO kdef (id, v) VALUES (1, 'a'), (2, 'b')",
            "INSERT INTO kdef (v, id) VALUES ('c', 3)",
            "INSERT INTO ks (id, v) VALUES (1, 10)",
            "INSERT INTO kse (id, v) VALUES (1, 10)",
            "INSERT IGNORE INTO kse (id, v) VALUES (1, 10)",
            "INSERT INTO ke (id) VALUES (1)",
            "INSERT IGNORE INTO ke (id) VALUES (1)",
            "INSERT INTO kt (id, v) VALUES (1, 1)",
            "INSERT IGNORE INTO kt (id, v) VALUES (1, 1)",
            "INSERT INTO ktd (id, v) VALUES (1, 1)",
            "SET sql_mode = ''",
            "INSERT INTO kd (id, v) VALUES (7, 'ns'), (8, 'ns')",
            "INSERT INTO kse (id, v) VALUES (2, 20)",
            "INSERT INTO ke (id) VALUES (2)",
            "INSERT INTO kt (id, v) VALUES (2, 2)",
            "SET sql_mode = DEFAULT",
        ],
        &[
            "SELECT * FROM kd ORDER BY id, k",
            "SELECT * FROM kd WHERE k = 0 ORDER BY id",
            "SELECT * FROM kdef WHERE k = 3 ORDER BY id",
            "SELECT * FROM ks WHERE k = 'x'",
            "SELECT * FROM kse WHERE k = '' ORDER BY id",
            "SELECT * FROM ke WHERE color = 'red' ORDER BY id",
            "SELECT id, at, v FROM kt WHERE at = '0000-00-00 00:00:00' ORDER BY id",
            "SELECT id, at, v FROM ktd WHERE at = '2024-02-10 10:00:00'",
            "SELECT COUNT(*) FROM kt",
        ],
    )
    .await;
}

/// A prepared statement's execution on both sides: the same affected
/// rows and warning count, or the same error code.
async fn same_prepared(
    p: &mut mysql_async::Conn,
    r: &mut mysql_async::Conn,
    sql: &str,
    params: Vec<Value>,
) {
    let mut done = Vec::new();
    for c in [r, p] {
        let got = match c.exec_drop(sql, params.clone()).await {
            Ok(()) => Done::Ok(c.affected_rows(), c.get_warnings()),
            Err(e) => Done::Err(common::code(&e)),
        };
        done.push(got);
    }
    assert_eq!(done[1], done[0], "{sql} {params:?}");
}

/// The prepared form (refused before: its plan is made at PREPARE): each
/// execution runs on the partition of the key's default, as the text form
/// does; strict mode's 1364, IGNORE, a default in another partition,
/// string, ENUM and DATETIME keys, several rows, ON DUPLICATE KEY UPDATE,
/// REPLACE, non-strict mode, then reads by key.
#[tokio::test]
async fn prepared_insert_without_the_partition_key_column() {
    let twin = twin("prepared").await;
    let (mut p, mut r) = twin.conns().await;
    let int = |i: i64| Value::Int(i);
    let s = |v: &str| Value::from(v);
    let cases: Vec<(&str, Vec<Value>)> = vec![
        (
            "INSERT INTO kd (id, v) VALUES (?, ?)",
            vec![int(20), s("p")],
        ),
        (
            "INSERT IGNORE INTO kd (id, v) VALUES (?, ?)",
            vec![int(20), s("p")],
        ),
        (
            "INSERT IGNORE INTO kd (id, v) VALUES (?, ?)",
            vec![int(21), s("q")],
        ),
        (
            "INSERT INTO kdef (id, v) VALUES (?, ?)",
            vec![int(22), s("p")],
        ),
        (
            "INSERT INTO kdef (id, v) VALUES (?, ?)",
            vec![int(22), s("dup")],
        ),
        (
            "INSERT INTO kdef (v, id) VALUES (?, ?), (?, ?)",
            vec![s("m"), int(23), s("n"), int(24)],
        ),
        (
            "INSERT INTO kdef (id, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = 'odku'",
            vec![int(23), s("x")],
        ),
        (
            "REPLACE INTO kdef (id, v) VALUES (?, ?)",
            vec![int(24), s("rep")],
        ),
        (
            "INSERT INTO ks (id, v) VALUES (?, ?)",
            vec![int(2), int(20)],
        ),
        (
            "INSERT INTO kse (id, v) VALUES (?, ?)",
            vec![int(3), int(30)],
        ),
        (
            "INSERT IGNORE INTO kse (id, v) VALUES (?, ?)",
            vec![int(3), int(30)],
        ),
        ("INSERT IGNORE INTO ke (id) VALUES (?)", vec![int(5)]),
        (
            "INSERT INTO ktd (id, v) VALUES (?, ?)",
            vec![int(6), int(60)],
        ),
        (
            "INSERT IGNORE INTO kt (id, v) VALUES (?, ?)",
            vec![int(7), int(70)],
        ),
        (
            "INSERT INTO kdef SET id = ?, v = ?",
            vec![int(25), s("set")],
        ),
    ];
    for (sql, params) in cases {
        same_prepared(&mut p, &mut r, sql, params).await;
    }
    for c in [&mut p, &mut r] {
        c.query_drop("SET sql_mode = ''").await.unwrap();
    }
    for (sql, params) in [
        (
            "INSERT INTO kd (id, v) VALUES (?, ?)",
            vec![int(30), s("ns")],
        ),
        ("INSERT INTO ke (id) VALUES (?)", vec![int(31)]),
        (
            "INSERT INTO kt (id, v) VALUES (?, ?)",
            vec![int(32), int(1)],
        ),
    ] {
        same_prepared(&mut p, &mut r, sql, params).await;
    }
    drop((p, r));
    same(
        &twin,
        &[],
        &[
            "SELECT * FROM kd ORDER BY id, k",
            "SELECT * FROM kd WHERE k = 0 ORDER BY id",
            "SELECT * FROM kdef WHERE k = 3 ORDER BY id",
            "SELECT * FROM ks WHERE k = 'x'",
            "SELECT * FROM kse WHERE k = '' ORDER BY id",
            "SELECT * FROM ke WHERE color = 'red' ORDER BY id",
            "SELECT id, at, v FROM kt WHERE at = '0000-00-00 00:00:00' ORDER BY id",
            "SELECT id, at, v FROM ktd WHERE at = '2024-02-10 10:00:00'",
        ],
    )
    .await;
}
