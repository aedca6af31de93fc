//! Every COM_QUERY and COM_STMT_EXECUTE passes here: timed, then counted
//! in the metrics and the query digests (`crate::metrics`) with what
//! `Bindings::note` gathered while it ran, and logged when slower than
//! `[log] slow_statement_ms`.

use bytes::Bytes;
use hscale_wire::consts::com;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::error::ProxyError;
use crate::metrics::{PlanKind, StatementNote};

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// Run one COM_QUERY or COM_STMT_EXECUTE and count it: metrics, the
    /// query digests and the slow-statement log (`crate::metrics`).
    pub(super) async fn statement(&mut self, cmd: u8, payload: &Bytes) -> Result<(), ProxyError> {
        let start = std::time::Instant::now();
        self.b.note = StatementNote::default();
        self.b.gathered = Default::default();
        // The user's max_statement_ms, as the backend's max_statement_time
        // (the server kills the statement and answers 1969).
        if let Some(item) = self.b.tenant.statement_time_change() {
            for vars in [&mut self.b.base_vars, &mut self.b.state.vars] {
                match &item {
                    Some(item) => std::sync::Arc::make_mut(vars).apply(std::slice::from_ref(item)),
                    None if vars.has_statement_time() => {
                        std::sync::Arc::make_mut(vars).remove("max_statement_time");
                    }
                    None => {}
                }
            }
        }
        // The user's statement rate (`crate::tenant`): may wait, or refuse.
        let admitted = self.b.tenant.admit().await;
        let r = if let Err(e) = admitted {
            Err(e)
        } else if cmd == com::QUERY {
            self.query(payload).await
        } else {
            self.b.note.kind = PlanKind::Passthrough;
            self.b.note.parts = 1;
            self.execute(payload).await
        };
        if let Err(e) = &r {
            if matches!(e, ProxyError::Refused(_) | ProxyError::Unsupported { .. }) {
                self.b.note.kind = PlanKind::Refused;
            }
            if !matches!(e, ProxyError::ClientGone) {
                let (code, _, message) = e.to_mysql();
                self.b.note.error(code);
                self.b.gathered.error(code, &message);
            }
        }
        if let Some(passed) = self.b.passed.take() {
            if is_rejected(self.b.note.error) && self.b.note.affected.is_none() {
                self.b.ctx.sequences.undo_pass(passed).await;
            }
        }
        let now = std::time::Instant::now();
        let took = now.saturating_duration_since(start);
        let sql: &[u8] = if cmd == com::QUERY {
            &payload[1..]
        } else {
            hscale_wire::stmt::statement_id(payload)
                .ok()
                .and_then(|id| self.statements.get(id))
                .map(|st| &st.sql[..])
                .unwrap_or_default()
        };
        self.last.record(
            &self.b.note,
            self.b.pins.contains(hscale_sql::Pins::FOUND_ROWS),
            sql,
        );
        let gathered = std::mem::take(&mut self.b.gathered);
        let vars = &self.b.state.vars;
        self.conditions
            .record(gathered, self.b.note.error, || vars.max_error_count(), sql);
        let metrics = &self.b.ctx.metrics;
        metrics.record(self.b.worker, &self.b.note, took, now, Some(sql));
        self.b.tenant.record(self.b.worker, took, now);
        if self.b.note.error == hscale_wire::consts::code::ER_STATEMENT_TIMEOUT {
            self.b.tenant.count_killed();
        }
        let slow = self.b.ctx.slow_statement_ms();
        if slow > 0 && took >= std::time::Duration::from_millis(slow) {
            let sql = std::str::from_utf8(sql).ok();
            metrics.worker(self.b.worker).slow_statement();
            let user = self
                .b
                .handle
                .user
                .lock()
                .map(|u| u.clone())
                .unwrap_or_default();
            tracing::warn!(
                target: "hscale::slow",
                connection_id = self.b.connection_id,
                user,
                ms = took.as_millis() as u64,
                plan = self.b.note.kind.as_str(),
                parts = self.b.note.parts,
                rows = self.b.note.rows,
                error = self.b.note.error,
                sql = crate::logging::loggable(sql.unwrap_or("<not UTF-8>")),
                "slow statement"
            );
        }
        r
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
