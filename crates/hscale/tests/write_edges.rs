#![allow(clippy::unwrap_used)]
//! Issue 29, round three (the sixth adversarial pass): writes that stored
//! something else than one server, each with the class around it.
//!
//! - A DATETIME key whose day is past its month's end (`'2024-02-30'`)
//!   was routed by its month: without strict mode the column stores the
//!   zero date, so the row sat in the partition of 2024-02 and reads by
//!   its stored key found nothing. Such a key now goes to the partition of
//!   what the server stores (the zero date; the day itself under
//!   ALLOW_INVALID_DATES; strict mode's error).
//! - `INSERT ... SELECT ... ON DUPLICATE KEY UPDATE` whose UPDATE names a
//!   column both the inserted table and the SELECT's tables have: one
//!   server answers 1052 ("Column 'qty' in UPDATE is ambiguous") and
//!   writes nothing; hscale wrote the rows. It now answers the 1052; a
//!   name only the SELECT's tables have (the SELECT's row) is refused
//!   (1235) where hscale answered 1054.
//!
//! Every statement is compared with one plain database of the same
//! server (`twin.rs`): the OK (affected rows, warnings) or the error
//! code, then the tables' rows, then reads by key.

mod common;

use common::twin::*;

const SCHEMA: &[&str] = &[
    "CREATE TABLE ev (id BIGINT NOT NULL, at DATETIME NOT NULL, kind VARCHAR(8) NOT NULL, PRIMARY KEY (id, at))",
    "CREATE TABLE od (oid INT NOT NULL, k INT NOT NULL, qty INT NOT NULL, note VARCHAR(20) NULL, PRIMARY KEY (oid, k))",
    "CREATE TABLE gl (gid INT NOT NULL PRIMARY KEY, qty INT NOT NULL, name VARCHAR(16) NOT NULL)",
];

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('ev', 'at', 'ev_default', 'shard0', \"DATE('%Y-%m')\")",
    "HSCALE ADD_PARTITION('ev', 'e01', '2024-01', 'shard1')",
    "HSCALE ADD_PARTITION('ev', 'e02', '2024-02', 'shard2')",
    "HSCALE ADD_PARTITION('ev', 'e03', '2024-03', 'shard3')",
    "HSCALE ADD_PARTITION('ev', 'e04', '2024-04', 'shard1')",
    "HSCALE SETUP_TABLE('od', 'k', 'od_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('od', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('od', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('od', 'm3', '3', 'shard3')",
    "HSCALE SETUP_GLOBAL_TABLE('gl')",
];

fn twin(db: &'static str, reference: &'static str) -> Twin<'static> {
    Twin {
        shards: 4,
        db,
        reference,
        schema: SCHEMA,
        partitioning: PARTITIONING,
    }
}

fn rows_of_od() -> Vec<String> {
    let od: Vec<String> = (1..=16)
        .map(|o| format!("({o}, {}, {}, 'n{o}')", o % 4, (o * 7) % 11))
        .collect();
    vec![
        format!("INSERT INTO od VALUES {}", od.join(", ")),
        "INSERT INTO ev VALUES (1, '2024-01-15 10:00:00', 'a'), (2, '2024-02-29 23:59:59', 'b'), (3, '2024-03-01 00:00:00', 'c')".into(),
        "INSERT INTO gl VALUES (1, 10, 'one'), (2, 20, 'two'), (3, 30, 'three'), (17, 1, 'new')".into(),
    ]
}

/// The tables' rows, one table at a time: a UNION ALL of both ships
/// the rows into a temporary copy written in the session's sql_mode,
/// which changes dates one server reads as they are (F11 in
/// docs/adversarial-findings.md).
const EV: &str = "SELECT id, at, kind FROM ev ORDER BY id, at";
const OD: &str = "SELECT oid, k, qty, note FROM od ORDER BY oid, k";

/// The issue-style example: `'2024-02-30 10:00:00'` without strict mode
/// is the zero date in the column, stored and found where one server
/// stores and finds it.
#[tokio::test]
async fn an_invalid_day_without_strict_mode_is_stored_where_its_zero_date_routes() {
    let t = twin("we_day", "we_day_ref");
    t.create(&rows_of_od()).await;
    let (mut p, mut r) = t.conns().await;
    same_writes(
        &mut p,
        &mut r,
        &[
            "SET sql_mode = ''",
            "INSERT INTO ev (id, at, kind) VALUES (920, '2024-02-30 10:00:00', 'bad')",
        ],
        EV,
    )
    .await;
    for read in [
        "SELECT id, at FROM ev WHERE at = '0000-00-00 00:00:00' ORDER BY id",
        "SELECT id, at FROM ev WHERE at = '2024-02-30 10:00:00' ORDER BY id",
        "SELECT COUNT(*) FROM ev WHERE at < '2024-01-01'",
    ] {
        assert_eq!(rows(&mut p, read).await, rows(&mut r, read).await, "{read}");
    }
}

/// The class: days past their month's end, months and times out of
/// range, leap days, in each sql_mode that decides what the column makes
/// of them (the zero date, the value itself, an error), single and
/// multi-row, then UPDATEs moving rows to such keys; each followed by
/// reads by the stored key.
#[tokio::test]
async fn keys_that_are_no_dates_route_as_the_column_stores_them() {
    let t = twin("we_days", "we_days_ref");
    t.create(&rows_of_od()).await;
    let (mut p, mut r) = t.conns().await;
    same_writes(
        &mut p,
        &mut r,
        &[
            "SET sql_mode = ''",
            "INSERT INTO ev VALUES (10, '2023-02-29', 'noleap')",
            "INSERT INTO ev VALUES (11, '2024-04-31 12:00:00', 'apr31')",
            "INSERT INTO ev VALUES (12, '2024-01-31 23:60:00', 'min60')",
            "INSERT INTO ev VALUES (13, '2024-02-00', 'day0'), (14, '2024-03-15', 'fine')",
            "INSERT INTO ev VALUES (15, '2024-13-01', 'm13'), (16, '2024-02-29', 'leap')",
            "SET sql_mode = 'ALLOW_INVALID_DATES'",
            "INSERT INTO ev VALUES (20, '2024-02-30 10:00:00', 'inv'), (21, '2024-04-31', 'inv')",
            "INSERT INTO ev VALUES (22, '2024-02-31 23:59:59', 'inv')",
            "SET sql_mode = DEFAULT",
            "INSERT INTO ev VALUES (30, '2024-02-30', 'strict')",
            "INSERT INTO ev VALUES (31, '2024-03-10', 'ok'), (32, '2024-03-32', 'strict')",
            "SET sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_IN_DATE'",
            "INSERT INTO ev VALUES (33, '2024-02-00', 'zero')",
            "SET sql_mode = ''",
        ],
        EV,
    )
    .await;
    // An UPDATE moving a row to such a key: refused (1235), nothing
    // written (it used to move the row to 2024-04's partition, where the
    // column stored the zero date).
    let before = rows(&mut p, EV).await;
    let sql = "UPDATE ev SET at = '2024-04-31' WHERE id = 14";
    assert_eq!(run(&mut p, sql).await, Done::Err(1235), "{sql}");
    assert_eq!(rows(&mut p, EV).await, before);
    for read in [
        "SELECT id FROM ev WHERE at = '0000-00-00 00:00:00' ORDER BY id",
        "SELECT id FROM ev WHERE at = '2024-02-30 10:00:00' ORDER BY id",
        "SELECT id FROM ev WHERE at = '2024-04-31 00:00:00' ORDER BY id",
        "SELECT id FROM ev WHERE at = '2024-02-31 23:59:59' ORDER BY id",
        "SELECT id FROM ev WHERE at = '2024-02-29' ORDER BY id",
        "SELECT id FROM ev WHERE at >= '2024-02-01' AND at < '2024-03-01' ORDER BY id",
    ] {
        assert_eq!(rows(&mut p, read).await, rows(&mut r, read).await, "{read}");
    }
}

/// The example: `INSERT ... SELECT ... FROM od ... ON DUPLICATE KEY
/// UPDATE qty = od.qty + 100` is one server's 1052, writing nothing.
#[tokio::test]
async fn an_upsert_from_a_select_of_the_same_table_naming_its_column_is_ambiguous() {
    let t = twin("we_ups", "we_ups_ref");
    t.create(&rows_of_od()).await;
    let (mut p, mut r) = t.conns().await;
    same_writes(
        &mut p,
        &mut r,
        &["INSERT INTO od (oid, k, qty) SELECT oid, k, 1 FROM od WHERE oid <= 5 ON DUPLICATE KEY UPDATE qty = od.qty + 100"],
        OD,
    )
    .await;
}

/// The class: names of the UPDATE clause of an `INSERT ... SELECT`
/// resolved as one server resolves them (ambiguous: 1052 and nothing
/// written; the inserted table's own or in VALUES(): written), over a
/// partitioned SELECT, a global one and joins; names of the SELECT's row
/// alone are refused (1235), writing nothing.
#[tokio::test]
async fn upsert_names_from_a_select_resolve_as_one_server_resolves_them() {
    let t = twin("we_upn", "we_upn_ref");
    t.create(&rows_of_od()).await;
    let (mut p, mut r) = t.conns().await;
    same_writes(
        &mut p,
        &mut r,
        &[
            "INSERT INTO od (oid, k, qty) SELECT oid, k, 1 FROM od WHERE oid <= 5 ON DUPLICATE KEY UPDATE qty = qty + 100",
            "INSERT INTO od (oid, k, qty) SELECT oid, k, 1 FROM od WHERE oid <= 5 ON DUPLICATE KEY UPDATE note = CONCAT(note, qty)",
            "INSERT INTO od (oid, k, qty) SELECT oid, k, 1 FROM od WHERE oid <= 5 ON DUPLICATE KEY UPDATE qty = VALUES(qty) + 1",
            "INSERT INTO od (oid, k, qty) SELECT oid, k, 1 FROM od WHERE oid <= 5 ON DUPLICATE KEY UPDATE note = 'dup'",
            "INSERT INTO od (oid, k, qty) SELECT s.oid, s.k, 1 FROM od AS s WHERE s.oid <= 5 ON DUPLICATE KEY UPDATE qty = od.qty + 1",
            "INSERT INTO od (oid, k, qty) SELECT s.oid, s.k, 1 FROM od AS s WHERE s.oid <= 5 ON DUPLICATE KEY UPDATE qty = qty + 1",
            "INSERT INTO od (oid, k, qty) SELECT gid, gid % 4, 1 FROM gl ON DUPLICATE KEY UPDATE qty = qty + 1",
            "INSERT INTO od (oid, k, qty) SELECT gid, gid % 4, 1 FROM gl ON DUPLICATE KEY UPDATE qty = od.qty + VALUES(qty)",
            "INSERT INTO od (oid, k, qty, note) SELECT gid, gid % 4, qty, name FROM gl WHERE gid < 3 ON DUPLICATE KEY UPDATE note = VALUES(note)",
            "INSERT INTO od (oid, k, qty) SELECT oid, k, COUNT(*) FROM od GROUP BY oid, k ON DUPLICATE KEY UPDATE qty = qty + 1",
        ],
        OD,
    )
    .await;
    // Names only the SELECT's row has: refused, nothing written.
    let before = rows(&mut p, OD).await;
    for sql in [
        "INSERT INTO od (oid, k, qty) SELECT s.oid, s.k, 1 FROM od AS s WHERE s.oid <= 5 ON DUPLICATE KEY UPDATE qty = s.qty + 100",
        "INSERT INTO od (oid, k, qty) SELECT gid, gid % 4, 1 FROM gl ON DUPLICATE KEY UPDATE qty = gl.gid",
        "INSERT INTO od (oid, k, qty) SELECT gid, gid % 4, 1 FROM gl ON DUPLICATE KEY UPDATE note = name",
        "INSERT INTO od (oid, k, qty) SELECT o2.oid, o2.k, 1 FROM od o2 JOIN gl ON gl.gid = o2.k WHERE o2.oid < 9 ON DUPLICATE KEY UPDATE qty = gl.qty",
    ] {
        assert_eq!(run(&mut p, sql).await, Done::Err(1235), "{sql}");
    }
    assert_eq!(rows(&mut p, OD).await, before);
}
