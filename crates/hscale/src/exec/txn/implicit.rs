//! Statement atomicity in autocommit: a write that runs on several
//! partitions (an UPDATE or DELETE over partitions, a multi-row INSERT
//! whose rows go to several partitions, a write to a global table) runs
//! in a transaction hscale opens for it and commits before answering, so
//! it applies whole or not at all, as one statement on one server does.
//!
//! ```text
//!  autocommit write over several parts ─► begin_implicit (a deferred BEGIN)
//!    ─► parts one at a time on the transaction's branches (txn.rs: the
//!       first backend is the home, others join with XA START)
//!    ─┬─ every part OK ─► end_implicit(commit): plain COMMIT on one
//!     │                   backend, two-phase commit on several ─► the OK
//!     └─ a part failed, or the route was stale ─► end_implicit(rollback)
//!                         ─► the error (a stale route is then run again
//!                            whole by the fence)
//! ```

use crate::exec::scratch::StatementScratch;
use hscale_wire::response::ErrPacket;

use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::exec::Bindings;

impl Bindings {
    /// A write over several parts needs a transaction of its own: the
    /// session is in autocommit, holds no connection and no transaction.
    pub fn needs_implicit_txn(&self) -> bool {
        self.pins.is_empty() && self.pinned.is_none() && !self.is_in_transaction()
    }

    /// Open the statement's own transaction (sent with its first part).
    pub fn begin_implicit(&mut self) {
        self.pending_begin = Some(BackendConn::payload_for_query("BEGIN"));
    }

    /// End the statement's own transaction: commit (atomically across
    /// backends when several took part) or roll back. `Ok(Some(err))`:
    /// the commit failed and nothing of the statement applied.
    pub async fn end_implicit(
        &mut self,
        commit: bool,
        scratch: &mut StatementScratch,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        self.pending_begin = None;
        if self.txn.is_some() {
            return if commit {
                self.commit_all(scratch).await
            } else {
                self.rollback_all(scratch).await
            };
        }
        match self.pinned.take() {
            Some(home) => {
                self.end_home(home, if commit { "COMMIT" } else { "ROLLBACK" }, scratch)
                    .await
            }
            None => Ok(None),
        }
    }
}
