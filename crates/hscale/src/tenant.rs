//! Tenants: each client user's share of the proxy (issue 31).
//!
//! One [`TenantState`] per `[[users]]` name, made at its first login and
//! kept for the proxy's life (its index names it in every pool's fair
//! queues, `backend/fair.rs`); index 0 is the proxy's own work. A session
//! holds its user's `Arc<TenantState>` in `Bindings::tenant` and:
//! - at login takes a connection place ([`TenantState::open`]:
//!   `max_connections`, error 1203);
//! - before each statement takes a token ([`TenantState::admit`]:
//!   `max_statements_per_s` / `statements_burst`, waiting up to
//!   `throttle_wait_ms`, then error 1226);
//! - borrows backend connections with its [`Claim`] (`priority`,
//!   `backend_share`), served fairly across users when a pool is busy;
//! - runs each statement under `max_statement_ms` (the session's
//!   `max_statement_time` on the backend, which kills it there: 1969);
//! - after each statement records its latency ([`TenantState::record`]).
//!
//! Limits are atomics that SIGHUP's reload stores (`Tenants::apply`):
//! sessions keep their connections and see new limits at their next
//! statement. `HSCALE SHOW USERS` and the `/metrics` page read
//! [`Tenants::rows`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use hscale_sql::SetItem;

use crate::backend::fair::{Claim, Priority};
use crate::config::{Config, PriorityName, UserLimits};
use crate::error::ProxyError;
use crate::metrics::digest::{slot, slot_upper, HIST};

/// Default `throttle_wait_ms`: a statement beyond the rate waits this long
/// for a token.
pub const DEFAULT_THROTTLE_WAIT_MS: u64 = 1_000;

/// One user's limits and counters.
pub struct TenantState {
    /// Its place in the pools' fair queues (`Claim::index`).
    pub index: usize,
    pub name: String,
    // Limits (0: none), as of the last (re)load.
    max_connections: AtomicU32,
    max_statements_per_s: AtomicU32,
    statements_burst: AtomicU32,
    throttle_wait_ms: AtomicU64,
    share_permille: AtomicU32,
    priority: AtomicU8,
    max_statement_ms: AtomicU64,
    // Counters.
    connections: AtomicUsize,
    /// The per-statement counters, one set per worker slot
    /// (`worker % COUNT_SLOTS`): a statement touches only its worker's
    /// cache lines, never another core's.
    counts: Box<[Counts]>,
    /// Statements that waited for a token, and those refused after the wait.
    throttled: AtomicU64,
    refused: AtomicU64,
    /// Statements that ran past `max_statement_ms` (1969).
    killed: AtomicU64,
    /// Logins refused by `max_connections`.
    refused_connections: AtomicU64,
    bucket: Mutex<Bucket>,
    started: Instant,
}

/// Worker slots of a user's per-statement counters.
const COUNT_SLOTS: usize = 16;

/// One worker's per-statement counters of a user, on cache lines of their
/// own.
#[repr(align(128))]
struct Counts {
    statements: AtomicU64,
    /// Statements counted per second: the running second (since start),
    /// its count, and the count of the second before it (lock-free; a
    /// statement racing the turn of a second may count in either).
    second: AtomicU64,
    this_second: AtomicU64,
    last_second: AtomicU64,
    /// Latency histograms of the two latest windows of
    /// [`P99_WINDOW_S`] seconds: window `w` counts in `latency[w % 2]`,
    /// which `window[w % 2]` says it holds (cleared when a new window
    /// takes it), so a quantile reads the running window and the one
    /// before it: the last one to two minutes, never since start.
    window: [AtomicU64; 2],
    latency: [Box<[AtomicU64]>; 2],
}

/// The length of a latency window: `HSCALE SHOW USERS`' p99 covers the
/// running window and the whole one before it.
pub const P99_WINDOW_S: u64 = 60;

impl Counts {
    fn new() -> Counts {
        Counts {
            statements: AtomicU64::new(0),
            second: AtomicU64::new(0),
            this_second: AtomicU64::new(0),
            last_second: AtomicU64::new(0),
            window: [AtomicU64::new(0), AtomicU64::new(u64::MAX)],
            latency: [0, 1].map(|_| (0..HIST).map(|_| AtomicU64::new(0)).collect()),
        }
    }

    /// Statements in the last whole second, `sec` seconds since start.
    fn per_s(&self, sec: u64) -> u64 {
        match sec.checked_sub(self.second.load(Ordering::Relaxed)) {
            Some(0) => self.last_second.load(Ordering::Relaxed),
            Some(1) => self.this_second.load(Ordering::Relaxed),
            _ => 0,
        }
    }
}

/// The token bucket of `max_statements_per_s`.
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl TenantState {
    fn new(index: usize, name: &str, limits: &UserLimits) -> TenantState {
        let t = TenantState {
            index,
            name: name.to_string(),
            max_connections: AtomicU32::new(0),
            max_statements_per_s: AtomicU32::new(0),
            statements_burst: AtomicU32::new(0),
            throttle_wait_ms: AtomicU64::new(DEFAULT_THROTTLE_WAIT_MS),
            share_permille: AtomicU32::new(1000),
            priority: AtomicU8::new(Priority::Normal as u8),
            max_statement_ms: AtomicU64::new(0),
            connections: AtomicUsize::new(0),
            counts: (0..COUNT_SLOTS).map(|_| Counts::new()).collect(),
            throttled: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            killed: AtomicU64::new(0),
            refused_connections: AtomicU64::new(0),
            bucket: Mutex::new(Bucket {
                tokens: 0.0,
                at: Instant::now(),
            }),
            started: Instant::now(),
        };
        t.set_limits(limits);
        t.bucket_lock().tokens = f64::from(t.burst());
        t
    }

    fn set_limits(&self, l: &UserLimits) {
        let rate = l.max_statements_per_s.unwrap_or(0);
        self.max_connections
            .store(l.max_connections.unwrap_or(0), Ordering::Relaxed);
        self.max_statements_per_s.store(rate, Ordering::Relaxed);
        self.statements_burst
            .store(l.statements_burst.unwrap_or(0), Ordering::Relaxed);
        self.throttle_wait_ms.store(
            l.throttle_wait_ms.unwrap_or(DEFAULT_THROTTLE_WAIT_MS),
            Ordering::Relaxed,
        );
        let share = l.backend_share.unwrap_or(1.0).clamp(0.001, 1.0);
        self.share_permille
            .store((share * 1000.0).round() as u32, Ordering::Relaxed);
        let priority = match l.priority {
            Some(PriorityName::High) => Priority::High,
            Some(PriorityName::Low) => Priority::Low,
            Some(PriorityName::Normal) | None => Priority::Normal,
        };
        self.priority.store(priority as u8, Ordering::Relaxed);
        self.max_statement_ms
            .store(l.max_statement_ms.unwrap_or(0), Ordering::Relaxed);
    }

    /// `statements_burst`, or one second of statements when unset.
    fn burst(&self) -> u32 {
        match self.statements_burst.load(Ordering::Relaxed) {
            0 => self.max_statements_per_s.load(Ordering::Relaxed).max(1),
            b => b,
        }
    }

    fn bucket_lock(&self) -> std::sync::MutexGuard<'_, Bucket> {
        self.bucket.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How this user's statements borrow backend connections.
    pub fn claim(&self) -> Claim {
        Claim {
            index: self.index,
            priority: Priority::from_u8(self.priority.load(Ordering::Relaxed)),
            share_permille: self.share_permille.load(Ordering::Relaxed),
        }
    }

    /// `max_statement_ms` (0: none).
    pub fn max_statement_ms(&self) -> u64 {
        self.max_statement_ms.load(Ordering::Relaxed)
    }

    /// Take a connection place for a client that logged in as this user;
    /// given back when the returned guard drops. 1203 beyond
    /// `max_connections`.
    pub fn open(self: &Arc<Self>) -> Result<TenantConnection, ProxyError> {
        let max = self.max_connections.load(Ordering::Relaxed) as usize;
        let now = self.connections.fetch_add(1, Ordering::Relaxed);
        if max > 0 && now >= max {
            self.connections.fetch_sub(1, Ordering::Relaxed);
            self.refused_connections.fetch_add(1, Ordering::Relaxed);
            return Err(ProxyError::UserConnections {
                user: self.name.clone(),
                max: max as u64,
            });
        }
        Ok(TenantConnection(self.clone(), u64::MAX))
    }

    /// Let one statement in under `max_statements_per_s`: at once while
    /// the bucket has a token, else after waiting for one up to
    /// `throttle_wait_ms`; 1226 when it would take longer.
    pub async fn admit(&self) -> Result<(), ProxyError> {
        let rate = self.max_statements_per_s.load(Ordering::Relaxed);
        if rate == 0 {
            return Ok(());
        }
        let wait = {
            let mut b = self.bucket_lock();
            let now = Instant::now();
            let burst = f64::from(self.burst());
            let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
            b.tokens = (b.tokens + elapsed * f64::from(rate)).min(burst);
            b.at = now;
            if b.tokens >= 1.0 {
                b.tokens -= 1.0;
                return Ok(());
            }
            let wait = Duration::from_secs_f64((1.0 - b.tokens) / f64::from(rate));
            let limit = Duration::from_millis(self.throttle_wait_ms.load(Ordering::Relaxed));
            if wait > limit {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return Err(ProxyError::UserLimit {
                    user: self.name.clone(),
                    limit: "max_statements_per_s",
                    value: u64::from(rate),
                });
            }
            // The token is this statement's: the bucket goes below zero
            // and the next statement waits behind it.
            b.tokens -= 1.0;
            wait
        };
        self.throttled.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// Count a statement run on `worker` and its latency.
    pub fn record(&self, worker: usize, took: Duration, now: Instant) {
        let c = &self.counts[worker % COUNT_SLOTS];
        c.statements.fetch_add(1, Ordering::Relaxed);
        let us = took.as_micros().min(u128::from(u64::MAX)) as u64;
        let sec = now.saturating_duration_since(self.started).as_secs();
        let w = sec / P99_WINDOW_S;
        let half = (w % 2) as usize;
        // A new window takes the histogram of the window before the last
        // (one writer per slot but for workers beyond COUNT_SLOTS, whose
        // race loses a few counts of a statistic).
        if c.window[half].load(Ordering::Relaxed) != w {
            for a in c.latency[half].iter() {
                a.store(0, Ordering::Relaxed);
            }
            c.window[half].store(w, Ordering::Relaxed);
        }
        c.latency[half][slot(us)].fetch_add(1, Ordering::Relaxed);
        let at = c.second.load(Ordering::Relaxed);
        if at != sec && c.second.swap(sec, Ordering::Relaxed) == at {
            let n = c.this_second.swap(0, Ordering::Relaxed);
            // The second before `sec` only if `at` was it.
            let last = if at + 1 == sec { n } else { 0 };
            c.last_second.store(last, Ordering::Relaxed);
        }
        c.this_second.fetch_add(1, Ordering::Relaxed);
    }

    /// Statements counted since start.
    fn statements(&self) -> u64 {
        self.counts
            .iter()
            .map(|c| c.statements.load(Ordering::Relaxed))
            .sum()
    }

    /// A statement ran past `max_statement_ms` and was killed.
    pub fn count_killed(&self) {
        self.killed.fetch_add(1, Ordering::Relaxed);
    }

    /// Statements in the last whole second.
    fn statements_per_s(&self, now: Instant) -> u64 {
        let sec = now.saturating_duration_since(self.started).as_secs();
        self.counts.iter().map(|c| c.per_s(sec)).sum()
    }

    /// The `q` quantile of statement latency over the running window of
    /// [`P99_WINDOW_S`] and the one before it, in µs (within 12.5%, the
    /// digests' histogram); 0 when no statement ran in them.
    fn quantile_us(&self, q: f64, now: Instant) -> u64 {
        let w = now.saturating_duration_since(self.started).as_secs() / P99_WINDOW_S;
        let mut counts = [0u64; HIST];
        for c in self.counts.iter() {
            for half in 0..2 {
                let held = c.window[half].load(Ordering::Relaxed);
                if held == w || held.wrapping_add(1) == w {
                    for (sum, a) in counts.iter_mut().zip(c.latency[half].iter()) {
                        *sum += a.load(Ordering::Relaxed);
                    }
                }
            }
        }
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0;
        }
        let rank = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return slot_upper(i);
            }
        }
        slot_upper(HIST - 1)
    }
}

/// A client's place among its user's `max_connections`; the session's
/// way to its user's [`TenantState`] (`Bindings::tenant`), and the
/// `max_statement_ms` its variables hold (`u64::MAX` until its first
/// statement, so that a session that changed user drops the old user's).
pub struct TenantConnection(Arc<TenantState>, u64);

impl TenantConnection {
    /// The `max_statement_time` assignment the session's variables must
    /// take (`Some(None)`: drop theirs) when `max_statement_ms` changed
    /// since the session last took it; `None` when it did not change.
    pub fn statement_time_change(&mut self) -> Option<Option<SetItem>> {
        let ms = self.0.max_statement_ms();
        if ms == self.1 {
            return None;
        }
        self.1 = ms;
        Some((ms > 0).then(|| SetItem {
            key: "max_statement_time".into(),
            assign: format!(
                "@@session.max_statement_time = {}.{:03}",
                ms / 1000,
                ms % 1000
            ),
            is_standalone: false,
        }))
    }
}

impl std::ops::Deref for TenantConnection {
    type Target = TenantState;
    fn deref(&self) -> &TenantState {
        &self.0
    }
}

impl Drop for TenantConnection {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One row of `HSCALE SHOW USERS` and of the `/metrics` user series.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantRow {
    pub user: String,
    pub connections: u64,
    pub max_connections: u64,
    pub statements: u64,
    pub statements_per_s: u64,
    /// Statements waiting for a backend connection now.
    pub waiting: u64,
    pub throttled: u64,
    pub refused: u64,
    pub killed: u64,
    pub refused_connections: u64,
    /// Backend connections its statements hold now, over every pool.
    pub backend_connections: u64,
    pub p99_us: u64,
    pub priority: &'static str,
    pub backend_share: f64,
}

/// Every user's [`TenantState`], by name and by index.
pub struct Tenants {
    by_index: RwLock<Vec<Arc<TenantState>>>,
    by_name: RwLock<HashMap<String, Arc<TenantState>>>,
    /// Each user's limits as last (re)loaded, with `[user_defaults]` applied.
    limits: RwLock<HashMap<String, UserLimits>>,
    defaults: RwLock<UserLimits>,
}

impl Tenants {
    pub fn new(config: &Config) -> Tenants {
        let proxy = Arc::new(TenantState::new(0, "", &UserLimits::default()));
        proxy
            .priority
            .store(Priority::High as u8, Ordering::Relaxed);
        let t = Tenants {
            by_index: RwLock::new(vec![proxy]),
            by_name: RwLock::new(HashMap::new()),
            limits: RwLock::new(HashMap::new()),
            defaults: RwLock::new(UserLimits::default()),
        };
        t.apply(config);
        t
    }

    /// Take the limits of a (re)loaded config; users logged in keep their
    /// connections and see them at their next statement.
    pub fn apply(&self, config: &Config) {
        let limits: HashMap<String, UserLimits> = config
            .users
            .iter()
            .map(|u| (u.name.clone(), u.limits().or(&config.user_defaults)))
            .collect();
        for (name, t) in self
            .by_name
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            t.set_limits(limits.get(name).unwrap_or(&config.user_defaults));
        }
        *self.limits.write().unwrap_or_else(|p| p.into_inner()) = limits;
        *self.defaults.write().unwrap_or_else(|p| p.into_inner()) = config.user_defaults.clone();
    }

    /// `user`'s state, made at its first login.
    pub fn user(&self, user: &str) -> Arc<TenantState> {
        if let Some(t) = self
            .by_name
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(user)
        {
            return t.clone();
        }
        let mut by_name = self.by_name.write().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = by_name.get(user) {
            return t.clone();
        }
        let limits = self
            .limits
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(user)
            .cloned()
            .unwrap_or_else(|| {
                self.defaults
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
            });
        let mut by_index = self.by_index.write().unwrap_or_else(|p| p.into_inner());
        let t = Arc::new(TenantState::new(by_index.len(), user, &limits));
        by_index.push(t.clone());
        by_name.insert(user.to_string(), t.clone());
        t
    }

    /// One row per user that logged in since start, by name; `slots`
    /// gives the backend connections held and the statements waiting per
    /// tenant index (summed over the pools).
    pub fn rows(&self, slots: &[(usize, crate::backend::fair::UserSlots)]) -> Vec<TenantRow> {
        let now = Instant::now();
        let mut rows: Vec<TenantRow> = self
            .by_index
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .skip(1)
            .map(|t| {
                let (held, waiting) = slots
                    .iter()
                    .filter(|(i, _)| *i == t.index)
                    .fold((0, 0), |(h, w), (_, s)| (h + s.held, w + s.waiting));
                TenantRow {
                    user: t.name.clone(),
                    connections: t.connections.load(Ordering::Relaxed) as u64,
                    max_connections: u64::from(t.max_connections.load(Ordering::Relaxed)),
                    statements: t.statements(),
                    statements_per_s: t.statements_per_s(now),
                    waiting: waiting as u64,
                    throttled: t.throttled.load(Ordering::Relaxed),
                    refused: t.refused.load(Ordering::Relaxed),
                    killed: t.killed.load(Ordering::Relaxed),
                    refused_connections: t.refused_connections.load(Ordering::Relaxed),
                    backend_connections: held as u64,
                    p99_us: t.quantile_us(0.99, now),
                    priority: t.claim().priority.name(),
                    backend_share: f64::from(t.share_permille.load(Ordering::Relaxed)) / 1000.0,
                }
            })
            .collect();
        rows.sort_by(|a, b| a.user.cmp(&b.user));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(text).unwrap()
    }

    #[test]
    fn limits_come_from_the_user_then_the_defaults() {
        let c = config(
            r#"
            [user_defaults]
            max_connections = 5
            priority = "low"
            [[users]]
            name = "a"
            priority = "high"
            backend_share = 0.5
            [[users]]
            name = "b"
            "#,
        );
        let t = Tenants::new(&c);
        let a = t.user("a");
        let b = t.user("b");
        assert_eq!(a.claim().priority, Priority::High);
        assert_eq!(a.claim().share_permille, 500);
        assert_eq!(a.max_connections.load(Ordering::Relaxed), 5);
        assert_eq!(b.claim().priority, Priority::Low);
        assert_eq!(b.claim().share_permille, 1000);
        assert_ne!(a.index, b.index);
        assert!(Arc::ptr_eq(&a, &t.user("a")));
    }

    #[test]
    fn max_connections_refuses_then_releases() {
        let c = config("[[users]]\nname = \"a\"\nmax_connections = 2\n");
        let t = Tenants::new(&c);
        let a = t.user("a");
        let one = a.open().unwrap();
        let _two = a.open().unwrap();
        let err = a.open().err().unwrap();
        let (code, _, msg) = err.to_mysql();
        assert_eq!(code, 1203);
        assert_eq!(
            msg,
            "User 'a' has exceeded the 'max_user_connections' resource (current value: 2)"
        );
        drop(one);
        assert!(a.open().is_ok());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_bucket_lets_a_burst_through_then_throttles_then_refuses() {
        let c = config(
            "[[users]]\nname = \"a\"\nmax_statements_per_s = 10\nstatements_burst = 3\nthrottle_wait_ms = 150\n",
        );
        let t = Tenants::new(&c);
        let a = t.user("a");
        for _ in 0..3 {
            a.admit().await.unwrap();
        }
        assert_eq!(a.throttled.load(Ordering::Relaxed), 0);
        // One token per 100 ms: the next waits for it.
        a.admit().await.unwrap();
        assert_eq!(a.throttled.load(Ordering::Relaxed), 1);
        // Two at once: the first waits 100 ms for the next token, the
        // second would wait 200 ms, past throttle_wait_ms.
        let (first, second) = tokio::join!(a.admit(), a.admit());
        assert!(first.is_ok());
        assert_eq!(a.throttled.load(Ordering::Relaxed), 2);
        let (code, _, msg) = second.expect_err("refused").to_mysql();
        assert_eq!(code, 1226);
        assert_eq!(
            msg,
            "User 'a' has exceeded the 'max_statements_per_s' resource (current value: 10)"
        );
    }

    #[test]
    fn statements_per_s_counts_the_last_whole_second() {
        let t = Tenants::new(&config("[[users]]\nname = \"a\"\n"));
        let a = t.user("a");
        let at = |ms: u64| a.started + Duration::from_millis(ms);
        for ms in [1_100, 1_200, 1_900] {
            a.record(0, Duration::from_micros(100), at(ms));
        }
        assert_eq!(a.statements_per_s(at(1_950)), 0, "second 0 had none");
        assert_eq!(a.statements_per_s(at(2_500)), 3);
        a.record(1, Duration::from_micros(100), at(2_600));
        assert_eq!(a.statements_per_s(at(2_700)), 3);
        assert_eq!(a.statements_per_s(at(3_100)), 1);
        assert_eq!(a.statements_per_s(at(4_100)), 0);
        assert!(a.quantile_us(0.99, at(4_100)) >= 100);
    }

    #[test]
    fn p99_covers_the_last_one_to_two_minutes() {
        let t = Tenants::new(&config("[[users]]\nname = \"a\"\n"));
        let a = t.user("a");
        let at = |s: u64| a.started + Duration::from_secs(s);
        // A slow minute, then fast statements on two workers.
        for _ in 0..100 {
            a.record(0, Duration::from_millis(500), at(10));
        }
        for w in [0, 1] {
            for _ in 0..100 {
                a.record(w, Duration::from_micros(200), at(70));
            }
        }
        let slow = a.quantile_us(0.99, at(70));
        assert!(slow >= 500_000, "the window before counts: {slow}");
        assert!(
            a.quantile_us(0.99, at(130)) < 1_000,
            "a window two back is forgotten"
        );
        // The histogram of window 0 is taken by window 2 and cleared.
        a.record(0, Duration::from_micros(300), at(130));
        let p = a.quantile_us(0.99, at(179));
        assert!((200..1_000).contains(&p), "{p}");
        assert_eq!(
            a.quantile_us(0.99, at(250)),
            0,
            "nothing in the last two windows"
        );
    }

    #[test]
    fn bad_limits_are_named() {
        let c = config("[user_defaults]\nbackend_share = 1.5\n[[users]]\nname = \"a\"\nstatements_burst = 0\n[[backends]]\nname = \"b\"\naddress = \"127.0.0.1:3306\"\nuser = \"u\"\n");
        let problems = c.problems();
        assert!(
            problems.contains(
                &"[user_defaults]: backend_share = 1.5 must be more than 0 and at most 1"
                    .to_string()
            ),
            "{problems:?}"
        );
        assert!(
            problems
                .contains(&"[[users]] #1 (\"a\"): statements_burst must be at least 1".to_string()),
            "{problems:?}"
        );
        let e = Config::parse("[[users]]\nname = \"a\"\npriority = \"urgent\"\n").unwrap_err();
        assert!(e.contains("unknown variant `urgent`"), "{e}");
    }

    #[test]
    fn reload_changes_limits_of_users_already_seen() {
        let t = Tenants::new(&config("[[users]]\nname = \"a\"\nmax_connections = 1\n"));
        let a = t.user("a");
        let _one = a.open().unwrap();
        assert!(a.open().is_err());
        t.apply(&config("[[users]]\nname = \"a\"\nmax_connections = 2\n"));
        assert!(a.open().is_ok());
    }
}
