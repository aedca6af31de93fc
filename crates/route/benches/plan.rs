#![allow(clippy::unwrap_used)]
//! Cost of planning one statement (run: `cargo bench -p hscale-route`).
//! Prints ns per call for the router's entry points on typical statements.

use std::hint::black_box;
use std::time::Instant;

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::router::plan;
use hscale_route::HashingFunction;

fn dict() -> Dictionary {
    let mut d = Dictionary::default();
    let t = TableName::new("sbtest", "sbtest1");
    d.setup_table(
        t.clone(),
        "id",
        "sbtest1_default",
        0,
        HashingFunction::Mod(4),
    )
    .unwrap();
    for (p, v, b) in [("p1", "1", 1), ("p2", "2", 1), ("p3", "3", 2)] {
        d.add_partition(&t, p, v, b).unwrap();
    }
    d.set_key_type(&t, "int(10) unsigned");
    d
}

fn time(name: &str, f: impl Fn() -> usize) {
    let n = 200_000;
    for _ in 0..1000 {
        black_box(f());
    }
    let start = Instant::now();
    let mut sink = 0;
    for _ in 0..n {
        sink += black_box(f());
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{name:<40} {ns:>8.0} ns/call ({sink})");
}

fn main() {
    let d = dict();
    let point = "SELECT c FROM sbtest1 WHERE id=4711";
    let other = "SELECT c FROM other_table WHERE id=4711";
    let range = "SELECT c FROM sbtest1 WHERE id BETWEEN 100 AND 199";
    let update = "UPDATE sbtest1 SET k=k+1 WHERE id=4711";
    time("tokenize point select", || {
        hscale_sql::tokenize(point).map_or(0, |t| t.len())
    });
    time("fingerprint point select", || {
        hscale_sql::fingerprint::fingerprint(point).map_or(0, |f| f.literals.len())
    });
    time("analyze point select", || {
        hscale_sql::analyze(point).statements
    });
    let cache = std::cell::RefCell::new(hscale_route::router::PlanCache::new());
    for (name, sql) in [
        ("cached plan: point select", point),
        ("cached plan: unpartitioned table", other),
        ("cached plan: point update", update),
    ] {
        time(name, || {
            match cache.borrow_mut().plan(sql, Some("sbtest"), &d) {
                hscale_route::router::Plan::Targets { parts, .. } => parts[0].1.len(),
                _ => 1,
            }
        });
    }
    println!("{:?}", cache.borrow().stats);
    for (name, sql) in [
        ("plan: point select", point),
        ("plan: unpartitioned table", other),
        ("plan: range", range),
        ("plan: point update", update),
    ] {
        time(name, || match plan(sql, Some("sbtest"), &d) {
            hscale_route::router::Plan::Targets { parts, .. } => parts[0].1.len(),
            _ => 1,
        });
    }
}
