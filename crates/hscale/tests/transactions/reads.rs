//! Reads inside transactions across backends that need more than one
//! branch at a time: shipped reads (a join of differently partitioned
//! tables: one side copied into a temporary table next to the other,
//! `exec/merge/ship.rs`) and multi-statement queries
//! (`exec/txn/ends.rs`). Both see the transaction's own writes.

use super::*;

/// `owners` partitioned by its own `id`, the other way round from
/// `accounts` (even ids on shard1, odd on shard0): owner `i` owns account
/// `i`, so a join on the account ships one side next to the other.
async fn owners(c: &mut mysql_async::Conn) {
    for sql in [
        "CREATE TABLE owners (id INT NOT NULL PRIMARY KEY, account INT NOT NULL, name VARCHAR(20) NOT NULL)",
        "HSCALE SETUP_TABLE('owners', 'id', 'owners_even', 'shard1', 'MOD(2)')",
        "HSCALE ADD_PARTITION('owners', 'odd', '1', 'shard0')",
    ] {
        c.query_drop(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let values: Vec<String> = (1..=20).map(|i| format!("({i}, {i}, 'o{i}')")).collect();
    c.query_drop(format!("INSERT INTO owners VALUES {}", values.join(", ")))
        .await
        .unwrap();
}

const RICH: &str = "SELECT o.name, a.balance FROM owners o JOIN accounts a ON a.id = o.account WHERE a.balance > 100 ORDER BY o.name";

/// A shipped join inside a transaction over both backends reads the
/// transaction's own writes on both sides (an updated account, a new
/// owner), others see none of them, and the transaction goes on as
/// before: its temporary copies are gone from the branches, so a later
/// UPDATE reaches the real table, and COMMIT keeps every write.
#[tokio::test]
async fn shipped_reads_see_the_transactions_writes() {
    let _serial = SERIAL.lock().await;
    let db = "txn_ship";
    let mut c = accounts(db).await;
    owners(&mut c).await;
    let plan: Vec<(String, String, String)> =
        c.query(format!("HSCALE EXPLAIN {RICH}")).await.unwrap();
    assert!(
        plan.iter()
            .any(|r| r.1.starts_with("ship into temporary table")),
        "{plan:?}"
    );
    let mut other = proxy_conn(Some(db)).await;
    c.query_drop("BEGIN").await.unwrap();
    // Home: shard1 (account 3); shard0 joins (account 4, owner 21).
    c.query_drop("UPDATE accounts SET balance = balance + 50 WHERE id = 3")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 70 WHERE id = 4")
        .await
        .unwrap();
    c.query_drop("INSERT INTO owners VALUES (21, 4, 'new')")
        .await
        .unwrap();
    let want = vec![
        ("new".to_string(), 170),
        ("o3".to_string(), 150),
        ("o4".to_string(), 170),
    ];
    let got: Vec<(String, i64)> = c.query(RICH).await.unwrap();
    assert_eq!(got, want);
    let seen: Vec<(String, i64)> = other.query(RICH).await.unwrap();
    assert!(seen.is_empty(), "{seen:?}");
    // Again, then a write through the same branches: the real tables.
    let got: Vec<(String, i64)> = c.query(RICH).await.unwrap();
    assert_eq!(got, want);
    c.query_drop("UPDATE accounts SET balance = balance + 1 WHERE id = 4")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 121 WHERE id = 6")
        .await
        .unwrap();
    assert_eq!(balance(&mut c, 4).await, 171);
    c.query_drop("COMMIT").await.unwrap();
    let got: Vec<(String, i64)> = other.query(RICH).await.unwrap();
    assert_eq!(
        got,
        vec![
            ("new".to_string(), 171),
            ("o3".to_string(), 150),
            ("o4".to_string(), 171),
        ]
    );
    assert_eq!(total_on_backends(db).await, TOTAL);
    // A READ ONLY transaction cannot hold the temporary copies (MariaDB
    // answers 1792): refused with 1235 before anything runs, and the
    // transaction goes on.
    c.query_drop("START TRANSACTION READ ONLY").await.unwrap();
    assert_eq!(balance(&mut c, 4).await, 171);
    let e = c.query_drop(RICH).await.unwrap_err();
    assert_eq!(code(&e), 1235, "{e}");
    assert_eq!(balance(&mut c, 1).await, 100);
    c.query_drop("COMMIT").await.unwrap();
    // A rolled-back transaction's shipped read saw its writes, then
    // nothing of it stays.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 900 WHERE id = 9")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 900 WHERE id = 10")
        .await
        .unwrap();
    let got: Vec<(String, i64)> = c.query(RICH).await.unwrap();
    assert_eq!(got.len(), 5, "{got:?}");
    c.query_drop("ROLLBACK").await.unwrap();
    let got: Vec<(String, i64)> = other.query(RICH).await.unwrap();
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(total_on_backends(db).await, TOTAL);
    assert_eq!(prepared_branches().await, 0);
}

/// Multi-statement queries inside a transaction over both backends run
/// on its branches and see its writes; one that would end or change the
/// transaction is refused (1235) and the transaction goes on; ROLLBACK
/// undoes what they wrote, COMMIT keeps it.
#[tokio::test]
async fn multi_statement_queries_run_in_the_transaction() {
    let _serial = SERIAL.lock().await;
    let db = "txn_multi";
    let mut c = accounts(db).await;
    // An unpartitioned table: on the main backend (shard0).
    c.query_drop("CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, n INT NOT NULL)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO ledger VALUES (1, 0)")
        .await
        .unwrap();
    let mut other = proxy_conn(Some(db)).await;
    for commit in [false, true] {
        c.query_drop("BEGIN").await.unwrap();
        // Home: shard1; shard0 joins.
        c.query_drop("UPDATE accounts SET balance = balance - 5 WHERE id = 1")
            .await
            .unwrap();
        c.query_drop("UPDATE accounts SET balance = balance + 5 WHERE id = 2")
            .await
            .unwrap();
        c.query_drop(
            "UPDATE ledger SET n = n + 1 WHERE id = 1; UPDATE ledger SET n = n + 10 WHERE id = 1",
        )
        .await
        .unwrap();
        let sums: Vec<i64> = c
            .query("SELECT n FROM ledger WHERE id = 1; SELECT 2")
            .await
            .unwrap();
        assert_eq!(sums, vec![11]);
        assert_eq!(n(&mut c).await, 11);
        assert_eq!(n(&mut other).await, 0);
        let e = c
            .query_drop("UPDATE ledger SET n = 100 WHERE id = 1; COMMIT")
            .await
            .unwrap_err();
        assert_eq!(code(&e), 1235, "{e}");
        assert_eq!(n(&mut c).await, 11);
        c.query_drop(if commit { "COMMIT" } else { "ROLLBACK" })
            .await
            .unwrap();
        assert_eq!(n(&mut other).await, if commit { 11 } else { 0 });
        assert_eq!(balance(&mut other, 1).await, if commit { 95 } else { 100 });
        assert_eq!(balance(&mut other, 2).await, if commit { 105 } else { 100 });
    }
    assert_eq!(total_on_backends(db).await, TOTAL);
    assert_eq!(prepared_branches().await, 0);
}

/// The ledger's count.
async fn n(c: &mut mysql_async::Conn) -> i64 {
    c.query_first("SELECT n FROM ledger WHERE id = 1")
        .await
        .unwrap()
        .unwrap()
}
