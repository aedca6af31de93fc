//! One client connection, from handshake to quit.
//!
//! ```text
//!  accept ─► auth::handshake ─► command loop ─┬─ COM_QUERY ─► analyze ─► execute_on_backend
//!                                             ├─ COM_STMT_* ─► commands.rs
//!                                             └─ ping / set option / reset / change user
//!
//!  execute_on_backend: acquire (pinned conn, or borrow from the main pool)
//!                      ─► sync state (db, SET items, options) ─► send ─► forward::Forwarder
//!                      ─► record effects and pins ─► keep (pinned) or return the conn
//! ```
//! Pinning: the session keeps its backend connection while any [`Pins`] bit
//! is set: in a transaction or with autocommit off (read from the server's
//! status flags), and after statements whose state cannot be replayed.

mod admin;
pub mod auth;
mod commands;
pub mod forward;
mod kill;
mod merge;
mod params;
pub mod prepared;
mod routed;

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use hscale_sql::{Pins, SessionChange, SetItem};
use hscale_wire::consts::{cap, com, status};
use hscale_wire::response::{encode_eof, encode_err, encode_ok, ErrPacket, OkPacket};
use hscale_wire::PacketStream;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::backend::state::{SessionState, SessionVars};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::runtime::{Context, SessionHandle};
use auth::ClientInfo;
use forward::{Expect, ForwardError, Forwarder, Outcome};
use hscale_route::router::Plan;
use prepared::Statements;

/// What a statement does to the session once it succeeds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Effects<'a> {
    pub pins: Pins,
    pub unpins: Pins,
    pub change: Option<&'a SessionChange>,
    pub uses_last_insert_id: bool,
}

pub struct Session<S> {
    client: PacketStream<S>,
    ctx: Arc<Context>,
    /// The worker thread this session runs on; it borrows from that worker's pools.
    worker: usize,
    info: ClientInfo,
    connection_id: u32,
    state: SessionState,
    /// Session variables right after login (the handshake character set).
    base_vars: Arc<SessionVars>,
    pinned: Option<PooledConn>,
    pins: Pins,
    statements: Statements,
    /// Shared with KILL from other sessions.
    handle: Arc<SessionHandle>,
    /// A `BEGIN` / `START TRANSACTION` not sent yet: it goes to the backend
    /// of the transaction's first statement, so that a transaction on a
    /// partition's backend does not start on the main backend.
    pending_begin: Option<Bytes>,
    /// Statements that set up shipped tables on every part of the merge
    /// being run (`session/merge.rs`).
    ship_setup: Arc<Vec<String>>,
}

/// Serve one client connection until it quits or fails.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send>(
    stream: S,
    ctx: Arc<Context>,
    worker: usize,
    peer: String,
) {
    let connection_id = ctx.next_connection_id();
    let mut client = PacketStream::new(stream);
    let Some(_slot) = ctx.client_slot() else {
        tracing::warn!(peer, "refusing connection: max_connections reached");
        write_error(&mut client, 0, &ProxyError::TooManyConnections).await;
        return;
    };
    let version = ctx.server_version();
    let info = match auth::handshake(&mut client, &ctx.config, &version, connection_id).await {
        Ok(info) => info,
        Err((e, seq)) => {
            tracing::info!(peer, connection_id, error = %e, "login failed");
            if !matches!(e, ProxyError::ClientGone) {
                write_error(&mut client, seq, &e).await;
            }
            return;
        }
    };
    tracing::info!(peer, connection_id, user = %info.user, db = ?info.database, "client connected");
    let base_vars = Arc::new(vars_for_collation(info.collation));
    let mut session = Session {
        state: SessionState {
            db: None,
            vars: base_vars.clone(),
            is_multi_statements: info.capabilities & cap::MULTI_STATEMENTS != 0,
            last_insert_id: 0,
        },
        base_vars,
        client,
        ctx,
        worker,
        connection_id,
        pinned: None,
        pins: Pins::NONE,
        statements: Statements::default(),
        handle: Arc::new(SessionHandle::new(&info.user)),
        pending_begin: None,
        ship_setup: Arc::new(Vec::new()),
        info,
    };
    let seq = session.info.next_seq;
    if let Some(db) = session.info.database.clone() {
        match session.use_database(&db).await {
            Ok(None) => {}
            Ok(Some(err)) => {
                let _ = session.write_server_error(seq, &err).await;
                return;
            }
            Err(e) => {
                write_error(&mut session.client, seq, &e).await;
                return;
            }
        }
    }
    session
        .client
        .write_payload(seq, &encode_ok(0, &ok_status(status::AUTOCOMMIT), ""));
    if session.client.flush().await.is_ok() {
        let ctx = session.ctx.clone();
        ctx.register_session(connection_id, session.handle.clone());
        session.run().await;
        ctx.unregister_session(connection_id);
    }
    session.release_pinned();
    tracing::info!(connection_id, "client disconnected");
}

fn ok_status(st: u16) -> OkPacket {
    OkPacket {
        status: st,
        ..OkPacket::default()
    }
}

/// The `SET NAMES` a handshake collation implies, relative to the backend
/// connections' own utf8mb4_general_ci.
fn vars_for_collation(collation: u8) -> SessionVars {
    let mut v = SessionVars::default();
    if collation != hscale_wire::charset::BACKEND_COLLATION {
        let (cs, coll) = hscale_wire::charset::collation(collation);
        if coll != "utf8mb4_general_ci" {
            v.apply(&[SetItem {
                key: "names".into(),
                assign: format!("NAMES {cs} COLLATE {coll}"),
                is_standalone: false,
            }]);
        }
    }
    v
}

async fn write_error<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut PacketStream<S>,
    seq: u8,
    e: &ProxyError,
) {
    let (code, state, msg) = e.to_mysql();
    client.write_payload(seq, &encode_err(code, &state, &msg));
    let _ = client.flush().await;
}

/// A statement that reads or writes no table, so any backend can run it.
fn is_table_free(facts: &hscale_sql::Facts, sql: &str) -> bool {
    use hscale_sql::Kind;
    let first = sql.split_whitespace().next().unwrap_or("");
    let is_kind = matches!(
        facts.kind,
        Kind::Commit | Kind::Rollback | Kind::Set | Kind::Begin | Kind::Select
    ) || ["SAVEPOINT", "RELEASE", "DO"]
        .iter()
        .any(|w| first.eq_ignore_ascii_case(w));
    is_kind
        && hscale_sql::tokenize(sql).is_ok_and(|t| {
            !t.iter().any(|x| {
                ["FROM", "INTO", "TABLE", "JOIN", "UPDATE"]
                    .iter()
                    .any(|w| x.is_word(sql, w))
            })
        })
}

/// `COMMIT` / `ROLLBACK` [WORK], without savepoints or chaining.
fn is_plain_end(sql: &str) -> bool {
    let words: Vec<String> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    matches!(
        words
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["COMMIT"] | ["ROLLBACK"] | ["COMMIT", "WORK"] | ["ROLLBACK", "WORK"]
    )
}

/// Statement text for debug logs, with anything that may hold a password hidden.
fn loggable(sql: &str) -> &str {
    let upper_has = |w: &str| {
        sql.as_bytes()
            .windows(w.len())
            .any(|win| win.eq_ignore_ascii_case(w.as_bytes()))
    };
    if upper_has("PASSWORD") || upper_has("IDENTIFIED") {
        "<statement hidden: it may contain a password>"
    } else {
        sql.get(..sql.len().min(1000)).unwrap_or(sql)
    }
}

thread_local! {
    /// This worker thread's plan cache (`hscale_route::router::PlanCache`):
    /// sessions on one worker share it without a lock.
    static PLAN_CACHE: std::cell::RefCell<hscale_route::router::PlanCache> =
        std::cell::RefCell::new(hscale_route::router::PlanCache::new());
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    fn is_eof_deprecated(&self) -> bool {
        self.info.capabilities & cap::DEPRECATE_EOF != 0
    }

    fn is_found_rows(&self) -> bool {
        self.info.capabilities & cap::FOUND_ROWS != 0
    }

    async fn run(&mut self) {
        let max = self.ctx.config.proxy.max_allowed_packet;
        loop {
            if self.handle.is_killed() {
                tracing::info!(connection_id = self.connection_id, "killed");
                return;
            }
            let read = tokio::select! {
                r = self.client.read_payload(0, max) => r,
                _ = self.handle.killed.notified() => continue,
            };
            let payload = match read {
                Ok((p, _)) => p,
                Err(e) if e.is_disconnect() => return,
                Err(e) => {
                    tracing::info!(connection_id = self.connection_id, error = %e, "closing: bad packet from client");
                    write_error(&mut self.client, 1, &ProxyError::ClientProtocol(e)).await;
                    return;
                }
            };
            match self.dispatch(payload).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(ProxyError::ClientGone) => return,
                Err(e @ ProxyError::ClientProtocol(_)) => {
                    write_error(&mut self.client, 1, &e).await;
                    return;
                }
                Err(e) => {
                    tracing::debug!(connection_id = self.connection_id, error = %e, "statement failed");
                    write_error(&mut self.client, 1, &e).await;
                }
            }
        }
    }

    /// Handle one command; `Ok(false)` ends the session.
    async fn dispatch(&mut self, payload: Bytes) -> Result<bool, ProxyError> {
        let Some(&cmd) = payload.first() else {
            return Err(ProxyError::ClientProtocol(
                hscale_wire::WireError::Malformed("empty command packet"),
            ));
        };
        match cmd {
            com::QUIT => return Ok(false),
            com::QUERY => self.query(&payload).await?,
            com::INIT_DB => {
                let db = String::from_utf8_lossy(&payload[1..]).into_owned();
                let change = SessionChange::Use(db);
                let effects = Effects {
                    change: Some(&change),
                    ..Effects::default()
                };
                self.execute_on_backend(0, &payload, Expect::Single, effects)
                    .await?;
            }
            com::PING => self.write_ok(1, status::AUTOCOMMIT).await?,
            com::FIELD_LIST => {
                self.execute_on_backend(0, &payload, Expect::FieldList, Effects::default())
                    .await?
            }
            com::STATISTICS => {
                self.execute_on_backend(0, &payload, Expect::Single, Effects::default())
                    .await?
            }
            com::SET_OPTION => self.set_option(&payload).await?,
            com::RESET_CONNECTION => {
                self.reset_session();
                self.write_ok(1, status::AUTOCOMMIT).await?;
            }
            com::CHANGE_USER => return self.change_user(&payload).await,
            com::STMT_PREPARE => self.prepare(&payload).await?,
            com::STMT_EXECUTE => self.execute(&payload).await?,
            com::STMT_SEND_LONG_DATA => self.long_data(&payload),
            com::STMT_CLOSE => self.close_statement(&payload),
            com::STMT_RESET => self.reset_statement(&payload).await?,
            com::STMT_FETCH => self.fetch(&payload).await?,
            com::PROCESS_KILL => {
                let id = hscale_wire::stmt::statement_id(&payload)
                    .map_err(ProxyError::ClientProtocol)?;
                self.kill(hscale_sql::KillStatement {
                    is_query_only: false,
                    id: id as u64,
                })
                .await?;
            }
            other => {
                let e = ErrPacket {
                    code: hscale_wire::consts::code::ER_UNKNOWN_COM_ERROR,
                    sql_state: *b"08S01",
                    message: format!("Unknown command {other:#04x}"),
                };
                self.client
                    .write_payload(1, &encode_err(e.code, &e.sql_state, &e.message));
                self.flush().await?;
            }
        }
        Ok(true)
    }

    async fn flush(&mut self) -> Result<(), ProxyError> {
        self.client
            .flush()
            .await
            .map_err(|_| ProxyError::ClientGone)
    }

    /// Forward a backend's error packet as the answer (at `seq`).
    async fn write_server_error(&mut self, seq: u8, err: &ErrPacket) -> Result<(), ProxyError> {
        self.client
            .write_payload(seq, &encode_err(err.code, &err.sql_state, &err.message));
        self.flush().await
    }

    async fn write_ok(&mut self, seq: u8, st: u16) -> Result<(), ProxyError> {
        let st = st | self.status_bits();
        self.client
            .write_payload(seq, &encode_ok(0, &ok_status(st), ""));
        self.flush().await
    }

    /// Status flags that reflect the session's pinned state.
    fn status_bits(&self) -> u16 {
        let mut st = 0;
        if self.pins.contains(Pins::TRANSACTION) || self.pending_begin.is_some() {
            st |= status::IN_TRANS;
        }
        st
    }

    async fn query(&mut self, payload: &Bytes) -> Result<(), ProxyError> {
        let sql_bytes = &payload[1..];
        let facts = hscale_sql::analyze_bytes(sql_bytes);
        let sql = std::str::from_utf8(sql_bytes).unwrap_or("<not UTF-8>");
        tracing::debug!(
            connection_id = self.connection_id,
            sql = loggable(sql),
            "query"
        );
        match facts.kind {
            hscale_sql::Kind::Kill => {
                return match hscale_sql::parse_kill(sql) {
                    Some(k) => self.kill(k).await,
                    None => Err(ProxyError::Unsupported {
                        what:
                            "this form of KILL through hscale (use KILL [CONNECTION | QUERY] <id>)"
                                .into(),
                    }),
                };
            }
            hscale_sql::Kind::Admin => return self.admin(sql).await,
            hscale_sql::Kind::Begin
                if facts.statements == 1 && self.pinned.is_none() && self.pins.is_empty() =>
            {
                self.pending_begin = Some(payload.clone());
                return self.write_ok(1, status::AUTOCOMMIT).await;
            }
            hscale_sql::Kind::Commit | hscale_sql::Kind::Rollback
                if self.pending_begin.is_some() && is_plain_end(sql) =>
            {
                // Nothing ran in the transaction: nothing to commit or roll back.
                self.pending_begin = None;
                return self.write_ok(1, status::AUTOCOMMIT).await;
            }
            _ => {}
        }
        let effects = Effects {
            pins: facts.pins,
            unpins: facts.unpins,
            change: facts.change.as_ref(),
            uses_last_insert_id: facts.uses_last_insert_id,
        };
        if self.ctx.partitioning.should_try_loading() {
            // Right after start: read the dictionary before routing anything.
            if let Err(e) = crate::admin::reload(&self.ctx, self.worker).await {
                tracing::warn!(error = %e, "partition dictionary not readable");
            }
        }
        if !self.ctx.partitioning.is_empty() {
            let dict = self.ctx.partitioning.dictionary();
            if std::str::from_utf8(sql_bytes).is_err() {
                if let Some(why) = self.ctx.partitioning.refusal(sql_bytes) {
                    return Err(ProxyError::Refused(why));
                }
            }
            let plan =
                PLAN_CACHE.with(|c| c.borrow_mut().plan(sql, self.state.db.as_deref(), &dict));
            // A statement spread over several connections cannot carry what
            // binds a session to one: a transaction being opened, user
            // variables, locks, temporary tables, LAST_INSERT_ID().
            let spread = match &plan {
                Plan::Targets { parts, .. } => parts.len() > 1,
                Plan::Merge(_) | Plan::GlobalWrite { .. } => true,
                _ => false,
            };
            if spread
                && (self.pending_begin.is_some()
                    || !facts.pins.is_empty()
                    || facts.uses_last_insert_id)
            {
                return Err(ProxyError::Unsupported {
                    what: "a statement over several partitions or backends inside a transaction, with session-bound state (user variables, locks, temporary tables) or LAST_INSERT_ID()".into(),
                });
            }
            match plan {
                Plan::Passthrough => {}
                Plan::Refuse(why) => return Err(ProxyError::Refused(why)),
                Plan::Targets { kind, parts } => {
                    drop(dict);
                    return self.run_routed(kind, parts, effects).await;
                }
                Plan::DropTable(name) => {
                    let out = crate::admin::drop_table(&self.ctx, self.worker, &name).await?;
                    return self.write_admin_output(out).await;
                }
                Plan::GlobalWrite { table, sql } => {
                    drop(dict);
                    return self.run_global_write(&table, &sql).await;
                }
                Plan::DropGlobal(name) => {
                    let out = crate::admin::drop_global(&self.ctx, self.worker, &name).await?;
                    return self.write_admin_output(out).await;
                }
                Plan::Merge(m) => {
                    drop(dict);
                    return self.run_merge(m).await;
                }
                Plan::Relabeled {
                    target,
                    sql,
                    from,
                    to,
                } => {
                    drop(dict);
                    let payload = BackendConn::payload_for_query(&sql);
                    let mut conn = self.acquire(target.backend).await?;
                    if let Some(err) = self.sync(&mut conn, false).await? {
                        self.finish(conn, Outcome::default(), &Effects::default());
                        return self.write_server_error(1, &err).await;
                    }
                    if let Err(e) = conn.stream.send_command(&payload).await {
                        return Err(self.backend_lost(conn, e.to_string()));
                    }
                    return self
                        .forward_with(conn, Expect::Query, &effects, Some((&from, &to)))
                        .await;
                }
                Plan::RenameTable { from, to } => {
                    let out =
                        crate::admin::rename_table(&self.ctx, self.worker, &from, &to).await?;
                    return self.write_admin_output(out).await;
                }
                Plan::ShowTables { db, is_full, like } => {
                    let out = crate::admin::show_tables(
                        &self.ctx,
                        self.worker,
                        &db,
                        is_full,
                        like.as_deref(),
                    )
                    .await?;
                    return self.write_admin_output(out).await;
                }
                Plan::ShowCreate(name) => {
                    let out = crate::admin::show_create(&self.ctx, self.worker, &name).await?;
                    return self.write_admin_output(out).await;
                }
            }
        }
        // Statements that touch no table (COMMIT, SET, SELECT @@x, ...) run
        // on the backend the session is bound to; the rest on the main one.
        let backend = match &self.pinned {
            Some(c) if is_table_free(&facts, sql) => c.pool().backend_index,
            _ => 0,
        };
        self.execute_on_backend(backend, payload, Expect::Query, effects)
            .await
    }

    /// Borrow the connection for a statement on `backend`: the pinned one,
    /// or one from this worker's pool. A session bound to one backend (by a
    /// transaction or connection state) cannot run a statement on another.
    async fn acquire(&mut self, backend: usize) -> Result<PooledConn, ProxyError> {
        if let Some(c) = self.pinned.take() {
            if c.pool().backend_index == backend {
                return Ok(c);
            }
            let bound = c.pool().name().to_string();
            self.pinned = Some(c);
            return Err(ProxyError::Unsupported {
                what: format!(
                    "a statement on backend '{}' while the session is bound to backend '{bound}' by a transaction or connection state (transactions across backends)",
                    self.ctx.config.backends[backend].name
                ),
            });
        }
        self.ctx
            .pool(self.worker, backend)
            .get(self.is_found_rows())
            .await
    }

    /// Bring `conn` to the session's state. `Ok(Some(err))` is a server
    /// error to report as the statement's result (e.g. the database is gone).
    async fn sync(
        &mut self,
        conn: &mut PooledConn,
        uses_last_insert_id: bool,
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
        if !Arc::ptr_eq(&conn.vars, &self.state.vars) {
            for sql in self.state.vars.sync_sql(&conn.vars) {
                tracing::debug!(
                    connection_id = self.connection_id,
                    sql = loggable(&sql),
                    "sync"
                );
                if let Err(e) = conn.command(&BackendConn::payload_for_query(&sql)).await? {
                    return Ok(Some(e));
                }
            }
            conn.vars = self.state.vars.clone();
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
            if let Err(e) = conn.command(&begin).await? {
                return Ok(Some(e));
            }
            self.pins.insert(Pins::TRANSACTION);
        }
        Ok(None)
    }

    /// Run one command on a backend connection and stream its response.
    async fn execute_on_backend(
        &mut self,
        backend: usize,
        payload: &[u8],
        expect: Expect,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        let mut conn = self.acquire(backend).await?;
        if let Some(err) = self.sync(&mut conn, effects.uses_last_insert_id).await? {
            self.finish(conn, Outcome::default(), &Effects::default());
            return self.write_server_error(1, &err).await;
        }
        if let Err(e) = conn.stream.send_command(payload).await {
            return Err(self.backend_lost(conn, e.to_string()));
        }
        self.forward(conn, expect, &effects).await
    }

    /// Stream the response of a command already sent on `conn`.
    async fn forward(
        &mut self,
        conn: PooledConn,
        expect: Expect,
        effects: &Effects<'_>,
    ) -> Result<(), ProxyError> {
        self.forward_with(conn, expect, effects, None).await
    }

    /// `forward`, optionally relabeling text-row values (`from`, `to`).
    async fn forward_with(
        &mut self,
        mut conn: PooledConn,
        expect: Expect,
        effects: &Effects<'_>,
        relabel: Option<(&str, &str)>,
    ) -> Result<(), ProxyError> {
        let max = self.ctx.config.proxy.max_allowed_packet;
        let deprecated = self.is_eof_deprecated();
        let backend = conn.pool().backend_index;
        self.handle.set_running(backend, conn.thread_id);
        let mut f = Forwarder::new(&mut conn.stream, &mut self.client, deprecated, max);
        if let Some((from, to)) = relabel {
            f = f.relabel(from, to);
        }
        let r = f.run(expect).await;
        self.handle.clear_running();
        match r {
            Ok(outcome) => {
                self.finish(conn, outcome, effects);
                Ok(())
            }
            Err(f) => match f.error {
                ForwardError::Backend(e) => {
                    let err = self.backend_lost(conn, e.to_string());
                    write_error(&mut self.client, f.next_seq, &err).await;
                    Ok(())
                }
                ForwardError::Client(_) => {
                    conn.is_broken = true;
                    Err(ProxyError::ClientGone)
                }
            },
        }
    }

    /// The backend connection failed mid-statement: close it; whatever was
    /// pinned to it (a transaction, temporary tables) is gone.
    fn backend_lost(&mut self, mut conn: PooledConn, reason: String) -> ProxyError {
        conn.is_broken = true;
        let backend = conn.backend.to_string();
        drop(conn);
        if !self.pins.is_empty() {
            tracing::warn!(connection_id = self.connection_id, backend, pins = ?self.pins.names().collect::<Vec<_>>(), "pinned backend connection lost");
        }
        self.pins = Pins::NONE;
        ProxyError::BackendLost { backend, reason }
    }

    /// Record what a finished statement did, then keep or return the connection.
    fn finish(&mut self, mut conn: PooledConn, outcome: Outcome, effects: &Effects<'_>) {
        if !outcome.is_err && outcome.status.is_some() {
            match effects.change {
                Some(SessionChange::Use(db)) => {
                    self.state.db = Some(db.clone());
                    conn.db = Some(db.clone());
                }
                Some(SessionChange::Set(items)) => {
                    Arc::make_mut(&mut self.state.vars).apply(items);
                    conn.vars = self.state.vars.clone();
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
        if let Some(st) = outcome.status {
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
        if let Some(ok) = outcome.ok {
            if ok.last_insert_id != 0 {
                self.state.last_insert_id = ok.last_insert_id;
                conn.last_insert_id = ok.last_insert_id;
            }
        }
        if self.pins.is_empty() {
            drop(conn);
        } else {
            self.pinned = Some(conn);
        }
    }

    /// `USE db` at login or change user: check it exists on the main backend.
    async fn use_database(&mut self, db: &str) -> Result<Option<ErrPacket>, ProxyError> {
        let mut conn = self.acquire(0).await?;
        let mut p = BytesMut::with_capacity(1 + db.len());
        p.put_u8(com::INIT_DB);
        p.put_slice(db.as_bytes());
        let r = conn.command(&p).await?;
        if r.is_ok() {
            self.state.db = Some(db.to_string());
            conn.db = Some(db.to_string());
        }
        self.finish(conn, Outcome::default(), &Effects::default());
        Ok(r.err())
    }

    async fn set_option(&mut self, payload: &[u8]) -> Result<(), ProxyError> {
        match payload.get(1..3).map(|b| u16::from_le_bytes([b[0], b[1]])) {
            Some(0) => self.state.is_multi_statements = true,
            Some(1) => self.state.is_multi_statements = false,
            _ => {
                return Err(ProxyError::Wrong(
                    "COM_SET_OPTION with an unknown option".into(),
                ));
            }
        }
        let st = status::AUTOCOMMIT | self.status_bits();
        if self.is_eof_deprecated() {
            self.client
                .write_payload(1, &encode_ok(0xfe, &ok_status(st), ""));
        } else {
            self.client.write_payload(1, &encode_eof(0, st));
        }
        self.flush().await
    }

    /// Forget everything the session set: used by COM_RESET_CONNECTION and
    /// COM_CHANGE_USER. A pinned connection is reset before it goes back.
    fn reset_session(&mut self) {
        self.release_pinned();
        self.pins = Pins::NONE;
        self.pending_begin = None;
        self.state.vars = self.base_vars.clone();
        self.state.last_insert_id = 0;
        self.statements.clear();
    }

    /// Give back a pinned connection. It may hold a transaction, locks or
    /// temporary tables, so it is reset (COM_CHANGE_USER) in the background
    /// first; no I/O happens in the caller.
    fn release_pinned(&mut self) {
        if let Some(mut conn) = self.pinned.take() {
            tokio::spawn(async move {
                let cfg = conn.pool().cfg.clone();
                if conn.change_user(&cfg).await.is_err() {
                    conn.is_broken = true;
                }
            });
        }
    }
}
