//! The table's AUTO_INCREMENT as hscale shows it: information_schema's
//! TABLES, SHOW TABLE STATUS and SHOW CREATE TABLE all give the
//! sequence's next value (not a partition's own counter), text and
//! prepared, in the server's column names and types.

use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::Row;

use super::*;

/// The AUTO_INCREMENT of `db.table` through `c` in the three views:
/// information_schema.TABLES, SHOW TABLE STATUS and SHOW CREATE TABLE
/// (`None`: NULL, or no `AUTO_INCREMENT=` option), text then prepared.
async fn shown(c: &mut mysql_async::Conn, db: &str, table: &str) -> Vec<Option<u64>> {
    let tables = format!(
        "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{table}'"
    );
    let status = format!("SHOW TABLE STATUS LIKE '{table}'");
    let mut out = Vec::new();
    let row: Row = c.query_first(&tables).await.unwrap().expect("a TABLES row");
    out.push(row.get::<Option<u64>, _>(0).unwrap());
    let row: Row = c
        .exec_first(&tables, ())
        .await
        .unwrap()
        .expect("a TABLES row");
    out.push(row.get::<Option<u64>, _>(0).unwrap());
    let row: Row = c
        .exec_first(
            "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
            (db, table),
        )
        .await
        .unwrap()
        .expect("a TABLES row");
    out.push(row.get::<Option<u64>, _>(0).unwrap());
    for prepared in [false, true] {
        let rows: Vec<Row> = if prepared {
            c.exec(&status, ()).await.unwrap()
        } else {
            c.query(&status).await.unwrap()
        };
        assert_eq!(rows.len(), 1, "{status}");
        out.push(rows[0].get::<Option<u64>, _>("Auto_increment").unwrap());
    }
    let (_, ddl): (String, String) = c
        .query_first(format!("SHOW CREATE TABLE {table}"))
        .await
        .unwrap()
        .unwrap();
    out.push(ddl.split(" AUTO_INCREMENT=").nth(1).map(|rest| {
        rest.split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a number")
    }));
    out
}

/// Column names, types and the unsigned flag of a result.
fn shape(columns: &[mysql_async::Column]) -> Vec<(String, ColumnType, bool)> {
    columns
        .iter()
        .map(|c| {
            (
                c.name_str().to_string(),
                c.column_type(),
                c.flags().contains(ColumnFlags::UNSIGNED_FLAG),
            )
        })
        .collect()
}

/// After ids generated through several partitions and an explicit high id
/// in a partition away from the default one, the three views agree on
/// the sequence's next value, which is above every id on the backends;
/// the next generated id is not below it. A table without AUTO_INCREMENT
/// shows NULL, and the columns are the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_view_shows_the_sequences_next_value() {
    const DB: &str = "seq_views";
    cluster(2);
    setup(DB, 5).await;
    let mut b = backend_conn(0, Some(DB)).await;
    b.query_drop("CREATE TABLE u (k INT NOT NULL PRIMARY KEY, v INT)")
        .await
        .unwrap();
    b.disconnect().await.unwrap();
    let mut c = proxy_conn(Some(DB)).await;
    c.query_drop("HSCALE SETUP_TABLE('seq_views.u', 'k', 'u_default', 'shard0', 'MOD(4)')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('seq_views.u', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    for k in 0..8 {
        c.query_drop(format!("INSERT INTO t (k, who) VALUES ({k}, 'gen')"))
            .await
            .unwrap();
    }
    c.query_drop("INSERT INTO t (k, who) VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        .await
        .unwrap();
    // Into shard1's partition: the default partition's own counter stays
    // below it.
    c.query_drop("INSERT INTO t (id, k, who) VALUES (900, 1, 'high')")
        .await
        .unwrap();
    let max = *rows_on_backends(DB).await.keys().max().unwrap() as u64;
    assert_eq!(max, 900);
    let counter = next_id(DB).await;
    let views = shown(&mut c, DB, "t").await;
    assert_eq!(
        views,
        vec![Some(counter); views.len()],
        "TABLES x3, STATUS x2, CREATE"
    );
    assert!(counter > max, "{counter} <= {max}");
    c.query_drop("INSERT INTO t (k, who) VALUES (2, 'next')")
        .await
        .unwrap();
    let next = c.last_insert_id().unwrap();
    assert!(next >= counter, "next id {next} below the shown {counter}");

    // No AUTO_INCREMENT: NULL as on a server, and no option.
    assert_eq!(shown(&mut c, DB, "u").await, vec![None; 6]);

    // SHOW TABLE STATUS lists the logical tables, with one server's
    // column names and types.
    let status = c.query_iter("SHOW TABLE STATUS").await.unwrap();
    let columns = shape(&status.columns().unwrap());
    let rows: Vec<Row> = status.collect_and_drop().await.unwrap();
    let names: Vec<String> = rows.iter().map(|r| r.get("Name").unwrap()).collect();
    assert_eq!(names, ["t", "u"]);
    let mut direct = backend_conn(0, Some(DB)).await;
    let server = direct.query_iter("SHOW TABLE STATUS").await.unwrap();
    assert_eq!(columns, shape(&server.columns().unwrap()));
    drop(server.collect_and_drop::<Row>().await.unwrap());
    let sql = format!(
        "SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{DB}'"
    );
    let through = c.query_iter(&sql).await.unwrap();
    let columns = shape(&through.columns().unwrap());
    through.drop_result().await.unwrap();
    let server = direct.query_iter(&sql).await.unwrap();
    assert_eq!(columns, shape(&server.columns().unwrap()));
    server.drop_result().await.unwrap();
    direct.disconnect().await.unwrap();
    c.disconnect().await.unwrap();
}

/// A table whose default partition is on another backend than the main
/// one: a question naming it is asked of that backend, and TABLES'
/// AUTO_INCREMENT is still the sequence's next value, not that
/// partition's own counter (text only: such a question cannot be
/// prepared yet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_partition_elsewhere_shows_the_sequences_next_value() {
    const DB: &str = "seq_views_far";
    cluster(2);
    fresh_db(DB).await;
    let mut b = backend_conn(0, Some(DB)).await;
    b.query_drop(
        "CREATE TABLE r (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, who VARCHAR(20) NULL)",
    )
    .await
    .unwrap();
    b.disconnect().await.unwrap();
    let mut c = proxy_conn(Some(DB)).await;
    c.query_drop(format!(
        "HSCALE SETUP_TABLE('{DB}.r', 'k', 'r_default', 'shard1', 'MOD(4)')"
    ))
    .await
    .unwrap();
    c.query_drop(format!(
        "HSCALE ADD_PARTITION('{DB}.r', 'p1', '1', 'shard0')"
    ))
    .await
    .unwrap();
    // Rows in the partition on shard0 only, one with a high explicit id.
    c.query_drop("INSERT INTO r (k, who) VALUES (1, 'a'), (1, 'b')")
        .await
        .unwrap();
    c.query_drop("INSERT INTO r (id, k, who) VALUES (800, 1, 'high')")
        .await
        .unwrap();
    let mut main = backend_conn(0, None).await;
    let counter: u64 = main
        .query_first(format!(
            "SELECT next_id FROM hscale.sequences WHERE db = '{DB}' AND tbl = 'r'"
        ))
        .await
        .unwrap()
        .expect("a sequence row");
    main.disconnect().await.unwrap();
    assert!(counter > 800, "{counter}");
    for sql in [
        format!("SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{DB}' AND TABLE_NAME = 'r'"),
        format!("SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_NAME = 'r' AND TABLE_SCHEMA = '{DB}'"),
    ] {
        let row: Row = c.query_first(&sql).await.unwrap().expect("a row");
        let shown: Option<u64> = row.get(row.len() - 1).unwrap();
        assert_eq!(shown, Some(counter), "{sql}");
        if row.len() == 2 {
            assert_eq!(row.get::<String, _>(0).unwrap(), "r");
        }
    }
    c.disconnect().await.unwrap();
}
