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

mod access;
mod admin;
pub mod auth;
mod batch;
mod commands;
mod conditions;
mod diagnostics;
mod figures;
mod insert_form;
mod kill;
mod ordered_write;
mod planning;
pub mod prepared;
mod processlist;
mod rewrite;
mod statement;
mod txn;
mod user_vars;

use hscale_route::BackendId;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use hscale_sql::{Pins, SessionChange, SetItem};
use hscale_wire::consts::{cap, com};
use hscale_wire::reply::{OkParts, Reply};
use hscale_wire::response::ErrPacket;
use hscale_wire::PacketStream;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::backend::state::{SessionState, SessionVars};
use crate::error::ProxyError;
use crate::exec::forward::{Expect, Outcome};
use crate::exec::{send, write_error, Bindings, Effects, Exec};
use crate::metrics::PlanKind;
use crate::runtime::{Context, SessionHandle};
use crate::tls::ClientStream;
use auth::ClientInfo;
use hscale_route::router::{Plan, StatementKind};
use prepared::Statements;

pub struct Session<S> {
    client: PacketStream<S>,
    info: ClientInfo,
    /// The backend connections this session holds and the state replayed
    /// onto them.
    b: Bindings,
    statements: Statements,
    /// What the previous statement left for `ROW_COUNT()` and
    /// `FOUND_ROWS()`.
    last: diagnostics::LastStatement,
    /// The conditions of the last statement that raised any (`conditions.rs`).
    conditions: conditions::Conditions,
}

/// Serve one client connection until it quits or fails. `is_local` for
/// the unix socket, which `[tls] require` counts as secure.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send>(
    stream: S,
    ctx: Arc<Context>,
    worker: usize,
    peer: String,
    is_local: bool,
) {
    // Counted until this connection ends: a graceful shutdown waits for it.
    let _open = ctx.open_session();
    let connection_id = ctx.next_connection_id();
    let write_limit = match ctx.config.proxy.client_write_timeout_ms {
        0 => None,
        ms => Some(std::time::Duration::from_millis(ms)),
    };
    let stream = crate::write_timeout::WriteTimeout::new(stream, write_limit);
    let mut client = PacketStream::new(ClientStream::Plain(stream));
    let version = ctx.server_version();
    // The handshake holds a place among `max_handshakes`, not a client
    // slot, and has `handshake_timeout_ms` to finish.
    let ticket = ctx.handshake_ticket();
    let limit = std::time::Duration::from_millis(ctx.live().proxy.handshake_timeout_ms);
    let addr = peer.parse::<std::net::SocketAddr>().ok().map(|a| a.ip());
    let login = tokio::select! {
        r = async {
            let r = tokio::time::timeout(limit, auth::handshake(&mut client, &ctx, is_local, &version, connection_id)).await.ok()?;
            // The failed-login throttle: the answer waits, still holding
            // its handshake place.
            let delay = match &r {
                Ok(_) => ctx.login_delay(addr, true),
                Err((ProxyError::AccessDenied { .. }, _)) => ctx.login_delay(addr, false),
                Err(_) => std::time::Duration::ZERO,
            };
            if !delay.is_zero() {
                tracing::info!(peer, connection_id, delay_ms = delay.as_millis() as u64, "failed-login throttle: answering late");
                tokio::time::sleep(delay).await;
            }
            Some(r)
        } => r,
        _ = ticket.evicted() => None,
    };
    drop(ticket);
    let info = match login {
        Some(Ok(info)) => info,
        Some(Err((e, seq))) => {
            tracing::info!(peer, connection_id, error = %e, "login failed");
            if !matches!(e, ProxyError::ClientGone) {
                write_error(&mut client, seq, &e).await;
            }
            return;
        }
        None => {
            // As MariaDB at connect_timeout: the connection is closed.
            tracing::debug!(peer, connection_id, "closing: no login within the handshake timeout, or too many connections in the handshake");
            return;
        }
    };
    let Some(_slot) = ctx.client_slot() else {
        tracing::warn!(peer, "refusing connection: max_connections reached");
        let (code, _, message) = ProxyError::TooManyConnections.to_mysql();
        let refusal = Reply::new(&mut client, info.next_seq, false);
        let _ = refusal.err_without_state(code, &message).flush().await;
        return;
    };
    let is_tls = client.get_ref().is_tls();
    let mut info = info;
    info.tls = client.get_ref().tls_session();
    info.host = match peer.parse::<std::net::SocketAddr>() {
        Ok(a) => a.ip().to_string(),
        Err(_) => "localhost".into(),
    };
    tracing::info!(peer, connection_id, user = %info.user, db = ?info.database, is_tls, "client connected");
    learn_collations(&ctx, worker, info.collation).await;
    let base_vars = match vars_for_collation(&ctx, info.collation) {
        Ok(v) => Arc::new(v),
        Err(e) => {
            tracing::info!(peer, connection_id, error = %e, "login refused");
            write_error(&mut client, info.next_seq, &e).await;
            return;
        }
    };
    // As a server shows it in PROCESSLIST.
    let host = if is_local {
        "localhost".to_string()
    } else {
        peer.clone()
    };
    let mut session = Session {
        b: Bindings {
            state: SessionState {
                db: None,
                vars: base_vars.clone(),
                is_multi_statements: info.capabilities & cap::MULTI_STATEMENTS != 0,
                last_insert_id: 0,
            },
            base_vars,
            identity: ctx.config.identity(&info.user),
            ctx,
            worker,
            connection_id,
            pinned: None,
            pins: Pins::NONE,
            pending_begin: None,
            txn: None,
            home_written: false,
            is_read_only_txn: false,
            is_bound_lost: false,
            handle: Arc::new(SessionHandle::new(&info.user, host)),
            is_found_rows: info.capabilities & cap::FOUND_ROWS != 0,
            may_borrow_beside: false,
            planned_version: 0,
            generated_id: None,
            one_row_select: None,
            savepoints: Default::default(),
            note: Default::default(),
            gathered: Default::default(),
        },
        client,
        statements: Statements::default(),
        last: Default::default(),
        conditions: Default::default(),
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
    let deprecated = session.is_eof_deprecated();
    let login_ok = Reply::new(&mut session.client, seq, deprecated)
        .ok(OkParts::new(session.b.status(), 0))
        .flush()
        .await;
    if login_ok.is_ok() {
        if session.info.capabilities & cap::COMPRESS != 0 {
            session.client.get_mut().compress();
        }
        let ctx = session.b.ctx.clone();
        let db = session.b.state.db.as_deref();
        session.b.handle.end(std::time::Instant::now(), db);
        ctx.register_session(connection_id, session.b.handle.clone());
        session.run().await;
        ctx.unregister_session(connection_id);
    }
    session.b.release_pinned();
    tracing::info!(connection_id, "client disconnected");
}

/// The session variables a handshake (or COM_CHANGE_USER) collation id
/// implies, relative to the backend connections' own utf8mb4_general_ci,
/// as the server would set them (`hscale_wire::charset::ClientCharset`):
/// the named collation, the server's defaults for an id it does not know,
/// or an error for a character set no client may use.
fn vars_for_collation(ctx: &Context, collation: u8) -> Result<SessionVars, ProxyError> {
    use hscale_wire::charset::{ClientCharset, BACKEND_NAMES};
    let assign = match ctx.collations().for_client(u16::from(collation)) {
        ClientCharset::Named { charset, collation } if (charset, collation) == BACKEND_NAMES => {
            return Ok(SessionVars::default());
        }
        ClientCharset::Named { charset, collation } => {
            format!("NAMES {charset} COLLATE {collation}")
        }
        ClientCharset::ServerDefault => "@@session.character_set_client = DEFAULT, \
             @@session.collation_connection = DEFAULT, \
             @@session.character_set_results = DEFAULT"
            .to_string(),
        ClientCharset::Refused { charset } => {
            return Err(ProxyError::ClientCharset(charset.to_string()))
        }
    };
    let mut v = SessionVars::default();
    v.apply(&[SetItem {
        key: "names".into(),
        assign,
        is_standalone: false,
    }]);
    Ok(v)
}

/// Read the main backend's collation table now if a client names an id
/// the built-in table does not know before it was read at start.
async fn learn_collations(ctx: &Context, worker: usize, collation: u8) {
    if ctx.has_collations() || ctx.collations().get(u16::from(collation)).is_some() {
        return;
    }
    if let Ok(mut conn) = ctx.pool(worker, BackendId::MAIN).get(false).await {
        ctx.learn_main_backend(&mut conn).await;
    }
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

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    fn is_eof_deprecated(&self) -> bool {
        self.info.capabilities & cap::DEPRECATE_EOF != 0
    }

    /// The executor for one statement of this session.
    fn exec(&mut self) -> Exec<'_, S> {
        let deprecated = self.is_eof_deprecated();
        Exec::new(&mut self.client, &mut self.b, deprecated)
    }

    /// The session's wait_timeout: its own `SET wait_timeout = <seconds>`,
    /// else `[proxy] wait_timeout_ms`.
    fn wait_timeout(&self) -> std::time::Duration {
        let set = self.b.state.vars.items().iter().rev().find_map(|i| {
            let value = i.assign.split_once('=')?.1.trim();
            (i.key == "wait_timeout").then(|| value.parse::<u64>().ok())
        });
        match set {
            Some(Some(secs)) => std::time::Duration::from_secs(secs.clamp(1, 31_536_000)),
            _ => std::time::Duration::from_millis(self.b.ctx.live().proxy.wait_timeout_ms),
        }
    }

    async fn run(&mut self) {
        let max = self.b.ctx.config.proxy.max_allowed_packet;
        // The idle timer is armed once and moved on only when it fires
        // early, so a command costs one clock read, not a timer update.
        let mut wait = self.wait_timeout();
        let mut wait_vars = self.b.state.vars.clone();
        let mut last = tokio::time::Instant::now();
        let idle = tokio::time::sleep(wait);
        tokio::pin!(idle);
        loop {
            if self.b.handle.is_killed() {
                tracing::info!(connection_id = self.b.connection_id, "killed");
                return;
            }
            if self.b.ctx.is_draining() {
                // SIGTERM: the statement (if any) is answered; close.
                tracing::info!(
                    connection_id = self.b.connection_id,
                    "closing: the proxy is shutting down"
                );
                return;
            }
            // For HSCALE SHOW TRANSACTIONS (a no-op outside transactions across backends).
            self.b.publish_txn();
            if !Arc::ptr_eq(&wait_vars, &self.b.state.vars) {
                wait_vars = self.b.state.vars.clone();
                wait = self.wait_timeout();
                idle.as_mut().reset(last + wait);
            }
            let read = tokio::select! {
                r = self.client.read_command(max) => r,
                _ = self.b.handle.killed.notified() => continue,
                _ = &mut idle => {
                    let due = last + wait;
                    if tokio::time::Instant::now() >= due {
                        // As MariaDB at wait_timeout: the connection is closed.
                        tracing::info!(connection_id = self.b.connection_id, "closing: idle longer than wait_timeout");
                        return;
                    }
                    idle.as_mut().reset(due);
                    continue;
                }
            };
            let payload = match read {
                Ok(p) => p,
                Err(e) if e.is_disconnect() => return,
                Err(e) => {
                    tracing::info!(connection_id = self.b.connection_id, error = %e, "closing: bad packet from client");
                    write_error(&mut self.client, 1, &ProxyError::ClientProtocol(e)).await;
                    // A packet refused from its header is still arriving:
                    // let the client read the error before the close.
                    let linger = self.client.linger(hscale_wire::MAX_PAYLOAD + 4);
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), linger).await;
                    return;
                }
            };
            self.begin_command(&payload);
            let answered = self.dispatch(payload).await;
            last = tokio::time::Instant::now();
            let db = self.b.state.db.as_deref();
            self.b.handle.end(last.into_std(), db);
            if self.b.is_bound_lost {
                // As a server's connection: closed, no answer (2013).
                tracing::info!(
                    connection_id = self.b.connection_id,
                    "closing: the backend connection holding the session's state was lost"
                );
                return;
            }
            match answered {
                Ok(true) => {}
                Ok(false) => return,
                Err(ProxyError::ClientGone) => return,
                Err(e @ ProxyError::ClientProtocol(_)) => {
                    write_error(&mut self.client, 1, &e).await;
                    return;
                }
                Err(e) => {
                    tracing::debug!(connection_id = self.b.connection_id, error = %e, "statement failed");
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
        // Set only by the statement that generated ids (`sequence.rs`).
        self.b.generated_id = None;
        self.b.one_row_select = None;
        self.b.may_borrow_beside = false;
        match cmd {
            com::QUIT => return Ok(false),
            com::QUERY => match self.batch_of(&payload) {
                Some(statements) => self.run_batch(statements).await?,
                None => self.statement(cmd, &payload).await?,
            },
            com::STMT_EXECUTE => self.statement(cmd, &payload).await?,
            com::INIT_DB => {
                let db = String::from_utf8_lossy(&payload[1..]).into_owned();
                self.check_db(&db)?;
                let change = SessionChange::Use(db);
                let effects = Effects {
                    change: Some(&change),
                    ..Effects::default()
                };
                self.exec()
                    .execute_on_backend(BackendId::MAIN, &payload, Expect::Single, effects)
                    .await?;
            }
            com::PING => self.write_ok(1).await?,
            com::FIELD_LIST => {
                self.exec()
                    .execute_on_backend(
                        BackendId::MAIN,
                        &payload,
                        Expect::FieldList,
                        Effects::default(),
                    )
                    .await?
            }
            com::STATISTICS => {
                self.exec()
                    .execute_on_backend(
                        BackendId::MAIN,
                        &payload,
                        Expect::Single,
                        Effects::default(),
                    )
                    .await?
            }
            com::SET_OPTION => self.set_option(&payload).await?,
            com::RESET_CONNECTION => {
                self.reset_session();
                self.write_ok(1).await?;
            }
            com::CHANGE_USER => return self.change_user(&payload).await,
            com::STMT_PREPARE => self.prepare(&payload).await?,
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
                let message = format!("Unknown command {other:#04x}");
                let code = hscale_wire::consts::code::ER_UNKNOWN_COM_ERROR;
                send(self.reply(1).err(code, b"08S01", &message)).await?;
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

    /// A reply to the current command, its first packet at `seq`.
    fn reply(&mut self, seq: u8) -> Reply<'_, S> {
        let deprecated = self.is_eof_deprecated();
        Reply::new(&mut self.client, seq, deprecated)
    }

    /// Forward a backend's error packet as the answer (at `seq`).
    async fn write_server_error(&mut self, seq: u8, err: &ErrPacket) -> Result<(), ProxyError> {
        self.b.note.error(err.code);
        self.b.gathered.error(err.code, &err.message);
        send(self.reply(seq).err(err.code, &err.sql_state, &err.message)).await
    }

    /// An OK the proxy answers itself, with the session's status flags.
    async fn write_ok(&mut self, seq: u8) -> Result<(), ProxyError> {
        let st = self.b.status();
        send(self.reply(seq).ok(OkParts::new(st, 0))).await
    }

    async fn query(&mut self, payload: &Bytes) -> Result<(), ProxyError> {
        let figured = match self.show_figures(payload).await? {
            figures::Figured::Answered => return Ok(()),
            figures::Figured::Rewritten(p) => Some(p),
            figures::Figured::No => None,
        };
        let payload = figured.as_ref().unwrap_or(payload);
        let facts = hscale_sql::analyze_bytes(&payload[1..]);
        // What the statement mentions comes from that one lex; the rare
        // statement rewritten with hscale's own answers is analyzed again.
        let rewritten = self.proxy_answers(payload, facts.mentions).await?;
        let facts = match &rewritten {
            Some(r) => hscale_sql::analyze_bytes(&r[1..]),
            None => facts,
        };
        let payload = rewritten.as_ref().unwrap_or(payload);
        let sql_bytes = &payload[1..];
        let sql = std::str::from_utf8(sql_bytes).unwrap_or("<not UTF-8>");
        tracing::debug!(
            connection_id = self.b.connection_id,
            sql = crate::logging::loggable(sql),
            "query"
        );
        self.check_reach(&String::from_utf8_lossy(sql_bytes))?;
        // Non-ASCII text from a client that does not send UTF-8 (latin1,
        // cp1251, ...) would be planned as other strings than the server
        // reads: refused where it names partitioned or global tables.
        if !sql_bytes.is_ascii() && !self.b.state.vars.is_client_utf8() {
            if let Some(why) = self.b.ctx.partitioning.refusal(sql_bytes) {
                return Err(ProxyError::Refused(why));
            }
        }
        if facts.kind == hscale_sql::Kind::Show && self.account_statement(sql).await? {
            return Ok(());
        }
        if self.answered_conditions(&facts, sql).await? {
            return Ok(());
        }
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
            hscale_sql::Kind::Admin => {
                self.b.note.kind = PlanKind::Admin;
                return self.admin(sql).await;
            }
            _ if facts.pins.contains(Pins::XA) => {
                return Err(ProxyError::Unsupported {
                    what: "XA statements from clients (hscale makes transactions across backends atomic itself: use BEGIN ... COMMIT)".into(),
                });
            }
            _ if self.b.txn.is_some() && self.in_distributed_transaction(&facts, sql).await? => {
                return Ok(());
            }
            hscale_sql::Kind::Commit | hscale_sql::Kind::Rollback
                if self.b.txn.is_none() && self.end_and_release(&facts, sql).await? =>
            {
                return Ok(());
            }
            _ => {}
        }
        match facts.kind {
            hscale_sql::Kind::Begin
                if facts.statements == 1 && self.b.pinned.is_none() && self.b.pins.is_empty() =>
            {
                self.b.pending_begin = Some(payload.clone());
                return self.write_ok(1).await;
            }
            hscale_sql::Kind::Commit | hscale_sql::Kind::Rollback
                if self.b.pending_begin.is_some() && is_plain_end(sql) =>
            {
                // Nothing ran in the transaction: nothing to commit or roll back.
                self.b.pending_begin = None;
                return self.write_ok(1).await;
            }
            _ => {}
        }
        let savepoint = txn::savepoint_op(&facts, sql);
        let effects = Effects {
            pins: facts.pins,
            unpins: facts.unpins,
            change: facts.change.as_ref(),
            uses_last_insert_id: facts.uses_last_insert_id,
            sets_last_insert_id: facts.sets_last_insert_id,
            is_read_only: facts.statements == 1
                && matches!(
                    facts.kind,
                    hscale_sql::Kind::Select | hscale_sql::Kind::Show
                ),
            savepoint: savepoint.as_ref(),
        };
        if self.b.ctx.partitioning.should_try_loading() {
            // Right after start: read the dictionary before routing anything.
            if let Err(e) = crate::admin::reload(&self.b.ctx, self.b.worker).await {
                tracing::warn!(error = %e, "partition dictionary not readable");
            }
        }
        // `SET GLOBAL` (or PERSIST) may change the defaults later sessions
        // start with: pooled connections take them again (a reset) before
        // their next use. Raised before the statement runs and again after,
        // so no connection reset in between keeps the old defaults.
        let is_set_global = facts.kind == hscale_sql::Kind::Set
            && (rewrite::mentions(sql_bytes, b"GLOBAL")
                || rewrite::mentions(sql_bytes, b"PERSIST"));
        if is_set_global {
            self.b.ctx.session_defaults_changed();
        }
        let done = self.run_fenced(payload, &facts, effects, sql).await;
        if is_set_global {
            self.b.ctx.session_defaults_changed();
        }
        done
    }

    /// Fill sequence ids, plan and run, again after a stale route.
    async fn run_fenced(
        &mut self,
        payload: &Bytes,
        facts: &hscale_sql::Facts,
        effects: Effects<'_>,
        sql: &str,
    ) -> Result<(), ProxyError> {
        let mut attempts = 0;
        let mut filled = None;
        let mut normal = None;
        let is_insert = matches!(
            facts.kind,
            hscale_sql::Kind::Insert | hscale_sql::Kind::Replace
        ) && facts.statements == 1
            && !self.b.ctx.partitioning.is_empty();
        loop {
            let before = self.b.fence_point();
            // INSERT ... SET, without a column list, ... SELECT: into the
            // `(columns) VALUES` form first (`insert_form.rs`).
            if is_insert && normal.is_none() && filled.is_none() {
                match self.insert_form(sql).await {
                    Ok(insert_form::Normal::Answered) => return Ok(()),
                    Ok(insert_form::Normal::Payload(p)) => normal = Some(p),
                    Ok(insert_form::Normal::AsIs) => {}
                    Err(ProxyError::StaleRoute { err }) => {
                        match self.b.after_stale_route(err, before, &mut attempts).await? {
                            crate::exec::fence::Next::Retry => continue,
                            crate::exec::fence::Next::Answer(err) => {
                                return self.write_server_error(1, &err).await
                            }
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            let base = normal.as_ref().unwrap_or(payload);
            let base_sql = std::str::from_utf8(&base[1..]).unwrap_or(sql);
            // Ids from a sequence are filled in before planning (the id may
            // be the partition key). A retry after the fence keeps them, or
            // looks again: the newer dictionary may give the table a sequence.
            if filled.is_none() && self.b.generated_id.is_none() {
                filled = self.b.fill_ids(base_sql).await?;
            }
            let payload = filled.as_ref().unwrap_or(base);
            match self.plan_and_run(payload, facts, effects).await {
                Err(ProxyError::StaleRoute { err }) => {
                    match self.b.after_stale_route(err, before, &mut attempts).await? {
                        crate::exec::fence::Next::Retry => continue,
                        crate::exec::fence::Next::Answer(err) => {
                            return self.write_server_error(1, &err).await
                        }
                    }
                }
                r => return r,
            }
        }
    }

    /// Plan a statement with the current dictionary and run it (fenced: an
    /// answer that is only error 1146 comes back as `StaleRoute`).
    async fn plan_and_run(
        &mut self,
        payload: &Bytes,
        facts: &hscale_sql::Facts,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        let sql_bytes = &payload[1..];
        let sql = std::str::from_utf8(sql_bytes).unwrap_or("<not UTF-8>");
        self.b.planned_version = self.b.ctx.partitioning.stored_version();
        if !self.b.ctx.partitioning.is_empty() {
            let dict = self.b.ctx.partitioning.dictionary();
            self.b.planned_version = dict.stored_version;
            if std::str::from_utf8(sql_bytes).is_err() {
                if let Some(why) = self.b.ctx.partitioning.refusal(sql_bytes) {
                    return Err(ProxyError::Refused(why));
                }
            }
            let mut plan = self.plan(payload, sql, &dict).await?;
            // A statement spread over several connections cannot carry what
            // binds a session to one: user variables, locks, temporary
            // tables. (Inside a transaction its parts run one at a time on
            // the transaction's branches.) LAST_INSERT_ID() is synced on
            // every part; LAST_INSERT_ID(expr) is learnt from a write's
            // OKs, not from a read over several parts, and a global
            // table's copies would each evaluate it.
            let spread = match &plan {
                Plan::Targets { parts, .. } => parts.len() > 1,
                Plan::Merge(_) | Plan::GlobalWrite { .. } | Plan::OrderedWrite(_) => true,
                _ => false,
            };
            let last_insert_id = match &plan {
                Plan::GlobalWrite { .. } => facts.uses_last_insert_id,
                Plan::Targets { kind, .. } => {
                    facts.sets_last_insert_id
                        && *kind == hscale_route::router::StatementKind::Select
                }
                _ => facts.sets_last_insert_id,
            };
            let is_on_copies = self
                .with_variables(&mut plan, facts, sql, &dict, spread, last_insert_id)
                .await?;
            if spread && !is_on_copies && (!facts.pins.is_empty() || last_insert_id) {
                return Err(ProxyError::Unsupported {
                    what: "a statement over several partitions or backends with session-bound state (user variables, locks, temporary tables), a read over several partitions calling LAST_INSERT_ID(expr), or LAST_INSERT_ID() in a write to a global table".into(),
                });
            }
            match plan {
                Plan::Passthrough => {
                    // DROP DATABASE drops its partitioned and global tables
                    // through the journal first (every backend, the
                    // dictionary); the statement itself then runs below.
                    if let Some(hscale_sql::SessionChange::DropDatabase(db)) = &facts.change {
                        if dict.tables().any(|t| t.name.db == *db)
                            || dict.globals().any(|g| g.db == *db)
                        {
                            drop(dict);
                            crate::admin::forget_database(&self.b.ctx, self.b.worker, db).await?;
                        }
                    }
                }
                Plan::OrderedWrite(w) => {
                    drop(dict);
                    return self.run_ordered_write(w, sql, effects).await;
                }
                plan if crate::admin::is_dictionary_plan(&plan) => {
                    drop(dict);
                    let db = self.b.state.db.clone();
                    let out = crate::admin::run_plan(
                        &self.b.ctx,
                        self.b.worker,
                        plan,
                        sql,
                        db.as_deref(),
                    )
                    .await?;
                    return self.write_admin_output(out).await;
                }
                plan => {
                    // A write into the default partition of a table with
                    // auto-partitioning may name a value to create a
                    // partition for (`admin::auto_partition`).
                    let is_auto = matches!(&plan, Plan::Targets { kind: StatementKind::Insert, parts }
                        if parts.iter().any(|(t, _)| dict.is_auto_default(t)));
                    drop(dict);
                    let mut exec = self.exec();
                    exec.is_fenced = true;
                    let done = exec.run(plan, effects).await;
                    if is_auto && done.is_ok() {
                        crate::admin::auto_partition::notice(
                            &self.b.ctx.partitioning,
                            sql,
                            self.b.state.db.as_deref(),
                        );
                    }
                    return done;
                }
            }
        }
        // Statements that touch no table (COMMIT, SET, SELECT @@x, ...) run
        // on the backend the session is bound to; the rest on the main one.
        // While the main backend is frozen, those go to one that answers.
        let backend = match &self.b.pinned {
            Some(c) if is_table_free(facts, sql) => c.pool().backend_id,
            Some(_) => BackendId::MAIN,
            None => match self.b.ctx.answering_backend() {
                BackendId::MAIN => BackendId::MAIN,
                other if is_table_free(facts, sql) => other,
                _ => BackendId::MAIN,
            },
        };
        self.b.note.kind = PlanKind::Passthrough;
        self.b.note.parts = 1;
        let mut exec = self.exec();
        exec.is_fenced = true;
        exec.execute_on_backend(backend, payload, Expect::Query, effects)
            .await
    }

    /// `USE db` at login or change user: check it exists on the main
    /// backend (on one that answers while the main backend is frozen).
    async fn use_database(&mut self, db: &str) -> Result<Option<ErrPacket>, ProxyError> {
        self.check_db(db)?;
        let backend = match &self.b.pinned {
            Some(_) => BackendId::MAIN,
            None => self.b.ctx.answering_backend(),
        };
        let mut conn = self.b.acquire(backend).await?;
        let mut p = BytesMut::with_capacity(1 + db.len());
        p.put_u8(com::INIT_DB);
        p.put_slice(db.as_bytes());
        let r = conn.command(&p).await?;
        if r.is_ok() {
            self.b.state.db = Some(db.to_string());
            conn.db = Some(db.to_string());
        }
        self.b.finish(conn, Outcome::default(), &Effects::default());
        Ok(r.err())
    }

    async fn set_option(&mut self, payload: &[u8]) -> Result<(), ProxyError> {
        match payload.get(1..3).map(|b| u16::from_le_bytes([b[0], b[1]])) {
            Some(0) => self.b.state.is_multi_statements = true,
            Some(1) => self.b.state.is_multi_statements = false,
            _ => {
                return Err(ProxyError::Wrong(
                    "COM_SET_OPTION with an unknown option".into(),
                ));
            }
        }
        let st = self.b.status();
        send(self.reply(1).eof(st, 0)).await
    }

    /// Forget everything the session set: used by COM_RESET_CONNECTION and
    /// COM_CHANGE_USER. A pinned connection is reset before it goes back.
    fn reset_session(&mut self) {
        self.b.reset();
        self.statements.clear();
        self.conditions = Default::default();
    }
}
