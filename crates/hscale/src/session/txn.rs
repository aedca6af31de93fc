//! The session side of transactions across backends (`exec/txn/mod.rs` owns
//! the branches and the commit protocol): which statements end such a
//! transaction, and the ones it cannot run yet.
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

use hscale_sql::transaction::{is_implicit_commit, touches_transaction};
use hscale_sql::{Facts, Kind};
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::error::ProxyError;
use crate::exec::txn::savepoint::SavepointOp;
use hscale_sql::transaction::is_plain_end;

/// A savepoint statement (one statement that may be one, checked cheaply
/// first): the change it makes to the session's savepoints.
pub(super) fn savepoint_op(facts: &Facts, sql: &str) -> Option<SavepointOp> {
    if matches!(facts.kind, Kind::Commit | Kind::Rollback) && is_plain_end(sql) {
        return Some(SavepointOp::Clear);
    }
    let may_be = facts.statements == 1
        && match facts.kind {
            Kind::Rollback => true,
            Kind::Other => sql
                .trim_start()
                .get(..4)
                .is_some_and(|w| w.eq_ignore_ascii_case("SAVE") || w.eq_ignore_ascii_case("RELE")),
            _ => false,
        };
    may_be.then(|| SavepointOp::parse(sql)).flatten()
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// A statement while the session's transaction has branches on several
    /// backends. `Ok(true)`: answered here.
    pub(super) async fn in_distributed_transaction(
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
                    self.b.commit_all().await?
                } else {
                    self.b.rollback_all().await?
                };
                if let Some(err) = r {
                    self.exec().write_server_error(1, &err).await?;
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
                match self.b.savepoint_all(sql, &op).await? {
                    None => self.write_ok(1).await?,
                    Some(err) => self.exec().write_server_error(1, &err).await?,
                }
                Ok(true)
            }
            _ if is_implicit_commit(facts, sql) => {
                // The commit MariaDB makes before such a statement, made
                // across every branch; then the statement runs as usual.
                if let Some(err) = self.b.commit_all().await? {
                    self.exec().write_server_error(1, &err).await?;
                    return Ok(true);
                }
                Ok(false)
            }
            _ => Ok(false),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// `COMMIT RELEASE` / `ROLLBACK RELEASE` when the transaction has no
    /// branches (one backend, or none yet): end it with a plain COMMIT or
    /// ROLLBACK on its connection (which stays usable for the pool), answer
    /// OK, then close the client connection, as a server does. `Ok(false)`:
    /// not such a statement.
    pub(super) async fn end_and_release(
        &mut self,
        facts: &Facts,
        sql: &str,
    ) -> Result<bool, ProxyError> {
        // A plain COMMIT (the single-backend path) costs a short scan, no
        // allocation.
        let is_release = matches!(facts.kind, Kind::Commit | Kind::Rollback)
            && facts.statements == 1
            && sql
                .as_bytes()
                .windows(7)
                .any(|w| w.eq_ignore_ascii_case(b"RELEASE"))
            && end_of(sql).is_some_and(|e| e.is_release);
        if !is_release {
            return Ok(false);
        }
        // Nothing ran yet: nothing to end.
        self.b.pending_begin = None;
        let end = if facts.kind == Kind::Commit {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        if let Some(conn) = self.b.pinned.take() {
            if let Some(err) = self.b.end_home(conn, end).await? {
                // As a server: a failed COMMIT keeps the connection.
                self.exec().write_server_error(1, &err).await?;
                return Ok(true);
            }
        }
        self.write_ok(1).await?;
        Err(ProxyError::ClientGone)
    }
}

/// `COMMIT` / `ROLLBACK` `[WORK] [AND [NO] CHAIN] [[NO] RELEASE]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct End {
    pub is_chain: bool,
    pub is_release: bool,
}

/// The end of a transaction a COMMIT or ROLLBACK statement asks for;
/// `None` for anything else (ROLLBACK TO SAVEPOINT, CHAIN with RELEASE,
/// which the server refuses too).
pub(super) fn end_of(sql: &str) -> Option<End> {
    let upper = sql.trim().trim_end_matches(';').to_ascii_uppercase();
    let words: Vec<&str> = upper.split_whitespace().collect();
    let mut rest = match words.split_first() {
        Some((&("COMMIT" | "ROLLBACK"), rest)) => rest,
        _ => return None,
    };
    if let Some((&"WORK", r)) = rest.split_first() {
        rest = r;
    }
    let mut end = End {
        is_chain: false,
        is_release: false,
    };
    match rest {
        ["AND", "CHAIN", r @ ..] => {
            end.is_chain = true;
            rest = r;
        }
        ["AND", "NO", "CHAIN", r @ ..] => rest = r,
        _ => {}
    }
    match rest {
        [] => {}
        ["RELEASE"] => end.is_release = true,
        ["NO", "RELEASE"] => {}
        _ => return None,
    }
    (!(end.is_chain && end.is_release)).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::{end_of, End};

    #[test]
    fn ends() {
        let e = |c, r| {
            Some(End {
                is_chain: c,
                is_release: r,
            })
        };
        assert_eq!(end_of("COMMIT"), e(false, false));
        assert_eq!(end_of("rollback work;"), e(false, false));
        assert_eq!(end_of("COMMIT AND CHAIN"), e(true, false));
        assert_eq!(
            end_of("COMMIT WORK AND NO CHAIN NO RELEASE"),
            e(false, false)
        );
        assert_eq!(end_of("ROLLBACK RELEASE"), e(false, true));
        assert_eq!(end_of("COMMIT AND NO CHAIN RELEASE"), e(false, true));
        assert_eq!(end_of("COMMIT AND CHAIN RELEASE"), None);
        assert_eq!(end_of("ROLLBACK TO SAVEPOINT a"), None);
        assert_eq!(end_of("COMMIT CHAIN"), None);
    }
}
