#![allow(clippy::unwrap_used)]
//! A seeded property test of the whole session state machine from client
//! bytes: after a valid login, random command packets (mutated statements,
//! nested statements, prepared statements with random parameter bytes,
//! long data, cursors, unknown commands) and, after each batch, a marker
//! query. The proxy must answer the marker or close the connection cleanly,
//! never hang or crash, and stay usable for other clients. Bounded: it
//! stops starting cases after a few seconds. `HSCALE_FUZZ_SEED` replays a
//! seed; the seed and each failing case are printed.

mod common;

use std::time::{Duration, Instant};

use common::raw::{Raw, CLIENT_CAPS};
use common::*;
use hscale_wire::consts::com;
use mysql_async::prelude::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

const STATEMENTS: &[&str] = &[
    "SELECT 1",
    "SELECT * FROM fuzz_db.t WHERE id = 1",
    "SELECT id, COUNT(*) FROM fuzz_db.t GROUP BY id HAVING COUNT(*) > 0 ORDER BY id",
    "INSERT INTO fuzz_db.t (id, v) VALUES (3, 'x')",
    "UPDATE fuzz_db.t SET v = 'y' WHERE id IN (1, 2, 3)",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SET autocommit = 0",
    "SET NAMES latin1",
    "SET @a = 1",
    "SELECT ?",
    "SELECT * FROM fuzz_db.t WHERE id = ? AND v = ?",
    "DELETE FROM fuzz_db.t WHERE id = ?",
    "HSCALE SHOW TABLES",
    "HSCALE EXPLAIN SELECT * FROM fuzz_db.t",
    "SELECT * FROM hscale.operations",
    "SAVEPOINT s",
    "SELECT 1; SELECT 2",
    "KILL QUERY 1",
];

/// A statement: one of the list, mutated, or nested deep.
fn statement(r: &mut Rng) -> Vec<u8> {
    let mut s = STATEMENTS[r.below(STATEMENTS.len())].as_bytes().to_vec();
    match r.below(6) {
        0 => {
            let depth = 1 + r.below(3000);
            let mut nested = b"SELECT * FROM fuzz_db.t WHERE ".to_vec();
            nested.extend(std::iter::repeat_n(b'(', depth));
            nested.extend_from_slice(b"id = 1");
            nested.extend(std::iter::repeat_n(b')', depth.saturating_sub(r.below(3))));
            s = nested;
        }
        1 => {
            for _ in 0..1 + r.below(4) {
                let i = r.below(s.len().max(1));
                if let Some(b) = s.get_mut(i) {
                    *b = r.next() as u8;
                }
            }
        }
        2 => s.truncate(r.below(s.len() + 1)),
        3 => {
            let at = r.below(s.len() + 1);
            let junk = [b"'".as_slice(), b"/*", b"`", b"\\", b"(", b";", b"?", b"\0"];
            let j = junk[r.below(junk.len())];
            s.splice(at..at, j.iter().copied());
        }
        _ => {}
    }
    s
}

/// One random command packet.
fn command(r: &mut Rng) -> Vec<u8> {
    let id = (1 + r.below(4) as u32).to_le_bytes();
    let mut p = Vec::new();
    match r.below(12) {
        0..=3 => {
            p.push(com::QUERY);
            p.extend(statement(r));
        }
        4 | 5 => {
            p.push(com::STMT_PREPARE);
            p.extend(statement(r));
        }
        6 | 7 => {
            // Execute with random flags, null bitmap, types and values.
            p.push(com::STMT_EXECUTE);
            p.extend_from_slice(&id);
            p.push(r.below(4) as u8);
            p.extend_from_slice(&1u32.to_le_bytes());
            let n = r.below(40);
            p.extend(r.bytes(n));
        }
        8 => {
            p.push(com::STMT_SEND_LONG_DATA);
            p.extend_from_slice(&id);
            p.extend_from_slice(&(r.below(3) as u16).to_le_bytes());
            let n = r.below(100);
            p.extend(r.bytes(n));
        }
        9 => {
            let cmds = [
                com::STMT_CLOSE,
                com::STMT_RESET,
                com::STMT_FETCH,
                com::PING,
                com::RESET_CONNECTION,
            ];
            p.push(cmds[r.below(cmds.len())]);
            p.extend_from_slice(&id);
            if r.below(2) == 0 {
                p.extend_from_slice(&(r.below(5) as u32).to_le_bytes());
            }
        }
        10 => {
            let cmds = [com::INIT_DB, com::FIELD_LIST, com::SET_OPTION];
            p.push(cmds[r.below(cmds.len())]);
            let n = r.below(12);
            p.extend(r.bytes(n));
        }
        _ => {
            let n = r.below(20);
            p.extend(r.bytes(n));
        }
    }
    p
}

/// The text row of `SELECT 4242`.
const MARKER_ROW: &[u8] = b"\x044242";

/// Read until the marker's row arrives (true) or the connection ends (false).
async fn until_marker(raw: &mut Raw) -> bool {
    loop {
        match raw.s.read_packet().await {
            Ok(p) if p.payload[..] == *MARKER_ROW => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_client_bytes_never_stop_the_proxy() {
    let seed: u64 = std::env::var("HSCALE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0011);
    eprintln!("session fuzz seed {seed} (HSCALE_FUZZ_SEED replays it)");
    cluster(2);
    fresh_db("fuzz_db").await;
    let mut setup = proxy_conn(None).await;
    setup
        .query_drop("CREATE TABLE fuzz_db.t (id INT PRIMARY KEY, v VARCHAR(20))")
        .await
        .unwrap();
    setup
        .query_drop("HSCALE SETUP_TABLE('fuzz_db.t', 'id', 't_default', 'shard0', 'NONE()')")
        .await
        .unwrap();
    setup
        .query_drop("HSCALE ADD_PARTITION('fuzz_db.t', 'p2', '2', 'shard1')")
        .await
        .unwrap();
    setup
        .query_drop("INSERT INTO fuzz_db.t (id, v) VALUES (1, 'a'), (2, 'b')")
        .await
        .unwrap();
    setup.disconnect().await.unwrap();

    let mut config = cluster_config();
    config.proxy.workers = 2;
    let proxy = hscale::RunningProxy::start(config, "127.0.0.1:0").unwrap();
    let port = proxy.addr.port();
    let mut r = Rng(seed | 1);
    let start = Instant::now();
    let (mut cases, mut answered) = (0, 0);
    while start.elapsed() < Duration::from_secs(4) {
        cases += 1;
        let case_seed = r.next() | 1;
        let mut cr = Rng(case_seed);
        let (mut raw, ok) = Raw::login(port, "root", "", CLIENT_CAPS).await;
        assert_eq!(ok.payload[0], 0, "login");
        let sent: Vec<Vec<u8>> = (0..1 + cr.below(6)).map(|_| command(&mut cr)).collect();
        for p in &sent {
            raw.s.write_payload(0, p);
            if raw.s.flush().await.is_err() {
                break;
            }
        }
        let mut marker = vec![com::QUERY];
        marker.extend_from_slice(b"SELECT 4242");
        raw.s.write_payload(0, &marker);
        let _ = raw.s.flush().await;
        let got = tokio::time::timeout(Duration::from_secs(20), until_marker(&mut raw))
            .await
            .unwrap_or_else(|_| {
                panic!("case seed {case_seed}: no answer and no close within 20 s after {sent:?}")
            });
        answered += usize::from(got);
    }
    eprintln!("{cases} cases, {answered} answered the marker, the rest closed");
    assert!(
        answered > cases / 2,
        "most sessions should survive their bytes"
    );
    // Other clients are served as before.
    let mut c = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .unwrap();
    let rows: Vec<(i32, String)> = c
        .query("SELECT id, v FROM fuzz_db.t ORDER BY id")
        .await
        .unwrap();
    assert!(rows.len() <= 3, "{rows:?}");
    let one: Option<i32> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    c.disconnect().await.unwrap();
}
