#![allow(clippy::unwrap_used)]
//! The differential suite for writes: INSERT and REPLACE in every form one
//! server takes (no column list, `SET`, `... SELECT` across partitions and
//! into or out of partitioned tables, with sequences), run through hscale
//! on tables partitioned over four backends and on one plain database of
//! one server with the same rows. After each statement: the same error
//! code, or the same affected rows, warnings and info; then every table's
//! rows must be the same. Tables whose ids a sequence fills are compared
//! without the ids (one server leaves gaps after INSERT ... SELECT, the
//! sequence does not), and LAST_INSERT_ID() must be the first id the
//! statement generated, read back from the rows.

mod common;

use common::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row};

const DB: &str = "dw_part";
const REF: &str = "dw_ref";

const SCHEMA: &[&str] = &[
    "CREATE TABLE t1 (id INT NOT NULL, k INT NOT NULL, s VARCHAR(20) NULL, d DECIMAL(10,2) NULL, dt DATE NULL, PRIMARY KEY (id, k))",
    "CREATE TABLE seq (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, who VARCHAR(20) NULL, n INT NULL)",
    "CREATE TABLE seqk (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) NULL)",
    "CREATE TABLE ev (id INT NOT NULL, day DATE NOT NULL, note VARCHAR(20) NULL, PRIMARY KEY (id, day))",
    "CREATE TABLE plain (a INT NOT NULL PRIMARY KEY, b INT NULL, c VARCHAR(20) NULL)",
];

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('t1', 'k', 't1_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('t1', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('t1', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('t1', 'm3', '3', 'shard3')",
    "HSCALE ADD_PARTITION('t1', 'm1', '-1', 'shard1')",
    "HSCALE SETUP_TABLE('seq', 'k', 'seq_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('seq', 's1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('seq', 's2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('seq', 's3', '3', 'shard3')",
    "HSCALE SETUP_TABLE('seqk', 'id', 'seqk_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('seqk', 'q1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('seqk', 'q2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('seqk', 'q3', '3', 'shard3')",
    "HSCALE SETUP_TABLE('ev', 'day', 'ev_default', 'shard3', \"DATE('%Y-%m')\")",
    "HSCALE ADD_PARTITION('ev', 'e1', '2024-01', 'shard1')",
    "HSCALE ADD_PARTITION('ev', 'e2', '2024-02', 'shard2')",
    "HSCALE ADD_PARTITION('ev', 'e3', '2024-03', 'shard0')",
];

/// Each table's rows, in one order, without the ids sequences fill.
const CONTENTS: &[&str] = &[
    "SELECT id, k, s, d, dt FROM t1 ORDER BY id, k",
    "SELECT k, who, n FROM seq ORDER BY k, who, n",
    "SELECT v FROM seqk ORDER BY v",
    "SELECT id, day, note FROM ev ORDER BY id, day",
    "SELECT a, b, c FROM plain ORDER BY a",
];

/// The statements, in order (later ones read what earlier ones wrote).
fn statements() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let keys = [-5, -1, 0, 1, 2, 3, 4, 5, 6, 7, 11, 14];
    // Rows to start from, in the plain table.
    for a in 1..=12 {
        out.push(format!(
            "INSERT INTO plain (a, b, c) VALUES ({a}, {}, 'p{a}')",
            keys[a as usize - 1]
        ));
    }
    // INSERT without a column list: one row per key, then several rows
    // over several partitions, DEFAULT, IGNORE, REPLACE, ON DUPLICATE KEY.
    for (i, k) in keys.iter().enumerate() {
        out.push(format!(
            "INSERT INTO t1 VALUES ({i}, {k}, 'v{i}', {i}.25, '2024-01-{:02}')",
            i + 1
        ));
    }
    for (i, k) in keys.iter().enumerate() {
        out.push(format!(
            "INSERT INTO t1 VALUES ({}, {k}, 'a', NULL, NULL), ({}, {}, 'b', -1.5, '2023-12-31'), ({}, {}, DEFAULT, DEFAULT, DEFAULT)",
            100 + i,
            200 + i,
            k + 1,
            300 + i,
            k + 2
        ));
    }
    for (i, k) in keys.iter().enumerate() {
        out.push(format!(
            "INSERT IGNORE INTO t1 VALUES ({i}, {k}, 'dup', 0, NULL), ({}, {k}, 'new', 0, NULL)",
            400 + i
        ));
        out.push(format!(
            "REPLACE INTO t1 VALUES ({i}, {k}, 'replaced', 9.99, '2024-02-02')"
        ));
        out.push(format!(
            "INSERT INTO t1 VALUES ({}, {k}, 'x', 1, NULL) ON DUPLICATE KEY UPDATE s = CONCAT(s, '+'), d = VALUES(d)",
            100 + i
        ));
    }
    // Errors one server gives: a wrong number of values, a duplicate.
    out.push("INSERT INTO t1 VALUES (1, 2, 'short')".into());
    out.push("INSERT INTO t1 VALUES (900, 1, 'a', 1, NULL), (901, 2, 'b')".into());
    out.push("INSERT INTO t1 VALUES (0, -5, 'dup', 0, NULL)".into());
    // INSERT ... SET: every key, expressions naming earlier columns,
    // REPLACE, ON DUPLICATE KEY UPDATE.
    for (i, k) in keys.iter().enumerate() {
        out.push(format!(
            "INSERT INTO t1 SET id = {}, k = {k}, s = CONCAT('set', id), d = id / 4, dt = '2024-03-01' + INTERVAL id DAY",
            500 + i
        ));
        out.push(format!(
            "REPLACE INTO t1 SET k = {k}, id = {}, s = 'replaced by set'",
            500 + i
        ));
        out.push(format!(
            "INSERT INTO t1 SET id = {}, k = {k}, s = 'odku' ON DUPLICATE KEY UPDATE s = 'set odku', d = 7",
            100 + i
        ));
    }
    // Partition keys given as expressions: evaluated once, in the
    // session's state, before routing.
    let exprs = [
        "1 + 2",
        "CAST('3' AS SIGNED)",
        "-(4)",
        "2 * 3",
        "(2 * 3) + 1 - 0",
        "ABS(-7)",
        "CAST(11 AS UNSIGNED)",
        "LENGTH('abcde')",
        "FLOOR(9.7)",
        "IF(1 > 0, 2, 3)",
        "GREATEST(3, 5)",
        "COALESCE(NULL, 14)",
    ];
    for (i, e) in exprs.iter().enumerate() {
        out.push(format!(
            "INSERT INTO t1 (id, k, s) VALUES ({}, {e}, 'expr')",
            8000 + i
        ));
        out.push(format!(
            "INSERT INTO t1 (k, id, s) VALUES ({e}, {}, 'expr2'), (1, {}, 'literal'), ({e} + 1, {}, 'expr3')",
            8100 + i,
            8200 + i,
            8300 + i
        ));
        out.push(format!(
            "INSERT INTO t1 SET id = {}, k = {e}, s = 'set expr'",
            8400 + i
        ));
        out.push(format!("INSERT INTO seq (k, who) VALUES ({e}, 'seq expr')"));
    }
    out.push("INSERT INTO ev (id, day, note) VALUES (9000, DATE('2024-02-03') + INTERVAL 1 DAY, 'date expr')".into());
    out.push(
        "INSERT INTO ev (id, day, note) VALUES (9001, CAST('2024-03-09 10:00:00' AS DATE), 'cast')"
            .into(),
    );
    out.push(
        "INSERT INTO ev (id, day, note) VALUES (9002, LAST_DAY('2024-01-05'), 'last day')".into(),
    );
    out.push("INSERT INTO ev (id, day, note) VALUES (9003, CURDATE() - INTERVAL (TO_DAYS(CURDATE()) - TO_DAYS('2024-02-10')) DAY, 'curdate')".into());
    // REPLACE with a column list over several partitions.
    out.push("REPLACE INTO t1 (id, k, s) VALUES (0, -5, 'r1'), (1, -1, 'r2'), (2, 0, 'r3'), (3, 1, 'r4'), (4, 2, 'r5')".into());
    // Sequences: ids filled by the proxy, in every form.
    for (i, k) in keys.iter().enumerate() {
        out.push(format!(
            "INSERT INTO seq VALUES (NULL, {k}, 'nolist{i}', {i})"
        ));
        out.push(format!(
            "INSERT INTO seq SET k = {k}, who = 'set{i}', n = {i}"
        ));
        out.push(format!(
            "INSERT INTO seq (k, who, n) VALUES ({k}, 'multi{i}a', 1), ({}, 'multi{i}b', 2)",
            k + 1
        ));
        out.push(format!("INSERT INTO seqk VALUES (NULL, 'k{i}')"));
        out.push(format!("INSERT INTO seqk SET v = 'ks{i}'"));
    }
    // INSERT ... SELECT: from a plain table into a partitioned one, from
    // partitioned tables into a plain one, partitioned into itself, with
    // ORDER BY ... LIMIT, aggregates, joins, IGNORE, REPLACE, ON DUPLICATE
    // KEY UPDATE, sequences, no rows, errors.
    for (i, k) in keys.iter().enumerate() {
        out.push(format!(
            "INSERT INTO t1 (id, k, s) SELECT a + {}, b, c FROM plain WHERE b = {k}",
            1000 + 10 * i
        ));
        out.push(format!(
            "INSERT INTO plain SELECT id + {}, k, s FROM t1 WHERE k = {k} AND id < 100",
            2000 + 100 * i
        ));
        out.push(format!(
            "INSERT INTO t1 SELECT id + 3000, k, CONCAT(s, '!'), d, dt FROM t1 WHERE k = {k} AND id < 1000"
        ));
        out.push(format!(
            "INSERT INTO seq (k, who, n) SELECT k, s, id FROM t1 WHERE k = {k} ORDER BY id LIMIT 3"
        ));
        out.push(format!(
            "INSERT INTO seqk (v) SELECT c FROM plain WHERE b = {k}"
        ));
        out.push(format!(
            "INSERT INTO ev SELECT id, dt, s FROM t1 WHERE k = {k} AND dt IS NOT NULL AND id < 1000"
        ));
    }
    let selects = [
        "INSERT INTO t1 SELECT id + 5000, k + 1, s, d, dt FROM t1 ORDER BY id DESC, k LIMIT 7",
        "INSERT INTO t1 SELECT id + 5100, k, s, d, dt FROM t1 ORDER BY d, id, k LIMIT 2, 5",
        "INSERT INTO plain SELECT k + 9000, COUNT(*), MAX(s) FROM t1 GROUP BY k",
        "INSERT INTO plain (a, b) SELECT 9500, SUM(d) FROM t1",
        "INSERT INTO plain (a, b, c) SELECT DISTINCT k + 9600, k, 'distinct' FROM t1",
        "INSERT INTO plain SELECT t1.id + 9700, t1.k, p.c FROM t1 JOIN plain p ON p.a = t1.id WHERE t1.id < 12",
        "INSERT INTO t1 (id, k, s) SELECT p.a + 6000, p.b, t1.s FROM plain p JOIN t1 ON t1.id = p.a AND t1.k = p.b",
        "INSERT IGNORE INTO t1 SELECT id, k, 'ignored', d, dt FROM t1 WHERE id < 5",
        "REPLACE INTO t1 SELECT id, k, 'replaced by select', d, dt FROM t1 WHERE id BETWEEN 5 AND 8",
        "INSERT INTO t1 SELECT id, k, s, d, dt FROM t1 WHERE id < 3 ON DUPLICATE KEY UPDATE s = 'odku select'",
        "INSERT INTO t1 SELECT id, k, s, d, dt FROM t1 WHERE id < 0",
        "INSERT INTO seq (k, who) SELECT k, s FROM t1 WHERE id > 1000000",
        "INSERT INTO t1 (id, k) SELECT id FROM t1",
        "INSERT INTO t1 SELECT nope FROM t1",
        "INSERT INTO t1 SELECT id, k, s, d, dt FROM t1 WHERE id < 3",
        "INSERT INTO plain SELECT a + 20000, b, c FROM plain WHERE a < 5",
        "INSERT INTO ev (id, day, note) SELECT id + 100, day + INTERVAL 1 MONTH, note FROM ev WHERE id < 12",
        "INSERT INTO seq (k, who, n) SELECT b, c, a FROM plain ORDER BY a LIMIT 4",
        "INSERT INTO seqk (v) SELECT s FROM t1 ORDER BY id, k LIMIT 3",
        "INSERT INTO t1 (id, k, s, d) SELECT 7000 + n, k, who, n FROM seq WHERE n IS NOT NULL AND n < 12",
        "INSERT INTO t1 (id, k, s) SELECT 7500, 3, 'one row'",
        "INSERT INTO t1 (id, k, s) (SELECT 7501, 2, 'parenthesised')",
        "INSERT INTO t1 (id, k, s) WITH w AS (SELECT a, b FROM plain WHERE a < 4) SELECT a + 7600, b, 'cte' FROM w",
    ];
    out.extend(selects.iter().map(|s| s.to_string()));
    out
}

type Rows = Vec<Vec<Option<String>>>;

async fn contents(c: &mut Conn, sql: &str) -> Rows {
    let rows: Vec<Row> = c.query(sql).await.unwrap();
    rows.into_iter()
        .map(|r| {
            (0..r.len())
                .map(|i| match r.as_ref(i).unwrap() {
                    mysql_async::Value::NULL => None,
                    mysql_async::Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                    v => Some(v.as_sql(true)),
                })
                .collect()
        })
        .collect()
}

/// What a write answered: an error code, or (affected rows, warnings, info).
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Err(u16),
    Ok(u64, u16, String),
}

async fn write(c: &mut Conn, sql: &str) -> (Answer, Option<u64>) {
    match c.query_drop(sql).await {
        Ok(()) => (
            Answer::Ok(c.affected_rows(), c.get_warnings(), c.info().into_owned()),
            c.last_insert_id(),
        ),
        Err(e) => (Answer::Err(code(&e)), None),
    }
}

/// Ids of a sequence table.
async fn ids(c: &mut Conn, table: &str) -> Vec<u64> {
    c.query(format!("SELECT id FROM {table} ORDER BY id"))
        .await
        .unwrap()
}

#[tokio::test]
async fn writes_match_one_server() {
    cluster(4);
    let mut setup = proxy_conn(None).await;
    for db in [DB, REF] {
        setup
            .query_drop(format!("CREATE DATABASE {db}"))
            .await
            .unwrap();
        setup.query_drop(format!("USE {db}")).await.unwrap();
        for s in SCHEMA {
            setup.query_drop(*s).await.unwrap();
        }
    }
    setup.query_drop(format!("USE {DB}")).await.unwrap();
    for s in PARTITIONING {
        setup
            .query_drop(*s)
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    setup.disconnect().await.unwrap();
    let mut p = proxy_conn(Some(DB)).await;
    let mut r = proxy_conn(Some(REF)).await;
    let (mut same, mut refused) = (0, 0);
    let mut wrong = Vec::new();
    let all = statements();
    for sql in &all {
        let seq_table = ["seqk", "seq"]
            .into_iter()
            .find(|t| sql.contains(&format!("INTO {t} ")));
        let before = match seq_table {
            Some(t) => ids(&mut p, t).await,
            None => Vec::new(),
        };
        let (want, _) = write(&mut r, sql).await;
        let (got, insert_id) = write(&mut p, sql).await;
        if got == Answer::Err(1235) && want != got {
            refused += 1;
            wrong.push(format!("{sql}\n  refused; reference: {want:?}"));
            continue;
        }
        if got != want {
            wrong.push(format!(
                "{sql}\n  hscale:    {got:?}\n  reference: {want:?}"
            ));
            continue;
        }
        // LAST_INSERT_ID(): the first id this statement generated.
        if let (Some(t), Answer::Ok(n, ..)) = (seq_table, &got) {
            let after = ids(&mut p, t).await;
            let new: Vec<u64> = after.into_iter().filter(|i| !before.contains(i)).collect();
            let last: u64 = p
                .query_first("SELECT LAST_INSERT_ID()")
                .await
                .unwrap()
                .unwrap();
            if *n > 0 && (new.first() != Some(&last) || insert_id != Some(last)) {
                wrong.push(format!(
                    "{sql}\n  LAST_INSERT_ID() {last}, OK packet {insert_id:?}, new ids {new:?}"
                ));
                continue;
            }
        }
        let mut differs = None;
        for q in CONTENTS {
            if contents(&mut p, q).await != contents(&mut r, q).await {
                differs = Some(*q);
                break;
            }
        }
        match differs {
            None => same += 1,
            Some(q) => {
                wrong.push(format!("{sql}\n  rows differ afterwards: {q}"));
                // Start the next statement from the same rows again.
                break;
            }
        }
    }
    println!(
        "differential writes: {} statements: {same} identical, {refused} refused, {} wrong",
        all.len(),
        wrong.len() - refused
    );
    for w in &wrong {
        println!("WRONG: {w}");
    }
    assert!(wrong.is_empty(), "{} statements differ", wrong.len());
    assert!(same >= 150, "{same}");
    p.disconnect().await.unwrap();
    r.disconnect().await.unwrap();
}
