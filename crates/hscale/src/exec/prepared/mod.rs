//! Executions of a client's prepared statements on backend connections.
//! A statement is prepared lazily on whichever connection runs it
//! (`BackendConn::prepare`, cached per connection); its buffered long data
//! is replayed and the execute packet rewritten with the backend's id. One
//! target streams straight through; several go through the same parallel
//! scatter as text statements (`scatter.rs`, [`Command::Execute`]).
//!
//! | file | holds |
//! |---|---|
//! | `statements.rs` | the client's statements under hscale's own ids |
//! | `routing.rs` | how a prepared statement reaches partitioned tables |
//! | `prepare.rs` | COM_STMT_PREPARE: prepared where it runs, answered with hscale's id |
//! | `execute.rs` | COM_STMT_EXECUTE, RESET and FETCH once the session decoded them |
//! | `mod.rs` | sending one part of an execution (prepared lazily, long data replayed) |

mod execute;
mod prepare;
pub mod routing;
pub mod statements;

pub use execute::{effects, Executed, CURSOR_TYPE_READ_ONLY};

use bytes::{BufMut, Bytes, BytesMut};
use hscale_route::dictionary::Target;
use hscale_route::router::StatementKind;
use hscale_route::BackendId;
use hscale_wire::consts::com;
use hscale_wire::response::ErrPacket;
use hscale_wire::stmt::Execute;
use tokio::io::{AsyncRead, AsyncWrite};

use super::forward::Expect;
use super::txn::lead_in::LeadIn;
use super::{Effects, Exec};
use crate::backend::state::SelectLimit;
use crate::backend::PooledConn;
use crate::error::ProxyError;

/// One execution of a prepared statement: what every part needs to run it.
pub struct Execution<'a> {
    pub exec: &'a Execute<'a>,
    /// Two bytes per parameter, as last bound by the client.
    pub types: &'a [u8],
    /// COM_STMT_SEND_LONG_DATA chunks to replay: (parameter, data).
    pub long_data: &'a [(u16, Bytes)],
    pub uses_last_insert_id: bool,
}

/// What each part of a statement sends for its SQL.
#[derive(Clone, Copy)]
pub enum Command<'a> {
    /// The SQL as a COM_QUERY.
    Query,
    /// The SQL prepared on the part's connection, then executed.
    Execute(&'a Execution<'a>),
}

impl Command<'_> {
    pub fn uses_last_insert_id(&self) -> bool {
        match self {
            Command::Query => false,
            Command::Execute(e) => e.uses_last_insert_id,
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Send `sql` on `conn` as `cmd` says. `Ok(Err(e))`: the server refused
    /// to prepare it (nothing else was sent).
    pub(super) async fn send_part(
        &mut self,
        conn: &mut PooledConn,
        sql: &[u8],
        cmd: Command<'_>,
    ) -> Result<Result<(), ErrPacket>, ProxyError> {
        let lost = |conn: &mut PooledConn, e: &dyn std::fmt::Display| {
            conn.is_broken = true;
            ProxyError::BackendLost {
                backend: conn.backend.to_string(),
                reason: e.to_string(),
            }
        };
        let packet = match cmd {
            Command::Query => {
                let mut p = BytesMut::with_capacity(1 + sql.len());
                p.put_u8(com::QUERY);
                p.put_slice(sql);
                p
            }
            Command::Execute(e) => {
                let backend_id = match conn.statement(sql) {
                    Some(b) => b.id,
                    None => {
                        let cache = self.b.ctx.config.proxy.backend_statement_cache;
                        match conn.prepare(&std::sync::Arc::from(sql), cache).await {
                            Ok(Ok(b)) => b.id,
                            Ok(Err(err)) => return Ok(Err(err)),
                            Err(err) => return Err(lost(conn, &err)),
                        }
                    }
                };
                for (param, data) in e.long_data {
                    let mut p = BytesMut::with_capacity(7 + data.len());
                    p.put_u8(com::STMT_SEND_LONG_DATA);
                    p.put_u32_le(backend_id);
                    p.put_u16_le(*param);
                    p.put_slice(data);
                    conn.send_no_response(&p).await?;
                }
                e.exec.encode_for(backend_id, e.types)
            }
        };
        match conn.stream.send_command(&packet).await {
            Ok(()) => Ok(Ok(())),
            Err(e) => Err(lost(conn, &e)),
        }
    }

    /// Run a prepared statement's execution on `parts` (one: streamed
    /// through; several: the parallel scatter).
    pub(crate) async fn run_prepared(
        &mut self,
        kind: StatementKind,
        parts: &[(Target, std::sync::Arc<[u8]>)],
        execution: &Execution<'_>,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        let cmd = Command::Execute(execution);
        match parts {
            [(target, sql)] => self.run_single(target.backend, sql, cmd, effects).await,
            // Each part would apply the limit on its own.
            _ if kind == StatementKind::Select
                && self.b.state.vars.select_limit() != SelectLimit::Unset =>
            {
                Err(ProxyError::Unsupported {
                    what: "a prepared SELECT without ORDER BY over several partitions while sql_select_limit is set".into(),
                })
            }
            _ => self.scatter(kind, parts, cmd).await,
        }
    }

    /// One statement on one backend, its answer streamed straight through.
    pub(crate) async fn run_single(
        &mut self,
        backend: BackendId,
        sql: &[u8],
        cmd: Command<'_>,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        let uses_last_insert_id = cmd.uses_last_insert_id() || effects.uses_last_insert_id;
        // A text statement carries the BEGIN or XA START it needs (`txn/lead_in.rs`).
        let mut lead = match cmd {
            Command::Query => LeadIn::allowed(),
            Command::Execute(_) => LeadIn::default(),
        };
        let mut conn = match self
            .b
            .lease_holding(backend, uses_last_insert_id, Some(&mut lead))
            .await?
        {
            Ok(c) => c,
            Err(err) => return self.write_server_error(1, &err).await,
        };
        // (Not behind a lead-in: its BEGIN goes with the statement; a
        // failed DO would lose it.)
        let supplied = match lead.is_empty() {
            true => effects.supplied,
            false => super::insert_id::Supplied::Nothing,
        };
        if let Some(err) = self
            .b
            .sync_for_insert(&mut conn, &supplied, self.scratch)
            .await?
        {
            self.b.give_back(conn);
            return self.write_server_error(1, &err).await;
        }
        if !lead.is_empty() {
            return match self.send_behind(conn, sql, lead).await? {
                Ok(conn) => self.forward(conn, Expect::Query, &effects).await,
                Err(err) => self.write_server_error(1, &err).await,
            };
        }
        match self.send_part(&mut conn, sql, cmd).await {
            Ok(Ok(())) => self.forward(conn, Expect::Query, &effects).await,
            Ok(Err(err)) => {
                self.b.give_back(conn);
                let err = super::fence::stale_route(self.is_fenced, err)?;
                self.write_server_error(1, &err).await
            }
            Err(e) => Err(self.b.backend_lost(conn, e.to_string())),
        }
    }
}
