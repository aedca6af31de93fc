#![allow(clippy::unwrap_used)]
//! Admin commands while another proxy changes the dictionary as fast as it
//! can. Its own binary, so its own cluster. The same churn runs beside the
//! auto-partitioning race in `tests/online/auto.rs`, where it found that
//! the fence took any newer version as progress.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use mysql_async::prelude::*;
use mysql_async::Conn;

async fn partitioned(db: &str, t: &str) {
    let mut c = proxy_conn(None).await;
    c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    c.query_drop(format!(
        "CREATE TABLE {db}.{t} (id BIGINT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))"
    ))
    .await
    .unwrap();
    c.query_drop(format!(
        "HSCALE SETUP_TABLE('{db}.{t}', 'k', '{t}_default', 'shard0', 'MOD(8)')"
    ))
    .await
    .unwrap();
    c.disconnect().await.unwrap();
}

/// AUTO_PARTITION while another proxy switches auto-partitioning of
/// another table on and off as fast as it can: each commit there moves the
/// one dictionary version on, so this proxy's compare-and-set fails now
/// and then; the command applies its rule again to the dictionary read
/// anew instead of failing with 1210 (as it did in the full suite when
/// another test changed the dictionary meanwhile; 21-25 of 30 failed here
/// before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_partition_goes_through_while_another_proxy_changes_the_dictionary() {
    cluster(2);
    let (a, b) = (("churn_a", "ca"), ("churn_b", "cb"));
    partitioned(a.0, a.1).await;
    partitioned(b.0, b.1).await;
    let proxies = [
        ProxyProcess::start(cluster_config()),
        ProxyProcess::start(cluster_config()),
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let churn = tokio::spawn({
        let (stop, port) = (stop.clone(), proxies[1].port);
        async move {
            let mut c = Conn::new(proxy_opts(port, Some(b.0))).await.unwrap();
            let mut done = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let rule = if done.is_multiple_of(2) {
                    "ROUND_ROBIN"
                } else {
                    "OFF"
                };
                // Its own commands may meet this test's: not what is checked.
                if c.query_drop(format!(
                    "HSCALE AUTO_PARTITION('{}.{}', '{rule}')",
                    b.0, b.1
                ))
                .await
                .is_ok()
                {
                    done += 1;
                }
            }
            c.disconnect().await.unwrap();
            done
        }
    });
    let mut c = Conn::new(proxy_opts(proxies[0].port, Some(a.0)))
        .await
        .unwrap();
    let mut errors = Vec::new();
    for i in 0..30 {
        let rule = if i % 2 == 0 { "ROUND_ROBIN" } else { "OFF" };
        if let Err(e) = c
            .query_drop(format!(
                "HSCALE AUTO_PARTITION('{}.{}', '{rule}')",
                a.0, a.1
            ))
            .await
        {
            errors.push(e.to_string());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let churned = churn.await.unwrap();
    c.disconnect().await.unwrap();
    assert!(
        churned > 30,
        "the other proxy barely changed the dictionary: {churned}"
    );
    assert!(
        errors.is_empty(),
        "{} failed: {:?}",
        errors.len(),
        &errors[..errors.len().min(3)]
    );
    drop(proxies);
}
