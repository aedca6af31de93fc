#![allow(clippy::unwrap_used)]
//! Issue 12: partition changes while clients write lose nothing.
//!
//! Writers insert, update and delete rows of an `acct`-shaped table
//! (`id BIGINT, k INT, v BIGINT, note, PRIMARY KEY (id, k)`, partitioned by
//! `MOD(k, 8)`) through one or more `hscale serve` processes, by text and
//! binary protocol, while ADD_PARTITION, MOVE_PARTITION and DROP_PARTITION run through one
//! of them. Every acknowledged operation is recorded in a model; afterwards
//! one call, [`assert_invariants`], checks through every proxy and on the
//! backends themselves that each acknowledged row is where the dictionary
//! says, once, with its acknowledged value, and that nothing else is there.
//!
//! Autocommit statements must never fail because a partition moved: the
//! proxy that meets a fenced (renamed) table reloads the dictionary and
//! retries. So every statement error is a failure here: the legitimate set
//! of errors for autocommit writers during changes is empty. That includes
//! 1213/1205 (deadlock, lock wait timeout) caused by a move: the server rolled
//! the whole statement back, so the proxy may retry it like a 1146. (1412
//! is for statements inside transactions; these writers use none.) An
//! UPDATE or DELETE by key of a row the writer owns that reports other than
//! one affected row is a failure too (a write that went to a stale
//! partition and found nothing).
//!
//! Choices (keys, operations, proxies, pauses) come from a seeded generator;
//! the seed is printed and `HSCALE_ONLINE_SEED=<seed>` replays the choices
//! (the interleaving with the changes stays the scheduler's).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::*;
use mysql_async::prelude::*;
use mysql_async::Conn;

/// The hashing function every test uses: `MOD(8)` on `k`.
const MODULUS: i64 = 8;
/// Keys are drawn from `0..K_SPAN`, so each partition value has 8 keys.
const K_SPAN: i64 = 64;

/// Where a test writes: its own database and table. Each test names its
/// table differently: today's proxy confuses prepared statements on
/// same-named partitioned tables of different databases (see
/// `Exec::prepared_routing`), which is not what these tests are about.
#[derive(Debug, Clone, Copy)]
struct Scene {
    db: &'static str,
    table: &'static str,
}

// ---------------------------------------------------------------------------
// Seeded choices

/// SplitMix64: small, seedable, good enough for schedules.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn fork(&mut self) -> Rng {
        Rng(self.next())
    }
}

/// The seed of a test run: `HSCALE_ONLINE_SEED` or the clock, printed.
fn test_seed(test: &str) -> Rng {
    let seed = std::env::var("HSCALE_ONLINE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("{test}: seed {seed} (replay with HSCALE_ONLINE_SEED={seed})");
    Rng(seed)
}

fn any_key(rng: &mut Rng) -> i64 {
    rng.below(K_SPAN as u64) as i64
}

/// Keys of partition value 3 four times in five.
fn mostly_value_3(rng: &mut Rng) -> i64 {
    if rng.chance(80) {
        3 + MODULUS * rng.below((K_SPAN / MODULUS) as u64) as i64
    } else {
        any_key(rng)
    }
}

// ---------------------------------------------------------------------------
// The model of acknowledged operations

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Acct {
    k: i64,
    v: i64,
}

/// A row's state: present with (k, v), or absent.
type State = Option<Acct>;

fn show(s: &State) -> String {
    match s {
        Some(a) => format!("(k={}, v={})", a.k, a.v),
        None => "absent".into(),
    }
}

/// For every id a writer ever used, the states the checker accepts: one
/// after an acknowledged operation; exactly the two possible ones (before,
/// after) after an operation whose outcome the client does not know. A
/// writer never touches an id again after such an operation.
#[derive(Debug, Default)]
struct Model {
    ids: BTreeMap<i64, Vec<State>>,
}

impl Model {
    fn ack(&mut self, id: i64, s: State) {
        self.ids.insert(id, vec![s]);
    }

    fn unknown(&mut self, id: i64, before: State, after: State) {
        self.ids.insert(id, vec![before, after]);
    }

    /// The smallest and largest number of rows the table may hold.
    fn live_range(&self) -> (i64, i64) {
        let mut lo = 0;
        let mut hi = 0;
        for allowed in self.ids.values() {
            if allowed.iter().all(Option::is_some) {
                lo += 1;
            }
            if allowed.iter().any(Option::is_some) {
                hi += 1;
            }
        }
        (lo, hi)
    }

    fn unknowns(&self) -> usize {
        self.ids.values().filter(|a| a.len() > 1).count()
    }
}

/// What the writers and the admin task saw.
#[derive(Debug, Default)]
struct Outcome {
    model: Model,
    /// Statements that returned an error (the row is then "unknown").
    errors: Vec<String>,
    /// Statements acknowledged with an affected-row count other than 1
    /// (an UPDATE or DELETE by primary key and partition key of a row the
    /// writer inserted and never deleted must change exactly one row).
    anomalies: Vec<String>,
    /// HSCALE commands that failed.
    admin: Vec<String>,
    acked: u64,
    /// Acknowledged operations per proxy port.
    per_proxy: BTreeMap<u16, u64>,
    /// Every operation: id, ms since the test process started, what.
    history: Vec<(i64, u128, String)>,
}

/// Milliseconds since the first call in this test process.
fn now_ms() -> u128 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis()
}

impl Outcome {
    fn merge(&mut self, o: Outcome) {
        self.model.ids.extend(o.model.ids);
        self.errors.extend(o.errors);
        self.history.extend(o.history);
        self.anomalies.extend(o.anomalies);
        self.admin.extend(o.admin);
        self.acked += o.acked;
        for (p, n) in o.per_proxy {
            *self.per_proxy.entry(p).or_default() += n;
        }
    }
}

fn describe(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Server(s) => {
            format!("error {} ({}): {}", s.code, s.state, s.message)
        }
        other => format!("client-side error: {other}"),
    }
}

// ---------------------------------------------------------------------------
// Writers

/// One writer: owns the ids `(w + 1) * 100_000_000 ..`, so its model is
/// exact; each operation goes through a randomly chosen proxy, by text or
/// binary protocol.
struct Writer {
    w: usize,
    scene: Scene,
    ports: Vec<u16>,
    conns: Vec<Option<Conn>>,
    rng: Rng,
    keys: fn(&mut Rng) -> i64,
    next_id: i64,
    live: Vec<(i64, Acct)>,
    out: Outcome,
    /// Acknowledged operations of all writers (progress, for preconditions).
    acked: Arc<AtomicU64>,
    /// Percent of inserts, updates (deletes are the rest).
    mix: (u64, u64),
    /// Percent of operations sent as prepared statements.
    prepared_percent: u64,
}

impl Writer {
    fn new(w: usize, scene: Scene, ports: &[u16], rng: Rng, keys: fn(&mut Rng) -> i64) -> Writer {
        Writer {
            w,
            scene,
            ports: ports.to_vec(),
            conns: ports.iter().map(|_| None).collect(),
            rng,
            keys,
            next_id: (w as i64 + 1) * 100_000_000,
            live: Vec::new(),
            out: Outcome::default(),
            acked: Arc::new(AtomicU64::new(0)),
            mix: (40, 45),
            prepared_percent: 50,
        }
    }

    /// Insert `n` rows through the first proxy before any change runs.
    async fn seed(&mut self, n: usize) {
        let mut c = Conn::new(proxy_opts(self.ports[0], Some(self.scene.db)))
            .await
            .unwrap();
        let mut left = n;
        while left > 0 {
            let batch = left.min(500);
            let mut rows = Vec::with_capacity(batch);
            let mut values = Vec::with_capacity(batch);
            for _ in 0..batch {
                let id = self.next_id;
                self.next_id += 1;
                let k = (self.keys)(&mut self.rng);
                rows.push((id, Acct { k, v: 0 }));
                values.push(format!("({id}, {k}, 0, 'seed {}')", self.w));
            }
            c.query_drop(format!(
                "INSERT INTO {} (id, k, v, note) VALUES {}",
                self.scene.table,
                values.join(", ")
            ))
            .await
            .unwrap();
            assert_eq!(c.affected_rows(), batch as u64);
            for (id, a) in rows {
                self.out.model.ack(id, Some(a));
                self.live.push((id, a));
            }
            left -= batch;
        }
        c.disconnect().await.unwrap();
    }

    async fn run(mut self, stop: Arc<AtomicBool>) -> Outcome {
        while !stop.load(Ordering::Relaxed) {
            let p = self.rng.below(self.ports.len() as u64) as usize;
            let prepared = self.rng.chance(self.prepared_percent);
            let roll = self.rng.below(100);
            if self.live.len() < 20 || roll < self.mix.0 {
                self.insert(p, prepared).await;
            } else if roll < self.mix.0 + self.mix.1 {
                self.update(p, prepared).await;
            } else {
                self.delete(p, prepared).await;
            }
        }
        for c in self.conns.iter_mut() {
            if let Some(c) = c.take() {
                let _ = c.disconnect().await;
            }
        }
        self.out
    }

    /// Run one statement through proxy `p`; the affected rows, or the error.
    async fn exec(
        &mut self,
        p: usize,
        prepared: bool,
        text: String,
        template: String,
        params: mysql_async::Params,
    ) -> Result<u64, String> {
        if self.conns[p].is_none() {
            match Conn::new(proxy_opts(self.ports[p], Some(self.scene.db))).await {
                Ok(c) => self.conns[p] = Some(c),
                Err(e) => return Err(format!("connect: {}", describe(&e))),
            }
        }
        let c = self.conns[p].as_mut().unwrap();
        let r = if prepared {
            c.exec_drop(template.as_str(), params).await
        } else {
            c.query_drop(text).await
        };
        match r {
            Ok(()) => Ok(c.affected_rows()),
            Err(e) => {
                if !matches!(e, mysql_async::Error::Server(_)) {
                    self.conns[p] = None;
                }
                Err(describe(&e))
            }
        }
    }

    /// Record the result of an operation that takes `id` from `before` to
    /// `after`.
    fn settle(
        &mut self,
        what: String,
        p: usize,
        id: i64,
        (before, after): (State, State),
        r: Result<u64, String>,
    ) {
        let port = self.ports[p];
        let what = format!("writer {} via :{port}: {what}", self.w);
        self.out
            .history
            .push((id, now_ms(), format!("{what} -> {r:?}")));
        match r {
            Ok(1) => {
                self.out.model.ack(id, after);
                if let Some(a) = after {
                    self.live.push((id, a));
                }
                self.out.acked += 1;
                *self.out.per_proxy.entry(port).or_default() += 1;
                self.acked.fetch_add(1, Ordering::Relaxed);
            }
            Ok(n) => {
                self.out
                    .anomalies
                    .push(format!("{what}: OK with {n} affected rows, 1 expected"));
                self.out.model.unknown(id, before, after);
            }
            Err(e) => {
                self.out.errors.push(format!("{what}: {e}"));
                self.out.model.unknown(id, before, after);
            }
        }
    }

    fn proto(prepared: bool) -> &'static str {
        if prepared {
            "prepared"
        } else {
            "text"
        }
    }

    async fn insert(&mut self, p: usize, prepared: bool) {
        let id = self.next_id;
        self.next_id += 1;
        let k = (self.keys)(&mut self.rng);
        let note = format!("w{} {id}", self.w);
        let t = self.scene.table;
        let r = self
            .exec(
                p,
                prepared,
                format!("INSERT INTO {t} (id, k, v, note) VALUES ({id}, {k}, 0, '{note}')"),
                format!("INSERT INTO {t} (id, k, v, note) VALUES (?, ?, 0, ?)"),
                (id, k, note).into(),
            )
            .await;
        let what = format!("INSERT id={id} k={k} ({})", Self::proto(prepared));
        self.settle(what, p, id, (None, Some(Acct { k, v: 0 })), r);
    }

    async fn update(&mut self, p: usize, prepared: bool) {
        let i = self.rng.below(self.live.len() as u64) as usize;
        let (id, a) = self.live.swap_remove(i);
        let t = self.scene.table;
        let r = self
            .exec(
                p,
                prepared,
                format!("UPDATE {t} SET v = v + 1 WHERE id = {id} AND k = {}", a.k),
                format!("UPDATE {t} SET v = v + 1 WHERE id = ? AND k = ?"),
                (id, a.k).into(),
            )
            .await;
        let what = format!(
            "UPDATE id={id} k={} v={}->{} ({})",
            a.k,
            a.v,
            a.v + 1,
            Self::proto(prepared)
        );
        let after = Acct { k: a.k, v: a.v + 1 };
        self.settle(what, p, id, (Some(a), Some(after)), r);
    }

    async fn delete(&mut self, p: usize, prepared: bool) {
        let i = self.rng.below(self.live.len() as u64) as usize;
        let (id, a) = self.live.swap_remove(i);
        let t = self.scene.table;
        let r = self
            .exec(
                p,
                prepared,
                format!("DELETE FROM {t} WHERE id = {id} AND k = {}", a.k),
                format!("DELETE FROM {t} WHERE id = ? AND k = ?"),
                (id, a.k).into(),
            )
            .await;
        let what = format!("DELETE id={id} k={} ({})", a.k, Self::proto(prepared));
        self.settle(what, p, id, (Some(a), None), r);
    }
}

/// `n` writers over `ports`, each seeded with `seed_rows` rows.
async fn writers(
    n: usize,
    scene: Scene,
    ports: &[u16],
    rng: &mut Rng,
    keys: fn(&mut Rng) -> i64,
    seed_rows: usize,
    mix: (u64, u64),
) -> (Vec<Writer>, Arc<AtomicU64>) {
    let acked = Arc::new(AtomicU64::new(0));
    let mut ws = Vec::new();
    for w in 0..n {
        // Seed through each proxy in turn; writers then use all of them.
        let mut order = ports.to_vec();
        order.rotate_left(w % ports.len());
        let mut wr = Writer::new(w, scene, &order, rng.fork(), keys);
        wr.acked = acked.clone();
        wr.mix = mix;
        wr.seed(seed_rows).await;
        ws.push(wr);
    }
    (ws, acked)
}

fn spawn_writers(ws: Vec<Writer>, stop: &Arc<AtomicBool>) -> Vec<tokio::task::JoinHandle<Outcome>> {
    ws.into_iter()
        .map(|w| tokio::spawn(w.run(stop.clone())))
        .collect()
}

async fn join_writers(hs: Vec<tokio::task::JoinHandle<Outcome>>) -> Outcome {
    let mut out = Outcome::default();
    for h in hs {
        out.merge(h.await.unwrap());
    }
    out
}

// ---------------------------------------------------------------------------
// Partition changes

#[derive(Debug, Clone, Copy)]
enum Change {
    /// ADD_PARTITION(partition, value, backend index)
    Add(&'static str, &'static str, usize),
    /// DROP_PARTITION(partition)
    Drop(&'static str),
    /// MOVE_PARTITION(partition, backend index)
    Move(&'static str, usize),
}

impl Change {
    fn sql(&self, s: Scene) -> String {
        let (db, t) = (s.db, s.table);
        match self {
            Change::Add(p, v, b) => {
                format!("HSCALE ADD_PARTITION('{db}.{t}', '{p}', '{v}', 'shard{b}')")
            }
            Change::Drop(p) => format!("HSCALE DROP_PARTITION('{db}.{t}', '{p}')"),
            Change::Move(p, b) => {
                format!("HSCALE MOVE_PARTITION('{db}.{t}', '{p}', 'shard{b}')")
            }
        }
    }
}

/// Run `changes` one at a time through the proxy on `port`, pausing
/// `pause_ms` (a range) before each; failures are returned, not panicked on,
/// so the invariants are still checked and reported.
async fn run_changes(
    port: u16,
    scene: Scene,
    changes: Vec<Change>,
    mut rng: Rng,
    pause_ms: (u64, u64),
) -> Vec<String> {
    let mut c = Conn::new(proxy_opts(port, Some(scene.db))).await.unwrap();
    let mut failed = Vec::new();
    for ch in changes {
        let pause = pause_ms.0 + rng.below(pause_ms.1 - pause_ms.0 + 1);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        let sql = ch.sql(scene);
        let t = Instant::now();
        let r = c.query_drop(&sql).await;
        let ms = t.elapsed().as_millis();
        match r {
            Ok(()) => eprintln!("  {sql}: {ms} ms, done at {} ms", now_ms()),
            Err(e) => {
                eprintln!("  {sql}: FAILED after {ms} ms: {}", describe(&e));
                failed.push(format!("{sql}: {}", describe(&e)));
                if !matches!(e, mysql_async::Error::Server(_)) {
                    c = Conn::new(proxy_opts(port, Some(scene.db))).await.unwrap();
                }
            }
        }
    }
    let _ = c.disconnect().await;
    failed
}

// ---------------------------------------------------------------------------
// Set-up

/// The scene's table, partitioned by MOD(k, 8) with its default partition
/// `<table>_default` on shard0, set up through the shared cluster's proxy.
async fn setup_acct(s: Scene) {
    let (db, t) = (s.db, s.table);
    let mut c = proxy_conn(None).await;
    c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
    c.query_drop(format!(
        "CREATE TABLE {db}.{t} (id BIGINT NOT NULL, k INT NOT NULL, \
         v BIGINT NOT NULL, note VARCHAR(40), PRIMARY KEY (id, k))"
    ))
    .await
    .unwrap();
    c.query_drop(format!(
        "HSCALE SETUP_TABLE('{db}.{t}', 'k', '{t}_default', 'shard0', 'MOD({MODULUS})')"
    ))
    .await
    .unwrap();
    c.disconnect().await.unwrap();
}

/// Run the admin command `sql` through the proxy at `port`, in `db`, on a
/// task of its own (its answer is awaited after the test acted on the
/// change it starts).
fn spawn_admin(
    port: u16,
    db: &'static str,
    sql: String,
) -> tokio::task::JoinHandle<Result<(), mysql_async::Error>> {
    tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some(db))).await.unwrap();
        c.query_drop(sql).await
    })
}

/// A proxy that runs partition changes, splitting or rebuilding tables at
/// any size (`is_split`: `[proxy] change_delete_max_rows = 0`) and pausing
/// where `env` says.
fn change_owner(is_split: bool, env: &[(&str, &str)]) -> ProxyProcess {
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    if is_split {
        config.proxy.change_delete_max_rows = 0;
    }
    ProxyProcess::start_with_env(config, env)
}

/// An `hscale serve` process on the shared cluster's config.
fn serve(reload_interval_ms: u64) -> ProxyProcess {
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = reload_interval_ms;
    ProxyProcess::start(config)
}

/// Toggle auto-partitioning of a table of its own through a proxy of its
/// own until `stop`: every toggle commits a new dictionary version. Returns
/// how many went through.
async fn churn_dictionary(stop: &Arc<AtomicBool>) -> tokio::task::JoinHandle<u32> {
    churn_dictionary_of("online_auto_churn", stop).await
}

/// [`churn_dictionary`] on a table of database `db`.
async fn churn_dictionary_of(
    db: &'static str,
    stop: &Arc<AtomicBool>,
) -> tokio::task::JoinHandle<u32> {
    let t = "churn";
    setup_acct(Scene { db, table: t }).await;
    let stop = stop.clone();
    tokio::spawn(async move {
        let proxy = serve(300);
        let mut c = Conn::new(proxy_opts(proxy.port, Some(db))).await.unwrap();
        let mut done = 0u32;
        while !stop.load(Ordering::Relaxed) {
            let rule = if done.is_multiple_of(2) {
                "ROUND_ROBIN"
            } else {
                "OFF"
            };
            if c.query_drop(format!("HSCALE AUTO_PARTITION('{db}.{t}', '{rule}')"))
                .await
                .is_ok()
            {
                done += 1;
            }
        }
        c.disconnect().await.unwrap();
        done
    })
}

#[allow(unsafe_code)]
fn signal(p: &ProxyProcess, sig: libc::c_int) {
    // SAFETY: kill(2) on our own child's pid with a plain signal number.
    let rc = unsafe { libc::kill(p.child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({}, {sig})", p.child.id());
}

// ---------------------------------------------------------------------------
// The invariant checker

/// What every proxy and backend hold against the model ([`assert_invariants`]).
#[path = "online/check.rs"]
mod check;
use check::*;

// ---------------------------------------------------------------------------
// The tests

/// Writers through one or three proxies while partitions change.
#[path = "online/changes.rs"]
mod changes;

/// Two proxies on one table; an owner killed before or in its cutover.
#[path = "online/owners.rs"]
mod owners;

/// Column types, a transaction meeting a move (1412), a cancel, a damaged copy.
#[path = "online/exact.rs"]
mod exact;

/// Auto-partitioning races, kept retired tables, a prepared INSERT's partition.
#[path = "online/auto.rs"]
mod auto;

/// `[proxy] change_copy_rows_per_s`.
#[path = "online/copy_pace.rs"]
mod copy_pace;

/// A stopped (SIGSTOP) owner of a change, fenced by a take-over.
#[path = "online/paused_owner.rs"]
mod paused_owner;

/// ALTER, RENAME and DROP of partitioned tables under writers.
#[path = "online/ddl.rs"]
mod ddl;

/// SETUP_GLOBAL_TABLE under writers.
#[path = "online/global.rs"]
mod global;

/// SETUP_GLOBAL_TABLE and DROP of a global table whose owner is killed or
/// stopped; the proxy's fence variable out of clients' reach.
#[path = "online/global_faults.rs"]
mod global_faults;

/// An in-place SETUP_TABLE whose owner is killed before and after its rename.
#[path = "online/setup_kill.rs"]
mod setup_kill;

/// What a change's replays read on the destination.
#[path = "online/replay_cost.rs"]
mod replay_cost;
