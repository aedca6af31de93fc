//! `HSCALE SHOW TABLES`, `HSCALE SHOW PARTITIONS ['t']`, `HSCALE SHOW BACKENDS`.

use hscale_route::dictionary::TableName;
use hscale_route::BackendId;

use super::{backend_names, cols, conn, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::runtime::Context;

/// Every partitioned and global table with its key, function and default partition.
pub(super) async fn tables(ctx: &Context, worker: usize) -> Result<AdminOutput, ProxyError> {
    // What the main backend holds now, not this proxy's last reload.
    super::reload(ctx, worker).await?;
    let names = backend_names(ctx);
    let d = ctx.partitioning.dictionary();
    let mut rows: Vec<Vec<Option<String>>> = d
        .tables()
        .map(|t| {
            vec![
                Some(t.name.to_string()),
                Some(t.column.clone()),
                Some(t.function.to_string()),
                Some(t.default_table.clone()),
                Some(names[t.default_backend.index()].to_string()),
            ]
        })
        .chain(d.globals().map(|g| {
            vec![
                Some(g.to_string()),
                None,
                Some("GLOBAL".to_string()),
                Some(g.table.clone()),
                Some("every backend".to_string()),
            ]
        }))
        .collect();
    rows.sort();
    Ok(AdminOutput::Rows {
        columns: cols(&["table", "column", "function", "default_table", "backend"]),
        rows,
    })
}

/// Every partition (of one table, or of all): value, backend, physical
/// table and the backend's row estimate.
pub(super) async fn partitions(
    ctx: &Context,
    worker: usize,
    only: Option<TableName>,
) -> Result<AdminOutput, ProxyError> {
    let names = backend_names(ctx);
    let d = super::reload(ctx, worker).await?;
    let mut rows = Vec::new();
    let mut tables: Vec<_> = d
        .tables()
        .filter(|t| only.as_ref().is_none_or(|o| *o == t.name))
        .collect();
    if let (Some(o), true) = (&only, tables.is_empty()) {
        return Err(wrong(format!("table {o} is not a partitioned table")));
    }
    tables.sort_by(|a, b| a.name.cmp(&b.name));
    for t in tables {
        // The default partition first: no name, no value.
        let mut entries = vec![(None, None, t.default_backend, t.default_table.clone())];
        for (value, pname) in &t.values {
            if let Some(p) = t.partitions.get(pname) {
                entries.push((
                    Some(pname.clone()),
                    Some(value.clone()),
                    p.backend,
                    p.physical.clone(),
                ));
            }
        }
        for (pname, value, backend, physical) in entries {
            let estimate = {
                let mut c = conn(ctx, worker, backend).await?;
                let sql = format!(
                    "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
                    quote_str(&t.name.db),
                    quote_str(&physical)
                );
                c.query_rows(&sql)
                    .await?
                    .ok()
                    .and_then(|r| r.strings().first().and_then(|r| r[0].clone()))
            };
            rows.push(vec![
                Some(t.name.to_string()),
                pname,
                value,
                Some(names[backend.index()].to_string()),
                Some(physical),
                estimate,
            ]);
        }
    }
    Ok(AdminOutput::Rows {
        columns: cols(&[
            "table",
            "partition",
            "value",
            "backend",
            "physical_table",
            "rows",
        ]),
        rows,
    })
}

/// Every backend with its state and this proxy's connections to it.
pub(super) fn backends(ctx: &Context) -> AdminOutput {
    let rows = ctx
        .config
        .backends
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let (mut open, mut idle, mut up) = (0, 0, true);
            for p in ctx.backend_pools(BackendId::new(i)) {
                let s = p.stats();
                open += s.open;
                idle += s.idle;
                up &= s.is_up;
            }
            vec![
                Some(b.name.clone()),
                Some(b.address.clone()),
                Some(if up { "up" } else { "down" }.to_string()),
                Some(open.to_string()),
                Some(idle.to_string()),
            ]
        })
        .collect();
    AdminOutput::Rows {
        columns: cols(&["name", "address", "status", "open", "idle"]),
        rows,
    }
}

/// `HSCALE SHOW OPERATIONS`: the journal's running changes and the last
/// 50 that ended, newest first.
pub(super) async fn operations(ctx: &Context, worker: usize) -> Result<AdminOutput, ProxyError> {
    let sql =
        "SELECT id, CONCAT(db, '.', tbl), command, state, rows_copied, rows_estimate, backlog, \
               DATE_FORMAT(started_at, '%Y-%m-%d %H:%i:%s.%f'), longest_pause_ms, \
               ranges_verified, ranges_recopied, owner, detail \
               FROM `hscale`.`operations` ORDER BY active IS NULL, id DESC LIMIT 50";
    let mut c = conn(ctx, worker, BackendId::MAIN).await?;
    let r = c
        .query_rows(sql)
        .await?
        .map_err(|e| crate::partition::store::server_error(&c, sql, e))?;
    Ok(AdminOutput::Rows {
        columns: cols(&[
            "id",
            "table",
            "command",
            "state",
            "rows_copied",
            "rows_estimate",
            "backlog",
            "started_at",
            "longest_pause_ms",
            "ranges_verified",
            "ranges_recopied",
            "owner",
            "detail",
        ]),
        rows: r.strings(),
    })
}
