//! The weights the backend computed for keys under collations hscale has
//! no table for (`key_compare::Weighed`), kept per worker thread: each
//! worker is one thread, so sessions on it share the cache without a lock,
//! and nothing here is touched unless the dictionary has such a key.
//!
//! ```text
//!  route a key ──► lookup ──hit──► its weight, the partition
//!                     └──miss──► noted; routing says WeightUnknown
//!  the proxy ──► take_misses ──► asks the main backend (one query)
//!            ──► insert ──► routes again
//! ```
//!
//! Bounded: a full cache starts over (as the plan cache does).
//!
//! Observable: a worker thread hands its [`WeightCounters`] to
//! [`count_into`] once; lookups, fetches and evictions on that thread
//! then count there (a load and a store: only this thread writes them),
//! and the proxy's metrics read them at scrape time.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::key_compare::Weighed;

/// Weights kept per worker.
pub const CAPACITY: usize = 16_384;
/// Misses noted before the proxy takes them (a statement's keys).
const MAX_MISSES: usize = 4_096;

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
/// by the thread they were handed to ([`count_into`]), read by any.
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

#[derive(Default)]
struct Cache {
    /// By collation name, then key.
    weights: HashMap<String, HashMap<String, String>>,
    misses: Vec<(Weighed, String)>,
    stats: WeightStats,
    counters: Option<Arc<WeightCounters>>,
}

impl Cache {
    fn count(&self, counter: impl Fn(&WeightCounters) -> &AtomicU64, n: u64) {
        if let Some(c) = &self.counters {
            bump(counter(c), n);
        }
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// The weight of `value` under `collation`, when this worker knows it; a
/// miss is noted for [`take_misses`].
pub(crate) fn lookup(collation: &Weighed, value: &str) -> Option<String> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let found = c
            .weights
            .get(&collation.name)
            .and_then(|m| m.get(value))
            .cloned();
        match found {
            Some(w) => {
                c.stats.hits += 1;
                c.count(|c| &c.hits, 1);
                Some(w)
            }
            None => {
                c.stats.misses += 1;
                c.count(|c| &c.misses, 1);
                if c.misses.len() < MAX_MISSES {
                    c.misses.push((collation.clone(), value.to_string()));
                }
                None
            }
        }
    })
}

/// Whether routing on this thread noted keys without a weight.
pub fn has_misses() -> bool {
    CACHE.with(|c| !c.borrow().misses.is_empty())
}

/// The keys noted without a weight (each once), forgotten here.
pub fn take_misses() -> Vec<(Weighed, String)> {
    CACHE.with(|c| {
        let mut m = std::mem::take(&mut c.borrow_mut().misses);
        m.sort_by(|a, b| (&a.0.name, &a.1).cmp(&(&b.0.name, &b.1)));
        m.dedup_by(|a, b| a.0.name == b.0.name && a.1 == b.1);
        m
    })
}

/// Keep the backend's `weight` of `value` under `collation`.
pub fn insert(collation: &Weighed, value: String, weight: String) {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.stats.entries as usize >= CAPACITY {
            c.weights.clear();
            c.stats.entries = 0;
            c.stats.evictions += 1;
            c.count(|c| &c.evictions, 1);
        }
        let is_new = c
            .weights
            .entry(collation.name.clone())
            .or_default()
            .insert(value, weight)
            .is_none();
        if is_new {
            c.stats.entries += 1;
        }
        if let Some(counters) = &c.counters {
            counters.entries.store(c.stats.entries, Ordering::Relaxed);
        }
    })
}

/// Count this thread's lookups, fetches and evictions in `counters` from
/// now on (a worker thread, once, before it routes).
pub fn count_into(counters: Arc<WeightCounters>) {
    CACHE.with(|c| c.borrow_mut().counters = Some(counters));
}

/// A query that asked the backend for weights, and whether it failed.
pub fn note_fetch(is_failed: bool) {
    CACHE.with(|c| {
        let c = c.borrow();
        c.count(|c| &c.fetches, 1);
        if is_failed {
            c.count(|c| &c.fetch_errors, 1);
        }
    })
}

/// This thread's counters.
pub fn stats() -> WeightStats {
    CACHE.with(|c| c.borrow().stats)
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
    fn misses_are_noted_once_and_hits_counted() {
        let u = unicode();
        assert_eq!(lookup(&u, "abc"), None);
        assert_eq!(lookup(&u, "abc"), None);
        assert!(has_misses());
        let m = take_misses();
        assert_eq!(m.len(), 1);
        assert!(!has_misses());
        insert(&u, "abc".into(), "0E330E4A0E60".into());
        assert_eq!(lookup(&u, "abc").as_deref(), Some("0E330E4A0E60"));
        let s = stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 2, 1));
    }

    #[test]
    fn counters_count_on_their_thread() {
        let counters = Arc::new(WeightCounters::default());
        let seen = counters.clone();
        std::thread::spawn(move || {
            let u = unicode();
            count_into(counters);
            assert_eq!(lookup(&u, "x"), None);
            note_fetch(false);
            insert(&u, "x".into(), "0E".into());
            assert!(lookup(&u, "x").is_some());
            note_fetch(true);
        })
        .join()
        .unwrap();
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        assert_eq!(
            (
                n(&seen.hits),
                n(&seen.misses),
                n(&seen.fetches),
                n(&seen.fetch_errors),
                n(&seen.entries)
            ),
            (1, 1, 2, 1, 1)
        );
    }

    #[test]
    fn a_full_cache_starts_over() {
        let u = unicode();
        for i in 0..=CAPACITY {
            insert(&u, i.to_string(), "00".into());
        }
        let s = stats();
        assert_eq!((s.evictions, s.entries), (1, 1));
    }
}
