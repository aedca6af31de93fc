#![allow(clippy::unwrap_used)]
//! Issue 29, the adversarial run's F4: the ids of INSERTs into a table
//! with a sequence, compared with one plain database of the same server
//! (`REF`, not partitioned, its own AUTO_INCREMENT): an INSERT with an
//! explicit id that fails leaves the next generated id where it was, and
//! the OK packet of a multi-row INSERT with explicit ids split over
//! partitions carries one server's insert id (the last row's). And F7's
//! keys no date holds: the server's own error (1292) or zero date.
//!
//! Four backends; `ev` partitioned by month as in the adversarial run.

mod common;

use common::twin::Twin;
use common::*;
use mysql_async::prelude::*;
use mysql_async::Conn;

const DB: &str = "ids_part";
const REF: &str = "ids_ref";

const EV: &str = "CREATE TABLE ev (id BIGINT NOT NULL AUTO_INCREMENT, at DATETIME NOT NULL, kind VARCHAR(8) NOT NULL, amt DECIMAL(10,2), PRIMARY KEY (id, at))";

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('ev', 'at', 'ev_default', 'shard0', 'DATE(\"%Y-%m\")')",
    "HSCALE ADD_PARTITION('ev', 'ev1', '2024-01', 'shard1')",
    "HSCALE ADD_PARTITION('ev', 'ev2', '2024-02', 'shard2')",
    "HSCALE ADD_PARTITION('ev', 'ev3', '2024-03', 'shard3')",
];

/// 33 events, ids 1..=33, from 2023-12-24 to 2024-05 (the adversarial
/// run's rows).
fn ev_rows() -> String {
    let rows: Vec<String> = (1..=30usize)
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
    format!("INSERT INTO ev VALUES {}", rows.join(", "))
}

/// A fresh `ev` in both databases (each test its own suffix, so tests
/// running at once do not share a sequence).
async fn fresh(name: &str) -> (Conn, Conn) {
    let (db, reference) = (format!("{DB}_{name}"), format!("{REF}_{name}"));
    Twin {
        shards: 4,
        db: &db,
        reference: &reference,
        schema: &[EV],
        partitioning: PARTITIONING,
    }
    .create_rows_first(&[ev_rows()])
    .await;
    // The reference directly on the main backend, where hscale created
    // it: one server's session (its LAST_INSERT_ID()) as well.
    (
        proxy_conn(Some(&db)).await,
        backend_conn(0, Some(&reference)).await,
    )
}

/// What a statement answered: an error code, or its OK's affected rows
/// and insert id; then the session's LAST_INSERT_ID().
async fn answer(c: &mut Conn, sql: &str) -> String {
    let ok = match c.query_drop(sql).await {
        Ok(()) => format!(
            "ok affected {} insert id {:?}",
            c.affected_rows(),
            c.last_insert_id()
        ),
        Err(e) => format!("error {}", code(&e)),
    };
    let last: Option<u64> = c.query_first("SELECT LAST_INSERT_ID()").await.unwrap();
    format!("{ok}; LAST_INSERT_ID() {last:?}")
}

async fn ev(c: &mut Conn) -> Vec<(u64, String, String, Option<String>)> {
    c.query("SELECT id, at, kind, amt FROM ev ORDER BY id, at")
        .await
        .unwrap()
}

/// `statements` through hscale and on one server: the same answers, then
/// the same rows.
async fn same(p: &mut Conn, r: &mut Conn, statements: &[&str]) {
    for sql in statements {
        assert_eq!(answer(p, sql).await, answer(r, sql).await, "{sql}");
    }
    assert_eq!(ev(p).await, ev(r).await);
}

/// `sql` fails through hscale and on one server (with any code: F7 is
/// about which), and stores nothing.
async fn fails(p: &mut Conn, r: &mut Conn, sql: &str) {
    for c in [&mut *p, &mut *r] {
        assert!(c.query_drop(sql).await.is_err(), "{sql} answered");
    }
    assert_eq!(ev(p).await, ev(r).await);
}

/// The findings' example: an INSERT with the explicit id 600 fails (its
/// key is no date); the next generated id is one server's, and so is
/// LAST_INSERT_ID() after it (one server: the counter stays).
#[tokio::test]
async fn failed_explicit_id_leaves_the_next_id() {
    let (mut p, mut r) = fresh("failed").await;
    same(
        &mut p,
        &mut r,
        &["INSERT INTO ev (at, kind) VALUES ('2024-01-05', 'a')"],
    )
    .await;
    fails(
        &mut p,
        &mut r,
        "INSERT INTO ev (id, at, kind) VALUES (600, 'not a date', 'q')",
    )
    .await;
    same(
        &mut p,
        &mut r,
        &[
            "INSERT INTO ev (at, kind) VALUES ('2024-03-03', 'r') ON DUPLICATE KEY UPDATE amt = 1",
            "SELECT LAST_INSERT_ID()",
        ],
    )
    .await;
    // Prepared, after it.
    for c in [&mut p, &mut r] {
        c.exec_drop(
            "INSERT INTO ev (at, kind, amt) VALUES (?, ?, ?)",
            ("2024-03-09 08:07:06", "prep", 1.25),
        )
        .await
        .unwrap();
    }
    assert_eq!(p.last_insert_id(), r.last_insert_id());
    assert_eq!(ev(&mut p).await, ev(&mut r).await);
}

/// The class: other failures with an explicit id past the counter (a
/// NULL for a NOT NULL column, an over-long value, a wrong column count,
/// an out-of-range value), several rows of one partition failing at the
/// first, in a transaction, and prepared; each time the next generated id
/// is one server's. (Rows of several partitions failing part-way move the
/// counter past their largest id: docs/src/sequences.md.)
#[tokio::test]
async fn failed_explicit_ids_leave_the_next_id_class() {
    let (mut p, mut r) = fresh("class").await;
    for bad in [
        "INSERT INTO ev (id, at, kind) VALUES (700, '2024-01-02', NULL)",
        "INSERT INTO ev (id, at, kind) VALUES (701, '2024-02-02', 'much too long a kind')",
        "INSERT INTO ev (id, at, kind) VALUES (702, '2024-02-02')",
        "INSERT INTO ev (id, at, kind) VALUES (703, '2024-01-02', NULL), (704, '2024-01-03', 'x')",
        "INSERT INTO ev (id, at, kind, amt) VALUES (705, '2024-03-02', 'x', 123456789012)",
    ] {
        fails(&mut p, &mut r, bad).await;
        same(
            &mut p,
            &mut r,
            &["INSERT INTO ev (at, kind) VALUES ('2024-01-06', 'n')"],
        )
        .await;
    }
    for c in [&mut p, &mut r] {
        c.query_drop("BEGIN").await.unwrap();
    }
    fails(
        &mut p,
        &mut r,
        "INSERT INTO ev (id, at, kind) VALUES (800, '2024-03-02', NULL)",
    )
    .await;
    same(
        &mut p,
        &mut r,
        &[
            "INSERT INTO ev (at, kind) VALUES ('2024-02-06', 't')",
            "COMMIT",
        ],
    )
    .await;
    for c in [&mut p, &mut r] {
        let e = c
            .exec_drop(
                "INSERT INTO ev (id, at, kind) VALUES (?, ?, ?)",
                (900, "2024-01-03", None::<String>),
            )
            .await;
        assert!(e.is_err());
    }
    same(
        &mut p,
        &mut r,
        &["INSERT INTO ev (at, kind) VALUES ('2024-03-06', 'p')"],
    )
    .await;
    // A successful explicit id moves the counter past it, as one server's.
    same(
        &mut p,
        &mut r,
        &[
            "INSERT INTO ev (id, at, kind) VALUES (950, '2024-01-09', 'e')",
            "INSERT INTO ev (at, kind) VALUES ('2024-01-10', 'after')",
        ],
    )
    .await;
}

/// The findings' example: three explicit ids in three partitions; one
/// server's OK carries the last row's id (702), hscale's carried the
/// first's.
#[tokio::test]
async fn multi_row_explicit_ids_report_the_last_rows_id() {
    let (mut p, mut r) = fresh("multi").await;
    same(
        &mut p,
        &mut r,
        &["INSERT INTO ev (id, at, kind) VALUES (700, '2024-2-5', 'sp'), (701, 20240306, 'num'), (702, '2024/01/07 10:00', 'sl')"],
    )
    .await;
}

/// The class: the last row in the default partition, in the first
/// partition, two rows in one partition, ids not ascending, IGNORE with
/// the last row a duplicate, REPLACE, and generated ids beside explicit
/// ones (the first generated id, as on one server).
#[tokio::test]
async fn multi_row_explicit_ids_class() {
    let (mut p, mut r) = fresh("multi_class").await;
    same(
        &mut p,
        &mut r,
        &[
            "INSERT INTO ev (id, at, kind) VALUES (710, '2024-01-05', 'a'), (711, '2024-09-01', 'd')",
            "INSERT INTO ev (id, at, kind) VALUES (720, '2024-03-05', 'a'), (721, '2024-01-01', 'b')",
            "INSERT INTO ev (id, at, kind) VALUES (731, '2024-02-05', 'a'), (730, '2024-02-06', 'b'), (732, '2024-01-06', 'c')",
            "INSERT INTO ev (id, at, kind) VALUES (745, '2024-03-05', 'a'), (740, '2024-01-05', 'b'), (741, '2024-02-05', 'c')",
            "INSERT IGNORE INTO ev (id, at, kind) VALUES (750, '2024-01-05', 'a'), (710, '2024-01-05', 'dup')",
            "REPLACE INTO ev (id, at, kind) VALUES (760, '2024-03-05', 'a'), (720, '2024-03-05', 'r')",
            "INSERT INTO ev (at, kind) VALUES ('2024-01-05', 'g1'), ('2024-02-05', 'g2')",
            // Last: InnoDB reserves more ids than such a mixed statement
            // uses (its "mixed-mode inserts"), which the next would see.
            "INSERT INTO ev (id, at, kind) VALUES (790, '2024-01-05', 'a'), (NULL, '2024-02-05', 'g')",
        ],
    )
    .await;
}

/// What a statement answered, with its error message or its warnings.
async fn answer_full(c: &mut Conn, sql: &str) -> String {
    let ok = match c.query_drop(sql).await {
        Ok(()) => format!("ok affected {}", c.affected_rows()),
        // The database's name aside (each side has its own).
        Err(mysql_async::Error::Server(e)) => {
            let message = e.message.replace(DB, "db").replace(REF, "db");
            return format!("error {} {message}", e.code);
        }
        Err(e) => return format!("error {e}"),
    };
    let warnings: Vec<(String, u16, String)> = c.query("SHOW WARNINGS").await.unwrap();
    format!("{ok}; {warnings:?}")
        .replace(DB, "db")
        .replace(REF, "db")
}

/// The adversarial run's F7: a DATETIME key no date can be read from
/// ('not a date', hour 24, month 13) is the zero date to the server;
/// hscale refused it (1235 "DATE cannot take the value '0000-00-00
/// 00:00:00'") where one server answers 1292 in strict mode and stores
/// the zero date with warning 1265 without it. Such a key goes to the
/// partition of the zero date (the default one, '0000-00' has none),
/// where the server answers for itself.
#[tokio::test]
async fn keys_no_date_holds_answer_the_servers_error() {
    let (mut p, mut r) = fresh("bad_dates").await;
    for sql in [
        "INSERT INTO ev (id, at, kind) VALUES (600, 'not a date', 'q')",
        "INSERT INTO ev (id, at, kind) VALUES (801, '2024-02-29 24:00:00', 'bad')",
        "INSERT INTO ev (id, at, kind) VALUES (901, '2024-13-01', 'bad')",
        "INSERT INTO ev (id, at, kind) VALUES (902, '2024-01-01', 'ok'), (903, 'bad', 'bad')",
    ] {
        assert_eq!(
            answer_full(&mut p, sql).await,
            answer_full(&mut r, sql).await,
            "{sql}"
        );
    }
    assert_eq!(ev(&mut p).await, ev(&mut r).await);
    // INSERT IGNORE, and without strict mode: the zero date is stored,
    // with the server's warning, and read back by its key.
    for sql in [
        "INSERT IGNORE INTO ev (id, at, kind) VALUES (900, 'bad', 'ig')",
        "SET sql_mode = ''",
        "INSERT INTO ev (id, at, kind) VALUES (904, 'bad', 'ns')",
        "INSERT INTO ev (id, at, kind) VALUES (905, '0000-00-00', 'zero')",
        "SET sql_mode = DEFAULT",
    ] {
        assert_eq!(
            answer_full(&mut p, sql).await,
            answer_full(&mut r, sql).await,
            "{sql}"
        );
    }
    assert_eq!(ev(&mut p).await, ev(&mut r).await);
    let zero = "SELECT id, kind FROM ev WHERE at = '0000-00-00 00:00:00' ORDER BY id";
    let got: Vec<(u64, String)> = p.query(zero).await.unwrap();
    let want: Vec<(u64, String)> = r.query(zero).await.unwrap();
    assert_eq!(got, want);
    assert_eq!(got.len(), 3);
}

/// The adversarial run's F5: INSERT / REPLACE ... RETURNING whose rows go
/// to one partition was refused; the server's rows now come back, with
/// the ids the sequence generated and LAST_INSERT_ID() after them. Over
/// several partitions it stays refused (1235), nothing written.
#[tokio::test]
async fn insert_returning_on_one_partition() {
    let (mut p, mut r) = fresh("returning").await;
    for sql in [
        "INSERT INTO ev (at, kind) VALUES ('2024-01-09', 'ret') RETURNING id, at",
        "INSERT INTO ev (at, kind) VALUES ('2024-02-09', 'r1'), ('2024-02-10', 'r2') RETURNING id, kind",
        "INSERT INTO ev (id, at, kind) VALUES (500, '2024-03-01', 'x') RETURNING *",
        "REPLACE INTO ev (id, at, kind) VALUES (500, '2024-03-01', 'y') RETURNING id, kind, amt",
        "INSERT IGNORE INTO ev (id, at, kind) VALUES (500, '2024-03-01', 'z') RETURNING id",
        "insert into ev (at, kind) values ('2025-06-01', 'dflt') returning id * 2 as twice, upper(kind)",
    ] {
        let got = returned(&mut p, sql).await;
        let want = returned(&mut r, sql).await;
        assert_eq!(got, want, "{sql}");
    }
    assert_eq!(ev(&mut p).await, ev(&mut r).await);
    let before = ev(&mut p).await;
    let e = p
        .query_drop("INSERT INTO ev (at, kind) VALUES ('2024-01-11', 'a'), ('2024-02-11', 'b') RETURNING id")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235, "{e}");
    assert_eq!(ev(&mut p).await, before);
}

/// A statement's rows, as text, and LAST_INSERT_ID() after it.
async fn returned(c: &mut Conn, sql: &str) -> (Vec<Vec<String>>, Option<u64>) {
    let got: Vec<mysql_async::Row> = c.query(sql).await.unwrap();
    let last: Option<u64> = c.query_first("SELECT LAST_INSERT_ID()").await.unwrap();
    let cells = got
        .into_iter()
        .map(|r| r.unwrap().into_iter().map(|v| v.as_sql(true)).collect())
        .collect();
    (cells, last)
}

const PLAIN: &str = "CREATE TABLE plain (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT)";

/// [`fresh`] with `plain` (not partitioned) beside `ev` on both sides.
async fn fresh_with_plain(name: &str) -> (Conn, Conn) {
    let (mut p, mut r) = fresh(name).await;
    for c in [&mut p, &mut r] {
        c.query_drop(PLAIN).await.unwrap();
    }
    (p, r)
}

async fn plain(c: &mut Conn) -> Vec<(u64, Option<i64>)> {
    c.query("SELECT id, v FROM plain ORDER BY id")
        .await
        .unwrap()
}

/// What a prepared execution answered, and LAST_INSERT_ID() after it.
async fn answer_prepared(c: &mut Conn, sql: &str, params: Vec<mysql_async::Value>) -> String {
    let ok = match c.exec_drop(sql, params).await {
        Ok(()) => format!(
            "ok affected {} insert id {:?}",
            c.affected_rows(),
            c.last_insert_id()
        ),
        Err(e) => format!("error {}", code(&e)),
    };
    let last: Option<u64> = c.query_first("SELECT LAST_INSERT_ID()").await.unwrap();
    format!("{ok}; LAST_INSERT_ID() {last:?}")
}

/// Issue 29's finding (a): MariaDB's OK reports an explicit
/// AUTO_INCREMENT value as the insert id, but LAST_INSERT_ID() keeps the
/// previous one; hscale took the OK's id as the session's, so the next
/// `SELECT LAST_INSERT_ID()` answered 100.
#[tokio::test]
async fn explicit_auto_increment_value_leaves_last_insert_id() {
    let (mut p, mut r) = fresh_with_plain("explicit").await;
    same(
        &mut p,
        &mut r,
        &[
            "INSERT INTO plain (v) VALUES (1)",
            "INSERT INTO plain (id) VALUES (100)",
            "SELECT LAST_INSERT_ID()",
        ],
    )
    .await;
    assert_eq!(plain(&mut p).await, plain(&mut r).await);
}

/// The class, on an unpartitioned table and on `ev` (partitioned, with a
/// sequence): explicit ids in one row and several, mixed with generated
/// ones, as strings, computed, through INSERT ... SELECT, REPLACE, ON
/// DUPLICATE KEY UPDATE and IGNORE, 0 with and without
/// NO_AUTO_VALUE_ON_ZERO, from a user variable, beside LAST_INSERT_ID(expr),
/// and a generated id that equals one of the statement's literals; then
/// prepared executions of each kind.
#[tokio::test]
async fn explicit_auto_increment_values_class() {
    let (mut p, mut r) = fresh_with_plain("explicit_class").await;
    same(
        &mut p,
        &mut r,
        &[
            "INSERT INTO plain (v) VALUES (1)",
            // Generated, and equal to the literal.
            "INSERT INTO plain (v) VALUES (2)",
            "INSERT INTO plain (id, v) VALUES (100, 2)",
            "INSERT INTO plain (id, v) VALUES (200, 1), (201, 2)",
            "INSERT INTO plain (id, v) VALUES (300, 1), (NULL, 2)",
            "INSERT INTO plain (id, v) VALUES ('400', 1)",
            "INSERT INTO plain (id, v) VALUES (449 + 1, 1)",
            "INSERT INTO plain (id, v) SELECT id + 1000, v FROM plain WHERE id < 300",
            "INSERT INTO plain (v) SELECT v FROM plain WHERE id < 3",
            "REPLACE INTO plain (id, v) VALUES (100, 9)",
            "INSERT INTO plain (id, v) VALUES (100, 1) ON DUPLICATE KEY UPDATE v = v + 1",
            "INSERT INTO plain (id, v) VALUES (1500, 1) ON DUPLICATE KEY UPDATE v = v + 1",
            "INSERT IGNORE INTO plain (id, v) VALUES (100, 5)",
            "INSERT INTO plain (id, v) VALUES (0, 7)",
            "INSERT INTO plain (id, v) VALUES (1600, LAST_INSERT_ID(77))",
            "SELECT LAST_INSERT_ID()",
            "INSERT INTO plain (id, v) VALUES (1700, 1)",
            "INSERT INTO plain (v) VALUES (NULL)",
            "SET sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')",
            "INSERT INTO plain (id, v) VALUES (0, 8)",
            "INSERT INTO plain (v) VALUES (9)",
            // Partitioned, with a sequence.
            "INSERT INTO ev (id, at, kind) VALUES (800, '2024-01-05', 'x')",
            "INSERT INTO ev (id, at, kind) VALUES (801, '2024-01-05', 'a'), (802, '2024-03-05', 'b')",
            "INSERT INTO ev (id, at, kind) VALUES ('803', '2025-01-05', 'd')",
            "INSERT INTO ev (at, kind) VALUES ('2024-02-05', 'g')",
            "INSERT INTO ev (id, at, kind) VALUES (810, '2024-02-05', 'x')",
            // Last: user variables pin the session, which then runs no
            // write over several partitions (refusals.md).
            "SET @i = 1800",
            "INSERT INTO plain (id, v) VALUES (@i, 1)",
        ],
    )
    .await;
    assert_eq!(plain(&mut p).await, plain(&mut r).await);
    // The user variable pinned the session (no prepared write over
    // several partitions then): a fresh session on both sides.
    for c in [&mut p, &mut r] {
        c.reset().await.unwrap();
    }
    use mysql_async::Value;
    let prepared: &[(&str, Vec<Value>)] = &[
        ("INSERT INTO plain (v) VALUES (?)", vec![Value::Int(1)]),
        (
            "INSERT INTO plain (id, v) VALUES (?, ?)",
            vec![Value::Int(2500), Value::Int(1)],
        ),
        // Generated 2501, equal to the parameter.
        ("INSERT INTO plain (v) VALUES (?)", vec![Value::Int(2501)]),
        (
            "INSERT INTO plain (id, v) VALUES (2600, ?)",
            vec![Value::Int(1)],
        ),
        (
            "INSERT INTO plain (id, v) VALUES (?, ?), (?, ?)",
            vec![
                Value::Bytes(b"2700".to_vec()),
                Value::Int(1),
                Value::NULL,
                Value::Int(2),
            ],
        ),
        (
            "INSERT INTO plain (id, v) VALUES (?, ?)",
            vec![Value::Int(2800), Value::Int(1)],
        ),
        (
            "INSERT INTO ev (id, at, kind) VALUES (?, ?, ?)",
            vec![
                Value::Int(2900),
                Value::Bytes(b"2024-02-05".to_vec()),
                Value::Bytes(b"p".to_vec()),
            ],
        ),
    ];
    for (sql, params) in prepared {
        assert_eq!(
            answer_prepared(&mut p, sql, params.clone()).await,
            answer_prepared(&mut r, sql, params.clone()).await,
            "{sql} {params:?}"
        );
    }
    assert_eq!(plain(&mut p).await, plain(&mut r).await);
    assert_eq!(ev(&mut p).await, ev(&mut r).await);
}

/// The queries backend 0 logged, in order: (thread, text).
async fn general_log(on: bool) -> Vec<(u64, String)> {
    let mut bc = backend_conn(0, None).await;
    if on {
        bc.query_drop("SET GLOBAL log_output = 'TABLE'")
            .await
            .unwrap();
        bc.query_drop("TRUNCATE TABLE mysql.general_log")
            .await
            .unwrap();
    }
    bc.query_drop(format!("SET GLOBAL general_log = {}", u8::from(on)))
        .await
        .unwrap();
    let rows = bc
        .query(
            "SELECT thread_id, CONVERT(argument USING utf8mb4) FROM mysql.general_log \
             WHERE command_type IN ('Query', 'Execute')",
        )
        .await
        .unwrap();
    bc.disconnect().await.unwrap();
    rows
}

/// The last stop's cost on sysbench's write (oltp_read_write's INSERT
/// gives the AUTO_INCREMENT id): every INSERT with an explicit id read
/// LAST_INSERT_ID() back from its connection, one more round trip. When
/// every row gives the table's AUTO_INCREMENT column a positive integer,
/// the server generated nothing and hscale knows it without asking: no
/// INSERT, text or prepared, is followed by a read-back on its
/// connection, and the answers (LAST_INSERT_ID() after each) stay one
/// server's.
#[tokio::test]
async fn explicit_ids_need_no_read_back() {
    let (mut p, mut r) = fresh_with_plain("no_read_back").await;
    same(&mut p, &mut r, &["INSERT INTO plain (v) VALUES (1)"]).await;
    general_log(true).await;
    for i in 0..6 {
        let sql = format!(
            "INSERT INTO plain (id, v) VALUES ({}, {i}), ({}, 0) /* nrb-t{i} */",
            3000 + 2 * i,
            3001 + 2 * i
        );
        same(&mut p, &mut r, &[&sql]).await;
    }
    for i in 0..6 {
        let sql = format!("INSERT INTO plain (id, v) VALUES (?, ?) /* nrb-p{i} */");
        let params = vec![
            mysql_async::Value::Int(3100 + i),
            mysql_async::Value::Int(i),
        ];
        assert_eq!(
            answer_prepared(&mut p, &sql, params.clone()).await,
            answer_prepared(&mut r, &sql, params).await,
            "{sql}"
        );
    }
    let log = general_log(false).await;
    // Not the reference's own session. The client asks LAST_INSERT_ID()
    // after each INSERT (`answer`), which hscale forwards as it is: that
    // is 12 reads; a read-back after each INSERT would be 12 more.
    let reference = u64::from(r.id());
    let ours: Vec<&String> = log
        .iter()
        .filter(|(t, _)| *t != reference)
        .map(|(_, q)| q)
        .collect();
    let inserts = ours.iter().filter(|q| q.contains("/* nrb-")).count();
    let reads = ours
        .iter()
        .filter(|q| q.as_str() == "SELECT LAST_INSERT_ID()")
        .count();
    assert_eq!((inserts, reads), (12, 12), "{ours:?}");
    assert_eq!(plain(&mut p).await, plain(&mut r).await);
}

/// The AUTO_INCREMENT column moves to another column by an ALTER through
/// hscale: the next INSERT gives the old column a value equal to the id
/// the server generates for the new one. hscale must not take the old
/// description (that the id was given): LAST_INSERT_ID() is the generated
/// one, as on one server. The same after the change is made directly on
/// the backend, once the description has aged (2 s).
#[tokio::test]
async fn explicit_ids_follow_the_tables_auto_increment_column() {
    let (mut p, mut r) = fresh_with_plain("ai_moves").await;
    same(
        &mut p,
        &mut r,
        &[
            "CREATE TABLE mv (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)",
            "INSERT INTO mv (v) VALUES (1)",
            "INSERT INTO mv (id, v) VALUES (5, 1)",
            "ALTER TABLE mv MODIFY id INT NOT NULL, ADD KEY (v), MODIFY v INT NOT NULL AUTO_INCREMENT",
            // v generated: 6 (the table's counter), the value given to id.
            "INSERT INTO mv (id) VALUES (6)",
            "INSERT INTO mv (id, v) VALUES (7, 40)",
            "INSERT INTO mv (id) VALUES (8)",
        ],
    )
    .await;
    same(
        &mut p,
        &mut r,
        &[
            "CREATE TABLE mw (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL)",
            "INSERT INTO mw (v) VALUES (1)",
            "INSERT INTO mw (id, v) VALUES (5, 1)",
        ],
    )
    .await;
    let direct =
        "ALTER TABLE mw MODIFY id INT NOT NULL, ADD KEY (v), MODIFY v INT NOT NULL AUTO_INCREMENT";
    let db: String = p.query_first("SELECT DATABASE()").await.unwrap().unwrap();
    let mut b = backend_conn(0, Some(&db)).await;
    b.query_drop(direct).await.unwrap();
    r.query_drop(direct).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    same(&mut p, &mut r, &["INSERT INTO mw (id) VALUES (6)"]).await;
    for c in [&mut p, &mut r] {
        let rows: Vec<(i64, i64)> = c.query("SELECT id, v FROM mv ORDER BY id").await.unwrap();
        assert_eq!(rows.len(), 5);
    }
}
