#![allow(clippy::unwrap_used)]
//! Admin commands on three real backends: SETUP_TABLE, ADD_PARTITION,
//! DROP_PARTITION, SHOW ..., RELOAD; rows moved to the right partitions;
//! statements on partitioned tables refused until routing exists.

mod common;

use common::*;
use mysql_async::prelude::*;
use mysql_async::Row;

async fn count(backend: usize, sql: &str) -> i64 {
    let mut b = backend_conn(backend, None).await;
    let n: Option<i64> = b.query_first(sql).await.unwrap();
    b.disconnect().await.unwrap();
    n.unwrap()
}

async fn table_exists(backend: usize, db: &str, table: &str) -> bool {
    count(
        backend,
        &format!("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{table}'"),
    )
    .await
        == 1
}

#[tokio::test]
async fn admin_commands_move_rows_and_keep_the_dictionary() {
    let info = cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE part_db").await.unwrap();
    c.query_drop("USE part_db").await.unwrap();
    c.query_drop(
        "CREATE TABLE small (id INT UNSIGNED NOT NULL, category VARCHAR(20) NOT NULL, PRIMARY KEY (id, category))",
    )
    .await
    .unwrap();
    c.query_drop(
        "INSERT INTO small VALUES (1,'books'),(2,'hardware'),(3,'software'),(4,'books'),(5,'books'),(6,'hardware'),(7,'software')",
    )
    .await
    .unwrap();

    // Only admins may run HSCALE commands.
    let app = mysql_async::OptsBuilder::from_opts(proxy_opts(info.proxy_port, None))
        .user(Some("app"))
        .pass(Some("secret"));
    let mut app = mysql_async::Conn::new(app).await.unwrap();
    let e = app.query_drop("HSCALE SHOW TABLES").await.unwrap_err();
    assert_eq!(code(&e), 1227);
    app.disconnect().await.unwrap();

    // SETUP_TABLE moves the table, with its rows, to its default backend.
    c.query_drop("HSCALE SETUP_TABLE('small', 'category', 'small_default', 'shard1', 'NONE()')")
        .await
        .unwrap();
    assert!(!table_exists(0, "part_db", "small").await);
    assert_eq!(
        count(1, "SELECT COUNT(*) FROM part_db.small_default").await,
        7
    );
    let e = c
        .query_drop("HSCALE SETUP_TABLE('small', 'category', 'small_default', 'shard1', 'NONE()')")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("already set up"), "{e}");

    // Statements on the partitioned table are routed. Its key is a string
    // under a case-insensitive collation, so every partition is read, and
    // 'BOOKS' finds the 'books' rows as one server would.
    let books: Vec<(u32, String)> = c
        .query("SELECT id, category FROM small WHERE category = 'BOOKS'")
        .await
        .unwrap();
    assert_eq!(books.len(), 3, "{books:?}");
    // Prepared statements run on every partition when the key cannot pick one.
    let st = c
        .prep("SELECT id, category FROM small WHERE id = ?")
        .await
        .unwrap();
    let one: Vec<(u32, String)> = c.exec(&st, (4,)).await.unwrap();
    assert_eq!(one, vec![(4, "books".to_string())]);

    // ADD_PARTITION creates the physical table and moves the matching
    // rows; the default partition, which lost keys, has a new name.
    c.query_drop("HSCALE ADD_PARTITION('small', 'books', 'books', 'shard2')")
        .await
        .unwrap();
    let books = physical("part_db.small", Some("books")).await;
    let default = physical("part_db.small", None).await;
    assert!(books.starts_with("small_books_g"), "{books}");
    assert!(default.starts_with("small_default_g"), "{default}");
    assert!(!table_exists(1, "part_db", "small_default").await);
    assert_eq!(
        count(2, &format!("SELECT COUNT(*) FROM part_db.{books}")).await,
        3
    );
    assert_eq!(
        count(1, &format!("SELECT COUNT(*) FROM part_db.{default}")).await,
        4
    );
    assert_eq!(
        count(
            2,
            &format!("SELECT COUNT(*) FROM part_db.{books} WHERE category <> 'books'")
        )
        .await,
        0
    );
    // A second value for the same partition.
    c.query_drop("HSCALE ADD_PARTITION('part_db.small', 'books', 'hardware', 3)")
        .await
        .unwrap();
    assert_eq!(physical("part_db.small", Some("books")).await, books);
    let default = physical("part_db.small", None).await;
    assert_eq!(
        count(2, &format!("SELECT COUNT(*) FROM part_db.{books}")).await,
        5
    );
    assert_eq!(
        count(1, &format!("SELECT COUNT(*) FROM part_db.{default}")).await,
        2
    );

    // Inconsistent requests are refused with the reason.
    for (sql, want) in [
        (
            "HSCALE ADD_PARTITION('small', 'other', 'books', 'shard2')",
            "already mapped",
        ),
        (
            "HSCALE ADD_PARTITION('small', 'books', 'toys', 'shard1')",
            "is on backend #3, not #2",
        ),
        (
            "HSCALE ADD_PARTITION('small', 'toys', 'toys', 'nope')",
            "unknown backend \"nope\"",
        ),
        (
            "HSCALE ADD_PARTITION('missing', 'p', 'v', 'shard1')",
            "is not a partitioned table",
        ),
        (
            "HSCALE SETUP_TABLE('nothere', 'c', 'd', 'shard1', 'MOD(2)')",
            "does not exist",
        ),
        ("HSCALE DROP_PARTITION('small', 'nope')", "has no partition"),
        (
            "HSCALE SETUP_TABLE('t', 'c', 'd', 'shard1', 'SHA(2)')",
            "unknown hashing function",
        ),
    ] {
        let e = c.query_drop(sql).await.unwrap_err();
        assert!(e.to_string().contains(want), "{sql}: {e}");
    }

    // SHOW commands.
    let rows: Vec<Row> = c.query("HSCALE SHOW PARTITIONS('small')").await.unwrap();
    type Shown = (String, Option<String>, Option<String>, String, String);
    let parts: Vec<Shown> = rows
        .iter()
        .map(|r| {
            (
                r.get(0).unwrap(),
                r.get(1).unwrap(),
                r.get(2).unwrap(),
                r.get(3).unwrap(),
                r.get(4).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        parts,
        vec![
            (
                "part_db.small".into(),
                None,
                None,
                "shard1".into(),
                default.clone()
            ),
            (
                "part_db.small".into(),
                Some("books".into()),
                // Partition values are the collation's weights
                // (utf8mb4_general_ci: upper case).
                Some("BOOKS".into()),
                "shard2".into(),
                books.clone()
            ),
            (
                "part_db.small".into(),
                Some("books".into()),
                Some("HARDWARE".into()),
                "shard2".into(),
                books.clone()
            ),
        ]
    );
    let mut tables: Vec<(String, String, String, String, String)> =
        c.query("HSCALE SHOW TABLES").await.unwrap();
    // The other test in this binary sets up its own table meanwhile.
    tables.retain(|t| t.0.starts_with("part_db."));
    assert_eq!(
        tables,
        vec![(
            "part_db.small".into(),
            "category".into(),
            "NONE()".into(),
            default.clone(),
            "shard1".into()
        )]
    );
    let backends: Vec<(String, String, String, String, String, Option<String>)> =
        c.query("HSCALE SHOW BACKENDS").await.unwrap();
    assert_eq!(backends.len(), 3);
    assert!(backends.iter().all(|b| b.2 == "up" && b.5.is_none()));

    // A second proxy reads the same dictionary from the main backend.
    let other = hscale::RunningProxy::start(cluster_config(), "127.0.0.1:0").unwrap();
    let mut o = mysql_async::Conn::new(proxy_opts(other.addr.port(), Some("part_db")))
        .await
        .unwrap();
    let mut t: Vec<(String, String, String, String, String)> =
        o.query("HSCALE SHOW TABLES").await.unwrap();
    t.retain(|t| t.0.starts_with("part_db."));
    assert_eq!(t, tables);
    let plan: Vec<(String, String, String)> = o
        .query("HSCALE EXPLAIN SELECT COUNT(*) FROM small")
        .await
        .unwrap();
    assert_eq!(plan.last().unwrap().0, "proxy", "{plan:?}");
    o.query_drop("HSCALE RELOAD").await.unwrap();
    o.disconnect().await.unwrap();
    drop(other);

    // DROP_PARTITION brings the rows back to the default partition, which
    // keeps its name (it only gains keys); the partition's table is gone.
    c.query_drop("HSCALE DROP_PARTITION('small', 'books')")
        .await
        .unwrap();
    assert_eq!(physical("part_db.small", None).await, default);
    assert_eq!(
        count(1, &format!("SELECT COUNT(*) FROM part_db.{default}")).await,
        7
    );
    assert!(!table_exists(2, "part_db", &books).await);
    let rows: Vec<(String, Option<String>)> = c
        .query_map("HSCALE SHOW PARTITIONS", |r: Row| {
            (r.get(0).unwrap(), r.get(1).unwrap())
        })
        .await
        .unwrap();
    assert!(
        rows.iter()
            .all(|r| !r.0.starts_with("part_db.") || r.1.is_none()),
        "only the default partition is left: {rows:?}"
    );
    c.disconnect().await.unwrap();
}

/// Rows cross backends byte for byte (binary data, NULLs, quotes), and the
/// rows that move are exactly those whose partition value matches.
#[tokio::test]
async fn rows_move_across_backends_intact() {
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE part_mod").await.unwrap();
    c.query_drop("USE part_mod").await.unwrap();
    c.query_drop(
        "CREATE TABLE m (id INT NOT NULL PRIMARY KEY, data BLOB NULL, note VARCHAR(50) NULL)",
    )
    .await
    .unwrap();
    c.query_drop(
        "INSERT INTO m SELECT CAST(seq AS SIGNED) - 10, IF(seq % 4 = 0, NULL, UNHEX(CONCAT('00FF27', HEX(seq)))), IF(seq % 5 = 0, NULL, CONCAT('it''s ', seq, ' é\\\\')) FROM seq_1_to_60",
    )
    .await
    .unwrap();
    let before: Vec<(i64, Option<String>, Option<String>)> = {
        let mut b = backend_conn(0, Some("part_mod")).await;
        b.query("SELECT id, HEX(data), note FROM m ORDER BY id")
            .await
            .unwrap()
    };
    assert_eq!(before.len(), 60);
    c.query_drop("HSCALE SETUP_TABLE('m', 'id', 'm_default', 'shard0', 'MOD(3)')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('m', 'one', '1', 'shard1')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('m', 'minus', '-1', 'shard2')")
        .await
        .unwrap();
    let e = c
        .query_drop("HSCALE ADD_PARTITION('m', 'x', '3', 'shard2')")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("MOD(3) can never produce"), "{e}");
    let mut after = Vec::new();
    let names = physical_tables("part_mod.m").await;
    let name = |p: &str| names[p].1.clone();
    let (m_default, m_one, m_minus) = (name(""), name("one"), name("minus"));
    for (backend, table) in [(0, &m_default), (1, &m_one), (2, &m_minus)] {
        let mut b = backend_conn(backend, Some("part_mod")).await;
        let rows: Vec<(i64, Option<String>, Option<String>)> = b
            .query(format!(
                "SELECT id, HEX(data), note FROM {table} ORDER BY id"
            ))
            .await
            .unwrap();
        for r in &rows {
            let want = match table {
                t if *t == m_one => 1,
                t if *t == m_minus => -1,
                _ => r.0 % 3,
            };
            assert_eq!(r.0 % 3, want, "row {} in {table}", r.0);
            assert!(
                *table != m_default || (r.0 % 3 != 1 && r.0 % 3 != -1),
                "row {} stayed in default",
                r.0
            );
        }
        after.extend(rows);
        b.disconnect().await.unwrap();
    }
    after.sort();
    assert_eq!(after, before);
    c.disconnect().await.unwrap();
}

type OrderRow = (i64, i64, i64, Option<String>);

async fn rows(c: &mut mysql_async::Conn, sql: &str) -> Vec<OrderRow> {
    let mut r: Vec<OrderRow> = c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    r.sort();
    r
}

/// Routed statements give what one server holding all the rows gives: the
/// same statements run on a partitioned table and on an unpartitioned copy.
#[tokio::test]
async fn routed_statements_match_one_server() {
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE part_route").await.unwrap();
    c.query_drop("USE part_route").await.unwrap();
    for t in ["orders", "ref_orders"] {
        c.query_drop(format!(
            "CREATE TABLE {t} (id INT NOT NULL, customer_id INT NOT NULL, amount INT NOT NULL, note VARCHAR(20) NULL, PRIMARY KEY (id, customer_id))"
        ))
        .await
        .unwrap();
    }
    c.query_drop(
        "HSCALE SETUP_TABLE('orders', 'customer_id', 'orders_default', 'shard0', 'MOD(4)')",
    )
    .await
    .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('orders', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('orders', 'p2', '2', 'shard2')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('orders', 'p3', '3', 'shard1')")
        .await
        .unwrap();
    let values: Vec<String> = (1..=60)
        .map(|i| {
            let note = if i % 7 == 0 {
                "NULL".to_string()
            } else {
                format!("'n{i}'")
            };
            format!("({i}, {}, {}, {note})", i % 13, (i * 37) % 101)
        })
        .collect();
    for t in ["orders", "ref_orders"] {
        c.query_drop(format!(
            "INSERT INTO {t} (id, customer_id, amount, note) VALUES {}",
            values.join(", ")
        ))
        .await
        .unwrap();
        assert_eq!(c.affected_rows(), 60, "{t}");
    }
    // Each physical table holds exactly its partition's rows.
    let names = physical_tables("part_route.orders").await;
    for (part, want) in [("", 0), ("p1", 1), ("p2", 2), ("p3", 3)] {
        let (backend, table) = names[part].clone();
        let mut b = backend_conn(backend, Some("part_route")).await;
        let (n, wrong): (i64, i64) = b
            .query_first(format!(
                "SELECT COUNT(*), COALESCE(SUM(customer_id MOD 4 <> {want}), 0) FROM {table}"
            ))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "{table} is empty");
        assert_eq!(wrong, 0, "{table} holds rows of another partition");
        b.disconnect().await.unwrap();
    }
    let same = |q: &str| (q.replace("{t}", "orders"), q.replace("{t}", "ref_orders"));
    for q in [
        "SELECT id, customer_id, amount, note FROM {t} WHERE customer_id = 5",
        "SELECT id, customer_id, amount, note FROM {t} WHERE customer_id IN (1, 2, 7, 12)",
        "SELECT id, customer_id, amount, note FROM {t} WHERE amount > 50",
        "SELECT o.id, o.customer_id, o.amount, o.note FROM {t} o WHERE o.customer_id = 3 AND o.amount < 100",
        "SELECT {t}.id, customer_id, amount, note FROM {t} WHERE {t}.customer_id = '9'",
        "SELECT id, customer_id, amount, note FROM {t} WHERE customer_id = 1 OR amount = 3",
        "SELECT id, customer_id, amount, note FROM {t} WHERE customer_id = 4 AND customer_id = 5",
        "SELECT id, customer_id, amount, note FROM {t}",
    ] {
        let (p, r) = same(q);
        assert_eq!(rows(&mut c, &p).await, rows(&mut c, &r).await, "{q}");
    }
    // Within one partition, ordering, limits and aggregates are the server's own.
    for q in [
        "SELECT id FROM {t} WHERE customer_id = 6 ORDER BY amount DESC, id LIMIT 3",
        "SELECT COUNT(*) FROM {t} WHERE customer_id = 4",
    ] {
        let (p, r) = same(q);
        let a: Vec<i64> = c.query(&p).await.unwrap();
        let b: Vec<i64> = c.query(&r).await.unwrap();
        assert_eq!(a, b, "{q}");
    }
    // Across partitions they are merged at the proxy.
    for q in [
        "SELECT COUNT(*) FROM {t}",
        "SELECT id FROM {t} ORDER BY id",
        "SELECT id FROM {t} ORDER BY amount DESC, id LIMIT 4, 5",
    ] {
        let (p, r) = same(q);
        let a: Vec<i64> = c.query(&p).await.unwrap();
        let b: Vec<i64> = c.query(&r).await.unwrap();
        assert_eq!(a, b, "{q}");
    }
    // A join with an unpartitioned table, not on the key: that table is
    // shipped next to every partition.
    let mut got: Vec<(i64, i64)> = c
        .query("SELECT o.id, r.amount FROM orders o JOIN ref_orders r ON r.id = o.id")
        .await
        .unwrap();
    let mut want: Vec<(i64, i64)> = c
        .query("SELECT o.id, r.amount FROM ref_orders o JOIN ref_orders r ON r.id = o.id")
        .await
        .unwrap();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // Writes: the same affected rows, the same data afterwards.
    for q in [
        "UPDATE {t} SET amount = amount + 1 WHERE customer_id = 5",
        "UPDATE {t} SET note = 'cheap' WHERE amount < 20",
        "DELETE FROM {t} WHERE customer_id IN (2, 3)",
        "DELETE FROM {t} WHERE amount > 95",
        "INSERT INTO {t} (id, customer_id, amount, note) VALUES (100, 8, 1, 'x'), (101, 9, 2, NULL), (102, 10, 3, 'it''s')",
    ] {
        let (p, r) = same(q);
        c.query_drop(&p).await.unwrap();
        let a = c.affected_rows();
        c.query_drop(&r).await.unwrap();
        assert_eq!(a, c.affected_rows(), "{q}");
        let all = "SELECT id, customer_id, amount, note FROM {t}";
        let (p, r) = same(all);
        assert_eq!(rows(&mut c, &p).await, rows(&mut c, &r).await, "after {q}");
    }
    // Prepared statements: the key parameter picks the partition at each
    // execution; without one, every partition runs it.
    let sel = c
        .prep("SELECT id, customer_id, amount, note FROM orders WHERE customer_id = ?")
        .await
        .unwrap();
    for k in 0..14i64 {
        let mut a: Vec<OrderRow> = c.exec(&sel, (k,)).await.unwrap();
        a.sort();
        let b = rows(
            &mut c,
            &format!(
                "SELECT id, customer_id, amount, note FROM ref_orders WHERE customer_id = {k}"
            ),
        )
        .await;
        assert_eq!(a, b, "prepared select for key {k}");
    }
    let scan = c
        .prep("SELECT id, customer_id, amount, note FROM orders WHERE amount > ?")
        .await
        .unwrap();
    let mut a: Vec<OrderRow> = c.exec(&scan, (40,)).await.unwrap();
    a.sort();
    assert_eq!(
        a,
        rows(
            &mut c,
            "SELECT id, customer_id, amount, note FROM ref_orders WHERE amount > 40"
        )
        .await
    );
    let upd = c
        .prep("UPDATE orders SET amount = ? WHERE customer_id = ?")
        .await
        .unwrap();
    c.exec_drop(&upd, (77, 6)).await.unwrap();
    let n = c.affected_rows();
    c.query_drop("UPDATE ref_orders SET amount = 77 WHERE customer_id = 6")
        .await
        .unwrap();
    assert_eq!(n, c.affected_rows());
    let (p, r) = same("SELECT id, customer_id, amount, note FROM {t}");
    assert_eq!(
        rows(&mut c, &p).await,
        rows(&mut c, &r).await,
        "after prepared update"
    );
    // Prepared INSERTs: the key parameters place each execution's rows.
    for t in ["orders", "ref_orders"] {
        let one = c
            .prep(format!(
                "INSERT INTO {t} (id, customer_id, amount, note) VALUES (?, ?, ?, ?)"
            ))
            .await
            .unwrap();
        for i in 0..12i64 {
            let note = (i % 3 != 0).then(|| format!("p{i}"));
            c.exec_drop(&one, (600 + i, i % 7, i * 2, note))
                .await
                .unwrap();
            assert_eq!(c.affected_rows(), 1);
        }
        let two = c
            .prep(format!(
                "INSERT INTO {t} (id, amount, customer_id) VALUES (?, ?, ?), (?, 5, ?)"
            ))
            .await
            .unwrap();
        c.exec_drop(&two, (700, 1, 5, 701, 9)).await.unwrap();
        assert_eq!(c.affected_rows(), 2);
        // Rows for different partitions (1 and 2 in orders): split by rows.
        c.exec_drop(&two, (702, 1, 1, 703, 2)).await.unwrap();
        assert_eq!(c.affected_rows(), 2);
    }
    let (p, r) = same("SELECT id, customer_id, amount, note FROM {t}");
    assert_eq!(
        rows(&mut c, &p).await,
        rows(&mut c, &r).await,
        "after prepared inserts"
    );
    for backend in 1..3 {
        // Every row is in the partition of its key (MOD(4): p1 = 1, p2 = 2 on shard1/shard2).
        let mut b = backend_conn(backend, Some("part_route")).await;
        let table = physical(
            "part_route.orders",
            Some(if backend == 1 { "p1" } else { "p2" }),
        )
        .await;
        let bad: Option<i64> = b
            .query_first(format!(
                "SELECT COUNT(*) FROM {table} WHERE customer_id % 4 <> {backend}"
            ))
            .await
            .unwrap();
        assert_eq!(bad, Some(0), "{table}");
        b.disconnect().await.unwrap();
    }
    let e = c
        .prep("INSERT INTO orders (id, customer_id, amount) VALUES (?, 1, 1), (?, 2, 1)")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235);
    // A prepared aggregate whose key is a parameter runs the text plan
    // with the value written in (it was refused).
    let stmt = c
        .prep("SELECT COUNT(*) FROM orders WHERE customer_id = ?")
        .await
        .unwrap();
    let prepared: Option<i64> = c.exec_first(&stmt, (1,)).await.unwrap();
    let text: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM orders WHERE customer_id = 1")
        .await
        .unwrap();
    assert_eq!(prepared, text);
    let e = c
        .query_drop("UPDATE orders SET customer_id = 2 ORDER BY id LIMIT 1")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235);
    // Without the key column (NOT NULL, no default): the server's own
    // 1364 in strict mode, as one server answers (it was refused).
    let e = c
        .query_drop("INSERT INTO orders (id, amount) VALUES (500, 1)")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1364);
    // HSCALE EXPLAIN shows each backend and the exact SQL it would receive.
    let plan: Vec<(String, String, String)> = c
        .query("HSCALE EXPLAIN SELECT id FROM orders WHERE customer_id IN (5, 6)")
        .await
        .unwrap();
    assert_eq!(
        plan_shape(plan),
        vec![
            (
                "shard1".to_string(),
                "concatenate rows: orders_p1".to_string(),
                "SELECT id FROM `part_route`.`orders_p1` AS `orders` WHERE customer_id IN (5, 6)"
                    .to_string()
            ),
            (
                "shard2".to_string(),
                "concatenate rows: orders_p2".to_string(),
                "SELECT id FROM `part_route`.`orders_p2` AS `orders` WHERE customer_id IN (5, 6)"
                    .to_string()
            ),
        ]
    );
    let plan: Vec<(String, String, String)> = c.query("HSCALE EXPLAIN SELECT 1").await.unwrap();
    assert_eq!(plan[0].1, "passthrough");
    // A merge shows the column-definition statement, every fragment (the
    // partitions of one backend share one statement) and what the proxy does.
    let plan: Vec<(String, String, String)> = c
        .query("HSCALE EXPLAIN SELECT COUNT(*) FROM orders")
        .await
        .unwrap();
    let plan = plan_shape(plan);
    assert_eq!(plan.len(), 5, "{plan:?}");
    assert_eq!(plan[0].1, "column definitions");
    assert_eq!(
        plan[1].2,
        "SELECT COUNT(*) FROM `part_route`.`orders_default` AS `orders`"
    );
    assert_eq!(
        plan[2].2,
        "SELECT COUNT(*) FROM `part_route`.`orders_p1` AS `orders` UNION ALL SELECT COUNT(*) FROM `part_route`.`orders_p3` AS `orders`"
    );
    assert_eq!(
        plan[4],
        (
            "proxy".to_string(),
            "merge".to_string(),
            "combine partial groups of 3 fragments on 0 key(s): COUNT (sum of counts)".to_string()
        )
    );
    // information_schema and SHOW INDEX answer for T as for one table.
    type ColRow = (String, String, u64, String, String, Option<String>);
    let columns = |t: &str| {
        format!("SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'part_route' AND TABLE_NAME = '{t}' ORDER BY ORDINAL_POSITION")
    };
    let got: Vec<ColRow> = c.query(columns("orders")).await.unwrap();
    let want: Vec<ColRow> = c.query(columns("ref_orders")).await.unwrap();
    let want: Vec<ColRow> = want
        .into_iter()
        .map(|mut r| {
            r.0 = "orders".into();
            r
        })
        .collect();
    assert_eq!(got.len(), 4);
    assert_eq!(got, want);
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('orders')")
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    let index = |t: &str| format!("SHOW INDEX FROM {t}");
    let got: Vec<Row> = c.query(index("orders")).await.unwrap();
    let want: Vec<Row> = c.query(index("ref_orders")).await.unwrap();
    let cells = |rows: &[Row]| -> Vec<Vec<Option<String>>> {
        rows.iter()
            .map(|r| {
                (0..5)
                    .map(|i| r.get::<Option<String>, _>(i).flatten())
                    .collect()
            })
            .collect()
    };
    let mut want = cells(&want);
    for r in &mut want {
        r[0] = Some("orders".into());
    }
    assert_eq!(cells(&got), want);
    // Without its schema, a question naming T is about every schema's T:
    // the partitioned one shows its columns once, under its name.
    let got: Vec<(String, String)> = c
        .query(
            "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_NAME = 'orders' AND TABLE_SCHEMA = DATABASE() ORDER BY ORDINAL_POSITION",
        )
        .await
        .unwrap();
    let without_schema: Vec<(String, String)> = c
        .query(
            "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_NAME = 'orders' ORDER BY TABLE_SCHEMA = DATABASE() DESC, ORDINAL_POSITION",
        )
        .await
        .unwrap();
    assert!(
        !got.is_empty() && without_schema.starts_with(&got),
        "{without_schema:?}"
    );
    // SHOW TABLES lists the partitioned table once and hides its physical tables.
    let tables: Vec<String> = c.query("SHOW TABLES").await.unwrap();
    assert_eq!(tables, vec!["orders".to_string(), "ref_orders".to_string()]);
    let full: Vec<(String, String)> = c
        .query("SHOW FULL TABLES FROM part_route LIKE 'ord%'")
        .await
        .unwrap();
    assert_eq!(full, vec![("orders".to_string(), "BASE TABLE".to_string())]);
    // A transaction reaches any backend (a branch on each, tests/transactions.rs);
    // a statement over several partitions opens it on every part, and
    // ROLLBACK undoes all of it.
    let before = rows(&mut c, "SELECT id, customer_id, amount, note FROM orders").await;
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE orders SET amount = 0 WHERE customer_id = 1")
        .await
        .unwrap();
    c.query_drop("UPDATE orders SET amount = 0 WHERE customer_id = 5")
        .await
        .unwrap();
    c.query_drop("UPDATE orders SET amount = 0 WHERE customer_id = 2")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE orders SET amount = amount + 1 WHERE amount > 0")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    // A user variable over several partitions (each part runs on its own
    // connection): refused, nothing changed.
    let e = c
        .query_drop("UPDATE orders SET amount = amount + 1 WHERE id = @no_such_id")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235);
    assert_eq!(
        rows(&mut c, "SELECT id, customer_id, amount, note FROM orders").await,
        before
    );
    // Committed work on a partition's backend stays.
    for t in ["orders", "ref_orders"] {
        c.query_drop("START TRANSACTION").await.unwrap();
        c.query_drop(format!("UPDATE {t} SET note = 'tx' WHERE customer_id = 6"))
            .await
            .unwrap();
        c.query_drop("COMMIT").await.unwrap();
    }
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("COMMIT").await.unwrap();
    let (p, r) = same("SELECT id, customer_id, amount, note FROM {t}");
    assert_eq!(
        rows(&mut c, &p).await,
        rows(&mut c, &r).await,
        "after rollback"
    );
    c.disconnect().await.unwrap();
}

/// Every hashing function, on the key type it prunes on, against an
/// unpartitioned copy: reads, writes and placement.
#[tokio::test]
async fn every_hashing_function_routes_like_one_server() {
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE part_fn").await.unwrap();
    c.query_drop("USE part_fn").await.unwrap();
    // (table, key type, function, [(partition, value, backend)], key literal for row i)
    type Case = (
        &'static str,
        &'static str,
        &'static str,
        Vec<(&'static str, String, &'static str)>,
        fn(i64) -> String,
    );
    let cases: Vec<Case> = vec![
        (
            "t_none",
            "INT",
            "NONE()",
            vec![("a", "3".into(), "shard1"), ("b", "7".into(), "shard2")],
            |i| (i % 10).to_string(),
        ),
        (
            "t_mod",
            "BIGINT",
            "MOD(5)",
            vec![
                ("a", "1".into(), "shard1"),
                ("b", "-2".into(), "shard2"),
                ("c", "4".into(), "shard2"),
            ],
            |i| (i * 7 - 100).to_string(),
        ),
        (
            "t_div",
            "INT",
            "DIV(25)",
            vec![("lo", "0".into(), "shard1"), ("hi", "3".into(), "shard2")],
            |i| (i * 3).to_string(),
        ),
        (
            "t_hash",
            "INT",
            "HASH(4)",
            vec![("h0", "0".into(), "shard1"), ("h3", "3".into(), "shard2")],
            |i| (i * 13).to_string(),
        ),
        (
            "t_prefix",
            "INT",
            "PREFIX(1)",
            vec![
                ("one", "1".into(), "shard1"),
                ("nine", "9".into(), "shard2"),
            ],
            |i| (i * 11).to_string(),
        ),
        (
            "t_date",
            "DATE",
            "DATE('%Y-%m')",
            vec![
                ("jan", "2024-01".into(), "shard1"),
                ("mar", "2024-03".into(), "shard2"),
            ],
            |i| format!("'2024-{:02}-{:02}'", 1 + i % 4, 1 + i % 28),
        ),
        (
            // ENUM keys are placed by the member a value names, as the
            // server stores it: 'BOOKS' and 'books ' are both 'books'.
            "t_enum",
            "ENUM('books','music','films','toys')",
            "NONE()",
            vec![
                ("b", "books".into(), "shard1"),
                ("m", "music".into(), "shard2"),
            ],
            |i| ["'BOOKS'", "'music '", "'Films'", "'toys'", "'books'"][i as usize % 5].to_string(),
        ),
    ];
    for (table, ty, function, partitions, key) in cases {
        let reference = format!("{table}_ref");
        for t in [table, reference.as_str()] {
            c.query_drop(format!(
                "CREATE TABLE {t} (id INT NOT NULL, k {ty} NOT NULL, v INT NOT NULL, PRIMARY KEY (id, k))"
            ))
            .await
            .unwrap();
        }
        c.query_drop(format!(
            "HSCALE SETUP_TABLE('{table}', 'k', '{table}_default', 'shard0', \"{function}\")"
        ))
        .await
        .unwrap();
        for (p, value, backend) in &partitions {
            c.query_drop(format!(
                "HSCALE ADD_PARTITION('{table}', '{p}', '{value}', '{backend}')"
            ))
            .await
            .unwrap();
        }
        let values: Vec<String> = (0..80)
            .map(|i| format!("({i}, {}, {})", key(i), i * 3 % 17))
            .collect();
        for t in [table, reference.as_str()] {
            c.query_drop(format!(
                "INSERT INTO {t} (id, k, v) VALUES {}",
                values.join(", ")
            ))
            .await
            .unwrap();
            assert_eq!(c.affected_rows(), 80, "{t}");
        }
        // Placement: each physical table holds only keys of its partition values.
        let h = hscale_route::HashingFunction::parse(function).unwrap();
        for (p, value, backend) in &partitions {
            let idx: usize = backend.trim_start_matches("shard").parse().unwrap();
            let mut b = backend_conn(idx, Some("part_fn")).await;
            let physical = physical(&format!("part_fn.{table}"), Some(p)).await;
            let keys: Vec<String> = b
                .query(format!("SELECT CAST(k AS CHAR) FROM {physical}"))
                .await
                .unwrap();
            for k in keys {
                let kv = if ty == "DATE" || ty.starts_with("ENUM") {
                    hscale_route::KeyValue::Str(k.clone())
                } else {
                    hscale_route::KeyValue::Int(k.parse().unwrap())
                };
                assert_eq!(
                    h.apply(&kv).unwrap().as_deref(),
                    Some(value.as_str()),
                    "{table}: key {k} in partition {p}"
                );
            }
            b.disconnect().await.unwrap();
        }
        let probe: Vec<String> = (0..6).map(key).collect();
        let same = |q: &str| (q.replace("{t}", table), q.replace("{t}", &reference));
        for q in [
            format!("SELECT id, v FROM {{t}} WHERE k = {}", probe[1]),
            format!(
                "SELECT id, v FROM {{t}} WHERE k IN ({}, {}, {})",
                probe[2], probe[3], probe[5]
            ),
            format!("SELECT id, v FROM {{t}} WHERE k = {} AND v > 3", probe[4]),
            format!(
                "SELECT id, v FROM {{t}} WHERE k = {} OR (k = {} AND v < 10)",
                probe[1], probe[5]
            ),
            format!(
                "SELECT id, v FROM {{t}} WHERE k BETWEEN {} AND {}",
                probe[1], probe[3]
            ),
            format!(
                "SELECT id, v FROM {{t}} WHERE k >= {} AND k < {} AND v > 2",
                probe[0], probe[4]
            ),
            format!("SELECT id, v FROM {{t}} WHERE k > {}", probe[5]),
            format!("SELECT id, v FROM {{t}} WHERE {} >= k", probe[2]),
            "SELECT id, v FROM {t} WHERE v < 9".to_string(),
            "SELECT id, v FROM {t}".to_string(),
        ] {
            let (p, r) = same(&q);
            let mut a: Vec<(i64, i64)> = c.query(&p).await.unwrap_or_else(|e| panic!("{p}: {e}"));
            let mut b: Vec<(i64, i64)> = c.query(&r).await.unwrap();
            a.sort();
            b.sort();
            assert_eq!(a, b, "{p}");
        }
        for q in [
            format!("UPDATE {{t}} SET v = v + 100 WHERE k = {}", probe[2]),
            format!("DELETE FROM {{t}} WHERE k IN ({}, {})", probe[3], probe[4]),
            "UPDATE {t} SET v = 0 WHERE v > 15".to_string(),
        ] {
            let (p, r) = same(&q);
            c.query_drop(&p).await.unwrap();
            let n = c.affected_rows();
            c.query_drop(&r).await.unwrap();
            assert_eq!(n, c.affected_rows(), "{p}");
        }
        // Ranges are pruned for the order-keeping functions.
        let pruned = match table {
            "t_div" => Some(("SELECT v FROM t_div WHERE k BETWEEN 75 AND 99", 1)),
            "t_none" => Some(("SELECT v FROM t_none WHERE k >= 3 AND k < 8", 3)),
            "t_date" => Some((
                "SELECT v FROM t_date WHERE k >= '2024-03-02' AND k <= '2024-03-30'",
                2,
            )),
            "t_enum" => Some(("SELECT v FROM t_enum WHERE k = 'Books'", 1)),
            _ => None,
        };
        if let Some((q, n)) = pruned {
            let plan: Vec<(String, String, String)> =
                c.query(format!("HSCALE EXPLAIN {q}")).await.unwrap();
            assert_eq!(plan.len(), n, "{q}: {plan:?}");
        }
        let (p, r) = same("SELECT id, v FROM {t}");
        let mut a: Vec<(i64, i64)> = c.query(&p).await.unwrap();
        let mut b: Vec<(i64, i64)> = c.query(&r).await.unwrap();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{table} after writes");
    }
    c.disconnect().await.unwrap();
}

/// DESC and SHOW COLUMNS describe the logical table; ALTER TABLE, CREATE
/// and DROP INDEX and TRUNCATE apply to every partition.
#[tokio::test]
async fn schema_statements_apply_to_every_partition() {
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE part_ddl").await.unwrap();
    c.query_drop("USE part_ddl").await.unwrap();
    for t in ["s", "s_ref"] {
        c.query_drop(format!(
            "CREATE TABLE {t} (id INT NOT NULL, k INT NOT NULL, v VARCHAR(10), PRIMARY KEY (id, k))"
        ))
        .await
        .unwrap();
        c.query_drop(format!(
            "INSERT INTO {t} (id, k, v) VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c')"
        ))
        .await
        .unwrap();
    }
    c.query_drop("HSCALE SETUP_TABLE('s', 'k', 's_default', 'shard0', 'MOD(3)')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('s', 'one', '1', 'shard1')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('s', 'two', '2', 'shard2')")
        .await
        .unwrap();
    let desc = |t: &str| format!("DESC {t}");
    let a: Vec<Row> = c.query(desc("s")).await.unwrap();
    let b: Vec<Row> = c.query(desc("s_ref")).await.unwrap();
    let show = |rows: &[Row]| -> Vec<Vec<Option<String>>> {
        rows.iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| r.get::<Option<String>, _>(i).flatten())
                    .collect()
            })
            .collect()
    };
    assert_eq!(show(&a), show(&b));
    for q in [
        "ALTER TABLE {t} ADD COLUMN extra INT NULL",
        "CREATE INDEX i_v ON {t} (v)",
        "DROP INDEX i_v ON {t}",
        "CREATE INDEX i_extra ON {t} (extra)",
        "ALTER TABLE {t} RENAME COLUMN extra TO extra2",
        "ALTER TABLE {t} RENAME COLUMN extra2 TO extra",
    ] {
        c.query_drop(q.replace("{t}", "s"))
            .await
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        c.query_drop(q.replace("{t}", "s_ref")).await.unwrap();
    }
    let a: Vec<Row> = c.query("SHOW FULL COLUMNS FROM s").await.unwrap();
    let b: Vec<Row> = c.query("SHOW FULL COLUMNS FROM s_ref").await.unwrap();
    assert_eq!(show(&a), show(&b));
    let s_names = physical_tables("part_ddl.s").await;
    for (backend, table) in s_names.values() {
        let backend = *backend;
        let n = count(
            backend,
            &format!("SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'part_ddl' AND TABLE_NAME = '{table}' AND INDEX_NAME = 'i_extra'"),
        )
        .await;
        assert_eq!(n, 1, "{table} lacks the index");
    }
    // RENAME TABLE renames every partition and the dictionary entry.
    let before: Vec<(i64, i64, String)> = c.query("SELECT id, k, v FROM s").await.unwrap();
    c.query_drop("RENAME TABLE s TO s2").await.unwrap();
    let s2_names = physical_tables("part_ddl.s2").await;
    assert_eq!(s2_names.len(), 3);
    for (backend, table) in s2_names.values() {
        assert!(table.starts_with("s2_"), "{table}");
        assert!(table_exists(*backend, "part_ddl", table).await, "{table}");
    }
    for (backend, table) in s_names.values() {
        assert!(!table_exists(*backend, "part_ddl", table).await, "{table}");
    }
    let mut after: Vec<(i64, i64, String)> = c.query("SELECT id, k, v FROM s2").await.unwrap();
    let mut want = before.clone();
    after.sort();
    want.sort();
    assert_eq!(after, want);
    let one: Vec<i64> = c.query("SELECT id FROM s2 WHERE k = 2").await.unwrap();
    assert_eq!(one, vec![2]);
    assert_eq!(
        code(&c.query_drop("SELECT * FROM s").await.unwrap_err()),
        1146
    );
    let e = c.query_drop("RENAME TABLE s2 TO s_ref").await.unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    c.query_drop("ALTER TABLE s2 RENAME TO s").await.unwrap();
    let tables: Vec<(String, String, String, String, String)> =
        c.query("HSCALE SHOW TABLES").await.unwrap();
    assert!(tables.iter().any(|t| t.0 == "part_ddl.s"), "{tables:?}");
    let n: Vec<i64> = c.query("SELECT id FROM s WHERE k = 1").await.unwrap();
    assert_eq!(n, vec![1]);
    c.query_drop("TRUNCATE TABLE s").await.unwrap();
    let n: Vec<i64> = c.query("SELECT id FROM s").await.unwrap();
    assert!(n.is_empty());
    for q in [
        "ALTER TABLE s DROP COLUMN k",
        "CREATE UNIQUE INDEX u ON s (v)",
    ] {
        let e = c.query_drop(q).await.unwrap_err();
        assert_eq!(code(&e), 1235, "{q}");
    }
    // SHOW CREATE TABLE names the logical table.
    let (name, ddl): (String, String) =
        c.query_first("SHOW CREATE TABLE s").await.unwrap().unwrap();
    let (_, ref_ddl): (String, String) = c
        .query_first("SHOW CREATE TABLE s_ref")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(name, "s");
    assert_eq!(ddl, ref_ddl.replace("`s_ref`", "`s`"));
    // DROP TABLE drops every partition and forgets the table.
    let s_names = physical_tables("part_ddl.s").await;
    assert_eq!(s_names.len(), 3);
    c.query_drop("DROP TABLE s").await.unwrap();
    for (backend, table) in s_names.values() {
        assert!(
            !table_exists(*backend, "part_ddl", table).await,
            "{table} still exists"
        );
    }
    let tables: Vec<(String, String, String, String, String)> =
        c.query("HSCALE SHOW TABLES").await.unwrap();
    assert!(tables.iter().all(|t| t.0 != "part_ddl.s"), "{tables:?}");
    let e = c.query_drop("SELECT * FROM s").await.unwrap_err();
    assert_eq!(code(&e), 1146);
    c.disconnect().await.unwrap();
}

/// A change made through one proxy reaches another within reload_interval.
#[tokio::test]
async fn other_proxies_reload_the_dictionary() {
    cluster(3);
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 200;
    let other = hscale::RunningProxy::start(config, "127.0.0.1:0").unwrap();
    let mut o = mysql_async::Conn::new(proxy_opts(other.addr.port(), None))
        .await
        .unwrap();
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE part_reload").await.unwrap();
    c.query_drop("CREATE TABLE part_reload.r (id INT NOT NULL PRIMARY KEY)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO part_reload.r VALUES (1), (2), (3)")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('part_reload.r', 'id', 'r_default', 'shard0', 'MOD(2)')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('part_reload.r', 'odd', '1', 'shard1')")
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    let parts: Vec<Row> = o
        .query("HSCALE SHOW PARTITIONS('part_reload.r')")
        .await
        .unwrap();
    assert_eq!(parts.len(), 2, "the default partition and one more");
    // The other proxy routes with the new dictionary.
    let ids: Vec<i64> = o
        .query("SELECT id FROM part_reload.r WHERE id = 3")
        .await
        .unwrap();
    assert_eq!(ids, vec![3]);
    let plan: Vec<(String, String, String)> = o
        .query("HSCALE EXPLAIN SELECT id FROM part_reload.r WHERE id = 3")
        .await
        .unwrap();
    assert_eq!(plan[0].0, "shard1");
    o.disconnect().await.unwrap();
    c.disconnect().await.unwrap();
}

/// Joins whose partitioned tables are each limited to one partition, all on
/// one backend, give what one server gives; other joins are refused.
#[tokio::test]
async fn joins_on_one_backend_match_one_server() {
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE part_join").await.unwrap();
    c.query_drop("USE part_join").await.unwrap();
    for t in ["a", "b", "a_ref", "b_ref"] {
        c.query_drop(format!(
            "CREATE TABLE {t} (id INT NOT NULL, k INT NOT NULL, v INT NULL, PRIMARY KEY (id, k))"
        ))
        .await
        .unwrap();
    }
    c.query_drop("CREATE TABLE cust (k INT NOT NULL PRIMARY KEY, name VARCHAR(10))")
        .await
        .unwrap();
    for t in ["a", "b"] {
        c.query_drop(format!(
            "HSCALE SETUP_TABLE('{t}', 'k', '{t}_default', 'shard0', 'MOD(3)')"
        ))
        .await
        .unwrap();
        for (p, v, backend) in [("p1", 1, "shard1"), ("p2", 2, "shard2")] {
            c.query_drop(format!(
                "HSCALE ADD_PARTITION('{t}', '{p}', '{v}', '{backend}')"
            ))
            .await
            .unwrap();
        }
    }
    for t in ["a", "a_ref"] {
        let rows: Vec<String> = (0..60)
            .map(|i| format!("({i}, {}, {})", i % 7, i * 5 % 11))
            .collect();
        c.query_drop(format!(
            "INSERT INTO {t} (id, k, v) VALUES {}",
            rows.join(",")
        ))
        .await
        .unwrap();
    }
    for t in ["b", "b_ref"] {
        let rows: Vec<String> = (0..90)
            .map(|i| {
                let v = if i % 4 == 0 {
                    "NULL".to_string()
                } else {
                    (i % 13).to_string()
                };
                format!("({i}, {}, {v})", i % 9)
            })
            .collect();
        c.query_drop(format!(
            "INSERT INTO {t} (id, k, v) VALUES {}",
            rows.join(",")
        ))
        .await
        .unwrap();
    }
    c.query_drop("INSERT INTO cust VALUES (0, 'zero'), (3, 'three'), (6, 'six'), (1, 'one')")
        .await
        .unwrap();
    type Row3 = (i64, Option<i64>, Option<i64>);
    for k in 0..8 {
        for q in [
            "SELECT x.id, y.id, y.v FROM {a} x JOIN {b} y ON y.k = x.k WHERE x.k = {k}",
            "SELECT {a}.id, {b}.id, {b}.v FROM {a}, {b} WHERE {a}.k = {b}.k AND {b}.k = {k} AND {a}.v > 2",
            "SELECT x.id, y.id, y.v FROM {a} x LEFT JOIN {b} y ON y.k = x.k AND y.v > 5 WHERE x.k = {k}",
            "SELECT x.id, x.k, y.id FROM {a} x JOIN {a} y ON x.k = y.k AND x.id < y.id WHERE y.k IN ({k})",
            "SELECT x.id, x.k, 0 FROM {a} x WHERE x.k = {k} AND x.k = {k}",
        ] {
            let q = q.replace("{k}", &k.to_string());
            let p = q.replace("{a}", "a").replace("{b}", "b");
            let r = q.replace("{a}", "a_ref").replace("{b}", "b_ref");
            let mut got: Vec<Row3> = c.query(&p).await.unwrap_or_else(|e| panic!("{p}: {e}"));
            let mut want: Vec<Row3> = c.query(&r).await.unwrap();
            got.sort();
            want.sort();
            assert_eq!(got, want, "{p}");
        }
        // With an unpartitioned table: joined where the partition is (on
        // the main backend as it is, elsewhere shipped next to it).
        let q = "SELECT x.id, c.name FROM {a} x JOIN cust c ON c.k = x.k WHERE x.k = {k}"
            .replace("{k}", &k.to_string());
        let p = q.replace("{a}", "a");
        let mut got: Vec<(i64, String)> = c.query(&p).await.unwrap();
        let mut want: Vec<(i64, String)> = c.query(q.replace("{a}", "a_ref")).await.unwrap();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{p}");
    }
    // Joined on the key without fixing it: the join runs in each partition.
    for q in [
        "SELECT x.id, y.id, y.v FROM {a} x JOIN {b} y ON y.k = x.k",
        "SELECT x.id, y.id, y.v FROM {a} x LEFT JOIN {b} y ON y.k = x.k WHERE y.k IS NULL",
        "SELECT x.id, y.id, y.v FROM {a} x JOIN {b} y ON y.k = x.k WHERE x.k = 1 OR y.k = 2",
        "SELECT x.k, COUNT(*), SUM(y.v) FROM {a} x JOIN {b} y ON y.k = x.k GROUP BY x.k ORDER BY x.k",
        "SELECT x.id, y.id, y.v FROM {a} x JOIN {b} y ON y.k = x.k ORDER BY y.v DESC, x.id, y.id LIMIT 7",
    ] {
        let p = q.replace("{a}", "a").replace("{b}", "b");
        let r = q.replace("{a}", "a_ref").replace("{b}", "b_ref");
        let mut got: Vec<Row3> = c.query(&p).await.unwrap_or_else(|e| panic!("{p}: {e}"));
        let mut want: Vec<Row3> = c.query(&r).await.unwrap();
        if !q.contains("ORDER BY") {
            got.sort();
            want.sort();
        }
        assert_eq!(got, want, "{p}");
    }
    // Not on the key: b is shipped next to a's partition.
    let mut got: Vec<Row3> = c
        .query("SELECT x.id, y.id, y.v FROM a x JOIN b y ON y.id = x.id WHERE x.k = 1")
        .await
        .unwrap();
    let mut want: Vec<Row3> = c
        .query("SELECT x.id, y.id, y.v FROM a_ref x JOIN b_ref y ON y.id = x.id WHERE x.k = 1")
        .await
        .unwrap();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let plan: Vec<(String, String, String)> = c
        .query("HSCALE EXPLAIN SELECT x.id FROM a x JOIN b y ON y.id = x.id WHERE x.k = 1")
        .await
        .unwrap();
    assert!(
        plan.iter()
            .any(|r| r.1.starts_with("ship into temporary table")),
        "{plan:?}"
    );
    let plan: Vec<(String, String, String)> = c
        .query("HSCALE EXPLAIN SELECT * FROM a x JOIN b y ON y.k = x.k WHERE x.k = 4")
        .await
        .unwrap();
    assert_eq!(
        plan_shape(plan),
        vec![(
            "shard1".to_string(),
            "single partition: a_p1 + b_p1".to_string(),
            "SELECT * FROM `part_join`.`a_p1` x JOIN `part_join`.`b_p1` y ON y.k = x.k WHERE x.k = 4".to_string()
        )]
    );
    c.disconnect().await.unwrap();
}

/// A statement over several partitions runs on all of them at once: while
/// the first part is still running, every backend is already running its own.
#[tokio::test]
async fn partitions_of_a_scan_run_in_parallel() {
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE part_par").await.unwrap();
    c.query_drop("USE part_par").await.unwrap();
    c.query_drop("CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard0', 'MOD(3)')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('t', 'one', '1', 'shard1')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('t', 'two', '2', 'shard2')")
        .await
        .unwrap();
    c.query_drop("INSERT INTO t (id, k) VALUES (1, 0), (2, 1), (3, 2)")
        .await
        .unwrap();
    let scan = tokio::spawn(async move {
        let rows: Vec<(i64, i64)> = c
            .query("SELECT id, SLEEP(3) FROM t /* parallel-probe */")
            .await
            .unwrap();
        c.disconnect().await.unwrap();
        rows
    });
    // Every backend shows its part running while the scan is in progress.
    let mut seen = [false; 3];
    for _ in 0..40 {
        for (backend, s) in seen.iter_mut().enumerate() {
            if *s {
                continue;
            }
            let n = count(
                backend,
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%parallel-probe%' AND INFO NOT LIKE '%PROCESSLIST%'",
            )
            .await;
            *s = n > 0;
        }
        if seen.iter().all(|s| *s) || scan.is_finished() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        !scan.is_finished(),
        "the scan ended before all parts were seen: {seen:?}"
    );
    assert_eq!(seen, [true; 3], "parts seen running at once");
    let mut rows = scan.await.unwrap();
    rows.sort();
    assert_eq!(rows, vec![(1, 0), (2, 0), (3, 0)]);
}

/// A global table has a copy on every backend: writes change every copy,
/// writes that could differ between copies are refused, and DROP TABLE
/// drops every copy.
#[tokio::test]
async fn global_tables_keep_a_copy_on_every_backend() {
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE part_glob").await.unwrap();
    c.query_drop("USE part_glob").await.unwrap();
    c.query_drop("CREATE TABLE g (id INT NOT NULL PRIMARY KEY, name VARCHAR(10), n INT)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO g VALUES (1, 'one', 10), (2, 'two', 20)")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_GLOBAL_TABLE('g')")
        .await
        .unwrap();
    let tables: Vec<(String, Option<String>, String, String, String)> =
        c.query("HSCALE SHOW TABLES").await.unwrap();
    assert!(
        tables
            .iter()
            .any(|t| t.0 == "part_glob.g" && t.2 == "GLOBAL"),
        "{tables:?}"
    );
    let copies = || async {
        let mut all = Vec::new();
        for b in 0..3 {
            let mut bc = backend_conn(b, Some("part_glob")).await;
            let rows: Vec<(i64, Option<String>, Option<i64>)> = bc
                .query("SELECT id, name, n FROM g ORDER BY id")
                .await
                .unwrap();
            bc.disconnect().await.unwrap();
            all.push(rows);
        }
        all
    };
    let all = copies().await;
    assert!(
        all.iter().all(|r| *r == all[0]) && all[0].len() == 2,
        "{all:?}"
    );
    // Writes reach every copy; the client sees one copy's affected rows.
    c.query_drop("INSERT INTO g (id, name, n) VALUES (3, 'three', 30), (4, 'four', NULL)")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 2);
    c.query_drop("UPDATE g SET n = n + 1 WHERE id <= 3")
        .await
        .unwrap();
    assert_eq!(c.affected_rows(), 3);
    c.query_drop("DELETE FROM g WHERE id = 2").await.unwrap();
    assert_eq!(c.affected_rows(), 1);
    let all = copies().await;
    assert_eq!(
        all[0],
        vec![
            (1, Some("one".to_string()), Some(11)),
            (3, Some("three".to_string()), Some(31)),
            (4, Some("four".to_string()), None)
        ]
    );
    assert!(all.iter().all(|r| *r == all[0]), "{all:?}");
    // Reads through hscale see the table as one.
    let n: Option<i64> = c.query_first("SELECT SUM(n) FROM g").await.unwrap();
    assert_eq!(n, Some(42));
    for q in [
        "UPDATE g SET n = RAND() * 10",
        "INSERT INTO g (id, name) VALUES (9, UUID())",
        "INSERT INTO g SELECT id + 100, name, n FROM g",
        "UPDATE g SET n = NOW() + 0",
    ] {
        let e = c.query_drop(q).await.unwrap_err();
        assert_eq!(code(&e), 1235, "{q}");
    }
    // Inside a transaction a write reaches every copy on the transaction's
    // branches; ROLLBACK undoes it on every copy.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE g SET n = 0 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    let n: Option<i64> = c.query_first("SELECT SUM(n) FROM g").await.unwrap();
    assert_eq!(n, Some(42));
    c.query_drop("DROP TABLE g").await.unwrap();
    for b in 0..3 {
        assert!(!table_exists(b, "part_glob", "g").await, "copy on {b}");
    }
    c.disconnect().await.unwrap();
}

/// A prepared statement resolves its tables in the database current at
/// PREPARE (backend statements are cached per database), and a prepared
/// statement follows dictionary changes made after it was prepared.
#[tokio::test]
async fn prepared_statements_follow_database_and_dictionary() {
    cluster(3);
    let mut c = proxy_conn(None).await;
    for (db, v) in [("prep_a", 1), ("prep_b", 2)] {
        c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
        c.query_drop(format!(
            "CREATE TABLE {db}.x (id INT PRIMARY KEY, v INT NOT NULL)"
        ))
        .await
        .unwrap();
        c.query_drop(format!("INSERT INTO {db}.x VALUES (1, {v})"))
            .await
            .unwrap();
    }
    for (db, v) in [("prep_a", 1i64), ("prep_b", 2), ("prep_a", 1)] {
        c.query_drop(format!("USE {db}")).await.unwrap();
        let st = c.prep("SELECT v FROM x WHERE id = ?").await.unwrap();
        let got: Option<i64> = c.exec_first(&st, (1,)).await.unwrap();
        assert_eq!(got, Some(v), "in {db}");
    }
    // Prepared before ADD_PARTITION, executed after: the new partition.
    c.query_drop("USE prep_a").await.unwrap();
    c.query_drop("CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k))")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard0', 'MOD(3)')")
        .await
        .unwrap();
    let ins = c.prep("INSERT INTO t (id, k) VALUES (?, ?)").await.unwrap();
    c.exec_drop(&ins, (1, 1)).await.unwrap();
    c.query_drop("HSCALE ADD_PARTITION('t', 'one', '1', 'shard1')")
        .await
        .unwrap();
    c.exec_drop(&ins, (2, 4)).await.unwrap();
    let mut b = backend_conn(1, Some("prep_a")).await;
    let t_one = physical("prep_a.t", Some("one")).await;
    let ids: Vec<i64> = b
        .query(format!("SELECT id FROM {t_one} ORDER BY id"))
        .await
        .unwrap();
    assert_eq!(ids, vec![1, 2]);
    b.disconnect().await.unwrap();
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM t WHERE k = 4")
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    c.disconnect().await.unwrap();
}
