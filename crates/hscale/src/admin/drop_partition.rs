//! `HSCALE DROP_PARTITION('t', 'partition')`: move the partition's rows
//! back into the default partition, while the table is read and written
//! (`change.rs`); the partition's table retires at the cutover.

use hscale_route::dictionary::{generation_name, TableName};

use super::change::{self, Move};
use super::{reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::store;
use crate::runtime::Context;

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    name: TableName,
    partition: &str,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let before = reload(ctx, worker).await?;
    let t = super::partitioned(&before, &name)?;
    super::partition_of(&t, partition)?;
    let (op, _owner) = match change::start(
        ctx,
        worker,
        &name,
        &format!("DROP_PARTITION('{name}', '{partition}')"),
    )
    .await?
    {
        Ok(started) => started,
        Err(done) => return Ok(done),
    };
    let Some((t, p)) = change::recheck(ctx, worker, op, |d| {
        let t = super::partitioned(d, &name)?;
        let p = super::partition_of(&t, partition)?;
        Ok(Some((t, p)))
    })
    .await?
    else {
        return Ok(AdminOutput::Ok {
            info: String::new(),
        });
    };
    let m = Move {
        db: name.db.clone(),
        src: (p.backend, p.physical.clone()),
        filter: None,
        dst: (t.default_backend, t.default_table.clone()),
        is_dst_live: true,
        src_after: generation_name(&format!("{}_retired", p.physical), op),
        key_column: t.column.clone(),
        dictionary: vec![store::delete_partition_sql(&name, partition)],
    };
    let report = change::run(ctx, worker, op, &m, |d| {
        d.drop_partition(&name, partition).map_err(wrong)?;
        Ok(m.dictionary.clone())
    })
    .await?;
    Ok(change::report_output(
        &report,
        &format!(
            "partition {partition} of {name} dropped; its rows are in {}",
            t.default_table
        ),
    ))
}
