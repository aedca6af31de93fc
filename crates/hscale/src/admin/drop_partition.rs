//! `HSCALE DROP_PARTITION('t', 'partition')`: move the partition's rows
//! back into the default partition, drop its table and its values.

use hscale_route::dictionary::TableName;

use super::{commit, conn, move_rows, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::qualified;
use crate::partition::store::{self, exec};
use crate::runtime::Context;

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    name: TableName,
    partition: &str,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let mut d = (*reload(ctx, worker).await?).clone();
    let p = d.drop_partition(&name, partition).map_err(wrong)?;
    let t = d
        .table(&name)
        .cloned()
        .ok_or_else(|| wrong("dictionary changed"))?;
    let physical = p.physical_table(&name.table);
    move_rows(
        ctx,
        worker,
        &name.db,
        (p.backend, &physical),
        (t.default_backend, &t.default_table),
        "1 = 1",
    )
    .await?;
    let mut c = conn(ctx, worker, p.backend).await?;
    exec(
        &mut c,
        &[format!("DROP TABLE {}", qualified(&name.db, &physical))],
    )
    .await?;
    drop(c);
    commit(
        ctx,
        worker,
        d,
        &[store::delete_partition_sql(&name, partition)],
    )
    .await?;
    Ok(AdminOutput::Ok {
        info: format!(
            "partition {partition} of {name} dropped; its rows are back in {}",
            t.default_table
        ),
    })
}
