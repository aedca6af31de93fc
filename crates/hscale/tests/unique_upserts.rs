#![allow(clippy::unwrap_used)]
//! INSERT IGNORE and INSERT ... ON DUPLICATE KEY UPDATE on a table with a
//! global unique index (issue 35, docs/src/unique-keys.md), compared with
//! one plain server holding the same rows (the reference database on the
//! main backend, driven directly, not through hscale: the same
//! affected rows, info, warnings and SHOW WARNINGS, LAST_INSERT_ID, the
//! same rows after), the index checked on the backends after each
//! statement; and both forms at once through two proxies.

mod common;

use common::twin;
use common::unique::*;
use common::*;
use mysql_async::prelude::*;

/// `db` and its reference, as [`users`] makes them; the reference driven
/// directly on its backend (`found`: with CLIENT_FOUND_ROWS, both).
async fn plain_twin(
    db: &'static str,
    reference: &'static str,
    found: bool,
) -> (mysql_async::Conn, mysql_async::Conn) {
    let _ = users(db, reference).await;
    let info = cluster(2);
    let opts =
        |o: mysql_async::Opts| mysql_async::OptsBuilder::from_opts(o).client_found_rows(found);
    (
        mysql_async::Conn::new(opts(proxy_opts(info.proxy_port, Some(db))))
            .await
            .unwrap(),
        mysql_async::Conn::new(opts(backend_opts(info.backend_ports[0], Some(reference))))
            .await
            .unwrap(),
    )
}

/// [`same`], and LAST_INSERT_ID() the same after.
async fn same_with_id(p: &mut mysql_async::Conn, r: &mut mysql_async::Conn, db: &str, sql: &str) {
    let _ = same(p, r, db, sql).await;
    let id = "SELECT LAST_INSERT_ID()";
    let (got, want): (Option<u64>, Option<u64>) = (
        p.query_first(id).await.unwrap(),
        r.query_first(id).await.unwrap(),
    );
    assert_eq!(got, want, "LAST_INSERT_ID() after {sql}");
}

/// INSERT IGNORE of rows whose email another row holds (in the row's own
/// partition: ids 200 and 4 are both 0 mod 4; in another: 201), whose
/// PRIMARY KEY another row holds, both at once (one server names
/// PRIMARY, checked first), of a value in another case, of new rows; a
/// multi-row statement mixing them all, with two rows of one new email
/// (the second skipped) and a NULL email; rows with generated ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_ignore_as_on_one_server() {
    const DB: &str = "uu_ignore";
    let (mut p, mut r) = plain_twin(DB, "uu_ignore_ref", false).await;
    for sql in [
        "INSERT IGNORE INTO users (id, email, name) VALUES (200, 'user4@example.com', 'same partition')",
        "INSERT IGNORE INTO users (id, email, name) VALUES (201, 'user4@example.com', 'other partition')",
        "INSERT IGNORE INTO users (id, email, name) VALUES (3, 'fresh@example.com', 'primary')",
        "INSERT IGNORE INTO users (id, email, name) VALUES (5, 'user5@example.com', 'both, its own')",
        "INSERT IGNORE INTO users (id, email, name) VALUES (5, 'user6@example.com', 'both, another')",
        "INSERT IGNORE INTO users (id, email, name) VALUES (202, 'USER9@example.com', 'case')",
        "INSERT IGNORE INTO users (id, email, name) VALUES (203, 'new@example.com', 'new')",
        "INSERT IGNORE INTO users (id, email, name) VALUES (300, 'a300@example.com', 'a'), (6, 'b@example.com', 'primary'), (301, 'user7@example.com', 'email'), (302, 'a300@example.com', 'within'), (303, NULL, 'null'), (8, 'user8@example.com', 'both'), (305, 'b305@example.com', 'b')",
        "INSERT IGNORE INTO users (email, name) VALUES ('gen1@example.com', 'g1'), ('user2@example.com', 'g2')",
        "INSERT IGNORE INTO users (email, name) VALUES ('user3@example.com', 'g3')",
        "INSERT IGNORE INTO users (email, name) VALUES ('gen4@example.com', 'g4')",
    ] {
        same_with_id(&mut p, &mut r, DB, sql).await;
    }
    // Prepared: each execution runs as its text (ids given and generated).
    for (sql, params) in [
        (
            "INSERT IGNORE INTO users (id, email, name) VALUES (?, ?, ?)",
            vec!["400".into(), "user10@example.com".into(), "p".into()],
        ),
        (
            "INSERT IGNORE INTO users (id, email, name) VALUES (?, ?, ?)",
            vec!["401".into(), "prep@example.com".into(), "p".into()],
        ),
        (
            "INSERT IGNORE INTO users (email, name) VALUES (?, ?)",
            vec!["user11@example.com".into(), "p".into()],
        ),
        (
            "INSERT IGNORE INTO users (email, name) VALUES (?, ?)",
            vec!["prep2@example.com".into(), "p".into()],
        ),
    ] {
        let params: Vec<mysql_async::Value> = params;
        let want = r
            .exec_drop(sql, params.clone())
            .await
            .map(|()| r.affected_rows());
        let got = p.exec_drop(sql, params).await.map(|()| p.affected_rows());
        assert_eq!(got.ok(), want.ok(), "{sql}");
        let id = "SELECT LAST_INSERT_ID()";
        let (g, w): (Option<u64>, Option<u64>) = (
            p.query_first(id).await.unwrap(),
            r.query_first(id).await.unwrap(),
        );
        assert_eq!(g, w, "LAST_INSERT_ID() after {sql}");
        assert_eq!(
            twin::rows(&mut p, CONTENTS).await,
            twin::rows(&mut r, CONTENTS).await,
            "after {sql}"
        );
    }
    assert_index_right(DB).await;
}

/// INSERT ... ON DUPLICATE KEY UPDATE: a row whose PRIMARY KEY another
/// row holds (that row updated), whose email a row of its own or of
/// another partition holds (the email's row updated), both at once
/// (PRIMARY's row, as one server), an update that changes nothing (0
/// rows), new rows; a multi-row statement with two rows of one new email
/// (the second updates the first); VALUES() and the row's own columns in
/// the clause. An update of the email itself is refused (1235).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_on_duplicate_key_update_as_on_one_server() {
    const DB: &str = "uu_upsert";
    let (mut p, mut r) = plain_twin(DB, "uu_upsert_ref", false).await;
    for sql in [
        "INSERT INTO users (id, email, name) VALUES (3, 'other@example.com', 'primary') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (id, email, name) VALUES (200, 'user4@example.com', 'same partition') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (id, email, name) VALUES (201, 'user8@example.com', 'other partition') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (id, email, name) VALUES (5, 'user6@example.com', 'both') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (id, email, name) VALUES (6, 'user6@example.com', 'u6') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (id, email, name) VALUES (202, 'USER9@example.com', 'case') ON DUPLICATE KEY UPDATE name = CONCAT(name, '+')",
        "INSERT INTO users (id, email, name) VALUES (210, 'new210@example.com', 'new') ON DUPLICATE KEY UPDATE name = 'not new'",
        "INSERT INTO users (id, email, name) VALUES (220, 'm@example.com', 'first'), (221, 'm@example.com', 'second'), (7, 'x7@example.com', 'primary'), (222, 'user10@example.com', 'email'), (223, NULL, 'null'), (11, 'user11@example.com', 'u11') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (email, name) VALUES ('gen@example.com', 'g') ON DUPLICATE KEY UPDATE name = 'g again'",
        "INSERT INTO users (email, name) VALUES ('user12@example.com', 'g12') ON DUPLICATE KEY UPDATE name = VALUES(name)",
    ] {
        same_with_id(&mut p, &mut r, DB, sql).await;
    }
    let e = p
        .query_drop("INSERT INTO users (id, email, name) VALUES (1, 'x@example.com', 'n') ON DUPLICATE KEY UPDATE email = VALUES(email)")
        .await
        .unwrap_err();
    let (code, message) = error_of(&e);
    assert_eq!(code, 1235, "{message}");
    assert!(
        message.contains("ON DUPLICATE KEY UPDATE of email"),
        "{message}"
    );
    assert_index_right(DB).await;
}

/// Under CLIENT_FOUND_ROWS an update that changes nothing counts one row,
/// as an insert does: the same answers, and the index right, both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upserts_under_client_found_rows() {
    const DB: &str = "uu_found";
    let (mut p, mut r) = plain_twin(DB, "uu_found_ref", true).await;
    for sql in [
        "INSERT INTO users (id, email, name) VALUES (6, 'user6@example.com', 'u6') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (id, email, name) VALUES (201, 'user4@example.com', 'u4') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (id, email, name) VALUES (3, 'user3@example.com', 'u3') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (id, email, name) VALUES (202, 'f@example.com', 'f') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (id, email, name) VALUES (203, 'f@example.com', 'f') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        "INSERT INTO users (id, email, name) VALUES (5, 'g@example.com', 'u5') ON DUPLICATE KEY UPDATE name = VALUES(name)",
    ] {
        same_with_id(&mut p, &mut r, DB, sql).await;
    }
}

/// Inside the client's transaction: a skipped row and an updated row
/// keep the index with the rows; ROLLBACK takes back what they took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upserts_in_a_transaction() {
    const DB: &str = "uu_txn";
    let (mut p, mut r) = plain_twin(DB, "uu_txn_ref", false).await;
    for end in ["ROLLBACK", "COMMIT"] {
        for c in [&mut p, &mut r] {
            c.query_drop("BEGIN").await.unwrap();
        }
        for sql in [
            "INSERT IGNORE INTO users (id, email, name) VALUES (400, 't@example.com', 't'), (401, 'user4@example.com', 'skip')",
            "INSERT INTO users (id, email, name) VALUES (402, 't@example.com', 'up') ON DUPLICATE KEY UPDATE name = VALUES(name)",
            "INSERT INTO users (id, email, name) VALUES (403, 'u@example.com', 'u') ON DUPLICATE KEY UPDATE name = VALUES(name)",
        ] {
            let _ = same_answer(&mut p, &mut r, sql).await;
        }
        for c in [&mut p, &mut r] {
            c.query_drop(end).await.unwrap();
        }
        assert_eq!(
            twin::rows(&mut p, CONTENTS).await,
            twin::rows(&mut r, CONTENTS).await,
            "after {end}"
        );
        assert_index_right(DB).await;
    }
}

/// Both forms at once through two proxies (the shared one and one of this
/// test's own), on colliding ids and emails, single and multi-row: no
/// statement fails but for a deadlock one server can meet too (1213),
/// no id and no email is stored twice, and the index names every stored
/// email's row and nothing else (read on the backends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_upserts_through_two_proxies_store_no_duplicate() {
    const DB: &str = "uu_race";
    let _ = users(DB, "uu_race_ref").await;
    let own = ProxyProcess::start(cluster_config());
    let ports = [cluster(2).proxy_port, own.port];
    let mut tasks = Vec::new();
    for t in 0..8u64 {
        let port = ports[(t % 2) as usize];
        tasks.push(tokio::spawn(async move {
            let mut c = mysql_async::Conn::new(proxy_opts(port, Some(DB))).await.unwrap();
            let mut rng = Rng(Rng::seeded("concurrent_upserts") ^ (t + 1));
            let mut refused = Vec::new();
            for _ in 0..40 {
                let mut row = || {
                    format!(
                        "({}, 'c{}@example.com', 't{t}')",
                        1000 + rng.below(24),
                        rng.below(16)
                    )
                };
                let rows = if t % 3 == 0 {
                    format!("{}, {}", row(), row())
                } else {
                    row()
                };
                let sql = if t % 2 == 0 {
                    format!("INSERT IGNORE INTO users (id, email, name) VALUES {rows}")
                } else {
                    format!("INSERT INTO users (id, email, name) VALUES {rows} ON DUPLICATE KEY UPDATE name = VALUES(name)")
                };
                if let Err(e) = c.query_drop(&sql).await {
                    refused.push((error_of(&e), sql));
                }
            }
            c.disconnect().await.unwrap();
            refused
        }));
    }
    let mut refused = Vec::new();
    for task in tasks {
        refused.extend(task.await.unwrap());
    }
    // Only deadlocks, which one server meets too with statements like
    // these (two unique keys, rows in different orders): 1213 when one
    // backend sees the cycle, 1205 (the lock wait timeout) when it spans
    // backends. The client runs the statement again.
    for ((code, message), sql) in &refused {
        assert!([1205, 1213].contains(code), "{sql}: {code} {message}");
    }
    assert!(refused.len() < 8 * 40 / 5, "{refused:?}");
    let (rows, _) = stored(DB).await;
    let mut ids: Vec<i64> = rows.values().flatten().copied().collect();
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "an id stored twice");
    let stored_emails = assert_index_right(DB).await;
    assert!(stored_emails > 12, "{stored_emails}");
}
