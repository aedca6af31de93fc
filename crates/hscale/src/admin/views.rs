//! The views hscale keeps (`hscale_route::view`): CREATE [OR REPLACE] /
//! ALTER VIEW and DROP VIEW store or delete the view in `hscale.views`
//! with the dictionary's version raised (`store::commit_change`), so every
//! proxy sees it at its next reload, and at once where a query on it met
//! error 1146 on the main backend (the fence's reload). SHOW CREATE VIEW
//! answers from the dictionary. The names one server would find taken are
//! checked on the main backend, where views and plain tables live.

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::router::ViewDdl;
use hscale_route::view::{View, ViewError};
use hscale_route::BackendId;

use super::{cols, commit, conn, reload, AdminOutput};
use crate::error::ProxyError;
use crate::partition::store::{self, server_error};
use crate::partition::{quote_ident, quote_str};
use crate::runtime::Context;

/// What the main backend holds under a name.
#[derive(Debug, PartialEq, Eq)]
enum OnMain {
    Nothing,
    View,
    Table,
}

async fn on_main(ctx: &Context, worker: usize, name: &TableName) -> Result<OnMain, ProxyError> {
    let mut c = conn(ctx, worker, BackendId::MAIN).await?;
    let sql = format!(
        "SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
        quote_str(&name.db),
        quote_str(&name.table)
    );
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(&c, &sql, e))?;
    Ok(match r.strings().first().and_then(|r| r[0].clone()) {
        None => OnMain::Nothing,
        Some(t) if t == "VIEW" => OnMain::View,
        Some(_) => OnMain::Table,
    })
}

/// Store a CREATE / ALTER VIEW (`ddl.view` complete: its SELECT's column
/// names read and its definer filled in by the session).
pub async fn create(ctx: &Context, worker: usize, ddl: ViewDdl) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let name = ddl.view.name.clone();
    let mut attempts: u64 = 0;
    loop {
        let mut d = (*reload(ctx, worker).await?).clone();
        let is_table = d.table(&name).is_some() || d.is_global(&name);
        let is_kept = d.view(&name).is_some();
        let main = if is_table || is_kept {
            OnMain::Nothing
        } else {
            on_main(ctx, worker, &name).await?
        };
        let replaces = ddl.or_replace || ddl.is_alter;
        if is_table || main == OnMain::Table {
            return Err(if replaces {
                ViewError::NotView(name).into()
            } else {
                ViewError::Exists(name.table).into()
            });
        }
        if (is_kept || main == OnMain::View) && !replaces {
            if ddl.if_not_exists {
                return Ok(AdminOutput::done());
            }
            return Err(ViewError::Exists(name.table).into());
        }
        if ddl.is_alter && !is_kept && main == OnMain::Nothing {
            return Err(ViewError::NoTable(name).into());
        }
        if reads_itself(&d, &ddl.view) {
            return Err(ViewError::NoTable(name).into());
        }
        d.put_view(ddl.view.clone());
        match commit(ctx, worker, d, &store::put_view_sql(&ddl.view)).await {
            Err(ProxyError::DictionaryMoved) if attempts < 50 => {
                attempts += 1;
                tokio::time::sleep(std::time::Duration::from_millis(attempts.min(10))).await;
                continue;
            }
            r => r?,
        }
        if main == OnMain::View {
            // The backend's own view of that name gives way to the kept one.
            let sql = format!(
                "DROP VIEW IF EXISTS {}.{}",
                quote_ident(&name.db),
                quote_ident(&name.table)
            );
            let mut c = conn(ctx, worker, BackendId::MAIN).await?;
            store::exec(&mut c, &[sql]).await?;
        }
        return Ok(AdminOutput::done());
    }
}

/// Whether the view reads itself through views it reads.
fn reads_itself(d: &Dictionary, v: &View) -> bool {
    let mut stack: Vec<&TableName> = v.reads.iter().collect();
    let mut seen = 0;
    while let Some(n) = stack.pop() {
        if *n == v.name {
            return true;
        }
        seen += 1;
        if seen > 10_000 {
            return true;
        }
        if let Some(w) = d.view(n) {
            stack.extend(w.reads.iter());
        }
    }
    false
}

/// `DROP VIEW [IF EXISTS] names`: the kept views are deleted from the
/// dictionary, the backend's own views dropped on the main backend; the
/// rest (partitioned or global tables too) are unknown views (4092, after
/// the others were dropped, as one server does).
pub async fn drop(
    ctx: &Context,
    worker: usize,
    names: &[TableName],
    if_exists: bool,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let mut unknown = Vec::new();
    let mut on_backend = Vec::new();
    let mut attempts: u64 = 0;
    loop {
        unknown.clear();
        on_backend.clear();
        let mut d = (*reload(ctx, worker).await?).clone();
        let mut statements = Vec::new();
        for n in names {
            if d.remove_view(n) {
                statements.push(store::delete_view_sql(n));
            } else if d.table(n).is_some() || d.is_global(n) {
                unknown.push(n.clone());
            } else if on_main(ctx, worker, n).await? == OnMain::View {
                on_backend.push(n.clone());
            } else {
                unknown.push(n.clone());
            }
        }
        if statements.is_empty() {
            break;
        }
        match commit(ctx, worker, d, &statements).await {
            Err(ProxyError::DictionaryMoved) if attempts < 50 => {
                attempts += 1;
                tokio::time::sleep(std::time::Duration::from_millis(attempts.min(10))).await;
            }
            r => break r?,
        }
    }
    if !on_backend.is_empty() {
        let list: Vec<String> = on_backend
            .iter()
            .map(|n| format!("{}.{}", quote_ident(&n.db), quote_ident(&n.table)))
            .collect();
        let sql = format!("DROP VIEW IF EXISTS {}", list.join(", "));
        let mut c = conn(ctx, worker, BackendId::MAIN).await?;
        store::exec(&mut c, &[sql]).await?;
    }
    if !unknown.is_empty() && !if_exists {
        let list: Vec<String> = unknown.iter().map(ToString::to_string).collect();
        return Err(ViewError::Unknown(list.join(",")).into());
    }
    Ok(AdminOutput::done())
}

/// `SHOW CREATE VIEW V` of a kept view.
pub async fn show_create(ctx: &Context, name: &TableName) -> Result<AdminOutput, ProxyError> {
    let d = ctx.partitioning.dictionary();
    let v = d
        .view(name)
        .ok_or_else(|| ViewError::NoTable(name.clone()))?;
    Ok(AdminOutput::Rows {
        columns: cols(&[
            "View",
            "Create View",
            "character_set_client",
            "collation_connection",
        ]),
        rows: vec![vec![
            Some(v.name.table.clone()),
            Some(v.create_statement()),
            Some("utf8mb4".into()),
            Some("utf8mb4_general_ci".into()),
        ]],
    })
}
