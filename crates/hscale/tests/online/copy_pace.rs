//! `[proxy] change_copy_rows_per_s`: a change copies no faster than that.
//! A lower bound only (the pacing sleeps until each statement's rows are
//! due), never an upper one, so a slow machine cannot fail it.

use super::*;

/// A move of 3,000 rows at 2,000 rows/s: the copy's reader waits after
/// each statement of 500 rows until they are due, the sixth at 1.5 s, so
/// the command takes at least that long (a few tenths of a second
/// unpaced); and every row arrives.
#[tokio::test]
async fn a_paced_copy_takes_at_least_its_rows_over_the_rate() {
    cluster(3);
    let (db, t) = ("online_pace", "pt");
    let mut c = proxy_conn(None).await;
    c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    c.query_drop(format!(
        "CREATE TABLE {db}.{t} (id BIGINT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))"
    ))
    .await
    .unwrap();
    c.query_drop(format!(
        "HSCALE SETUP_TABLE('{db}.{t}', 'k', '{t}_default', 'shard0', 'MOD({MODULUS})')"
    ))
    .await
    .unwrap();
    c.query_drop(format!(
        "HSCALE ADD_PARTITION('{db}.{t}', 'p1', '1', 'shard0')"
    ))
    .await
    .unwrap();
    let p1 = physical("online_pace.pt", Some("p1")).await;
    let mut direct = backend_conn(0, Some(db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {p1} SELECT seq, seq * 8 + 1 FROM seq_1_to_3000"
        ))
        .await
        .unwrap();
    let mut config = cluster_config();
    config.proxy.change_copy_rows_per_s = 2_000;
    let proxy = ProxyProcess::start(config);
    let mut paced = Conn::new(proxy_opts(proxy.port, Some(db))).await.unwrap();
    let answer: (u64, String, u64, String) = paced
        .query_first(format!("HSCALE MOVE_PARTITION('{db}.{t}', 'p1', 'shard1')"))
        .await
        .unwrap()
        .unwrap();
    let seconds: f64 = answer.1.parse().unwrap();
    assert_eq!(answer.0, 3_000, "rows moved: {answer:?}");
    assert!(
        seconds >= 1.5,
        "3,000 rows at 2,000 rows/s moved in {seconds} s"
    );
    let p1 = physical("online_pace.pt", Some("p1")).await;
    let mut b1 = backend_conn(1, Some(db)).await;
    let n: Option<i64> = b1
        .query_first(format!("SELECT COUNT(*) FROM {p1}"))
        .await
        .unwrap();
    assert_eq!(n, Some(3_000));
    for c in [c, direct, paced, b1] {
        c.disconnect().await.unwrap();
    }
}
