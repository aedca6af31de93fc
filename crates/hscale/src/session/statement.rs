//! Every COM_QUERY and COM_STMT_EXECUTE passes here: timed, then counted
//! in the metrics and the query digests (`crate::metrics`) with what
//! `StatementScratch::note` gathered while it ran, and logged when slower than
//! `[log] slow_statement_ms`.

use bytes::Bytes;
use hscale_wire::consts::com;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::error::ProxyError;
use crate::metrics::PlanKind;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// Run one COM_QUERY or COM_STMT_EXECUTE and count it: metrics, the
    /// query digests and the slow-statement log (`crate::metrics`).
    pub(super) async fn statement(&mut self, cmd: u8, payload: &Bytes) -> Result<(), ProxyError> {
        // When the command arrived (`begin_command`, just before), or
        // the batch's statement before this one ended.
        let start = self.command_at;
        self.b.begin_statement();
        // The user's statement rate (`crate::tenant`): may wait, or refuse.
        let admitted = self.b.tenant().admit().await;
        let r = if let Err(e) = admitted {
            Err(e)
        } else if cmd == com::QUERY {
            self.query(payload).await
        } else {
            self.scratch.note.kind = PlanKind::Passthrough;
            self.scratch.note.parts = 1;
            self.execute(payload).await
        };
        if let Err(e) = &r {
            if matches!(e, ProxyError::Refused(_) | ProxyError::Unsupported { .. }) {
                self.scratch.note.kind = PlanKind::Refused;
            }
            if !matches!(e, ProxyError::ClientGone) {
                let (code, _, message) = e.to_mysql();
                self.scratch.note.error(code);
                self.scratch.gathered.error(code, &message);
            }
        }
        // Only an INSERT that passed its explicit ids through a sequence
        // has a pass to undo: no future built for the others.
        if self.scratch.passed.is_some() {
            self.b.undo_unused_pass(&mut self.scratch).await;
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
            &self.scratch.note,
            self.b.pins().contains(hscale_sql::Pins::FOUND_ROWS),
            sql,
        );
        let gathered = std::mem::take(&mut self.scratch.gathered);
        let vars = &self.b.state().vars;
        self.conditions.record(
            gathered,
            self.scratch.note.error,
            || vars.max_error_count(),
            sql,
        );
        self.b.count_statement(sql, took, now, &self.scratch);
        // The idle timer's start, and the next statement's of a batch
        // (`batch.rs`).
        self.ended_at = Some(now);
        self.command_at = now;
        r
    }
}
