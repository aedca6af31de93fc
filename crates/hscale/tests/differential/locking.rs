//! Locking reads over several partitions (`FOR UPDATE`, `LOCK IN SHARE
//! MODE`, with `SKIP LOCKED`, `NOWAIT`, `WAIT n`, ORDER BY): two workers
//! taking rows at once, one through a `BEGIN` transaction and one an
//! ORM-style `SET autocommit=0` session,
//! against one server holding the same rows with the same two sessions.
//! Every step's answer (rows, or the error code of a lock it met) must be
//! the same, and so must the rows afterwards. What stays refused (a LIMIT,
//! aggregates, DISTINCT) is refused with 1235.
//!
//! Known difference in locks: a part's locks follow its partition's plan.
//! Each part of a key IN list gets only its own keys (`in_lists.rs`), as
//! one server seeking by key locks only those; on a table so small that
//! one server scans it (16 rows: `IN (1, ..., 6) LOCK IN SHARE MODE`
//! locked row 9 too, and another session's SKIP LOCKED read skipped it),
//! the answers of SKIP LOCKED reads differ, so `jobs` holds 200 rows. A
//! range read locks the first row past its range (InnoDB's next-key
//! lock), which on a partition is another row than on one server (`id <=
//! 6` locks 9 on the partition holding 1, 5, 9, 13; 7 on one server):
//! another session's SKIP LOCKED read may skip it. The script's ranges
//! are followed by reads that do not meet those rows.

use mysql_async::prelude::*;
use mysql_async::Conn;

use super::common::*;
use super::{answer, Res};

/// No secondary index: on a partition of four rows the optimizer reads a
/// covering secondary index where one server's rows are read by
/// primary key, and the two plans lock different gaps (a plan's locks, as
/// on one server with other statistics, not hscale's).
const SCHEMA: &str =
    "CREATE TABLE jobs (id INT NOT NULL PRIMARY KEY, state VARCHAR(8) NOT NULL, v INT NOT NULL)";

/// Rows in `jobs`.
const ROWS: i32 = 200;

/// (session, statement): A and B are two workers, each statement's
/// answer is compared with one server's. Rows are reached by primary key
/// (lists and ranges), so each side locks what its plan reads the same way.
const SCRIPT: &[(char, &str)] = &[
    ('A', "SET SESSION innodb_lock_wait_timeout = 1"),
    ('B', "SET SESSION innodb_lock_wait_timeout = 1"),
    ('A', "BEGIN"),
    ('A', "SELECT id, v FROM jobs WHERE id IN (1, 2, 3, 6) ORDER BY id FOR UPDATE"),
    ('B', "SET autocommit = 0"),
    (
        'B',
        "SELECT id, v FROM jobs WHERE id BETWEEN 1 AND 8 ORDER BY v, id FOR UPDATE SKIP LOCKED",
    ),
    (
        'B',
        "SELECT id FROM jobs WHERE id >= 5 ORDER BY id DESC LOCK IN SHARE MODE SKIP LOCKED",
    ),
    // Rows A holds: NOWAIT and WAIT 0 fail at once, a plain lock waits
    // out the lock wait timeout, on both sides.
    ('B', "SELECT id FROM jobs WHERE id IN (1, 2, 13) FOR UPDATE NOWAIT"),
    ('B', "SELECT id FROM jobs WHERE id IN (2, 14) ORDER BY id FOR UPDATE WAIT 0"),
    ('B', "SELECT id FROM jobs WHERE id IN (3, 15) ORDER BY id FOR UPDATE"),
    // One key a statement: a partition's part of `id IN (1, 2, 3)` names
    // the other partitions' keys too, and InnoDB gap-locks a key it does
    // not find, which B's range read holds here (see the module's note).
    ('A', "UPDATE jobs SET state = 'taken', v = v + 100 WHERE id = 1"),
    ('A', "UPDATE jobs SET state = 'taken', v = v + 100 WHERE id = 2"),
    ('A', "UPDATE jobs SET state = 'taken', v = v + 100 WHERE id = 3"),
    ('A', "SELECT id, state, v FROM jobs WHERE id IN (1, 2, 3, 6) ORDER BY id DESC FOR UPDATE"),
    (
        'A',
        "SELECT id FROM jobs WHERE id BETWEEN 1 AND 10 ORDER BY id FOR UPDATE SKIP LOCKED",
    ),
    ('A', "COMMIT"),
    // B's own locks are not skipped; A's are gone.
    (
        'B',
        "SELECT id, state FROM jobs WHERE id BETWEEN 1 AND 8 ORDER BY id FOR UPDATE SKIP LOCKED",
    ),
    ('B', "UPDATE jobs SET state = 'taken' WHERE id BETWEEN 4 AND 8 AND id <> 6"),
    (
        'A',
        "SELECT id FROM jobs WHERE id BETWEEN 1 AND 12 ORDER BY id FOR UPDATE SKIP LOCKED",
    ),
    ('B', "COMMIT"),
    ('A', "BEGIN"),
    (
        'A',
        "SELECT id, state FROM jobs WHERE id IN (1, 2, 3, 4, 5, 6) ORDER BY state DESC, id LOCK IN SHARE MODE",
    ),
    ('B', "SELECT id FROM jobs WHERE id IN (1, 9) ORDER BY id FOR UPDATE SKIP LOCKED"),
    ('B', "SELECT id, state FROM jobs WHERE id IN (2, 10) LOCK IN SHARE MODE"),
    ('A', "ROLLBACK"),
    ('B', "ROLLBACK"),
    ('B', "SET autocommit = 1"),
    // Autocommit: locks end with the statement, as on one server.
    ('A', "SELECT id, state, v FROM jobs ORDER BY id FOR UPDATE"),
    ('B', "SELECT id FROM jobs WHERE v > 5 ORDER BY v, id FOR UPDATE NOWAIT"),
];

/// Refused over several partitions (answered on one): a LIMIT would have
/// every partition lock rows of its own beyond the ones returned, which
/// another worker's SKIP LOCKED read then skips (measured: a second
/// worker got rows 13-15 where one server gives 4-6).
const REFUSED: &[&str] = &[
    "SELECT id FROM jobs WHERE state = 'new' ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED",
    "SELECT id FROM jobs ORDER BY id LIMIT 2 FOR UPDATE NOWAIT",
    "SELECT id FROM jobs LIMIT 1 LOCK IN SHARE MODE",
    "SELECT COUNT(*) FROM jobs FOR UPDATE",
    "SELECT DISTINCT state FROM jobs FOR UPDATE",
];

pub async fn run() {
    cluster(4);
    let (part, reference) = ("dc_lock_p", "dc_lock_r");
    let mut setup = proxy_conn(None).await;
    for db in [part, reference] {
        setup
            .query_drop(format!("CREATE DATABASE {db}"))
            .await
            .unwrap();
        setup.query_drop(format!("USE {db}")).await.unwrap();
        setup.query_drop(SCHEMA).await.unwrap();
        let rows: Vec<String> = (1..=ROWS)
            .map(|i| format!("({i}, 'new', {})", (i * 7) % 5))
            .collect();
        setup
            .query_drop(format!("INSERT INTO jobs VALUES {}", rows.join(", ")))
            .await
            .unwrap();
    }
    setup.query_drop(format!("USE {part}")).await.unwrap();
    for s in [
        "HSCALE SETUP_TABLE('jobs', 'id', 'jobs_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('jobs', 'm1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('jobs', 'm2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('jobs', 'm3', '3', 'shard3')",
    ] {
        setup
            .query_drop(s)
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    setup.disconnect().await.unwrap();
    let mut pa = proxy_conn(Some(part)).await;
    let mut pb = proxy_conn(Some(part)).await;
    let mut ra = proxy_conn(Some(reference)).await;
    let mut rb = proxy_conn(Some(reference)).await;
    let mut wrong = Vec::new();
    for (who, sql) in SCRIPT {
        let (p, r) = match who {
            'A' => (&mut pa, &mut ra),
            _ => (&mut pb, &mut rb),
        };
        // One server first: a step that waits on a lock waits the same
        // time on both sides, never on the other side's locks.
        let want = answer(r, sql).await;
        let got = answer(p, sql).await;
        if got != want || matches!(got.last(), Some(Res::Error(1235))) {
            wrong.push(format!(
                "[{who}] {sql}\n  hscale:    {got:?}\n  reference: {want:?}"
            ));
        }
    }
    for sql in REFUSED {
        let got = answer(&mut pa, sql).await;
        if got != vec![Res::Error(1235)] {
            wrong.push(format!("{sql}\n  hscale: {got:?}, not refused"));
        }
    }
    same_jobs(&mut pa, &mut ra, "every row after", &mut wrong).await;
    // Nothing left held: a locking read of every row through a third
    // session answers at once.
    let mut c = proxy_conn(Some(part)).await;
    c.query_drop("SET SESSION innodb_lock_wait_timeout = 1")
        .await
        .unwrap();
    c.query_drop("BEGIN").await.unwrap();
    let n: Vec<i32> = c
        .query("SELECT id FROM jobs ORDER BY id FOR UPDATE")
        .await
        .unwrap();
    assert_eq!(n.len(), ROWS as usize);
    c.query_drop("COMMIT").await.unwrap();
    for x in [pa, pb, ra, rb, c] {
        let _ = x.disconnect().await;
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A read merged over partitions that fails on one partition (a server
/// error in its part: a lock wait timeout, a value out of range) inside a
/// transaction ends that statement only, as on one server: the writes the
/// transaction made before it on that partition's backend are committed
/// with the rest. Its part's connection is the transaction's branch (or
/// home); closing it had its server roll those writes back while COMMIT
/// answered OK for the others (measured: the first UPDATE lost, 2 of 2).
pub async fn failed_merge_keeps_the_transaction() {
    cluster(4);
    let db = "dc_lock_txn";
    let mut setup = proxy_conn(None).await;
    setup
        .query_drop(format!("CREATE DATABASE {db}"))
        .await
        .unwrap();
    setup.query_drop(format!("USE {db}")).await.unwrap();
    setup.query_drop(SCHEMA).await.unwrap();
    for s in [
        "HSCALE SETUP_TABLE('jobs', 'id', 'jobs_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('jobs', 'm1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('jobs', 'm2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('jobs', 'm3', '3', 'shard3')",
    ] {
        setup.query_drop(s).await.unwrap();
    }
    setup.disconnect().await.unwrap();
    // Each way a session opens its transaction, and the failing part on
    // the home (the first backend written) and on another branch.
    for (open, failing) in [
        ("BEGIN", 5),
        ("BEGIN", 6),
        ("SET autocommit = 0", 5),
        ("SET autocommit = 0", 7),
    ] {
        let mut c = proxy_conn(Some(db)).await;
        c.query_drop("DELETE FROM jobs").await.unwrap();
        fill_jobs(&mut c).await;
        // Row `failing` gets v = 0, so `v - 1` as UNSIGNED fails there.
        c.query_drop(format!("UPDATE jobs SET v = 0 WHERE id = {failing}"))
            .await
            .unwrap();
        c.query_drop(open).await.unwrap();
        for id in [1, 3] {
            c.query_drop(format!("UPDATE jobs SET state = 'taken' WHERE id = {id}"))
                .await
                .unwrap();
        }
        let q = format!(
            "SELECT id, CAST(v AS UNSIGNED) - 1 AS x FROM jobs WHERE id IN (2, {failing}) ORDER BY id"
        );
        let e = c.query_drop(&q).await.unwrap_err();
        assert_eq!(code(&e), 1690, "{open}: {q}: {e}");
        let e = c
            .query_drop(format!(
                "SELECT state, COUNT(*), SUM(CAST(v AS UNSIGNED) - 1) FROM jobs WHERE id IN (4, {failing}) GROUP BY state"
            ))
            .await
            .unwrap_err();
        assert_eq!(code(&e), 1690, "{open}: {e}");
        c.query_drop("UPDATE jobs SET state = 'taken' WHERE id = 2")
            .await
            .unwrap();
        c.query_drop("COMMIT").await.unwrap();
        let taken: Vec<i32> = c
            .query("SELECT id FROM jobs WHERE state = 'taken' ORDER BY id")
            .await
            .unwrap();
        assert_eq!(taken, vec![1, 2, 3], "{open}, failing on {failing}");
        c.disconnect().await.unwrap();
    }
}

/// A merged read inside a transaction whose part on the transaction's own
/// connection is lost (its backend connection killed mid-read) ends the
/// transaction as a lost connection does on one server: nothing the
/// transaction wrote is committed, on any backend. Before, the session
/// went on with a fresh connection to that backend and COMMIT answered OK
/// for the other backends' writes while the lost one's were rolled back.
pub async fn lost_part_ends_the_transaction() {
    cluster(4);
    let db = "dc_lock_lost";
    let mut setup = proxy_conn(None).await;
    setup
        .query_drop(format!("CREATE DATABASE {db}"))
        .await
        .unwrap();
    setup.query_drop(format!("USE {db}")).await.unwrap();
    setup.query_drop(SCHEMA).await.unwrap();
    for s in [
        "HSCALE SETUP_TABLE('jobs', 'id', 'jobs_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('jobs', 'm1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('jobs', 'm2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('jobs', 'm3', '3', 'shard3')",
    ] {
        setup.query_drop(s).await.unwrap();
    }
    let rows: Vec<String> = (1..=8).map(|i| format!("({i}, 'new', {i})")).collect();
    setup
        .query_drop(format!("INSERT INTO jobs VALUES {}", rows.join(", ")))
        .await
        .unwrap();
    // The part lost on the home (shard1, written first) and on a branch
    // (shard3).
    for (killed, marker) in [(1usize, "SLEEP(1.5)"), (3, "SLEEP(1.6)")] {
        let mut c = proxy_conn(Some(db)).await;
        c.query_drop("BEGIN").await.unwrap();
        for id in [1, 3] {
            c.query_drop(format!("UPDATE jobs SET state = 'taken' WHERE id = {id}"))
                .await
                .unwrap();
        }
        let kill = tokio::spawn(async move {
            let mut k = backend_conn(killed, None).await;
            for _ in 0..100 {
                let ids: Vec<u64> = k
                    .query(format!(
                        "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%{marker}%' AND INFO NOT LIKE '%PROCESSLIST%'"
                    ))
                    .await
                    .unwrap();
                if let Some(id) = ids.first() {
                    k.query_drop(format!("KILL CONNECTION {id}")).await.unwrap();
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            panic!("the part never ran on shard{killed}");
        });
        let q = format!("SELECT id, {marker} FROM jobs WHERE id IN ({killed}, 2) ORDER BY id");
        assert!(c.query_drop(&q).await.is_err(), "{q}");
        kill.await.unwrap();
        // The session cannot go on as if the transaction were whole: its
        // next statements or its COMMIT fail (or the connection is gone).
        let later = async {
            c.query_drop("UPDATE jobs SET state = 'taken' WHERE id = 2")
                .await?;
            c.query_drop("COMMIT").await
        }
        .await;
        assert!(
            later.is_err(),
            "killed on shard{killed}: the transaction went on"
        );
        let _ = c.disconnect().await;
        let taken: Vec<i32> = setup
            .query("SELECT id FROM jobs WHERE state = 'taken' ORDER BY id")
            .await
            .unwrap();
        assert_eq!(
            taken,
            Vec::<i32>::new(),
            "killed on shard{killed}: half committed"
        );
    }
    setup.disconnect().await.unwrap();
}

/// Rows 1-8 of `jobs`, state 'new', v = id.
async fn fill_jobs(c: &mut Conn) {
    let rows: Vec<String> = (1..=8).map(|i| format!("({i}, 'new', {i})")).collect();
    c.query_drop(format!("INSERT INTO jobs VALUES {}", rows.join(", ")))
        .await
        .unwrap();
}

/// Every row of `jobs` the same on both sides, else a line in `wrong`.
async fn same_jobs(p: &mut Conn, r: &mut Conn, label: &str, wrong: &mut Vec<String>) {
    let all = "SELECT id, state, v FROM jobs ORDER BY id";
    let (got, want) = (answer(p, all).await, answer(r, all).await);
    if got != want {
        wrong.push(format!(
            "{label}\n  hscale:    {got:?}\n  reference: {want:?}"
        ));
    }
}

/// A partitioned `jobs` (MOD(4) over four backends, v UNSIGNED) in
/// `part` and the same plain table in `reference`.
async fn jobs_databases(part: &str, reference: &str) {
    let mut setup = proxy_conn(None).await;
    for db in [part, reference] {
        setup
            .query_drop(format!("CREATE DATABASE {db}"))
            .await
            .unwrap();
        setup.query_drop(format!("USE {db}")).await.unwrap();
        setup
            .query_drop("CREATE TABLE jobs (id INT NOT NULL PRIMARY KEY, state VARCHAR(8) NOT NULL, v INT UNSIGNED NOT NULL)")
            .await
            .unwrap();
    }
    setup.query_drop(format!("USE {part}")).await.unwrap();
    for s in [
        "HSCALE SETUP_TABLE('jobs', 'id', 'jobs_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('jobs', 'm1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('jobs', 'm2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('jobs', 'm3', '3', 'shard3')",
    ] {
        setup.query_drop(s).await.unwrap();
    }
    setup.disconnect().await.unwrap();
}

/// A write over several partitions that fails on one of them inside a
/// transaction is undone whole, as one server rolls back a failed
/// statement, and the transaction goes on: as its first statement (BEGIN
/// deferred) and after others, opened by BEGIN or by `autocommit=0`,
/// against one server with the same rows. Before, the parts that ran
/// stayed in the transaction and COMMIT made them durable (v of row 5:
/// 99 through hscale, 102 on one server).
pub async fn failed_write_is_undone_whole() {
    cluster(4);
    let (part, reference) = ("dc_stmt_p", "dc_stmt_r");
    jobs_databases(part, reference).await;
    // Row 2 has v = 2: `v - 3` fails there (1690), after the parts of the
    // other partitions ran (or before, by partition order).
    let scripts: &[&[&str]] = &[
        &[
            "BEGIN",
            "UPDATE jobs SET v = v - 3 WHERE id IN (5, 2, 3)",
            "UPDATE jobs SET v = v + 1 WHERE id IN (5, 6)",
            "COMMIT",
        ],
        &[
            "BEGIN",
            "UPDATE jobs SET v = v + 100 WHERE id = 5",
            "UPDATE jobs SET v = v - 3 WHERE id IN (5, 2, 3, 4)",
            "DELETE FROM jobs WHERE id IN (7, 8) OR v - 3 < 0",
            "SAVEPOINT a",
            "UPDATE jobs SET v = v + 1 WHERE id IN (1, 2)",
            "UPDATE jobs SET v = v - 3 WHERE id IN (6, 2)",
            "ROLLBACK TO SAVEPOINT a",
            "UPDATE jobs SET state = 'done' WHERE id IN (1, 6)",
            "COMMIT",
        ],
        &[
            "SET autocommit = 0",
            "UPDATE jobs SET v = v - 3 WHERE id IN (1, 2, 3, 4, 5, 6)",
            "UPDATE jobs SET v = v + 10 WHERE id IN (3, 4)",
            "INSERT INTO jobs VALUES (20, 'new', 1), (21, 'new', 1), (22, 'new', 1)",
            "INSERT INTO jobs VALUES (30, 'new', 1), (31, 'new', 1), (5, 'dup', 1)",
            "COMMIT",
            "SET autocommit = 1",
        ],
        // The client's own savepoint named like hscale's statement
        // savepoint is neither moved nor dropped by the writes over
        // several partitions after it (before: ROLLBACK TO it failed with
        // 1305, hscale had released it).
        &[
            "BEGIN",
            "UPDATE jobs SET v = v + 1 WHERE id = 8",
            "SAVEPOINT hscale_statement",
            "UPDATE jobs SET v = v + 1 WHERE id IN (1, 2, 3)",
            "UPDATE jobs SET v = v - 3 WHERE id IN (5, 2, 3)",
            "SAVEPOINT HSCALE_STATEMENT_1",
            "UPDATE jobs SET v = v + 5 WHERE id IN (6, 7)",
            "ROLLBACK TO SAVEPOINT hscale_statement_1",
            "UPDATE jobs SET v = v + 2 WHERE id IN (6, 7)",
            "ROLLBACK TO SAVEPOINT hscale_statement",
            "UPDATE jobs SET v = v + 3 WHERE id IN (4, 5)",
            "COMMIT",
        ],
        // Ordered writes (UPDATE/DELETE ... ORDER BY ... LIMIT over
        // several partitions): row 2 fails after rows 8, 4 and 5 changed.
        &[
            "BEGIN",
            "UPDATE jobs SET state = 'x' WHERE id = 1",
            "UPDATE jobs SET v = v - 3 ORDER BY id DESC LIMIT 7",
            "DELETE FROM jobs ORDER BY id DESC LIMIT 2",
            "COMMIT",
        ],
        &[
            "SET autocommit = 0",
            "UPDATE jobs SET v = v - 3 ORDER BY id DESC LIMIT 7",
            "UPDATE jobs SET v = v + 1 ORDER BY id LIMIT 5",
            "COMMIT",
            "SET autocommit = 1",
        ],
        // An ORM's session: its work across partitions rolled back whole
        // (the sync of a changed variable ran `autocommit = DEFAULT` on
        // the home first, committing what it held: row 4 kept its +3).
        &[
            "SET autocommit = 0",
            "UPDATE jobs SET v = v + 3 WHERE id IN (1, 2, 3, 4, 5, 6)",
            "UPDATE jobs SET v = v + 10 WHERE id IN (3, 4)",
            "ROLLBACK",
            "UPDATE jobs SET v = v + 1 WHERE id IN (4, 7)",
            "SET innodb_lock_wait_timeout = 7",
            "UPDATE jobs SET v = v + 1 WHERE id IN (4, 5, 8)",
            "ROLLBACK",
            "SET autocommit = 1",
        ],
    ];
    let mut wrong = Vec::new();
    for script in scripts {
        let mut p = proxy_conn(Some(part)).await;
        let mut r = proxy_conn(Some(reference)).await;
        for c in [&mut p, &mut r] {
            c.query_drop("DELETE FROM jobs").await.unwrap();
            fill_jobs(c).await;
        }
        for sql in script.iter() {
            let want = answer(&mut r, sql).await;
            let got = answer(&mut p, sql).await;
            if got != want {
                wrong.push(format!(
                    "{sql}\n  hscale:    {got:?}\n  reference: {want:?}"
                ));
            }
        }
        same_jobs(&mut p, &mut r, &format!("after {script:?}"), &mut wrong).await;
        let _ = p.disconnect().await;
        let _ = r.disconnect().await;
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// [`failed_write_is_undone_whole`] through prepared statements (the
/// binary protocol): the parts run the execution on each partition, and a
/// failed one undoes the others, against one server.
pub async fn failed_prepared_write_is_undone_whole() {
    cluster(4);
    let (part, reference) = ("dc_pstmt_p", "dc_pstmt_r");
    jobs_databases(part, reference).await;
    let mut wrong = Vec::new();
    for open in ["BEGIN", "SET autocommit = 0"] {
        let mut p = proxy_conn(Some(part)).await;
        let mut r = proxy_conn(Some(reference)).await;
        for c in [&mut p, &mut r] {
            c.query_drop("DELETE FROM jobs").await.unwrap();
            fill_jobs(c).await;
            c.query_drop(open).await.unwrap();
            c.exec_drop("UPDATE jobs SET v = v + ? WHERE id = ?", (100, 5))
                .await
                .unwrap();
            let e = c
                .exec_drop(
                    "UPDATE jobs SET v = v - ? WHERE id IN (?, ?, ?)",
                    (3, 5, 2, 3),
                )
                .await
                .unwrap_err();
            assert_eq!(code(&e), 1690, "{open}: {e}");
            let e = c
                .exec_drop(
                    "DELETE FROM jobs WHERE id IN (?, ?, ?) AND v - ? < 0",
                    (1, 6, 7, 1),
                )
                .await;
            assert!(e.is_ok() || code(&e.unwrap_err()) == 1690, "{open}");
            c.exec_drop(
                "UPDATE jobs SET state = ? WHERE id IN (?, ?)",
                ("done", 1, 6),
            )
            .await
            .unwrap();
            c.query_drop("COMMIT").await.unwrap();
        }
        same_jobs(&mut p, &mut r, open, &mut wrong).await;
        let _ = p.disconnect().await;
        let _ = r.disconnect().await;
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A prepared read or write of existing rows whose key parameter hscale
/// cannot read as the column's value (sent as a DOUBLE) asks every
/// partition, as its text form does, instead of being refused (found by
/// the random suite's seed 7); a prepared INSERT with such a key is still
/// refused (its row needs a partition).
pub async fn unreadable_key_parameters_ask_every_partition() {
    cluster(4);
    let (part, reference) = ("dc_dkey_p", "dc_dkey_r");
    jobs_databases(part, reference).await;
    let mut p = proxy_conn(Some(part)).await;
    let mut r = proxy_conn(Some(reference)).await;
    for c in [&mut p, &mut r] {
        fill_jobs(c).await;
    }
    let mut wrong = Vec::new();
    for (sql, key) in [
        ("SELECT id, v FROM jobs WHERE id = ?", 2.0),
        ("SELECT id, v FROM jobs WHERE id = ? ORDER BY id", 6.0),
        ("SELECT id FROM jobs WHERE id IS NULL AND id = ?", 0.0),
        ("UPDATE jobs SET v = v + 1 WHERE id = ?", 3.0),
        ("DELETE FROM jobs WHERE id = ?", 7.0),
    ] {
        let want: Result<Vec<mysql_async::Row>, _> = r.exec(sql, (key,)).await;
        let got: Result<Vec<mysql_async::Row>, _> = p.exec(sql, (key,)).await;
        let (got, want) = (shown_rows(got), shown_rows(want));
        if got != want {
            wrong.push(format!(
                "{sql} [{key}]\n  hscale:    {got:?}\n  reference: {want:?}"
            ));
        }
    }
    same_jobs(&mut p, &mut r, "every row after", &mut wrong).await;
    let e = p
        .exec_drop("INSERT INTO jobs VALUES (?, 'new', 1)", (9.0,))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235, "{e}");
    let _ = p.disconnect().await;
    let _ = r.disconnect().await;
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Server-side prepared INSERTs whose key parameter the column stores as
/// another value ('9abc' is 9 without strict mode, a number beyond INT
/// its end, '10.5' 11): the row lands where a read by the stored value,
/// pruned to that value's partition, finds it, as on one server; under
/// strict mode both refuse the value with the same error.
pub async fn prepared_keys_the_column_converts_land_where_reads_find_them() {
    cluster(4);
    let (part, reference) = ("dc_ckey_p", "dc_ckey_r");
    jobs_databases(part, reference).await;
    let mut p = proxy_conn(Some(part)).await;
    let mut r = proxy_conn(Some(reference)).await;
    for c in [&mut p, &mut r] {
        fill_jobs(c).await;
        c.query_drop("SET sql_mode = ''").await.unwrap();
    }
    let mut wrong = Vec::new();
    let keys: Vec<(mysql_async::Value, i64)> = vec![
        ("9abc".into(), 9),
        (3_000_000_000i64.into(), 2_147_483_647),
        ((-3_000_000_000i64).into(), -2_147_483_648),
        ("10.5".into(), 11),
        (" 13e1x".into(), 130),
        ("x".into(), 0),
    ];
    let insert = "INSERT INTO jobs VALUES (?, 'conv', 1)";
    for (key, stored) in &keys {
        let want = r
            .exec_drop(insert, (key.clone(),))
            .await
            .map_err(|e| code(&e));
        let got = p
            .exec_drop(insert, (key.clone(),))
            .await
            .map_err(|e| code(&e));
        if got != want {
            wrong.push(format!(
                "{insert} [{key:?}]: hscale {got:?}, reference {want:?}"
            ));
        }
        let read = format!("SELECT id, state FROM jobs WHERE id = {stored}");
        let (got, want) = (answer(&mut p, &read).await, answer(&mut r, &read).await);
        if got != want {
            wrong.push(format!(
                "{read}\n  hscale:    {got:?}\n  reference: {want:?}"
            ));
        }
    }
    same_jobs(&mut p, &mut r, "every row after", &mut wrong).await;
    for c in [&mut p, &mut r] {
        c.query_drop("SET sql_mode = DEFAULT").await.unwrap();
    }
    let want = r.exec_drop(insert, ("77x",)).await.map_err(|e| code(&e));
    let got = p.exec_drop(insert, ("77x",)).await.map_err(|e| code(&e));
    assert!(want.is_err(), "strict mode took '77x'");
    if got != want {
        wrong.push(format!("strict: hscale {got:?}, reference {want:?}"));
    }
    let _ = p.disconnect().await;
    let _ = r.disconnect().await;
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
