//! `HSCALE EXPLAIN <statement>`: the plan the router makes for it, as
//! rows of (backend, operation, SQL), printed by `Plan::describe`
//! (`hscale_route::router::explain`, checked by the golden plan files).

use hscale_route::router::Plan;

use super::{backend_names, cols, AdminOutput};
use crate::error::ProxyError;
use crate::runtime::Context;

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    session_db: Option<&str>,
    statement: &str,
) -> Result<AdminOutput, ProxyError> {
    let names = backend_names(ctx);
    let d = ctx.partitioning.dictionary();
    let mut plan = hscale_route::router::plan(statement, session_db, &d);
    // Keys the backend weighs, met for the first time: as a statement
    // would, ask for their weights and plan again.
    if d.has_weighed_keys() && hscale_route::weights::has_misses() {
        let keys = hscale_route::weights::take_misses();
        let mut main = super::conn(ctx, worker, hscale_route::BackendId::MAIN).await?;
        crate::partition::weights::fetch(&mut main, keys).await?;
        plan = hscale_route::router::plan(statement, session_db, &d);
    }
    if let Plan::Refuse(why) = plan {
        return Err(ProxyError::Refused(why));
    }
    let rows = plan
        .describe(statement, &names)
        .into_iter()
        .map(|r| vec![Some(r.backend), Some(r.operation), Some(r.sql)])
        .collect();
    Ok(AdminOutput::Rows {
        columns: cols(&["backend", "operation", "sql"]),
        rows,
    })
}
