//! Auto-partitioning races, retired tables kept in another database, and a
//! prepared INSERT that creates its partition.

use super::*;

/// Auto-partitioning: with `HSCALE AUTO_PARTITION(..., 'ROUND_ROBIN')`, six
/// writers through three proxies write every value of `MOD(8)` at once, so
/// the proxies race to create the same partitions. Each value gets exactly
/// one partition (named from the value, on the backends in turn), every
/// creation is one journal operation that ended 'done', no write failed or
/// waited for another value's creation beyond the default partition's
/// cutover, and every acknowledged row is where the dictionary says.
///
/// Meanwhile a fourth proxy toggles auto-partitioning of another table as
/// fast as it can ([`churn_dictionary`]), so the one dictionary version
/// moves on while the default partition is in its cutover: a write that
/// met the renamed default used to plan again on any newer version, meet
/// the same missing table, and give up with 1146 after eight tries (2 of 2
/// runs failed so); the fence now waits for a dictionary that no longer
/// names the table (`partition::refresh::await_newer_dictionary`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_partitioning_races_from_three_proxies_create_each_partition_once() {
    const TEST: &str = "auto_partitioning";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_auto",
        table: "acct_auto",
    };
    setup_acct(scene).await;
    let proxies = [serve(300), serve(300), serve(300)];
    let ports: Vec<u16> = proxies.iter().map(|p| p.port).collect();
    let mut c = Conn::new(proxy_opts(ports[0], Some(scene.db)))
        .await
        .unwrap();
    let r = c
        .query_drop("HSCALE AUTO_PARTITION('online_auto.acct_auto', 'fewest')")
        .await;
    assert!(r.is_err(), "an unknown placement is refused");
    c.query_drop("HSCALE AUTO_PARTITION('online_auto.acct_auto', 'ROUND_ROBIN')")
        .await
        .unwrap();
    // Let every proxy learn of it before the writers start.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (ws, _acked) = writers(6, scene, &ports, &mut rng, any_key, 300, (60, 20)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let churn = churn_dictionary(&stop).await;
    let hs = spawn_writers(ws, &stop);
    let mut parts = BTreeMap::new();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(90) {
        parts = physical_tables("online_auto.acct_auto")
            .await
            .into_iter()
            .collect();
        if parts.len() == 9 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "{TEST}: {} partitions after {} ms: {parts:?}",
        parts.len(),
        t.elapsed().as_millis()
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_writers(hs).await;
    let churned = churn.await.unwrap();
    assert!(churned > 20, "the dictionary barely churned: {churned}");
    assert!(out.acked > 300, "writers barely ran: {}", out.acked);
    assert_invariants(TEST, scene, &ports, &out).await;
    // One partition per value, named from it, on the backends in turn.
    assert_eq!(parts.len(), 9, "the default and 8 partitions: {parts:?}");
    let mut per_backend = [0usize; 3];
    for v in 0..8 {
        let p = parts
            .get(&format!("auto_{v}"))
            .unwrap_or_else(|| panic!("no partition auto_{v}: {parts:?}"));
        per_backend[p.0] += 1;
    }
    assert!(
        per_backend.iter().all(|&n| n >= 2),
        "placement {per_backend:?}"
    );
    let mut direct = backend_conn(0, None).await;
    let ops: Vec<(String, String)> = direct
        .query("SELECT command, state FROM hscale.operations WHERE db = 'online_auto' AND command LIKE 'ADD_PARTITION%' ORDER BY id")
        .await
        .unwrap();
    let done = ops.iter().filter(|o| o.1 == "done").count();
    assert_eq!(done, 8, "one creation per value: {ops:?}");
    assert!(ops.iter().all(|o| o.1 == "done"), "{ops:?}");
    // Off: a new value stays in the default partition.
    c.query_drop("HSCALE AUTO_PARTITION('online_auto.acct_auto', 'OFF')")
        .await
        .unwrap();
    direct.disconnect().await.unwrap();
    c.disconnect().await.unwrap();
}

/// `[proxy] keep_retired_db`: the table a MOVE_PARTITION retires is moved
/// to that database on its backend, rows and all, instead of dropped; the
/// application's database keeps only the tables the dictionary names.
#[tokio::test]
async fn retired_tables_can_be_kept_in_another_database() {
    cluster(3);
    let scene = Scene {
        db: "online_keep",
        table: "acct_keep",
    };
    setup_acct(scene).await;
    let mut config = cluster_config();
    config.proxy.keep_retired_db = "hscale_retired_keep".into();
    let proxy = ProxyProcess::start(config);
    let mut c = Conn::new(proxy_opts(proxy.port, Some(scene.db)))
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('online_keep.acct_keep', 'p2', '2', 'shard1')")
        .await
        .unwrap();
    c.query_drop(
        "INSERT INTO acct_keep (id, k, v, note) VALUES (1, 2, 10, 'a'), (2, 10, 20, 'b'), (3, 3, 30, 'c')",
    )
    .await
    .unwrap();
    let before = physical("online_keep.acct_keep", Some("p2")).await;
    c.query_drop("HSCALE MOVE_PARTITION('online_keep.acct_keep', 'p2', 'shard2')")
        .await
        .unwrap();
    let after = physical_tables("online_keep.acct_keep").await;
    assert_eq!(after["p2"].0, 2, "{after:?}");
    let mut b1 = backend_conn(1, None).await;
    let kept: Vec<String> = b1
        .query("SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ('online_keep', 'hscale_retired_keep')")
        .await
        .unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(
        kept[0].starts_with(&format!("hscale_retired_keep.{before}_retired_g")),
        "{kept:?}"
    );
    let rows: Option<i64> = b1
        .query_first(format!("SELECT SUM(v) FROM {}", kept[0]))
        .await
        .unwrap();
    assert_eq!(rows, Some(30), "the retired table keeps its rows");
    let sum: Option<i64> = c
        .query_first("SELECT SUM(v) FROM acct_keep WHERE k IN (2, 10)")
        .await
        .unwrap();
    assert_eq!(sum, Some(30));
    b1.disconnect().await.unwrap();
    c.disconnect().await.unwrap();
}

/// Auto-partitioning by FEWEST_ROWS from a prepared INSERT (binary
/// protocol): the new value's partition goes to a backend that holds none
/// of the table's rows, and the row is found in it.
#[tokio::test]
async fn a_prepared_insert_creates_its_partition_on_the_emptiest_backend() {
    cluster(3);
    let scene = Scene {
        db: "online_auto2",
        table: "acct_auto2",
    };
    setup_acct(scene).await;
    let default = physical("online_auto2.acct_auto2", None).await;
    let mut b0 = backend_conn(0, Some(scene.db)).await;
    b0.query_drop(format!(
        "INSERT INTO {default} (id, k, v, note) SELECT seq, 3, 0, 'x' FROM seq_1_to_2000"
    ))
    .await
    .unwrap();
    b0.query_drop(format!("ANALYZE TABLE {default}"))
        .await
        .unwrap();
    let proxy = serve(300);
    let mut c = Conn::new(proxy_opts(proxy.port, Some(scene.db)))
        .await
        .unwrap();
    c.query_drop("HSCALE AUTO_PARTITION('acct_auto2', 'FEWEST_ROWS')")
        .await
        .unwrap();
    c.exec_drop(
        "INSERT INTO acct_auto2 (id, k, v, note) VALUES (?, ?, ?, ?)",
        (5000, 5, 7, "prepared"),
    )
    .await
    .unwrap();
    let t = Instant::now();
    let parts = loop {
        let parts = physical_tables("online_auto2.acct_auto2").await;
        if parts.contains_key("auto_5") || t.elapsed() > Duration::from_secs(20) {
            break parts;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let p = parts.get("auto_5").unwrap_or_else(|| panic!("{parts:?}"));
    assert_ne!(p.0, 0, "shard0 holds the table's rows: {parts:?}");
    let mut b = backend_conn(p.0, Some(scene.db)).await;
    let v: Option<i64> = b
        .query_first(format!("SELECT v FROM {} WHERE id = 5000", p.1))
        .await
        .unwrap();
    assert_eq!(v, Some(7));
    let v: Option<i64> = c
        .exec_first("SELECT v FROM acct_auto2 WHERE k = ? AND id = ?", (5, 5000))
        .await
        .unwrap();
    assert_eq!(v, Some(7));
    for c in [b0, b, c] {
        c.disconnect().await.unwrap();
    }
}

/// Every row written to a value without a partition is found by key, text
/// and prepared, through the proxy that wrote it and through another one,
/// at once after its partition exists, while another proxy churns the
/// dictionary (`churn_dictionary`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_new_partitions_are_found_at_once_through_every_proxy() {
    cluster(3);
    let scene = Scene {
        db: "online_auto3",
        table: "acct_auto3",
    };
    setup_acct(scene).await;
    let proxies = [serve(300), serve(300)];
    let mut a = Conn::new(proxy_opts(proxies[0].port, Some(scene.db)))
        .await
        .unwrap();
    let mut b = Conn::new(proxy_opts(proxies[1].port, Some(scene.db)))
        .await
        .unwrap();
    a.query_drop("HSCALE AUTO_PARTITION('acct_auto3', 'FEWEST_ROWS')")
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let churn = churn_dictionary_of("online_auto3_churn", &stop).await;
    let mut missing = Vec::new();
    for k in 8..40i64 {
        // MOD(8): values 0..7; keys 8.. name each value once more, so the
        // first 8 create partitions and the rest land in existing ones.
        let id = 9000 + k;
        a.exec_drop(
            "INSERT INTO acct_auto3 (id, k, v, note) VALUES (?, ?, ?, ?)",
            (id, k, k, "new"),
        )
        .await
        .unwrap();
        let value = format!("auto_{}", k % 8);
        let t = Instant::now();
        while !physical_tables("online_auto3.acct_auto3")
            .await
            .contains_key(&value)
        {
            assert!(t.elapsed() < Duration::from_secs(20), "no {value}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for (via, c) in [("a", &mut a), ("b", &mut b)] {
            let prepared: Option<i64> = c
                .exec_first("SELECT v FROM acct_auto3 WHERE k = ? AND id = ?", (k, id))
                .await
                .unwrap();
            let text: Option<i64> = c
                .query_first(format!(
                    "SELECT v FROM acct_auto3 WHERE k = {k} AND id = {id}"
                ))
                .await
                .unwrap();
            if prepared != Some(k) || text != Some(k) {
                missing.push(format!(
                    "k={k} via {via}: prepared {prepared:?}, text {text:?}"
                ));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let churned = churn.await.unwrap();
    assert!(
        missing.is_empty(),
        "rows not found ({churned} churns): {missing:?}"
    );
    for c in [a, b] {
        c.disconnect().await.unwrap();
    }
}
