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
    cluster(3);
    let scene = Scene {
        db: "online_cut",
        table: "acct_cut",
    };
    setup_acct(scene).await;
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    let owner =
        ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_AFTER_RENAME_MS", "20000")]);
    let other = serve(200);
    let default = physical("online_cut.acct_cut", None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq, 0, 'x' FROM seq_1_to_8000"
        ))
        .await
        .unwrap();
    let port = owner.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_cut")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_cut.acct_cut', 'p3', '3', 'shard2')")
            .await
    });
    // Wait for the rename: the default partition's old name is gone.
    let mut renamed = false;
    for _ in 0..500 {
        let n: Option<i64> = direct
            .query_first(format!("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'online_cut' AND TABLE_NAME = '{default}'"))
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
        .query_first("SELECT state FROM hscale.operations WHERE db = 'online_cut' AND command LIKE 'ADD_PARTITION%' ORDER BY id DESC LIMIT 1")
        .await
        .unwrap();
    assert_eq!(state.as_deref(), Some("done"));
    let parts = physical_tables("online_cut.acct_cut").await;
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
        .query_first(
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'online_cut'",
        )
        .await
        .unwrap();
    assert_eq!(triggers, Some(0));
    // The table works through the other proxy.
    o.query_drop("UPDATE acct_cut SET v = v + 1 WHERE id = 11 AND k = 11")
        .await
        .unwrap();
    direct.disconnect().await.unwrap();
    o.disconnect().await.unwrap();
}
