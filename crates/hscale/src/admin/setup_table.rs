//! `HSCALE SETUP_TABLE('t', 'column', 'default_table', 'backend', 'FUNCTION(n)')`:
//! make `t` a partitioned table whose rows all start in its default
//! partition (renamed in place on the main backend, or moved to another).

use hscale_route::HashingFunction;

use hscale_route::admin::BackendRef;
use hscale_route::dictionary::TableName;

use super::{backend_names, commit, conn, create_like, move_rows, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::store::{self, exec};
use crate::partition::{ddl, qualified};
use crate::runtime::Context;

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    name: TableName,
    column: &str,
    default_table: &str,
    backend: &BackendRef,
    function: HashingFunction,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let names = backend_names(ctx);
    let b = backend.resolve(&names).map_err(wrong)?;
    let mut d = (*reload(ctx, worker).await?).clone();
    d.setup_table(name.clone(), column, default_table, b, function.clone())
        .map_err(wrong)?;
    let key_type = {
        let mut main = conn(ctx, worker, 0).await?;
        if !ddl::table_exists(&mut main, &name.db, &name.table).await? {
            return Err(wrong(format!(
                "table {name} does not exist on the main backend"
            )));
        }
        ddl::column_type(&mut main, &name.db, &name.table, column)
            .await?
            .ok_or_else(|| wrong(format!("table {name} has no column {column:?}")))?
    };
    d.set_key_type(&name, &key_type);
    {
        let mut target = conn(ctx, worker, b).await?;
        if ddl::table_exists(&mut target, &name.db, default_table).await? {
            return Err(wrong(format!(
                "table {}.{default_table} already exists on backend {:?}",
                name.db, names[b]
            )));
        }
    }
    if b == 0 {
        let mut main = conn(ctx, worker, 0).await?;
        exec(
            &mut main,
            &[format!(
                "RENAME TABLE {} TO {}",
                qualified(&name.db, &name.table),
                qualified(&name.db, default_table)
            )],
        )
        .await?;
    } else {
        create_like(ctx, worker, (0, &name.table), &name.db, (b, default_table)).await?;
        move_rows(
            ctx,
            worker,
            &name.db,
            (0, &name.table),
            (b, default_table),
            "1 = 1",
        )
        .await?;
        let mut main = conn(ctx, worker, 0).await?;
        exec(
            &mut main,
            &[format!("DROP TABLE {}", qualified(&name.db, &name.table))],
        )
        .await?;
    }
    let row = store::insert_table_sql(&name, column, &function, default_table, names[b], &key_type);
    commit(ctx, worker, d, &[row]).await?;
    Ok(AdminOutput::Ok {
        info: format!("{name} is partitioned by {column} with {function}; default partition {default_table} on {}", names[b]),
    })
}
