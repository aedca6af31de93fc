//! `HSCALE SHOW TABLES`, `HSCALE SHOW PARTITIONS ['t']`, `HSCALE SHOW BACKENDS`
//! (with `down_since`: when a backend that is down was first found so),
//! `HSCALE SHOW USERS`.

use hscale_route::dictionary::TableName;
use hscale_route::BackendId;

use super::{backend_names, cols, conn, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::definition::Definition;
use crate::partition::{ddl, quote_str};
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

/// Compare every partition's definition with its table's default
/// partition's, as `HSCALE SHOW PARTITIONS` does, and log each that
/// differs or is missing (worker 0 runs it at start and after each
/// dictionary change, `server.rs`): a partition left apart by a schema
/// change, or changed behind hscale, is reported, not silently served.
/// Returns how many were found.
pub async fn check_definitions(ctx: &Context, worker: usize) -> Result<usize, ProxyError> {
    let AdminOutput::Rows { rows, .. } = partitions(ctx, worker, None).await? else {
        return Ok(0);
    };
    let mut found = 0;
    for row in &rows {
        let field = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let shown = field(6);
        if shown == "same" {
            continue;
        }
        found += 1;
        tracing::warn!(
            table = %field(0),
            partition = %Some(field(1)).filter(|p| !p.is_empty()).unwrap_or_else(|| "default".into()),
            backend = %field(3),
            physical_table = %field(4),
            definition = %shown,
            "a partition's definition is not its table's (HSCALE SHOW PARTITIONS)"
        );
    }
    Ok(found)
}

/// Every partition (of one table, or of all): value, backend, physical
/// table, the backend's row estimate, and whether its definition is the
/// default partition's (`same`, `differs`: a schema change left it
/// apart, or someone changed it behind hscale; `missing`).
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
        let mut reference = None;
        for (pname, value, backend, physical) in entries {
            let (estimate, definition) = {
                let mut c = conn(ctx, worker, backend).await?;
                let definition = match ddl::show_create(&mut c, &t.name.db, &physical).await {
                    Ok(text) => Definition::parse(&text),
                    Err(_) => None,
                };
                let sql = format!(
                    "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
                    quote_str(&t.name.db),
                    quote_str(&physical)
                );
                let estimate = c
                    .query_rows(&sql)
                    .await?
                    .ok()
                    .and_then(|r| r.strings().first().and_then(|r| r[0].clone()));
                (estimate, definition)
            };
            // The default partition (listed first) is the reference.
            let shown = match (&definition, reference.get_or_insert(definition.clone())) {
                (None, _) => "missing",
                (Some(d), Some(r)) if d.is_same(r) => "same",
                _ => "differs",
            };
            rows.push(vec![
                Some(t.name.to_string()),
                pname,
                value,
                Some(names[backend.index()].to_string()),
                Some(physical),
                estimate,
                Some(shown.to_string()),
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
            "definition",
        ]),
        rows,
    })
}

/// Every backend with its state and this proxy's connections to it. With
/// replicas configured, a row per replica too, and five columns more
/// (after the others, whose order stays): `role` (`primary` or
/// `replica`), `primary` (a replica's backend), `lag_ms` and `usable`
/// (`yes` / `no`, as the replica monitor last found it) and `why` not.
pub(super) fn backends(ctx: &Context) -> AdminOutput {
    let mut out = primaries(ctx);
    let replicas = &ctx.replicas;
    if replicas.is_empty() {
        return out;
    }
    if let AdminOutput::Rows { columns, rows } = &mut out {
        columns.extend(cols(&["role", "primary", "lag_ms", "usable", "why"]));
        for row in rows.iter_mut() {
            row.extend([Some("primary".to_string()), None, None, None, None]);
        }
        for (r, replica) in replicas.list.iter().enumerate() {
            let (open, idle, up) = replicas.stats(r);
            let state = &replica.state;
            rows.push(vec![
                Some(replica.name.clone()),
                Some(replicas.address(r)),
                Some(if up { "up" } else { "down" }.to_string()),
                Some(open.to_string()),
                Some(idle.to_string()),
                None,
                Some("replica".to_string()),
                Some(ctx.config.backends[replica.backend.index()].name.clone()),
                state.lag_ms().map(|l| l.to_string()),
                Some(if state.is_usable() { "yes" } else { "no" }.to_string()),
                state.why(),
            ]);
        }
    }
    out
}

/// The primaries' rows of `HSCALE SHOW BACKENDS`.
fn primaries(ctx: &Context) -> AdminOutput {
    let rows = ctx
        .config
        .backends
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let (mut open, mut idle, mut up) = (0, 0, true);
            let mut down_since = None;
            for p in ctx.backend_pools(BackendId::new(i)) {
                let s = p.stats();
                open += s.open;
                idle += s.idle;
                up &= s.is_up;
                down_since = down_since.or(p.watch.down_since_ms());
            }
            vec![
                Some(b.name.clone()),
                // The dictionary's after a switchover.
                Some(ctx.pool(0, BackendId::new(i)).address()),
                Some(if up { "up" } else { "down" }.to_string()),
                Some(open.to_string()),
                Some(idle.to_string()),
                // When it was first found down (UTC), while it is.
                down_since
                    .filter(|_| !up)
                    .map(|ms| format_utc_ms(ms as i64)),
            ]
        })
        .collect();
    AdminOutput::Rows {
        columns: cols(&["name", "address", "status", "open", "idle", "down_since"]),
        rows,
    }
}

/// `HSCALE SHOW USERS`: each client user that logged in since start, with
/// its connections, statement rate, waits, refusals and limits
/// (`crate::tenant`), on this proxy.
pub(super) fn users(ctx: &Context) -> AdminOutput {
    let rows = ctx
        .user_rows()
        .into_iter()
        .map(|r| {
            let p99_ms = format!("{:.3}", r.p99_us as f64 / 1000.0);
            [
                r.user,
                r.connections.to_string(),
                r.max_connections.to_string(),
                r.statements.to_string(),
                r.statements_per_s.to_string(),
                r.waiting.to_string(),
                r.throttled.to_string(),
                r.refused.to_string(),
                r.killed.to_string(),
                r.refused_connections.to_string(),
                r.backend_connections.to_string(),
                p99_ms,
                r.priority.to_string(),
                r.backend_share.to_string(),
            ]
            .into_iter()
            .map(Some)
            .collect()
        })
        .collect();
    AdminOutput::Rows {
        columns: cols(&[
            "user",
            "connections",
            "max_connections",
            "statements",
            "statements_per_s",
            "waiting",
            "throttled",
            "refused",
            "killed",
            "refused_connections",
            "backend_connections",
            "p99_ms",
            "priority",
            "backend_share",
        ]),
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

/// `HSCALE SHOW DIGESTS`: this proxy's statements by fingerprint, the
/// most total time first (`crate::metrics::digest`).
pub(super) fn digests(ctx: &Context) -> AdminOutput {
    let m = &ctx.metrics;
    let time = |at: std::time::Instant| {
        let t = m.wall_time(at);
        let ms = t
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        format_utc_ms(ms)
    };
    let us = |v: u64| Some(format!("{:.3}", v as f64 / 1000.0));
    let rows = m
        .digests
        .snapshot()
        .into_iter()
        .map(|d| {
            vec![
                Some(d.text.clone()),
                Some(d.count.to_string()),
                us(d.total_us),
                us(d.avg_us()),
                us(d.quantile_us(0.99)),
                us(d.max_us),
                Some(d.rows.to_string()),
                Some(d.errors.to_string()),
                Some(d.refusals.to_string()),
                Some(d.kind.as_str().to_string()),
                Some(format!("{:.1}", d.parts as f64 / d.count.max(1) as f64)),
                Some(d.max_parts.to_string()),
                Some(time(d.first_seen)),
                Some(time(d.last_seen)),
                Some(d.coalesced.to_string()),
                Some(d.cache_hits.to_string()),
                Some(d.cache_misses.to_string()),
                Some(d.cache_invalidations.to_string()),
            ]
        })
        .collect();
    AdminOutput::Rows {
        columns: cols(&[
            "digest_text",
            "count",
            "total_ms",
            "avg_ms",
            "p99_ms",
            "max_ms",
            "rows_sent",
            "errors",
            "refusals",
            "plan",
            "avg_partitions",
            "max_partitions",
            "first_seen",
            "last_seen",
            "coalesced",
            "cache_hits",
            "cache_misses",
            "cache_invalidations",
        ]),
        rows,
    }
}

/// `YYYY-MM-DD HH:MM:SS.mmm` (UTC) of milliseconds since the epoch.
fn format_utc_ms(ms: i64) -> String {
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{milli:03}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_times() {
        assert_eq!(super::format_utc_ms(0), "1970-01-01 00:00:00.000");
        assert_eq!(
            super::format_utc_ms(1_795_996_800_123),
            "2026-11-30 00:00:00.123"
        );
        assert_eq!(
            super::format_utc_ms(951_782_400_000),
            "2000-02-29 00:00:00.000"
        );
    }
}
