//! COM_STMT_EXECUTE, COM_STMT_RESET and COM_STMT_FETCH once the session
//! decoded the command and found the statement (`session/commands.rs`,
//! which also answers executions hscale answers itself and runs an
//! INSERT split by rows as a query): routed again when the dictionary
//! changed since PREPARE, then run on the main backend, merged across
//! partitions, written to a global table's copies, or on the partitions
//! its key parameters pick.

use hscale_route::BackendId;
use hscale_sql::Pins;
use hscale_wire::reply::OkParts;
use hscale_wire::stmt::{self, Execute};
use tokio::io::{AsyncRead, AsyncWrite};

use super::routing::{MergedRead, Pick, Routed};
use super::statements::{ClientStatement, Statements};
use super::{Command, Execution};
use crate::error::ProxyError;
use crate::exec::forward::Expect;
use crate::exec::{interpolate, send, Effects, Exec};
use crate::planning::{Asker, Learnt};

/// Cursor flags of COM_STMT_EXECUTE.
pub const CURSOR_TYPE_READ_ONLY: u8 = 1;

/// What an execution leaves for the session.
pub enum Executed {
    /// It was answered.
    Done,
    /// A multi-row INSERT whose rows belong to different partitions: its
    /// text with the parameters written in, for the session to run as a
    /// query (the router splits it by rows).
    SplitRows(String),
}

/// What running `st` with the flags and parameters of `exec` does to the
/// session.
pub fn effects<'a>(st: &'a ClientStatement, exec: &'a Execute<'a>, types: &'a [u8]) -> Effects<'a> {
    let mut pins = st.pins;
    if exec.flags & CURSOR_TYPE_READ_ONLY != 0 {
        pins.insert(Pins::CURSOR);
    }
    Effects {
        pins,
        uses_last_insert_id: st.uses_last_insert_id,
        sets_last_insert_id: st.sets_last_insert_id,
        supplied: if st.is_insert {
            crate::exec::insert_id::Supplied::Prepared {
                sql: &st.sql,
                tokens: &st.insert_tokens,
                exec,
                types,
                count: usize::from(st.num_params),
                long_data: &st.long_data,
            }
        } else {
            crate::exec::insert_id::Supplied::Nothing
        },
        ..Effects::default()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Before an execution of statement `id` (`st`, the session's copy):
    /// when the dictionary changed since PREPARE (a partition added, a
    /// table partitioned or made global), route it by the current one.
    pub async fn reroute_prepared(
        &mut self,
        statements: &mut Statements,
        id: u32,
        st: &mut ClientStatement,
    ) -> Result<(), ProxyError> {
        self.b.planned_version = self.b.ctx.partitioning.stored_version();
        let version = self.b.ctx.partitioning.version();
        if st.dict_version != version {
            let ids = self.b.prepared_ids(&st.sql)?;
            if ids.as_ref().map(|i| &i.params) != st.ids.as_ref().map(|i| &i.params) {
                // The client's parameters would no longer be the backends'.
                return Err(ProxyError::Refused(
                    "the table's AUTO_INCREMENT handling changed since PREPARE: prepare the statement again".into(),
                ));
            }
            st.routing = self
                .prepared_routing(ids.as_ref().map_or(&st.sql[..], |i| i.sql.as_bytes()))
                .await?;
            st.ids = ids;
            st.dict_version = version;
            if let Some(s) = statements.get_mut(id) {
                s.routing = st.routing.clone();
                s.ids = st.ids.clone();
                s.dict_version = version;
            }
        }
        Ok(())
    }

    /// One attempt at an execution of `st`, routed (`reroute_prepared`).
    pub async fn execute_prepared(
        &mut self,
        st: &ClientStatement,
        exec: &Execute<'_>,
        types: &[u8],
    ) -> Result<Executed, ProxyError> {
        let effects = effects(st, exec, types);
        let execution = Execution {
            exec,
            types,
            long_data: &st.long_data,
            uses_last_insert_id: st.uses_last_insert_id,
        };
        let routing = match st.routing.clone() {
            Routed::Plain => {
                self.is_fenced = true;
                return self
                    .run_single(
                        BackendId::MAIN,
                        &st.sql,
                        Command::Execute(&execution),
                        effects,
                    )
                    .await
                    .map(|()| Executed::Done);
            }
            Routed::Merged(m) => {
                return self
                    .execute_merged(st, &m, exec, types)
                    .await
                    .map(|()| Executed::Done)
            }
            Routed::AsText(placeholders) => {
                return self
                    .as_text(&st.sql, &placeholders, exec, types, &st.long_data)
                    .await
                    .map(Executed::SplitRows)
            }
            Routed::Parts(r) => r,
        };
        // Ids from the table's sequence, filled in before routing (the id
        // may be the partition key).
        let filled = match &st.ids {
            Some(ids) => Some(
                self.b
                    .fill_prepared_ids(
                        ids,
                        exec,
                        types,
                        st.num_params as usize,
                        &st.long_data,
                        self.scratch,
                    )
                    .await?,
            ),
            None => None,
        };
        let filled_exec = filled.as_ref().map(|f| f.execute()).transpose()?;
        let (exec, types, long_data) = match (&filled, &filled_exec) {
            (Some(f), Some(e)) => (e, e.types.unwrap_or_default(), &f.long_data[..]),
            _ => (exec, types, &st.long_data[..]),
        };
        let execution = Execution {
            exec,
            types,
            long_data,
            uses_last_insert_id: st.uses_last_insert_id,
        };
        if let Some(table) = &routing.global {
            // A write to a global table: every copy, as a text write.
            self.scratch.note.kind = crate::metrics::PlanKind::GlobalWrite;
            self.scratch.note.parts = self.b.ctx.config.backends.len() as u32;
            return self
                .run_prepared_global(table, &routing.parts[0].1, &execution)
                .await
                .map(|()| Executed::Done);
        }
        // A partitioned table: the key parameter picks the partition, or
        // every partition runs it.
        let long: Vec<u16> = long_data.iter().map(|(p, _)| *p).collect();
        let client = if self.b.state.vars.is_client_utf8() {
            crate::exec::ClientText::Utf8
        } else if let Some(cs) = self.b.state.vars.client_single_byte() {
            crate::exec::ClientText::SingleByte(cs)
        } else {
            crate::exec::ClientText::Other
        };
        // A row's key the column stores as another value, or a key
        // parameter the backend weighs, met for the first time: the
        // planning driver asks (`crate::planning`) and it is picked again.
        let mut learnt = Learnt::new();
        let parts = loop {
            let (parts, questions) =
                learnt.attempt(|known| routing.parts_for(exec, types, &long, client, known));
            let mut asker = Asker::Session(&mut *self.b);
            if !learnt.ask(&mut asker, questions, parts.is_ok()).await? {
                break parts?;
            }
        };
        let parts = match parts {
            Pick::Parts(parts) => parts,
            Pick::SplitRows => {
                let sql = st.ids.as_ref().map_or(&st.sql[..], |i| i.sql.as_bytes());
                return self
                    .split_insert_text(sql, exec, types, long_data)
                    .await
                    .map(Executed::SplitRows);
            }
        };
        if parts.len() > 1
            && ((self.b.pinned.is_some() && !self.b.is_branchable())
                || exec.flags & CURSOR_TYPE_READ_ONLY != 0)
        {
            return Err(ProxyError::Refused(
                "a prepared statement over several partitions with connection-bound state or a cursor is not supported yet".into(),
            ));
        }
        // A row for the default partition of a table with auto-partitioning
        // may name a value to create a partition for (`admin::auto_partition`).
        let auto_value = routing.auto_value(exec, types, &long, &parts);
        self.scratch.note.kind = if parts.len() > 1 {
            crate::metrics::PlanKind::Scatter
        } else {
            crate::metrics::PlanKind::Single
        };
        self.scratch.note.parts = parts.len() as u32;
        self.is_fenced = true;
        let done = self
            .run_prepared(routing.kind, &parts, &execution, effects)
            .await;
        if let (Some(v), Some(table), true) = (auto_value, &routing.table, done.is_ok()) {
            let _ = self
                .b
                .ctx
                .partitioning
                .auto_requests
                .try_send((table.name.clone(), v));
        }
        done.map(|()| Executed::Done)
    }

    /// An execution of a multi-row INSERT whose rows belong to different
    /// partitions: its parameters (ids from the sequence already among
    /// them) written into `sql`, the text statement the session runs as a
    /// query would be, which the router splits by rows; its OK is the
    /// same packet in both protocols.
    async fn split_insert_text(
        &mut self,
        sql: &[u8],
        exec: &Execute<'_>,
        types: &[u8],
        long_data: &[(u16, bytes::Bytes)],
    ) -> Result<String, ProxyError> {
        let text = std::str::from_utf8(sql)
            .map_err(|_| ProxyError::Refused("a prepared INSERT whose text is not UTF-8".into()))?;
        let placeholders: Vec<u32> = hscale_sql::tokenize(text)
            .map_err(|_| ProxyError::Wrong("internal: a prepared INSERT that does not lex".into()))?
            .iter()
            .filter(|t| t.kind == hscale_sql::TokenKind::Placeholder)
            .map(|t| t.start)
            .collect();
        self.as_text(sql, &placeholders, exec, types, long_data)
            .await
    }

    /// An execution run as its text statement (`Routed::AsText`): its
    /// parameters written into `sql`.
    async fn as_text(
        &mut self,
        sql: &[u8],
        placeholders: &[u32],
        exec: &Execute<'_>,
        types: &[u8],
        long_data: &[(u16, bytes::Bytes)],
    ) -> Result<String, ProxyError> {
        let literals = interpolate::literals(exec, types, placeholders.len(), long_data)?;
        let no_backslash_escapes = if literals.iter().any(|l| l.needs_mode()) {
            self.is_no_backslash_escapes().await?
        } else {
            false
        };
        interpolate::render(sql, placeholders, &literals, no_backslash_escapes)
    }

    /// An execution of a read merged across partitions: its parameters
    /// written into the text, run like the query (`exec/merge/prepared.rs`).
    async fn execute_merged(
        &mut self,
        st: &ClientStatement,
        m: &MergedRead,
        exec: &Execute<'_>,
        types: &[u8],
    ) -> Result<(), ProxyError> {
        if exec.flags & CURSOR_TYPE_READ_ONLY != 0 {
            return Err(ProxyError::Refused(
                "a cursor over a prepared read merged across partitions is not supported yet"
                    .into(),
            ));
        }
        // As for the text statement: what binds a session to one
        // connection cannot be spread.
        if !st.pins.is_empty() || st.uses_last_insert_id {
            return Err(ProxyError::Unsupported {
                what: "a statement over several partitions or backends with session-bound state (user variables, locks, temporary tables) or LAST_INSERT_ID()".into(),
            });
        }
        let literals = interpolate::literals(exec, types, m.placeholders.len(), &st.long_data)?;
        let no_backslash_escapes = if literals.iter().any(|l| l.needs_mode()) {
            self.is_no_backslash_escapes().await?
        } else {
            false
        };
        let sql = interpolate::render(&st.sql, &m.placeholders, &literals, no_backslash_escapes)?;
        self.is_fenced = true;
        self.run_merged(&sql).await
    }

    /// Whether the session's sql_mode has NO_BACKSLASH_ESCAPES (asked of
    /// the main backend in the session's state).
    async fn is_no_backslash_escapes(&mut self) -> Result<bool, ProxyError> {
        Ok(self.b.sql_mode().await?.is_no_backslash_escapes)
    }

    /// COM_STMT_RESET of statement text `sql` (`payload`, the client's
    /// command): an open cursor is reset on the pinned connection.
    pub async fn reset_prepared(&mut self, sql: &[u8], payload: &[u8]) -> Result<(), ProxyError> {
        // An open cursor lives on the pinned connection: reset it there.
        if self.b.pins.contains(Pins::CURSOR) {
            if let Some(mut conn) = self.b.pinned.take() {
                if let Some(b) = conn.statement(sql) {
                    let p = stmt::with_statement_id(payload, b.id);
                    match conn.command(&p).await {
                        Ok(Err(err)) => {
                            self.b.pinned = Some(conn);
                            return self.write_error_packet(1, &err).await;
                        }
                        Err(e) => return Err(e),
                        Ok(Ok(_)) => {}
                    }
                }
                self.b.pins.remove(Pins::CURSOR);
                self.b.give_back(conn);
            }
        }
        let st = self.b.status();
        send(self.reply(1).ok(OkParts::new(st, 0))).await
    }

    /// COM_STMT_FETCH of statement text `sql` (`payload`, the client's
    /// command): rows of an open cursor, on the pinned connection.
    pub async fn fetch_prepared(&mut self, sql: &[u8], payload: &[u8]) -> Result<(), ProxyError> {
        let backend_id = self
            .b
            .pinned
            .as_mut()
            .filter(|_| self.b.pins.contains(Pins::CURSOR))
            .and_then(|c| c.statement(sql))
            .map(|b| b.id);
        let Some(backend_id) = backend_id else {
            return Err(ProxyError::Wrong(
                "COM_STMT_FETCH without an open cursor".into(),
            ));
        };
        let Some(mut conn) = self.b.pinned.take() else {
            return Err(ProxyError::Wrong(
                "COM_STMT_FETCH without an open cursor".into(),
            ));
        };
        let p = stmt::with_statement_id(payload, backend_id);
        if let Err(e) = conn.stream.send_command(&p).await {
            return Err(self.b.backend_lost(conn, e.to_string()));
        }
        self.forward(conn, Expect::Rows, &Effects::default()).await
    }
}
