//! A write over several parts (the partitions of a statement, the copies
//! of a global table, the partitions of a LOAD DATA) is one statement, as
//! on one server: all of its parts or none.
//!
//! - In autocommit it runs in a transaction of its own, committed (across
//!   backends with two-phase commit) or rolled back at its end
//!   (`implicit.rs`).
//! - Inside the session's transaction (BEGIN, or `autocommit=0`) the
//!   `hscale_statement` savepoint is set on every branch first (branches
//!   that join while it runs replay it, `savepoint.rs`). A part that fails
//!   rolls back to it, so the parts that ran are undone and the
//!   transaction goes on, as one server rolls back a failed statement
//!   alone; it is released after. As the transaction's first statement
//!   (its BEGIN still deferred) there is nothing else to keep: the
//!   transaction is rolled back and its BEGIN deferred again.
//!
//! [`Exec::open_write`] starts the scope, [`Exec::close_write`] ends it
//! and answers the client.

use hscale_wire::response::OkPacket;
use tokio::io::{AsyncRead, AsyncWrite};

use super::savepoint::SavepointOp;
use crate::error::ProxyError;
use crate::exec::Exec;

/// The savepoint a write over several parts inside a transaction sets on
/// every branch, and releases after it; with a number after it when the
/// client set a savepoint of that name (`statement_savepoint`).
const STATEMENT_SAVEPOINT: &str = "hscale_statement";

/// A name for the statement savepoint that none of the client's
/// savepoints has: setting it must not move or drop one of theirs.
fn statement_savepoint(taken: &super::savepoint::Savepoints) -> String {
    let mut name = STATEMENT_SAVEPOINT.to_string();
    let mut n = 0u32;
    while taken.has(&name) {
        n += 1;
        name = format!("{STATEMENT_SAVEPOINT}_{n}");
    }
    name
}

/// How a write over several parts inside the session's transaction is
/// undone when one of its parts fails.
enum StatementUndo {
    /// Nothing to undo here (its own transaction, or no transaction).
    None,
    /// Roll back to this savepoint (`statement_savepoint`).
    Savepoint(String),
    /// The transaction's first statement (its BEGIN deferred): roll the
    /// transaction back and open it again with this BEGIN.
    FirstStatement(bytes::Bytes),
}

/// One write over several parts, from [`Exec::open_write`] to
/// [`Exec::close_write`].
pub(crate) struct WriteScope {
    /// In its own transaction (`implicit.rs`).
    is_implicit: bool,
    undo: StatementUndo,
}

impl WriteScope {
    /// A part that fails after others changed rows is undone by the scope
    /// (its own transaction, or the statement savepoint); when not, the
    /// caller must end the transaction itself.
    pub(in crate::exec) fn undoes_parts(&self) -> bool {
        self.is_implicit || !matches!(self.undo, StatementUndo::None)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Start a write over several parts (see the module); `is_implicit`:
    /// in a transaction of its own (`Bindings::needs_implicit_txn`, asked
    /// by the caller, which may serialize such writes). `None`: the
    /// savepoint was refused, and its error written.
    pub(crate) async fn open_write(
        &mut self,
        is_implicit: bool,
    ) -> Result<Option<WriteScope>, ProxyError> {
        if is_implicit {
            self.b.begin_implicit();
            return Ok(Some(WriteScope {
                is_implicit,
                undo: StatementUndo::None,
            }));
        }
        Ok(self
            .statement_undo()
            .await?
            .map(|undo| WriteScope { is_implicit, undo }))
    }

    /// End a write over several parts with what its parts added up to
    /// (`Ok(None)`: a part's error was written): undo it or keep it, then
    /// answer the client.
    pub(crate) async fn close_write(
        &mut self,
        scope: WriteScope,
        total: Result<Option<OkPacket>, ProxyError>,
    ) -> Result<(), ProxyError> {
        let total = self.end_statement(scope.undo, total).await?;
        self.finish_write(total, scope.is_implicit).await
    }

    /// [`Self::close_write`] for a write whose answer is rows the caller
    /// writes itself (DELETE ... RETURNING): `Ok(true)` when the statement
    /// stands (committed, when it ran in a transaction of its own) and its
    /// rows are to be sent; `Ok(false)` when it was undone and an error
    /// written.
    pub(crate) async fn close_write_for_rows(
        &mut self,
        scope: WriteScope,
        total: Result<Option<OkPacket>, ProxyError>,
    ) -> Result<bool, ProxyError> {
        let total = self.end_statement(scope.undo, total).await?;
        if !scope.is_implicit {
            return Ok(total?.is_some());
        }
        match total {
            Ok(Some(_)) => match self.b.end_implicit(true, self.scratch).await? {
                None => Ok(true),
                Some(err) => {
                    self.write_server_error(1, &err).await?;
                    Ok(false)
                }
            },
            Ok(None) => self
                .b
                .end_implicit(false, self.scratch)
                .await
                .map(|_| false),
            Err(e) => {
                if let Err(rollback) = self.b.end_implicit(false, self.scratch).await {
                    tracing::info!(connection_id = self.b.connection_id, error = %rollback, "rolling back a write over several partitions failed");
                }
                Err(e)
            }
        }
    }

    /// Ready a write over several parts inside the session's transaction
    /// to be undone: a savepoint on every branch (new branches replay it
    /// when they join), or, when nothing ran in the transaction yet, the
    /// BEGIN to open it again. `None`: the savepoint was refused, and its
    /// error written.
    async fn statement_undo(&mut self) -> Result<Option<StatementUndo>, ProxyError> {
        if let (Some(begin), None) = (&self.b.pending_begin, &self.b.pinned) {
            return Ok(Some(StatementUndo::FirstStatement(begin.clone())));
        }
        if self.b.pinned.is_none() || !self.b.holds_transaction() {
            return Ok(Some(StatementUndo::None));
        }
        let name = statement_savepoint(&self.b.savepoints);
        let sql = format!("SAVEPOINT {name}");
        let Some(op) = SavepointOp::parse(&sql) else {
            return Ok(Some(StatementUndo::None));
        };
        match self.b.savepoint_all(&sql, &op, self.scratch).await? {
            None => Ok(Some(StatementUndo::Savepoint(name))),
            Some(err) => {
                self.write_server_error(1, &err).await?;
                Ok(None)
            }
        }
    }

    /// After the parts of a write inside the session's transaction: drop
    /// the statement's savepoint, or, when a part failed (its error was
    /// written: `Ok(None)`), undo what the other parts did first. If the
    /// undo itself fails the transaction cannot go on as the client
    /// believes it is: the client connection is closed.
    async fn end_statement(
        &mut self,
        undo: StatementUndo,
        total: Result<Option<OkPacket>, ProxyError>,
    ) -> Result<Result<Option<OkPacket>, ProxyError>, ProxyError> {
        let is_failed = match &total {
            Ok(Some(_)) => false,
            Ok(None) => true,
            // A stale route rolls the transaction back (the fence); a lost
            // connection or client ends the session.
            Err(
                ProxyError::StaleRoute { .. }
                | ProxyError::BackendLost { .. }
                | ProxyError::ClientGone,
            ) => return Ok(total),
            Err(_) => true,
        };
        match undo {
            StatementUndo::None => Ok(total),
            StatementUndo::FirstStatement(begin) => {
                if is_failed && !self.b.is_bound_lost {
                    // Nothing else ran in the transaction: roll it all
                    // back and open it again.
                    self.b.rollback(self.scratch).await?;
                    self.b.pending_begin = Some(begin);
                }
                Ok(total)
            }
            StatementUndo::Savepoint(name) => {
                if self.b.is_bound_lost {
                    return Ok(total);
                }
                let mut steps = Vec::new();
                if is_failed {
                    steps.push(format!("ROLLBACK TO SAVEPOINT {name}"));
                }
                steps.push(format!("RELEASE SAVEPOINT {name}"));
                for sql in steps {
                    let Some(op) = SavepointOp::parse(&sql) else {
                        continue;
                    };
                    if let Some(err) = self.b.savepoint_all(&sql, &op, self.scratch).await? {
                        // `savepoint_all` rolled the transaction back.
                        if is_failed {
                            self.b.is_bound_lost = true;
                            return Ok(total);
                        }
                        self.write_server_error(1, &err).await?;
                        return Ok(Ok(None));
                    }
                }
                Ok(total)
            }
        }
    }

    /// Answer a write over several parts: commit its own transaction
    /// first, if it has one (a failed part's error was written already).
    pub(in crate::exec) async fn finish_write(
        &mut self,
        total: Result<Option<OkPacket>, ProxyError>,
        is_implicit: bool,
    ) -> Result<(), ProxyError> {
        if !is_implicit {
            return match total? {
                Some(total) => self.write_total(total).await,
                None => Ok(()),
            };
        }
        match total {
            Ok(Some(total)) => match self.b.end_implicit(true, self.scratch).await? {
                None => self.write_total(total).await,
                Some(err) => self.write_server_error(1, &err).await,
            },
            Ok(None) => self.b.end_implicit(false, self.scratch).await.map(|_| ()),
            Err(e) => {
                // Nothing of the statement may stay: a stale route is run
                // again whole by the fence.
                if let Err(rollback) = self.b.end_implicit(false, self.scratch).await {
                    tracing::info!(connection_id = self.b.connection_id, error = %rollback, "rolling back a write over several partitions failed");
                }
                Err(e)
            }
        }
    }
}
