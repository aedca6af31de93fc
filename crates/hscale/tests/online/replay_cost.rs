//! Issue 12 item 9: what a change's replays cost the destination. A
//! replay of one captured key must read that key, not the whole copy:
//! MariaDB 10.11 plans `DELETE ... WHERE (a, b) IN ((1, 2))` as a full
//! scan, which made each one-key replay (the tail of every catch-up, and
//! the cutover's) read every copied row while writes waited.
//!
//! Counted, not timed: the destination server's own per-table statistics
//! (`userstat`, `information_schema.TABLE_STATISTICS.ROWS_READ`).

use super::*;

/// Rows the server read from `db`.`table` since `userstat` was switched on.
async fn rows_read(c: &mut Conn, db: &str, table: &str) -> i64 {
    let n: Option<i64> = c
        .query_first(format!(
            "SELECT ROWS_READ FROM information_schema.TABLE_STATISTICS \
             WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{table}'"
        ))
        .await
        .unwrap();
    n.unwrap_or(0)
}

/// ADD_PARTITION copies 20,000 rows to shard1 and pauses; one row of the
/// moving set is updated meanwhile, so the catch-up replays exactly one
/// key. From the end of the copy to the end of the change, the
/// destination's copy is read once as a whole (the verification's sum)
/// plus the replayed key: fewer than 1.5 times its rows, where a replay
/// that scans reads it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_key_replay_reads_one_row_of_the_destination() {
    const ROWS: i64 = 20_000;
    cluster(3);
    let scene = Scene {
        db: "online_replay_cost",
        table: "acct_replay",
    };
    setup_acct(scene).await;
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    let proxy =
        ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "2000")]);
    let default = physical("online_replay_cost.acct_replay", None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq * 8 + 1, 0, 'x' FROM seq_1_to_{ROWS}"
        ))
        .await
        .unwrap();
    let mut b1 = backend_conn(1, None).await;
    b1.query_drop("SET GLOBAL userstat = 1").await.unwrap();
    let port = proxy.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_replay_cost")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_replay_cost.acct_replay', 'p1', '1', 'shard1')")
            .await
    });
    // The copy's table on shard1, once it holds every row.
    let mut copy = None;
    for _ in 0..1000 {
        let t: Option<String> = b1
            .query_first("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'online_replay_cost'")
            .await
            .unwrap();
        if let Some(t) = t {
            let n: Option<i64> = b1
                .query_first(format!("SELECT COUNT(*) FROM online_replay_cost.{t}"))
                .await
                .unwrap_or(None);
            if n == Some(ROWS) {
                copy = Some(t);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let copy = copy.expect("the copy reached shard1");
    let before = rows_read(&mut b1, scene.db, &copy).await;
    // One captured key, while the change pauses after its copy.
    let mut c = Conn::new(proxy_opts(proxy.port, Some(scene.db)))
        .await
        .unwrap();
    c.query_drop("UPDATE acct_replay SET v = 1 WHERE id = 77 AND k = 617")
        .await
        .unwrap();
    let r = change.await.unwrap();
    assert!(r.is_ok(), "ADD_PARTITION: {r:?}");
    let read = rows_read(&mut b1, scene.db, &copy).await - before;
    b1.query_drop("SET GLOBAL userstat = 0").await.unwrap();
    eprintln!("replay_cost: the destination read {read} rows of {ROWS} after the copy");
    assert!(
        read < ROWS * 3 / 2,
        "the destination read {read} rows of a {ROWS}-row copy after it: a replay scanned it"
    );
    // The replayed row arrived.
    let p1 = physical("online_replay_cost.acct_replay", Some("p1")).await;
    assert_eq!(p1, copy);
    let v: Option<i64> = b1
        .query_first(format!(
            "SELECT v FROM online_replay_cost.{p1} WHERE id = 77 AND k = 617"
        ))
        .await
        .unwrap();
    assert_eq!(v, Some(1));
    for c in [direct, b1, c] {
        c.disconnect().await.unwrap();
    }
}
