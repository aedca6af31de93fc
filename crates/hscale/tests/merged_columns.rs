#![allow(clippy::unwrap_used)]
//! Issue 29: the column definitions of merged answers, compared byte for
//! byte (name, type, flags, decimals, length, character set) with one
//! plain database of the same server (`REF`, not partitioned): aggregates
//! merged over partitions (COUNT, SUM, AVG, BIT_* must not gain the
//! BINARY flag; MIN / MAX of a DATE keep NO_DEFAULT_VALUE; MIN / MAX of a
//! VARCHAR report decimals 39), grouped and sorted merges, and a UNION
//! ALL over partitions (the union's definitions, not its first branch's).
//!
//! Four backends; `od` MOD(4) on k, `ev` by month.

mod common;

use common::twin::*;

const DB: &str = "mc_part";
const REF: &str = "mc_ref";

const TWIN: Twin = Twin {
    shards: 4,
    db: DB,
    reference: REF,
    schema: &[
        "CREATE TABLE od (oid INT NOT NULL, k INT NOT NULL, qty INT NOT NULL, price DECIMAL(8,2), note VARCHAR(20), d DATE NOT NULL, dn DATE, t DATETIME(3), bu BIGINT UNSIGNED, ch CHAR(4) NOT NULL, vb VARBINARY(8), db DOUBLE, en ENUM('x','y','z'), PRIMARY KEY (oid, k))",
    ],
    partitioning: &[
        "HSCALE SETUP_TABLE('od', 'k', 'od_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('od', 'od1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('od', 'od2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('od', 'od3', '3', 'shard3')",
    ],
};

static SET_UP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

async fn set_up() {
    SET_UP
        .get_or_init(|| async {
            let od: Vec<String> = (1..=32)
                .map(|o| {
                    format!(
                        "({o}, {}, {}, {}.{:02}, 'n{o}', '2024-01-{:02}', {}, '2024-02-03 04:05:{:02}.5', {}, 'c{o}', X'{o:02x}', {o}.5, '{}')",
                        o % 5 - 1,
                        o * 7 % 11,
                        o * 13 % 50,
                        o * 7 % 100,
                        1 + o % 28,
                        if o % 6 == 0 { "NULL".to_string() } else { format!("'2023-12-{:02}'", 1 + o % 28) },
                        o % 60,
                        o * 1000,
                        ["x", "y", "z"][o as usize % 3],
                    )
                })
                .collect();
            TWIN.create(&[format!("INSERT INTO od VALUES {}", od.join(", "))])
                .await
        })
        .await;
}

/// `sql`'s column definitions through hscale and on one server: equal.
async fn same_defs(sql: &str) {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    let want = column_defs(&mut r, sql).await;
    let got = column_defs(&mut p, sql).await;
    assert_eq!(got, want, "{sql}");
}

/// The examples: COUNT/SUM/AVG/BIT_* without BINARY, MIN/MAX of a
/// DATE with NO_DEFAULT_VALUE, MIN/MAX of a VARCHAR with decimals 39.
#[tokio::test]
async fn merged_aggregates_keep_the_servers_definitions() {
    for sql in [
        "SELECT COUNT(*), SUM(qty), AVG(qty), BIT_AND(qty), BIT_OR(qty), BIT_XOR(qty) FROM od",
        "SELECT MIN(d), MAX(d) FROM od",
        "SELECT MIN(note), MAX(note) FROM od",
    ] {
        same_defs(sql).await;
    }
}

/// The class: other types under each aggregate, grouped, with HAVING,
/// ORDER BY and LIMIT, DISTINCT, expressions over aggregates, HOUR().
#[tokio::test]
async fn merged_columns_class() {
    for sql in [
        "SELECT COUNT(note), COUNT(DISTINCT qty), SUM(price), AVG(price), SUM(db), AVG(db), SUM(bu) FROM od",
        "SELECT MIN(dn), MAX(dn), MIN(t), MAX(t), MIN(ch), MAX(ch), MIN(vb), MAX(vb) FROM od",
        "SELECT MIN(price), MAX(price), MIN(db), MAX(db), MIN(bu), MAX(bu), MIN(en), MAX(en) FROM od",
        "SELECT k, COUNT(*), SUM(qty), MIN(d), MAX(note) FROM od GROUP BY k",
        "SELECT k, BIT_OR(qty) AS b FROM od GROUP BY k HAVING b > 1 ORDER BY b LIMIT 3",
        "SELECT DISTINCT note FROM od",
        "SELECT HOUR(t), MINUTE(t) FROM od ORDER BY oid LIMIT 3",
        "SELECT oid, note FROM od ORDER BY note DESC LIMIT 4",
        "SELECT COUNT(*) + 1, SUM(qty) * 2 FROM od",
        "SELECT GROUP_CONCAT(note), STD(qty), VARIANCE(qty) FROM od",
        "SELECT k, MIN(dn) FROM od GROUP BY k ORDER BY k",
        "SELECT k, AVG(qty), AVG(price), COUNT(DISTINCT qty) FROM od GROUP BY k",
        "SELECT k % 2 AS g, MIN(t), MAX(bu), MIN(en), GROUP_CONCAT(note ORDER BY oid) FROM od GROUP BY g",
        "SELECT DISTINCT d, ch, price FROM od",
        "SELECT DISTINCT k FROM od ORDER BY k DESC",
        "SELECT note, COUNT(*) FROM od GROUP BY note HAVING COUNT(*) > 0 ORDER BY note LIMIT 5",
        "SELECT en, SUM(db), BIT_AND(bu), BIT_XOR(oid) FROM od GROUP BY en",
        "SELECT JSON_VALUE(CONCAT('{\"a\":', k, '}'), '$.a') AS v, COUNT(*) FROM od GROUP BY v",
        "SELECT CONCAT(note, REPEAT('x', 70000)) IS NULL AS n, GROUP_CONCAT(note) FROM od GROUP BY n",
        "SELECT JSON_KEYS(CONCAT('{\"', note, '\":1}')) AS jk, MAX(qty) FROM od GROUP BY jk",
    ] {
        same_defs(sql).await;
    }
}

/// A UNION ALL over partitions sends the union's definitions (lengths and
/// types widened over its branches), not its first branch's.
#[tokio::test]
async fn union_all_over_partitions_sends_the_unions_definitions() {
    for sql in [
        "SELECT oid, note FROM od WHERE k = 1 UNION ALL SELECT qty, ch FROM od WHERE k = 2",
        "SELECT qty FROM od WHERE k = 1 UNION ALL SELECT price FROM od",
        "SELECT ch FROM od UNION ALL SELECT note FROM od WHERE k = 3",
        "SELECT d FROM od UNION ALL SELECT t FROM od",
        "SELECT oid FROM od UNION SELECT bu FROM od",
        "SELECT note FROM od WHERE k = 1 UNION ALL SELECT 'a much longer literal than twenty'",
    ] {
        same_defs(sql).await;
    }
}

/// A result's column definitions with the table and original table they
/// name (what `getTableName` returns).
async fn defs_with_tables(
    c: &mut mysql_async::Conn,
    sql: &str,
) -> Vec<(ColumnDef, String, String)> {
    use mysql_async::prelude::*;
    let r = c
        .query_iter(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let defs = r
        .columns_ref()
        .iter()
        .map(|col| {
            (
                (
                    col.name_str().into_owned(),
                    format!("{:?}", col.column_type()),
                    col.flags().bits(),
                    col.decimals(),
                    col.column_length(),
                    col.character_set(),
                ),
                col.table_str().into_owned(),
                col.org_table_str().into_owned(),
            )
        })
        .collect();
    r.drop_result().await.unwrap();
    defs
}

/// Issue 29 ("Other classes"): answers hscale rewrites
/// (information_schema.TABLES of a database with partitioned tables) and
/// a view's columns carry one server's column definitions: lengths, NOT
/// NULL flags, table names, the view (not its base table) as the
/// original table.
#[tokio::test]
async fn rewritten_answers_and_views_carry_the_servers_definitions() {
    use mysql_async::prelude::*;
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    for c in [&mut p, &mut r] {
        c.query_drop("CREATE OR REPLACE VIEW vod AS SELECT oid, k, note FROM od")
            .await
            .unwrap();
    }
    let mut wrong = Vec::new();
    // (SHOW statements: `show_answers_carry_the_servers_definitions`.)
    for sql in [
        "SELECT TABLE_NAME, TABLE_ROWS IS NOT NULL FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1",
        "SELECT oid, k, note FROM vod WHERE k = 1 ORDER BY oid",
        "SELECT * FROM vod ORDER BY oid LIMIT 3",
    ] {
        let want = defs_with_tables(&mut r, sql).await;
        let got = defs_with_tables(&mut p, sql).await;
        // The database's own name differs between the two sides.
        let fix = |v: Vec<(ColumnDef, String, String)>, db: &str| -> Vec<(ColumnDef, String, String)> {
            v.into_iter()
                .map(|(mut d, t, o)| {
                    d.0 = d.0.replace(db, "DB");
                    (d, t, o)
                })
                .collect()
        };
        let (got, want) = (fix(got, DB), fix(want, REF));
        if got != want {
            wrong.push(format!("{sql}\n  hscale:    {got:?}\n  reference: {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every field of a column definition (catalog, schema, table, original
/// table, name, original name, length, character set, flags, type,
/// decimals), with the database's name written `DB`.
async fn full_defs(c: &mut mysql_async::Conn, sql: &str, db: &str) -> Vec<String> {
    use mysql_async::prelude::*;
    let r = c
        .query_iter(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let defs = r
        .columns_ref()
        .iter()
        .map(|col| {
            format!(
                "schema {:?} table {:?} org_table {:?} name {:?} org_name {:?} length {} charset {} flags {:?} type {:?} decimals {}",
                col.schema_str(),
                col.table_str(),
                col.org_table_str(),
                col.name_str(),
                col.org_name_str(),
                col.column_length(),
                col.character_set(),
                col.flags(),
                col.column_type(),
                col.decimals(),
            )
            .replace(db, "DB")
        })
        .collect();
    r.drop_result().await.unwrap();
    defs
}

/// Issue 29 ("Other classes", column metadata): the SHOW statements hscale
/// answers itself or relabels for a partitioned table (SHOW TABLES, SHOW
/// CREATE TABLE, SHOW COLUMNS / DESCRIBE, SHOW INDEX, SHOW TABLE STATUS)
/// carry one server's column definitions, every field of them: names,
/// types, lengths, character sets, flags, tables.
#[tokio::test]
async fn show_answers_carry_the_servers_definitions() {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    let mut wrong = Vec::new();
    for sql in [
        "SHOW CREATE TABLE od",
        "SHOW TABLES",
        "SHOW FULL TABLES",
        "SHOW TABLES LIKE 'o%'",
        "SHOW FULL TABLES LIKE 'od'",
        "SHOW COLUMNS FROM od",
        "SHOW FULL COLUMNS FROM od",
        "SHOW FIELDS FROM od",
        "SHOW COLUMNS FROM od LIKE 'o%'",
        "DESCRIBE od",
        "DESC od",
        "DESCRIBE od oid",
        "SHOW INDEX FROM od",
        "SHOW KEYS FROM od",
        "SHOW INDEXES IN od",
        "SHOW TABLE STATUS",
        "SHOW TABLE STATUS LIKE 'od'",
        "SHOW TABLE STATUS WHERE Name = 'od'",
    ] {
        let want = full_defs(&mut r, sql, REF).await;
        let got = full_defs(&mut p, sql, DB).await;
        if got != want {
            wrong.push(format!(
                "{sql}\n  hscale:    {got:#?}\n  reference: {want:#?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
