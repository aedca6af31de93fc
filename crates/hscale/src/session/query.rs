//! COM_QUERY: a statement's way from its text to its answer (`query`):
//! hscale's own answers (figures, conditions, rewrites), session-only
//! statements, KILL and USE, then the executor's fenced plan-and-run loop
//! (`exec/entry.rs`: `run_statement`, `plan_and_run`): sequence ids filled in,
//! planned with the current dictionary, run, and planned again after a
//! stale route.

use super::*;
use crate::exec::entry::Ran;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    pub(super) async fn query(&mut self, payload: &Bytes) -> Result<(), ProxyError> {
        let done = self.query_text(payload).await;
        self.b.set_text_utf8(false);
        done
    }

    pub(super) async fn query_text(&mut self, payload: &Bytes) -> Result<(), ProxyError> {
        // The text as the server reads it under the session's sql_mode.
        let in_mode = self.b.in_sql_mode(payload).await?;
        let payload = in_mode.as_ref().unwrap_or(payload);
        let original = payload;
        if self.answered_index(payload).await? {
            return Ok(());
        }
        // The text is checked for UTF-8 once; what follows reads `text`.
        let text = std::str::from_utf8(&payload[1..]).ok();
        let facts = match text {
            Some(t) => hscale_sql::analyze(t),
            None => hscale_sql::analyze_bytes(&payload[1..]),
        };
        // Whether it resets the session's diagnostics area (`exec/conditions/list.rs`).
        self.scratch.gathered.uses_tables = Some(facts.uses_tables);
        // What the statement mentions comes from that one lex; the rare
        // statement rewritten with hscale's own answers is analyzed again.
        let rewritten = match text {
            Some(t) => self.proxy_answers(t, facts.mentions).await?,
            None => None,
        };
        let facts = match &rewritten {
            Some(r) => hscale_sql::analyze_bytes(&r[1..]),
            None => facts,
        };
        let payload = rewritten.as_ref().unwrap_or(payload);
        let sql_bytes = &payload[1..];
        self.b.forget_sql_mode(&facts, sql_bytes);
        // The digest reads the client's text: the analysis's fingerprint
        // is its when nothing rewrote it.
        if in_mode.is_none() && rewritten.is_none() && !self.b.is_text_utf8() {
            self.scratch.note.digest = facts.fingerprint.as_ref().map(|f| f.hash);
        }
        let utf8 = match &rewritten {
            Some(r) => std::str::from_utf8(&r[1..]).ok(),
            None => text,
        };
        let sql = utf8.unwrap_or("<not UTF-8>");
        tracing::debug!(
            connection_id = self.b.connection_id(),
            sql = crate::logging::loggable(sql),
            "query"
        );
        self.b.ctx().auto_increment.note(&facts, sql);
        match utf8 {
            Some(text) => self.check_reach(text)?,
            None => self.check_reach(&String::from_utf8_lossy(sql_bytes))?,
        }
        // `SET hscale_coalesce = ON | OFF`: hscale's own (`exec/coalesce.rs`).
        if let Some(on) = crate::exec::coalesce::setting(&facts) {
            self.b.set_coalescing(on?);
            return self.write_ok(1).await;
        }
        // SET of session variables to expressions: run with their values,
        // so the session is not pinned for it (`set_values.rs`).
        if facts.kind == hscale_sql::Kind::Set
            && facts.statements == 1
            && facts.pins.contains(hscale_sql::Pins::COMPLEX_SET)
        {
            if let Some(p) = self
                .b
                .set_with_values(payload[0], sql, &mut self.scratch)
                .await?
            {
                return Box::pin(self.query_text(&p)).await;
            }
        }
        if let Some(p) = self.b.as_utf8_text(original, sql_bytes)? {
            self.b.set_text_utf8(true);
            return Box::pin(self.query_text(&p)).await;
        }
        if facts.kind == hscale_sql::Kind::Show && self.account_statement(sql).await? {
            return Ok(());
        }
        if facts.kind == hscale_sql::Kind::Set
            && hscale_sql::mentions::contains_ci(sql_bytes, b"HSCALE_READ_FROM")
        {
            if let Some(set) = crate::exec::read_from::parse_set(sql) {
                return match self.b.read_from_mut().set(set) {
                    Ok(()) => self.write_ok(1).await,
                    Err(err) => Err(ProxyError::Statement { err }),
                };
            }
        }
        if self.b.read_from().is_replica {
            self.b.route_reads(&facts, sql);
        }
        if self.answered_conditions(&facts, sql).await? {
            return Ok(());
        }
        if self.answered_by_kind(&facts, sql, payload).await? {
            return Ok(());
        }
        crate::exec::entry::run_statement(self, payload, &facts, utf8).await
    }

    /// KILL, hscale's own statements, XA, statements inside a transaction
    /// across backends, and the BEGIN / COMMIT the session answers itself
    /// (`Ok(true)`: answered).
    async fn answered_by_kind(
        &mut self,
        facts: &hscale_sql::Facts,
        sql: &str,
        payload: &Bytes,
    ) -> Result<bool, ProxyError> {
        match facts.kind {
            hscale_sql::Kind::Kill => {
                return match hscale_sql::parse_kill(sql) {
                    Some(k) => self.kill(k).await.map(|()| true),
                    None => Err(ProxyError::Unsupported {
                        what:
                            "this form of KILL through hscale (use KILL [CONNECTION | QUERY] <id>)"
                                .into(),
                    }),
                };
            }
            hscale_sql::Kind::Admin => {
                self.scratch.note.kind = PlanKind::Admin;
                return self.admin(sql).await.map(|()| true);
            }
            _ if facts.pins.contains(Pins::XA) => {
                return Err(ProxyError::Unsupported {
                    what: "XA statements from clients (hscale makes transactions across backends atomic itself: use BEGIN ... COMMIT)".into(),
                });
            }
            _ if self.b.has_branches()
                && self.exec().in_distributed_transaction(facts, sql).await? =>
            {
                return Ok(true);
            }
            hscale_sql::Kind::Commit | hscale_sql::Kind::Rollback
                if !self.b.has_branches() && hscale_sql::transaction::is_release(facts, sql) =>
            {
                return self.exec().end_and_release(facts.kind).await.map(|()| true);
            }
            _ => {}
        }
        match facts.kind {
            hscale_sql::Kind::Begin
                if facts.statements == 1
                    && self.b.may_defer_begin()
                    && hscale_sql::transaction::is_plain_begin(sql) =>
            {
                self.b.defer_begin(payload.clone());
                return self.write_ok(1).await.map(|()| true);
            }
            hscale_sql::Kind::Commit | hscale_sql::Kind::Rollback
                if self.b.has_deferred_begin() && hscale_sql::transaction::is_plain_end(sql) =>
            {
                // Nothing ran in the transaction: nothing to commit or roll back.
                self.b.drop_deferred_begin();
                return self.write_ok(1).await.map(|()| true);
            }
            _ => {}
        }
        Ok(false)
    }

    /// What the executor left to do: the statement it gives back run as
    /// the client's (`exec/entry.rs`).
    pub(super) async fn ran(&mut self, ran: Ran) -> Result<(), ProxyError> {
        match ran {
            Ran::Done => Ok(()),
            Ran::Query(p) => Box::pin(self.query_text(&p)).await,
        }
    }

    /// A text `SHOW INDEX` of a partitioned table, answered (`Ok(true)`):
    /// a statement that starts otherwise than with SHOW costs one
    /// comparison (`exec/figures.rs`).
    async fn answered_index(&mut self, payload: &Bytes) -> Result<bool, ProxyError> {
        let head = payload.get(1..).unwrap_or_default().trim_ascii_start();
        if head.len() < 4 || !head[..4].eq_ignore_ascii_case(b"SHOW") {
            return Ok(false);
        }
        let Ok(sql) = std::str::from_utf8(&payload[1..]) else {
            return Ok(false);
        };
        match self.b.index_table(sql) {
            Some(table) => self.exec().answer_index(&table, false).await.map(|()| true),
            None => Ok(false),
        }
    }

    /// Before a text statement runs: `SHOW WARNINGS` / `SHOW ERRORS`
    /// answered from the session's list (`Ok(true)`,
    /// `exec/conditions/list.rs`); several statements in one query run on
    /// one connection, which alone knows their conditions.
    async fn answered_conditions(
        &mut self,
        facts: &hscale_sql::Facts,
        sql: &str,
    ) -> Result<bool, ProxyError> {
        if facts.statements > 1 {
            self.scratch.gathered.missed = true;
        }
        if facts.kind != hscale_sql::Kind::Show {
            return Ok(false);
        }
        match hscale_sql::diagnostics::classify_condition_read(sql) {
            Some(read) => self.answer_conditions(read, false).await,
            None => Ok(false),
        }
    }

    /// SHOW WARNINGS / SHOW ERRORS from the session's list, in the binary
    /// format when `is_binary`; `Ok(false)`: the backend answers.
    pub(super) async fn answer_conditions(
        &mut self,
        read: hscale_sql::diagnostics::ConditionRead,
        is_binary: bool,
    ) -> Result<bool, ProxyError> {
        let deprecated = self.is_eof_deprecated();
        let mut exec = Exec::new(&mut self.client, &mut self.b, &mut self.scratch, deprecated);
        exec.answer_conditions(&self.conditions, read, is_binary)
            .await
    }
}
