//! The journal of switchovers (`hscale.switches`, one row per backend: its
//! last switch), and the repair of a switch whose proxy died half-way.
//!
//! A switchover writes its row (`switching`, the old and the new primary)
//! before it fences the old primary, on the main backend (for the main
//! backend itself: on the old primary, from which the replica has it by
//! the time it is promoted), and marks it `done` at the end. An automatic
//! failover writes it before it stops the chosen replica's replication
//! (on the main backend; for the main backend itself: on the chosen
//! replica, its first transaction as the primary). A proxy that
//! dies in between leaves the old primary read-only (so every proxy
//! refuses it, `Pool::connect`) and perhaps the replica no longer
//! replicating. Every proxy's reload loop ([`resume`]) looks for such a
//! row; the one that takes the backend's switch lock (free once the
//! owner's connections died with it) finishes the switch if the
//! dictionary names the new primary already, and undoes it otherwise:
//!
//! ```text
//!  named the new primary: it is made writable; the old one's clients are
//!                         killed and it replicates from the new one
//!  not named yet:         the old primary writable again (as it was);
//!                         the replica replicates from it again; a
//!                         failover's old primary still down: left to the
//!                         failover watch, whose next attempt finds the
//!                         replica a candidate again and carries it on
//! ```

use hscale_route::BackendId;

use super::switch_servers::{kill_clients, lacking, one, replicate_from};
use crate::backend::addresses::{pick_main, read_main_records};
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::partition::store::{exec, server_error};
use crate::runtime::Context;

/// One switch under way (or cut short).
pub(super) struct Switch {
    pub backend: String,
    pub from: String,
    pub to: String,
    /// The old primary's position when it was fenced (empty for the main
    /// backend, whose row is written before).
    pub position: String,
    pub was_read_only: bool,
}

/// The statement that records `s` as under way (`switching`).
pub(super) fn begin_sql(s: &Switch, owner: &str) -> String {
    format!(
        "REPLACE INTO `hscale`.`switches` (backend, from_address, to_address, position, state, owner, started_at, was_read_only) \
         VALUES ({}, {}, {}, {}, 'switching', {}, NOW(3), {})",
        quote_str(&s.backend),
        quote_str(&s.from),
        quote_str(&s.to),
        quote_str(&s.position),
        quote_str(owner),
        u8::from(s.was_read_only)
    )
}

/// The statement that ends the switch of `backend` as `state` (`done`,
/// `undone`).
pub(super) fn end_sql(backend: &str, state: &str) -> String {
    format!(
        "UPDATE `hscale`.`switches` SET state = {}, ended_at = NOW(3) WHERE backend = {} AND state = 'switching'",
        quote_str(state),
        quote_str(backend)
    )
}

/// The switches still `switching` that `c`'s server records.
async fn under_way(c: &mut BackendConn) -> Result<Vec<Switch>, ProxyError> {
    let sql = "SELECT backend, from_address, to_address, position, was_read_only \
               FROM `hscale`.`switches` WHERE state = 'switching'";
    let r = c
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(c, sql, e))?;
    Ok(r.strings()
        .into_iter()
        .filter_map(|r| {
            let f = |i: usize| r.get(i).cloned().flatten();
            Some(Switch {
                backend: f(0)?,
                from: f(1)?,
                to: f(2)?,
                position: f(3).unwrap_or_default(),
                was_read_only: f(4).as_deref() == Some("1"),
            })
        })
        .collect())
}

/// A test's failpoint: `HSCALE_FAILPOINT=<name>` ends the process there,
/// as a kill would (tests of a switch cut short).
pub(super) fn failpoint(name: &str) {
    if std::env::var("HSCALE_FAILPOINT").is_ok_and(|f| f == name) {
        tracing::error!(failpoint = name, "HSCALE_FAILPOINT: the process ends here");
        std::process::exit(86);
    }
}

/// Finish or undo every switch whose proxy died half-way (the module's
/// steps). `is_main_unread`: this proxy's last dictionary reload failed,
/// so the main backend's own switch is looked for on its primary too.
pub async fn resume(ctx: &Context, worker: usize, is_main_unread: bool) -> Result<(), ProxyError> {
    let main_pool = ctx.pool(worker, BackendId::MAIN).clone();
    let has_main_replicas = !ctx.config.backends[0].replicas.is_empty();
    let rows = if is_main_unread && has_main_replicas {
        let mut c = main_pool.connect_to(&main_pool.address()).await?;
        under_way(&mut c).await?
    } else {
        let mut c = main_pool.get_own().await?;
        under_way(&mut c).await?
    };
    for s in rows {
        let Some(i) = ctx.config.backends.iter().position(|b| b.name == s.backend) else {
            continue;
        };
        let r = if i == 0 {
            resume_main(ctx, worker, &s).await
        } else {
            resume_other(ctx, worker, BackendId::new(i), &s).await
        };
        if let Err(e) = r {
            tracing::warn!(backend = %s.backend, error = %e, "a switch cut short could not be repaired yet");
        }
    }
    Ok(())
}

/// A switch of a backend other than the main one, cut short.
async fn resume_other(
    ctx: &Context,
    worker: usize,
    backend: BackendId,
    s: &Switch,
) -> Result<(), ProxyError> {
    let cfg = &ctx.config.backends[backend.index()];
    let _admin = ctx.partitioning.admin_lock.lock().await;
    // Free only when its owner is gone (or finished meanwhile).
    let Ok(_lock) = super::failover::fleet_lock(ctx, worker, &cfg.name).await else {
        return Ok(());
    };
    let mut main = ctx.pool(worker, BackendId::MAIN).get_own().await?;
    if under_way(&mut main)
        .await?
        .iter()
        .all(|r| r.backend != s.backend)
    {
        return Ok(());
    }
    crate::partition::refresh::reload(ctx, worker).await?;
    let pool = ctx.pool(worker, backend).clone();
    let is_named = pool.address() == s.to;
    if !repair(&pool, cfg, s, is_named).await? {
        return Ok(());
    }
    let state = if is_named { "done" } else { "undone" };
    exec(&mut main, &[end_sql(&s.backend, state)]).await?;
    tracing::warn!(backend = %s.backend, from = %s.from, to = %s.to, state, "a switch cut short by its proxy's end was repaired");
    Ok(())
}

/// The main backend's switch, cut short.
async fn resume_main(ctx: &Context, worker: usize, s: &Switch) -> Result<(), ProxyError> {
    let cfg = &ctx.config.backends[0];
    let _admin = ctx.partitioning.admin_lock.lock().await;
    let Ok(_lock) = super::failover_main::main_lock(ctx, worker, &s.from).await else {
        return Ok(());
    };
    let pool = ctx.pool(worker, BackendId::MAIN).clone();
    let servers: Vec<&str> = std::iter::once(cfg.address.as_str())
        .chain(cfg.replicas.iter().map(String::as_str))
        .collect();
    let records = read_main_records(&pool, &servers).await;
    // Committed: the promoted server's record names it, with the highest
    // epoch.
    let Some((primary, _)) = pick_main(&records) else {
        return Ok(());
    };
    let is_named = primary == s.to;
    // Still under way now that the lock is held (its owner may have
    // ended it meanwhile).
    let mut c = pool.connect_to(primary).await?;
    if under_way(&mut c)
        .await?
        .iter()
        .all(|r| r.backend != s.backend)
    {
        return Ok(());
    }
    drop(c);
    if !repair(&pool, cfg, s, is_named).await? {
        return Ok(());
    }
    let state = if is_named { "done" } else { "undone" };
    let at = if is_named { &s.to } else { &s.from };
    let mut c = pool.connect_to(at).await?;
    exec(&mut c, &[end_sql(&s.backend, state)]).await?;
    crate::partition::refresh::follow_main(ctx, worker).await;
    let _ = crate::partition::refresh::reload(ctx, worker).await;
    tracing::warn!(backend = %s.backend, from = %s.from, to = %s.to, state, "a switch of the main backend cut short by its proxy's end was repaired");
    Ok(())
}

/// Finish (`is_named`: the dictionary names the new primary) or undo the
/// switch `s` on its two servers; `false`: left as it is, for a failover
/// cut short before the dictionary named the replica while the old
/// primary is still down (the failover watch carries it on: the replica
/// kept its replication settings, so it is a candidate again).
async fn repair(
    pool: &crate::backend::Pool,
    cfg: &crate::config::BackendConfig,
    s: &Switch,
    is_named: bool,
) -> Result<bool, ProxyError> {
    if is_named {
        let mut b = pool.connect_to(&s.to).await?;
        // A failover keeps the replica's replication settings until the
        // dictionary names it: gone now, so that it never replicates
        // from the old primary again.
        exec(
            &mut b,
            &[
                "STOP SLAVE".into(),
                "RESET SLAVE ALL".into(),
                "SET GLOBAL read_only = 0".into(),
            ],
        )
        .await?;
        if let Ok(mut a) = pool.connect_to(&s.from).await {
            exec(&mut a, &["SET GLOBAL read_only = 1".into()]).await?;
            kill_clients(&mut a).await?;
            // Its position now: the fenced one (the owner killed its
            // other connections with the read lock, and the connections
            // opened since found it read-only). Should it hold what the
            // new primary lacks, it stays read-only and out of
            // replication, to be looked at (`HSCALE REJOIN` refuses it
            // too), rather than replicate around a hole.
            let pos = one(&mut a, "SELECT @@GLOBAL.gtid_binlog_pos")
                .await?
                .unwrap_or_default();
            let state = one(&mut b, "SELECT @@GLOBAL.gtid_binlog_state")
                .await?
                .unwrap_or_default();
            let extra = lacking(&pos, &state);
            if extra.is_empty() {
                replicate_from(&mut a, &s.to, cfg, Some(&pos)).await?;
            } else {
                tracing::error!(backend = %s.backend, old = %s.from, new = %s.to, lacking = ?extra, "the old primary holds transactions the new one lacks: left read-only, not replicating");
            }
        }
        repoint_others(pool, cfg, s).await;
    } else {
        let Ok(mut a) = pool.connect_to(&s.from).await else {
            return Ok(false);
        };
        if !s.was_read_only {
            exec(&mut a, &["SET GLOBAL read_only = 0".into()]).await?;
        }
        let mut b = pool.connect_to(&s.to).await?;
        // Still replicating: the owner died before it stopped it.
        if !super::failover_main::io_running(&mut b).await {
            replicate_from(&mut b, &s.from, cfg, None).await?;
        }
    }
    Ok(true)
}

/// The backend's servers other than the two of switch `s` made replicas of
/// its new primary, as the switch itself does after the dictionary names
/// it: a failover cut short there left them with their I/O thread stopped
/// (each candidate's, to compare positions), replicating from no one.
/// Each from where it is (the new primary received most); one that does
/// not answer is left, logged.
async fn repoint_others(
    pool: &crate::backend::Pool,
    cfg: &crate::config::BackendConfig,
    s: &Switch,
) {
    let others = std::iter::once(cfg.address.as_str())
        .chain(cfg.replicas.iter().map(String::as_str))
        .filter(|a| *a != s.from && *a != s.to);
    for other in others {
        let repointed = async {
            let mut c = pool.connect_to(other).await?;
            replicate_from(&mut c, &s.to, cfg, None).await
        };
        if let Err(e) = repointed.await {
            tracing::warn!(backend = %s.backend, replica = other, error = %e, "a replica was not repointed to the new primary");
        }
    }
}
