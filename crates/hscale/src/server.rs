//! The listener and the shared, read-only [`Context`] every session gets:
//! configuration, backend pools, counters. `run` is the library's entry
//! point; `main.rs` and the test harness both call it.

use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::net::TcpListener;

use crate::backend::Pool;
use crate::config::Config;

/// Shared by all sessions; nothing in it is locked on the statement path.
pub struct Context {
    pub config: Arc<Config>,
    /// One pool per backend, in config order; the first is the main backend.
    pub pools: Vec<Arc<Pool>>,
    server_version: OnceLock<String>,
    next_connection_id: AtomicU32,
    clients: AtomicUsize,
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

impl Context {
    pub fn new(config: Config) -> Arc<Context> {
        let connect = Duration::from_millis(config.proxy.connect_timeout_ms);
        let acquire = Duration::from_millis(config.proxy.acquire_timeout_ms);
        let pools = config
            .backends
            .iter()
            .map(|b| Pool::new(b.clone(), connect, acquire))
            .collect();
        Arc::new(Context {
            config: Arc::new(config),
            pools,
            server_version: OnceLock::new(),
            next_connection_id: AtomicU32::new(1),
            clients: AtomicUsize::new(0),
        })
    }

    pub fn main_pool(&self) -> &Arc<Pool> {
        &self.pools[0]
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

    /// Learn the main backend's version and start the health checks.
    async fn start_backends(self: &Arc<Self>) {
        if let Ok(conn) = self.main_pool().get(false).await {
            let _ = self.server_version.set(conn.server_version.clone());
        } else {
            tracing::warn!(backend = %self.main_pool().name(), "main backend unreachable at start");
        }
        let interval = Duration::from_millis(self.config.proxy.health_check_interval_ms.max(100));
        for pool in &self.pools {
            let pool = pool.clone();
            let ctx = Arc::downgrade(self);
            tokio::spawn(async move {
                loop {
                    pool.check(interval).await;
                    tokio::time::sleep(interval).await;
                    let Some(ctx) = ctx.upgrade() else { return };
                    if ctx.server_version.get().is_none() && Arc::ptr_eq(&pool, ctx.main_pool()) {
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

/// Serve clients on `listener` until `shutdown` completes.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let ctx = Context::new(config);
    ctx.start_backends().await;
    #[cfg(unix)]
    if let Some(path) = ctx.config.proxy.socket.clone() {
        let _ = std::fs::remove_file(&path);
        let unix = tokio::net::UnixListener::bind(&path)?;
        let ctx = ctx.clone();
        tokio::spawn(async move {
            loop {
                match unix.accept().await {
                    Ok((stream, _)) => {
                        tokio::spawn(crate::session::serve(stream, ctx.clone(), path.clone()));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "unix socket accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        });
    }
    tracing::info!(listen = %listener.local_addr()?, backends = ctx.pools.len(), "hscale is serving");
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(crate::session::serve(stream, ctx.clone(), peer.to_string()));
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    tracing::info!("hscale stopped");
    Ok(())
}

/// A proxy running on its own runtime in a background thread (used by the
/// playground and the test harness).
pub struct RunningProxy {
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningProxy {
    /// Start on `listen` (port 0 picks a free port).
    pub fn start(config: Config, listen: &str) -> std::io::Result<RunningProxy> {
        let workers = config.worker_threads();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("hscale-worker")
            .enable_all()
            .build()?;
        let std_listener = bind(listen)?;
        let addr = std_listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("hscale-proxy".into())
            .spawn(move || {
                runtime.block_on(async move {
                    match TcpListener::from_std(std_listener) {
                        Ok(listener) => {
                            let _ = run(config, listener, async {
                                let _ = rx.await;
                            })
                            .await;
                        }
                        Err(e) => tracing::error!(error = %e, "cannot listen"),
                    }
                });
                runtime.shutdown_timeout(Duration::from_secs(1));
            })?;
        Ok(RunningProxy {
            addr,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        self.stop();
    }
}
