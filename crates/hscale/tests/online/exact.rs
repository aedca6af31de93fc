//! What a move keeps exactly: every column type, a transaction that meets
//! a moved partition (1412), a cancelled change, a damaged copy repaired
//! by the verification.

use super::*;

/// Six rows of every column type of the `online_types*` tables (`id`, `k`
/// odd), with the edge values a copy can get wrong.
const TYPED_ROWS: &str = "\
             (0, 1, 1.2345678, 1.2345678901234567, 12345678901234567890.0123456789, b'101010101010', X'00FF27', '{\"a\": [1, 2.5, null]}', '0000-00-00', '2024-02-29 23:59:59.123456', '-838:59:59.000', 'b', ST_GeomFromText('POINT(1.5 -2.25)'), X'E9', X'C3A90A'), \
             (1, 3, 16777217, 0.1, -0.0000000001, b'1', '', '[]', '1999-12-31', '1970-01-01 05:30:01.000001', '00:00:00.001', 'c', NULL, '', ''), \
             (2, 5, -3.4e38, 1e-300, 0, b'0', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), \
             (3, 7, NULL, NULL, NULL, NULL, X'', 'null', '2000-01-01', '2038-01-19 03:14:07', '12:34:56', 'a', ST_GeomFromText('POINT(0 0)'), 'x', X'5C4E'), \
             (4, 9, -0.0, -1.5e-45, -99999999999999999999.9999999999, b'111111111111', X'5C0009000A5C4E0D5C', '\"a\\\\tb\\\\\\\\\"', '0000-00-00', '0000-00-00 00:00:00', '838:59:59.999', 'a', ST_GeomFromText('POINT(-0 1e300)'), X'5C4E', X'4E554C4C'), \
             (5, 11, 0, -0.0, 0.0000000001, b'000000000000', X'4E554C4C', '{}', '9999-12-31', '2001-01-01 00:00:00', '-00:00:00.001', NULL, ST_GeomFromText('POINT(0 0)'), X'09', X'5C')";

/// Every column type survives a move exactly: FLOAT (whose own text loses
/// digits), DOUBLE, DECIMAL, BIT, BLOB, JSON, spatial, zero dates,
/// TIMESTAMP, ENUM, an AUTO_INCREMENT 0 and NULLs, through ADD_PARTITION to
/// another backend and MOVE_PARTITION to a third, compared row by row on
/// the backends. The first copy is written as `REPLACE` statements (the
/// destination refuses `LOAD DATA LOCAL INFILE`: `local_infile` off), the
/// second as `LOAD DATA` files, with the bytes a file escapes (tab,
/// newline, backslash), NUL, and the texts `\N` and `NULL` in strings and
/// blobs.
#[tokio::test]
async fn every_column_type_survives_moves_exactly() {
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE online_types").await.unwrap();
    c.query_drop(
        "CREATE TABLE online_types.t (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, \
         f FLOAT NULL, d DOUBLE NULL, dec1 DECIMAL(30,10) NULL, b BIT(12) NULL, bl BLOB NULL, \
         j JSON NULL, dt DATE NULL, ts TIMESTAMP(6) NULL, tm TIME(3) NULL, \
         e ENUM('a','b','c') NULL, g POINT NULL, s VARCHAR(20) CHARACTER SET latin1 NULL, \
         u VARCHAR(20) CHARACTER SET utf8mb4 NULL)",
    )
    .await
    .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('online_types.t', 'k', 't_default', 'shard0', 'MOD(2)')")
        .await
        .unwrap();
    let default = physical("online_types.t", None).await;
    let mut direct = backend_conn(0, Some("online_types")).await;
    direct
        .query_drop("SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO', time_zone = '+05:30'")
        .await
        .unwrap();
    direct
        .query_drop(format!("INSERT INTO {default} VALUES {TYPED_ROWS}"))
        .await
        .unwrap();
    let digest = "SELECT id, CONCAT_WS('|', k, CAST(f AS DOUBLE), d, dec1, HEX(b), HEX(bl), j, dt, ts, tm, e, HEX(ST_AsBinary(g)), HEX(s), HEX(u), \
                  ISNULL(f), ISNULL(d), ISNULL(dec1), ISNULL(b), ISNULL(bl), ISNULL(j), ISNULL(dt), ISNULL(ts), ISNULL(tm), ISNULL(e), ISNULL(g), ISNULL(s), ISNULL(u)) FROM ";
    let before: Vec<(i64, String)> = direct
        .query(format!("{digest} {default} ORDER BY id"))
        .await
        .unwrap();
    assert_eq!(before.len(), 6);
    // The first copy as statements: shard1 refuses local files.
    let mut b1 = backend_conn(1, None).await;
    b1.query_drop("SET GLOBAL local_infile = 0").await.unwrap();
    let added = c
        .query_drop("HSCALE ADD_PARTITION('online_types.t', 'odd', '1', 'shard1')")
        .await;
    b1.query_drop("SET GLOBAL local_infile = 1").await.unwrap();
    added.unwrap();
    b1.query_drop("SET SESSION time_zone = '+05:30'")
        .await
        .unwrap();
    let on_shard1: Vec<(i64, String)> = b1
        .query(format!(
            "{digest} online_types.{} ORDER BY id",
            physical("online_types.t", Some("odd")).await
        ))
        .await
        .unwrap();
    assert_eq!(on_shard1, before, "every value after ADD_PARTITION");
    b1.disconnect().await.unwrap();
    c.query_drop("HSCALE MOVE_PARTITION('online_types.t', 'odd', 'shard2')")
        .await
        .unwrap();
    let odd = physical("online_types.t", Some("odd")).await;
    let mut b2 = backend_conn(2, Some("online_types")).await;
    b2.query_drop("SET SESSION time_zone = '+05:30'")
        .await
        .unwrap();
    let after: Vec<(i64, String)> = b2
        .query(format!("{digest} {odd} ORDER BY id"))
        .await
        .unwrap();
    assert_eq!(
        after, before,
        "every value after ADD_PARTITION and MOVE_PARTITION"
    );
    b2.disconnect().await.unwrap();
    direct.disconnect().await.unwrap();
    c.disconnect().await.unwrap();
}

/// Every column type survives a split and a rebuilt merge exactly: with
/// `[proxy] change_delete_max_rows = 0`, ADD_PARTITION copies the odd rows
/// to another backend and the even ones into a fresh default partition
/// (as `LOAD DATA` files through the proxy), and DROP_PARTITION copies
/// both back into another fresh default partition; the rows are compared
/// value by value with the ones loaded, on the backends.
#[tokio::test]
async fn every_column_type_survives_a_split_and_a_merge_exactly() {
    cluster(3);
    let mut config = cluster_config();
    config.proxy.change_delete_max_rows = 0;
    let proxy = ProxyProcess::start(config);
    let mut c = Conn::new(proxy_opts(proxy.port, None)).await.unwrap();
    c.query_drop("CREATE DATABASE online_types_split")
        .await
        .unwrap();
    c.query_drop(
        "CREATE TABLE online_types_split.t (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL, \
         f FLOAT NULL, d DOUBLE NULL, dec1 DECIMAL(30,10) NULL, b BIT(12) NULL, bl BLOB NULL, \
         j JSON NULL, dt DATE NULL, ts TIMESTAMP(6) NULL, tm TIME(3) NULL, \
         e ENUM('a','b','c') NULL, g POINT NULL, s VARCHAR(20) CHARACTER SET latin1 NULL, \
         u VARCHAR(20) CHARACTER SET utf8mb4 NULL, PRIMARY KEY (id, k))",
    )
    .await
    .unwrap();
    c.query_drop(
        "HSCALE SETUP_TABLE('online_types_split.t', 'k', 't_default', 'shard0', 'MOD(2)')",
    )
    .await
    .unwrap();
    let default = physical("online_types_split.t", None).await;
    let mut direct = backend_conn(0, Some("online_types_split")).await;
    direct
        .query_drop("SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO', time_zone = '+05:30'")
        .await
        .unwrap();
    direct
        .query_drop(format!("INSERT INTO {default} VALUES {TYPED_ROWS}"))
        .await
        .unwrap();
    // The same values under even keys: they stay in the default partition.
    direct
        .query_drop(format!(
            "INSERT INTO {default} SELECT id, k + 1, f, d, dec1, b, bl, j, dt, ts, tm, e, g, s, u FROM {default}"
        ))
        .await
        .unwrap();
    let digest = "SELECT id, k, CONCAT_WS('|', CAST(f AS DOUBLE), d, dec1, HEX(b), HEX(bl), j, dt, ts, tm, e, HEX(ST_AsBinary(g)), HEX(s), HEX(u), \
                  ISNULL(f), ISNULL(d), ISNULL(dec1), ISNULL(b), ISNULL(bl), ISNULL(j), ISNULL(dt), ISNULL(ts), ISNULL(tm), ISNULL(e), ISNULL(g), ISNULL(s), ISNULL(u)) FROM ";
    let rows_of = |table: String, odd: Option<bool>| {
        let which = match odd {
            Some(true) => " WHERE k MOD 2 = 1",
            Some(false) => " WHERE k MOD 2 = 0",
            None => "",
        };
        format!("{digest} online_types_split.{table}{which} ORDER BY id, k")
    };
    let before_odd: Vec<(i64, i64, String)> = direct
        .query(rows_of(default.clone(), Some(true)))
        .await
        .unwrap();
    let before_even: Vec<(i64, i64, String)> = direct
        .query(rows_of(default.clone(), Some(false)))
        .await
        .unwrap();
    let before_all: Vec<(i64, i64, String)> =
        direct.query(rows_of(default.clone(), None)).await.unwrap();
    assert_eq!((before_odd.len(), before_even.len()), (6, 6));
    c.query_drop("HSCALE ADD_PARTITION('online_types_split.t', 'odd', '1', 'shard1')")
        .await
        .unwrap();
    let split_default = physical("online_types_split.t", None).await;
    assert_ne!(
        split_default, default,
        "the default partition was split off"
    );
    let mut b1 = backend_conn(1, None).await;
    b1.query_drop("SET SESSION time_zone = '+05:30'")
        .await
        .unwrap();
    let odd: Vec<(i64, i64, String)> = b1
        .query(rows_of(
            physical("online_types_split.t", Some("odd")).await,
            None,
        ))
        .await
        .unwrap();
    assert_eq!(odd, before_odd, "the moved rows, value by value");
    let even: Vec<(i64, i64, String)> = direct.query(rows_of(split_default, None)).await.unwrap();
    assert_eq!(even, before_even, "the rows that stayed, value by value");
    c.query_drop("HSCALE DROP_PARTITION('online_types_split.t', 'odd')")
        .await
        .unwrap();
    let merged_default = physical("online_types_split.t", None).await;
    let all: Vec<(i64, i64, String)> = direct.query(rows_of(merged_default, None)).await.unwrap();
    assert_eq!(all, before_all, "every row after the merge, value by value");
    let tables: Vec<String> = b1
        .query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'online_types_split'")
        .await
        .unwrap();
    assert!(tables.is_empty(), "shard1 keeps {tables:?}");
    for c in [direct, b1, c] {
        c.disconnect().await.unwrap();
    }
}

/// Inside a transaction a statement routed by an older dictionary is not
/// retried: the proxy rolls the whole transaction back and answers 1412,
/// which drivers retry; nothing of the transaction stays, and the retried
/// transaction commits with the new layout.
#[tokio::test]
async fn a_transaction_that_meets_a_moved_partition_is_rolled_back_with_1412() {
    cluster(3);
    let scene = Scene {
        db: "online_txn",
        table: "acct_txn",
    };
    setup_acct(scene).await;
    let stale = serve(3_600_000);
    let mut s = Conn::new(proxy_opts(stale.port, Some(scene.db)))
        .await
        .unwrap();
    s.query_drop("CREATE TABLE side (id INT PRIMARY KEY)")
        .await
        .unwrap();
    s.query_drop("INSERT INTO acct_txn (id, k, v, note) VALUES (1, 3, 0, 'x')")
        .await
        .unwrap();
    // Another proxy moves value 3 to its own partition (on the same backend,
    // so the retried transaction stays on one backend); `stale` does not
    // reload by itself.
    let mut admin = proxy_conn(Some(scene.db)).await;
    admin
        .query_drop("HSCALE ADD_PARTITION('online_txn.acct_txn', 'p3', '3', 'shard0')")
        .await
        .unwrap();
    s.query_drop("BEGIN").await.unwrap();
    s.query_drop("INSERT INTO side VALUES (1)").await.unwrap();
    let e = s
        .query_drop("UPDATE acct_txn SET v = v + 1 WHERE id = 1 AND k = 3")
        .await
        .expect_err("a stale route inside a transaction");
    assert_eq!(code(&e), 1412, "{e}");
    // Nothing of the transaction stays, and the session is out of it.
    let side: Option<i64> = admin
        .query_first("SELECT COUNT(*) FROM side")
        .await
        .unwrap();
    assert_eq!(side, Some(0));
    let v: Option<i64> = s
        .query_first("SELECT v FROM acct_txn WHERE id = 1 AND k = 3")
        .await
        .unwrap();
    assert_eq!(v, Some(0));
    // The retried transaction commits, with the row in its new home.
    s.query_drop("BEGIN").await.unwrap();
    s.query_drop("INSERT INTO side VALUES (1)").await.unwrap();
    s.query_drop("UPDATE acct_txn SET v = v + 1 WHERE id = 1 AND k = 3")
        .await
        .unwrap();
    s.query_drop("COMMIT").await.unwrap();
    let p3 = physical("online_txn.acct_txn", Some("p3")).await;
    let mut b1 = backend_conn(0, Some(scene.db)).await;
    let v: Option<i64> = b1
        .query_first(format!("SELECT v FROM {p3} WHERE id = 1"))
        .await
        .unwrap();
    assert_eq!(v, Some(1));
    let side: Option<i64> = admin
        .query_first("SELECT COUNT(*) FROM side")
        .await
        .unwrap();
    assert_eq!(side, Some(1));
    b1.disconnect().await.unwrap();
    s.disconnect().await.unwrap();
    admin.disconnect().await.unwrap();
}

/// `HSCALE CANCEL_OPERATION`, through another proxy than the change's
/// owner, stops an ADD_PARTITION in its copy while writers go on through
/// both proxies: the change's client gets 1317, the journal says
/// 'cancelled', no trigger, changelog or copy is left on any backend, the
/// dictionary is as before, and every acknowledged write is where it was.
/// A cancel of an operation that ended, or of none, is refused; the change
/// then runs again to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_change_leaves_everything_as_before() {
    const TEST: &str = "cancel_operation";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_cancel",
        table: "acct_cancel",
    };
    setup_acct(scene).await;
    let owner = serve(1_000);
    let other = serve(200);
    let ports = [owner.port, other.port];
    // Bulk rows of value 1 (ids below every writer's) make the copy long
    // enough to be cancelled in; they are removed before the check.
    let default = physical("online_cancel.acct_cancel", None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq * 8 + 1, 0, 'bulk' FROM seq_1_to_300000"
        ))
        .await
        .unwrap();
    let (ws, _acked) = writers(4, scene, &ports, &mut rng, any_key, 2_000, (70, 20)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    let port = owner.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_cancel")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_cancel.acct_cancel', 'p1', '1', 'shard1')")
            .await
    });
    let triggers =
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'online_cancel'";
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
    let op: u64 = direct
        .query_first(
            "SELECT id FROM hscale.operations WHERE db = 'online_cancel' AND active IS NOT NULL",
        )
        .await
        .unwrap()
        .expect("the running operation");
    let mut o = Conn::new(proxy_opts(other.port, Some(scene.db)))
        .await
        .unwrap();
    let t = Instant::now();
    let info = o
        .query_iter(format!("HSCALE CANCEL_OPERATION({op})"))
        .await
        .map(|r| r.info().to_string());
    let ms = t.elapsed().as_millis();
    eprintln!("{TEST}: CANCEL_OPERATION({op}): {info:?} after {ms} ms");
    assert!(info.is_ok(), "cancel answered {info:?}");
    assert!(ms < 10_000, "the cancel took {ms} ms");
    match change.await.unwrap() {
        Err(mysql_async::Error::Server(e)) => assert_eq!(e.code, 1317, "{e:?}"),
        other => panic!("the cancelled change answered {other:?}"),
    }
    let state: Option<String> = direct
        .query_first(format!(
            "SELECT state FROM hscale.operations WHERE id = {op}"
        ))
        .await
        .unwrap();
    assert_eq!(state.as_deref(), Some("cancelled"));
    let n: Option<i64> = direct.query_first(triggers).await.unwrap();
    assert_eq!(n, Some(0), "capture triggers dropped");
    for b in 0..3 {
        let mut c = backend_conn(b, None).await;
        let left: Vec<String> = c
            .query(format!("SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES WHERE (TABLE_SCHEMA = 'hscale' AND TABLE_NAME = 'changes_{op}') OR (TABLE_SCHEMA = 'online_cancel' AND TABLE_NAME <> '{default}')"))
            .await
            .unwrap();
        assert!(left.is_empty(), "backend {b} keeps {left:?}");
        c.disconnect().await.unwrap();
    }
    let parts = physical_tables("online_cancel.acct_cancel").await;
    assert_eq!(parts.len(), 1, "only the default partition: {parts:?}");
    // Writers go on a little after the cancel, then every write is checked.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_writers(hs).await;
    let bulk: Option<i64> = direct
        .query_first(format!("SELECT COUNT(*) FROM {default} WHERE id <= 300000"))
        .await
        .unwrap();
    assert_eq!(
        bulk,
        Some(300_000),
        "every bulk row still in the default partition"
    );
    direct
        .query_drop(format!("DELETE FROM {default} WHERE id <= 300000"))
        .await
        .unwrap();
    assert!(out.acked > 200, "writers barely ran: {}", out.acked);
    assert_invariants(TEST, scene, &ports, &out).await;
    // Nothing to cancel: an ended operation, an unknown one.
    for id in [op, 999_999_999] {
        let r = o.query_drop(format!("HSCALE CANCEL_OPERATION({id})")).await;
        assert!(
            matches!(&r, Err(mysql_async::Error::Server(e)) if e.code == 1210),
            "cancel of {id}: {r:?}"
        );
    }
    // The change runs again, to its end.
    o.query_drop("HSCALE ADD_PARTITION('online_cancel.acct_cancel', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    assert_eq!(physical_tables("online_cancel.acct_cancel").await.len(), 2);
    direct.disconnect().await.unwrap();
    o.disconnect().await.unwrap();
}

/// Verification before the cutover: the copy of an ADD_PARTITION is
/// damaged on the destination while the change pauses after its copy (a
/// row deleted, values changed, NULL made the text 'NULL', a row that is
/// not in the source added), with writers going on. The change finds the
/// ranges that differ and copies them again, so the partition holds exactly
/// the source's rows; the journal counts the ranges. A move of the same
/// partition under the same writers then finds nothing to repair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_copy_is_repaired_before_the_cutover() {
    const TEST: &str = "verify_copy";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_verify",
        table: "acct_verify",
    };
    setup_acct(scene).await;
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    // The 20,000 moving rows are deleted from the default partition in the
    // cutover, not split off (the copy verified is the moving rows' alone).
    config.proxy.change_delete_max_rows = 1_000_000;
    let proxy =
        ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "3000")]);
    let ports = [proxy.port];
    let default = physical("online_verify.acct_verify", None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq * 8 + 1, seq, IF(seq = 8, NULL, 'x') FROM seq_1_to_20000"
        ))
        .await
        .unwrap();
    let bulk = "SELECT id, k, v, note FROM {t} WHERE id <= 30000 ORDER BY id";
    let before: Vec<(i64, i64, i64, Option<String>)> =
        direct.query(bulk.replace("{t}", &default)).await.unwrap();
    let (ws, _acked) = writers(2, scene, &ports, &mut rng, any_key, 1_000, (70, 20)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    let port = proxy.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_verify")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_verify.acct_verify', 'p1', '1', 'shard1')")
            .await
    });
    // The copy's table on shard1, once it holds every bulk row.
    let mut b1 = backend_conn(1, None).await;
    let mut copy = None;
    for _ in 0..500 {
        let t: Option<String> = b1
            .query_first("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'online_verify'")
            .await
            .unwrap();
        if let Some(t) = t.map(|t| format!("online_verify.{t}")) {
            let n: Option<i64> = b1
                .query_first(format!("SELECT COUNT(*) FROM {t} WHERE id <= 20000"))
                .await
                .unwrap_or(None);
            if n == Some(20_000) {
                copy = Some(t);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let copy = copy.expect("the copy reached shard1");
    b1.query_drop(format!(
        "DELETE FROM {copy} WHERE id = 5; UPDATE {copy} SET v = v + 100 WHERE id = 6; \
         UPDATE {copy} SET note = NULL WHERE id = 7; UPDATE {copy} SET note = 'NULL' WHERE id = 8; \
         INSERT INTO {copy} (id, k, v, note) VALUES (20001, 1, 0, 'not in the source')"
    ))
    .await
    .unwrap();
    let r = change.await.unwrap();
    assert!(r.is_ok(), "ADD_PARTITION: {r:?}");
    let p1 = physical("online_verify.acct_verify", Some("p1")).await;
    let after: Vec<(i64, i64, i64, Option<String>)> = b1
        .query(bulk.replace("{t}", &format!("online_verify.{p1}")))
        .await
        .unwrap();
    assert!(
        after == before,
        "the partition holds other rows than the source had"
    );
    let journal = "SELECT ranges_verified, ranges_recopied FROM hscale.operations WHERE db = 'online_verify' ORDER BY id DESC LIMIT 1";
    let (verified, recopied): (u32, u32) = direct.query_first(journal).await.unwrap().unwrap();
    eprintln!("{TEST}: damaged copy: {verified} ranges verified, {recopied} copied again");
    assert_eq!(verified, 256);
    assert!(
        (1..=5).contains(&recopied),
        "{recopied} ranges copied again"
    );
    // A move under the same writers: nothing differs.
    let mut c = Conn::new(proxy_opts(proxy.port, Some(scene.db)))
        .await
        .unwrap();
    c.query_drop("HSCALE MOVE_PARTITION('online_verify.acct_verify', 'p1', 'shard2')")
        .await
        .unwrap();
    let (verified, recopied): (u32, u32) = direct.query_first(journal).await.unwrap().unwrap();
    assert_eq!(
        (verified, recopied),
        (256, 0),
        "a clean move copies nothing again"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_writers(hs).await;
    let p1 = physical("online_verify.acct_verify", Some("p1")).await;
    let mut b2 = backend_conn(2, None).await;
    b2.query_drop(format!("DELETE FROM online_verify.{p1} WHERE id <= 30000"))
        .await
        .unwrap();
    assert!(out.acked > 100, "writers barely ran: {}", out.acked);
    assert_invariants(TEST, scene, &ports, &out).await;
    for c in [direct, b1, b2, c] {
        c.disconnect().await.unwrap();
    }
}

/// The verification's row text takes a `NOT NULL` CHAR or VARCHAR column as
/// its length and its bytes (`ddl::row_text`), not `QUOTE`'s escaped copy:
/// the copy of such columns is damaged on the destination while the change
/// pauses after its copy (a trailing space added; `a4`, `b,c` made `a4,b`,
/// `c`, which read the same joined by commas; a CHAR shortened; a letter's
/// case changed under a case-insensitive collation), and the change copies
/// those ranges again, so the partition holds exactly the source's bytes.
#[tokio::test]
async fn damaged_text_columns_are_found_by_the_verification() {
    cluster(3);
    let (db, t) = ("online_vtext", "vt");
    let mut c = proxy_conn(None).await;
    c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    c.query_drop(format!(
        "CREATE TABLE {db}.{t} (id BIGINT NOT NULL, k INT NOT NULL, a VARCHAR(20) NOT NULL, \
         b VARCHAR(20) NOT NULL, code CHAR(4) NOT NULL, PRIMARY KEY (id, k))"
    ))
    .await
    .unwrap();
    c.query_drop(format!(
        "HSCALE SETUP_TABLE('{db}.{t}', 'k', '{t}_default', 'shard0', 'MOD({MODULUS})')"
    ))
    .await
    .unwrap();
    let default = physical("online_vtext.vt", None).await;
    let mut direct = backend_conn(0, Some(db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} SELECT seq, seq * 8 + 1, CONCAT('a', seq), 'b,c', 'Code' FROM seq_1_to_2000"
        ))
        .await
        .unwrap();
    let rows = "SELECT id, k, HEX(a), HEX(b), HEX(code) FROM {t} ORDER BY id";
    type Row = (i64, i64, String, String, String);
    let before: Vec<Row> = direct.query(rows.replace("{t}", &default)).await.unwrap();
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    let proxy =
        ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "2000")]);
    let port = proxy.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_vtext")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_vtext.vt', 'p1', '1', 'shard1')")
            .await
    });
    let mut b1 = backend_conn(1, None).await;
    let mut copy = None;
    for _ in 0..500 {
        let found: Option<String> = b1
            .query_first("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'online_vtext'")
            .await
            .unwrap();
        if let Some(name) = found.map(|n| format!("online_vtext.{n}")) {
            let n: Option<i64> = b1
                .query_first(format!("SELECT COUNT(*) FROM {name}"))
                .await
                .unwrap_or(None);
            if n == Some(2_000) {
                copy = Some(name);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let copy = copy.expect("the copy reached shard1");
    b1.query_drop(format!(
        "UPDATE {copy} SET a = CONCAT(a, ' ') WHERE id = 3; \
         UPDATE {copy} SET a = CONCAT(a, ',b'), b = 'c' WHERE id = 4; \
         UPDATE {copy} SET code = 'Cod' WHERE id = 5; \
         UPDATE {copy} SET code = 'CODE' WHERE id = 6"
    ))
    .await
    .unwrap();
    let r = change.await.unwrap();
    assert!(r.is_ok(), "ADD_PARTITION: {r:?}");
    let p1 = physical("online_vtext.vt", Some("p1")).await;
    let after: Vec<Row> = b1
        .query(rows.replace("{t}", &format!("online_vtext.{p1}")))
        .await
        .unwrap();
    assert!(
        after == before,
        "the partition holds other bytes than the source had"
    );
    let journal = "SELECT ranges_verified, ranges_recopied FROM hscale.operations WHERE db = 'online_vtext' ORDER BY id DESC LIMIT 1";
    let (verified, recopied): (u32, u32) = direct.query_first(journal).await.unwrap().unwrap();
    assert_eq!(verified, 256);
    assert!(
        (1..=4).contains(&recopied),
        "{recopied} ranges copied again"
    );
    for c in [direct, b1, c] {
        c.disconnect().await.unwrap();
    }
}

/// A row whose key leaves one source of a merge for the other while both
/// are captured is found once, with its last value. The table's key is an
/// AUTO_INCREMENT id alone (the sequence keeps it unique), so a client
/// moves a row between partitions by deleting it and inserting the same
/// id with another partition value; DROP_PARTITION with
/// `change_delete_max_rows = 0` copies the dropped partition's rows and the
/// default partition's into one fresh table, each source replayed on its
/// own. A replay that deleted the id from the shared table without
/// looking at which source's rows it holds removed the row the other
/// source had just replayed there.
#[tokio::test]
async fn a_key_that_moves_between_the_sources_of_a_merge_is_kept() {
    cluster(3);
    let mut setup = proxy_conn(None).await;
    setup
        .query_drop("CREATE DATABASE online_merge_keys")
        .await
        .unwrap();
    setup
        .query_drop(
            "CREATE TABLE online_merge_keys.t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, \
             k INT NOT NULL, v VARCHAR(20) NOT NULL)",
        )
        .await
        .unwrap();
    setup
        .query_drop(
            "HSCALE SETUP_TABLE('online_merge_keys.t', 'k', 't_default', 'shard0', 'MOD(8)')",
        )
        .await
        .unwrap();
    setup
        .query_drop("HSCALE ADD_PARTITION('online_merge_keys.t', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    // Ids 1-800: k = id, so ids 1, 9, 17, ... are in p1 (shard1).
    let values: Vec<String> = (1..=800).map(|i| format!("({i}, {i}, 'x')")).collect();
    setup
        .query_drop(format!(
            "INSERT INTO online_merge_keys.t (id, k, v) VALUES {}",
            values.join(", ")
        ))
        .await
        .unwrap();
    let owner = change_owner(true, &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "3000")]);
    let change = spawn_admin(
        owner.port,
        "online_merge_keys",
        "HSCALE DROP_PARTITION('online_merge_keys.t', 'p1')".into(),
    );
    // Once the second move (the default partition's rows) captures its
    // source: the first's capture is in place since before.
    let mut direct = backend_conn(0, None).await;
    let mut captured = false;
    for _ in 0..1000 {
        let n: Option<i64> = direct
            .query_first("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'online_merge_keys' AND TRIGGER_NAME LIKE 'hscale\\_%m\\_%'")
            .await
            .unwrap();
        if n == Some(3) {
            captured = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(captured, "the default partition's move captured its source");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Id 9 leaves p1 for the default partition; id 10 the other way.
    setup
        .query_drop("DELETE FROM online_merge_keys.t WHERE id = 9")
        .await
        .unwrap();
    setup
        .query_drop("INSERT INTO online_merge_keys.t (id, k, v) VALUES (9, 2, 'to default')")
        .await
        .unwrap();
    setup
        .query_drop("DELETE FROM online_merge_keys.t WHERE id = 10")
        .await
        .unwrap();
    setup
        .query_drop("INSERT INTO online_merge_keys.t (id, k, v) VALUES (10, 1, 'to p1')")
        .await
        .unwrap();
    let r = change.await.unwrap();
    assert!(r.is_ok(), "DROP_PARTITION: {r:?}");
    let moved: Vec<(i64, i64, String)> = setup
        .query("SELECT id, k, v FROM online_merge_keys.t WHERE id IN (9, 10) ORDER BY id")
        .await
        .unwrap();
    assert_eq!(
        moved,
        vec![
            (9, 2, "to default".to_string()),
            (10, 1, "to p1".to_string())
        ]
    );
    let n: Option<i64> = setup
        .query_first("SELECT COUNT(*) FROM online_merge_keys.t")
        .await
        .unwrap();
    assert_eq!(n, Some(800));
    for c in [direct, setup] {
        c.disconnect().await.unwrap();
    }
}
