//! The global unique key tests' table and checks (issue 35,
//! docs/src/unique-keys.md): the issue's `users` table partitioned by id,
//! its email index read on the backends, and answers compared with one
//! server's.

use std::collections::BTreeMap;

use mysql_async::prelude::*;

use super::twin::{self, Twin};
use super::{backend_conn, physical_tables};

/// The table, as a new user writes it.
pub const USERS: &str = "CREATE TABLE users (id BIGINT AUTO_INCREMENT PRIMARY KEY, email VARCHAR(190) UNIQUE, name VARCHAR(50))";

/// `db.users` partitioned by id (MOD(4): 1 and 3 on shard1), its email
/// index's lookup table spread too (hash values 0 to 7 on shard1).
pub fn partitioning(db: &str) -> Vec<String> {
    let mut out = vec![
        format!("HSCALE SETUP_TABLE('{db}.users', 'id', 'users_default', 'shard0', 'MOD(4)')"),
        format!("HSCALE ADD_PARTITION('{db}.users', 'p1', '1', 'shard1')"),
        format!("HSCALE ADD_PARTITION('{db}.users', 'p3', '3', 'shard1')"),
    ];
    for v in 0..8 {
        out.push(format!(
            "HSCALE ADD_PARTITION('{db}.hscale_lookup_users_email', 'l1', '{v}', 'shard1')"
        ));
    }
    out
}

/// Every row of `db.users` and every row of its lookup table, read on the
/// backends: (email → ids holding it, email → ids the index names).
pub async fn stored(db: &str) -> (BTreeMap<String, Vec<i64>>, BTreeMap<String, Vec<i64>>) {
    let mut rows: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut index: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (table, out) in [
        ("users", &mut rows),
        ("hscale_lookup_users_email", &mut index),
    ] {
        for (_, (backend, physical)) in physical_tables(&format!("{db}.{table}")).await {
            let mut c = backend_conn(backend, Some(db)).await;
            let got: Vec<(Option<String>, i64)> = c
                .query(format!("SELECT email, id FROM `{physical}`"))
                .await
                .unwrap();
            for (email, id) in got {
                if let Some(e) = email {
                    out.entry(e.to_lowercase()).or_default().push(id);
                }
            }
            c.disconnect().await.unwrap();
        }
    }
    (rows, index)
}

/// What is wrong with the index on the backends (empty: each stored email
/// once, each with its one index row naming the row's id, and no index
/// row without its row), and how many emails are stored.
pub async fn index_problems(db: &str) -> (Vec<String>, usize) {
    let (rows, index) = stored(db).await;
    let mut out = Vec::new();
    for (email, ids) in &rows {
        if ids.len() != 1 {
            out.push(format!("email {email} stored {ids:?}"));
        } else if index.get(email) != Some(ids) {
            out.push(format!(
                "email {email} of {ids:?} indexed {:?}",
                index.get(email)
            ));
        }
    }
    for (email, ids) in &index {
        if !rows.contains_key(email) {
            out.push(format!("an index row of {email} ({ids:?}) without its row"));
        }
    }
    (out, rows.len())
}

/// The index is right (see [`index_problems`]); the emails stored.
pub async fn assert_index_right(db: &str) -> usize {
    let (problems, n) = index_problems(db).await;
    assert!(problems.is_empty(), "{db}: {problems:?}");
    n
}

/// [`assert_index_right`] once the transactions a killed proxy left in
/// doubt were resolved by the others' recovery (within 30 s).
pub async fn assert_index_right_soon(db: &str) -> usize {
    for _ in 0..60 {
        let (problems, n) = index_problems(db).await;
        if problems.is_empty() {
            return n;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    assert_index_right(db).await
}

/// An error's code and message (mysql_async's Display adds the SQLSTATE).
pub fn error_of(e: &mysql_async::Error) -> (u16, String) {
    match e {
        mysql_async::Error::Server(s) => (s.code, s.message.clone()),
        other => panic!("expected a server error, got {other:?}"),
    }
}

/// What a write answered, as the comparisons need it.
pub async fn answer(c: &mut mysql_async::Conn, sql: &str) -> Result<u64, (u16, String)> {
    match c.query_drop(sql).await {
        Ok(()) => Ok(c.affected_rows()),
        Err(e) => Err(error_of(&e)),
    }
}

/// A write's answer: (affected rows, info, warnings, SHOW WARNINGS), or
/// its error's code and message.
pub type Said = Result<(u64, String, u16, Vec<(String, u16, String)>), (u16, String)>;

pub async fn said(c: &mut mysql_async::Conn, sql: &str) -> Said {
    match c.query_drop(sql).await {
        Ok(()) => {
            let (n, info, w) = (c.affected_rows(), c.info().to_string(), c.get_warnings());
            let shown: Vec<(String, u16, String)> = c.query("SHOW WARNINGS").await.unwrap();
            Ok((n, info, w, shown))
        }
        Err(e) => Err(error_of(&e)),
    }
}

/// The rows, without ids a failed INSERT may use up differently.
pub const CONTENTS: &str = "SELECT id, email, name FROM users ORDER BY id";

/// `users` (ids 1 to 12, emails userN@example.com, two NULL emails) in
/// `db`, partitioned as [`partitioning`] says, beside `reference`.
pub async fn users(
    db: &'static str,
    reference: &'static str,
) -> (mysql_async::Conn, mysql_async::Conn) {
    let parts = partitioning(db);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let t = Twin {
        shards: 2,
        db,
        reference,
        schema: &[USERS],
        partitioning: &parts,
    };
    let preload: Vec<String> = (1..=12)
        .map(|i| format!("INSERT INTO users (email, name) VALUES ('user{i}@example.com', 'u{i}')"))
        .chain(std::iter::once(
            "INSERT INTO users (email, name) VALUES (NULL, 'none'), (NULL, 'none2')".to_string(),
        ))
        .collect();
    t.create_rows_first(&preload).await;
    assert_eq!(assert_index_right(db).await, 12);
    t.conns().await
}

/// Run `sql` on both: the same answer and the same rows after.
pub async fn same_answer(p: &mut mysql_async::Conn, r: &mut mysql_async::Conn, sql: &str) -> Said {
    let want = said(r, sql).await;
    let got = said(p, sql).await;
    assert_eq!(got, want, "{sql}");
    assert_eq!(
        twin::rows(p, CONTENTS).await,
        twin::rows(r, CONTENTS).await,
        "after {sql}"
    );
    got
}

/// [`same_answer`], and the index right on the backends after (outside
/// a transaction).
pub async fn same(
    p: &mut mysql_async::Conn,
    r: &mut mysql_async::Conn,
    db: &str,
    sql: &str,
) -> Said {
    let got = same_answer(p, r, sql).await;
    let emails: Option<usize> = r
        .query_first("SELECT COUNT(email) FROM users")
        .await
        .unwrap();
    assert_eq!(Some(assert_index_right(db).await), emails, "after {sql}");
    got
}
