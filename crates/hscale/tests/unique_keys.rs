#![allow(clippy::unwrap_used)]
//! Global unique keys (issue 35, docs/src/unique-keys.md): a UNIQUE
//! column without the partition key, enforced across partitions by its
//! lookup table; answers compared with one server holding the same table
//! (a reference database), and the index checked on the backends.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::twin;
use common::unique::*;
use common::*;
use mysql_async::prelude::*;

/// The example: `users` partitioned by id with its UNIQUE email,
/// which SETUP_TABLE refused with 1503 before. The rows already there are
/// indexed; duplicates (single row, several rows, another case under the
/// column's collation, in one statement) are refused with one server's
/// 1062 and message and leave nothing; reads by email find the rows
/// through the index (HSCALE EXPLAIN shows the lookup); DELETE frees the
/// value; the forms hscale does not keep refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_with_a_unique_email_partitioned_by_id() {
    const DB: &str = "uk_users";
    const REF: &str = "uk_users_ref";
    let (mut p, mut r) = users(DB, REF).await;
    // Without the ids: which ids a failed INSERT uses up is the
    // sequence's business (docs/src/sequences.md), not the index's.
    let contents = "SELECT email, name FROM users ORDER BY email, name";
    // Writes: the same answer from both, code and message.
    for sql in [
        "INSERT INTO users (email, name) VALUES ('new@example.com', 'n')",
        "INSERT INTO users (email, name) VALUES ('new@example.com', 'again')",
        "INSERT INTO users (email, name) VALUES ('NEW@example.com', 'case')",
        "INSERT INTO users (email, name) VALUES ('user3@example.com', 'old')",
        "INSERT INTO users (email, name) VALUES ('a@example.com', 'a'), ('b@example.com', 'b'), ('a@example.com', 'a2')",
        "INSERT INTO users (email, name) VALUES ('c@example.com', 'c'), ('user7@example.com', 'c2')",
        "INSERT INTO users (email, name) VALUES ('c@example.com', 'c'), ('d@example.com', 'd'), ('e@example.com', 'e'), ('f@example.com', 'f')",
        "INSERT INTO users (name) VALUES ('no email')",
        "INSERT INTO users (email, name) VALUES (NULL, 'null email'), (NULL, 'another')",
        "INSERT INTO users (id, email, name) VALUES (5000, 'explicit@example.com', 'x')",
        "INSERT INTO users (id, email, name) VALUES (5001, 'explicit@example.com', 'y')",
        "DELETE FROM users WHERE email = 'new@example.com'",
        "INSERT INTO users (email, name) VALUES ('new@example.com', 'back')",
        "DELETE FROM users WHERE name IN ('c', 'd')",
        "INSERT INTO users (email, name) VALUES ('c@example.com', 'c again'), ('d@example.com', 'd again')",
        "UPDATE users SET name = 'renamed' WHERE email = 'user5@example.com'",
        "DELETE FROM users WHERE email IN ('user1@example.com', 'user2@example.com', 'nobody@example.com')",
        "INSERT INTO users (email, name) VALUES ('user1@example.com', 'reused')",
    ] {
        let want = answer(&mut r, sql).await;
        assert_eq!(answer(&mut p, sql).await, want, "{sql}");
        assert_eq!(
            twin::rows(&mut p, contents).await,
            twin::rows(&mut r, contents).await,
            "after {sql}"
        );
    }
    let emails: Option<usize> = r
        .query_first("SELECT COUNT(email) FROM users")
        .await
        .unwrap();
    assert_eq!(Some(assert_index_right(DB).await), emails);
    // Reads by email: the rows one server finds.
    for sql in [
        "SELECT id, name FROM users WHERE email = 'user4@example.com'",
        "SELECT id, name FROM users WHERE email = 'USER4@example.com'",
        "SELECT id, name FROM users WHERE email = 'nobody@example.com'",
        "SELECT name FROM users WHERE email IN ('user4@example.com', 'user9@example.com', 'none') ORDER BY name",
        "SELECT COUNT(*) FROM users WHERE email IN ('user4@example.com', 'user9@example.com')",
        "SELECT u.name FROM users AS u WHERE u.email = 'c@example.com' AND u.name LIKE 'c%'",
    ] {
        assert_eq!(
            twin::rows(&mut p, sql).await,
            twin::rows(&mut r, sql).await,
            "{sql}"
        );
    }
    // HSCALE EXPLAIN: the lookup read, then one partition.
    let plan: Vec<(String, String, String)> = p
        .query("HSCALE EXPLAIN SELECT name FROM users WHERE email = 'user4@example.com'")
        .await
        .unwrap();
    assert!(
        plan[0].1.contains("global unique index email")
            && plan[0].2.contains("hscale_lookup_users_email"),
        "{plan:?}"
    );
    assert!(
        plan[1..]
            .iter()
            .all(|row| row.1.starts_with("only where the keys found are")),
        "{plan:?}"
    );
    let plan: Vec<(String, String, String)> = p
        .query("HSCALE EXPLAIN INSERT INTO users (id, email, name) VALUES (7001, 'z@example.com', 'z')")
        .await
        .unwrap();
    assert!(
        plan.iter()
            .any(|row| row.1.contains("global unique index email")
                && row.2.contains("'z@example.com'")),
        "{plan:?}"
    );
    // Prepared: the same duplicate refused with the same message.
    let sql = "INSERT INTO users (email, name) VALUES (?, ?)";
    let want = r
        .exec_drop(sql, ("user6@example.com", "p"))
        .await
        .unwrap_err();
    let got = p
        .exec_drop(sql, ("user6@example.com", "p"))
        .await
        .unwrap_err();
    assert_eq!(error_of(&got), error_of(&want));
    p.exec_drop(sql, ("prepared@example.com", "p"))
        .await
        .unwrap();
    r.exec_drop(sql, ("prepared@example.com", "p"))
        .await
        .unwrap();
    let got = p
        .exec_drop(sql, ("Prepared@example.com", "p"))
        .await
        .unwrap_err();
    assert_eq!(error_of(&got).0, 1062, "{got}");
    // A prepared read by email: through the index at each execution.
    let read = "SELECT id, name FROM users WHERE email = ?";
    for email in [
        "user4@example.com",
        "PREPARED@example.com",
        "nobody@example.com",
    ] {
        let got: Vec<(i64, String)> = p.exec(read, (email,)).await.unwrap();
        let want: Vec<(i64, String)> = r.exec(read, (email,)).await.unwrap();
        assert_eq!(got.len(), want.len(), "{email}");
        assert_eq!(
            got.iter().map(|g| &g.1).collect::<Vec<_>>(),
            want.iter().map(|w| &w.1).collect::<Vec<_>>(),
            "{email}"
        );
    }
    let del = "DELETE FROM users WHERE email = ?";
    p.exec_drop(del, ("prepared@example.com",)).await.unwrap();
    r.exec_drop(del, ("prepared@example.com",)).await.unwrap();
    assert_eq!(
        twin::rows(&mut p, contents).await,
        twin::rows(&mut r, contents).await,
        "after the prepared statements"
    );
    // Inside a transaction: a duplicate fails its statement alone.
    for c in [&mut p, &mut r] {
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop("INSERT INTO users (email, name) VALUES ('tx@example.com', 'tx')")
            .await
            .unwrap();
        let e = c
            .query_drop("INSERT INTO users (email, name) VALUES ('tx2@example.com', 'tx2'), ('user8@example.com', 'dup')")
            .await
            .unwrap_err();
        assert_eq!(error_of(&e).0, 1062);
        c.query_drop("COMMIT").await.unwrap();
    }
    assert_eq!(
        twin::rows(&mut p, contents).await,
        twin::rows(&mut r, contents).await,
        "after the transaction"
    );
    let kept = assert_index_right(DB).await;
    // What hscale does not keep yet: refused by name, nothing changed.
    for sql in [
        "INSERT INTO users (email, name) VALUES ('user3@example.com', 'x') ON DUPLICATE KEY UPDATE email = 'y'",
        "REPLACE INTO users (email, name) VALUES ('user3@example.com', 'replaced')",
        "UPDATE users SET id = id + 1 WHERE id = 5000",
        "TRUNCATE TABLE users",
        "DELETE FROM users ORDER BY id LIMIT 1",
    ] {
        let e = p.query_drop(sql).await.unwrap_err();
        let (code, message) = error_of(&e);
        assert_eq!(code, 1235, "{sql}: {message}");
        assert!(message.contains("global unique index"), "{sql}: {message}");
    }
    assert_eq!(assert_index_right(DB).await, kept);
    p.disconnect().await.unwrap();
    r.disconnect().await.unwrap();
}

/// Concurrent inserts of colliding emails through three proxies, three
/// sessions each, single and multi-row, one proxy killed (SIGKILL) while
/// they run (its sessions stop at their first lost connection): every
/// refusal 1062, each email stored once on the backends, every
/// acknowledged row found by its id and by its email, and the index names
/// exactly the rows stored once the killed proxy's transactions in doubt
/// are resolved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colliding_inserts_through_three_proxies_store_each_email_once() {
    const DB: &str = "uk_three";
    cluster(2);
    fresh_db(DB).await;
    let mut b = backend_conn(0, Some(DB)).await;
    b.query_drop(USERS).await.unwrap();
    b.disconnect().await.unwrap();
    let mut p = proxy_conn(None).await;
    for s in partitioning(DB) {
        p.query_drop(&s).await.unwrap();
    }
    p.disconnect().await.unwrap();
    let mut procs: Vec<ProxyProcess> = (0..3)
        .map(|_| {
            let mut config = cluster_config();
            config.proxy.reload_interval_ms = 500;
            ProxyProcess::start(config)
        })
        .collect();
    let mut tasks = Vec::new();
    for (n, proc_) in procs.iter().enumerate() {
        for s in 0..3 {
            let port = proc_.port;
            tasks.push(tokio::spawn(async move {
                let mut c = mysql_async::Conn::new(proxy_opts(port, Some(DB)))
                    .await
                    .unwrap();
                let mut acked: Vec<(u64, String)> = Vec::new();
                let mut refused = 0;
                for i in 0..40u64 {
                    // 30 emails for 9 sessions: most inserts collide.
                    let e1 = format!("e{}@x", (i * 7 + s * 3 + n as u64) % 30);
                    let e2 = format!("e{}@x", (i * 11 + s + 5 * n as u64) % 30);
                    let multi = i % 3 == 0 && e1 != e2;
                    let sql = if multi {
                        format!("INSERT INTO users (email, name) VALUES ('{e1}', 'p{n}'), ('{e2}', 'p{n}')")
                    } else {
                        format!("INSERT INTO users (email, name) VALUES ('{e1}', 'p{n}')")
                    };
                    let done = c.query_drop(&sql).await;
                    if n == 2 && matches!(&done, Err(e) if !matches!(e, mysql_async::Error::Server(_))) {
                        // Its proxy was killed: the statement may or may
                        // not have committed, and nothing else runs here.
                        return (acked, refused);
                    }
                    match done {
                        Ok(()) => {
                            let first = c.last_insert_id().unwrap();
                            acked.push((first, e1.clone()));
                            if multi {
                                let id: u64 = c
                                    .query_first(format!("SELECT id FROM users WHERE email = '{e2}'"))
                                    .await
                                    .unwrap()
                                    .unwrap();
                                acked.push((id, e2));
                            }
                        }
                        Err(e) => {
                            assert_eq!(code(&e), 1062, "{sql}: {e}");
                            refused += 1;
                        }
                    }
                }
                let _ = c.disconnect().await;
                (acked, refused)
            }));
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    procs[2].child.kill().unwrap(); // SIGKILL
    let mut acked: BTreeMap<String, u64> = BTreeMap::new();
    let mut refused = 0;
    for t in tasks {
        let (mine, r) = t.await.unwrap();
        refused += r;
        for (id, email) in mine {
            if let Some(other) = acked.insert(email.clone(), id) {
                panic!("{email} acknowledged twice: ids {other} and {id}");
            }
        }
    }
    assert!(refused > 0, "no insert collided");
    let stored = assert_index_right_soon(DB).await;
    // The last statement of each of the killed proxy's three sessions (up
    // to two rows each) may have committed unacknowledged.
    assert!(
        (acked.len()..=acked.len() + 6).contains(&stored),
        "{stored} rows stored, {} acknowledged",
        acked.len()
    );
    let mut c = proxy_conn(Some(DB)).await;
    let emails: BTreeSet<String> = acked.keys().cloned().collect();
    for (email, id) in &acked {
        let by_email: Option<u64> = c
            .query_first(format!("SELECT id FROM users WHERE email = '{email}'"))
            .await
            .unwrap();
        assert_eq!(by_email, Some(*id), "{email}");
        let by_id: Option<String> = c
            .query_first(format!("SELECT email FROM users WHERE id = {id}"))
            .await
            .unwrap();
        assert_eq!(by_id.as_ref(), Some(email), "{id}");
    }
    assert!(emails.len() <= stored);
    c.disconnect().await.unwrap();
    drop(procs);
}

/// Partitions of the table and of its lookup table added and moved while
/// inserts and deletes run: the index stays right on the backends, and
/// every row is found by its email.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_changes_keep_the_index_right() {
    const DB: &str = "uk_moves";
    cluster(2);
    fresh_db(DB).await;
    let mut p = proxy_conn(Some(DB)).await;
    p.query_drop(USERS).await.unwrap();
    for s in partitioning(DB) {
        p.query_drop(&s).await.unwrap();
    }
    for i in 0..40 {
        p.query_drop(format!(
            "INSERT INTO users (email, name) VALUES ('m{i}@x', 'pre')"
        ))
        .await
        .unwrap();
    }
    let writer = tokio::spawn(async move {
        let mut c = proxy_conn(Some(DB)).await;
        for i in 0..150 {
            let sql = if i % 5 == 4 {
                format!("DELETE FROM users WHERE email = 'm{}@x'", i - 2)
            } else {
                format!(
                    "INSERT INTO users (email, name) VALUES ('m{}@x', 'w')",
                    i % 60
                )
            };
            if let Err(e) = c.query_drop(&sql).await {
                assert_eq!(code(&e), 1062, "{sql}: {e}");
            }
        }
        c.disconnect().await.unwrap();
    });
    for s in [
        format!("HSCALE ADD_PARTITION('{DB}.users', 'p2', '2', 'shard1')"),
        format!("HSCALE ADD_PARTITION('{DB}.hscale_lookup_users_email', 'l2', '20', 'shard1')"),
        format!("HSCALE ADD_PARTITION('{DB}.hscale_lookup_users_email', 'l2', '21', 'shard1')"),
        format!("HSCALE MOVE_PARTITION('{DB}.hscale_lookup_users_email', 'l1', 'shard0')"),
        format!("HSCALE MOVE_PARTITION('{DB}.users', 'p1', 'shard0')"),
    ] {
        p.query_drop(&s)
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    writer.await.unwrap();
    let stored_emails = assert_index_right(DB).await;
    let (rows, _) = stored(DB).await;
    assert_eq!(rows.len(), stored_emails);
    for (email, ids) in rows {
        let found: Option<i64> = p
            .query_first(format!("SELECT id FROM users WHERE email = '{email}'"))
            .await
            .unwrap();
        assert_eq!(found, Some(ids[0]), "{email}");
    }
    p.disconnect().await.unwrap();
}

/// DROP TABLE drops the lookup table with the table (physical tables and
/// dictionary entries), so the table can be made and set up again; a
/// unique column with a non-NULL DEFAULT is refused by SETUP_TABLE (an
/// INSERT leaving it out would store a value the index never saw).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_table_takes_the_index_with_it() {
    const DB: &str = "uk_drop";
    cluster(2);
    fresh_db(DB).await;
    let mut p = proxy_conn(Some(DB)).await;
    for round in 0..2 {
        p.query_drop(USERS).await.unwrap();
        for s in partitioning(DB) {
            p.query_drop(&s).await.unwrap();
        }
        p.query_drop(format!(
            "INSERT INTO users (email, name) VALUES ('a@x', 'r{round}'), ('b@x', 'r{round}')"
        ))
        .await
        .unwrap();
        assert_eq!(assert_index_right(DB).await, 2);
        p.query_drop("DROP TABLE users").await.unwrap();
        let tables: Vec<(String, String, String, String, String)> =
            p.query("HSCALE SHOW TABLES").await.unwrap();
        assert!(
            !tables.iter().any(|t| t.0.starts_with(&format!("{DB}."))),
            "{tables:?}"
        );
        for i in 0..2 {
            let mut b = backend_conn(i, Some(DB)).await;
            let left: Vec<String> = b.query("SHOW TABLES").await.unwrap();
            assert!(left.is_empty(), "backend {i}: {left:?}");
            b.disconnect().await.unwrap();
        }
    }
    p.query_drop("CREATE TABLE d (id BIGINT PRIMARY KEY, email VARCHAR(50) DEFAULT 'none' UNIQUE)")
        .await
        .unwrap();
    let e = p
        .query_drop(format!(
            "HSCALE SETUP_TABLE('{DB}.d', 'id', 'd_default', 'shard0', 'MOD(4)')"
        ))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235, "{e}");
    assert!(e.to_string().contains("DEFAULT"), "{e}");
    p.disconnect().await.unwrap();
}
