//! Issue 12 items 1 and 4 for global tables.
//!
//! SETUP_GLOBAL_TABLE whose owner is SIGKILLed, or SIGSTOPped and then
//! continued, after its first copy (fence triggers on, writes to the table
//! waiting) while six writers go on through two other proxies: another
//! proxy rolls the setup back within the take-over window (triggers and
//! copies dropped, journal `failed`), the writes that waited run on the
//! plain table, the woken owner writes nothing, and the setup then runs
//! again through another proxy under the same writers. Afterwards every
//! acknowledged row is on every copy and found by key through every proxy,
//! the copies are identical (checksums the backends compute), and nothing
//! of the first attempt is left.
//!
//! DROP TABLE of a global table whose owner dies after dropping the main
//! copy is finished by another proxy. A client cannot set the variable the
//! global fence trusts. Prepared (binary protocol) writes to a global table
//! change every copy or none, fenced like text ones.

use super::global::copy_sums;
use super::*;

/// The journal's last row of `db` whose command starts with `prefix`:
/// (id, state, active, rows_copied).
async fn last_operation(
    direct: &mut Conn,
    db: &str,
    prefix: &str,
) -> Option<(u64, String, bool, u64)> {
    direct
        .exec_first(
            "SELECT id, state, active IS NOT NULL, rows_copied FROM hscale.operations WHERE db = ? AND command LIKE CONCAT(?, '%') ORDER BY id DESC LIMIT 1",
            (db, prefix),
        )
        .await
        .unwrap()
}

/// Wait at most 30 s for the last operation `prefix` of `db` to end in
/// `want`; its row.
async fn await_verdict(
    direct: &mut Conn,
    db: &str,
    prefix: &str,
    want: &str,
) -> Option<(u64, String, bool, u64)> {
    let since = Instant::now();
    let mut row = None;
    while since.elapsed() < Duration::from_secs(30) {
        row = last_operation(direct, db, prefix).await;
        if row
            .as_ref()
            .is_some_and(|(_, s, active, _)| !active && s == want)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    row
}

/// (backend, table) of every table of `db`, and (backend, trigger) of
/// every trigger, on every backend.
async fn objects_in(db: &str) -> (Vec<(usize, String)>, Vec<(usize, String)>) {
    let (mut tables, mut triggers) = (Vec::new(), Vec::new());
    for b in 0..3 {
        let mut c = backend_conn(b, None).await;
        let t: Vec<String> = c
            .exec(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY 1",
                (db,),
            )
            .await
            .unwrap();
        let g: Vec<String> = c
            .exec(
                "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? ORDER BY 1",
                (db,),
            )
            .await
            .unwrap();
        c.disconnect().await.unwrap();
        tables.extend(t.into_iter().map(|t| (b, t)));
        triggers.extend(g.into_iter().map(|t| (b, t)));
    }
    (tables, triggers)
}

/// Every row of `t` read from `c`, as the checker's map.
async fn rows_of(c: &mut Conn, t: &str) -> BTreeMap<i64, Vec<Acct>> {
    let rows: Vec<(i64, i64, i64)> = c.query(format!("SELECT id, k, v FROM {t}")).await.unwrap();
    let mut found: BTreeMap<i64, Vec<Acct>> = BTreeMap::new();
    for (id, k, v) in rows {
        found.entry(id).or_default().push(Acct { k, v });
    }
    found
}

/// A proxy with a short heartbeat bound and a fence wait longer than any
/// take-over (as `paused_owner`).
fn fenced(reload_interval_ms: u64) -> hscale::Config {
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = reload_interval_ms;
    config.proxy.takeover_after_ms = 3_000;
    config.proxy.fence_wait_ms = 30_000;
    config
}

async fn interrupted_global_setup(test: &'static str, sig: libc::c_int, scene: Scene) {
    cluster(3);
    let mut rng = test_seed(test);
    let (db, t) = (scene.db, scene.table);
    let mut c = proxy_conn(None).await;
    c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    c.query_drop(format!(
        "CREATE TABLE {db}.{t} (id BIGINT NOT NULL, k INT NOT NULL, \
         v BIGINT NOT NULL, note VARCHAR(40), PRIMARY KEY (id, k))"
    ))
    .await
    .unwrap();
    c.disconnect().await.unwrap();
    let owner = ProxyProcess::start_with_env(
        fenced(1_000),
        &[("HSCALE_TEST_PAUSE_IN_GLOBAL_SETUP_MS", "8000")],
    );
    let others: Vec<ProxyProcess> = (0..2).map(|_| ProxyProcess::start(fenced(200))).collect();
    let ports = vec![others[0].port, others[1].port];
    // Half the writes prepared (binary protocol), half text.
    let (ws, _acked) = writers(6, scene, &ports, &mut rng, any_key, 200, (40, 45)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let port = owner.port;
    let setup = format!("HSCALE SETUP_GLOBAL_TABLE('{db}.{t}')");
    let sql = setup.clone();
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(db))).await.unwrap();
        c.query_drop(sql).await
    });
    // In its cutover with one copy made: the fence triggers hold the writes.
    let mut direct = backend_conn(0, None).await;
    let mut reached = false;
    for _ in 0..1_500 {
        reached = last_operation(&mut direct, db, "SETUP_GLOBAL_TABLE")
            .await
            .is_some_and(|(_, s, active, copies)| s == "cutover" && active && copies >= 1);
        if reached {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(reached, "{test}: the owner made its first copy");
    tokio::time::sleep(Duration::from_millis(300)).await;
    signal(&owner, sig);
    eprintln!("{test}: owner signalled ({sig}) at {} ms", now_ms());
    let row = await_verdict(&mut direct, db, "SETUP_GLOBAL_TABLE", "failed").await;
    assert!(
        row.as_ref()
            .is_some_and(|(_, s, active, _)| s == "failed" && !active),
        "{test}: rolled back by a take-over within 30 s: {row:?}"
    );
    eprintln!("{test}: rolled back at {} ms", now_ms());
    if sig == libc::SIGSTOP {
        signal(&owner, libc::SIGCONT);
    }
    let answer = change.await.unwrap();
    assert!(
        answer.is_err(),
        "{test}: the interrupted owner's client got an error"
    );
    // Nothing of the first attempt is left, even after the owner woke.
    let (tables, triggers) = objects_in(db).await;
    assert_eq!(tables, vec![(0, t.to_string())], "{test}: copies left");
    assert!(triggers.is_empty(), "{test}: triggers left: {triggers:?}");
    // The setup runs again through another proxy, writers still going.
    let mut admin = Conn::new(proxy_opts(others[1].port, Some(db)))
        .await
        .unwrap();
    let again = admin.query_drop(&setup).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_writers(hs).await;
    let mut rep = Report::default();
    if let Err(e) = again {
        rep.add("admin: SETUP_GLOBAL_TABLE again", describe(&e));
    }
    for e in &out.errors {
        rep.add("writers: autocommit statement failed", e.clone());
    }
    for e in &out.anomalies {
        rep.add("writers: wrong affected-row count", e.clone());
    }
    if out.acked < 200 {
        rep.add("writers: barely ran", out.acked.to_string());
    }
    // Every copy, and every proxy, holds exactly the acknowledged rows.
    for b in 0..3 {
        let mut c = backend_conn(b, Some(db)).await;
        let found = rows_of(&mut c, t).await;
        c.disconnect().await.unwrap();
        compare(&format!("shard{b} copy"), &found, &out.model, &mut rep);
    }
    for &port in &ports {
        let mut c = Conn::new(proxy_opts(port, Some(db))).await.unwrap();
        let found = rows_of(&mut c, t).await;
        // By key too: every acknowledged live row, one statement each.
        for (id, states) in out.model.ids.iter().take(300) {
            if let [Some(a)] = states.as_slice() {
                let v: Option<i64> = c
                    .exec_first(
                        format!("SELECT v FROM {t} WHERE id = ? AND k = ?"),
                        (*id, a.k),
                    )
                    .await
                    .unwrap();
                if v != Some(a.v) {
                    rep.add(
                        format!("proxy :{port}: by key"),
                        format!("id {id}: {v:?}, acknowledged {}", a.v),
                    );
                }
            }
        }
        c.disconnect().await.unwrap();
        compare(&format!("proxy :{port}"), &found, &out.model, &mut rep);
    }
    let sums = copy_sums(db, t).await;
    if sums.iter().any(|s| *s != sums[0]) {
        rep.add("backends: copies differ", format!("{sums:?}"));
    }
    // The second setup's own: a copy on each backend, the fence triggers
    // on the main one; no operation active, the first failed, the second done.
    let (tables, triggers) = objects_in(db).await;
    let want: Vec<(usize, String)> = (0..3).map(|b| (b, t.to_string())).collect();
    if tables != want {
        rep.add("backends: tables", format!("{tables:?}"));
    }
    if triggers.len() != 3
        || triggers
            .iter()
            .any(|(b, n)| *b != 0 || !n.starts_with("hscale_global_"))
    {
        rep.add("backends: triggers", format!("{triggers:?}"));
    }
    let states: Vec<(String, bool)> = direct
        .exec(
            "SELECT state, active IS NOT NULL FROM hscale.operations WHERE db = ? ORDER BY id",
            (db,),
        )
        .await
        .unwrap();
    if states != vec![("failed".to_string(), false), ("done".to_string(), false)] {
        rep.add("journal", format!("{states:?}"));
    }
    direct.disconnect().await.unwrap();
    admin.disconnect().await.unwrap();
    let summary = rep.summary();
    eprintln!("{test}: {} operations acknowledged\n{summary}", out.acked);
    assert!(rep.violations.is_empty(), "{test}:\n{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_setup_whose_owner_is_killed_is_rolled_back_and_runs_again() {
    interrupted_global_setup(
        "global_setup_killed",
        libc::SIGKILL,
        Scene {
            db: "online_global_killed",
            table: "gk",
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_setup_whose_owner_stops_is_rolled_back_and_runs_again() {
    interrupted_global_setup(
        "global_setup_stopped",
        libc::SIGSTOP,
        Scene {
            db: "online_global_stopped",
            table: "gs",
        },
    )
    .await;
}

/// DROP TABLE of a global table is a journal operation: its owner killed
/// after dropping the main copy, another proxy drops the others and the
/// dictionary entry within 30 s; a proxy that never reloaded then gets
/// 1146, as from a server, and nothing is written anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_drop_whose_owner_dies_is_finished_by_another_proxy() {
    cluster(3);
    let (db, t) = ("online_global_drop", "gd");
    let mut c = proxy_conn(None).await;
    c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    c.query_drop(format!(
        "CREATE TABLE {db}.{t} (id BIGINT PRIMARY KEY, v INT NOT NULL)"
    ))
    .await
    .unwrap();
    let values: Vec<String> = (1..=100).map(|i| format!("({i}, {i})")).collect();
    c.query_drop(format!("INSERT INTO {db}.{t} VALUES {}", values.join(", ")))
        .await
        .unwrap();
    c.query_drop(format!("HSCALE SETUP_GLOBAL_TABLE('{db}.{t}')"))
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    let stale = serve(3_600_000);
    let mut stale_conn = Conn::new(proxy_opts(stale.port, Some(db))).await.unwrap();
    stale_conn
        .query_drop(format!("INSERT INTO {t} VALUES (1000, 1)"))
        .await
        .unwrap();
    let other = serve(200);
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    let owner = ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_IN_DDL_MS", "30000")]);
    let port = owner.port;
    let dropping = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(db))).await.unwrap();
        c.query_drop(format!("DROP TABLE {t}")).await
    });
    let mut direct = backend_conn(0, None).await;
    let mut started = false;
    for _ in 0..1_000 {
        let (tables, _) = objects_in(db).await;
        if !tables.contains(&(0, t.to_string())) {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(started, "the drop began with the main copy");
    let (tables, _) = objects_in(db).await;
    assert_eq!(tables.len(), 2, "the other copies wait: {tables:?}");
    signal(&owner, libc::SIGKILL);
    assert!(
        dropping.await.unwrap().is_err(),
        "the killed owner's client got an error"
    );
    let row = await_verdict(&mut direct, db, "DROP TABLE", "done").await;
    assert!(
        row.as_ref()
            .is_some_and(|(_, s, active, _)| s == "done" && !active),
        "the drop was finished within 30 s: {row:?}"
    );
    let (tables, triggers) = objects_in(db).await;
    assert!(
        tables.is_empty() && triggers.is_empty(),
        "left: {tables:?} {triggers:?}"
    );
    let entries: Option<i64> = direct
        .exec_first(
            "SELECT COUNT(*) FROM hscale.global_tables WHERE db = ?",
            (db,),
        )
        .await
        .unwrap();
    assert_eq!(entries, Some(0), "the dictionary forgot the global table");
    // A proxy that never heard of the drop: 1146, and no table comes back.
    let e = stale_conn
        .query_drop(format!("INSERT INTO {t} VALUES (1001, 1)"))
        .await
        .expect_err("the table is gone");
    assert_eq!(code(&e), 1146, "{e}");
    let mut o = Conn::new(proxy_opts(other.port, Some(db))).await.unwrap();
    let e = o
        .query_drop(format!("SELECT * FROM {t}"))
        .await
        .expect_err("gone");
    assert_eq!(code(&e), 1146, "{e}");
    // The name is free again: a plain table.
    o.query_drop(format!("CREATE TABLE {t} (id BIGINT PRIMARY KEY)"))
        .await
        .unwrap();
    let (tables, _) = objects_in(db).await;
    assert_eq!(tables, vec![(0, t.to_string())]);
    o.disconnect().await.unwrap();
    stale_conn.disconnect().await.unwrap();
    direct.disconnect().await.unwrap();
}

/// `@hscale_dictionary_version` is what the global fence trusts: a client
/// of a proxy that has not heard of the setup yet cannot set it to skip
/// the fence (and write the main copy alone), in any spelling, by text or
/// binary protocol; its write reaches every copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_set_the_global_fence_variable() {
    cluster(3);
    let (db, t) = ("online_global_var", "gv");
    let mut c = proxy_conn(None).await;
    c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    c.query_drop(format!(
        "CREATE TABLE {db}.{t} (id BIGINT PRIMARY KEY, v INT NOT NULL)"
    ))
    .await
    .unwrap();
    let stale = serve(3_600_000);
    let mut s = Conn::new(proxy_opts(stale.port, Some(db))).await.unwrap();
    s.query_drop(format!("INSERT INTO {t} VALUES (1, 1)"))
        .await
        .unwrap();
    c.query_drop(format!("HSCALE SETUP_GLOBAL_TABLE('{db}.{t}')"))
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    for sql in [
        "SET @hscale_dictionary_version = 1000000000",
        "SET @a = 1, @HSCALE_DICTIONARY_VERSION := 1000000000",
        "SELECT @hscale_dictionary_version := 1000000000",
        "SELECT 1000000000 INTO @hscale_dictionary_version",
        "SET @`hscale_dictionary_version` = 1000000000",
        r"SET @'hsc\ale_dictionary_version' = 1000000000",
        "SET @ /* x */ hscale_dictionary_version = 1000000000",
        "PREPARE st FROM 'SET @hscale_dictionary_version = 1000000000'",
        "EXECUTE IMMEDIATE 'SET @hscale_dictionary_version = 1000000000'",
    ] {
        let e = s.query_drop(sql).await.expect_err(sql);
        assert_eq!(code(&e), 1235, "{sql}: {e}");
    }
    let e = s
        .exec_drop("SET @hscale_dictionary_version = ?", (1_000_000_000,))
        .await
        .expect_err("prepared");
    assert_eq!(code(&e), 1235, "prepared: {e}");
    s.query_drop(format!("UPDATE {t} SET v = 2 WHERE id = 1"))
        .await
        .unwrap();
    s.query_drop(format!("INSERT INTO {t} VALUES (2, 2)"))
        .await
        .unwrap();
    for b in 0..3 {
        let mut c = backend_conn(b, Some(db)).await;
        let rows: Vec<(i64, i64)> = c
            .query(format!("SELECT id, v FROM {t} ORDER BY id"))
            .await
            .unwrap();
        c.disconnect().await.unwrap();
        assert_eq!(rows, vec![(1, 2), (2, 2)], "shard{b}'s copy");
    }
    s.disconnect().await.unwrap();
}

/// Prepared (binary protocol) writes to a global table, through a proxy
/// that knew the table was global at PREPARE and through one that
/// prepared them before (a plain table then): every copy changes, the
/// answer is the main copy's; a write one copy refuses changes none, and
/// inside a transaction the copies change at its commit, or not at all at
/// its rollback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_writes_to_a_global_table_change_every_copy_or_none() {
    cluster(3);
    let (db, t) = ("online_global_prepared", "gp");
    let mut c = proxy_conn(None).await;
    c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    c.query_drop(format!(
        "CREATE TABLE {db}.{t} (id BIGINT PRIMARY KEY, v INT NOT NULL, u INT, UNIQUE KEY (u))"
    ))
    .await
    .unwrap();
    let stale = serve(3_600_000);
    let mut s = Conn::new(proxy_opts(stale.port, Some(db))).await.unwrap();
    let before = s
        .prep(format!("INSERT INTO {t} (id, v) VALUES (?, ?)"))
        .await
        .unwrap();
    s.exec_drop(&before, (1, 1)).await.unwrap();
    c.query_drop(format!("HSCALE SETUP_GLOBAL_TABLE('{db}.{t}')"))
        .await
        .unwrap();
    c.query_drop(format!("USE {db}")).await.unwrap();
    // Prepared before the table was global, executed after (fenced).
    s.exec_drop(&before, (2, 2)).await.unwrap();
    assert_eq!(s.affected_rows(), 1);
    // Prepared knowing it.
    c.exec_drop(format!("INSERT INTO {t} (id, v) VALUES (?, ?)"), (3, 3))
        .await
        .unwrap();
    c.exec_drop(format!("UPDATE {t} SET v = v + ? WHERE id <= ?"), (10, 2))
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 2, "the main copy's count");
    c.exec_drop(format!("DELETE FROM {t} WHERE id = ?"), (3,))
        .await
        .unwrap();
    // A copy refuses a duplicate the main copy takes: nothing changes.
    let mut b1 = backend_conn(1, Some(db)).await;
    b1.query_drop(format!("UPDATE {t} SET u = 7 WHERE id = 1"))
        .await
        .unwrap();
    let e = c
        .exec_drop(format!("UPDATE {t} SET u = ? WHERE id = ?"), (7, 2))
        .await
        .expect_err("the copy on shard1 refuses");
    assert_eq!(code(&e), 1062, "{e}");
    b1.query_drop(format!("UPDATE {t} SET u = NULL WHERE id = 1"))
        .await
        .unwrap();
    b1.disconnect().await.unwrap();
    // In a transaction: at its commit, or not at all.
    c.query_drop("BEGIN").await.unwrap();
    c.exec_drop(format!("INSERT INTO {t} (id, v) VALUES (?, ?)"), (4, 4))
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    c.query_drop("BEGIN").await.unwrap();
    c.exec_drop(format!("INSERT INTO {t} (id, v) VALUES (?, ?)"), (5, 5))
        .await
        .unwrap();
    c.query_drop("COMMIT").await.unwrap();
    for b in 0..3 {
        let mut c = backend_conn(b, Some(db)).await;
        let rows: Vec<(i64, i64, Option<i64>)> = c
            .query(format!("SELECT id, v, u FROM {t} ORDER BY id"))
            .await
            .unwrap();
        c.disconnect().await.unwrap();
        assert_eq!(
            rows,
            vec![(1, 11, None), (2, 12, None), (5, 5, None)],
            "shard{b}'s copy"
        );
    }
    s.disconnect().await.unwrap();
    c.disconnect().await.unwrap();
}
