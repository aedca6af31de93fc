//! `HSCALE ADD_PARTITION('t', 'partition', 'value', 'backend')`: map one
//! value of the hashing function to a partition (created if new) and move
//! the default partition's rows with that value there, while the table is
//! read and written (`change.rs`). The default partition loses keys, so
//! its table gets a new name at the cutover.

use hscale_route::admin::BackendRef;
use hscale_route::dictionary::{generation_name, Partition, PartitionedTable, TableName};

use super::change::{self, Move};
use super::{backend_names, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::partition::store;
use crate::planning::{Asker, Learnt};
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
    let value = place_value(ctx, worker, &t, value).await?;
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
    let filter = change::values_filter(&t, &[quote_str(&value)]);
    // Many moving rows: rather than delete them from the default partition
    // (and merge them into a partition that holds other values) during the
    // cutover, while writes wait, the tables that keep rows are rebuilt
    // beside: the default partition's other rows are copied into its next
    // generation (`Move::rest`), and a shared partition's own rows are
    // copied with the moving ones into a fresh table (`Move::companion`).
    let many = moves_many(ctx, worker, op, &t, &name, &filter).await?;
    let shared = t.partitions.get(partition).filter(|_| !is_new);
    let (dst, is_dst_live) = destination(&name, partition, shared, many, op);
    let src_after = generation_name(&t.default_table, op);
    let retired = generation_name(&format!("{}_retired", t.default_table), op);
    let shared_retired = shared.map(|p| generation_name(&format!("{}_retired", p.physical), op));
    let too_long = [&dst, &src_after, &retired]
        .into_iter()
        .chain(shared_retired.as_ref())
        .find(|n| n.len() > 64);
    if let Some(n) = too_long {
        let e = wrong(format!(
            "the table name {n} would be longer than 64 characters"
        ));
        change::fail(ctx, worker, op, &e).await;
        return Err(e);
    }
    let backend = names[b.index()];
    let mut rows = vec![
        store::insert_partition_sql(&name, &value, partition, backend, &dst),
        store::set_default_table_sql(&name, &src_after),
    ];
    let is_rebuilt = shared.is_some() && many;
    if is_rebuilt {
        rows.push(store::move_partition_sql(&name, partition, backend, &dst));
    }
    let mut m = Move {
        db: name.db.clone(),
        src: (t.default_backend, t.default_table.clone()),
        filter: Some(filter.clone()),
        dst: (b, dst.clone()),
        is_dst_live,
        src_after: src_after.clone(),
        rest: None,
        dst_filter: None,
        companion: None,
        key_column: t.column.clone(),
        dictionary: rows.clone(),
        reshape: None,
    };
    if many {
        m.rest = Some(src_after.clone());
        m.src_after = retired;
    }
    if let (Some(p), Some(p_retired), true) = (shared, shared_retired, many) {
        m.dst_filter = Some(filter.clone());
        m.companion = Some(Box::new(Move {
            db: name.db.clone(),
            src: (p.backend, p.physical.clone()),
            filter: None,
            dst: (b, dst.clone()),
            is_dst_live: false,
            src_after: p_retired,
            rest: None,
            dst_filter: Some(format!("({filter}) IS NOT TRUE")),
            companion: None,
            key_column: t.column.clone(),
            dictionary: rows.clone(),
            reshape: None,
        }));
    }
    let report = change::run(ctx, worker, op, &m, |d| {
        let is_new = d
            .add_partition(&name, partition, &value, b)
            .map_err(wrong)?;
        if is_new || is_rebuilt {
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

/// The value of the hashing function `value` names for table `t`: a key
/// the backend weighs is asked for first (`planning::Learnt`).
async fn place_value(
    ctx: &Context,
    worker: usize,
    t: &PartitionedTable,
    value: &str,
) -> Result<String, ProxyError> {
    let mut learnt = Learnt::new();
    let mut asker = Asker::proxy(ctx, worker);
    loop {
        let (v, questions) = learnt.attempt(|known| t.partition_value(value, known));
        if !learnt.ask(&mut asker, questions, v.is_ok()).await? {
            break v;
        }
    }
    .map_err(wrong)
}

/// The table the moving rows go to, and whether it is a live partition's
/// (a shared partition, not rebuilt because few rows move) or a fresh
/// table of change `op`.
fn destination(
    name: &TableName,
    partition: &str,
    shared: Option<&Partition>,
    many: bool,
    op: u64,
) -> (String, bool) {
    match shared {
        Some(p) if !many => (p.physical.clone(), true),
        Some(p) => (generation_name(&p.physical, op), false),
        None => (
            generation_name(&format!("{}_{partition}", name.table), op),
            false,
        ),
    }
}

/// Whether many of the default partition's rows match `filter` (see
/// `change::moves_many_rows`); a failure to tell ends change `op`.
async fn moves_many(
    ctx: &Context,
    worker: usize,
    op: u64,
    t: &PartitionedTable,
    name: &TableName,
    filter: &str,
) -> Result<bool, ProxyError> {
    let many = change::moves_many_rows(
        ctx,
        worker,
        t.default_backend,
        &name.db,
        &t.default_table,
        filter,
        &t.column,
    )
    .await;
    if let Err(e) = &many {
        change::fail(ctx, worker, op, e).await;
    }
    many
}
