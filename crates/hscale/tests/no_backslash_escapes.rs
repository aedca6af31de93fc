#![allow(clippy::unwrap_used)]
//! Issue 29 ("writes that silently store something else"): under
//! `sql_mode = NO_BACKSLASH_ESCAPES` a key written `'back\slash'` was
//! routed as if it were `backslash` (hscale's lexer read `\s` as an
//! escape), then refused (1235). Now such a statement is read with its
//! backslashes doubled (`hscale_sql::backslashes_doubled`: the values the
//! server reads) and each partition gets it as written: the row lands
//! where one server's key routes, and reads by its key find it, in that
//! mode and (spelled `'back\\slash'`) in the default one.
//!
//! Each statement is compared with one plain database of the main
//! backend, read directly (the reference): affected rows and warnings or the error code, then the rows;
//! at the end the rows are read by key in the default mode, so a row in
//! the wrong partition is missed.
//!
//! Two backends; `words` HASH(2) on a VARCHAR key, `nums` MOD(2) on an
//! INT key with a string column.

mod common;

use common::twin::*;
use mysql_async::prelude::*;
use mysql_async::Value;

const SCHEMA: &[&str] = &[
        "CREATE TABLE words (w VARCHAR(32) NOT NULL, freq INT, note VARCHAR(32), PRIMARY KEY (w)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
        "CREATE TABLE nums (id INT NOT NULL, k INT NOT NULL, s VARCHAR(32), PRIMARY KEY (id, k))",
        "CREATE TABLE short (w VARCHAR(4) NOT NULL, n INT, PRIMARY KEY (w)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
];

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('words', 'w', 'words_default', 'shard0', 'HASH(2)')",
    "HSCALE ADD_PARTITION('words', 'w1', '1', 'shard1')",
    "HSCALE SETUP_TABLE('nums', 'k', 'nums_default', 'shard0', 'MOD(2)')",
    "HSCALE ADD_PARTITION('nums', 'n1', '1', 'shard1')",
];

/// A partitioned database `db` beside its reference `reference` (each
/// test its own pair).
fn twin<'a>(db: &'a str, reference: &'a str) -> Twin<'a> {
    Twin {
        shards: 2,
        db,
        reference,
        schema: SCHEMA,
        partitioning: PARTITIONING,
    }
}

/// A client of hscale in the partitioned database, and one of the main
/// backend itself in the reference database (one server, with no proxy
/// in between: hscale's own reading of backslashes must not decide the
/// reference's answers).
async fn conns(twin: &Twin<'_>) -> (mysql_async::Conn, mysql_async::Conn) {
    (
        common::proxy_conn(Some(twin.db)).await,
        common::backend_conn(0, Some(twin.reference)).await,
    )
}

/// Statements on both sides: the same outcome each.
async fn same(p: &mut mysql_async::Conn, r: &mut mysql_async::Conn, statements: &[&str]) {
    let mut wrong = Vec::new();
    for s in statements {
        let want = run(r, s).await;
        let got = run(p, s).await;
        if got != want {
            wrong.push(format!("{s}\n  hscale:    {got:?}\n  reference: {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Reads on both sides: the same rows each.
async fn same_rows(p: &mut mysql_async::Conn, r: &mut mysql_async::Conn, reads: &[&str]) {
    let mut wrong = Vec::new();
    for s in reads {
        let want = answer(r, s, None).await;
        let got = answer(p, s, None).await;
        if got != want {
            wrong.push(format!("{s}\n  hscale:    {got:?}\n  reference: {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The issue's example: the key `'back\slash'` stored where one server's
/// key routes and read back by its key.
#[tokio::test]
async fn a_backslash_key_routes_as_the_server_reads_it() {
    let twin = twin("nbe_part", "nbe_ref");
    twin.create(&[]).await;
    let (mut p, mut r) = conns(&twin).await;
    same(
        &mut p,
        &mut r,
        &[
            "SET sql_mode = 'NO_BACKSLASH_ESCAPES'",
            r"INSERT INTO words (w, freq) VALUES ('back\slash', 3)",
        ],
    )
    .await;
    same_rows(
        &mut p,
        &mut r,
        &[
            r"SELECT w, freq, LENGTH(w) FROM words WHERE w = 'back\slash'",
            "SELECT w, freq FROM words WHERE w = 'backslash'",
            "SELECT w, freq FROM words ORDER BY w",
        ],
    )
    .await;
    // In the default mode the same key is spelled with an escape; the
    // read routes by its value and finds the row only in its partition.
    same(&mut p, &mut r, &["SET sql_mode = DEFAULT"]).await;
    same_rows(
        &mut p,
        &mut r,
        &[r"SELECT w, freq FROM words WHERE w = 'back\\slash'"],
    )
    .await;
    assert_eq!(
        rows(&mut p, r"SELECT freq FROM words WHERE w = 'back\\slash'").await,
        vec![vec![Some("3".to_string())]]
    );
}

/// The class: INSERT (several rows, IGNORE, ON DUPLICATE KEY UPDATE),
/// REPLACE, UPDATE, DELETE and SELECT by key and IN lists, a key ending
/// in a backslash, backslashes in other columns and in LIKE, the mode set
/// and cleared in the middle of the session, prepared statements.
#[tokio::test]
async fn backslash_strings_under_no_backslash_escapes_class() {
    let twin = twin("nbe_class_part", "nbe_class_ref");
    twin.create(&[]).await;
    let (mut p, mut r) = conns(&twin).await;
    same(
        &mut p,
        &mut r,
        &[
            "SET sql_mode = 'STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES'",
            r"INSERT INTO words (w, freq, note) VALUES ('a\b', 1, 'x\y'), ('c\d', 2, NULL), ('plain', 3, 'p\')",
            r"INSERT INTO words (w, freq) VALUES ('end\', 4)",
            r"INSERT INTO words VALUES ('no\list', 4, NULL), ('no list\', 5, 'n\')",
            r"INSERT INTO words (w, freq) VALUES ('\\double', 5), ('\n', 6), ('\t\0', 7)",
            r"INSERT IGNORE INTO words (w, freq) VALUES ('a\b', 99)",
            r"INSERT INTO words (w, freq) VALUES ('c\d', 1) ON DUPLICATE KEY UPDATE freq = freq + 10",
            r"REPLACE INTO words (w, freq, note) VALUES ('plain', 30, 'r\eplaced')",
            r"UPDATE words SET freq = freq + 100 WHERE w = 'a\b'",
            r"UPDATE words SET note = 'u\pdated' WHERE w = 'end\'",
            r"DELETE FROM words WHERE w = '\n'",
            r"INSERT INTO nums (id, k, s) VALUES (1, 1, 'one\1'), (2, 2, 'two\2'), (3, 3, '\')",
            r"UPDATE nums SET s = 'new\s' WHERE k = 2",
            r"DELETE FROM nums WHERE k = 3 AND s = '\'",
        ],
    )
    .await;
    same_rows(
        &mut p,
        &mut r,
        &[
            r"SELECT w, freq, note FROM words WHERE w = 'a\b'",
            r"SELECT w, freq, note FROM words WHERE w IN ('c\d', 'end\', 'nope\')",
            r"SELECT w, freq FROM words WHERE w = '\\double'",
            r"SELECT w, freq, HEX(w) FROM words WHERE w = '\t\0'",
            r"SELECT w, freq FROM words WHERE w = '\n'",
            r"SELECT w, note FROM words WHERE w = 'plain'",
            r"SELECT w FROM words WHERE w LIKE 'a\\%' ORDER BY w",
            r"SELECT COUNT(*), MAX(note) FROM words WHERE note LIKE '%\%' OR w = 'a\b'",
            r"SELECT note, COUNT(*) FROM words WHERE note <> 'p\' GROUP BY note ORDER BY note",
            r"SELECT w, CONCAT(w, '\') AS c FROM words ORDER BY c DESC LIMIT 3",
            "SELECT w, freq, note FROM words ORDER BY w",
            r"SELECT id, k, s FROM nums WHERE k = 1 AND s = 'one\1'",
            "SELECT id, k, s FROM nums ORDER BY id",
        ],
    )
    .await;
    // Keys the column converts (cut to VARCHAR(4) without strict mode):
    // the value the server stores, read from the literal as written.
    same(
        &mut p,
        &mut r,
        &[
            "SET sql_mode = 'NO_BACKSLASH_ESCAPES'",
            r"INSERT INTO short (w, n) VALUES ('ab\cdef', 1), ('\\\\\\', 2), ('x\ ', 3)",
        ],
    )
    .await;
    same_rows(
        &mut p,
        &mut r,
        &[
            r"SELECT w, n FROM short WHERE w = 'ab\c'",
            r"SELECT w, n FROM short WHERE w = '\\\\'",
            r"SELECT w, n FROM short WHERE w = 'x\'",
            "SELECT w, n FROM short ORDER BY n",
        ],
    )
    .await;
    // The mode cleared, then set again, in the same session.
    same(&mut p, &mut r, &["SET sql_mode = ''"]).await;
    same_rows(
        &mut p,
        &mut r,
        &[
            r"SELECT w, freq FROM words WHERE w = 'a\\b'",
            r"SELECT w, freq FROM words WHERE w = 'end\\'",
            r"SELECT w, freq FROM words WHERE w = '\\\\double'",
            r"SELECT w, freq FROM words WHERE w IN ('c\\d', 'plain')",
        ],
    )
    .await;
    same(
        &mut p,
        &mut r,
        &[
            r"INSERT INTO words (w, freq) VALUES ('mode\\off', 8)",
            "SET sql_mode = 'NO_BACKSLASH_ESCAPES'",
        ],
    )
    .await;
    same_rows(
        &mut p,
        &mut r,
        &[
            r"SELECT w, freq FROM words WHERE w = 'mode\off'",
            r"SELECT w, freq FROM words WHERE w = 'a\b'",
        ],
    )
    .await;
    // Prepared: the key a parameter (its value as sent) or a literal.
    let mut wrong = Vec::new();
    for (sql, params) in [
        (
            "INSERT INTO words (w, freq) VALUES (?, ?)",
            vec![Value::from(r"pre\pared"), Value::Int(9)],
        ),
        (
            "SELECT w, freq FROM words WHERE w = ?",
            vec![Value::from(r"pre\pared")],
        ),
        (
            "SELECT w, freq FROM words WHERE w = ?",
            vec![Value::from(r"a\b")],
        ),
        (r"SELECT w, freq FROM words WHERE w = 'a\b'", vec![]),
    ] {
        let want = answer(&mut r, sql, Some(params.clone())).await;
        let got = answer(&mut p, sql, Some(params.clone())).await;
        if got == Answer::Err(1235) {
            eprintln!("refused (refusals.md): {sql} {params:?}");
        }
        if got != want && got != Answer::Err(1235) {
            wrong.push(format!(
                "{sql} {params:?}\n  hscale:    {got:?}\n  reference: {want:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Every row by its key in the default mode: none in a wrong partition.
    p.query_drop("SET sql_mode = DEFAULT").await.unwrap();
    r.query_drop("SET sql_mode = DEFAULT").await.unwrap();
    let keys: Vec<String> = rows(&mut r, "SELECT QUOTE(w) FROM words ORDER BY w")
        .await
        .into_iter()
        .map(|row| row[0].clone().unwrap())
        .collect();
    for k in keys {
        let sql = format!("SELECT w, freq, note FROM words WHERE w = {k}");
        assert_eq!(rows(&mut p, &sql).await, rows(&mut r, &sql).await, "{sql}");
        assert_eq!(rows(&mut p, &sql).await.len(), 1, "{sql}");
    }
}
