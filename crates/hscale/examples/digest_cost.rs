//! What counting one statement costs the statement path: the two clock
//! reads of `session/statement.rs` plus `Metrics::record` (per-worker
//! counters and the query digest: fingerprint, table lookup, histogram),
//! for sysbench's point select with a different id each time. Run with
//! `cargo run --release -p hscale --example digest_cost`; bench/RESULTS.md
//! records the figures.

use std::time::{Duration, Instant};

use hscale::metrics::{Metrics, PlanKind, StatementNote};

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let statements: Vec<String> = (0..1024)
        .map(|i| format!("SELECT c FROM sbtest1 WHERE id={}", 1 + i * 977))
        .collect();
    let note = StatementNote {
        kind: PlanKind::Passthrough,
        parts: 1,
        rows: 1,
        ..StatementNote::default()
    };
    for (label, with_digest) in [("counters only", false), ("counters + digest", true)] {
        let m = Metrics::new(1, 5_000);
        let start = Instant::now();
        for i in 0..n {
            let sql = &statements[(i % 1024) as usize];
            let t0 = Instant::now();
            let t1 = Instant::now();
            let took = t1.saturating_duration_since(t0) + Duration::from_micros(i % 300);
            m.record(0, &note, took, t1, with_digest.then_some(sql.as_bytes()));
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        println!("{label}: {ns:.0} ns per statement (two clock reads included), {n} statements");
    }
}
