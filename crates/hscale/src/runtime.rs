//! The proxy's shared state: configuration, backend pools, live sessions
//! and the partition dictionary ([`Context`]), shared read-only by every
//! worker thread. It sits below everything that serves clients: `session/`,
//! `exec/`, `admin/`, `partition/`, `fleet` and `server` use it. It imports
//! `backend/`, `config`, `metrics`, `tenant` and `seq`, none of which
//! imports it back; the state types of subsystems that take the `Context`
//! are defined in `runtime/partitioning.rs`, `runtime/shared_state.rs`
//! and `runtime/session_handle.rs` (ARCHITECTURE.md, the modules' imports).

use hscale_route::BackendId;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::backend::{BackendWatch, Pool};
use crate::config::{BackendConfig, Config, ProxyConfig, UserConfig};

mod partitioning;
mod session_handle;
mod shared_state;

pub use partitioning::{FenceState, Partitioning};
pub use session_handle::{Activity, Info, Published, SessionHandle, TxnView};
pub use shared_state::{AutoIncrementColumns, Member, XaChecks};

/// What SIGHUP reloads from the config file (`Context::reload`): the
/// users and the client limits (and `[[cache.rules]]`, which the result
/// cache keeps). Read at login and when a session starts,
/// never per statement.
#[derive(Debug, Clone)]
pub struct Live {
    pub users: Vec<UserConfig>,
    /// `[proxy]` as last loaded; of it only `max_connections`,
    /// `max_handshakes`, `handshake_timeout_ms`, `wait_timeout_ms` and the
    /// `failed_login_*` settings are read from here.
    pub proxy: ProxyConfig,
}

impl Live {
    fn of(config: &Config) -> Live {
        Live {
            users: config.users.clone(),
            proxy: config.proxy.clone(),
        }
    }

    pub fn user(&self, name: &str) -> Option<&UserConfig> {
        self.users.iter().find(|u| u.name == name)
    }
}

/// Commit decisions waiting to be deleted (see `Context::finished_decisions`).
#[derive(Default)]
pub(crate) struct FinishedDecisions {
    /// `(home backend, gtrid)`.
    pub pending: Vec<(BackendId, String)>,
    pub is_deleting: bool,
}

/// Shared by all sessions; nothing in it is locked on the statement path.
pub struct Context {
    pub config: Arc<Config>,
    /// `pools[worker][identity * backends + backend]`: each worker has a
    /// pool per backend and backend identity, with its share of the
    /// backend's min and max connections. Identity 0 is the proxy's own
    /// account (`[[backends]] user`), the others the `backend_user`s of
    /// `[[users]]` (`Config::backend_identities`), opened on demand.
    /// Backend 0 is the main backend.
    pools: Vec<Vec<Arc<Pool>>>,
    /// Each client user's limits and counters (`crate::tenant`).
    pub tenants: crate::tenant::Tenants,
    pub(crate) server_version: OnceLock<String>,
    /// The main backend resolves client addresses to names (its
    /// `skip_name_resolve` is OFF): a loopback client is then
    /// `localhost` in `USER()` (`login::client_host_name`).
    pub(crate) resolves_names: std::sync::atomic::AtomicBool,
    /// The main backend's collation table (`information_schema.COLLATIONS`),
    /// read at start; [`Context::collations`] answers with a short built-in
    /// table until then.
    collations: OnceLock<hscale_wire::charset::Collations>,
    next_connection_id: AtomicU32,
    /// Numbers transactions across backends (part of their XA ids).
    next_txn_seq: AtomicU64,
    /// Per worker: commit decisions whose transactions finished, waiting to
    /// be deleted in one statement (`exec/txn/commit.rs::forget_decision`),
    /// and whether a task is deleting them. Locked once per commit across
    /// backends by its own worker, never per statement.
    pub(crate) finished_decisions: Vec<Mutex<FinishedDecisions>>,
    /// Tables' AUTO_INCREMENT columns as backends described them a moment
    /// ago (`exec/insert_id.rs`). Locked only after an INSERT whose OK
    /// reports an id the statement may have given.
    pub(crate) auto_increment: AutoIncrementColumns,
    clients: AtomicUsize,
    /// Connections in the handshake, oldest first: `(ticket, eviction
    /// signal)`. Locked when a connection arrives and when its handshake
    /// ends, never per statement.
    handshakes: Mutex<VecDeque<(u64, Arc<tokio::sync::Notify>)>>,
    next_handshake: AtomicU64,
    /// Failed logins per client address, for `failed_login_threshold`
    /// (empty while it is 0). Locked once per login, never per statement.
    failed_logins: Mutex<HashMap<std::net::IpAddr, u32>>,
    /// Live sessions by connection id, for KILL. Locked when a session
    /// starts or ends and by KILL, never per statement.
    sessions: Mutex<HashMap<u32, Arc<SessionHandle>>>,
    /// The partition dictionary.
    pub partitioning: Partitioning,
    /// The backends' replicas: their pools and replication state
    /// (`backend/replicas.rs`; empty without `[[backends]] replicas`).
    pub replicas: crate::backend::replicas::Replicas,
    /// This proxy's blocks of ids of every table with a sequence.
    pub sequences: crate::seq::Sequences,
    /// TLS to clients (`[tls]`), when a certificate is configured.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// Which backends may take part in transactions across backends.
    pub xa_checks: XaChecks,
    /// Counters for Prometheus and the query digests.
    pub metrics: crate::metrics::Metrics,
    /// This proxy in `hscale.proxies` (`crate::fleet`).
    pub fleet: Member,
    /// Users and client limits, replaced by SIGHUP.
    live: arc_swap::ArcSwap<Live>,
    /// `[log] slow_statement_ms`, replaced by SIGHUP (read per statement).
    slow_statement_ms: AtomicU64,
    /// The main backend's global wait_timeout and interactive_timeout in
    /// seconds (0: not known, `[proxy] wait_timeout_ms` applies), read
    /// after a client's `SET GLOBAL` through this proxy: sessions that
    /// start later take them as a server's sessions do
    /// (`Context::global_wait_timeout`).
    global_timeouts: [AtomicU64; 2],
    /// Set by SIGTERM: sessions close once their statement is done, idle
    /// ones at once (`Context::begin_drain`).
    is_draining: AtomicBool,
    /// Client connections being served (in the handshake or logged in).
    open_sessions: AtomicUsize,
    /// Client connections each worker serves, for spreading new ones
    /// over the workers (`server.rs`, `Context::least_loaded_worker`).
    worker_load: Box<[AtomicUsize]>,
}

/// Counts one client connection among its worker's (`Context::worker_load`)
/// while it lives.
pub struct WorkerSlot(Arc<Context>, usize);

impl WorkerSlot {
    /// The worker this connection is served on.
    pub fn worker(&self) -> usize {
        self.1
    }
}

impl Drop for WorkerSlot {
    fn drop(&mut self) {
        self.0.worker_load[self.1].fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts one client connection among `Context::open_sessions` while it lives.
pub struct OpenSession(Arc<Context>);

impl Drop for OpenSession {
    fn drop(&mut self) {
        self.0.open_sessions.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Holds one of `max_connections` client slots.
pub struct ClientSlot(Arc<Context>);

impl Drop for ClientSlot {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One connection's place among those still in the handshake; dropping
/// it (handshake over, or connection gone) gives the place back.
pub struct HandshakeTicket {
    ctx: Arc<Context>,
    id: u64,
    evicted: Arc<tokio::sync::Notify>,
}

impl HandshakeTicket {
    /// Resolves when a newer connection took this one's place
    /// (`[proxy] max_handshakes` reached): the connection is to be closed.
    pub async fn evicted(&self) {
        self.evicted.notified().await;
    }
}

impl Drop for HandshakeTicket {
    fn drop(&mut self) {
        let mut q = self
            .ctx
            .handshakes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(i) = q.iter().position(|(id, _)| *id == self.id) {
            q.remove(i);
        }
    }
}

/// Client addresses whose failed logins are counted at once.
const MAX_THROTTLED_ADDRESSES: usize = 100_000;

/// Announced to clients until the main backend has told us its own version.
const FALLBACK_VERSION: &str = "5.5.5-10.11.0-MariaDB-hscale";

/// Worker `i`'s share of `n` connections out of `workers` (at least one for max).
fn share(n: usize, workers: usize, i: usize) -> usize {
    n / workers + usize::from(i < n % workers)
}

impl Context {
    /// `backend_tls`: one entry per backend (`backend::tls::connectors`).
    pub fn new(
        config: Config,
        tls: Option<tokio_rustls::TlsAcceptor>,
        backend_tls: Vec<Option<Arc<crate::backend::tls::BackendTls>>>,
    ) -> Arc<Context> {
        let workers = config.worker_threads();
        let connect = Duration::from_millis(config.proxy.connect_timeout_ms);
        let acquire = Duration::from_millis(config.proxy.acquire_timeout_ms);
        let read_timeout = match config.proxy.backend_read_timeout_ms {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        };
        let ping_timeout = Duration::from_millis(config.proxy.backend_ping_timeout_ms);
        let watches: Vec<Arc<BackendWatch>> = config
            .backends
            .iter()
            .map(|_| Arc::new(BackendWatch::new(read_timeout, ping_timeout)))
            .collect();
        let identities = config.backend_identities();
        let pools = (0..workers)
            .map(|w| {
                let mut pools = Vec::new();
                for identity in 0..=identities.len() {
                    for (i, b) in config.backends.iter().enumerate() {
                        let mut cfg = BackendConfig {
                            min_connections: share(b.min_connections, workers, w),
                            max_connections: share(b.max_connections, workers, w).max(1),
                            ..b.clone()
                        };
                        if let Some((user, password)) =
                            identity.checked_sub(1).map(|k| &identities[k])
                        {
                            cfg.user = user.clone();
                            cfg.password = password.clone();
                            cfg.min_connections = 0;
                        }
                        let watch = watches[i].clone();
                        let tls = backend_tls.get(i).cloned().flatten();
                        pools.push(Pool::new(
                            cfg,
                            BackendId::new(i),
                            connect,
                            acquire,
                            watch,
                            tls,
                            true,
                        ));
                    }
                }
                // Every other backend's primary is confirmed against the
                // main backend's dictionary (`backend/pool/primary_check.rs`).
                for p in pools.iter().filter(|p| p.backend_id != BackendId::MAIN) {
                    p.confirm_against(pools[0].clone());
                }
                pools
            })
            .collect();
        let replicas = crate::backend::replicas::Replicas::new(
            &config,
            workers,
            &backend_tls,
            connect,
            acquire,
        );
        let metrics = crate::metrics::Metrics::new(workers, config.metrics.max_digests);
        let xa_checks = XaChecks::new(config.backends.len());
        Arc::new(Context {
            xa_checks,
            metrics,
            fleet: Member::new(),
            live: arc_swap::ArcSwap::from_pointee(Live::of(&config)),
            tenants: crate::tenant::Tenants::new(&config),
            slow_statement_ms: AtomicU64::new(config.log.slow_statement_ms),
            global_timeouts: [AtomicU64::new(0), AtomicU64::new(0)],
            is_draining: AtomicBool::new(false),
            open_sessions: AtomicUsize::new(0),
            worker_load: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            config: Arc::new(config),
            pools,
            server_version: OnceLock::new(),
            resolves_names: std::sync::atomic::AtomicBool::new(false),
            collations: OnceLock::new(),
            next_connection_id: AtomicU32::new(1),
            next_txn_seq: AtomicU64::new(1),
            finished_decisions: (0..workers).map(|_| Mutex::default()).collect(),
            auto_increment: Default::default(),
            clients: AtomicUsize::new(0),
            handshakes: Mutex::new(VecDeque::new()),
            next_handshake: AtomicU64::new(0),
            failed_logins: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
            partitioning: Partitioning::default(),
            replicas,
            sequences: crate::seq::Sequences::default(),
            tls,
        })
    }

    pub fn register_session(&self, id: u32, handle: Arc<SessionHandle>) {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, handle);
    }

    pub fn unregister_session(&self, id: u32) {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }

    /// Every live session, by connection id.
    pub fn sessions(&self) -> Vec<(u32, Arc<SessionHandle>)> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(id, h)| (*id, h.clone()))
            .collect()
    }

    pub fn session(&self, id: u32) -> Option<Arc<SessionHandle>> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    /// The wait_timeout a session starting now takes (an interactive
    /// client's is interactive_timeout, as the server gives it), when a
    /// `SET GLOBAL` through this proxy made it known.
    pub fn global_wait_timeout(&self, is_interactive: bool) -> Option<std::time::Duration> {
        let secs = self.global_timeouts[usize::from(is_interactive)].load(Ordering::Relaxed);
        (secs > 0).then(|| std::time::Duration::from_secs(secs))
    }

    /// Keep the main backend's global wait_timeout and
    /// interactive_timeout (seconds), read after a `SET GLOBAL`.
    pub fn set_global_timeouts(&self, wait: u64, interactive: u64) {
        self.global_timeouts[0].store(wait, Ordering::Relaxed);
        self.global_timeouts[1].store(interactive, Ordering::Relaxed);
    }

    /// A statement may have changed the global defaults of session
    /// variables (`SET GLOBAL`): every backend's pooled connections are
    /// reset before their next use (`BackendWatch::defaults_changed`).
    pub fn session_defaults_changed(&self) {
        if let Some(pools) = self.pools.first() {
            for pool in pools {
                pool.watch.defaults_changed();
            }
        }
    }

    /// Worker `worker`'s pool for backend `backend`, as the proxy's own
    /// account (dictionary, journal, sequences, recovery, KILL).
    /// The backends of the config.
    pub fn backend_count(&self) -> usize {
        self.pools.first().map_or(0, |p| p.len())
    }

    pub fn pool(&self, worker: usize, backend: BackendId) -> &Arc<Pool> {
        &self.pools[worker][backend.index()]
    }

    /// Worker `worker`'s pool for backend `backend` as backend identity
    /// `identity` (`Config::identity` of a client's user): where a client's
    /// statements run, so the backend's grants for that account apply.
    pub fn pool_as(&self, worker: usize, backend: BackendId, identity: usize) -> &Arc<Pool> {
        &self.pools[worker][identity * self.config.backends.len() + backend.index()]
    }

    /// The backend for statements any backend can answer (session-only
    /// statements: SET, SELECT @@version, ...): the main backend, or, while
    /// it is down (the health check finds it frozen, or the last connect
    /// to it failed on some worker: killed, stopped, unreachable), the
    /// first backend that is not, so a main backend that is down does not
    /// hold up new connections to tables on healthy backends. The health
    /// check's connects bring it back (`Pool::check`).
    pub fn answering_backend(&self) -> BackendId {
        self.answering_backend_besides(None)
    }

    /// [`Self::answering_backend`] never naming `failed`, the backend a
    /// statement's connect was just refused by: a connect to it that
    /// succeeded an instant before its failure may have counted it up again
    /// after this one counted it down, and the statement must still move.
    /// The main backend when no other is known to answer.
    pub fn answering_backend_besides(&self, failed: Option<BackendId>) -> BackendId {
        let is_down = |b: BackendId| {
            Some(b) == failed
                || self
                    .pools
                    .iter()
                    .any(|w| w.get(b.index()).is_some_and(|p| !p.is_reachable()))
        };
        self.backend_ids()
            .find(|b| !is_down(*b))
            .unwrap_or(BackendId::MAIN)
    }

    /// The backend the config names `name`.
    pub fn backend_named(&self, name: &str) -> Option<BackendId> {
        self.config
            .backends
            .iter()
            .position(|b| b.name == name)
            .map(BackendId::new)
    }

    /// Every backend the config lists, the main backend first.
    pub fn backend_ids(&self) -> impl DoubleEndedIterator<Item = BackendId> + Clone {
        BackendId::all(self.config.backends.len())
    }

    /// Worker `worker`'s pools, one per backend and identity.
    /// Each user's row of `HSCALE SHOW USERS` and the `/metrics` user
    /// series: the tenants' counters with the backend connections their
    /// statements hold and wait for in every pool now.
    pub fn user_rows(&self) -> Vec<crate::tenant::TenantRow> {
        let slots: Vec<_> = self
            .pools
            .iter()
            .flatten()
            .flat_map(|p| p.per_user())
            .collect();
        self.tenants.rows(&slots)
    }

    pub fn worker_pools(&self, worker: usize) -> &[Arc<Pool>] {
        &self.pools[worker]
    }

    /// All pools of one backend as the proxy's own account, over all workers.
    pub fn backend_pools(&self, backend: BackendId) -> impl Iterator<Item = &Arc<Pool>> {
        self.pools.iter().map(move |w| &w[backend.index()])
    }

    pub fn workers(&self) -> usize {
        self.pools.len()
    }

    pub fn next_connection_id(&self) -> u32 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A number for a new transaction across backends.
    pub fn next_txn_seq(&self) -> u64 {
        self.next_txn_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// A place among the connections in the handshake; when all
    /// `max_handshakes` are taken, the oldest holder is told to leave.
    pub fn handshake_ticket(self: &Arc<Self>) -> HandshakeTicket {
        let id = self.next_handshake.fetch_add(1, Ordering::Relaxed);
        let evicted = Arc::new(tokio::sync::Notify::new());
        let mut q = self.handshakes.lock().unwrap_or_else(|p| p.into_inner());
        let max = self.live().proxy.max_handshakes.max(1);
        while q.len() >= max {
            if let Some((_, oldest)) = q.pop_front() {
                oldest.notify_one();
            }
        }
        q.push_back((id, evicted.clone()));
        drop(q);
        HandshakeTicket {
            ctx: self.clone(),
            id,
            evicted,
        }
    }

    /// Record a login from `addr` (`is_ok`: it succeeded) and return how
    /// long to hold its answer back: nothing until the address has more
    /// than `failed_login_threshold` failures, then `failed_login_delay_ms`
    /// per failure beyond it, at most `failed_login_max_delay_ms`.
    pub fn login_delay(&self, addr: Option<std::net::IpAddr>, is_ok: bool) -> Duration {
        let live = self.live();
        let proxy = &live.proxy;
        let (Some(addr), threshold @ 1..) = (addr, proxy.failed_login_threshold) else {
            return Duration::ZERO;
        };
        let mut failed = self.failed_logins.lock().unwrap_or_else(|p| p.into_inner());
        let n = if is_ok {
            failed.remove(&addr).unwrap_or(0)
        } else {
            if failed.len() >= MAX_THROTTLED_ADDRESSES && !failed.contains_key(&addr) {
                // Bounded: forget every count rather than grow without end.
                tracing::warn!("failed-login throttle: too many addresses, counts reset");
                failed.clear();
            }
            let n = failed.entry(addr).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let beyond = u64::from(n.saturating_sub(threshold));
        Duration::from_millis(
            beyond
                .saturating_mul(proxy.failed_login_delay_ms)
                .min(proxy.failed_login_max_delay_ms),
        )
    }

    /// Connections in the handshake now.
    pub fn handshakes(&self) -> usize {
        self.handshakes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// One of `max_connections` slots for a client that logged in.
    pub fn client_slot(self: &Arc<Self>) -> Option<ClientSlot> {
        let n = self.clients.fetch_add(1, Ordering::Relaxed);
        let slot = ClientSlot(self.clone());
        (n < self.live().proxy.max_connections).then_some(slot)
    }

    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }

    /// The collation table clients' handshakes and COM_CHANGE_USER are
    /// resolved with: the main backend's once read, else the built-in one.
    pub fn collations(&self) -> &hscale_wire::charset::Collations {
        static BUILTIN: OnceLock<hscale_wire::charset::Collations> = OnceLock::new();
        self.collations
            .get()
            .unwrap_or_else(|| BUILTIN.get_or_init(hscale_wire::charset::Collations::builtin))
    }

    pub fn has_collations(&self) -> bool {
        self.collations.get().is_some()
    }

    /// Learn what clients see of the main backend, on a connection to it:
    /// its version string and its collation table (each once).
    pub async fn learn_main_backend(&self, conn: &mut crate::backend::BackendConn) {
        if self.server_version.set(conn.server_version.clone()).is_ok() {
            // Version comments are lexed as this server runs them.
            if let Ok(Ok(r)) = conn.query_rows("SELECT @@skip_name_resolve").await {
                let skips = r
                    .strings()
                    .first()
                    .and_then(|row| row.first().cloned().flatten());
                self.resolves_names.store(
                    skips.as_deref() == Some("0"),
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
            match hscale_sql::lexer::ServerVersion::parse(&conn.server_version) {
                Some(v) => v.set_current(),
                None => tracing::warn!(
                    version = %conn.server_version,
                    "cannot read the main backend's version; version comments are lexed as MariaDB 10.11.0 runs them"
                ),
            }
        }
        if self.collations.get().is_some() {
            return;
        }
        let sql = "SELECT ID, CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLLATIONS WHERE ID IS NOT NULL";
        match conn.query_rows(sql).await {
            Ok(Ok(r)) => {
                let rows = r.strings().into_iter().filter_map(|row| match &row[..] {
                    [Some(id), Some(cs), Some(coll)] => {
                        Some((id.parse::<u16>().ok()?, cs.clone(), coll.clone()))
                    }
                    _ => None,
                });
                let table = hscale_wire::charset::Collations::from_rows(rows);
                tracing::debug!(
                    collations = table.len(),
                    "read the main backend's collations"
                );
                let _ = self.collations.set(table);
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e.message, "cannot read the main backend's collations")
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the main backend's collations"),
        }
    }

    /// The users and client limits in force (`[[users]]`, `[proxy]`).
    pub fn live(&self) -> arc_swap::Guard<Arc<Live>> {
        self.live.load()
    }

    pub fn slow_statement_ms(&self) -> u64 {
        self.slow_statement_ms.load(Ordering::Relaxed)
    }

    /// SIGHUP: take the users, the client limits and the slow-statement
    /// threshold from `config` (already validated); sessions stay. Returns
    /// the settings that changed but need a restart.
    pub fn reload(&self, config: &Config) -> Vec<&'static str> {
        self.live.store(Arc::new(Live::of(config)));
        self.tenants.apply(config);
        self.slow_statement_ms
            .store(config.log.slow_statement_ms, Ordering::Relaxed);
        let (old, new) = (&*self.config, config);
        let mut ignored = Vec::new();
        if old.cache.max_bytes != new.cache.max_bytes {
            ignored.push("[cache] max_bytes");
        }
        if old.backends.len() != new.backends.len()
            || old.backends.iter().zip(&new.backends).any(|(a, b)| {
                (&a.name, &a.address, &a.user, &a.replicas)
                    != (&b.name, &b.address, &b.user, &b.replicas)
            })
        {
            ignored.push("[[backends]]");
        }
        if old.proxy.listen != new.proxy.listen || old.proxy.workers != new.proxy.workers {
            ignored.push("[proxy] listen and workers");
        }
        if old.proxy.max_allowed_packet != new.proxy.max_allowed_packet {
            ignored.push("[proxy] max_allowed_packet");
        }
        if old.metrics.listen != new.metrics.listen
            || old.metrics.max_digests != new.metrics.max_digests
        {
            ignored.push("[metrics]");
        }
        if old.http != new.http {
            ignored.push("[http]");
        }
        let tls = |t: &crate::config::TlsConfig| (t.cert.clone(), t.key.clone(), t.require);
        if tls(&old.tls) != tls(&new.tls) {
            ignored.push("[tls]");
        }
        ignored
    }

    /// Count a client connection while the returned guard lives.
    pub fn open_session(self: &Arc<Self>) -> OpenSession {
        self.open_sessions.fetch_add(1, Ordering::Relaxed);
        OpenSession(self.clone())
    }

    pub fn open_sessions(&self) -> usize {
        self.open_sessions.load(Ordering::Relaxed)
    }

    /// Where a connection `worker` accepted is served: the worker serving
    /// the fewest connections, `worker` itself unless another serves
    /// fewer. Counted there while the returned slot lives.
    pub fn place_connection(self: &Arc<Self>, worker: usize) -> WorkerSlot {
        let load = |w: usize| self.worker_load[w].load(Ordering::Relaxed);
        let mut best = worker;
        for w in 0..self.worker_load.len() {
            if load(w) < load(best) {
                best = w;
            }
        }
        self.worker_slot(best)
    }

    /// Client connections each worker serves.
    pub fn worker_loads(&self) -> Vec<usize> {
        self.worker_load
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect()
    }

    /// Count a client connection on `worker` while the returned slot lives.
    pub fn worker_slot(self: &Arc<Self>, worker: usize) -> WorkerSlot {
        self.worker_load[worker].fetch_add(1, Ordering::Relaxed);
        WorkerSlot(self.clone(), worker)
    }

    /// SIGTERM: every session closes when its running statement is done;
    /// idle ones are woken to close now.
    pub fn begin_drain(&self) {
        self.is_draining.store(true, Ordering::SeqCst);
        for (_, h) in self.sessions() {
            h.wake();
        }
    }

    pub fn is_draining(&self) -> bool {
        self.is_draining.load(Ordering::Relaxed)
    }

    /// Every backend pool's numbers, summed over the workers, for `/metrics`.
    pub fn pool_samples(&self) -> Vec<crate::metrics::exposition::PoolSample> {
        self.backend_ids()
            .map(|b| {
                let mut s = crate::metrics::exposition::PoolSample {
                    backend: self.config.backends[b.index()].name.clone(),
                    is_up: true,
                    ..Default::default()
                };
                for p in self.backend_pools(b) {
                    let st = p.stats();
                    s.open += st.open as u64;
                    s.idle += st.idle as u64;
                    s.in_use += st.in_use as u64;
                    s.waiting += st.waiting as u64;
                    s.waits += st.waits;
                    s.connects += st.connects;
                    s.connect_failures += st.connect_failures;
                    s.is_up &= st.is_up;
                }
                s
            })
            .collect()
    }

    /// The main backend's version string, which clients see as the server's.
    pub fn server_version(&self) -> String {
        self.server_version
            .get()
            .cloned()
            .unwrap_or_else(|| FALLBACK_VERSION.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_add_up() {
        for n in 0..20 {
            for w in 1..5 {
                assert_eq!((0..w).map(|i| share(n, w, i)).sum::<usize>(), n);
            }
        }
    }
}
