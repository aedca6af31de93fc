#![allow(clippy::unwrap_used)]
//! Sequences: AUTO_INCREMENT ids of partitioned tables, unique across
//! partitions, proxies and restarts, and LAST_INSERT_ID() per session.
//! Every check reads the backends themselves.

mod common;
#[path = "sequences/views.rs"]
mod views;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use mysql_async::prelude::*;

/// `db.t`: `id` AUTO_INCREMENT primary key, partitioned by `k` with
/// MOD(4): partitions for 1 and 3 on shard1, the rest in the default
/// partition on shard0. `preload` rows are inserted before SETUP_TABLE.
async fn setup(db: &str, preload: u32) {
    fresh_db(db).await;
    let mut c = backend_conn(0, Some(db)).await;
    c.query_drop(
        "CREATE TABLE t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, \
         who VARCHAR(20) NULL, n INT NULL)",
    )
    .await
    .unwrap();
    for i in 0..preload {
        c.query_drop(format!("INSERT INTO t (k, who) VALUES ({i}, 'preload')"))
            .await
            .unwrap();
    }
    c.disconnect().await.unwrap();
    let mut p = proxy_conn(None).await;
    p.query_drop(format!(
        "HSCALE SETUP_TABLE('{db}.t', 'k', 't_default', 'shard0', 'MOD(4)')"
    ))
    .await
    .unwrap();
    for (part, v) in [("p1", 1), ("p3", 3)] {
        p.query_drop(format!(
            "HSCALE ADD_PARTITION('{db}.t', '{part}', '{v}', 'shard1')"
        ))
        .await
        .unwrap();
    }
    p.disconnect().await.unwrap();
}

/// Every row of `db.t` on the backends: id → (who, n), failing on an id
/// seen twice.
async fn rows_on_backends(db: &str) -> BTreeMap<i64, (Option<String>, Option<i32>)> {
    let mut out = BTreeMap::new();
    let tables = physical_tables(&format!("{db}.t")).await;
    for (_, (backend, table)) in tables {
        let mut c = backend_conn(backend, Some(db)).await;
        let rows: Vec<(i64, Option<String>, Option<i32>)> = c
            .query(format!("SELECT id, who, n FROM `{table}`"))
            .await
            .unwrap();
        for (id, who, n) in rows {
            if let Some(old) = out.insert(id, (who.clone(), n)) {
                panic!("id {id} twice: {old:?} and {:?} (in {table})", (who, n));
            }
        }
        c.disconnect().await.unwrap();
    }
    out
}

async fn next_id(db: &str) -> u64 {
    let mut c = backend_conn(0, None).await;
    let n: Option<u64> = c
        .query_first(format!(
            "SELECT next_id FROM hscale.sequences WHERE db = '{db}' AND tbl = 't'"
        ))
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    n.expect("a sequence row")
}

fn serve() -> ProxyProcess {
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 500;
    ProxyProcess::start(config)
}

/// Three proxy processes, three sessions each, inserting at once: single
/// rows and multi-row statements, ids generated (missing, NULL, 0) and
/// explicit. No id twice on the backends, every acknowledged row there
/// with the id the client was told, and each session's LAST_INSERT_ID()
/// names its own row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_proxies_insert_at_once_without_a_duplicate_id() {
    const DB: &str = "seq_three";
    cluster(2);
    setup(DB, 20).await;
    let procs: Vec<ProxyProcess> = (0..3).map(|_| serve()).collect();
    let explicit = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (p, proc_) in procs.iter().enumerate() {
        for s in 0..3 {
            let port = proc_.port;
            let who = format!("p{p}s{s}");
            let explicit = explicit.clone();
            tasks.push(tokio::spawn(async move {
                let mut c = mysql_async::Conn::new(proxy_opts(port, Some(DB)))
                    .await
                    .unwrap();
                // id → n, as acknowledged.
                let mut mine: HashMap<u64, i32> = HashMap::new();
                for i in 0..60 {
                    let k = i % 4;
                    match i % 4 {
                        0 => {
                            c.query_drop(format!(
                                "INSERT INTO t (k, who, n) VALUES ({k}, '{who}', {i})"
                            ))
                            .await
                            .unwrap();
                            let id = c.last_insert_id().unwrap();
                            let last: u64 =
                                c.query_first("SELECT LAST_INSERT_ID()").await.unwrap().unwrap();
                            assert_eq!(last, id, "{who}: LAST_INSERT_ID()");
                            let back: Option<(String, i32)> = c
                                .query_first(format!("SELECT who, n FROM t WHERE id = {id}"))
                                .await
                                .unwrap();
                            assert_eq!(back, Some((who.clone(), i)), "{who}: row {id}");
                            mine.insert(id, i);
                        }
                        1 => {
                            // Three rows over several partitions: the first
                            // generated id is the statement's.
                            c.query_drop(format!(
                                "INSERT INTO t (id, k, who, n) VALUES (NULL, 0, '{who}', {i}), \
                                 (0, 1, '{who}', {}), (DEFAULT, 2, '{who}', {})",
                                1000 + i,
                                2000 + i
                            ))
                            .await
                            .unwrap();
                            let first = c.last_insert_id().unwrap();
                            let last: u64 =
                                c.query_first("SELECT LAST_INSERT_ID()").await.unwrap().unwrap();
                            assert_eq!(last, first, "{who}: LAST_INSERT_ID() of a multi-row insert");
                            let back: Option<(String, i32)> = c
                                .query_first(format!("SELECT who, n FROM t WHERE id = {first}"))
                                .await
                                .unwrap();
                            assert_eq!(back, Some((who.clone(), i)), "{who}: first row {first}");
                            let ids: Vec<(u64, i32)> = c
                                .query(format!(
                                    "SELECT id, n FROM t WHERE who = '{who}' AND n IN ({i}, {}, {})",
                                    1000 + i,
                                    2000 + i
                                ))
                                .await
                                .unwrap();
                            assert_eq!(ids.len(), 3, "{who}: {ids:?}");
                            mine.extend(ids);
                        }
                        2 => {
                            // Explicit ids, far above the counter: they move it.
                            let before: u64 =
                                c.query_first("SELECT LAST_INSERT_ID()").await.unwrap().unwrap();
                            // Explicit ids far apart and falling: each one
                            // at or above the counter moves it, the ids
                            // generated after it stay far below the next.
                            let id = 900_000_000 - 10_000 * explicit.fetch_add(1, Ordering::SeqCst);
                            c.query_drop(format!(
                                "INSERT INTO t (id, k, who, n) VALUES ({id}, {k}, '{who}', {i})"
                            ))
                            .await
                            .unwrap();
                            let after: u64 =
                                c.query_first("SELECT LAST_INSERT_ID()").await.unwrap().unwrap();
                            assert_eq!(after, before, "{who}: an explicit id generates none");
                            mine.insert(id, i);
                        }
                        _ => {
                            c.query_drop(format!(
                                "REPLACE INTO t (k, who, n) VALUES ({k}, '{who}', {i})"
                            ))
                            .await
                            .unwrap();
                            let id = c.last_insert_id().unwrap();
                            mine.insert(id, i);
                        }
                    }
                }
                c.disconnect().await.unwrap();
                (who, mine)
            }));
        }
    }
    let mut acked: BTreeMap<u64, (String, i32)> = BTreeMap::new();
    for t in tasks {
        let (who, mine) = t.await.unwrap();
        for (id, n) in mine {
            if let Some(other) = acked.insert(id, (who.clone(), n)) {
                panic!("id {id} acknowledged to {who} and to {other:?}");
            }
        }
    }
    let rows = rows_on_backends(DB).await;
    assert_eq!(rows.len(), acked.len() + 20, "rows on the backends");
    for (id, (who, n)) in &acked {
        let got = rows.get(&(*id as i64));
        assert_eq!(got, Some(&(Some(who.clone()), Some(*n))), "row {id}");
    }
    // Generated ids start above the rows that were there before.
    let preloaded: Vec<i64> = rows
        .iter()
        .filter(|(_, (w, _))| w.as_deref() == Some("preload"))
        .map(|(id, _)| *id)
        .collect();
    let top = *preloaded.iter().max().unwrap();
    assert!(acked.keys().all(|id| *id as i64 > top));
    assert!(next_id(DB).await > 899_000_000);
}

/// A proxy killed with SIGKILL in the middle of its block: the ids it held
/// are never handed out again (a gap), and the others go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_proxy_leaves_a_gap_never_a_repeat() {
    const DB: &str = "seq_kill";
    cluster(2);
    setup(DB, 0).await;
    let mut a = serve();
    let b = serve();
    let mut ca = mysql_async::Conn::new(proxy_opts(a.port, Some(DB)))
        .await
        .unwrap();
    let mut a_ids = Vec::new();
    for i in 0..5 {
        ca.query_drop(format!("INSERT INTO t (k, who, n) VALUES ({i}, 'a', {i})"))
            .await
            .unwrap();
        a_ids.push(ca.last_insert_id().unwrap());
    }
    let counter = next_id(DB).await;
    assert!(
        *a_ids.last().unwrap() + 1 < counter,
        "a holds the rest of its block"
    );
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    drop(ca);
    let mut cb = mysql_async::Conn::new(proxy_opts(b.port, Some(DB)))
        .await
        .unwrap();
    for i in 0..5 {
        cb.query_drop(format!("INSERT INTO t (k, who, n) VALUES ({i}, 'b', {i})"))
            .await
            .unwrap();
        let id = cb.last_insert_id().unwrap();
        assert!(
            id >= counter,
            "b's id {id} is past a's block (ends at {counter})"
        );
    }
    // A restarted proxy does not reuse a's block either.
    let a2 = serve();
    let mut c2 = mysql_async::Conn::new(proxy_opts(a2.port, Some(DB)))
        .await
        .unwrap();
    c2.query_drop("INSERT INTO t (k, who, n) VALUES (1, 'a2', 0)")
        .await
        .unwrap();
    assert!(c2.last_insert_id().unwrap() >= counter);
    let rows = rows_on_backends(DB).await;
    assert_eq!(rows.len(), 11);
    cb.disconnect().await.unwrap();
    c2.disconnect().await.unwrap();
}

/// An explicit id far above the counter through one proxy, then generated
/// ids through the two others (which hold blocks from before it): no id
/// twice, and the blocks they reserve afterwards start above it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_high_id_moves_the_counter_for_every_proxy() {
    const DB: &str = "seq_high";
    cluster(2);
    setup(DB, 3).await;
    let procs: Vec<ProxyProcess> = (0..3).map(|_| serve()).collect();
    let mut conns = Vec::new();
    for p in &procs {
        conns.push(
            mysql_async::Conn::new(proxy_opts(p.port, Some(DB)))
                .await
                .unwrap(),
        );
    }
    // Every proxy holds a block.
    for (i, c) in conns.iter_mut().enumerate() {
        c.query_drop(format!("INSERT INTO t (k, who) VALUES ({i}, 'warm')"))
            .await
            .unwrap();
    }
    conns[0]
        .query_drop("INSERT INTO t (id, k, who) VALUES (500000, 2, 'high')")
        .await
        .unwrap();
    assert!(next_id(DB).await > 500_000);
    let mut after = Vec::new();
    for round in 0..200 {
        for c in conns.iter_mut().skip(1) {
            c.query_drop(format!(
                "INSERT INTO t (k, who, n) VALUES ({}, 'after', {round})",
                round % 4
            ))
            .await
            .unwrap();
            after.push(c.last_insert_id().unwrap());
        }
    }
    assert!(!after.contains(&500_000));
    // 400 ids are more than the blocks held before: later ones come from
    // blocks reserved after the counter moved.
    assert!(
        after.iter().any(|id| *id > 500_000),
        "{:?}",
        &after[after.len() - 5..]
    );
    let rows = rows_on_backends(DB).await;
    assert_eq!(rows.len(), 3 + 3 + 1 + 400);
    for c in conns {
        c.disconnect().await.unwrap();
    }
}

/// LAST_INSERT_ID() as MySQL defines it, NO_AUTO_VALUE_ON_ZERO, and the
/// constructs hscale refuses rather than risk a duplicate id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_insert_id_and_zero_follow_mysql() {
    const DB: &str = "seq_session";
    cluster(2);
    setup(DB, 5).await;
    let mut c = proxy_conn(Some(DB)).await;
    c.query_drop("INSERT INTO t (k, who) VALUES (1, 'x')")
        .await
        .unwrap();
    let first = c.last_insert_id().unwrap();
    assert!(
        first > 5,
        "the counter starts above the rows there: {first}"
    );
    let last: u64 = c
        .query_first("SELECT LAST_INSERT_ID()")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last, first);
    // A statement that generates no id leaves it alone.
    c.query_drop("UPDATE t SET n = 1 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("INSERT INTO t (id, k, who) VALUES (3000, 2, 'explicit')")
        .await
        .unwrap();
    let last: u64 = c
        .query_first("SELECT LAST_INSERT_ID()")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last, first);
    // The id may be the partition key's neighbour in any partition.
    c.query_drop("INSERT INTO t (k, who) VALUES (0, 'a'), (1, 'b'), (2, 'c'), (3, 'd')")
        .await
        .unwrap();
    let multi = c.last_insert_id().unwrap();
    assert_ne!(multi, 3000);
    assert!(next_id(DB).await > 3000, "explicit 3000 moved the counter");
    let last: u64 = c
        .query_first("SELECT LAST_INSERT_ID()")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last, multi);
    let who: Option<String> = c
        .query_first(format!("SELECT who FROM t WHERE id = {multi}"))
        .await
        .unwrap();
    assert_eq!(who.as_deref(), Some("a"));
    // NO_AUTO_VALUE_ON_ZERO: 0 is stored as 0; NULL still generates.
    c.query_drop("SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO'")
        .await
        .unwrap();
    c.query_drop("INSERT INTO t (id, k, who) VALUES (0, 2, 'zero'), (NULL, 2, 'null')")
        .await
        .unwrap();
    let null_id = c.last_insert_id().unwrap();
    let zero: Option<String> = c
        .query_first("SELECT who FROM t WHERE id = 0")
        .await
        .unwrap();
    assert_eq!(zero.as_deref(), Some("zero"));
    let who: Option<String> = c
        .query_first(format!("SELECT who FROM t WHERE id = {null_id}"))
        .await
        .unwrap();
    assert_eq!(who.as_deref(), Some("null"));
    // INSERT ... SELECT and INSERT ... SET are written as VALUES first
    // (`session/insert_form.rs`): their ids come from the sequence too.
    let k1: Option<i64> = c.query_first("SELECT k FROM t WHERE id = 1").await.unwrap();
    for (sql, k_new) in [
        (
            "INSERT INTO t (k, who) SELECT k, who FROM t WHERE id = 1",
            k1,
        ),
        ("INSERT INTO t SET k = 1", Some(1)),
    ] {
        c.query_drop(sql).await.unwrap();
        let last: u64 = c
            .query_first("SELECT LAST_INSERT_ID()")
            .await
            .unwrap()
            .unwrap();
        let k: Option<i64> = c
            .query_first(format!("SELECT k FROM t WHERE id = {last}"))
            .await
            .unwrap();
        assert_eq!(k, k_new, "{sql}");
    }
    // Prepared INSERT ... SET and without a column list are prepared in the
    // column form (`session/insert_form.rs`): ids from the sequence too.
    for (sql, k) in [
        ("INSERT INTO t SET k = ?, who = 'prep set'", 2i64),
        ("INSERT INTO t VALUES (NULL, ?, 'prep nolist', NULL)", 3),
    ] {
        c.exec_drop(sql, (k,)).await.unwrap();
        let id = c.last_insert_id().unwrap();
        let got: Option<i64> = c
            .query_first(format!("SELECT k FROM t WHERE id = {id}"))
            .await
            .unwrap();
        assert_eq!(got, Some(k), "{sql}");
    }
    // Refused, naming the construct.
    for sql in ["INSERT INTO t (id, k) VALUES (1 + 1, 2)"] {
        let e = c.query_drop(sql).await.unwrap_err();
        assert_eq!(code(&e), 1235, "{sql}: {e}");
    }
    c.disconnect().await.unwrap();
    let rows = rows_on_backends(DB).await;
    assert_eq!(rows.len(), 5 + 1 + 1 + 4 + 2 + 2 + 2);
}

/// A multi-statement query runs its statements one by one
/// (`session/batch.rs`), each from a clear scratch (`exec/scratch.rs`): an
/// INSERT into a plain table after one into a table with a sequence
/// leaves the plain table's id as LAST_INSERT_ID(), the id its server
/// generated, as one server does; the first statement's generated id is
/// not carried into the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_insert_after_a_sequenced_one_in_one_query_keeps_its_own_id() {
    const DB: &str = "seq_batch";
    cluster(2);
    setup(DB, 0).await;
    let mut b = backend_conn(0, Some(DB)).await;
    b.query_drop(
        "CREATE TABLE plain (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT) \
         AUTO_INCREMENT = 7000",
    )
    .await
    .unwrap();
    let mut c = proxy_conn(Some(DB)).await;
    c.query_drop("INSERT INTO t (k, who) VALUES (1, 'batch'); INSERT INTO plain (v) VALUES (1)")
        .await
        .unwrap();
    let last = last_id(&mut c).await;
    let given: Option<u64> = b.query_first("SELECT MAX(id) FROM plain").await.unwrap();
    assert_eq!(Some(last), given, "the plain table's own id");
    // And the other way round: the sequenced table's id, as generated.
    c.query_drop("INSERT INTO plain (v) VALUES (2); INSERT INTO t (k, who) VALUES (3, 'second')")
        .await
        .unwrap();
    let last = last_id(&mut c).await;
    let who: Option<String> = c
        .query_first(format!("SELECT who FROM t WHERE id = {last}"))
        .await
        .unwrap();
    assert_eq!(who.as_deref(), Some("second"));
    c.disconnect().await.unwrap();
    b.disconnect().await.unwrap();
}

/// SETUP_TABLE while a writer inserts through another proxy (the table is
/// still plain: the backend generates ids): the counter starts above every
/// id written before the change, with no window in between, for the
/// in-place set-up and for one that moves the table to another backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_table_starts_above_every_id_written_while_it_runs() {
    for (db, backend) in [("seq_setup0", 0), ("seq_setup1", 1)] {
        cluster(2);
        fresh_db(db).await;
        let mut c = backend_conn(0, Some(db)).await;
        c.query_drop(
            "CREATE TABLE t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, \
             who VARCHAR(20) NULL, n INT NULL)",
        )
        .await
        .unwrap();
        c.disconnect().await.unwrap();
        let writer_proxy = serve();
        let port = writer_proxy.port;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop2 = stop.clone();
        let writer = tokio::spawn(async move {
            let mut c = mysql_async::Conn::new(proxy_opts(port, Some(db)))
                .await
                .unwrap();
            let mut n = 0;
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                c.query_drop(format!(
                    "INSERT INTO t (k, who, n) VALUES ({}, 'w', {n})",
                    n % 4
                ))
                .await
                .unwrap();
                n += 1;
            }
            c.disconnect().await.unwrap();
            n
        });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let mut p = proxy_conn(None).await;
        p.query_drop(format!(
            "HSCALE SETUP_TABLE('{db}.t', 'k', 't_default', 'shard{backend}', 'MOD(4)')"
        ))
        .await
        .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let written = writer.await.unwrap();
        p.disconnect().await.unwrap();
        let rows = rows_on_backends(db).await;
        assert_eq!(rows.len(), written as usize, "{db}");
        let counter = next_id(db).await;
        assert!(written > 0);
        // Every id the writer got, before or after the change, is below
        // the counter or was generated by it: none twice (checked above).
        let top = *rows.keys().max().unwrap() as u64;
        assert!(counter > top, "{db}: counter {counter}, largest id {top}");
    }
}

/// A PRIMARY or UNIQUE key of several columns without the partition
/// column could only be unique within each partition (a UNIQUE key of one
/// column gets a global unique index, `tests/unique_keys.rs`):
/// SETUP_TABLE refuses it with 1503 (as
/// MySQL's own partitioning does), naming the key and the column, and
/// accepts it once the key holds the column. The AUTO_INCREMENT primary
/// key served by the sequence is the exception ([`setup`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_table_refuses_a_unique_key_without_the_partition_column() {
    const DB: &str = "seq_unique";
    cluster(2);
    fresh_db(DB).await;
    let mut b = backend_conn(0, Some(DB)).await;
    b.query_drop(
        "CREATE TABLE c (id BIGINT NOT NULL, customer_id INT NOT NULL, email VARCHAR(50) NOT NULL, \
         label VARCHAR(10) NOT NULL DEFAULT '', PRIMARY KEY (id, customer_id), UNIQUE KEY u_email (email, label))",
    )
    .await
    .unwrap();
    b.query_drop("CREATE TABLE p (id BIGINT NOT NULL PRIMARY KEY, customer_id INT NOT NULL)")
        .await
        .unwrap();
    let mut p = proxy_conn(None).await;
    let setup = |t: &str| {
        format!("HSCALE SETUP_TABLE('{DB}.{t}', 'customer_id', '{t}_default', 'shard0', 'MOD(4)')")
    };
    let e = p.query_drop(setup("c")).await.unwrap_err();
    assert_eq!(code(&e), 1503, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("UNIQUE INDEX `u_email` (email, label)"),
        "{msg}"
    );
    assert!(msg.contains("customer_id"), "{msg}");
    let e = p.query_drop(setup("p")).await.unwrap_err();
    assert_eq!(code(&e), 1503, "{e}");
    assert!(e.to_string().contains("PRIMARY KEY (id)"), "{e}");
    // Nothing changed: the tables are still plain tables on the main backend.
    let tables: Vec<(String, String, String, String, String)> =
        p.query("HSCALE SHOW TABLES").await.unwrap();
    assert!(
        !tables.iter().any(|t| t.0.starts_with(&format!("{DB}."))),
        "{tables:?}"
    );
    let names: Vec<String> = b.query("SHOW TABLES").await.unwrap();
    assert_eq!(names, vec!["c".to_string(), "p".to_string()]);
    // With the partition column in the key, the same table is accepted.
    b.query_drop("ALTER TABLE c DROP INDEX u_email, ADD UNIQUE KEY u_email (customer_id, email)")
        .await
        .unwrap();
    p.query_drop(setup("c")).await.unwrap();
    p.query_drop(format!(
        "INSERT INTO {DB}.c (id, customer_id, email) VALUES (1, 1, 'a@x'), (2, 2, 'a@x')"
    ))
    .await
    .unwrap();
    let e = p
        .query_drop(format!(
            "INSERT INTO {DB}.c (id, customer_id, email) VALUES (3, 1, 'a@x')"
        ))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1062, "{e}");
    p.disconnect().await.unwrap();
    b.disconnect().await.unwrap();
}

/// Prepared INSERTs (COM_STMT_PREPARE / EXECUTE, mysql_async's binary
/// protocol) take their ids from the sequence as text ones do: single and
/// multi-row, the id missing, NULL, 0 or bound as a parameter, explicit
/// ids moving the counter, the OK packet's insert id and LAST_INSERT_ID()
/// naming the first generated row; and into a table partitioned by the
/// id itself, each row lands in its id's partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_inserts_take_ids_from_the_sequence() {
    const DB: &str = "seq_prepared";
    cluster(2);
    setup(DB, 5).await;
    let mut c = proxy_conn(Some(DB)).await;
    let one = c
        .prep("INSERT INTO t (k, who) VALUES (?, ?)")
        .await
        .unwrap();
    assert_eq!(one.num_params(), 2, "the client sees its own parameters");
    let mut seen = Vec::new();
    for i in 0..8 {
        c.exec_drop(&one, (i % 4, format!("one{i}"))).await.unwrap();
        let id = c.last_insert_id().unwrap();
        assert!(id > 5, "above the preloaded rows: {id}");
        assert_eq!(last_id(&mut c).await, id);
        seen.push((id, format!("one{i}")));
    }
    // Several rows: the first generated id is reported.
    c.exec_drop(
        "INSERT INTO t (k, who) VALUES (?, ?), (?, ?)",
        (2, "multi_a", 6, "multi_b"),
    )
    .await
    .unwrap();
    let multi = c.last_insert_id().unwrap();
    assert_eq!(last_id(&mut c).await, multi);
    // Consecutive, as MySQL gives one statement's rows (drivers compute
    // the later keys from the first).
    seen.push((multi, "multi_a".into()));
    seen.push((multi + 1, "multi_b".into()));
    // The id bound as a parameter: NULL and 0 generate, a value is kept.
    let by_param = c
        .prep("INSERT INTO t (id, k, who) VALUES (?, ?, ?)")
        .await
        .unwrap();
    c.exec_drop(&by_param, (None::<u64>, 1, "null"))
        .await
        .unwrap();
    let null_id = c.last_insert_id().unwrap();
    seen.push((null_id, "null".into()));
    c.exec_drop(&by_param, (0, 3, "zero")).await.unwrap();
    let zero_id = c.last_insert_id().unwrap();
    assert!(zero_id > null_id, "0 generates: {zero_id}");
    seen.push((zero_id, "zero".into()));
    c.exec_drop(&by_param, (5000, 1, "explicit")).await.unwrap();
    assert_eq!(
        last_id(&mut c).await,
        zero_id,
        "an explicit id leaves LAST_INSERT_ID() alone"
    );
    assert!(next_id(DB).await > 5000, "explicit 5000 moved the counter");
    seen.push((5000, "explicit".into()));
    // Literal NULL, DEFAULT and 0 in a prepared row, with a parameter
    // after them and ON DUPLICATE KEY UPDATE's own parameter.
    c.exec_drop(
        "INSERT INTO t (id, k, who) VALUES (NULL, ?, ?), (DEFAULT, ?, ?), (0, ?, 'lit0') \
         ON DUPLICATE KEY UPDATE n = ?",
        (2, "lit_null", 2, "lit_default", 2, 7),
    )
    .await
    .unwrap();
    let lit = c.last_insert_id().unwrap();
    // The proxy's block still holds ids below the explicit one: unique,
    // not monotonic.
    assert!(lit != 5000 && lit > zero_id, "{lit}");
    seen.push((lit, "lit_null".into()));
    // NO_AUTO_VALUE_ON_ZERO, set after PREPARE: 0 is stored as given.
    c.query_drop("SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO'")
        .await
        .unwrap();
    c.exec_drop(&by_param, (0, 2, "kept0")).await.unwrap();
    assert_eq!(last_id(&mut c).await, lit);
    seen.push((0, "kept0".into()));
    c.query_drop("SET sql_mode = DEFAULT").await.unwrap();
    let rows = rows_on_backends(DB).await;
    for (id, who) in &seen {
        assert_eq!(
            rows.get(&(*id as i64)).and_then(|r| r.0.as_deref()),
            Some(who.as_str()),
            "row {id}"
        );
    }
    assert_eq!(rows.len(), 5 + 8 + 2 + 3 + 3 + 1);

    // A table partitioned by its id: the ids decide the partitions.
    let mut b = backend_conn(0, Some(DB)).await;
    b.query_drop("CREATE TABLE u (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, who VARCHAR(20))")
        .await
        .unwrap();
    b.disconnect().await.unwrap();
    c.query_drop(format!(
        "HSCALE SETUP_TABLE('{DB}.u', 'id', 'u_default', 'shard0', 'MOD(4)')"
    ))
    .await
    .unwrap();
    for (part, v) in [("p1", 1), ("p3", 3)] {
        c.query_drop(format!(
            "HSCALE ADD_PARTITION('{DB}.u', '{part}', '{v}', 'shard1')"
        ))
        .await
        .unwrap();
    }
    let ins = c.prep("INSERT INTO u (who) VALUES (?)").await.unwrap();
    let mut ids = Vec::new();
    for i in 0..12 {
        c.exec_drop(&ins, (format!("u{i}"),)).await.unwrap();
        let id = c.last_insert_id().unwrap();
        let who: Option<String> = c
            .exec_first("SELECT who FROM u WHERE id = ?", (id,))
            .await
            .unwrap();
        assert_eq!(who, Some(format!("u{i}")), "id {id}");
        ids.push(id);
    }
    c.disconnect().await.unwrap();
    for (name, (backend, table)) in physical_tables(&format!("{DB}.u")).await {
        let mut b = backend_conn(backend, Some(DB)).await;
        let on: Vec<u64> = b.query(format!("SELECT id FROM `{table}`")).await.unwrap();
        for id in on {
            let want = match id % 4 {
                1 => "p1",
                3 => "p3",
                _ => "default",
            };
            assert!(
                name == want || (want == "default" && name != "p1" && name != "p3"),
                "id {id} in partition {name}"
            );
            assert!(ids.contains(&id));
        }
        b.disconnect().await.unwrap();
    }
}

async fn last_id(c: &mut mysql_async::Conn) -> u64 {
    c.query_first("SELECT LAST_INSERT_ID()")
        .await
        .unwrap()
        .unwrap()
}

/// SHOW CREATE TABLE names the sequence's next value as the table's
/// AUTO_INCREMENT, not the default partition's own counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_create_table_shows_the_sequences_next_value() {
    const DB: &str = "seq_show";
    cluster(2);
    setup(DB, 5).await;
    let mut c = proxy_conn(Some(DB)).await;
    // Rows on shard1's partitions only: the default partition's counter
    // stays where the preloaded rows left it.
    c.query_drop("INSERT INTO t (k, who) VALUES (1, 'a'), (3, 'b'), (1, 'c')")
        .await
        .unwrap();
    c.query_drop("INSERT INTO t (id, k, who) VALUES (700, 1, 'high')")
        .await
        .unwrap();
    let next = next_id(DB).await;
    assert!(next > 700, "{next}");
    let (_, ddl): (String, String) = c.query_first("SHOW CREATE TABLE t").await.unwrap().unwrap();
    assert!(ddl.contains(&format!(" AUTO_INCREMENT={next} ")), "{ddl}");
    c.disconnect().await.unwrap();
}

/// Inserts with generated ids through two proxy processes while partitions
/// are added (carved out of the default), moved and dropped (merged back):
/// every insert is acknowledged (the fence runs it again, unseen), no id
/// is handed out twice, every acknowledged row is on the backends once,
/// with its id, in the table its partition names, and found by its id
/// through both proxies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_ids_survive_partition_changes() {
    const DB: &str = "seq_changes";
    cluster(2);
    setup(DB, 0).await;
    let procs: Vec<ProxyProcess> = (0..2).map(|_| serve()).collect();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for (p, proc_) in procs.iter().enumerate() {
        for s in 0..2 {
            let (port, stop) = (proc_.port, stop.clone());
            let who = format!("p{p}s{s}");
            tasks.push(tokio::spawn(async move {
                let mut c = mysql_async::Conn::new(proxy_opts(port, Some(DB)))
                    .await
                    .unwrap();
                let mut mine: Vec<(u64, i32)> = Vec::new();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let sql = format!("INSERT INTO t (k, who, n) VALUES ({}, '{who}', {i})", i % 4);
                    if i % 2 == 0 {
                        c.query_drop(&sql)
                            .await
                            .unwrap_or_else(|e| panic!("{sql}: {e}"));
                    } else {
                        c.exec_drop(
                            "INSERT INTO t (k, who, n) VALUES (?, ?, ?)",
                            (i % 4, &who, i),
                        )
                        .await
                        .unwrap_or_else(|e| panic!("prepared {sql}: {e}"));
                    }
                    mine.push((c.last_insert_id().unwrap(), i));
                    i += 1;
                }
                c.disconnect().await.unwrap();
                (who, mine)
            }));
        }
    }
    let mut admin = proxy_conn(Some(DB)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for change in [
        "HSCALE ADD_PARTITION('t', 'p2', '2', 'shard1')",
        "HSCALE MOVE_PARTITION('t', 'p1', 'shard0')",
        "HSCALE DROP_PARTITION('t', 'p3')",
    ] {
        admin.query_drop(change).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut acked: BTreeMap<u64, (String, i32)> = BTreeMap::new();
    for t in tasks {
        let (who, mine) = t.await.unwrap();
        for (id, n) in mine {
            if let Some(other) = acked.insert(id, (who.clone(), n)) {
                panic!("id {id} acknowledged to {who} and to {other:?}");
            }
        }
    }
    assert!(acked.len() > 100, "inserts barely ran: {}", acked.len());
    let rows = rows_on_backends(DB).await;
    assert_eq!(rows.len(), acked.len(), "rows on the backends");
    for (id, (who, n)) in &acked {
        assert_eq!(
            rows.get(&(*id as i64)),
            Some(&(Some(who.clone()), Some(*n))),
            "row {id}"
        );
    }
    // Placement: k's partition after the changes (p3 merged back).
    for (name, (backend, table)) in physical_tables(&format!("{DB}.t")).await {
        let mut c = backend_conn(backend, Some(DB)).await;
        let ks: Vec<i32> = c
            .query(format!("SELECT DISTINCT k FROM `{table}` ORDER BY k"))
            .await
            .unwrap();
        let want: &[i32] = match name.as_str() {
            "" => &[0, 3],
            "p1" => &[1],
            "p2" => &[2],
            other => panic!("partition {other}"),
        };
        assert_eq!(ks, want, "{table} on shard{backend}");
        c.disconnect().await.unwrap();
    }
    for p in &procs {
        let mut c = mysql_async::Conn::new(proxy_opts(p.port, Some(DB)))
            .await
            .unwrap();
        for (id, (who, n)) in acked.iter().step_by(7) {
            let back: Option<(String, i32)> = c
                .exec_first("SELECT who, n FROM t WHERE id = ?", (id,))
                .await
                .unwrap();
            assert_eq!(
                back,
                Some((who.clone(), *n)),
                "row {id} through :{}",
                p.port
            );
        }
        c.disconnect().await.unwrap();
    }
    admin.disconnect().await.unwrap();
}
