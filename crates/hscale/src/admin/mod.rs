//! `HSCALE ...` admin commands, one file each, and the statements on
//! partitioned and global tables that change or describe the dictionary
//! itself (DROP TABLE, RENAME TABLE, SHOW TABLES, SHOW CREATE TABLE).
//!
//! A command that changes the dictionary runs under
//! `Partitioning::admin_lock` (one at a time on this proxy): it checks
//! everything against a copy of the dictionary, changes the backends, stores
//! the new dictionary on the main backend, then swaps the snapshot. The
//! mechanics (store, DDL, row copies) live in `crate::partition`; this
//! module decides what to do with them. `session/admin.rs` checks the
//! user's admin flag and writes the answer.

mod add_partition;
pub mod auto_partition;
mod cancel;
mod change;
mod drop_partition;
mod explain;
pub mod figures;
mod move_partition;
mod schema;
mod setup_global_table;
mod setup_table;
mod show;
mod table_ddl;
mod takeover;
mod verify;
pub mod views;

use hscale_route::BackendId;
use std::sync::Arc;

use hscale_route::admin::AdminCommand;
use hscale_route::dictionary::{Dictionary, Partition, PartitionedTable, TableName};
use hscale_route::router::Plan;

use crate::backend::PooledConn;
use crate::error::ProxyError;
use crate::partition::store;
use crate::runtime::Context;
use hscale_wire::response::ErrPacket;

pub use change::is_stale_trigger_error;
pub use schema::{show_create, show_tables};
pub use table_ddl::drop_global;
pub use table_ddl::{drop_table, forget_database, rename_table};
pub use takeover::take_over;

/// What an admin command answers.
pub enum AdminOutput {
    Ok {
        info: String,
    },
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
    },
    /// A schema change on every partition: the partitions' affected rows
    /// and `Records:` counts added up, as one server's ALTER answers.
    Altered {
        affected: u64,
        info: String,
    },
}

impl AdminOutput {
    fn done() -> AdminOutput {
        AdminOutput::Ok {
            info: String::new(),
        }
    }
}

/// Run one admin command.
pub async fn execute(
    ctx: &Context,
    worker: usize,
    session_db: Option<&str>,
    cmd: AdminCommand,
) -> Result<AdminOutput, ProxyError> {
    match cmd {
        AdminCommand::SetupTable {
            table,
            column,
            default_table,
            backend,
            function,
        } => {
            let name = table_name(&table, session_db)?;
            setup_table::run(
                ctx,
                worker,
                name,
                &column,
                &default_table,
                &backend,
                function,
            )
            .await
        }
        AdminCommand::AddPartition {
            table,
            partition,
            value,
            backend,
        } => {
            let name = table_name(&table, session_db)?;
            let wait = std::time::Duration::from_millis(ctx.config.proxy.change_wait_ms);
            add_partition::run(ctx, worker, name, &partition, &value, &backend, wait).await
        }
        AdminCommand::DropPartition { table, partition } => {
            let name = table_name(&table, session_db)?;
            drop_partition::run(ctx, worker, name, &partition).await
        }
        AdminCommand::MovePartition {
            table,
            partition,
            backend,
        } => {
            let name = table_name(&table, session_db)?;
            move_partition::run(ctx, worker, name, &partition, &backend).await
        }
        AdminCommand::ShowOperations => show::operations(ctx, worker).await,
        AdminCommand::ShowTransactions => crate::exec::txn_show::show(ctx, worker).await,
        AdminCommand::CancelOperation { id } => cancel::run(ctx, worker, id).await,
        AdminCommand::AutoPartition { table, placement } => {
            let name = table_name(&table, session_db)?;
            auto_partition::set(ctx, worker, name, placement).await
        }
        AdminCommand::SetupGlobalTable { table } => {
            let name = table_name(&table, session_db)?;
            setup_global_table::run(ctx, worker, name).await
        }
        AdminCommand::ShowTables => show::tables(ctx, worker).await,
        AdminCommand::ShowPartitions { table } => {
            let only = table.map(|t| table_name(&t, session_db)).transpose()?;
            show::partitions(ctx, worker, only).await
        }
        AdminCommand::ShowBackends => Ok(show::backends(ctx)),
        AdminCommand::ShowDigests => Ok(show::digests(ctx)),
        AdminCommand::ShowProxies => {
            let (columns, rows) = crate::fleet::list(ctx, worker).await?;
            Ok(AdminOutput::Rows { columns, rows })
        }
        AdminCommand::ResetDigests => {
            ctx.metrics.digests.reset();
            Ok(AdminOutput::Ok {
                info: "query digests reset".into(),
            })
        }
        AdminCommand::Reload => {
            let d = reload(ctx, worker).await?;
            Ok(AdminOutput::Ok {
                info: format!(
                    "dictionary reloaded: {} partitioned table(s)",
                    d.tables().count()
                ),
            })
        }
        AdminCommand::Explain { statement } => {
            explain::run(ctx, worker, session_db, &statement).await
        }
    }
}

/// Whether the router's plan is a statement the dictionary itself answers
/// ([`run_plan`]) rather than one the executor runs on partitions.
pub fn is_dictionary_plan(plan: &Plan) -> bool {
    matches!(
        plan,
        Plan::DropTable(_)
            | Plan::SchemaChange { .. }
            | Plan::DropGlobal(_)
            | Plan::RenameTable { .. }
            | Plan::ShowTables { .. }
            | Plan::ShowCreate(_)
            | Plan::DropViews { .. }
            | Plan::ShowCreateView(_)
    )
}

/// Carry out a plan the dictionary answers: DROP / RENAME TABLE of a
/// partitioned or global table, DDL on every partition (`sql`, planned
/// again under the table's owner lock), SHOW TABLES, SHOW CREATE TABLE.
pub async fn run_plan(
    ctx: &Context,
    worker: usize,
    plan: Plan,
    sql: &str,
    session_db: Option<&str>,
) -> Result<AdminOutput, ProxyError> {
    match plan {
        Plan::DropTable(name) => drop_table(ctx, worker, &name).await,
        Plan::SchemaChange { table, .. } => {
            table_ddl::schema_change(ctx, worker, &table, sql, session_db).await
        }
        Plan::DropGlobal(name) => drop_global(ctx, worker, &name).await,
        Plan::RenameTable { from, to } => rename_table(ctx, worker, &from, &to).await,
        Plan::ShowTables { db, is_full, like } => {
            show_tables(ctx, worker, &db, is_full, like.as_deref()).await
        }
        Plan::ShowCreate(name) => show_create(ctx, worker, &name).await,
        Plan::DropViews { names, if_exists } => views::drop(ctx, worker, &names, if_exists).await,
        Plan::ShowCreateView(name) => views::show_create(ctx, &name).await,
        _ => Err(wrong("internal: not a dictionary statement")),
    }
}

/// Read the dictionary from the main backend and make it current.
/// Whether a partition change is in its cutover now, by a fresh read of the
/// dictionary and the journal (false when they cannot be read).
pub async fn cutover_under_way(ctx: &Context, worker: usize) -> bool {
    reload(ctx, worker).await.is_ok()
        && !ctx
            .partitioning
            .cutovers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
}

pub async fn reload(ctx: &Context, worker: usize) -> Result<Arc<Dictionary>, ProxyError> {
    let mut c = conn(ctx, worker, BackendId::MAIN).await?;
    if !ctx
        .partitioning
        .is_schema_ready
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        store::ensure_schema(&mut c).await?;
        ctx.partitioning
            .is_schema_ready
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let (d, cutovers) = store::load_with_cutovers(&mut c, &backend_names(ctx)).await?;
    ctx.partitioning.replace(d);
    *ctx.partitioning
        .cutovers
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = cutovers;
    ctx.partitioning
        .is_loaded
        .store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(ctx.partitioning.dictionary())
}

/// Store the change that turned the dictionary into `d` (`statements`,
/// committed with the version raised by compare-and-set from the version
/// `d` was read at), then make `d` current.
async fn commit(
    ctx: &Context,
    worker: usize,
    mut d: Dictionary,
    statements: &[String],
) -> Result<(), ProxyError> {
    let mut main = conn(ctx, worker, BackendId::MAIN).await?;
    d.stored_version = store::commit_change(&mut main, d.stored_version, statements).await?;
    ctx.partitioning.replace(d);
    Ok(())
}

/// A short random pause before applying a change again to a dictionary
/// another proxy moved on (`ProxyError::DictionaryMoved`), growing with
/// `attempts` (up to 20 ms), so that two proxies doing the same do not stay
/// in step.
pub(crate) async fn moved_pause(attempts: u32) {
    let mut b = [0u8; 1];
    let _ = getrandom::fill(&mut b);
    let ms = u64::from(b[0]) % (2 * u64::from(attempts.clamp(1, 10)));
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
}

/// What a statement that ran into a missing table finds after waiting.
#[derive(Debug)]
pub enum Fence {
    /// A newer dictionary: plan the statement again.
    Newer,
    /// The same dictionary and no change in its cutover: the table is
    /// really missing.
    Unchanged,
    /// The same dictionary, and the changes seen in their cutover while
    /// waiting ended without one (rolled back, e.g. a SETUP_GLOBAL_TABLE
    /// whose owner died: its fence triggers are gone): run it again.
    Ended,
    /// Changes still in their cutover after `[proxy] fence_wait_ms`.
    Timeout(String),
}

/// The fence: wait until the stored dictionary is newer than `planned` and
/// no longer names the table `gone` says is missing,
/// reloading it (one reload at a time per proxy, at most every 20 ms) for
/// as long as a change is in its cutover, at most `[proxy] fence_wait_ms`.
pub async fn await_newer_dictionary(
    ctx: &Context,
    worker: usize,
    planned: u64,
    gone: &ErrPacket,
) -> Fence {
    // Newer is not enough: another table's change (or a change of this
    // table's rule) moves the one version on while this table's cutover is
    // still under way, and planning again would meet the same missing
    // table. Progress is a dictionary that no longer routes to the table
    // the backend says is gone: one that no longer names a partition's
    // table, or, for a plain table's name (an in-place SETUP_TABLE renamed
    // it to its default partition), one that has made it partitioned,
    // global or a view hscale keeps (made through another proxy).
    let gone = missing_table(gone);
    let is_newer = || {
        let d = ctx.partitioning.dictionary();
        if d.stored_version <= planned {
            return false;
        }
        let Some((db, t)) = &gone else {
            return true;
        };
        if d.names_physical(db, t) {
            return false;
        }
        let name = TableName::new(db, t);
        ctx.partitioning.was_retired(db, t)
            || d.table(&name).is_some()
            || d.is_global(&name)
            || d.view(&name).is_some()
    };
    let wait = std::time::Duration::from_millis(ctx.config.proxy.fence_wait_ms);
    let since = std::time::Instant::now();
    let deadline = since + wait;
    let every = std::time::Duration::from_millis(20);
    let mut saw_cutover = false;
    loop {
        if is_newer() {
            return Fence::Newer;
        }
        {
            let mut g = ctx.partitioning.fence_gate.lock().await;
            if is_newer() {
                return Fence::Newer;
            }
            if g.last_reload.is_none_or(|t| t.elapsed() >= every) {
                g.last_reload = Some(std::time::Instant::now());
                let found = reload(ctx, worker).await.map(|_| {
                    ctx.partitioning
                        .cutovers
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .clone()
                });
                match found {
                    Ok(c) => g.cutovers = c,
                    Err(e) => {
                        tracing::warn!(error = %e, "fence: cannot read the dictionary");
                        g.cutovers = vec!["an unreadable dictionary".into()];
                    }
                }
            }
            if is_newer() {
                return Fence::Newer;
            }
            // Only a reload that began after the statement failed can say
            // no change is in its cutover: an earlier one (another session's,
            // within `every`) may predate the rename the statement met.
            let is_fresh = g.last_reload.is_some_and(|t| t >= since);
            if is_fresh && !g.cutovers.is_empty() {
                saw_cutover = true;
            }
            if g.cutovers.is_empty() && is_fresh {
                return if saw_cutover {
                    Fence::Ended
                } else {
                    Fence::Unchanged
                };
            }
            if std::time::Instant::now() >= deadline {
                return Fence::Timeout(g.cutovers.join(", "));
            }
        }
        // The next poll, or at once when this proxy makes a new dictionary
        // current (the change's owner commits and reloads it).
        let replaced = ctx.partitioning.replaced.notified();
        tokio::pin!(replaced);
        replaced.as_mut().enable();
        if is_newer() {
            return Fence::Newer;
        }
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = replaced => {}
        }
    }
}

/// The database and table of a 1146 (`Table 'db.t' doesn't exist`), as
/// the backend names it.
pub fn missing_table(err: &ErrPacket) -> Option<(String, String)> {
    let rest = err.message.strip_prefix("Table '")?;
    let name = &rest[..rest.find("' doesn't exist")?];
    let (db, table) = name.split_once('.')?;
    Some((db.to_string(), table.to_string()))
}

/// The periodic reload: skipped while an admin command on this proxy is
/// changing the dictionary (it reloads and swaps itself).
pub async fn reload_if_idle(ctx: &Context, worker: usize) -> Result<(), ProxyError> {
    let Ok(_g) = ctx.partitioning.admin_lock.try_lock() else {
        return Ok(());
    };
    reload(ctx, worker).await.map(|_| ())
}

fn cols(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn wrong(e: impl std::fmt::Display) -> ProxyError {
    ProxyError::Wrong(e.to_string())
}

async fn conn(ctx: &Context, worker: usize, backend: BackendId) -> Result<PooledConn, ProxyError> {
    ctx.pool(worker, backend).get(false).await
}

fn backend_names(ctx: &Context) -> Vec<&str> {
    ctx.config
        .backends
        .iter()
        .map(|b| b.name.as_str())
        .collect()
}

/// `name`'s entry in `d`, or the error that says it is not partitioned.
fn partitioned(d: &Dictionary, name: &TableName) -> Result<PartitionedTable, ProxyError> {
    d.table(name)
        .cloned()
        .ok_or_else(|| wrong(format!("table {name} is not a partitioned table")))
}

/// Partition `partition` of `t`, or the error that says it has none.
fn partition_of(t: &PartitionedTable, partition: &str) -> Result<Partition, ProxyError> {
    t.partitions
        .get(partition)
        .cloned()
        .ok_or_else(|| wrong(format!("table {} has no partition {partition:?}", t.name)))
}

fn table_name(arg: &str, session_db: Option<&str>) -> Result<TableName, ProxyError> {
    match arg.split_once('.') {
        Some((db, t)) => Ok(TableName::new(db.trim_matches('`'), t.trim_matches('`'))),
        None => session_db
            .map(|db| TableName::new(db, arg.trim_matches('`')))
            .ok_or_else(|| {
                wrong(format!(
                    "no database selected: name the table as db.{arg} or USE a database first"
                ))
            }),
    }
}
