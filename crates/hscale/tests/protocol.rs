#![allow(clippy::unwrap_used)]
//! The proxy as a Rust client (mysql_async) sees it: queries, types,
//! prepared statements, multi-statements, transactions, session state.

mod common;

use common::*;
use mysql_async::prelude::*;
use mysql_async::{Row, Value};

#[tokio::test]
async fn queries_types_and_affected_rows() {
    fresh_db("p_types").await;
    let mut c = proxy_conn(Some("p_types")).await;
    c.query_drop(
        "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50), price DECIMAL(10,2), \
         at DATETIME, data BLOB, note TEXT NULL)",
    )
    .await
    .unwrap();
    c.query_drop(
        "INSERT INTO t (name, price, at, data, note) VALUES ('Zoë ☃', 12.50, '2024-02-29 13:14:15', x'00ff10', NULL), \
         ('b', -1.00, '1999-12-31 23:59:59', '', 'n')",
    )
    .await
    .unwrap();
    assert_eq!(c.affected_rows(), 2);
    assert_eq!(c.last_insert_id(), Some(1));
    type TypesRow = (i32, String, String, String, Vec<u8>, Option<String>);
    let rows: Vec<TypesRow> = c
        .query("SELECT id, name, price, CAST(at AS CHAR), data, note FROM t ORDER BY id")
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].1, "Zoë ☃");
    assert_eq!(rows[0].2, "12.50");
    assert_eq!(rows[0].3, "2024-02-29 13:14:15");
    assert_eq!(rows[0].4, vec![0u8, 0xff, 0x10]);
    assert_eq!(rows[0].5, None);
    assert_eq!(rows[1].5.as_deref(), Some("n"));
    c.query_drop("UPDATE t SET note = 'x'").await.unwrap();
    assert_eq!(c.affected_rows(), 2);
    // An error leaves the session usable.
    let e = c
        .query_drop("SELECT * FROM missing_table")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1146);
    let e = c.query_drop("SELEC 1").await.unwrap_err();
    assert_eq!(code(&e), 1064);
    let one: Option<i32> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    c.disconnect().await.unwrap();
}

#[tokio::test]
async fn prepared_statements_move_between_backend_connections() {
    fresh_db("p_ps").await;
    let mut setup = proxy_conn(Some("p_ps")).await;
    setup
        .query_drop("CREATE TABLE kv (k INT PRIMARY KEY, v VARCHAR(100), f DOUBLE, d DATE NULL)")
        .await
        .unwrap();
    let mut c = proxy_conn(Some("p_ps")).await;
    let ins = c.prep("INSERT INTO kv VALUES (?, ?, ?, ?)").await.unwrap();
    let sel = c
        .prep("SELECT k, v, f, d FROM kv WHERE k = ?")
        .await
        .unwrap();
    for k in 0..200i32 {
        let d: Option<&str> = if k % 3 == 0 { None } else { Some("2024-01-02") };
        c.exec_drop(&ins, (k, format!("v{k}"), k as f64 / 4.0, d))
            .await
            .unwrap();
        // Other sessions take and return pooled connections in between, so
        // this session's statements land on different backend connections.
        let mut other = proxy_conn(Some("p_ps")).await;
        let n: Option<i64> = other.query_first("SELECT COUNT(*) FROM kv").await.unwrap();
        assert_eq!(n, Some(k as i64 + 1));
        other.disconnect().await.unwrap();
        let row: Row = c.exec_first(&sel, (k,)).await.unwrap().unwrap();
        assert_eq!(row.get::<i32, _>(0), Some(k));
        assert_eq!(row.get::<String, _>(1), Some(format!("v{k}")));
        assert_eq!(row.get::<f64, _>(2), Some(k as f64 / 4.0));
        assert_eq!(row.as_ref(3) == Some(&Value::NULL), k % 3 == 0);
    }
    // Binary protocol rows with NULLs and many columns.
    let rows: Vec<Row> = c
        .exec(
            "SELECT k, NULL, v, f, d, k * 2 FROM kv WHERE k < ? ORDER BY k",
            (5,),
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0].as_ref(1), Some(&Value::NULL));
    // A statement that fails to prepare reports the server's error.
    let e = c
        .prep("SELECT * FROM nowhere WHERE k = ?")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1146);
    c.close(sel).await.unwrap();
    c.disconnect().await.unwrap();
    setup.disconnect().await.unwrap();
}

#[tokio::test]
async fn multi_statements_and_multiple_results() {
    let mut c = proxy_conn(None).await;
    let mut r = c
        .query_iter("SELECT 1 AS a; SELECT 2 AS b, 3 AS c; DO 1")
        .await
        .unwrap();
    let first: Vec<i32> = r.collect().await.unwrap();
    assert_eq!(first, vec![1]);
    let second: Vec<(i32, i32)> = r.collect().await.unwrap();
    assert_eq!(second, vec![(2, 3)]);
    drop(r);
    let x: Option<i32> = c.query_first("SELECT 7").await.unwrap();
    assert_eq!(x, Some(7));
    c.disconnect().await.unwrap();
}

#[tokio::test]
async fn transactions_pin_and_isolate() {
    fresh_db("p_tx").await;
    backend_thread_probe().await;
    let mut c = proxy_conn(Some("p_tx")).await;
    c.query_drop("CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB")
        .await
        .unwrap();
    let mut other = proxy_conn(Some("p_tx")).await;

    c.query_drop("BEGIN").await.unwrap();
    let id1: Option<u64> = c.query_first(BACKEND_THREAD).await.unwrap();
    c.query_drop("INSERT INTO t VALUES (1)").await.unwrap();
    for _ in 0..5 {
        let n: Option<i64> = other.query_first("SELECT COUNT(*) FROM t").await.unwrap();
        assert_eq!(n, Some(0), "uncommitted row visible to another session");
        let id: Option<u64> = c.query_first(BACKEND_THREAD).await.unwrap();
        assert_eq!(id, id1, "transaction moved to another backend connection");
    }
    c.query_drop("ROLLBACK").await.unwrap();
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM t").await.unwrap();
    assert_eq!(n, Some(0));

    // autocommit=0: every statement is part of a transaction until COMMIT.
    c.query_drop("SET autocommit = 0").await.unwrap();
    c.query_drop("INSERT INTO t VALUES (2)").await.unwrap();
    let n: Option<i64> = other.query_first("SELECT COUNT(*) FROM t").await.unwrap();
    assert_eq!(n, Some(0));
    c.query_drop("COMMIT").await.unwrap();
    let n: Option<i64> = other.query_first("SELECT COUNT(*) FROM t").await.unwrap();
    assert_eq!(n, Some(1));
    c.query_drop("SET autocommit = 1").await.unwrap();
    let ac: Option<i64> = c.query_first("SELECT @@autocommit").await.unwrap();
    assert_eq!(ac, Some(1));

    // A transaction left open at disconnect is rolled back.
    c.query_drop("START TRANSACTION").await.unwrap();
    c.query_drop("INSERT INTO t VALUES (3)").await.unwrap();
    c.disconnect().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let n: Option<i64> = other
        .query_first("SELECT COUNT(*) FROM t WHERE id = 3")
        .await
        .unwrap();
    assert_eq!(n, Some(0));
    other.disconnect().await.unwrap();
}

#[tokio::test]
async fn connection_bound_state_pins_the_session() {
    fresh_db("p_pin").await;
    let mut c = proxy_conn(Some("p_pin")).await;
    c.query_drop("SET @x = 42").await.unwrap();
    c.query_drop("CREATE TEMPORARY TABLE tmp (a INT)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO tmp VALUES (1), (2)")
        .await
        .unwrap();
    let lock: Option<i64> = c
        .query_first("SELECT GET_LOCK('p_pin_lock', 1)")
        .await
        .unwrap();
    assert_eq!(lock, Some(1));
    for _ in 0..10 {
        let mut other = proxy_conn(Some("p_pin")).await;
        let x: Option<Option<i64>> = other.query_first("SELECT @x").await.unwrap();
        assert_eq!(x, Some(None), "user variable leaked into another session");
        let free: Option<i64> = other
            .query_first("SELECT IS_FREE_LOCK('p_pin_lock')")
            .await
            .unwrap();
        assert_eq!(free, Some(0));
        other.disconnect().await.unwrap();
        let x: Option<i64> = c.query_first("SELECT @x").await.unwrap();
        assert_eq!(x, Some(42));
        let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM tmp").await.unwrap();
        assert_eq!(n, Some(2));
    }
    // COM_RESET_CONNECTION forgets all of it.
    c.reset().await.unwrap();
    let x: Option<Option<i64>> = c.query_first("SELECT @x").await.unwrap();
    assert_eq!(x, Some(None));
    let e = c.query_drop("SELECT * FROM tmp").await.unwrap_err();
    assert_eq!(code(&e), 1146);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let free: Option<i64> = c
        .query_first("SELECT IS_FREE_LOCK('p_pin_lock')")
        .await
        .unwrap();
    assert_eq!(free, Some(1));
    c.disconnect().await.unwrap();
}

#[tokio::test]
async fn use_database_and_change_user() {
    fresh_db("p_use1").await;
    fresh_db("p_use2").await;
    let mut c = proxy_conn(None).await;
    let e = c.query_drop("CREATE TABLE nodb (a INT)").await.unwrap_err();
    assert_eq!(code(&e), 1046, "no database selected");
    c.query_drop("USE p_use1").await.unwrap();
    c.query_drop("CREATE TABLE a1 (a INT)").await.unwrap();
    c.query_drop("USE `p_use2`").await.unwrap();
    c.query_drop("CREATE TABLE a2 (a INT)").await.unwrap();
    let db: Option<String> = c.query_first("SELECT DATABASE()").await.unwrap();
    assert_eq!(db.as_deref(), Some("p_use2"));
    let e = c.query_drop("USE no_such_db").await.unwrap_err();
    assert_eq!(code(&e), 1049);
    let db: Option<String> = c.query_first("SELECT DATABASE()").await.unwrap();
    assert_eq!(db.as_deref(), Some("p_use2"));
    let mut b = backend_conn(0, None).await;
    let n: Option<i64> = b
        .query_first("SELECT COUNT(*) FROM information_schema.tables WHERE (table_schema, table_name) IN (('p_use1','a1'),('p_use2','a2'))")
        .await
        .unwrap();
    assert_eq!(n, Some(2));
    b.disconnect().await.unwrap();

    // Log in with a database, then change user.
    let info = cluster(2);
    let opts = mysql_async::OptsBuilder::from_opts(proxy_opts(info.proxy_port, Some("p_use1")));
    let mut c2 = mysql_async::Conn::new(opts).await.unwrap();
    let db: Option<String> = c2.query_first("SELECT DATABASE()").await.unwrap();
    assert_eq!(db.as_deref(), Some("p_use1"));
    c2.query_drop("SET @v = 1").await.unwrap();
    c2.change_user(
        mysql_async::ChangeUserOpts::default()
            .with_user(Some("app".into()))
            .with_pass(Some("secret".into()))
            .with_db_name(Some("p_use2".into())),
    )
    .await
    .unwrap();
    let (db, v): (Option<String>, Option<i64>) = c2
        .query_first("SELECT DATABASE(), @v")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(db.as_deref(), Some("p_use2"));
    assert_eq!(v, None);
    c2.disconnect().await.unwrap();
    // Unknown database at login: error 1049.
    let e = mysql_async::Conn::new(proxy_opts(info.proxy_port, Some("nope_db")))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1049);
}

#[tokio::test]
async fn last_insert_id_survives_connection_changes() {
    fresh_db("p_lid").await;
    let mut c = proxy_conn(Some("p_lid")).await;
    c.query_drop("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO t (v) VALUES (1), (2), (3)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO t (v) VALUES (4)").await.unwrap();
    // Other sessions insert in between on whatever connections they get.
    for _ in 0..5 {
        let mut o = proxy_conn(Some("p_lid")).await;
        o.query_drop("INSERT INTO t (v) VALUES (9)").await.unwrap();
        o.disconnect().await.unwrap();
    }
    let id: Option<u64> = c.query_first("SELECT LAST_INSERT_ID()").await.unwrap();
    assert_eq!(id, Some(4));
    c.disconnect().await.unwrap();
}

#[tokio::test]
async fn large_result_streams_completely() {
    let mut c = proxy_conn(Some("mysql")).await;
    let (n, sum, len): (i64, i64, i64) = c
        .query_first("SELECT COUNT(*), SUM(seq), SUM(LENGTH(x)) FROM (SELECT seq, REPEAT('x', 500) AS x FROM seq_1_to_200000) s")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((n, sum, len), (200_000, 200_000 * 200_001 / 2, 100_000_000));
    let mut rows = 0u64;
    let mut total = 0u64;
    let mut r = c
        .query_iter("SELECT seq, REPEAT('y', 500) FROM seq_1_to_200000")
        .await
        .unwrap();
    r.for_each(|row: Row| {
        rows += 1;
        let v: u64 = row.get(0).unwrap();
        total += v;
    })
    .await
    .unwrap();
    drop(r);
    assert_eq!(rows, 200_000);
    assert_eq!(total, 200_000 * 200_001 / 2);
    // A row larger than 16 MiB is split into several packets and joined again.
    let big: Option<Vec<u8>> = c.query_first("SELECT REPEAT('z', 20000000)").await.unwrap();
    assert_eq!(big.map(|b| b.len()), Some(20_000_000));
    c.disconnect().await.unwrap();
}

#[tokio::test]
async fn kill_query_and_connection_use_hscale_ids() {
    let mut victim = proxy_conn(None).await;
    let victim_id = victim.id();
    // CONNECTION_ID() is the handshake's id for the whole session, also
    // inside a transaction and after it, on whichever backend connection.
    for sql in [
        "SELECT CONNECTION_ID()",
        "BEGIN",
        "SELECT CONNECTION_ID()",
        "COMMIT",
        "SELECT connection_id() + 0",
    ] {
        if sql.starts_with("SELECT") {
            let id: Option<u64> = victim.query_first(sql).await.unwrap();
            assert_eq!(id, Some(u64::from(victim_id)), "{sql}");
        } else {
            victim.query_drop(sql).await.unwrap();
        }
    }
    let mut killer = proxy_conn(None).await;
    let sleeper = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let r: Result<Option<i64>, _> = victim.query_first("SELECT SLEEP(20)").await;
        (victim, r, started.elapsed())
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    killer
        .query_drop(format!("KILL QUERY {victim_id}"))
        .await
        .unwrap();
    let (mut victim, r, took) = sleeper.await.unwrap();
    // MariaDB answers a killed SLEEP() with 1 (interrupted) or error 1317.
    match r {
        Ok(v) => assert_eq!(v, Some(1)),
        Err(e) => assert_eq!(code(&e), 1317),
    }
    assert!(
        took < std::time::Duration::from_secs(10),
        "KILL QUERY did not stop the statement"
    );
    // KILL QUERY leaves the session usable.
    let one: Option<i32> = victim.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    // Unknown ids and other users' sessions are refused.
    let e = killer.query_drop("KILL 4000000000").await.unwrap_err();
    assert_eq!(code(&e), 1094);
    let info = cluster(2);
    let app = mysql_async::OptsBuilder::from_opts(proxy_opts(info.proxy_port, None))
        .user(Some("app"))
        .pass(Some("secret"));
    let mut app = mysql_async::Conn::new(app).await.unwrap();
    let e = app
        .query_drop(format!("KILL {victim_id}"))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1095);
    app.disconnect().await.unwrap();
    // KILL CONNECTION ends the session.
    killer
        .query_drop(format!("KILL CONNECTION {victim_id}"))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        victim.query_drop("SELECT 1").await.is_err(),
        "killed session still answers"
    );
    killer.disconnect().await.unwrap();
}
