#![allow(clippy::unwrap_used)]
//! Issue 29: table maintenance statements on a partitioned table
//! (CHECKSUM, ANALYZE, CHECK, OPTIMIZE, REPAIR TABLE), refused before,
//! answered as one server holding the table answers: the same columns
//! (definitions byte for byte), one row set named like the client's table,
//! and CHECKSUM TABLE's value equal to one server's (the partitions'
//! checksums summed modulo 2^32, as the server sums its rows'). Compared
//! with one plain database of the same server (`REF`, not partitioned);
//! the reference's database name in its `Table` column is read as the
//! partitioned one's.
//!
//! Four backends; `od` MOD(4) on k and `sk` HASH(4) on name as in the
//! adversarial run, `mt` MOD(4) on k with a column of every kind.

mod common;

use common::twin::*;
use common::*;
use mysql_async::prelude::*;
use mysql_async::Conn;

const DB: &str = "tm_part";
const REF: &str = "tm_ref";

const TWIN: Twin = Twin {
    shards: 4,
    db: DB,
    reference: REF,
    schema: &[
        "CREATE TABLE od (oid INT NOT NULL, k INT NOT NULL, qty INT NOT NULL, price DECIMAL(8,2), note VARCHAR(20), PRIMARY KEY (oid, k), UNIQUE KEY uq (k, note))",
        "CREATE TABLE sk (name VARCHAR(20) NOT NULL PRIMARY KEY, v INT)",
        "CREATE TABLE mt (id INT NOT NULL, k INT NOT NULL, bu BIGINT UNSIGNED, d DOUBLE, ch CHAR(4), vb VARBINARY(16), tx TEXT, dt DATETIME(3), bt BIT(5), en ENUM('x','y'), js JSON, PRIMARY KEY (id, k))",
        "CREATE TABLE pl (id INT NOT NULL PRIMARY KEY)",
        "CREATE TABLE my (id INT NOT NULL, k INT NOT NULL, s VARCHAR(10), PRIMARY KEY (id, k)) ENGINE=MyISAM CHECKSUM=1",
    ],
    partitioning: &[
        "HSCALE SETUP_TABLE('od', 'k', 'od_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('od', 'od1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('od', 'od2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('od', 'od3', '3', 'shard3')",
        "HSCALE SETUP_TABLE('sk', 'name', 'sk_default', 'shard0', 'HASH(4)')",
        "HSCALE ADD_PARTITION('sk', 'h1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('sk', 'h2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('sk', 'h3', '3', 'shard3')",
        "HSCALE SETUP_TABLE('mt', 'k', 'mt_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('mt', 'mt1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('mt', 'mt2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('mt', 'mt3', '3', 'shard3')",
        "HSCALE SETUP_TABLE('my', 'k', 'my_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('my', 'my1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('my', 'my2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('my', 'my3', '3', 'shard3')",
    ],
};

static SET_UP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

async fn set_up() {
    SET_UP
        .get_or_init(|| async {
            let od: Vec<String> = (1..=32)
                .map(|o| {
                    let note = if o % 6 == 0 { "NULL".to_string() } else { format!("'n{o}'") };
                    format!("({o}, {}, {}, {}.{:02}, {note})", o % 5 - 1, o * 7 % 11, o * 13 % 50, o * 7 % 100)
                })
                .collect();
            let sk: Vec<String> = ["alpha", "beta", "gamma", "delta", "Epsilon", "zeta", "eta", "theta"]
                .iter()
                .enumerate()
                .map(|(i, n)| format!("('{n}', {})", if i % 3 == 0 { "NULL".to_string() } else { i.to_string() }))
                .collect();
            let mt: Vec<String> = (1..=40)
                .map(|i| {
                    if i % 7 == 0 {
                        format!("({i}, {}, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)", i % 4)
                    } else {
                        format!(
                            "({i}, {}, {}, {i}.25e3, 'c{i}', X'{:04x}', REPEAT('t', {i}), '2024-0{}-1{} 10:00:0{}.{i}', b'{:05b}', '{}', '{{\"n\": {i}}}')",
                            i % 4,
                            u64::MAX - i as u64,
                            i * 37,
                            1 + i % 9,
                            i % 10,
                            i % 10,
                            i % 32,
                            ["x", "y"][i % 2],
                        )
                    }
                })
                .collect();
            let my: Vec<String> = (1..=12).map(|i| format!("({i}, {}, 's{i}')", i % 4)).collect();
            TWIN.create(&[
                format!("INSERT INTO od VALUES {}", od.join(", ")),
                format!("INSERT INTO sk VALUES {}", sk.join(", ")),
                format!("INSERT INTO mt VALUES {}", mt.join(", ")),
                format!("INSERT INTO my VALUES {}", my.join(", ")),
            ])
            .await
        })
        .await;
}

/// `sql`'s answer (columns, rows, warnings, or its error code) and its
/// column definitions, the reference's database name read as `DB`.
async fn answer_of(c: &mut Conn, sql: &str) -> (String, Vec<ColumnDef>) {
    let a = answer(c, sql, None).await;
    let defs = match &a {
        Answer::Rows { columns, .. } if !columns.is_empty() => column_defs(c, sql).await,
        _ => Vec::new(),
    };
    (format!("{a:?}").replace(REF, DB), defs)
}

/// `sql` through hscale and on one server: the same answer, returned.
async fn same(sql: &str) -> String {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    let want = answer_of(&mut r, sql).await;
    assert_eq!(answer_of(&mut p, sql).await, want, "{sql}");
    want.0
}

/// The adversarial run's examples (refused with 1235 before).
#[tokio::test]
async fn checksum_analyze_check_of_partitioned_tables() {
    let a = same("CHECKSUM TABLE od").await;
    assert!(a.contains("tm_part.od"), "{a}");
    same("ANALYZE TABLE sk").await;
    let a = same("CHECK TABLE od").await;
    assert!(a.contains("OK"), "{a}");
}

/// CHECKSUM TABLE over every kind of column, NULLs, a MyISAM table with
/// a live checksum, QUICK (NULL for InnoDB) and EXTENDED, lower case.
#[tokio::test]
async fn checksum_table_is_one_servers_value() {
    for sql in [
        "CHECKSUM TABLE mt",
        "CHECKSUM TABLE sk",
        "CHECKSUM TABLE od QUICK",
        "CHECKSUM TABLE od EXTENDED",
        "checksum table `mt` extended",
        "CHECKSUM TABLE tm_part.mt",
        "CHECKSUM TABLE my",
        "CHECKSUM TABLE my QUICK",
    ] {
        let a = same(&sql.replace("tm_part.", "")).await;
        assert!(a.contains("tm_part."), "{sql}: {a}");
    }
    // Qualified with the database (the reference's own name there).
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    let got = answer_of(&mut p, &format!("CHECKSUM TABLE {DB}.mt")).await;
    let want = answer_of(&mut r, &format!("CHECKSUM TABLE {REF}.mt")).await;
    assert_eq!(got, want);
}

/// The checksum follows writes (rows added to and removed from several
/// partitions, a row moved by its key, the table emptied), as one
/// server's does.
#[tokio::test]
async fn checksum_follows_writes() {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    for c in [&mut p, &mut r] {
        c.query_drop("CREATE TABLE IF NOT EXISTS cw LIKE od")
            .await
            .unwrap();
    }
    // `cw` is partitioned only in DB.
    for s in [
        "HSCALE SETUP_TABLE('cw', 'k', 'cw_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('cw', 'cw1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('cw', 'cw2', '2', 'shard2')",
    ] {
        p.query_drop(s).await.unwrap();
    }
    for step in [
        "CHECKSUM TABLE cw",
        "INSERT INTO cw SELECT * FROM od WHERE oid < 20",
        "CHECKSUM TABLE cw",
        "DELETE FROM cw WHERE qty > 5",
        "CHECKSUM TABLE cw",
        "UPDATE cw SET k = k + 1 WHERE oid = 3",
        "CHECKSUM TABLE cw",
        "DELETE FROM cw",
        "CHECKSUM TABLE cw",
    ] {
        let want = answer_of(&mut r, step).await;
        assert_eq!(answer_of(&mut p, step).await, want, "{step}");
    }
}

/// ANALYZE, CHECK, OPTIMIZE and REPAIR in their spellings and options:
/// one row set, the client's table name.
#[tokio::test]
async fn maintenance_statements_answer_as_one_server() {
    for sql in [
        "ANALYZE TABLE od",
        "ANALYZE NO_WRITE_TO_BINLOG TABLE mt",
        "ANALYZE LOCAL TABLE sk",
        "ANALYZE TABLE od PERSISTENT FOR ALL",
        "ANALYZE TABLE od PERSISTENT FOR COLUMNS (qty, note) INDEXES (uq)",
        "CHECK TABLE mt EXTENDED",
        "CHECK TABLE od QUICK",
        "CHECK TABLE sk FOR UPGRADE",
        "CHECK TABLE od MEDIUM CHANGED",
        "OPTIMIZE TABLE sk",
        "OPTIMIZE LOCAL TABLE od",
        "REPAIR TABLE od",
        "REPAIR TABLE my QUICK",
        "CHECK TABLE my",
        "analyze table `od`",
    ] {
        let a = same(sql).await;
        assert!(a.contains("tm_part."), "{sql}: {a}");
    }
}

/// A list naming a partitioned table beside others is refused (1235),
/// naming why.
#[tokio::test]
async fn maintenance_of_several_tables_is_refused() {
    set_up().await;
    let (mut p, _) = TWIN.conns().await;
    for sql in [
        "CHECKSUM TABLE od, sk",
        "ANALYZE TABLE od, mt",
        "CHECK TABLE sk, od",
    ] {
        let e = p.query_drop(sql).await.unwrap_err();
        assert_eq!(code(&e), 1235, "{sql}: {e}");
        assert!(e.to_string().contains("several tables"), "{e}");
    }
}

/// Inside a transaction: ANALYZE commits it as on one server (an
/// implicit commit), CHECKSUM TABLE does not.
#[tokio::test]
async fn maintenance_inside_a_transaction() {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    for c in [&mut p, &mut r] {
        c.query_drop("DELETE FROM od WHERE oid >= 900")
            .await
            .unwrap();
    }
    let statements = [
        "BEGIN",
        "INSERT INTO od (oid, k, qty) VALUES (900, 1, 1), (901, 2, 2)",
        "ANALYZE TABLE od",
        "ROLLBACK",
        "BEGIN",
        "INSERT INTO od (oid, k, qty) VALUES (902, 3, 1), (903, 0, 2)",
        "CHECKSUM TABLE od",
        "ROLLBACK",
        "CHECKSUM TABLE od",
    ];
    for s in statements {
        let want = answer_of(&mut r, s).await;
        assert_eq!(answer_of(&mut p, s).await, want, "{s}");
    }
    let contents = "SELECT oid, k FROM od WHERE oid >= 900 ORDER BY oid";
    assert_eq!(rows(&mut p, contents).await, rows(&mut r, contents).await);
    for c in [&mut p, &mut r] {
        c.query_drop("DELETE FROM od WHERE oid >= 900")
            .await
            .unwrap();
    }
}

/// Prepared, they are refused (1235, naming why) where one server answers
/// them: sent as a query they run.
#[tokio::test]
async fn prepared_maintenance_is_refused() {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    for sql in ["CHECKSUM TABLE od", "ANALYZE TABLE od", "CHECK TABLE sk"] {
        let want: Vec<mysql_async::Row> = r.exec(sql, ()).await.unwrap();
        assert_eq!(want.len(), 1, "{sql}");
        let e = p.exec_drop(sql, ()).await.unwrap_err();
        assert_eq!(code(&e), 1235, "{sql}: {e}");
        assert!(e.to_string().contains("cannot be prepared"), "{e}");
    }
}
