//! The proxy's shared state: configuration, backend pools, live sessions
//! and the partition dictionary ([`Context`]), shared read-only by every
//! worker thread. It sits below everything that serves clients: `session/`,
//! `exec/`, `admin/` and `server` use it; it imports only `backend/`,
//! `partition/` and `config`.

use hscale_route::BackendId;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::backend::{BackendWatch, Pool};
use crate::config::{BackendConfig, Config};

/// Shared by all sessions; nothing in it is locked on the statement path.
pub struct Context {
    pub config: Arc<Config>,
    /// `pools[worker][backend]`: each worker has a pool per backend, with
    /// its share of the backend's min and max connections. Backend 0 is the
    /// main backend.
    pools: Vec<Vec<Arc<Pool>>>,
    pub(crate) server_version: OnceLock<String>,
    /// The main backend's collation table (`information_schema.COLLATIONS`),
    /// read at start; [`Context::collations`] answers with a short built-in
    /// table until then.
    collations: OnceLock<hscale_wire::charset::Collations>,
    next_connection_id: AtomicU32,
    /// Numbers transactions across backends (part of their XA ids).
    next_txn_seq: AtomicU64,
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
    pub partitioning: crate::partition::Partitioning,
    /// This proxy's blocks of ids of every table with a sequence.
    pub sequences: crate::seq::Sequences,
    /// TLS to clients (`[tls]`), when a certificate is configured.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// Which backends may take part in transactions across backends.
    pub xa_checks: crate::exec::txn_checks::XaChecks,
}

/// What KILL needs to know about a session. Its lock is taken when a
/// statement starts or ends on a backend connection and by KILL; it is
/// never shared with another session's statements.
pub struct SessionHandle {
    pub user: Mutex<String>,
    /// `(backend, backend thread id)` of every connection a statement of
    /// this session runs on now (several for a statement over partitions).
    running: Mutex<Vec<(BackendId, u32)>>,
    is_killed: AtomicBool,
    pub killed: tokio::sync::Notify,
    /// The session's transaction across backends, as of its last statement.
    pub txn: crate::exec::txn_show::Published,
}

impl SessionHandle {
    pub fn new(user: &str) -> SessionHandle {
        SessionHandle {
            user: Mutex::new(user.to_string()),
            running: Mutex::new(Vec::new()),
            is_killed: AtomicBool::new(false),
            killed: tokio::sync::Notify::new(),
            txn: Default::default(),
        }
    }
    fn running_list(&self) -> std::sync::MutexGuard<'_, Vec<(BackendId, u32)>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub fn add_running(&self, key: (BackendId, u32)) {
        self.running_list().push(key);
    }
    pub fn remove_running(&self, key: (BackendId, u32)) {
        let mut list = self.running_list();
        if let Some(i) = list.iter().position(|k| *k == key) {
            list.swap_remove(i);
        }
    }
    /// The backend index and thread id of every connection running a
    /// statement of this session now.
    pub fn running(&self) -> Vec<(BackendId, u32)> {
        self.running_list().clone()
    }
    /// Whether `key` still runs a statement of this session.
    pub fn is_running(&self, key: (BackendId, u32)) -> bool {
        self.running_list().contains(&key)
    }
    pub fn kill(&self) {
        self.is_killed.store(true, Ordering::Relaxed);
        self.killed.notify_one();
    }
    pub fn is_killed(&self) -> bool {
        self.is_killed.load(Ordering::Relaxed)
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
    pub fn new(config: Config, tls: Option<tokio_rustls::TlsAcceptor>) -> Arc<Context> {
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
        let pools = (0..workers)
            .map(|w| {
                config
                    .backends
                    .iter()
                    .enumerate()
                    .map(|(i, b)| {
                        let cfg = BackendConfig {
                            min_connections: share(b.min_connections, workers, w),
                            max_connections: share(b.max_connections, workers, w).max(1),
                            ..b.clone()
                        };
                        Pool::new(cfg, BackendId::new(i), connect, acquire, watches[i].clone())
                    })
                    .collect()
            })
            .collect();
        let xa_checks = crate::exec::txn_checks::XaChecks::new(config.backends.len());
        Arc::new(Context {
            xa_checks,
            config: Arc::new(config),
            pools,
            server_version: OnceLock::new(),
            collations: OnceLock::new(),
            next_connection_id: AtomicU32::new(1),
            next_txn_seq: AtomicU64::new(1),
            clients: AtomicUsize::new(0),
            handshakes: Mutex::new(VecDeque::new()),
            next_handshake: AtomicU64::new(0),
            failed_logins: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
            partitioning: crate::partition::Partitioning::default(),
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

    /// Worker `worker`'s pool for backend `backend`.
    pub fn pool(&self, worker: usize, backend: BackendId) -> &Arc<Pool> {
        &self.pools[worker][backend.index()]
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

    /// Worker `worker`'s pools, one per backend.
    pub fn worker_pools(&self, worker: usize) -> &[Arc<Pool>] {
        &self.pools[worker]
    }

    /// All pools of one backend, over all workers.
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
        while q.len() >= self.config.proxy.max_handshakes.max(1) {
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
        let proxy = &self.config.proxy;
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
        (n < self.config.proxy.max_connections).then_some(slot)
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
        let _ = self.server_version.set(conn.server_version.clone());
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
