//! The backend connections a session holds ([`Bindings`]): the only place
//! a statement borrows a connection (`lease`), brings it to the session's
//! state (database, SET items, options, last insert id, a deferred BEGIN),
//! records what the statement did to the session (`finish`) and keeps it
//! (pinned) or gives it back. Every connection a statement runs on is
//! registered with the session's [`SessionHandle`] while it runs
//! ([`Bindings::running`]), so KILL QUERY reaches every part of a statement
//! spread over several connections.
//!
//! ```text
//!  lease(backend) ─► pinned conn of that backend, or pool.get ─► sync ─► [run] ─► finish
//!                                                                          │
//!                        pins non-empty: keep as pinned ◄──────────────────┤
//!                        pins empty: drop the guard (back to the pool) ◄───┘
//! ```
//! A transaction that reaches a second backend gets a branch there
//! (`txn/mod.rs`): `lease` of that backend returns the branch, `finish` puts it
//! back; the pinned connection stays the transaction's home branch.

use hscale_route::BackendId;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use hscale_sql::{Pins, SessionChange};
use hscale_wire::consts::{com, status};
use hscale_wire::response::ErrPacket;

use super::forward::Outcome;
use super::scratch::StatementScratch;
use super::txn::lead_in::LeadIn;
use super::Effects;
use crate::backend::state::{SessionState, SessionVars};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::runtime::{Context, SessionHandle};

/// Every backend connection one client session holds, and the session state
/// that is replayed onto them.
pub struct Bindings {
    pub(super) ctx: Arc<Context>,
    /// The reads every session shares: coalescing and the result cache.
    pub(super) reads: super::SharedReads,
    /// The worker thread this session runs on; it borrows from that worker's pools.
    pub(super) worker: usize,
    /// The backend account the session's statements run as
    /// (`Config::identity` of its user; `Context::pool_as`).
    pub(super) identity: usize,
    /// The session's user as a tenant (`crate::tenant`): its backend
    /// connections are borrowed with `tenant.claim()`.
    pub(super) tenant: crate::tenant::TenantConnection,
    pub(super) connection_id: u32,
    pub(super) state: SessionState,
    /// Session variables right after login (the handshake character set).
    pub(super) base_vars: Arc<SessionVars>,
    /// The connection the session is bound to while any pin is set.
    pub(super) pinned: Option<PooledConn>,
    pub(super) pins: Pins,
    /// A `BEGIN` / `START TRANSACTION` not sent yet: it goes to the backend
    /// of the transaction's first statement, so that a transaction on a
    /// partition's backend does not start on the main backend.
    pub(super) pending_begin: Option<Bytes>,
    /// Shared with KILL from other sessions.
    pub(super) handle: Arc<SessionHandle>,
    /// The client asked for CLIENT_FOUND_ROWS.
    pub(super) is_found_rows: bool,
    /// The stored dictionary version the last statement was planned with
    /// (the fence waits for a newer one after a stale route).
    pub(super) planned_version: u64,
    /// The branches of a transaction that reached more than one backend
    /// (the home branch is `pinned`).
    pub(super) txn: Option<super::txn::Txn>,
    /// A statement that may write ran in the home branch's transaction.
    pub(super) home_written: bool,
    /// The open transaction was started READ ONLY.
    pub(super) is_read_only_txn: bool,
    /// A backend connection holding session state (pinned: a transaction,
    /// temporary tables, locks, ...) was lost: the client connection is
    /// closed without an answer, as a server's would be, so the client
    /// sees 2013 and its pool discards the connection.
    pub(super) is_bound_lost: bool,
    /// The statement running neither reads nor sets session-bound state:
    /// while the session is pinned only by its user variables, its parts
    /// on other backends may borrow pooled connections beside the pinned
    /// one (`acquire`; set by `exec/steps/user_vars.rs` and
    /// `select_into.rs`, cleared by [`Self::new_statement`]).
    pub(super) may_borrow_beside: bool,
    /// The statement running reached hscale under NO_BACKSLASH_ESCAPES
    /// with its strings' backslashes doubled (`exec/sql_mode.rs`): what it
    /// sends a backend has them undoubled (`Plan::Targets` and key
    /// conversions only).
    pub(super) is_undoubling: bool,
    /// The open transaction's savepoints (`txn/savepoint.rs`), set again on
    /// every branch that joins it.
    pub(super) savepoints: super::txn::savepoint::Savepoints,
    /// The current statement is a latin1 client's text the proxy read as
    /// UTF-8 (`session/query.rs`): the connections it runs on hold
    /// `character_set_client` utf8mb4 while it runs
    /// (`SessionVars::with_utf8_client`); the next statement's sync sets
    /// the session's back.
    pub(super) is_text_utf8: bool,
    /// What the session's sql_mode makes of its statements' text, once
    /// asked (`exec/sql_mode.rs`); `None` until then and after a
    /// statement that may have changed it.
    pub(super) sql_mode: Option<crate::backend::SqlModeFlags>,
    /// `SET hscale_coalesce = OFF`: the session's reads are never
    /// answered by another's execution (`exec/coalesce.rs`).
    pub(super) is_coalescing_off: bool,
    /// Where the session's reads go, and the backends it wrote on
    /// (`read_from.rs`).
    pub(super) read_from: super::read_from::ReadFrom,
}

/// A connection registered for KILL QUERY while a statement runs on it;
/// unregistered when dropped.
pub struct Running {
    handle: Arc<SessionHandle>,
    key: (BackendId, u32),
}

impl Drop for Running {
    fn drop(&mut self) {
        self.handle.remove_running(self.key);
    }
}

impl Bindings {
    /// The status flags of the session as a server would report them in
    /// replies the proxy builds itself: autocommit unless the session
    /// turned it off, in-transaction while a transaction is open or pending.
    pub fn status(&self) -> u16 {
        let mut st = 0;
        if !self.pins.contains(Pins::AUTOCOMMIT_OFF) {
            st |= status::AUTOCOMMIT;
        }
        if self.pins.contains(Pins::TRANSACTION) || self.pending_begin.is_some() {
            st |= status::IN_TRANS;
        }
        st
    }

    /// Register `conn` for KILL QUERY until the returned guard is dropped.
    pub fn running(&self, conn: &BackendConn, backend: BackendId) -> Running {
        let key = (backend, conn.thread_id);
        self.handle.add_running(key);
        Running {
            handle: self.handle.clone(),
            key,
        }
    }

    /// Ask `backend` something of the proxy's own in the session's state
    /// (its sql_mode, a result's metadata, whether a text parses): a
    /// connection is leased, `f` runs on it and it is given back. A
    /// deferred BEGIN stays deferred (asking opens no transaction); inside
    /// a transaction the question goes to its branch there. `Ok(Err(e))`
    /// is the server's error, to the state or to `f`'s statement; an error
    /// of `f` itself loses the connection ([`Self::backend_lost`]).
    pub async fn ask<T>(
        &mut self,
        backend: BackendId,
        f: impl AsyncFnOnce(&mut BackendConn) -> Result<Result<T, ErrPacket>, ProxyError>,
    ) -> Result<Result<T, ErrPacket>, ProxyError> {
        let begin = self.pending_begin.take();
        let leased = self.lease(backend, false).await;
        self.pending_begin = begin;
        let mut conn = match leased? {
            Ok(c) => c,
            Err(err) => return Ok(Err(err)),
        };
        match f(&mut conn).await {
            Ok(answer) => {
                self.give_back(conn);
                Ok(answer)
            }
            Err(ProxyError::BackendLost { reason, .. }) => Err(self.backend_lost(conn, reason)),
            Err(e) => Err(self.backend_lost(conn, e.to_string())),
        }
    }

    /// `USE db` on `backend` for a client's COM_INIT_DB or login, whatever
    /// database the session had (which may be gone): the session's
    /// database when the server takes it.
    pub async fn use_database(
        &mut self,
        backend: BackendId,
        db: &str,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        let mut p = BytesMut::with_capacity(1 + db.len());
        p.put_u8(com::INIT_DB);
        p.put_slice(db.as_bytes());
        // Tried again as any statement is ([`Self::retry_backend`]; it
        // names no table, so it may move): COM_INIT_DB runs again
        // harmlessly.
        let mut backend = backend;
        let mut attempt = 1;
        let (mut conn, r) = loop {
            let is_pooled = self.is_pooled();
            let e = match self.acquire(backend).await {
                Ok(mut conn) => match conn.command(&p).await {
                    Ok(r) => break (conn, r),
                    Err(e) => e,
                },
                Err(e) => e,
            };
            match self.retry_backend(&e, backend, attempt, is_pooled, true) {
                Some(next) => backend = next,
                None => return Err(e),
            }
            attempt += 1;
        };
        if r.is_ok() {
            self.state.db = Some(db.to_string());
            conn.db = Some(db.to_string());
        }
        self.give_back(conn);
        Ok(r.err())
    }

    /// The session holds no connection of its own (pinned, or a
    /// transaction's branches): a statement borrows a pooled one.
    pub fn is_pooled(&self) -> bool {
        self.pinned.is_none() && self.txn.is_none()
    }

    /// Where to try again a statement that failed with `e` before it ran,
    /// on try `attempt` of `backend`, when the session held no connection
    /// of its own as it started (`was_pooled`): on `backend` again when
    /// the pooled connection had been closed by its server while idle
    /// (wait_timeout, KILL, a restart); on another backend that answers
    /// (`Context::answering_backend_besides`) when `backend` refused to
    /// connect and the statement may move
    /// (`is_movable`: it names no table). `None`: `e` stands (a pinned
    /// connection's state is gone with it; the tries are spent). The one
    /// rule of `Exec::execute_on_backend` and [`Self::use_database`].
    pub fn retry_backend(
        &self,
        e: &ProxyError,
        backend: BackendId,
        attempt: u32,
        was_pooled: bool,
        is_movable: bool,
    ) -> Option<BackendId> {
        if !was_pooled {
            return None;
        }
        match e {
            ProxyError::BackendLost { .. } if attempt < super::MAX_ATTEMPTS => Some(backend),
            // Even after the tries on closed connections are spent: the
            // killed server's idle connections fail first, then its
            // connect.
            ProxyError::BackendConnect { .. } if is_movable && attempt <= super::MAX_ATTEMPTS => {
                Some(self.ctx.answering_backend_besides(Some(backend)))
                    .filter(|next| *next != backend)
            }
            _ => None,
        }
    }

    /// Keep a connection to `backend` for the session from now on, for
    /// `pin`'s sake (user variables a read sets must outlive it); nothing
    /// when one is kept already.
    pub async fn pin(
        &mut self,
        backend: BackendId,
        pin: Pins,
    ) -> Result<Result<(), ErrPacket>, ProxyError> {
        if self.pinned.is_none() {
            match self.lease(backend, false).await? {
                Ok(conn) => self.pinned = Some(conn),
                Err(err) => return Ok(Err(err)),
            }
            self.pins.insert(pin);
        }
        Ok(Ok(()))
    }

    /// A connection on `backend` brought to the session's state.
    /// `Ok(Err(e))`: the server refused the state (e.g. the database is
    /// gone); that error is the statement's answer.
    pub async fn lease(
        &mut self,
        backend: BackendId,
        uses_last_insert_id: bool,
    ) -> Result<Result<PooledConn, ErrPacket>, ProxyError> {
        self.lease_holding(backend, uses_last_insert_id, None).await
    }

    /// `lease`, leaving in `lead` (when given) the statements that open a
    /// transaction on the connection, to be sent with the next query
    /// (`txn/lead_in.rs`).
    pub async fn lease_holding(
        &mut self,
        backend: BackendId,
        uses_last_insert_id: bool,
        mut lead: Option<&mut LeadIn>,
    ) -> Result<Result<PooledConn, ErrPacket>, ProxyError> {
        let mut conn = self.acquire_holding(backend, lead.as_deref_mut()).await?;
        match self
            .sync_holding(&mut conn, uses_last_insert_id, lead)
            .await?
        {
            None => Ok(Ok(conn)),
            Some(err) => {
                self.give_back(conn);
                Ok(Err(err))
            }
        }
    }

    /// Whether the session holds temporary tables on a connection pinned
    /// to `backend`: what is read there is read on that connection.
    pub fn has_temporary_tables_on(&self, backend: BackendId) -> bool {
        self.pins.contains(Pins::TEMPORARY_TABLE)
            && self
                .pinned
                .as_ref()
                .is_some_and(|c| c.pool().backend_id == backend)
    }

    /// Borrow the connection for a statement on `backend`: the pinned one,
    /// the transaction's branch there (opened now if needed), or one from
    /// this worker's pool. A session bound to one backend by connection
    /// state (temporary tables, locks, user variables, ...) cannot run a
    /// statement on another.
    pub async fn acquire(&mut self, backend: BackendId) -> Result<PooledConn, ProxyError> {
        self.acquire_holding(backend, None).await
    }

    /// `acquire`; a new branch's XA START may be left in `lead`.
    pub async fn acquire_holding(
        &mut self,
        backend: BackendId,
        lead: Option<&mut LeadIn>,
    ) -> Result<PooledConn, ProxyError> {
        // Only sessions that read from replicas route here (`read_from.rs`).
        if self.read_from.statement != super::read_from::Route::Primary {
            if let Some(conn) = self.replica_for(backend).await {
                return Ok(conn);
            }
        }
        if let Some(c) = self.pinned.take() {
            if c.pool().backend_id == backend {
                return Ok(c);
            }
            let bound = c.pool().name().to_string();
            self.pinned = Some(c);
            if let Some(conn) = self.txn.as_mut().and_then(|t| t.take(backend)) {
                return Ok(conn);
            }
            if self.is_branchable() {
                return self.join(backend, lead).await;
            }
            let mut borrowable = Pins::USER_VARIABLE;
            borrowable.insert(Pins::TEMPORARY_TABLE);
            let mut others = self.pins;
            others.remove(borrowable);
            if self.may_borrow_beside && !self.pins.is_empty() && others.is_empty() {
                // The variables and temporary tables stay on the pinned
                // connection; this statement uses none of them there (a
                // temporary table it reads is shipped from the pinned
                // connection, `merge/ship.rs`; plain tables are only on
                // the pinned one's backend). `finish` gives it back.
                return self
                    .ctx
                    .pool_as(self.worker, backend, self.identity)
                    .get_as(self.tenant.claim(), self.is_found_rows)
                    .await;
            }
            let pins: Vec<&str> = self.pins.names().collect();
            return Err(ProxyError::Unsupported {
                what: format!(
                    "a statement on backend '{}' while the session is bound to backend '{bound}' by connection state ({})",
                    self.ctx.config.backends[backend.index()].name,
                    pins.join(", ")
                ),
            });
        }
        self.ctx
            .pool_as(self.worker, backend, self.identity)
            .get_as(self.tenant.claim(), self.is_found_rows)
            .await
    }

    /// A connection to `backend` for a part the statement only sends
    /// ahead: `None` when its pool has no slot free now
    /// (`Pool::try_get_as`). Pinned, in a transaction or reading from
    /// replicas, as [`Self::acquire`].
    pub async fn try_acquire(
        &mut self,
        backend: BackendId,
    ) -> Option<Result<PooledConn, ProxyError>> {
        if self.pinned.is_some()
            || self.txn.is_some()
            || self.read_from.statement != super::read_from::Route::Primary
        {
            return Some(self.acquire(backend).await);
        }
        self.ctx
            .pool_as(self.worker, backend, self.identity)
            .try_get_as(self.tenant.claim(), self.is_found_rows)
            .await
    }

    /// Bring `conn` to the session's state. `Ok(Some(err))` is a server
    /// error to report as the statement's result (e.g. the database is gone).
    pub async fn sync(
        &mut self,
        conn: &mut PooledConn,
        uses_last_insert_id: bool,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        self.sync_holding(conn, uses_last_insert_id, None).await
    }

    /// `sync`; a deferred BEGIN may be left in `lead` (`txn/lead_in.rs`).
    pub async fn sync_holding(
        &mut self,
        conn: &mut PooledConn,
        uses_last_insert_id: bool,
        lead: Option<&mut LeadIn>,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        if conn.db != self.state.db {
            match self.state.db.clone() {
                Some(db) => {
                    let mut p = BytesMut::with_capacity(1 + db.len());
                    p.put_u8(com::INIT_DB);
                    p.put_slice(db.as_bytes());
                    match conn.command(&p).await? {
                        Ok(_) => conn.db = Some(db),
                        Err(e) => return Ok(Some(e)),
                    }
                }
                None => {
                    let cfg = conn.pool().cfg.clone();
                    conn.change_user(&cfg).await?;
                }
            }
        }
        // Only a transaction across backends wants more than the session's
        // own variables; the common path compares one pointer.
        let txn_vars = if self.txn.is_some() {
            self.wanted_vars()
        } else {
            None
        };
        let want = txn_vars.as_ref().unwrap_or(&self.state.vars);
        let utf8_vars;
        let want = if self.is_text_utf8 {
            utf8_vars = Arc::new(want.with_utf8_client());
            &utf8_vars
        } else {
            want
        };
        if !Arc::ptr_eq(&conn.vars, want) {
            for sql in want.sync_sql(&conn.vars) {
                tracing::debug!(
                    connection_id = self.connection_id,
                    sql = crate::logging::loggable(&sql),
                    "sync"
                );
                if let Err(e) = conn.command(&BackendConn::payload_for_query(&sql)).await? {
                    return Ok(Some(e));
                }
            }
            conn.vars = want.clone();
        }
        if conn.is_multi_statements != self.state.is_multi_statements {
            let option: u16 = if self.state.is_multi_statements { 0 } else { 1 };
            let mut p = [com::SET_OPTION, 0, 0];
            p[1..].copy_from_slice(&option.to_le_bytes());
            if let Err(e) = conn.command(&p).await? {
                return Ok(Some(e));
            }
            conn.is_multi_statements = self.state.is_multi_statements;
        }
        // The main copies of global tables refuse writes planned with a
        // dictionary older than the one that made them global
        // (`admin/setup_global_table.rs`): tell the backend which one
        // planned this statement, once per connection and version.
        if conn.marked_version != self.planned_version
            && conn.pool().backend_id.is_main()
            && self.ctx.partitioning.has_globals()
        {
            let sql = format!("SET @hscale_dictionary_version = {}", self.planned_version);
            if let Err(e) = conn.command(&BackendConn::payload_for_query(&sql)).await? {
                return Ok(Some(e));
            }
            conn.marked_version = self.planned_version;
        }
        if uses_last_insert_id && conn.last_insert_id != self.state.last_insert_id {
            let sql = format!("DO LAST_INSERT_ID({})", self.state.last_insert_id);
            if let Err(e) = conn.command(&BackendConn::payload_for_query(&sql)).await? {
                return Ok(Some(e));
            }
            conn.last_insert_id = self.state.last_insert_id;
        }
        // A deferred BEGIN starts the transaction on the backend of the
        // first statement that needs one.
        if let Some(begin) = self.pending_begin.take() {
            if lead.is_some_and(|l| l.hold_begin(conn, &begin)) {
                // Sent with the statement; the session is in the
                // transaction once it answers (`Bindings::after_lead_in`).
                return Ok(None);
            }
            if let Err(e) = conn.command(&begin).await? {
                return Ok(Some(e));
            }
            self.pins.insert(Pins::TRANSACTION);
            self.is_read_only_txn = super::txn::is_read_only_begin(&begin);
        }
        Ok(None)
    }

    /// The backend connection failed mid-statement: close it; whatever was
    /// pinned to it (a transaction, temporary tables) is gone.
    /// Resolves when a backend connection the session holds (the pinned
    /// one: a transaction's home, session state; or a transaction's
    /// branch) is closed by its server while the session is idle, at the
    /// server's wait_timeout for instance; never when it holds none. The
    /// session then closes the client connection, as that server closes
    /// its client, so a driver's pool discards it before its next query
    /// instead of that query failing with 2013.
    pub async fn held_closed(&self) {
        let (first, is_alone) = {
            let mut held = self.held_connections();
            (held.next(), held.next().is_none())
        };
        let Some(first) = first else {
            return std::future::pending().await;
        };
        if is_alone {
            // The usual case (one connection held): nothing to allocate.
            return first.stream.get_ref().closed_while_idle().await;
        }
        let all: Vec<_> = self
            .held_connections()
            .map(|c| Box::pin(c.stream.get_ref().closed_while_idle()))
            .collect();
        futures_util::future::select_all(all).await;
    }

    /// The connections the session holds between statements: its pinned
    /// one and its transaction's branches.
    fn held_connections(&self) -> impl Iterator<Item = &PooledConn> {
        self.pinned.iter().chain(
            self.txn
                .iter()
                .flat_map(|t| t.branches.iter().filter_map(|b| b.conn.as_ref())),
        )
    }

    /// A transaction with branches loses all of them (and its home).
    pub fn backend_lost(&mut self, mut conn: PooledConn, reason: String) -> ProxyError {
        conn.is_broken = true;
        let backend = conn.backend.to_string();
        drop(conn);
        if self.txn.is_some() {
            self.is_bound_lost = true;
            self.abandon_branches();
            if let Some(mut home) = self.pinned.take() {
                home.is_broken = true;
            }
            self.home_written = false;
        }
        if !self.pins.is_empty() || self.is_bound_lost {
            tracing::warn!(connection_id = self.connection_id, backend, pins = ?self.pins.names().collect::<Vec<_>>(), "pinned backend connection lost: closing the client connection");
            self.is_bound_lost = true;
        }
        self.pins = Pins::NONE;
        ProxyError::BackendLost { backend, reason }
    }

    /// Close `conn`, which the statement cannot give back (its answer was
    /// not read to the end, or it broke). If it was the session's own (the
    /// transaction's home or one of its branches, or the connection a
    /// transaction or other state pins), what it held is gone as for a lost
    /// backend ([`Self::backend_lost`]): nothing goes on on a fresh
    /// connection as if the transaction were whole.
    pub fn close(&mut self, mut conn: PooledConn, reason: String) {
        conn.is_broken = true;
        let backend = conn.pool().backend_id;
        let is_bound = match self.txn.as_mut() {
            Some(t) => (t.home == backend && self.pinned.is_none()) || t.slot(backend).is_some(),
            None => self.pinned.is_none() && !self.pins.is_empty(),
        };
        if is_bound {
            let _ = self.backend_lost(conn, reason);
        }
    }

    /// A statement ended outside a transaction (status `st`).
    pub(super) fn note_outside_transaction(&mut self, st: u16) {
        self.home_written = false;
        self.is_read_only_txn = false;
        // Outside a transaction with autocommit on no savepoint lives;
        // with autocommit off one set before the first statement lives on
        // (COMMIT and ROLLBACK clear them).
        if st & status::AUTOCOMMIT != 0 {
            self.savepoints.clear();
        }
    }

    /// Record what a finished statement did (in the statement's
    /// `scratch`: its note and conditions; in the session: its state),
    /// then keep or return the connection.
    pub fn finish(
        &mut self,
        conn: PooledConn,
        outcome: Outcome,
        effects: &Effects<'_>,
        scratch: &mut StatementScratch,
    ) {
        scratch.record(&outcome);
        self.keep(conn, outcome, effects, scratch.generated_id);
    }

    /// Give back `conn`, on which nothing the session sees ran (or what
    /// ran failed before it answered): kept if the session holds it
    /// (pinned, a transaction's branch), else back to the pool.
    pub fn give_back(&mut self, conn: PooledConn) {
        self.keep(conn, Outcome::default(), &Effects::default(), None);
    }

    /// What a finished statement did to the session (`generated_id`: the
    /// first id hscale generated for it, [`StatementScratch`]), then keep
    /// or return the connection.
    fn keep(
        &mut self,
        mut conn: PooledConn,
        outcome: Outcome,
        effects: &Effects<'_>,
        generated_id: Option<u64>,
    ) {
        if !outcome.is_err && outcome.status.is_some() {
            match effects.change {
                Some(SessionChange::Use(db)) => {
                    self.state.db = Some(db.clone());
                    conn.db = Some(db.clone());
                }
                Some(SessionChange::Set(items)) => {
                    Arc::make_mut(&mut self.state.vars).apply(items);
                    if self.txn.is_some() {
                        // The connection also holds the transaction's lock
                        // wait (`wanted_vars`): record exactly what it holds.
                        let mut held = (*conn.vars).clone();
                        held.apply(items);
                        conn.vars = Arc::new(held);
                    } else if self.is_text_utf8 {
                        conn.vars = Arc::new(self.state.vars.with_utf8_client());
                    } else {
                        conn.vars = self.state.vars.clone();
                    }
                }
                Some(SessionChange::DropDatabase(db)) => {
                    if self.state.db.as_ref() == Some(db) {
                        self.state.db = None;
                    }
                    if conn.db.as_ref() == Some(db) {
                        conn.db = None;
                    }
                }
                None => {}
            }
            self.pins.insert(effects.pins);
            self.pins.remove(effects.unpins);
        }
        if let (Some(op), false, Some(_)) = (effects.savepoint, outcome.is_err, outcome.ok) {
            self.savepoints.apply(op);
        }
        // The home branch's flags are the session's; a branch's are its own.
        let backend = conn.pool().backend_id;
        let is_branch = self.txn.as_ref().is_some_and(|t| t.home != backend);
        if let Some(st) = outcome.status.filter(|_| !is_branch) {
            for (bit, set) in [
                (Pins::TRANSACTION, st & status::IN_TRANS != 0),
                (Pins::AUTOCOMMIT_OFF, st & status::AUTOCOMMIT == 0),
            ] {
                if set {
                    self.pins.insert(bit);
                } else {
                    self.pins.remove(bit);
                }
            }
        }
        if let Some(id) = generated_id {
            // The ids reached the backend as explicit values: its own
            // LAST_INSERT_ID() did not change; the session's did if the
            // statement generated one.
            // An OK, or the rows of INSERT ... RETURNING.
            let is_done = outcome.ok.is_some() || outcome.status.is_some() && !outcome.is_err;
            if is_done && id != 0 {
                self.state.last_insert_id = id;
            }
        } else if let Some(ok) = outcome.ok {
            if ok.last_insert_id != 0 {
                self.state.last_insert_id = ok.last_insert_id;
                conn.last_insert_id = ok.last_insert_id;
            }
        }
        let may_write = !effects.is_read_only && (outcome.status.is_some() || outcome.is_err);
        if let Some(txn) = self.txn.as_mut() {
            if let Some(branch) = txn.slot(conn.pool().backend_id) {
                branch.is_written |= may_write;
                branch.conn = Some(conn);
                return;
            }
        }
        match outcome.status {
            Some(st) if st & status::IN_TRANS == 0 => self.note_outside_transaction(st),
            _ => self.home_written |= may_write,
        }
        if (self.pins.is_empty() && self.txn.is_none()) || self.pinned.is_some() {
            // Unpinned, or borrowed beside the pinned connection
            // (`may_borrow_beside`): back to the pool.
            drop(conn);
        } else {
            self.pinned = Some(conn);
        }
    }

    /// Give back a pinned connection. It may hold a transaction, locks or
    /// temporary tables, so it is reset (COM_CHANGE_USER) in the background
    /// first; no I/O happens in the caller.
    pub fn release_pinned(&mut self) {
        self.abandon_branches();
        self.home_written = false;
        self.savepoints.clear();
        if let Some(mut conn) = self.pinned.take() {
            tokio::spawn(async move {
                let cfg = conn.pool().cfg.clone();
                if conn.change_user(&cfg).await.is_err() {
                    conn.is_broken = true;
                }
            });
        }
    }

    /// Roll back the transaction on the pinned connection (if any) and
    /// record the state the server reports after it.
    pub async fn rollback(&mut self, scratch: &mut StatementScratch) -> Result<(), ProxyError> {
        if self.txn.is_some() {
            return match self.rollback_all(scratch).await? {
                None => Ok(()),
                Some(err) => Err(ProxyError::Backend {
                    backend: self.ctx.config.backends[0].name.clone(),
                    during: "hscale: ROLLBACK after a partition change".into(),
                    err,
                }),
            };
        }
        let Some(mut conn) = self.pinned.take() else {
            self.pins.remove(Pins::TRANSACTION);
            return Ok(());
        };
        match conn
            .command(&BackendConn::payload_for_query("ROLLBACK"))
            .await
        {
            Ok(Ok(ok)) => {
                let outcome = Outcome {
                    status: Some(ok.status),
                    ok: Some(ok),
                    ..Outcome::default()
                };
                self.finish(conn, outcome, &Effects::default(), scratch);
                Ok(())
            }
            Ok(Err(e)) => {
                conn.is_broken = true;
                self.pins = Pins::NONE;
                Err(ProxyError::Backend {
                    backend: conn.backend.to_string(),
                    during: "hscale: ROLLBACK after a partition change".into(),
                    err: e,
                })
            }
            Err(e) => Err(self.backend_lost(conn, e.to_string())),
        }
    }

    /// Before each statement (each of a multi-statement query): nothing
    /// of the previous one's use of connections left (its scratch is
    /// cleared beside, `StatementScratch::clear`).
    pub fn new_statement(&mut self) {
        self.may_borrow_beside = false;
        self.is_undoubling = false;
    }

    /// Forget everything the session set: used by COM_RESET_CONNECTION and
    /// COM_CHANGE_USER. A pinned connection is reset before it goes back.
    pub fn reset(&mut self) {
        self.release_pinned();
        self.pins = Pins::NONE;
        self.pending_begin = None;
        self.state.vars = self.base_vars.clone();
        self.state.last_insert_id = 0;
        self.sql_mode = None;
        self.is_coalescing_off = false;
        self.read_from.reset();
    }
}
