#![allow(clippy::unwrap_used)]
//! What hscale runs for itself on a pooled backend connection can change
//! the server's LAST_INSERT_ID() there: a partition change's journal row
//! in `hscale.operations` takes an AUTO_INCREMENT id. The next client on
//! that connection still gets its own session's value, 0 when it never
//! generated an id, as from one server. Fresh sessions each holding a
//! connection in an open transaction reach every idle connection. (Seen first as a flaky
//! `differential_answers::writes::moved_rows_keep_their_ids_and_generated_columns`:
//! a fresh session's LAST_INSERT_ID() answered another test's journal id.)

mod common;

use common::{cluster_with, proxy_conn, rt};
use mysql_async::prelude::Queryable;

#[test]
fn the_proxys_own_insert_ids_do_not_reach_clients() {
    cluster_with(1, |c| c.proxy.workers = 1);
    rt().block_on(async {
        let mut admin = proxy_conn(None).await;
        for s in [
            "DROP DATABASE IF EXISTS lid_own",
            "CREATE DATABASE lid_own",
            "USE lid_own",
            "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
            "HSCALE SETUP_TABLE('t', 'id', 't_default', 'shard0', 'MOD(3)')",
            "HSCALE ADD_PARTITION('t', 't1', '1', 'shard0')",
            "HSCALE ADD_PARTITION('t', 't2', '2', 'shard0')",
        ] {
            admin
                .query_drop(s)
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        admin.disconnect().await.unwrap();
        // Every idle connection at once: each session's open transaction
        // holds the connection it read on until all have read.
        let mut held = Vec::new();
        for round in 0..24 {
            let mut c = proxy_conn(None).await;
            c.query_drop("BEGIN").await.unwrap();
            let lid: u64 = c
                .query_first("SELECT LAST_INSERT_ID()")
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                lid, 0,
                "session {round}: a fresh session's LAST_INSERT_ID()"
            );
            held.push(c);
        }
        for mut c in held {
            c.query_drop("ROLLBACK").await.unwrap();
            c.disconnect().await.unwrap();
        }
    });
}
