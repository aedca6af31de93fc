//! Auto-partitioning (HSCALE's "new partitions on the fly", issue 12 item 7).
//!
//! `HSCALE AUTO_PARTITION('t', 'ROUND_ROBIN' | 'FEWEST_ROWS' | 'OFF')` turns
//! it on or off for a partitioned table (`partitioned_tables.auto_partition`
//! in the dictionary). Then a write that names a partition value without a
//! partition goes to the default partition as before, without waiting, and
//! the session posts the value to this proxy's queue
//! (`Partitioning::auto_requests`, `notice`). One task per proxy ([`serve`])
//! creates the partition with the ADD_PARTITION engine (`change.rs`), which
//! carves the value's rows out of the default partition online: so the
//! writes that arrived meanwhile move with it, and the fence covers proxies
//! that still route the value to the default partition.
//!
//! Several proxies racing for one value create one partition: the name is a
//! function of the value (`auto_partition_name`) and ROUND_ROBIN picks the
//! backend from the dictionary, so they issue the same command and the
//! journal makes the later ones wait for the first and report it done
//! (`change::begin`). FEWEST_ROWS may pick different backends on different
//! proxies; the later command is then refused while the first runs, and
//! finds the value placed when it looks again.

use hscale_route::admin::BackendRef;
use hscale_route::dictionary::{auto_partition_name, Placement, TableName};
use hscale_route::BackendId;

use super::{backend_names, commit, conn, partitioned, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::{quote_str, Partitioning};
use crate::runtime::Context;

/// `HSCALE AUTO_PARTITION`: record the rule (or its absence) in the
/// dictionary.
pub(super) async fn set(
    ctx: &Context,
    worker: usize,
    name: TableName,
    placement: Option<Placement>,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let rule = placement.map_or("NULL".to_string(), |p| quote_str(&p.to_string()));
    let sql = format!(
        "UPDATE `hscale`.`partitioned_tables` SET auto_partition = {rule} WHERE db = {} AND tbl = {}",
        quote_str(&name.db),
        quote_str(&name.table)
    );
    // Another proxy's change of any table between the reload and the
    // commit moves the version on: apply the rule again to the dictionary
    // read anew (as journaled changes do, `commit_prepared_with_journal`),
    // after a short random pause so that two proxies doing the same do not
    // stay in step.
    let mut attempts: u32 = 0;
    loop {
        let mut d = (*reload(ctx, worker).await?).clone();
        d.set_auto(&name, placement).map_err(wrong)?;
        match commit(ctx, worker, d, std::slice::from_ref(&sql)).await {
            Err(ProxyError::DictionaryMoved) if attempts < 50 => {
                attempts += 1;
                super::moved_pause(attempts).await;
            }
            r => break r?,
        }
    }
    Ok(AdminOutput::Ok {
        info: match placement {
            Some(p) => format!("{name}: a write of a value without a partition creates one ({p})"),
            None => format!("{name}: auto-partitioning off"),
        },
    })
}

/// After a write into the default partition of a table with
/// auto-partitioning: post the values it named that have no partition.
/// Never waits.
pub fn notice(p: &Partitioning, sql: &str, session_db: Option<&str>) {
    let d = p.dictionary();
    let (unplaced, _) = crate::planning::Learnt::new()
        .attempt(|known| hscale_route::router::unplaced_values(sql, session_db, &d, known));
    if let Some((name, values)) = unplaced {
        for v in values {
            let _ = p.auto_requests.try_send((name.clone(), v));
        }
    }
}

/// The proxy's auto-partitioning task: creates a partition for every value
/// posted, one at a time (duplicates that queued up meanwhile count once).
pub async fn serve(ctx: std::sync::Weak<Context>, worker: usize) {
    let Some(mut rx) = ctx
        .upgrade()
        .and_then(|c| c.partitioning.auto_receiver.lock().ok()?.take())
    else {
        return;
    };
    while let Some(first) = rx.recv().await {
        let mut batch = std::collections::BTreeSet::new();
        batch.insert(first);
        while let Ok(more) = rx.try_recv() {
            batch.insert(more);
        }
        let Some(ctx) = ctx.upgrade() else { return };
        for (name, value) in batch {
            if let Err(e) = create(&ctx, worker, &name, &value).await {
                // The next write of the value posts it again.
                tracing::warn!(table = %name, value = %value.escape_debug(), error = %e, "cannot create a partition for a new value");
            }
        }
    }
}

/// Create the partition of `value` unless it exists (or auto-partitioning
/// was turned off meanwhile).
async fn create(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    value: &str,
) -> Result<(), ProxyError> {
    let d = reload(ctx, worker).await?;
    let t = partitioned(&d, name)?;
    let Some(placement) = t.auto else {
        return Ok(());
    };
    if t.values.contains_key(value) {
        return Ok(());
    }
    let names = backend_names(ctx);
    let backend = match placement {
        Placement::RoundRobin => BackendId::new(t.partitions.len() % names.len()),
        Placement::FewestRows => fewest_rows(ctx, worker, &t).await?,
    };
    let partition = auto_partition_name(value);
    tracing::info!(table = %name, value = %value.escape_debug(), partition, backend = names[backend.index()], "creating a partition for a new value");
    let done = super::add_partition::run(
        ctx,
        worker,
        name.clone(),
        &partition,
        value,
        &BackendRef::Position(backend.number()),
        std::time::Duration::ZERO,
    )
    .await;
    if let Err(e) = done {
        // Another proxy may have placed it (or be placing it) meanwhile.
        let d = reload(ctx, worker).await?;
        if partitioned(&d, name)?.values.contains_key(value) {
            return Ok(());
        }
        return Err(e);
    }
    Ok(())
}

/// The backend holding the fewest rows of `t` (the servers' estimates), the
/// first of equals.
async fn fewest_rows(
    ctx: &Context,
    worker: usize,
    t: &hscale_route::dictionary::PartitionedTable,
) -> Result<BackendId, ProxyError> {
    let mut best = (u64::MAX, BackendId::MAIN);
    for b in ctx.backend_ids() {
        let tables: Vec<String> = t
            .all_targets()
            .into_iter()
            .filter(|x| x.backend == b)
            .map(|x| quote_str(&x.physical_table))
            .collect();
        let rows = if tables.is_empty() {
            0
        } else {
            let sql = format!(
                "SELECT IFNULL(SUM(TABLE_ROWS), 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME IN ({})",
                quote_str(&t.name.db),
                tables.join(", ")
            );
            let mut c = conn(ctx, worker, b).await?;
            c.query_rows(&sql)
                .await?
                .ok()
                .and_then(|r| r.strings().into_iter().next())
                .and_then(|r| r[0].as_deref()?.parse().ok())
                .unwrap_or(0)
        };
        if rows < best.0 {
            best = (rows, b);
        }
    }
    Ok(best.1)
}
