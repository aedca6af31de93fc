//! Prometheus's text exposition format (version 0.0.4) of [`Metrics`]
//! and the pools' gauges; the names are listed in the README.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use super::{Metrics, PlanKind, BUCKETS, CODES, FIRST_CODE, LATENCY_BOUNDS_US};

/// One backend pool's numbers at scrape time (summed over workers).
#[derive(Debug, Clone, Default)]
pub struct PoolSample {
    pub backend: String,
    pub open: u64,
    pub idle: u64,
    pub in_use: u64,
    pub waiting: u64,
    pub waits: u64,
    pub connects: u64,
    pub connect_failures: u64,
    pub is_up: bool,
}

/// A per-backend pool metric: name, type, help, and its value in a sample.
type PoolMetric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&PoolSample) -> u64,
);

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn single(out: &mut String, name: &str, kind: &str, help: &str, value: u64) {
    head(out, name, kind, help);
    let _ = writeln!(out, "{name} {value}");
}

/// Label values are backend names from the config: escape as the format asks.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The whole scrape.
pub fn render(m: &Metrics, pools: &[PoolSample], workers: &[usize]) -> String {
    let mut out = String::with_capacity(8 * 1024);
    head(
        &mut out,
        "hscale_statements_total",
        "counter",
        "Statements (COM_QUERY and COM_STMT_EXECUTE) by how they were run.",
    );
    for k in PlanKind::ALL {
        let n = m.sum(|w| &w.statements[k.index()]);
        let _ = writeln!(
            out,
            "hscale_statements_total{{kind=\"{}\"}} {n}",
            k.as_str()
        );
    }
    head(
        &mut out,
        "hscale_statement_seconds",
        "histogram",
        "Time from a statement's arrival to its last byte sent, by kind.",
    );
    for k in PlanKind::ALL {
        let mut cumulative = 0u64;
        for b in 0..BUCKETS {
            cumulative += m.sum(|w| &w.latency[k.index()][b]);
            let le = match LATENCY_BOUNDS_US.get(b) {
                Some(us) => format!("{}", *us as f64 / 1e6),
                None => "+Inf".to_string(),
            };
            let _ = writeln!(
                out,
                "hscale_statement_seconds_bucket{{kind=\"{}\",le=\"{le}\"}} {cumulative}",
                k.as_str()
            );
        }
        let sum = m.sum(|w| &w.latency_sum_us[k.index()]) as f64 / 1e6;
        let _ = writeln!(
            out,
            "hscale_statement_seconds_sum{{kind=\"{}\"}} {sum}",
            k.as_str()
        );
        let _ = writeln!(
            out,
            "hscale_statement_seconds_count{{kind=\"{}\"}} {cumulative}",
            k.as_str()
        );
    }
    single(
        &mut out,
        "hscale_rows_sent_total",
        "counter",
        "Row packets sent to clients.",
        m.sum(|w| &w.rows_sent),
    );
    head(
        &mut out,
        "hscale_errors_total",
        "counter",
        "Statements answered with an error, by MySQL error code (\"other\": outside 1000-4999).",
    );
    for i in 0..CODES {
        let n = m.sum(|w| &w.errors[i]);
        if n > 0 {
            let _ = writeln!(
                out,
                "hscale_errors_total{{code=\"{}\"}} {n}",
                FIRST_CODE as usize + i
            );
        }
    }
    let other = m.sum(|w| &w.errors_other);
    if other > 0 {
        let _ = writeln!(out, "hscale_errors_total{{code=\"other\"}} {other}");
    }
    single(
        &mut out,
        "hscale_slow_statements_total",
        "counter",
        "Statements at or over [log] slow_statement_ms.",
        m.sum(|w| &w.slow_statements),
    );
    single(
        &mut out,
        "hscale_plan_cache_hits_total",
        "counter",
        "Statements planned from the workers' plan caches.",
        m.sum(|w| &w.plan_cache_hits),
    );
    single(
        &mut out,
        "hscale_plan_cache_misses_total",
        "counter",
        "Statements the router planned (plan cache misses).",
        m.sum(|w| &w.plan_cache_misses),
    );
    for (name, kind, help, value) in [
        (
            "hscale_weight_cache_hits_total",
            "counter",
            "Keys under a collation the backend weighs, routed by a weight the worker's cache held.",
            m.sum(|w| &w.weights.hits),
        ),
        (
            "hscale_weight_cache_misses_total",
            "counter",
            "Keys under a collation the backend weighs, met without a weight in the worker's cache (then fetched).",
            m.sum(|w| &w.weights.misses),
        ),
        (
            "hscale_weight_fetches_total",
            "counter",
            "Queries that asked the main backend for key weights.",
            m.sum(|w| &w.weights.fetches),
        ),
        (
            "hscale_weight_fetch_errors_total",
            "counter",
            "Weight fetches that failed (no connection, an error, or no weight given).",
            m.sum(|w| &w.weights.fetch_errors),
        ),
        (
            "hscale_weight_cache_evictions_total",
            "counter",
            "Times a worker's full weight cache started over.",
            m.sum(|w| &w.weights.evictions),
        ),
        (
            "hscale_weight_cache_entries",
            "gauge",
            "Key weights held by the workers' caches.",
            m.sum(|w| &w.weights.entries),
        ),
    ] {
        single(&mut out, name, kind, help, value);
    }
    single(
        &mut out,
        "hscale_stale_route_retries_total",
        "counter",
        "Statements that ran into a table renamed by a partition change and ran again after a dictionary reload.",
        m.sum(|w| &w.stale_route_retries),
    );
    let s = &m.shared;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    single(
        &mut out,
        "hscale_changes_started_total",
        "counter",
        "Partition changes this proxy started (SETUP_TABLE, ADD/MOVE/DROP_PARTITION, ...).",
        load(&s.changes_started),
    );
    single(
        &mut out,
        "hscale_changes_done_total",
        "counter",
        "Partition changes this proxy committed.",
        load(&s.changes_done),
    );
    single(
        &mut out,
        "hscale_changes_failed_total",
        "counter",
        "Partition changes this proxy started that failed or were cancelled.",
        load(&s.changes_failed),
    );
    single(
        &mut out,
        "hscale_change_pauses_total",
        "counter",
        "Cutovers (writes to the moving rows held) of this proxy's changes.",
        load(&s.cutover_pauses),
    );
    head(
        &mut out,
        "hscale_change_pause_seconds_total",
        "counter",
        "Time writes were held in those cutovers.",
    );
    let _ = writeln!(
        out,
        "hscale_change_pause_seconds_total {}",
        load(&s.cutover_pause_us) as f64 / 1e6
    );
    single(
        &mut out,
        "hscale_transactions_in_doubt",
        "gauge",
        "Prepared branches of transactions across backends the last recovery round left waiting for their decision.",
        load(&s.txn_in_doubt),
    );
    head(
        &mut out,
        "hscale_transactions_recovered_total",
        "counter",
        "Prepared branches recovery committed or rolled back.",
    );
    let _ = writeln!(
        out,
        "hscale_transactions_recovered_total{{outcome=\"commit\"}} {}",
        load(&s.txn_resolved_commit)
    );
    let _ = writeln!(
        out,
        "hscale_transactions_recovered_total{{outcome=\"rollback\"}} {}",
        load(&s.txn_resolved_rollback)
    );
    single(
        &mut out,
        "hscale_sequence_blocks_total",
        "counter",
        "Blocks of AUTO_INCREMENT ids reserved from hscale.sequences.",
        load(&s.sequence_blocks),
    );
    single(
        &mut out,
        "hscale_fleet_heartbeat_failures_total",
        "counter",
        "Heartbeats this proxy could not write to hscale.proxies on the main backend.",
        load(&s.heartbeat_failures),
    );
    head(
        &mut out,
        "hscale_worker_connections",
        "gauge",
        "Client connections each worker thread serves.",
    );
    for (w, n) in workers.iter().enumerate() {
        let _ = writeln!(out, "hscale_worker_connections{{worker=\"{w}\"}} {n}");
    }
    let gauges: [PoolMetric; 8] = [
        (
            "hscale_pool_connections_open",
            "gauge",
            "Backend connections open, by backend.",
            |p| p.open,
        ),
        (
            "hscale_pool_connections_idle",
            "gauge",
            "Backend connections idle in the pools.",
            |p| p.idle,
        ),
        (
            "hscale_pool_connections_in_use",
            "gauge",
            "Backend connections lent to sessions.",
            |p| p.in_use,
        ),
        (
            "hscale_pool_waiting",
            "gauge",
            "Sessions waiting now for a connection of an exhausted pool.",
            |p| p.waiting,
        ),
        (
            "hscale_pool_waits_total",
            "counter",
            "Times a session had to wait for a connection of an exhausted pool.",
            |p| p.waits,
        ),
        (
            "hscale_pool_connects_total",
            "counter",
            "Backend connections opened.",
            |p| p.connects,
        ),
        (
            "hscale_pool_connect_failures_total",
            "counter",
            "Backend connections that could not be opened.",
            |p| p.connect_failures,
        ),
        (
            "hscale_backend_up",
            "gauge",
            "1 while the backend answers its health checks.",
            |p| u64::from(p.is_up),
        ),
    ];
    for (name, kind, help, f) in gauges {
        head(&mut out, name, kind, help);
        for p in pools {
            let _ = writeln!(out, "{name}{{backend=\"{}\"}} {}", label(&p.backend), f(p));
        }
    }
    single(
        &mut out,
        "hscale_digests",
        "gauge",
        "Statement fingerprints HSCALE SHOW DIGESTS holds.",
        m.digests.len() as u64,
    );
    out
}
