//! `HSCALE ...` commands from a client: check the admin right, run the
//! command (`crate::admin`), answer with OK or a result set.

use hscale_wire::reply::OkParts;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::admin::{execute, AdminOutput};
use crate::error::ProxyError;
use crate::exec::send;

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
        // A result set (SHOW TABLES and the like): FOUND_ROWS() is its rows.
        if let AdminOutput::Rows { rows, .. } | AdminOutput::Relayed { rows, .. } = &out {
            self.b.note.rows += rows.len() as u64;
            self.b.note.is_result = true;
        }
        if let AdminOutput::Altered { affected, .. } = &out {
            self.b.note.affected = Some(*affected);
        }
        let reply = self.reply(1);
        let done = match out {
            AdminOutput::Ok { info } => reply.ok(OkParts {
                info: &info,
                ..OkParts::new(st, 0)
            }),
            AdminOutput::Altered { affected, info } => reply.ok(OkParts {
                affected_rows: affected,
                info: &info,
                ..OkParts::new(st, 0)
            }),
            AdminOutput::Rows { columns, rows } => {
                let mut header = reply.columns(columns.len());
                for c in &columns {
                    header.column(c);
                }
                let mut body = header.rows(st);
                for row in &rows {
                    let values: Vec<Option<&[u8]>> = row
                        .iter()
                        .map(|v| v.as_deref().map(str::as_bytes))
                        .collect();
                    body.text_row(&values);
                }
                body.finish(st, 0)
            }
            AdminOutput::Relayed { defs, rows } => {
                let mut header = reply.columns(defs.len());
                for d in &defs {
                    header.column_def(d);
                }
                let mut body = header.rows(st);
                for row in &rows {
                    let values: Vec<Option<&[u8]>> = row
                        .iter()
                        .map(|v| v.as_deref().map(str::as_bytes))
                        .collect();
                    body.text_row(&values);
                }
                body.finish(st, 0)
            }
        };
        send(done).await
    }
}
