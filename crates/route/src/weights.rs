//! The weights the backend computed for keys under collations hscale has
//! no table for (`key_compare::Weighed`): a [`WeightBook`] per worker,
//! which the proxy owns and lends to planning (`crate::known::Known`);
//! sessions on one worker share it without a lock, and nothing here is
//! touched unless the dictionary has such a key.
//!
//! ```text
//!  route a key ──► Known::weight ──hit──► its weight, the partition
//!                       └──miss──► a question; routing says WeightUnknown
//!  the proxy's planning driver ──► asks the main backend (one query)
//!                              ──► WeightBook::insert ──► plans again
//! ```
//!
//! Bounded: a full book starts over (as the plan cache does).
//!
//! Observable: a worker hands its [`WeightCounters`] to its book once
//! ([`WeightBook::count_into`]); lookups, fetches and evictions then count
//! there (a load and a store: only that worker writes them), and the
//! proxy's metrics read them at scrape time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::key_compare::Weighed;

/// Weights kept per worker.
pub const CAPACITY: usize = 16_384;
/// Keys without a weight one planning notes at most (a statement's keys).
pub const MAX_MISSES: usize = 4_096;

/// Counters, for tests and metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WeightStats {
    pub hits: u64,
    pub misses: u64,
    /// Times a full cache started over.
    pub evictions: u64,
    pub entries: u64,
}

/// One worker thread's counters, for the proxy's metrics: written only
/// by the worker whose book they were handed to
/// ([`WeightBook::count_into`]), read by any.
#[derive(Debug, Default)]
pub struct WeightCounters {
    /// Keys routed by a weight this worker kept.
    pub hits: AtomicU64,
    /// Keys routed without one (each then asked of the backend).
    pub misses: AtomicU64,
    /// Queries that asked the backend for weights, and those that failed.
    pub fetches: AtomicU64,
    pub fetch_errors: AtomicU64,
    /// Times the full cache started over, and the weights it holds.
    pub evictions: AtomicU64,
    pub entries: AtomicU64,
}

/// Add `n` to a counter only this thread writes.
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// The weights the backend gave, by collation name then key: one per
/// worker (the proxy keeps it; nothing here is shared between threads),
/// handed to planning inside a [`crate::known::Known`].
#[derive(Debug, Default)]
pub struct WeightBook {
    weights: HashMap<String, HashMap<String, String>>,
    stats: WeightStats,
    counters: Option<Arc<WeightCounters>>,
}

impl WeightBook {
    pub fn new() -> WeightBook {
        WeightBook::default()
    }

    fn count(&self, counter: impl Fn(&WeightCounters) -> &AtomicU64, n: u64) {
        if let Some(c) = &self.counters {
            bump(counter(c), n);
        }
    }

    /// Count this book's lookups, fetches and evictions in `counters`
    /// from now on (a worker's book, once, before it routes).
    pub fn count_into(&mut self, counters: Arc<WeightCounters>) {
        self.counters = Some(counters);
    }

    /// The weight of `value` under `collation`, when known (a lookup
    /// counted as a hit or a miss).
    pub fn lookup(&mut self, collation: &Weighed, value: &str) -> Option<String> {
        let found = self
            .weights
            .get(&collation.name)
            .and_then(|m| m.get(value))
            .cloned();
        if found.is_some() {
            self.stats.hits += 1;
            self.count(|c| &c.hits, 1);
        } else {
            self.stats.misses += 1;
            self.count(|c| &c.misses, 1);
        }
        found
    }

    /// Keep the backend's `weight` of `value` under `collation`.
    pub fn insert(&mut self, collation: &Weighed, value: String, weight: String) {
        if self.stats.entries as usize >= CAPACITY {
            self.weights.clear();
            self.stats.entries = 0;
            self.stats.evictions += 1;
            self.count(|c| &c.evictions, 1);
        }
        let is_new = self
            .weights
            .entry(collation.name.clone())
            .or_default()
            .insert(value, weight)
            .is_none();
        if is_new {
            self.stats.entries += 1;
        }
        if let Some(counters) = &self.counters {
            counters
                .entries
                .store(self.stats.entries, Ordering::Relaxed);
        }
    }

    /// A query that asked the backend for weights, and whether it failed.
    pub fn note_fetch(&self, is_failed: bool) {
        self.count(|c| &c.fetches, 1);
        if is_failed {
            self.count(|c| &c.fetch_errors, 1);
        }
    }

    /// This book's counters.
    pub fn stats(&self) -> WeightStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unicode() -> Weighed {
        Weighed {
            name: "utf8mb4_unicode_ci".into(),
            charset: "utf8mb4".into(),
            pad: Some("0209".into()),
        }
    }

    #[test]
    fn lookups_are_counted() {
        let u = unicode();
        let mut b = WeightBook::new();
        assert_eq!(b.lookup(&u, "abc"), None);
        b.insert(&u, "abc".into(), "0E330E4A0E60".into());
        assert_eq!(b.lookup(&u, "abc").as_deref(), Some("0E330E4A0E60"));
        let s = b.stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
    }

    #[test]
    fn counters_count_what_their_book_does() {
        let counters = Arc::new(WeightCounters::default());
        let mut b = WeightBook::new();
        b.count_into(counters.clone());
        let u = unicode();
        assert_eq!(b.lookup(&u, "x"), None);
        b.note_fetch(false);
        b.insert(&u, "x".into(), "0E".into());
        assert!(b.lookup(&u, "x").is_some());
        b.note_fetch(true);
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        assert_eq!(
            (
                n(&counters.hits),
                n(&counters.misses),
                n(&counters.fetches),
                n(&counters.fetch_errors),
                n(&counters.entries)
            ),
            (1, 1, 2, 1, 1)
        );
    }

    #[test]
    fn a_full_book_starts_over() {
        let u = unicode();
        let mut b = WeightBook::new();
        for i in 0..=CAPACITY {
            b.insert(&u, i.to_string(), "00".into());
        }
        let s = b.stats();
        assert_eq!((s.evictions, s.entries), (1, 1));
    }
}
