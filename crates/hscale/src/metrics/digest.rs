//! Query digests (`HSCALE SHOW DIGESTS`, `HSCALE RESET DIGESTS`): per
//! statement fingerprint (`hscale_sql::fingerprint::normalized`: literals
//! as `?`, lists collapsed) the count, time, rows, errors, refusals, plan
//! kind and partitions, kept per proxy.
//!
//! Each worker has its own table behind its own lock, taken once per
//! statement by that worker only, so it is never contended except by SHOW
//! and RESET. Tables are bounded (`[metrics] max_digests`, shared out over
//! the workers): fingerprints beyond it are counted under `<other>`.
//! Latency quantiles come from a log-linear histogram per digest (8 steps
//! per power of two, so within 12.5%), which adds up across workers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use super::{PlanKind, StatementNote};

/// Histogram slots: 16 exact microseconds, then 8 per power of two up to 2^40 µs.
pub(crate) const HIST: usize = 16 + 37 * 8;

pub(crate) fn slot(us: u64) -> usize {
    if us < 16 {
        return us as usize;
    }
    let octave = (63 - us.leading_zeros()) as usize;
    if octave > 40 {
        return HIST - 1;
    }
    let sub = ((us >> (octave - 3)) & 7) as usize;
    16 + (octave - 4) * 8 + sub
}

/// The largest value slot `i` holds.
pub(crate) fn slot_upper(i: usize) -> u64 {
    if i < 16 {
        return i as u64;
    }
    let octave = (i - 16) / 8 + 4;
    let sub = ((i - 16) % 8) as u64;
    ((8 + sub + 1) << (octave - 3)) - 1
}

/// One fingerprint's numbers.
#[derive(Debug, Clone)]
pub struct Digest {
    pub text: String,
    pub count: u64,
    pub total_us: u64,
    pub max_us: u64,
    hist: Box<[u32]>,
    pub rows: u64,
    pub errors: u64,
    pub refusals: u64,
    /// Executions answered by another session's execution of the same
    /// read (coalescing).
    pub coalesced: u64,
    /// Executions answered from the result cache.
    pub cache_hits: u64,
    /// Result cache misses (run, then stored).
    pub cache_misses: u64,
    /// Stored answers found out of date at a read.
    pub cache_invalidations: u64,
    /// How the last execution ran.
    pub kind: PlanKind,
    /// Partitions touched, summed over executions, and the most at once.
    pub parts: u64,
    pub max_parts: u32,
    pub first_seen: Instant,
    pub last_seen: Instant,
}

impl Digest {
    fn new(text: String, at: Instant) -> Digest {
        Digest {
            text,
            count: 0,
            total_us: 0,
            max_us: 0,
            hist: vec![0; HIST].into_boxed_slice(),
            rows: 0,
            errors: 0,
            refusals: 0,
            coalesced: 0,
            cache_hits: 0,
            cache_misses: 0,
            cache_invalidations: 0,
            kind: PlanKind::Local,
            parts: 0,
            max_parts: 0,
            first_seen: at,
            last_seen: at,
        }
    }

    fn add(&mut self, note: &StatementNote, us: u64, at: Instant) {
        self.count += 1;
        self.total_us += us;
        self.max_us = self.max_us.max(us);
        let s = &mut self.hist[slot(us)];
        *s = s.saturating_add(1);
        self.rows += note.rows;
        self.coalesced += u64::from(note.is_coalesced);
        self.cache_hits += u64::from(note.is_cached);
        self.cache_misses += u64::from(note.is_cache_miss);
        self.cache_invalidations += u64::from(note.is_invalidated);
        if note.kind == PlanKind::Refused {
            self.refusals += 1;
        } else if note.error != 0 {
            self.errors += 1;
        }
        self.kind = note.kind;
        self.parts += u64::from(note.parts);
        self.max_parts = self.max_parts.max(note.parts);
        self.last_seen = at;
    }

    fn merge(&mut self, o: &Digest) {
        self.count += o.count;
        self.total_us += o.total_us;
        self.max_us = self.max_us.max(o.max_us);
        for (a, b) in self.hist.iter_mut().zip(o.hist.iter()) {
            *a = a.saturating_add(*b);
        }
        self.rows += o.rows;
        self.errors += o.errors;
        self.refusals += o.refusals;
        self.coalesced += o.coalesced;
        self.cache_hits += o.cache_hits;
        self.cache_misses += o.cache_misses;
        self.cache_invalidations += o.cache_invalidations;
        if o.last_seen > self.last_seen {
            self.kind = o.kind;
            self.last_seen = o.last_seen;
        }
        self.first_seen = self.first_seen.min(o.first_seen);
        self.parts += o.parts;
        self.max_parts = self.max_parts.max(o.max_parts);
    }

    /// The time under which `q` (0..=1) of the executions finished, in µs
    /// (the upper end of its histogram slot, at most the slowest seen).
    pub fn quantile_us(&self, q: f64) -> u64 {
        let rank = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (i, n) in self.hist.iter().enumerate() {
            seen += u64::from(*n);
            if seen >= rank {
                return slot_upper(i).min(self.max_us);
            }
        }
        self.max_us
    }

    pub fn avg_us(&self) -> u64 {
        self.total_us.checked_div(self.count).unwrap_or(0)
    }
}

/// The key of the digest that counts fingerprints beyond the bound.
const OTHER: u64 = 0;

/// Every worker's digest table.
pub struct Digests {
    workers: Box<[Mutex<HashMap<u64, Digest>>]>,
    per_worker: usize,
}

impl Digests {
    pub fn new(workers: usize, max: usize) -> Digests {
        let workers = workers.max(1);
        Digests {
            workers: (0..workers).map(|_| Mutex::new(HashMap::new())).collect(),
            per_worker: (max / workers).max(1),
        }
    }

    fn table(&self, worker: usize) -> std::sync::MutexGuard<'_, HashMap<u64, Digest>> {
        self.workers[worker % self.workers.len()]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Count one execution of `sql`.
    pub fn record(&self, worker: usize, sql: &str, note: &StatementNote, us: u64, at: Instant) {
        self.record_text(worker, sql.as_bytes(), None, note, us, at);
    }

    /// [`Digests::record`] of a statement's bytes, with its fingerprint's
    /// hash when the session has it (`hscale_sql::Facts`): then a known
    /// digest costs no lexing, and only a new one has its text written.
    /// Text that is not UTF-8 is not recorded.
    pub fn record_text(
        &self,
        worker: usize,
        sql: &[u8],
        hash: Option<u64>,
        note: &StatementNote,
        us: u64,
        at: Instant,
    ) {
        let normalized = || {
            let text = std::str::from_utf8(sql).ok()?;
            Some(hscale_sql::fingerprint::normalized(text).ok())
        };
        let mut text = None;
        let hash = match hash {
            Some(h) => h.max(1),
            None => match normalized() {
                None => return,
                Some(Some((h, t))) => {
                    text = Some(t);
                    h.max(1)
                }
                Some(None) => 1,
            },
        };
        let mut t = self.table(worker);
        if let Some(d) = t.get_mut(&hash) {
            d.add(note, us, at);
            return;
        }
        let (key, text) = if t.len() >= self.per_worker {
            (OTHER, "<other>".to_string())
        } else {
            let text = text.or_else(|| normalized().flatten().map(|(_, t)| t));
            let text = match text {
                Some(t) => String::from_utf8_lossy(&t).trim_end().to_string(),
                None => "<not lexable>".to_string(),
            };
            (hash, text)
        };
        t.entry(key)
            .or_insert_with(|| Digest::new(text, at))
            .add(note, us, at);
    }

    /// Every digest, the workers' tables added up.
    pub fn snapshot(&self) -> Vec<Digest> {
        let mut all: HashMap<u64, Digest> = HashMap::new();
        for w in 0..self.workers.len() {
            for (k, d) in self.table(w).iter() {
                match all.get_mut(k) {
                    Some(a) => a.merge(d),
                    None => {
                        all.insert(*k, d.clone());
                    }
                }
            }
        }
        let mut v: Vec<Digest> = all.into_values().collect();
        v.sort_by(|a, b| b.total_us.cmp(&a.total_us).then(a.text.cmp(&b.text)));
        v
    }

    /// Forget every digest.
    pub fn reset(&self) {
        for w in 0..self.workers.len() {
            self.table(w).clear();
        }
    }

    pub fn len(&self) -> usize {
        (0..self.workers.len()).map(|w| self.table(w).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_ordered_and_bounded() {
        let mut last = 0;
        for us in [
            0u64,
            1,
            15,
            16,
            17,
            31,
            32,
            100,
            1000,
            123_456,
            1 << 39,
            u64::MAX,
        ] {
            let s = slot(us);
            assert!(s >= last && s < HIST, "{us}: {s}");
            assert!(slot_upper(s) >= us.min(slot_upper(HIST - 1)), "{us}");
            last = s;
        }
    }

    #[test]
    fn same_fingerprint_one_digest_across_workers() {
        let d = Digests::new(2, 100);
        let at = Instant::now();
        let note = StatementNote {
            kind: PlanKind::Single,
            parts: 1,
            rows: 1,
            ..StatementNote::default()
        };
        for i in 0..100u64 {
            let sql = format!("SELECT c FROM t WHERE id = {i}");
            d.record(
                (i % 2) as usize,
                &sql,
                &note,
                if i == 99 { 10_000 } else { 100 },
                at,
            );
        }
        let refused = StatementNote {
            kind: PlanKind::Refused,
            error: 1235,
            ..note
        };
        d.record(0, "SELECT c FROM t WHERE id = 'x'", &refused, 5, at);
        let s = d.snapshot();
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].text, "SELECT c FROM t WHERE id = ?");
        assert_eq!(s[0].count, 101);
        assert_eq!(s[0].refusals, 1);
        assert_eq!(s[0].errors, 0);
        let p99 = s[0].quantile_us(0.99);
        assert!((100..=112).contains(&p99), "{p99}");
        assert_eq!(s[0].quantile_us(1.0), 10_000);
        d.reset();
        assert!(d.is_empty());
    }

    #[test]
    fn bounded() {
        let d = Digests::new(1, 2);
        let at = Instant::now();
        let note = StatementNote::default();
        for t in ["a", "b", "c", "d"] {
            d.record(0, &format!("SELECT 1 FROM {t}"), &note, 1, at);
        }
        let s = d.snapshot();
        assert_eq!(s.len(), 3);
        assert!(
            s.iter().any(|x| x.text == "<other>" && x.count == 2),
            "{s:?}"
        );
    }
}
