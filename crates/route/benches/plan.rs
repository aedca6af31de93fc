#![allow(clippy::unwrap_used)]
//! Cost of planning one statement (run: `cargo bench -p hscale-route`).
//! Prints ns per call for the router's entry points on typical statements,
//! then the time to plan statements of 1 KB to 1 MB built to nest or
//! repeat (parentheses, IN lists, AND/OR chains, HAVING, joins, unions):
//! it should grow linearly with the size.

use std::hint::black_box;
use std::time::{Duration, Instant};

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::known::Known;
use hscale_route::router::plan;
use hscale_route::{BackendId, HashingFunction};

fn dict() -> Dictionary {
    let mut d = Dictionary::default();
    let t = TableName::new("sbtest", "sbtest1");
    d.setup_table(
        t.clone(),
        "id",
        "sbtest1_default",
        BackendId::MAIN,
        HashingFunction::Mod(4),
    )
    .unwrap();
    for (p, v, b) in [("p1", "1", 1), ("p2", "2", 2), ("p3", "3", 2)] {
        d.add_partition(&t, p, v, BackendId::new(b)).unwrap();
    }
    d.set_key_type(&t, "int(10) unsigned");
    let t = TableName::new("sbtest", "sbtest2");
    d.setup_table(
        t.clone(),
        "id",
        "sbtest2_default",
        BackendId::MAIN,
        HashingFunction::Mod(4),
    )
    .unwrap();
    for (p, v, b) in [("p1", "1", 1), ("p2", "2", 2), ("p3", "3", 2)] {
        d.add_partition(&t, p, v, BackendId::new(b)).unwrap();
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

/// A statement of about `size` bytes: `head`, then `open` repeated with
/// `close` repeated after `inner`, as many times as fit.
fn nested(size: usize, head: &str, open: &str, inner: &str, close: &str) -> String {
    let n = size.saturating_sub(head.len() + inner.len()) / (open.len() + close.len());
    format!("{head}{}{inner}{}", open.repeat(n), close.repeat(n))
}

/// `head`, then `item(i)` joined by `sep` until about `size` bytes.
fn repeated(size: usize, head: &str, item: impl Fn(usize) -> String, sep: &str) -> String {
    let mut s = head.to_string();
    let mut i = 0;
    while s.len() < size {
        if i > 0 {
            s.push_str(sep);
        }
        s.push_str(&item(i));
        i += 1;
    }
    s
}

type Shape = (&'static str, fn(usize) -> String);

fn shapes() -> Vec<Shape> {
    vec![
        ("WHERE (((...)))", |n| {
            nested(n, "SELECT c FROM sbtest1 WHERE ", "(", "id = 1", ")")
        }),
        ("WHERE nested AND/OR", |n| {
            nested(
                n,
                "SELECT c FROM sbtest1 WHERE ",
                "(id = 1 OR (id = 2 AND ",
                "id = 3",
                "))",
            )
        }),
        ("WHERE id IN (long list)", |n| {
            repeated(
                n,
                "SELECT c FROM sbtest1 WHERE id IN (0",
                |i| i.to_string(),
                ", ",
            ) + ")"
        }),
        ("WHERE AND chain", |n| {
            repeated(
                n,
                "SELECT c FROM sbtest1 WHERE id = 1",
                |i| format!(" AND k{i} = {i}"),
                "",
            )
        }),
        ("WHERE OR chain", |n| {
            repeated(
                n,
                "SELECT c FROM sbtest1 WHERE ",
                |i| format!("id = {i}"),
                " OR ",
            )
        }),
        ("HAVING (((...)))", |n| {
            nested(
                n,
                "SELECT k, COUNT(*) FROM sbtest1 GROUP BY k HAVING ",
                "(",
                "COUNT(*) > 1",
                ")",
            )
        }),
        ("HAVING OR chain", |n| {
            repeated(
                n,
                "SELECT k, COUNT(*) FROM sbtest1 GROUP BY k HAVING ",
                |i| format!("COUNT(*) = {i}"),
                " OR ",
            )
        }),
        ("JOIN ON (((...)))", |n| {
            nested(
                n,
                "SELECT * FROM sbtest1 a JOIN sbtest2 b ON ",
                "(",
                "a.id = b.id",
                ")",
            )
        }),
        ("subqueries nested", |n| {
            nested(
                n,
                "SELECT c FROM sbtest1 WHERE ",
                "id IN (SELECT id FROM sbtest1 WHERE ",
                "id = 1",
                ")",
            )
        }),
        ("UNION ALL nested", |n| {
            nested(
                n,
                "SELECT id FROM sbtest1 UNION ALL ",
                "(SELECT id FROM sbtest2 UNION ALL ",
                "SELECT 1",
                ")",
            )
        }),
        ("INSERT rows", |n| {
            repeated(
                n,
                "INSERT INTO sbtest1 (id, k) VALUES ",
                |i| format!("({i}, {i})"),
                ", ",
            )
        }),
    ]
}

/// The best of a few runs (at least 3, at most about half a second).
fn plan_time(sql: &str, d: &Dictionary) -> Duration {
    let mut best = Duration::MAX;
    let started = Instant::now();
    for run in 0.. {
        let start = Instant::now();
        black_box(plan(black_box(sql), Some("sbtest"), d, &Known::nothing()));
        best = best.min(start.elapsed());
        if run >= 2 && started.elapsed() > Duration::from_millis(500) {
            break;
        }
    }
    best
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
            match cache
                .borrow_mut()
                .plan(sql, Some("sbtest"), &d, &Known::nothing())
            {
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
        time(name, || {
            match plan(sql, Some("sbtest"), &d, &Known::nothing()) {
                hscale_route::router::Plan::Targets { parts, .. } => parts[0].1.len(),
                _ => 1,
            }
        });
    }
    println!();
    println!("planning time against statement size (best of runs):");
    let sizes = [1 << 10, 10 << 10, 100 << 10, 1 << 20];
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>10}   {:>8}",
        "statement", "1 KB", "10 KB", "100 KB", "1 MB", "1 MB/1 KB"
    );
    for (name, make) in shapes() {
        let times: Vec<Duration> = sizes.iter().map(|&n| plan_time(&make(n), &d)).collect();
        let cells: Vec<String> = times
            .iter()
            .map(|t| format!("{:>8.3}ms", t.as_secs_f64() * 1e3))
            .collect();
        println!(
            "{name:<28} {}   {:>8.0}",
            cells.join(" "),
            times[3].as_secs_f64() / times[0].as_secs_f64()
        );
    }
}
