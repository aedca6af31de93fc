//! Statements routed to partitions (`hscale_route::router`): one target
//! runs like any statement on that backend; several targets run one after
//! another, SELECT rows concatenated into one result set, and the affected
//! rows of INSERT/UPDATE/DELETE added up into one OK.

use hscale_route::dictionary::Target;
use hscale_route::router::StatementKind;
use hscale_wire::response::{encode_err, encode_ok, OkPacket};
use tokio::io::{AsyncRead, AsyncWrite};

use super::forward::{Expect, ForwardError, Forwarder, Outcome};
use super::{write_error, Effects, Session};
use crate::backend::BackendConn;
use crate::error::ProxyError;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    pub(super) async fn run_routed(
        &mut self,
        kind: StatementKind,
        parts: Vec<(Target, String)>,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        tracing::debug!(
            connection_id = self.connection_id,
            parts = parts.len(),
            "routed"
        );
        if let [(target, sql)] = parts.as_slice() {
            let payload = BackendConn::payload_for_query(sql);
            return self
                .execute_on_backend(target.backend, &payload, Expect::Query, effects)
                .await;
        }
        if self.pinned.is_some() {
            return Err(ProxyError::Unsupported {
                what: "a statement over several partitions inside a transaction or with connection-bound state".into(),
            });
        }
        match kind {
            StatementKind::Select => self.concatenate(&parts).await,
            _ => self.add_up(&parts).await,
        }
    }

    /// SELECT over several partitions: one result set, rows in partition order.
    async fn concatenate(&mut self, parts: &[(Target, String)]) -> Result<(), ProxyError> {
        let mut seq = 1u8;
        let n = parts.len();
        let max = self.ctx.config.proxy.max_allowed_packet;
        let deprecated = self.is_eof_deprecated();
        for (i, (target, sql)) in parts.iter().enumerate() {
            let mut conn = match self.acquire(target.backend).await {
                Ok(c) => c,
                Err(e) => {
                    write_error(&mut self.client, seq, &e).await;
                    return Ok(());
                }
            };
            if let Some(err) = self.sync(&mut conn, false).await? {
                self.finish(conn, Outcome::default(), &Effects::default());
                self.client
                    .write_payload(seq, &encode_err(err.code, &err.sql_state, &err.message));
                return self.flush().await;
            }
            if let Err(e) = conn
                .stream
                .send_command(&BackendConn::payload_for_query(sql))
                .await
            {
                let err = self.backend_lost(conn, e.to_string());
                write_error(&mut self.client, seq, &err).await;
                return Ok(());
            }
            self.handle.set_running(target.backend, conn.thread_id);
            let r = Forwarder::new(&mut conn.stream, &mut self.client, deprecated, max)
                .starting_at(seq)
                .run_part(i == 0, i + 1 == n)
                .await;
            self.handle.clear_running();
            match r {
                Ok((outcome, next)) => {
                    seq = next;
                    let is_err = outcome.is_err;
                    self.finish(conn, outcome, &Effects::default());
                    if is_err {
                        return Ok(());
                    }
                }
                Err(f) => match f.error {
                    ForwardError::Backend(e) => {
                        let err = self.backend_lost(conn, e.to_string());
                        write_error(&mut self.client, f.next_seq, &err).await;
                        return Ok(());
                    }
                    ForwardError::Client(_) => {
                        conn.is_broken = true;
                        return Err(ProxyError::ClientGone);
                    }
                },
            }
        }
        Ok(())
    }

    /// INSERT / UPDATE / DELETE over several partitions: one OK with the sum.
    /// Not atomic across partitions: an error on one leaves the others
    /// changed (transactions across backends are a later issue).
    async fn add_up(&mut self, parts: &[(Target, String)]) -> Result<(), ProxyError> {
        let mut total = OkPacket::default();
        let mut first_id = 0;
        for (target, sql) in parts {
            let mut conn = self.acquire(target.backend).await?;
            if let Some(err) = self.sync(&mut conn, false).await? {
                self.finish(conn, Outcome::default(), &Effects::default());
                self.client
                    .write_payload(1, &encode_err(err.code, &err.sql_state, &err.message));
                return self.flush().await;
            }
            self.handle.set_running(target.backend, conn.thread_id);
            let r = conn.command(&BackendConn::payload_for_query(sql)).await;
            self.handle.clear_running();
            match r {
                Ok(Ok(ok)) => {
                    total.affected_rows += ok.affected_rows;
                    total.warnings = total.warnings.saturating_add(ok.warnings);
                    total.status = ok.status;
                    if first_id == 0 {
                        first_id = ok.last_insert_id;
                    }
                    let outcome = Outcome {
                        status: Some(ok.status),
                        ok: Some(ok),
                        is_err: false,
                        packets: 0,
                    };
                    self.finish(conn, outcome, &Effects::default());
                }
                Ok(Err(err)) => {
                    self.finish(conn, Outcome::default(), &Effects::default());
                    self.client
                        .write_payload(1, &encode_err(err.code, &err.sql_state, &err.message));
                    return self.flush().await;
                }
                Err(e) => {
                    return Err(self.backend_lost(conn, e.to_string()));
                }
            }
        }
        total.last_insert_id = first_id;
        if first_id != 0 {
            self.state.last_insert_id = first_id;
        }
        self.client.write_payload(1, &encode_ok(0, &total, ""));
        self.flush().await
    }
}
