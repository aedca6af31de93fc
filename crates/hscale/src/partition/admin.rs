//! `HSCALE ...` admin commands: change the dictionary, move rows, report.
//!
//! Commands run one at a time (`Partitioning::admin_lock`). A command first
//! checks everything against a copy of the dictionary, then changes the
//! backends, then stores the new dictionary, then swaps the snapshot.
//! Rows move between backends through the proxy in batches; a crash in the
//! middle of a move can leave rows in both places (the online, crash-safe
//! MOVE_PARTITION protocol is a later issue).

use std::sync::Arc;

use hscale_route::admin::{AdminCommand, BackendRef};
use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::router::{Plan, StatementKind};

use super::store::{self, exec};
use super::{function_sql, qualified, quote_str};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::server::Context;

/// What an admin command answers.
pub enum AdminOutput {
    Ok {
        info: String,
    },
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
    },
}

fn cols(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn wrong(e: impl std::fmt::Display) -> ProxyError {
    ProxyError::Wrong(e.to_string())
}

/// Rows moved between backends per INSERT.
const MOVE_BATCH: usize = 500;

async fn conn(ctx: &Context, worker: usize, backend: usize) -> Result<PooledConn, ProxyError> {
    ctx.pool(worker, backend).get(false).await
}

fn backend_names(ctx: &Context) -> Vec<&str> {
    ctx.config
        .backends
        .iter()
        .map(|b| b.name.as_str())
        .collect()
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

async fn table_exists(c: &mut BackendConn, db: &str, table: &str) -> Result<bool, ProxyError> {
    let sql = format!(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
        quote_str(db),
        quote_str(table)
    );
    let r = c.query_rows(&sql).await?.map_err(|e| wrong(e.message))?;
    Ok(r.strings()
        .first()
        .and_then(|r| r[0].clone())
        .is_some_and(|n| n != "0"))
}

/// The column's type as the dictionary keeps it: COLUMN_TYPE, then
/// ` COLLATE name` for string types; `None` if there is no such column.
async fn column_type(
    c: &mut BackendConn,
    db: &str,
    table: &str,
    column: &str,
) -> Result<Option<String>, ProxyError> {
    let sql = format!(
        "SELECT CONCAT(COLUMN_TYPE, IFNULL(CONCAT(' COLLATE ', COLLATION_NAME), '')) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND COLUMN_NAME = {}",
        quote_str(db),
        quote_str(table),
        quote_str(column)
    );
    let r = c.query_rows(&sql).await?.map_err(|e| wrong(e.message))?;
    Ok(r.strings().first().and_then(|r| r[0].clone()))
}

/// Create `dst` on backend `dst_b` with the definition of `src` on `src_b`
/// (if it does not exist yet).
async fn create_like(
    ctx: &Context,
    worker: usize,
    src_b: usize,
    db: &str,
    src: &str,
    dst_b: usize,
    dst: &str,
) -> Result<(), ProxyError> {
    let ddl = {
        let mut c = conn(ctx, worker, src_b).await?;
        let r = c
            .query_rows(&format!("SHOW CREATE TABLE {}", qualified(db, src)))
            .await?
            .map_err(|e| wrong(e.message))?;
        r.strings()
            .first()
            .and_then(|row| row.get(1).cloned().flatten())
            .ok_or_else(|| wrong(format!("SHOW CREATE TABLE {db}.{src} returned nothing")))?
    };
    let head = format!("CREATE TABLE {}", super::quote_ident(src));
    let body = ddl.strip_prefix(&head).ok_or_else(|| {
        wrong(format!(
            "unexpected SHOW CREATE TABLE output for {db}.{src}"
        ))
    })?;
    let create = format!("CREATE TABLE IF NOT EXISTS {}{body}", qualified(db, dst));
    let mut c = conn(ctx, worker, dst_b).await?;
    exec(
        &mut c,
        &[
            format!("CREATE DATABASE IF NOT EXISTS {}", super::quote_ident(db)),
            create,
        ],
    )
    .await
}

/// Copy the rows matching `filter` from `src` on `src_b` into `dst` on
/// another backend, in batches, in one transaction there.
async fn copy_rows(
    ctx: &Context,
    worker: usize,
    db: &str,
    (src_b, src): (usize, &str),
    (dst_b, dst): (usize, &str),
    filter: &str,
) -> Result<(), ProxyError> {
    let (src_q, dst_q) = (qualified(db, src), qualified(db, dst));
    let rows = {
        // The columns' own bytes, whatever state the pooled connection was
        // left in; it is closed afterwards.
        let mut c = conn(ctx, worker, src_b).await?;
        c.is_broken = true;
        exec(&mut c, &["SET character_set_results = NULL".to_string()]).await?;
        c.query_rows(&format!("SELECT * FROM {src_q} WHERE {filter}"))
            .await?
            .map_err(|e| wrong(e.message))?
    };
    if rows.rows.is_empty() {
        return Ok(());
    }
    let mut c = conn(ctx, worker, dst_b).await?;
    let mut statements = vec!["BEGIN".to_string()];
    statements.extend(super::insert_statements(&dst_q, &rows, MOVE_BATCH));
    statements.push("COMMIT".into());
    exec(&mut c, &statements).await
}

/// Move the rows matching `filter` from `src` to `dst` (same database).
async fn move_rows(
    ctx: &Context,
    worker: usize,
    db: &str,
    (src_b, src): (usize, &str),
    (dst_b, dst): (usize, &str),
    filter: &str,
) -> Result<(), ProxyError> {
    let (src_q, dst_q) = (qualified(db, src), qualified(db, dst));
    if src_b == dst_b {
        let mut c = conn(ctx, worker, src_b).await?;
        return exec(
            &mut c,
            &[
                "BEGIN".into(),
                format!("INSERT INTO {dst_q} SELECT * FROM {src_q} WHERE {filter}"),
                format!("DELETE FROM {src_q} WHERE {filter}"),
                "COMMIT".into(),
            ],
        )
        .await;
    }
    copy_rows(ctx, worker, db, (src_b, src), (dst_b, dst), filter).await?;
    let mut c = conn(ctx, worker, src_b).await?;
    exec(&mut c, &[format!("DELETE FROM {src_q} WHERE {filter}")]).await
}

/// Read the dictionary from the main backend and make it current.
pub async fn reload(ctx: &Context, worker: usize) -> Result<Arc<Dictionary>, ProxyError> {
    let mut c = conn(ctx, worker, 0).await?;
    let d = store::load(&mut c, &backend_names(ctx)).await?;
    ctx.partitioning.replace(d);
    ctx.partitioning
        .is_loaded
        .store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(ctx.partitioning.dictionary())
}

/// `DROP TABLE T` for a partitioned table: every physical table, then the
/// dictionary entry.
pub async fn drop_table(
    ctx: &Context,
    worker: usize,
    name: &TableName,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let mut d = (*reload(ctx, worker).await?).clone();
    let table = d
        .table(name)
        .cloned()
        .ok_or_else(|| wrong(format!("table {name} is not a partitioned table")))?;
    for t in table.all_targets() {
        let mut c = conn(ctx, worker, t.backend).await?;
        exec(
            &mut c,
            &[format!(
                "DROP TABLE IF EXISTS {}",
                qualified(&name.db, &t.physical_table)
            )],
        )
        .await?;
    }
    let mut main = conn(ctx, worker, 0).await?;
    exec(&mut main, &store::delete_table_sql(name)).await?;
    d.remove_table(name);
    ctx.partitioning.replace(d);
    Ok(AdminOutput::Ok {
        info: String::new(),
    })
}

/// What the proxy does with the partitions' rows, for HSCALE EXPLAIN.
fn merge_description(m: &hscale_route::router::MergePlan) -> String {
    use hscale_route::router::{Mode, Output};
    let mut steps = Vec::new();
    match &m.mode {
        Mode::Sort { .. } if m.order.is_empty() => {
            steps.push(format!("concatenate {} partitions", m.parts.len()))
        }
        Mode::Sort { .. } => steps.push(format!(
            "k-way merge of {} sorted partitions on {} key(s)",
            m.parts.len(),
            m.order.len()
        )),
        Mode::Group(g) => {
            let aggs: Vec<&str> = g
                .outputs
                .iter()
                .filter_map(|o| match o {
                    Output::Key(_) => None,
                    Output::Count(_) => Some("COUNT (sum of counts)"),
                    Output::Sum(_) => Some("SUM (sum of sums)"),
                    Output::Min(_) => Some("MIN"),
                    Output::Max(_) => Some("MAX"),
                    Output::Avg { .. } => Some("AVG (sum of sums / sum of counts)"),
                    Output::BitAnd(_) => Some("BIT_AND"),
                    Output::BitOr(_) => Some("BIT_OR"),
                    Output::BitXor(_) => Some("BIT_XOR"),
                    Output::CountDistinct(_) => Some("COUNT(DISTINCT) (distinct values gathered)"),
                    Output::GroupConcat { .. } => Some("GROUP_CONCAT (partial lists joined)"),
                })
                .collect();
            steps.push(format!(
                "combine partial groups of {} fragments on {} key(s){}{}",
                m.parts.len(),
                g.keys.len(),
                if aggs.is_empty() { "" } else { ": " },
                aggs.join(", ")
            ));
            if !m.order.is_empty() {
                steps.push(format!("sort on {} key(s)", m.order.len()));
            }
        }
    }
    if m.offset > 0 {
        steps.push(format!("skip {}", m.offset));
    }
    if let Some(l) = m.limit {
        steps.push(format!("limit {l}"));
    }
    steps.join("; ")
}

/// `RENAME TABLE T TO U`: every physical table `T_p` becomes `U_p` (and a
/// default table `T_x` becomes `U_x`), then the dictionary follows. All
/// new names are checked free first.
pub async fn rename_table(
    ctx: &Context,
    worker: usize,
    from: &TableName,
    to: &TableName,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let mut d = (*reload(ctx, worker).await?).clone();
    let table = d
        .table(from)
        .cloned()
        .ok_or_else(|| wrong(format!("table {from} is not a partitioned table")))?;
    let renamed = {
        let mut copy = d.clone();
        copy.rename_table(from, to).map_err(wrong)?
    };
    let pairs: Vec<_> = table
        .all_targets()
        .into_iter()
        .zip(renamed.all_targets())
        .collect();
    let mut main = conn(ctx, worker, 0).await?;
    if table_exists(&mut main, &to.db, &to.table).await? {
        return Err(wrong(format!("table {to} already exists")));
    }
    drop(main);
    for (old, new) in &pairs {
        let mut c = conn(ctx, worker, new.backend).await?;
        if old.physical_table != new.physical_table
            && table_exists(&mut c, &to.db, &new.physical_table).await?
        {
            return Err(wrong(format!(
                "table {}.{} already exists on backend {}",
                to.db, new.physical_table, ctx.config.backends[new.backend].name
            )));
        }
    }
    for (old, new) in &pairs {
        if old.physical_table == new.physical_table {
            continue;
        }
        let mut c = conn(ctx, worker, old.backend).await?;
        exec(
            &mut c,
            &[format!(
                "RENAME TABLE {} TO {}",
                qualified(&from.db, &old.physical_table),
                qualified(&to.db, &new.physical_table)
            )],
        )
        .await?;
    }
    let mut main = conn(ctx, worker, 0).await?;
    exec(
        &mut main,
        &store::rename_table_sql(from, to, &renamed.default_table),
    )
    .await?;
    d.rename_table(from, to).map_err(wrong)?;
    ctx.partitioning.replace(d);
    Ok(AdminOutput::Ok {
        info: String::new(),
    })
}

/// `DROP TABLE G` for a global table: every copy, then its entry.
pub async fn drop_global(
    ctx: &Context,
    worker: usize,
    name: &TableName,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let mut d = (*reload(ctx, worker).await?).clone();
    if !d.remove_global(name) {
        return Err(wrong(format!("table {name} is not a global table")));
    }
    for b in 0..ctx.config.backends.len() {
        let mut c = conn(ctx, worker, b).await?;
        exec(
            &mut c,
            &[format!(
                "DROP TABLE IF EXISTS {}",
                qualified(&name.db, &name.table)
            )],
        )
        .await?;
    }
    let mut main = conn(ctx, worker, 0).await?;
    exec(&mut main, &[store::delete_global_sql(name)]).await?;
    ctx.partitioning.replace(d);
    Ok(AdminOutput::Ok {
        info: String::new(),
    })
}

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
        logical.push(t.name.table.clone());
    }
    let mut c = conn(ctx, worker, 0).await?;
    let full = if is_full { "FULL " } else { "" };
    let r = c
        .query_rows(&format!(
            "SHOW {full}TABLES FROM {}",
            super::quote_ident(db)
        ))
        .await?
        .map_err(|e| wrong(e.message))?;
    let mut rows: Vec<Vec<Option<String>>> = r
        .strings()
        .into_iter()
        .filter(|row| {
            row.first()
                .cloned()
                .flatten()
                .is_some_and(|n| !hidden.contains(&n))
        })
        .collect();
    for name in logical {
        let mut row = vec![Some(name)];
        if is_full {
            row.push(Some("BASE TABLE".to_string()));
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
    let mut columns = vec![title];
    if is_full {
        columns.push("Table_type".to_string());
    }
    Ok(AdminOutput::Rows { columns, rows })
}

/// `SHOW CREATE TABLE T`: the default partition's definition, named T.
pub async fn show_create(
    ctx: &Context,
    worker: usize,
    name: &TableName,
) -> Result<AdminOutput, ProxyError> {
    let d = ctx.partitioning.dictionary();
    let table = d
        .table(name)
        .ok_or_else(|| wrong(format!("table {name} is not a partitioned table")))?;
    let mut c = conn(ctx, worker, table.default_backend).await?;
    let r = c
        .query_rows(&format!(
            "SHOW CREATE TABLE {}",
            qualified(&name.db, &table.default_table)
        ))
        .await?
        .map_err(|e| wrong(e.message))?;
    let ddl = r
        .strings()
        .first()
        .and_then(|row| row.get(1).cloned().flatten())
        .ok_or_else(|| wrong("SHOW CREATE TABLE returned nothing"))?;
    let head = format!("CREATE TABLE {}", super::quote_ident(&table.default_table));
    let ddl = match ddl.strip_prefix(&head) {
        Some(body) => format!("CREATE TABLE {}{body}", super::quote_ident(&name.table)),
        None => ddl,
    };
    Ok(AdminOutput::Rows {
        columns: cols(&["Table", "Create Table"]),
        rows: vec![vec![Some(name.table.clone()), Some(ddl)]],
    })
}

/// The periodic reload: skipped while an admin command on this proxy is
/// changing the dictionary (it reloads and swaps itself).
pub async fn reload_if_idle(ctx: &Context, worker: usize) -> Result<(), ProxyError> {
    let Ok(_g) = ctx.partitioning.admin_lock.try_lock() else {
        return Ok(());
    };
    reload(ctx, worker).await.map(|_| ())
}

/// Run one admin command.
pub async fn execute(
    ctx: &Context,
    worker: usize,
    session_db: Option<&str>,
    cmd: AdminCommand,
) -> Result<AdminOutput, ProxyError> {
    let names = backend_names(ctx);
    let resolve = |b: &BackendRef| b.resolve(&names).map_err(wrong);
    match cmd {
        AdminCommand::SetupTable {
            table,
            column,
            default_table,
            backend,
            function,
        } => {
            let _g = ctx.partitioning.admin_lock.lock().await;
            let name = table_name(&table, session_db)?;
            let b = resolve(&backend)?;
            let mut d = (*reload(ctx, worker).await?).clone();
            d.setup_table(name.clone(), &column, &default_table, b, function.clone())
                .map_err(wrong)?;
            let key_type = {
                let mut main = conn(ctx, worker, 0).await?;
                if !table_exists(&mut main, &name.db, &name.table).await? {
                    return Err(wrong(format!(
                        "table {name} does not exist on the main backend"
                    )));
                }
                column_type(&mut main, &name.db, &name.table, &column)
                    .await?
                    .ok_or_else(|| wrong(format!("table {name} has no column {column:?}")))?
            };
            d.set_key_type(&name, &key_type);
            {
                let mut target = conn(ctx, worker, b).await?;
                if table_exists(&mut target, &name.db, &default_table).await? {
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
                        qualified(&name.db, &default_table)
                    )],
                )
                .await?;
            } else {
                create_like(ctx, worker, 0, &name.db, &name.table, b, &default_table).await?;
                move_rows(
                    ctx,
                    worker,
                    &name.db,
                    (0, &name.table),
                    (b, &default_table),
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
            let mut main = conn(ctx, worker, 0).await?;
            exec(
                &mut main,
                &[store::insert_table_sql(
                    &name,
                    &column,
                    &function,
                    &default_table,
                    names[b],
                    &key_type,
                )],
            )
            .await?;
            ctx.partitioning.replace(d);
            Ok(AdminOutput::Ok {
                info: format!("{name} is partitioned by {column} with {function}; default partition {default_table} on {}", names[b]),
            })
        }
        AdminCommand::AddPartition {
            table,
            partition,
            value,
            backend,
        } => {
            let _g = ctx.partitioning.admin_lock.lock().await;
            let name = table_name(&table, session_db)?;
            let b = resolve(&backend)?;
            let mut d = (*reload(ctx, worker).await?).clone();
            let value = d
                .table(&name)
                .ok_or_else(|| wrong(format!("table {name} is not a partitioned table")))?
                .partition_value(&value)
                .map_err(wrong)?;
            let is_new = d
                .add_partition(&name, &partition, &value, b)
                .map_err(wrong)?;
            let t = d
                .table(&name)
                .cloned()
                .ok_or_else(|| wrong("dictionary changed"))?;
            let physical = format!("{}_{partition}", name.table);
            if is_new {
                create_like(
                    ctx,
                    worker,
                    t.default_backend,
                    &name.db,
                    &t.default_table,
                    b,
                    &physical,
                )
                .await?;
            }
            let filter = format!(
                "BINARY CAST({} AS CHAR) = {}",
                function_sql(&t.function, &t.column),
                quote_str(&value)
            );
            move_rows(
                ctx,
                worker,
                &name.db,
                (t.default_backend, &t.default_table),
                (b, &physical),
                &filter,
            )
            .await?;
            let mut main = conn(ctx, worker, 0).await?;
            exec(
                &mut main,
                &[store::insert_partition_sql(
                    &name, &value, &partition, names[b],
                )],
            )
            .await?;
            ctx.partitioning.replace(d);
            Ok(AdminOutput::Ok {
                info: format!(
                    "value {value:?} of {name} is in partition {partition} ({physical} on {})",
                    names[b]
                ),
            })
        }
        AdminCommand::DropPartition { table, partition } => {
            let _g = ctx.partitioning.admin_lock.lock().await;
            let name = table_name(&table, session_db)?;
            let mut d = (*reload(ctx, worker).await?).clone();
            let p = d.drop_partition(&name, &partition).map_err(wrong)?;
            let t = d
                .table(&name)
                .cloned()
                .ok_or_else(|| wrong("dictionary changed"))?;
            let physical = p.physical_table(&name.table);
            move_rows(
                ctx,
                worker,
                &name.db,
                (p.backend, &physical),
                (t.default_backend, &t.default_table),
                "1 = 1",
            )
            .await?;
            let mut c = conn(ctx, worker, p.backend).await?;
            exec(
                &mut c,
                &[format!("DROP TABLE {}", qualified(&name.db, &physical))],
            )
            .await?;
            drop(c);
            let mut main = conn(ctx, worker, 0).await?;
            exec(&mut main, &[store::delete_partition_sql(&name, &partition)]).await?;
            ctx.partitioning.replace(d);
            Ok(AdminOutput::Ok {
                info: format!(
                    "partition {partition} of {name} dropped; its rows are back in {}",
                    t.default_table
                ),
            })
        }
        AdminCommand::ShowTables => {
            let d = ctx.partitioning.dictionary();
            let mut rows: Vec<Vec<Option<String>>> = d
                .tables()
                .map(|t| {
                    vec![
                        Some(t.name.to_string()),
                        Some(t.column.clone()),
                        Some(t.function.to_string()),
                        Some(t.default_table.clone()),
                        Some(names[t.default_backend].to_string()),
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
        AdminCommand::ShowPartitions { table } => {
            let d = ctx.partitioning.dictionary();
            let only = table.map(|t| table_name(&t, session_db)).transpose()?;
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
                for (value, pname) in &t.values {
                    let Some(p) = t.partitions.get(pname) else {
                        continue;
                    };
                    let physical = p.physical_table(&t.name.table);
                    let estimate = {
                        let mut c = conn(ctx, worker, p.backend).await?;
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
                        Some(pname.clone()),
                        Some(value.clone()),
                        Some(names[p.backend].to_string()),
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
        AdminCommand::ShowBackends => {
            let rows = ctx
                .config
                .backends
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let (mut open, mut idle, mut up) = (0, 0, true);
                    for p in ctx.backend_pools(i) {
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
            Ok(AdminOutput::Rows {
                columns: cols(&["name", "address", "status", "open", "idle"]),
                rows,
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
            let d = ctx.partitioning.dictionary();
            let rows = match hscale_route::router::plan(&statement, session_db, &d) {
                Plan::Passthrough => vec![vec![
                    Some(names[0].to_string()),
                    Some("passthrough".to_string()),
                    Some(statement.clone()),
                ]],
                Plan::Refuse(why) => return Err(ProxyError::Refused(why)),
                Plan::DropTable(t) => vec![vec![
                    Some(names[0].to_string()),
                    Some(format!(
                        "drop every partition of {t} and its dictionary entry"
                    )),
                    Some(statement.clone()),
                ]],
                Plan::ShowTables { db, .. } => vec![vec![
                    Some(names[0].to_string()),
                    Some(format!(
                        "tables of {db} with partitioned tables shown as one"
                    )),
                    Some(statement.clone()),
                ]],
                Plan::GlobalWrite { table, sql } => names
                    .iter()
                    .map(|n| {
                        vec![
                            Some(n.to_string()),
                            Some(format!("copy of global table {table}")),
                            Some(sql.clone()),
                        ]
                    })
                    .collect(),
                Plan::DropGlobal(t) => vec![vec![
                    Some("every backend".to_string()),
                    Some(format!("drop every copy of global table {t} and its entry")),
                    Some(statement.clone()),
                ]],
                Plan::Merge(m) => {
                    let mut rows: Vec<Vec<Option<String>>> = Vec::new();
                    if let hscale_route::router::Mode::Group(g) = &m.mode {
                        rows.push(vec![
                            Some(names[g.meta.0.backend].to_string()),
                            Some("column definitions".to_string()),
                            Some(g.meta.1.clone()),
                        ]);
                    }
                    for ship in &m.ship {
                        for (t, sql) in &ship.sources {
                            rows.push(vec![
                                Some(names[t.backend].to_string()),
                                Some(format!(
                                    "ship into temporary table {} on every part",
                                    ship.temp
                                )),
                                Some(sql.clone()),
                            ]);
                        }
                    }
                    for (t, sql) in &m.parts {
                        rows.push(vec![
                            Some(names[t.backend].to_string()),
                            Some(format!("fragment: {}", t.physical_table)),
                            Some(sql.clone()),
                        ]);
                    }
                    rows.push(vec![
                        Some("proxy".to_string()),
                        Some("merge".to_string()),
                        Some(merge_description(&m)),
                    ]);
                    rows
                }
                Plan::Relabeled {
                    target,
                    sql,
                    from,
                    to,
                } => vec![vec![
                    Some(names[target.backend].to_string()),
                    Some(format!("single partition, {from} shown as {to}")),
                    Some(sql),
                ]],
                Plan::RenameTable { from, to } => vec![vec![
                    Some(names[0].to_string()),
                    Some(format!(
                        "rename every partition of {from} to {to} and its dictionary entry"
                    )),
                    Some(statement.clone()),
                ]],
                Plan::ShowCreate(t) => vec![vec![
                    Some(names[0].to_string()),
                    Some(format!("definition of {t} from its default partition")),
                    Some(statement.clone()),
                ]],
                Plan::Targets { kind, parts } => {
                    let how = match (kind, parts.len()) {
                        (_, 1) => "single partition",
                        (StatementKind::Select, _) => "concatenate rows",
                        (StatementKind::Schema, _) => "on every partition",
                        (_, _) => "add up affected rows",
                    };
                    parts
                        .into_iter()
                        .map(|(t, sql)| {
                            vec![
                                Some(names[t.backend].to_string()),
                                Some(format!("{how}: {}", t.physical_table)),
                                Some(sql),
                            ]
                        })
                        .collect()
                }
            };
            Ok(AdminOutput::Rows {
                columns: cols(&["backend", "operation", "sql"]),
                rows,
            })
        }
        AdminCommand::SetupGlobalTable { table } => {
            let _g = ctx.partitioning.admin_lock.lock().await;
            let name = table_name(&table, session_db)?;
            let mut d = (*reload(ctx, worker).await?).clone();
            d.add_global(name.clone()).map_err(wrong)?;
            {
                let mut main = conn(ctx, worker, 0).await?;
                if !table_exists(&mut main, &name.db, &name.table).await? {
                    return Err(wrong(format!(
                        "table {name} does not exist on the main backend"
                    )));
                }
            }
            // A copy on every other backend, replacing whatever is there.
            for b in 1..names.len() {
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
                create_like(ctx, worker, 0, &name.db, &name.table, b, &name.table).await?;
                copy_rows(
                    ctx,
                    worker,
                    &name.db,
                    (0, &name.table),
                    (b, &name.table),
                    "1 = 1",
                )
                .await?;
            }
            let mut main = conn(ctx, worker, 0).await?;
            exec(&mut main, &[store::insert_global_sql(&name)]).await?;
            ctx.partitioning.replace(d);
            Ok(AdminOutput::Ok {
                info: format!(
                    "{name} is global: a copy on each of {} backends",
                    names.len()
                ),
            })
        }
    }
}
