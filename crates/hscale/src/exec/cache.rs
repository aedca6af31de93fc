//! The result cache (issue 33, item 2): answers of reads of cached tables
//! kept and served again, on this proxy.
//!
//! Opt-in per table (`HSCALE CACHE_TABLE('t', 'EXACT' | 'TTL', ms)`, in
//! the dictionary, `admin/cache.rs`) and per proxy (`[cache] max_bytes`,
//! 0 = no cache: `SharedReads::cache` is `None`). A read takes part when it
//! may be coalesced (`coalesce::key`: one deterministic SELECT outside
//! transactions, text protocol) and every table it names
//! (`hscale_sql::reads`) is cached. It is stored under the coalescing
//! [`Key`] (statement bytes, what runs it, database, every replayed
//! session variable, backend account, client capabilities): the framed
//! answer exactly as its client got it, with its note and warnings.
//!
//! Two modes, a statement's being the strictest of its tables':
//!
//! - `TTL`: served until `ms` after it was stored, whatever was written
//!   (seed 004's "dirty" cache);
//! - `EXACT`: served only while no write touched its tables since it was
//!   stored, through any proxy or on the backends directly. Triggers on
//!   every physical table of a cached table bump a version row in
//!   `hscale.cache_versions` on its backend, in the writer's own
//!   transaction (one row per table and writing connection, so no writer
//!   ever waits on another's: `partition/versions.rs`). A hit reads the
//!   sum of each of its tables' versions per backend (a [`Probe`], run at
//!   once on every backend involved) and the main backend's dictionary
//!   version; the answer is served when all equal what was read when it
//!   was stored. The versions are read *before* the stored execution
//!   starts, so a stored version is never newer than the rows: a write
//!   committed after the read moves the sum, and the next hit misses.
//!
//! Version reads are coalesced as statements are ([`Queue`]): per worker
//! and backend, one read is in flight at a time, and the requests that
//! arrive meanwhile form the next one, which reads every table any of
//! them asks for in one statement. A request only joins a read that has
//! not been sent yet, so each read starts after every request it answers
//! arrived, and a hit still reflects every write acknowledged before it.
//!
//! An answer invalidated before any hit was wasted work (its version
//! read, its store); its key then runs uncached for a while (`Cold`: 2
//! ms, doubling with each wasted store up to 250 ms, reset by a hit),
//! so a statement whose tables are written more often than it is read
//! costs little more than an uncached one.
//!
//! ```text
//!  read ─► not cacheable ─────────────────► coalescing as before
//!       ├► entry, TTL not over ───────────► its bytes (hit)
//!       ├► entry, probes equal ───────────► its bytes (hit)
//!       ├► entry, probes moved ───────────► invalidated; runs, stored with
//!       │                                   the versions just read (or, no hit
//!       │                                   since stored: cold, runs uncached)
//!       ├► cold ──────────────────────────► coalescing as before
//!       └► no entry ─► triggers checked (once per dictionary version,
//!                      and again once a version read found them gone),
//!                      versions read, runs (coalesced), stored
//! ```
//!
//! Each version read also counts each table's version triggers: a table
//! dropped and created again, or renamed onto, on a backend directly has
//! none, reads as changing (never served nor stored), and the next miss
//! puts them back after moving its version (`versions::arm`).
//!
//! Memory is bounded by `max_bytes` (answer bytes plus a fixed cost per
//! entry), in shards, each evicting its least recently used entries.
//! Counters: hits, misses, invalidations, evictions, bytes (`/metrics`),
//! hits, misses and invalidations per digest (`HSCALE SHOW DIGESTS`, by
//! the statement's note, as coalescing's).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hscale_route::dictionary::{CacheRule, Dictionary, TableName};
use hscale_route::BackendId;

use super::coalesce::{Answer, Key, Target};
use crate::error::ProxyError;
use crate::partition::versions::{self, physical_tables, Physical};
use crate::runtime::Context;

mod local_rules;
mod version_reads;
pub use local_rules::LocalRules;
use version_reads::Queue;

const SHARDS: usize = 16;
/// What an entry costs beside its answer's bytes (key, statement, map).
const ENTRY_OVERHEAD: usize = 256;

/// One backend's version read: the physical tables (database, table)
/// whose versions it sums.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub backend: BackendId,
    tables: Arc<[(String, String)]>,
}

/// The longest a key stays cold after wasted stores.
const MAX_COLD: Duration = Duration::from_millis(250);

/// What a read's tables make of it.
#[derive(Debug, Clone)]
pub struct Rule {
    /// TTL: when a stored answer stops being served.
    ttl: Option<Duration>,
    /// EXACT: the version reads (the main backend's first).
    probes: Arc<[Probe]>,
    /// Physical tables whose triggers must be in place before storing.
    arm: Vec<Physical>,
    /// The local dictionary snapshot it was made from.
    dict_version: u64,
    /// The dictionary version stored on the main backend.
    stored_version: u64,
}

/// What a rule's probes read: the main backend's dictionary version
/// (`u64::MAX` when unread), then each probe's tables' sums in order.
type Seen = Vec<u64>;

enum Slot {
    /// Not cacheable under this local dictionary version (a statement
    /// without a fingerprint; the others are remembered in `never`).
    Never {
        dict_version: u64,
    },
    /// Runs uncached until `until`: its last `wasted` stores were
    /// invalidated before any hit.
    Cold {
        dict_version: u64,
        until: Instant,
        wasted: u32,
    },
    Kept(Arc<Kept>),
}

/// Statement shapes (fingerprint hash, with the database) found not
/// cacheable, with the local dictionary version: a shape's tables are its
/// fingerprint's, so every statement of it is decided at once, and the
/// answers kept are never evicted for them. One map per worker (indexed
/// by the worker, so its lock is not contended), emptied when full.
const NEVER_KEPT: usize = 4096;

type Never = HashMap<u64, (u64, Option<String>)>;

struct Kept {
    answer: Arc<Answer>,
    rule: Rule,
    expires: Option<Instant>,
    /// What the probes read before its execution.
    seen: Seen,
    /// Hits since stored.
    hits: AtomicU64,
    /// Stores of this key before it wasted (invalidated without a hit).
    wasted: u32,
}

struct Entry {
    slot: Slot,
    tick: u64,
    size: usize,
}

#[derive(Default)]
struct Shard {
    map: HashMap<Arc<Key>, Entry>,
    order: BTreeMap<u64, Arc<Key>>,
    bytes: usize,
    tick: u64,
}

impl Shard {
    fn remove(&mut self, key: &Key) -> Option<Entry> {
        let e = self.map.remove(key)?;
        self.order.remove(&e.tick);
        self.bytes -= e.size;
        Some(e)
    }

    fn touch(&mut self, key: &Arc<Key>) {
        self.tick += 1;
        let tick = self.tick;
        if let Some(e) = self.map.get_mut(&**key) {
            self.order.remove(&e.tick);
            e.tick = tick;
            self.order.insert(tick, key.clone());
        }
    }
}

/// Counters of the cache (also per worker in `metrics`).
#[derive(Default)]
pub struct Figures {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub invalidations: AtomicU64,
    pub evictions: AtomicU64,
    pub stored: AtomicU64,
}

/// The proxy's result cache (`SharedReads::cache`).
pub struct ResultCache {
    max_bytes: usize,
    shards: [Mutex<Shard>; SHARDS],
    bytes: AtomicUsize,
    pub figures: Figures,
    never: [Mutex<Never>; SHARDS],
    /// Physical tables whose triggers this proxy put in place or found,
    /// under the dictionary version (stored) they were checked in.
    armed: Mutex<(u64, HashSet<Physical>)>,
    /// Version reads, per worker (`worker % SHARDS`) and backend.
    queues: [Mutex<HashMap<BackendId, Queue>>; SHARDS],
    /// Tables folded lately (`versions::fold`), when.
    folded: Mutex<HashMap<Physical, Instant>>,
    /// This proxy's own rules (`[[cache.rules]]`, `local_rules.rs`).
    local: arc_swap::ArcSwap<LocalRules>,
    has_local: std::sync::atomic::AtomicBool,
}

/// What a lookup found.
pub enum Lookup {
    /// Served from the cache.
    Hit(Arc<Answer>),
    /// Not cacheable: run as before.
    Not,
    /// The answer kept was out of date, and the key is cold: run as
    /// before.
    Invalidated,
    /// Cacheable, not served: run, then [`ResultCache::store`] with this.
    Miss(Pending),
}

/// A miss to store once its execution ended.
pub struct Pending {
    key: Arc<Key>,
    rule: Rule,
    seen: Seen,
    wasted: u32,
    /// The versions could not be read in line with the snapshot: run,
    /// do not store.
    is_storable: bool,
    /// The answer kept was found out of date (not a first miss).
    pub is_invalidation: bool,
}

impl ResultCache {
    /// `None` when `max_bytes` is 0: no cache.
    pub fn new(config: &crate::config::CacheConfig) -> Option<ResultCache> {
        let local = LocalRules::of(config);
        (config.max_bytes > 0).then(|| ResultCache {
            max_bytes: usize::try_from(config.max_bytes).unwrap_or(usize::MAX),
            shards: Default::default(),
            bytes: AtomicUsize::new(0),
            figures: Figures::default(),
            never: Default::default(),
            armed: Mutex::new((0, HashSet::new())),
            queues: Default::default(),
            folded: Mutex::new(HashMap::new()),
            has_local: std::sync::atomic::AtomicBool::new(!local.is_empty()),
            local: arc_swap::ArcSwap::from_pointee(local),
        })
    }

    fn shard(&self, key: &Key) -> std::sync::MutexGuard<'_, Shard> {
        self.shards[key.hash_value() as usize % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Its figures for `/metrics`.
    pub fn sample(&self) -> crate::metrics::exposition::CacheSample {
        let f = &self.figures;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        crate::metrics::exposition::CacheSample {
            hits: load(&f.hits),
            misses: load(&f.misses),
            invalidations: load(&f.invalidations),
            evictions: load(&f.evictions),
            stored: load(&f.stored),
            bytes: self.bytes() as u64,
            entries: self.entries() as u64,
        }
    }

    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn entries(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let s = s.lock().unwrap_or_else(|p| p.into_inner());
                s.map
                    .values()
                    .filter(|e| matches!(e.slot, Slot::Kept(_)))
                    .count()
            })
            .sum()
    }

    /// Forget every entry (`HSCALE FLUSH CACHE`, a cached table's rule
    /// changed, DDL through this proxy) and the triggers checked.
    pub fn flush(&self) {
        for s in &self.shards {
            let mut s = s.lock().unwrap_or_else(|p| p.into_inner());
            let freed = s.bytes;
            *s = Shard::default();
            self.bytes.fetch_sub(freed, Ordering::Relaxed);
        }
        for n in &self.never {
            n.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
        self.armed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clear();
    }

    fn put(&self, key: Arc<Key>, slot: Slot, size: usize) {
        let mut s = self.shard(&key);
        if let Some(old) = s.remove(&key) {
            self.bytes.fetch_sub(old.size, Ordering::Relaxed);
        }
        let budget = self.max_bytes / SHARDS;
        if size > budget {
            return;
        }
        while s.bytes + size > budget {
            let Some((_, oldest)) = s.order.pop_first() else {
                break;
            };
            if let Some(e) = s.map.remove(&*oldest) {
                s.bytes -= e.size;
                self.bytes.fetch_sub(e.size, Ordering::Relaxed);
                if matches!(e.slot, Slot::Kept(_)) {
                    self.figures.evictions.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        s.tick += 1;
        let tick = s.tick;
        s.order.insert(tick, key.clone());
        s.bytes += size;
        self.bytes.fetch_add(size, Ordering::Relaxed);
        s.map.insert(key, Entry { slot, tick, size });
    }

    /// Drop `key`'s entry if it still holds `kept` (another session may
    /// have stored a newer one), and put `cold` instead when given.
    fn invalidate(&self, key: &Arc<Key>, kept: &Arc<Kept>, cold: Option<Slot>) {
        {
            let mut s = self.shard(key);
            let is_same = matches!(s.map.get(&**key), Some(Entry { slot: Slot::Kept(k), .. }) if Arc::ptr_eq(k, kept));
            if !is_same {
                return;
            }
            if let Some(e) = s.remove(key) {
                self.bytes.fetch_sub(e.size, Ordering::Relaxed);
            }
        }
        if let Some(slot) = cold {
            self.put(key.clone(), slot, key.size() + ENTRY_OVERHEAD);
        }
    }

    /// Store what a miss's execution answered.
    pub fn store(&self, pending: Pending, answer: Arc<Answer>) {
        if !pending.is_storable {
            return;
        }
        let size = answer.size() + pending.key.size() + ENTRY_OVERHEAD;
        let expires = pending.rule.ttl.map(|t| Instant::now() + t);
        self.figures.stored.fetch_add(1, Ordering::Relaxed);
        self.put(
            pending.key,
            Slot::Kept(Arc::new(Kept {
                answer,
                rule: pending.rule,
                expires,
                seen: pending.seen,
                hits: AtomicU64::new(0),
                wasted: pending.wasted,
            })),
            size,
        );
    }
}

/// The rule of a read of `tables` (names as the statement wrote them,
/// `db` the session's) under `d` (and this proxy's `local` rules where
/// `d` has none): `None` unless every one is cached (or `is_exact`: the
/// statement is cached EXACT, and so each of its tables) and each is a
/// table hscale can put triggers on.
pub fn rule_of(
    (d, local): (&Dictionary, &LocalRules),
    tables: &[hscale_sql::reads::TableRead],
    db: Option<&str>,
    target: Target,
    backends: usize,
    is_exact: bool,
) -> Option<Rule> {
    if tables.is_empty() {
        return None;
    }
    let mut ttl: Option<Duration> = None;
    let mut exact: Vec<TableName> = Vec::new();
    for t in tables {
        let name = TableName::new(t.db.as_deref().or(db)?, &t.table);
        if is_exact {
            exact.push(name);
            continue;
        }
        match d.cache_rule(&name).or_else(|| local.table(&name))? {
            CacheRule::Ttl(ms) => {
                let this = Duration::from_millis(ms);
                ttl = Some(ttl.map_or(this, |t| t.min(this)));
            }
            CacheRule::Exact => exact.push(name),
        }
    }
    // An unpartitioned table's rows are where the statement runs.
    let unpartitioned = match target {
        Target::Backend(b) => b,
        Target::Planned { .. } => BackendId::MAIN,
    };
    let mut arm = Vec::new();
    for name in &exact {
        arm.extend(physical_tables(d, name, unpartitioned, backends)?);
    }
    Some(Rule {
        ttl,
        probes: probes(&arm).into(),
        arm,
        dict_version: d.version,
        stored_version: d.stored_version,
    })
}

/// One version read per backend of `arm`; the main backend's (first,
/// always there when anything is exact) also reads the dictionary version.
fn probes(arm: &[Physical]) -> Vec<Probe> {
    if arm.is_empty() {
        return Vec::new();
    }
    let mut by_backend: BTreeMap<BackendId, Vec<(String, String)>> = BTreeMap::new();
    by_backend.entry(BackendId::MAIN).or_default();
    for (b, db, t) in arm {
        let pair = (db.clone(), t.clone());
        let list = by_backend.entry(*b).or_default();
        if !list.contains(&pair) {
            list.push(pair);
        }
    }
    by_backend
        .into_iter()
        .map(|(backend, tables)| Probe {
            backend,
            tables: tables.into(),
        })
        .collect()
}

impl Pending {
    /// Mark `note` (HSCALE SHOW DIGESTS) a miss, or an answer found out
    /// of date (then run and stored again).
    pub fn note(&self, note: &mut crate::metrics::StatementNote) {
        note.is_invalidated = self.is_invalidation;
        note.is_cache_miss = !self.is_invalidation;
    }
}

/// What a lookup found in the shard.
enum Found {
    Kept(Arc<Kept>),
    /// Cold over (or nothing): a miss that carries `wasted` on.
    Miss(u32),
}

impl ResultCache {
    /// Look `key` up (the caller checked that some table is cached).
    /// `tokens`: the statement's, when the analysis kept them; `digest`:
    /// its fingerprint's hash, when known.
    pub async fn lookup(
        self: &Arc<Self>,
        ctx: &Arc<Context>,
        worker: usize,
        key: &Arc<Key>,
        tokens: Option<&[hscale_sql::Token]>,
        db: Option<&str>,
        digest: Option<u64>,
    ) -> Result<Lookup, ProxyError> {
        let never = &self.never[worker % SHARDS];
        if let Some(h) = digest {
            let version = ctx.partitioning.with_dictionary(|d| d.version);
            let n = never.lock().unwrap_or_else(|p| p.into_inner());
            if n.get(&h)
                .is_some_and(|(v, at)| *v == version && at.as_deref() == db)
            {
                return Ok(Lookup::Not);
            }
        }
        let d = ctx.partitioning.dictionary();
        let Some(found) = self.found(key, d.version) else {
            return Ok(Lookup::Not);
        };
        let wasted = match found {
            Found::Kept(k) => return self.revalidated(ctx, worker, key, k, d.version).await,
            Found::Miss(wasted) => wasted,
        };
        // Not known under this dictionary: which tables does it read?
        let sql = key.text();
        let rule = match sql.and_then(|sql| {
            let lexed;
            let tokens = match tokens {
                Some(t) => t,
                None => {
                    lexed = hscale_sql::tokenize(sql).ok()?;
                    &lexed[..]
                }
            };
            let statement =
                digest.and_then(|h| d.statement_rule(h).or_else(|| self.local().statement(h)));
            if let Some(CacheRule::Ttl(ms)) = statement {
                // `HSCALE CACHE_STATEMENT ... 'TTL'`: whatever it reads.
                return Some(Rule {
                    ttl: Some(Duration::from_millis(ms)),
                    probes: Vec::new().into(),
                    arm: Vec::new(),
                    dict_version: d.version,
                    stored_version: d.stored_version,
                });
            }
            let tables = hscale_sql::reads::tables_read(sql, tokens)?;
            // `HSCALE CACHE_STATEMENT ... 'EXACT'`: every table it reads
            // is checked as an EXACT table's, whatever its own rule.
            let is_exact = statement == Some(CacheRule::Exact);
            let local = self.local();
            rule_of(
                (&d, &local),
                &tables,
                db,
                key.target(),
                ctx.backend_count(),
                is_exact,
            )
        }) {
            Some(r) => r,
            None => {
                self.never_cacheable(worker, key, digest, db, d.version);
                return Ok(Lookup::Not);
            }
        };
        drop(d);
        self.figures.misses.fetch_add(1, Ordering::Relaxed);
        if rule.probes.is_empty() {
            return Ok(Lookup::Miss(Pending {
                key: key.clone(),
                rule,
                seen: Vec::new(),
                wasted,
                is_storable: true,
                is_invalidation: false,
            }));
        }
        self.arm(ctx, worker, &rule).await?;
        let seen = self.read_versions(ctx, worker, &rule.probes).await?;
        let is_storable = is_in_line(&seen, rule.stored_version);
        Ok(Lookup::Miss(Pending {
            key: key.clone(),
            rule,
            seen,
            wasted,
            is_storable,
            is_invalidation: false,
        }))
    }

    /// What the shard holds for `key` under local dictionary version
    /// `version`; `None`: not served, run as before (not cacheable, or
    /// cold).
    fn found(&self, key: &Arc<Key>, version: u64) -> Option<Found> {
        let mut s = self.shard(key);
        let found = match s.map.get(&**key) {
            Some(Entry {
                slot: Slot::Never { dict_version },
                ..
            }) if *dict_version == version => return None,
            Some(Entry {
                slot:
                    Slot::Cold {
                        dict_version,
                        until,
                        wasted,
                    },
                ..
            }) if *dict_version == version => {
                if Instant::now() < *until {
                    return None;
                }
                Found::Miss(*wasted)
            }
            Some(Entry {
                slot: Slot::Kept(k),
                ..
            }) if k.rule.dict_version == version => {
                if k.expires.is_none_or(|e| Instant::now() < e) {
                    let k = k.clone();
                    s.touch(key);
                    Found::Kept(k)
                } else {
                    Found::Miss(0)
                }
            }
            _ => Found::Miss(0),
        };
        Some(found)
    }

    /// A kept answer of `key`: a hit when it has no probes (TTL) or its
    /// probes read what they read before its execution; else invalidated,
    /// and the read runs (stored again, or cold when it was wasted).
    async fn revalidated(
        self: &Arc<Self>,
        ctx: &Arc<Context>,
        worker: usize,
        key: &Arc<Key>,
        k: Arc<Kept>,
        dict_version: u64,
    ) -> Result<Lookup, ProxyError> {
        if k.rule.probes.is_empty() {
            k.hits.fetch_add(1, Ordering::Relaxed);
            self.figures.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Lookup::Hit(k.answer.clone()));
        }
        let now = self.read_versions(ctx, worker, &k.rule.probes).await?;
        if now == k.seen {
            k.hits.fetch_add(1, Ordering::Relaxed);
            self.figures.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Lookup::Hit(k.answer.clone()));
        }
        self.figures.invalidations.fetch_add(1, Ordering::Relaxed);
        if k.hits.load(Ordering::Relaxed) == 0 {
            // Wasted: cold for a while, this read runs uncached.
            let wasted = k.wasted.saturating_add(1);
            let cold = Slot::Cold {
                dict_version,
                until: Instant::now() + cold_for(wasted),
                wasted,
            };
            self.invalidate(key, &k, Some(cold));
            return Ok(Lookup::Invalidated);
        }
        self.invalidate(key, &k, None);
        let is_storable = is_in_line(&now, k.rule.stored_version);
        Ok(Lookup::Miss(Pending {
            key: key.clone(),
            rule: k.rule.clone(),
            seen: now,
            wasted: 0,
            is_storable,
            is_invalidation: true,
        }))
    }

    /// Remember that `key`'s statement is not cacheable under local
    /// dictionary version `version`: by its fingerprint (`digest`, with
    /// the database) when it has one, else by its key.
    fn never_cacheable(
        &self,
        worker: usize,
        key: &Arc<Key>,
        digest: Option<u64>,
        db: Option<&str>,
        version: u64,
    ) {
        match digest {
            Some(h) => {
                let never = &self.never[worker % SHARDS];
                let mut n = never.lock().unwrap_or_else(|p| p.into_inner());
                if n.len() >= NEVER_KEPT {
                    n.clear();
                }
                n.insert(h, (version, db.map(str::to_string)));
            }
            None => {
                let size = key.size() + ENTRY_OVERHEAD;
                let slot = Slot::Never {
                    dict_version: version,
                };
                self.put(key.clone(), slot, size);
            }
        }
    }

    /// Put the version triggers on every physical table of `rule` this
    /// proxy has not checked under the current stored dictionary version
    /// (a partition change or an online ALTER made new physical tables).
    async fn arm(&self, ctx: &Context, worker: usize, rule: &Rule) -> Result<(), ProxyError> {
        let todo: Vec<_> = {
            let mut a = self.armed.lock().unwrap_or_else(|p| p.into_inner());
            if a.0 != rule.stored_version {
                *a = (rule.stored_version, HashSet::new());
            }
            rule.arm
                .iter()
                .filter(|t| !a.1.contains(*t))
                .cloned()
                .collect()
        };
        for (backend, db, table) in todo {
            let mut conn = ctx.pool(worker, backend).get_own().await?;
            versions::arm(&mut conn, &db, &table, Some(2)).await?;
            let mut a = self.armed.lock().unwrap_or_else(|p| p.into_inner());
            if a.0 == rule.stored_version {
                a.1.insert((backend, db, table));
            }
        }
        Ok(())
    }

    /// Forget that `tables`' triggers were checked: the next miss checks
    /// again (a cached table created again through this proxy, or one a
    /// version read found without its triggers).
    pub fn disarmed(&self, tables: &[Physical]) {
        let mut a = self.armed.lock().unwrap_or_else(|p| p.into_inner());
        for t in tables {
            a.1.remove(t);
        }
    }
}

/// How long a key stays cold after `wasted` wasted stores in a row.
fn cold_for(wasted: u32) -> Duration {
    Duration::from_millis(1u64 << wasted.min(10)).min(MAX_COLD)
}

/// The main backend's version read names the dictionary version the rule
/// was made under: otherwise this proxy is behind another's change (a
/// cached table uncached, a partition moved), and nothing is stored.
/// A table marked by a DDL statement in progress reads `u64::MAX`: never
/// stored (and never equal to what a stored answer read).
fn is_in_line(seen: &[u64], stored_version: u64) -> bool {
    seen.first() == Some(&stored_version) && !seen[1..].contains(&u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_doubles_up_to_its_bound() {
        assert_eq!(cold_for(1), Duration::from_millis(2));
        assert_eq!(cold_for(2), Duration::from_millis(4));
        assert_eq!(cold_for(7), Duration::from_millis(128));
        assert_eq!(cold_for(8), MAX_COLD);
        assert_eq!(cold_for(u32::MAX), MAX_COLD);
    }

    #[test]
    fn a_marked_table_or_another_dictionary_is_never_stored() {
        assert!(is_in_line(&[7, 1, 2], 7));
        assert!(!is_in_line(&[8, 1, 2], 7));
        assert!(!is_in_line(&[7, 1, u64::MAX], 7));
        assert!(!is_in_line(&[u64::MAX], 7));
        assert!(!is_in_line(&[], 7));
    }

    #[test]
    fn probes_group_tables_by_backend_main_first() {
        let b1 = BackendId::new(1);
        let arm = vec![
            (b1, "d".to_string(), "t_1".to_string()),
            (BackendId::MAIN, "d".to_string(), "t_0".to_string()),
            (b1, "d".to_string(), "t_1".to_string()),
        ];
        let p = probes(&arm);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].backend, BackendId::MAIN);
        assert_eq!(&p[0].tables[..], &[("d".to_string(), "t_0".to_string())]);
        assert_eq!(&p[1].tables[..], &[("d".to_string(), "t_1".to_string())]);
        // Only a backend other than the main one: the main one still
        // reads the dictionary version.
        let p = probes(&arm[..1]);
        assert_eq!(p[0].backend, BackendId::MAIN);
        assert!(p[0].tables.is_empty());
    }
}
