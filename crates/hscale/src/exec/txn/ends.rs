//! The executor's side of ending a transaction the client asks to end:
//! across backends (`Bindings::commit_all` / `rollback_all`), and COMMIT /
//! ROLLBACK RELEASE on one connection. The session decides which
//! statements come here (`session/query.rs::answered_by_kind`).
//!
//! ```text
//!  in a transaction with branches ─┬─ COMMIT / ROLLBACK ─► Bindings::commit_all / rollback_all
//!                                  ├─ SAVEPOINT, ROLLBACK TO, RELEASE ─► Bindings::savepoint_all (every branch)
//!                                  ├─ BEGIN, DDL, LOCK/UNLOCK, SET autocommit=1 ─► commit_all, then the statement
//!                                  ├─ several statements in one query ending or changing
//!                                  │  the transaction ─► refused (1235); other ones run
//!                                  └─ anything else ─► planned and run on the branches
//!  no branches ── COMMIT / ROLLBACK ... RELEASE ─► end_and_release: COMMIT or ROLLBACK, OK, close
//! ```

use hscale_sql::transaction::{end_of, is_implicit_commit, touches_transaction};
use hscale_sql::{Facts, Kind};
use hscale_wire::reply::OkParts;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ProxyError;
use crate::exec::txn::savepoint::SavepointOp;
use crate::exec::{send, Exec};

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// A statement while the session's transaction has branches on several
    /// backends. `Ok(true)`: answered here.
    pub async fn in_distributed_transaction(
        &mut self,
        facts: &Facts,
        sql: &str,
    ) -> Result<bool, ProxyError> {
        let refuse = |what: &str| {
            Err(ProxyError::Unsupported {
                what: format!("{what} in a transaction over several backends"),
            })
        };
        match facts.kind {
            Kind::Commit | Kind::Rollback if facts.statements == 1 && end_of(sql).is_some() => {
                let Some(end) = end_of(sql) else {
                    return Ok(false);
                };
                let was_read_only = self.b.is_read_only_txn;
                let r = if facts.kind == Kind::Commit {
                    self.b.commit_all(self.scratch).await?
                } else {
                    self.b.rollback_all(self.scratch).await?
                };
                if let Some(err) = r {
                    self.write_server_error(1, &err).await?;
                    return Ok(true);
                }
                if end.is_chain {
                    // The next transaction, with the same access mode,
                    // begins at once (deferred to its first statement, as
                    // BEGIN is); the OK says the session is in it.
                    let begin = if was_read_only {
                        "START TRANSACTION READ ONLY"
                    } else {
                        "START TRANSACTION"
                    };
                    self.b.pending_begin =
                        Some(crate::backend::BackendConn::payload_for_query(begin));
                }
                self.write_ok(1).await?;
                if end.is_release {
                    // As the server does: the connection ends after the OK.
                    return Err(ProxyError::ClientGone);
                }
                Ok(true)
            }
            // Several statements run where they would outside the
            // transaction (on its branches), unless one of them ends or
            // changes the transaction: that would reach one branch only.
            _ if facts.statements > 1 && touches_transaction(sql) => refuse(
                "several statements in one query, one of which begins, ends or changes the transaction (COMMIT, ROLLBACK, SAVEPOINT, SET autocommit, statements that commit implicitly)",
            ),
            _ if facts.statements > 1 => Ok(false),
            _ if SavepointOp::parse(sql).is_some() => {
                let Some(op) = SavepointOp::parse(sql) else {
                    return Ok(false);
                };
                match self.b.savepoint_all(sql, &op, self.scratch).await? {
                    None => self.write_ok(1).await?,
                    Some(err) => self.write_server_error(1, &err).await?,
                }
                Ok(true)
            }
            _ if is_implicit_commit(facts, sql) => {
                // The commit MariaDB makes before such a statement, made
                // across every branch; then the statement runs as usual.
                if let Some(err) = self.b.commit_all(self.scratch).await? {
                    self.write_server_error(1, &err).await?;
                    return Ok(true);
                }
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    /// `COMMIT RELEASE` / `ROLLBACK RELEASE` (`is_release`) when the
    /// transaction has no branches (one backend, or none yet): end it with
    /// a plain COMMIT or ROLLBACK on its connection (which stays usable for
    /// the pool), answer OK, then close the client connection
    /// (`Err(ClientGone)`), as a server does.
    pub async fn end_and_release(&mut self, kind: Kind) -> Result<(), ProxyError> {
        // Nothing ran yet: nothing to end.
        self.b.pending_begin = None;
        let end = if kind == Kind::Commit {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        if let Some(conn) = self.b.pinned.take() {
            if let Some(err) = self.b.end_home(conn, end, self.scratch).await? {
                // As a server: a failed COMMIT keeps the connection.
                return self.write_server_error(1, &err).await;
            }
        }
        self.write_ok(1).await?;
        Err(ProxyError::ClientGone)
    }

    /// An OK hscale answers itself, with the session's status flags.
    async fn write_ok(&mut self, seq: u8) -> Result<(), ProxyError> {
        let st = self.b.status();
        send(self.reply(seq).ok(OkParts::new(st, 0))).await
    }
}
