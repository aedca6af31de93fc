//! A pool of connections to one backend.
//!
//! Checkout is cheap on the fast path: a slot taken from the pool's
//! [`FairSlots`] (one uncontended lock; a session waits only when the pool
//! is exhausted, and waiting sessions are served fairly across users,
//! `backend/fair.rs`) and a pop from a lock-free queue.
//! The [`PooledConn`] guard returns the connection on drop without doing
//! I/O; broken connections are closed instead, and one holding session
//! state the pool cannot keep is reset in a task of its own first. A health-check task pings
//! idle connections and keeps `min_connections` open.
//!
//! Partition and schema commands borrow with [`Pool::get_own`]: they hold
//! several connections of one backend at once (the dictionary, a copy's
//! source and destination, the fence), so on a pool they have filled
//! themselves they would wait for their own connections until the acquire
//! timeout. After a short wait for a slot, such a command opens one of at
//! most [`MAX_OWN_EXTRA`] connections past `max_connections`, closed when
//! it is returned.

mod primary_check;

use hscale_route::BackendId;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;

use crate::backend::fair::{Claim, FairSlots, UserSlots};
use crate::backend::state::SelectLimit;
use crate::backend::tls::BackendTls;
use crate::backend::{BackendConn, BackendWatch};
use crate::config::BackendConfig;
use crate::error::ProxyError;

pub struct Pool {
    pub cfg: BackendConfig,
    /// TLS to this backend (`[[backends]] tls`), shared by every pool of it.
    tls: Option<Arc<BackendTls>>,
    /// Position of the backend in the config.
    pub backend_id: BackendId,
    /// Idle connections, without and with `CLIENT_FOUND_ROWS`.
    /// Boxed: a checkout, a return and every handing on between them
    /// move a pointer, not the connection's buffers and state.
    idle: [ArrayQueue<Box<BackendConn>>; 2],
    /// The `max_connections` connections that may be handed out.
    slots: FairSlots,
    open: AtomicUsize,
    is_up: AtomicBool,
    /// Shared with every connection to this backend, on every worker.
    pub watch: Arc<BackendWatch>,
    connect_timeout: Duration,
    acquire_timeout: Duration,
    connects: AtomicU64,
    connect_failures: AtomicU64,
    /// Connections open past `max_connections` for partition and schema
    /// commands ([`Pool::get_own`]).
    extra: AtomicUsize,
    /// A pool of the primary of a backend with replicas (a switchover or
    /// failover can move it): every connection it opens checks that the
    /// server is writable ([`Pool::connect`]).
    checks_read_only: bool,
    /// For a backend other than the main one: its worker's pool of the
    /// main backend, whose dictionary confirms the primary
    /// (`pool/primary_check.rs`; unset: the main backend itself).
    dictionary: std::sync::OnceLock<Arc<Pool>>,
    /// Pipelined lanes of this pool's worker (`lane.rs`).
    pub lanes: super::lane::Lanes,
}

/// Counters shown by `HSCALE SHOW BACKENDS` and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    pub open: usize,
    pub idle: usize,
    pub is_up: bool,
    pub connects: u64,
    pub connect_failures: u64,
    /// Connections lent out now.
    pub in_use: usize,
    /// Checkouts waiting now, and the waits so far.
    pub waiting: usize,
    pub waits: u64,
}

/// How long `Pool::get` waits for a connection out for a ping before it
/// opens another (ms).
const MAX_WAIT_FOR_PINGED_MS: u32 = 50;

/// How long a partition or schema command waits for one of the pool's
/// slots before it opens a connection past `max_connections`.
const OWN_WAIT: Duration = Duration::from_millis(20);

/// At most this many connections past `max_connections` per pool, for
/// partition and schema commands; beyond them they wait like statements.
pub const MAX_OWN_EXTRA: usize = 8;

impl Pool {
    pub fn new(
        cfg: BackendConfig,
        backend_id: BackendId,
        connect_timeout: Duration,
        acquire_timeout: Duration,
        watch: Arc<BackendWatch>,
        tls: Option<Arc<BackendTls>>,
        is_primary: bool,
    ) -> Arc<Pool> {
        let max = cfg.max_connections.max(1);
        Arc::new(Pool {
            idle: [ArrayQueue::new(max), ArrayQueue::new(max)],
            slots: FairSlots::new(max),
            open: AtomicUsize::new(0),
            is_up: AtomicBool::new(true),
            watch,
            connect_timeout,
            acquire_timeout,
            connects: AtomicU64::new(0),
            connect_failures: AtomicU64::new(0),
            extra: AtomicUsize::new(0),
            checks_read_only: is_primary && !cfg.replicas.is_empty(),
            dictionary: std::sync::OnceLock::new(),
            lanes: Default::default(),
            backend_id,
            cfg,
            tls,
        })
    }

    /// Confirm this backend's primary against `main`'s dictionary (the
    /// main backend's pool of the same worker), see `primary_check.rs`.
    pub fn confirm_against(&self, main: Arc<Pool>) {
        let _ = self.dictionary.set(main);
    }

    pub fn name(&self) -> &str {
        &self.cfg.name
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            open: self.open.load(Ordering::Relaxed),
            idle: self.idle[0].len() + self.idle[1].len(),
            is_up: self.is_up.load(Ordering::Relaxed) && !self.watch.is_frozen(),
            connects: self.connects.load(Ordering::Relaxed),
            connect_failures: self.connect_failures.load(Ordering::Relaxed),
            in_use: self.slots.in_use(),
            waiting: self.slots.waiting.load(Ordering::Relaxed),
            waits: self.slots.waits.load(Ordering::Relaxed),
        }
    }

    /// Connections lent out now.
    pub fn in_use(&self) -> usize {
        self.slots.in_use()
    }

    /// Slots held and waiters per user index, for `HSCALE SHOW USERS`.
    pub fn per_user(&self) -> Vec<(usize, UserSlots)> {
        self.slots.per_user()
    }

    /// Take one of `max_connections` slots, waiting up to the acquire timeout.
    async fn take(&self, claim: Claim) -> Result<(), ProxyError> {
        if self.slots.take(claim, self.acquire_timeout).await {
            return Ok(());
        }
        Err(ProxyError::PoolTimeout {
            backend: self.cfg.name.clone(),
            ms: self.acquire_timeout.as_millis() as u64,
        })
    }

    /// Borrow a connection for the proxy's own work ([`Claim::PROXY`]),
    /// in the server's default session (`BackendConn::own_session`).
    pub async fn get(self: &Arc<Self>, is_found_rows: bool) -> Result<PooledConn, ProxyError> {
        let mut c = self.get_as(Claim::PROXY, is_found_rows).await?;
        c.own_session().await?;
        Ok(c)
    }

    /// Borrow a connection for a partition or schema command, which may
    /// hold others of this pool already: a slot if one comes within
    /// [`OWN_WAIT`], else a connection of its own past `max_connections`
    /// (at most [`MAX_OWN_EXTRA`] at once; closed when returned), else a
    /// wait as [`Pool::get`]. In the server's default session, as
    /// [`Pool::get`].
    pub async fn get_own(self: &Arc<Self>) -> Result<PooledConn, ProxyError> {
        let mut c = self.get_own_any().await?;
        c.own_session().await?;
        Ok(c)
    }

    async fn get_own_any(self: &Arc<Self>) -> Result<PooledConn, ProxyError> {
        self.refuse_if_frozen()?;
        if self.slots.take(Claim::PROXY, OWN_WAIT).await {
            let slot = Slot {
                pool: self.clone(),
                user: Claim::PROXY.index,
                is_held: true,
                is_extra: false,
            };
            return self.checkout(slot, false, false).await;
        }
        if self.extra.fetch_add(1, Ordering::Relaxed) < MAX_OWN_EXTRA {
            // Counted from here; the slot's drop uncounts it.
            let slot = Slot {
                pool: self.clone(),
                user: Claim::PROXY.index,
                is_held: false,
                is_extra: true,
            };
            let conn = self.connect(false, false).await?;
            return Ok(PooledConn {
                conn: Some(Box::new(conn)),
                slot,
            });
        }
        self.extra.fetch_sub(1, Ordering::Relaxed);
        self.get(false).await
    }

    /// Neither frozen (no reply to a ping) nor refusing connections (the
    /// last connect failed; the next one that succeeds lifts it).
    pub fn is_reachable(&self) -> bool {
        self.is_up.load(Ordering::Relaxed) && !self.watch.is_frozen()
    }

    /// Another connection to the same server succeeded (the replica
    /// monitor's, `backend/replicas.rs`): a failed connect of this pool no
    /// longer counts it down.
    pub fn note_reachable(&self) {
        self.is_up.store(true, Ordering::Relaxed);
    }

    /// Connections open past `max_connections` for partition and schema
    /// commands now.
    pub fn extra(&self) -> usize {
        self.extra.load(Ordering::Relaxed)
    }

    fn refuse_if_frozen(&self) -> Result<(), ProxyError> {
        if !self.watch.is_frozen() {
            return Ok(());
        }
        // Fail at once: the health check probes it and lifts this.
        Err(ProxyError::BackendConnect {
            backend: self.cfg.name.clone(),
            address: self.cfg.address.clone(),
            reason: format!(
                "the backend is not answering (no reply to a health check within {} ms)",
                self.watch.ping_timeout.as_millis()
            ),
        })
    }

    /// Borrow a connection for a statement of `claim`'s user, waiting up
    /// to the acquire timeout for one to be free (in the user's queue
    /// while the pool is busy, `backend/fair.rs`).
    pub async fn get_as(
        self: &Arc<Self>,
        claim: Claim,
        is_found_rows: bool,
    ) -> Result<PooledConn, ProxyError> {
        self.refuse_if_frozen()?;
        self.take(claim).await?;
        // Given back if this checkout fails or is dropped half-way.
        let slot = Slot {
            pool: self.clone(),
            user: claim.index,
            is_held: true,
            is_extra: false,
        };
        self.checkout(slot, is_found_rows, true).await
    }

    /// [`Pool::get_as`] without waiting: `None` when no slot is free now.
    /// For a part a statement only sends ahead (`exec/scatter.rs`): a
    /// session that waited for it while holding the parts it sent could
    /// wait for sessions that wait for its own, until the acquire timeout.
    pub async fn try_get_as(
        self: &Arc<Self>,
        claim: Claim,
        is_found_rows: bool,
    ) -> Option<Result<PooledConn, ProxyError>> {
        if self.watch.is_frozen() || !self.slots.try_take(claim) {
            return None;
        }
        let slot = Slot {
            pool: self.clone(),
            user: claim.index,
            is_held: true,
            is_extra: false,
        };
        Some(self.checkout(slot, is_found_rows, true).await)
    }

    /// A connection for a slot taken: an idle one, or a new one (`waits`:
    /// see [`Pool::connect`]).
    async fn checkout(
        self: &Arc<Self>,
        slot: Slot,
        is_found_rows: bool,
        waits: bool,
    ) -> Result<PooledConn, ProxyError> {
        let variant = usize::from(is_found_rows);
        // A connection out of the idle queue for a health check's ping
        // comes back in a moment: wait for it (a few ms at most) rather
        // than open one past `max_connections`.
        let max = self.cfg.max_connections.max(1);
        let mut waited = 0;
        // (An idle one of the other kind is closed below instead.)
        while self.idle[variant].is_empty()
            && self.idle[1 - variant].is_empty()
            && self.open.load(Ordering::Relaxed) >= max
            && waited < MAX_WAIT_FOR_PINGED_MS
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
            waited += 1;
        }
        while let Some(conn) = self.idle[variant].pop() {
            // A non-blocking read spots a peer that closed the connection
            // while it was idle (wait_timeout, KILL, a restart): one
            // syscall, so a statement is never sent to a closed connection
            // when it could have gone to a live one.
            if !conn.is_alive_quick() {
                self.open.fetch_sub(1, Ordering::Relaxed);
                continue;
            }
            // The backend's global defaults of session variables changed
            // since this connection took them: COM_RESET_CONNECTION takes
            // them again, as a new session on the server would (the
            // session's own SET items are replayed by the next sync).
            let defaults = self.watch.defaults();
            let mut conn = conn;
            if conn.defaults != defaults {
                // (Raised with the defaults:) a connection to the address
                // the backend had before a switchover is closed.
                if conn.address_generation != self.watch.address_generation() {
                    self.open.fetch_sub(1, Ordering::Relaxed);
                    continue;
                }
                if conn.reset().await.is_err() {
                    self.open.fetch_sub(1, Ordering::Relaxed);
                    continue;
                }
                conn.defaults = defaults;
            }
            return Ok(PooledConn {
                conn: Some(conn),
                slot,
            });
        }
        // Make room: an idle connection of the other kind is closed so that
        // open connections never exceed max_connections.
        if self.idle[1 - variant].pop().is_some() {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        let conn = self.connect(is_found_rows, waits).await?;
        Ok(PooledConn {
            conn: Some(Box::new(conn)),
            slot,
        })
    }

    /// The config to connect with: the backend's address now (the
    /// dictionary's after a switchover, `BackendWatch::address`).
    fn target(&self) -> std::borrow::Cow<'_, BackendConfig> {
        let address = self.watch.address(&self.cfg.address);
        if address == self.cfg.address {
            return std::borrow::Cow::Borrowed(&self.cfg);
        }
        std::borrow::Cow::Owned(BackendConfig {
            address,
            ..self.cfg.clone()
        })
    }

    /// The address connections go to now.
    pub fn address(&self) -> String {
        self.watch.address(&self.cfg.address)
    }

    /// A connection of its own to `address` (one server of this backend:
    /// its primary or a replica) with this pool's account and TLS, outside
    /// the pool and its watch: a switchover's connections to each server
    /// (`admin/failover.rs`). Closed when dropped.
    pub async fn connect_to(&self, address: &str) -> Result<BackendConn, ProxyError> {
        let cfg = BackendConfig {
            address: address.to_string(),
            ..self.cfg.clone()
        };
        let tls = self.tls.as_ref().map(|t| t.for_address(&self.cfg, address));
        let watch = Arc::new(BackendWatch::new(None, self.watch.ping_timeout));
        BackendConn::connect(&cfg, tls.as_ref(), false, self.connect_timeout, &watch).await
    }

    /// A new connection to the backend's primary, which must be writable:
    /// a server found read-only (`@@GLOBAL.read_only`, one query per
    /// connection opened, never per statement) is an old primary that a
    /// switchover or failover fenced, or is fencing, and hscale's account
    /// could write there despite `read_only` (READ_ONLY ADMIN). A
    /// statement's connect (`waits`) tries again every 100 ms, at the
    /// address the dictionary names by then, for up to the acquire
    /// timeout; the proxy's own work (a dictionary reload, a heartbeat,
    /// the health check) is refused at once, and the reload then looks
    /// for the main backend's primary (`partition::refresh::reload`).
    async fn connect(&self, is_found_rows: bool, waits: bool) -> Result<BackendConn, ProxyError> {
        let deadline = Instant::now() + self.acquire_timeout;
        loop {
            let mut conn = self.connect_once(is_found_rows).await?;
            if !self.checks_read_only {
                return Ok(conn);
            }
            let row = match conn.query_rows(primary_check::READ_ONLY_AND_START).await {
                Ok(Ok(r)) => r.strings().into_iter().next().unwrap_or_default(),
                Ok(Err(e)) => {
                    self.close(conn);
                    return Err(self.refused(format!("SELECT @@GLOBAL.read_only: {}", e.message)));
                }
                Err(e) => {
                    self.close(conn);
                    return Err(e);
                }
            };
            let cell = |i: usize| row.get(i).cloned().flatten();
            let address = self.address();
            let reason = if cell(0).as_deref() == Some("0") {
                // Writable: still the primary by the newest dictionary?
                let start = cell(1).and_then(|s| s.parse().ok());
                let generation = conn.address_generation;
                match self.confirm_primary(&mut conn, start).await {
                    primary_check::Confirmed::Primary => return Ok(conn),
                    primary_check::Confirmed::Retired(reason) => {
                        self.close(conn);
                        if self.watch.address_generation() != generation
                            && Instant::now() < deadline
                        {
                            // Moved to the primary named: try it at once.
                            continue;
                        }
                        reason
                    }
                }
            } else {
                self.close(conn);
                format!(
                    "the server at {address} is read-only, so it is not the backend's primary (a switchover or failover moved it, or is moving it): hscale writes only to a writable primary"
                )
            };
            if !waits || Instant::now() >= deadline {
                return Err(self.refused(reason));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn refused(&self, reason: String) -> ProxyError {
        ProxyError::BackendConnect {
            backend: self.cfg.name.clone(),
            address: self.address(),
            reason,
        }
    }

    async fn connect_once(&self, is_found_rows: bool) -> Result<BackendConn, ProxyError> {
        self.open.fetch_add(1, Ordering::Relaxed);
        // Read before connecting: a change during the connect resets it
        // (or, for the address, closes it at its next checkout).
        let defaults = self.watch.defaults();
        let generation = self.watch.address_generation();
        let target = self.target();
        match BackendConn::connect(
            &target,
            self.tls.as_deref(),
            is_found_rows,
            self.connect_timeout,
            &self.watch,
        )
        .await
        {
            Ok(mut c) => {
                c.defaults = defaults;
                c.address_generation = generation;
                self.connects.fetch_add(1, Ordering::Relaxed);
                if !self.watch.is_frozen() {
                    self.watch.note_up();
                }
                if !self.is_up.swap(true, Ordering::Relaxed) {
                    tracing::info!(backend = %self.cfg.name, "backend is reachable again");
                }
                Ok(c)
            }
            Err(e) => {
                self.open.fetch_sub(1, Ordering::Relaxed);
                self.connect_failures.fetch_add(1, Ordering::Relaxed);
                self.watch.note_down();
                if self.is_up.swap(false, Ordering::Relaxed) {
                    tracing::warn!(backend = %self.cfg.name, error = %e, "backend is unreachable");
                }
                Err(e)
            }
        }
    }

    /// Keep `conn` idle, or close it: broken, or still an XA branch (a
    /// branch whose end was not confirmed: closing rolls an active one
    /// back and leaves a prepared one to recovery; a reset could end a
    /// prepared branch's connection in a state later XA STARTs fail in).
    /// A connection holding session state the proxy's own queries must
    /// not meet never gets here: `PooledConn`'s drop resets it first.
    fn put_back(&self, mut conn: Box<BackendConn>) {
        if conn.is_broken || conn.is_xa_branch {
            self.close(conn);
            return;
        }
        conn.last_used = Instant::now();
        let variant = usize::from(conn.is_found_rows);
        if self.idle[variant].push(conn).is_err() {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Close `conn` (boxed or not), counting it out.
    fn close<C: std::borrow::BorrowMut<BackendConn>>(&self, conn: C) {
        drop(conn);
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// One round of health checks: ping connections idle for longer than
    /// `idle_for` (at least one idle connection each round), each within
    /// the ping timeout; open connections up to `min_connections`. A ping
    /// that times out marks the backend frozen: statements to it fail at
    /// once, and reads waiting on it give up. When no connection could be
    /// pinged while statements run on the backend, or while it is frozen,
    /// a probe connection (with the ping timeout) tells instead.
    pub async fn check(self: &Arc<Self>, idle_for: Duration) {
        let mut is_pinged = false;
        if !self.watch.is_frozen() {
            for variant in 0..2 {
                let n = self.idle[variant].len();
                for _ in 0..n {
                    let Some(mut conn) = self.idle[variant].pop() else {
                        break;
                    };
                    if !is_pinged || conn.last_used.elapsed() >= idle_for {
                        is_pinged = true;
                        self.ping(&mut conn).await;
                    }
                    self.put_back(conn);
                }
            }
        }
        let is_busy = self.slots.in_use() > 0;
        if !is_pinged && (is_busy || self.watch.is_frozen()) {
            let probe = BackendConn::connect(
                &self.target(),
                self.tls.as_deref(),
                false,
                self.watch.ping_timeout,
                &self.watch,
            )
            .await;
            if probe.is_ok() {
                if self.watch.set_frozen(false) {
                    tracing::info!(backend = %self.cfg.name, "backend answers again");
                }
                self.watch.note_up();
            }
        }
        while self.open.load(Ordering::Relaxed) < self.cfg.min_connections
            && !self.watch.is_frozen()
        {
            match self.connect(false, false).await {
                Ok(c) => self.put_back(Box::new(c)),
                Err(_) => break,
            }
        }
    }

    /// Look whether the backend's global defaults of session variables
    /// changed since the last look (`seen`: a digest of them), by a change
    /// that did not come through this proxy (another proxy, a client on
    /// the backend); if so, every pooled connection is reset before its
    /// next use. One small query (about 1.5 ms on the server), run for
    /// each backend by one worker per health-check round.
    pub async fn check_defaults(self: &Arc<Self>, seen: &mut Option<Vec<u8>>) {
        const DIGEST: &str = "SELECT MD5(GROUP_CONCAT(VARIABLE_NAME, '=', GLOBAL_VALUE \
             ORDER BY VARIABLE_NAME SEPARATOR '\\n')) FROM information_schema.SYSTEM_VARIABLES \
             WHERE VARIABLE_SCOPE = 'SESSION'";
        if self.watch.is_frozen() {
            return;
        }
        let Ok(mut conn) = self.get(false).await else {
            return;
        };
        let digest =
            match tokio::time::timeout(self.watch.ping_timeout, conn.query_rows(DIGEST)).await {
                Ok(Ok(Ok(r))) => r
                    .rows
                    .into_iter()
                    .next()
                    .and_then(|mut row| row.pop().flatten()),
                Ok(_) => None,
                Err(_) => {
                    // Cut off mid-answer: not reusable.
                    conn.is_broken = true;
                    None
                }
            };
        let Some(digest) = digest else { return };
        if seen.as_ref().is_some_and(|s| *s != digest) {
            tracing::info!(backend = %self.cfg.name, "global session defaults changed: pooled connections are reset before their next use");
            self.watch.defaults_changed();
        }
        *seen = Some(digest);
    }

    /// Ping one idle connection within the ping timeout.
    async fn ping(&self, conn: &mut BackendConn) {
        match tokio::time::timeout(self.watch.ping_timeout, conn.ping()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::info!(backend = %self.cfg.name, error = %e, "closing a dead idle connection");
                self.is_up.store(false, Ordering::Relaxed);
                self.watch.note_down();
            }
            Err(_) => {
                conn.is_broken = true;
                if self.watch.set_frozen(true) {
                    tracing::warn!(
                        backend = %self.cfg.name,
                        ms = self.watch.ping_timeout.as_millis() as u64,
                        "backend is frozen: no reply to a ping"
                    );
                }
            }
        }
    }
}

/// A connection given back still holding a session's `autocommit=0` (a
/// branch of a transaction across backends, synced to an ORM-style
/// session) or `sql_select_limit`: the proxy's own queries run on pooled
/// connections without a sync, and there a SELECT would open a
/// transaction that a later XA START meets as XAER_OUTSIDE, or a read of
/// the dictionary or the sequences would be cut short (by the limit, or by
/// `max_statement_time`, a tenant's `max_statement_ms`). Such a connection
/// is reset before it is pooled again. Other session variables are synced
/// back by the next session that borrows the connection.
fn holds_unpoolable_state(conn: &BackendConn) -> bool {
    !conn.vars.is_empty()
        && (conn.vars.holds_autocommit_off()
            || conn.vars.select_limit() != SelectLimit::Unset
            || conn.vars.has_statement_time())
}

/// One of a pool's `max_connections` slots; returned on drop unless it
/// was handed on (`hand_on`).
struct Slot {
    pool: Arc<Pool>,
    /// The user it is held for (`Claim::index`).
    user: usize,
    is_held: bool,
    /// A connection past `max_connections` (`Pool::get_own`): closed when
    /// returned, and uncounted.
    is_extra: bool,
}

impl Slot {
    /// This slot as a new value, leaving `self` empty: a connection being
    /// reset keeps its slot until it is pooled.
    fn hand_on(&mut self) -> Slot {
        Slot {
            pool: self.pool.clone(),
            user: self.user,
            is_held: std::mem::replace(&mut self.is_held, false),
            is_extra: std::mem::replace(&mut self.is_extra, false),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.is_held {
            self.pool.slots.give_back(self.user);
        }
        if self.is_extra {
            self.pool.extra.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A borrowed connection; dropping it returns the connection to its pool.
pub struct PooledConn {
    conn: Option<Box<BackendConn>>,
    slot: Slot,
}

impl PooledConn {
    pub fn pool(&self) -> &Arc<Pool> {
        &self.slot.pool
    }
}

impl Deref for PooledConn {
    type Target = BackendConn;
    fn deref(&self) -> &BackendConn {
        // The connection is only taken out in Drop.
        self.conn.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for PooledConn {
    fn deref_mut(&mut self) -> &mut BackendConn {
        self.conn.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for PooledConn {
    /// Back to the pool without I/O here. A connection holding state the
    /// pool cannot keep (`holds_unpoolable_state`) is reset with
    /// COM_RESET_CONNECTION in a task of its own, keeping its slot, then
    /// pooled (closed if the reset fails or the task never runs).
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        if self.slot.is_extra {
            self.slot.pool.close(conn);
            return;
        }
        let needs_reset = !conn.is_broken && !conn.is_xa_branch && holds_unpoolable_state(&conn);
        let runtime = needs_reset
            .then(tokio::runtime::Handle::try_current)
            .and_then(Result::ok);
        match runtime {
            Some(rt) => {
                // Closed, not reset again, if dropped before the reset ends.
                conn.is_broken = true;
                let mut held = PooledConn {
                    conn: Some(conn),
                    slot: self.slot.hand_on(),
                };
                rt.spawn(async move {
                    let defaults = held.pool().watch.defaults();
                    if held.reset().await.is_ok() {
                        // The server took the globals again (`conn.rs`
                        // says what a reset leaves).
                        held.defaults = defaults;
                        held.is_broken = false;
                    }
                });
            }
            // No runtime to reset it on: closed.
            None if needs_reset => self.slot.pool.close(conn),
            None => self.slot.pool.put_back(conn),
        }
    }
}
