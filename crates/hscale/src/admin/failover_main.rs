//! Switchover and failover of the main backend, which holds the
//! dictionary, the journal, the commit decisions and the sequences
//! (issue 34 item 4). The steps are those of `admin/failover.rs`; what
//! differs is where the switch is recorded and who may decide it:
//!
//! ```text
//!  switch lock: GET_LOCK hscale_switch_<main> on a majority of the voters
//!               (every other backend's primary, every server of the main
//!               backend's set but its primary)
//!  old primary: the live proxies listed; FLUSH TABLES WITH READ LOCK,
//!               read_only = 1, its other clients killed, its position
//!  replica:     MASTER_GTID_WAIT, STOP SLAVE, RESET SLAVE ALL; on it the
//!               main backend's record (hscale.backend_addresses) names it
//!               with an epoch above every server's record, dictionary
//!               version + 1; read_only = 0
//!  fleet:       every proxy's next reload finds the old primary read-only,
//!               asks each server of the set for its record and follows the
//!               highest epoch (`partition::refresh::follow_main`); the
//!               listed proxies' versions awaited on the new primary
//!  old primary: its clients killed, UNLOCK, a replica of the new one
//! ```
//!
//! **Finding the main backend.** The config names the main backend's
//! servers (`address` and `replicas`). Its record is part of the
//! dictionary, so every server of the set carries it by replication: the
//! new primary and its replicas name the new primary, with the highest
//! epoch; an old primary that missed the switch (dead, cut off, restarted
//! without rejoining) names itself with a lower one. A proxy asks every
//! server it reaches at its first load and whenever the main backend
//! cannot be read or is read-only, and takes the highest epoch.
//!
//! **Who decides a failover of it.** The journal and the locks are on the
//! dead server, so the decision moves to a majority of the voters: a proxy
//! fails the main backend over only while it holds the switch lock on more
//! than half of them (two proxies cannot both), and only when every
//! replica of the main backend it reaches has lost its primary too
//! (`Slave_IO_Running` not `Yes`): a proxy cut off from a main backend that
//! its replicas still reach does nothing.

use hscale_route::BackendId;

use super::failover::{await_fleet, await_proxies};
use super::switch_journal::{begin_sql, end_sql, failpoint, Switch};
use super::switch_servers::{
    caught_up, caught_up_and_detached, check_promotable, gtid_rank, kill_clients, one, read_lock,
    replicate_from,
};
use super::AdminOutput;
use crate::backend::addresses::{next_epoch, read_main_records};
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::partition::refresh::{follow_main, reload};
use crate::partition::store::{self, exec};
use crate::runtime::Context;

/// The main backend's servers: its config address, then its replicas.
fn servers(ctx: &Context) -> Vec<&str> {
    let cfg = &ctx.config.backends[0];
    std::iter::once(cfg.address.as_str())
        .chain(cfg.replicas.iter().map(String::as_str))
        .collect()
}

/// The main backend's switch lock: `GET_LOCK` on more than half of the
/// voters (every other backend's primary, and the main backend's servers
/// but `primary`), each on a connection of its own; closing them releases
/// it. Two proxies cannot both hold a majority.
pub(super) async fn main_lock(
    ctx: &Context,
    worker: usize,
    primary: &str,
) -> Result<Vec<BackendConn>, ProxyError> {
    let name = &ctx.config.backends[0].name;
    let lock = format!("hscale_switch_{name}");
    let sql = format!(
        "SELECT GET_LOCK({}, 0)",
        quote_str(&lock[..lock.len().min(64)])
    );
    let mut voters: Vec<(BackendId, String)> = ctx
        .backend_ids()
        .skip(1)
        .map(|b| (b, ctx.pool(worker, b).address()))
        .collect();
    voters.extend(
        servers(ctx)
            .into_iter()
            .filter(|s| *s != primary)
            .map(|s| (BackendId::MAIN, s.to_string())),
    );
    let need = voters.len() / 2 + 1;
    let mut held = Vec::new();
    for (b, address) in &voters {
        let Ok(mut c) = ctx.pool(worker, *b).connect_to(address).await else {
            continue;
        };
        if one(&mut c, &sql).await.ok().flatten().as_deref() == Some("1") {
            held.push(c);
        }
    }
    if held.len() < need {
        return Err(ProxyError::ChangeBusy {
            running: format!(
                "a switchover or failover of it through another proxy, or too few voters reached ({} of {}, {need} needed)",
                held.len(),
                voters.len()
            ),
            table: format!("backend {name}"),
            ms: 0,
        });
    }
    Ok(held)
}

/// The ids of the other proxies with a fresh heartbeat, read on `c`.
async fn live_proxies(ctx: &Context, c: &mut BackendConn) -> Result<Vec<String>, ProxyError> {
    let beat_us = 3 * ctx.config.proxy.heartbeat_interval_ms.max(100) * 1000;
    let sql = format!(
        "SELECT id FROM `hscale`.`proxies` WHERE id <> {} \
         AND heartbeat > NOW(6) - INTERVAL {beat_us} MICROSECOND",
        quote_str(&ctx.fleet.id)
    );
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| store::server_error(c, &sql, e))?;
    Ok(r.strings()
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect())
}

/// On the promoted server `b`: the main backend's record names it with an
/// epoch above every record seen, one dictionary change made there; the
/// new version.
async fn commit_main_record(
    ctx: &Context,
    b: &mut BackendConn,
    address: &str,
    epoch: u64,
    reason: &str,
) -> Result<u64, ProxyError> {
    let sql = "SELECT version FROM `hscale`.`dictionary_version` WHERE id = 1";
    let version: u64 = one(b, sql).await?.and_then(|v| v.parse().ok()).unwrap_or(0);
    let record = store::set_address_sql(
        &ctx.config.backends[0].name,
        address,
        &super::change::journal::owner(ctx),
        reason,
        epoch,
    );
    store::commit_change(b, version, &[record]).await
}

/// `HSCALE SWITCHOVER` of the main backend (see the module's steps).
pub(super) async fn switchover(
    ctx: &Context,
    worker: usize,
    replica: &str,
) -> Result<AdminOutput, ProxyError> {
    let cfg = &ctx.config.backends[0];
    let pool = ctx.pool(worker, BackendId::MAIN).clone();
    let old = pool.address();
    if replica == old {
        return Err(ProxyError::Wrong(format!(
            "{replica} is already the primary of backend '{}'",
            cfg.name
        )));
    }
    let servers = servers(ctx);
    if !servers.contains(&replica) {
        return Err(ProxyError::Wrong(format!(
            "{replica} is not a server of backend '{}': its servers are {}",
            cfg.name,
            servers.join(", ")
        )));
    }
    let _lock = main_lock(ctx, worker, &old).await?;
    let mut a = pool.connect_to(&old).await?;
    let mut b = pool.connect_to(replica).await?;
    check_promotable(&mut b, replica).await?;
    let live = live_proxies(ctx, &mut a).await?;
    let records = read_main_records(&pool, &servers).await;

    let was_read_only = one(&mut a, "SELECT @@GLOBAL.read_only").await?;
    // The journal's row, on the old primary: the replica has it once it
    // caught up (`switch_journal.rs` repairs a switch cut short).
    let journal = Switch {
        backend: cfg.name.clone(),
        from: old.clone(),
        to: replica.to_string(),
        position: String::new(),
        was_read_only: was_read_only.as_deref() != Some("0"),
    };
    exec(
        &mut a,
        &[begin_sql(&journal, &super::change::journal::owner(ctx))],
    )
    .await?;
    let fenced = read_lock(&mut a).await?;
    let pos = one(&mut a, "SELECT @@GLOBAL.gtid_binlog_pos")
        .await?
        .unwrap_or_default();
    let promoted = async {
        caught_up_and_detached(&mut b, replica, &pos).await?;
        failpoint("after_promote");
        let version =
            commit_main_record(ctx, &mut b, replica, next_epoch(&records), "switchover").await?;
        failpoint("after_address");
        exec(&mut b, &["SET GLOBAL read_only = 0".into()]).await?;
        Ok(version)
    }
    .await;
    let version = match promoted {
        Ok(v) => v,
        Err(e) => {
            if was_read_only.as_deref() == Some("0") {
                let _ = exec(&mut a, &["SET GLOBAL read_only = 0".into()]).await;
            }
            let _ = exec(&mut a, &["UNLOCK TABLES".into()]).await;
            if let Ok(mut b) = pool.connect_to(replica).await {
                let _ = replicate_from(&mut b, &old, cfg, None).await;
            }
            if let Ok(mut a) = pool.connect_to(&old).await {
                let _ = exec(&mut a, &[end_sql(&cfg.name, "undone")]).await;
            }
            return Err(e);
        }
    };
    tracing::warn!(backend = %cfg.name, from = %old, to = replica, version, "switchover of the main backend: the replica is the primary");
    follow_main(ctx, worker).await;
    reload(ctx, worker).await?;
    let stale = await_proxies(ctx, worker, version, Some(&live)).await;
    let killed = fenced + kill_clients(&mut a).await?;
    exec(&mut a, &["UNLOCK TABLES".into()]).await?;
    let mut notes = Vec::new();
    if let Err(e) = replicate_from(&mut a, replica, cfg, Some(&pos)).await {
        notes.push(format!("the old primary {old} is not replicating: {e}"));
    }
    exec(&mut b, &[end_sql(&cfg.name, "done")]).await?;
    for other in servers.iter().filter(|s| **s != replica && **s != old) {
        let repointed = async {
            let mut c = pool.connect_to(other).await?;
            replicate_from(&mut c, replica, cfg, None).await
        };
        if let Err(e) = repointed.await {
            notes.push(format!("replica {other} was not repointed: {e}"));
        }
    }
    let head = format!(
        "backend '{}' (the main backend): primary {replica} (was {old}, now its replica), dictionary version {version}; {killed} connection(s) to the old primary killed",
        cfg.name
    );
    Ok(super::failover::switched(ctx, head, stale, notes))
}

/// Replace the main backend's primary `down`, found down for
/// `failover_after_ms`, by its most advanced replica; `Ok(None)`: nothing
/// was done (another proxy holds the lock, the primary answers again, a
/// replica still reaches it, or the primary moved already).
pub(super) async fn failover(
    ctx: &Context,
    worker: usize,
    down: &str,
) -> Result<Option<String>, ProxyError> {
    let cfg = &ctx.config.backends[0];
    let _admin = ctx.partitioning.admin_lock.lock().await;
    let Ok(_lock) = main_lock(ctx, worker, down).await else {
        return Ok(None);
    };
    // Another proxy may have failed it over already.
    if follow_main(ctx, worker).await {
        let _ = reload(ctx, worker).await;
        return Ok(None);
    }
    let pool = ctx.pool(worker, BackendId::MAIN).clone();
    if pool.address() != down {
        return Ok(None);
    }
    if pool.connect_to(down).await.is_ok() {
        pool.watch.note_up();
        return Ok(None);
    }
    let servers = servers(ctx);
    let records = read_main_records(&pool, &servers).await;
    // The replicas are the second observers: one that still receives
    // from the primary says this proxy, not the primary, is cut off.
    let others: Vec<&str> = servers.iter().copied().filter(|s| *s != down).collect();
    for s in &others {
        if let Ok(mut c) = pool.connect_to(s).await {
            if io_running(&mut c).await {
                return Err(ProxyError::Refused(format!(
                    "the main backend's replica {s} still receives from {down}: not failed over (this proxy may be cut off from it)"
                )));
            }
        }
    }
    let mut candidates = Vec::new();
    for s in &others {
        match caught_up(&pool, s).await {
            Ok((conn, pos)) => candidates.push((*s, conn, pos)),
            Err(e) => tracing::warn!(replica = s, error = %e, "failover: replica left out"),
        }
    }
    let Some(best) = (0..candidates.len()).max_by_key(|&i| gtid_rank(&candidates[i].2)) else {
        return Err(ProxyError::Refused(format!(
            "backend '{}' (the main backend): no replica of it answers; its primary {down} stays",
            cfg.name
        )));
    };
    let (chosen, mut conn, pos) = candidates.swap_remove(best);
    // Its replication stopped (settings kept: until the record names it,
    // the next attempt finds it a candidate again), the journal's row
    // written there (the new primary's first transaction), the record.
    // A proxy dying half-way: `admin/failover.rs::failover`.
    exec(&mut conn, &["STOP SLAVE".into()]).await?;
    let journal = Switch {
        backend: cfg.name.clone(),
        from: down.to_string(),
        to: chosen.to_string(),
        position: pos.clone(),
        was_read_only: false,
    };
    exec(
        &mut conn,
        &[begin_sql(&journal, &super::change::journal::owner(ctx))],
    )
    .await?;
    failpoint("after_promote");
    let version =
        commit_main_record(ctx, &mut conn, chosen, next_epoch(&records), "failover").await?;
    failpoint("after_address");
    exec(
        &mut conn,
        &["RESET SLAVE ALL".into(), "SET GLOBAL read_only = 0".into()],
    )
    .await?;
    follow_main(ctx, worker).await;
    reload(ctx, worker).await?;
    let mut notes = Vec::new();
    for (other, mut c, _) in candidates {
        if let Err(e) = replicate_from(&mut c, chosen, cfg, None).await {
            notes.push(format!("replica {other} was not repointed: {e}"));
        }
    }
    let stale = await_fleet(ctx, worker, version).await;
    exec(&mut conn, &[end_sql(&cfg.name, "done")]).await?;
    let mut info = format!(
        "backend '{}' (the main backend): primary {chosen} (position {pos}) in place of {down}, down for {} ms or more; dictionary version {version}",
        cfg.name, ctx.config.proxy.failover_after_ms
    );
    if stale > 0 {
        info.push_str(&format!("; {stale} proxy(ies) had not loaded it yet"));
    }
    for n in notes {
        info.push_str("; ");
        info.push_str(&n);
    }
    Ok(Some(info))
}

/// Whether a server's replication I/O thread is connected to its primary.
pub(super) async fn io_running(c: &mut BackendConn) -> bool {
    let Ok(Ok(status)) = c.query_rows("SHOW SLAVE STATUS").await else {
        return false;
    };
    let at = status
        .columns
        .iter()
        .position(|col| col.name.eq_ignore_ascii_case("Slave_IO_Running"));
    status
        .strings()
        .into_iter()
        .next()
        .and_then(|r| at.and_then(|i| r.get(i).cloned().flatten()))
        .as_deref()
        == Some("Yes")
}
