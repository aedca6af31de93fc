//! Worker threads and the listener; the shared state is [`crate::runtime::Context`].
//!
//! hscale runs one single-threaded tokio runtime per worker thread (one per
//! core by default). Every worker accepts from the same listening socket and
//! owns its own pool for each backend, so a session, its backend
//! connections and their sockets all live on one thread: no task is ever
//! woken across threads on the statement path. Measured on two cores, the
//! shared multi-threaded runtime cost about 25% more CPU per statement
//! (see bench/RESULTS.md).
//!
//! Whichever worker wakes first takes a connection from the shared
//! socket, so a burst of connects would land on one worker and leave the
//! others idle; a worker that accepts a connection while another serves
//! fewer hands it over (`Context::place_connection`, the worker's
//! inbox). That is the only time a connection crosses threads.

use hscale_route::BackendId;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::config::Config;
use crate::exec::SharedReads;
use crate::runtime::Context;

/// On worker `worker`: learn the main backend's version, then run the
/// health checks of this worker's pools.
async fn start_backends(ctx: &Arc<Context>, worker: usize) {
    if ctx.server_version.get().is_none() || !ctx.has_collations() {
        match ctx.pool(worker, BackendId::MAIN).get(false).await {
            Ok(mut conn) => ctx.learn_main_backend(&mut conn).await,
            Err(e) => tracing::warn!(error = %e, "main backend unreachable at start"),
        }
    }
    if worker == 0 {
        if let Err(e) = crate::partition::refresh::reload(ctx, worker).await {
            tracing::warn!(error = %e, "cannot read the partition dictionary yet");
        }
        if let Err(e) = crate::exec::txn::recovery::ensure_decisions(ctx, worker).await {
            tracing::warn!(error = %e, "cannot create hscale.decisions yet");
        }
        crate::exec::txn::checks::check_all(ctx, worker).await;
    }
    if !ctx.replicas.is_empty() {
        tokio::spawn(replica_monitor(Arc::downgrade(ctx), worker));
    }
    if worker == 0 && !ctx.replicas.is_empty() && ctx.config.proxy.failover_after_ms > 0 {
        tokio::spawn(crate::admin::failover_watch(Arc::downgrade(ctx), worker));
    }
    if worker == 0 {
        tokio::spawn(crate::fleet::serve(Arc::downgrade(ctx), worker));
        tokio::spawn(crate::admin::auto_partition::serve(
            Arc::downgrade(ctx),
            worker,
        ));
        // Changes made through other proxies arrive within reload_interval.
        let every = Duration::from_millis(ctx.config.proxy.reload_interval_ms.max(50));
        let weak = Arc::downgrade(ctx);
        // The reload on a loop of its own: the housekeeping below borrows
        // backend connections as statements do, which wait (up to the
        // acquire timeout) for a primary that a switchover fenced, and
        // the reload is what moves this proxy off it.
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(ctx) = weak.upgrade() else { return };
                let reloaded = crate::partition::refresh::reload_if_idle(&ctx, worker).await;
                if let Err(e) = &reloaded {
                    tracing::debug!(error = %e, "dictionary reload failed");
                }
                // A switchover whose proxy died half-way.
                if let Err(e) = crate::admin::resume_switches(&ctx, worker, reloaded.is_err()).await
                {
                    tracing::debug!(error = %e, "looking for switchovers cut short failed");
                }
            }
        });
        let ctx = Arc::downgrade(ctx);
        tokio::spawn(async move {
            // Transactions across backends record their decisions in
            // hscale.decisions on each backend; recovery runs every round.
            let mut has_decisions = false;
            // The dictionary version whose partitions' definitions were
            // last compared (`admin::check_definitions`).
            let mut checked = None;
            loop {
                tokio::time::sleep(every).await;
                let Some(ctx) = ctx.upgrade() else { return };
                let version = ctx.partitioning.version();
                if checked != Some(version) {
                    match crate::admin::check_definitions(&ctx, worker).await {
                        Ok(_) => checked = Some(version),
                        Err(e) => {
                            tracing::debug!(error = %e, "comparing partitions' definitions failed")
                        }
                    }
                }
                if let Err(e) = crate::admin::take_over(&ctx, worker).await {
                    tracing::debug!(error = %e, "taking over partition changes failed");
                }
                if !has_decisions {
                    match crate::exec::txn::recovery::ensure_decisions(&ctx, worker).await {
                        Ok(()) => has_decisions = true,
                        Err(e) => tracing::debug!(error = %e, "cannot create hscale.decisions yet"),
                    }
                }
                if let Err(e) = crate::exec::txn::recovery::resolve(&ctx, worker).await {
                    tracing::debug!(error = %e, "recovering prepared transaction branches failed");
                }
            }
        });
    }
    let interval = Duration::from_millis(ctx.config.proxy.health_check_interval_ms.max(100));
    for pool in ctx.worker_pools(worker) {
        let pool = pool.clone();
        let ctx = Arc::downgrade(ctx);
        tokio::spawn(async move {
            // Worker 0 looks for global defaults changed outside this proxy
            // (every worker's pools share the backend's `BackendWatch`).
            let mut defaults = None;
            loop {
                pool.check(interval).await;
                if worker == 0 {
                    pool.check_defaults(&mut defaults).await;
                }
                tokio::time::sleep(interval).await;
                let Some(ctx) = ctx.upgrade() else { return };
                let is_loaded = ctx
                    .partitioning
                    .is_loaded
                    .load(std::sync::atomic::Ordering::Relaxed);
                if worker == 0
                    && !is_loaded
                    && Arc::ptr_eq(&pool, ctx.pool(worker, BackendId::MAIN))
                {
                    let _ = crate::partition::refresh::reload(&ctx, worker).await;
                }
                if (ctx.server_version.get().is_none() || !ctx.has_collations())
                    && Arc::ptr_eq(&pool, ctx.pool(worker, BackendId::MAIN))
                {
                    if let Ok(mut conn) = pool.get(false).await {
                        ctx.learn_main_backend(&mut conn).await;
                    }
                }
            }
        });
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

/// Sent to the workers: `Some(deadline)` stops accepting; sessions still
/// open may finish until the deadline.
type Stop = Option<std::time::Instant>;

/// A connection another worker accepted, handed to this one to serve.
type Handoff = (
    std::net::TcpStream,
    std::net::SocketAddr,
    crate::runtime::WorkerSlot,
);

/// Every worker's inbox of connections handed over.
type Inboxes = Arc<[tokio::sync::mpsc::UnboundedSender<Handoff>]>;

/// What a session is served with: the proxy's shared state and the
/// executors' shared reads (`exec/shared_reads.rs`).
type Served<'a> = (&'a Arc<Context>, &'a SharedReads);

/// Serve a TCP client on this worker, counted in its `slot`.
fn serve_tcp(
    (ctx, reads): Served<'_>,
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    slot: crate::runtime::WorkerSlot,
) {
    let _ = stream.set_nodelay(true);
    let (ctx, reads) = (ctx.clone(), reads.clone());
    tokio::spawn(async move {
        let worker = slot.worker();
        crate::session::serve(stream, ctx, reads, worker, peer.to_string(), false).await;
        drop(slot);
    });
}

/// A connection this worker accepted: served here, or handed to the
/// worker serving the fewest.
fn place(
    (ctx, reads): Served<'_>,
    worker: usize,
    inboxes: &Inboxes,
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
) {
    let slot = ctx.place_connection(worker);
    if slot.worker() == worker {
        return serve_tcp((ctx, reads), stream, peer, slot);
    }
    let target = slot.worker();
    match stream.into_std() {
        Ok(std) => {
            if let Err(tokio::sync::mpsc::error::SendError((std, peer, _))) =
                inboxes[target].send((std, peer, slot))
            {
                // That worker has stopped: serve it here.
                match tokio::net::TcpStream::from_std(std) {
                    Ok(stream) => serve_tcp((ctx, reads), stream, peer, ctx.worker_slot(worker)),
                    Err(e) => tracing::warn!(error = %e, "taking back a connection failed"),
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "handing over a connection failed"),
    }
}

/// One worker: accept clients and serve them on this thread until `stop`,
/// then wait (up to the stop's deadline) for the proxy's sessions to end.
async fn worker_loop(
    (ctx, reads): (Arc<Context>, SharedReads),
    worker: usize,
    listener: std::net::TcpListener,
    (inboxes, mut inbox): (Inboxes, tokio::sync::mpsc::UnboundedReceiver<Handoff>),
    mut stop: tokio::sync::watch::Receiver<Stop>,
) -> std::io::Result<()> {
    let listener = TcpListener::from_std(listener)?;
    start_backends(&ctx, worker).await;
    #[cfg(unix)]
    if worker == 0 {
        if let Some(path) = ctx.config.proxy.socket.clone() {
            let _ = std::fs::remove_file(&path);
            let unix = tokio::net::UnixListener::bind(&path)?;
            let (ctx, reads) = (ctx.clone(), reads.clone());
            tokio::spawn(async move {
                loop {
                    let accepted = unix.accept().await;
                    if ctx.is_draining() {
                        return;
                    }
                    match accepted {
                        Ok((stream, _)) => {
                            tokio::spawn(crate::session::serve(
                                stream,
                                ctx.clone(),
                                reads.clone(),
                                worker,
                                path.clone(),
                                true,
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
            Some((std, peer, slot)) = inbox.recv() => match tokio::net::TcpStream::from_std(std) {
                Ok(stream) => serve_tcp((&ctx, &reads), stream, peer, slot),
                Err(e) => tracing::warn!(error = %e, "taking a connection handed over failed"),
            },
            r = listener.accept() => match r {
                Ok((stream, peer)) => place((&ctx, &reads), worker, &inboxes, stream, peer),
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    // Stop accepting: this worker's copy of the listening socket closes.
    drop(listener);
    let deadline = (*stop.borrow()).unwrap_or_else(std::time::Instant::now);
    while ctx.open_sessions() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if worker == 0 {
        crate::fleet::leave(&ctx, worker, Duration::from_secs(1)).await;
    }
    Ok(())
}

/// What `hscale serve` was told to do by a signal.
pub enum Signal {
    /// SIGTERM or Ctrl-C: shut down gracefully.
    Stop,
    /// SIGHUP: reload users and limits from the config file.
    Reload,
}

/// Wait for SIGTERM, Ctrl-C or SIGHUP (`hscale serve`).
pub async fn next_signal(hup: &mut Option<tokio::signal::unix::Signal>) -> Signal {
    tokio::select! {
        _ = shutdown_signal() => Signal::Stop,
        _ = async {
            match hup.as_mut() {
                Some(h) => { h.recv().await; }
                None => std::future::pending::<()>().await,
            }
        } => Signal::Reload,
    }
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

/// What `/metrics` reads at each scrape: the counters and the gauges of
/// the proxy's `Context`, for as long as it lives.
struct Scraped(std::sync::Weak<Context>, SharedReads);

impl crate::metrics::exposition::Source for Scraped {
    fn scrape(
        &self,
        f: &mut dyn FnMut(
            &crate::metrics::Metrics,
            &crate::metrics::exposition::Live,
        ) -> std::fmt::Result,
    ) -> std::fmt::Result {
        let Some(ctx) = self.0.upgrade() else {
            return Ok(());
        };
        let (in_flight, waiting) = self.1.coalescer.sample();
        let (coalesce_in_flight, coalesce_waiting) = (in_flight as u64, waiting as u64);
        let live = crate::metrics::exposition::Live {
            pools: ctx.pool_samples(),
            users: ctx
                .user_rows()
                .into_iter()
                .map(|r| crate::metrics::exposition::UserSample {
                    user: r.user,
                    connections: r.connections,
                    statements: r.statements,
                    waiting: r.waiting,
                    throttled: r.throttled,
                    refused: r.refused,
                    killed: r.killed,
                    refused_connections: r.refused_connections,
                    backend_connections: r.backend_connections,
                    p99_seconds: r.p99_us as f64 / 1e6,
                })
                .collect(),
            workers: ctx.worker_loads(),
            result_cache: self.1.cache.as_ref().map(|c| c.sample()),
            coalesce_in_flight,
            coalesce_waiting,
        };
        f(&ctx.metrics, &live)
    }
}

/// Each worker thread's stack.
const WORKER_STACK_BYTES: usize = 16 << 20;

/// A running proxy: its worker threads and how to stop them. Used by
/// `hscale serve`, the playground and the tests.
pub struct RunningProxy {
    pub addr: std::net::SocketAddr,
    /// Where `/metrics` is served (`[metrics] listen`), if anywhere.
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Where the HTTP API is served (`[http] listen`), if anywhere.
    pub http_addr: Option<std::net::SocketAddr>,
    pub context: Arc<Context>,
    /// The coalescer and result cache its sessions share.
    reads: SharedReads,
    stop: tokio::sync::watch::Sender<Stop>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl RunningProxy {
    /// Start serving on `listen` (port 0 picks a free port).
    pub fn start(config: Config, listen: &str) -> std::io::Result<RunningProxy> {
        let listener = bind(listen)?;
        let addr = listener.local_addr()?;
        let tls = crate::tls::acceptor(&config.tls)?;
        let backend_tls = crate::backend::tls::connectors(&config.backends)?;
        let reads = SharedReads::new(&config);
        let kept = reads.clone();
        let ctx = Context::new(config, tls, backend_tls);
        ctx.fleet.set_address(addr);
        let (stop, stop_rx) = tokio::sync::watch::channel(None);
        let mut threads = Vec::new();
        let mut metrics_addr = None;
        if !ctx.config.metrics.listen.is_empty() {
            let listener = std::net::TcpListener::bind(&ctx.config.metrics.listen)?;
            listener.set_nonblocking(true)?;
            metrics_addr = Some(listener.local_addr()?);
            let registry =
                crate::metrics::exposition::registry(Scraped(Arc::downgrade(&ctx), reads.clone()));
            threads.push(crate::http::spawn(
                listener,
                crate::http::routes(Arc::new(registry)),
                None,
                stop_rx.clone(),
            )?);
        }
        let mut http_addr = None;
        if !ctx.config.http.listen.is_empty() {
            // Never plain HTTP when HTTPS was asked for.
            let http_tls = match ctx.config.http.tls {
                true => Some(crate::tls::http_acceptor(&ctx.config.tls)?.ok_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "[http] tls = true needs [tls] cert and key",
                    )
                })?),
                false => None,
            };
            let listener = std::net::TcpListener::bind(&ctx.config.http.listen)?;
            listener.set_nonblocking(true)?;
            http_addr = Some(listener.local_addr()?);
            threads.push(crate::http::spawn(
                listener,
                crate::http_api::routes(addr, &ctx),
                http_tls,
                stop_rx.clone(),
            )?);
        }
        let (senders, mut receivers): (Vec<_>, Vec<_>) = (0..ctx.workers())
            .map(|_| tokio::sync::mpsc::unbounded_channel())
            .unzip();
        let inboxes: Inboxes = senders.into();
        for worker in 0..ctx.workers() {
            let listener = listener.try_clone()?;
            let inbox = (inboxes.clone(), receivers.remove(0));
            let (ctx, reads) = (ctx.clone(), reads.clone());
            let stop_rx = stop_rx.clone();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            threads.push(
                std::thread::Builder::new()
                    .name(format!("hscale-worker-{worker}"))
                    // A session's statement runs as nested futures polled
                    // on this thread's stack: 2 MiB (the default) overflowed
                    // in a debug build's differential suite. Virtual
                    // memory only until used.
                    .stack_size(WORKER_STACK_BYTES)
                    .spawn(move || {
                        crate::planning::count_weights_into(
                            ctx.metrics.worker(worker).weight_counters(),
                        );
                        if let Err(e) = runtime.block_on(worker_loop(
                            (ctx, reads),
                            worker,
                            listener,
                            inbox,
                            stop_rx,
                        )) {
                            tracing::error!(worker, error = %e, "worker stopped");
                        }
                        runtime.shutdown_timeout(Duration::from_secs(1));
                    })?,
            );
        }
        tracing::info!(listen = %addr, workers = threads.len(), backends = ctx.config.backends.len(), "hscale is serving");
        if let Some(m) = metrics_addr {
            tracing::info!(metrics = %m, "serving /metrics");
        }
        if let Some(h) = http_addr {
            tracing::info!(http = %h, "serving the HTTP API");
        }
        Ok(RunningProxy {
            addr,
            metrics_addr,
            http_addr,
            context: ctx,
            reads: kept,
            stop,
            threads,
        })
    }

    /// SIGHUP: [`Context::reload`], and the result cache's rules of the
    /// config file (`[[cache.rules]]`). Returns the settings that changed
    /// but need a restart.
    pub fn reload(&self, config: &Config) -> Vec<&'static str> {
        if let Some(cache) = &self.reads.cache {
            cache.set_local(&config.cache);
        }
        self.context.reload(config)
    }

    /// Stop at once: open sessions end with the worker threads.
    pub fn stop(&mut self) {
        self.shutdown(Duration::ZERO);
    }

    /// Stop gracefully (SIGTERM): stop accepting, close idle sessions, let
    /// running statements finish for up to `timeout`, then stop.
    pub fn shutdown(&mut self, timeout: Duration) {
        if self.threads.is_empty() {
            return;
        }
        let _ = self.stop.send(Some(std::time::Instant::now() + timeout));
        self.context.begin_drain();
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

/// The replica monitor (`backend/replicas.rs`) on worker `worker`: on worker 0 (once per proxy) every
/// `replica_check_interval_ms` a look at each replica, all at once; on
/// every worker, every health-check interval, the health checks of its
/// replica pools that hold connections. Ends with the proxy.
async fn replica_monitor(ctx: std::sync::Weak<Context>, worker: usize) {
    let Some(first) = ctx.upgrade() else { return };
    let health = Duration::from_millis(first.config.proxy.health_check_interval_ms.max(100));
    let every = match worker {
        0 => Duration::from_millis(first.config.proxy.replica_check_interval_ms.max(10)),
        _ => health,
    };
    drop(first);
    let mut last_health = tokio::time::Instant::now();
    loop {
        let Some(ctx) = ctx.upgrade() else { return };
        let max_lag = ctx.config.proxy.replica_max_lag_ms;
        if worker == 0 {
            let main = ctx.pool(worker, BackendId::MAIN);
            let looks =
                (0..ctx.replicas.list.len()).map(|r| ctx.replicas.look(worker, r, max_lag, main));
            futures_util::future::join_all(looks).await;
        }
        if last_health.elapsed() >= health {
            last_health = tokio::time::Instant::now();
            for pool in ctx.replicas.worker_pools(worker) {
                // (A frozen one is probed: nothing else lifts it.)
                if pool.stats().open > 0 || pool.watch.is_frozen() {
                    pool.check(health).await;
                }
            }
        }
        drop(ctx);
        tokio::time::sleep(every).await;
    }
}
