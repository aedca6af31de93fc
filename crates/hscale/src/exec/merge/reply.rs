//! The merged answer written to the client: each row (text, or binary
//! for a prepared execution) and the answer's end, the terminator with
//! the parts' warnings or the error that stopped it.

use hscale_route::router::MergePlan;
use hscale_wire::reply::Rows;
use hscale_wire::resultset::ColumnInfo;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Stop;
use crate::error::ProxyError;
use crate::exec::scratch::StatementScratch;
use crate::exec::{send, Bindings};

/// Send a merged row: a text row, or for a prepared statement's
/// execution (`binary`: the answer's columns) a binary one.
pub(super) async fn write_row<S: AsyncRead + AsyncWrite + Unpin>(
    rows: &mut Rows<'_, S>,
    row: &[Option<Vec<u8>>],
    binary: Option<&[ColumnInfo]>,
) -> Result<(), Stop> {
    let cells: Vec<Option<&[u8]>> = row.iter().map(|c| c.as_deref()).collect();
    match binary {
        None => rows.text_row(&cells),
        Some(columns) => {
            let b = hscale_wire::binary_row::encode_binary_row(columns, &cells).map_err(|e| {
                Stop::Proxy(ProxyError::Wrong(format!(
                    "a merged row in the binary format: {e}"
                )))
            })?;
            rows.row(&b);
        }
    }
    rows.maybe_flush()
        .await
        .map_err(|_| Stop::Proxy(ProxyError::ClientGone))
}

/// End a result set whose rows were (partly) sent: the terminator, or the
/// error that stopped it. The terminator's warning count is the parts',
/// less the repeated listings of conditions one server raises once per
/// statement (`Gathered::settle`; every part was gathered by now; those
/// only a server's EXPLAIN tells from per-row ones measured first,
/// `Bindings::measure`).
pub(super) async fn end_rows<S: AsyncRead + AsyncWrite + Unpin>(
    rows: Rows<'_, S>,
    r: Result<(), Stop>,
    status: u16,
    b: &mut Bindings,
    scratch: &mut StatementScratch,
    plan: &MergePlan,
) -> Result<(), Stop> {
    let note = &mut scratch.note;
    note.rows += rows.count();
    note.is_result = true;
    let (warnings, flags) = note.merged;
    let done = match r {
        Ok(()) => {
            let fragment = plan.parts.first().map_or("", |(_, sql)| sql.as_str());
            if let Some((target, _)) = plan.parts.first() {
                b.measure(target, fragment, &mut scratch.gathered).await;
            }
            let warnings = scratch.gathered.settled_count(warnings, || {
                super::conditions::text_constants(fragment.as_bytes())
            });
            rows.finish(status | flags, warnings)
        }
        Err(Stop::Server(e)) => {
            scratch.note.error(e.code);
            rows.err(e.code, &e.sql_state, &e.message)
        }
        Err(Stop::Proxy(ProxyError::ClientGone)) => {
            return Err(Stop::Proxy(ProxyError::ClientGone))
        }
        Err(Stop::Proxy(e)) => {
            let (code, state, msg) = e.to_mysql();
            scratch.note.error(code);
            rows.err(code, &state, &msg)
        }
    };
    send(done).await.map_err(Stop::Proxy)
}
