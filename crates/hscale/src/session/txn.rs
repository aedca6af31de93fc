//! The session side of transactions across backends (`exec/txn.rs` owns
//! the branches and the commit protocol): which statements end such a
//! transaction, and the ones it cannot run yet.
//!
//! ```text
//!  in a transaction with branches ─┬─ COMMIT / ROLLBACK ─► Bindings::commit_all / rollback_all
//!                                  ├─ SAVEPOINT, ROLLBACK TO, RELEASE ─► Bindings::savepoint_all (every branch)
//!                                  ├─ BEGIN, DDL, LOCK/UNLOCK, SET autocommit=1 ─► commit_all, then the statement
//!                                  ├─ COMMIT AND CHAIN, RELEASE, several statements in one query ─► refused (1235)
//!                                  └─ anything else ─► planned and run on the branches
//! ```

use hscale_sql::transaction::is_implicit_commit;
use hscale_sql::{Facts, Kind};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{is_plain_end, Session};
use crate::error::ProxyError;
use crate::exec::savepoint::SavepointOp;

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
            Kind::Commit | Kind::Rollback if facts.statements == 1 && is_plain_end(sql) => {
                let r = if facts.kind == Kind::Commit {
                    self.b.commit_all().await?
                } else {
                    self.b.rollback_all().await?
                };
                match r {
                    None => self.write_ok(1).await?,
                    Some(err) => self.write_server_error(1, &err).await?,
                }
                Ok(true)
            }
            _ if facts.statements > 1 => refuse("several statements in one query"),
            _ if SavepointOp::parse(sql).is_some() => {
                let Some(op) = SavepointOp::parse(sql) else {
                    return Ok(false);
                };
                match self.b.savepoint_all(sql, &op).await? {
                    None => self.write_ok(1).await?,
                    Some(err) => self.write_server_error(1, &err).await?,
                }
                Ok(true)
            }
            Kind::Commit | Kind::Rollback => refuse("COMMIT or ROLLBACK with AND CHAIN or RELEASE"),
            _ if is_implicit_commit(facts, sql) => {
                // The commit MariaDB makes before such a statement, made
                // across every branch; then the statement runs as usual.
                if let Some(err) = self.b.commit_all().await? {
                    self.write_server_error(1, &err).await?;
                    return Ok(true);
                }
                Ok(false)
            }
            _ => Ok(false),
        }
    }
}
