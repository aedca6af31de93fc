//! What every COM_QUERY and COM_STMT_EXECUTE does to the session's
//! bindings before and after it runs (`session/statement.rs` times it):
//! the user's max_statement_ms applied first (its note and conditions
//! start cleared, `exec/scratch.rs`); afterwards an unused sequence pass
//! undone, and the statement counted in the metrics and the query digests
//! (`crate::metrics`), the tenant's figures, and the slow-statement log
//! (`[log] slow_statement_ms`).

use super::Bindings;
use crate::exec::scratch::StatementScratch;

impl Bindings {
    /// Before a statement: the user's max_statement_ms, as the backend's
    /// max_statement_time (the server kills the statement and answers
    /// 1969).
    pub fn begin_statement(&mut self) {
        if let Some(item) = self.tenant.statement_time_change() {
            for vars in [&mut self.base_vars, &mut self.state.vars] {
                match &item {
                    Some(item) => std::sync::Arc::make_mut(vars).apply(std::slice::from_ref(item)),
                    None if vars.has_statement_time() => {
                        std::sync::Arc::make_mut(vars).remove("max_statement_time");
                    }
                    None => {}
                }
            }
        }
    }

    /// After a statement rejected before it stored its explicit ids: the
    /// sequence's pass taken for them given back (`seq`).
    pub async fn undo_unused_pass(&mut self, scratch: &mut StatementScratch) {
        if let Some(passed) = scratch.passed.take() {
            if is_rejected(scratch.note.error) && scratch.note.affected.is_none() {
                self.ctx.sequences.undo_pass(passed).await;
            }
        }
    }

    /// Count statement `sql` that took `took` (ended `now`): metrics,
    /// digests, the tenant's figures, the slow-statement log.
    pub fn count_statement(
        &self,
        sql: &[u8],
        took: std::time::Duration,
        now: std::time::Instant,
        scratch: &StatementScratch,
    ) {
        let metrics = &self.ctx.metrics;
        metrics.record(self.worker, &scratch.note, took, now, Some(sql));
        self.tenant.record(self.worker, took, now);
        if scratch.note.error == hscale_wire::consts::code::ER_STATEMENT_TIMEOUT {
            self.tenant.count_killed();
        }
        let slow = self.ctx.slow_statement_ms();
        if slow > 0 && took >= std::time::Duration::from_millis(slow) {
            let sql = std::str::from_utf8(sql).ok();
            metrics.worker(self.worker).slow_statement();
            let user = self
                .handle
                .user
                .lock()
                .map(|u| u.clone())
                .unwrap_or_default();
            tracing::warn!(
                target: "hscale::slow",
                connection_id = self.connection_id,
                user,
                ms = took.as_millis() as u64,
                plan = scratch.note.kind.as_str(),
                parts = scratch.note.parts,
                rows = scratch.note.rows,
                error = scratch.note.error,
                sql = crate::logging::loggable(sql.unwrap_or("<not UTF-8>")),
                "slow statement"
            );
        }
    }
}

/// Errors with which a server rejects an INSERT before it writes a row (or
/// rolls the statement back whole), and hscale's refusal: after them an
/// explicit id has not been stored. Lost connections and the like, after
/// which a row may have been committed, are not among them, nor a
/// duplicate entry (the id may be the row that is there).
fn is_rejected(code: u16) -> bool {
    const REJECTED: &[u16] = &[
        1048, // column cannot be null
        1054, // unknown column
        1064, // syntax
        1136, // column count
        1146, // no such table
        1205, // lock wait timeout
        1213, // deadlock
        1235, // refused by hscale
        1264, // out of range
        1292, // incorrect value
        1364, // no default value
        1366, // incorrect value for the column
        1406, // data too long
        1452, // foreign key
        4025, // CHECK constraint
    ];
    REJECTED.contains(&code)
}
