//! Schema statements beside partitioned tables: CREATE TABLE ... LIKE and
//! ... SELECT, temporary tables, constraints and errors naming the
//! logical table, SHOW CREATE TABLE in the client's sql_mode.

use super::*;

// ---- CREATE TABLE ... LIKE a partitioned table, INSERT ... SELECT with a computed key

/// Issue 29 ("Refused, but one server answers"): CREATE TABLE ... LIKE a
/// partitioned table makes a plain table with its definition.
#[tokio::test]
async fn create_table_like_a_partitioned_table() {
    let mut h = acct("cl_issue").await;
    h.check("CREATE TABLE x LIKE acct").await;
    h.check("SHOW CREATE TABLE x").await;
    h.report("CREATE TABLE LIKE", 2);
}

/// The class: IF NOT EXISTS, the parenthesised form, an existing name
/// (1050), the new table written and read, TEMPORARY, then INSERT ...
/// SELECT into and out of it, and INSERT ... SELECT with computed keys
/// into the partitioned table (several partitions, functions, a key
/// that is another column, duplicates under IGNORE).
#[tokio::test]
async fn tables_like_partitioned_ones_and_computed_keys() {
    let mut h = acct("cl_class").await;
    for sql in [
        "CREATE TABLE IF NOT EXISTS x LIKE acct",
        "CREATE TABLE IF NOT EXISTS x LIKE acct",
        "CREATE TABLE x LIKE acct",
        "CREATE TABLE y (LIKE acct)",
        "SHOW CREATE TABLE y",
        "INSERT INTO x SELECT * FROM acct WHERE flags = 2",
        "SELECT * FROM x ORDER BY uid",
        "INSERT INTO acct (uid, handle) SELECT uid + 100, handle FROM acct WHERE flags = 1",
        "INSERT INTO acct (uid, handle, flags) SELECT uid * 3, CONCAT(handle, '*'), flags FROM x",
        "INSERT INTO acct (uid, handle) SELECT flags + 5000, MAX(handle) FROM acct GROUP BY flags",
        "INSERT IGNORE INTO acct (uid, handle) SELECT uid - uid % 2, 'even' FROM acct WHERE uid < 1010",
        "INSERT INTO acct (uid, handle) SELECT uid + 1, 'dup' FROM acct WHERE uid = 1001",
        "SELECT * FROM acct ORDER BY uid",
    ] {
        h.check_write(sql).await;
    }
    h.report("CREATE TABLE LIKE", 13);
}

// ---- CREATE TABLE ... SELECT from a partitioned table -------------------

/// Issue 29 (refused list): CREATE TABLE ... SELECT from a partitioned
/// table makes a plain table on the main backend, filled with every row
/// the SELECT reads, as one server makes it (its definition, rows and
/// `Records:` answer).
#[tokio::test]
async fn create_table_select_from_a_partitioned_table() {
    let mut h = acct("cs_issue").await;
    h.check("CREATE TABLE x SELECT * FROM acct").await;
    h.check("SHOW CREATE TABLE x").await;
    h.check_defs("SELECT * FROM x ORDER BY uid").await;
    h.report("CREATE TABLE SELECT", 3);
}

/// The class: WHERE on one partition and on several, aggregates, AS,
/// declared columns and keys beside the selected ones, IGNORE and
/// REPLACE over duplicates, a duplicate without them (1062, no table),
/// IF NOT EXISTS (note 1050), an existing name (1050), OR REPLACE, a
/// self-join, DISTINCT with LIMIT, a scalar subquery, UNION ALL, a CTE,
/// TEMPORARY, sql_select_limit, inside a transaction (committed first),
/// then every new table's definition and rows.
#[tokio::test]
async fn tables_created_from_selects_over_partitions() {
    let mut h = acct("cs_class").await;
    for sql in [
        "CREATE TABLE s1 SELECT uid, handle FROM acct WHERE flags = 2",
        "CREATE TABLE s2 AS SELECT flags, COUNT(*) AS n, SUM(balance) AS total, AVG(balance) AS a FROM acct GROUP BY flags",
        "CREATE TABLE s3 (id INT PRIMARY KEY, note VARCHAR(5) DEFAULT 'n') SELECT uid AS id FROM acct WHERE uid < 1010",
        "CREATE TABLE s4 (PRIMARY KEY (flags)) IGNORE SELECT flags, uid FROM acct ORDER BY uid",
        "CREATE TABLE s5 (PRIMARY KEY (flags)) REPLACE SELECT flags, uid FROM acct ORDER BY uid",
        "CREATE TABLE s6 (PRIMARY KEY (flags)) SELECT flags, uid FROM acct",
        "CREATE TABLE IF NOT EXISTS s1 SELECT uid FROM acct",
        "SHOW WARNINGS",
        "CREATE TABLE s1 SELECT uid FROM acct",
        "CREATE OR REPLACE TABLE s1 SELECT uid, balance * 2 AS b2 FROM acct WHERE uid = 1003",
        "CREATE TABLE s7 SELECT a.uid, b.uid AS other FROM acct a JOIN acct b ON b.uid = a.uid + 1",
        "CREATE TABLE s8 SELECT DISTINCT handle FROM acct ORDER BY handle LIMIT 5",
        "CREATE TABLE s9 SELECT (SELECT MAX(uid) FROM acct) AS m, handle FROM acct WHERE uid = 1001",
        "CREATE TABLE s10 SELECT uid FROM acct UNION ALL SELECT uid + 100 FROM acct WHERE flags = 1",
        "CREATE TABLE s11 (x INT) SELECT uid, CAST(balance AS CHAR) AS c FROM acct WHERE flags = 4",
        "CREATE TABLE s12 WITH c AS (SELECT uid FROM acct WHERE flags = 0) SELECT * FROM c",
        "CREATE TABLE s13 SELECT flags, GROUP_CONCAT(uid ORDER BY uid) AS uids, MIN(handle) AS h FROM acct GROUP BY flags",
        "SET sql_select_limit = 2",
        "CREATE TABLE s15 SELECT uid FROM acct",
        "SET sql_select_limit = DEFAULT",
        "BEGIN",
        "INSERT INTO acct (uid, handle, flags) VALUES (2001, 'txn', 1)",
        "CREATE TABLE s16 SELECT uid, handle FROM acct WHERE uid > 2000",
        "ROLLBACK",
        "SELECT * FROM acct WHERE uid > 2000",
        "CREATE TABLE s17 SELECT uid, handle FROM acct WHERE nope = 1",
        "CREATE TABLE s18 SELECT * FROM acct WHERE uid = 1002",
        "CREATE TEMPORARY TABLE s14 SELECT uid, flags FROM acct WHERE flags > 2",
        "SELECT * FROM s14 ORDER BY uid",
    ] {
        h.check(sql).await;
    }
    for t in [
        "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s15",
        "s16", "s17", "s18",
    ] {
        h.check(&format!("SHOW CREATE TABLE {t}")).await;
        h.check_any_order(&format!("SELECT * FROM {t}")).await;
    }
    h.check("SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1")
        .await;
    h.report("CREATE TABLE SELECT", 60);
}

// ---- A temporary table joined with a partitioned table ------------------

/// Issue 29 ("Other classes"): a temporary table joined with a
/// partitioned table, over several partitions and on one.
#[tokio::test]
async fn temporary_table_joined_with_a_partitioned_table() {
    let mut h = acct("tt_issue").await;
    for sql in [
        "CREATE TEMPORARY TABLE tt (uid INT PRIMARY KEY, note VARCHAR(10))",
        "INSERT INTO tt VALUES (1001, 'a'), (1002, 'b'), (1006, 'c'), (1040, 'd'), (7, 'none')",
        "SELECT a.uid, tt.note FROM acct a JOIN tt ON tt.uid = a.uid ORDER BY a.uid",
        "SELECT a.uid, tt.note FROM acct a JOIN tt ON tt.uid = a.uid WHERE a.uid = 1001",
    ] {
        h.check(sql).await;
    }
    h.report("temporary tables", 4);
}

/// The class: LEFT JOIN, aggregates over the join, a subquery on the
/// temporary table, the temporary table first, a write from the join's
/// keys, reads of the partitioned table alone beside the temporary
/// table, a temporary table named like a plain table it hides, after the
/// temporary table is dropped.
#[tokio::test]
async fn temporary_tables_beside_partitioned_tables() {
    let mut h = acct("tt_class").await;
    for sql in [
        "CREATE TABLE plain (uid INT PRIMARY KEY, note VARCHAR(10))",
        "INSERT INTO plain VALUES (1003, 'real')",
        "CREATE TEMPORARY TABLE tt (uid INT PRIMARY KEY, note VARCHAR(10))",
        "INSERT INTO tt VALUES (1003, 'x'), (1004, 'y'), (1005, 'z'), (2000, 'w')",
        "CREATE TEMPORARY TABLE plain (uid INT PRIMARY KEY, note VARCHAR(10))",
        "INSERT INTO plain VALUES (1010, 'temp')",
        "SELECT tt.uid, a.handle FROM tt LEFT JOIN acct a ON a.uid = tt.uid ORDER BY tt.uid",
        "SELECT COUNT(*), SUM(a.balance) FROM acct a JOIN tt ON tt.uid = a.uid",
        "SELECT uid FROM acct WHERE uid IN (SELECT uid FROM tt) ORDER BY uid",
        "SELECT a.uid, p.note FROM acct a JOIN plain p ON p.uid = a.uid",
        "SELECT COUNT(*) FROM acct",
        "SELECT uid, handle FROM acct WHERE flags = 2 ORDER BY uid LIMIT 3",
        "SELECT * FROM acct WHERE uid = 1007",
        "DROP TEMPORARY TABLE plain",
        "SELECT a.uid, p.note FROM acct a JOIN plain p ON p.uid = a.uid",
        "DROP TEMPORARY TABLE tt",
        "SELECT COUNT(*) FROM acct WHERE flags = 1",
    ] {
        h.check(sql).await;
    }
    h.report("temporary tables", 17);
}

// ---- 6. Constraints and errors name the logical table -------------------

/// Issue 29 ("Other classes"): information_schema's CHECK_CONSTRAINTS and
/// TABLE_CONSTRAINTS list the partitioned table, not its partitions'
/// physical tables; errors of ALTER (1060) and of generated columns
/// (1906) are one server's.
#[tokio::test]
async fn constraints_and_schema_errors_name_the_partitioned_table() {
    let mut h = acct("cc_issue").await;
    for sql in [
        "ALTER TABLE acct ADD CONSTRAINT chk_flags CHECK (flags >= 0)",
        "SELECT CONSTRAINT_NAME, TABLE_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1, 2",
        "SELECT CONSTRAINT_NAME, TABLE_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() ORDER BY 1, 2",
        "ALTER TABLE acct ADD COLUMN handle INT",
        "ALTER TABLE acct ADD COLUMN g INT AS (flags * 2) VIRTUAL",
        "INSERT INTO acct (uid, g) VALUES (5000, 1)",
        "UPDATE acct SET g = 3 WHERE uid = 1001",
    ] {
        h.compare_messages(sql).await;
    }
    h.report("constraints and schema errors", 7);
}

/// The class: a UNIQUE and a second CHECK constraint, constraints listed
/// with other columns and filters (by table name, by type), a CHECK
/// violated over several partitions (4025), a duplicate key name (1061),
/// dropping an unknown column (1091), a generated column written over
/// several partitions and by a multi-row INSERT.
#[tokio::test]
async fn constraints_and_errors_of_partitioned_tables() {
    let mut h = acct("cc_class").await;
    for sql in [
        "ALTER TABLE acct ADD CONSTRAINT chk_bal CHECK (balance > -1000)",
        "ALTER TABLE acct ADD COLUMN g INT AS (flags + 1) STORED",
        "SELECT CONSTRAINT_CATALOG, CONSTRAINT_NAME, TABLE_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'acct' ORDER BY CONSTRAINT_NAME",
        "SELECT CONSTRAINT_NAME, LEVEL FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = 'acct'",
        "SELECT COUNT(*) FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() AND CONSTRAINT_TYPE = 'CHECK'",
        "SELECT TABLE_NAME FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'acct%' ORDER BY 1",
        "UPDATE acct SET balance = -5000 WHERE flags = 2",
        "ALTER TABLE acct ADD INDEX ix (flags)",
        "ALTER TABLE acct ADD INDEX ix (handle)",
        "ALTER TABLE acct DROP COLUMN nope",
        "UPDATE acct SET g = 1 WHERE flags = 3",
        "INSERT INTO acct (uid, g) VALUES (6001, 1), (6002, 2)",
        "INSERT INTO acct (uid, flags) VALUES (6003, 1), (6004, 2)",
        "SELECT uid, g FROM acct WHERE uid > 6000 ORDER BY uid",
    ] {
        h.compare_messages(sql).await;
    }
    h.report("constraints and schema errors", 14);
}

/// A table with no partition on the main backend: its constraints are
/// read from its default partition's backend, under its name.
#[tokio::test]
async fn constraints_of_a_table_with_no_partition_on_the_main_backend() {
    let schema = &["CREATE TABLE far (id INT PRIMARY KEY, n INT, CONSTRAINT chk_n CHECK (n >= 0))"];
    let partitioning = &[
        "HSCALE SETUP_TABLE('far', 'id', 'far_default', 'shard1', 'MOD(2)')",
        "HSCALE ADD_PARTITION('far', 'f1', '1', 'shard2')",
    ];
    let mut h = Pair::new(
        "cc_far",
        schema,
        partitioning,
        &["INSERT INTO far VALUES (1, 1), (2, 2)"],
    )
    .await;
    for sql in [
        "SELECT CONSTRAINT_NAME, TABLE_NAME, CONSTRAINT_TYPE FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() ORDER BY 1",
        "SELECT CONSTRAINT_NAME, TABLE_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() ORDER BY 1",
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()",
    ] {
        h.compare_messages(sql).await;
    }
    h.report("constraints of a remote table", 3);
}

// ---- SHOW CREATE TABLE in the client's sql_mode ---------------------------

/// transp14, issue 29 left open: SHOW CREATE TABLE of a partitioned
/// table asked under ANSI_QUOTES writes its names in double quotes, as
/// one server does (hscale asked on a connection in its own sql_mode and
/// answered backquotes).
#[tokio::test]
async fn show_create_table_under_ansi_quotes() {
    let mut h = acct("sq_issue").await;
    h.both("SET sql_mode = 'ANSI_QUOTES'").await;
    h.check("SHOW CREATE TABLE acct").await;
    h.report("SHOW CREATE TABLE under ANSI_QUOTES", 1);
}

/// The class: every sql_mode that changes SHOW CREATE TABLE's text
/// (ANSI_QUOTES alone and within ANSI, MSSQL, POSTGRESQL, ORACLE; the
/// NO_*_OPTIONS modes), the name written in double quotes, a table with
/// an AUTO_INCREMENT sequence, keys and comments, and back in the default
/// mode.
#[tokio::test]
async fn show_create_table_follows_the_clients_sql_mode() {
    let mut h = acct("sq_class").await;
    h.both("CREATE TABLE seqd (id BIGINT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, note VARCHAR(10) DEFAULT 'x' COMMENT 'a note', UNIQUE KEY (id, k), KEY kn (note) COMMENT 'by note') COMMENT 'with a sequence'")
        .await;
    h.p.query_drop("HSCALE SETUP_TABLE('seqd', 'id', 'seqd_default', 'shard1', 'MOD(2)')")
        .await
        .unwrap();
    h.p.query_drop("HSCALE ADD_PARTITION('seqd', 's1', '1', 'shard2')")
        .await
        .unwrap();
    let mut n = 0;
    for mode in [
        "'ANSI_QUOTES'",
        "'ANSI'",
        "'MSSQL'",
        "'POSTGRESQL'",
        "'ORACLE'",
        "'ANSI_QUOTES,NO_TABLE_OPTIONS'",
        "'NO_KEY_OPTIONS,NO_FIELD_OPTIONS'",
        "'NO_TABLE_OPTIONS,NO_KEY_OPTIONS,NO_FIELD_OPTIONS,ANSI_QUOTES'",
        "DEFAULT",
    ] {
        h.both(&format!("SET sql_mode = {mode}")).await;
        for sql in ["SHOW CREATE TABLE acct", "SHOW CREATE TABLE seqd"] {
            h.check(sql).await;
            n += 1;
        }
        if mode.contains("ANSI") || mode.contains("SQL") || mode.contains("ORACLE") {
            h.check("SHOW CREATE TABLE \"seqd\"").await;
            n += 1;
        }
    }
    h.report("SHOW CREATE TABLE in sql_modes", n);
}
