//! `HSCALE MOVE_PARTITION('t', 'partition', 'backend')`: move a partition
//! to another backend while it is read and written (`change.rs`). The
//! partition gets a new table there; the old one retires at the cutover.

use hscale_route::admin::BackendRef;
use hscale_route::dictionary::{generation_name, TableName};

use super::change::{self, Move};
use super::{backend_names, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::store;
use crate::runtime::Context;

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    name: TableName,
    partition: &str,
    backend: &BackendRef,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let names = backend_names(ctx);
    let b = backend.resolve(&names).map_err(wrong)?;
    let before = reload(ctx, worker).await?;
    let t = super::partitioned(&before, &name)?;
    let p = super::partition_of(&t, partition)?;
    if p.backend == b {
        return Err(wrong(format!(
            "partition {partition} of {name} is on backend {} already",
            names[b.index()]
        )));
    }
    let (op, _owner) = match change::start(
        ctx,
        worker,
        &name,
        &format!(
            "MOVE_PARTITION('{name}', '{partition}', '{}')",
            names[b.index()]
        ),
    )
    .await?
    {
        Ok(started) => started,
        Err(done) => return Ok(done),
    };
    let Some((t, p)) = change::recheck(ctx, worker, op, |d| {
        let t = super::partitioned(d, &name)?;
        let p = super::partition_of(&t, partition)?;
        Ok((p.backend != b).then_some((t, p)))
    })
    .await?
    else {
        return Ok(AdminOutput::Ok {
            info: format!(
                "partition {partition} of {name} is on backend {} already",
                names[b.index()]
            ),
        });
    };
    let dst = generation_name(&p.physical, op);
    let m = Move {
        db: name.db.clone(),
        src: (p.backend, p.physical.clone()),
        filter: None,
        dst: (b, dst.clone()),
        is_dst_live: false,
        src_after: generation_name(&format!("{}_retired", p.physical), op),
        rest: None,
        dst_filter: None,
        companion: None,
        key_column: t.column.clone(),
        dictionary: vec![store::move_partition_sql(
            &name,
            partition,
            names[b.index()],
            &dst,
        )],
        reshape: None,
    };
    let report = change::run(ctx, worker, op, &m, |d| {
        d.move_partition(&name, partition, b, &dst).map_err(wrong)?;
        Ok(m.dictionary.clone())
    })
    .await?;
    Ok(change::report_output(
        &report,
        &format!(
            "partition {partition} of {name} is {dst} on {}",
            names[b.index()]
        ),
    ))
}
