//! `HSCALE ADD_PARTITION('t', 'partition', 'value', 'backend')`: map one
//! value of the hashing function to a partition (created if new) and move
//! the default partition's rows with that value there.

use hscale_route::admin::BackendRef;
use hscale_route::dictionary::TableName;

use super::{backend_names, commit, create_like, move_rows, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::store;
use crate::partition::{function_sql, quote_str};
use crate::runtime::Context;

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    name: TableName,
    partition: &str,
    value: &str,
    backend: &BackendRef,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let names = backend_names(ctx);
    let b = backend.resolve(&names).map_err(wrong)?;
    let mut d = (*reload(ctx, worker).await?).clone();
    let value = d
        .table(&name)
        .ok_or_else(|| wrong(format!("table {name} is not a partitioned table")))?
        .partition_value(value)
        .map_err(wrong)?;
    let is_new = d
        .add_partition(&name, partition, &value, b)
        .map_err(wrong)?;
    let t = d
        .table(&name)
        .cloned()
        .ok_or_else(|| wrong("dictionary changed"))?;
    let physical = format!("{}_{partition}", name.table);
    if is_new {
        create_like(
            ctx,
            worker,
            (t.default_backend, &t.default_table),
            &name.db,
            (b, &physical),
        )
        .await?;
    }
    let filter = format!(
        "BINARY CAST({} AS CHAR) = {}",
        function_sql(&t.function, &t.column),
        quote_str(&value)
    );
    move_rows(
        ctx,
        worker,
        &name.db,
        (t.default_backend, &t.default_table),
        (b, &physical),
        &filter,
    )
    .await?;
    let row = store::insert_partition_sql(&name, &value, partition, names[b], &physical);
    commit(ctx, worker, d, &[row]).await?;
    Ok(AdminOutput::Ok {
        info: format!(
            "value {value:?} of {name} is in partition {partition} ({physical} on {})",
            names[b]
        ),
    })
}
