//! Worker threads, the listener and the shared, read-only [`Context`].
//!
//! hscale runs one single-threaded tokio runtime per worker thread (one per
//! core by default). Every worker accepts from the same listening socket and
//! owns its own pool for each backend, so a session, its backend
//! connections and their sockets all live on one thread: no task is ever
//! woken across threads on the statement path. Measured on two cores, the
//! shared multi-threaded runtime cost about 25% more CPU per statement
//! (see bench/RESULTS.md).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::net::TcpListener;

use crate::backend::Pool;
use crate::config::{BackendConfig, Config};

/// Shared by all sessions; nothing in it is locked on the statement path.
pub struct Context {
    pub config: Arc<Config>,
    /// `pools[worker][backend]`: each worker has a pool per backend, with
    /// its share of the backend's min and max connections. Backend 0 is the
    /// main backend.
    pools: Vec<Vec<Arc<Pool>>>,
    server_version: OnceLock<String>,
    next_connection_id: AtomicU32,
    clients: AtomicUsize,
    /// Live sessions by connection id, for KILL. Locked when a session
    /// starts or ends and by KILL, never per statement.
    sessions: Mutex<HashMap<u32, Arc<SessionHandle>>>,
    /// The partition dictionary.
    pub partitioning: crate::partition::Partitioning,
}

/// What KILL needs to know about a session, updated with atomics.
pub struct SessionHandle {
    pub user: Mutex<String>,
    /// `backend << 32 | backend thread id` of the statement running now, 0 if none.
    running: AtomicU64,
    is_killed: AtomicBool,
    pub killed: tokio::sync::Notify,
}

impl SessionHandle {
    pub fn new(user: &str) -> SessionHandle {
        SessionHandle {
            user: Mutex::new(user.to_string()),
            running: AtomicU64::new(0),
            is_killed: AtomicBool::new(false),
            killed: tokio::sync::Notify::new(),
        }
    }
    pub fn set_running(&self, backend: usize, thread_id: u32) {
        self.running.store(
            ((backend as u64 + 1) << 32) | thread_id as u64,
            Ordering::Relaxed,
        );
    }
    pub fn clear_running(&self) {
        self.running.store(0, Ordering::Relaxed);
    }
    /// The backend index and thread id of the running statement.
    pub fn running(&self) -> Option<(usize, u32)> {
        let v = self.running.load(Ordering::Relaxed);
        (v != 0).then(|| (((v >> 32) - 1) as usize, v as u32))
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

/// Announced to clients until the main backend has told us its own version.
const FALLBACK_VERSION: &str = "5.5.5-10.11.0-MariaDB-hscale";

/// Worker `i`'s share of `n` connections out of `workers` (at least one for max).
fn share(n: usize, workers: usize, i: usize) -> usize {
    n / workers + usize::from(i < n % workers)
}

impl Context {
    pub fn new(config: Config) -> Arc<Context> {
        let workers = config.worker_threads();
        let connect = Duration::from_millis(config.proxy.connect_timeout_ms);
        let acquire = Duration::from_millis(config.proxy.acquire_timeout_ms);
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
                        Pool::new(cfg, i, connect, acquire)
                    })
                    .collect()
            })
            .collect();
        Arc::new(Context {
            config: Arc::new(config),
            pools,
            server_version: OnceLock::new(),
            next_connection_id: AtomicU32::new(1),
            clients: AtomicUsize::new(0),
            sessions: Mutex::new(HashMap::new()),
            partitioning: crate::partition::Partitioning::default(),
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

    pub fn session(&self, id: u32) -> Option<Arc<SessionHandle>> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    /// Worker `worker`'s pool for backend `backend`.
    pub fn pool(&self, worker: usize, backend: usize) -> &Arc<Pool> {
        &self.pools[worker][backend]
    }

    /// All pools of one backend, over all workers.
    pub fn backend_pools(&self, backend: usize) -> impl Iterator<Item = &Arc<Pool>> {
        self.pools.iter().map(move |w| &w[backend])
    }

    pub fn workers(&self) -> usize {
        self.pools.len()
    }

    pub fn next_connection_id(&self) -> u32 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn client_slot(self: &Arc<Self>) -> Option<ClientSlot> {
        let n = self.clients.fetch_add(1, Ordering::Relaxed);
        let slot = ClientSlot(self.clone());
        (n < self.config.proxy.max_connections).then_some(slot)
    }

    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }

    /// The main backend's version string, which clients see as the server's.
    pub fn server_version(&self) -> String {
        self.server_version
            .get()
            .cloned()
            .unwrap_or_else(|| FALLBACK_VERSION.to_string())
    }

    /// On worker `worker`: learn the main backend's version, then run the
    /// health checks of this worker's pools.
    async fn start_backends(self: &Arc<Self>, worker: usize) {
        if self.server_version.get().is_none() {
            match self.pool(worker, 0).get(false).await {
                Ok(conn) => {
                    let _ = self.server_version.set(conn.server_version.clone());
                }
                Err(e) => tracing::warn!(error = %e, "main backend unreachable at start"),
            }
        }
        if worker == 0 {
            if let Err(e) = crate::partition::admin::reload(self, worker).await {
                tracing::warn!(error = %e, "cannot read the partition dictionary yet");
            }
        }
        if worker == 0 {
            // Changes made through other proxies arrive within reload_interval.
            let ctx = Arc::downgrade(self);
            let every = Duration::from_millis(self.config.proxy.reload_interval_ms.max(50));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(ctx) = ctx.upgrade() else { return };
                    if let Err(e) = crate::partition::admin::reload_if_idle(&ctx, worker).await {
                        tracing::debug!(error = %e, "dictionary reload failed");
                    }
                }
            });
        }
        let interval = Duration::from_millis(self.config.proxy.health_check_interval_ms.max(100));
        for pool in &self.pools[worker] {
            let pool = pool.clone();
            let ctx = Arc::downgrade(self);
            tokio::spawn(async move {
                loop {
                    pool.check(interval).await;
                    tokio::time::sleep(interval).await;
                    let Some(ctx) = ctx.upgrade() else { return };
                    let is_loaded = ctx.partitioning.is_loaded.load(Ordering::Relaxed);
                    if worker == 0 && !is_loaded && Arc::ptr_eq(&pool, ctx.pool(worker, 0)) {
                        let _ = crate::partition::admin::reload(&ctx, worker).await;
                    }
                    if ctx.server_version.get().is_none() && Arc::ptr_eq(&pool, ctx.pool(worker, 0))
                    {
                        if let Ok(conn) = pool.get(false).await {
                            let _ = ctx.server_version.set(conn.server_version.clone());
                        }
                    }
                }
            });
        }
    }
}

/// Bind a listening socket with a deep accept queue: a burst of thousands
/// of connects must queue up, not be dropped (std's default backlog is 128).
pub fn bind(addr: &str) -> std::io::Result<std::net::TcpListener> {
    let addr: std::net::SocketAddr = addr.parse().map_err(|e| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{addr}: {e}"))
    })?;
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(4096)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// One worker: accept clients and serve them on this thread until `stop`.
async fn worker_loop(
    ctx: Arc<Context>,
    worker: usize,
    listener: std::net::TcpListener,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()> {
    let listener = TcpListener::from_std(listener)?;
    ctx.start_backends(worker).await;
    #[cfg(unix)]
    if worker == 0 {
        if let Some(path) = ctx.config.proxy.socket.clone() {
            let _ = std::fs::remove_file(&path);
            let unix = tokio::net::UnixListener::bind(&path)?;
            let ctx = ctx.clone();
            tokio::spawn(async move {
                loop {
                    match unix.accept().await {
                        Ok((stream, _)) => {
                            tokio::spawn(crate::session::serve(
                                stream,
                                ctx.clone(),
                                worker,
                                path.clone(),
                            ));
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "unix socket accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            });
        }
    }
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            r = listener.accept() => match r {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(crate::session::serve(stream, ctx.clone(), worker, peer.to_string()));
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    Ok(())
}

/// Wait for Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            match term.as_mut() {
                Some(t) => { t.recv().await; }
                None => std::future::pending::<()>().await,
            }
        } => {}
    }
}

/// A running proxy: its worker threads and how to stop them. Used by
/// `hscale serve`, the playground and the tests.
pub struct RunningProxy {
    pub addr: std::net::SocketAddr,
    pub context: Arc<Context>,
    stop: tokio::sync::watch::Sender<bool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl RunningProxy {
    /// Start serving on `listen` (port 0 picks a free port).
    pub fn start(config: Config, listen: &str) -> std::io::Result<RunningProxy> {
        let listener = bind(listen)?;
        let addr = listener.local_addr()?;
        let ctx = Context::new(config);
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let mut threads = Vec::new();
        for worker in 0..ctx.workers() {
            let listener = listener.try_clone()?;
            let ctx = ctx.clone();
            let stop_rx = stop_rx.clone();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            threads.push(
                std::thread::Builder::new()
                    .name(format!("hscale-worker-{worker}"))
                    .spawn(move || {
                        if let Err(e) =
                            runtime.block_on(worker_loop(ctx, worker, listener, stop_rx))
                        {
                            tracing::error!(worker, error = %e, "worker stopped");
                        }
                        runtime.shutdown_timeout(Duration::from_secs(1));
                    })?,
            );
        }
        tracing::info!(listen = %addr, workers = threads.len(), backends = ctx.config.backends.len(), "hscale is serving");
        Ok(RunningProxy {
            addr,
            context: ctx,
            stop,
            threads,
        })
    }

    pub fn stop(&mut self) {
        let _ = self.stop.send(true);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        self.stop();
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
