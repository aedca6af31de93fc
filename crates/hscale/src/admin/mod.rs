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
mod all_or_nothing;
pub mod auto_partition;
pub mod cache;
mod cancel;
mod change;
mod drop_partition;
mod explain;
mod failover;
mod failover_main;
pub mod figures;
mod move_partition;
mod online_alter;
mod schema;
mod setup_global_table;
mod setup_table;
mod show;
mod switch_journal;
mod switch_servers;
mod table_ddl;
pub mod views;

use hscale_route::BackendId;

use hscale_route::admin::AdminCommand;
use hscale_route::dictionary::{Dictionary, Partition, PartitionedTable, TableName};
use hscale_route::router::Plan;

use crate::backend::PooledConn;
use crate::error::ProxyError;
use crate::partition::refresh::{backend_names, reload};
use crate::partition::store;
use crate::runtime::Context;

pub use change::takeover::take_over;
pub use failover::watch as failover_watch;
pub use schema::{show_create, show_tables};
pub use show::check_definitions;
pub use switch_journal::resume as resume_switches;
pub use table_ddl::drop_global;
pub use table_ddl::{drop_table, forget_database, rename_table};

/// What an admin command answers.
pub enum AdminOutput {
    Ok {
        info: String,
    },
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
    },
    /// Rows under the column definitions a server sent for the same
    /// statement (`SHOW TABLES`, `SHOW CREATE TABLE` of a partitioned
    /// table): one server's metadata, byte for byte, with the proxy's
    /// values.
    Relayed {
        defs: Vec<bytes::Bytes>,
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
/// `cache`: this proxy's result cache (the executor's, `exec/shared_reads.rs`).
pub async fn execute(
    (ctx, cache): (&Context, cache::Cache<'_>),
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
        // The executor's own state: `Exec::run_admin` answers it.
        AdminCommand::ShowTransactions => Err(wrong(
            "internal: HSCALE SHOW TRANSACTIONS is answered by the executor (exec/txn/show.rs)",
        )),
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
        AdminCommand::ShowUsers => Ok(show::users(ctx)),
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
        AdminCommand::CacheTable { table, rule } => {
            let name = table_name(&table, session_db)?;
            cache::cache_table((ctx, cache), worker, name, rule).await
        }
        AdminCommand::UncacheTable { table } => {
            let name = table_name(&table, session_db)?;
            cache::uncache_table((ctx, cache), worker, name).await
        }
        AdminCommand::CacheStatement { statement, rule } => {
            cache::cache_statement((ctx, cache), worker, session_db, &statement, Some(rule)).await
        }
        AdminCommand::UncacheStatement { statement } => {
            cache::cache_statement((ctx, cache), worker, session_db, &statement, None).await
        }
        AdminCommand::FlushCache => Ok(cache::flush(cache)),
        AdminCommand::ShowCache => Ok(cache::show(ctx, cache)),
        AdminCommand::Explain { statement } => {
            explain::run(ctx, worker, session_db, &statement).await
        }
        AdminCommand::Switchover { backend, replica } => {
            let backend = backend
                .resolve(&backend_names(ctx))
                .map_err(|e| wrong(e.to_string()))?;
            failover::switchover(ctx, worker, backend, &replica).await
        }
        AdminCommand::Rejoin { backend, server } => {
            let backend = backend
                .resolve(&backend_names(ctx))
                .map_err(|e| wrong(e.to_string()))?;
            failover::rejoin(ctx, worker, backend, &server).await
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
    sql_mode: Option<&str>,
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
        Plan::ShowCreate(name) => show_create(ctx, worker, &name, sql_mode).await,
        Plan::DropViews { names, if_exists } => views::drop(ctx, worker, &names, if_exists).await,
        Plan::ShowCreateView(name) => views::show_create(ctx, &name).await,
        _ => Err(wrong("internal: not a dictionary statement")),
    }
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

fn cols(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn wrong(e: impl std::fmt::Display) -> ProxyError {
    ProxyError::Wrong(e.to_string())
}

/// A connection for a partition or schema command: it may hold others of
/// the same backend already, so past `max_connections` if the pool is
/// full (`Pool::get_own`).
async fn conn(ctx: &Context, worker: usize, backend: BackendId) -> Result<PooledConn, ProxyError> {
    ctx.pool(worker, backend).get_own().await
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
