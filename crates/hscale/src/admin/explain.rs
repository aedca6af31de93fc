//! `HSCALE EXPLAIN <statement>`: the plan the router makes for it, as
//! rows of (backend, operation, SQL), printed by `Plan::describe`
//! (`hscale_route::router::explain`, checked by the golden plan files).

use hscale_route::router::Plan;

use super::{backend_names, cols, AdminOutput};
use crate::error::ProxyError;
use crate::planning::{self, Asker, Db, Form};
use crate::runtime::Context;

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    session_db: Option<&str>,
    statement: &str,
) -> Result<AdminOutput, ProxyError> {
    let names = backend_names(ctx);
    let d = ctx.partitioning.dictionary();
    // As a statement would: keys the backend weighs, met for the first
    // time, are asked about, and the statement planned again.
    let plan = planning::plan(
        Asker::proxy(ctx, worker),
        &d,
        statement,
        Db::Given(session_db),
        Form::Plain,
    )
    .await?;
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
