//! The result cache's commands (`exec/cache.rs` serves the reads):
//! `HSCALE CACHE_TABLE('t', 'EXACT' | 'TTL', ms)`, `HSCALE
//! UNCACHE_TABLE('t')`, `HSCALE CACHE_STATEMENT('SELECT ...', 'EXACT' |
//! 'TTL', ms)`, `UNCACHE_STATEMENT`, `HSCALE FLUSH CACHE` and `HSCALE
//! SHOW CACHE`.
//!
//! A table's rule is kept in the dictionary (`hscale.cached_tables` on the
//! main backend), so every proxy of the fleet caches the same tables. An
//! EXACT table gets three triggers on each of its physical tables (every
//! partition, every global copy, or the one table), AFTER INSERT, UPDATE
//! and DELETE, that bump the table's rows in `hscale.cache_versions` on
//! that backend in the writer's transaction; they are put in place before
//! the rule is stored, and dropped after it is removed. MariaDB runs
//! several triggers per event (since 10.2.3): a user's own triggers stay
//! and run before ours. Physical tables a partition change or an online
//! ALTER creates later get them from the first proxy that stores an
//! answer under the new dictionary version (`ResultCache::arm`).

use hscale_route::dictionary::{CacheRule, TableName};
use hscale_route::BackendId;
use hscale_wire::response::ErrPacket;

use super::{commit, conn, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::metrics::exposition::CacheSample;
use crate::partition::versions::{
    arm, clear_marks, disarm, exact_statement_tables, is_read_by, physical_tables, Physical, RULES,
    STATEMENTS,
};
use crate::partition::{quote_str, store};
use crate::runtime::Context;

/// This proxy's result cache as its commands use it: the executor's
/// `ResultCache` (`exec/cache.rs`), handed to [`super::execute`] by the
/// executor, so that admin imports nothing of it.
pub trait CachedAnswers: Sync {
    /// Answers held.
    fn entries(&self) -> usize;
    /// Forget every answer.
    fn flush(&self);
    /// The figures `SHOW CACHE` and `/metrics` show.
    fn sample(&self) -> CacheSample;
}

/// The cache of this proxy, if it has one.
pub type Cache<'a> = Option<&'a dyn CachedAnswers>;

/// A connection to `backend` after the version triggers were put on
/// `db`.`table` there (CACHE_TABLE and CACHE_STATEMENT's EXACT rules).
async fn armed(
    ctx: &Context,
    worker: usize,
    backend: BackendId,
    db: &str,
    table: &str,
) -> Result<crate::backend::PooledConn, ProxyError> {
    let mut c = conn(ctx, worker, backend).await?;
    arm(&mut c, db, table, None).await.map_err(|e| {
        wrong(format!(
            "cannot put the result cache's version triggers on {db}.{table} (backend {}): {e}",
            backend.index()
        ))
    })?;
    Ok(c)
}

/// The server's error for a table that is not a base table, or missing.
async fn check_base_table(
    ctx: &Context,
    worker: usize,
    backend: BackendId,
    db: &str,
    table: &str,
) -> Result<(), ProxyError> {
    let mut c = conn(ctx, worker, backend).await?;
    let sql = format!(
        "SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
        quote_str(db),
        quote_str(table)
    );
    let rows = c
        .query_rows(&sql)
        .await?
        .map_err(|e| store::server_error(&c, &sql, e))?
        .strings();
    let err = |code: u16, sql_state: &[u8; 5], message: String| ProxyError::Statement {
        err: ErrPacket {
            code,
            sql_state: *sql_state,
            message,
        },
    };
    match rows.first().and_then(|r| r[0].as_deref()) {
        Some("BASE TABLE") => Ok(()),
        Some(_) => Err(err(
            1347,
            b"HY000",
            format!("'{db}.{table}' is not of type 'BASE TABLE'"),
        )),
        None => Err(err(
            1146,
            b"42S02",
            format!("Table '{db}.{table}' doesn't exist"),
        )),
    }
}

/// `HSCALE CACHE_TABLE`: triggers first (EXACT), then the rule.
pub(super) async fn cache_table(
    (ctx, cache): (&Context, Cache<'_>),
    worker: usize,
    name: TableName,
    rule: CacheRule,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let d = reload(ctx, worker).await?;
    let targets =
        physical_tables(&d, &name, BackendId::MAIN, ctx.backend_count()).ok_or_else(|| {
            wrong(format!(
                "{name} is a view: cache the tables it reads instead"
            ))
        })?;
    for (backend, db, table) in &targets {
        check_base_table(ctx, worker, *backend, db, table).await?;
    }
    let before = d.cache_rule(&name);
    drop(d);
    if rule == CacheRule::Exact {
        for (backend, db, table) in &targets {
            let mut c = armed(ctx, worker, *backend, db, table).await?;
            clear_marks(&mut c, db, table).await?;
        }
    }
    let sql = vec![
        RULES.to_string(),
        format!(
            "INSERT INTO `hscale`.`cached_tables` (db, tbl, mode, ttl_ms) VALUES ({}, {}, {}, {}) \
             ON DUPLICATE KEY UPDATE mode = VALUES(mode), ttl_ms = VALUES(ttl_ms)",
            quote_str(&name.db),
            quote_str(&name.table),
            quote_str(rule.mode()),
            rule.ttl_ms()
        ),
    ];
    set_rule((ctx, cache), worker, &name, Some(rule), &sql).await?;
    if before == Some(CacheRule::Exact) && rule != CacheRule::Exact {
        disarm_all(ctx, worker, &targets).await?;
    }
    Ok(AdminOutput::Ok {
        info: match rule {
            CacheRule::Exact => format!("{name}: reads cached until a write touches it"),
            CacheRule::Ttl(ms) => format!("{name}: reads cached for {ms} ms"),
        },
    })
}

/// `HSCALE UNCACHE_TABLE`: the rule first, then the triggers.
pub(super) async fn uncache_table(
    (ctx, cache): (&Context, Cache<'_>),
    worker: usize,
    name: TableName,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let d = reload(ctx, worker).await?;
    let Some(before) = d.cache_rule(&name) else {
        return Err(wrong(format!("table {name} is not cached")));
    };
    let targets =
        physical_tables(&d, &name, BackendId::MAIN, ctx.backend_count()).unwrap_or_default();
    drop(d);
    let sql = vec![format!(
        "DELETE FROM `hscale`.`cached_tables` WHERE db = {} AND tbl = {}",
        quote_str(&name.db),
        quote_str(&name.table)
    )];
    set_rule((ctx, cache), worker, &name, None, &sql).await?;
    if before == CacheRule::Exact {
        disarm_all(ctx, worker, &targets).await?;
    }
    Ok(AdminOutput::Ok {
        info: format!("{name}: reads no longer cached"),
    })
}

async fn disarm_all(
    ctx: &Context,
    worker: usize,
    targets: &[(BackendId, String, String)],
) -> Result<(), ProxyError> {
    for (backend, db, table) in targets {
        let mut c = conn(ctx, worker, *backend).await?;
        disarm(&mut c, db, table).await?;
    }
    Ok(())
}

/// Commit the rule change, as auto-partitioning's (another proxy's change
/// moving the version on: apply it again to the dictionary read anew).
async fn set_rule(
    (ctx, cache): (&Context, Cache<'_>),
    worker: usize,
    name: &TableName,
    rule: Option<CacheRule>,
    sql: &[String],
) -> Result<(), ProxyError> {
    let mut attempts: u32 = 0;
    loop {
        let mut d = (*reload(ctx, worker).await?).clone();
        d.set_cache_rule(name.clone(), rule);
        match commit(ctx, worker, d, sql).await {
            Err(ProxyError::DictionaryMoved) if attempts < 50 => {
                attempts += 1;
                super::moved_pause(attempts).await;
            }
            r => break r?,
        }
    }
    if let Some(cache) = cache {
        cache.flush();
    }
    Ok(())
}

/// The physical tables of the tables `statement` reads (a name without a
/// database is of `session_db`), each checked a base table: what an
/// EXACT statement needs triggers on.
async fn statement_targets(
    ctx: &Context,
    worker: usize,
    statement: &str,
    session_db: Option<&str>,
) -> Result<(Vec<TableName>, Vec<Physical>), ProxyError> {
    let tables = hscale_sql::tokenize(statement)
        .ok()
        .and_then(|tokens| hscale_sql::reads::tables_read(statement, &tokens))
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            wrong("hscale cannot tell which tables this statement reads: it cannot be cached EXACT")
        })?;
    let d = reload(ctx, worker).await?;
    let mut names = Vec::new();
    let mut targets = Vec::new();
    for t in &tables {
        let db =
            t.db.as_deref()
                .or(session_db)
                .ok_or_else(|| ProxyError::Statement {
                    err: ErrPacket {
                        code: 1046,
                        sql_state: *b"3D000",
                        message: "No database selected".into(),
                    },
                })?;
        let name = TableName::new(db, &t.table);
        let physical = physical_tables(&d, &name, BackendId::MAIN, ctx.backend_count())
            .ok_or_else(|| {
                wrong(format!(
                    "{name} is a view: cache the tables it reads instead"
                ))
            })?;
        targets.extend(physical);
        names.push(name);
    }
    drop(d);
    for (backend, db, table) in &targets {
        check_base_table(ctx, worker, *backend, db, table).await?;
    }
    Ok((names, targets))
}

/// `HSCALE CACHE_STATEMENT` (`Some(rule)`) and `UNCACHE_STATEMENT`:
/// reads of the statement's fingerprint (any literals) kept EXACT or for
/// a TTL. EXACT puts the version triggers on the tables it reads (names
/// without a database: of `session_db`) before the rule is stored, as
/// CACHE_TABLE does; removing an EXACT rule removes them from the tables
/// no other EXACT rule needs (the first miss of a session in another
/// database puts them on its tables: `ResultCache::arm`).
pub(super) async fn cache_statement(
    (ctx, cache): (&Context, Cache<'_>),
    worker: usize,
    session_db: Option<&str>,
    statement: &str,
    rule: Option<CacheRule>,
) -> Result<AdminOutput, ProxyError> {
    let facts = hscale_sql::analyze(statement);
    let fp = match &facts.fingerprint {
        Some(fp) if facts.kind == hscale_sql::Kind::Select && facts.statements == 1 => fp,
        _ => return Err(wrong("HSCALE CACHE_STATEMENT takes one SELECT")),
    };
    let digest = fp.hash;
    let _g = ctx.partitioning.admin_lock.lock().await;
    let before = reload(ctx, worker).await?.statement_rule(digest);
    if rule.is_none() && before.is_none() {
        return Err(wrong("this statement is not cached"));
    }
    let targets = if rule == Some(CacheRule::Exact) {
        statement_targets(ctx, worker, statement, session_db).await?
    } else if before == Some(CacheRule::Exact) {
        // What can be found to disarm; a table gone or a session in no
        // database leaves its triggers, never the rule.
        statement_targets(ctx, worker, statement, session_db)
            .await
            .unwrap_or_default()
    } else {
        Default::default()
    };
    if rule == Some(CacheRule::Exact) {
        for (backend, db, table) in &targets.1 {
            armed(ctx, worker, *backend, db, table).await?;
        }
    }
    let sql = match rule {
        Some(r) => vec![
            STATEMENTS.to_string(),
            // `ttl_ms` 0: EXACT.
            format!(
                "REPLACE INTO `hscale`.`cached_statements` (digest, statement, ttl_ms) VALUES ({digest}, {}, {})",
                quote_str(statement),
                r.ttl_ms()
            ),
        ],
        None => vec![format!(
            "DELETE FROM `hscale`.`cached_statements` WHERE digest = {digest}"
        )],
    };
    let mut attempts: u32 = 0;
    loop {
        let mut d = (*reload(ctx, worker).await?).clone();
        d.set_statement_rule(digest, statement, rule);
        match commit(ctx, worker, d, &sql).await {
            Err(ProxyError::DictionaryMoved) if attempts < 50 => {
                attempts += 1;
                super::moved_pause(attempts).await;
            }
            r => break r?,
        }
    }
    if let Some(cache) = cache {
        cache.flush();
    }
    if before == Some(CacheRule::Exact) && rule != Some(CacheRule::Exact) {
        // Triggers no other rule needs: not a table cached EXACT, not one
        // another statement cached EXACT may read.
        let d = reload(ctx, worker).await?;
        let by_statements = exact_statement_tables(&d);
        let unneeded: Vec<Physical> = targets
            .0
            .iter()
            .filter(|n| d.cache_rule(n) != Some(CacheRule::Exact) && !is_read_by(&by_statements, n))
            .filter_map(|n| physical_tables(&d, n, BackendId::MAIN, ctx.backend_count()))
            .flatten()
            .collect();
        drop(d);
        disarm_all(ctx, worker, &unneeded).await?;
    }
    Ok(AdminOutput::Ok {
        info: match rule {
            Some(CacheRule::Exact) => {
                "statements like this one cached until a write touches their tables".into()
            }
            Some(CacheRule::Ttl(ms)) => format!("statements like this one cached for {ms} ms"),
            None => "statements like this one no longer cached".into(),
        },
    })
}

/// `HSCALE FLUSH CACHE`: this proxy's answers forgotten.
pub(super) fn flush(cache: Cache<'_>) -> AdminOutput {
    let n = cache.map_or(0, |c| {
        let n = c.entries();
        c.flush();
        n
    });
    AdminOutput::Ok {
        info: format!("{n} cached answer(s) flushed"),
    }
}

/// `HSCALE SHOW CACHE`: the cached tables, and this proxy's figures.
pub(super) fn show(ctx: &Context, cache: Cache<'_>) -> AdminOutput {
    let s = cache.map(|c| c.sample()).unwrap_or_default();
    let figures = format!(
        "entries={} bytes={} hits={} misses={} invalidations={} evictions={}",
        s.entries, s.bytes, s.hits, s.misses, s.invalidations, s.evictions
    );
    let rows = ctx.partitioning.with_dictionary(|d| {
        let tables = d.cached().map(|(name, rule)| {
            vec![
                Some(name.db.clone()),
                Some(name.table.clone()),
                Some(rule.mode().to_string()),
                Some(rule.ttl_ms().to_string()),
                Some(figures.clone()),
            ]
        });
        let statements = d.cached_statements().map(|(_, statement, rule)| {
            vec![
                None,
                Some(statement.to_string()),
                Some(rule.mode().to_string()),
                Some(rule.ttl_ms().to_string()),
                Some(figures.clone()),
            ]
        });
        tables.chain(statements).collect()
    });
    AdminOutput::Rows {
        columns: super::cols(&["db", "table_or_statement", "mode", "ttl_ms", "this_proxy"]),
        rows,
    }
}
