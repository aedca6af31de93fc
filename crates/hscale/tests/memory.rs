#![allow(clippy::unwrap_used)]
//! Results are streamed: a 1 GB result through hscale keeps the proxy's
//! resident memory bounded.

mod common;

use common::*;
use mysql_async::prelude::*;

#[tokio::test]
async fn one_gigabyte_result_keeps_proxy_rss_small() {
    cluster(1);
    let proxy = ProxyProcess::start(cluster_config());
    let before = proxy.status_kb("VmRSS:");
    let mut c = mysql_async::Conn::new(proxy_opts(proxy.port, Some("mysql")))
        .await
        .unwrap();
    let mut rows = 0u64;
    let mut bytes = 0u64;
    let mut r = c
        .query_iter("SELECT seq, REPEAT('x', 1000) FROM seq_1_to_1050000")
        .await
        .unwrap();
    r.for_each(|row: mysql_async::Row| {
        rows += 1;
        bytes += row
            .as_ref(1)
            .map(|v| match v {
                mysql_async::Value::Bytes(b) => b.len() as u64,
                _ => 0,
            })
            .unwrap_or(0);
    })
    .await
    .unwrap();
    drop(r);
    c.disconnect().await.unwrap();
    assert_eq!(rows, 1_050_000);
    assert!(bytes >= 1_050_000_000, "only {bytes} bytes streamed");
    let peak = proxy.status_kb("VmHWM:");
    eprintln!("proxy RSS before {before} kB, peak {peak} kB after streaming {bytes} bytes");
    assert!(peak < 100 * 1024, "proxy peak RSS {peak} kB exceeds 100 MB");
}
