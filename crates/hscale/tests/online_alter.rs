#![allow(clippy::unwrap_used)]
//! Issue 32 item 2: online schema changes. An ALTER TABLE of a
//! partitioned table that the server would run by copying the table runs
//! as a partition change (a shadow table per partition, capture, copy,
//! replays, one cutover); the others run in place. Every result is
//! compared with one plain database of the same server (`REF`).
//!
//! Two backends; tables partitioned MOD(2) on `id` (default partition and
//! value 0 on shard0, value 1 on shard1). Proxies of their own
//! (`ProxyProcess`) own the changes that are killed or cancelled; the
//! cluster's proxy takes them over.

mod common;

use common::*;
use mysql_async::prelude::*;
use mysql_async::Conn;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const DB: &str = "oa_part";
const REF: &str = "oa_ref";

type Rows = Vec<Vec<Option<String>>>;

async fn rows(c: &mut Conn, sql: &str) -> Rows {
    let rows: Vec<mysql_async::Row> = c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
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

/// What a statement answered: an error (code and message), or OK with
/// its affected rows and info.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Err(u16, String),
    Ok(u64, String),
}

async fn run(c: &mut Conn, sql: &str) -> Answer {
    match c.query_drop(sql).await {
        Ok(()) => Answer::Ok(c.affected_rows(), c.info().to_string()),
        Err(mysql_async::Error::Server(e)) => Answer::Err(e.code, e.message),
        Err(e) => panic!("{sql}: {e}"),
    }
}

static SET_UP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

async fn connections() -> (Conn, Conn) {
    SET_UP
        .get_or_init(|| async {
            cluster(2);
            let mut c = proxy_conn(None).await;
            for db in [DB, REF] {
                c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
            }
        })
        .await;
    (proxy_conn(Some(DB)).await, proxy_conn(Some(REF)).await)
}

/// `create` in both databases with `insert` run, then `DB`'s partitioned
/// MOD(2) on `id`.
async fn table(name: &str, create: &str, insert: &str) -> (Conn, Conn) {
    let (mut p, mut r) = connections().await;
    for c in [&mut p, &mut r] {
        c.query_drop(format!("DROP TABLE IF EXISTS {name}"))
            .await
            .unwrap();
        c.query_drop(create).await.unwrap();
        if !insert.is_empty() {
            c.query_drop(insert).await.unwrap();
        }
    }
    for s in [
        format!("HSCALE SETUP_TABLE('{DB}.{name}', 'id', '{name}_default', 'shard0', 'MOD(2)')"),
        format!("HSCALE ADD_PARTITION('{DB}.{name}', '{name}_0', '0', 'shard0')"),
        format!("HSCALE ADD_PARTITION('{DB}.{name}', '{name}_1', '1', 'shard1')"),
    ] {
        p.query_drop(&s)
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    (p, r)
}

/// `INSERT INTO name VALUES` of `n` rows made by `row(i)`.
fn insert_of(name: &str, n: u32, row: impl Fn(u32) -> String) -> String {
    let values: Vec<String> = (1..=n).map(row).collect();
    format!("INSERT INTO {name} VALUES {}", values.join(", "))
}

/// Every physical table of `DB.name`: (backend, physical), sorted.
async fn physicals(name: &str) -> Vec<(usize, String)> {
    let mut t: Vec<_> = physical_tables(&format!("{DB}.{name}"))
        .await
        .into_values()
        .collect();
    t.sort();
    t
}

/// SHOW CREATE TABLE of every physical table of `DB.name`, physical
/// name and AUTO_INCREMENT counter taken out.
async fn definitions(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (b, physical) in physicals(name).await {
        let mut c = backend_conn(b, Some(DB)).await;
        let (_, ddl): (String, String) = c
            .query_first(format!("SHOW CREATE TABLE `{physical}`"))
            .await
            .unwrap()
            .unwrap();
        c.disconnect().await.unwrap();
        out.push(normalized(&ddl, &physical));
    }
    out
}

fn normalized(ddl: &str, table: &str) -> String {
    let ddl = ddl.replacen(&format!("CREATE TABLE `{table}`"), "CREATE TABLE `x`", 1);
    ddl.split(' ')
        .filter(|w| !w.starts_with("AUTO_INCREMENT="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The logical table's SHOW CREATE TABLE through hscale equals the
/// reference's, every physical table has that definition, and the rows
/// are the reference's.
async fn same_as_reference(p: &mut Conn, r: &mut Conn, name: &str) {
    // A change another proxy committed reaches `p`'s proxy with its next
    // reload: until then its SHOW CREATE TABLE meets a retired table,
    // and waits for the newer dictionary as every statement does.
    let (_, a): (String, String) = p
        .query_first(format!("SHOW CREATE TABLE {name}"))
        .await
        .unwrap()
        .unwrap();
    let (_, b): (String, String) = r
        .query_first(format!("SHOW CREATE TABLE {name}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(normalized(&a, name), normalized(&b, name));
    for d in definitions(name).await {
        assert_eq!(d, normalized(&b, name));
    }
    let q = format!("SELECT * FROM {name} ORDER BY id");
    assert_eq!(rows(p, &q).await, rows(r, &q).await);
}

/// The tables of `DB` named after `name` and the triggers on them, on
/// every backend, and the changelogs of operation `op`: what an undone
/// change must leave as it found.
async fn leftovers(name: &str, op: u64) -> Vec<String> {
    let mut out = Vec::new();
    for b in 0..2 {
        let mut c = backend_conn(b, None).await;
        let q = format!(
            "SELECT CONCAT('table ', TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{DB}' AND TABLE_NAME LIKE '{name}%' UNION ALL SELECT CONCAT('trigger ', TRIGGER_NAME) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{DB}' AND EVENT_OBJECT_TABLE LIKE '{name}%' UNION ALL SELECT CONCAT('changelog ', TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'hscale' AND TABLE_NAME LIKE 'changes\\_{op}%'"
        );
        let names: Vec<String> = c.query(q).await.unwrap();
        out.extend(names.into_iter().map(|n| format!("shard{b}: {n}")));
        c.disconnect().await.unwrap();
    }
    out.sort();
    out
}

/// `leftovers` of an unchanged table whose physical tables are `tables`.
fn table_names(tables: &[(usize, String)]) -> Vec<String> {
    let mut out: Vec<String> = tables
        .iter()
        .map(|(b, t)| format!("shard{b}: table {t}"))
        .collect();
    out.sort();
    out
}

/// The journal row of the latest operation on `DB.name`: (id, state,
/// rows_copied).
async fn last_operation(c: &mut Conn, name: &str) -> Option<(u64, String, u64)> {
    let ops = rows(c, "HSCALE SHOW OPERATIONS").await;
    ops.into_iter()
        .filter(|r| r[1].as_deref() == Some(&format!("{DB}.{name}")))
        .map(|r| {
            (
                r[0].as_deref().unwrap().parse().unwrap(),
                r[3].clone().unwrap_or_default(),
                r[4].as_deref().unwrap_or("0").parse().unwrap_or(0),
            )
        })
        .max_by_key(|(id, _, _)| *id)
}

/// Wait (at most `s` seconds) until the latest operation on `name`
/// satisfies `f`.
async fn wait_for(
    name: &str,
    s: u64,
    f: impl Fn(&(u64, String, u64)) -> bool,
) -> (u64, String, u64) {
    let mut c = proxy_conn(None).await;
    let start = std::time::Instant::now();
    loop {
        if let Some(op) = last_operation(&mut c, name).await {
            if f(&op) {
                return op;
            }
            assert!(
                start.elapsed().as_secs() < s,
                "operation on {name} stuck: {op:?}"
            );
        }
        assert!(start.elapsed().as_secs() < s, "no operation on {name}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// A column type change (a copy on one server) runs online: every
/// partition gets a new physical table, the result is one server's
/// (definition, rows, affected rows and info), and the operation is in
/// the journal with its rows.
#[tokio::test]
async fn a_column_type_change_runs_online_as_one_server_changes_it() {
    let (mut p, mut r) = table(
        "typed",
        "CREATE TABLE typed (id INT NOT NULL PRIMARY KEY, k INT NULL, s VARCHAR(20) NOT NULL DEFAULT '', gone INT)",
        &insert_of("typed", 300, |i| {
            format!("({i}, {}, 'v{i}', {i})", i as i64 * 7 - 1000)
        }),
    )
    .await;
    let before = physicals("typed").await;
    let sql = "ALTER TABLE typed MODIFY k BIGINT NOT NULL DEFAULT 5, ADD COLUMN added VARCHAR(10) NOT NULL DEFAULT 'new' FIRST, DROP COLUMN gone, CHANGE s s2 VARCHAR(40) NOT NULL";
    let want = run(&mut r, sql).await;
    assert_eq!(
        want,
        Answer::Ok(300, "Records: 300  Duplicates: 0  Warnings: 0".into())
    );
    assert_eq!(run(&mut p, sql).await, want);
    same_as_reference(&mut p, &mut r, "typed").await;
    let after = physicals("typed").await;
    assert_eq!(after.len(), before.len());
    for (a, b) in after.iter().zip(&before) {
        assert_ne!(a.1, b.1, "every partition has a new table");
    }
    let (_, state, copied) = last_operation(&mut p, "typed").await.unwrap();
    assert_eq!((state.as_str(), copied), ("done", 300));
    // Only the new tables are left.
    let (id, _, _) = last_operation(&mut p, "typed").await.unwrap();
    let left = leftovers("typed", id).await;
    assert!(
        !left.iter().any(|l| l.contains("typed")
            && (l.contains("retired") || l.contains("trigger") || l.contains("changelog"))),
        "{left:?}"
    );
    // Writes after the change go to the new tables.
    for c in [&mut p, &mut r] {
        c.query_drop("INSERT INTO typed (id, k, s2) VALUES (1001, 9000000000, 'x')")
            .await
            .unwrap();
    }
    same_as_reference(&mut p, &mut r, "typed").await;
}

/// An ALTER the server runs instantly or in place without a copy (a
/// column added at the end, an index) keeps the physical tables.
#[tokio::test]
async fn an_alter_without_a_copy_runs_in_place() {
    let (mut p, mut r) = table(
        "inplace",
        "CREATE TABLE inplace (id INT NOT NULL PRIMARY KEY, k INT)",
        &insert_of("inplace", 20, |i| format!("({i}, {i})")),
    )
    .await;
    let before = physicals("inplace").await;
    for sql in [
        "ALTER TABLE inplace ADD COLUMN c INT NOT NULL DEFAULT 3",
        "ALTER TABLE inplace ADD INDEX ik (k)",
    ] {
        let want = run(&mut r, sql).await;
        assert_eq!(run(&mut p, sql).await, want, "{sql}");
        same_as_reference(&mut p, &mut r, "inplace").await;
        assert_eq!(physicals("inplace").await, before, "{sql}");
    }
}

/// A client's explicit ALGORITHM or LOCK is honoured as one server
/// would: the statement runs in place on every partition (a COPY asked
/// for copies there), and what the server refuses is refused alike.
#[tokio::test]
async fn an_explicit_algorithm_or_lock_runs_in_place() {
    let (mut p, mut r) = table(
        "explicit",
        "CREATE TABLE explicit (id INT NOT NULL PRIMARY KEY, k INT)",
        &insert_of("explicit", 20, |i| format!("({i}, {i})")),
    )
    .await;
    let before = physicals("explicit").await;
    for sql in [
        "ALTER TABLE explicit MODIFY k BIGINT, ALGORITHM=INPLACE",
        "ALTER TABLE explicit MODIFY k BIGINT, LOCK=NONE",
        "ALTER TABLE explicit MODIFY k BIGINT, ALGORITHM=COPY",
    ] {
        let want = run(&mut r, sql).await;
        assert_eq!(run(&mut p, sql).await, want, "{sql}");
        same_as_reference(&mut p, &mut r, "explicit").await;
        assert_eq!(physicals("explicit").await, before, "{sql}");
    }
}

/// The first example, on the online path: `MODIFY k INT UNSIGNED`
/// copies the table on one server, so it runs online here; the row -5
/// fails the copy before any cutover, the client gets one server's error
/// (1264, row 2 of the whole table), and every partition is as it was,
/// with no shadow, trigger or changelog left.
#[tokio::test]
async fn a_row_the_new_definition_refuses_fails_before_the_cutover() {
    let (mut p, mut r) = table(
        "ddlx",
        "CREATE TABLE ddlx (id INT NOT NULL PRIMARY KEY, k INT NULL)",
        "INSERT INTO ddlx VALUES (1, 3), (2, -5), (3, 4), (4, NULL)",
    )
    .await;
    let (defs, tables) = (definitions("ddlx").await, physicals("ddlx").await);
    let sql = "ALTER TABLE ddlx MODIFY k INT UNSIGNED NULL";
    let want = run(&mut r, sql).await;
    assert_eq!(
        want,
        Answer::Err(1264, "Out of range value for column 'k' at row 2".into())
    );
    assert_eq!(run(&mut p, sql).await, want);
    assert_eq!(definitions("ddlx").await, defs);
    assert_eq!(physicals("ddlx").await, tables);
    let (id, state, _) = last_operation(&mut p, "ddlx").await.unwrap();
    assert_eq!(state, "failed");
    assert_eq!(leftovers("ddlx", id).await, table_names(&tables));
    // Without the refused row the same statement runs online.
    for c in [&mut p, &mut r] {
        c.query_drop("UPDATE ddlx SET k = 5 WHERE id = 2")
            .await
            .unwrap();
    }
    let want = run(&mut r, sql).await;
    assert_eq!(run(&mut p, sql).await, want);
    same_as_reference(&mut p, &mut r, "ddlx").await;
    assert_ne!(physicals("ddlx").await, tables);
}

/// A proxy of its own on the cluster's config, with `tweak` applied and
/// `env` set.
fn serve(tweak: impl FnOnce(&mut hscale::Config), env: &[(&str, &str)]) -> ProxyProcess {
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 300;
    tweak(&mut config);
    ProxyProcess::start_with_env(config, env)
}

/// One writer's own rows (ids `base + n`): inserts, updates of `v` and
/// deletes through `port`'s proxy until `stop`, every write checked
/// acknowledged; returns the rows it left (id to v).
async fn writer(port: u16, base: i64, stop: Arc<AtomicBool>) -> BTreeMap<i64, i64> {
    let mut c = Conn::new(proxy_opts(port, Some(DB))).await.unwrap();
    let mut mine = BTreeMap::new();
    let mut n = 0i64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let id = base + n;
        c.query_drop(format!("INSERT INTO busy (id, v) VALUES ({id}, {n})"))
            .await
            .unwrap_or_else(|e| panic!("insert {id}: {e}"));
        mine.insert(id, n);
        if n % 3 == 0 {
            let k = base + n / 2;
            if let Some(v) = mine.get_mut(&k) {
                c.query_drop(format!("UPDATE busy SET v = v + 1000 WHERE id = {k}"))
                    .await
                    .unwrap_or_else(|e| panic!("update {k}: {e}"));
                *v += 1000;
            }
        }
        if n % 7 == 0 {
            let k = base + n - 3;
            c.query_drop(format!("DELETE FROM busy WHERE id = {k}"))
                .await
                .unwrap_or_else(|e| panic!("delete {k}: {e}"));
            mine.remove(&k);
        }
        // Also the table's first rows, which the copy reads early.
        if n % 5 == 0 {
            let k = n % 2000 + 1;
            c.query_drop(format!("UPDATE busy SET v = -v WHERE id = {k}"))
                .await
                .unwrap_or_else(|e| panic!("update {k}: {e}"));
        }
    }
    c.disconnect().await.unwrap();
    mine
}

/// Writers through two proxies during an online ALTER (its copy slowed
/// to last seconds) lose nothing: every acknowledged write is in the
/// table the dictionary names, checked on the backends, and every row's
/// changed and added columns are what the new definition gives it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_through_two_proxies_lose_nothing_during_an_online_alter() {
    let (mut p, _r) = table(
        "busy",
        "CREATE TABLE busy (id BIGINT NOT NULL PRIMARY KEY, v INT NOT NULL)",
        &insert_of("busy", 2000, |i| format!("({i}, {i})")),
    )
    .await;
    let owner = serve(|c| c.proxy.change_copy_rows_per_s = 1000, &[]);
    let other = serve(|_| {}, &[]);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = [
        (owner.port, 100_000),
        (other.port, 200_000),
        (other.port, 300_000),
    ]
    .into_iter()
    .map(|(port, base)| tokio::spawn(writer(port, base, stop.clone())))
    .collect();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let mut c = Conn::new(proxy_opts(owner.port, Some(DB))).await.unwrap();
    let sql = "ALTER TABLE busy MODIFY v BIGINT NOT NULL, ADD COLUMN twice BIGINT AS (v * 2) STORED, ADD COLUMN tag CHAR(3) NOT NULL DEFAULT 'new'";
    let done = run(&mut c, sql).await;
    assert!(matches!(done, Answer::Ok(..)), "{done:?}");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut want: BTreeMap<i64, i64> = BTreeMap::new();
    for w in writers {
        want.extend(w.await.unwrap());
    }
    // The first 2000 rows: negated by the writers an unknown number of
    // times; read through the proxy only for their ids.
    let (_, state, _) = last_operation(&mut p, "busy").await.unwrap();
    assert_eq!(state, "done");
    // On the backends: every row in the table the dictionary names for it.
    let mut found: BTreeMap<i64, i64> = BTreeMap::new();
    for (b, physical) in physicals("busy").await {
        let mut bc = backend_conn(b, Some(DB)).await;
        let got: Vec<(i64, i64, i64, String)> = bc
            .query(format!("SELECT id, v, twice, tag FROM `{physical}`"))
            .await
            .unwrap();
        for (id, v, twice, tag) in got {
            assert_eq!(twice, v * 2, "row {id}");
            assert_eq!(tag, "new", "row {id}");
            assert!(found.insert(id, v).is_none(), "row {id} twice");
        }
        bc.disconnect().await.unwrap();
    }
    for id in 1..=2000 {
        let v = found.get(&id).unwrap_or_else(|| panic!("row {id} lost"));
        assert_eq!(v.abs(), id, "row {id}");
    }
    let written: BTreeMap<i64, i64> = found.into_iter().filter(|(id, _)| *id > 2000).collect();
    assert_eq!(written, want);
    same_as_reference_definition(&mut p, "busy", sql).await;
}

/// The definition `sql` gives `name` on one server: the reference made
/// again from the partitioned table's first definition.
async fn same_as_reference_definition(p: &mut Conn, name: &str, sql: &str) {
    let (_, mut r) = connections().await;
    r.query_drop(format!("DROP TABLE IF EXISTS {name}"))
        .await
        .unwrap();
    r.query_drop(format!(
        "CREATE TABLE {name} (id BIGINT NOT NULL PRIMARY KEY, v INT NOT NULL)"
    ))
    .await
    .unwrap();
    r.query_drop(sql).await.unwrap();
    let (_, a): (String, String) = p
        .query_first(format!("SHOW CREATE TABLE {name}"))
        .await
        .unwrap()
        .unwrap();
    let (_, b): (String, String) = r
        .query_first(format!("SHOW CREATE TABLE {name}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(normalized(&a, name), normalized(&b, name));
    for d in definitions(name).await {
        assert_eq!(d, normalized(&b, name));
    }
}

/// The owner of an online ALTER killed (SIGKILL) after its first
/// partition's copy: the cluster's proxy rolls the change back (every
/// partition as it was, no shadow, trigger or changelog left), and the
/// statement then runs through another proxy as on one server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_killed_mid_copy_is_rolled_back_by_another_proxy() {
    let (mut p, mut r) = table(
        "killed",
        "CREATE TABLE killed (id INT NOT NULL PRIMARY KEY, k INT NOT NULL)",
        &insert_of("killed", 500, |i| format!("({i}, {i})")),
    )
    .await;
    let (defs, tables) = (definitions("killed").await, physicals("killed").await);
    let mut owner = serve(|_| {}, &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "600000")]);
    let port = owner.port;
    let sql = "ALTER TABLE killed MODIFY k BIGINT NOT NULL";
    let alter = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(DB))).await.unwrap();
        c.query_drop(sql).await
    });
    // The default partition (no rows) is copied first: the owner
    // pauses after its copy, with every partition captured or not yet.
    let (id, _, _) = wait_for("killed", 60, |(_, state, _)| state == "copying").await;
    let shadow = format!("killed_default_g{id}");
    while !leftovers("killed", id)
        .await
        .iter()
        .any(|l| l.ends_with(&shadow))
    {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    owner.child.kill().unwrap();
    owner.child.wait().unwrap();
    assert!(alter.await.unwrap().is_err());
    let (id2, state, _) = wait_for("killed", 60, |(_, state, _)| state != "copying").await;
    assert_eq!((id2, state.as_str()), (id, "failed"));
    assert_eq!(definitions("killed").await, defs);
    assert_eq!(physicals("killed").await, tables);
    assert_eq!(leftovers("killed", id).await, table_names(&tables));
    let want = run(&mut r, sql).await;
    assert_eq!(run(&mut p, sql).await, want);
    same_as_reference(&mut p, &mut r, "killed").await;
}

/// The owner killed in its cutover (every partition renamed, nothing
/// committed yet): the cluster's proxy finishes the change, and the table
/// is what one server's ALTER makes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_killed_in_the_cutover_is_finished_by_another_proxy() {
    let (mut p, mut r) = table(
        "forward",
        "CREATE TABLE forward (id INT NOT NULL PRIMARY KEY, k INT NOT NULL)",
        &insert_of("forward", 300, |i| format!("({i}, {i})")),
    )
    .await;
    let mut owner = serve(|_| {}, &[("HSCALE_TEST_PAUSE_AFTER_RENAME_MS", "600000")]);
    let port = owner.port;
    let sql = "ALTER TABLE forward MODIFY k VARCHAR(20) NOT NULL, ADD COLUMN z INT NOT NULL DEFAULT 9 FIRST";
    let alter = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(DB))).await.unwrap();
        c.query_drop(sql).await
    });
    let (id, _, _) = wait_for("forward", 60, |(_, state, _)| state == "cutover").await;
    owner.child.kill().unwrap();
    owner.child.wait().unwrap();
    assert!(alter.await.unwrap().is_err());
    let (id2, state, _) = wait_for("forward", 60, |(_, state, _)| state != "cutover").await;
    assert_eq!((id2, state.as_str()), (id, "done"));
    // The cluster's proxy committed the dictionary; its sessions see it
    // from the next reload on.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    run(&mut r, sql).await;
    same_as_reference(&mut p, &mut r, "forward").await;
    let left = leftovers("forward", id).await;
    assert!(
        !left.iter().any(|l| l.contains("forward")
            && (l.contains("retired") || l.contains("trigger") || l.contains("changelog"))),
        "{left:?}"
    );
}

/// `HSCALE CANCEL_OPERATION` of an online ALTER before its cutover,
/// through another proxy: the statement fails with 1317 and every
/// partition is as it was, with nothing of the change left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_leaves_every_partition_as_it_was() {
    let (mut p, mut r) = table(
        "cancelled",
        "CREATE TABLE cancelled (id INT NOT NULL PRIMARY KEY, k INT NOT NULL)",
        &insert_of("cancelled", 300, |i| format!("({i}, {i})")),
    )
    .await;
    let (defs, tables) = (definitions("cancelled").await, physicals("cancelled").await);
    let owner = serve(|_| {}, &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "600000")]);
    let port = owner.port;
    let sql = "ALTER TABLE cancelled MODIFY k BIGINT NOT NULL";
    let alter = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(DB))).await.unwrap();
        run(&mut c, sql).await
    });
    // The default partition (no rows) is copied first: the owner
    // pauses after its copy, with every partition captured or not yet.
    let (id, _, _) = wait_for("cancelled", 60, |(_, state, _)| state == "copying").await;
    let shadow = format!("cancelled_default_g{id}");
    while !leftovers("cancelled", id)
        .await
        .iter()
        .any(|l| l.ends_with(&shadow))
    {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    p.query_drop(format!("HSCALE CANCEL_OPERATION({id})"))
        .await
        .unwrap();
    match alter.await.unwrap() {
        Answer::Err(code, _) => assert_eq!(code, 1317),
        other => panic!("cancelled ALTER answered {other:?}"),
    }
    let (_, state, _) = last_operation(&mut p, "cancelled").await.unwrap();
    assert_eq!(state, "cancelled");
    assert_eq!(definitions("cancelled").await, defs);
    assert_eq!(physicals("cancelled").await, tables);
    assert_eq!(leftovers("cancelled", id).await, table_names(&tables));
    let q = "SELECT * FROM cancelled ORDER BY id";
    assert_eq!(rows(&mut p, q).await, rows(&mut r, q).await);
    drop(owner);
}

/// `[proxy] online_schema_changes`: `always` runs an ALTER the server
/// would run in place online too, `off` runs one it would copy in place;
/// both answer as one server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_switch_forces_either_path() {
    let (_p, mut r) = table(
        "switched",
        "CREATE TABLE switched (id INT NOT NULL PRIMARY KEY, k INT NOT NULL)",
        &insert_of("switched", 50, |i| format!("({i}, {i})")),
    )
    .await;
    for (mode, sql, is_online) in [
        (
            hscale::config::OnlineSchemaChanges::Always,
            "ALTER TABLE switched ADD COLUMN c INT NOT NULL DEFAULT 4",
            true,
        ),
        (
            hscale::config::OnlineSchemaChanges::Off,
            "ALTER TABLE switched MODIFY k BIGINT NOT NULL",
            false,
        ),
    ] {
        let proxy = serve(|c| c.proxy.online_schema_changes = mode, &[]);
        let mut p = Conn::new(proxy_opts(proxy.port, Some(DB))).await.unwrap();
        let before = physicals("switched").await;
        let want = run(&mut r, sql).await;
        let got = run(&mut p, sql).await;
        if is_online {
            // Forced online, it answers the rows it copied, where one
            // server's instant ALTER answers 0.
            assert_eq!(
                got,
                Answer::Ok(50, "Records: 50  Duplicates: 0  Warnings: 0".into())
            );
            assert!(matches!(want, Answer::Ok(..)), "{want:?}");
        } else {
            assert_eq!(got, want, "{sql}");
        }
        same_as_reference(&mut p, &mut r, "switched").await;
        assert_eq!(physicals("switched").await != before, is_online, "{sql}");
        p.disconnect().await.unwrap();
    }
}

/// A shadow damaged after its copy (a row changed, one deleted, one
/// added, directly on the backend) is repaired by the verification
/// before the cutover: the result is one server's, and the journal counts
/// the ranges copied again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verification_repairs_a_damaged_shadow() {
    let (mut p, mut r) = table(
        "damaged",
        "CREATE TABLE damaged (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, s VARCHAR(10) NOT NULL)",
        &insert_of("damaged", 200, |i| format!("({i}, {i}, 's{i}')")),
    )
    .await;
    let owner = serve(|_| {}, &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "3000")]);
    let port = owner.port;
    let sql = "ALTER TABLE damaged MODIFY k BIGINT NOT NULL";
    let alter = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(DB))).await.unwrap();
        run(&mut c, sql).await
    });
    let (id, _, _) = wait_for("damaged", 60, |(_, state, _)| state == "copying").await;
    // Partition 1 (odd ids, 100 rows) on shard1: damaged once copied.
    let (b, p1) = physical_tables(&format!("{DB}.damaged"))
        .await
        .get("damaged_1")
        .cloned()
        .unwrap();
    let shadow = format!(
        "{}_g{id}",
        p1.rsplit_once("_g").map_or(p1.as_str(), |(stem, _)| stem)
    );
    let mut bc = backend_conn(b, Some(DB)).await;
    let count = format!(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{DB}' AND TABLE_NAME = '{shadow}'"
    );
    let start = std::time::Instant::now();
    loop {
        let exists: Option<i64> = bc.query_first(&count).await.unwrap();
        if exists == Some(1) {
            let n: Option<i64> = bc
                .query_first(format!("SELECT COUNT(*) FROM `{shadow}`"))
                .await
                .unwrap();
            if n == Some(100) {
                break;
            }
        }
        assert!(start.elapsed().as_secs() < 60, "no full shadow {shadow}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    bc.query_drop(format!(
        "UPDATE `{shadow}` SET s = 'bad' WHERE id = 3; DELETE FROM `{shadow}` WHERE id = 5; INSERT INTO `{shadow}` VALUES (1001, 1, 'extra')"
    ))
    .await
    .unwrap();
    bc.disconnect().await.unwrap();
    let got = alter.await.unwrap();
    assert_eq!(got, run(&mut r, sql).await);
    same_as_reference(&mut p, &mut r, "damaged").await;
    let ops = rows(&mut p, "HSCALE SHOW OPERATIONS").await;
    let op = ops
        .iter()
        .find(|o| o[0].as_deref() == Some(&id.to_string()))
        .unwrap();
    let recopied: u64 = op[10].as_deref().unwrap().parse().unwrap();
    assert!(recopied > 0, "{op:?}");
    drop(owner);
}

/// A row the new definition refuses, written while the change copies
/// (after the copy of the partitions before it): the change fails before
/// its cutover, every partition is as it was with the row in it, and the
/// client gets what one server answers for the rows as they are then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_row_written_during_the_copy_fails_the_change() {
    let (mut p, mut r) = table(
        "latex",
        "CREATE TABLE latex (id INT NOT NULL PRIMARY KEY, k INT NOT NULL)",
        &insert_of("latex", 100, |i| format!("({i}, {i})")),
    )
    .await;
    let (defs, tables) = (definitions("latex").await, physicals("latex").await);
    let owner = serve(|_| {}, &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "1500")]);
    let port = owner.port;
    let sql = "ALTER TABLE latex MODIFY k INT UNSIGNED NOT NULL";
    let alter = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(DB))).await.unwrap();
        run(&mut c, sql).await
    });
    let (id, _, _) = wait_for("latex", 60, |(_, state, _)| state == "copying").await;
    let shadow = format!("latex_default_g{id}");
    while !leftovers("latex", id)
        .await
        .iter()
        .any(|l| l.ends_with(&shadow))
    {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let write = "UPDATE latex SET k = -7 WHERE id = 51";
    p.query_drop(write).await.unwrap();
    r.query_drop(write).await.unwrap();
    let got = alter.await.unwrap();
    let want = run(&mut r, sql).await;
    assert!(matches!(want, Answer::Err(1264, _)), "{want:?}");
    assert_eq!(got, want);
    let (_, state, _) = last_operation(&mut p, "latex").await.unwrap();
    assert_eq!(state, "failed");
    assert_eq!(definitions("latex").await, defs);
    assert_eq!(physicals("latex").await, tables);
    assert_eq!(leftovers("latex", id).await, table_names(&tables));
    let q = "SELECT * FROM latex ORDER BY id";
    assert_eq!(rows(&mut p, q).await, rows(&mut r, q).await);
    drop(owner);
}

/// Issue 29 (c): after another proxy commits an online ALTER or a
/// partition change, a proxy that has not reloaded yet answers SHOW
/// CREATE TABLE (and the other statements about the table) from the new
/// tables, as one server would: it waits for the newer dictionary like
/// every statement that meets a retired table, never answering 1146.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_create_table_through_a_proxy_that_has_not_reloaded() {
    let (mut p, mut r) = table(
        "stale",
        "CREATE TABLE stale (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, KEY (k))",
        &insert_of("stale", 40, |i| format!("({i}, {})", i * 3)),
    )
    .await;
    // A proxy that reloads only when a statement meets a missing table.
    let lagging = serve(|c| c.proxy.reload_interval_ms = 3_600_000, &[]);
    let mut o = Conn::new(proxy_opts(lagging.port, Some(DB))).await.unwrap();
    let reads = [
        "SHOW CREATE TABLE stale",
        "SHOW COLUMNS FROM stale",
        "SHOW FULL COLUMNS FROM stale",
        "DESCRIBE stale",
        "SELECT k FROM stale WHERE k > 30 ORDER BY k",
        "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'stale' ORDER BY ORDINAL_POSITION",
        "SELECT * FROM stale ORDER BY id",
        "SELECT * FROM stale WHERE id = 7",
        "SELECT COUNT(*), SUM(k) FROM stale",
        "CHECKSUM TABLE stale",
        "SHOW TABLES LIKE 'stale'",
    ];
    for q in reads {
        assert_eq!(rows(&mut o, q).await, rows(&mut p, q).await, "{q}");
    }
    // An online ALTER (copying: every physical table renamed) through
    // the cluster's proxy, then a move of a partition.
    for (sql, is_both) in [
        ("ALTER TABLE stale MODIFY k BIGINT NOT NULL", true),
        (
            "HSCALE MOVE_PARTITION('oa_part.stale', 'stale_0', 'shard1')",
            false,
        ),
        (
            "ALTER TABLE stale ADD COLUMN note VARCHAR(8) NOT NULL DEFAULT 'n', ALGORITHM=COPY",
            true,
        ),
    ] {
        let done = run(&mut p, sql).await;
        assert!(matches!(done, Answer::Ok(..)), "{sql}: {done:?}");
        if is_both {
            r.query_drop(sql).await.unwrap();
        }
        for q in reads {
            let got = rows(&mut o, q).await;
            assert_eq!(got, rows(&mut p, q).await, "after {sql}: {q}");
        }
        let (_, a): (String, String) = o
            .query_first("SHOW CREATE TABLE stale")
            .await
            .unwrap()
            .unwrap();
        let (_, b): (String, String) = r
            .query_first("SHOW CREATE TABLE stale")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            normalized(&a, "stale"),
            normalized(&b, "stale"),
            "after {sql}"
        );
    }
}
