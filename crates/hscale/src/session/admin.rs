//! `HSCALE ...` commands from a client: check the admin right, run the
//! command (`crate::admin`), answer with OK or a result set.

use hscale_wire::response::{encode_eof, encode_ok, OkPacket};
use hscale_wire::resultset::{encode_column, encode_column_count, encode_row};
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::admin::{execute, AdminOutput};
use crate::error::ProxyError;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    pub(super) async fn admin(&mut self, sql: &str) -> Result<(), ProxyError> {
        if !self.info.is_admin {
            return Err(ProxyError::AdminDenied {
                user: self.info.user.clone(),
            });
        }
        let cmd = hscale_route::admin::parse(sql).map_err(|e| ProxyError::Wrong(e.to_string()))?;
        tracing::info!(
            connection_id = self.b.connection_id,
            command = sql,
            "admin command"
        );
        let out = execute(&self.b.ctx, self.b.worker, self.b.state.db.as_deref(), cmd).await?;
        self.write_admin_output(out).await
    }

    /// Answer with an OK or a result set the proxy built itself.
    pub(super) async fn write_admin_output(&mut self, out: AdminOutput) -> Result<(), ProxyError> {
        let st = self.b.status();
        match out {
            AdminOutput::Ok { info } => {
                let ok = OkPacket {
                    status: st,
                    ..OkPacket::default()
                };
                self.client.write_payload(1, &encode_ok(0, &ok, &info));
            }
            AdminOutput::Rows { columns, rows } => {
                let mut seq = self
                    .client
                    .write_payload(1, &encode_column_count(columns.len()));
                for c in &columns {
                    seq = self.client.write_payload(seq, &encode_column(c));
                }
                if !self.is_eof_deprecated() {
                    seq = self.client.write_payload(seq, &encode_eof(0, st));
                }
                for row in &rows {
                    let values: Vec<Option<&str>> = row.iter().map(|v| v.as_deref()).collect();
                    seq = self.client.write_payload(seq, &encode_row(&values));
                }
                if self.is_eof_deprecated() {
                    let ok = OkPacket {
                        status: st,
                        ..OkPacket::default()
                    };
                    self.client.write_payload(seq, &encode_ok(0xfe, &ok, ""));
                } else {
                    self.client.write_payload(seq, &encode_eof(0, st));
                }
            }
        }
        self.flush().await
    }
}
