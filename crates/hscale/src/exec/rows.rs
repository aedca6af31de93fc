//! Result sets hscale writes itself with a server's column definitions
//! (SHOW WARNINGS / SHOW ERRORS from the session's list,
//! `conditions/list.rs`; SHOW INDEX of a partitioned table, `figures.rs`):
//! text rows for a COM_QUERY, binary rows (`hscale_wire::binary_row`) for
//! a COM_STMT_EXECUTE, so a prepared statement answers what the text one
//! does.

use bytes::Bytes;
use hscale_wire::resultset::ColumnInfo;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{send, Exec};
use crate::admin::AdminOutput;
use crate::error::ProxyError;
use hscale_wire::reply::OkParts;

/// Rows as the text protocol carries them (`None`: NULL).
pub type TextRows = Vec<Vec<Option<Vec<u8>>>>;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Answer with columns `defs` and `rows`, in the binary format when
    /// `is_binary` (an execution of a prepared statement).
    pub async fn write_result(
        &mut self,
        defs: &[Bytes],
        rows: &TextRows,
        is_binary: bool,
    ) -> Result<(), ProxyError> {
        let wrong = |e: hscale_wire::WireError| {
            ProxyError::Wrong(format!("a row hscale answers in the binary format: {e}"))
        };
        // Every row encoded before the first packet: an error is still
        // the whole answer.
        let binary = if is_binary {
            let columns = defs
                .iter()
                .map(|d| ColumnInfo::decode(d))
                .collect::<Result<Vec<_>, _>>()
                .map_err(wrong)?;
            let encoded = rows
                .iter()
                .map(|row| {
                    let cells: Vec<Option<&[u8]>> = row.iter().map(|c| c.as_deref()).collect();
                    hscale_wire::binary_row::encode_binary_row(&columns, &cells)
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(wrong)?;
            Some(encoded)
        } else {
            None
        };
        let st = self.b.status();
        let mut header = self.reply(1).columns(defs.len());
        for d in defs {
            header.column_def(d);
        }
        let mut out = header.rows(st);
        match &binary {
            Some(encoded) => encoded.iter().for_each(|b| out.row(b)),
            None => {
                for row in rows {
                    let cells: Vec<Option<&[u8]>> = row.iter().map(|c| c.as_deref()).collect();
                    out.text_row(&cells);
                }
            }
        }
        let n = out.count();
        send(out.finish(st, 0)).await?;
        self.scratch.note.rows += n;
        self.scratch.note.is_result = true;
        Ok(())
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Answer with an OK or a result set the proxy built itself.
    pub async fn write_admin_output(&mut self, out: AdminOutput) -> Result<(), ProxyError> {
        let st = self.b.status();
        // A result set (SHOW TABLES and the like): FOUND_ROWS() is its rows.
        if let AdminOutput::Rows { rows, .. } | AdminOutput::Relayed { rows, .. } = &out {
            self.scratch.note.rows += rows.len() as u64;
            self.scratch.note.is_result = true;
        }
        if let AdminOutput::Altered { affected, .. } = &out {
            self.scratch.note.affected = Some(*affected);
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
                text_rows(header.rows(st), &rows, st)
            }
            AdminOutput::Relayed { defs, rows } => {
                let mut header = reply.columns(defs.len());
                for d in &defs {
                    header.column_def(d);
                }
                text_rows(header.rows(st), &rows, st)
            }
        };
        send(done).await
    }
}

/// The proxy's own rows, as text, after their column definitions.
fn text_rows<'a, S: AsyncRead + AsyncWrite + Unpin>(
    mut body: hscale_wire::reply::Rows<'a, S>,
    rows: &[Vec<Option<String>>],
    st: u16,
) -> hscale_wire::reply::Done<'a, S> {
    for row in rows {
        let values: Vec<Option<&[u8]>> = row
            .iter()
            .map(|v| v.as_deref().map(str::as_bytes))
            .collect();
        body.text_row(&values);
    }
    body.finish(st, 0)
}
