//! Issue 12 items 6 and 9: the verification sums the destination in
//! several scans at once (`admin/verify.rs`: ranges of the first primary-key
//! column, each on a connection whose snapshot is taken before any replay),
//! and still finds every damaged row, in any range and outside the keys'
//! span, while replays of later writes run beside the scans.
//!
//! Counted, not timed: which connections ran the sums, from the
//! destination server's general log.

use super::*;

/// ADD_PARTITION copies 40,000 rows to shard1 and pauses. Meanwhile the
/// copy is damaged in each of the four ranges its scans take and outside
/// them (a row deleted, values changed, NULL made 'NULL', rows that are not
/// in the source added below the least key and above the greatest), and 50
/// rows are updated through the proxy, so replays rewrite the destination
/// while it is summed. The change copies again exactly the ranges of the
/// damaged keys (no more: every scan read the copy as it was before any
/// replay), the partition holds exactly the source's rows, and the
/// destination was summed by four statements on four connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_destination_is_summed_in_several_scans_and_damage_is_found_in_each() {
    const ROWS: i64 = 40_000;
    cluster(3);
    let scene = Scene {
        db: "online_vscans",
        table: "acct_vscans",
    };
    setup_acct(scene).await;
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    let proxy =
        ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "4000")]);
    let default = physical("online_vscans.acct_vscans", None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq * 8 + 1, seq, 'x' FROM seq_1_to_{ROWS}"
        ))
        .await
        .unwrap();
    type Row = (i64, i64, i64, Option<String>);
    let rows = "SELECT id, k, v, note FROM {t} ORDER BY id";
    let mut expected: Vec<Row> = direct.query(rows.replace("{t}", &default)).await.unwrap();
    let mut b1 = backend_conn(1, None).await;
    b1.query_drop("SET GLOBAL log_output = 'TABLE'")
        .await
        .unwrap();
    b1.query_drop("TRUNCATE TABLE mysql.general_log")
        .await
        .unwrap();
    b1.query_drop("SET GLOBAL general_log = 1").await.unwrap();
    let port = proxy.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_vscans")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_vscans.acct_vscans', 'p1', '1', 'shard1')")
            .await
    });
    // The copy's table on shard1, once it holds every row.
    let mut copy = None;
    for _ in 0..1000 {
        let t: Option<String> = b1
            .query_first("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'online_vscans'")
            .await
            .unwrap();
        if let Some(t) = t.map(|t| format!("online_vscans.{t}")) {
            let n: Option<i64> = b1
                .query_first(format!("SELECT COUNT(*) FROM {t}"))
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
    // The scans' ranges of id, read after this damage (least -3, greatest
    // 40,500): below 10,123, to 20,249, to 30,375, and from 30,375; each
    // holds a damaged row.
    b1.query_drop(format!(
        "DELETE FROM {copy} WHERE id = 5; UPDATE {copy} SET v = v + 100 WHERE id = 12000; \
         UPDATE {copy} SET note = 'NULL' WHERE id = 25000; UPDATE {copy} SET note = NULL WHERE id = 39999; \
         INSERT INTO {copy} (id, k, v, note) VALUES (-3, 1, 0, 'not in the source'), (40500, 1, 0, 'nor this')"
    ))
    .await
    .unwrap();
    let damaged =
        "SELECT 5 AS a, 41 AS b UNION ALL SELECT 12000, 96001 UNION ALL SELECT 25000, 200001 \
                   UNION ALL SELECT 39999, 319993 UNION ALL SELECT -3, 1 UNION ALL SELECT 40500, 1";
    // Later writes, replayed while the destination is summed.
    let mut c = Conn::new(proxy_opts(proxy.port, Some(scene.db)))
        .await
        .unwrap();
    for id in (100..40_000).step_by(800) {
        c.query_drop(format!(
            "UPDATE acct_vscans SET v = v + 1000000 WHERE id = {id} AND k = {}",
            id * 8 + 1
        ))
        .await
        .unwrap();
        expected[id as usize - 1].2 += 1_000_000;
    }
    let r = change.await.unwrap();
    b1.query_drop("SET GLOBAL general_log = 0").await.unwrap();
    assert!(r.is_ok(), "ADD_PARTITION: {r:?}");
    let p1 = physical("online_vscans.acct_vscans", Some("p1")).await;
    let after: Vec<Row> = b1
        .query(rows.replace("{t}", &format!("online_vscans.{p1}")))
        .await
        .unwrap();
    assert_eq!(after.len(), expected.len());
    assert!(
        after == expected,
        "the partition holds other rows than the source had"
    );
    // Exactly the damaged keys' ranges (buckets of the key's CRC32) were
    // copied again.
    let buckets: Option<u32> = b1
        .query_first(format!(
            "SELECT COUNT(DISTINCT CRC32(CONCAT_WS(',', a, b)) % 256) FROM ({damaged}) AS x"
        ))
        .await
        .unwrap();
    let journal = "SELECT ranges_verified, ranges_recopied FROM hscale.operations WHERE db = 'online_vscans' ORDER BY id DESC LIMIT 1";
    let (verified, recopied): (u32, u32) = direct.query_first(journal).await.unwrap().unwrap();
    eprintln!(
        "verify_scans: {verified} ranges verified, {recopied} copied again, {buckets:?} damaged"
    );
    assert_eq!(verified, 256);
    assert_eq!(Some(recopied), buckets, "ranges copied again");
    // The destination's whole-side sums: one per scan, each on its own
    // connection.
    let copy_name = copy.rsplit('.').next().unwrap().to_string();
    let sums: Vec<(u64, String)> = b1
        .query(
            "SELECT thread_id, CONVERT(argument USING utf8mb4) FROM mysql.general_log \
             WHERE command_type = 'Query' AND argument LIKE 'SELECT 0, COUNT(*), SUM(CRC32(%'",
        )
        .await
        .unwrap();
    let sums: Vec<(u64, String)> = sums
        .into_iter()
        .filter(|(_, q)| q.contains(&copy_name))
        .collect();
    let threads: BTreeSet<u64> = sums.iter().map(|(t, _)| *t).collect();
    assert_eq!(sums.len(), 4, "the destination's sums: {sums:?}");
    assert_eq!(threads.len(), 4, "the destination's sums: {sums:?}");
    b1.query_drop("TRUNCATE TABLE mysql.general_log")
        .await
        .unwrap();
    for c in [direct, b1, c] {
        c.disconnect().await.unwrap();
    }
}
