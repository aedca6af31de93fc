//! Issue 12 item 4: the owner of an in-place SETUP_TABLE (the table is
//! renamed to its default partition on the main backend, then the
//! dictionary commits) is SIGKILLed before its rename and after it, while
//! writers go on through two other proxies. The journal holds the plan: a
//! take-over rolls the change back before the rename (the table stays a
//! plain table, and SETUP_TABLE runs again) and commits it after (the
//! renamed table is the default partition). Every invariant holds, with
//! another proxy changing the dictionary all along.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    /// In 'cutover', the table not renamed yet: rolled back.
    BeforeRename,
    /// The table renamed, the dictionary not committed: finished.
    AfterRename,
}

async fn killed_setup(test: &'static str, step: Step, scene: Scene) {
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
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    let hook = match step {
        Step::BeforeRename => "HSCALE_TEST_PAUSE_BEFORE_RENAME_MS",
        Step::AfterRename => "HSCALE_TEST_PAUSE_AFTER_RENAME_MS",
    };
    let owner = ProxyProcess::start_with_env(config, &[(hook, "20000")]);
    let others: Vec<ProxyProcess> = (0..2)
        .map(|_| {
            let mut config = cluster_config();
            config.proxy.reload_interval_ms = 200;
            config.proxy.fence_wait_ms = 30_000;
            ProxyProcess::start(config)
        })
        .collect();
    let ports = vec![others[0].port, others[1].port];
    let (ws, _acked) = writers(6, scene, &ports, &mut rng, any_key, 200, (40, 45)).await;
    let stop = Arc::new(AtomicBool::new(false));
    // Another proxy moves the one dictionary version on all along: a
    // writer that met the renamed table must wait for the SETUP_TABLE's
    // commit, not for any newer version (it gave up with 1146 after its
    // tries when it did).
    let churn_db = match step {
        Step::BeforeRename => "online_setup_before_churn",
        Step::AfterRename => "online_setup_after_churn",
    };
    let churn = churn_dictionary_of(churn_db, &stop).await;
    let hs = spawn_writers(ws, &stop);
    let setup =
        format!("HSCALE SETUP_TABLE('{db}.{t}', 'k', '{t}_default', 'shard0', 'MOD({MODULUS})')");
    let port = owner.port;
    let sql = setup.clone();
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(db))).await.unwrap();
        c.query_drop(sql).await
    });
    let mut direct = backend_conn(0, Some(db)).await;
    let journal = format!(
        "SELECT state, active IS NOT NULL FROM hscale.operations WHERE db = '{db}' AND command LIKE 'SETUP_TABLE%' ORDER BY id DESC LIMIT 1"
    );
    let exists = |name: String| {
        format!("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{name}'")
    };
    // Reach the hook: in 'cutover' with the table still there, or renamed.
    let mut reached = false;
    for _ in 0..1_000 {
        let row: Option<(String, bool)> = direct.query_first(&journal).await.unwrap();
        let plain: Option<i64> = direct.query_first(exists(t.to_string())).await.unwrap();
        reached = match step {
            Step::BeforeRename => row.is_some_and(|(s, _)| s == "cutover") && plain == Some(1),
            Step::AfterRename => plain == Some(0),
        };
        if reached {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(reached, "{test}: the owner reached its hook ({step:?})");
    // The writers wait for the rename's fence (or write on) meanwhile.
    tokio::time::sleep(Duration::from_millis(500)).await;
    signal(&owner, libc::SIGKILL);
    assert!(
        change.await.unwrap().is_err(),
        "{test}: the killed owner's client got an error"
    );
    let want = match step {
        Step::BeforeRename => "failed",
        Step::AfterRename => "done",
    };
    let killed = Instant::now();
    let mut row = None;
    while killed.elapsed() < Duration::from_secs(30) {
        row = direct
            .query_first::<(String, bool), _>(&journal)
            .await
            .unwrap();
        if row.as_ref().is_some_and(|(s, active)| !active && s == want) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        row,
        Some((want.to_string(), false)),
        "{test}: the take-over's verdict within 30 s"
    );
    eprintln!(
        "{test}: {want} by a take-over {} ms after the kill",
        killed.elapsed().as_millis()
    );
    let mut admin = Vec::new();
    if step == Step::BeforeRename {
        // The table is as before: a plain table that SETUP_TABLE sets up.
        let left: Option<i64> = direct
            .query_first(exists(format!("{t}_default")))
            .await
            .unwrap();
        assert_eq!(left, Some(0), "{test}: no default partition yet");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut o = Conn::new(proxy_opts(others[0].port, Some(db)))
            .await
            .unwrap();
        if let Err(e) = o.query_drop(&setup).await {
            admin.push(format!("SETUP_TABLE again: {}", describe(&e)));
        }
        o.disconnect().await.unwrap();
    }
    // The writers go on with the partitioned table.
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    let mut out = join_writers(hs).await;
    let churned = churn.await.unwrap();
    assert!(
        churned > 20,
        "{test}: the dictionary barely churned: {churned}"
    );
    out.admin = admin;
    direct.disconnect().await.unwrap();
    assert_invariants(test, scene, &ports, &out).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_place_setup_whose_owner_dies_before_its_rename_is_rolled_back() {
    killed_setup(
        "setup_killed_before_rename",
        Step::BeforeRename,
        Scene {
            db: "online_setup_before",
            table: "acct_setup_before",
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_place_setup_whose_owner_dies_after_its_rename_is_finished() {
    killed_setup(
        "setup_killed_after_rename",
        Step::AfterRename,
        Scene {
            db: "online_setup_after",
            table: "acct_setup_after",
        },
    )
    .await;
}
