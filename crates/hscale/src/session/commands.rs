//! Prepared-statement commands and COM_CHANGE_USER.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use hscale_sql::Pins;
use hscale_wire::auth::{self, NATIVE_PASSWORD};
use hscale_wire::consts::{com, status};
use hscale_wire::handshake::{encode_auth_switch, ChangeUser};
use hscale_wire::response::{encode_err, encode_ok, is_eof, ErrPacket};
use hscale_wire::stmt::{self, Execute, PrepareOk};
use tokio::io::{AsyncRead, AsyncWrite};

use super::forward::{Expect, Outcome};
use super::prepared::ClientStatement;
use super::{ok_status, vars_for_collation, write_error, Effects, Session};
use crate::error::ProxyError;

/// Cursor flags of COM_STMT_EXECUTE.
const CURSOR_TYPE_READ_ONLY: u8 = 1;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// COM_STMT_PREPARE: prepare on a backend connection to learn the
    /// metadata, answer with hscale's own statement id.
    pub(super) async fn prepare(&mut self, payload: &Bytes) -> Result<(), ProxyError> {
        let facts = hscale_sql::analyze_bytes(&payload[1..]);
        if let Some(why) = self.ctx.partitioning.refusal(&payload[1..]) {
            return Err(ProxyError::Refused(format!(
                "{why} (prepared statements on partitioned tables are not supported yet)"
            )));
        }
        let sql: Arc<[u8]> = Arc::from(&payload[1..]);
        let mut conn = self.acquire(0).await?;
        if let Some(err) = self.sync(&mut conn, false).await? {
            self.finish(conn, Outcome::default(), &Effects::default());
            return self.write_err_packet(&err).await;
        }
        if let Err(e) = conn.stream.send_command(payload).await {
            return Err(self.backend_lost(conn, e.to_string()));
        }
        let deprecated = self.is_eof_deprecated();
        // Read the whole (small) response, then answer.
        let mut packets: Vec<Bytes> = Vec::new();
        let read: Result<Option<PrepareOk>, hscale_wire::WireError> = async {
            let first = conn.stream.read_packet().await?;
            if first.first() == Some(0xff) {
                packets.push(first.payload);
                return Ok(None);
            }
            let ok = PrepareOk::decode(&first.payload)?;
            for n in [ok.num_params, ok.num_columns] {
                if n == 0 {
                    continue;
                }
                for _ in 0..n {
                    packets.push(conn.stream.read_packet().await?.payload);
                }
                let eof = conn.stream.read_packet().await?;
                if !is_eof(&eof.payload) {
                    return Err(hscale_wire::WireError::Malformed(
                        "expected EOF after metadata",
                    ));
                }
                if !deprecated {
                    packets.push(eof.payload);
                }
            }
            Ok(Some(ok))
        }
        .await;
        let ok = match read {
            Ok(ok) => ok,
            Err(e) => return Err(self.backend_lost(conn, e.to_string())),
        };
        let Some(ok) = ok else {
            self.finish(conn, Outcome::default(), &Effects::default());
            let err = ErrPacket::decode(&packets[0]).map_err(|e| ProxyError::BackendProtocol {
                backend: self.ctx.pool(self.worker, 0).name().to_string(),
                reason: e.to_string(),
            })?;
            return self.write_err_packet(&err).await;
        };
        let cache = self.ctx.config.proxy.backend_statement_cache;
        conn.remember_statement(&sql, ok, cache).await?;
        self.finish(conn, Outcome::default(), &Effects::default());
        let id = self.statements.add(ClientStatement {
            sql,
            num_params: ok.num_params,
            num_columns: ok.num_columns,
            pins: facts.pins,
            uses_last_insert_id: facts.uses_last_insert_id,
            param_types: None,
            long_data: Vec::new(),
        });
        let mut seq = 1u8;
        let answer = PrepareOk {
            statement_id: id,
            ..ok
        };
        seq = self.client.write_payload(seq, &answer.encode());
        for p in &packets {
            seq = self.client.write_payload(seq, p);
        }
        self.flush().await
    }

    async fn write_err_packet(&mut self, err: &ErrPacket) -> Result<(), ProxyError> {
        self.client
            .write_payload(1, &encode_err(err.code, &err.sql_state, &err.message));
        self.flush().await
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
        let st = st.clone();
        if let Some(s) = self.statements.get_mut(id) {
            s.long_data.clear();
        }
        let mut pins = st.pins;
        if exec.flags & CURSOR_TYPE_READ_ONLY != 0 {
            pins.insert(Pins::CURSOR);
        }
        let mut conn = self.acquire(0).await?;
        if let Some(err) = self.sync(&mut conn, st.uses_last_insert_id).await? {
            self.finish(conn, Outcome::default(), &Effects::default());
            return self.write_err_packet(&err).await;
        }
        let backend_id = match conn.statement(&st.sql) {
            Some(b) => b.id,
            None => {
                let cache = self.ctx.config.proxy.backend_statement_cache;
                match conn.prepare(&st.sql, cache).await {
                    Ok(Ok(b)) => b.id,
                    Ok(Err(err)) => {
                        self.finish(conn, Outcome::default(), &Effects::default());
                        return self.write_err_packet(&err).await;
                    }
                    Err(e) => {
                        conn.is_broken = true;
                        return Err(self.backend_lost(conn, e.to_string()));
                    }
                }
            }
        };
        for (param, data) in &st.long_data {
            let mut p = BytesMut::with_capacity(7 + data.len());
            p.put_u8(com::STMT_SEND_LONG_DATA);
            p.put_u32_le(backend_id);
            p.put_u16_le(*param);
            p.put_slice(data);
            conn.send_no_response(&p).await?;
        }
        let rewritten = exec.encode_for(backend_id, &types);
        if let Err(e) = conn.stream.send_command(&rewritten).await {
            return Err(self.backend_lost(conn, e.to_string()));
        }
        let effects = Effects {
            pins,
            ..Effects::default()
        };
        self.forward(conn, Expect::Query, &effects).await
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
        if let Some(st) = self.statements.get_mut(id) {
            st.long_data.push((param, payload.slice(7..)));
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
        st.long_data.clear();
        let sql = st.sql.clone();
        // An open cursor lives on the pinned connection: reset it there.
        if self.pins.contains(Pins::CURSOR) {
            if let Some(mut conn) = self.pinned.take() {
                if let Some(b) = conn.statement(&sql) {
                    let p = stmt::with_statement_id(payload, b.id);
                    match conn.command(&p).await {
                        Ok(Err(err)) => {
                            self.pinned = Some(conn);
                            return self.write_err_packet(&err).await;
                        }
                        Err(e) => return Err(e),
                        Ok(Ok(_)) => {}
                    }
                }
                self.pins.remove(Pins::CURSOR);
                self.finish(conn, Outcome::default(), &Effects::default());
            }
        }
        self.write_ok(1, status::AUTOCOMMIT).await
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
            .pinned
            .as_mut()
            .filter(|_| self.pins.contains(Pins::CURSOR))
            .and_then(|c| c.statement(&sql))
            .map(|b| b.id);
        let Some(backend_id) = backend_id else {
            return Err(ProxyError::Wrong(
                "COM_STMT_FETCH without an open cursor".into(),
            ));
        };
        let Some(mut conn) = self.pinned.take() else {
            return Err(ProxyError::Wrong(
                "COM_STMT_FETCH without an open cursor".into(),
            ));
        };
        let p = stmt::with_statement_id(payload, backend_id);
        if let Err(e) = conn.stream.send_command(&p).await {
            return Err(self.backend_lost(conn, e.to_string()));
        }
        self.forward(conn, Expect::Rows, &Effects::default()).await
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
        let user = self.ctx.config.user(&cu.user).cloned();
        let response: &[u8] = if response[..] == [0] { &[] } else { &response };
        let ok = user.as_ref().is_some_and(|u| {
            auth::verify(NATIVE_PASSWORD, u.password.as_bytes(), &scramble, response)
                .unwrap_or(false)
        });
        let Some(user) = user.filter(|_| ok) else {
            tracing::info!(connection_id = self.connection_id, user = %cu.user, "change user failed");
            write_error(
                &mut self.client,
                next,
                &ProxyError::AccessDenied { user: cu.user },
            )
            .await;
            return Ok(false);
        };
        self.reset_session();
        self.info.user = user.name.clone();
        *self.handle.user.lock().unwrap_or_else(|p| p.into_inner()) = user.name.clone();
        self.info.is_admin = user.admin;
        if let Some(c) = cu.collation {
            self.info.collation = c;
            self.base_vars = Arc::new(vars_for_collation(c));
            self.state.vars = self.base_vars.clone();
        }
        self.state.db = None;
        if let Some(db) = &cu.database {
            if let Some(err) = self.use_database(db).await? {
                self.client
                    .write_payload(next, &encode_err(err.code, &err.sql_state, &err.message));
                self.flush().await?;
                return Ok(true);
            }
        }
        tracing::info!(connection_id = self.connection_id, user = %user.name, "changed user");
        self.client
            .write_payload(next, &encode_ok(0, &ok_status(status::AUTOCOMMIT), ""));
        self.flush().await?;
        Ok(true)
    }
}
