//! Prepared-statement commands and COM_CHANGE_USER. The session decodes
//! each command, keeps its statements ([`Statements`], under hscale's own
//! ids), checks a statement's reach and puts hscale's own answers in its
//! text (`rewrite.rs`), answers executions of SHOW WARNINGS / SHOW INDEX
//! from its own state, and calls the executor (`exec/prepared/`) for the
//! rest; an INSERT an execution splits by rows runs as a query.
//!
//! [`Statements`]: crate::exec::prepared::statements::Statements

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use hscale_wire::auth::{self, NATIVE_PASSWORD};
use hscale_wire::consts::com;
use hscale_wire::handshake::{encode_auth_switch, ChangeUser};
use hscale_wire::reply::OkParts;
use hscale_wire::stmt::{self, Execute};
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::error::ProxyError;
use crate::exec::prepared::routing::Routed;
use crate::exec::prepared::statements::{ClientStatement, OwnRead};
use crate::exec::prepared::Executed;
use crate::exec::session_start::{learn_collations, vars_for_collation};
use crate::exec::{send, write_error, Exec};

/// One run of a prepared execution under the fence.
struct PreparedRun<'a, 'p> {
    id: u32,
    st: &'a mut ClientStatement,
    exec: &'a Execute<'p>,
    types: &'a [u8],
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> crate::exec::fence::Attempt<Session<S>>
    for PreparedRun<'_, '_>
{
    async fn attempt(&mut self, s: &mut Session<S>) -> Result<(), ProxyError> {
        s.execute_routed(self.id, self.st, self.exec, self.types)
            .await
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// COM_STMT_PREPARE; one that fails leaves its error as the session's
    /// list, as on a server (one that succeeds leaves the list).
    pub(super) async fn prepare_noting_errors(
        &mut self,
        payload: &bytes::Bytes,
    ) -> Result<(), ProxyError> {
        // A PREPARE is a statement of the user's rate (`crate::tenant`),
        // as MariaDB counts it among a user's queries.
        let r = match self.b.tenant().admit().await {
            Ok(()) => self.prepare(payload).await,
            Err(e) => Err(e),
        };
        match &r {
            Err(ProxyError::ClientGone) => return r,
            Err(e) => {
                let (code, _, message) = e.to_mysql();
                self.scratch.note.error(code);
                self.scratch.gathered.error(code, &message);
            }
            Ok(()) => {}
        }
        let error = self.scratch.note.error;
        if error != 0 {
            let gathered = std::mem::take(&mut self.scratch.gathered);
            let vars = &self.b.state().vars;
            self.conditions
                .record(gathered, error, || vars.max_error_count(), &payload[1..]);
        }
        r
    }

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
        let deprecated = self.is_eof_deprecated();
        let mut exec = Exec::new(&mut self.client, &mut self.b, &mut self.scratch, deprecated);
        exec.prepare(&mut self.statements, payload, facts, live, uses_tables)
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
        if self.b.read_from().is_replica {
            crate::exec::read_from::route_prepared(&mut self.b, &st.sql);
        }
        self.scratch.gathered.uses_tables = Some(st.uses_tables);
        // Answered as the text statement is, in the binary format.
        let answered = match st.own.take() {
            Some(OwnRead::Conditions(read)) => self.answer_conditions(read, true).await?,
            Some(OwnRead::Index(name)) => {
                // The table as the dictionary has it now.
                let table = self.b.ctx().partitioning.dictionary().table(&name).cloned();
                match table {
                    Some(table) => self
                        .exec()
                        .answer_index(&table, true)
                        .await
                        .map(|()| true)?,
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
        let mut run = PreparedRun {
            id,
            st: &mut st,
            exec: &exec,
            types: &types,
        };
        crate::exec::fence::run_fenced(self, &mut run).await
    }

    /// One attempt at an execution: routed by the current dictionary
    /// (`exec/prepared/execute.rs`).
    async fn execute_routed(
        &mut self,
        id: u32,
        st: &mut ClientStatement,
        exec: &Execute<'_>,
        types: &[u8],
    ) -> Result<(), ProxyError> {
        let deprecated = self.is_eof_deprecated();
        Exec::new(&mut self.client, &mut self.b, &mut self.scratch, deprecated)
            .reroute_prepared(&mut self.statements, id, st)
            .await?;
        if let (Routed::Plain, Some(Ok(text))) =
            (&st.routing, st.live.as_deref().map(std::str::from_utf8))
        {
            // PROCESSLIST: this moment's sessions, kept as the statement's
            // text (a cursor's COM_STMT_FETCH finds it by that).
            let fresh = self
                .proxy_sql(text, hscale_sql::Mentions::ALL)
                .await?
                .map(|(sql, _)| Arc::<[u8]>::from(sql.as_bytes()));
            if let Some(fresh) = fresh {
                st.sql = fresh.clone();
                if let Some(s) = self.statements.get_mut(id) {
                    s.sql = fresh;
                }
            }
        }
        let sql = match self.exec().execute_prepared(st, exec, types).await? {
            Executed::Done => return Ok(()),
            Executed::SplitRows(sql) => sql,
        };
        // Its parameters written in: run as a query would be, split by
        // rows; its OK is the same packet in both protocols.
        let payload = crate::backend::BackendConn::payload_for_query(&sql);
        let facts = hscale_sql::analyze_bytes(sql.as_bytes());
        let mut effects = crate::exec::prepared::effects(st, exec, types);
        effects.supplied = crate::exec::insert_id::Supplied::Text {
            sql: &payload[1..],
            tokens: &facts.tokens,
        };
        let ran = self
            .exec()
            .plan_and_run(&payload, Some(sql.as_str()), &facts, effects, &payload[1..])
            .await?;
        self.ran(ran).await
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
        let max = self.b.ctx().config.proxy.max_allowed_packet;
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
        self.exec().reset_prepared(&sql, payload).await
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
        self.exec().fetch_prepared(&sql, payload).await
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
        let user = self.b.ctx().live().user(&cu.user).cloned();
        let response: &[u8] = if response[..] == [0] { &[] } else { &response };
        let hosts = [self.info.host_name.as_str(), self.info.host.as_str()];
        let ok = user.as_ref().is_some_and(|u| {
            u.is_host_allowed(&hosts)
                && auth::verify(NATIVE_PASSWORD, u.password.as_bytes(), &scramble, response)
                    .unwrap_or(false)
        });
        let Some(user) = user.filter(|_| ok) else {
            tracing::info!(connection_id = self.b.connection_id(), user = %cu.user, "change user failed");
            write_error(
                &mut self.client,
                next,
                &ProxyError::AccessDenied { user: cu.user },
            )
            .await;
            return Ok(false);
        };
        match self.b.ctx().tenants.user(&user.name).open() {
            // The old user's place is given back as this one replaces it.
            Ok(place) => self.b.replace_tenant(place),
            Err(e) => {
                write_error(&mut self.client, next, &e).await;
                return Ok(false);
            }
        }
        self.reset_session();
        self.info.user = user.name.clone();
        self.b.become_user(&user);
        self.info.is_admin = user.admin;
        if let Some(c) = cu.collation {
            learn_collations(self.b.ctx(), self.b.worker(), c).await;
            match vars_for_collation(self.b.ctx(), c) {
                Ok(vars) => {
                    self.info.collation = c;
                    self.b.set_base_vars(vars);
                }
                Err(e) => {
                    write_error(&mut self.client, next, &e).await;
                    return Ok(false);
                }
            }
        }
        self.b.forget_database();
        if let Some(db) = &cu.database {
            if let Some(err) = self.use_database(db).await? {
                self.exec().write_server_error(next, &err).await?;
                return Ok(true);
            }
        }
        tracing::info!(connection_id = self.b.connection_id(), user = %user.name, "changed user");
        let st = self.b.status();
        send(self.reply(next).ok(OkParts::new(st, 0))).await?;
        Ok(true)
    }
}
