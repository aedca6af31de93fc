//! The fleet: every proxy that shares a dictionary registers itself in
//! `hscale.proxies` on the main backend (created with the dictionary's
//! tables, `partition/store.rs`) and beats there every
//! `[proxy] heartbeat_interval_ms`, from a task of worker 0 of its own
//! (so a long take-over or reload in the reload loop does not hold the
//! heartbeat back). `HSCALE SHOW PROXIES` (`admin/show.rs`) lists the rows.
//!
//! All times are the main backend's clock (`NOW(6)`), so proxies on hosts
//! whose clocks disagree still compare: a row whose heartbeat is older than
//! `[proxy] proxy_stale_after_ms` is shown `stale`, and each beat deletes
//! rows older than `[proxy] proxy_forget_after_ms` (proxies long dead). A
//! proxy that stops gracefully (SIGTERM) deletes its own row. Nothing here
//! is on the statement path, and nothing decides anything: the fence and
//! the take-over never count proxies.

use std::time::Duration;

use hscale_route::BackendId;

use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::partition::store::{exec, server_error};
use crate::runtime::Context;

/// hscale's version as the fleet shows it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One heartbeat: insert or refresh this proxy's row (with the dictionary
/// version it holds now), then delete the rows of proxies silent for
/// `proxy_forget_after_ms`.
pub async fn beat(ctx: &Context, worker: usize) -> Result<(), ProxyError> {
    let me = &ctx.fleet;
    let up_us = me.started.elapsed().as_micros();
    let forget_us = u128::from(ctx.config.proxy.proxy_forget_after_ms) * 1000;
    // A main backend fenced by a switch (`admin/failover_main.rs`) holds
    // the write for at most a second: the next beat goes to the new
    // primary once the reload found it.
    let statements = [
        format!(
            "SET STATEMENT lock_wait_timeout = 1 FOR INSERT INTO `hscale`.`proxies` (id, address, version, pid, dictionary_version, started_at, heartbeat) \
             VALUES ({}, {}, {}, {}, {}, NOW(6) - INTERVAL {up_us} MICROSECOND, NOW(6)) \
             ON DUPLICATE KEY UPDATE address = VALUES(address), version = VALUES(version), \
             dictionary_version = VALUES(dictionary_version), heartbeat = VALUES(heartbeat)",
            quote_str(&me.id),
            quote_str(me.address()),
            quote_str(VERSION),
            std::process::id(),
            ctx.partitioning.stored_version(),
        ),
        format!(
            "SET STATEMENT lock_wait_timeout = 1 FOR DELETE FROM `hscale`.`proxies` WHERE heartbeat < NOW(6) - INTERVAL {forget_us} MICROSECOND"
        ),
    ];
    let has_left = me.has_left.lock().await;
    if *has_left {
        return Ok(());
    }
    let mut c = ctx.pool(worker, BackendId::MAIN).get_own().await?;
    exec(&mut c, &statements).await
}

/// Delete this proxy's row (a graceful stop), giving up after `within`.
pub async fn leave(ctx: &Context, worker: usize, within: Duration) {
    let sql = format!(
        "DELETE FROM `hscale`.`proxies` WHERE id = {}",
        quote_str(&ctx.fleet.id)
    );
    let run = async {
        let mut has_left = ctx.fleet.has_left.lock().await;
        *has_left = true;
        let mut c = ctx.pool(worker, BackendId::MAIN).get_own().await?;
        exec(&mut c, &[sql]).await
    };
    match tokio::time::timeout(within, run).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "could not leave the fleet"),
        Err(_) => tracing::debug!("leaving the fleet timed out"),
    }
}

/// Worker 0's heartbeat task: [`beat`] every `heartbeat_interval_ms`
/// until the proxy stops.
pub async fn serve(ctx: std::sync::Weak<Context>, worker: usize) {
    let every = match ctx.upgrade() {
        Some(c) => Duration::from_millis(c.config.proxy.heartbeat_interval_ms.max(50)),
        None => return,
    };
    let mut failing = false;
    loop {
        {
            let Some(ctx) = ctx.upgrade() else { return };
            if ctx.is_draining() {
                return;
            }
            match beat(&ctx, worker).await {
                Ok(()) => failing = false,
                Err(e) => {
                    ctx.metrics
                        .shared
                        .heartbeat_failures
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    // Once per run of failures at warn, then quietly.
                    if !failing {
                        tracing::warn!(error = %e, "fleet heartbeat failed");
                    } else {
                        tracing::debug!(error = %e, "fleet heartbeat failed");
                    }
                    failing = true;
                }
            }
        }
        tokio::time::sleep(every).await;
    }
}

/// The rows of `HSCALE SHOW PROXIES`: every registered proxy, live ones
/// first, then by address. `status` is `up`, or `stale` when its last
/// heartbeat is older than `proxy_stale_after_ms`; `this` marks the proxy
/// that answers.
pub async fn list(
    ctx: &Context,
    worker: usize,
) -> Result<(Vec<String>, Vec<Vec<Option<String>>>), ProxyError> {
    let stale_us = u128::from(ctx.config.proxy.proxy_stale_after_ms) * 1000;
    let sql = format!(
        "SELECT id, address, version, pid, dictionary_version, \
           DATE_FORMAT(started_at, '%Y-%m-%d %H:%i:%s.%f'), \
           TIMESTAMPDIFF(SECOND, started_at, heartbeat), \
           DATE_FORMAT(heartbeat, '%Y-%m-%d %H:%i:%s.%f'), \
           ROUND(TIMESTAMPDIFF(MICROSECOND, heartbeat, NOW(6)) / 1000), \
           IF(heartbeat < NOW(6) - INTERVAL {stale_us} MICROSECOND, 'stale', 'up'), \
           IF(id = {}, 'yes', '') \
         FROM `hscale`.`proxies` ORDER BY heartbeat < NOW(6) - INTERVAL {stale_us} MICROSECOND, address, id",
        quote_str(&ctx.fleet.id)
    );
    let mut c = ctx.pool(worker, BackendId::MAIN).get_own().await?;
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(&c, &sql, e))?;
    let columns = [
        "id",
        "address",
        "version",
        "pid",
        "dictionary_version",
        "started_at",
        "uptime_s",
        "last_heartbeat",
        "heartbeat_age_ms",
        "status",
        "this",
    ]
    .iter()
    .map(|c| c.to_string())
    .collect();
    Ok((columns, r.strings()))
}
