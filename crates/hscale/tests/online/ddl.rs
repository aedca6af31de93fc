//! Issue 12 item 1: ALTER, RENAME and DROP of partitioned tables through
//! any proxy while writers go on through three: each is one operation of
//! the journal (one change per table at a time, shown by SHOW OPERATIONS,
//! finished by a take-over when its owner dies), and no stale proxy writes
//! anywhere the dictionary does not name. DROP DATABASE forgets the
//! database's partitioned tables.

use super::*;

/// The journal's rows of `db` whose command starts with `prefix`: (id,
/// state, active).
async fn operations(db: &str, prefix: &str) -> Vec<(u64, String, bool)> {
    let mut c = backend_conn(0, None).await;
    let rows = c
        .exec(
            "SELECT id, state, active IS NOT NULL FROM hscale.operations WHERE db = ? AND command LIKE CONCAT(?, '%') ORDER BY id",
            (db, prefix),
        )
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    rows
}

/// Every table of `db` on every backend: (backend, table).
async fn tables_in(db: &str) -> Vec<(usize, String)> {
    let mut all = Vec::new();
    for b in 0..cluster_config().backends.len() {
        let mut c = backend_conn(b, None).await;
        let t: Vec<String> = c
            .exec(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY 1",
                (db,),
            )
            .await
            .unwrap();
        c.disconnect().await.unwrap();
        all.extend(t.into_iter().map(|t| (b, t)));
    }
    all
}

/// Whether `db`.`table` on backend `b` has column `column`.
async fn has_column(b: usize, db: &str, table: &str, column: &str) -> bool {
    let mut c = backend_conn(b, None).await;
    let n: Option<i64> = c
        .exec_first(
            "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?",
            (db, table, column),
        )
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    n == Some(1)
}

/// Writers' errors that are the table's own absence after it was renamed
/// or dropped (1146 naming the logical table): legitimate, and removed;
/// every other error stays a violation.
fn drop_absence_errors(out: &mut Outcome, db: &str, table: &str) -> usize {
    let gone = format!("Table '{db}.{table}' doesn't exist");
    let before = out.errors.len();
    out.errors
        .retain(|e| !(e.contains("error 1146") && e.contains(&gone)));
    before - out.errors.len()
}

/// Add partitions p1 (value 1, shard1) and p2 (value 2, shard2).
async fn two_partitions(port: u16, scene: Scene) {
    let failed = run_changes(
        port,
        scene,
        vec![Change::Add("p1", "1", 1), Change::Add("p2", "2", 2)],
        Rng(1),
        (0, 0),
    )
    .await;
    assert!(failed.is_empty(), "{failed:?}");
}

/// ALTER TABLE ADD COLUMN, then RENAME TABLE, through one proxy while six
/// writers go on through three: the ALTER reaches every partition with no
/// writer error, a statement prepared before it answers the new shape,
/// the RENAME moves every row to fresh physical names (no old name left
/// on any backend), stale writes to the old name fail and create nothing,
/// and both are operations of the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_and_rename_under_writers_through_three_proxies() {
    const TEST: &str = "ddl_alter_rename";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_ddl",
        table: "acct_ddl",
    };
    let renamed = Scene {
        db: scene.db,
        table: "acct_ddl2",
    };
    setup_acct(scene).await;
    let procs: Vec<ProxyProcess> = (0..3).map(|_| serve(1_000)).collect();
    let ports: Vec<u16> = procs.iter().map(|p| p.port).collect();
    two_partitions(ports[0], scene).await;
    let before: BTreeSet<(usize, String)> = tables_in(scene.db).await.into_iter().collect();

    // A statement prepared on proxy 2 before the ALTER.
    let mut stale = Conn::new(proxy_opts(ports[2], Some(scene.db)))
        .await
        .unwrap();
    let select = stale
        .prep(format!(
            "SELECT * FROM {} WHERE id = ? AND k = ?",
            scene.table
        ))
        .await
        .unwrap();

    let (ws, acked) = writers(6, scene, &ports, &mut rng, any_key, 500, (40, 45)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    tokio::time::sleep(Duration::from_millis(800)).await;
    let mut admin = Conn::new(proxy_opts(ports[1], Some(scene.db)))
        .await
        .unwrap();
    admin
        .query_drop(format!(
            "ALTER TABLE {} ADD COLUMN extra INT NOT NULL DEFAULT 7",
            scene.table
        ))
        .await
        .unwrap();
    let at_alter = acked.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        acked.load(Ordering::Relaxed) > at_alter,
        "writers went on after the ALTER"
    );
    for (b, t) in &before {
        assert!(
            has_column(*b, scene.db, t, "extra").await,
            "shard{b}.{t} lacks the new column"
        );
    }
    // The statement prepared before answers the new shape.
    // (A row the writers may delete meanwhile: look for one that stays.)
    let mut seen = None;
    for _ in 0..50 {
        let (id, k): (i64, i64) = stale
            .query_first(format!("SELECT id, k FROM {} LIMIT 1", scene.table))
            .await
            .unwrap()
            .unwrap();
        let row: Option<mysql_async::Row> = stale.exec_first(&select, (id, k)).await.unwrap();
        if let Some(row) = row {
            seen = Some(row.len());
            break;
        }
    }
    assert_eq!(
        seen,
        Some(5),
        "the SELECT * prepared before the ALTER sees the new column"
    );
    let row: Vec<mysql_async::Row> = stale
        .query(format!("SELECT * FROM {} LIMIT 1", scene.table))
        .await
        .unwrap();
    assert_eq!(row[0].len(), 5);
    stale.disconnect().await.unwrap();

    // RENAME while the writers go on (they name the old table).
    admin
        .query_drop(format!("RENAME TABLE {} TO {}", scene.table, renamed.table))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    stop.store(true, Ordering::Relaxed);
    let mut out = join_writers(hs).await;
    let absent = drop_absence_errors(&mut out, scene.db, scene.table);
    eprintln!("{TEST}: {absent} writes to the old name refused after the rename");
    assert!(absent > 0, "writers went on naming the old table");
    // Stale writes through every proxy: refused, and nothing created.
    for &port in &ports {
        let mut c = Conn::new(proxy_opts(port, Some(scene.db))).await.unwrap();
        for k in 0..MODULUS {
            let e = c
                .query_drop(format!(
                    "INSERT INTO {} (id, k, v, note) VALUES (7, {k}, 0, 'stale')",
                    scene.table
                ))
                .await
                .expect_err("the old name is gone");
            assert_eq!(code(&e), 1146, "{e}");
        }
        c.disconnect().await.unwrap();
    }
    let after: BTreeSet<(usize, String)> = tables_in(scene.db).await.into_iter().collect();
    assert!(
        before.is_disjoint(&after),
        "physical names are never reused: before {before:?}, after {after:?}"
    );
    for (b, t) in &after {
        assert!(
            t.starts_with(renamed.table),
            "shard{b}.{t} is not a table of {}",
            renamed.table
        );
    }
    for prefix in ["ALTER TABLE", "RENAME TABLE"] {
        let ops = operations(scene.db, prefix).await;
        assert!(
            ops.len() == 1 && ops[0].1 == "done" && !ops[0].2,
            "{prefix}: the journal shows one finished operation: {ops:?}"
        );
    }
    admin.disconnect().await.unwrap();
    assert_invariants(TEST, renamed, &ports, &out).await;
}

/// DROP TABLE through one proxy while writers go on through three: every
/// physical table goes, the dictionary forgets the table, stale writes
/// fail and create nothing, and the drop is an operation of the journal.
/// Then DROP DATABASE of a database with a partitioned table forgets it,
/// and the same name can be set up again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_under_writers_through_three_proxies_leaves_nothing() {
    const TEST: &str = "ddl_drop";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_ddl_drop",
        table: "acct_drop",
    };
    setup_acct(scene).await;
    let procs: Vec<ProxyProcess> = (0..3).map(|_| serve(1_000)).collect();
    let ports: Vec<u16> = procs.iter().map(|p| p.port).collect();
    two_partitions(ports[0], scene).await;
    let (ws, _acked) = writers(6, scene, &ports, &mut rng, any_key, 300, (40, 45)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let mut admin = Conn::new(proxy_opts(ports[1], Some(scene.db)))
        .await
        .unwrap();
    admin
        .query_drop(format!("DROP TABLE {}", scene.table))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    stop.store(true, Ordering::Relaxed);
    let mut out = join_writers(hs).await;
    drop_absence_errors(&mut out, scene.db, scene.table);
    assert!(
        out.errors.is_empty(),
        "{:?}",
        &out.errors[..out.errors.len().min(5)]
    );
    assert!(out.anomalies.is_empty(), "{:?}", out.anomalies);
    assert_eq!(tables_in(scene.db).await, vec![], "no table is left");
    let mut direct = backend_conn(0, None).await;
    let n: Option<i64> = direct
        .exec_first(
            "SELECT COUNT(*) FROM hscale.partitioned_tables WHERE db = ?",
            (scene.db,),
        )
        .await
        .unwrap();
    assert_eq!(n, Some(0), "the dictionary forgot the table");
    let ops = operations(scene.db, "DROP TABLE").await;
    assert!(
        ops.len() == 1 && ops[0].1 == "done" && !ops[0].2,
        "the journal shows one finished drop: {ops:?}"
    );
    // A plain table of the same name is a plain table again.
    admin
        .query_drop(format!(
            "CREATE TABLE {} (id BIGINT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))",
            scene.table
        ))
        .await
        .unwrap();
    admin
        .query_drop(format!("INSERT INTO {} VALUES (1, 1)", scene.table))
        .await
        .unwrap();
    assert_eq!(
        tables_in(scene.db).await,
        vec![(0, scene.table.to_string())]
    );

    // DROP DATABASE forgets the database's partitioned tables.
    admin
        .query_drop(format!(
            "HSCALE SETUP_TABLE('{}.{}', 'k', '{}_default', 'shard0', 'MOD(8)')",
            scene.db, scene.table, scene.table
        ))
        .await
        .unwrap();
    admin
        .query_drop(format!(
            "HSCALE ADD_PARTITION('{}.{}', 'p1', '1', 'shard1')",
            scene.db, scene.table
        ))
        .await
        .unwrap();
    admin
        .query_drop(format!("DROP DATABASE {}", scene.db))
        .await
        .unwrap();
    let n: Option<i64> = direct
        .exec_first(
            "SELECT COUNT(*) FROM hscale.partitioned_tables WHERE db = ?",
            (scene.db,),
        )
        .await
        .unwrap();
    assert_eq!(n, Some(0), "DROP DATABASE forgot the partitioned table");
    assert_eq!(tables_in(scene.db).await, vec![], "no table is left");
    admin
        .query_drop(format!("CREATE DATABASE {}", scene.db))
        .await
        .unwrap();
    admin.query_drop(format!("USE {}", scene.db)).await.unwrap();
    admin
        .query_drop(format!(
            "CREATE TABLE {} (id BIGINT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))",
            scene.table
        ))
        .await
        .unwrap();
    admin
        .query_drop(format!(
            "HSCALE SETUP_TABLE('{}.{}', 'k', '{}_default', 'shard0', 'MOD(8)')",
            scene.db, scene.table, scene.table
        ))
        .await
        .unwrap();
    direct.disconnect().await.unwrap();
    admin.disconnect().await.unwrap();
}

/// While an ADD_PARTITION runs (paused after its copy), RENAME and DROP of
/// the table through a proxy whose `change_wait_ms` is short fail with
/// 1205 naming the running operation; an ALTER through another proxy waits
/// for the change to end, then runs, and reaches the new partition's table
/// too. Writers on three proxies throughout; every invariant holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_waits_its_turn_behind_a_running_change() {
    const TEST: &str = "ddl_behind_change";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_ddl_turn",
        table: "acct_turn",
    };
    setup_acct(scene).await;
    let owner = ProxyProcess::start_with_env(
        {
            let mut c = cluster_config();
            c.proxy.reload_interval_ms = 1_000;
            c
        },
        &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "3000")],
    );
    let others: Vec<ProxyProcess> = (0..2).map(|_| serve(1_000)).collect();
    let ports = vec![owner.port, others[0].port, others[1].port];
    let (ws, _acked) = writers(6, scene, &ports, &mut rng, any_key, 300, (40, 45)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    let (db, t) = (scene.db, scene.table);
    let port = owner.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(db))).await.unwrap();
        c.query_drop(format!(
            "HSCALE ADD_PARTITION('{db}.{t}', 'p3', '3', 'shard2')"
        ))
        .await
    });
    // Wait until the change copied (it pauses 3 s there).
    let mut direct = backend_conn(0, None).await;
    let mut copying = false;
    for _ in 0..1_000 {
        let r: Option<(String, u64)> = direct
            .exec_first(
                "SELECT state, rows_copied FROM hscale.operations WHERE db = ? AND command LIKE 'ADD_PARTITION%' AND active IS NOT NULL",
                (db,),
            )
            .await
            .unwrap();
        if r.is_some_and(|(s, n)| s == "copying" && n > 0) {
            copying = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(copying, "the change reached its copy");
    let impatient = ProxyProcess::start({
        let mut c = cluster_config();
        c.proxy.change_wait_ms = 200;
        c
    });
    let mut short = Conn::new(proxy_opts(impatient.port, Some(db)))
        .await
        .unwrap();
    for sql in [
        format!("RENAME TABLE {t} TO {t}_x"),
        format!("DROP TABLE {t}"),
    ] {
        let e = short
            .query_drop(&sql)
            .await
            .expect_err("refused after change_wait_ms while the change runs");
        assert_eq!(code(&e), 1205, "{sql}: {e}");
        assert!(
            e.to_string().contains("ADD_PARTITION") && e.to_string().contains("is changing"),
            "{sql}: {e}"
        );
    }
    short.disconnect().await.unwrap();
    let mut admin = Conn::new(proxy_opts(others[0].port, Some(db)))
        .await
        .unwrap();
    // Waits for the change (default change_wait_ms), then runs.
    assert!(!change.is_finished(), "the change still runs (paused 3 s)");
    admin
        .query_drop(format!(
            "ALTER TABLE {t} ADD COLUMN extra INT NOT NULL DEFAULT 7"
        ))
        .await
        .unwrap();
    let ops: Vec<(String, String)> = direct
        .exec(
            "SELECT IF(command LIKE 'ADD_PARTITION%', 'ADD_PARTITION', 'ALTER'), state FROM hscale.operations WHERE db = ? AND active IS NULL AND (command LIKE 'ADD_PARTITION%' OR command LIKE 'ALTER%') ORDER BY ended_at, id",
            (db,),
        )
        .await
        .unwrap();
    assert_eq!(
        ops,
        vec![
            ("ADD_PARTITION".to_string(), "done".to_string()),
            ("ALTER".to_string(), "done".to_string())
        ],
        "the ALTER ran after the change"
    );
    change.await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_writers(hs).await;
    for (b, table) in tables_in(db).await {
        assert!(
            has_column(b, db, &table, "extra").await,
            "shard{b}.{table} lacks the new column"
        );
    }
    direct.disconnect().await.unwrap();
    admin.disconnect().await.unwrap();
    assert_invariants(TEST, scene, &ports, &out).await;
}

/// The owner of a RENAME TABLE is killed (SIGKILL) after its first
/// physical table was renamed: another proxy finishes the rename within
/// 30 s; every row is read under the new name, nothing stays under the old.
/// Then the owner of an ALTER TABLE is killed after its first partition:
/// another proxy finishes it on every partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_whose_owner_dies_is_finished_by_another_proxy() {
    cluster(3);
    let scene = Scene {
        db: "online_ddl_dies",
        table: "acct_dies",
    };
    setup_acct(scene).await;
    let other = serve(200);
    two_partitions(other.port, scene).await;
    let (db, t) = (scene.db, scene.table);
    let mut c = Conn::new(proxy_opts(other.port, Some(db))).await.unwrap();
    let values: Vec<String> = (1..=3000).map(|i| format!("({i}, {i}, 0, 'x')")).collect();
    c.query_drop(format!(
        "INSERT INTO {t} (id, k, v, note) VALUES {}",
        values.join(", ")
    ))
    .await
    .unwrap();
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    let owner = ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_IN_DDL_MS", "30000")]);
    let before: BTreeSet<(usize, String)> = tables_in(db).await.into_iter().collect();
    let port = owner.port;
    let rename = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(db))).await.unwrap();
        c.query_drop(format!("RENAME TABLE {t} TO {t}2")).await
    });
    // Wait until one physical table was renamed.
    let mut started = false;
    for _ in 0..1_000 {
        let now: BTreeSet<(usize, String)> = tables_in(db).await.into_iter().collect();
        if now != before {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(started, "the rename began");
    signal(&owner, libc::SIGKILL);
    assert!(
        rename.await.unwrap().is_err(),
        "the killed owner's client got an error"
    );
    let killed = Instant::now();
    let mut state = Vec::new();
    while killed.elapsed() < Duration::from_secs(30) {
        state = operations(db, "RENAME TABLE").await;
        if state.first().is_some_and(|o| o.1 == "done" && !o.2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        state.first().is_some_and(|o| o.1 == "done" && !o.2),
        "the rename was finished within 30 s: {state:?}"
    );
    let n: Option<i64> = c
        .query_first(format!("SELECT COUNT(*) FROM {t}2"))
        .await
        .unwrap();
    assert_eq!(n, Some(3000));
    let by_key: Vec<i64> = c
        .query(format!("SELECT id FROM {t}2 WHERE k = 1"))
        .await
        .unwrap();
    assert_eq!(by_key, vec![1]);
    for (b, table) in tables_in(db).await {
        assert!(table.starts_with(&format!("{t}2")), "shard{b}.{table} left");
    }

    // The same for an ALTER, killed after its first partition.
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    let owner = ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_IN_DDL_MS", "30000")]);
    let port = owner.port;
    let alter = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(db))).await.unwrap();
        c.query_drop(format!(
            "ALTER TABLE {t}2 ADD COLUMN extra INT NOT NULL DEFAULT 7"
        ))
        .await
    });
    let mut started = false;
    for _ in 0..1_000 {
        let mut any = false;
        for (b, table) in tables_in(db).await {
            any |= has_column(b, db, &table, "extra").await;
        }
        if any {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(started, "the ALTER began");
    signal(&owner, libc::SIGKILL);
    assert!(
        alter.await.unwrap().is_err(),
        "the killed owner's client got an error"
    );
    let killed = Instant::now();
    let mut state = Vec::new();
    while killed.elapsed() < Duration::from_secs(30) {
        state = operations(db, "ALTER TABLE").await;
        if state.first().is_some_and(|o| o.1 == "done" && !o.2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        state.first().is_some_and(|o| o.1 == "done" && !o.2),
        "the ALTER was finished within 30 s: {state:?}"
    );
    for (b, table) in tables_in(db).await {
        assert!(
            has_column(b, db, &table, "extra").await,
            "shard{b}.{table} lacks the new column"
        );
    }
    let extra: Vec<i64> = c
        .query(format!("SELECT extra FROM {t}2 WHERE k = 2"))
        .await
        .unwrap();
    assert_eq!(extra, vec![7]);
    c.disconnect().await.unwrap();
}
