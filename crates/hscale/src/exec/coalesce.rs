//! Identical reads answered once (issue 33, item 1): coalescing.
//!
//! When many sessions send the same read at once (a flash crowd), one
//! backend execution answers all of them. A read takes part when the
//! session found it shareable from facts it already has (`key`): one
//! SELECT, no pins, no user or system variables, no names hscale answers
//! itself, no LAST_INSERT_ID, only deterministic built-in functions
//! (`hscale_sql::shareable`, over the tokens the analysis kept, asked
//! only when the read meets an execution in flight or the result cache
//! is on: [`Probe`]); and
//! the session is outside any transaction (autocommit, nothing pinned,
//! no deferred BEGIN), with no max_statement_time, and has not turned it
//! off (`SET hscale_coalesce = OFF`; `[proxy] coalesce = false` for the
//! whole proxy).
//!
//! The rule that makes it invisible: **a request only joins an execution
//! that has not been sent to a server yet.** Per key ([`Key`]: the
//! statement's bytes, what runs it, the database, every replayed session
//! variable, the backend account, the client's capabilities):
//!
//! ```text
//!  request ─► nothing in flight ──────────► runs at once, streamed (Lead)
//!          ├► in flight, no next batch ───► forms the next batch, leads it (Next)
//!          ├► in flight, next batch open ─► joins it, waits (Wait)
//!          └► next batch full ────────────► runs on its own (Alone)
//!
//!  in-flight execution ends ─► the next batch closes and its leader runs;
//!       with members it holds its answer (`PacketStream::hold`), and the
//!       same framed bytes are written to every member
//! ```
//!
//! So every execution starts after every request it answers arrived: each
//! answer reflects every write acknowledged before its request, as one
//! server's would (Vitess's consolidator, which lets a request join an
//! execution already running, does not).
//!
//! What is shared: the framed packets exactly as the leader's client got
//! them (column definitions, rows, EOF/OK; the key holds the capability
//! flags that change their encoding), the statement's note for metrics
//! and `ROW_COUNT()`, and the conditions gathered for SHOW WARNINGS. Only
//! an answer without an error, within [`MAX_ANSWER_BYTES`], is shared:
//! otherwise (an error of any kind, a leader killed or gone, an answer too
//! big) the members run the statement on their own. A leader holds its
//! answer until it is complete, so its client disconnecting does not
//! end the execution the others wait for; a member waiting keeps its own
//! KILL (`SessionHandle::interrupt`). Guards (`Turn`) hand the in-flight
//! state on when a session's future is dropped, so no key stays stuck.
//!
//! The statement path of a read that cannot take part is unchanged: the
//! executor entry (`exec/entry.rs`) checks facts it has and goes on.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hscale_route::router::Plan;
use hscale_route::BackendId;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use super::bindings::Bindings;
use super::cache::{Lookup, Pending, ResultCache};
use super::conditions::Gathered;
use super::forward::Expect;
use super::{Effects, Exec};
use crate::backend::state::SessionVars;
use crate::error::ProxyError;
use crate::metrics::StatementNote;

mod setting;
pub use setting::{setting, VARIABLE};

/// The largest answer shared (framed bytes); a bigger one streams to its
/// leader's client and the members run on their own.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;
/// Statements longer than this are not coalesced (the key holds them).
const MAX_STATEMENT_BYTES: usize = 16 * 1024;

/// What runs the statement: one backend as it is, or a plan of the
/// dictionary of this version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Backend(BackendId),
    Planned { version: u64 },
}

/// Everything that can change an answer's bytes. Two requests share an
/// execution only when their keys are equal.
#[derive(Debug)]
pub struct Key {
    hash: u64,
    target: Target,
    /// The COM_QUERY payload.
    sql: Bytes,
    db: Option<String>,
    /// Every session variable the session set (character set and
    /// collation, sql_mode, time_zone, sql_select_limit,
    /// group_concat_max_len, div_precision_increment, lc_time_names, ...):
    /// what is replayed on the connection that runs it.
    vars: Arc<SessionVars>,
    /// The backend account (`[[users]] backend_user`).
    identity: usize,
    /// The client's capability flags (CLIENT_DEPRECATE_EOF, ...).
    capabilities: u32,
}

impl PartialEq for Key {
    fn eq(&self, o: &Key) -> bool {
        self.hash == o.hash
            && self.target == o.target
            && self.sql == o.sql
            && self.db == o.db
            && self.identity == o.identity
            && self.capabilities == o.capabilities
            && (Arc::ptr_eq(&self.vars, &o.vars) || self.vars == o.vars)
    }
}
impl Eq for Key {}

impl Key {
    /// Whether the read of `probe` from the session of `b` has this key
    /// (without building its key).
    fn is_of(&self, probe: &Probe<'_>, b: &Bindings) -> bool {
        self.hash == probe.hash
            && self.target == probe.target
            && self.sql == probe.sql
            && self.db.as_deref() == b.state.db.as_deref()
            && self.identity == b.identity
            && self.capabilities == probe.capabilities
            && (Arc::ptr_eq(&self.vars, &b.state.vars) || *self.vars == *b.state.vars)
    }

    pub(super) fn hash_value(&self) -> u64 {
        self.hash
    }

    pub(super) fn target(&self) -> Target {
        self.target
    }

    /// The statement's text (the payload after its command byte).
    pub(super) fn text(&self) -> Option<&str> {
        std::str::from_utf8(self.sql.get(1..)?).ok()
    }

    /// What the key holds in memory, roughly (the result cache's bound).
    pub(super) fn size(&self) -> usize {
        self.sql.len() + self.db.as_ref().map_or(0, |d| d.len())
    }
}
impl Hash for Key {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

/// The key of a text statement about to run, when it may be coalesced.
/// `tokens`: the analysis's tokens of `payload`'s text. Only cheap checks
/// of facts the session has: the token walk over the statement's
/// functions runs later, and only where sharing is possible
/// ([`Probe::is_shareable`]).
pub fn key<'t>(
    b: &Bindings,
    scratch: &super::scratch::StatementScratch,
    facts: &hscale_sql::Facts,
    payload: &Bytes,
    lexed: Option<(&'t str, &'t [hscale_sql::Token])>,
    capabilities: u32,
    target: Target,
) -> Option<Probe<'t>> {
    if facts.kind != hscale_sql::Kind::Select
        || facts.statements != 1
        || !facts.pins.is_empty()
        || facts.mentions != hscale_sql::Mentions::NONE
        || facts.uses_last_insert_id
        || !b.reads.coalescer.is_on
        || b.is_coalescing_off
        // A replica's answer is not a primary's (`read_from.rs`).
        || b.read_from.is_replica
        || b.txn.is_some()
        || b.pinned.is_some()
        || !b.pins.is_empty()
        || b.pending_begin.is_some()
        || b.is_text_utf8
        || scratch.generated_id.is_some()
        || scratch.one_row_select.is_some()
        || scratch.answer_defs.is_some()
        || b.is_undoubling
        || payload.len() > MAX_STATEMENT_BYTES
    {
        return None;
    }
    let (sql, tokens) = lexed?;
    let vars = &b.state.vars;
    if vars.holds_autocommit_off() || vars.has_statement_time() {
        return None;
    }
    let salt = match target {
        Target::Backend(backend) => backend.index() as u64,
        Target::Planned { version } => version ^ (1 << 63),
    };
    let mut fixed = [0u8; 20];
    fixed[..8].copy_from_slice(&salt.to_le_bytes());
    fixed[8..16].copy_from_slice(&(b.identity as u64).to_le_bytes());
    fixed[16..].copy_from_slice(&capabilities.to_le_bytes());
    let mut h = xxhash_rust::xxh3::xxh3_64_with_seed(payload, 0)
        ^ xxhash_rust::xxh3::xxh3_64_with_seed(&fixed, 1);
    if let Some(db) = &b.state.db {
        h ^= xxhash_rust::xxh3::xxh3_64_with_seed(db.as_bytes(), 2);
    }
    if !vars.is_empty() {
        let mut v = xxhash_rust::xxh3::Xxh3::new();
        for item in vars.items() {
            v.update(item.assign.as_bytes());
            v.update(&[0]);
        }
        h ^= v.digest().rotate_left(17);
    }
    Some(Probe {
        hash: h,
        target,
        sql: payload.clone(),
        capabilities,
        lexed: (sql, tokens),
    })
}

/// A read that may take part, before its [`Key`] is built: the hash of
/// everything the key holds, computed without allocating. The key itself
/// (which copies the database name and holds the session's variables) is
/// built only when the read meets another one in flight, or for the
/// result cache: a read that runs alone, as most do, never builds it.
///
/// Whether the statement is deterministic enough to share
/// ([`Probe::is_shareable`], a walk over its tokens) is asked only where
/// it matters: before the result cache, and when the read would form a
/// batch behind an execution in flight. A read that finds nothing in
/// flight runs at once and streams its own answer whatever its functions
/// (no one joins a running execution), so it never asks. Members join
/// only a batch whose key is equal to theirs, and the key holds the
/// statement's bytes: the batch's leader asked for all of them.
#[derive(Debug)]
pub struct Probe<'t> {
    hash: u64,
    target: Target,
    /// The COM_QUERY payload.
    sql: Bytes,
    capabilities: u32,
    /// The statement's text and the analysis's tokens of it.
    lexed: (&'t str, &'t [hscale_sql::Token]),
}

impl Probe<'_> {
    /// Only deterministic built-in functions, no locking read, ...
    /// (`hscale_sql::shareable`): the same answer for every identical
    /// request.
    fn is_shareable(&self) -> bool {
        hscale_sql::shareable::is_shareable(self.lexed.0, self.lexed.1)
    }

    /// The key, with the database and session variables `b` has now.
    fn key(&self, b: &Bindings) -> Key {
        Key {
            hash: self.hash,
            target: self.target,
            sql: self.sql.clone(),
            db: b.state.db.clone(),
            vars: b.state.vars.clone(),
            identity: b.identity,
            capabilities: self.capabilities,
        }
    }
}

/// What one execution gave its leader's client, for the members.
#[derive(Debug)]
pub struct Answer {
    /// The framed packets, sequence ids included.
    bytes: Bytes,
    next_seq: u8,
    note: StatementNote,
    gathered: Gathered,
}

impl Answer {
    /// Its framed bytes' length (the result cache's bound).
    pub(super) fn size(&self) -> usize {
        self.bytes.len()
    }
}

/// Where a batch is.
#[derive(Debug, Clone)]
enum Phase {
    /// Taking members; the execution before it runs.
    Forming,
    /// Its leader runs it now.
    Go,
    Shared(Arc<Answer>),
    /// Not shared: each member runs the statement on its own.
    Alone,
}

/// Requests that will share one execution.
struct Batch {
    /// Its leader's key: a request joins only with an equal one.
    key: Key,
    phase: watch::Sender<Phase>,
    /// Members besides the leader (changed under the table's lock while
    /// forming).
    members: AtomicUsize,
    /// Set under the table's lock: the execution before it ended and it
    /// was told to go.
    is_started: AtomicBool,
    /// Set under the table's lock: its leader left before it started.
    is_leader_gone: AtomicBool,
}

/// What is known of a key's hash: something is in flight; perhaps a next
/// batch.
struct Entry {
    next: Option<Arc<Batch>>,
}

/// The keys of the table are hashes already ([`Probe`]): used as they are.
#[derive(Default)]
struct Unhashed(u64);

impl Hasher for Unhashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Table = HashMap<u64, Entry, std::hash::BuildHasherDefault<Unhashed>>;

/// Shards of the table: reads of different statements rarely meet on
/// one lock.
const SHARDS: usize = 16;

/// The proxy's table of reads in flight (`SharedReads::coalescer`), shared by
/// all workers (a flash crowd spread over every worker runs one
/// execution at a time), in shards by the hash of the key ([`Probe`]).
/// A shard's lock is held for a map operation only.
///
/// Two keys of one hash share an entry: a request may then wait for an
/// execution of another key to end before it runs (time, never a wrong
/// answer: members join a batch only with a key equal to its leader's).
pub struct Coalescer {
    /// `[proxy] coalesce`.
    pub is_on: bool,
    /// `[proxy] coalesce_max_members`: members a batch takes besides its
    /// leader.
    max_members: usize,
    turn_wait: std::time::Duration, // `[proxy] coalesce_turn_wait_ms`
    shards: [Mutex<Table>; SHARDS],
}

impl Coalescer {
    pub fn new(is_on: bool, max_members: usize, turn_wait: std::time::Duration) -> Coalescer {
        Coalescer {
            is_on,
            max_members,
            turn_wait,
            shards: Default::default(),
        }
    }

    fn lock(&self, hash: u64) -> std::sync::MutexGuard<'_, Table> {
        self.shards[hash as usize % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Hashes in flight, and reads waiting in batches not started: `/metrics`.
    pub fn sample(&self) -> (usize, usize) {
        self.shards.iter().fold((0, 0), |(n, w), s| {
            let t = s.lock().unwrap_or_else(|p| p.into_inner());
            let next = t.values().filter_map(|e| e.next.as_ref());
            let waiting: usize = next.map(|b| 1 + b.members.load(Ordering::Relaxed)).sum();
            (n + t.len(), w + waiting)
        })
    }

    /// A request of `probe` (from the session of `b`) arrives.
    fn enter(&'static self, probe: &Probe<'_>, b: &Bindings) -> Role {
        let mut t = self.lock(probe.hash);
        match t.get_mut(&probe.hash) {
            None => {
                t.insert(probe.hash, Entry { next: None });
                Role::Lead(Turn {
                    table: self,
                    hash: probe.hash,
                    batch: None,
                    is_published: false,
                })
            }
            Some(Entry { next: Some(batch) }) => {
                if !batch.key.is_of(probe, b)
                    || batch.members.load(Ordering::Relaxed) >= self.max_members
                {
                    return Role::Alone;
                }
                batch.members.fetch_add(1, Ordering::Relaxed);
                Role::Wait(batch.phase.subscribe())
            }
            Some(_) if !probe.is_shareable() => Role::Unshared,
            Some(e) => {
                let (phase, _) = watch::channel(Phase::Forming);
                let batch = Arc::new(Batch {
                    key: probe.key(b),
                    phase,
                    members: AtomicUsize::new(0),
                    is_started: AtomicBool::new(false),
                    is_leader_gone: AtomicBool::new(false),
                });
                e.next = Some(batch.clone());
                let rx = batch.phase.subscribe();
                Role::Next(
                    Turn {
                        table: self,
                        hash: probe.hash,
                        batch: Some(batch),
                        is_published: false,
                    },
                    rx,
                )
            }
        }
    }

    /// Start `turn`'s batch before the execution in flight ends
    /// (`turn_wait`): it leaves the key's next place, so no read
    /// joins it once it starts; its end calls `finish` like any other's
    /// (which at worst starts a later batch early: more executions, never
    /// an answer from before a read arrived).
    fn detach(&self, turn: &Turn) {
        let Some(b) = &turn.batch else {
            return;
        };
        let mut t = self.lock(turn.hash);
        if b.is_started.load(Ordering::Relaxed) {
            return;
        }
        if let Some(e) = t.get_mut(&turn.hash) {
            if e.next.as_ref().is_some_and(|n| Arc::ptr_eq(n, b)) {
                e.next = None;
            }
        }
        b.is_started.store(true, Ordering::Relaxed);
    }

    /// The execution in flight for `hash` ended: its next batch starts, or
    /// the hash has nothing in flight.
    fn finish(&self, hash: u64) {
        let mut t = self.lock(hash);
        let Some(e) = t.get_mut(&hash) else {
            return;
        };
        match e.next.take() {
            Some(b) if !b.is_leader_gone.load(Ordering::Relaxed) => {
                b.is_started.store(true, Ordering::Relaxed);
                b.phase.send_replace(Phase::Go);
            }
            Some(b) => {
                b.phase.send_replace(Phase::Alone);
                t.remove(&hash);
            }
            None => {
                t.remove(&hash);
            }
        }
    }
}

/// A request's part in a key's executions.
enum Role {
    /// Nothing in flight: run now (nobody can join a running execution).
    Lead(Turn),
    /// Lead the next batch once the execution in flight ends.
    Next(Turn, watch::Receiver<Phase>),
    /// A member of the next batch.
    Wait(watch::Receiver<Phase>),
    /// The next batch is full, or of another key of the same hash: run on
    /// its own.
    Alone,
    /// An execution is in flight and this read may not be shared
    /// ([`Probe::is_shareable`]): run on its own, not counted as a read
    /// that could have shared.
    Unshared,
}

/// A leader's turn: dropped (whatever happened to the session), it tells
/// its members to run on their own unless it published an answer, and
/// hands the in-flight state on.
struct Turn {
    table: &'static Coalescer,
    hash: u64,
    batch: Option<Arc<Batch>>,
    is_published: bool,
}

impl Turn {
    fn publish(&mut self, phase: Phase) {
        if let Some(b) = &self.batch {
            b.phase.send_replace(phase);
        }
        self.is_published = true;
    }

    fn members(&self) -> usize {
        self.batch
            .as_ref()
            .map_or(0, |b| b.members.load(Ordering::Relaxed))
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(b) = &self.batch {
            if !self.is_published {
                b.phase.send_replace(Phase::Alone);
            }
            let t = self.table.lock(self.hash);
            if !b.is_started.load(Ordering::Relaxed) {
                // Left before its turn: the execution in flight hands the
                // key on (`finish`) and its members run on their own.
                b.is_leader_gone.store(true, Ordering::Relaxed);
                return;
            }
            drop(t);
        }
        self.table.finish(self.hash);
    }
}

/// How a wait ended.
enum Waited {
    Phase(Phase),
    /// KILL QUERY or KILL CONNECTION of the waiting session.
    Interrupted,
}

/// Wait until `rx` leaves `Forming` (and `Go`, unless `is_leader`), or the
/// session is killed.
async fn wait(
    rx: &mut watch::Receiver<Phase>,
    handle: &crate::runtime::SessionHandle,
    is_leader: bool,
) -> Waited {
    loop {
        let phase = rx.borrow_and_update().clone();
        match phase {
            Phase::Forming => {}
            Phase::Go if !is_leader => {}
            done => return Waited::Phase(done),
        }
        if handle.is_killed() || handle.take_interrupt() {
            return Waited::Interrupted;
        }
        tokio::select! {
            r = rx.changed() => {
                if r.is_err() {
                    // The batch is gone without a word: run alone.
                    return Waited::Phase(Phase::Alone);
                }
            }
            _ = handle.woken() => {}
        }
    }
}

/// What a coalesced statement runs.
pub enum Work<'p> {
    /// A routed plan (`Exec::run`).
    Plan(Plan),
    /// The text as it is on one backend (`Exec::execute_on_backend`).
    Backend(BackendId, &'p [u8]),
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    async fn run_work(&mut self, work: Work<'_>, effects: Effects<'_>) -> Result<(), ProxyError> {
        match work {
            Work::Plan(plan) => self.run(plan, effects).await,
            Work::Backend(backend, payload) => {
                self.execute_on_backend(backend, payload, Expect::Query, effects)
                    .await
            }
        }
    }

    /// Run `work` holding its answer (up to [`MAX_ANSWER_BYTES`]): the
    /// answer, when it may be shared or stored (no error of any kind).
    async fn run_held(
        &mut self,
        work: Work<'_>,
        effects: Effects<'_>,
    ) -> (Result<(), ProxyError>, Option<Arc<Answer>>) {
        self.client.hold(MAX_ANSWER_BYTES);
        let r = self.run_work(work, effects).await;
        let held = self.client.take_held();
        let answer = match held {
            Some((bytes, next_seq))
                if r.is_ok() && self.scratch.note.error == 0 && !self.scratch.gathered.missed =>
            {
                Some(Arc::new(Answer {
                    bytes,
                    next_seq,
                    note: self.scratch.note,
                    gathered: self.scratch.gathered.clone(),
                }))
            }
            _ => None,
        };
        (r, answer)
    }

    /// Run a result cache miss and store its answer (`exec/cache.rs`).
    async fn run_stored(
        &mut self,
        work: Work<'_>,
        effects: Effects<'_>,
        (cache, pending): (Arc<ResultCache>, Pending),
    ) -> Result<(), ProxyError> {
        let (r, answer) = self.run_held(work, effects).await;
        if let Some(answer) = answer {
            cache.store(pending, answer);
        }
        if r.is_ok() {
            self.client
                .flush()
                .await
                .map_err(|_| ProxyError::ClientGone)?;
        }
        r
    }

    /// Write an answer another execution gave (coalescing) or the result
    /// cache kept, as if this session had run the statement.
    async fn send_shared(&mut self, answer: &Answer, is_cached: bool) -> Result<(), ProxyError> {
        let digest = self.scratch.note.digest;
        self.scratch.note = StatementNote {
            digest,
            is_coalesced: !is_cached,
            is_cached,
            is_cache_miss: false,
            is_invalidated: false,
            ..answer.note
        };
        self.scratch.gathered = answer.gathered.clone();
        self.client
            .send_framed(&answer.bytes, answer.next_seq)
            .await
            .map_err(|_| ProxyError::ClientGone)
    }

    /// Run `work`, whose key `probe` tells, sharing its execution with
    /// identical requests (see the module's comment).
    pub async fn run_coalesced(
        &mut self,
        probe: Probe<'_>,
        work: Work<'_>,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        if !self.client.is_plain_reply() {
            return self.run_work(work, effects).await;
        }
        // The result cache (`exec/cache.rs`), on a proxy with one and rules.
        let mut pending = None;
        if let Some(cache) = &self.b.reads.cache {
            if cache.has_rules() || self.b.ctx.partitioning.with_dictionary(|d| d.has_cached()) {
                if !probe.is_shareable() {
                    return self.run_work(work, effects).await;
                }
                let (cache, ctx) = (cache.clone(), self.b.ctx.clone());
                let key = Arc::new(probe.key(self.b));
                let db = self.b.state.db.clone();
                let digest = self.scratch.note.digest;
                match cache
                    .lookup(&ctx, self.b.worker, &key, None, db.as_deref(), digest)
                    .await
                {
                    Ok(Lookup::Hit(answer)) => return self.send_shared(&answer, true).await,
                    Ok(Lookup::Miss(p)) => {
                        p.note(&mut self.scratch.note);
                        pending = Some((cache, p));
                    }
                    Ok(Lookup::Invalidated) => self.scratch.note.is_invalidated = true,
                    Ok(Lookup::Not) => {}
                    // The versions could not be read: run as uncached.
                    Err(e) => tracing::debug!(error = %e, "result cache lookup failed"),
                }
            }
        }
        // A read sent as it is to one backend may go on a pipelined lane
        // (`pipeline.rs`), whichever role it takes below.
        self.is_pipelined = matches!(work, Work::Backend(..))
            && self.b.ctx.config.proxy.pipeline_lanes > 0
            && probe.is_shareable();
        let worker = self.b.worker;
        let table = self.b.reads.coalescer;
        self.b.handle.take_interrupt();
        match table.enter(&probe, self.b) {
            Role::Unshared => self.run_work(work, effects).await,
            Role::Alone => {
                self.b.ctx.metrics.worker(worker).coalesce_alone();
                match pending {
                    Some(p) => self.run_stored(work, effects, p).await,
                    None => self.run_work(work, effects).await,
                }
            }
            Role::Lead(turn) => {
                let r = match pending {
                    Some(p) => self.run_stored(work, effects, p).await,
                    None => self.run_work(work, effects).await,
                };
                drop(turn);
                r
            }
            Role::Next(mut turn, mut rx) => {
                let handle = self.b.handle.clone();
                match tokio::time::timeout(table.turn_wait, wait(&mut rx, &handle, true)).await {
                    Ok(Waited::Interrupted) => return Err(interrupted(&handle)),
                    Ok(Waited::Phase(_)) => {}
                    // The execution in flight is slow to end (a slow
                    // query, or a client slow to read its answer): the
                    // batch starts now, closed to later reads.
                    Err(_) => table.detach(&turn),
                }
                if turn.members() == 0 {
                    let r = match pending {
                        Some(p) => self.run_stored(work, effects, p).await,
                        None => self.run_work(work, effects).await,
                    };
                    drop(turn);
                    return r;
                }
                let (r, answer) = self.run_held(work, effects).await;
                let phase = match answer {
                    Some(answer) => {
                        self.b.ctx.metrics.worker(worker).coalesce_shared();
                        if let Some((cache, p)) = pending {
                            cache.store(p, answer.clone());
                        }
                        Phase::Shared(answer)
                    }
                    None => Phase::Alone,
                };
                turn.publish(phase);
                drop(turn);
                if r.is_ok() {
                    self.client
                        .flush()
                        .await
                        .map_err(|_| ProxyError::ClientGone)?;
                }
                r
            }
            Role::Wait(mut rx) => {
                let handle = self.b.handle.clone();
                match wait(&mut rx, &handle, false).await {
                    Waited::Interrupted => Err(interrupted(&handle)),
                    Waited::Phase(Phase::Shared(answer)) => {
                        self.b.ctx.metrics.worker(worker).coalesced();
                        self.send_shared(&answer, false).await
                    }
                    Waited::Phase(_) => {
                        self.b.ctx.metrics.worker(worker).coalesce_alone();
                        self.run_work(work, effects).await
                    }
                }
            }
        }
    }
}

/// The answer of a session killed while it waited: KILL QUERY is error
/// 1317, as a server's interrupted statement; a killed connection
/// answers nothing more.
fn interrupted(handle: &crate::runtime::SessionHandle) -> ProxyError {
    if handle.is_killed() {
        ProxyError::ClientGone
    } else {
        ProxyError::Interrupted
    }
}
