#![allow(clippy::unwrap_used)]
//! Writes that change a globally unique value (issue 35,
//! docs/src/unique-keys.md): UPDATE of the unique column, compared with
//! one server holding the same rows (a reference database: the same
//! answers, affected rows, info and warnings, the same rows after), the
//! index checked on the backends after each statement.

mod common;

use common::twin;
use common::unique::*;
use common::*;
use mysql_async::prelude::*;

/// `UPDATE users SET email = ...` of one row, to a free value (the row in
/// another partition than the value's index row), to a value a row of
/// another partition holds (1062, nothing changed), to one a row of its
/// own partition holds, to its own value in another case, to NULL and
/// back, by id and by email.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_of_one_rows_unique_email() {
    const DB: &str = "uw_one";
    let (mut p, mut r) = users(DB, "uw_one_ref").await;
    for sql in [
        "UPDATE users SET email = 'free@example.com' WHERE id = 3",
        "UPDATE users SET email = 'user2@example.com' WHERE id = 3",
        "UPDATE users SET email = 'user5@example.com' WHERE id = 1",
        "UPDATE users SET email = 'USER6@example.com' WHERE id = 6",
        "UPDATE users SET email = email WHERE id = 2",
        "UPDATE users SET email = NULL WHERE id = 4",
        "INSERT INTO users (id, email, name) VALUES (100, 'user4@example.com', 'took it')",
        "UPDATE users SET email = 'user4@example.com' WHERE id = 13",
        "UPDATE users SET email = 'back@example.com' WHERE id = 13",
        "UPDATE users SET email = 'byemail@example.com', name = 'n' WHERE email = 'user7@example.com'",
        "UPDATE users SET email = 'user8@example.com' WHERE email = 'user9@example.com'",
        "UPDATE users SET email = 'nobody@example.com' WHERE id = 999",
        "UPDATE users SET email = 'free@example.com' WHERE id = 3",
        "INSERT INTO users (id, email, name) VALUES (101, 'user3@example.com', 'freed')",
    ] {
        let _ = same(&mut p, &mut r, DB, sql).await;
    }
    // HSCALE EXPLAIN shows the steps.
    let plan: Vec<(String, String, String)> = p
        .query("HSCALE EXPLAIN UPDATE users SET email = 'e@example.com' WHERE id = 3")
        .await
        .unwrap();
    assert!(plan[0].2.contains("FOR UPDATE"), "{plan:?}");
    assert!(
        plan.iter()
            .any(|row| row.1.contains("global unique index email")),
        "{plan:?}"
    );
    // Prepared: each execution as its text, through the index.
    let sql = "UPDATE users SET email = ? WHERE id = ?";
    for (email, id) in [("prep@example.com", 3), ("user10@example.com", 11)] {
        let want = r
            .exec_drop(sql, (email, id))
            .await
            .map_err(|e| error_of(&e));
        let got = p
            .exec_drop(sql, (email, id))
            .await
            .map_err(|e| error_of(&e));
        assert_eq!(got, want, "{email}");
    }
    assert_eq!(
        twin::rows(&mut p, CONTENTS).await,
        twin::rows(&mut r, CONTENTS).await
    );
    assert_index_right(DB).await;
}

/// Multi-row UPDATEs of the email over several partitions: to free
/// values, every row at once (NULLs too), two rows to one value (1062
/// with one server's value, nothing changed), a swap of two rows' values
/// (one server refuses it: its first row meets the second's value), a
/// chain in key order (one server passes: the first row frees the value
/// the second takes) and one against it (refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_of_many_rows_unique_emails() {
    const DB: &str = "uw_many";
    let (mut p, mut r) = users(DB, "uw_many_ref").await;
    for sql in [
        "UPDATE users SET email = CONCAT('x', email) WHERE id IN (1, 2, 3, 4)",
        "UPDATE users SET email = CONCAT(email, '.org')",
        "UPDATE users SET email = 'same@example.com' WHERE id IN (5, 6)",
        "UPDATE users SET email = CASE id WHEN 7 THEN 'user8@example.com.org' WHEN 8 THEN 'user7@example.com.org' END WHERE id IN (7, 8)",
        "UPDATE users SET email = CASE id WHEN 9 THEN 'chain@example.com' WHEN 10 THEN 'user9@example.com.org' END WHERE id IN (9, 10)",
        "UPDATE users SET email = CASE id WHEN 11 THEN 'user12@example.com.org' WHEN 12 THEN 'chain2@example.com' END WHERE id IN (11, 12)",
        "UPDATE users SET email = CASE id WHEN 5 THEN 'user6@example.com.org' WHEN 9 THEN 'user5@example.com.org' END WHERE id IN (5, 9)",
        "UPDATE users SET email = NULL WHERE id > 10",
        "UPDATE users SET email = CONCAT('again', id, '@example.com') WHERE email IS NULL",
        "UPDATE users SET email = CONCAT('again', id, '@example.com') WHERE id < 3",
    ] {
        let _ = same(&mut p, &mut r, DB, sql).await;
    }
}

/// Inside the client's transaction: a refused UPDATE of the email fails
/// its statement alone; ROLLBACK takes the index back with the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_of_the_email_in_a_transaction() {
    const DB: &str = "uw_txn";
    let (mut p, mut r) = users(DB, "uw_txn_ref").await;
    for end in ["COMMIT", "ROLLBACK"] {
        for c in [&mut p, &mut r] {
            c.query_drop("BEGIN").await.unwrap();
        }
        let ok = same_answer(
            &mut p,
            &mut r,
            "UPDATE users SET email = CONCAT('t', email) WHERE id IN (1, 2)",
        )
        .await;
        assert!(ok.is_ok(), "{ok:?}");
        let e = same_answer(
            &mut p,
            &mut r,
            "UPDATE users SET email = 'user4@example.com' WHERE id IN (3, 6)",
        )
        .await;
        assert_eq!(e.unwrap_err().0, 1062);
        let ok = same_answer(
            &mut p,
            &mut r,
            "UPDATE users SET email = 'user1@example.com' WHERE id = 6",
        )
        .await;
        assert!(ok.is_ok(), "{ok:?}");
        let _ = same(&mut p, &mut r, DB, end).await;
    }
}

/// UPDATEs of the email (to colliding values, to NULL, swaps) and inserts
/// through three proxies, three sessions each, one proxy killed
/// (SIGKILL) while they run: every refusal 1062 (or a deadlock, 1213,
/// which one server gives too, or a lock wait timeout, 1205, behind the
/// killed proxy's transactions in doubt), and on the backends each email stored
/// once with its one index row, no index row without its row, once the
/// killed proxy's transactions in doubt are resolved; every row is found
/// by its email.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_updates_through_three_proxies_keep_the_index() {
    const DB: &str = "uw_three";
    cluster(2);
    fresh_db(DB).await;
    let mut p = proxy_conn(Some(DB)).await;
    p.query_drop(USERS).await.unwrap();
    for s in partitioning(DB) {
        p.query_drop(&s).await.unwrap();
    }
    for i in 1..=24 {
        p.query_drop(format!(
            "INSERT INTO users (id, email, name) VALUES ({i}, 'e{i}@x', 'pre')"
        ))
        .await
        .unwrap();
    }
    p.disconnect().await.unwrap();
    let initial = stored(DB).await.1;
    let mut procs: Vec<ProxyProcess> = (0..3)
        .map(|_| {
            let mut config = cluster_config();
            config.proxy.reload_interval_ms = 500;
            ProxyProcess::start(config)
        })
        .collect();
    let mut tasks = Vec::new();
    for (n, proc_) in procs.iter().enumerate() {
        for s in 0..3u64 {
            let port = proc_.port;
            tasks.push(tokio::spawn(async move {
                let mut c = match mysql_async::Conn::new(proxy_opts(port, Some(DB))).await {
                    Ok(c) => c,
                    // Its proxy was killed before it connected.
                    Err(e) => {
                        assert_eq!(n, 2, "{e}");
                        return (0, 0);
                    }
                };
                let (mut done, mut refused) = (0, 0);
                for i in 0..40u64 {
                    let (a, b) = ((i * 7 + s * 5 + n as u64) % 24 + 1, (i * 5 + s + 3 * n as u64) % 24 + 1);
                    let v = (i * 11 + s * 3 + n as u64) % 30;
                    let sql = match i % 5 {
                        0 | 1 => format!("UPDATE users SET email = 'e{v}@x' WHERE id = {a}"),
                        2 => format!("UPDATE users SET email = NULL WHERE id = {a}"),
                        3 if a != b => format!(
                            "UPDATE users SET email = CASE id WHEN {a} THEN 'e{v}@x' WHEN {b} THEN 'f{v}@x' END WHERE id IN ({a}, {b})"
                        ),
                        _ => format!("INSERT INTO users (email, name) VALUES ('e{v}@x', 'p{n}')"),
                    };
                    match c.query_drop(&sql).await {
                        Ok(()) => done += 1,
                        Err(mysql_async::Error::Server(e)) => {
                            // 1205: a lock the killed proxy's prepared
                            // transaction holds until recovery ends it.
                            assert!([1062, 1213, 1205].contains(&e.code), "{sql}: {e:?}");
                            refused += 1;
                        }
                        // Its proxy was killed.
                        Err(e) => {
                            assert_eq!(n, 2, "{sql}: {e}");
                            return (done, refused);
                        }
                    }
                }
                let _ = c.disconnect().await;
                (done, refused)
            }));
        }
    }
    // Kill the third proxy once the sessions' writes show on the backends.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while stored(DB).await.1 == initial && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    procs[2].child.kill().unwrap(); // SIGKILL
    let (mut done, mut refused) = (0, 0);
    for t in tasks {
        let (d, r) = t.await.unwrap();
        done += d;
        refused += r;
    }
    assert!(done > 0 && refused > 0, "{done} done, {refused} refused");
    assert_index_right_soon(DB).await;
    let (rows, _) = stored(DB).await;
    let mut c = proxy_conn(Some(DB)).await;
    for (email, ids) in rows {
        let found: Option<i64> = c
            .query_first(format!("SELECT id FROM users WHERE email = '{email}'"))
            .await
            .unwrap();
        assert_eq!(found, Some(ids[0]), "{email}");
    }
    c.disconnect().await.unwrap();
    drop(procs);
}

/// A row colliding on its PRIMARY KEY and on its email: one server checks
/// PRIMARY first and names it. A one-row INSERT does the same here (the
/// index refuses the email, the row's own insert, undone with the
/// statement, names PRIMARY). In a multi-row INSERT the index's refusal
/// is named: the behaviour the last statement shows (one server names
/// the PRIMARY KEY of its second row; docs/src/unique-keys.md, Limits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_colliding_on_primary_and_email_is_named_as_one_server_names_it() {
    const DB: &str = "uw_both";
    let (mut p, mut r) = users(DB, "uw_both_ref").await;
    for (sql, key) in [
        (
            "INSERT INTO users (id, email, name) VALUES (3, 'user3@example.com', 'again')",
            "PRIMARY",
        ),
        (
            "INSERT INTO users (id, email, name) VALUES (5, 'user4@example.com', 'x')",
            "PRIMARY",
        ),
        (
            "INSERT INTO users (id, email, name) VALUES (5, 'USER5@example.com', 'x')",
            "PRIMARY",
        ),
        (
            "INSERT INTO users (id, email, name) VALUES (200, 'user4@example.com', 'x')",
            "email",
        ),
        (
            "INSERT INTO users (id, email, name) VALUES (6, 'new@example.com', 'x')",
            "PRIMARY",
        ),
    ] {
        let e = same(&mut p, &mut r, DB, sql).await.unwrap_err();
        assert_eq!(e.0, 1062, "{sql}");
        assert!(e.1.ends_with(&format!("for key '{key}'")), "{sql}: {e:?}");
    }
    let sql = "INSERT INTO users (id, email, name) VALUES (300, 'n1@example.com', 'a'), (6, 'user6@example.com', 'b')";
    let want = said(&mut r, sql).await.unwrap_err();
    let got = said(&mut p, sql).await.unwrap_err();
    assert_eq!(want, (1062, "Duplicate entry '6' for key 'PRIMARY'".into()));
    assert_eq!(
        got,
        (
            1062,
            "Duplicate entry 'user6@example.com' for key 'email'".into()
        )
    );
    assert_eq!(
        twin::rows(&mut p, CONTENTS).await,
        twin::rows(&mut r, CONTENTS).await
    );
    assert_index_right(DB).await;
}
