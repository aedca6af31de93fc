//! COM_STMT_PREPARE once the session checked the statement's reach and
//! put hscale's own answers in its text (`session/commands.rs`): an
//! INSERT in its `(columns) VALUES` form, prepared on the backend (or the
//! copies, or the partition) that runs it to learn the metadata, fenced
//! like a statement, and answered with hscale's own statement id.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use hscale_route::router::{IdParam, StatementKind};
use hscale_route::BackendId;
use hscale_sql::diagnostics::ConditionRead;
use hscale_wire::consts::com;
use hscale_wire::response::ErrPacket;
use hscale_wire::stmt::PrepareOk;
use tokio::io::{AsyncRead, AsyncWrite};

use super::routing::{PreparedRouting, Routed};
use super::statements::{ClientStatement, OwnRead, Statements};
use crate::error::ProxyError;
use crate::exec::{send, Exec};

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Prepare `payload` (the client's COM_STMT_PREPARE with hscale's own
    /// answers in place; `facts` its analysis; `live` the client's text
    /// when it reads this moment's sessions) and answer it, keeping the
    /// statement in `statements`. `uses_tables`: of the client's text.
    pub async fn prepare(
        &mut self,
        statements: &mut Statements,
        payload: &Bytes,
        facts: hscale_sql::Facts,
        live: Option<Arc<[u8]>>,
        uses_tables: bool,
    ) -> Result<(), ProxyError> {
        // INSERT ... SET and INSERT without a column list into a
        // partitioned table: prepared in the `(columns) VALUES` form, as a
        // text statement is planned (`insert_form.rs`).
        let is_insert = matches!(
            facts.kind,
            hscale_sql::Kind::Insert | hscale_sql::Kind::Replace
        ) && facts.statements == 1
            && !self.b.ctx.partitioning.is_empty();
        let normal = match std::str::from_utf8(&payload[1..]) {
            Ok(sql) if is_insert => self.prepared_insert_form(sql).await?.map(|sql| {
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
                .prepare_routed(statements, payload, &facts, &sql, &live, &own, uses_tables)
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
                    return self.write_error_packet(1, &err).await;
                }
                None => return Ok(()),
            }
        }
    }

    /// One attempt at a PREPARE, routed by the current dictionary: `Some`
    /// is a 1146 from the backend, not answered yet.
    #[allow(clippy::too_many_arguments)]
    async fn prepare_routed(
        &mut self,
        statements: &mut Statements,
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
                let answer = self.prepare_on_copies(copies).await?;
                if let Ok((ok, _)) = &answer {
                    if usize::from(ok.num_params) != m.placeholders.len() {
                        return Err(ProxyError::Refused(
                            "a prepared statement with placeholders hscale cannot place (inside comments)".into(),
                        ));
                    }
                }
                answer
            }
            // Its tables are no backend's: the parameter count is the
            // statement's `?`s, and a write has no columns.
            Routed::AsText(placeholders) => {
                let n = placeholders.len();
                let ok = PrepareOk {
                    statement_id: 0,
                    num_columns: 0,
                    num_params: u16::try_from(n).map_err(|_| {
                        ProxyError::Refused("a prepared statement of over 65,535 parameters".into())
                    })?,
                    warnings: 0,
                };
                let defs = (0..n)
                    .map(|_| hscale_wire::resultset::encode_column("?").freeze())
                    .collect();
                Ok((ok, defs))
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
                self.write_error_packet(1, own.as_ref().unwrap_or(&err))
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
        let is_insert = matches!(
            facts.kind,
            hscale_sql::Kind::Insert | hscale_sql::Kind::Replace
        );
        let insert_tokens: Arc<[hscale_sql::Token]> = match std::str::from_utf8(sql) {
            Ok(text) if is_insert => hscale_sql::tokenize(text).unwrap_or_default().into(),
            _ => Arc::from([]),
        };
        let id = statements.add(ClientStatement {
            sql: sql.clone(),
            num_params,
            num_columns: ok.num_columns,
            pins: facts.pins,
            uses_last_insert_id: facts.uses_last_insert_id,
            sets_last_insert_id: facts.sets_last_insert_id,
            is_insert,
            insert_tokens,
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
            None => self.b.index_table(sql).map(|t| OwnRead::Index(t.name)),
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

    /// How a statement being prepared reaches partitioned tables, if it
    /// does; a long one planned on a thread of its own within the planning
    /// budget (`planning.rs`). A statement refused because hscale cannot
    /// read it gets the server's syntax error when no server parses it
    /// either (`Session::server_parse_error`), as a text statement does.
    pub(super) async fn prepared_routing(&mut self, sql: &[u8]) -> Result<Routed, ProxyError> {
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
        is_by_default: false,
        is_by_text: false,
        table: Some(table.clone()),
        global: None,
    }))
}
