//! `HSCALE SHOW TRANSACTIONS`: what the commit protocol of `exec/txn/mod.rs`
//! has in flight (run by `Exec::run_admin`, `exec/entry.rs`, the one
//! `HSCALE` command about the executor's own state). Three kinds of rows:
//!
//! - `open`: this proxy's sessions with a transaction across backends (as
//!   of their last statement, published by `exec/txn/published.rs` in
//!   `runtime::Published`):
//!   connection id, gtrid, home backend, every branch with its written
//!   flag, age.
//! - `prepared`: hscale's prepared branches on every backend (`XA RECOVER`,
//!   hscale's format id only), in doubt until committed or rolled back:
//!   backend, gtrid, age from the time in the gtrid, the decision if any.
//! - `decision`: rows of `hscale.decisions` on every backend, which the
//!   committing proxy or recovery deletes once no branch needs them.

use hscale_route::BackendId;

use super::recovery::{decision_of, recover};
use super::{parse_gtrid, DECISIONS};
use crate::admin::AdminOutput;
use crate::error::ProxyError;
use crate::runtime::{Context, TxnView};

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Seconds since the transaction named by `gtrid` began.
fn age(gtrid: &str) -> Option<String> {
    parse_gtrid(gtrid).map(|g| unix_secs().saturating_sub(g.created).to_string())
}

/// `shard1 (written)`: a backend and its written flag.
fn branch(name: &str, is_written: bool) -> String {
    if is_written {
        format!("{name} (written)")
    } else {
        name.to_string()
    }
}

const COLUMNS: [&str; 7] = [
    "kind",
    "connection_id",
    "gtrid",
    "backend",
    "branches",
    "age_secs",
    "decision",
];

/// The rows of `HSCALE SHOW TRANSACTIONS`. A backend that does not answer
/// gets a row of kind `unreachable` with the error, so what is listed is
/// never mistaken for everything.
pub(crate) async fn show(ctx: &Context, worker: usize) -> Result<AdminOutput, ProxyError> {
    let name = |b: BackendId| {
        ctx.config
            .backends
            .get(b.index())
            .map(|c| c.name.clone())
            .unwrap_or_else(|| b.to_string())
    };
    let mut rows: Vec<Vec<Option<String>>> = Vec::new();
    let mut open: Vec<(u32, TxnView)> = ctx
        .sessions()
        .into_iter()
        .filter_map(|(id, h)| h.txn.get().map(|v| (id, v)))
        .collect();
    open.sort_by_key(|(id, _)| *id);
    for (id, v) in open {
        let mut branches = vec![format!("{} (home)", branch(&name(v.home), v.home_written))];
        branches.extend(v.branches.iter().map(|(b, w)| branch(&name(*b), *w)));
        rows.push(vec![
            Some("open".into()),
            Some(id.to_string()),
            Some(v.gtrid.clone()),
            Some(name(v.home)),
            Some(branches.join(", ")),
            age(&v.gtrid),
            None,
        ]);
    }
    let backends: Vec<BackendId> = ctx.backend_ids().collect();
    for &b in &backends {
        match recover(ctx, worker, b).await {
            Ok(found) => {
                for f in found {
                    let decision = if f.parts.home.index() < backends.len() {
                        decision_of(ctx, worker, f.parts.home, &f.gtrid)
                            .await
                            .ok()
                            .flatten()
                    } else {
                        None
                    };
                    rows.push(vec![
                        Some("prepared".into()),
                        None,
                        Some(f.gtrid.clone()),
                        Some(name(f.backend)),
                        None,
                        age(&f.gtrid),
                        decision,
                    ]);
                }
            }
            Err(e) => rows.push(unreachable(&name(b), &e)),
        }
    }
    for &b in &backends {
        match decisions(ctx, worker, b).await {
            Ok(found) => {
                for (xid, state, secs) in found {
                    rows.push(vec![
                        Some("decision".into()),
                        None,
                        Some(xid),
                        Some(name(b)),
                        None,
                        secs,
                        state,
                    ]);
                }
            }
            Err(e) => rows.push(unreachable(&name(b), &e)),
        }
    }
    Ok(AdminOutput::Rows {
        columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows,
    })
}

fn unreachable(backend: &str, e: &ProxyError) -> Vec<Option<String>> {
    vec![
        Some("unreachable".into()),
        None,
        None,
        Some(backend.to_string()),
        None,
        None,
        Some(e.to_string()),
    ]
}

/// Every row of `hscale.decisions` on `backend`: xid, state, age in seconds.
#[allow(clippy::type_complexity)]
async fn decisions(
    ctx: &Context,
    worker: usize,
    backend: BackendId,
) -> Result<Vec<(String, Option<String>, Option<String>)>, ProxyError> {
    let mut c = ctx.pool(worker, backend).get(false).await?;
    let sql = format!(
        "SELECT xid, state, CAST(TIMESTAMPDIFF(SECOND, created, NOW(6)) AS SIGNED) \
         FROM {DECISIONS} ORDER BY created LIMIT 1000"
    );
    match c.query_rows(&sql).await? {
        Ok(r) => Ok(r
            .strings()
            .into_iter()
            .filter_map(|row| {
                let get = |i: usize| row.get(i).cloned().flatten();
                Some((get(0)?, get(1), get(2)))
            })
            .collect()),
        // No table yet (a proxy that never started its reload loop): none.
        Err(err) if err.code == 1146 || err.code == 1049 => Ok(Vec::new()),
        Err(err) => Err(ProxyError::Backend {
            backend: c.backend.to_string(),
            during: "hscale: listing commit decisions".into(),
            err,
        }),
    }
}
