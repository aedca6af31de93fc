#![allow(clippy::unwrap_used)]
//! Identical reads answered once (issue 33, item 1: `exec/coalesce.rs`).
//!
//! A read's execution is held in flight by a table lock taken directly on
//! the backend (`LOCK TABLES ... WRITE` makes every read of the table
//! wait), so the requests sent meanwhile form the next batch, which runs
//! once when the lock goes. Nothing waits a fixed time: each step waits
//! (with a deadline) for what the proxy shows (`hscale_coalesce_in_flight`
//! and `hscale_coalesce_waiting` in `/metrics`) or the backend runs
//! (its PROCESSLIST), and the proxy's batches wait for the execution in
//! flight as long as it lasts (`[proxy] coalesce_turn_wait_ms`, 1 s by
//! default, set to 10 minutes here), so a loaded machine changes nothing. Each test compares what coalesced sessions
//! get with what a session that turned coalescing off gets (the same
//! bytes), checks the counters of `/metrics` that say coalescing happened,
//! and the rule that makes it invisible: a read sees every write
//! acknowledged before it was sent.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::raw::{Raw, CLIENT_CAPS};
use common::*;
use mysql_async::prelude::*;

/// The tests here take table locks and read shared counters: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const DB: &str = "coalescing";

/// The statement.
const FLASH: &str = "SELECT COUNT(*), SUM(k), MAX(c) FROM sbtest1 WHERE id BETWEEN 1 AND 5000";

/// The shared proxy's batches wait for the execution in flight as long as
/// it lasts (a test ends it by unlocking), however slow the machine.
fn long_turn_wait(c: &mut hscale::Config) {
    c.proxy.coalesce_turn_wait_ms = 600_000;
}

/// The database, once: `sbtest1` (unpartitioned, 6,000 rows as sysbench
/// makes them), `p` (partitioned over both backends) and `wide` (rows of
/// many types, and strings that warn when read as numbers).
async fn setup() {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    DONE.get_or_init(|| async {
        cluster_with(2, long_turn_wait);
        let mut c = proxy_conn(None).await;
        c.query_drop(format!("DROP DATABASE IF EXISTS {DB}"))
            .await
            .unwrap();
        c.query_drop(format!("CREATE DATABASE {DB}")).await.unwrap();
        c.query_drop(format!("USE {DB}")).await.unwrap();
        c.query_drop(
            "CREATE TABLE sbtest1 (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))",
        )
        .await
        .unwrap();
        let mut values = Vec::new();
        for id in 1..=6000 {
            values.push(format!(
                "({id}, {}, '{:011}-{:011}', 'pad{id}')",
                (id * 7919) % 5000,
                id * 31,
                id * 17
            ));
            if values.len() == 1000 {
                c.query_drop(format!(
                    "INSERT INTO sbtest1 (id, k, c, pad) VALUES {}",
                    values.join(",")
                ))
                .await
                .unwrap();
                values.clear();
            }
        }
        c.query_drop(
            "CREATE TABLE wide (id INT NOT NULL PRIMARY KEY, d DECIMAL(10,3), f DOUBLE, \
             dt DATETIME(3), ts TIMESTAMP NULL, s VARCHAR(20) CHARACTER SET latin1, b VARBINARY(8), \
             j TEXT, n INT NULL)",
        )
        .await
        .unwrap();
        c.query_drop(
            "INSERT INTO wide VALUES (1, 1.5, 2.25, '2024-01-02 03:04:05.678', '2024-01-02 03:04:05', 'é1x', 0x00ff, 'long text', NULL), \
             (2, -3.125, 1e300, '1999-12-31 23:59:59.999', NULL, 'abc', '', REPEAT('z', 300), 7), \
             (3, 0, 0, '2000-02-29 00:00:00', '2038-01-01 00:00:00', '12x', NULL, '', -1)",
        )
        .await
        .unwrap();
        c.query_drop("CREATE TABLE p (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, v VARCHAR(20))")
            .await
            .unwrap();
        c.query_drop("HSCALE SETUP_TABLE('p', 'id', 'p_default', 'shard0', 'MOD(2)')")
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('p', 'one', '1', 'shard1')")
            .await
            .unwrap();
        let rows: Vec<String> = (1..=200)
            .map(|i| format!("({i}, {}, 'v{}')", i % 13, i * 3))
            .collect();
        c.query_drop(format!("INSERT INTO p VALUES {}", rows.join(",")))
            .await
            .unwrap();
        c.query_drop("CREATE TABLE counter (id INT PRIMARY KEY, v BIGINT NOT NULL)")
            .await
            .unwrap();
        c.query_drop("INSERT INTO counter VALUES (1, 0)")
            .await
            .unwrap();
    })
    .await;
}

/// A raw session through hscale in database `DB`, with `setup` run first
/// (SET statements).
async fn raw_session(setup: &[&str]) -> Raw {
    raw_session_at(cluster(2).proxy_port, setup).await
}

/// [`raw_session`] through the proxy listening on `port`.
async fn raw_session_at(port: u16, setup: &[&str]) -> Raw {
    let (mut r, ok) = Raw::login(port, "root", "", CLIENT_CAPS).await;
    assert_eq!(ok.first(), Some(0x00), "login");
    r.query(&format!("USE {DB}")).await.unwrap();
    for sql in setup {
        r.query(sql).await.unwrap();
    }
    r
}

/// Send a text query without reading its answer.
async fn send(r: &mut Raw, sql: &str) {
    let mut payload = vec![hscale_wire::consts::com::QUERY];
    payload.extend_from_slice(sql.as_bytes());
    r.send(0, &payload).await;
}

/// Read one whole answer (no DEPRECATE_EOF), every packet framed as it
/// came: sequence id and payload.
async fn answer(r: &mut Raw) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let read = |p: hscale_wire::Packet, out: &mut Vec<(u8, Vec<u8>)>| {
        out.push((p.seq, p.payload.to_vec()));
        p
    };
    let first = read(r.read().await.expect("answer"), &mut out);
    if matches!(first.first(), Some(0x00 | 0xff)) {
        return out;
    }
    let n = hscale_wire::buf::Reader::new(&first.payload)
        .lenenc()
        .unwrap() as usize;
    for _ in 0..=n {
        read(r.read().await.expect("definition"), &mut out);
    }
    loop {
        let p = read(r.read().await.expect("row"), &mut out);
        if p.first() == Some(0xff) || hscale_wire::response::is_eof(&p.payload) {
            return out;
        }
    }
}

/// Take `LOCK TABLES ... WRITE` on each backend's tables directly: reads
/// of them wait until the returned connections unlock.
async fn lock(tables: &[(usize, &str)]) -> Vec<mysql_async::Conn> {
    let mut out = Vec::new();
    for b in 0..2 {
        let names: Vec<String> = tables
            .iter()
            .filter(|(i, _)| *i == b)
            .map(|(_, t)| format!("{DB}.{t} WRITE"))
            .collect();
        if names.is_empty() {
            continue;
        }
        let mut c = backend_conn(b, None).await;
        c.query_drop(format!("LOCK TABLES {}", names.join(", ")))
            .await
            .unwrap();
        out.push(c);
    }
    out
}

async fn unlock(conns: Vec<mysql_async::Conn>) {
    for mut c in conns {
        c.query_drop("UNLOCK TABLES").await.unwrap();
        c.disconnect().await.unwrap();
    }
}

/// The tables a statement reads, by backend: `sbtest1`, `wide`,
/// `counter` on the main backend; `p`'s physical tables where they are.
async fn tables_of(names: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for n in names {
        if *n == "p" {
            for (_, (b, t)) in physical_tables(&format!("{DB}.p")).await {
                let t = t.rsplit('.').next().unwrap().to_string();
                out.push((b, t));
            }
        } else {
            out.push((0, n.to_string()));
        }
    }
    out
}

/// The longest a test waits for a state it expects.
const DEADLINE: Duration = Duration::from_secs(30);

/// The shared proxy's `/metrics`.
fn shared() -> SocketAddr {
    cluster(2).metrics_addr.unwrap()
}

/// Wait until the proxy serving `/metrics` at `at` has `in_flight`
/// statements with an execution in flight and `waiting` reads waiting in
/// batches that have not started.
async fn until_coalescing(at: SocketAddr, in_flight: u64, waiting: u64) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let now = (
            metric_at(at, "hscale_coalesce_in_flight"),
            metric_at(at, "hscale_coalesce_waiting"),
        );
        if now == (in_flight, waiting) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "(in flight, waiting) is {now:?}, not ({in_flight}, {waiting})"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Wait until the main backend runs statements whose text is `LIKE` the
/// pattern `sql` in `n` connections (its PROCESSLIST, command `Query`;
/// a statement with no `%` is itself).
async fn until_executing(sql: &str, n: usize) {
    let mut c = backend_conn(0, None).await;
    let deadline = Instant::now() + DEADLINE;
    loop {
        let running: usize = c
            .exec_first(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE INFO LIKE ? AND COMMAND = 'Query' AND ID <> CONNECTION_ID()",
                (sql,),
            )
            .await
            .unwrap()
            .unwrap();
        if running == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{sql}: {running} executions on the backend, not {n}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A proxy of its own from the shared cluster's config changed by `tweak`,
/// serving `/metrics` at the returned address.
fn own_proxy(tweak: impl FnOnce(&mut hscale::Config)) -> (ProxyProcess, SocketAddr) {
    let mut config = cluster_config();
    let port = hscale::playground::mariadb::free_port().unwrap();
    config.metrics.listen = format!("127.0.0.1:{port}");
    tweak(&mut config);
    let at = SocketAddr::from(([127, 0, 0, 1], port));
    (ProxyProcess::start(config), at)
}

/// How the reads of a crowd meet: in the proxy's batches, or each on
/// its own (then seen on the backend, as statements `LIKE` this).
#[derive(Clone, Copy, PartialEq)]
enum Meet {
    Coalesced,
    Alone(&'static str),
}

/// `members` sessions send `sql` while another's execution of it waits on
/// a table lock; all get their answers (and SHOW WARNINGS after). Returns
/// the answers: the in-flight one first. `meet`: whether the reads wait
/// in the proxy's batches (the first in flight, the others waiting) or
/// each runs on its own (`sql` runs as it is on the main backend).
async fn crowd(
    sql: &str,
    tables: &[&str],
    members: usize,
    setup: &[&str],
    meet: Meet,
) -> Vec<(Vec<(u8, Vec<u8>)>, Vec<Vec<Option<String>>>)> {
    let tables = tables_of(tables).await;
    let refs: Vec<(usize, &str)> = tables.iter().map(|(b, t)| (*b, t.as_str())).collect();
    let mut sessions = Vec::new();
    for _ in 0..=members {
        sessions.push(raw_session(setup).await);
    }
    let locks = lock(&refs).await;
    send(&mut sessions[0], sql).await;
    match meet {
        Meet::Coalesced => until_coalescing(shared(), 1, 0).await,
        Meet::Alone(like) => until_executing(like, 1).await,
    }
    for s in &mut sessions[1..] {
        send(s, sql).await;
    }
    match meet {
        Meet::Coalesced => until_coalescing(shared(), 1, members as u64).await,
        Meet::Alone(like) => until_executing(like, members + 1).await,
    }
    unlock(locks).await;
    let mut out = Vec::new();
    for s in &mut sessions {
        let a = answer(s).await;
        let warnings = s.query("SHOW WARNINGS").await.unwrap();
        out.push((a, warnings));
    }
    out
}

/// The answer of a session that does not coalesce.
async fn alone(sql: &str, setup: &[&str]) -> (Vec<(u8, Vec<u8>)>, Vec<Vec<Option<String>>>) {
    let mut s = raw_session(setup).await;
    s.query("SET hscale_coalesce = OFF").await.unwrap();
    send(&mut s, sql).await;
    let a = answer(&mut s).await;
    let w = s.query("SHOW WARNINGS").await.unwrap();
    (a, w)
}

/// The flash crowd: 8 sessions send its aggregate while one
/// execution of it waits; one execution answers the 7 that form the next
/// batch behind its leader, with the very bytes a session alone gets.
#[tokio::test]
async fn the_flash_crowd_aggregate_is_answered_once() {
    let _one = SERIAL.lock().await;
    setup().await;
    let before = (
        metric("hscale_coalesced_statements"),
        metric("hscale_coalesce_shared_executions"),
    );
    let answers = crowd(FLASH, &["sbtest1"], 8, &[], Meet::Coalesced).await;
    let reference = alone(FLASH, &[]).await;
    for a in &answers {
        assert_eq!(*a, reference);
    }
    let after = (
        metric("hscale_coalesced_statements"),
        metric("hscale_coalesce_shared_executions"),
    );
    assert_eq!(after.0 - before.0, 7, "7 members answered by their leader");
    assert_eq!(after.1 - before.1, 1, "one shared execution");
    // HSCALE SHOW DIGESTS counts them under the statement's fingerprint.
    let mut c = proxy_conn(None).await;
    let rows: Vec<mysql_async::Row> = c.query("HSCALE SHOW DIGESTS").await.unwrap();
    let coalesced: u64 = rows
        .iter()
        .filter(|r| {
            let text: String = r.get("digest_text").unwrap();
            text.contains("sbtest1") && text.contains("BETWEEN") && text.contains("MAX")
        })
        .map(|r| {
            r.get::<String, _>("coalesced")
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert!(coalesced >= 7, "HSCALE SHOW DIGESTS coalesced: {coalesced}");
}

/// The class around it: rows of many types, an empty result, conditions
/// (strings read as numbers warn), a partition's rows, a scatter, a merge
/// with ORDER BY and LIMIT, an aggregate over partitions: coalesced
/// answers (column definitions, rows, EOF with its warning count, SHOW
/// WARNINGS after) are byte for byte those of a session alone.
#[tokio::test]
async fn coalesced_answers_are_the_bytes_of_uncoalesced_ones() {
    let _one = SERIAL.lock().await;
    setup().await;
    let cases: &[(&str, &[&str])] = &[
        ("SELECT * FROM wide ORDER BY id", &["wide"]),
        ("SELECT id, s + 0, s * 2 AS twice FROM wide", &["wide"]),
        ("SELECT * FROM wide WHERE id > 100", &["wide"]),
        (
            "SELECT k, COUNT(*) AS n, GROUP_CONCAT(id ORDER BY id) FROM sbtest1 WHERE id < 300 GROUP BY k ORDER BY n DESC, k LIMIT 5",
            &["sbtest1"],
        ),
        ("SELECT id, v FROM p WHERE id = 7", &["p"]),
        ("SELECT id, v FROM p WHERE id IN (3, 4, 5)", &["p"]),
        ("SELECT id, k, v FROM p ORDER BY k DESC, id LIMIT 7", &["p"]),
        ("SELECT k, COUNT(*), MAX(v) FROM p GROUP BY k ORDER BY k", &["p"]),
    ];
    for (sql, tables) in cases {
        let before = metric("hscale_coalesced_statements");
        let answers = crowd(sql, tables, 3, &[], Meet::Coalesced).await;
        let reference = alone(sql, &[]).await;
        for a in &answers {
            assert_eq!(*a, reference, "{sql}");
        }
        assert_eq!(
            metric("hscale_coalesced_statements") - before,
            2,
            "{sql}: two members answered by their leader"
        );
    }
}

/// Sessions whose state differs (sql_mode, time_zone, character set,
/// div_precision_increment) never share an answer: each gets what a
/// session alone in that state gets.
#[tokio::test]
async fn sessions_in_other_states_never_share_an_answer() {
    let _one = SERIAL.lock().await;
    setup().await;
    let sql = "SELECT id, ts, s, CONCAT(s, 'x'), 'a' || 'b', d / 7 FROM wide ORDER BY id";
    let states: [&[&str]; 5] = [
        &[],
        &["SET sql_mode = 'PIPES_AS_CONCAT'"],
        &["SET time_zone = '+05:00'"],
        &["SET NAMES latin1"],
        &["SET div_precision_increment = 9"],
    ];
    let locks = lock(&[(0, "wide")]).await;
    let mut first = raw_session(&[]).await;
    send(&mut first, sql).await;
    until_coalescing(shared(), 1, 0).await;
    let before = metric("hscale_coalesced_statements");
    let mut sessions = Vec::new();
    for setup in states {
        // Three sessions in each state: they share with each other only
        // (the first runs at once, the second leads the next batch, the
        // third is answered by it).
        for _ in 0..3 {
            let mut s = raw_session(setup).await;
            send(&mut s, sql).await;
            sessions.push((setup, s));
        }
    }
    // In flight: the first and one of each other state; waiting: the
    // first state's three, two of each other state.
    until_coalescing(shared(), 5, 11).await;
    unlock(locks).await;
    answer(&mut first).await;
    let mut distinct = std::collections::HashSet::new();
    for (setup, s) in &mut sessions {
        let got = answer(s).await;
        let (reference, _) = alone(sql, setup).await;
        assert_eq!(got, reference, "{setup:?}");
        distinct.insert(got);
    }
    assert_eq!(distinct.len(), states.len(), "each state answers otherwise");
    // The first state's three join the first session's key's next batch
    // (two answered by its leader); every other state's one.
    assert_eq!(metric("hscale_coalesced_statements") - before, 6);
}

/// The leader of the in-flight execution and the leader of the next
/// batch both disconnect while their executions wait: the others still
/// get their whole answer.
#[tokio::test]
async fn leaders_that_disconnect_leave_the_others_their_answers() {
    let _one = SERIAL.lock().await;
    setup().await;
    let tables = tables_of(&["sbtest1"]).await;
    let refs: Vec<(usize, &str)> = tables.iter().map(|(b, t)| (*b, t.as_str())).collect();
    let locks = lock(&refs).await;
    let mut running = raw_session(&[]).await;
    send(&mut running, FLASH).await;
    until_coalescing(shared(), 1, 0).await;
    let mut next_leader = raw_session(&[]).await;
    send(&mut next_leader, FLASH).await;
    until_coalescing(shared(), 1, 1).await;
    let mut members = Vec::new();
    for _ in 0..4 {
        let mut s = raw_session(&[]).await;
        send(&mut s, FLASH).await;
        members.push(s);
    }
    until_coalescing(shared(), 1, 5).await;
    let before = metric("hscale_coalesced_statements");
    // Their connections close while both executions wait for the lock
    // (the proxy learns it when it writes to them).
    drop(running);
    drop(next_leader);
    unlock(locks).await;
    let reference = alone(FLASH, &[]).await;
    for s in &mut members {
        assert_eq!(answer(s).await, reference.0);
    }
    assert_eq!(metric("hscale_coalesced_statements") - before, 4);
}

/// KILL QUERY of a session waiting for another's execution ends its
/// statement with error 1317, as a server's; KILL CONNECTION of another
/// closes its connection; the others are answered and the session killed
/// with KILL QUERY goes on.
#[tokio::test]
async fn kill_query_ends_a_waiting_members_statement() {
    let _one = SERIAL.lock().await;
    setup().await;
    let locks = lock(&[(0, "sbtest1")]).await;
    let mut running = raw_session(&[]).await;
    send(&mut running, FLASH).await;
    until_coalescing(shared(), 1, 0).await;
    let mut leader = raw_session(&[]).await;
    send(&mut leader, FLASH).await;
    let mut members = [raw_session(&[]).await, raw_session(&[]).await];
    let mut ids = Vec::new();
    for m in &mut members {
        ids.push(
            m.query("SELECT CONNECTION_ID()").await.unwrap()[0][0]
                .clone()
                .unwrap(),
        );
        send(m, FLASH).await;
    }
    let mut other = raw_session(&[]).await;
    send(&mut other, FLASH).await;
    until_coalescing(shared(), 1, 4).await;
    let mut killer = proxy_conn(None).await;
    killer
        .query_drop(format!("KILL QUERY {}", ids[0]))
        .await
        .unwrap();
    killer
        .query_drop(format!("KILL CONNECTION {}", ids[1]))
        .await
        .unwrap();
    let killed = answer(&mut members[0]).await;
    assert_eq!(killed.len(), 1);
    assert_eq!(common::raw::err_code(&killed[0].1), Some(1317));
    assert!(
        members[1].read().await.is_none(),
        "KILL CONNECTION closes it"
    );
    unlock(locks).await;
    let reference = alone(FLASH, &[]).await;
    for s in [&mut running, &mut leader, &mut other] {
        assert_eq!(answer(s).await, reference.0);
    }
    assert_eq!(members[0].query("SELECT 1").await.unwrap().len(), 1);
}

/// Vitess #7094 / #17243: a read waiting for another's execution keeps
/// its own timeout. A session with `max_statement_time` set never waits
/// for another's execution: it runs on its own and its statement ends
/// with the server's 1969 at its time, while the identical reads of the
/// others still wait for the lock; a member whose client gives up and
/// disconnects while it waits takes nobody's answer with it. Everyone
/// else gets the whole answer once the lock goes, and the statement is
/// coalesced again after (no key stuck in flight).
#[tokio::test]
async fn a_waiting_read_keeps_its_own_timeout() {
    let _one = SERIAL.lock().await;
    setup().await;
    let locks = lock(&[(0, "sbtest1")]).await;
    let mut running = raw_session(&[]).await;
    send(&mut running, FLASH).await;
    until_coalescing(shared(), 1, 0).await;
    let mut waiting = Vec::new();
    for _ in 0..3 {
        let mut s = raw_session(&[]).await;
        send(&mut s, FLASH).await;
        waiting.push(s);
    }
    let mut timed = raw_session(&["SET max_statement_time = 0.5"]).await;
    let mut gives_up = raw_session(&[]).await;
    send(&mut gives_up, FLASH).await;
    until_coalescing(shared(), 1, 4).await;
    // Answered while the lock is still held: it waited for no one.
    send(&mut timed, FLASH).await;
    let timed_out = answer(&mut timed).await;
    assert_eq!(common::raw::err_code(&timed_out[0].1), Some(1969));
    // Its connection closes while it waits (the proxy learns it when it
    // writes the answer).
    drop(gives_up);
    unlock(locks).await;
    let reference = alone(FLASH, &[]).await;
    for s in std::iter::once(&mut running).chain(waiting.iter_mut()) {
        assert_eq!(answer(s).await, reference.0);
    }
    let before = metric("hscale_coalesced_statements");
    let answers = crowd(FLASH, &["sbtest1"], 3, &[], Meet::Coalesced).await;
    assert!(answers.iter().all(|a| a.0 == reference.0));
    assert_eq!(metric("hscale_coalesced_statements") - before, 2);
}

/// Vitess #4058 / #18272: a leader's error is not handed to the reads
/// that wait for its answer. The execution in flight and then the next
/// batch's execution are killed on the backend (a transient error, as a
/// lost connection or a deadlock would be): their own clients get the
/// server's error, as alone, and each member of the batch runs the
/// statement on its own and gets the whole answer.
#[tokio::test]
async fn a_leaders_error_is_not_handed_to_its_members() {
    let _one = SERIAL.lock().await;
    setup().await;
    let locks = lock(&[(0, "sbtest1")]).await;
    let mut direct = backend_conn(0, None).await;
    /// KILL QUERY of the one execution of FLASH on the backend whose
    /// query id is over `after` (not one killed before, which the
    /// PROCESSLIST may show a moment after its error), once it waits for
    /// the table lock there, again until it is gone; its query id.
    async fn kill_running(direct: &mut mysql_async::Conn, after: u64) -> u64 {
        let deadline = Instant::now() + DEADLINE;
        let mut killed: Option<(u64, u64)> = None;
        loop {
            let running: Vec<(u64, u64)> = direct
                .exec(
                    "SELECT ID, QUERY_ID FROM information_schema.PROCESSLIST \
                     WHERE INFO = ? AND COMMAND = 'Query' AND QUERY_ID > ? \
                     AND STATE LIKE 'Waiting for table%'",
                    (FLASH, after),
                )
                .await
                .unwrap();
            match killed {
                // Ended by the kill (other executions may wait now).
                Some((_, query)) if !running.iter().any(|r| Some(*r) == killed) => return query,
                Some((id, _)) => direct.query_drop(format!("KILL QUERY {id}")).await.unwrap(),
                None => {
                    assert!(
                        running.len() <= 1,
                        "one execution on the server, not {running:?} (in flight {}, waiting {})",
                        metric("hscale_coalesce_in_flight"),
                        metric("hscale_coalesce_waiting")
                    );
                    if let Some(&(id, query)) = running.first() {
                        direct.query_drop(format!("KILL QUERY {id}")).await.unwrap();
                        killed = Some((id, query));
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "no execution ended on the backend"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let mut running = raw_session(&[]).await;
    let mut leader = raw_session(&[]).await;
    let mut members = Vec::new();
    for _ in 0..3 {
        members.push(raw_session(&[]).await);
    }
    let before = (
        metric("hscale_coalesced_statements"),
        metric("hscale_coalesce_alone"),
    );
    // Statements started from now on have greater query ids (the
    // PROCESSLIST may still show an earlier test's FLASH for a moment).
    let now: u64 = direct
        .query_first(
            "SELECT QUERY_ID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
        )
        .await
        .unwrap()
        .unwrap();
    send(&mut running, FLASH).await;
    until_coalescing(shared(), 1, 0).await;
    // The leader forms the next batch before the members join it (sent
    // together, a member could reach the proxy first and lead).
    send(&mut leader, FLASH).await;
    until_coalescing(shared(), 1, 1).await;
    for s in &mut members {
        send(s, FLASH).await;
    }
    until_coalescing(shared(), 1, 4).await;
    let first = kill_running(&mut direct, now).await;
    let failed = answer(&mut running).await;
    assert_eq!(
        common::raw::err_code(&failed[0].1),
        Some(1317),
        "the first's own error"
    );
    // The next batch's leader runs now: its execution is killed too.
    kill_running(&mut direct, first).await;
    let failed = answer(&mut leader).await;
    assert_eq!(
        common::raw::err_code(&failed[0].1),
        Some(1317),
        "the leader's own error"
    );
    // Each member runs on its own: three executions wait for the lock.
    until_executing(FLASH, 3).await;
    unlock(locks).await;
    let reference = alone(FLASH, &[]).await;
    for s in &mut members {
        assert_eq!(answer(s).await, reference.0, "a member runs on its own");
    }
    assert_eq!(metric("hscale_coalesced_statements"), before.0);
    assert_eq!(metric("hscale_coalesce_alone") - before.1, 3);
}

/// Vitess #18783: waiters are capped, and a read over the cap simply runs
/// on its own. On a proxy with `[proxy] coalesce_max_members = 2`, six
/// sessions send the flash crowd's read while one execution of it waits:
/// the next batch takes its leader and two members, the other two run on
/// their own; all six get the whole answer, none an error or an empty one.
#[tokio::test]
async fn reads_over_the_member_cap_run_on_their_own() {
    let _one = SERIAL.lock().await;
    setup().await;
    let (capped, at) = own_proxy(|c| c.proxy.coalesce_max_members = 2);
    let mut sessions = Vec::new();
    for _ in 0..6 {
        sessions.push(raw_session_at(capped.port, &[]).await);
    }
    let locks = lock(&[(0, "sbtest1")]).await;
    send(&mut sessions[0], FLASH).await;
    until_coalescing(at, 1, 0).await;
    for s in &mut sessions[1..] {
        send(s, FLASH).await;
    }
    // Waiting: the next batch's leader and its two members; the two over
    // the cap run beside the first.
    until_coalescing(at, 1, 3).await;
    until_executing(FLASH, 3).await;
    unlock(locks).await;
    let reference = alone(FLASH, &[]).await;
    for s in &mut sessions {
        assert_eq!(answer(s).await, reference.0);
    }
    assert_eq!(digest_counts(capped.port, "BETWEEN").await, (6, 2));
}

/// HSCALE SHOW DIGESTS of the proxy on `port`: the executions and the
/// coalesced ones of the statements whose text holds `text`.
async fn digest_counts(port: u16, text: &str) -> (u64, u64) {
    let mut c = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .unwrap();
    let rows: Vec<mysql_async::Row> = c.query("HSCALE SHOW DIGESTS").await.unwrap();
    rows.iter()
        .filter(|r| r.get::<String, _>("digest_text").unwrap().contains(text))
        .fold((0, 0), |(n, k), r| {
            let num = |c: &str| r.get::<String, _>(c).unwrap().parse::<u64>().unwrap();
            (n + num("count"), k + num("coalesced"))
        })
}

/// An answer over the bound (1 MiB) is not held: its leader streams it
/// and each member runs the statement on its own, with the same answer.
#[tokio::test]
async fn answers_over_the_bound_run_on_their_own() {
    let _one = SERIAL.lock().await;
    setup().await;
    let sql = "SELECT id, c, pad, REPEAT(c, 10) FROM sbtest1 ORDER BY id";
    let before = (
        metric("hscale_coalesced_statements"),
        metric("hscale_coalesce_alone"),
    );
    let answers = crowd(sql, &["sbtest1"], 3, &[], Meet::Coalesced).await;
    let reference = alone(sql, &[]).await;
    for a in &answers {
        assert!(a == &reference, "an answer differs");
    }
    assert_eq!(metric("hscale_coalesced_statements"), before.0);
    assert_eq!(metric("hscale_coalesce_alone") - before.1, 2);
}

/// Reads with functions whose value is the call's or the session's
/// (NOW(6), RAND(), UUID(), CONNECTION_ID()), locking reads and a session
/// that turned coalescing off are never coalesced; `hscale_coalesce`
/// takes ON and OFF and refuses other values.
#[tokio::test]
async fn what_is_never_coalesced() {
    let _one = SERIAL.lock().await;
    setup().await;
    for sql in [
        "SELECT NOW(6), COUNT(*) FROM sbtest1",
        "SELECT RAND(), COUNT(*) FROM sbtest1",
        "SELECT UUID(), COUNT(*) FROM sbtest1",
        "SELECT CONNECTION_ID(), COUNT(*) FROM sbtest1",
        "SELECT COUNT(*) FROM sbtest1 LOCK IN SHARE MODE",
    ] {
        let before = metric("hscale_coalesced_statements");
        // CONNECTION_ID() reaches the backend as the session's id.
        let like = "SELECT %COUNT(*) FROM sbtest1%";
        let answers = crowd(sql, &["sbtest1"], 2, &[], Meet::Alone(like)).await;
        assert!(answers.iter().all(|(a, _)| a[0].1[0] != 0xff), "{sql}");
        assert_eq!(metric("hscale_coalesced_statements"), before, "{sql}");
    }
    let before = metric("hscale_coalesced_statements");
    crowd(
        FLASH,
        &["sbtest1"],
        2,
        &["SET hscale_coalesce = OFF"],
        Meet::Alone(FLASH),
    )
    .await;
    assert_eq!(metric("hscale_coalesced_statements"), before);
    let mut c = proxy_conn(Some(DB)).await;
    c.query_drop("SET SESSION hscale_coalesce = 'off'")
        .await
        .unwrap();
    c.query_drop("SET hscale_coalesce = ON").await.unwrap();
    let e = c
        .query_drop("SET hscale_coalesce = maybe")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1231);
}

/// Read your writes, with 200 clients running the same read through
/// hscale while writers commit increments through two other proxies and
/// directly on the backend: every read returns at least the value of
/// every write acknowledged before it was sent. 20 rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_see_every_write_acknowledged_before_them() {
    let _one = SERIAL.lock().await;
    setup().await;
    let info = cluster(2);
    let other = [
        ProxyProcess::start(cluster_config()),
        ProxyProcess::start(cluster_config()),
    ];
    let mut writer_opts = vec![
        proxy_opts(other[0].port, Some(DB)),
        proxy_opts(other[1].port, Some(DB)),
    ];
    writer_opts.push(backend_opts(info.backend_ports[0], Some(DB)));
    let mut readers = Vec::new();
    for _ in 0..200 {
        readers.push(
            mysql_async::Conn::new(proxy_opts(info.proxy_port, Some(DB)))
                .await
                .unwrap(),
        );
    }
    let acked = Arc::new(AtomicI64::new(0));
    let before = metric("hscale_coalesced_statements");
    for round in 0..20 {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut writers = Vec::new();
        for opts in &writer_opts {
            let (opts, acked, stop) = (opts.clone(), acked.clone(), stop.clone());
            writers.push(tokio::spawn(async move {
                let mut c = mysql_async::Conn::new(opts).await.unwrap();
                while !stop.load(Ordering::SeqCst) {
                    acked.fetch_max(increment_counter(&mut c).await, Ordering::SeqCst);
                }
            }));
        }
        let mut tasks = Vec::new();
        for mut c in readers.drain(..) {
            let acked = acked.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..5 {
                    let floor = acked.load(Ordering::SeqCst);
                    let v: i64 = c
                        .query_first("SELECT v FROM counter WHERE id = 1")
                        .await
                        .unwrap()
                        .unwrap();
                    assert!(v >= floor, "round {round}: read {v}, acknowledged {floor}");
                }
                c
            }));
        }
        for t in tasks {
            readers.push(t.await.unwrap());
        }
        stop.store(true, Ordering::SeqCst);
        for w in writers {
            w.await.unwrap();
        }
    }
    assert!(
        metric("hscale_coalesced_statements") > before,
        "some reads were coalesced"
    );
}

/// A client that does not read its streamed answer keeps that execution
/// in flight, but the reads behind it start anyway after at most a
/// second (`[proxy] coalesce_turn_wait_ms`, its default on a proxy of its
/// own) and get their whole answers.
#[tokio::test]
async fn a_client_that_does_not_read_holds_up_no_one() {
    let _one = SERIAL.lock().await;
    setup().await;
    let (proxy, at) = own_proxy(|c| {
        c.proxy.coalesce_turn_wait_ms = hscale::config::COALESCE_TURN_WAIT_MS;
    });
    let sql = "SELECT id, REPEAT(c, 100) FROM sbtest1 ORDER BY id";
    let mut stuck = raw_session_at(proxy.port, &[]).await;
    send(&mut stuck, sql).await;
    until_coalescing(at, 1, 0).await;
    let mut others = Vec::new();
    for _ in 0..2 {
        let mut s = raw_session_at(proxy.port, &[]).await;
        send(&mut s, sql).await;
        others.push(s);
    }
    let started = Instant::now();
    for s in &mut others {
        let a = answer(s).await;
        assert_eq!(a.len(), 1 + 2 + 1 + 6000 + 1, "the whole answer");
    }
    assert!(started.elapsed() < Duration::from_secs(8));
    // The stuck client's answer is still whole when it reads.
    assert_eq!(answer(&mut stuck).await.len(), 1 + 2 + 1 + 6000 + 1);
}

/// `[proxy] coalesce = false`: a proxy whose config turns it off runs
/// every read itself (HSCALE SHOW DIGESTS counts none coalesced), with the
/// same answers.
#[tokio::test]
async fn the_config_switch_turns_it_off() {
    let _one = SERIAL.lock().await;
    setup().await;
    let (off, at) = own_proxy(|c| c.proxy.coalesce = false);
    let locks = lock(&[(0, "sbtest1")]).await;
    let mut sessions = Vec::new();
    for _ in 0..4 {
        let mut s = raw_session_at(off.port, &[]).await;
        send(&mut s, FLASH).await;
        sessions.push(s);
    }
    // Each runs on the backend, none enters a batch.
    until_executing(FLASH, 4).await;
    assert_eq!(metric_at(at, "hscale_coalesce_in_flight"), 0);
    unlock(locks).await;
    let reference = alone(FLASH, &[]).await;
    for s in &mut sessions {
        assert_eq!(answer(s).await, reference.0);
    }
    assert_eq!(digest_counts(off.port, "BETWEEN").await, (4, 0));
}
