#![allow(clippy::unwrap_used)]
//! The executor seam (`crates/hscale/src/exec/`): KILL QUERY reaches every
//! part of a statement spread over partitions, replies the proxy builds
//! carry the session's status and their parts' warnings and index flags,
//! and server errors met while the proxy works for itself keep their code.

mod common;

use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

/// Tests that change the dictionary hold it shared; the one whose answer
/// depends on no change being under way anywhere holds it alone (any
/// partition change of the fleet may roll a transaction back with 1412).
static DICTIONARY: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// A merge over 4 partitions on 3 backends, each part sleeping, is stopped
/// by KILL QUERY from another connection within a second; the session
/// stays usable.
#[tokio::test]
async fn kill_query_stops_every_part_of_a_merge() {
    let _dictionary = DICTIONARY.read().await;
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE exec_kill").await.unwrap();
    c.query_drop("USE exec_kill").await.unwrap();
    c.query_drop("CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard0', 'MOD(4)')")
        .await
        .unwrap();
    for (p, v, b) in [("one", 1, 1), ("two", 2, 2), ("three", 3, 2)] {
        c.query_drop(format!(
            "HSCALE ADD_PARTITION('t', '{p}', '{v}', 'shard{b}')"
        ))
        .await
        .unwrap();
    }
    c.query_drop("INSERT INTO t (id, k) VALUES (1, 0), (2, 1), (3, 2), (4, 3)")
        .await
        .unwrap();
    let id = c.id();
    let slow = tokio::spawn(async move {
        let r: Result<Vec<(i64, i64)>, _> = c
            .query("SELECT id, SLEEP(21) AS s FROM t ORDER BY id")
            .await;
        let killed_at = Instant::now();
        let after: Option<i64> = c.query_first("SELECT COUNT(*) FROM t").await.unwrap();
        (r, killed_at, after)
    });
    // Wait until every backend runs its part.
    let mut running = 0;
    for _ in 0..100 {
        running = 0;
        for b in 0..3 {
            let mut bc = backend_conn(b, None).await;
            let n: Option<i64> = bc
                .query_first("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SLEEP(21)%' AND INFO NOT LIKE '%PROCESSLIST%'")
                .await
                .unwrap();
            running += n.unwrap_or(0);
            bc.disconnect().await.unwrap();
        }
        if running >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(running, 4, "the four parts run at once");
    let mut killer = proxy_conn(None).await;
    let sent = Instant::now();
    killer.query_drop(format!("KILL QUERY {id}")).await.unwrap();
    let (r, done, after) = tokio::time::timeout(Duration::from_secs(10), slow)
        .await
        .expect("the merge did not stop after KILL QUERY")
        .unwrap();
    let took = done.duration_since(sent);
    assert!(took < Duration::from_secs(1), "stopped after {took:?}");
    let err = r.expect_err("a killed statement fails");
    assert_eq!(code(&err), 1317, "{err:?}");
    assert_eq!(after, Some(4), "the session stays usable");
    // No part is left running on any backend.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for b in 0..3 {
        let mut bc = backend_conn(b, None).await;
        let n: Option<i64> = bc
            .query_first("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SLEEP(21)%' AND INFO NOT LIKE '%PROCESSLIST%'")
            .await
            .unwrap();
        assert_eq!(n, Some(0), "backend {b} still runs a part");
    }
    killer.disconnect().await.unwrap();
}

/// Backend threads running a statement whose text contains `probe`.
async fn running(probe: &str) -> i64 {
    let mut total = 0;
    for b in 0..3 {
        let mut bc = backend_conn(b, None).await;
        let n: Option<i64> = bc
            .query_first(format!("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%{probe}%' AND INFO NOT LIKE '%PROCESSLIST%'"))
            .await
            .unwrap();
        total += n.unwrap_or(0);
        bc.disconnect().await.unwrap();
    }
    total
}

/// A prepared statement over 4 partitions runs its parts in parallel
/// through the same scatter as text statements (every part is seen running
/// at once), and KILL QUERY stops them all.
#[tokio::test]
async fn prepared_statements_scatter_in_parallel() {
    let _dictionary = DICTIONARY.read().await;
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE exec_prep").await.unwrap();
    c.query_drop("USE exec_prep").await.unwrap();
    c.query_drop("CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard0', 'MOD(4)')")
        .await
        .unwrap();
    for (p, v, b) in [("one", 1, 1), ("two", 2, 2), ("three", 3, 2)] {
        c.query_drop(format!(
            "HSCALE ADD_PARTITION('t', '{p}', '{v}', 'shard{b}')"
        ))
        .await
        .unwrap();
    }
    c.query_drop("INSERT INTO t (id, k) VALUES (1, 0), (2, 1), (3, 2), (4, 3)")
        .await
        .unwrap();
    // Quick executions first: rows from every partition, binary protocol.
    let stmt = c.prep("SELECT id, k FROM t WHERE id > ?").await.unwrap();
    let mut rows: Vec<(i64, i64)> = c.exec(&stmt, (0,)).await.unwrap();
    rows.sort();
    assert_eq!(rows, vec![(1, 0), (2, 1), (3, 2), (4, 3)]);
    let n = c
        .exec_iter("UPDATE t SET id = id + 10 WHERE id > ?", (2,))
        .await
        .unwrap()
        .affected_rows();
    assert_eq!(n, 2);
    let id = c.id();
    let slow = tokio::spawn(async move {
        let stmt = c
            .prep("SELECT id, SLEEP(23) AS s FROM t WHERE id > ?")
            .await
            .unwrap();
        let r: Result<Vec<(i64, i64)>, _> = c.exec(&stmt, (0,)).await;
        let done = Instant::now();
        let after: Option<i64> = c.query_first("SELECT COUNT(*) FROM t").await.unwrap();
        (r, done, after)
    });
    let mut seen = 0;
    for _ in 0..100 {
        seen = running("SLEEP(23)").await;
        if seen >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        seen, 4,
        "the four parts of the prepared statement run at once"
    );
    let mut killer = proxy_conn(None).await;
    let sent = Instant::now();
    killer.query_drop(format!("KILL QUERY {id}")).await.unwrap();
    let (r, done, after) = tokio::time::timeout(Duration::from_secs(10), slow)
        .await
        .expect("the prepared scatter did not stop after KILL QUERY")
        .unwrap();
    assert!(done.duration_since(sent) < Duration::from_secs(1));
    assert_eq!(code(&r.expect_err("killed")), 1317);
    assert_eq!(after, Some(4), "the session stays usable");
    killer.disconnect().await.unwrap();
}

/// Replies the proxy builds itself (PING, COM_SET_OPTION, KILL, a deferred
/// BEGIN's OK, HSCALE answers) carry the session's real autocommit and
/// in-transaction flags: a driver that trusts the last OK's autocommit flag
/// must never be told autocommit is on while it is off.
#[tokio::test]
async fn replies_built_by_the_proxy_carry_the_session_status() {
    let _dictionary = DICTIONARY.read().await;
    use hscale_wire::consts::{com, status};
    use hscale_wire::response::OkPacket;
    let info = cluster(3);
    let (mut r, ok) =
        common::raw::Raw::login(info.proxy_port, "root", "", common::raw::CLIENT_CAPS).await;
    assert_eq!(ok.payload[0], 0, "logged in");
    async fn status_of(r: &mut common::raw::Raw, payload: &[u8]) -> u16 {
        r.send(0, payload).await;
        let p = r.read().await.expect("an answer");
        match p.payload[0] {
            0x00 => OkPacket::decode(&p.payload).unwrap().status,
            0xfe => hscale_wire::response::decode_eof(&p.payload).unwrap().1,
            other => panic!("unexpected answer {other:#x}: {:?}", p.payload),
        }
    }
    let query = |sql: &str| {
        let mut p = vec![com::QUERY];
        p.extend_from_slice(sql.as_bytes());
        p
    };
    let st = status_of(&mut r, &query("SET autocommit=0")).await;
    assert_eq!(st & status::AUTOCOMMIT, 0);
    for (what, payload) in [
        ("PING", vec![com::PING]),
        ("SET_OPTION", vec![com::SET_OPTION, 0, 0]),
        ("HSCALE RELOAD", query("HSCALE RELOAD")),
    ] {
        let st = status_of(&mut r, &payload).await;
        assert_eq!(st & status::AUTOCOMMIT, 0, "{what} says autocommit is on");
    }
    let st = status_of(&mut r, &query("SET autocommit=1")).await;
    assert_ne!(st & status::AUTOCOMMIT, 0);
    let st = status_of(&mut r, &query("BEGIN")).await;
    assert_ne!(
        st & status::IN_TRANS,
        0,
        "a deferred BEGIN is in a transaction"
    );
    let st = status_of(&mut r, &[com::PING]).await;
    assert_ne!(st & status::IN_TRANS, 0);
    assert_ne!(st & status::AUTOCOMMIT, 0);
    let st = status_of(&mut r, &query("COMMIT")).await;
    assert_eq!(st & status::IN_TRANS, 0);
}

/// A server error the proxy meets while answering for itself (here SHOW
/// CREATE TABLE of a partitioned table whose default partition was dropped
/// behind its back) reaches the client with the server's code.
#[tokio::test]
async fn server_errors_in_proxy_work_keep_their_code() {
    let _dictionary = DICTIONARY.read().await;
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE exec_codes").await.unwrap();
    c.query_drop("USE exec_codes").await.unwrap();
    c.query_drop("CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard1', 'MOD(4)')")
        .await
        .unwrap();
    let mut b = backend_conn(1, None).await;
    b.query_drop("DROP TABLE exec_codes.t_default")
        .await
        .unwrap();
    b.disconnect().await.unwrap();
    let err = c
        .query_drop("SHOW CREATE TABLE t")
        .await
        .expect_err("the default partition is gone");
    assert_eq!(code(&err), 1146, "{err:?}");
    // Named as the client's table, as one server names a missing table
    // (the executor renames physical tables in server errors).
    assert!(err.to_string().contains("'exec_codes.t'"), "{err}");
    c.disconnect().await.unwrap();
}

/// Inside a transaction, a partition's table dropped by hand on its
/// backend (no change of hscale's is under way) answers the server's own
/// 1146, and the transaction goes on: only a table a change's cutover
/// renamed rolls the transaction back with 1412.
#[tokio::test]
async fn a_table_gone_without_a_change_keeps_the_transaction_open() {
    let _dictionary = DICTIONARY.write().await;
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE exec_gone").await.unwrap();
    c.query_drop("USE exec_gone").await.unwrap();
    c.query_drop("CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard1', 'MOD(4)')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('t', 'p1', '1', 'shard2')")
        .await
        .unwrap();
    let p1 = physical("exec_gone.t", Some("p1")).await;
    let mut b = backend_conn(2, None).await;
    b.query_drop(format!("DROP TABLE exec_gone.{p1}"))
        .await
        .unwrap();
    b.disconnect().await.unwrap();
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO t VALUES (2, 2)").await.unwrap();
    let err = c
        .query_drop("INSERT INTO t VALUES (1, 1)")
        .await
        .expect_err("p1's table is gone");
    assert_eq!(code(&err), 1146, "{err:?}");
    let open: Option<i64> = c.query_first("SELECT @@in_transaction").await.unwrap();
    assert_eq!(open, Some(1), "the transaction goes on");
    c.query_drop("ROLLBACK").await.unwrap();
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM t WHERE k = 2")
        .await
        .unwrap();
    assert_eq!(
        n,
        Some(0),
        "the transaction's insert was rolled back with it"
    );
    c.disconnect().await.unwrap();
}

/// Issue 30: a partition's table dropped by hand on its backend, met by
/// a statement in autocommit. The fence finds no change under way and
/// answers the backend's 1146, which names the partition's physical table:
/// the client reads the error one server gives for its own table (the same
/// statement run on a backend that has no such table), in the text and
/// the binary protocol.
#[tokio::test]
async fn a_missing_partition_table_is_named_as_the_clients_table() {
    let _dictionary = DICTIONARY.read().await;
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE exec_named").await.unwrap();
    c.query_drop("USE exec_named").await.unwrap();
    c.query_drop("CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard1', 'MOD(4)')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('t', 'p1', '1', 'shard2')")
        .await
        .unwrap();
    let p1 = physical("exec_named.t", Some("p1")).await;
    let mut b = backend_conn(2, Some("exec_named")).await;
    b.query_drop(format!("DROP TABLE exec_named.{p1}"))
        .await
        .unwrap();
    for sql in [
        "SELECT * FROM t WHERE k = 1",
        "INSERT INTO t VALUES (1, 1)",
        "UPDATE t SET id = 2 WHERE k = 1",
    ] {
        let want = b
            .query_drop(sql)
            .await
            .expect_err("no table t on the backend");
        assert_eq!(code(&want), 1146, "{want:?}");
        let got = c.query_drop(sql).await.expect_err("p1's table is gone");
        assert_eq!(got.to_string(), want.to_string(), "{sql}");
        assert!(!got.to_string().contains(&p1), "{got}");
    }
    let sql = "SELECT * FROM t WHERE k = ?";
    let want = b.exec_drop(sql, (1,)).await.expect_err("no table t");
    let got = c
        .exec_drop(sql, (1,))
        .await
        .expect_err("p1's table is gone");
    assert_eq!(got.to_string(), want.to_string(), "{sql}");
    b.disconnect().await.unwrap();
    c.disconnect().await.unwrap();
}

/// The status flags and warning count at the end of a result the proxy
/// puts together from partitions: read with a raw client (EOF packets).
async fn terminator(r: &mut common::raw::Raw, sql: &str) -> (u16, u16) {
    use hscale_wire::response::{decode_eof, is_eof};
    let mut payload = vec![hscale_wire::consts::com::QUERY];
    payload.extend_from_slice(sql.as_bytes());
    r.send(0, &payload).await;
    let first = r.read().await.expect("column count");
    assert_ne!(first.payload[0], 0xff, "{sql}: {:?}", first.payload);
    let mut eofs = 0;
    loop {
        let p = r.read().await.expect("a packet");
        assert_ne!(p.payload[0], 0xff, "{sql}: {:?}", p.payload);
        if is_eof(&p.payload) {
            eofs += 1;
            if eofs == 2 {
                return decode_eof(&p.payload).unwrap();
            }
        }
    }
}

/// A result put together from several partitions (rows concatenated,
/// sorted, or grouped) ends as one server's would: with the warnings of
/// every part added up and the index flags (no index used) of its parts,
/// the same as the same rows in one table answer.
#[tokio::test]
async fn results_over_partitions_carry_their_parts_warnings_and_index_flags() {
    let _dictionary = DICTIONARY.read().await;
    use hscale_wire::consts::status::INDEX_FLAGS;
    let info = cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE exec_warn").await.unwrap();
    c.query_drop("USE exec_warn").await.unwrap();
    for t in ["t", "plain"] {
        c.query_drop(format!(
            "CREATE TABLE {t} (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))"
        ))
        .await
        .unwrap();
    }
    c.query_drop("HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard0', 'MOD(4)')")
        .await
        .unwrap();
    for (p, v, b) in [("one", 1, 1), ("two", 2, 2), ("three", 3, 2)] {
        c.query_drop(format!(
            "HSCALE ADD_PARTITION('t', '{p}', '{v}', 'shard{b}')"
        ))
        .await
        .unwrap();
    }
    for t in ["t", "plain"] {
        c.query_drop(format!(
            "INSERT INTO {t} (id, k) SELECT seq, seq % 4 FROM seq_1_to_12"
        ))
        .await
        .unwrap();
    }
    let (mut r, ok) =
        common::raw::Raw::login(info.proxy_port, "root", "", common::raw::CLIENT_CAPS).await;
    assert_eq!(ok.payload[0], 0, "logged in");
    r.query("USE exec_warn").await.unwrap();
    // Each row warns once (a truncated INTEGER value): 12 in all.
    for shape in [
        "SELECT id, CAST(CONCAT(id, 'x') AS SIGNED) AS v FROM {t}",
        "SELECT id, CAST(CONCAT(id, 'x') AS SIGNED) AS v FROM {t} ORDER BY id",
        "SELECT k, SUM(CAST(CONCAT(id, 'x') AS SIGNED)) AS v FROM {t} GROUP BY k",
    ] {
        let partitioned = shape.replace("{t}", "t");
        let plain = shape.replace("{t}", "plain");
        c.query_drop(&plain).await.unwrap();
        let want = c.get_warnings();
        assert_eq!(want, 12, "{plain}");
        c.query_drop(&partitioned).await.unwrap();
        assert_eq!(c.get_warnings(), want, "{partitioned}");
        let (w, st) = terminator(&mut r, &partitioned).await;
        let (plain_w, plain_st) = terminator(&mut r, &plain).await;
        assert_eq!(w, plain_w, "{partitioned}");
        assert_ne!(plain_st & INDEX_FLAGS, 0, "a full scan: {plain}");
        assert_eq!(st & INDEX_FLAGS, plain_st & INDEX_FLAGS, "{partitioned}");
    }
    // A write over partitions: one OK with every part's warnings and flags.
    let write = "UPDATE {t} SET id = id WHERE CAST(CONCAT(id, 'x') AS SIGNED) > 0";
    let partitioned = ok_of(&mut r, &write.replace("{t}", "t")).await;
    let plain = ok_of(&mut r, &write.replace("{t}", "plain")).await;
    assert_eq!(plain.0, 12, "{write}");
    assert_ne!(plain.1 & INDEX_FLAGS, 0, "a full scan: {write}");
    assert_eq!(partitioned.0, plain.0, "{write}");
    assert_eq!(
        partitioned.1 & INDEX_FLAGS,
        plain.1 & INDEX_FLAGS,
        "{write}"
    );
    c.query_drop("DROP DATABASE exec_warn").await.unwrap();
}

/// The warning count and status flags of the OK that answers `sql`.
async fn ok_of(r: &mut common::raw::Raw, sql: &str) -> (u16, u16) {
    let mut payload = vec![hscale_wire::consts::com::QUERY];
    payload.extend_from_slice(sql.as_bytes());
    r.send(0, &payload).await;
    let p = r.read().await.expect("an answer");
    assert_eq!(p.payload[0], 0, "{sql}: {:?}", p.payload);
    let ok = hscale_wire::response::OkPacket::decode(&p.payload).unwrap();
    (ok.warnings, ok.status)
}

/// A partitioned table whose default partition is not on the main backend
/// shows in information_schema once, under its name, as one server shows
/// it (an ORM listing the schema's tables finds it): through a partition
/// on the main backend when it has one, or through its default
/// partition's rows, read from its backend, in every view.
#[tokio::test]
async fn tables_away_from_the_main_backend_show_once_in_information_schema() {
    let _dictionary = DICTIONARY.read().await;
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE exec_away").await.unwrap();
    c.query_drop("USE exec_away").await.unwrap();
    for t in ["near", "far"] {
        c.query_drop(format!(
            "CREATE TABLE {t} (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))"
        ))
        .await
        .unwrap();
    }
    for s in [
        "HSCALE SETUP_TABLE('near', 'k', 'near_default', 'shard1', 'MOD(2)')",
        "HSCALE ADD_PARTITION('near', 'odd', '1', 'shard0')",
        "HSCALE SETUP_TABLE('far', 'k', 'far_default', 'shard1', 'MOD(2)')",
        "HSCALE ADD_PARTITION('far', 'odd', '1', 'shard2')",
    ] {
        c.query_drop(s).await.unwrap();
    }
    let tables: Vec<(String, String)> = c
        .query(
            "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1",
        )
        .await
        .unwrap();
    let base = |t: &str| (t.to_string(), "BASE TABLE".to_string());
    assert_eq!(tables, vec![base("far"), base("near")]);
    let n: i64 = c
        .query_first(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'exec_away'",
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 2);
    // `near` has its columns and indexes from its partition on the main
    // backend; `far`, with none there, from its default partition.
    let columns: Vec<(String, String)> = c
        .query(
            "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1, ORDINAL_POSITION",
        )
        .await
        .unwrap();
    let col = |t: &str, c: &str| (t.to_string(), c.to_string());
    assert_eq!(
        columns,
        vec![
            col("far", "id"),
            col("far", "k"),
            col("near", "id"),
            col("near", "k")
        ]
    );
    let keys: Vec<(String, String)> = c
        .query(
            "SELECT TABLE_NAME, INDEX_NAME FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = DATABASE() AND SEQ_IN_INDEX = 1 ORDER BY 1",
        )
        .await
        .unwrap();
    assert_eq!(keys, vec![col("far", "PRIMARY"), col("near", "PRIMARY")]);
    // The same columns and types as one server's views, `far`'s engine too.
    let engine: Option<String> = c
        .query_first("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'fa%'")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(engine.as_deref(), Some("InnoDB"));
    // The row of `far` keeps the view's column types.
    let types = |r: &mysql_async::Row| -> Vec<u8> {
        r.columns_ref()
            .iter()
            .map(|c| c.column_type() as u8)
            .collect()
    };
    let sql = "SELECT * FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()";
    let through: Vec<mysql_async::Row> = c.query(sql).await.unwrap();
    let mut d = backend_conn(0, Some("exec_away")).await;
    let direct: Vec<mysql_async::Row> = d.query(sql).await.unwrap();
    d.disconnect().await.unwrap();
    assert_eq!(types(&through[0]), types(&direct[0]));
    c.disconnect().await.unwrap();
}

/// SHOW TABLE STATUS and SHOW INDEX of a partitioned table show figures
/// that cover every partition's rows: after ANALYZE TABLE of each physical
/// table, Rows, Data_length and Index_length are the sums of what the
/// backends themselves say of their physical tables (Avg_row_length
/// their quotient), and each index's Cardinality what one server holding
/// the same rows estimates (the sum over partitions for a key with the
/// partition column or of unique values, not for values every partition
/// holds); the columns are SHOW's own (names and types as a server sends
/// them). Prepared, both answer the same rows in the binary format.
#[tokio::test]
async fn table_status_and_index_figures_cover_every_partition() {
    let _dictionary = DICTIONARY.read().await;
    use mysql_async::Row;
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE exec_figures").await.unwrap();
    c.query_drop("USE exec_figures").await.unwrap();
    c.query_drop("CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, v VARCHAR(40) NOT NULL, PRIMARY KEY (id, k), KEY kv (v))")
        .await
        .unwrap();
    for s in [
        "HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard0', 'MOD(3)')",
        "HSCALE ADD_PARTITION('t', 'one', '1', 'shard1')",
        "HSCALE ADD_PARTITION('t', 'two', '2', 'shard2')",
    ] {
        c.query_drop(s).await.unwrap();
    }
    // The same rows in one table of one server.
    let mut one = backend_conn(0, None).await;
    one.query_drop("CREATE DATABASE exec_figures_one")
        .await
        .unwrap();
    one.query_drop("USE exec_figures_one").await.unwrap();
    one.query_drop("CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, v VARCHAR(40) NOT NULL, PRIMARY KEY (id, k), KEY kv (v))")
        .await
        .unwrap();
    for chunk in 0..6 {
        let values: Vec<String> = (0..100)
            .map(|i| {
                let id = chunk * 100 + i;
                format!("({id}, {}, REPEAT('x', {}))", id % 7, id % 40)
            })
            .collect();
        let insert = format!("INSERT INTO t (id, k, v) VALUES {}", values.join(", "));
        c.query_drop(&insert).await.unwrap();
        one.query_drop(&insert).await.unwrap();
    }
    one.query_drop("ANALYZE TABLE t").await.unwrap();
    let one_index: Vec<Row> = one.query("SHOW INDEX FROM t").await.unwrap();
    let one_cardinality: std::collections::HashMap<(String, u64), Option<u64>> = one_index
        .iter()
        .map(|r| {
            (
                (
                    r.get::<String, _>("Key_name").unwrap(),
                    r.get::<u64, _>("Seq_in_index").unwrap(),
                ),
                r.get::<Option<u64>, _>("Cardinality").unwrap(),
            )
        })
        .collect();
    one.query_drop("DROP DATABASE exec_figures_one")
        .await
        .unwrap();
    one.disconnect().await.unwrap();
    // What the backends say of their physical tables, after ANALYZE.
    let (mut rows, mut data, mut index) = (0u64, 0u64, 0u64);
    let mut cardinality = std::collections::HashMap::<(String, u64), u64>::new();
    let mut largest = std::collections::HashMap::<(String, u64), u64>::new();
    let mut main_physical = String::new();
    for b in 0..3 {
        let mut d = backend_conn(b, Some("exec_figures")).await;
        let names: Vec<String> = d
            .query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'exec_figures'")
            .await
            .unwrap();
        assert_eq!(names.len(), 1, "one physical table per backend: {names:?}");
        d.query_drop(format!("ANALYZE TABLE `{}`", names[0]))
            .await
            .unwrap();
        if b == 0 {
            main_physical = names[0].clone();
        }
        let (r, dl, il): (u64, u64, u64) = d
            .query_first("SELECT TABLE_ROWS, DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'exec_figures'")
            .await
            .unwrap()
            .unwrap();
        assert!(r > 0, "backend {b} holds rows");
        (rows, data, index) = (rows + r, data + dl, index + il);
        let stats: Vec<(String, u64, u64)> = d
            .query("SELECT INDEX_NAME, SEQ_IN_INDEX, CARDINALITY FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'exec_figures'")
            .await
            .unwrap();
        for (name, seq, n) in stats {
            *cardinality.entry((name.clone(), seq)).or_default() += n;
            let m = largest.entry((name, seq)).or_default();
            *m = (*m).max(n);
        }
        d.disconnect().await.unwrap();
    }
    let status: Vec<Row> = c.query("SHOW TABLE STATUS LIKE 't'").await.unwrap();
    assert_eq!(status.len(), 1);
    let s = &status[0];
    assert_eq!(s.get::<String, _>("Name").unwrap(), "t");
    assert_eq!(s.get::<u64, _>("Rows").unwrap(), rows);
    assert_eq!(s.get::<u64, _>("Data_length").unwrap(), data);
    assert_eq!(s.get::<u64, _>("Index_length").unwrap(), index);
    assert_eq!(s.get::<u64, _>("Avg_row_length").unwrap(), data / rows);
    let all: Vec<Row> = c.query("SHOW TABLE STATUS").await.unwrap();
    let names: Vec<String> = all.iter().map(|r| r.get("Name").unwrap()).collect();
    assert_eq!(names, vec!["t".to_string()]);
    let filtered: Vec<Row> = c
        .query(format!("SHOW TABLE STATUS WHERE `Rows` = {rows}"))
        .await
        .unwrap();
    assert_eq!(filtered.len(), 1);
    // The columns are SHOW TABLE STATUS's, as a server sends them.
    let meta = |r: &Row| -> Vec<(String, u8)> {
        r.columns_ref()
            .iter()
            .map(|c| (c.name_str().into_owned(), c.column_type() as u8))
            .collect()
    };
    let mut d = backend_conn(0, Some("exec_figures")).await;
    let direct: Vec<Row> = d.query("SHOW TABLE STATUS").await.unwrap();
    assert_eq!(meta(s), meta(&direct[0]));
    let direct_index: Vec<Row> = d
        .query(format!("SHOW INDEX FROM `{main_physical}`"))
        .await
        .unwrap();
    d.disconnect().await.unwrap();
    let shown: Vec<Row> = c.query("SHOW INDEX FROM t").await.unwrap();
    assert_eq!(shown.len(), direct_index.len());
    assert_eq!(meta(&shown[0]), meta(&direct_index[0]));
    for r in &shown {
        assert_eq!(r.get::<String, _>("Table").unwrap(), "t");
        let key = (
            r.get::<String, _>("Key_name").unwrap(),
            r.get::<u64, _>("Seq_in_index").unwrap(),
        );
        let got = r.get::<Option<u64>, _>("Cardinality").unwrap().unwrap();
        let (sum, max) = (cardinality[&key], largest[&key]);
        let one = one_cardinality[&key].unwrap();
        println!("{key:?}: hscale {got}, one server {one}, partitions' sum {sum}, largest {max}");
        assert!(
            max <= got && got <= sum,
            "{key:?}: {got} within {max}..={sum}"
        );
        if key.0 == "PRIMARY" {
            // Unique values (seq 1), the partition column (seq 2): summed.
            assert_eq!(got, sum, "{key:?}");
        } else {
            // kv's forty values are in every partition: not counted once
            // per partition, nearer one server's estimate than the sum.
            assert!(got < sum, "{key:?}");
            assert!(got.abs_diff(one) < sum.abs_diff(one), "{key:?}");
        }
    }
    // Prepared: the same answers, in the binary format.
    let index_of = |rows: &[Row]| -> Vec<(String, String, u64, String, Option<u64>)> {
        rows.iter()
            .map(|r| {
                (
                    r.get("Table").unwrap(),
                    r.get("Key_name").unwrap(),
                    r.get("Seq_in_index").unwrap(),
                    r.get("Column_name").unwrap(),
                    r.get("Cardinality").unwrap(),
                )
            })
            .collect()
    };
    let prepared: Vec<Row> = c.exec("SHOW INDEX FROM t", ()).await.unwrap();
    assert_eq!(index_of(&prepared), index_of(&shown));
    assert_eq!(meta(&prepared[0]), meta(&shown[0]));
    let prepared: Vec<Row> = c
        .exec("SHOW KEYS IN t FROM exec_figures", ())
        .await
        .unwrap();
    assert_eq!(index_of(&prepared), index_of(&shown));
    for sql in [
        "SHOW TABLE STATUS LIKE 't'",
        "SHOW TABLE STATUS FROM exec_figures WHERE `Name` = 't'",
    ] {
        let prepared: Vec<Row> = c.exec(sql, ()).await.unwrap();
        assert_eq!(prepared.len(), 1, "{sql}");
        let p = &prepared[0];
        assert_eq!(p.get::<String, _>("Name").unwrap(), "t");
        assert_eq!(p.get::<u64, _>("Rows").unwrap(), rows, "{sql}");
        assert_eq!(p.get::<u64, _>("Data_length").unwrap(), data, "{sql}");
        assert_eq!(p.get::<u64, _>("Index_length").unwrap(), index, "{sql}");
        assert_eq!(
            p.get::<u64, _>("Avg_row_length").unwrap(),
            data / rows,
            "{sql}"
        );
        assert_eq!(meta(p), meta(&direct[0]), "{sql}");
    }
    // A LIKE that matches no table, as the server matches names.
    let none: Vec<Row> = c.exec("SHOW TABLE STATUS LIKE 'T'", ()).await.unwrap();
    assert!(none.is_empty());
    let none: Vec<Row> = c.query("SHOW TABLE STATUS LIKE 'T'").await.unwrap();
    assert!(none.is_empty());
    c.disconnect().await.unwrap();
}
