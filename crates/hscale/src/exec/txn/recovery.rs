//! Recovery of transactions across backends (the protocol is in
//! `mod.rs` and `commit.rs`): every proxy's reload loop calls
//! [`resolve`], which finds hscale's prepared XA branches on every backend
//! (`XA RECOVER`) and commits or rolls back those whose owner is gone, by
//! the decision row on the transaction's home backend. Also the decisions
//! table itself ([`ensure_decisions`]) and the old decisions it deletes.
//!
//! A prepared branch whose gtrid carries hscale's format id is committed
//! when its decision row says so; it is rolled back when there is none and
//! the home connection named in its gtrid no longer exists on the home
//! backend (checked first, so no decision can appear after the check: only
//! that connection could have written it).

use hscale_route::BackendId;
use std::sync::Arc;

use super::{parse_gtrid, run, unix_secs, xid, Gtrid, DECISIONS, FORMAT_ID};
use crate::error::ProxyError;
use crate::runtime::Context;

/// Decision rows older than this, with no branch prepared anywhere, are
/// deleted by the resolver (their owner died before deleting them).
const DECISION_RETENTION_SECS: u64 = 60;

/// Slack for clocks when telling a restarted home backend from a live one.
const CLOCK_SLACK_SECS: u64 = 10;

/// The statements that create the decisions table on a backend.
pub const DECISIONS_DDL: [&str; 2] = [
    "CREATE DATABASE IF NOT EXISTS `hscale`",
    "CREATE TABLE IF NOT EXISTS `hscale`.`decisions` (\
     xid VARBINARY(64) NOT NULL PRIMARY KEY, \
     state VARCHAR(16) NOT NULL, \
     created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB",
];

/// Create the decisions table on every backend (idempotent).
pub async fn ensure_decisions(ctx: &Arc<Context>, worker: usize) -> Result<(), ProxyError> {
    for backend in ctx.backend_ids() {
        let mut c = ctx.pool(worker, backend).get(false).await?;
        for sql in DECISIONS_DDL {
            run(&mut c, sql, "creating hscale.decisions").await?;
        }
    }
    Ok(())
}

/// One prepared branch found by `XA RECOVER`.
pub(crate) struct Found {
    pub backend: BackendId,
    pub gtrid: String,
    pub bqual: String,
    pub parts: Gtrid,
}

/// Recovery, one pass: commit or roll back the prepared branches of
/// hscale's transactions whose owners are gone, then delete decisions no
/// branch needs any more. Safe to run in many proxies at once: a decision
/// row never changes, and a branch is rolled back only when its home
/// connection, the only one that could write its decision, is gone.
pub async fn resolve(ctx: &Arc<Context>, worker: usize) -> Result<(), ProxyError> {
    let n = ctx.config.backends.len();
    let mut found = Vec::new();
    let mut is_complete = true;
    for backend in BackendId::all(n) {
        match recover(ctx, worker, backend).await {
            Ok(mut f) => found.append(&mut f),
            Err(e) => {
                tracing::debug!(backend = %backend, error = %e, "XA RECOVER failed");
                is_complete = false;
            }
        }
    }
    let mut gtrids: Vec<(String, Gtrid)> =
        found.iter().map(|f| (f.gtrid.clone(), f.parts)).collect();
    gtrids.sort_by(|a, b| a.0.cmp(&b.0));
    gtrids.dedup_by(|a, b| a.0 == b.0);
    // Prepared branches this round leaves waiting (the metric
    // hscale_transactions_in_doubt).
    let mut in_doubt = found.len() as u64;
    let shared = &ctx.metrics.shared;
    for (gtrid, parts) in &gtrids {
        if parts.home.index() >= n {
            continue;
        }
        // Liveness first, then the decision: once the home connection is
        // gone no decision can appear.
        let is_alive = match home_alive(ctx, worker, *parts).await {
            Ok(a) => a,
            Err(_) => continue,
        };
        let decision = match decision_of(ctx, worker, parts.home, gtrid).await {
            Ok(d) => d,
            Err(_) => continue,
        };
        let verb = match decision.as_deref() {
            Some("committed") => "COMMIT",
            Some(_) => "ROLLBACK",
            None if !is_alive => "ROLLBACK",
            None => continue,
        };
        for f in found.iter().filter(|f| &f.gtrid == gtrid) {
            let sql = format!("XA {verb} {}", xid(&f.gtrid, &f.bqual));
            let Ok(mut c) = ctx.pool(worker, f.backend).get(false).await else {
                continue;
            };
            match run(&mut c, &sql, "recovering a prepared branch").await {
                Ok(()) => {
                    in_doubt -= 1;
                    let n = if verb == "COMMIT" {
                        &shared.txn_resolved_commit
                    } else {
                        &shared.txn_resolved_rollback
                    };
                    n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::info!(
                        gtrid,
                        backend = %f.backend,
                        verb,
                        "recovered a prepared branch"
                    )
                }
                Err(e) => {
                    tracing::debug!(gtrid, backend = %f.backend, error = %e, "prepared branch not recovered yet (still attached to a connection?)")
                }
            }
        }
    }
    shared
        .txn_in_doubt
        .store(in_doubt, std::sync::atomic::Ordering::Relaxed);
    if is_complete {
        for backend in BackendId::all(n) {
            let _ = forget_old_decisions(ctx, worker, backend, &gtrids).await;
        }
    }
    Ok(())
}

/// hscale's prepared branches on `backend`.
pub(crate) async fn recover(
    ctx: &Context,
    worker: usize,
    backend: BackendId,
) -> Result<Vec<Found>, ProxyError> {
    let mut c = ctx.pool(worker, backend).get(false).await?;
    let rows = match c.query_rows("XA RECOVER").await? {
        Ok(r) => r.strings(),
        Err(err) => {
            return Err(ProxyError::Backend {
                backend: c.backend.to_string(),
                during: "hscale: XA RECOVER".into(),
                err,
            })
        }
    };
    let mut out = Vec::new();
    for row in rows {
        let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        if get(0).parse::<u32>().ok() != Some(FORMAT_ID) {
            continue;
        }
        let (Ok(glen), data) = (get(1).parse::<usize>(), get(3)) else {
            continue;
        };
        let Some((gtrid, bqual)) = data.split_at_checked(glen) else {
            continue;
        };
        if let Some(parts) = parse_gtrid(gtrid) {
            out.push(Found {
                backend,
                gtrid: gtrid.to_string(),
                bqual: bqual.to_string(),
                parts,
            });
        }
    }
    Ok(out)
}

/// Whether the home connection named in a gtrid still exists: its thread
/// id is live on the home backend, and the backend has not restarted since
/// the transaction began (thread ids restart with the server).
async fn home_alive(ctx: &Arc<Context>, worker: usize, g: Gtrid) -> Result<bool, ProxyError> {
    let mut c = ctx.pool(worker, g.home).get(false).await?;
    let sql = format!(
        "SELECT (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {}), \
         (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME')",
        g.thread
    );
    let rows = match c.query_rows(&sql).await? {
        Ok(r) => r.strings(),
        Err(err) => {
            return Err(ProxyError::Backend {
                backend: c.backend.to_string(),
                during: "hscale: checking a transaction's home connection".into(),
                err,
            })
        }
    };
    let cell = |i: usize| -> u64 {
        rows.first()
            .and_then(|r| r.get(i).cloned().flatten())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (count, uptime) = (cell(0), cell(1));
    let age = unix_secs().saturating_sub(g.created);
    Ok(count > 0 && uptime + CLOCK_SLACK_SECS >= age)
}

pub(crate) async fn decision_of(
    ctx: &Context,
    worker: usize,
    home: BackendId,
    gtrid: &str,
) -> Result<Option<String>, ProxyError> {
    let mut c = ctx.pool(worker, home).get(false).await?;
    let sql = format!("SELECT state FROM {DECISIONS} WHERE xid = '{gtrid}'");
    match c.query_rows(&sql).await? {
        Ok(r) => Ok(r
            .strings()
            .first()
            .and_then(|row| row.first().cloned().flatten())),
        Err(err) => Err(ProxyError::Backend {
            backend: c.backend.to_string(),
            during: "hscale: reading a commit decision".into(),
            err,
        }),
    }
}

/// Delete decisions older than the retention that no prepared branch
/// (in this pass's complete `XA RECOVER`) still needs.
async fn forget_old_decisions(
    ctx: &Arc<Context>,
    worker: usize,
    backend: BackendId,
    prepared: &[(String, Gtrid)],
) -> Result<(), ProxyError> {
    let mut c = ctx.pool(worker, backend).get(false).await?;
    let sql = format!(
        "SELECT xid FROM {DECISIONS} WHERE created < NOW(6) - INTERVAL {DECISION_RETENTION_SECS} SECOND LIMIT 1000"
    );
    let rows = match c.query_rows(&sql).await? {
        Ok(r) => r.strings(),
        Err(_) => return Ok(()),
    };
    for row in rows {
        let Some(x) = row.first().cloned().flatten() else {
            continue;
        };
        if prepared.iter().any(|(g, _)| *g == x) || parse_gtrid(&x).is_none() {
            continue;
        }
        run(
            &mut c,
            &format!("DELETE FROM {DECISIONS} WHERE xid = '{x}'"),
            "deleting an old decision",
        )
        .await?;
    }
    Ok(())
}
