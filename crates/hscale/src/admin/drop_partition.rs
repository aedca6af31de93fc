//! `HSCALE DROP_PARTITION('t', 'partition')`: move the partition's rows
//! back into the default partition, while the table is read and written
//! (`change.rs`); the partition's table retires at the cutover.

use hscale_route::dictionary::{generation_name, TableName};

use super::change::{self, Move};
use super::{reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::{quote_str, store};
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
    let p_retired = generation_name(&format!("{}_retired", p.physical), op);
    let mut m = Move {
        db: name.db.clone(),
        src: (p.backend, p.physical.clone()),
        filter: None,
        dst: (t.default_backend, t.default_table.clone()),
        is_dst_live: true,
        src_after: p_retired,
        rest: None,
        dst_filter: None,
        companion: None,
        key_column: t.column.clone(),
        dictionary: vec![store::delete_partition_sql(&name, partition)],
        reshape: None,
    };
    // Many rows: rather than merge them into the default partition during
    // the cutover (while their writes wait), the default partition is
    // rebuilt beside: its rows and the partition's are copied into a fresh
    // table that becomes the default partition, and both old tables
    // retire. Each table's rows are told apart by the partition's values.
    let many = change::moves_many_rows(
        ctx,
        worker,
        p.backend,
        &m.db,
        &p.physical,
        "1 = 1",
        &t.column,
    )
    .await;
    let mut merged_into = t.default_table.clone();
    match many {
        Ok(false) => {}
        Ok(true) => {
            let new_default = generation_name(&t.default_table, op);
            let d_retired = generation_name(&format!("{}_retired", t.default_table), op);
            if let Some(n) = [&new_default, &d_retired, &m.src_after]
                .into_iter()
                .find(|n| n.len() > 64)
            {
                let e = wrong(format!(
                    "the table name {n} would be longer than 64 characters"
                ));
                change::fail(ctx, worker, op, &e).await;
                return Err(e);
            }
            let values: Vec<String> = t
                .values
                .iter()
                .filter(|(_, q)| q.as_str() == partition)
                .map(|(v, _)| quote_str(v))
                .collect();
            let of_p = change::values_filter(&t, &values);
            m.dictionary
                .push(store::set_default_table_sql(&name, &new_default));
            m.dst.1 = new_default.clone();
            m.is_dst_live = false;
            m.dst_filter = Some(of_p.clone());
            m.companion = Some(Box::new(Move {
                db: name.db.clone(),
                src: (t.default_backend, t.default_table.clone()),
                filter: None,
                dst: (t.default_backend, new_default.clone()),
                is_dst_live: false,
                src_after: d_retired,
                rest: None,
                dst_filter: Some(format!("({of_p}) IS NOT TRUE")),
                companion: None,
                key_column: t.column.clone(),
                dictionary: m.dictionary.clone(),
                reshape: None,
            }));
            merged_into = new_default;
        }
        Err(e) => {
            change::fail(ctx, worker, op, &e).await;
            return Err(e);
        }
    }
    let rebuilt = m.companion.is_some().then(|| merged_into.clone());
    let report = change::run(ctx, worker, op, &m, |d| {
        d.drop_partition(&name, partition).map_err(wrong)?;
        if let Some(t) = &rebuilt {
            d.set_default_table(&name, t).map_err(wrong)?;
        }
        Ok(m.dictionary.clone())
    })
    .await?;
    Ok(change::report_output(
        &report,
        &format!("partition {partition} of {name} dropped; its rows are in {merged_into}"),
    ))
}
