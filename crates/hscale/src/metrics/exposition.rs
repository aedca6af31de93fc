//! The `/metrics` page: [`Metrics`] and the gauges read from the proxy's
//! state (pools, workers) in Prometheus's text format (0.0.4), encoded by
//! `prometheus-client`. The counters stay ours (per worker, a load and a
//! store per statement, `mod.rs`); prometheus-client's [`Collector`] reads
//! them only when scraped, so recording a statement never touches the
//! registry. Every name is listed in the book (`docs/src/operations.md`).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::{Metrics, PlanKind, Shared, BUCKETS, CODES, FIRST_CODE, LATENCY_BOUNDS_US};

/// The `Content-Type` of [`text`]'s page.
pub use prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

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

/// One client user's numbers at scrape time (`crate::tenant`).
#[derive(Debug, Clone, Default)]
pub struct UserSample {
    pub user: String,
    pub connections: u64,
    pub statements: u64,
    pub waiting: u64,
    pub throttled: u64,
    pub refused: u64,
    pub killed: u64,
    pub refused_connections: u64,
    pub backend_connections: u64,
    pub p99_seconds: f64,
}

/// The gauges read from the proxy's state at scrape time.
#[derive(Debug, Clone, Default)]
pub struct Live {
    pub pools: Vec<PoolSample>,
    /// Per client user (tenant).
    pub users: Vec<UserSample>,
    /// Client connections per worker thread.
    pub workers: Vec<usize>,
    /// The result cache's figures (`exec/cache.rs`), when it has one.
    pub result_cache: Option<CacheSample>,
    /// Coalescing (`exec/coalesce.rs`): statements with an execution in
    /// flight, and reads waiting in batches not started yet.
    pub coalesce_in_flight: u64,
    pub coalesce_waiting: u64,
}

/// The result cache's counters and size at scrape time.
#[derive(Debug, Clone, Default)]
pub struct CacheSample {
    pub hits: u64,
    pub misses: u64,
    pub invalidations: u64,
    pub evictions: u64,
    pub stored: u64,
    pub bytes: u64,
    pub entries: u64,
}

/// Where a scrape reads from: `server.rs` hands the proxy's `Context`.
pub trait Source: Send + Sync + 'static {
    /// Call `f` with the counters and the live gauges; not at all once
    /// the proxy is gone (the page is then empty).
    fn scrape(&self, f: &mut dyn FnMut(&Metrics, &Live) -> fmt::Result) -> fmt::Result;
}

/// The collector registered once: it encodes a [`Source`] at each scrape.
struct Proxy<S>(S);

impl<S> fmt::Debug for Proxy<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("hscale metrics")
    }
}

impl<S: Source> Collector for Proxy<S> {
    fn encode(&self, mut e: DescriptorEncoder) -> fmt::Result {
        self.0.scrape(&mut |m, live| {
            statements(&mut e, m)?;
            caches(&mut e, m)?;
            result_cache(&mut e, live)?;
            shared(&mut e, &m.shared)?;
            gauges(&mut e, m, live)
        })
    }
}

/// The registry `/metrics` encodes: every metric of `source`.
pub fn registry(source: impl Source) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Proxy(source)));
    registry
}

/// The page of one scrape.
pub fn text(registry: &Registry) -> String {
    let mut out = String::with_capacity(8 * 1024);
    // Writing into a String cannot fail, and the collector has no error
    // of its own: an Err here would only cut the page short.
    if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, registry) {
        tracing::warn!(error = %e, "metrics page cut short");
    }
    out
}

fn counter(e: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> fmt::Result {
    let m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
    ConstCounter::new(value).encode(m)
}

fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> fmt::Result {
    let m = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
    ConstGauge::new(value).encode(m)
}

/// Counter names are given without `_total`: the encoder adds it.
fn statements(e: &mut DescriptorEncoder, m: &Metrics) -> fmt::Result {
    let mut f = e.encode_descriptor(
        "hscale_statements",
        "Statements (COM_QUERY and COM_STMT_EXECUTE) by how they were run.",
        None,
        MetricType::Counter,
    )?;
    for k in PlanKind::ALL {
        let n = m.sum(|w| &w.statements[k.index()]);
        ConstCounter::new(n).encode(f.encode_family(&[("kind", k.as_str())])?)?;
    }
    let mut f = e.encode_descriptor(
        "hscale_statement",
        "Time from a statement's arrival to its last byte sent, by kind.",
        Some(&Unit::Seconds),
        MetricType::Histogram,
    )?;
    for k in PlanKind::ALL {
        let buckets: [(f64, u64); BUCKETS] = std::array::from_fn(|b| {
            let le = LATENCY_BOUNDS_US
                .get(b)
                .map_or(f64::INFINITY, |us| *us as f64 / 1e6);
            (le, m.sum(|w| &w.latency[k.index()][b]))
        });
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = m.sum(|w| &w.latency_sum_us[k.index()]) as f64 / 1e6;
        f.encode_family(&[("kind", k.as_str())])?
            .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
    }
    counter(
        e,
        "hscale_rows_sent",
        "Row packets sent to clients.",
        m.sum(|w| &w.rows_sent),
    )?;
    let mut f = e.encode_descriptor(
        "hscale_errors",
        "Statements answered with an error, by MySQL error code (\"other\": outside 1000-4999).",
        None,
        MetricType::Counter,
    )?;
    for i in 0..CODES {
        let n = m.sum(|w| &w.errors[i]);
        if n > 0 {
            let code = FIRST_CODE as usize + i;
            ConstCounter::new(n).encode(f.encode_family(&[("code", code)])?)?;
        }
    }
    let other = m.sum(|w| &w.errors_other);
    if other > 0 {
        ConstCounter::new(other).encode(f.encode_family(&[("code", "other")])?)?;
    }
    counter(
        e,
        "hscale_slow_statements",
        "Statements at or over [log] slow_statement_ms.",
        m.sum(|w| &w.slow_statements),
    )?;
    counter(
        e,
        "hscale_coalesced_statements",
        "Reads answered by another session's execution of the same read (coalescing).",
        m.sum(|w| &w.coalesced),
    )?;
    counter(
        e,
        "hscale_coalesce_shared_executions",
        "Executions whose answer was written to other sessions too (coalescing).",
        m.sum(|w| &w.coalesce_shared),
    )?;
    counter(
        e,
        "hscale_coalesce_alone",
        "Reads that could have been coalesced but ran on their own: a full batch, a leader's error or kill, an answer over the bound.",
        m.sum(|w| &w.coalesce_alone),
    )?;
    counter(
        e,
        "hscale_pipelined_statements",
        "Reads answered on a pipelined lane: a backend connection that carries many sessions' reads at once.",
        m.sum(|w| &w.pipelined),
    )?;
    counter(
        e,
        "hscale_stale_route_retries",
        "Statements that ran into a table renamed by a partition change and ran again after a dictionary reload.",
        m.sum(|w| &w.stale_route_retries),
    )
}

/// The plan caches and the key-weight caches of the workers.
fn caches(e: &mut DescriptorEncoder, m: &Metrics) -> fmt::Result {
    counter(
        e,
        "hscale_plan_cache_hits",
        "Statements planned from the workers' plan caches.",
        m.sum(|w| &w.plan_cache_hits),
    )?;
    counter(
        e,
        "hscale_plan_cache_misses",
        "Statements the router planned (plan cache misses).",
        m.sum(|w| &w.plan_cache_misses),
    )?;
    for (name, help, value) in [
        (
            "hscale_weight_cache_hits",
            "Keys under a collation the backend weighs, routed by a weight the worker's cache held.",
            m.sum(|w| &w.weights.hits),
        ),
        (
            "hscale_weight_cache_misses",
            "Keys under a collation the backend weighs, met without a weight in the worker's cache (then fetched).",
            m.sum(|w| &w.weights.misses),
        ),
        (
            "hscale_weight_fetches",
            "Queries that asked the main backend for key weights.",
            m.sum(|w| &w.weights.fetches),
        ),
        (
            "hscale_weight_fetch_errors",
            "Weight fetches that failed (no connection, an error, or no weight given).",
            m.sum(|w| &w.weights.fetch_errors),
        ),
        (
            "hscale_weight_cache_evictions",
            "Times a worker's full weight cache started over.",
            m.sum(|w| &w.weights.evictions),
        ),
    ] {
        counter(e, name, help, value)?;
    }
    gauge(
        e,
        "hscale_weight_cache_entries",
        "Key weights held by the workers' caches.",
        m.sum(|w| &w.weights.entries),
    )
}

/// The result cache (`exec/cache.rs`): zeros without one.
fn result_cache(e: &mut DescriptorEncoder, live: &Live) -> fmt::Result {
    let s = live.result_cache.clone().unwrap_or_default();
    for (name, help, value) in [
        (
            "hscale_result_cache_hits",
            "Reads answered from the result cache.",
            s.hits,
        ),
        (
            "hscale_result_cache_misses",
            "Reads of cached tables the result cache did not answer (run, then stored).",
            s.misses,
        ),
        (
            "hscale_result_cache_invalidations",
            "Cached answers found out of date at a hit (a write touched their tables), then run again.",
            s.invalidations,
        ),
        (
            "hscale_result_cache_evictions",
            "Cached answers dropped to stay within [cache] max_bytes.",
            s.evictions,
        ),
        (
            "hscale_result_cache_stored",
            "Answers stored in the result cache.",
            s.stored,
        ),
    ] {
        counter(e, name, help, value)?;
    }
    gauge(
        e,
        "hscale_result_cache_bytes",
        "Bytes the result cache holds (answers and a fixed cost per entry).",
        s.bytes,
    )?;
    gauge(
        e,
        "hscale_result_cache_entries",
        "Answers the result cache holds.",
        s.entries,
    )
}

/// The rare events every worker counts into the same atomics.
fn shared(e: &mut DescriptorEncoder, s: &Shared) -> fmt::Result {
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    for (name, help, value) in [
        (
            "hscale_changes_started",
            "Partition changes this proxy started (SETUP_TABLE, ADD/MOVE/DROP_PARTITION, ...).",
            &s.changes_started,
        ),
        (
            "hscale_changes_done",
            "Partition changes this proxy committed.",
            &s.changes_done,
        ),
        (
            "hscale_changes_failed",
            "Partition changes this proxy started that failed or were cancelled.",
            &s.changes_failed,
        ),
        (
            "hscale_change_pauses",
            "Cutovers (writes to the moving rows held) of this proxy's changes.",
            &s.cutover_pauses,
        ),
    ] {
        counter(e, name, help, load(value))?;
    }
    let m = e.encode_descriptor(
        "hscale_change_pause",
        "Time writes were held in those cutovers.",
        Some(&Unit::Seconds),
        MetricType::Counter,
    )?;
    ConstCounter::new(load(&s.cutover_pause_us) as f64 / 1e6).encode(m)?;
    gauge(
        e,
        "hscale_transactions_in_doubt",
        "Prepared branches of transactions across backends the last recovery round left waiting for their decision.",
        load(&s.txn_in_doubt),
    )?;
    let mut f = e.encode_descriptor(
        "hscale_transactions_recovered",
        "Prepared branches recovery committed or rolled back.",
        None,
        MetricType::Counter,
    )?;
    for (outcome, n) in [
        ("commit", &s.txn_resolved_commit),
        ("rollback", &s.txn_resolved_rollback),
    ] {
        ConstCounter::new(load(n)).encode(f.encode_family(&[("outcome", outcome)])?)?;
    }
    counter(
        e,
        "hscale_sequence_blocks",
        "Blocks of AUTO_INCREMENT ids reserved from hscale.sequences.",
        load(&s.sequence_blocks),
    )?;
    counter(
        e,
        "hscale_fleet_heartbeat_failures",
        "Heartbeats this proxy could not write to hscale.proxies on the main backend.",
        load(&s.heartbeat_failures),
    )
}

/// A per-backend pool metric: name (counters without `_total`), type,
/// help, and its value in a sample.
type PoolMetric = (
    &'static str,
    MetricType,
    &'static str,
    fn(&PoolSample) -> u64,
);

const POOL_METRICS: [PoolMetric; 8] = [
    (
        "hscale_pool_connections_open",
        MetricType::Gauge,
        "Backend connections open, by backend.",
        |p| p.open,
    ),
    (
        "hscale_pool_connections_idle",
        MetricType::Gauge,
        "Backend connections idle in the pools.",
        |p| p.idle,
    ),
    (
        "hscale_pool_connections_in_use",
        MetricType::Gauge,
        "Backend connections lent to sessions.",
        |p| p.in_use,
    ),
    (
        "hscale_pool_waiting",
        MetricType::Gauge,
        "Sessions waiting now for a connection of an exhausted pool.",
        |p| p.waiting,
    ),
    (
        "hscale_pool_waits",
        MetricType::Counter,
        "Times a session had to wait for a connection of an exhausted pool.",
        |p| p.waits,
    ),
    (
        "hscale_pool_connects",
        MetricType::Counter,
        "Backend connections opened.",
        |p| p.connects,
    ),
    (
        "hscale_pool_connect_failures",
        MetricType::Counter,
        "Backend connections that could not be opened.",
        |p| p.connect_failures,
    ),
    (
        "hscale_backend_up",
        MetricType::Gauge,
        "1 while the backend answers its health checks.",
        |p| u64::from(p.is_up),
    ),
];

/// A per-user metric: name (counters without `_total`), type, help, and
/// its value in a sample.
type UserMetric = (
    &'static str,
    MetricType,
    &'static str,
    fn(&UserSample) -> u64,
);

const USER_METRICS: [UserMetric; 8] = [
    (
        "hscale_user_connections",
        MetricType::Gauge,
        "Client connections of the user.",
        |u| u.connections,
    ),
    (
        "hscale_user_statements",
        MetricType::Counter,
        "Statements the user ran.",
        |u| u.statements,
    ),
    (
        "hscale_user_waiting",
        MetricType::Gauge,
        "The user's statements waiting now for a backend connection.",
        |u| u.waiting,
    ),
    (
        "hscale_user_throttled",
        MetricType::Counter,
        "The user's statements that waited for max_statements_per_s.",
        |u| u.throttled,
    ),
    (
        "hscale_user_refused",
        MetricType::Counter,
        "The user's statements refused by max_statements_per_s (1226).",
        |u| u.refused,
    ),
    (
        "hscale_user_killed",
        MetricType::Counter,
        "The user's statements killed by max_statement_ms (1969).",
        |u| u.killed,
    ),
    (
        "hscale_user_refused_connections",
        MetricType::Counter,
        "The user's logins refused by max_connections (1203).",
        |u| u.refused_connections,
    ),
    (
        "hscale_user_backend_connections",
        MetricType::Gauge,
        "Backend connections the user's statements hold now.",
        |u| u.backend_connections,
    ),
];

/// Per client user: the counters above and the p99 statement latency.
fn users(e: &mut DescriptorEncoder, live: &Live) -> fmt::Result {
    for (name, kind, help, value) in USER_METRICS {
        let mut f = e.encode_descriptor(name, help, None, kind)?;
        for u in &live.users {
            let labels = [("user", u.user.as_str())];
            let m = f.encode_family(&labels)?;
            match kind {
                MetricType::Counter => ConstCounter::new(value(u)).encode(m)?,
                _ => ConstGauge::new(value(u)).encode(m)?,
            }
        }
    }
    let mut f = e.encode_descriptor(
        "hscale_user_statement_p99_seconds",
        "The user's 99th percentile statement latency over the last one to two minutes.",
        None,
        MetricType::Gauge,
    )?;
    for u in &live.users {
        ConstGauge::new(u.p99_seconds).encode(f.encode_family(&[("user", u.user.as_str())])?)?;
    }
    Ok(())
}

/// What the proxy's state shows now: workers, pools, users, digests.
fn gauges(e: &mut DescriptorEncoder, m: &Metrics, live: &Live) -> fmt::Result {
    let mut f = e.encode_descriptor(
        "hscale_worker_connections",
        "Client connections each worker thread serves.",
        None,
        MetricType::Gauge,
    )?;
    for (w, n) in live.workers.iter().enumerate() {
        ConstGauge::new(*n as u64).encode(f.encode_family(&[("worker", w)])?)?;
    }
    for (name, kind, help, value) in POOL_METRICS {
        let mut f = e.encode_descriptor(name, help, None, kind)?;
        for p in &live.pools {
            let labels = [("backend", p.backend.as_str())];
            let m = f.encode_family(&labels)?;
            match kind {
                MetricType::Counter => ConstCounter::new(value(p)).encode(m)?,
                _ => ConstGauge::new(value(p)).encode(m)?,
            }
        }
    }
    users(e, live)?;
    gauge(
        e,
        "hscale_coalesce_in_flight",
        "Coalesced statements (by key) with an execution in flight.",
        live.coalesce_in_flight,
    )?;
    gauge(
        e,
        "hscale_coalesce_waiting",
        "Reads waiting in coalesced batches that have not started yet (leaders and members).",
        live.coalesce_waiting,
    )?;
    gauge(
        e,
        "hscale_digests",
        "Statement fingerprints HSCALE SHOW DIGESTS holds.",
        m.digests.len() as u64,
    )
}
