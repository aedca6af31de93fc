//! `CREATE TABLE u ... SELECT` reading partitioned tables
//! (`Plan::CreateSelect`, `hscale_route::router::CreateSelect`): the
//! partitioned tables it reads are copied into temporary tables on a
//! connection to the main backend (as shipped tables of a merge are,
//! `ship.rs`), then the statement runs there over the copies and its
//! answer (the OK with `Records: n  Duplicates: d  Warnings: w`, or the
//! server's error) goes to the client as it is.
//!
//! A connection the session keeps (pinned by its temporary tables, user
//! variables, ...) drops the copies after the statement; any other is
//! closed after use, which drops them.

use hscale_route::router::CreateSelect;
use hscale_route::BackendId;
use tokio::io::{AsyncRead, AsyncWrite};

use super::errors::Stop;
use super::ship;
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::exec::forward::{Expect, Outcome};
use crate::exec::{Effects, Exec};

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Run a CREATE TABLE ... SELECT over copies (see the module).
    pub(crate) async fn run_create_select(
        &mut self,
        plan: &CreateSelect,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        // CREATE TABLE commits the open transaction before it reads, as
        // on one server (CREATE TEMPORARY TABLE does not): committed
        // first, the copies are read with its writes, outside it.
        if !plan.is_temporary && self.b.holds_transaction() {
            if let Some(err) = self.commit_before().await? {
                return self.write_server_error(1, &err).await;
            }
        }
        let setup = match self.ship_statements(&plan.ship).await {
            Ok(s) => s,
            Err(Stop::Server(err)) => {
                let err = crate::exec::fence::stale_route(self.is_fenced, err)?;
                return self.write_server_error(1, &err).await;
            }
            Err(Stop::Proxy(e)) => return Err(e),
        };
        let mut conn = match self
            .b
            .lease(BackendId::MAIN, effects.uses_last_insert_id)
            .await?
        {
            Ok(c) => c,
            Err(err) => return self.write_server_error(1, &err).await,
        };
        // Kept by the session: already (pinned, a transaction), or from
        // now on (CREATE TEMPORARY TABLE pins the connection it ran on).
        let is_kept =
            self.b.pinned.is_some() || self.b.holds_transaction() || !effects.pins.is_empty();
        for statement in &setup {
            // Never given back to the pool with the copies in it.
            conn.is_broken |= !is_kept;
            match conn
                .command(&BackendConn::payload_for_query(statement))
                .await
            {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    // The connection serves on (a pooled one is closed with
                    // what it holds: `is_broken`), in the session's state.
                    if is_kept {
                        let back = BackendConn::payload_for_query(ship::LEAVE_COPY_STATE);
                        if !matches!(conn.command(&back).await, Ok(Ok(_))) {
                            conn.is_broken = true;
                        }
                    }
                    self.b.give_back(conn);
                    return self.write_server_error(1, &e).await;
                }
                Err(e) => {
                    self.b.close(conn, e.to_string());
                    return Err(e);
                }
            }
        }
        if let Err(e) = conn
            .stream
            .send_command(&BackendConn::payload_for_query(&plan.sql))
            .await
        {
            return Err(self.b.backend_lost(conn, e.to_string()));
        }
        self.forward_with(conn, Expect::Query, &effects, None)
            .await?;
        // The session's own connection goes on without the copies. (A
        // CREATE TEMPORARY TABLE that failed leaves its connection to the
        // pool with them: the next statement shipping a table there drops
        // them first.)
        if (is_kept && self.b.pinned.is_some()) || self.b.holds_transaction() {
            let drop = ship::cleanup(&plan.ship);
            if let Ok(mut c) = self.b.lease(BackendId::MAIN, false).await? {
                let r = c.command(&BackendConn::payload_for_query(&drop)).await;
                match r {
                    Ok(_) => self.b.give_back(c),
                    Err(e) => self.b.close(c, e.to_string()),
                }
            }
        }
        Ok(())
    }

    /// The commit one server makes before a statement that commits
    /// implicitly: across the branches of a transaction over several
    /// backends, or on the connection of one over a single backend.
    async fn commit_before(
        &mut self,
    ) -> Result<Option<hscale_wire::response::ErrPacket>, ProxyError> {
        // A BEGIN not sent yet: an empty transaction, committed.
        self.b.pending_begin = None;
        if self.b.txn.is_some() {
            return self.b.commit_all(self.scratch).await;
        }
        let Some(home) = self
            .b
            .pinned
            .as_ref()
            .filter(|_| self.b.holds_transaction())
            .map(|c| c.pool().backend_id)
        else {
            return Ok(None);
        };
        let mut conn = match self.b.lease(home, false).await? {
            Ok(c) => c,
            Err(err) => return Ok(Some(err)),
        };
        match conn
            .command(&BackendConn::payload_for_query("COMMIT"))
            .await
        {
            Ok(Ok(ok)) => {
                let outcome = Outcome {
                    status: Some(ok.status),
                    ..Outcome::default()
                };
                self.b
                    .finish(conn, outcome, &Effects::default(), self.scratch);
                Ok(None)
            }
            Ok(Err(err)) => {
                self.b.give_back(conn);
                Ok(Some(err))
            }
            Err(e) => {
                self.b.close(conn, e.to_string());
                Err(e)
            }
        }
    }
}
