//! Prepared-statement commands and COM_CHANGE_USER.

use hscale_route::BackendId;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use hscale_sql::Pins;
use hscale_wire::auth::{self, NATIVE_PASSWORD};
use hscale_wire::consts::com;
use hscale_wire::handshake::{encode_auth_switch, ChangeUser};
use hscale_wire::reply::OkParts;
use hscale_wire::response::ErrPacket;
use hscale_wire::stmt::{self, Execute, PrepareOk};
use tokio::io::{AsyncRead, AsyncWrite};

use super::prepared::{ClientStatement, OwnRead};
use super::{vars_for_collation, Session};
use crate::error::ProxyError;
use crate::exec::forward::{Expect, Outcome};
use crate::exec::interpolate;
use crate::exec::prepared::{Command, Execution};
use crate::exec::prepared_routing::{MergedRead, Pick, PreparedRouting, Routed};
use crate::exec::{send, write_error, Effects};
use crate::planning::{Asker, Learnt};
use hscale_route::router::{IdParam, StatementKind};
use hscale_sql::diagnostics::ConditionRead;

/// Cursor flags of COM_STMT_EXECUTE.
const CURSOR_TYPE_READ_ONLY: u8 = 1;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// COM_STMT_PREPARE: prepare on a backend connection to learn the
    /// metadata, answer with hscale's own statement id.
    pub(super) async fn prepare(&mut self, payload: &Bytes) -> Result<(), ProxyError> {
        self.check_reach(&String::from_utf8_lossy(&payload[1..]))?;
        // CONNECTION_ID() and hscale's limits do not change during a
        // session: rewritten once, at PREPARE; PROCESSLIST's sessions do,
        // so a statement reading them keeps its text (`live`) to be
        // rewritten again at every execution (`rewrite.rs`).
        let facts = hscale_sql::analyze_bytes(&payload[1..]);
        let uses_tables = facts.uses_tables;
        let rewritten = match std::str::from_utf8(&payload[1..]) {
            Ok(sql) => self.proxy_sql(sql, facts.mentions).await?,
            Err(_) => None,
        };
        let live = rewritten
            .as_ref()
            .filter(|(_, is_live)| *is_live)
            .map(|_| Arc::<[u8]>::from(&payload[1..]));
        let rewritten = rewritten.map(|(sql, _)| {
            let mut b = BytesMut::with_capacity(1 + sql.len());
            b.put_u8(com::STMT_PREPARE);
            b.put_slice(sql.as_bytes());
            b.freeze()
        });
        let facts = match &rewritten {
            Some(r) => hscale_sql::analyze_bytes(&r[1..]),
            None => facts,
        };
        let payload = rewritten.as_ref().unwrap_or(payload);
        // INSERT ... SET and INSERT without a column list into a
        // partitioned table: prepared in the `(columns) VALUES` form, as a
        // text statement is planned (`insert_form.rs`).
        let is_insert = matches!(
            facts.kind,
            hscale_sql::Kind::Insert | hscale_sql::Kind::Replace
        ) && facts.statements == 1
            && !self.b.ctx.partitioning.is_empty();
        let normal = match std::str::from_utf8(&payload[1..]) {
            Ok(sql) if is_insert => self.exec().prepared_insert_form(sql).await?.map(|sql| {
                let mut b = BytesMut::with_capacity(1 + sql.len());
                b.put_u8(com::STMT_PREPARE);
                b.put_slice(sql.as_bytes());
                b.freeze()
            }),
            _ => None,
        };
        let facts = match &normal {
            Some(n) => hscale_sql::analyze_bytes(&n[1..]),
            None => facts,
        };
        let payload = normal.as_ref().unwrap_or(payload);
        let sql: Arc<[u8]> = Arc::from(&payload[1..]);
        let own = self.own_read(&facts, &payload[1..]);
        // Fenced like statements: a partition's table renamed by a change
        // (or a plain table by an in-place SETUP_TABLE) answers 1146; with
        // a newer dictionary the statement is prepared again on its new
        // table (`fence.rs`).
        let mut attempts = 0;
        loop {
            let planned = self.b.ctx.partitioning.stored_version();
            match self
                .prepare_routed(payload, &facts, &sql, &live, &own, uses_tables)
                .await?
            {
                Some(err) => {
                    attempts += 1;
                    if attempts <= 8 && crate::partition::refresh::is_stale_trigger_error(&err) {
                        // Triggers on the table changed under the prepare
                        // (`is_stale_trigger_error`): prepare it again.
                        continue;
                    }
                    if attempts <= 8
                        && matches!(
                            crate::partition::refresh::await_newer_dictionary(
                                &self.b.ctx,
                                self.b.worker,
                                planned,
                                &err,
                            )
                            .await,
                            crate::partition::refresh::Fence::Newer
                                | crate::partition::refresh::Fence::Ended
                        )
                    {
                        continue;
                    }
                    return self.write_server_error(1, &err).await;
                }
                None => return Ok(()),
            }
        }
    }

    /// One attempt at a PREPARE, routed by the current dictionary: `Some`
    /// is a 1146 from the backend, not answered yet.
    async fn prepare_routed(
        &mut self,
        payload: &Bytes,
        facts: &hscale_sql::Facts,
        sql: &Arc<[u8]>,
        live: &Option<Arc<[u8]>>,
        own: &Option<OwnRead>,
        uses_tables: bool,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        let dict_version = self.b.ctx.partitioning.version();
        // An INSERT into a table with a sequence: its backends prepare it
        // with a `?` wherever an id may be generated (`exec/sequence.rs`).
        let ids = self.b.prepared_ids(&payload[1..])?;
        // SHOW INDEX of a partitioned table: prepared on its default
        // partition for the metadata; hscale answers its executions.
        let index = match own {
            Some(OwnRead::Index(name)) => self.b.ctx.partitioning.dictionary().table(name).cloned(),
            _ => None,
        };
        let routing = match &index {
            Some(table) => index_routing(table),
            None => {
                self.prepared_routing(ids.as_ref().map_or(&payload[1..], |i| i.sql.as_bytes()))
                    .await?
            }
        };
        let answer = match &routing {
            Routed::Merged(m) => {
                let copies = &m.copies;
                let answer = self.exec().prepare_on_copies(copies).await?;
                if let Ok((ok, _)) = &answer {
                    if usize::from(ok.num_params) != m.placeholders.len() {
                        return Err(ProxyError::Refused(
                            "a prepared statement with placeholders hscale cannot place (inside comments)".into(),
                        ));
                    }
                }
                answer
            }
            _ => self.prepare_direct(&routing, sql).await?,
        };
        let (ok, mut packets) = match answer {
            Ok(a) => a,
            // A plain table's too: an in-place SETUP_TABLE renames it.
            Err(err) if err.code == hscale_wire::consts::code::ER_NO_SUCH_TABLE => {
                return Ok(Some(err))
            }
            Err(err) => {
                // A syntax error quotes the statement as rewritten for the
                // partition: one server's is about the client's own text.
                let own = match (&routing, std::str::from_utf8(&payload[1..])) {
                    (Routed::Plain, _) | (_, Err(_)) => None,
                    (_, Ok(text)) if crate::exec::forward::is_parse_error(&err) => {
                        self.b.server_parse_error(text).await?
                    }
                    _ => None,
                };
                self.write_server_error(1, own.as_ref().unwrap_or(&err))
                    .await?;
                return Ok(None);
            }
        };
        // The client sees its own parameters only, not the ids'.
        let mut num_params = ok.num_params;
        if let Some(ids) = &ids {
            let (params, columns) = packets.split_at(usize::from(ok.num_params).min(packets.len()));
            let mut kept: Vec<Bytes> = params
                .iter()
                .zip(&ids.params)
                .filter(|(_, p)| matches!(p, IdParam::Client(_) | IdParam::ClientId(_)))
                .map(|(d, _)| d.clone())
                .collect();
            num_params = kept.len() as u16;
            kept.extend_from_slice(columns);
            packets = kept;
        }
        let id = self.statements.add(ClientStatement {
            sql: sql.clone(),
            num_params,
            num_columns: ok.num_columns,
            pins: facts.pins,
            uses_last_insert_id: facts.uses_last_insert_id,
            sets_last_insert_id: facts.sets_last_insert_id,
            is_insert: matches!(
                facts.kind,
                hscale_sql::Kind::Insert | hscale_sql::Kind::Replace
            ),
            param_types: None,
            long_data: Vec::new(),
            long_data_bytes: 0,
            is_long_data_refused: false,
            // Rewritten again per execution only on the main backend's
            // path; joined with a partitioned table it keeps the sessions
            // of its PREPARE.
            live: live.clone().filter(|_| matches!(routing, Routed::Plain)),
            routing,
            ids,
            dict_version,
            own: own.clone(),
            uses_tables,
        });
        let answer = PrepareOk {
            statement_id: id,
            num_params,
            ..ok
        };
        let st = self.b.status();
        let mut reply = self.reply(1).prepared(answer, st);
        for p in &packets {
            reply.def(p);
        }
        send(reply.finish()).await?;
        Ok(None)
    }

    /// What hscale answers itself of a statement being prepared, as it
    /// does the text statement.
    fn own_read(&self, facts: &hscale_sql::Facts, sql: &[u8]) -> Option<OwnRead> {
        if facts.kind != hscale_sql::Kind::Show || facts.statements != 1 {
            return None;
        }
        let sql = std::str::from_utf8(sql).ok()?;
        match hscale_sql::diagnostics::classify_condition_read(sql) {
            Some(read @ ConditionRead::List { .. }) => Some(OwnRead::Conditions(read)),
            Some(ConditionRead::Count { .. }) => None,
            None => self.index_table(sql).map(|t| OwnRead::Index(t.name)),
        }
    }

    /// Prepare on the backend the statement runs on (its first part, or
    /// the main backend), kept in that connection's statement cache.
    async fn prepare_direct(
        &mut self,
        routing: &Routed,
        sql: &Arc<[u8]>,
    ) -> Result<Result<(PrepareOk, Vec<Bytes>), ErrPacket>, ProxyError> {
        // The metadata comes from the first target (a partition has T's columns).
        let (backend, backend_sql) = match routing.parts() {
            Some(r) => (r.parts[0].0.backend, r.parts[0].1.clone()),
            None => (BackendId::MAIN, sql.clone()),
        };
        let mut prepare_payload = BytesMut::with_capacity(1 + backend_sql.len());
        prepare_payload.put_u8(com::STMT_PREPARE);
        prepare_payload.put_slice(&backend_sql);
        let cache = self.b.ctx.config.proxy.backend_statement_cache;
        self.b
            .ask(backend, async |conn| {
                let name = conn.backend.to_string();
                let lost = |e: &dyn std::fmt::Display| ProxyError::BackendLost {
                    backend: name.clone(),
                    reason: e.to_string(),
                };
                conn.stream
                    .send_command(&prepare_payload)
                    .await
                    .map_err(|e| lost(&e))?;
                // Read the whole (small) response, then answer.
                let answer = conn.read_prepare().await.map_err(|e| lost(&e))?;
                if let Ok((ok, _)) = &answer {
                    conn.remember_statement(&backend_sql, *ok, cache).await?;
                }
                Ok(answer)
            })
            .await
    }

    /// COM_STMT_EXECUTE: prepare on the borrowed connection if needed, send
    /// long data, then the execute rewritten with the backend's id and types.
    pub(super) async fn execute(&mut self, payload: &Bytes) -> Result<(), ProxyError> {
        let id = stmt::statement_id(payload).map_err(ProxyError::ClientProtocol)?;
        let Some(st) = self.statements.get_mut(id) else {
            return Err(ProxyError::UnknownStatement {
                id,
                command: "mysqld_stmt_execute",
            });
        };
        if st.is_long_data_refused {
            return Err(ProxyError::LongDataTooLarge);
        }
        let exec =
            Execute::decode(payload, st.num_params as usize).map_err(ProxyError::ClientProtocol)?;
        if let Some(types) = exec.types {
            st.param_types = Some(Bytes::copy_from_slice(types));
        }
        let types = st.param_types.clone().unwrap_or_default();
        if st.num_params > 0 && types.len() != st.num_params as usize * 2 {
            return Err(ProxyError::Wrong(
                "COM_STMT_EXECUTE without parameter types for a statement never executed before"
                    .into(),
            ));
        }
        let mut st = st.clone();
        if let Some(s) = self.statements.get_mut(id) {
            s.clear_long_data();
        }
        self.b.gathered.uses_tables = Some(st.uses_tables);
        // Answered as the text statement is, in the binary format.
        let answered = match st.own.take() {
            Some(OwnRead::Conditions(read)) => self.answer_conditions(read, true).await?,
            Some(OwnRead::Index(name)) => {
                // The table as the dictionary has it now.
                let table = self.b.ctx.partitioning.dictionary().table(&name).cloned();
                match table {
                    Some(table) => self.answer_index(&table, true).await.map(|()| true)?,
                    None => false,
                }
            }
            None => false,
        };
        if answered {
            return Ok(());
        }
        // Fenced: an execution that ran into a table a partition change
        // renamed runs again with the new dictionary (`fence.rs`).
        let mut attempts = 0;
        loop {
            let before = self.b.fence_point();
            match self.execute_routed(id, &mut st, &exec, &types).await {
                Err(ProxyError::StaleRoute { err }) => {
                    match self.b.after_stale_route(err, before, &mut attempts).await? {
                        crate::exec::fence::Next::Retry => continue,
                        crate::exec::fence::Next::Answer(err) => {
                            return self.write_server_error(1, &err).await
                        }
                    }
                }
                r => return r,
            }
        }
    }

    /// One attempt at an execution: routed by the current dictionary.
    async fn execute_routed(
        &mut self,
        id: u32,
        st: &mut ClientStatement,
        exec: &Execute<'_>,
        types: &[u8],
    ) -> Result<(), ProxyError> {
        self.b.planned_version = self.b.ctx.partitioning.stored_version();
        // The dictionary changed since PREPARE (a partition added, a table
        // partitioned or made global): route by the current one.
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
            if let Some(s) = self.statements.get_mut(id) {
                s.routing = st.routing.clone();
                s.ids = st.ids.clone();
                s.dict_version = version;
            }
        }
        let mut pins = st.pins;
        if exec.flags & CURSOR_TYPE_READ_ONLY != 0 {
            pins.insert(Pins::CURSOR);
        }
        let text = st.sql.clone();
        let effects = Effects {
            pins,
            uses_last_insert_id: st.uses_last_insert_id,
            sets_last_insert_id: st.sets_last_insert_id,
            supplied: if st.is_insert {
                crate::exec::insert_id::Supplied::Prepared {
                    sql: &text,
                    exec,
                    types,
                    count: usize::from(st.num_params),
                    long_data: &st.long_data,
                }
            } else {
                crate::exec::insert_id::Supplied::Nothing
            },
            ..Effects::default()
        };
        let execution = Execution {
            exec,
            types,
            long_data: &st.long_data,
            uses_last_insert_id: st.uses_last_insert_id,
        };
        let routing = match st.routing.clone() {
            Routed::Plain => {
                // PROCESSLIST: this moment's sessions, kept as the statement's
                // text (a cursor's COM_STMT_FETCH finds it by that).
                let fresh = match st.live.as_deref().map(std::str::from_utf8) {
                    Some(Ok(text)) => self
                        .proxy_sql(text, hscale_sql::Mentions::ALL)
                        .await?
                        .map(|(sql, _)| Arc::<[u8]>::from(sql.as_bytes())),
                    _ => None,
                };
                if let Some(fresh) = fresh {
                    st.sql = fresh.clone();
                    if let Some(s) = self.statements.get_mut(id) {
                        s.sql = fresh;
                    }
                }
                let mut run = self.exec();
                run.is_fenced = true;
                return run
                    .run_single(
                        BackendId::MAIN,
                        &st.sql,
                        Command::Execute(&execution),
                        effects,
                    )
                    .await;
            }
            Routed::Merged(m) => return self.execute_merged(st, &m, exec, types).await,
            Routed::Parts(r) => r,
        };
        // Ids from the table's sequence, filled in before routing (the id
        // may be the partition key).
        let filled = match &st.ids {
            Some(ids) => Some(
                self.b
                    .fill_prepared_ids(ids, exec, types, st.num_params as usize, &st.long_data)
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
            self.b.note.kind = crate::metrics::PlanKind::GlobalWrite;
            self.b.note.parts = self.b.ctx.config.backends.len() as u32;
            return self
                .exec()
                .run_prepared_global(table, &routing.parts[0].1, &execution)
                .await;
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
            let mut asker = Asker::Session(&mut self.b);
            if !learnt.ask(&mut asker, questions, parts.is_ok()).await? {
                break parts?;
            }
        };
        let parts = match parts {
            Pick::Parts(parts) => parts,
            Pick::SplitRows => {
                let sql = st.ids.as_ref().map_or(&st.sql[..], |i| i.sql.as_bytes());
                return self
                    .execute_split_insert(sql, exec, types, long_data, effects)
                    .await;
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
        self.b.note.kind = if parts.len() > 1 {
            crate::metrics::PlanKind::Scatter
        } else {
            crate::metrics::PlanKind::Single
        };
        self.b.note.parts = parts.len() as u32;
        let mut run = self.exec();
        run.is_fenced = true;
        let done = run
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
        done
    }

    /// An execution of a multi-row INSERT whose rows belong to different
    /// partitions: its parameters (ids from the sequence already among
    /// them) written into `sql`, the text statement run as a query would
    /// be, which the router splits by rows; its OK is the same packet in
    /// both protocols.
    async fn execute_split_insert(
        &mut self,
        sql: &[u8],
        exec: &Execute<'_>,
        types: &[u8],
        long_data: &[(u16, bytes::Bytes)],
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        let text = std::str::from_utf8(sql)
            .map_err(|_| ProxyError::Refused("a prepared INSERT whose text is not UTF-8".into()))?;
        let placeholders: Vec<u32> = hscale_sql::tokenize(text)
            .map_err(|_| ProxyError::Wrong("internal: a prepared INSERT that does not lex".into()))?
            .iter()
            .filter(|t| t.kind == hscale_sql::TokenKind::Placeholder)
            .map(|t| t.start)
            .collect();
        let literals = interpolate::literals(exec, types, placeholders.len(), long_data)?;
        let no_backslash_escapes = if literals.iter().any(|l| l.needs_mode()) {
            self.is_no_backslash_escapes().await?
        } else {
            false
        };
        let sql = interpolate::render(sql, &placeholders, &literals, no_backslash_escapes)?;
        let payload = crate::backend::BackendConn::payload_for_query(&sql);
        let facts = hscale_sql::analyze_bytes(sql.as_bytes());
        self.plan_and_run(&payload, Some(sql.as_str()), &facts, effects, &payload[1..])
            .await
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
        let mut run = self.exec();
        run.is_fenced = true;
        run.run_merged(&sql).await
    }

    /// Whether the session's sql_mode has NO_BACKSLASH_ESCAPES (asked of
    /// the main backend in the session's state).
    async fn is_no_backslash_escapes(&mut self) -> Result<bool, ProxyError> {
        Ok(self.b.sql_mode().await?.is_no_backslash_escapes)
    }

    /// How a statement being prepared reaches partitioned tables, if it
    /// does; a long one planned on a thread of its own within the planning
    /// budget (`planning.rs`). A statement refused because hscale cannot
    /// read it gets the server's syntax error when no server parses it
    /// either (`Session::server_parse_error`), as a text statement does.
    async fn prepared_routing(&mut self, sql: &[u8]) -> Result<Routed, ProxyError> {
        let proxy = &self.b.ctx.config.proxy;
        let routed = if sql.len() < proxy.plan_offload_bytes {
            PreparedRouting::plan(sql, self.b.state.db.as_deref(), &self.b.ctx.partitioning)
        } else {
            let (sql, db, ctx) = (sql.to_vec(), self.b.state.db.clone(), self.b.ctx.clone());
            crate::planning::apart(proxy.plan_timeout_ms, move || {
                PreparedRouting::plan(&sql, db.as_deref(), &ctx.partitioning)
            })
            .await?
        };
        match (routed, std::str::from_utf8(sql)) {
            (Err(ProxyError::Refused(why)), Ok(text)) => {
                match self.b.server_parse_error(text).await? {
                    Some(err) => Err(ProxyError::Statement { err }),
                    None => Err(ProxyError::Refused(why)),
                }
            }
            (routed, _) => routed,
        }
    }

    pub(super) fn long_data(&mut self, payload: &Bytes) {
        // No response, not even for errors (as the server does).
        if payload.len() < 7 {
            return;
        }
        let Ok(id) = stmt::statement_id(payload) else {
            return;
        };
        let param = u16::from_le_bytes([payload[5], payload[6]]);
        let max = self.b.ctx.config.proxy.max_allowed_packet;
        if let Some(st) = self.statements.get_mut(id) {
            let data = payload.slice(7..);
            if st.is_long_data_refused {
                return;
            }
            if st.long_data_bytes + data.len() > max {
                // As the server: the next execute fails, nothing is kept.
                st.clear_long_data();
                st.is_long_data_refused = true;
                return;
            }
            st.long_data_bytes += data.len();
            st.long_data.push((param, data));
        }
    }

    pub(super) fn close_statement(&mut self, payload: &Bytes) {
        if let Ok(id) = stmt::statement_id(payload) {
            // Backend statements stay cached on their connections (LRU).
            self.statements.remove(id);
        }
    }

    pub(super) async fn reset_statement(&mut self, payload: &Bytes) -> Result<(), ProxyError> {
        let id = stmt::statement_id(payload).map_err(ProxyError::ClientProtocol)?;
        let Some(st) = self.statements.get_mut(id) else {
            return Err(ProxyError::UnknownStatement {
                id,
                command: "mysqld_stmt_reset",
            });
        };
        st.clear_long_data();
        st.is_long_data_refused = false;
        let sql = st.sql.clone();
        // An open cursor lives on the pinned connection: reset it there.
        if self.b.pins.contains(Pins::CURSOR) {
            if let Some(mut conn) = self.b.pinned.take() {
                if let Some(b) = conn.statement(&sql) {
                    let p = stmt::with_statement_id(payload, b.id);
                    match conn.command(&p).await {
                        Ok(Err(err)) => {
                            self.b.pinned = Some(conn);
                            return self.write_server_error(1, &err).await;
                        }
                        Err(e) => return Err(e),
                        Ok(Ok(_)) => {}
                    }
                }
                self.b.pins.remove(Pins::CURSOR);
                self.b.finish(conn, Outcome::default(), &Effects::default());
            }
        }
        self.write_ok(1).await
    }

    /// COM_STMT_FETCH: rows of an open cursor, on the pinned connection.
    pub(super) async fn fetch(&mut self, payload: &Bytes) -> Result<(), ProxyError> {
        let id = stmt::statement_id(payload).map_err(ProxyError::ClientProtocol)?;
        let sql = match self.statements.get_mut(id) {
            Some(st) => st.sql.clone(),
            None => {
                return Err(ProxyError::UnknownStatement {
                    id,
                    command: "mysqld_stmt_fetch",
                })
            }
        };
        let backend_id = self
            .b
            .pinned
            .as_mut()
            .filter(|_| self.b.pins.contains(Pins::CURSOR))
            .and_then(|c| c.statement(&sql))
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
        self.exec()
            .forward(conn, Expect::Rows, &Effects::default())
            .await
    }

    /// COM_CHANGE_USER: authenticate again (switching to
    /// mysql_native_password with a fresh scramble) and start a fresh session.
    pub(super) async fn change_user(&mut self, payload: &Bytes) -> Result<bool, ProxyError> {
        let cu = ChangeUser::decode(&payload[1..], self.info.capabilities)
            .map_err(ProxyError::ClientProtocol)?;
        let scramble = auth::new_scramble();
        self.client
            .write_payload(1, &encode_auth_switch(NATIVE_PASSWORD, &scramble));
        self.flush().await?;
        let (response, seq) = self.client.read_payload(2, 4096).await.map_err(|e| {
            if e.is_disconnect() {
                ProxyError::ClientGone
            } else {
                ProxyError::ClientProtocol(e)
            }
        })?;
        let next = seq.wrapping_add(1);
        let user = self.b.ctx.live().user(&cu.user).cloned();
        let response: &[u8] = if response[..] == [0] { &[] } else { &response };
        let hosts = [self.info.host_name.as_str(), self.info.host.as_str()];
        let ok = user.as_ref().is_some_and(|u| {
            u.is_host_allowed(&hosts)
                && auth::verify(NATIVE_PASSWORD, u.password.as_bytes(), &scramble, response)
                    .unwrap_or(false)
        });
        let Some(user) = user.filter(|_| ok) else {
            tracing::info!(connection_id = self.b.connection_id, user = %cu.user, "change user failed");
            write_error(
                &mut self.client,
                next,
                &ProxyError::AccessDenied { user: cu.user },
            )
            .await;
            return Ok(false);
        };
        match self.b.ctx.tenants.user(&user.name).open() {
            // The old user's place is given back as this one replaces it.
            Ok(place) => self.b.tenant = place,
            Err(e) => {
                write_error(&mut self.client, next, &e).await;
                return Ok(false);
            }
        }
        self.reset_session();
        self.info.user = user.name.clone();
        self.b.identity = self.b.ctx.config.identity(&user.name);
        *self.b.handle.user.lock().unwrap_or_else(|p| p.into_inner()) = user.name.clone();
        self.info.is_admin = user.admin;
        if let Some(c) = cu.collation {
            super::learn_collations(&self.b.ctx, self.b.worker, c).await;
            match vars_for_collation(&self.b.ctx, c) {
                Ok(vars) => {
                    self.info.collation = c;
                    self.b.base_vars = Arc::new(vars);
                    self.b.state.vars = self.b.base_vars.clone();
                }
                Err(e) => {
                    write_error(&mut self.client, next, &e).await;
                    return Ok(false);
                }
            }
        }
        self.b.state.db = None;
        if let Some(db) = &cu.database {
            if let Some(err) = self.use_database(db).await? {
                self.write_server_error(next, &err).await?;
                return Ok(true);
            }
        }
        tracing::info!(connection_id = self.b.connection_id, user = %user.name, "changed user");
        let st = self.b.status();
        send(self.reply(next).ok(OkParts::new(st, 0))).await?;
        Ok(true)
    }
}

/// `SHOW INDEX` of `table` on its default partition, where it is
/// prepared for its metadata.
fn index_routing(table: &hscale_route::dictionary::PartitionedTable) -> Routed {
    let target = table.default_target();
    let sql = format!(
        "SHOW INDEX FROM {}.{}",
        crate::partition::quote_ident(&table.name.db),
        crate::partition::quote_ident(&target.physical_table)
    );
    Routed::Parts(Arc::new(PreparedRouting {
        kind: StatementKind::Select,
        parts: vec![(target, Arc::from(sql.as_bytes()))],
        key_params: Vec::new(),
        table: Some(table.clone()),
        global: None,
    }))
}
