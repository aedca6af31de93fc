//! Writers through one or three proxies while partitions are added, moved,
//! split and dropped; a proxy stopped (SIGSTOP) across a move; the checker
//! against a run without changes.

use super::*;

/// Three `hscale serve` processes on one dictionary, six writers each
/// sending every operation through a random proxy, while partitions are
/// added, dropped and added again (same and other backends, a second value
/// into an existing partition, a name reused on another backend) through
/// proxy 0. The other two proxies learn of each change up to a second late.
/// Proxy 0 splits the default partition at every carve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_through_three_proxies_lose_nothing_while_partitions_change() {
    const TEST: &str = "writers_through_three_proxies";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_three",
        table: "acct",
    };
    setup_acct(scene).await;
    // Proxy 0, which runs the changes, splits the default partition
    // whenever it carves keys out of it (`[proxy] change_delete_max_rows =
    // 0`): the rows that stay are copied into a fresh default table too
    // (the single-proxy test below deletes the moving rows in place).
    let mut split = cluster_config();
    split.proxy.reload_interval_ms = 1_000;
    split.proxy.change_delete_max_rows = 0;
    let procs: Vec<ProxyProcess> = std::iter::once(ProxyProcess::start(split))
        .chain((1..3).map(|_| serve(1_000)))
        .collect();
    let ports: Vec<u16> = procs.iter().map(|p| p.port).collect();

    let (ws, _acked) = writers(6, scene, &ports, &mut rng, any_key, 2_000, (40, 45)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let hs = spawn_writers(ws, &stop);
    let changes = vec![
        Change::Add("p1", "1", 1),
        Change::Add("p2", "2", 0),
        Change::Add("p3", "3", 2),
        Change::Add("p4", "4", 1),
        Change::Add("p4", "6", 1),
        Change::Move("p1", 2),
        Change::Drop("p2"),
        Change::Add("p5", "5", 2),
        Change::Move("p4", 0),
        Change::Drop("p3"),
        Change::Drop("p4"),
        Change::Add("p3", "3", 1),
        Change::Add("p2", "2", 2),
        Change::Add("p4", "4", 0),
    ];
    let admin = tokio::spawn(run_changes(
        ports[0],
        scene,
        changes,
        rng.fork(),
        (250, 650),
    ));
    let admin_failures = admin.await.unwrap();
    // Writers keep going for at least 10 s, and 1.5 s after the last change.
    let until =
        (start + Duration::from_secs(10)).max(Instant::now() + Duration::from_millis(1_500));
    tokio::time::sleep_until(until.into()).await;
    stop.store(true, Ordering::Relaxed);
    let mut out = join_writers(hs).await;
    out.admin = admin_failures;
    assert!(
        out.acked > 1_000,
        "writers barely ran: {} operations",
        out.acked
    );
    assert_eq!(
        out.per_proxy.len(),
        3,
        "every proxy carried writes: {:?}",
        out.per_proxy
    );
    assert_invariants(TEST, scene, &ports, &out).await;
    // The carves were splits (their journal records the rest table).
    let mut main = backend_conn(0, None).await;
    let splits: Option<i64> = main
        .query_first(format!(
            "SELECT COUNT(*) FROM hscale.operations WHERE db = '{}' AND command LIKE 'ADD_PARTITION%' AND state = 'done' AND detail LIKE '%\nrest = %'",
            scene.db
        ))
        .await
        .unwrap();
    assert!(splits.unwrap_or(0) >= 5, "{splits:?} splits");
    main.disconnect().await.unwrap();
}

/// A proxy whose dictionary is an hour stale is frozen (SIGSTOP) while its
/// clients write rows of value 3, which it routes to the default partition;
/// another proxy moves value 3 to shard1; the frozen proxy is woken and its
/// clients go on writing value 3 at once (their in-flight statements
/// complete first). Nothing it acknowledges may land outside the table the
/// dictionary names, and reads through it must see the moved rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_proxy_cannot_write_to_a_moved_partition() {
    const TEST: &str = "a_paused_proxy";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_paused",
        table: "acct_paused",
    };
    setup_acct(scene).await;
    let stale = serve(3_600_000);
    let admin = serve(1_000);

    let (ws, acked) = writers(
        4,
        scene,
        &[stale.port],
        &mut rng,
        mostly_value_3,
        800,
        (50, 35),
    )
    .await;
    // Precondition: the stale proxy routes value 3 to the default partition.
    let mut c = Conn::new(proxy_opts(stale.port, Some(scene.db)))
        .await
        .unwrap();
    let plan: Vec<(String, String, String)> = c
        .query(format!(
            "HSCALE EXPLAIN SELECT id FROM {} WHERE k = 3",
            scene.table
        ))
        .await
        .unwrap();
    assert_eq!(plan[0].0, "shard0", "{plan:?}");
    assert!(plan[0].2.contains("_default"), "{plan:?}");
    c.disconnect().await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let before_stop = acked.load(Ordering::Relaxed);
    assert!(
        before_stop > 0,
        "no write went through the proxy before it was stopped"
    );
    signal(&stale, libc::SIGSTOP);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let mut failures = run_changes(
        admin.port,
        scene,
        vec![Change::Add("p3", "3", 1), Change::Move("p3", 2)],
        rng.fork(),
        (0, 0),
    )
    .await;
    signal(&stale, libc::SIGCONT);
    let woken = acked.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    stop.store(true, Ordering::Relaxed);
    let mut out = join_writers(hs).await;
    let after = out.acked.saturating_sub(woken);
    eprintln!(
        "{TEST}: {before_stop} operations acknowledged before SIGSTOP, {after} after SIGCONT"
    );
    out.admin.append(&mut failures);
    assert!(
        after >= 20,
        "the woken proxy barely ran: {after} operations"
    );
    assert_invariants(TEST, scene, &[stale.port, admin.port], &out).await;
}

/// The simplest failure: one proxy, four writers inserting (and
/// updating, deleting) while ADD_PARTITION moves the default partition's
/// rows of one value after another to other backends (and one to the same
/// backend).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_proxy_add_partition_under_load_loses_nothing() {
    const TEST: &str = "single_proxy_add_partition";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_single",
        table: "acct_single",
    };
    setup_acct(scene).await;
    let proxy = serve(1_000);
    let ports = [proxy.port];
    let (ws, _acked) = writers(4, scene, &ports, &mut rng, any_key, 6_000, (70, 20)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    let failures = run_changes(
        proxy.port,
        scene,
        vec![
            Change::Add("p3", "3", 1),
            Change::Add("p5", "5", 2),
            Change::Add("p6", "6", 0),
            Change::Add("p7", "7", 2),
            Change::Add("p3", "1", 1),
        ],
        rng.fork(),
        (200, 400),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    stop.store(true, Ordering::Relaxed);
    let mut out = join_writers(hs).await;
    out.admin = failures;
    assert!(
        out.acked > 500,
        "writers barely ran: {} operations",
        out.acked
    );
    assert_invariants(TEST, scene, &ports, &out).await;
}

/// The control: the same writers and checker on three proxies with
/// partitions on every backend and no change while they write. This passes
/// on today's code; it shows the failures above are the changes' and not
/// the checker's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_finds_nothing_wrong_without_partition_changes() {
    const TEST: &str = "control_without_changes";
    let info = cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_control",
        table: "acct_control",
    };
    setup_acct(scene).await;
    let failures = run_changes(
        info.proxy_port,
        scene,
        vec![
            Change::Add("p1", "1", 1),
            Change::Add("p2", "2", 2),
            Change::Add("p3", "3", 0),
            Change::Add("p1", "5", 1),
        ],
        rng.fork(),
        (0, 0),
    )
    .await;
    assert!(failures.is_empty(), "{failures:?}");
    let procs: Vec<ProxyProcess> = (0..3).map(|_| serve(1_000)).collect();
    let ports: Vec<u16> = procs.iter().map(|p| p.port).collect();
    let (ws, _acked) = writers(3, scene, &ports, &mut rng, any_key, 1_000, (40, 45)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_writers(hs).await;
    assert!(
        out.acked > 300,
        "writers barely ran: {} operations",
        out.acked
    );
    assert_invariants(TEST, scene, &ports, &out).await;
}
