//! Writes to global tables (`Plan::GlobalWrite`, a prepared write to
//! one): the main backend's copy first, then every other copy, in one
//! statement scope (`txn/statement.rs`, `txn/implicit.rs`), so the copies
//! never differ; the client gets the main backend's answer.

use hscale_route::BackendId;
use hscale_wire::response::OkPacket;
use tokio::io::{AsyncRead, AsyncWrite};

use super::forward::Outcome;
use super::prepared::Command;
use super::{Effects, Exec};
use crate::error::ProxyError;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// A write to a global table: on the main backend's copy, then on every
    /// other copy; the client gets the main backend's answer. In autocommit
    /// the copies change in one transaction of the statement's own
    /// (`txn/implicit.rs`: all or none), serialized per proxy so every copy
    /// sees the writes in the same order; inside a transaction they run on
    /// its branches, and a copy that fails after the main one changed
    /// undoes the statement on every copy (`txn/statement.rs`), so the copies
    /// cannot differ and the transaction goes on.
    pub(crate) async fn run_global_write(
        &mut self,
        table: &hscale_route::dictionary::TableName,
        sql: &str,
    ) -> Result<(), ProxyError> {
        let ctx = self.b.ctx.clone();
        let is_implicit = self.b.needs_implicit_txn();
        let _serial = if is_implicit {
            Some(ctx.partitioning.global_write_lock.lock().await)
        } else {
            None
        };
        let Some(scope) = self.open_write(is_implicit).await? else {
            return Ok(());
        };
        let total = self
            .global_copies(table, sql.as_bytes(), Command::Query, scope.undoes_parts())
            .await;
        self.close_write(scope, total).await
    }

    /// [`Self::run_global_write`] for an execution of a prepared statement
    /// (`sql`, prepared on each copy's connection): every copy or none,
    /// in the same order, fenced the same way.
    pub(crate) async fn run_prepared_global(
        &mut self,
        table: &hscale_route::dictionary::TableName,
        sql: &[u8],
        execution: &super::prepared::Execution<'_>,
    ) -> Result<(), ProxyError> {
        let ctx = self.b.ctx.clone();
        let is_implicit = self.b.needs_implicit_txn();
        let _serial = if is_implicit {
            Some(ctx.partitioning.global_write_lock.lock().await)
        } else {
            None
        };
        let Some(scope) = self.open_write(is_implicit).await? else {
            return Ok(());
        };
        let total = self
            .global_copies(
                table,
                sql,
                Command::Execute(execution),
                scope.undoes_parts(),
            )
            .await;
        self.close_write(scope, total).await
    }

    /// Write every copy of a global table: the sum of the main copy's OK,
    /// `None` when an error was written to the client.
    async fn global_copies(
        &mut self,
        table: &hscale_route::dictionary::TableName,
        sql: &[u8],
        cmd: Command<'_>,
        is_undone: bool,
    ) -> Result<Option<OkPacket>, ProxyError> {
        let mut total = OkPacket::default();
        let Some(mut conn) = self.connect_part(BackendId::MAIN, 1, cmd).await? else {
            return Ok(None);
        };
        match self.send_part(&mut conn, sql, cmd).await {
            Ok(Ok(())) => {
                if !self.read_part_ok(conn, &mut total).await? {
                    return Ok(None);
                }
            }
            Ok(Err(err)) => {
                self.b.give_back(conn);
                self.write_server_error(1, &err).await?;
                return Ok(None);
            }
            Err(e) => return Err(self.b.backend_lost(conn, e.to_string())),
        }
        for b in self.b.ctx.backend_ids().skip(1) {
            let mut conn = self.b.acquire(b).await?;
            if let Some(err) = self.b.sync(&mut conn, false).await? {
                self.b.give_back(conn);
                return self.copy_failed(table, b, err, is_undone).await;
            }
            let running = self.b.running(&conn, b);
            let r = match self.send_part(&mut conn, sql, cmd).await {
                Ok(Ok(())) => conn.read_response().await,
                Ok(Err(err)) => Ok(Err(err)),
                Err(e) => Err(e),
            };
            drop(running);
            match r {
                Ok(Ok(ok)) => {
                    let outcome = Outcome {
                        status: Some(ok.status),
                        ok: Some(ok),
                        is_err: false,
                        packets: 0,
                        held: None,
                        is_conn_ending: false,
                        ..Outcome::default()
                    };
                    self.b
                        .finish(conn, outcome, &Effects::default(), self.scratch);
                }
                Ok(Err(err)) => {
                    self.b.give_back(conn);
                    return self.copy_failed(table, b, err, is_undone).await;
                }
                Err(e) => return Err(self.b.backend_lost(conn, e.to_string())),
            }
        }
        Ok(Some(total))
    }

    /// A copy of a global table refused a write the main copy took: the
    /// backend's error goes to the client. The write's scope undoes the
    /// copies that changed (`is_undone`, `txn/statement.rs`); when it cannot,
    /// the session's transaction ends (rolled back), since committing it
    /// would leave the copies different.
    pub(super) async fn copy_failed(
        &mut self,
        table: &hscale_route::dictionary::TableName,
        b: BackendId,
        err: hscale_wire::response::ErrPacket,
        is_undone: bool,
    ) -> Result<Option<OkPacket>, ProxyError> {
        let name = self.b.ctx.config.backends[b.index()].name.clone();
        tracing::info!(connection_id = self.b.connection_id, %table, backend = %name, code = err.code, "a copy of a global table refused a write: rolled back");
        if !is_undone {
            self.b.rollback(self.scratch).await?;
        }
        self.write_server_error(1, &err).await?;
        Ok(None)
    }
}
