//! The queries a transfer across backends sends each backend, as the
//! servers' general logs record them (`exec/txn/lead_in.rs`,
//! `exec/txn/commit.rs`): BEGIN and XA START go in one query with the first
//! statement on their backend, XA END with XA PREPARE, the decision with
//! the home's COMMIT.

use super::*;

async fn set_general_log(on: bool) {
    for b in 0..2 {
        let mut bc = backend_conn(b, None).await;
        if on {
            bc.query_drop("SET GLOBAL log_output = 'TABLE'")
                .await
                .unwrap();
            bc.query_drop("TRUNCATE TABLE mysql.general_log")
                .await
                .unwrap();
        }
        bc.query_drop(format!("SET GLOBAL general_log = {}", u8::from(on)))
            .await
            .unwrap();
        bc.disconnect().await.unwrap();
    }
}

/// The queries backend `b` logged on the connection that ran the query
/// containing `marker`, in order.
async fn queries_of(b: usize, marker: &str) -> Vec<String> {
    let mut bc = backend_conn(b, None).await;
    let rows: Vec<(u64, String)> = bc
        .query(
            "SELECT thread_id, CONVERT(argument USING utf8mb4) FROM mysql.general_log \
             WHERE command_type = 'Query'",
        )
        .await
        .unwrap();
    bc.disconnect().await.unwrap();
    let thread = rows
        .iter()
        .find(|(_, q)| q.contains(marker))
        .unwrap_or_else(|| panic!("no query with {marker:?} on backend {b}: {rows:?}"))
        .0;
    rows.into_iter()
        .filter(|(t, _)| *t == thread)
        .map(|(_, q)| q)
        .collect()
}

#[tokio::test]
async fn a_transfer_opens_and_commits_each_branch_in_few_queries() {
    let _serial = SERIAL.lock().await;
    let mut c = accounts("txn_trips").await;
    set_general_log(true).await;
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE accounts SET balance = balance - 7 WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("UPDATE accounts SET balance = balance + 7 WHERE id = 2")
        .await
        .unwrap();
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(balance(&mut c, 2).await, 107);
    set_general_log(false).await;
    let starts = |q: &&String, p: &str| q.to_ascii_uppercase().starts_with(p);
    // The home (shard1, account 1): BEGIN with the UPDATE, the decision
    // with the COMMIT; no query of its own for either.
    let home = queries_of(1, "balance - 7").await;
    assert!(
        home.iter()
            .any(|q| starts(&q, "BEGIN;UPDATE") && q.contains("balance - 7")),
        "{home:?}"
    );
    assert!(
        home.iter()
            .any(|q| starts(&q, "INSERT INTO `HSCALE`.`DECISIONS`")
                && q.to_ascii_uppercase().ends_with(";COMMIT")),
        "{home:?}"
    );
    assert!(
        !home
            .iter()
            .any(|q| q.eq_ignore_ascii_case("BEGIN") || q.eq_ignore_ascii_case("COMMIT")),
        "{home:?}"
    );
    // The branch (shard0, account 2): XA START with the UPDATE, XA END
    // with XA PREPARE, then XA COMMIT.
    let branch = queries_of(0, "balance + 7").await;
    let xa: Vec<&String> = branch
        .iter()
        .filter(|q| starts(q, "XA ") && !starts(q, "XA RECOVER"))
        .collect();
    assert_eq!(xa.len(), 3, "{branch:?}");
    assert!(
        starts(&xa[0], "XA START") && xa[0].contains(";UPDATE") && xa[0].contains("balance + 7"),
        "{branch:?}"
    );
    assert!(
        starts(&xa[1], "XA END") && xa[1].to_ascii_uppercase().contains(";XA PREPARE"),
        "{branch:?}"
    );
    assert!(starts(&xa[2], "XA COMMIT"), "{branch:?}");
    assert_eq!(total_on_backends("txn_trips").await, TOTAL);
    assert_eq!(prepared_branches().await, 0);
}

/// What the lead-in relies on, asked of the server itself: a statement
/// that opens a transaction and is refused stops its query, so the
/// statement sent behind it never runs (here BEGIN and XA START refused
/// inside an active XA transaction, 1399).
#[tokio::test]
async fn a_refused_begin_or_xa_start_stops_the_statement_behind_it() {
    let _serial = SERIAL.lock().await;
    let db = "txn_lead_refused";
    drop(accounts(db).await);
    let table = physical(&format!("{db}.accounts"), None).await;
    let mut bc = backend_conn(0, Some(db)).await;
    bc.query_drop("XA START 'hscale-test-lead'").await.unwrap();
    for lead in ["BEGIN", "XA START 'hscale-test-other'"] {
        let e = bc
            .query_drop(format!(
                "{lead};UPDATE {table} SET balance = balance + 1000 WHERE id = 2"
            ))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("1399"), "{lead}: {e}");
    }
    bc.query_drop("XA END 'hscale-test-lead'").await.unwrap();
    bc.query_drop("XA COMMIT 'hscale-test-lead' ONE PHASE")
        .await
        .unwrap();
    bc.disconnect().await.unwrap();
    let mut c = proxy_conn(Some(db)).await;
    assert_eq!(balance(&mut c, 2).await, 100);
    assert_eq!(total_on_backends(db).await, TOTAL);
}
