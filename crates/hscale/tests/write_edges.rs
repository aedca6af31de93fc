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
use mysql_async::Conn;

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

/// The twin databases `db` and `reference` created with [`rows_of_od`]:
/// a connection to each.
async fn with_rows(db: &'static str, reference: &'static str) -> (Conn, Conn) {
    let t = twin(db, reference);
    t.create(&rows_of_od()).await;
    t.conns().await
}

/// Each of `reads` answers the same rows on both.
async fn same_reads(p: &mut Conn, r: &mut Conn, reads: &[&str]) {
    for read in reads {
        assert_eq!(rows(p, read).await, rows(r, read).await, "{read}");
    }
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
    let (mut p, mut r) = with_rows("we_day", "we_day_ref").await;
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
    same_reads(
        &mut p,
        &mut r,
        &[
            "SELECT id, at FROM ev WHERE at = '0000-00-00 00:00:00' ORDER BY id",
            "SELECT id, at FROM ev WHERE at = '2024-02-30 10:00:00' ORDER BY id",
            "SELECT COUNT(*) FROM ev WHERE at < '2024-01-01'",
        ],
    )
    .await;
}

/// The class: days past their month's end, months and times out of
/// range, leap days, in each sql_mode that decides what the column makes
/// of them (the zero date, the value itself, an error), single and
/// multi-row, then UPDATEs moving rows to such keys; each followed by
/// reads by the stored key.
#[tokio::test]
async fn keys_that_are_no_dates_route_as_the_column_stores_them() {
    let (mut p, mut r) = with_rows("we_days", "we_days_ref").await;
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
    same_reads(
        &mut p,
        &mut r,
        &[
            "SELECT id FROM ev WHERE at = '0000-00-00 00:00:00' ORDER BY id",
            "SELECT id FROM ev WHERE at = '2024-02-30 10:00:00' ORDER BY id",
            "SELECT id FROM ev WHERE at = '2024-04-31 00:00:00' ORDER BY id",
            "SELECT id FROM ev WHERE at = '2024-02-31 23:59:59' ORDER BY id",
            "SELECT id FROM ev WHERE at = '2024-02-29' ORDER BY id",
            "SELECT id FROM ev WHERE at >= '2024-02-01' AND at < '2024-03-01' ORDER BY id",
        ],
    )
    .await;
}

/// The example: `INSERT ... SELECT ... FROM od ... ON DUPLICATE KEY
/// UPDATE qty = od.qty + 100` is one server's 1052, writing nothing.
#[tokio::test]
async fn an_upsert_from_a_select_of_the_same_table_naming_its_column_is_ambiguous() {
    let (mut p, mut r) = with_rows("we_ups", "we_ups_ref").await;
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
    let (mut p, mut r) = with_rows("we_upn", "we_upn_ref").await;
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

/// F11 (found in the sixth pass): a read that ships a table into a
/// temporary copy (a join of tables partitioned differently, a UNION
/// ALL, a subquery over another partitioned table) wrote the copy in the
/// session's sql_mode. Under strict NO_ZERO_DATE a stored zero date
/// failed the read with 1292; one server reads it.
#[tokio::test]
async fn a_zero_date_reads_through_a_shipped_copy_under_strict_no_zero_date() {
    let (mut p, mut r) = with_rows("we_zero", "we_zero_ref").await;
    same_writes(
        &mut p,
        &mut r,
        &[
            "SET sql_mode = ''",
            "INSERT INTO ev VALUES (1, '0000-00-00 00:00:00', 'zero')",
            "SET sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE'",
        ],
        EV,
    )
    .await;
    let explained = rows(&mut p, &format!("HSCALE EXPLAIN {SHIPPING_JOIN}")).await;
    assert!(
        format!("{explained:?}").contains("ship into temporary table"),
        "{explained:?}"
    );
    for read in [SHIPPING_JOIN, SHIPPING_UNION] {
        let want = answer(&mut r, read, None).await;
        assert!(matches!(want, Answer::Rows { .. }), "{read}: {want:?}");
        assert_eq!(answer(&mut p, read, None).await, want, "{read}");
    }
}

/// F11's second example: a '2024-02-30' stored under
/// ALLOW_INVALID_DATES read back as the zero date through a shipped copy
/// in a session without it; one server reads the day as stored.
#[tokio::test]
async fn an_invalid_day_stored_under_allow_invalid_dates_reads_back_through_a_shipped_copy() {
    let (mut p, mut r) = with_rows("we_inv", "we_inv_ref").await;
    same_writes(
        &mut p,
        &mut r,
        &[
            "SET sql_mode = 'ALLOW_INVALID_DATES'",
            "INSERT INTO ev VALUES (2, '2024-02-30 10:00:00', 'inv')",
            "SET sql_mode = ''",
        ],
        EV,
    )
    .await;
    // One server's join reads the day as stored; its UNION ALL, whose
    // result goes through a temporary table written in the session's
    // mode, reads the zero date: each as one server answers.
    let want = answer(&mut r, SHIPPING_JOIN, None).await;
    assert!(
        format!("{want:?}").contains("2024-02-30 10:00:00"),
        "{want:?}"
    );
    for read in [SHIPPING_JOIN, SHIPPING_UNION] {
        let want = answer(&mut r, read, None).await;
        assert_eq!(answer(&mut p, read, None).await, want, "{read}");
    }
}

/// A join of `ev` (by month) with `od` (MOD(4) of k) on other columns:
/// one of them is shipped next to the other's partitions.
const SHIPPING_JOIN: &str =
    "SELECT e.id, e.at, e.kind, o.qty FROM ev e JOIN od o ON o.oid = e.id ORDER BY e.id, e.at";
const SHIPPING_UNION: &str =
    "SELECT id, at FROM ev UNION ALL SELECT oid, NULL FROM od WHERE oid < 4 ORDER BY 1, 2";

const SV_SCHEMA: &[&str] = &[
    SCHEMA[1],
    "CREATE TABLE sv (id INT NOT NULL PRIMARY KEY, d DATE NULL DEFAULT '0000-00-00', dt DATETIME NULL, ts TIMESTAMP NULL DEFAULT NULL, t TIME NULL, de DECIMAL(6,2) NULL, note VARCHAR(6) NOT NULL DEFAULT '', c CHAR(4) NULL, e ENUM('x','y') NULL, g INT AS (id * 2) VIRTUAL, CONSTRAINT small CHECK (de < 5000))",
];

const SV_PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('od', 'k', 'od_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('od', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('od', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('od', 'm3', '3', 'shard3')",
    "HSCALE SETUP_TABLE('sv', 'id', 'sv_default', 'shard1', 'MOD(3)')",
    "HSCALE ADD_PARTITION('sv', 's1', '1', 'shard2')",
    "HSCALE ADD_PARTITION('sv', 's2', '2', 'shard3')",
];

/// The class: every value a column can hold that some sql_mode would not
/// store again as it is (zero dates and zero parts, invalid days, the
/// empty string, ENUM's '' of an invalid member, a DECIMAL a CHECK
/// constraint now refuses, a zero DEFAULT in the definition, a generated
/// column), read through shipped copies (joins, UNION ALL, subqueries,
/// aggregates, prepared, inside a transaction) in every sql_mode that
/// would change them: the same answer as one server, warnings included.
#[tokio::test]
async fn shipped_copies_keep_every_stored_value_in_every_sql_mode() {
    let (mut p, mut r) = sv_twin("we_sv", "we_sv_ref").await;
    let reads = [
        "SELECT s.id, s.d, s.dt, s.ts, s.t, s.de, s.note, s.c, s.e, s.g FROM sv s JOIN od o ON o.oid = s.id ORDER BY s.id",
        "SELECT o.oid, o.qty FROM od o JOIN sv s ON s.id = o.oid WHERE s.d = '0000-00-00' OR s.note = '' ORDER BY o.oid",
        "SELECT id, d, note FROM sv UNION ALL SELECT oid, NULL, note FROM od WHERE oid > 6 ORDER BY 1, 3",
        "SELECT id, dt, e FROM sv WHERE id IN (SELECT oid FROM od WHERE qty > 3) ORDER BY id",
        "SELECT COUNT(*), SUM(s.de), MIN(s.d), MAX(s.dt) FROM sv s JOIN od o ON o.oid = s.id WHERE s.e = '' OR s.d IS NULL OR s.c = ''",
        "SELECT s.id, CONCAT('[', s.c, ']'), LENGTH(s.c) FROM sv s JOIN od o ON o.oid = s.id ORDER BY s.id",
    ];
    let modes = [
        "''",
        "DEFAULT",
        "'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE'",
        "'TRADITIONAL'",
        "'ALLOW_INVALID_DATES'",
        "'EMPTY_STRING_IS_NULL'",
        "'NO_BACKSLASH_ESCAPES'",
        "'PAD_CHAR_TO_FULL_LENGTH'",
        "'ANSI,STRICT_ALL_TABLES'",
    ];
    for mode in modes {
        let set = format!("SET sql_mode = {mode}");
        assert_eq!(run(&mut p, &set).await, run(&mut r, &set).await, "{set}");
        for read in reads {
            let want = answer(&mut r, read, None).await;
            assert!(
                matches!(want, Answer::Rows { .. }),
                "{mode}: {read}: {want:?}"
            );
            assert_eq!(answer(&mut p, read, None).await, want, "{mode}: {read}");
        }
        // Prepared, and inside a transaction (the copies written on its
        // branches).
        let prepared = "SELECT s.id, s.d, s.dt, s.e, s.note FROM sv s JOIN od o ON o.oid = s.id WHERE s.id > ? ORDER BY s.id";
        let params = || Some(vec![mysql_async::Value::Int(0)]);
        let want = answer(&mut r, prepared, params()).await;
        assert_eq!(
            answer(&mut p, prepared, params()).await,
            want,
            "{mode}: {prepared}"
        );
        for c in [&mut p, &mut r] {
            assert_eq!(run(c, "BEGIN").await, Done::Ok(0, 0));
        }
        let read = reads[0];
        let want = answer(&mut r, read, None).await;
        assert_eq!(
            answer(&mut p, read, None).await,
            want,
            "{mode}, in a transaction: {read}"
        );
        for c in [&mut p, &mut r] {
            assert_eq!(run(c, "COMMIT").await, Done::Ok(0, 0));
        }
    }
    // CREATE TABLE ... SELECT over copies, under strict NO_ZERO_DATE: the
    // server's own answer (it checks what it writes into the new table).
    let set = "SET sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE'";
    assert_eq!(run(&mut p, set).await, run(&mut r, set).await);
    for sql in [
        "CREATE TABLE cs1 SELECT s.id, s.note FROM sv s JOIN od o ON o.oid = s.id",
        "CREATE TABLE cs2 SELECT s.id, s.d FROM sv s JOIN od o ON o.oid = s.id",
    ] {
        assert_eq!(run(&mut p, sql).await, run(&mut r, sql).await, "{sql}");
    }
    let read = "SELECT id, note FROM cs1 ORDER BY id";
    assert_eq!(rows(&mut p, read).await, rows(&mut r, read).await);
}

/// `sv` (every value some sql_mode would not store again) and `od`, with
/// their rows, partitioned beside a reference database: a client of each.
async fn sv_twin(
    db: &'static str,
    reference: &'static str,
) -> (mysql_async::Conn, mysql_async::Conn) {
    let t = Twin {
        shards: 4,
        db,
        reference,
        schema: SV_SCHEMA,
        partitioning: SV_PARTITIONING,
    };
    let od: Vec<String> = (1..=8)
        .map(|o| format!("({o}, {}, {}, 'n{o}')", o % 4, o * 3))
        .collect();
    t.create(&[
        format!("INSERT INTO od VALUES {}", od.join(", ")),
        "SET sql_mode = 'ALLOW_INVALID_DATES', check_constraint_checks = 0".into(),
        "INSERT INTO sv (id, d, dt, ts, t, de, note, c, e) VALUES \
         (1, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '-838:59:59', 9999.99, '', 'ab', 'y'), \
         (2, '2024-02-30', '2024-02-31 10:00:00', NULL, '838:59:59', -9999.99, 'a\\\\b', 'x  ', NULL), \
         (3, '2024-02-00', '2024-00-10 00:00:00', '2024-03-01 00:00:00', '00:00:00', 0, ' ', NULL, 'x'), \
         (4, NULL, NULL, NULL, NULL, NULL, 'x', '', 'z'), \
         (5, DEFAULT, '2024-04-31 23:59:59', '1970-01-01 00:00:01', '-00:00:01', 0.01, 'six ch', 'four', '')"
            .into(),
        "INSERT INTO sv (id) VALUES (6), (7)".into(),
        "SET sql_mode = DEFAULT, check_constraint_checks = 1".into(),
    ])
    .await;
    t.conns().await
}

const SV: &str = "SELECT id, d, dt, ts, t, de, note, c, e, g FROM sv ORDER BY id";

/// An UPDATE that moves rows to another partition writes them there with
/// their other columns as stored, whatever the session's sql_mode: one
/// server's UPDATE leaves a column it does not assign as it is (a zero
/// date under strict NO_ZERO_DATE, '2024-02-30' without
/// ALLOW_INVALID_DATES, '' under EMPTY_STRING_IS_NULL, ENUM's '').
#[tokio::test]
async fn a_moved_row_keeps_the_values_its_session_s_sql_mode_would_not_store() {
    let (mut p, mut r) = sv_twin("we_svm", "we_svm_ref").await;
    same_writes(
        &mut p,
        &mut r,
        &[
            "SET sql_mode = ''",
            "UPDATE sv SET id = id + 10 WHERE id = 2",
            "SET sql_mode = 'EMPTY_STRING_IS_NULL'",
            "UPDATE sv SET id = 31 WHERE id = 5",
            "SET sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE'",
            "UPDATE sv SET id = id + 10 WHERE id = 3",
            "UPDATE sv SET id = id + 20 WHERE id = 4",
            "SET sql_mode = 'TRADITIONAL'",
            "UPDATE sv SET id = 40 WHERE id = 6",
            "UPDATE sv SET id = 41, note = '' WHERE id = 7",
            "SET sql_mode = DEFAULT",
            "UPDATE sv SET id = 50 WHERE id = 1",
            "SET check_constraint_checks = 0",
            "UPDATE sv SET id = 50 WHERE id = 1",
        ],
        SV,
    )
    .await;
    same_reads(
        &mut p,
        &mut r,
        &[
            "SELECT id, d, dt FROM sv WHERE id = 12",
            "SELECT id, note FROM sv WHERE id = 31",
            "SELECT id, d, dt FROM sv WHERE id = 13",
            "SELECT id, e FROM sv WHERE id = 24",
            "SELECT id, d FROM sv WHERE id = 40",
            "SELECT id, note FROM sv WHERE id = 41",
            "SELECT id, de FROM sv WHERE id = 50",
        ],
    )
    .await;
}

/// A multi-table UPDATE assigning a partition key whose rows lie on one
/// partition: afterwards every row is found by its key (none left in the
/// partition of its old key) and the table holds one server's rows; or
/// the statement is refused, writing nothing.
#[tokio::test]
async fn a_multi_table_update_of_the_key_on_one_partition_leaves_no_row_misplaced() {
    let (mut p, mut r) = with_rows("we_mtk", "we_mtk_ref").await;
    for sql in [
        "UPDATE od a JOIN od b ON b.oid = a.oid AND b.k = a.k SET a.k = 2 WHERE a.k = 1 AND b.k = 1",
        "UPDATE od a JOIN od b ON b.oid = a.oid AND b.k = a.k SET a.qty = 0, a.k = a.k + 1 WHERE a.k = 3 AND b.k = 3",
        "UPDATE od a, od b SET a.k = 0 WHERE a.k = 2 AND b.k = 2 AND a.oid = b.oid",
        "UPDATE od a JOIN od b ON b.oid = a.oid AND b.k = a.k SET k = 2 WHERE a.k = 1 AND b.k = 1",
        "UPDATE od o JOIN ev e ON e.id = o.oid SET k = 3 WHERE o.k = 1 AND e.at = '2024-01-15 10:00:00'",
        "UPDATE od AS o JOIN ev e ON e.id = o.oid SET `O`.`k` = 3 WHERE o.k = 1 AND e.at = '2024-01-15 10:00:00'",
    ] {
        let before = rows(&mut p, OD).await;
        match run(&mut p, sql).await {
            Done::Err(1235) => assert_eq!(rows(&mut p, OD).await, before, "{sql}"),
            got => {
                assert_eq!(got, run(&mut r, sql).await, "{sql}");
                assert_eq!(rows(&mut p, OD).await, rows(&mut r, OD).await, "{sql}");
            }
        }
        for k in 0..4 {
            let read = format!("SELECT oid, k, qty FROM od WHERE k = {k} ORDER BY oid");
            let all = format!("SELECT oid, k, qty FROM od WHERE k + 0 = {k} ORDER BY oid");
            assert_eq!(
                rows(&mut p, &read).await,
                rows(&mut p, &all).await,
                "{sql}: {read}"
            );
        }
    }
}

/// Moving a partition to another backend and carving one out of the
/// default partition copy its rows as they are stored: values the
/// servers' global sql_mode (strict) would not store again (a zero date
/// and '2024-02-00', '2024-02-30', ENUM's '', a DECIMAL a CHECK
/// constraint refuses) arrive unchanged.
#[tokio::test]
async fn partition_changes_copy_values_a_strict_mode_would_not_store() {
    let (mut p, mut r) = sv_twin("we_svc", "we_svc_ref").await;
    let want = rows(&mut r, SV).await;
    for change in [
        "HSCALE MOVE_PARTITION('sv', 's1', 'shard0')",
        "HSCALE MOVE_PARTITION('sv', 's2', 'shard1')",
        "HSCALE ADD_PARTITION('sv', 's0', '0', 'shard2')",
    ] {
        let done = run(&mut p, change).await;
        assert!(matches!(done, Done::Ok(..)), "{change}: {done:?}");
        assert_eq!(rows(&mut p, SV).await, want, "after {change}");
    }
}

/// Values a statement reads from rows and hscale writes in as literals
/// (INSERT ... SELECT over partitions, a multi-table UPDATE's values of
/// other tables) are the rows' values: under EMPTY_STRING_IS_NULL an
/// empty string read is written as the empty string (the mode makes NULL
/// of the statement's own `''` only), as one server writes it. (ENUM's
/// '' of an invalid member is written as the string '', which warns, or
/// fails in strict mode, where one server copies it: queries.md.)
#[tokio::test]
async fn empty_strings_read_from_rows_are_written_as_empty_strings() {
    let (mut p, mut r) = sv_twin("we_sve", "we_sve_ref").await;
    same_writes(
        &mut p,
        &mut r,
        &[
            "SET sql_mode = 'EMPTY_STRING_IS_NULL'",
            "INSERT INTO sv (id, note, c) SELECT id + 100, note, c FROM sv WHERE id IN (1, 4, 5)",
            "INSERT INTO od (oid, k, qty, note) SELECT id, 3, 0, note FROM sv WHERE id < 6",
            "UPDATE od o JOIN sv s ON s.id = o.oid SET o.note = s.note WHERE o.oid < 6",
            "UPDATE od o JOIN sv s ON s.id = o.oid SET o.note = s.c WHERE o.oid = 4",
        ],
        SV,
    )
    .await;
    same_reads(
        &mut p,
        &mut r,
        &[
            "SELECT oid, k, qty, note, note IS NULL FROM od ORDER BY oid, k",
            "SELECT id, note IS NULL, c IS NULL FROM sv WHERE id > 100 ORDER BY id",
        ],
    )
    .await;
}
