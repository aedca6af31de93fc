//! Statements on partitioned and global tables that the dictionary itself
//! answers: `SHOW [FULL] TABLES`, `SHOW CREATE TABLE` (planned by
//! `hscale_route::router::schema`). DDL of partitioned tables and `DROP
//! TABLE` of a global table are journal operations, in `table_ddl.rs`.

use hscale_route::dictionary::TableName;
use hscale_route::BackendId;

use hscale_wire::resultset;

use super::{conn, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::store::server_error;
use crate::partition::{ddl, quote_ident};
use crate::runtime::Context;

/// `SHOW [FULL] TABLES` in a database with partitioned tables: the main
/// backend's tables without the physical tables of partitioned ones, plus
/// the partitioned tables themselves.
pub async fn show_tables(
    ctx: &Context,
    worker: usize,
    db: &str,
    is_full: bool,
    like: Option<&str>,
) -> Result<AdminOutput, ProxyError> {
    let d = ctx.partitioning.dictionary();
    let mut hidden = std::collections::HashSet::new();
    let mut logical = Vec::new();
    for t in d.tables().filter(|t| t.name.db == db) {
        for target in t.all_targets() {
            hidden.insert(target.physical_table);
        }
        logical.push((t.name.table.clone(), "BASE TABLE"));
    }
    for v in d.views().filter(|v| v.name.db == db) {
        logical.push((v.name.table.clone(), "VIEW"));
    }
    drop(d);
    let mut c = conn(ctx, worker, BackendId::MAIN).await?;
    let full = if is_full { "FULL " } else { "" };
    let sql = format!("SHOW {full}TABLES FROM {}", quote_ident(db));
    let (defs, raw) = c
        .query_raw(&sql)
        .await?
        .map_err(|e| server_error(&c, &sql, e))?;
    let mut rows: Vec<Vec<Option<String>>> = raw
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| v.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()))
                .collect::<Vec<Option<String>>>()
        })
        .filter(|row| {
            row.first()
                .cloned()
                .flatten()
                .is_some_and(|n| !hidden.contains(&n))
        })
        .collect();
    for (name, kind) in logical {
        let mut row = vec![Some(name)];
        if is_full {
            row.push(Some(kind.to_string()));
        }
        rows.push(row);
    }
    if let Some(p) = like {
        rows.retain(|row| {
            row.first()
                .cloned()
                .flatten()
                .is_some_and(|n| hscale_route::router::like_matches(p, &n))
        });
    }
    rows.sort();
    let title = match like {
        Some(p) => format!("Tables_in_{db} ({p})"),
        None => format!("Tables_in_{db}"),
    };
    // The server's definitions (lengths, NOT NULL, the TABLE_NAMES
    // table), the first named as the statement names it.
    let mut defs = defs;
    if let Some(first) = defs.first_mut() {
        *first = resultset::with_name(first, title.as_bytes())
            .map_err(|e| wrong(format!("{sql}: {e}")))?
            .freeze();
    }
    Ok(AdminOutput::Relayed { defs, rows })
}

/// `SHOW CREATE TABLE T`: the default partition's definition, named T,
/// written as the server writes it under the client's `sql_mode`.
pub async fn show_create(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    sql_mode: Option<&str>,
) -> Result<AdminOutput, ProxyError> {
    let d = ctx.partitioning.dictionary();
    let table = d
        .table(name)
        .ok_or_else(|| wrong(format!("table {name} is not a partitioned table")))?;
    let mut c = conn(ctx, worker, table.default_backend).await?;
    let ddl = match ddl::show_create_raw(&mut c, &name.db, &table.default_table, sql_mode).await {
        // The default partition's table was renamed by a change another
        // proxy committed (its cutover) before this proxy reloaded: the
        // fence waits for the newer dictionary and the statement runs
        // again, as every statement routed to a retired table does.
        Err(ProxyError::Backend {
            backend,
            during,
            err,
        }) => {
            let err = crate::partition::refresh::stale_route(true, err)?;
            return Err(ProxyError::Backend {
                backend,
                during,
                err,
            });
        }
        r => r?,
    };
    let (defs, ddl) = ddl;
    // The name in the quotes the server used: double ones under
    // ANSI_QUOTES.
    let ansi = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
    let ddl = [quote_ident, ansi]
        .iter()
        .find_map(|quote| {
            let head = format!("CREATE TABLE {}", quote(&table.default_table));
            let body = ddl.strip_prefix(&head)?;
            Some(format!("CREATE TABLE {}{body}", quote(&name.table)))
        })
        .unwrap_or(ddl);
    // The partition's own AUTO_INCREMENT is not the table's: its sequence
    // hands out the ids.
    let sequence = table
        .auto_column
        .is_some()
        .then_some(table.sequence_generation);
    drop(d);
    let ddl = match sequence {
        Some(generation) => {
            match crate::seq::next_value(ctx.pool(worker, BackendId::MAIN), name, generation)
                .await?
            {
                // One server leaves the option out while it is 1.
                Some(next) if next > 1 => crate::seq::with_auto_increment(&ddl, next),
                _ => ddl,
            }
        }
        None => ddl,
    };
    Ok(AdminOutput::Relayed {
        defs,
        rows: vec![vec![Some(name.table.clone()), Some(ddl)]],
    })
}
