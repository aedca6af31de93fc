//! The result cache (issue 33, item 2): answers of reads of cached tables
//! kept and served again, on this proxy.
//!
//! Opt-in per table (`HSCALE CACHE_TABLE('t', 'EXACT' | 'TTL', ms)`, in
//! the dictionary, `admin/cache.rs`) and per proxy (`[cache] max_bytes`,
//! 0 = no cache: `Context::cache` is `None`). A read takes part when it
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
//!   `hscale.table_versions` on its backend, in the writer's own
//!   transaction (one row per table and slot, `CONNECTION_ID() % 32`, so
//!   concurrent writers rarely wait on one row). A hit reads the sum of
//!   the versions of its tables per backend (a [`Probe`], run at once on
//!   every backend involved) and the main backend's dictionary version;
//!   the answer is served when all equal what was read when it was
//!   stored. The versions are read *before* the stored execution starts,
//!   so a stored version is never newer than the rows: a write committed
//!   after the read moves the sum, and the next hit misses.
//!
//! ```text
//!  read ─► not cacheable ─────────────────► coalescing as before
//!       ├► entry, TTL not over ───────────► its bytes (hit)
//!       ├► entry, probes equal ───────────► its bytes (hit)
//!       ├► entry, probes moved ───────────► invalidated; runs, stored with
//!       │                                   the versions just read
//!       └► no entry ─► triggers checked (once per dictionary version),
//!                      versions read, runs (coalesced), stored
//! ```
//!
//! Memory is bounded by `max_bytes` (answer bytes plus a fixed cost per
//! entry), in shards, each evicting its least recently used entries.
//! Counters: hits, misses, invalidations, evictions, bytes (`/metrics`),
//! hits per digest (`HSCALE SHOW DIGESTS`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hscale_route::dictionary::{CacheRule, Dictionary, TableName};
use hscale_route::BackendId;

use super::coalesce::{Answer, Key, Target};
use crate::error::ProxyError;
use crate::partition::quote_str;

const SHARDS: usize = 16;
/// What an entry costs beside its answer's bytes (key, statement, map).
const ENTRY_OVERHEAD: usize = 256;

/// One backend's version read: one statement, one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub backend: BackendId,
    pub sql: String,
}

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

type Row = Vec<Option<Vec<u8>>>;

/// A physical table: its backend, database and name.
pub type Physical = (BackendId, String, String);

enum Slot {
    /// Not cacheable under this local dictionary version (a statement
    /// without a fingerprint; the others are remembered in `never`).
    Never {
        dict_version: u64,
    },
    Kept(Kept),
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
    /// The probes' rows when stored.
    seen: Vec<Row>,
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

/// The proxy's result cache (`Context::cache`).
pub struct ResultCache {
    max_bytes: usize,
    shards: [Mutex<Shard>; SHARDS],
    bytes: AtomicUsize,
    pub figures: Figures,
    never: [Mutex<Never>; SHARDS],
    /// Physical tables whose triggers this proxy put in place or found,
    /// under the dictionary version (stored) they were checked in.
    armed: Mutex<(u64, HashSet<Physical>)>,
}

/// What a lookup found.
pub enum Lookup {
    /// Served from the cache.
    Hit(Arc<Answer>),
    /// Not cacheable: run as before.
    Not,
    /// Cacheable, not served: run, then [`ResultCache::store`] with this.
    Miss(Pending),
}

/// A miss to store once its execution ended.
pub struct Pending {
    key: Arc<Key>,
    rule: Rule,
    seen: Vec<Row>,
    /// The versions could not be read in line with the snapshot: run,
    /// do not store.
    is_storable: bool,
}

impl ResultCache {
    /// `None` when `max_bytes` is 0: no cache.
    pub fn new(max_bytes: u64) -> Option<ResultCache> {
        (max_bytes > 0).then(|| ResultCache {
            max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
            shards: Default::default(),
            bytes: AtomicUsize::new(0),
            figures: Figures::default(),
            never: Default::default(),
            armed: Mutex::new((0, HashSet::new())),
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

    fn drop_entry(&self, key: &Key) {
        let mut s = self.shard(key);
        if let Some(e) = s.remove(key) {
            self.bytes.fetch_sub(e.size, Ordering::Relaxed);
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
            Slot::Kept(Kept {
                answer,
                rule: pending.rule,
                expires,
                seen: pending.seen,
            }),
            size,
        );
    }
}

/// The rule of a read of `tables` (names as the statement wrote them,
/// `db` the session's) under `d`: `None` unless every one is cached and
/// each is a table hscale can put triggers on.
pub fn rule_of(
    d: &Dictionary,
    tables: &[hscale_sql::reads::TableRead],
    db: Option<&str>,
    target: Target,
    backends: usize,
) -> Option<Rule> {
    if tables.is_empty() {
        return None;
    }
    let mut ttl: Option<Duration> = None;
    let mut exact: Vec<TableName> = Vec::new();
    for t in tables {
        let name = TableName::new(t.db.as_deref().or(db)?, &t.table);
        match d.cache_rule(&name)? {
            CacheRule::Ttl(ms) => {
                let this = Duration::from_millis(ms);
                ttl = Some(ttl.map_or(this, |t| t.min(this)));
            }
            CacheRule::Exact => exact.push(name),
        }
    }
    let mut arm = Vec::new();
    for name in &exact {
        arm.extend(physical_tables(d, name, target, backends)?);
    }
    Some(Rule {
        ttl,
        probes: probes(&arm).into(),
        arm,
        dict_version: d.version,
        stored_version: d.stored_version,
    })
}

/// Where `name`'s rows live: every partition's physical table, every
/// global copy, or the backend an unpartitioned table's reads go to.
/// `None` for a view hscale keeps (no triggers on a view).
pub fn physical_tables(
    d: &Dictionary,
    name: &TableName,
    target: Target,
    backends: usize,
) -> Option<Vec<Physical>> {
    if d.view(name).is_some() {
        return None;
    }
    if let Some(t) = d.table(name) {
        return Some(
            t.all_targets()
                .into_iter()
                .map(|x| (x.backend, name.db.clone(), x.physical_table))
                .collect(),
        );
    }
    if d.is_global(name) {
        return Some(
            (0..backends)
                .map(|i| (BackendId::new(i), name.db.clone(), name.table.clone()))
                .collect(),
        );
    }
    let backend = match target {
        Target::Backend(b) => b,
        Target::Planned { .. } => BackendId::MAIN,
    };
    Some(vec![(backend, name.db.clone(), name.table.clone())])
}

/// One version read per backend of `arm`; the main backend's (first,
/// always there when anything is exact) also reads the dictionary version.
fn probes(arm: &[Physical]) -> Vec<Probe> {
    if arm.is_empty() {
        return Vec::new();
    }
    let mut by_backend: BTreeMap<BackendId, Vec<String>> = BTreeMap::new();
    by_backend.entry(BackendId::MAIN).or_default();
    for (b, db, t) in arm {
        let pair = format!("({}, {})", quote_str(db), quote_str(t));
        let list = by_backend.entry(*b).or_default();
        if !list.contains(&pair) {
            list.push(pair);
        }
    }
    by_backend
        .into_iter()
        .map(|(backend, pairs)| {
            let sum = if pairs.is_empty() {
                "0".to_string()
            } else {
                format!(
                    "(SELECT IFNULL(SUM(version), 0) FROM `hscale`.`table_versions` WHERE (db, tbl) IN ({}))",
                    pairs.join(", ")
                )
            };
            let sql = if backend == BackendId::MAIN {
                format!("SELECT {sum}, (SELECT version FROM `hscale`.`dictionary_version` WHERE id = 1)")
            } else {
                format!("SELECT {sum}")
            };
            Probe { backend, sql }
        })
        .collect()
}

impl ResultCache {
    /// Look `key` up (the caller checked that some table is cached).
    /// `tokens`: the statement's, when the analysis kept them; `digest`:
    /// its fingerprint's hash, when known.
    pub async fn lookup(
        &self,
        ctx: &crate::runtime::Context,
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
        let found = {
            let mut s = self.shard(key);
            match s.map.get(&**key) {
                Some(Entry {
                    slot: Slot::Never { dict_version },
                    ..
                }) if *dict_version == d.version => return Ok(Lookup::Not),
                Some(Entry {
                    slot: Slot::Kept(k),
                    ..
                }) if k.rule.dict_version == d.version => {
                    let is_live = k.expires.is_none_or(|e| Instant::now() < e);
                    let found = is_live.then(|| (k.answer.clone(), k.rule.clone(), k.seen.clone()));
                    if found.is_some() {
                        s.touch(key);
                    }
                    found
                }
                _ => None,
            }
        };
        if let Some((answer, rule, seen)) = found {
            if rule.probes.is_empty() {
                self.figures.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(Lookup::Hit(answer));
            }
            let now = read_probes(ctx, worker, &rule.probes).await?;
            if now == seen {
                self.figures.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(Lookup::Hit(answer));
            }
            self.figures.invalidations.fetch_add(1, Ordering::Relaxed);
            self.drop_entry(key);
            let is_storable = is_in_line(&now, rule.stored_version);
            return Ok(Lookup::Miss(Pending {
                key: key.clone(),
                rule,
                seen: now,
                is_storable,
            }));
        }
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
            if let Some(ms) = digest.and_then(|h| d.statement_ttl(h)) {
                // `HSCALE CACHE_STATEMENT`: a TTL, whatever it reads.
                return Some(Rule {
                    ttl: Some(Duration::from_millis(ms)),
                    probes: Vec::new().into(),
                    arm: Vec::new(),
                    dict_version: d.version,
                    stored_version: d.stored_version,
                });
            }
            let tables = hscale_sql::reads::tables_read(sql, tokens)?;
            rule_of(&d, &tables, db, key.target(), ctx.backend_count())
        }) {
            Some(r) => r,
            None => {
                match digest {
                    Some(h) => {
                        let mut n = never.lock().unwrap_or_else(|p| p.into_inner());
                        if n.len() >= NEVER_KEPT {
                            n.clear();
                        }
                        n.insert(h, (d.version, db.map(str::to_string)));
                    }
                    None => {
                        let size = key.size() + ENTRY_OVERHEAD;
                        let slot = Slot::Never {
                            dict_version: d.version,
                        };
                        self.put(key.clone(), slot, size);
                    }
                }
                return Ok(Lookup::Not);
            }
        };
        self.figures.misses.fetch_add(1, Ordering::Relaxed);
        if rule.probes.is_empty() {
            return Ok(Lookup::Miss(Pending {
                key: key.clone(),
                rule,
                seen: Vec::new(),
                is_storable: true,
            }));
        }
        self.arm(ctx, worker, &rule).await?;
        let seen = read_probes(ctx, worker, &rule.probes).await?;
        let is_storable = is_in_line(&seen, rule.stored_version);
        Ok(Lookup::Miss(Pending {
            key: key.clone(),
            rule,
            seen,
            is_storable,
        }))
    }

    /// Put the version triggers on every physical table of `rule` this
    /// proxy has not checked under the current stored dictionary version
    /// (a partition change or an online ALTER made new physical tables).
    async fn arm(
        &self,
        ctx: &crate::runtime::Context,
        worker: usize,
        rule: &Rule,
    ) -> Result<(), ProxyError> {
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
            crate::partition::versions::arm(&mut conn, &db, &table, Some(2)).await?;
            let mut a = self.armed.lock().unwrap_or_else(|p| p.into_inner());
            if a.0 == rule.stored_version {
                a.1.insert((backend, db, table));
            }
        }
        Ok(())
    }
}

/// The main backend's probe (first) names the dictionary version the
/// rule was made under: otherwise this proxy is behind another's change
/// (a cached table uncached, a partition moved), and nothing is stored.
fn is_in_line(seen: &[Row], stored_version: u64) -> bool {
    let version = stored_version.to_string();
    seen.first()
        .and_then(|r| r.get(1))
        .and_then(|v| v.as_deref())
        .is_some_and(|v| v == version.as_bytes())
}

/// Run every probe at once, one connection per backend.
async fn read_probes(
    ctx: &crate::runtime::Context,
    worker: usize,
    probes: &[Probe],
) -> Result<Vec<Row>, ProxyError> {
    let reads = probes.iter().map(|p| async move {
        let mut conn = ctx.pool(worker, p.backend).get(false).await?;
        let r = conn.query_rows(&p.sql).await?;
        match r {
            Ok(t) => Ok(t.rows.into_iter().next().unwrap_or_default()),
            Err(e) => Err(ProxyError::Wrong(format!(
                "reading the result cache's table versions on backend {}: {}",
                p.backend.index(),
                e.message
            ))),
        }
    });
    futures_util::future::try_join_all(reads).await
}
