#![allow(clippy::unwrap_used)]
//! Issue 29's opening section: writes that silently stored something else
//! than one server would, and a read that sent rows and then an error.
//! Each example of the issue is a test of its own, with the issue's
//! statement, table and data, compared with one plain database of the same
//! server (`REF`, not partitioned); the cases around each follow it.
//!
//! Three backends; tables partitioned MOD(3) or by string keys.

mod common;

use common::twin::*;
use common::*;
use mysql_async::prelude::*;
use mysql_async::Conn;

const DB: &str = "sw_part";
const REF: &str = "sw_ref";

const SCHEMA: &[&str] = &[
    "CREATE TABLE orders (id INT NOT NULL PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(10,2) NOT NULL, status VARCHAR(10) NOT NULL)",
    "CREATE TABLE arch (id INT NOT NULL PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(10,2) NOT NULL, status VARCHAR(10) NOT NULL)",
    "CREATE TABLE words (w VARCHAR(20) NOT NULL PRIMARY KEY, freq INT NULL)",
    "CREATE TABLE nn (id INT NOT NULL, k INT NOT NULL, s VARCHAR(10) NOT NULL, n INT NOT NULL, PRIMARY KEY (id, k))",
    "CREATE TABLE cust (cid INT NOT NULL PRIMARY KEY, name VARCHAR(20) NULL)",
    "CREATE TABLE rr (id INT NOT NULL, k INT NOT NULL, q INT NULL, note VARCHAR(20) NULL, PRIMARY KEY (id, k))",
    "CREATE TABLE od (oid INT NOT NULL, k INT NOT NULL, qty INT NOT NULL, note VARCHAR(20), PRIMARY KEY (oid, k))",
];

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('orders', 'id', 'orders_default', 'shard0', 'MOD(3)')",
    "HSCALE ADD_PARTITION('orders', 'o1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('orders', 'o2', '2', 'shard2')",
    "HSCALE SETUP_TABLE('arch', 'id', 'arch_default', 'shard0', 'MOD(3)')",
    "HSCALE ADD_PARTITION('arch', 'a1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('arch', 'a2', '2', 'shard2')",
    "HSCALE SETUP_TABLE('words', 'w', 'words_default', 'shard0', 'NONE()')",
    "HSCALE ADD_PARTITION('words', 'w_bs', 'backslash', 'shard1')",
    "HSCALE ADD_PARTITION('words', 'w_0', '0', 'shard2')",
    "HSCALE ADD_PARTITION('words', 'w_pipe', 'pipe', 'shard1')",
    "HSCALE SETUP_TABLE('nn', 'k', 'nn_default', 'shard0', 'MOD(3)')",
    "HSCALE ADD_PARTITION('nn', 'n1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('nn', 'n2', '2', 'shard2')",
    "HSCALE SETUP_TABLE('cust', 'cid', 'cust_default', 'shard0', 'MOD(3)')",
    "HSCALE ADD_PARTITION('cust', 'c1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('cust', 'c2', '2', 'shard2')",
    "HSCALE SETUP_TABLE('rr', 'k', 'rr_default', 'shard0', 'MOD(3)')",
    "HSCALE ADD_PARTITION('rr', 'rr1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('rr', 'rr2', '2', 'shard2')",
    "HSCALE SETUP_TABLE('od', 'k', 'od_default', 'shard0', 'MOD(3)')",
    "HSCALE ADD_PARTITION('od', 'od1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('od', 'od2', '2', 'shard2')",
];

const TWIN: Twin = Twin {
    shards: 3,
    db: DB,
    reference: REF,
    schema: SCHEMA,
    partitioning: PARTITIONING,
};

/// The same statements through hscale (partitioned) and on one server
/// (`REF`), after `session` on each: the same answers, and then the same
/// rows of `contents`.
async fn same(session: &[&str], statements: &[&str], contents: &str) {
    let (mut p, mut r) = connections().await;
    for s in session {
        p.query_drop(*s).await.unwrap();
        r.query_drop(*s).await.unwrap();
    }
    same_writes(&mut p, &mut r, statements, contents).await;
}

async fn connections() -> (Conn, Conn) {
    set_up().await;
    TWIN.conns().await
}

static SET_UP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

async fn set_up() {
    SET_UP
        .get_or_init(|| async {
            // 300 orders: ids 1..=300, four customers, two statuses.
            let values: Vec<String> = (1..=300)
                .map(|i| {
                    let status = if i % 10 < 7 { "paid" } else { "open" };
                    format!("({i}, {}, {}.{:02}, '{status}')", i % 4, i * 3, i % 100)
                })
                .collect();
            TWIN.create(&[format!(
                "INSERT INTO orders (id, customer_id, amount, status) VALUES {}",
                values.join(", ")
            )])
            .await
        })
        .await;
}

/// The issue's first example: `SET sql_select_limit = 4`, then an
/// INSERT ... SELECT of 210 orders stores 210 rows, not 4.
#[tokio::test]
async fn insert_select_stores_every_row_under_sql_select_limit() {
    let (mut p, mut r) = connections().await;
    for c in [&mut p, &mut r] {
        c.query_drop("DELETE FROM arch").await.unwrap();
        c.query_drop("SET sql_select_limit = 4").await.unwrap();
    }
    let sql =
        "INSERT INTO arch SELECT id, customer_id, amount, status FROM orders WHERE status = 'paid'";
    let want = run(&mut r, sql).await;
    assert_eq!(want, Done::Ok(210, 0));
    assert_eq!(run(&mut p, sql).await, want);
    // The session's limit still limits what a SELECT sends its client.
    assert_eq!(rows(&mut p, "SELECT id FROM arch").await.len(), 4);
    for c in [&mut p, &mut r] {
        c.query_drop("SET sql_select_limit = DEFAULT")
            .await
            .unwrap();
    }
    let contents = "SELECT id, customer_id, amount, status FROM arch ORDER BY id";
    assert_eq!(rows(&mut p, contents).await.len(), 210);
    assert_eq!(rows(&mut p, contents).await, rows(&mut r, contents).await);
}

/// Issue 30: HSCALE EXPLAIN shows `INSERT INTO orders (...) SELECT ...`
/// as it runs (it called it refused): the SELECT's own plan as step 1,
/// the INSERT of the rows read as step 2; and the statement then stores
/// what one server stores.
#[tokio::test]
async fn explain_shows_insert_select_as_it_runs() {
    let (mut p, mut r) = connections().await;
    let sql = "INSERT INTO arch (id, customer_id, amount, status) SELECT id, customer_id, amount, status FROM orders WHERE customer_id = 1";
    let plan: Vec<(String, String, String)> =
        p.query(format!("HSCALE EXPLAIN {sql}")).await.unwrap();
    let select = "SELECT id, customer_id, amount, status FROM orders WHERE customer_id = 1";
    assert_eq!(
        plan.first().unwrap(),
        &(
            "proxy".to_string(),
            "step 1: read the rows to insert into the proxy's memory".to_string(),
            select.to_string()
        ),
        "{plan:?}"
    );
    // The read: every partition of orders (keyed by id), concatenated.
    let read: Vec<&(String, String, String)> = plan[1..plan.len() - 1].iter().collect();
    assert_eq!(read.len(), 3, "{plan:?}");
    for (backend, operation, part) in read {
        assert!(backend.starts_with("shard"), "{plan:?}");
        assert!(
            operation.starts_with("step 1, concatenate rows: "),
            "{plan:?}"
        );
        assert!(
            part.starts_with("SELECT id, customer_id, amount, status FROM `sw_part`.`orders"),
            "{plan:?}"
        );
    }
    assert_eq!(
        plan.last().unwrap(),
        &(
            "proxy".to_string(),
            "step 2: insert the rows read as literal VALUES, planned like any INSERT".to_string(),
            "INSERT INTO arch (id, customer_id, amount, status) VALUES <the rows read>".to_string()
        ),
        "{plan:?}"
    );
    // EXPLAIN runs nothing; the statement then stores one server's rows.
    for c in [&mut p, &mut r] {
        c.query_drop("DELETE FROM arch").await.unwrap();
    }
    same_writes(
        &mut p,
        &mut r,
        &[sql],
        "SELECT id, customer_id, amount, status FROM arch ORDER BY id",
    )
    .await;
}

/// The class around it: every INSERT ... SELECT naming a partitioned
/// table EXPLAINs as a read, then a write (REPLACE, IGNORE, ON DUPLICATE
/// KEY UPDATE kept after the rows, into a plain table, a merged read); a
/// read hscale refuses refuses the INSERT with its reason, as running it
/// does.
#[tokio::test]
async fn explain_shows_every_insert_select_as_a_read_then_a_write() {
    let (mut p, _) = connections().await;
    for (sql, write) in [
        (
            "REPLACE INTO arch SELECT id, 9, amount, 'again' FROM orders WHERE id BETWEEN 100 AND 140",
            "REPLACE INTO arch VALUES <the rows read>",
        ),
        (
            "INSERT IGNORE INTO arch (id, customer_id, amount, status) SELECT 5, 1, 2.50, 'x'",
            "INSERT IGNORE INTO arch (id, customer_id, amount, status) VALUES <the rows read>",
        ),
        (
            "INSERT INTO arch SELECT id, customer_id, amount, status FROM orders ORDER BY amount DESC LIMIT 3 ON DUPLICATE KEY UPDATE status = 'dup'",
            "INSERT INTO arch VALUES <the rows read> ON DUPLICATE KEY UPDATE status = 'dup'",
        ),
        (
            "INSERT INTO cust (cid, name) SELECT customer_id, MAX(status) FROM orders GROUP BY customer_id",
            "INSERT INTO cust (cid, name) VALUES <the rows read>",
        ),
    ] {
        let plan: Vec<(String, String, String)> =
            p.query(format!("HSCALE EXPLAIN {sql}")).await.unwrap();
        assert_eq!(plan[0].1, "step 1: read the rows to insert into the proxy's memory", "{sql}: {plan:?}");
        assert!(plan[1..plan.len() - 1].iter().all(|r| r.1.starts_with("step 1, ")), "{sql}: {plan:?}");
        assert_eq!(plan.last().unwrap().2, write, "{sql}: {plan:?}");
    }
    let refused =
        "INSERT INTO arch SELECT id, customer_id, amount, status FROM orders LIMIT 1 FOR UPDATE";
    let explained = p
        .query_drop(format!("HSCALE EXPLAIN {refused}"))
        .await
        .unwrap_err();
    let run = p.query_drop(refused).await.unwrap_err();
    assert_eq!(code(&explained), 1235);
    assert_eq!(explained.to_string(), run.to_string());
}

/// The class around it: every read a statement makes for itself ignores
/// sql_select_limit (INSERT ... SELECT with columns, with ORDER BY, from a
/// partitioned table into another, a key given as an expression under
/// `sql_select_limit = 0`, an ordered write's keys), inside a transaction too.
#[tokio::test]
async fn reads_a_statement_makes_for_itself_ignore_sql_select_limit() {
    for limit in ["0", "1", "7"] {
        let set = format!("SET sql_select_limit = {limit}");
        same(
            &["DELETE FROM arch", &set],
            &[
                "INSERT INTO arch (id, customer_id, amount, status) SELECT id, customer_id, amount, status FROM orders WHERE customer_id = 1",
                "INSERT INTO arch SELECT id, customer_id, amount, status FROM orders WHERE id > 280 ORDER BY amount DESC",
                "REPLACE INTO arch SELECT id, 9, amount, 'again' FROM orders WHERE id BETWEEN 100 AND 140",
                "UPDATE arch SET status = 'first' ORDER BY id LIMIT 12",
                "DELETE FROM arch ORDER BY amount DESC LIMIT 5",
            ],
            "SELECT id, customer_id, amount, status FROM arch ORDER BY id LIMIT 1000",
        )
        .await;
        same(
            &["DELETE FROM arch", &set, "BEGIN"],
            &[
                "INSERT INTO arch SELECT id, customer_id, amount, status FROM orders WHERE id < 50",
                "INSERT INTO arch (id, customer_id, amount, status) VALUES (1000 + 2, 1, 1.00, 'x')",
                "COMMIT",
            ],
            "SELECT id, customer_id, amount, status FROM arch ORDER BY id LIMIT 1000",
        )
        .await;
    }
}

/// The issue's second example: under NO_BACKSLASH_ESCAPES the key
/// `'back\slash'` is the string b-a-c-k-\-s-l-a-s-h, which hscale would
/// route as `backslash` (partition w_bs). It must never be stored where
/// a read by its key does not find it: hscale routes it by the key the
/// server reads (it refused it before).
#[tokio::test]
async fn no_backslash_escapes_key_is_never_misplaced() {
    let (mut p, mut r) = connections().await;
    for c in [&mut p, &mut r] {
        c.query_drop("SET sql_mode = 'STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES'")
            .await
            .unwrap();
    }
    let sql = r"INSERT INTO words (w, freq) VALUES ('back\slash', 1)";
    assert_eq!(run(&mut r, sql).await, Done::Ok(1, 0));
    let got = p.query_drop(sql).await;
    match got {
        Err(e) => {
            assert_eq!(code(&e), 1235, "{e}");
            assert!(e.to_string().contains("NO_BACKSLASH_ESCAPES"), "{e}");
        }
        Ok(()) => {
            // If stored, a read by its key must find it.
            let found = rows(&mut p, r"SELECT w FROM words WHERE w = 'back\slash'").await;
            assert_eq!(found, vec![vec![Some(r"back\slash".to_string())]]);
        }
    }
    // Nothing sits in the partition of `backslash`.
    let misplaced = rows(&mut p, "SELECT w FROM words WHERE w = 'backslash'").await;
    assert!(misplaced.is_empty(), "{misplaced:?}");
    // Reads and writes whose strings hold no backslash run as usual, and
    // so do statements with backslashes on tables hscale does not manage.
    assert_eq!(
        run(&mut p, "INSERT INTO words (w, freq) VALUES ('pipe', 2)").await,
        Done::Ok(1, 0)
    );
    assert_eq!(
        rows(&mut p, "SELECT freq FROM words WHERE w = 'pipe'").await,
        vec![vec![Some("2".into())]]
    );
    // A backslash before the closing quote (what drivers that interpolate
    // parameters write under this mode, go-sql-driver's among them).
    for sql in [
        r"SELECT 'a\b', LENGTH('a\b')",
        r"SELECT 'a\', LENGTH('b\'), 'c''\'",
    ] {
        assert_eq!(rows(&mut p, sql).await, rows(&mut r, sql).await, "{sql}");
    }
    // Reads by such a key, an UPDATE and a DELETE: answered as one server
    // (routed by the key the server reads; tests/no_backslash_escapes.rs).
    assert_eq!(
        rows(&mut p, r"SELECT w, freq FROM words WHERE w = 'back\slash'").await,
        rows(&mut r, r"SELECT w, freq FROM words WHERE w = 'back\slash'").await,
    );
    for sql in [
        r"UPDATE words SET freq = 5 WHERE w = 'back\slash'",
        r"DELETE FROM words WHERE w IN ('back\slash', 'x\y')",
    ] {
        assert_eq!(run(&mut p, sql).await, run(&mut r, sql).await, "{sql}");
    }
    // A backslash before a quote ends the string there: the server's
    // syntax error, as from one server.
    let sql = r"SELECT w FROM words WHERE w = 'it\'s'";
    assert_eq!(run(&mut p, sql).await, run(&mut r, sql).await);
    // The mode set back: the backslash is an escape again, and routed so.
    for c in [&mut p, &mut r] {
        c.query_drop("SET sql_mode = DEFAULT").await.unwrap();
        c.query_drop("DELETE FROM words").await.unwrap();
    }
    same(
        &[],
        &[r"INSERT INTO words (w, freq) VALUES ('back\slash', 1), ('pi\pe', 2), ('x\\y', 3)"],
        "SELECT w, freq FROM words ORDER BY w",
    )
    .await;
    assert_eq!(
        rows(&mut p, "SELECT freq FROM words WHERE w = 'backslash'").await,
        vec![vec![Some("1".into())]]
    );
}

/// ANSI_QUOTES: `SELECT "cid" FROM "cust" WHERE "cid" = 3` names the
/// partitioned table, which hscale must route (it went to the main
/// backend unrouted, 1146); INSERT, UPDATE, a CTE and a view likewise.
#[tokio::test]
async fn ansi_quotes_names_are_routed() {
    let (mut p, mut r) = connections().await;
    for c in [&mut p, &mut r] {
        c.query_drop("DELETE FROM cust").await.unwrap();
        c.query_drop("SET sql_mode = 'ANSI_QUOTES'").await.unwrap();
    }
    for sql in [
        r#"INSERT INTO "cust" ("cid", "name") VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'it''s "four"')"#,
        r#"UPDATE "cust" SET "name" = 'THREE' WHERE "cid" = 3"#,
    ] {
        assert_eq!(run(&mut p, sql).await, run(&mut r, sql).await, "{sql}");
    }
    for sql in [
        r#"SELECT "cid" FROM "cust" WHERE "cid" = 3"#,
        r#"SELECT "cid", "name" FROM "cust" ORDER BY "cid""#,
        r#"SELECT c."name" FROM "cust" AS c WHERE c."cid" IN (1, 4) ORDER BY 1"#,
        r#"WITH "w" AS (SELECT "cid" FROM "cust" WHERE "cid" > 1) SELECT COUNT(*) FROM "w""#,
        r#"SELECT COUNT(*), MAX("name") FROM "cust""#,
    ] {
        assert_eq!(rows(&mut p, sql).await, rows(&mut r, sql).await, "{sql}");
    }
    // Back to the default: "x" is a string again.
    for c in [&mut p, &mut r] {
        c.query_drop("SET sql_mode = DEFAULT").await.unwrap();
    }
    let sql = r#"SELECT "cid", cid FROM cust WHERE cid = 2"#;
    assert_eq!(rows(&mut p, sql).await, rows(&mut r, sql).await);
}

/// The issue's third example: a key given as an expression in strict mode.
/// `'pi' || 'pe'` is a logical OR of two strings that are not numbers:
/// one server refuses the INSERT with 1292; hscale stored the key `0`.
#[tokio::test]
async fn expression_key_keeps_strict_modes_error() {
    let (mut p, mut r) = connections().await;
    for c in [&mut p, &mut r] {
        c.query_drop("DELETE FROM words").await.unwrap();
        c.query_drop("SET sql_mode = 'STRICT_TRANS_TABLES'")
            .await
            .unwrap();
    }
    let sql = "INSERT INTO words (w, freq) VALUES ('pi' || 'pe', 3)";
    assert_eq!(run(&mut r, sql).await, Done::Err(1292));
    let got = p.query_drop(sql).await.unwrap_err();
    assert_eq!(code(&got), 1292, "{got}");
    assert!(
        got.to_string()
            .contains("Truncated incorrect DOUBLE value: 'pi'"),
        "{got}"
    );
    assert!(rows(&mut p, "SELECT w FROM words").await.is_empty());
    // The class: other expressions whose evaluation warns, in several rows,
    // in strict modes (the same error); without strict mode the same rows
    // are stored (the warnings of the evaluation are not counted: README).
    let class = [
        "INSERT INTO words (w, freq) VALUES ('pi' || 'pe', 3)",
        "INSERT INTO words (w, freq) VALUES ('a', 1), (CONCAT('pi', 'pe') + 0, 2)",
        "INSERT INTO words (w, freq) VALUES (CAST('9x' AS SIGNED), 4)",
        "INSERT INTO words (w, freq) VALUES (1 + 1, 5), (UPPER('pipe'), 6)",
        "INSERT INTO words (w, freq) VALUES (DATE('2020-13-45'), 7)",
    ];
    for mode in [
        "STRICT_TRANS_TABLES",
        "STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO",
    ] {
        let set = format!("SET sql_mode = '{mode}'");
        same(
            &["DELETE FROM words", &set],
            &class,
            "SELECT w, freq FROM words ORDER BY w",
        )
        .await;
    }
    for c in [&mut p, &mut r] {
        c.query_drop("DELETE FROM words").await.unwrap();
        c.query_drop("SET sql_mode = ''").await.unwrap();
    }
    for s in class {
        let want = run(&mut r, s).await;
        let got = run(&mut p, s).await;
        match (got, want) {
            (Done::Ok(a, _), Done::Ok(b, _)) => assert_eq!(a, b, "{s}"),
            (got, want) => assert_eq!(got, want, "{s}"),
        }
    }
    let contents = "SELECT w, freq FROM words ORDER BY w";
    assert_eq!(rows(&mut p, contents).await, rows(&mut r, contents).await);
    // In a transaction: the error ends the statement, not the transaction.
    same(
        &[
            "DELETE FROM words",
            "SET sql_mode = 'STRICT_TRANS_TABLES'",
            "BEGIN",
        ],
        &[
            "INSERT INTO words (w, freq) VALUES ('ok', 1)",
            "INSERT INTO words (w, freq) VALUES ('pi' || 'pe', 3)",
            "INSERT INTO words (w, freq) VALUES ('ok2', 2)",
            "COMMIT",
        ],
        "SELECT w, freq FROM words ORDER BY w",
    )
    .await;
}

/// The issue's fourth example: with `sql_mode = ''` a multi-row INSERT
/// with a NULL for a NOT NULL column stores every row with warning 1048
/// on one server; split by partition, a part of one row became a one-row
/// INSERT, which the server refuses with 1048, and nothing was stored.
#[tokio::test]
async fn multi_row_insert_keeps_non_strict_null_warning() {
    same(
        &["DELETE FROM nn", "SET sql_mode = ''"],
        &["INSERT INTO nn (id, k, s, n) VALUES (1, 1, 'a', NULL), (2, 2, NULL, 2), (3, 3, 'c', 3)"],
        "SELECT id, k, s, n FROM nn ORDER BY id",
    )
    .await;
    // The class: one row per partition and several, REPLACE, ON DUPLICATE
    // KEY UPDATE, IGNORE, conversions beside the NULLs, strict mode (every
    // form refuses), a transaction, and a one-row INSERT (an error there too).
    for mode in ["", "STRICT_TRANS_TABLES", "NO_ENGINE_SUBSTITUTION"] {
        let set = format!("SET sql_mode = '{mode}'");
        same(
            &["DELETE FROM nn", &set],
            &[
                "INSERT INTO nn (id, k, s, n) VALUES (1, 1, 'a', NULL), (2, 2, NULL, 2), (3, 3, 'c', 3)",
                "INSERT INTO nn (id, k, s, n) VALUES (4, 4, 'd', NULL), (5, 7, 'e', 5), (6, 5, NULL, '6x')",
                "INSERT INTO nn (id, k, s, n) VALUES (7, 1, NULL, NULL)",
                "REPLACE INTO nn (id, k, s, n) VALUES (1, 1, 'r', NULL), (8, 2, 'h', 8)",
                "INSERT INTO nn (id, k, s, n) VALUES (2, 2, 'u', 1), (9, 3, NULL, 9) ON DUPLICATE KEY UPDATE n = VALUES(n) + 100",
                "INSERT IGNORE INTO nn (id, k, s, n) VALUES (3, 3, 'dup', 1), (10, 4, NULL, NULL)",
                "INSERT INTO nn (id, k, s, n) VALUES (11, 11, 'k', NULL), (12, 12, 'l', 12), (13, 13, 'm', 13), (14, 14, NULL, 14)",
                "INSERT INTO nn (id, k, s, n) VALUES (15, 0, 'z', 99999999999), (16, 1, 'y', NULL)",
            ],
            "SELECT id, k, s, n FROM nn ORDER BY id",
        )
        .await;
        same(
            &["DELETE FROM nn", &set, "BEGIN"],
            &[
                "INSERT INTO nn (id, k, s, n) VALUES (21, 1, 'a', NULL), (22, 2, 'b', 2)",
                "COMMIT",
            ],
            "SELECT id, k, s, n FROM nn ORDER BY id",
        )
        .await;
    }
}

/// The issue's fifth example: a read over several partitions whose rows are
/// concatenated (`SELECT id FROM rd`, `... WHERE id IN (...)`) while
/// another proxy moves one of its partitions sent the first parts' rows and
/// then 1146 naming an internal table. Autocommit reads must be retried
/// whole before their first row: every read answers all its rows.
#[tokio::test]
async fn concatenated_reads_during_moves_answer_every_row() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    set_up().await;
    let mut c = proxy_conn(Some(DB)).await;
    c.query_drop("CREATE TABLE rd (id INT NOT NULL PRIMARY KEY, v VARCHAR(20) NOT NULL)")
        .await
        .unwrap();
    for s in [
        "HSCALE SETUP_TABLE('rd', 'id', 'rd_default', 'shard0', 'MOD(3)')",
        "HSCALE ADD_PARTITION('rd', 'r1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('rd', 'r2', '2', 'shard2')",
    ] {
        c.query_drop(s).await.unwrap();
    }
    let values: Vec<String> = (1..=600).map(|i| format!("({i}, 'row {i}')")).collect();
    c.query_drop(format!(
        "INSERT INTO rd (id, v) VALUES {}",
        values.join(", ")
    ))
    .await
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for n in 0..3 {
        let stop = stop.clone();
        readers.push(tokio::spawn(async move {
            let mut r = proxy_conn(Some(DB)).await;
            let in_list: Vec<String> = (1..=60).map(|i| (i * 10).to_string()).collect();
            let statements = [
                ("SELECT id FROM rd".to_string(), 600),
                (
                    format!("SELECT id, v FROM rd WHERE id IN ({})", in_list.join(", ")),
                    60,
                ),
                (
                    "SELECT id FROM rd WHERE id BETWEEN 100 AND 399".to_string(),
                    300,
                ),
            ];
            let (mut reads, mut wrong) = (0u64, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                let (sql, want) = &statements[(reads as usize + n) % statements.len()];
                match r.query_iter(sql.as_str()).await {
                    Ok(mut result) => {
                        let mut got = 0usize;
                        let mut failed = None;
                        loop {
                            match result.next().await {
                                Ok(Some(_)) => got += 1,
                                Ok(None) => break,
                                Err(e) => {
                                    failed = Some(e);
                                    break;
                                }
                            }
                        }
                        drop(result);
                        match failed {
                            Some(e) => wrong.push(format!("{sql}: {got} rows, then {e}")),
                            None if got != *want => wrong.push(format!("{sql}: {got} rows")),
                            None => {}
                        }
                    }
                    Err(e) => wrong.push(format!("{sql}: {e}")),
                }
                reads += 1;
            }
            (reads, wrong)
        }));
    }
    for to in ["shard2", "shard1", "shard0", "shard1"] {
        c.query_drop(format!("HSCALE MOVE_PARTITION('{DB}.rd', 'r1', '{to}')"))
            .await
            .unwrap_or_else(|e| panic!("move to {to}: {e}"));
    }
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for r in readers {
        let (reads, wrong) = r.await.unwrap();
        total += reads;
        assert!(
            wrong.is_empty(),
            "{} wrong reads: {:#?}",
            wrong.len(),
            &wrong[..wrong.len().min(5)]
        );
    }
    assert!(total > 30, "only {total} reads ran beside the moves");
}

async fn od_rows(c: &mut Conn) -> Rows {
    rows(c, "SELECT oid, k, qty, note FROM od ORDER BY oid").await
}

/// `sql` through hscale and on one server: the same columns, rows (as a
/// multiset: one server returns them in its scan order, hscale partition
/// after partition, as a scatter SELECT; neither is an ORDER BY),
/// warnings or error code; then the same rows of `od`.
async fn same_returned(p: &mut Conn, r: &mut Conn, sql: &str) -> Answer {
    let mut want = answer(r, sql, None).await;
    let mut got = answer(p, sql, None).await;
    for a in [&mut want, &mut got] {
        if let Answer::Rows { rows, warnings, .. } = a {
            rows.sort();
            warnings.sort();
        }
    }
    assert_eq!(got, want, "{sql}");
    assert_eq!(od_rows(p).await, od_rows(r).await, "after {sql}");
    want
}

/// The DELETE ... RETURNING tests empty and fill `od`: one at a time.
static OD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const OD_FIVE: &str = "INSERT INTO od (oid, k, qty, note) VALUES (1, 0, 7, 'n1'), (2, 1, 3, 'n2'), (3, 2, 10, 'n3'), (4, 3, 6, 'n4'), (5, 4, 2, NULL)";

/// The adversarial run's first finding: `DELETE ... RETURNING` over
/// several partitions deleted the rows and answered an OK without them;
/// refused since, it now answers as one server: the deleted rows, read in
/// the statement's own transaction and sent once it committed.
#[tokio::test]
async fn delete_returning_over_several_partitions() {
    let _od = OD.lock().await;
    let (mut p, mut r) = connections().await;
    for c in [&mut p, &mut r] {
        c.query_drop("DELETE FROM od").await.unwrap();
        c.query_drop(OD_FIVE).await.unwrap();
    }
    let a = same_returned(
        &mut p,
        &mut r,
        "DELETE FROM od WHERE oid IN (1, 2, 3, 4) RETURNING oid, k",
    )
    .await;
    assert_eq!(a.row_count(), 4);
}

/// The class: `*`, expressions and aliases, no row matched, a key list,
/// lower case and comments, warnings from the returned expressions, an
/// error on one partition (nothing deleted anywhere, as one server's
/// statement rollback), inside a transaction (rolled back, committed),
/// every row; INSERT / REPLACE ... RETURNING over several partitions and
/// a prepared DELETE ... RETURNING stay refused, deleting nothing.
#[tokio::test]
async fn delete_returning_class() {
    let _od = OD.lock().await;
    let (mut p, mut r) = connections().await;
    for c in [&mut p, &mut r] {
        c.query_drop("DELETE FROM od").await.unwrap();
        c.query_drop(OD_FIVE).await.unwrap();
        c.query_drop("INSERT INTO od (oid, k, qty, note) SELECT id + 100, id % 7, id % 13, CONCAT('m', id) FROM orders WHERE id <= 60").await.unwrap();
    }
    for sql in [
        "DELETE FROM od WHERE oid = 5 OR note = 'n2' RETURNING *",
        "DELETE FROM od WHERE oid IN (950, 951, 952) RETURNING oid, note",
        "DELETE FROM od WHERE k IN (1, 2) AND qty > 8 RETURNING oid, k, qty",
        "DELETE FROM od WHERE oid BETWEEN 101 AND 110 RETURNING oid * 2 AS twice, UPPER(note), k",
        "delete from od where qty = 0 returning oid",
        "DELETE FROM od WHERE qty = 1 /* c */ RETURNING/**/oid, note",
        "DELETE FROM od WHERE qty = 2 RETURNING oid, qty / 0 AS nothing",
        "DELETE FROM od WHERE qty >= 3 RETURNING oid, EXP(qty * 100)",
    ] {
        same_returned(&mut p, &mut r, sql).await;
    }
    for (session, sql, end) in [
        (
            "BEGIN",
            "DELETE FROM od WHERE qty = 3 RETURNING oid, k",
            "ROLLBACK",
        ),
        (
            "BEGIN",
            "DELETE FROM od WHERE qty = 4 RETURNING oid, k",
            "COMMIT",
        ),
    ] {
        for c in [&mut p, &mut r] {
            c.query_drop(session).await.unwrap();
        }
        same_returned(&mut p, &mut r, sql).await;
        for c in [&mut p, &mut r] {
            c.query_drop(end).await.unwrap();
        }
        assert_eq!(od_rows(&mut p).await, od_rows(&mut r).await, "after {end}");
    }
    let before = od_rows(&mut p).await;
    for sql in [
        "INSERT INTO od (oid, k, qty) VALUES (10, 1, 1), (11, 2, 1) RETURNING oid",
        "REPLACE INTO od (oid, k, qty) VALUES (12, 1, 1), (13, 2, 1) RETURNING oid, k",
    ] {
        let e = p.query_drop(sql).await.unwrap_err();
        assert_eq!(code(&e), 1235, "{sql}: {e}");
        assert_eq!(od_rows(&mut p).await, before, "{sql} changed rows");
    }
    let err = p
        .exec_drop("DELETE FROM od WHERE qty > ? RETURNING oid", (0,))
        .await
        .unwrap_err();
    assert_eq!(code(&err), 1235, "{err}");
    assert_eq!(od_rows(&mut p).await, before);
    // A word inside a string is no RETURNING clause: the DELETE runs.
    p.query_drop("DELETE FROM od WHERE note = 'returning' OR oid = 999")
        .await
        .unwrap();
    assert_eq!(p.affected_rows(), 0);
    same_returned(&mut p, &mut r, "DELETE FROM od RETURNING oid, k, qty, note").await;
}

/// The adversarial run's F6b: an integer literal among the items of a
/// DISTINCT (or a GROUP BY naming one) over several partitions failed with
/// 1054 "Unknown column '0' in 'GROUP BY'" (the literal went into the
/// parts' GROUP BY, where an integer names a column position).
#[tokio::test]
async fn distinct_with_an_integer_literal_answers_as_one_server() {
    let (mut p, mut r) = connections().await;
    for sql in [
        "SELECT DISTINCT customer_id, 0 FROM orders ORDER BY 1",
        "SELECT DISTINCT customer_id, 0 AS z FROM orders ORDER BY customer_id",
        "SELECT DISTINCT 0, customer_id FROM orders ORDER BY 2",
        "SELECT DISTINCT customer_id, -1 FROM orders ORDER BY 1 DESC",
        "SELECT DISTINCT status, 99, customer_id FROM orders ORDER BY 1, 3",
        "SELECT DISTINCT 7 FROM orders",
        "SELECT DISTINCT customer_id, 1.5 FROM orders ORDER BY 1",
        "SELECT DISTINCT customer_id, '3' FROM orders ORDER BY 1",
        "SELECT 0 AS z, COUNT(*) FROM orders GROUP BY 1",
        "SELECT customer_id, 5 AS five, SUM(amount) FROM orders GROUP BY customer_id, 2 ORDER BY 1",
        "SELECT COUNT(*) FROM (SELECT DISTINCT customer_id, 0 FROM orders) d",
    ] {
        assert_eq!(rows(&mut p, sql).await, rows(&mut r, sql).await, "{sql}");
    }
}

/// The adversarial run's F6: a value of a multi-row INSERT may name a
/// column given earlier in its row (one server reads the row's value);
/// split over partitions, each row ran as `INSERT ... SELECT` of its
/// values, where the name is unknown (1054). Such rows keep the VALUES
/// form; literal rows still run as a SELECT (non-strict NULL warnings).
#[tokio::test]
async fn split_insert_rows_may_name_their_own_columns() {
    same(
        &["SET sql_mode = DEFAULT"],
        &[
            "INSERT INTO rr (id, k, q) VALUES (5000, 1, k + 1), (5001, 2, id - 5000)",
            "INSERT INTO rr (id, k, q, note) VALUES (5016, 2, 1, CONCAT('n', id)), (5017, 3, 1, CONCAT('n', id))",
            "INSERT INTO rr (id, k, q) VALUES (5020, 4, `k` * 2), (5021, 5, 7)",
            "INSERT INTO rr (id, k, q, note) VALUES (5030, 6, 1, 'x'), (5031, 7, q, note)",
            "INSERT INTO rr (id, k, q) VALUES (5040, 8, IF(k > 1, 1, 0)), (5041, 9, COALESCE(NULL, k))",
            "INSERT INTO rr (id, k, q, note) VALUES (5050, 10, 2, UPPER('a')), (5051, 11, 3, LOWER(_utf8mb4'B'))",
            "INSERT INTO rr (id, k, q, note) VALUES (5060, 12, NULL, DATE '2024-01-02'), (5061, 13, 1 DIV 1, CASE WHEN TRUE THEN 'y' ELSE 'n' END)",
            "REPLACE INTO rr (id, k, q) VALUES (5000, 1, k + 10), (5001, 2, id - 4990)",
        ],
        "SELECT id, k, q, note FROM rr ORDER BY id",
    )
    .await;
    // Non-strict: a NULL for a NOT NULL column is still stored with its
    // warning in a row that names no column (the row naming k keeps the
    // VALUES form, docs/src/queries.md).
    same(
        &["SET sql_mode = ''"],
        &["INSERT INTO nn (id, k, s, n) VALUES (9100, 1, 'a', NULL), (9101, 2, 'b', k)"],
        "SELECT id, k, s, n FROM nn WHERE id >= 9100 ORDER BY id",
    )
    .await;
}
