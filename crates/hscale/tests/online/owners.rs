//! One change per table: two proxies changing one table at once; a
//! change whose owner dies (SIGKILL) before or in its cutover is rolled
//! back or finished by another proxy.

use super::*;

/// Two proxies changing the same table at once: one change runs; another
/// change through a proxy with a short `change_wait_ms` is refused with
/// 1205 naming the running operation, and through one with the default
/// wait runs once the first is done; the same command again reports the
/// first done; SHOW OPERATIONS shows the finished change; the table is
/// intact.
#[tokio::test]
async fn two_proxies_cannot_change_one_table_at_once() {
    cluster(3);
    let scene = Scene {
        db: "online_twice",
        table: "acct_twice",
    };
    setup_acct(scene).await;
    // The first change copies at most 20,000 rows/s (50,000 rows: at
    // least 2.5 s), so the others surely meet it running, however fast
    // the machine.
    let a = ProxyProcess::start({
        let mut c = cluster_config();
        c.proxy.reload_interval_ms = 1_000;
        c.proxy.change_copy_rows_per_s = 20_000;
        c
    });
    let b = ProxyProcess::start({
        let mut c = cluster_config();
        c.proxy.change_wait_ms = 100;
        c
    });
    let mut ca = Conn::new(proxy_opts(a.port, Some(scene.db))).await.unwrap();
    let mut cb = Conn::new(proxy_opts(b.port, Some(scene.db))).await.unwrap();
    ca.query_drop("HSCALE ADD_PARTITION('online_twice.acct_twice', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    // 50,000 rows of value 1, written on the partition's backend directly.
    let p1 = physical("online_twice.acct_twice", Some("p1")).await;
    let mut direct = backend_conn(1, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {p1} (id, k, v, note) SELECT seq, seq * 8 + 1, 0, 'x' FROM seq_1_to_50000"
        ))
        .await
        .unwrap();
    direct.disconnect().await.unwrap();
    let first = tokio::spawn(async move {
        let r: Result<Vec<mysql_async::Row>, _> = ca
            .query("HSCALE MOVE_PARTITION('online_twice.acct_twice', 'p1', 'shard2')")
            .await;
        (ca, r)
    });
    // Until the journal shows it running (a fixed pause raced the
    // owner's start on a quiet machine).
    for _ in 0..200 {
        let ops: Vec<mysql_async::Row> = cb.query("HSCALE SHOW OPERATIONS").await.unwrap();
        let running = ops.iter().any(|r| {
            let table: String = r.get(1).unwrap();
            let state: String = r.get(3).unwrap();
            table == "online_twice.acct_twice" && state != "done" && state != "failed"
        });
        if running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let refused = cb
        .query_drop("HSCALE ADD_PARTITION('online_twice.acct_twice', 'p2', '2', 'shard1')")
        .await
        .expect_err("a second change of the same table while the first runs");
    assert_eq!(code(&refused), 1205, "{refused}");
    // Through a proxy with the default wait, it waits its turn.
    let w = serve(1_000);
    let waiter = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(w.port, Some("online_twice")))
            .await
            .unwrap();
        let r = c
            .query_drop("HSCALE ADD_PARTITION('online_twice.acct_twice', 'p2', '2', 'shard1')")
            .await;
        let _ = c.disconnect().await;
        drop(w);
        r
    });
    // The same command through a third proxy waits for the running one and
    // reports it done.
    let c3 = serve(1_000);
    let mut cc = Conn::new(proxy_opts(c3.port, Some(scene.db)))
        .await
        .unwrap();
    cc.query_drop("HSCALE MOVE_PARTITION('online_twice.acct_twice', 'p1', 'shard2')")
        .await
        .unwrap();
    assert!(
        cc.info().contains("already done by operation"),
        "{}",
        cc.info()
    );
    assert!(
        first.is_finished(),
        "the twin waited for the running change"
    );
    cc.disconnect().await.unwrap();
    let (mut ca, r) = first.await.unwrap();
    let moved = r.expect("the first change runs");
    let moved: u64 = moved[0].get(0).unwrap();
    assert_eq!(moved, 50_000);
    let refused = refused.to_string();
    assert!(
        refused.contains("is changing online_twice.acct_twice")
            && refused.contains("MOVE_PARTITION"),
        "{refused}"
    );
    let ops: Vec<mysql_async::Row> = cb.query("HSCALE SHOW OPERATIONS").await.unwrap();
    let done: Vec<(String, String, String)> = ops
        .iter()
        .map(|r| (r.get(1).unwrap(), r.get(2).unwrap(), r.get(3).unwrap()))
        .filter(|o: &(String, String, String)| {
            o.0 == "online_twice.acct_twice" && o.1.starts_with("MOVE_PARTITION")
        })
        .collect();
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0].2, "done");
    let n: Option<i64> = ca
        .query_first("SELECT COUNT(*) FROM acct_twice WHERE k MOD 8 = 1")
        .await
        .unwrap();
    assert_eq!(n, Some(50_000));
    let parts = physical_tables("online_twice.acct_twice").await;
    assert_eq!(parts["p1"].0, 2, "p1 moved to shard2: {parts:?}");
    // The waiting change ran once the first was done.
    waiter.await.unwrap().unwrap();
    let parts = physical_tables("online_twice.acct_twice").await;
    assert_eq!(parts["p2"].0, 1, "p2 added on shard1: {parts:?}");
    ca.disconnect().await.unwrap();
    cb.disconnect().await.unwrap();
}

/// The owner of a change is killed (SIGKILL) during its copy: another proxy
/// sees its owner lock free and rolls the change back within seconds
/// (triggers, changelog and the copy's table gone, the journal says
/// 'failed'); the table is as before, and the change can run again.
#[tokio::test]
async fn a_change_whose_owner_dies_before_its_cutover_is_rolled_back() {
    cluster(3);
    let scene = Scene {
        db: "online_owner",
        table: "acct_owner",
    };
    setup_acct(scene).await;
    let owner = serve(1_000);
    let other = serve(200);
    let default = physical("online_owner.acct_owner", None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq * 8 + 1, 0, 'x' FROM seq_1_to_300000"
        ))
        .await
        .unwrap();
    let port = owner.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_owner")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_owner.acct_owner', 'p1', '1', 'shard1')")
            .await
    });
    // Kill the owner once its capture is in place (the copy runs then).
    let triggers =
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'online_owner'";
    let mut seen = false;
    for _ in 0..400 {
        let n: Option<i64> = direct.query_first(triggers).await.unwrap();
        if n.unwrap_or(0) == 3 {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen, "the change installed its capture triggers");
    signal(&owner, libc::SIGKILL);
    assert!(
        change.await.unwrap().is_err(),
        "the killed owner's client got an error"
    );
    // Another proxy rolls it back.
    let mut o = Conn::new(proxy_opts(other.port, Some(scene.db)))
        .await
        .unwrap();
    let mut state = String::new();
    let mut op = 0u64;
    for _ in 0..300 {
        let s: Option<(u64, String)> = direct
            .query_first("SELECT id, state FROM hscale.operations WHERE db = 'online_owner' AND command LIKE 'ADD_PARTITION%' ORDER BY id DESC LIMIT 1")
            .await
            .unwrap();
        (op, state) = s.unwrap_or_default();
        if state == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, "failed", "rolled back within 30 s");
    let n: Option<i64> = direct.query_first(triggers).await.unwrap();
    assert_eq!(n, Some(0), "capture triggers dropped");
    for b in 0..3 {
        let mut c = backend_conn(b, None).await;
        let left: Vec<String> = c
            .query(format!("SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES WHERE (TABLE_SCHEMA = 'hscale' AND TABLE_NAME = 'changes_{op}') OR (TABLE_SCHEMA = 'online_owner' AND TABLE_NAME <> 'acct_owner_default')"))
            .await
            .unwrap();
        assert!(left.is_empty(), "backend {b} keeps {left:?}");
        c.disconnect().await.unwrap();
    }
    // The table is as before, through the surviving proxy, and writable.
    let parts = physical_tables("online_owner.acct_owner").await;
    assert_eq!(parts.len(), 1, "{parts:?}");
    let count: Option<i64> = o
        .query_first("SELECT COUNT(*) FROM acct_owner")
        .await
        .unwrap();
    assert_eq!(count, Some(300_000));
    o.query_drop("INSERT INTO acct_owner (id, k, v, note) VALUES (400001, 9, 0, 'after')")
        .await
        .unwrap();
    // The change runs again, to its end.
    o.query_drop("HSCALE ADD_PARTITION('online_owner.acct_owner', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    let p1 = physical("online_owner.acct_owner", Some("p1")).await;
    let mut b1 = backend_conn(1, Some(scene.db)).await;
    let moved: Option<i64> = b1
        .query_first(format!("SELECT COUNT(*) FROM {p1}"))
        .await
        .unwrap();
    assert_eq!(moved, Some(300_001));
    b1.disconnect().await.unwrap();
    direct.disconnect().await.unwrap();
    o.disconnect().await.unwrap();
}

/// The owner of a change is killed (SIGKILL) in its cutover, after the
/// source was renamed: another proxy finishes the cutover (last replays,
/// moved rows, dictionary, clean-up); reads of the moving keys through it
/// wait for that and then find every row in its new home.
#[tokio::test]
async fn a_change_whose_owner_dies_in_its_cutover_is_finished() {
    owner_dies_in_cutover("online_cut", false).await;
}

/// The same with a split (`[proxy] change_delete_max_rows = 0`): the
/// default partition's other rows were copied into a fresh table, which
/// the take-over makes the default partition, and the old one is dropped.
#[tokio::test]
async fn a_split_whose_owner_dies_in_its_cutover_is_finished() {
    owner_dies_in_cutover("online_cut_split", true).await;
}

async fn owner_dies_in_cutover(db: &'static str, is_split: bool) {
    cluster(3);
    let scene = Scene {
        db,
        table: "acct_cut",
    };
    setup_acct(scene).await;
    let owner = change_owner(is_split, &[("HSCALE_TEST_PAUSE_AFTER_RENAME_MS", "20000")]);
    let other = serve(200);
    let default = physical(&format!("{db}.acct_cut"), None).await;
    let mut direct = load_8000(scene).await;
    let change = spawn_admin(
        owner.port,
        db,
        format!("HSCALE ADD_PARTITION('{db}.acct_cut', 'p3', '3', 'shard2')"),
    );
    // Wait for the rename: the default partition's old name is gone.
    let mut renamed = false;
    for _ in 0..500 {
        let n: Option<i64> = direct
            .query_first(format!("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{default}'"))
            .await
            .unwrap();
        if n == Some(0) {
            renamed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(renamed, "the cutover renamed the default partition");
    signal(&owner, libc::SIGKILL);
    assert!(
        change.await.unwrap().is_err(),
        "the killed owner's client got an error"
    );
    // Through another proxy: the moving keys wait for the take-over, then
    // every row is there (k = 3, 11, 19, ... are the moving keys).
    let mut o = Conn::new(proxy_opts(other.port, Some(scene.db)))
        .await
        .unwrap();
    let moving: Vec<(i64, i64)> = o
        .query("SELECT id, k FROM acct_cut WHERE k = 11")
        .await
        .unwrap();
    assert_eq!(moving, vec![(11, 11)]);
    let n: Option<i64> = o
        .query_first("SELECT COUNT(*) FROM acct_cut")
        .await
        .unwrap();
    assert_eq!(n, Some(8000));
    let state: Option<String> = direct
        .query_first(format!("SELECT state FROM hscale.operations WHERE db = '{db}' AND command LIKE 'ADD_PARTITION%' ORDER BY id DESC LIMIT 1"))
        .await
        .unwrap();
    assert_eq!(state.as_deref(), Some("done"));
    // The take-over commits ("done") before it cleans up (triggers,
    // changelogs, the retired source): wait for the journal to say the
    // clean-up is over before looking at what is left.
    let mut is_clean = false;
    for _ in 0..600 {
        let owed: Option<i64> = direct
            .query_first(format!("SELECT cleanup_pending FROM hscale.operations WHERE db = '{db}' AND command LIKE 'ADD_PARTITION%' ORDER BY id DESC LIMIT 1"))
            .await
            .unwrap();
        if owed == Some(0) {
            is_clean = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(is_clean, "the take-over finished its clean-up");
    let parts = physical_tables(&format!("{db}.acct_cut")).await;
    let (b, p3) = parts["p3"].clone();
    assert_eq!(b, 2);
    let mut b2 = backend_conn(2, Some(scene.db)).await;
    let n: Option<i64> = b2
        .query_first(format!("SELECT COUNT(*) FROM {p3}"))
        .await
        .unwrap();
    assert_eq!(n, Some(1000), "every row of value 3 in its new home");
    b2.disconnect().await.unwrap();
    let (_, new_default) = parts[""].clone();
    let stayed: Option<i64> = direct
        .query_first(format!(
            "SELECT COUNT(*) FROM {new_default} WHERE k MOD 8 = 3"
        ))
        .await
        .unwrap();
    assert_eq!(stayed, Some(0), "moved rows left the default partition");
    let triggers: Option<i64> = direct
        .query_first(format!(
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{db}'"
        ))
        .await
        .unwrap();
    assert_eq!(triggers, Some(0));
    // Only the tables the dictionary names are left.
    let left: Vec<String> = direct
        .query(format!(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}'"
        ))
        .await
        .unwrap();
    assert_eq!(
        left,
        vec![new_default.clone()],
        "shard0 keeps only the default partition"
    );
    let stayed: Option<i64> = direct
        .query_first(format!("SELECT COUNT(*) FROM {new_default}"))
        .await
        .unwrap();
    assert_eq!(
        stayed,
        Some(7000),
        "the default partition keeps every other row"
    );
    // The table works through the other proxy.
    o.query_drop("UPDATE acct_cut SET v = v + 1 WHERE id = 11 AND k = 11")
        .await
        .unwrap();
    direct.disconnect().await.unwrap();
    o.disconnect().await.unwrap();
}

/// The leftovers of operation `op` on every backend: capture triggers of
/// `db`, changelogs, and `db`'s tables other than `keep` (backend, table).
async fn leftovers(db: &str, op: u64, keep: &[(usize, String)]) -> Vec<String> {
    let mut left = Vec::new();
    for b in 0..3 {
        let mut c = backend_conn(b, None).await;
        let rows: Vec<String> = c
            .query(format!(
                "SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES \
                 WHERE (TABLE_SCHEMA = 'hscale' AND TABLE_NAME LIKE 'changes\\_{op}%') OR TABLE_SCHEMA = '{db}' \
                 UNION ALL SELECT CONCAT('trigger ', TRIGGER_NAME) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{db}'"
            ))
            .await
            .unwrap();
        left.extend(
            rows.into_iter()
                .filter(|t| {
                    !keep
                        .iter()
                        .any(|(kb, k)| *kb == b && *t == format!("{db}.{k}"))
                })
                .map(|t| format!("shard{b}: {t}")),
        );
        c.disconnect().await.unwrap();
    }
    left
}

/// The newest operation of `db` whose command starts with `command`: its
/// id and state.
async fn last_operation(db: &str, command: &str) -> (u64, String) {
    let mut main = backend_conn(0, None).await;
    let s: Option<(u64, String)> = main
        .query_first(format!(
            "SELECT id, state FROM hscale.operations WHERE db = '{db}' AND command LIKE '{command}%' ORDER BY id DESC LIMIT 1"
        ))
        .await
        .unwrap();
    main.disconnect().await.unwrap();
    s.unwrap_or_default()
}

/// A DROP_PARTITION that rebuilds the default partition (`[proxy]
/// change_delete_max_rows = 0`: the partition's rows and the default
/// partition's are copied into a fresh table, both old tables retire) and
/// whose owner is killed after both renames: another proxy finishes it.
/// Every row is found through it, once, in the new default partition, and
/// nothing else is left on any backend.
#[tokio::test]
async fn a_merge_whose_owner_dies_in_its_cutover_is_finished() {
    merge_owner_dies_in_cutover("online_merge_cut", false).await;
}

/// The same merge, its owner killed between its two renames: the dropped
/// partition's table is renamed, the default partition's is not. The
/// take-over renames the second source itself and finishes the change.
#[tokio::test]
async fn a_merge_whose_owner_dies_between_its_renames_is_finished() {
    merge_owner_dies_in_cutover("online_merge_between", true).await;
}

async fn merge_owner_dies_in_cutover(db: &'static str, between: bool) {
    cluster(3);
    let scene = Scene {
        db,
        table: "acct_merge_cut",
    };
    let table = format!("{db}.acct_merge_cut");
    setup_acct(scene).await;
    let other = serve(200);
    let mut direct = load_8000(scene).await;
    let mut o = Conn::new(proxy_opts(other.port, Some(db))).await.unwrap();
    o.query_drop(format!(
        "HSCALE ADD_PARTITION('{table}', 'p3', '3', 'shard2')"
    ))
    .await
    .unwrap();
    let p3 = physical(&table, Some("p3")).await;
    let default = physical(&table, None).await;
    let pause = if between {
        "HSCALE_TEST_PAUSE_BETWEEN_RENAMES_MS"
    } else {
        "HSCALE_TEST_PAUSE_AFTER_RENAME_MS"
    };
    let owner = change_owner(true, &[(pause, "20000")]);
    let drop = format!("HSCALE DROP_PARTITION('{table}', 'p3')");
    let change = spawn_admin(owner.port, db, drop);
    // Wait for the renames: the partition's table is gone under its old
    // name, and the default partition's too unless the owner pauses
    // between the two (then it must still be there).
    let mut b2 = backend_conn(2, Some(db)).await;
    let gone = |t: &str| {
        format!("SELECT COUNT(*) = 0 FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{t}'")
    };
    let mut renamed = false;
    for _ in 0..1000 {
        let p: Option<bool> = b2.query_first(gone(&p3)).await.unwrap();
        let d: Option<bool> = direct.query_first(gone(&default)).await.unwrap();
        if p == Some(true) && (between || d == Some(true)) {
            renamed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(renamed, "the cutover renamed its sources");
    if between {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let d: Option<bool> = direct.query_first(gone(&default)).await.unwrap();
        assert_eq!(d, Some(false), "the owner paused before its second rename");
    }
    signal(&owner, libc::SIGKILL);
    assert!(
        change.await.unwrap().is_err(),
        "the killed owner's client got an error"
    );
    let moved: Vec<(i64, i64)> = o
        .query("SELECT id, k FROM acct_merge_cut WHERE k = 11")
        .await
        .unwrap();
    assert_eq!(moved, vec![(11, 11)]);
    let stayed: Vec<(i64, i64)> = o
        .query("SELECT id, k FROM acct_merge_cut WHERE k = 12")
        .await
        .unwrap();
    assert_eq!(stayed, vec![(12, 12)]);
    let n: Option<i64> = o
        .query_first("SELECT COUNT(*) FROM acct_merge_cut")
        .await
        .unwrap();
    assert_eq!(n, Some(8000));
    let (op, state) = last_operation(db, "DROP_PARTITION").await;
    assert_eq!(state, "done");
    let parts = physical_tables(&table).await;
    assert_eq!(parts.len(), 1, "{parts:?}");
    let (b, new_default) = parts[""].clone();
    assert_eq!(b, 0);
    assert_ne!(new_default, default, "the default partition was rebuilt");
    let n: Option<i64> = direct
        .query_first(format!("SELECT COUNT(*) FROM {new_default}"))
        .await
        .unwrap();
    assert_eq!(n, Some(8000), "every row in the new default partition");
    // The take-over cleans up after its commit.
    let mut left = Vec::new();
    for _ in 0..100 {
        left = leftovers(db, op, &[(0, new_default.clone())]).await;
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left.is_empty(), "left behind: {left:?}");
    o.query_drop("UPDATE acct_merge_cut SET v = v + 1 WHERE id = 11 AND k = 11")
        .await
        .unwrap();
    for c in [direct, b2, o] {
        c.disconnect().await.unwrap();
    }
}

/// The same merge, its owner killed while it copies the default
/// partition's rows (both moves captured): another proxy rolls it back;
/// the table is as before, nothing of the change is left, and the command
/// then runs to its end.
#[tokio::test]
async fn a_merge_whose_owner_dies_before_its_cutover_is_rolled_back() {
    cluster(3);
    let scene = Scene {
        db: "online_merge_owner",
        table: "acct_merge_owner",
    };
    let db = scene.db;
    setup_acct(scene).await;
    let other = serve(200);
    let default = physical("online_merge_owner.acct_merge_owner", None).await;
    let mut direct = backend_conn(0, Some(db)).await;
    // Value 1's 2,000 rows go to p1; 200,000 others stay in the default.
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, IF(seq <= 2000, seq * 8 + 1, seq * 8 + 2), 0, 'x' FROM seq_1_to_202000"
        ))
        .await
        .unwrap();
    let mut o = Conn::new(proxy_opts(other.port, Some(db))).await.unwrap();
    o.query_drop(
        "HSCALE ADD_PARTITION('online_merge_owner.acct_merge_owner', 'p1', '1', 'shard1')",
    )
    .await
    .unwrap();
    let p1 = physical("online_merge_owner.acct_merge_owner", Some("p1")).await;
    let default = physical("online_merge_owner.acct_merge_owner", None).await;
    let owner = change_owner(true, &[]);
    let change = spawn_admin(
        owner.port,
        db,
        "HSCALE DROP_PARTITION('online_merge_owner.acct_merge_owner', 'p1')".into(),
    );
    // Both moves' capture triggers: p1's on shard1, the default's on shard0.
    let triggers =
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'online_merge_owner'";
    let mut b1 = backend_conn(1, Some(db)).await;
    let mut seen = false;
    for _ in 0..1000 {
        let n0: Option<i64> = direct.query_first(triggers).await.unwrap();
        let n1: Option<i64> = b1.query_first(triggers).await.unwrap();
        if n0 == Some(3) && n1 == Some(3) {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen, "both moves installed their capture triggers");
    signal(&owner, libc::SIGKILL);
    assert!(
        change.await.unwrap().is_err(),
        "the killed owner's client got an error"
    );
    let mut state = String::new();
    let mut op = 0;
    for _ in 0..300 {
        (op, state) = last_operation(db, "DROP_PARTITION").await;
        if state == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, "failed", "rolled back within 30 s");
    let left = leftovers(db, op, &[(0, default.clone()), (1, p1.clone())]).await;
    assert!(left.is_empty(), "left behind: {left:?}");
    let parts = physical_tables("online_merge_owner.acct_merge_owner").await;
    assert_eq!(parts.len(), 2, "{parts:?}");
    let n: Option<i64> = o
        .query_first("SELECT COUNT(*) FROM acct_merge_owner")
        .await
        .unwrap();
    assert_eq!(n, Some(202_000));
    // The merge runs again through the other proxy (in place: its
    // threshold is the default), to its end.
    o.query_drop("HSCALE DROP_PARTITION('online_merge_owner.acct_merge_owner', 'p1')")
        .await
        .unwrap();
    let n: Option<i64> = o
        .query_first("SELECT COUNT(*) FROM acct_merge_owner WHERE k MOD 8 = 1")
        .await
        .unwrap();
    assert_eq!(n, Some(2000));
    for c in [direct, b1, o] {
        c.disconnect().await.unwrap();
    }
}

/// A split whose owner is killed after its commit, before its clean-up:
/// the change is done (the new layout holds every row), and another proxy
/// finds its clean-up owed and does it: the capture triggers, the
/// changelog and the retired default partition (a full copy of the rows
/// that stayed) are gone from every backend.
#[tokio::test]
async fn a_change_whose_owner_dies_after_its_commit_is_cleaned_up() {
    cluster(3);
    let scene = Scene {
        db: "online_after_commit",
        table: "acct_after_commit",
    };
    let db = scene.db;
    setup_acct(scene).await;
    let other = serve(200);
    let mut direct = load_8000(scene).await;
    let owner = change_owner(true, &[("HSCALE_TEST_PAUSE_AFTER_COMMIT_MS", "20000")]);
    let change = spawn_admin(
        owner.port,
        db,
        "HSCALE ADD_PARTITION('online_after_commit.acct_after_commit', 'p3', '3', 'shard2')".into(),
    );
    let mut committed = false;
    for _ in 0..1000 {
        if last_operation(db, "ADD_PARTITION").await.1 == "done" {
            committed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(committed, "the change committed");
    let (op, _) = last_operation(db, "ADD_PARTITION").await;
    // The owner's clean-up has not run: its triggers are still there.
    let n: Option<i64> = direct
        .query_first(format!(
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{db}'"
        ))
        .await
        .unwrap();
    assert_eq!(n, Some(3), "the owner stopped before its clean-up");
    signal(&owner, libc::SIGKILL);
    let _ = change.await.unwrap();
    let parts = physical_tables("online_after_commit.acct_after_commit").await;
    let (_, new_default) = parts[""].clone();
    let (b3, p3) = parts["p3"].clone();
    assert_eq!(b3, 2);
    let mut left = Vec::new();
    for _ in 0..150 {
        left = leftovers(db, op, &[(0, new_default.clone()), (2, p3.clone())]).await;
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left.is_empty(), "left behind: {left:?}");
    let mut main = backend_conn(0, None).await;
    let owed: Option<u8> = main
        .query_first(format!(
            "SELECT cleanup_pending FROM hscale.operations WHERE id = {op}"
        ))
        .await
        .unwrap();
    assert_eq!(owed, Some(0));
    let mut o = Conn::new(proxy_opts(other.port, Some(db))).await.unwrap();
    let n: Option<i64> = o
        .query_first("SELECT COUNT(*) FROM acct_after_commit")
        .await
        .unwrap();
    assert_eq!(n, Some(8000));
    for c in [direct, main, o] {
        c.disconnect().await.unwrap();
    }
}

/// 8,000 rows (`k` = `id`) loaded into `scene`'s default partition on
/// shard0 directly; a connection to shard0 in the scene's database.
async fn load_8000(scene: Scene) -> Conn {
    let default = physical(&format!("{}.{}", scene.db, scene.table), None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq, 0, 'x' FROM seq_1_to_8000"
        ))
        .await
        .unwrap();
    direct
}
