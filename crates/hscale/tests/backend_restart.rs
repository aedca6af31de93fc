#![allow(clippy::unwrap_used)]
//! A backend server that dies mid-statement and comes back. In a test binary
//! of its own, because it stops the cluster's only server.

mod common;

use std::time::Duration;

use common::*;
use mysql_async::prelude::*;

#[tokio::test]
async fn backend_server_dies_and_comes_back() {
    let info = cluster(1);
    let mut c = mysql_async::Conn::new(proxy_opts(info.proxy_port, None))
        .await
        .unwrap();
    let q = tokio::spawn(async move {
        let r = c.query_drop("SELECT SLEEP(20)").await;
        (c, r)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    tokio::task::spawn_blocking(|| with_cluster(|cl| cl.servers[0].kill()))
        .await
        .unwrap();
    let (mut c, r) = tokio::time::timeout(Duration::from_secs(10), q)
        .await
        .expect("error must come quickly")
        .unwrap();
    let e = r.unwrap_err();
    assert!(e.to_string().contains("shard0"), "{e}");
    // While the backend is down: a clear error naming it.
    let e = c.query_drop("SELECT 1").await.unwrap_err();
    assert!(e.to_string().contains("shard0"), "{e}");
    tokio::task::spawn_blocking(|| with_cluster(|cl| cl.servers[0].restart()))
        .await
        .unwrap()
        .expect("restart");
    // The same session works again once the backend is back.
    let one: Option<i32> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    c.disconnect().await.unwrap();
}
