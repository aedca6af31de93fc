//! One client connection, from handshake to quit.
//!
//! ```text
//!  accept ─► login::log_in ─► command loop ─┬─ COM_QUERY ─► query.rs: analyze, own answers
//!                                             │     └─► exec/entry.rs::run_statement (fenced: plan, run)
//!                                             ├─ COM_STMT_* ─► commands.rs ─► exec/prepared/
//!                                             └─ ping / set option / reset / change user
//! ```
//! The session holds the client stream, its `Bindings` (every backend
//! connection, borrowed and synced only by `exec/`), its prepared
//! statements and diagnostics area; it never borrows a connection itself.
//! Pinning: the session keeps its backend connection while any [`Pins`] bit
//! is set: in a transaction or with autocommit off (read from the server's
//! status flags), and after statements whose state cannot be replayed.

mod access;
mod admin;
mod batch;
mod commands;
mod processlist;
mod query;
mod rewrite;
mod statement;

use hscale_route::BackendId;
use std::sync::Arc;

use bytes::Bytes;
use hscale_sql::{Pins, SessionChange};
use hscale_wire::consts::{cap, com};
use hscale_wire::reply::{OkParts, Reply};
use hscale_wire::response::ErrPacket;
use hscale_wire::PacketStream;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ProxyError;
use crate::exec::forward::Expect;
use crate::exec::prepared::statements::Statements;
use crate::exec::{send, write_error, Bindings, Effects, Exec};
use crate::login::{self, ClientInfo};
use crate::metrics::PlanKind;
use crate::runtime::Context;
use crate::tls::ClientStream;

pub struct Session<S> {
    client: PacketStream<S>,
    info: ClientInfo,
    /// The backend connections this session holds and the state replayed
    /// onto them.
    b: Bindings,
    /// What the statement running gathers and decides (its note,
    /// conditions, generated ids): lent to each `Exec` it runs, cleared
    /// before each command and each statement of a batch.
    scratch: crate::exec::scratch::StatementScratch,
    statements: Statements,
    /// What the previous statement left for `ROW_COUNT()` and
    /// `FOUND_ROWS()`.
    last: crate::exec::last_statement::LastStatement,
    /// The conditions of the last statement that raised any
    /// (`exec/conditions/list.rs`).
    conditions: crate::exec::conditions::list::Conditions,
    /// The global wait_timeout (interactive_timeout for an interactive
    /// client) when the session started, if this proxy knows it: the
    /// session's own, as a server gives it at connect.
    start_wait: Option<std::time::Duration>,
    /// When the command being served arrived (`begin_command`) and when
    /// its statement ended (`statement.rs`): one clock read each, shared
    /// by the processlist, the statement's timing and the idle timer.
    command_at: std::time::Instant,
    ended_at: Option<std::time::Instant>,
}

/// Serve one client connection until it quits or fails. `is_local` for
/// the unix socket, which `[tls] require` counts as secure.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send>(
    stream: S,
    ctx: Arc<Context>,
    reads: crate::exec::SharedReads,
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
    let Some(info) = login::log_in(&mut client, &ctx, &peer, is_local, connection_id).await else {
        return;
    };
    let Some(_slot) = ctx.client_slot() else {
        tracing::warn!(peer, "refusing connection: max_connections reached");
        let (code, _, message) = ProxyError::TooManyConnections.to_mysql();
        let refusal = Reply::new(&mut client, info.next_seq, false);
        let _ = refusal.err_without_state(code, &message).flush().await;
        return;
    };
    let tenant = match ctx.tenants.user(&info.user).open() {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(peer, user = %info.user, "refusing connection: the user's max_connections reached");
            let (code, state, message) = e.to_mysql();
            let refusal = Reply::new(&mut client, info.next_seq, false);
            let _ = refusal.err(code, &state, &message).flush().await;
            return;
        }
    };
    let is_tls = client.get_ref().is_tls();
    let mut info = info;
    info.tls = client.get_ref().tls_session();
    info.host = match peer.parse::<std::net::SocketAddr>() {
        Ok(a) => a.ip().to_string(),
        Err(_) => "localhost".into(),
    };
    info.host_name = login::client_host_name(
        &peer,
        ctx.resolves_names
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    tracing::info!(peer, connection_id, user = %info.user, db = ?info.database, is_tls, "client connected");
    crate::exec::session_start::learn_collations(&ctx, worker, info.collation).await;
    let base_vars = match crate::exec::session_start::vars_for_collation(&ctx, info.collation) {
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
    let start_wait = ctx.global_wait_timeout(info.capabilities & cap::INTERACTIVE != 0);
    let session = Session {
        start_wait,
        b: Bindings::new(
            ctx,
            reads,
            worker,
            connection_id,
            base_vars,
            info.capabilities,
            &info.user,
            host,
            tenant,
        ),
        client,
        scratch: Default::default(),
        statements: Statements::default(),
        last: Default::default(),
        conditions: Default::default(),
        info,
        command_at: std::time::Instant::now(),
        ended_at: None,
    };
    session.welcome().await;
    tracing::info!(connection_id, "client disconnected");
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<ClientStream<S>> {
    /// After the login: the database it named taken, the OK, then the
    /// command loop until the client goes; its pinned connection released.
    async fn welcome(mut self) {
        let connection_id = self.b.connection_id();
        let seq = self.info.next_seq;
        if let Some(db) = self.info.database.clone() {
            match self.use_database(&db).await {
                Ok(None) => {}
                Ok(Some(err)) => {
                    let _ = self.exec().write_server_error(seq, &err).await;
                    return;
                }
                Err(e) => {
                    write_error(&mut self.client, seq, &e).await;
                    return;
                }
            }
        }
        let deprecated = self.is_eof_deprecated();
        let login_ok = Reply::new(&mut self.client, seq, deprecated)
            .ok(OkParts::new(self.b.status(), 0))
            .flush()
            .await;
        if login_ok.is_ok() {
            if self.info.capabilities & cap::COMPRESS != 0 {
                self.client.get_mut().compress();
            }
            let ctx = self.b.ctx().clone();
            let db = self.b.state().db.as_deref();
            self.b.handle().end(std::time::Instant::now(), db);
            ctx.register_session(connection_id, self.b.handle().clone());
            self.run().await;
            ctx.unregister_session(connection_id);
        }
        self.b.release_pinned();
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> crate::exec::fence::Fenced for Session<S> {
    fn bindings(&mut self) -> &mut Bindings {
        &mut self.b
    }

    fn parts(&mut self) -> (&mut Bindings, &mut crate::exec::scratch::StatementScratch) {
        (&mut self.b, &mut self.scratch)
    }

    async fn answer_error(&mut self, err: &ErrPacket) -> Result<(), ProxyError> {
        self.exec().write_server_error(1, err).await
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> crate::exec::entry::TextSession for Session<S> {
    type Stream = S;

    fn exec(&mut self) -> Exec<'_, S> {
        Session::exec(self)
    }

    async fn run_query(&mut self, payload: &Bytes) -> Result<(), ProxyError> {
        Box::pin(self.query_text(payload)).await
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    fn is_eof_deprecated(&self) -> bool {
        self.info.capabilities & cap::DEPRECATE_EOF != 0
    }

    /// The executor for one statement of this session.
    fn exec(&mut self) -> Exec<'_, S> {
        let deprecated = self.is_eof_deprecated();
        let is_local_files = self.info.capabilities & cap::LOCAL_FILES != 0;
        let capabilities = self.info.capabilities;
        let mut exec = Exec::new(&mut self.client, &mut self.b, &mut self.scratch, deprecated);
        exec.is_local_files = is_local_files;
        exec.capabilities = capabilities;
        exec
    }

    /// The session's wait_timeout: its own `SET wait_timeout = <seconds>`,
    /// else the global one it started with (when a `SET GLOBAL` through
    /// this proxy made it known), else `[proxy] wait_timeout_ms`.
    fn wait_timeout(&self) -> std::time::Duration {
        let set = self.b.state().vars.items().iter().rev().find_map(|i| {
            let value = i.assign.split_once('=')?.1.trim();
            (i.key == "wait_timeout").then(|| value.parse::<u64>().ok())
        });
        match set {
            Some(Some(secs)) => std::time::Duration::from_secs(secs.clamp(1, 31_536_000)),
            _ => self.start_wait.unwrap_or_else(|| {
                std::time::Duration::from_millis(self.b.ctx().live().proxy.wait_timeout_ms)
            }),
        }
    }

    async fn run(&mut self) {
        let max = self.b.ctx().config.proxy.max_allowed_packet;
        // The idle timer is armed once and moved on only when it fires
        // early, so a command costs one clock read, not a timer update.
        let mut wait = self.wait_timeout();
        let mut wait_vars = self.b.state().vars.clone();
        let mut last = tokio::time::Instant::now();
        let idle = tokio::time::sleep(wait);
        tokio::pin!(idle);
        loop {
            if self.b.handle().is_killed() {
                tracing::info!(connection_id = self.b.connection_id(), "killed");
                return;
            }
            if self.b.ctx().is_draining() {
                // SIGTERM: the statement (if any) is answered; close.
                tracing::info!(
                    connection_id = self.b.connection_id(),
                    "closing: the proxy is shutting down"
                );
                return;
            }
            // For HSCALE SHOW TRANSACTIONS (a no-op outside transactions across backends).
            self.b.publish_txn();
            if !Arc::ptr_eq(&wait_vars, &self.b.state().vars) {
                wait_vars = self.b.state().vars.clone();
                wait = self.wait_timeout();
                idle.as_mut().reset(last + wait);
            }
            let read = tokio::select! {
                biased;
                r = self.client.read_command(max) => r,
                _ = self.b.handle().woken() => continue,
                _ = self.b.held_closed() => {
                    // As the server at its wait_timeout: the client
                    // connection closes while idle, not at its next query.
                    tracing::info!(connection_id = self.b.connection_id(), "closing: a backend connection holding the session's state was closed while idle");
                    self.b.mark_bound_lost();
                    return;
                }
                _ = &mut idle => {
                    let due = last + wait;
                    if tokio::time::Instant::now() >= due {
                        // As MariaDB at wait_timeout: the connection is closed.
                        tracing::info!(connection_id = self.b.connection_id(), "closing: idle longer than wait_timeout");
                        return;
                    }
                    idle.as_mut().reset(due);
                    continue;
                }
            };
            // A KILL may have landed while the command was arriving (the
            // killer's OK can reach its client before this task runs): a
            // killed session answers nothing more, as a server's thread.
            if self.b.handle().is_killed() {
                tracing::info!(connection_id = self.b.connection_id(), "killed");
                return;
            }
            let payload = match read {
                Ok(p) => p,
                Err(e) if e.is_disconnect() => return,
                Err(e) => {
                    tracing::info!(connection_id = self.b.connection_id(), error = %e, "closing: bad packet from client");
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
            last = match self.ended_at.take() {
                Some(at) => at.into(),
                None => tokio::time::Instant::now(),
            };
            let db = self.b.state().db.as_deref();
            self.b.handle().end(last.into_std(), db);
            if self.b.is_bound_lost() {
                // As a server's connection: closed, no answer (2013).
                tracing::info!(
                    connection_id = self.b.connection_id(),
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
                    tracing::debug!(connection_id = self.b.connection_id(), error = %e, "statement failed");
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
        self.scratch.clear();
        self.b.new_statement();
        self.b.read_from_mut().statement = crate::exec::read_from::Route::Primary;
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
            com::STMT_PREPARE => self.prepare_noting_errors(&payload).await?,
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

    /// An OK the proxy answers itself, with the session's status flags.
    async fn write_ok(&mut self, seq: u8) -> Result<(), ProxyError> {
        let st = self.b.status();
        send(self.reply(seq).ok(OkParts::new(st, 0))).await
    }

    /// KILL and COM_PROCESS_KILL (`exec/kill.rs`), answered with an OK.
    async fn kill(&mut self, k: hscale_sql::KillStatement) -> Result<(), ProxyError> {
        self.b.kill(k, &self.info.user, self.info.is_admin).await?;
        self.write_ok(1).await
    }

    /// `USE db` at login or change user: check it exists on the main
    /// backend (on one that answers while the main backend is frozen).
    async fn use_database(&mut self, db: &str) -> Result<Option<ErrPacket>, ProxyError> {
        self.check_db(db)?;
        let backend = match self.b.is_pinned() {
            true => BackendId::MAIN,
            false => self.b.ctx().answering_backend(),
        };
        self.b.use_database(backend, db).await
    }

    async fn set_option(&mut self, payload: &[u8]) -> Result<(), ProxyError> {
        match payload.get(1..3).map(|b| u16::from_le_bytes([b[0], b[1]])) {
            Some(0) => self.b.set_multi_statements(true),
            Some(1) => self.b.set_multi_statements(false),
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
