#![allow(clippy::unwrap_used)]
//! Rows hscale reads and writes back itself keep what one server keeps:
//! the rows of an INSERT ... SELECT over partitions (written as VALUES)
//! and the rows an UPDATE of the partition key moves to another
//! partition. Each statement runs through hscale on tables partitioned
//! over four backends (`<name>_p`) and on one plain database of one
//! server (`<name>_r`, passed through) with the same rows; the answers
//! (error code, or affected rows and warnings) and then every table's
//! stored values (TIMESTAMPs as instants, ENUMs by member number) must be
//! the same.

mod common;

use common::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

/// An answer: the error code, or affected rows and warnings.
#[derive(Debug, PartialEq)]
enum Res {
    Ok(u64, u16),
    Error(u16),
}

async fn run(c: &mut Conn, sql: &str) -> Res {
    match c.query_drop(sql).await {
        Ok(()) => Res::Ok(c.affected_rows(), c.get_warnings()),
        Err(mysql_async::Error::Server(e)) => Res::Error(e.code),
        Err(e) => panic!("{sql}: {e}"),
    }
}

fn text(rows: Vec<Row>) -> Vec<Vec<Option<String>>> {
    rows.into_iter()
        .map(|r| {
            r.unwrap()
                .into_iter()
                .map(|v| match v {
                    Value::NULL => None,
                    Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                    other => Some(other.as_sql(true)),
                })
                .collect()
        })
        .collect()
}

/// The same tables and rows in `<name>_p` (partitioned) and `<name>_r`.
struct Pair {
    p: Conn,
    r: Conn,
    /// A read per table that shows its stored values.
    reads: Vec<String>,
    compared: usize,
    wrong: Vec<String>,
}

impl Pair {
    async fn new(name: &str, schema: &[&str], partitioning: &[&str], reads: &[&str]) -> Pair {
        cluster(4);
        let mut sides = Vec::new();
        for side in ["p", "r"] {
            let db = format!("{name}_{side}");
            let mut c = proxy_conn(None).await;
            c.query_drop(format!("DROP DATABASE IF EXISTS {db}"))
                .await
                .unwrap();
            c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
            c.query_drop(format!("USE {db}")).await.unwrap();
            for s in schema {
                c.query_drop(*s)
                    .await
                    .unwrap_or_else(|e| panic!("{s}: {e}"));
            }
            if side == "p" {
                for s in partitioning {
                    c.query_drop(*s)
                        .await
                        .unwrap_or_else(|e| panic!("{s}: {e}"));
                }
            }
            sides.push(c);
        }
        let r = sides.pop().unwrap();
        let p = sides.pop().unwrap();
        Pair {
            p,
            r,
            reads: reads.iter().map(|s| s.to_string()).collect(),
            compared: 0,
            wrong: Vec::new(),
        }
    }

    /// Run `sql` on both sides (a session statement, or a write whose
    /// answer and stored rows are compared).
    async fn both(&mut self, sql: &str) {
        let want = run(&mut self.r, sql).await;
        let got = run(&mut self.p, sql).await;
        self.compared += 1;
        if got != want {
            self.wrong
                .push(format!("{sql}\n  hscale: {got:?}\n  one server: {want:?}"));
        }
        for read in self.reads.clone() {
            let want = text(self.r.query(&read).await.unwrap());
            let got = text(self.p.query(&read).await.unwrap());
            if got != want {
                self.wrong.push(format!(
                    "after {sql}: {read}\n  hscale: {got:?}\n  one server: {want:?}"
                ));
            }
        }
    }

    fn report(&self, min: usize) {
        for w in &self.wrong {
            println!("WRONG: {w}");
        }
        assert!(self.wrong.is_empty(), "{} differences", self.wrong.len());
        assert!(self.compared >= min, "only {} statements", self.compared);
    }
}

const DATES_SCHEMA: &[&str] = &[
    "CREATE TABLE src (id INT PRIMARY KEY, d DATE NULL, dt DATETIME NULL, ts TIMESTAMP NULL, e ENUM('a','b','') NULL, s VARCHAR(20) NULL)",
    "CREATE TABLE arch (id INT PRIMARY KEY, d DATE NULL, dt DATETIME NULL, ts TIMESTAMP NULL, e ENUM('a','b','') NULL, s VARCHAR(20) NULL)",
    "CREATE TABLE flat (id INT PRIMARY KEY, d DATE NULL, dt DATETIME NULL, ts TIMESTAMP NULL, e ENUM('a','b','') NULL, s VARCHAR(20) NULL)",
    "CREATE TABLE strs (id INT PRIMARY KEY, d VARCHAR(20) NULL)",
];

const DATES_PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('src', 'id', 'src_default', 'shard0', 'MOD(2)')",
    "HSCALE ADD_PARTITION('src', 's1', '1', 'shard1')",
    "HSCALE SETUP_TABLE('arch', 'id', 'arch_default', 'shard2', 'MOD(2)')",
    "HSCALE ADD_PARTITION('arch', 'a1', '1', 'shard3')",
];

const DATES_READS: &[&str] = &[
    "SELECT id, d, dt, UNIX_TIMESTAMP(ts), e + 0, s FROM arch ORDER BY id",
    "SELECT id, d, dt, UNIX_TIMESTAMP(ts), e + 0, s FROM flat ORDER BY id",
];

/// The rows of `src` (partitioned over two backends): dates stored under
/// ALLOW_INVALID_DATES and sql_mode '' that a literal does not give back.
const DATES_ROWS: &[&str] = &[
    "SET sql_mode = 'ALLOW_INVALID_DATES'",
    "INSERT INTO src VALUES (1, '2024-02-30', '2023-02-29 10:11:12', '2024-03-10 10:00:00', 'a', 'x')",
    "INSERT INTO src VALUES (2, '2024-04-31', '2024-06-31 23:59:59', NULL, 'b', '')",
    "SET sql_mode = ''",
    "INSERT INTO src VALUES (3, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '', NULL)",
    "INSERT INTO src VALUES (4, '2024-00-10', '2024-05-00 08:00:00', '2038-01-19 03:14:07', 'b', 'y')",
    "INSERT INTO src VALUES (5, '2024-02-29', '2024-02-29 00:00:00', '1970-01-01 00:00:01', NULL, 'z')",
    "INSERT INTO strs VALUES (1, '2024-02-30'), (2, '2024-02-29')",
    "SET sql_mode = DEFAULT",
];

async fn dates(name: &str) -> Pair {
    let mut h = Pair::new(name, DATES_SCHEMA, DATES_PARTITIONING, DATES_READS).await;
    for sql in DATES_ROWS {
        h.both(sql).await;
    }
    h
}

/// The brief's example: a stored '2024-02-30' copied by INSERT ... SELECT
/// over partitions into a DATE column, under sql_mode '' (hscale wrote
/// the zero date) and in the default strict mode (hscale answered 1292).
#[tokio::test]
async fn insert_select_copies_a_stored_invalid_date() {
    let mut h = dates("sc_issue").await;
    for sql in [
        "SET sql_mode = ''",
        "INSERT INTO arch (id, d) SELECT id, d FROM src WHERE id = 1",
        "SET sql_mode = DEFAULT",
        "INSERT INTO flat (id, d) SELECT id, d FROM src WHERE id = 1",
        "INSERT INTO arch (id, d) SELECT id + 10, d FROM src WHERE id = 1",
    ] {
        h.both(sql).await;
    }
    h.report(DATES_ROWS.len() + 5);
}

/// The class: invalid days of DATE and DATETIME, zero dates and zero
/// parts, TIMESTAMPs, empty strings and ENUM members, into partitioned
/// and plain tables, in the modes that decide whether one server copies
/// them (default, '', TRADITIONAL, NO_ZERO_DATE / NO_ZERO_IN_DATE with
/// and without strictness, ALLOW_INVALID_DATES, EMPTY_STRING_IS_NULL), a
/// string column's '2024-02-30' (which one server refuses in strict
/// mode), and a time zone of the session's.
#[tokio::test]
async fn insert_select_copies_stored_temporal_values_in_every_mode() {
    let mut h = dates("sc_class").await;
    let modes = [
        "DEFAULT",
        "''",
        "'TRADITIONAL'",
        "'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE'",
        "'NO_ZERO_DATE,NO_ZERO_IN_DATE'",
        "'STRICT_TRANS_TABLES,NO_ZERO_IN_DATE'",
        "'ALLOW_INVALID_DATES'",
        "'STRICT_TRANS_TABLES,EMPTY_STRING_IS_NULL'",
    ];
    let mut n = 0;
    for mode in modes {
        h.both(&format!("SET sql_mode = {mode}")).await;
        for t in ["arch", "flat"] {
            h.both(&format!("DELETE FROM {t}")).await;
            for sql in [
                format!("INSERT INTO {t} SELECT * FROM src"),
                format!("INSERT IGNORE INTO {t} SELECT * FROM src"),
                format!("INSERT INTO {t} (id, dt) SELECT id + 20, dt FROM src WHERE id IN (1, 2)"),
                format!("INSERT INTO {t} (id, d) SELECT id + 30, d FROM src WHERE id > 2"),
                format!(
                    "REPLACE INTO {t} (id, d, dt) SELECT id, d, dt FROM src WHERE id IN (1, 4)"
                ),
                format!("INSERT INTO {t} (id, d) SELECT id + 40, d FROM strs"),
                format!(
                    "INSERT INTO {t} (id, s, e) SELECT id + 50, s, e FROM src WHERE id IN (2, 4)"
                ),
            ] {
                h.both(&sql).await;
                n += 1;
            }
        }
    }
    h.both("SET sql_mode = DEFAULT, time_zone = '+05:00'").await;
    for t in ["arch", "flat"] {
        h.both(&format!("DELETE FROM {t}")).await;
        h.both(&format!("INSERT INTO {t} (id, ts) SELECT id, ts FROM src"))
            .await;
        n += 1;
    }
    h.report(n);
}

/// Europe/Berlin in every backend's time zone tables (a DST zone: one
/// hour of 2024-10-27 shows two instants as one text), when the server
/// lacks them.
async fn load_berlin() {
    let info = cluster(4);
    for port in &info.backend_ports {
        let mut b = Conn::new(backend_opts(*port, None)).await.unwrap();
        let n: u64 = b
            .query_first("SELECT COUNT(*) FROM mysql.time_zone_name WHERE Name = 'Europe/Berlin'")
            .await
            .unwrap()
            .unwrap();
        if n > 0 {
            continue;
        }
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "mariadb-tzinfo-to-sql /usr/share/zoneinfo/Europe/Berlin Europe/Berlin 2>/dev/null \
                 | mariadb -h127.0.0.1 -P{port} -uhscale -phscale mysql"
            ))
            .status()
            .unwrap();
        assert!(status.success(), "loading Europe/Berlin into port {port}");
    }
}

/// Rows moved by an UPDATE of the partition key keep their TIMESTAMPs'
/// instants: read and written back in the session's time zone, the two
/// instants of the hour Europe/Berlin repeats became one.
#[tokio::test]
async fn rows_moved_by_a_key_update_keep_their_timestamps() {
    load_berlin().await;
    let mut h = Pair::new(
        "km_tz",
        &["CREATE TABLE tz (id INT PRIMARY KEY, ts TIMESTAMP(3) NULL, dt DATETIME NULL, d DATE NULL)"],
        &[
            "HSCALE SETUP_TABLE('tz', 'id', 'tz_default', 'shard0', 'MOD(2)')",
            "HSCALE ADD_PARTITION('tz', 't1', '1', 'shard1')",
        ],
        &["SELECT id, UNIX_TIMESTAMP(ts), dt, d FROM tz ORDER BY id"],
    )
    .await;
    let mut n = 0;
    for sql in [
        "SET time_zone = '+00:00', sql_mode = ''",
        "INSERT INTO tz VALUES (1, '2024-10-27 00:30:00.125', '2024-02-30 10:00:00', '2024-02-30'), (2, '2024-10-27 01:30:00.5', NULL, '0000-00-00'), (3, '2024-03-31 00:59:59', '2024-03-31 02:30:00', NULL), (4, '1970-01-01 00:00:01', NULL, NULL)",
        "SET time_zone = 'Europe/Berlin', sql_mode = DEFAULT",
        // 1 and 2 are 02:30 in Berlin, before and after the clocks went
        // back: both move to the other partition.
        "UPDATE tz SET id = id + 11 WHERE id IN (1, 2)",
        "UPDATE tz SET id = id + 1 WHERE id = 3",
        "SET time_zone = '+05:00'",
        "UPDATE tz SET id = id + 21 WHERE id IN (12, 13)",
        "UPDATE tz SET id = id + 5 WHERE id = 4",
        "SET time_zone = '-08:00'",
        "UPDATE tz SET id = 101 + id WHERE id = 9",
        "UPDATE tz SET id = id - 21, ts = ts WHERE id IN (33, 34)",
        "SET time_zone = 'Europe/Berlin'",
        "UPDATE tz SET id = id + 3, ts = '2024-10-27 02:30:00' WHERE id = 3",
        // Chains: a new key that is another updated row's key. One server
        // updates in key order: upwards it meets the next row (1062),
        // downwards the row before has moved away.
        "UPDATE tz SET id = id + 1, dt = dt WHERE id IN (12, 13)",
        "BEGIN",
        "UPDATE tz SET id = id + 1 WHERE id IN (13, 14)",
        "COMMIT",
        "UPDATE tz SET id = id - 1 WHERE id IN (12, 14)",
        "UPDATE tz SET id = id + 2 WHERE id IN (11, 13)",
        "UPDATE tz SET id = id - 2 WHERE id IN (13, 15)",
        "UPDATE tz SET id = id + 7 WHERE id > 0",
        "UPDATE tz SET id = id * 2 WHERE id BETWEEN 10 AND 20",
    ] {
        h.both(sql).await;
        n += 1;
    }
    h.report(n);
}
