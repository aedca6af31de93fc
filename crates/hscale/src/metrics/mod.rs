//! Counters for Prometheus (`[metrics] listen`, served by `crate::http`;
//! `exposition.rs` encodes them with `prometheus-client` when scraped) and
//! the query digests of `HSCALE SHOW DIGESTS` (`digest.rs`). Every name is
//! listed in the book (`docs/src/operations.md`, "Metrics").
//!
//! The statement path stays lock-free and cheap: each worker thread has its
//! own [`WorkerMetrics`] (on its own cache lines) that only that thread
//! writes, with a plain load and store, no locked instruction; a scrape
//! sums the workers. Rare events (partition changes, sequence blocks,
//! transactions in doubt) use shared atomics in [`Metrics`].
//!
//! Where the numbers come from: `session::dispatch` times every
//! COM_QUERY and COM_STMT_EXECUTE and calls [`Metrics::record`] with the
//! statement's [`StatementNote`] (plan kind from `exec::entry` (`Exec::plan_and_run`),
//! rows and forwarded errors from `Bindings::finish`); the plan cache's
//! counters are copied after each lookup; the key-weight cache counts into
//! its worker's counters itself (`hscale_route::weights::count_into`,
//! registered by `server.rs`); `exec/fence.rs` counts stale-route
//! retries; `backend/pool.rs` counts waits; the pools' gauges are read at
//! scrape time.

pub mod digest;
pub mod exposition;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How a statement was run: the `kind` label of the statement metrics and
/// the `plan` column of `HSCALE SHOW DIGESTS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlanKind {
    /// Answered by the proxy itself (a deferred BEGIN, KILL, ...).
    #[default]
    Local,
    /// Names no partitioned table: sent to one backend as it is.
    Passthrough,
    /// One partition (or one global table's copy).
    Single,
    /// Several partitions, rows concatenated or affected rows added up.
    Scatter,
    /// Several partitions, rows merged by the proxy.
    Merge,
    /// A write to a global table, run on every backend.
    GlobalWrite,
    /// The dictionary's own statements (DROP/RENAME TABLE, SHOW TABLES, ...).
    Dictionary,
    /// `HSCALE ...` commands.
    Admin,
    /// Refused by the router or the proxy (unsupported constructs).
    Refused,
}

impl PlanKind {
    pub const ALL: [PlanKind; 9] = [
        PlanKind::Local,
        PlanKind::Passthrough,
        PlanKind::Single,
        PlanKind::Scatter,
        PlanKind::Merge,
        PlanKind::GlobalWrite,
        PlanKind::Dictionary,
        PlanKind::Admin,
        PlanKind::Refused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PlanKind::Local => "local",
            PlanKind::Passthrough => "passthrough",
            PlanKind::Single => "single",
            PlanKind::Scatter => "scatter",
            PlanKind::Merge => "merge",
            PlanKind::GlobalWrite => "global_write",
            PlanKind::Dictionary => "dictionary",
            PlanKind::Admin => "admin",
            PlanKind::Refused => "refused",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What one statement did, gathered while it runs (`StatementScratch::note`).
#[derive(Debug, Clone, Copy, Default)]
pub struct StatementNote {
    pub kind: PlanKind,
    /// Partitions (or backends) the statement ran on.
    pub parts: u32,
    /// Row packets sent to the client.
    pub rows: u64,
    /// The error code the client got, 0 for none.
    pub error: u16,
    /// Warnings the parts of a merge reported (summed) and their index
    /// flags (or-ed): the merged result's terminator carries both.
    pub merged: (u16, u16),
    /// The client got a result set (for `ROW_COUNT()` and `FOUND_ROWS()`
    /// of the next statement, `exec/last_statement.rs`).
    pub is_result: bool,
    /// The affected rows of the OK packet the client got, if it got one.
    pub affected: Option<u64>,
    /// What FOUND_ROWS() answers after it, when hscale counted it
    /// (SQL_CALC_FOUND_ROWS over several partitions,
    /// `exec/steps/found_rows.rs`).
    pub found_rows: Option<u64>,
    /// The hash of the statement's fingerprint, when the session analyzed
    /// the very text it records (the query digest then does not lex it).
    pub digest: Option<u64>,
    /// The answer came from another session's execution of the same read
    /// (`exec/coalesce.rs`).
    pub is_coalesced: bool,
    /// The answer came from the result cache (`exec/cache.rs`).
    pub is_cached: bool,
    /// A result cache miss: run, then stored (`exec/cache.rs`).
    pub is_cache_miss: bool,
    /// A stored answer was found out of date at this read, which then
    /// ran (`exec/cache.rs`).
    pub is_invalidated: bool,
}

impl StatementNote {
    /// Record the error code the client is answered with (the first wins).
    pub fn error(&mut self, code: u16) {
        if self.error == 0 {
            self.error = code;
        }
    }
}

/// Upper bounds of the latency histogram's buckets, in microseconds
/// (Prometheus `le` labels in seconds); the last bucket is +Inf.
pub const LATENCY_BOUNDS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];
const BUCKETS: usize = LATENCY_BOUNDS_US.len() + 1;
const KINDS: usize = PlanKind::ALL.len();
/// Error codes counted one by one: 1000..5000 (server and proxy codes);
/// others are counted together.
const FIRST_CODE: u16 = 1000;
const CODES: usize = 4000;

fn bucket(us: u64) -> usize {
    LATENCY_BOUNDS_US
        .iter()
        .position(|&b| us <= b)
        .unwrap_or(LATENCY_BOUNDS_US.len())
}

/// Add `n` to a counter only its own worker thread writes: a load and a
/// store, no locked instruction. A scrape may read it at any moment.
#[inline]
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// One worker's counters, written only by that worker's thread.
#[repr(align(128))]
pub struct WorkerMetrics {
    statements: [AtomicU64; KINDS],
    latency: [[AtomicU64; BUCKETS]; KINDS],
    latency_sum_us: [AtomicU64; KINDS],
    rows_sent: AtomicU64,
    errors: Box<[AtomicU64]>,
    errors_other: AtomicU64,
    stale_route_retries: AtomicU64,
    plan_cache_hits: AtomicU64,
    plan_cache_misses: AtomicU64,
    slow_statements: AtomicU64,
    /// Coalescing (`exec/coalesce.rs`): requests answered by another's
    /// execution, executions that answered others too, requests that
    /// could have shared but ran on their own.
    coalesced: AtomicU64,
    coalesce_shared: AtomicU64,
    coalesce_alone: AtomicU64,
    /// Reads answered on a pipelined lane (`backend/lane.rs`).
    pipelined: AtomicU64,
    /// The worker's cache of key weights (`hscale_route::weights`), which
    /// counts into these itself on the worker's thread.
    weights: std::sync::Arc<hscale_route::weights::WeightCounters>,
}

impl WorkerMetrics {
    fn new() -> WorkerMetrics {
        WorkerMetrics {
            statements: Default::default(),
            latency: Default::default(),
            latency_sum_us: Default::default(),
            rows_sent: AtomicU64::new(0),
            errors: (0..CODES).map(|_| AtomicU64::new(0)).collect(),
            errors_other: AtomicU64::new(0),
            stale_route_retries: AtomicU64::new(0),
            plan_cache_hits: AtomicU64::new(0),
            plan_cache_misses: AtomicU64::new(0),
            slow_statements: AtomicU64::new(0),
            coalesced: AtomicU64::new(0),
            coalesce_shared: AtomicU64::new(0),
            coalesce_alone: AtomicU64::new(0),
            pipelined: AtomicU64::new(0),
            weights: Default::default(),
        }
    }

    /// The counters the worker's thread hands to
    /// `hscale_route::weights::count_into` before it serves.
    pub fn weight_counters(&self) -> std::sync::Arc<hscale_route::weights::WeightCounters> {
        self.weights.clone()
    }

    /// A statement run into a table a partition change renamed, run again.
    pub fn stale_route_retry(&self) {
        bump(&self.stale_route_retries, 1);
    }

    /// The worker's plan cache counters, as of now.
    pub fn plan_cache(&self, hits: u64, misses: u64) {
        self.plan_cache_hits.store(hits, Ordering::Relaxed);
        self.plan_cache_misses.store(misses, Ordering::Relaxed);
    }

    pub fn slow_statement(&self) {
        bump(&self.slow_statements, 1);
    }

    /// A read answered by another session's execution.
    pub fn coalesced(&self) {
        bump(&self.coalesced, 1);
    }

    /// An execution whose answer went to other sessions too.
    pub fn coalesce_shared(&self) {
        bump(&self.coalesce_shared, 1);
    }

    /// A read that could have shared an execution but ran on its own (a
    /// full batch, a leader's error, an answer too big, a leader gone).
    pub fn coalesce_alone(&self) {
        bump(&self.coalesce_alone, 1);
    }

    /// A read answered on a pipelined lane.
    pub fn pipelined(&self) {
        bump(&self.pipelined, 1);
    }
}

/// Counters of rare events, shared by all workers.
#[derive(Default)]
pub struct Shared {
    /// Partition changes started, by kind (`SETUP_TABLE`, ...): few kinds.
    pub changes_started: AtomicU64,
    pub changes_done: AtomicU64,
    pub changes_failed: AtomicU64,
    /// Cutover pauses (writes held while the source is renamed): count and
    /// total microseconds.
    pub cutover_pauses: AtomicU64,
    pub cutover_pause_us: AtomicU64,
    /// Prepared branches of transactions across backends whose decision
    /// the last recovery round could not take yet.
    pub txn_in_doubt: AtomicU64,
    pub txn_resolved_commit: AtomicU64,
    pub txn_resolved_rollback: AtomicU64,
    /// Blocks of ids reserved from `hscale.sequences`.
    pub sequence_blocks: AtomicU64,
    /// Fleet heartbeats (`hscale.proxies`) that failed.
    pub heartbeat_failures: AtomicU64,
}

/// All of a proxy's metrics.
pub struct Metrics {
    workers: Box<[WorkerMetrics]>,
    pub shared: Shared,
    pub digests: digest::Digests,
    started: (SystemTime, Instant),
}

impl Metrics {
    pub fn new(workers: usize, max_digests: usize) -> Metrics {
        Metrics {
            workers: (0..workers.max(1)).map(|_| WorkerMetrics::new()).collect(),
            shared: Shared::default(),
            digests: digest::Digests::new(workers.max(1), max_digests),
            started: (SystemTime::now(), Instant::now()),
        }
    }

    pub fn worker(&self, worker: usize) -> &WorkerMetrics {
        &self.workers[worker % self.workers.len()]
    }

    /// The wall-clock time of `at` (a clock read the statement made anyway).
    pub fn wall_time(&self, at: Instant) -> SystemTime {
        self.started.0 + at.saturating_duration_since(self.started.1)
    }

    /// Count one statement of worker `worker` that took `took`; `digest`
    /// is its text (COM_QUERY) or the prepared statement's.
    pub fn record(
        &self,
        worker: usize,
        note: &StatementNote,
        took: Duration,
        at: Instant,
        digest: Option<&[u8]>,
    ) {
        let w = self.worker(worker);
        let us = took.as_micros() as u64;
        let k = note.kind.index();
        bump(&w.statements[k], 1);
        bump(&w.latency[k][bucket(us)], 1);
        bump(&w.latency_sum_us[k], us);
        if note.rows > 0 {
            bump(&w.rows_sent, note.rows);
        }
        if note.error != 0 {
            match note.error.checked_sub(FIRST_CODE) {
                Some(i) if (i as usize) < CODES => bump(&w.errors[i as usize], 1),
                _ => bump(&w.errors_other, 1),
            }
        }
        if let Some(sql) = digest {
            self.digests
                .record_text(worker, sql, note.digest, note, us, at);
        }
    }

    fn sum(&self, f: impl Fn(&WorkerMetrics) -> &AtomicU64) -> u64 {
        self.workers
            .iter()
            .map(|w| f(w).load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

#[cfg(test)]
mod tests {
    use super::exposition::{Live, PoolSample, Source};
    use super::*;

    struct Fixed(Metrics, Live);

    impl Source for Fixed {
        fn scrape(
            &self,
            f: &mut dyn FnMut(&Metrics, &Live) -> std::fmt::Result,
        ) -> std::fmt::Result {
            f(&self.0, &self.1)
        }
    }

    fn page(m: Metrics) -> String {
        let live = Live {
            pools: vec![PoolSample {
                backend: "a\"b".into(),
                open: 2,
                waits: 1,
                is_up: true,
                ..PoolSample::default()
            }],
            users: vec![super::exposition::UserSample {
                user: "app".into(),
                connections: 2,
                statements: 7,
                p99_seconds: 0.0015,
                ..Default::default()
            }],
            workers: vec![3, 4],
            ..Default::default()
        };
        exposition::text(&exposition::registry(Fixed(m, live)))
    }

    #[test]
    fn buckets_take_their_upper_bound() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(100), 0);
        assert_eq!(bucket(101), 1);
        assert_eq!(bucket(10_000_000), 15);
        assert_eq!(bucket(10_000_001), 16);
    }

    #[test]
    fn record_counts_per_worker_and_sums() {
        let m = Metrics::new(2, 10);
        let at = Instant::now();
        let note = StatementNote {
            kind: PlanKind::Single,
            parts: 1,
            rows: 3,
            ..StatementNote::default()
        };
        m.record(0, &note, Duration::from_micros(50), at, None);
        m.record(1, &note, Duration::from_micros(5_000), at, None);
        let err = StatementNote {
            error: 1146,
            ..note
        };
        m.record(1, &err, Duration::from_micros(5), at, None);
        assert_eq!(
            m.sum(|w| &w.statements[PlanKind::Single.index()]),
            3,
            "statements"
        );
        assert_eq!(m.sum(|w| &w.rows_sent), 9);
        assert_eq!(m.sum(|w| &w.errors[146]), 1);
        let text = page(m);
        assert!(
            text.contains("hscale_statements_total{kind=\"single\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("hscale_errors_total{code=\"1146\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("hscale_statement_seconds_bucket{kind=\"single\",le=\"0.0001\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("hscale_statement_seconds_bucket{kind=\"single\",le=\"+Inf\"} 3"),
            "{text}"
        );
        for line in [
            "# TYPE hscale_statements_total counter",
            "# TYPE hscale_statement_seconds histogram",
            "hscale_statement_seconds_bucket{kind=\"single\",le=\"0.005\"} 3",
            "hscale_statement_seconds_bucket{kind=\"single\",le=\"10\"} 3",
            "hscale_statement_seconds_sum{kind=\"single\"} 0.005055",
            "hscale_statement_seconds_count{kind=\"single\"} 3",
            "hscale_statement_seconds_count{kind=\"merge\"} 0",
            "hscale_rows_sent_total 9",
            "hscale_change_pause_seconds_total 0.0",
            "hscale_transactions_recovered_total{outcome=\"rollback\"} 0",
            "hscale_worker_connections{worker=\"1\"} 4",
            "hscale_pool_connections_open{backend=\"a\\\"b\"} 2",
            "# TYPE hscale_pool_waits_total counter",
            "hscale_pool_waits_total{backend=\"a\\\"b\"} 1",
            "hscale_backend_up{backend=\"a\\\"b\"} 1",
            "hscale_user_connections{user=\"app\"} 2",
            "hscale_user_statements_total{user=\"app\"} 7",
            "hscale_user_statement_p99_seconds{user=\"app\"} 0.0015",
            "# TYPE hscale_weight_cache_entries gauge",
            "hscale_digests 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
