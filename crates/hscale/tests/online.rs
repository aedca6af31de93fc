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
/// `Session::prepared_routing`), which is not what these tests are about.
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

/// An `hscale serve` process on the shared cluster's config.
fn serve(reload_interval_ms: u64) -> ProxyProcess {
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = reload_interval_ms;
    ProxyProcess::start(config)
}

#[allow(unsafe_code)]
fn signal(p: &ProxyProcess, sig: libc::c_int) {
    // SAFETY: kill(2) on our own child's pid with a plain signal number.
    let rc = unsafe { libc::kill(p.child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({}, {sig})", p.child.id());
}

// ---------------------------------------------------------------------------
// The invariant checker

/// Where a physical table lives.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    backend: usize,
    table: String,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shard{}.{}", self.backend, self.table)
    }
}

/// A dictionary row as column name -> value.
type Columns = BTreeMap<String, String>;

/// The physical table of a partition as the dictionary names it. Today the
/// proxy derives it as `<table>_<partition name>`
/// (`Partition::physical_table`); if the dictionary comes to store it (a
/// generation in the name, DESIGN-NOTES §2), a `physical_table` column is
/// taken instead. This and [`default_table_of`] are the only places the
/// checker derives physical names: change them here.
fn physical_table_of(table: &str, partition: &Columns) -> String {
    match partition.get("physical_table") {
        Some(t) if !t.is_empty() => t.clone(),
        _ => format!("{table}_{}", partition["partition_name"]),
    }
}

/// The default partition's physical table, from `partitioned_tables`.
fn default_table_of(table: &Columns) -> String {
    table["default_table"].clone()
}

/// Tables in the test database that are not named by the dictionary yet may
/// stay (none today; if retired generations are kept per a retention
/// setting, recognize them here, and only them).
fn may_linger(_table: &str) -> bool {
    false
}

/// The dictionary of one partitioned table, read from the main backend.
#[derive(Debug)]
struct DictView {
    default: Place,
    /// Partition value -> where its rows live.
    by_value: BTreeMap<String, Place>,
    /// Every physical table the dictionary names.
    named: BTreeSet<Place>,
}

impl DictView {
    fn target(&self, k: i64) -> &Place {
        self.by_value
            .get(&k.rem_euclid(MODULUS).to_string())
            .unwrap_or(&self.default)
    }
}

fn columns(r: &mysql_async::Row) -> Columns {
    r.columns_ref()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            // Text for every column (numbers too: the binary protocol
            // sends them as numbers).
            let v = match r.as_ref(i) {
                Some(mysql_async::Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
                Some(mysql_async::Value::NULL) | None => String::new(),
                Some(other) => other.as_sql(true),
            };
            (c.name_str().to_string(), v)
        })
        .collect()
}

async fn read_dictionary(db: &str, table: &str) -> DictView {
    let names: Vec<String> = cluster_config()
        .backends
        .iter()
        .map(|b| b.name.clone())
        .collect();
    let index = |name: &str| {
        names
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("the dictionary names unknown backend {name:?}"))
    };
    let mut c = backend_conn(0, None).await;
    let t: Vec<mysql_async::Row> = c
        .exec(
            "SELECT * FROM hscale.partitioned_tables WHERE db = ? AND tbl = ?",
            (db, table),
        )
        .await
        .unwrap();
    assert_eq!(t.len(), 1, "{db}.{table} is not in the dictionary");
    let t = columns(&t[0]);
    let default = Place {
        backend: index(&t["default_backend"]),
        table: default_table_of(&t),
    };
    let parts: Vec<mysql_async::Row> = c
        .exec(
            "SELECT * FROM hscale.partitions WHERE db = ? AND tbl = ?",
            (db, table),
        )
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    let mut named = BTreeSet::from([default.clone()]);
    let mut by_value = BTreeMap::new();
    for p in &parts {
        let p = columns(p);
        let place = Place {
            backend: index(&p["backend"]),
            table: physical_table_of(table, &p),
        };
        named.insert(place.clone());
        by_value.insert(p["partition_value"].clone(), place);
    }
    DictView {
        default,
        by_value,
        named,
    }
}

/// Violations by category, each with its examples.
#[derive(Debug, Default)]
struct Report {
    violations: BTreeMap<String, Vec<String>>,
    facts: Vec<String>,
}

impl Report {
    fn add(&mut self, category: impl Into<String>, example: String) {
        self.violations
            .entry(category.into())
            .or_default()
            .push(example);
    }

    fn summary(&self) -> String {
        let mut s = String::new();
        for f in &self.facts {
            s.push_str(&format!("  {f}\n"));
        }
        if self.violations.is_empty() {
            s.push_str("  no violations\n");
        }
        for (cat, ex) in &self.violations {
            s.push_str(&format!("  {cat}: {}\n", ex.len()));
            for e in ex.iter().take(6) {
                s.push_str(&format!("      {e}\n"));
            }
            if ex.len() > 6 {
                s.push_str(&format!("      ... and {} more\n", ex.len() - 6));
            }
        }
        s
    }
}

/// Compare rows found somewhere (id -> every copy found) with the model.
fn compare(place: &str, found: &BTreeMap<i64, Vec<Acct>>, model: &Model, rep: &mut Report) {
    for (id, copies) in found {
        if copies.len() > 1 {
            rep.add(
                format!("{place}: row found twice"),
                format!("id {id}: {copies:?}"),
            );
        }
        if !model.ids.contains_key(id) {
            rep.add(
                format!("{place}: row no writer wrote"),
                format!("id {id}: {copies:?}"),
            );
        }
    }
    for (id, allowed) in &model.ids {
        let got: State = found.get(id).map(|c| c[0]);
        if allowed.contains(&got) {
            continue;
        }
        let want = allowed.iter().map(show).collect::<Vec<_>>().join(" or ");
        let cat = if got.is_none() && allowed.iter().all(Option::is_some) {
            "acknowledged row missing (lost)"
        } else if got.is_some() && allowed.iter().all(Option::is_none) {
            "acknowledged delete undone (row present)"
        } else {
            "wrong value (acknowledged update lost or applied twice)"
        };
        rep.add(
            format!("{place}: {cat}"),
            format!("id {id}: found {}, expected {want}", show(&got)),
        );
    }
}

/// Through one proxy: every key's rows read by key (routed to the one
/// partition the proxy names for it), a full scan, COUNT(*), and point
/// lookups by id and key (prepared).
async fn check_through_proxy(
    scene: Scene,
    port: u16,
    model: &Model,
    rng: &mut Rng,
    rep: &mut Report,
) {
    let t = scene.table;
    let place = format!("proxy :{port}");
    let mut c = match Conn::new(proxy_opts(port, Some(scene.db))).await {
        Ok(c) => c,
        Err(e) => {
            rep.add(format!("{place}: cannot connect"), describe(&e));
            return;
        }
    };
    let mut by_key: BTreeMap<i64, Vec<Acct>> = BTreeMap::new();
    for k in 0..K_SPAN {
        let sql = format!("SELECT id, v FROM {t} WHERE k = {k}");
        match c.query::<(i64, i64), _>(&sql).await {
            Ok(rows) => {
                for (id, v) in rows {
                    by_key.entry(id).or_default().push(Acct { k, v });
                }
            }
            Err(e) => rep.add(
                format!("{place}: read failed"),
                format!("{sql}: {}", describe(&e)),
            ),
        }
    }
    compare(&format!("{place} by key"), &by_key, model, rep);

    let sql = format!("SELECT id, k, v FROM {t}");
    match c.query::<(i64, i64, i64), _>(&sql).await {
        Ok(rows) => {
            let mut scan: BTreeMap<i64, Vec<Acct>> = BTreeMap::new();
            for (id, k, v) in rows {
                scan.entry(id).or_default().push(Acct { k, v });
            }
            compare(&format!("{place} full scan"), &scan, model, rep);
        }
        Err(e) => rep.add(
            format!("{place}: read failed"),
            format!("{sql}: {}", describe(&e)),
        ),
    }

    let (lo, hi) = model.live_range();
    match c
        .query_first::<i64, _>(format!("SELECT COUNT(*) FROM {t}"))
        .await
    {
        Ok(Some(n)) if (lo..=hi).contains(&n) => {}
        Ok(n) => rep.add(
            format!("{place}: COUNT(*) outside the model"),
            format!("COUNT(*) = {n:?}, model allows {lo}..={hi}"),
        ),
        Err(e) => rep.add(
            format!("{place}: read failed"),
            format!("COUNT(*): {}", describe(&e)),
        ),
    }

    // Point lookups on the planned/cached path, for a sample of ids.
    let ids: Vec<(&i64, &Vec<State>)> = model.ids.iter().collect();
    for _ in 0..ids.len().min(150) {
        let (id, allowed) = ids[rng.below(ids.len() as u64) as usize];
        let Some(k) = allowed.iter().flatten().map(|a| a.k).next() else {
            continue;
        };
        let r = c
            .exec_first::<(i64, i64), _, _>(
                format!("SELECT k, v FROM {t} WHERE id = ? AND k = ?"),
                (id, k),
            )
            .await;
        match r {
            Ok(got) => {
                let got = got.map(|(k, v)| Acct { k, v });
                if !allowed.contains(&got) {
                    let want = allowed.iter().map(show).collect::<Vec<_>>().join(" or ");
                    rep.add(
                        format!("{place} point lookup: wrong answer"),
                        format!("id {id} k {k}: found {}, expected {want}", show(&got)),
                    );
                }
            }
            Err(e) => rep.add(
                format!("{place}: read failed"),
                format!("point lookup id {id}: {}", describe(&e)),
            ),
        }
    }
    let _ = c.disconnect().await;
}

/// On the backends themselves: the database holds exactly the tables the
/// dictionary names, each row sits in exactly one of them, the one the
/// dictionary names for MOD(k, 8), with the model's value.
async fn check_backends(scene: Scene, model: &Model, rep: &mut Report) {
    let db = scene.db;
    let dict = read_dictionary(db, scene.table).await;
    rep.facts.push(format!(
        "dictionary: default {}, values {}",
        dict.default,
        dict.by_value
            .iter()
            .map(|(v, p)| format!("{v}->{p}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let backends = cluster_config().backends.len();
    let mut present = BTreeSet::new();
    for b in 0..backends {
        let mut c = backend_conn(b, None).await;
        let tables: Vec<String> = c
            .exec(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
                (db,),
            )
            .await
            .unwrap();
        c.disconnect().await.unwrap();
        for t in tables {
            present.insert(Place {
                backend: b,
                table: t,
            });
        }
    }
    for p in dict.named.difference(&present) {
        rep.add(
            "backends: the dictionary names a table that does not exist",
            p.to_string(),
        );
    }
    // Every row of every table in the database, named or not.
    let mut at: BTreeMap<i64, Vec<(Place, Acct)>> = BTreeMap::new();
    for p in &present {
        let mut c = backend_conn(p.backend, Some(db)).await;
        let rows = c
            .query::<(i64, i64, i64), _>(format!("SELECT id, k, v FROM `{}`", p.table))
            .await;
        c.disconnect().await.unwrap();
        let rows = match rows {
            Ok(rows) => rows,
            Err(e) => {
                rep.add(
                    "backends: unreadable table",
                    format!("{p}: {}", describe(&e)),
                );
                Vec::new()
            }
        };
        if !dict.named.contains(p) && !may_linger(&p.table) {
            rep.add(
                "backends: table the dictionary does not name (leftover)",
                format!("{p} with {} rows", rows.len()),
            );
        }
        for (id, k, v) in rows {
            at.entry(id).or_default().push((p.clone(), Acct { k, v }));
        }
    }
    let mut routed: BTreeMap<i64, Vec<Acct>> = BTreeMap::new();
    let mut unnamed = 0;
    let mut misplaced = 0;
    for (id, copies) in &at {
        if copies.len() > 1 {
            let list = copies
                .iter()
                .map(|(p, a)| format!("{p} {}", show(&Some(*a))))
                .collect::<Vec<_>>()
                .join(", ");
            rep.add(
                "backends: row in more than one physical table",
                format!("id {id}: {list}"),
            );
        }
        for (p, a) in copies {
            let want = dict.target(a.k);
            if !dict.named.contains(p) {
                unnamed += 1;
                rep.add(
                    "backends: row in a table the dictionary does not name",
                    format!("id {id} k {} in {p}; the dictionary names {want}", a.k),
                );
            } else if p != want {
                misplaced += 1;
                rep.add(
                    "backends: row in the wrong partition",
                    format!(
                        "id {id} k {} (value {}) in {p}; the dictionary names {want}",
                        a.k,
                        a.k.rem_euclid(MODULUS)
                    ),
                );
            } else {
                routed.entry(*id).or_default().push(*a);
            }
        }
    }
    rep.facts.push(format!(
        "backends: {} distinct ids stored, {unnamed} copies in unnamed tables, {misplaced} in the wrong partition",
        at.len()
    ));
    compare(
        "backends (rows where the dictionary routes them)",
        &routed,
        model,
        rep,
    );
}

/// The one call: writers' errors and anomalies, failed admin commands, the
/// invariants through every proxy in `proxies` and on the backends. Prints
/// the numbers, then fails with them if anything is wrong.
async fn assert_invariants(test: &str, scene: Scene, proxies: &[u16], out: &Outcome) {
    let mut rep = Report::default();
    let (lo, hi) = out.model.live_range();
    rep.facts.push(format!(
        "{} acknowledged operations {:?} (by proxy port), {} ids, live rows {lo}..={hi}, {} unknown after errors",
        out.acked,
        out.per_proxy,
        out.model.ids.len(),
        out.model.unknowns()
    ));
    // Every statement error, each with its code, and a tally by code.
    let mut by_code: BTreeMap<String, usize> = BTreeMap::new();
    for e in &out.errors {
        eprintln!("{test}: {e}");
        let code = e
            .split_once(": error ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .unwrap_or("client-side");
        *by_code.entry(code.to_string()).or_default() += 1;
    }
    if !by_code.is_empty() {
        rep.facts
            .push(format!("statement errors by code: {by_code:?}"));
    }
    for e in &out.errors {
        rep.add(
            "writers: autocommit statement failed (must be retried by the proxy)",
            e.clone(),
        );
    }
    for e in &out.anomalies {
        rep.add(
            "writers: acknowledged with the wrong affected-row count",
            e.clone(),
        );
    }
    for e in &out.admin {
        rep.add("admin: HSCALE command failed", e.clone());
    }
    let mut rng = Rng(out.acked);
    for &port in proxies {
        check_through_proxy(scene, port, &out.model, &mut rng, &mut rep).await;
    }
    check_backends(scene, &out.model, &mut rep).await;
    let summary = rep.summary();
    eprintln!("{test}:\n{summary}");
    // The history of every id a violation names, to place it among the changes.
    for (id, ms, what) in &out.history {
        if summary.contains(&format!("id {id}:")) {
            eprintln!("{test}: history of {id}: at {ms} ms: {what}");
        }
    }
    assert!(
        rep.violations.is_empty(),
        "{test}: {} kinds of violation:\n{summary}",
        rep.violations.len()
    );
}

// ---------------------------------------------------------------------------
// The tests

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

/// Three `hscale serve` processes on one dictionary, six writers each
/// sending every operation through a random proxy, while partitions are
/// added, dropped and added again (same and other backends, a second value
/// into an existing partition, a name reused on another backend) through
/// proxy 0. The other two proxies learn of each change up to a second late.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_through_three_proxies_lose_nothing_while_partitions_change() {
    const TEST: &str = "writers_through_three_proxies";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_three",
        table: "acct",
    };
    setup_acct(scene).await;
    let procs: Vec<ProxyProcess> = (0..3).map(|_| serve(1_000)).collect();
    let ports: Vec<u16> = procs.iter().map(|p| p.port).collect();

    let (ws, _acked) = writers(6, scene, &ports, &mut rng, any_key, 2_000, (40, 45)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let hs = spawn_writers(ws, &stop);
    let changes = vec![
        Change::Add("p1", "1", 1),
        Change::Add("p2", "2", 0),
        Change::Add("p3", "3", 2),
        Change::Add("p4", "4", 1),
        Change::Add("p4", "6", 1),
        Change::Move("p1", 2),
        Change::Drop("p2"),
        Change::Add("p5", "5", 2),
        Change::Move("p4", 0),
        Change::Drop("p3"),
        Change::Drop("p4"),
        Change::Add("p3", "3", 1),
        Change::Add("p2", "2", 2),
        Change::Add("p4", "4", 0),
    ];
    let admin = tokio::spawn(run_changes(
        ports[0],
        scene,
        changes,
        rng.fork(),
        (250, 650),
    ));
    let admin_failures = admin.await.unwrap();
    // Writers keep going for at least 10 s, and 1.5 s after the last change.
    let until =
        (start + Duration::from_secs(10)).max(Instant::now() + Duration::from_millis(1_500));
    tokio::time::sleep_until(until.into()).await;
    stop.store(true, Ordering::Relaxed);
    let mut out = join_writers(hs).await;
    out.admin = admin_failures;
    assert!(
        out.acked > 1_000,
        "writers barely ran: {} operations",
        out.acked
    );
    assert_eq!(
        out.per_proxy.len(),
        3,
        "every proxy carried writes: {:?}",
        out.per_proxy
    );
    assert_invariants(TEST, scene, &ports, &out).await;
}

/// A proxy whose dictionary is an hour stale is frozen (SIGSTOP) while its
/// clients write rows of value 3, which it routes to the default partition;
/// another proxy moves value 3 to shard1; the frozen proxy is woken and its
/// clients go on writing value 3 at once (their in-flight statements
/// complete first). Nothing it acknowledges may land outside the table the
/// dictionary names, and reads through it must see the moved rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_proxy_cannot_write_to_a_moved_partition() {
    const TEST: &str = "a_paused_proxy";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_paused",
        table: "acct_paused",
    };
    setup_acct(scene).await;
    let stale = serve(3_600_000);
    let admin = serve(1_000);

    let (ws, acked) = writers(
        4,
        scene,
        &[stale.port],
        &mut rng,
        mostly_value_3,
        800,
        (50, 35),
    )
    .await;
    // Precondition: the stale proxy routes value 3 to the default partition.
    let mut c = Conn::new(proxy_opts(stale.port, Some(scene.db)))
        .await
        .unwrap();
    let plan: Vec<(String, String, String)> = c
        .query(format!(
            "HSCALE EXPLAIN SELECT id FROM {} WHERE k = 3",
            scene.table
        ))
        .await
        .unwrap();
    assert_eq!(plan[0].0, "shard0", "{plan:?}");
    assert!(plan[0].2.contains("_default"), "{plan:?}");
    c.disconnect().await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let before_stop = acked.load(Ordering::Relaxed);
    assert!(
        before_stop > 0,
        "no write went through the proxy before it was stopped"
    );
    signal(&stale, libc::SIGSTOP);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let mut failures = run_changes(
        admin.port,
        scene,
        vec![Change::Add("p3", "3", 1), Change::Move("p3", 2)],
        rng.fork(),
        (0, 0),
    )
    .await;
    signal(&stale, libc::SIGCONT);
    let woken = acked.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    stop.store(true, Ordering::Relaxed);
    let mut out = join_writers(hs).await;
    let after = out.acked.saturating_sub(woken);
    eprintln!(
        "{TEST}: {before_stop} operations acknowledged before SIGSTOP, {after} after SIGCONT"
    );
    out.admin.append(&mut failures);
    assert!(
        after >= 20,
        "the woken proxy barely ran: {after} operations"
    );
    assert_invariants(TEST, scene, &[stale.port, admin.port], &out).await;
}

/// The simplest failure: one proxy, four writers inserting (and
/// updating, deleting) while ADD_PARTITION moves the default partition's
/// rows of one value after another to other backends (and one to the same
/// backend).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_proxy_add_partition_under_load_loses_nothing() {
    const TEST: &str = "single_proxy_add_partition";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_single",
        table: "acct_single",
    };
    setup_acct(scene).await;
    let proxy = serve(1_000);
    let ports = [proxy.port];
    let (ws, _acked) = writers(4, scene, &ports, &mut rng, any_key, 6_000, (70, 20)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    let failures = run_changes(
        proxy.port,
        scene,
        vec![
            Change::Add("p3", "3", 1),
            Change::Add("p5", "5", 2),
            Change::Add("p6", "6", 0),
            Change::Add("p7", "7", 2),
            Change::Add("p3", "1", 1),
        ],
        rng.fork(),
        (200, 400),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    stop.store(true, Ordering::Relaxed);
    let mut out = join_writers(hs).await;
    out.admin = failures;
    assert!(
        out.acked > 500,
        "writers barely ran: {} operations",
        out.acked
    );
    assert_invariants(TEST, scene, &ports, &out).await;
}

/// The control: the same writers and checker on three proxies with
/// partitions on every backend and no change while they write. This passes
/// on today's code; it shows the failures above are the changes' and not
/// the checker's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_finds_nothing_wrong_without_partition_changes() {
    const TEST: &str = "control_without_changes";
    let info = cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_control",
        table: "acct_control",
    };
    setup_acct(scene).await;
    let failures = run_changes(
        info.proxy_port,
        scene,
        vec![
            Change::Add("p1", "1", 1),
            Change::Add("p2", "2", 2),
            Change::Add("p3", "3", 0),
            Change::Add("p1", "5", 1),
        ],
        rng.fork(),
        (0, 0),
    )
    .await;
    assert!(failures.is_empty(), "{failures:?}");
    let procs: Vec<ProxyProcess> = (0..3).map(|_| serve(1_000)).collect();
    let ports: Vec<u16> = procs.iter().map(|p| p.port).collect();
    let (ws, _acked) = writers(3, scene, &ports, &mut rng, any_key, 1_000, (40, 45)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_writers(hs).await;
    assert!(
        out.acked > 300,
        "writers barely ran: {} operations",
        out.acked
    );
    assert_invariants(TEST, scene, &ports, &out).await;
}

/// Two proxies changing the same table at once: one change runs; another
/// change through a proxy with a short `change_wait_ms` is refused with
/// 1205 naming the running operation, and through one with the default
/// wait runs once the first is done; the same command again reports the
/// first done; SHOW OPERATIONS shows the finished change; the table is
/// intact.
#[tokio::test]
async fn two_proxies_cannot_change_one_table_at_once() {
    cluster(3);
    let scene = Scene {
        db: "online_twice",
        table: "acct_twice",
    };
    setup_acct(scene).await;
    let a = serve(1_000);
    let b = ProxyProcess::start({
        let mut c = cluster_config();
        c.proxy.change_wait_ms = 100;
        c
    });
    let mut ca = Conn::new(proxy_opts(a.port, Some(scene.db))).await.unwrap();
    let mut cb = Conn::new(proxy_opts(b.port, Some(scene.db))).await.unwrap();
    ca.query_drop("HSCALE ADD_PARTITION('online_twice.acct_twice', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    // 50,000 rows of value 1, written on the partition's backend directly.
    let p1 = physical("online_twice.acct_twice", Some("p1")).await;
    let mut direct = backend_conn(1, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {p1} (id, k, v, note) SELECT seq, seq * 8 + 1, 0, 'x' FROM seq_1_to_50000"
        ))
        .await
        .unwrap();
    direct.disconnect().await.unwrap();
    let first = tokio::spawn(async move {
        let r: Result<Vec<mysql_async::Row>, _> = ca
            .query("HSCALE MOVE_PARTITION('online_twice.acct_twice', 'p1', 'shard2')")
            .await;
        (ca, r)
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let refused = cb
        .query_drop("HSCALE ADD_PARTITION('online_twice.acct_twice', 'p2', '2', 'shard1')")
        .await
        .expect_err("a second change of the same table while the first runs");
    assert_eq!(code(&refused), 1205, "{refused}");
    // Through a proxy with the default wait, it waits its turn.
    let w = serve(1_000);
    let waiter = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(w.port, Some("online_twice")))
            .await
            .unwrap();
        let r = c
            .query_drop("HSCALE ADD_PARTITION('online_twice.acct_twice', 'p2', '2', 'shard1')")
            .await;
        let _ = c.disconnect().await;
        drop(w);
        r
    });
    // The same command through a third proxy waits for the running one and
    // reports it done.
    let c3 = serve(1_000);
    let mut cc = Conn::new(proxy_opts(c3.port, Some(scene.db)))
        .await
        .unwrap();
    cc.query_drop("HSCALE MOVE_PARTITION('online_twice.acct_twice', 'p1', 'shard2')")
        .await
        .unwrap();
    assert!(
        cc.info().contains("already done by operation"),
        "{}",
        cc.info()
    );
    assert!(
        first.is_finished(),
        "the twin waited for the running change"
    );
    cc.disconnect().await.unwrap();
    let (mut ca, r) = first.await.unwrap();
    let moved = r.expect("the first change runs");
    let moved: u64 = moved[0].get(0).unwrap();
    assert_eq!(moved, 50_000);
    let refused = refused.to_string();
    assert!(
        refused.contains("is changing online_twice.acct_twice")
            && refused.contains("MOVE_PARTITION"),
        "{refused}"
    );
    let ops: Vec<mysql_async::Row> = cb.query("HSCALE SHOW OPERATIONS").await.unwrap();
    let done: Vec<(String, String, String)> = ops
        .iter()
        .map(|r| (r.get(1).unwrap(), r.get(2).unwrap(), r.get(3).unwrap()))
        .filter(|o: &(String, String, String)| {
            o.0 == "online_twice.acct_twice" && o.1.starts_with("MOVE_PARTITION")
        })
        .collect();
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0].2, "done");
    let n: Option<i64> = ca
        .query_first("SELECT COUNT(*) FROM acct_twice WHERE k MOD 8 = 1")
        .await
        .unwrap();
    assert_eq!(n, Some(50_000));
    let parts = physical_tables("online_twice.acct_twice").await;
    assert_eq!(parts["p1"].0, 2, "p1 moved to shard2: {parts:?}");
    // The waiting change ran once the first was done.
    waiter.await.unwrap().unwrap();
    let parts = physical_tables("online_twice.acct_twice").await;
    assert_eq!(parts["p2"].0, 1, "p2 added on shard1: {parts:?}");
    ca.disconnect().await.unwrap();
    cb.disconnect().await.unwrap();
}

/// The owner of a change is killed (SIGKILL) during its copy: another proxy
/// sees its owner lock free and rolls the change back within seconds
/// (triggers, changelog and the copy's table gone, the journal says
/// 'failed'); the table is as before, and the change can run again.
#[tokio::test]
async fn a_change_whose_owner_dies_before_its_cutover_is_rolled_back() {
    cluster(3);
    let scene = Scene {
        db: "online_owner",
        table: "acct_owner",
    };
    setup_acct(scene).await;
    let owner = serve(1_000);
    let other = serve(200);
    let default = physical("online_owner.acct_owner", None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq * 8 + 1, 0, 'x' FROM seq_1_to_300000"
        ))
        .await
        .unwrap();
    let port = owner.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_owner")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_owner.acct_owner', 'p1', '1', 'shard1')")
            .await
    });
    // Kill the owner once its capture is in place (the copy runs then).
    let triggers =
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'online_owner'";
    let mut seen = false;
    for _ in 0..400 {
        let n: Option<i64> = direct.query_first(triggers).await.unwrap();
        if n.unwrap_or(0) == 3 {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen, "the change installed its capture triggers");
    signal(&owner, libc::SIGKILL);
    assert!(
        change.await.unwrap().is_err(),
        "the killed owner's client got an error"
    );
    // Another proxy rolls it back.
    let mut o = Conn::new(proxy_opts(other.port, Some(scene.db)))
        .await
        .unwrap();
    let mut state = String::new();
    let mut op = 0u64;
    for _ in 0..300 {
        let s: Option<(u64, String)> = direct
            .query_first("SELECT id, state FROM hscale.operations WHERE db = 'online_owner' AND command LIKE 'ADD_PARTITION%' ORDER BY id DESC LIMIT 1")
            .await
            .unwrap();
        (op, state) = s.unwrap_or_default();
        if state == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, "failed", "rolled back within 30 s");
    let n: Option<i64> = direct.query_first(triggers).await.unwrap();
    assert_eq!(n, Some(0), "capture triggers dropped");
    for b in 0..3 {
        let mut c = backend_conn(b, None).await;
        let left: Vec<String> = c
            .query(format!("SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES WHERE (TABLE_SCHEMA = 'hscale' AND TABLE_NAME = 'changes_{op}') OR (TABLE_SCHEMA = 'online_owner' AND TABLE_NAME <> 'acct_owner_default')"))
            .await
            .unwrap();
        assert!(left.is_empty(), "backend {b} keeps {left:?}");
        c.disconnect().await.unwrap();
    }
    // The table is as before, through the surviving proxy, and writable.
    let parts = physical_tables("online_owner.acct_owner").await;
    assert_eq!(parts.len(), 1, "{parts:?}");
    let count: Option<i64> = o
        .query_first("SELECT COUNT(*) FROM acct_owner")
        .await
        .unwrap();
    assert_eq!(count, Some(300_000));
    o.query_drop("INSERT INTO acct_owner (id, k, v, note) VALUES (400001, 9, 0, 'after')")
        .await
        .unwrap();
    // The change runs again, to its end.
    o.query_drop("HSCALE ADD_PARTITION('online_owner.acct_owner', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    let p1 = physical("online_owner.acct_owner", Some("p1")).await;
    let mut b1 = backend_conn(1, Some(scene.db)).await;
    let moved: Option<i64> = b1
        .query_first(format!("SELECT COUNT(*) FROM {p1}"))
        .await
        .unwrap();
    assert_eq!(moved, Some(300_001));
    b1.disconnect().await.unwrap();
    direct.disconnect().await.unwrap();
    o.disconnect().await.unwrap();
}

/// The owner of a change is killed (SIGKILL) in its cutover, after the
/// source was renamed: another proxy finishes the cutover (last replays,
/// moved rows, dictionary, clean-up); reads of the moving keys through it
/// wait for that and then find every row in its new home.
#[tokio::test]
async fn a_change_whose_owner_dies_in_its_cutover_is_finished() {
    cluster(3);
    let scene = Scene {
        db: "online_cut",
        table: "acct_cut",
    };
    setup_acct(scene).await;
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    let owner =
        ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_AFTER_RENAME_MS", "20000")]);
    let other = serve(200);
    let default = physical("online_cut.acct_cut", None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq, 0, 'x' FROM seq_1_to_8000"
        ))
        .await
        .unwrap();
    let port = owner.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_cut")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_cut.acct_cut', 'p3', '3', 'shard2')")
            .await
    });
    // Wait for the rename: the default partition's old name is gone.
    let mut renamed = false;
    for _ in 0..500 {
        let n: Option<i64> = direct
            .query_first(format!("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'online_cut' AND TABLE_NAME = '{default}'"))
            .await
            .unwrap();
        if n == Some(0) {
            renamed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(renamed, "the cutover renamed the default partition");
    signal(&owner, libc::SIGKILL);
    assert!(
        change.await.unwrap().is_err(),
        "the killed owner's client got an error"
    );
    // Through another proxy: the moving keys wait for the take-over, then
    // every row is there (k = 3, 11, 19, ... are the moving keys).
    let mut o = Conn::new(proxy_opts(other.port, Some(scene.db)))
        .await
        .unwrap();
    let moving: Vec<(i64, i64)> = o
        .query("SELECT id, k FROM acct_cut WHERE k = 11")
        .await
        .unwrap();
    assert_eq!(moving, vec![(11, 11)]);
    let n: Option<i64> = o
        .query_first("SELECT COUNT(*) FROM acct_cut")
        .await
        .unwrap();
    assert_eq!(n, Some(8000));
    let state: Option<String> = direct
        .query_first("SELECT state FROM hscale.operations WHERE db = 'online_cut' AND command LIKE 'ADD_PARTITION%' ORDER BY id DESC LIMIT 1")
        .await
        .unwrap();
    assert_eq!(state.as_deref(), Some("done"));
    let parts = physical_tables("online_cut.acct_cut").await;
    let (b, p3) = parts["p3"].clone();
    assert_eq!(b, 2);
    let mut b2 = backend_conn(2, Some(scene.db)).await;
    let n: Option<i64> = b2
        .query_first(format!("SELECT COUNT(*) FROM {p3}"))
        .await
        .unwrap();
    assert_eq!(n, Some(1000), "every row of value 3 in its new home");
    b2.disconnect().await.unwrap();
    let (_, new_default) = parts[""].clone();
    let stayed: Option<i64> = direct
        .query_first(format!(
            "SELECT COUNT(*) FROM {new_default} WHERE k MOD 8 = 3"
        ))
        .await
        .unwrap();
    assert_eq!(stayed, Some(0), "moved rows left the default partition");
    let triggers: Option<i64> = direct
        .query_first(
            "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'online_cut'",
        )
        .await
        .unwrap();
    assert_eq!(triggers, Some(0));
    // The table works through the other proxy.
    o.query_drop("UPDATE acct_cut SET v = v + 1 WHERE id = 11 AND k = 11")
        .await
        .unwrap();
    direct.disconnect().await.unwrap();
    o.disconnect().await.unwrap();
}

/// Every column type survives a move exactly: FLOAT (whose own text loses
/// digits), DOUBLE, DECIMAL, BIT, BLOB, JSON, spatial, zero dates,
/// TIMESTAMP, ENUM, an AUTO_INCREMENT 0 and NULLs, through ADD_PARTITION to
/// another backend and MOVE_PARTITION to a third, compared row by row on
/// the backends.
#[tokio::test]
async fn every_column_type_survives_moves_exactly() {
    cluster(3);
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE online_types").await.unwrap();
    c.query_drop(
        "CREATE TABLE online_types.t (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, \
         f FLOAT NULL, d DOUBLE NULL, dec1 DECIMAL(30,10) NULL, b BIT(12) NULL, bl BLOB NULL, \
         j JSON NULL, dt DATE NULL, ts TIMESTAMP(6) NULL, tm TIME(3) NULL, \
         e ENUM('a','b','c') NULL, g POINT NULL, s VARCHAR(20) CHARACTER SET latin1 NULL)",
    )
    .await
    .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('online_types.t', 'k', 't_default', 'shard0', 'MOD(2)')")
        .await
        .unwrap();
    let default = physical("online_types.t", None).await;
    let mut direct = backend_conn(0, Some("online_types")).await;
    direct
        .query_drop("SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO', time_zone = '+05:30'")
        .await
        .unwrap();
    direct
        .query_drop(format!(
            "INSERT INTO {default} VALUES \
             (0, 1, 1.2345678, 1.2345678901234567, 12345678901234567890.0123456789, b'101010101010', X'00FF27', '{{\"a\": [1, 2.5, null]}}', '0000-00-00', '2024-02-29 23:59:59.123456', '-838:59:59.000', 'b', ST_GeomFromText('POINT(1.5 -2.25)'), X'E9'), \
             (1, 3, 16777217, 0.1, -0.0000000001, b'1', '', '[]', '1999-12-31', '1970-01-01 05:30:01.000001', '00:00:00.001', 'c', NULL, ''), \
             (2, 5, -3.4e38, 1e-300, 0, b'0', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), \
             (3, 7, NULL, NULL, NULL, NULL, X'', 'null', '2000-01-01', '2038-01-19 03:14:07', '12:34:56', 'a', ST_GeomFromText('POINT(0 0)'), 'x')"
        ))
        .await
        .unwrap();
    let digest = "SELECT id, CONCAT_WS('|', k, CAST(f AS DOUBLE), d, dec1, HEX(b), HEX(bl), j, dt, ts, tm, e, HEX(ST_AsBinary(g)), HEX(s), \
                  ISNULL(f), ISNULL(d), ISNULL(dec1), ISNULL(b), ISNULL(bl), ISNULL(j), ISNULL(dt), ISNULL(ts), ISNULL(tm), ISNULL(e), ISNULL(g), ISNULL(s)) FROM ";
    let before: Vec<(i64, String)> = direct
        .query(format!("{digest} {default} ORDER BY id"))
        .await
        .unwrap();
    assert_eq!(before.len(), 4);
    c.query_drop("HSCALE ADD_PARTITION('online_types.t', 'odd', '1', 'shard1')")
        .await
        .unwrap();
    c.query_drop("HSCALE MOVE_PARTITION('online_types.t', 'odd', 'shard2')")
        .await
        .unwrap();
    let odd = physical("online_types.t", Some("odd")).await;
    let mut b2 = backend_conn(2, Some("online_types")).await;
    b2.query_drop("SET SESSION time_zone = '+05:30'")
        .await
        .unwrap();
    let after: Vec<(i64, String)> = b2
        .query(format!("{digest} {odd} ORDER BY id"))
        .await
        .unwrap();
    assert_eq!(
        after, before,
        "every value after ADD_PARTITION and MOVE_PARTITION"
    );
    b2.disconnect().await.unwrap();
    direct.disconnect().await.unwrap();
    c.disconnect().await.unwrap();
}

/// Inside a transaction a statement routed by an older dictionary is not
/// retried: the proxy rolls the whole transaction back and answers 1412,
/// which drivers retry; nothing of the transaction stays, and the retried
/// transaction commits with the new layout.
#[tokio::test]
async fn a_transaction_that_meets_a_moved_partition_is_rolled_back_with_1412() {
    cluster(3);
    let scene = Scene {
        db: "online_txn",
        table: "acct_txn",
    };
    setup_acct(scene).await;
    let stale = serve(3_600_000);
    let mut s = Conn::new(proxy_opts(stale.port, Some(scene.db)))
        .await
        .unwrap();
    s.query_drop("CREATE TABLE side (id INT PRIMARY KEY)")
        .await
        .unwrap();
    s.query_drop("INSERT INTO acct_txn (id, k, v, note) VALUES (1, 3, 0, 'x')")
        .await
        .unwrap();
    // Another proxy moves value 3 to its own partition (on the same backend,
    // so the retried transaction stays on one backend); `stale` does not
    // reload by itself.
    let mut admin = proxy_conn(Some(scene.db)).await;
    admin
        .query_drop("HSCALE ADD_PARTITION('online_txn.acct_txn', 'p3', '3', 'shard0')")
        .await
        .unwrap();
    s.query_drop("BEGIN").await.unwrap();
    s.query_drop("INSERT INTO side VALUES (1)").await.unwrap();
    let e = s
        .query_drop("UPDATE acct_txn SET v = v + 1 WHERE id = 1 AND k = 3")
        .await
        .expect_err("a stale route inside a transaction");
    assert_eq!(code(&e), 1412, "{e}");
    // Nothing of the transaction stays, and the session is out of it.
    let side: Option<i64> = admin
        .query_first("SELECT COUNT(*) FROM side")
        .await
        .unwrap();
    assert_eq!(side, Some(0));
    let v: Option<i64> = s
        .query_first("SELECT v FROM acct_txn WHERE id = 1 AND k = 3")
        .await
        .unwrap();
    assert_eq!(v, Some(0));
    // The retried transaction commits, with the row in its new home.
    s.query_drop("BEGIN").await.unwrap();
    s.query_drop("INSERT INTO side VALUES (1)").await.unwrap();
    s.query_drop("UPDATE acct_txn SET v = v + 1 WHERE id = 1 AND k = 3")
        .await
        .unwrap();
    s.query_drop("COMMIT").await.unwrap();
    let p3 = physical("online_txn.acct_txn", Some("p3")).await;
    let mut b1 = backend_conn(0, Some(scene.db)).await;
    let v: Option<i64> = b1
        .query_first(format!("SELECT v FROM {p3} WHERE id = 1"))
        .await
        .unwrap();
    assert_eq!(v, Some(1));
    let side: Option<i64> = admin
        .query_first("SELECT COUNT(*) FROM side")
        .await
        .unwrap();
    assert_eq!(side, Some(1));
    b1.disconnect().await.unwrap();
    s.disconnect().await.unwrap();
    admin.disconnect().await.unwrap();
}

/// `HSCALE CANCEL_OPERATION`, through another proxy than the change's
/// owner, stops an ADD_PARTITION in its copy while writers go on through
/// both proxies: the change's client gets 1317, the journal says
/// 'cancelled', no trigger, changelog or copy is left on any backend, the
/// dictionary is as before, and every acknowledged write is where it was.
/// A cancel of an operation that ended, or of none, is refused; the change
/// then runs again to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_change_leaves_everything_as_before() {
    const TEST: &str = "cancel_operation";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_cancel",
        table: "acct_cancel",
    };
    setup_acct(scene).await;
    let owner = serve(1_000);
    let other = serve(200);
    let ports = [owner.port, other.port];
    // Bulk rows of value 1 (ids below every writer's) make the copy long
    // enough to be cancelled in; they are removed before the check.
    let default = physical("online_cancel.acct_cancel", None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq * 8 + 1, 0, 'bulk' FROM seq_1_to_300000"
        ))
        .await
        .unwrap();
    let (ws, _acked) = writers(4, scene, &ports, &mut rng, any_key, 2_000, (70, 20)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    let port = owner.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_cancel")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_cancel.acct_cancel', 'p1', '1', 'shard1')")
            .await
    });
    let triggers =
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'online_cancel'";
    let mut seen = false;
    for _ in 0..400 {
        let n: Option<i64> = direct.query_first(triggers).await.unwrap();
        if n.unwrap_or(0) == 3 {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen, "the change installed its capture triggers");
    let op: u64 = direct
        .query_first(
            "SELECT id FROM hscale.operations WHERE db = 'online_cancel' AND active IS NOT NULL",
        )
        .await
        .unwrap()
        .expect("the running operation");
    let mut o = Conn::new(proxy_opts(other.port, Some(scene.db)))
        .await
        .unwrap();
    let t = Instant::now();
    let info = o
        .query_iter(format!("HSCALE CANCEL_OPERATION({op})"))
        .await
        .map(|r| r.info().to_string());
    let ms = t.elapsed().as_millis();
    eprintln!("{TEST}: CANCEL_OPERATION({op}): {info:?} after {ms} ms");
    assert!(info.is_ok(), "cancel answered {info:?}");
    assert!(ms < 10_000, "the cancel took {ms} ms");
    match change.await.unwrap() {
        Err(mysql_async::Error::Server(e)) => assert_eq!(e.code, 1317, "{e:?}"),
        other => panic!("the cancelled change answered {other:?}"),
    }
    let state: Option<String> = direct
        .query_first(format!(
            "SELECT state FROM hscale.operations WHERE id = {op}"
        ))
        .await
        .unwrap();
    assert_eq!(state.as_deref(), Some("cancelled"));
    let n: Option<i64> = direct.query_first(triggers).await.unwrap();
    assert_eq!(n, Some(0), "capture triggers dropped");
    for b in 0..3 {
        let mut c = backend_conn(b, None).await;
        let left: Vec<String> = c
            .query(format!("SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES WHERE (TABLE_SCHEMA = 'hscale' AND TABLE_NAME = 'changes_{op}') OR (TABLE_SCHEMA = 'online_cancel' AND TABLE_NAME <> '{default}')"))
            .await
            .unwrap();
        assert!(left.is_empty(), "backend {b} keeps {left:?}");
        c.disconnect().await.unwrap();
    }
    let parts = physical_tables("online_cancel.acct_cancel").await;
    assert_eq!(parts.len(), 1, "only the default partition: {parts:?}");
    // Writers go on a little after the cancel, then every write is checked.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_writers(hs).await;
    let bulk: Option<i64> = direct
        .query_first(format!("SELECT COUNT(*) FROM {default} WHERE id <= 300000"))
        .await
        .unwrap();
    assert_eq!(
        bulk,
        Some(300_000),
        "every bulk row still in the default partition"
    );
    direct
        .query_drop(format!("DELETE FROM {default} WHERE id <= 300000"))
        .await
        .unwrap();
    assert!(out.acked > 200, "writers barely ran: {}", out.acked);
    assert_invariants(TEST, scene, &ports, &out).await;
    // Nothing to cancel: an ended operation, an unknown one.
    for id in [op, 999_999_999] {
        let r = o.query_drop(format!("HSCALE CANCEL_OPERATION({id})")).await;
        assert!(
            matches!(&r, Err(mysql_async::Error::Server(e)) if e.code == 1210),
            "cancel of {id}: {r:?}"
        );
    }
    // The change runs again, to its end.
    o.query_drop("HSCALE ADD_PARTITION('online_cancel.acct_cancel', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    assert_eq!(physical_tables("online_cancel.acct_cancel").await.len(), 2);
    direct.disconnect().await.unwrap();
    o.disconnect().await.unwrap();
}

/// Verification before the cutover: the copy of an ADD_PARTITION is
/// damaged on the destination while the change pauses after its copy (a
/// row deleted, values changed, NULL made the text 'NULL', a row that is
/// not in the source added), with writers going on. The change finds the
/// ranges that differ and copies them again, so the partition holds exactly
/// the source's rows; the journal counts the ranges. A move of the same
/// partition under the same writers then finds nothing to repair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_copy_is_repaired_before_the_cutover() {
    const TEST: &str = "verify_copy";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_verify",
        table: "acct_verify",
    };
    setup_acct(scene).await;
    let mut config = cluster_config();
    config.proxy.reload_interval_ms = 1_000;
    let proxy =
        ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "3000")]);
    let ports = [proxy.port];
    let default = physical("online_verify.acct_verify", None).await;
    let mut direct = backend_conn(0, Some(scene.db)).await;
    direct
        .query_drop(format!(
            "INSERT INTO {default} (id, k, v, note) SELECT seq, seq * 8 + 1, seq, IF(seq = 8, NULL, 'x') FROM seq_1_to_20000"
        ))
        .await
        .unwrap();
    let bulk = "SELECT id, k, v, note FROM {t} WHERE id <= 30000 ORDER BY id";
    let before: Vec<(i64, i64, i64, Option<String>)> =
        direct.query(bulk.replace("{t}", &default)).await.unwrap();
    let (ws, _acked) = writers(2, scene, &ports, &mut rng, any_key, 1_000, (70, 20)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    let port = proxy.port;
    let change = tokio::spawn(async move {
        let mut c = Conn::new(proxy_opts(port, Some("online_verify")))
            .await
            .unwrap();
        c.query_drop("HSCALE ADD_PARTITION('online_verify.acct_verify', 'p1', '1', 'shard1')")
            .await
    });
    // The copy's table on shard1, once it holds every bulk row.
    let mut b1 = backend_conn(1, None).await;
    let mut copy = None;
    for _ in 0..500 {
        let t: Option<String> = b1
            .query_first("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'online_verify'")
            .await
            .unwrap();
        if let Some(t) = t.map(|t| format!("online_verify.{t}")) {
            let n: Option<i64> = b1
                .query_first(format!("SELECT COUNT(*) FROM {t} WHERE id <= 20000"))
                .await
                .unwrap_or(None);
            if n == Some(20_000) {
                copy = Some(t);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let copy = copy.expect("the copy reached shard1");
    b1.query_drop(format!(
        "DELETE FROM {copy} WHERE id = 5; UPDATE {copy} SET v = v + 100 WHERE id = 6; \
         UPDATE {copy} SET note = NULL WHERE id = 7; UPDATE {copy} SET note = 'NULL' WHERE id = 8; \
         INSERT INTO {copy} (id, k, v, note) VALUES (20001, 1, 0, 'not in the source')"
    ))
    .await
    .unwrap();
    let r = change.await.unwrap();
    assert!(r.is_ok(), "ADD_PARTITION: {r:?}");
    let p1 = physical("online_verify.acct_verify", Some("p1")).await;
    let after: Vec<(i64, i64, i64, Option<String>)> = b1
        .query(bulk.replace("{t}", &format!("online_verify.{p1}")))
        .await
        .unwrap();
    assert!(
        after == before,
        "the partition holds other rows than the source had"
    );
    let journal = "SELECT ranges_verified, ranges_recopied FROM hscale.operations WHERE db = 'online_verify' ORDER BY id DESC LIMIT 1";
    let (verified, recopied): (u32, u32) = direct.query_first(journal).await.unwrap().unwrap();
    eprintln!("{TEST}: damaged copy: {verified} ranges verified, {recopied} copied again");
    assert_eq!(verified, 256);
    assert!(
        (1..=5).contains(&recopied),
        "{recopied} ranges copied again"
    );
    // A move under the same writers: nothing differs.
    let mut c = Conn::new(proxy_opts(proxy.port, Some(scene.db)))
        .await
        .unwrap();
    c.query_drop("HSCALE MOVE_PARTITION('online_verify.acct_verify', 'p1', 'shard2')")
        .await
        .unwrap();
    let (verified, recopied): (u32, u32) = direct.query_first(journal).await.unwrap().unwrap();
    assert_eq!(
        (verified, recopied),
        (256, 0),
        "a clean move copies nothing again"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_writers(hs).await;
    let p1 = physical("online_verify.acct_verify", Some("p1")).await;
    let mut b2 = backend_conn(2, None).await;
    b2.query_drop(format!("DELETE FROM online_verify.{p1} WHERE id <= 30000"))
        .await
        .unwrap();
    assert!(out.acked > 100, "writers barely ran: {}", out.acked);
    assert_invariants(TEST, scene, &ports, &out).await;
    for c in [direct, b1, b2, c] {
        c.disconnect().await.unwrap();
    }
}

/// Auto-partitioning: with `HSCALE AUTO_PARTITION(..., 'ROUND_ROBIN')`, six
/// writers through three proxies write every value of `MOD(8)` at once, so
/// the proxies race to create the same partitions. Each value gets exactly
/// one partition (named from the value, on the backends in turn), every
/// creation is one journal operation that ended 'done', no write failed or
/// waited for another value's creation beyond the default partition's
/// cutover, and every acknowledged row is where the dictionary says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_partitioning_races_from_three_proxies_create_each_partition_once() {
    const TEST: &str = "auto_partitioning";
    cluster(3);
    let mut rng = test_seed(TEST);
    let scene = Scene {
        db: "online_auto",
        table: "acct_auto",
    };
    setup_acct(scene).await;
    let proxies = [serve(300), serve(300), serve(300)];
    let ports: Vec<u16> = proxies.iter().map(|p| p.port).collect();
    let mut c = Conn::new(proxy_opts(ports[0], Some(scene.db)))
        .await
        .unwrap();
    let r = c
        .query_drop("HSCALE AUTO_PARTITION('online_auto.acct_auto', 'fewest')")
        .await;
    assert!(r.is_err(), "an unknown placement is refused");
    c.query_drop("HSCALE AUTO_PARTITION('online_auto.acct_auto', 'ROUND_ROBIN')")
        .await
        .unwrap();
    // Let every proxy learn of it before the writers start.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (ws, _acked) = writers(6, scene, &ports, &mut rng, any_key, 300, (60, 20)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let hs = spawn_writers(ws, &stop);
    let mut parts = BTreeMap::new();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(90) {
        parts = physical_tables("online_auto.acct_auto")
            .await
            .into_iter()
            .collect();
        if parts.len() == 9 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "{TEST}: {} partitions after {} ms: {parts:?}",
        parts.len(),
        t.elapsed().as_millis()
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_writers(hs).await;
    assert!(out.acked > 300, "writers barely ran: {}", out.acked);
    assert_invariants(TEST, scene, &ports, &out).await;
    // One partition per value, named from it, on the backends in turn.
    assert_eq!(parts.len(), 9, "the default and 8 partitions: {parts:?}");
    let mut per_backend = [0usize; 3];
    for v in 0..8 {
        let p = parts
            .get(&format!("auto_{v}"))
            .unwrap_or_else(|| panic!("no partition auto_{v}: {parts:?}"));
        per_backend[p.0] += 1;
    }
    assert!(
        per_backend.iter().all(|&n| n >= 2),
        "placement {per_backend:?}"
    );
    let mut direct = backend_conn(0, None).await;
    let ops: Vec<(String, String)> = direct
        .query("SELECT command, state FROM hscale.operations WHERE db = 'online_auto' AND command LIKE 'ADD_PARTITION%' ORDER BY id")
        .await
        .unwrap();
    let done = ops.iter().filter(|o| o.1 == "done").count();
    assert_eq!(done, 8, "one creation per value: {ops:?}");
    assert!(ops.iter().all(|o| o.1 == "done"), "{ops:?}");
    // Off: a new value stays in the default partition.
    c.query_drop("HSCALE AUTO_PARTITION('online_auto.acct_auto', 'OFF')")
        .await
        .unwrap();
    direct.disconnect().await.unwrap();
    c.disconnect().await.unwrap();
}

/// `[proxy] keep_retired_db`: the table a MOVE_PARTITION retires is moved
/// to that database on its backend, rows and all, instead of dropped; the
/// application's database keeps only the tables the dictionary names.
#[tokio::test]
async fn retired_tables_can_be_kept_in_another_database() {
    cluster(3);
    let scene = Scene {
        db: "online_keep",
        table: "acct_keep",
    };
    setup_acct(scene).await;
    let mut config = cluster_config();
    config.proxy.keep_retired_db = "hscale_retired_keep".into();
    let proxy = ProxyProcess::start(config);
    let mut c = Conn::new(proxy_opts(proxy.port, Some(scene.db)))
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('online_keep.acct_keep', 'p2', '2', 'shard1')")
        .await
        .unwrap();
    c.query_drop(
        "INSERT INTO acct_keep (id, k, v, note) VALUES (1, 2, 10, 'a'), (2, 10, 20, 'b'), (3, 3, 30, 'c')",
    )
    .await
    .unwrap();
    let before = physical("online_keep.acct_keep", Some("p2")).await;
    c.query_drop("HSCALE MOVE_PARTITION('online_keep.acct_keep', 'p2', 'shard2')")
        .await
        .unwrap();
    let after = physical_tables("online_keep.acct_keep").await;
    assert_eq!(after["p2"].0, 2, "{after:?}");
    let mut b1 = backend_conn(1, None).await;
    let kept: Vec<String> = b1
        .query("SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ('online_keep', 'hscale_retired_keep')")
        .await
        .unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(
        kept[0].starts_with(&format!("hscale_retired_keep.{before}_retired_g")),
        "{kept:?}"
    );
    let rows: Option<i64> = b1
        .query_first(format!("SELECT SUM(v) FROM {}", kept[0]))
        .await
        .unwrap();
    assert_eq!(rows, Some(30), "the retired table keeps its rows");
    let sum: Option<i64> = c
        .query_first("SELECT SUM(v) FROM acct_keep WHERE k IN (2, 10)")
        .await
        .unwrap();
    assert_eq!(sum, Some(30));
    b1.disconnect().await.unwrap();
    c.disconnect().await.unwrap();
}

/// Auto-partitioning by FEWEST_ROWS from a prepared INSERT (binary
/// protocol): the new value's partition goes to a backend that holds none
/// of the table's rows, and the row is found in it.
#[tokio::test]
async fn a_prepared_insert_creates_its_partition_on_the_emptiest_backend() {
    cluster(3);
    let scene = Scene {
        db: "online_auto2",
        table: "acct_auto2",
    };
    setup_acct(scene).await;
    let default = physical("online_auto2.acct_auto2", None).await;
    let mut b0 = backend_conn(0, Some(scene.db)).await;
    b0.query_drop(format!(
        "INSERT INTO {default} (id, k, v, note) SELECT seq, 3, 0, 'x' FROM seq_1_to_2000"
    ))
    .await
    .unwrap();
    b0.query_drop(format!("ANALYZE TABLE {default}"))
        .await
        .unwrap();
    let proxy = serve(300);
    let mut c = Conn::new(proxy_opts(proxy.port, Some(scene.db)))
        .await
        .unwrap();
    c.query_drop("HSCALE AUTO_PARTITION('acct_auto2', 'FEWEST_ROWS')")
        .await
        .unwrap();
    c.exec_drop(
        "INSERT INTO acct_auto2 (id, k, v, note) VALUES (?, ?, ?, ?)",
        (5000, 5, 7, "prepared"),
    )
    .await
    .unwrap();
    let t = Instant::now();
    let parts = loop {
        let parts = physical_tables("online_auto2.acct_auto2").await;
        if parts.contains_key("auto_5") || t.elapsed() > Duration::from_secs(20) {
            break parts;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let p = parts.get("auto_5").unwrap_or_else(|| panic!("{parts:?}"));
    assert_ne!(p.0, 0, "shard0 holds the table's rows: {parts:?}");
    let mut b = backend_conn(p.0, Some(scene.db)).await;
    let v: Option<i64> = b
        .query_first(format!("SELECT v FROM {} WHERE id = 5000", p.1))
        .await
        .unwrap();
    assert_eq!(v, Some(7));
    let v: Option<i64> = c
        .exec_first("SELECT v FROM acct_auto2 WHERE k = ? AND id = ?", (5, 5000))
        .await
        .unwrap();
    assert_eq!(v, Some(7));
    for c in [b0, b, c] {
        c.disconnect().await.unwrap();
    }
}
