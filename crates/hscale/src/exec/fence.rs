//! The fence, proxy side. A statement routed by this proxy's dictionary
//! snapshot can run into a table that a partition change renamed (every
//! table that loses keys gets a new name at the change's cutover, see
//! `admin/change/`): the backend answers 1146 and the executor hands it
//! back as `ProxyError::StaleRoute` before anything reached the client.
//!
//! ```text
//!  StaleRoute ─┬─ in a transaction ─► ROLLBACK, answer 1412 (retry the transaction)
//!              └─ autocommit ─► await a newer dictionary ─┬─ newer ─► plan and run again
//!                                                          ├─ no change in cutover ─► answer the 1146
//!                                                          └─ cutover not done in time ─► 1205 naming it
//! ```
//! A transaction opened by the failing statement itself (a deferred BEGIN)
//! is rolled back and opened again with the retry.
//!
//! [`run_fenced`] is the one retry loop: text statements
//! (`entry.rs::run_text`), prepared executions (`session/commands.rs`) and
//! LOAD DATA (`load_data.rs`, which holds the client's file) run through it.

use bytes::Bytes;
use hscale_sql::Pins;
use hscale_wire::consts::code;
use hscale_wire::response::ErrPacket;

use super::scratch::StatementScratch;
use super::Bindings;
use crate::error::ProxyError;
use crate::partition::refresh::{await_newer_dictionary, Fence};
pub use crate::partition::refresh::{is_stale, stale_route};

/// Attempts of one statement before its error is answered.
const MAX_ATTEMPTS: u32 = 16;

/// What to do after a stale route.
pub enum Next {
    /// Plan and run the statement again.
    Retry,
    /// Answer the statement with this error.
    Answer(ErrPacket),
}

fn answer(code: u16, message: String) -> Next {
    Next::Answer(ErrPacket {
        code,
        sql_state: *b"HY000",
        message,
    })
}

/// The answer a forwarder held back (`forward::Outcome::held`: a syntax
/// error of the client's own text, or a stale route, [`stale_route`]) as
/// the error the statement's caller acts on; `Ok` when it held none.
pub fn held_answer(held: Option<ErrPacket>) -> Result<(), ProxyError> {
    match held {
        None => Ok(()),
        Some(err) if super::forward::is_parse_error(&err) => Err(ProxyError::Syntax { err }),
        Some(err) => match stale_route(true, err) {
            Err(stale) => Err(stale),
            // The forwarder holds nothing else (`Forwarder::hold`).
            Ok(err) => Err(ProxyError::Syntax { err }),
        },
    }
}

/// What runs a fenced statement: the session's bindings, and the client
/// that a stale route's last error is answered to.
pub(crate) trait Fenced {
    fn bindings(&mut self) -> &mut Bindings;
    /// The session's bindings and the statement's scratch, together.
    fn parts(&mut self) -> (&mut Bindings, &mut StatementScratch);
    /// What the statement gathers and decides (`scratch.rs`).
    fn scratch(&mut self) -> &mut StatementScratch {
        self.parts().1
    }
    /// Answer the statement with a backend's error (at sequence 1).
    async fn answer_error(&mut self, err: &ErrPacket) -> Result<(), ProxyError>;
}

/// One run of a fenced statement, planned with the current dictionary;
/// it keeps what a retry reuses (ids filled in, the client's file). (A
/// trait, not an async closure: a closure's future taking `&mut T` is not
/// provably `Send` for the session's task.)
pub(crate) trait Attempt<T> {
    async fn attempt(&mut self, this: &mut T) -> Result<(), ProxyError>;
}

/// Run `attempt` until it does not meet a stale route: after one,
/// [`Bindings::after_stale_route`] says whether to run it again or which
/// error answers it.
pub(crate) async fn run_fenced<T: Fenced>(
    this: &mut T,
    attempt: &mut impl Attempt<T>,
) -> Result<(), ProxyError> {
    let mut attempts = 0;
    loop {
        let before = this.bindings().fence_point();
        let err = match attempt.attempt(this).await {
            Err(ProxyError::StaleRoute { err }) => err,
            r => return r,
        };
        let (b, scratch) = this.parts();
        match b
            .after_stale_route(err, before, &mut attempts, scratch)
            .await?
        {
            Next::Retry => {}
            Next::Answer(err) => return this.answer_error(&err).await,
        }
    }
}

/// The session's state before a statement ran, as the fence needs it.
pub struct FencePoint {
    /// A transaction was open before the statement.
    was_in_transaction: bool,
    /// The deferred BEGIN the statement was going to open.
    pending_begin: Option<Bytes>,
}

impl Bindings {
    pub fn fence_point(&self) -> FencePoint {
        FencePoint {
            was_in_transaction: self.pins.contains(Pins::TRANSACTION),
            pending_begin: self.pending_begin.clone(),
        }
    }

    /// Decide what a statement that ran into a missing table does next.
    pub async fn after_stale_route(
        &mut self,
        err: ErrPacket,
        before: FencePoint,
        attempts: &mut u32,
        scratch: &mut StatementScratch,
    ) -> Result<Next, ProxyError> {
        *attempts += 1;
        // The statement runs again whole: what its parts raised goes.
        scratch.gathered = Default::default();
        // A replica behind a change's rename: the primaries answer.
        if self.read_from.retry_on_primary() {
            return Ok(Next::Retry);
        }
        let ctx = self.ctx.clone();
        // The stored dictionary version the statement was planned with.
        let planned = self.planned_version;
        if before.was_in_transaction {
            let is_stale_trigger = crate::partition::refresh::is_stale_trigger_error(&err);
            // A partition's table that the dictionary still names is gone:
            // a change's cutover renamed it. The transaction is rolled back
            // before waiting for the new dictionary, so its locks (on a
            // table the same cutover renames next, say) never hold the
            // cutover up while it waits.
            // Only while a change is in its cutover (one fresh read of the
            // journal): a table that is gone for another reason (dropped on
            // its backend by hand) answers its own 1146 and leaves the
            // transaction open, as before.
            let names_it = crate::partition::refresh::missing_table(&err)
                .is_some_and(|(db, t)| ctx.partitioning.dictionary().names_physical(&db, &t));
            let is_fenced =
                names_it && crate::partition::refresh::cutover_under_way(&ctx, self.worker).await;
            if is_fenced {
                self.rollback(scratch).await?;
            }
            let fence = if is_stale_trigger {
                Fence::Newer
            } else {
                await_newer_dictionary(&ctx, self.worker, planned, &err).await
            };
            if is_fenced || matches!(fence, Fence::Newer | Fence::Ended) {
                if !is_fenced {
                    self.rollback(scratch).await?;
                }
                tracing::info!(
                    connection_id = self.connection_id,
                    "transaction rolled back: its partitions changed"
                );
                let msg = format!(
                    "Table definition has changed, please retry transaction (hscale: partitions changed under this transaction, which was rolled back: {})",
                    err.message
                );
                return Ok(answer(code::ER_TABLE_DEF_CHANGED, msg));
            }
            return Ok(Next::Answer(err));
        }
        if let Some(begin) = before.pending_begin {
            // The statement opened the transaction: undo it, open it again
            // with the retry.
            self.rollback(scratch).await?;
            self.pending_begin = Some(begin);
        }
        if *attempts > MAX_ATTEMPTS {
            return Ok(Next::Answer(err));
        }
        if crate::partition::refresh::is_stale_trigger_error(&err) {
            // A statement prepared before the triggers on its table changed
            // (a change's capture, a global table's fence): nothing ran;
            // run it again, prepared anew on a fresh connection, at once.
            tracing::info!(connection_id = self.connection_id, error = %err.message, "statement prepared before its table's triggers changed: running it again");
            ctx.metrics.worker(self.worker).stale_route_retry();
            return Ok(Next::Retry);
        }
        let fence = await_newer_dictionary(&ctx, self.worker, planned, &err).await;
        tracing::debug!(connection_id = self.connection_id, planned, attempts = *attempts, error = %err.message, fence = ?fence, "statement met a missing table");
        match fence {
            Fence::Newer | Fence::Ended => {
                ctx.metrics.worker(self.worker).stale_route_retry();
                Ok(Next::Retry)
            }
            Fence::Unchanged => Ok(Next::Answer(err)),
            Fence::Timeout(what) => {
                let msg = format!(
                    "Lock wait timeout exceeded; try restarting transaction (hscale: {what} did not finish its cutover within {} ms)",
                    ctx.config.proxy.fence_wait_ms
                );
                Ok(answer(code::ER_LOCK_WAIT_TIMEOUT, msg))
            }
        }
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Fenced for super::Exec<'_, S> {
    fn bindings(&mut self) -> &mut Bindings {
        self.b
    }

    fn parts(&mut self) -> (&mut Bindings, &mut StatementScratch) {
        (self.b, self.scratch)
    }

    async fn answer_error(&mut self, err: &ErrPacket) -> Result<(), ProxyError> {
        self.write_server_error(1, err).await
    }
}
