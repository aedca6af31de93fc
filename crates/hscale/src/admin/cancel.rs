//! `HSCALE CANCEL_OPERATION(id)`: stop a partition change that has not
//! reached its cutover and leave the table as it was before it.
//!
//! The journal row moves from 'copying' to 'cancelling' by compare-and-set;
//! `change::mark_cutover` moves it from 'copying' to 'cutover' the same way,
//! so a change is either cancelled or cut over, never both. The owner (any
//! proxy) sees the request within `change::CANCEL_POLL`, undoes the change
//! and ends it 'cancelled'; an owner that is gone is undone by the take-over
//! (`change/takeover.rs`). The command returns when the change has ended.

use super::{conn, wrong, AdminOutput};
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::partition::store::server_error;
use crate::runtime::Context;
use hscale_route::BackendId;

/// How long the command waits for the owner (or a take-over) to undo the
/// change: a take-over may need a reload interval and a rollback.
const UNDO_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Operation `id`'s journal state and whether it is still running.
async fn state_of(
    ctx: &Context,
    worker: usize,
    id: u64,
) -> Result<Option<(String, bool)>, ProxyError> {
    let q = format!("SELECT state, active IS NOT NULL FROM `hscale`.`operations` WHERE id = {id}");
    let mut main = conn(ctx, worker, BackendId::MAIN).await?;
    Ok(main
        .query_rows(&q)
        .await?
        .map_err(|e| server_error(&main, &q, e))?
        .strings()
        .into_iter()
        .next()
        .map(|r| {
            (
                r[0].clone().unwrap_or_default(),
                r[1].as_deref() == Some("1"),
            )
        }))
}

pub(super) async fn run(ctx: &Context, worker: usize, id: u64) -> Result<AdminOutput, ProxyError> {
    let sql = format!(
        "UPDATE `hscale`.`operations` SET state = 'cancelling' WHERE id = {id} AND state = 'copying' AND active IS NOT NULL"
    );
    // Whether this command (or another cancel, still waiting) asked it.
    let mut asked = {
        let mut main = conn(ctx, worker, BackendId::MAIN).await?;
        match main.command(&BackendConn::payload_for_query(&sql)).await? {
            Ok(ok) => ok.affected_rows == 1,
            Err(e) => return Err(server_error(&main, &sql, e)),
        }
    };
    let started = std::time::Instant::now();
    loop {
        match state_of(ctx, worker, id).await? {
            None => return Err(wrong(format!("there is no operation {id} (HSCALE SHOW OPERATIONS)"))),
            Some((state, true)) if state == "cancelling" => asked = true,
            Some((state, true)) if state == "cutover" => {
                return Err(wrong(format!(
                    "operation {id} is in its cutover and can no longer be cancelled; it finishes on its own"
                )))
            }
            Some((state, _)) if state == "cancelled" && asked => {
                return Ok(AdminOutput::Ok {
                    info: format!("operation {id} cancelled; the table is as it was before it"),
                })
            }
            Some((state, true)) => {
                return Err(wrong(format!("operation {id} is {state} and cannot be cancelled")))
            }
            Some((state, false)) => {
                return Err(wrong(format!("operation {id} has ended ({state}); nothing to cancel")))
            }
        }
        if started.elapsed() > UNDO_WAIT {
            return Err(wrong(format!(
                "operation {id} is asked to stop but has not ended within {} s (HSCALE SHOW OPERATIONS)",
                UNDO_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
