//! `HSCALE ADD_PARTITION('t', 'partition', 'value', 'backend')`: map one
//! value of the hashing function to a partition (created if new) and move
//! the default partition's rows with that value there, while the table is
//! read and written (`change.rs`). The default partition loses keys, so
//! its table gets a new name at the cutover.

use hscale_route::admin::BackendRef;
use hscale_route::dictionary::{generation_name, DictError, TableName};
use hscale_route::BackendId;

use super::change::{self, Move};
use super::{backend_names, conn, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::{function_of, quote_str};
use crate::partition::{store, weights};
use crate::runtime::Context;

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    name: TableName,
    partition: &str,
    value: &str,
    backend: &BackendRef,
    change_wait: std::time::Duration,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let names = backend_names(ctx);
    let b = backend.resolve(&names).map_err(wrong)?;
    let before = reload(ctx, worker).await?;
    let t = super::partitioned(&before, &name)?;
    let value = match t.partition_value(value) {
        // A key the backend weighs: ask it, then place the value.
        Err(DictError::Weight(_)) => {
            let keys = hscale_route::weights::take_misses();
            let mut main = conn(ctx, worker, BackendId::MAIN).await?;
            weights::fetch(&mut main, keys).await?;
            t.partition_value(value)
        }
        other => other,
    }
    .map_err(wrong)?;
    // Check it against a copy first: nothing starts for a refused change.
    (*before)
        .clone()
        .add_partition(&name, partition, &value, b)
        .map_err(wrong)?;
    let command = format!(
        "ADD_PARTITION('{name}', '{partition}', '{value}', '{}')",
        names[b.index()]
    );
    let (op, _owner) = match change::start_within(ctx, worker, &name, &command, change_wait).await?
    {
        Ok(started) => started,
        Err(done) => return Ok(done),
    };
    let Some((t, is_new)) = change::recheck(ctx, worker, op, |d| {
        let t = super::partitioned(d, &name)?;
        let placed = t.values.get(&value).is_some_and(|p| p == partition)
            && t.partitions.get(partition).is_some_and(|p| p.backend == b);
        if placed {
            return Ok(None);
        }
        let is_new = d
            .clone()
            .add_partition(&name, partition, &value, b)
            .map_err(wrong)?;
        Ok(Some((t, is_new)))
    })
    .await?
    else {
        return Ok(AdminOutput::Ok {
            info: format!("value {value:?} of {name} is in partition {partition} already"),
        });
    };
    let (dst, is_dst_live) = match t.partitions.get(partition) {
        Some(p) if !is_new => (p.physical.clone(), true),
        _ => (
            generation_name(&format!("{}_{partition}", name.table), op),
            false,
        ),
    };
    let src_after = generation_name(&t.default_table, op);
    for n in [&dst, &src_after] {
        if n.len() > 64 {
            let e = wrong(format!(
                "the table name {n} would be longer than 64 characters"
            ));
            change::fail(ctx, worker, op, &e).await;
            return Err(e);
        }
    }
    let rows = vec![
        store::insert_partition_sql(&name, &value, partition, names[b.index()], &dst),
        store::set_default_table_sql(&name, &src_after),
    ];
    let m = Move {
        db: name.db.clone(),
        src: (t.default_backend, t.default_table.clone()),
        filter: Some(format!(
            "BINARY CAST({} AS CHAR) = {}",
            function_of(
                &t.function,
                &t.key_compare
                    .as_ref()
                    .map_or_else(|| change::KEY.to_string(), |c| c.sql(change::KEY))
            ),
            quote_str(&value)
        )),
        dst: (b, dst.clone()),
        is_dst_live,
        src_after: src_after.clone(),
        key_column: t.column.clone(),
        dictionary: rows.clone(),
    };
    let report = change::run(ctx, worker, op, &m, |d| {
        let is_new = d
            .add_partition(&name, partition, &value, b)
            .map_err(wrong)?;
        if is_new {
            d.move_partition(&name, partition, b, &dst).map_err(wrong)?;
        }
        d.set_default_table(&name, &src_after).map_err(wrong)?;
        Ok(rows.clone())
    })
    .await?;
    Ok(change::report_output(
        &report,
        &format!(
            "value {value:?} of {name} is in partition {partition} ({dst} on {})",
            names[b.index()]
        ),
    ))
}
