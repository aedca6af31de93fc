//! `HSCALE SETUP_GLOBAL_TABLE('t')`: copy `t` from the main backend to
//! every other backend and record it as global.

use hscale_route::dictionary::TableName;
use hscale_route::BackendId;

use super::{backend_names, commit, conn, create_like, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::store::{self, exec};
use crate::partition::{copy, ddl, qualified};
use crate::runtime::Context;

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    name: TableName,
) -> Result<AdminOutput, ProxyError> {
    let names = backend_names(ctx);
    let _g = ctx.partitioning.admin_lock.lock().await;
    let mut d = (*reload(ctx, worker).await?).clone();
    d.add_global(name.clone()).map_err(wrong)?;
    {
        let mut main = conn(ctx, worker, BackendId::MAIN).await?;
        if !ddl::table_exists(&mut main, &name.db, &name.table).await? {
            return Err(wrong(format!(
                "table {name} does not exist on the main backend"
            )));
        }
    }
    // A copy on every other backend, replacing whatever is there.
    for b in BackendId::all(names.len()).skip(1) {
        let mut c = conn(ctx, worker, b).await?;
        exec(
            &mut c,
            &[format!(
                "DROP TABLE IF EXISTS {}",
                qualified(&name.db, &name.table)
            )],
        )
        .await?;
        drop(c);
        create_like(
            ctx,
            worker,
            (BackendId::MAIN, &name.table),
            &name.db,
            (b, &name.table),
        )
        .await?;
        let table_q = qualified(&name.db, &name.table);
        let mut src = conn(ctx, worker, BackendId::MAIN).await?;
        let mut dst = conn(ctx, worker, b).await?;
        copy::copy_rows(
            &mut src,
            &format!("SELECT * FROM {table_q}"),
            &mut dst,
            &table_q,
        )
        .await?;
    }
    commit(ctx, worker, d, &[store::insert_global_sql(&name)]).await?;
    Ok(AdminOutput::Ok {
        info: format!(
            "{name} is global: a copy on each of {} backends",
            names.len()
        ),
    })
}
