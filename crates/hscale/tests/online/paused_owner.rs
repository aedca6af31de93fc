//! Issue 12 item 4: a change's owner that stops (SIGSTOP) keeps its
//! connections and its owner lock; another proxy takes the change over
//! once its heartbeat is stale (rolls it back during the copy, finishes it
//! in the cutover), after killing the owner's registered connections. The
//! owner is then continued while writers go on through all three proxies:
//! it must write nothing, and every invariant holds.
//!
//! The sharpest window: the owner woken while the taker has committed the
//! new dictionary but not yet cleaned up (`HSCALE_TEST_PAUSE_TAKEOVER_AFTER_COMMIT_MS`).
//! In a DROP_PARTITION the staging table (the dropped partition's rows as
//! of the cutover) still exists then, and writers already update and delete
//! those keys in the default partition: an owner whose connections lived
//! would merge the stale staging rows over them.

use super::*;

/// Where the owner is stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// In the pause after the copy (before the cutover): rolled back.
    Copy,
    /// In the pause after the cutover's rename: finished.
    Cutover,
    /// In the pause after the rename of a DROP_PARTITION (whose rows are
    /// staged beside the default partition), and continued while the taker
    /// pauses between its commit and its clean-up.
    WokenBeforeCleanUp,
}

/// A proxy with a short heartbeat bound (3 s instead of 10) to keep the
/// test short, and a fence wait longer than any take-over.
fn fenced_config(reload_interval_ms: u64) -> hscale::Config {
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = reload_interval_ms;
    config.proxy.takeover_after_ms = 3_000;
    config.proxy.fence_wait_ms = 30_000;
    config
}

async fn journal_row(
    direct: &mut Conn,
    db: &str,
    command: &str,
) -> Option<(u64, String, bool, u64)> {
    direct
        .query_first(format!(
            "SELECT id, state, active IS NOT NULL, rows_copied FROM hscale.operations WHERE db = '{db}' AND command LIKE '{command}%' ORDER BY id DESC LIMIT 1"
        ))
        .await
        .unwrap()
}

async fn stopped_owner(test: &'static str, phase: Phase, scene: Scene) {
    cluster(3);
    let mut rng = test_seed(test);
    setup_acct(scene).await;
    let (db, t) = (scene.db, scene.table);
    let (command, sql) = if phase == Phase::WokenBeforeCleanUp {
        let mut c = proxy_conn(Some(db)).await;
        c.query_drop(format!(
            "HSCALE ADD_PARTITION('{db}.{t}', 'p3', '3', 'shard2')"
        ))
        .await
        .unwrap();
        c.disconnect().await.unwrap();
        (
            "DROP_PARTITION",
            format!("HSCALE DROP_PARTITION('{db}.{t}', 'p3')"),
        )
    } else {
        (
            "ADD_PARTITION",
            format!("HSCALE ADD_PARTITION('{db}.{t}', 'p3', '3', 'shard2')"),
        )
    };
    let pause = match phase {
        Phase::Copy => "HSCALE_TEST_PAUSE_AFTER_COPY_MS",
        Phase::Cutover | Phase::WokenBeforeCleanUp => "HSCALE_TEST_PAUSE_AFTER_RENAME_MS",
    };
    let owner = ProxyProcess::start_with_env(fenced_config(1_000), &[(pause, "2000")]);
    // The taker pauses between its commit and its clean-up (long enough
    // for the test to wake the owner there).
    let taker_env: &[(&str, &str)] = match phase {
        Phase::WokenBeforeCleanUp => &[("HSCALE_TEST_PAUSE_TAKEOVER_AFTER_COMMIT_MS", "8000")],
        _ => &[],
    };
    let others: Vec<ProxyProcess> = (0..2)
        .map(|_| ProxyProcess::start_with_env(fenced_config(200), taker_env))
        .collect();
    let ports = vec![owner.port, others[0].port, others[1].port];
    let (ws, _acked) = writers(6, scene, &ports, &mut rng, mostly_value_3, 300, (40, 45)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    // The table the cutover renames: the default partition (ADD), or p3
    // (DROP), on backend 0 or 2.
    let (renamed_backend, renamed) = match phase {
        Phase::WokenBeforeCleanUp => (2, physical(&format!("{db}.{t}"), Some("p3")).await),
        _ => (0, physical(&format!("{db}.{t}"), None).await),
    };
    let mut direct = backend_conn(0, Some(scene.db)).await;
    let mut at_renamed = backend_conn(renamed_backend, None).await;
    let port = owner.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(db))).await.unwrap();
        c.query_drop(sql).await
    });
    // Stop the owner in its pause: after the copy (rows_copied recorded),
    // or after the rename (the renamed table's old name gone).
    let mut reached = false;
    for _ in 0..1_500 {
        reached = match phase {
            Phase::Copy => journal_row(&mut direct, db, command)
                .await
                .is_some_and(|(_, s, _, rows)| s == "copying" && rows > 0),
            Phase::Cutover | Phase::WokenBeforeCleanUp => {
                let n: Option<i64> = at_renamed
                    .query_first(format!("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{renamed}'"))
                    .await
                    .unwrap();
                n == Some(0)
            }
        };
        if reached {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(reached, "{test}: the owner reached its pause ({phase:?})");
    signal(&owner, libc::SIGSTOP);
    let stopped = Instant::now();
    eprintln!("{test}: owner stopped at {} ms", now_ms());
    // Another proxy takes the change over within 30 s.
    let want = if phase == Phase::Copy {
        "failed"
    } else {
        "done"
    };
    let mut row = None;
    while stopped.elapsed() < Duration::from_secs(30) {
        row = journal_row(&mut direct, db, command).await;
        if row
            .as_ref()
            .is_some_and(|(_, s, active, _)| !active && s == want)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = stopped.elapsed();
    let (op, state, active, _) = row.unwrap_or_default();
    assert!(
        !active && state == want,
        "{test}: operation {op} is {state} (active {active}) {} ms after its owner stopped; want {want} within 30 s",
        took.as_millis()
    );
    eprintln!(
        "{test}: taken over ({state}) {} ms after the owner stopped",
        took.as_millis()
    );
    if phase == Phase::WokenBeforeCleanUp {
        // The taker pauses before its clean-up; writers meanwhile update
        // and delete p3's keys in the default partition.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
    }
    // The owner wakes up and goes on while writers go on (some through it).
    signal(&owner, libc::SIGCONT);
    let answer = tokio::time::timeout(Duration::from_secs(20), change)
        .await
        .expect("the woken owner answers its client")
        .unwrap();
    eprintln!("{test}: the woken owner answered {answer:?}");
    assert!(
        answer.is_err(),
        "{test}: the woken owner reports its change taken over"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    if phase == Phase::WokenBeforeCleanUp {
        // The taker's clean-up ends its pause: wait for it.
        let t = Instant::now();
        loop {
            let n: Option<i64> = at_renamed
                .query_first(format!("SELECT (SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{db}') + (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'hscale' AND TABLE_NAME = 'changes_{op}')"))
                .await
                .unwrap();
            if n == Some(0) || t.elapsed() > Duration::from_secs(30) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let mut admin = Vec::new();
    if phase == Phase::Copy {
        // The table is as before and the change runs again, to its end.
        let mut o = Conn::new(proxy_opts(others[0].port, Some(db)))
            .await
            .unwrap();
        if let Err(e) = o
            .query_drop(format!(
                "HSCALE ADD_PARTITION('{db}.{t}', 'p3', '3', 'shard2')"
            ))
            .await
        {
            admin.push(format!("ADD_PARTITION again: {}", describe(&e)));
        }
        o.disconnect().await.unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut out = join_writers(hs).await;
    out.admin = admin;
    // No capture left behind, and the journal holds nothing active.
    let triggers: Option<i64> = direct
        .query_first(format!(
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{db}'"
        ))
        .await
        .unwrap();
    assert_eq!(triggers, Some(0), "{test}: capture triggers left");
    let active: Option<i64> = direct
        .query_first(format!(
            "SELECT COUNT(*) FROM hscale.operations WHERE db = '{db}' AND active IS NOT NULL"
        ))
        .await
        .unwrap();
    assert_eq!(active, Some(0), "{test}: an operation still active");
    for b in 0..3 {
        let mut c = backend_conn(b, None).await;
        let left: Vec<String> = c
            .query(format!("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'hscale' AND TABLE_NAME = 'changes_{op}'"))
            .await
            .unwrap();
        assert!(left.is_empty(), "{test}: backend {b} keeps {left:?}");
        c.disconnect().await.unwrap();
    }
    direct.disconnect().await.unwrap();
    at_renamed.disconnect().await.unwrap();
    assert_eq!(
        out.per_proxy.len(),
        3,
        "every proxy carried writes: {:?}",
        out.per_proxy
    );
    assert_invariants(test, scene, &ports, &out).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_owner_during_the_copy_is_fenced_and_its_change_rolled_back() {
    stopped_owner(
        "stopped_owner_copy",
        Phase::Copy,
        Scene {
            db: "online_stop_copy",
            table: "acct_stop_copy",
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_owner_in_its_cutover_is_fenced_and_its_change_finished() {
    stopped_owner(
        "stopped_owner_cutover",
        Phase::Cutover,
        Scene {
            db: "online_stop_cut",
            table: "acct_stop_cut",
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_woken_between_the_takeovers_commit_and_clean_up_writes_nothing() {
    stopped_owner(
        "stopped_owner_woken",
        Phase::WokenBeforeCleanUp,
        Scene {
            db: "online_stop_woken",
            table: "acct_stop_woken",
        },
    )
    .await;
}
