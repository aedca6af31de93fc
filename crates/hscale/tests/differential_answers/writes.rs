//! Writes over partitions: INSERT into keyword-named columns, ON
//! DUPLICATE KEY UPDATE with table-qualified columns, UPDATE of the
//! partition key, prepared multi-row INSERTs, prepared ordered writes.

use super::*;

// ---- 7. INSERT into a table with a column named `value` -----------------

const EVENTS_SCHEMA: &[&str] = &[
    "CREATE TABLE events (id BIGINT, happened DATETIME NOT NULL, kind VARCHAR(16), value INT, PRIMARY KEY (id, happened))",
];
const EVENTS_PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('events', 'happened', 'events_default', 'shard0', 'DATE(\"%Y-%m\")')",
    "HSCALE ADD_PARTITION('events', 'e2311', '2023-11', 'shard1')",
    "HSCALE ADD_PARTITION('events', 'e2312', '2023-12', 'shard2')",
    "HSCALE ADD_PARTITION('events', 'e2401', '2024-01', 'shard3')",
    "HSCALE ADD_PARTITION('events', 'e2402', '2024-02', 'shard1')",
    "HSCALE ADD_PARTITION('events', 'e2403', '2024-03', 'shard2')",
    "HSCALE ADD_PARTITION('events', 'e2404', '2024-04', 'shard3')",
];

/// Issue 29, item 7: one row for a partition, one for the default, in a
/// table whose last column is named `value` (the keyword of `INSERT ...
/// VALUE (...)`), set up with a double-quoted DATE pattern.
#[tokio::test]
async fn insert_over_partitions_into_a_column_named_value() {
    let mut h = Pair::new("ev_issue", EVENTS_SCHEMA, EVENTS_PARTITIONING, &[]).await;
    h.check_write(
        "INSERT INTO events (id, happened, kind, value) VALUES (90001, '2024-02-10 10:10:10', 'buy', 5), (90002, '2025-12-01 00:00:00', 'view', 6)",
    )
    .await;
    h.report("INSERT with a column named value", 1);
}

/// The class: column lists naming `value` / `values` / `VALUE` where the
/// INSERT splits over partitions, in every INSERT form that splits.
#[tokio::test]
async fn inserts_over_partitions_with_keyword_named_columns() {
    let schema = &[
        EVENTS_SCHEMA[0],
        "CREATE TABLE kv (`values` INT, value INT, happened DATE NOT NULL, PRIMARY KEY (happened, value))",
    ];
    let partitioning: Vec<&str> = EVENTS_PARTITIONING
        .iter()
        .copied()
        .chain([
            "HSCALE SETUP_TABLE('kv', 'happened', 'kv_default', 'shard0', \"DATE('%Y-%m')\")",
            "HSCALE ADD_PARTITION('kv', 'k1', '2024-01', 'shard1')",
            "HSCALE ADD_PARTITION('kv', 'k2', '2024-02', 'shard2')",
        ])
        .collect();
    let mut h = Pair::new("ev_class", schema, &partitioning, &[]).await;
    for sql in [
        "INSERT INTO events (id, happened, kind, value) VALUES (1, '2023-11-10 10:10:10', 'buy', 5), (2, '2023-12-01 00:00:00', 'view', 6), (3, '2024-04-30 23:59:59', 'buy', 7)",
        "INSERT INTO events (id, happened, kind, value) VALUE (4, '2024-01-10 10:10:10', 'buy', 5), (5, '2026-01-01 00:00:00', 'view', 6)",
        "INSERT INTO events (value, id, kind, happened) VALUES (8, 6, 'x', '2024-03-03'), (9, 7, 'y', '2022-03-03')",
        "INSERT INTO events (`value`, id, kind, happened) VALUES (8, 16, 'x', '2024-03-03'), (9, 17, 'y', '2023-12-03')",
        "INSERT IGNORE INTO events (id, happened, kind, value) VALUES (1, '2023-11-10 10:10:10', 'dup', 0), (8, '2024-02-02', 'new', 1)",
        "REPLACE INTO events (id, happened, kind, value) VALUES (2, '2023-12-01 00:00:00', 'again', 60), (9, '2024-04-01', 'new', 2)",
        "INSERT INTO events (id, happened, kind, value) VALUES (3, '2024-04-30 23:59:59', 'buy', 1), (10, '2024-03-01', 'z', 2) ON DUPLICATE KEY UPDATE value = value + VALUES(value)",
        "INSERT INTO events (id, happened, kind, value) VALUES (3, '2024-04-30 23:59:59', 'buy', 1), (11, '2023-11-01', 'z', 2) ON DUPLICATE KEY UPDATE kind = VALUE(kind)",
        "INSERT INTO events (id, happened, kind, value) VALUES (12, '2024-02-10', 'a', 1), (13, '2024-03-10', 'b', NULL), (14, '2030-01-01', 'c', 3), (15, '2023-11-11', 'd', 4)",
        "INSERT INTO kv (`values`, value, happened) VALUES (1, 1, '2024-01-05'), (2, 2, '2024-02-05'), (3, 3, '2024-05-05')",
        "INSERT INTO kv (value, `values`, happened) VALUES (4, 40, '2024-01-06'), (5, 50, '2023-02-05')",
        "INSERT INTO kv VALUES (6, 6, '2024-01-07'), (7, 7, '2024-02-07')",
        "INSERT INTO kv (happened, value) VALUES ('2024-01-08', 8), ('2024-02-08', 9) ON DUPLICATE KEY UPDATE `values` = value",
        "UPDATE events SET value = value * 2 WHERE happened >= '2024-01-01'",
        "UPDATE kv SET `values` = value + 1 WHERE value > 2",
        "DELETE FROM events WHERE value = 6",
    ] {
        h.check_write(sql).await;
    }
    for sql in [
        "SELECT id, happened, kind, value FROM events ORDER BY id",
        "SELECT kind, SUM(value) AS value FROM events GROUP BY kind ORDER BY value, kind",
        "SELECT value, `values` FROM kv ORDER BY value",
    ] {
        h.check(sql).await;
    }
    h.report("INSERTs with keyword-named columns", 19);
}

// ---- Table-qualified columns in ON DUPLICATE KEY UPDATE -----------------

async fn stock(name: &str) -> Pair {
    let schema = &[
        "CREATE TABLE stock (sku INT PRIMARY KEY, qty INT, note VARCHAR(20))",
        "CREATE TABLE arch (id INT PRIMARY KEY, amount DECIMAL(10,2))",
        "CREATE TABLE src (id INT PRIMARY KEY, amount DECIMAL(10,2))",
    ];
    let partitioning = &[
        "HSCALE SETUP_TABLE('stock', 'sku', 'stock_default', 'shard0', 'MOD(2)')",
        "HSCALE ADD_PARTITION('stock', 's1', '1', 'shard1')",
        "HSCALE SETUP_TABLE('arch', 'id', 'arch_default', 'shard2', 'MOD(2)')",
        "HSCALE ADD_PARTITION('arch', 'a1', '1', 'shard3')",
    ];
    let data = &[
        "INSERT INTO stock VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, NULL), (4, 4, 'd')",
        "INSERT INTO arch VALUES (1, 10.00), (2, 20.00)",
        "INSERT INTO src VALUES (1, 1.50), (2, 2.50), (3, 3.50), (4, 4.50), (5, 5.50)",
    ];
    Pair::new(name, schema, partitioning, data).await
}

/// Issue 29 ("Other classes"): `qty = stock.qty + 1` over partitions.
#[tokio::test]
async fn on_duplicate_key_update_with_a_table_qualified_column() {
    let mut h = stock("od_issue").await;
    h.check_write(
        "INSERT INTO stock (sku, qty) VALUES (1, 5), (2, 5) ON DUPLICATE KEY UPDATE qty = stock.qty + 1",
    )
    .await;
    h.report("ON DUPLICATE KEY UPDATE t.col", 1);
}

/// Issue 29 ("Other classes"): `arch.amount` in the INSERT ... SELECT form.
#[tokio::test]
async fn insert_select_on_duplicate_key_update_with_a_table_qualified_column() {
    let mut h = stock("od_issue_sel").await;
    h.check_write(
        "INSERT INTO arch (id, amount) SELECT id, amount FROM src ON DUPLICATE KEY UPDATE amount = arch.amount + VALUES(amount)",
    )
    .await;
    h.report("ON DUPLICATE KEY UPDATE t.col", 1);
}

/// The class: qualified columns of the target in ON DUPLICATE KEY UPDATE,
/// on one partition and several, quoted, in functions, in the SET and
/// SELECT forms, on new and existing rows, and an unknown qualifier.
#[tokio::test]
async fn on_duplicate_key_update_reads_the_target_by_its_name() {
    let mut h = stock("od_class").await;
    for sql in [
        "INSERT INTO stock (sku, qty) VALUES (3, 1) ON DUPLICATE KEY UPDATE qty = stock.qty * 2",
        "INSERT INTO stock (sku, qty) VALUES (1, 1), (2, 1) ON DUPLICATE KEY UPDATE `qty` = `stock`.`qty` + 3",
        "INSERT INTO stock (sku, qty, note) VALUES (1, 1, 'x'), (4, 1, 'y') ON DUPLICATE KEY UPDATE note = CONCAT(IFNULL(stock.note, '-'), VALUES(note))",
        "INSERT INTO stock (sku, qty) VALUES (2, 9), (3, 9) ON DUPLICATE KEY UPDATE qty = IF(stock.qty > 3, stock.qty, VALUES(qty))",
        "INSERT INTO stock VALUES (1, 1, 'a'), (2, 2, 'b'), (9, 9, 'c') ON DUPLICATE KEY UPDATE note = CONCAT(stock.note, stock.sku)",
        "INSERT INTO stock (sku, qty) VALUES (5, 1), (6, 1) ON DUPLICATE KEY UPDATE qty = stock.qty + 1",
        "INSERT INTO stock (sku, qty) VALUES (5, 1), (6, 1), (7, 1) ON DUPLICATE KEY UPDATE qty = stock.qty + 1, note = 'again'",
        "INSERT INTO stock SET sku = 4, qty = 1 ON DUPLICATE KEY UPDATE qty = stock.qty + 10",
        "INSERT IGNORE INTO stock (sku, qty) VALUES (1, 0), (2, 0) ON DUPLICATE KEY UPDATE qty = stock.qty - 1",
        "INSERT INTO arch (id, amount) SELECT id, amount * 2 FROM src WHERE id < 5 ON DUPLICATE KEY UPDATE amount = arch.amount + 1",
        "INSERT INTO stock (sku, qty) VALUES (1, 1), (2, 1) ON DUPLICATE KEY UPDATE qty = nope.qty",
        "INSERT INTO stock (sku, qty) VALUES (1, 1), (2, 1) ON DUPLICATE KEY UPDATE qty = stock.nope",
    ] {
        h.check_write(sql).await;
    }
    h.report("ON DUPLICATE KEY UPDATE t.col", 12);
}

// ---- 8. An UPDATE that changes the partition key -------------------------

/// Issue 29, item 8: the statement on `acct` (MOD(4) on uid).
#[tokio::test]
async fn update_that_changes_the_partition_key() {
    let mut h = acct("km_issue").await;
    h.check_write("UPDATE acct SET uid = uid + 8 WHERE uid = 1003")
        .await;
    for uid in [1003, 1011] {
        h.check(&format!("SELECT * FROM acct WHERE uid = {uid}"))
            .await;
    }
    h.report("UPDATE of the partition key", 3);
}

/// The class: rows moving to other partitions and staying, one row and
/// several, with other columns assigned before and after the key,
/// aliases, a duplicate key (nothing moves), no row, NULL into a NOT NULL
/// key, a DECIMAL value, inside transactions (committed, rolled back, a
/// failing move that leaves the transaction going); every moved row read
/// back by its key (so it sits in its partition).
#[tokio::test]
async fn updates_that_move_rows_between_partitions() {
    let mut h = acct("km_class").await;
    for sql in [
        "UPDATE acct SET uid = uid + 1 WHERE uid = 1005",
        "UPDATE acct SET uid = 2001, handle = 'moved' WHERE uid = 1006",
        "UPDATE acct SET handle = CONCAT(handle, '!'), uid = uid + 101 WHERE uid = 1007",
        "UPDATE acct SET uid = uid + 1000 WHERE flags = 2",
        "UPDATE acct SET uid = uid * 10 WHERE uid IN (1010, 1011, 1013)",
        "UPDATE acct AS a SET a.uid = a.uid + 3 WHERE a.uid = 1014",
        "UPDATE acct SET uid = 1002 WHERE uid = 1001",
        "UPDATE acct SET uid = uid WHERE uid = 1015",
        "UPDATE acct SET uid = uid + 4 WHERE uid = 99999",
        "UPDATE acct SET uid = 3000 + uid, balance = balance * 2 WHERE uid BETWEEN 1020 AND 1025",
        "UPDATE acct SET uid = uid + 1.0 WHERE uid = 1030",
        "UPDATE acct SET uid = NULL WHERE uid = 1031",
        "UPDATE acct SET `uid` = `uid` - 2000 WHERE handle = 'h3'",
        "UPDATE acct SET uid = 5000 + flags WHERE uid = 1033",
    ] {
        h.check_write(sql).await;
    }
    for sql in [
        "BEGIN",
        "UPDATE acct SET uid = uid + 7 WHERE uid = 1034",
        "SELECT * FROM acct WHERE uid IN (1034, 1041)",
        "ROLLBACK",
        "SELECT * FROM acct WHERE uid IN (1034, 1041)",
        "START TRANSACTION",
        "UPDATE acct SET handle = 'kept' WHERE uid = 1035",
        "UPDATE acct SET uid = 1036 WHERE uid = 1035",
        "UPDATE acct SET uid = uid + 2 WHERE uid = 1037",
        "COMMIT",
        "SET autocommit = 0",
        "UPDATE acct SET uid = uid + 1 WHERE uid = 1038",
        "COMMIT",
        "SET autocommit = 1",
    ] {
        h.check_write(sql).await;
    }
    for uid in [
        1005, 1006, 1007, 1014, 1017, 1033, 1035, 1036, 1037, 1039, 1040, 1041, 2001, 5003, 10100,
        10110, 10130, 2002, 4020, 4021, 4025, 1031,
    ] {
        h.check(&format!("SELECT * FROM acct WHERE uid = {uid}"))
            .await;
    }
    h.check("SELECT LAST_INSERT_ID(), ROW_COUNT()").await;
    h.report("UPDATE of the partition key", 50);
}

/// Rows moved keep their other columns and ids: a generated column is
/// computed again where the row lands, the AUTO_INCREMENT id (filled by
/// hscale's sequence) stays, and LAST_INSERT_ID() is not changed.
#[tokio::test]
async fn moved_rows_keep_their_ids_and_generated_columns() {
    let schema = &[
        "CREATE TABLE mv (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, v VARCHAR(10), twice INT AS (k * 2) STORED)",
    ];
    let partitioning = &[
        "HSCALE SETUP_TABLE('mv', 'k', 'mv_default', 'shard0', 'MOD(3)')",
        "HSCALE ADD_PARTITION('mv', 'm1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('mv', 'm2', '2', 'shard2')",
    ];
    let data =
        &["INSERT INTO mv (id, k, v) VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c'), (4, 4, 'd')"];
    let mut h = Pair::new("km_ids", schema, partitioning, data).await;
    for sql in [
        "UPDATE mv SET k = k + 1 WHERE id = 1",
        "UPDATE mv SET v = 'x', k = 7 WHERE k = 3",
        "UPDATE mv SET k = k + 10",
        "SELECT LAST_INSERT_ID()",
        "SELECT * FROM mv WHERE k = 12",
        "SELECT * FROM mv WHERE k = 17",
        "SELECT * FROM mv WHERE k = 14",
    ] {
        h.check_write(sql).await;
    }
    h.report("moved rows keep ids", 7);
}

/// The shapes not run exactly by moving rows are refused with 1235, on
/// the partitioned table only (the reference runs them).
#[tokio::test]
async fn updates_of_the_partition_key_that_are_refused() {
    let mut h = acct("km_refused").await;
    for sql in [
        "UPDATE acct SET uid = uid + 1 ORDER BY uid LIMIT 2",
        "UPDATE acct SET uid = FLOOR(RAND() * 10) WHERE uid = 1001",
        "UPDATE acct SET flags = 9, uid = flags + 5000 WHERE uid = 1002",
        "UPDATE IGNORE acct SET uid = uid + 1 WHERE uid = 1003",
        "UPDATE acct SET uid = @v WHERE uid = 1004",
        "UPDATE acct SET uid = uid + 0.5 WHERE uid = 1005",
    ] {
        let err = h.p.query_drop(sql).await.unwrap_err();
        assert_eq!(code(&err), 1235, "{sql}: {err}");
    }
    h.check("SELECT * FROM acct ORDER BY uid").await;
    h.report("refused key updates", 1);
}

// ---- 9. Prepared multi-row INSERT over several partitions ---------------

/// Issue 29, item 9: the prepared INSERT, its two rows for two
/// partitions of `acct`.
#[tokio::test]
async fn prepared_multi_row_insert_over_several_partitions() {
    let mut h = acct("pi_issue").await;
    exec_both(
        &mut h,
        "INSERT INTO acct (uid, handle, flags) VALUES (?, ?, ?), (?, ?, ?)",
        vec![
            Value::from(2001),
            Value::from("a"),
            Value::from(1),
            Value::from(2002),
            Value::from("b"),
            Value::from(2),
        ],
    )
    .await;
    h.check_write("SELECT * FROM acct WHERE uid IN (2001, 2002) ORDER BY uid")
        .await;
    h.check("SELECT * FROM acct WHERE uid = 2002").await;
    h.report("prepared multi-row INSERT", 3);
}

/// The class: rows for two, three and four partitions; with strings that
/// need quoting, NULLs, DECIMALs; a duplicate key (nothing stored);
/// REPLACE and INSERT IGNORE; ON DUPLICATE KEY UPDATE; a table whose ids
/// hscale's sequence fills (LAST_INSERT_ID the first id); the same
/// statement executed again; then every row read back by its key.
#[tokio::test]
async fn prepared_multi_row_inserts_split_by_rows() {
    let mut h = acct("pi_class").await;
    let three = "INSERT INTO acct (uid, handle, flags, balance) VALUES (?, ?, ?, ?), (?, ?, ?, ?), (?, ?, ?, ?)";
    let rows = |a: [i64; 3], names: [&str; 3]| -> Vec<Value> {
        let mut v = Vec::new();
        for (i, n) in a.iter().zip(names) {
            v.extend([
                Value::from(*i),
                Value::from(n),
                Value::from(*i % 7),
                Value::from(format!("{}.25", i % 100)),
            ]);
        }
        v
    };
    exec_both(
        &mut h,
        three,
        rows([3001, 3002, 3003], ["x", "it's", "back\\slash"]),
    )
    .await;
    exec_both(
        &mut h,
        three,
        rows([3004, 3008, 3012], ["same", "part", "ition"]),
    )
    .await;
    exec_both(
        &mut h,
        three,
        rows([3005, 3006, 3001], ["dup", "dup", "dup"]),
    )
    .await;
    exec_both(&mut h, three, rows([3009, 3010, 3011], ["é", "ü", "ñ"])).await;
    exec_both(
        &mut h,
        "INSERT INTO acct (uid, handle, flags, balance) VALUES (?, ?, ?, ?), (?, ?, ?, ?)",
        vec![
            Value::from(3013),
            Value::NULL,
            Value::NULL,
            Value::NULL,
            Value::from(3014),
            Value::from("n"),
            Value::from(1),
            Value::NULL,
        ],
    )
    .await;
    exec_both(
        &mut h,
        "REPLACE INTO acct (uid, handle) VALUES (?, ?), (?, ?)",
        vec![
            Value::from(3001),
            Value::from("r1"),
            Value::from(3015),
            Value::from("r2"),
        ],
    )
    .await;
    exec_both(
        &mut h,
        "INSERT IGNORE INTO acct (uid, handle) VALUES (?, ?), (?, ?)",
        vec![
            Value::from(3002),
            Value::from("i1"),
            Value::from(3016),
            Value::from("i2"),
        ],
    )
    .await;
    exec_both(
        &mut h,
        "INSERT INTO acct (uid, flags) VALUES (?, ?), (?, ?) ON DUPLICATE KEY UPDATE flags = flags + 10",
        vec![
            Value::from(3003),
            Value::from(1),
            Value::from(3017),
            Value::from(1),
        ],
    )
    .await;
    for uid in 3001..=3017 {
        h.check(&format!("SELECT * FROM acct WHERE uid = {uid}"))
            .await;
    }
    h.check_write("SELECT COUNT(*) FROM acct").await;
    h.report("prepared multi-row INSERT", 26);
}

/// A table whose ids hscale's sequence fills: a prepared multi-row INSERT
/// over several partitions answers LAST_INSERT_ID() with its first id,
/// and the ids are the ones a read finds (one server's ids may differ).
#[tokio::test]
async fn prepared_multi_row_insert_with_sequence_ids() {
    cluster(4);
    let mut c = proxy_conn(None).await;
    for s in [
        "DROP DATABASE IF EXISTS pi_seq",
        "CREATE DATABASE pi_seq",
        "USE pi_seq",
        "CREATE TABLE ev (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, v VARCHAR(10))",
        "HSCALE SETUP_TABLE('ev', 'k', 'ev_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('ev', 'e1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('ev', 'e2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('ev', 'e3', '3', 'shard3')",
    ] {
        c.query_drop(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    c.exec_drop(
        "INSERT INTO ev (k, v) VALUES (?, ?), (?, ?), (?, ?)",
        (1, "a", 2, "b", 3, "c"),
    )
    .await
    .unwrap();
    assert_eq!(c.affected_rows(), 3);
    let first = c.last_insert_id().unwrap();
    let lid: u64 = c
        .query_first("SELECT LAST_INSERT_ID()")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lid, first);
    let ids: Vec<(u64, i64)> = c.query("SELECT id, k FROM ev ORDER BY k").await.unwrap();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[0], (first, 1));
    let mut sorted: Vec<u64> = ids.iter().map(|r| r.0).collect();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 3, "{ids:?}");
}

// ---- Prepared UPDATE / DELETE ... ORDER BY ... LIMIT on one partition ---

async fn stockw(name: &str) -> Pair {
    let schema = &[
        "CREATE TABLE stockw (wh INT NOT NULL, item INT NOT NULL, qty INT, PRIMARY KEY (wh, item))",
    ];
    let partitioning = &[
        "HSCALE SETUP_TABLE('stockw', 'wh', 'stockw_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('stockw', 'w1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('stockw', 'w2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('stockw', 'w3', '3', 'shard3')",
    ];
    let rows: Vec<String> = (1..=8)
        .flat_map(|wh| {
            (1..=6).map(move |item| format!("({wh}, {item}, {})", (wh * 7 + item * 3) % 11))
        })
        .collect();
    let data = format!("INSERT INTO stockw VALUES {}", rows.join(", "));
    Pair::new(name, schema, partitioning, &[data.as_str()]).await
}

/// Issue 29 ("Refused, but one server answers"): a prepared UPDATE ...
/// ORDER BY ... LIMIT whose `WHERE wh = ?` names one partition.
#[tokio::test]
async fn prepared_update_order_by_limit_on_one_partition() {
    let mut h = stockw("pu_issue").await;
    exec_both(
        &mut h,
        "UPDATE stockw SET qty = qty - 1 WHERE wh = ? ORDER BY qty DESC, item LIMIT 2",
        vec![Value::from(3)],
    )
    .await;
    h.check_write("SELECT * FROM stockw WHERE wh = 3 ORDER BY item")
        .await;
    h.report("prepared ordered writes", 2);
}

/// The class: UPDATE and DELETE, other keys and limits, more conditions,
/// the key parameter last or first, `? = wh`, LIMIT 0, a key matching no
/// row, the same statement executed for several partitions in turn.
#[tokio::test]
async fn prepared_ordered_writes_whose_key_is_a_parameter() {
    let mut h = stockw("pu_class").await;
    let cases: Vec<(&str, Vec<Value>)> = vec![
        (
            "UPDATE stockw SET qty = qty + 10 WHERE wh = ? ORDER BY item DESC LIMIT 1",
            vec![Value::from(1)],
        ),
        (
            "UPDATE stockw SET qty = qty + 10 WHERE wh = ? ORDER BY item DESC LIMIT 1",
            vec![Value::from(2)],
        ),
        (
            "UPDATE stockw SET qty = qty + 10 WHERE wh = ? ORDER BY item DESC LIMIT 1",
            vec![Value::from(8)],
        ),
        (
            "UPDATE stockw SET qty = 0 WHERE qty > ? AND wh = ? ORDER BY qty, item LIMIT 3",
            vec![Value::from(4), Value::from(5)],
        ),
        (
            "UPDATE stockw SET qty = qty * 2 WHERE ? = wh ORDER BY item LIMIT 2",
            vec![Value::from(6)],
        ),
        (
            "UPDATE stockw SET qty = 1 WHERE wh = ? ORDER BY item LIMIT 0",
            vec![Value::from(7)],
        ),
        (
            "UPDATE stockw SET qty = 1 WHERE wh = ? ORDER BY item LIMIT 2",
            vec![Value::from(99)],
        ),
        (
            "DELETE FROM stockw WHERE wh = ? ORDER BY item LIMIT 2",
            vec![Value::from(4)],
        ),
        (
            "DELETE FROM stockw WHERE wh = ? AND qty < ? ORDER BY qty DESC, item LIMIT 1",
            vec![Value::from(3), Value::from(9)],
        ),
        (
            "DELETE FROM stockw WHERE wh = ? LIMIT 1",
            vec![Value::from(1)],
        ),
        (
            "UPDATE stockw SET qty = qty - 1 WHERE wh = ? LIMIT 2",
            vec![Value::from(2)],
        ),
    ];
    for (sql, params) in cases {
        exec_both(&mut h, sql, params).await;
    }
    h.check_write("SELECT * FROM stockw ORDER BY wh, item")
        .await;
    h.report("prepared ordered writes", 12);
}
