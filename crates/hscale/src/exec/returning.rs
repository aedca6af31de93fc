//! DELETE ... RETURNING over several partitions (a query; prepared, it is
//! refused): one server deletes the rows and answers them as a result set.
//! Every part's DELETE runs in the statement's transaction (its own in
//! autocommit, all parts or none: `txn/statement.rs`), one after another;
//! their rows are read whole, and sent, concatenated in partition order as
//! a scatter SELECT's are, only once the statement stands (committed, when
//! it had a transaction of its own). A part's error undoes the others and
//! is the answer; no row reaches the client before it. At most `[proxy]
//! merge_max_rows` rows are held.

use bytes::Bytes;
use hscale_route::dictionary::Target;
use hscale_wire::consts::status;
use hscale_wire::response::OkPacket;
use tokio::io::{AsyncRead, AsyncWrite};

use super::forward::Outcome;
use super::prepared::Command;
use super::{send, write_error, Effects, Exec};
use crate::error::ProxyError;

/// The parts' answers, added up.
#[derive(Default)]
struct Returned {
    defs: Vec<Bytes>,
    rows: Vec<Vec<Option<Vec<u8>>>>,
    warnings: u16,
    /// Every part's index flags.
    flags: u16,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    pub(super) async fn delete_returning<P: AsRef<[u8]>>(
        &mut self,
        parts: &[(Target, P)],
    ) -> Result<(), ProxyError> {
        let is_implicit = self.b.needs_implicit_txn();
        let Some(scope) = self.open_write(is_implicit).await? else {
            return Ok(());
        };
        let (total, returned) = match self.read_returned(parts).await {
            Ok(Some(r)) => (Ok(Some(OkPacket::default())), Some(r)),
            Ok(None) => (Ok(None), None),
            Err(e) => (Err(e), None),
        };
        let stands = self.close_write_for_rows(scope, total).await?;
        match returned {
            Some(r) if stands => self.write_returned(r).await,
            _ => Ok(()),
        }
    }

    /// Run every part and read its rows. `Ok(None)`: a part's error was
    /// written to the client.
    async fn read_returned<P: AsRef<[u8]>>(
        &mut self,
        parts: &[(Target, P)],
    ) -> Result<Option<Returned>, ProxyError> {
        let max = self.b.ctx.config.proxy.merge_max_rows;
        let mut out = Returned::default();
        for (target, sql) in parts {
            let Some(mut conn) = self.connect_part(target.backend, 1, Command::Query).await? else {
                return Ok(None);
            };
            match self
                .send_part(&mut conn, sql.as_ref(), Command::Query)
                .await
            {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    self.b.give_back(conn);
                    self.write_server_error(1, &err).await?;
                    return Ok(None);
                }
                Err(e) => {
                    let err = self.b.backend_lost(conn, e.to_string());
                    if !self.b.is_bound_lost {
                        write_error(&mut *self.client, 1, &err).await;
                    }
                    return Ok(None);
                }
            }
            let running = self.b.running(&conn, target.backend);
            let read = conn.read_raw().await;
            drop(running);
            match read {
                Ok(Ok(((defs, rows), (warnings, st)))) => {
                    self.b
                        .gather(&mut conn, warnings, &mut self.scratch.gathered)
                        .await;
                    let outcome = Outcome {
                        status: Some(st),
                        ..Outcome::default()
                    };
                    self.b
                        .finish(conn, outcome, &Effects::default(), self.scratch);
                    if out.defs.is_empty() {
                        out.defs = defs;
                    }
                    out.rows.extend(rows);
                    if out.rows.len() > max {
                        return Err(ProxyError::MergeLimit { limit: max });
                    }
                    out.warnings = out.warnings.saturating_add(warnings);
                    out.flags |= st & status::INDEX_FLAGS;
                }
                Ok(Err(err)) => {
                    self.b.give_back(conn);
                    // A renamed table before anything reached the client:
                    // the fence runs the statement again whole.
                    let err = super::fence::stale_route(self.is_fenced, err)?;
                    self.write_server_error(1, &err).await?;
                    return Ok(None);
                }
                Err(e) => return Err(self.b.backend_lost(conn, e.to_string())),
            }
        }
        Ok(Some(out))
    }

    /// The rows as one result set, with the first part's column
    /// definitions (their original table the client's).
    async fn write_returned(&mut self, r: Returned) -> Result<(), ProxyError> {
        let st = self.b.status() | r.flags;
        let logical: Vec<_> = r.defs.iter().map(|d| self.logical_def(d)).collect();
        let mut header = self.reply(1).columns(r.defs.len());
        for (d, logical) in r.defs.iter().zip(&logical) {
            header.column_def(logical.as_deref().unwrap_or(d));
        }
        let mut out = header.rows(st);
        for row in &r.rows {
            let cells: Vec<Option<&[u8]>> = row.iter().map(|c| c.as_deref()).collect();
            out.text_row(&cells);
        }
        let n = out.count();
        send(out.finish(st, r.warnings)).await?;
        self.scratch.note.rows += n;
        self.scratch.note.is_result = true;
        Ok(())
    }
}
