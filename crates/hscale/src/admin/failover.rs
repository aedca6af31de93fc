//! `HSCALE SWITCHOVER('backend', 'replica address')`: a backend's replica
//! made its primary, for maintenance, without losing an acknowledged
//! write; the old primary becomes a replica of the new one.
//!
//! ```text
//!  fleet lock (GET_LOCK hscale_switch_<backend> on the main backend)
//!  old primary: FLUSH TABLES WITH READ LOCK (writes wait; a statement
//!               that holds it up past the bound is killed), read_only = 1,
//!               every other client connection killed (statements waiting
//!               for the lock fail, nothing of them applied; a connection
//!               opened later finds it read-only and is not used), its
//!               last position: @@gtid_binlog_pos
//!  replica:     MASTER_GTID_WAIT(position), STOP SLAVE, RESET SLAVE ALL,
//!               read_only = 0
//!  dictionary:  hscale.backend_addresses names the replica, version + 1
//!               (one compare-and-set change: every proxy moves at its next
//!               reload, `backend/addresses.rs`)
//!  fleet:       wait (bounded) until every live proxy's heartbeat shows
//!               the new version
//!  old primary: kill every client connection again, UNLOCK, replica of
//!               the new primary (CHANGE MASTER ... slave_pos)
//!  other replicas of the backend: repointed to the new primary
//! ```
//!
//! Nothing acknowledged is lost: from the read lock on, no write commits on
//! the old primary, the replica applies everything up to that position
//! before it is made writable, and the dictionary names it only then.
//! Statements of proxies that already moved go to the new primary; those
//! of proxies still on the old dictionary wait at the read lock, and fail
//! when their connections are killed (never applied, so never
//! acknowledged). The hscale account's privileges let it write despite
//! `read_only` (MariaDB's READ_ONLY ADMIN): the read lock and the kill are
//! what fence its connections (the kill comes with the lock, so a proxy
//! dying half-way, its lock gone, leaves no connection that writes there),
//! `read_only` fences other accounts and the connections opened later.

use hscale_route::BackendId;

use super::switch_journal::{begin_sql, end_sql, failpoint, Switch};
use super::switch_servers::{
    caught_up, caught_up_and_detached, check_promotable, gtid_rank, kill_clients, lacking, one,
    read_lock, replicate_from,
};
use super::AdminOutput;
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::partition::refresh::reload;
use crate::partition::store::{self, exec};
use crate::runtime::Context;

/// `HSCALE SWITCHOVER(backend, replica)`.
pub(super) async fn switchover(
    ctx: &Context,
    worker: usize,
    backend: BackendId,
    replica: &str,
) -> Result<AdminOutput, ProxyError> {
    let _admin = ctx.partitioning.admin_lock.lock().await;
    let cfg = &ctx.config.backends[backend.index()];
    if backend == BackendId::MAIN {
        return super::failover_main::switchover(ctx, worker, replica).await;
    }
    let pool = ctx.pool(worker, backend).clone();
    let old = pool.address();
    if replica == old {
        return Err(ProxyError::Wrong(format!(
            "{replica} is already the primary of backend '{}'",
            cfg.name
        )));
    }
    let servers: Vec<&str> = std::iter::once(cfg.address.as_str())
        .chain(cfg.replicas.iter().map(String::as_str))
        .collect();
    if !servers.contains(&replica) {
        return Err(ProxyError::Wrong(format!(
            "{replica} is not a server of backend '{}': its servers are {}",
            cfg.name,
            servers.join(", ")
        )));
    }
    let _lock = fleet_lock(ctx, worker, &cfg.name).await?;
    let mut a = pool.connect_to(&old).await?;
    let mut b = pool.connect_to(replica).await?;
    check_promotable(&mut b, replica).await?;

    // The old primary stops taking writes: its last position is final.
    let was_read_only = one(&mut a, "SELECT @@GLOBAL.read_only").await?;
    // The journal's row (`switch_journal.rs` repairs a switch cut short).
    let mut journal = Switch {
        backend: cfg.name.clone(),
        from: old.clone(),
        to: replica.to_string(),
        position: String::new(),
        was_read_only: was_read_only.as_deref() != Some("0"),
    };
    let owner = super::change::journal::owner(ctx);
    let note = |sql: String| async move {
        let mut main = ctx.pool(worker, BackendId::MAIN).get_own().await?;
        exec(&mut main, &[sql]).await
    };
    note(begin_sql(&journal, &owner)).await?;
    let fenced = read_lock(&mut a).await?;
    let pos = one(&mut a, "SELECT @@GLOBAL.gtid_binlog_pos")
        .await?
        .unwrap_or_default();
    journal.position = pos.clone();
    note(begin_sql(&journal, &owner)).await?;
    let promoted = async {
        caught_up_and_detached(&mut b, replica, &pos).await?;
        failpoint("after_promote");
        let version = commit_address(ctx, worker, &cfg.name, replica, "switchover").await?;
        failpoint("after_address");
        // Writable once the dictionary names it (the replica monitors
        // make a server that does not replicate read-only until then).
        exec(&mut b, &["SET GLOBAL read_only = 0".into()]).await?;
        Ok(version)
    }
    .await;
    let version = match promoted {
        Ok(v) => v,
        Err(e) => {
            // Undo: the old primary writable again (the read lock goes
            // with its connection), the replica replicating again.
            if was_read_only.as_deref() == Some("0") {
                let _ = exec(&mut a, &["SET GLOBAL read_only = 0".into()]).await;
            }
            let _ = exec(&mut a, &["UNLOCK TABLES".into()]).await;
            if let Ok(mut b) = pool.connect_to(replica).await {
                let _ = replicate_from(&mut b, &old, cfg, None).await;
            }
            let _ = note(end_sql(&cfg.name, "undone")).await;
            return Err(e);
        }
    };
    tracing::warn!(backend = %cfg.name, from = %old, to = replica, version, "switchover: the replica is the primary");
    // This proxy moves now; the others at their next reload.
    reload(ctx, worker).await?;
    let stale = await_fleet(ctx, worker, version).await;
    // Nothing more may reach the old primary: statements still waiting
    // for its read lock fail, connections of proxies that moved are gone.
    let killed = fenced + kill_clients(&mut a).await?;
    exec(&mut a, &["UNLOCK TABLES".into()]).await?;
    let mut notes = Vec::new();
    if let Err(e) = replicate_from(&mut a, replica, cfg, Some(&pos)).await {
        notes.push(format!("the old primary {old} is not replicating: {e}"));
    }
    for other in servers.iter().filter(|s| **s != replica && **s != old) {
        let repointed = async {
            let mut c = pool.connect_to(other).await?;
            replicate_from(&mut c, replica, cfg, None).await
        };
        if let Err(e) = repointed.await {
            notes.push(format!("replica {other} was not repointed: {e}"));
        }
    }
    note(end_sql(&cfg.name, "done")).await?;
    let head = format!(
        "backend '{}': primary {replica} (was {old}, now its replica), dictionary version {version}; {killed} connection(s) to the old primary killed",
        cfg.name
    );
    Ok(switched(ctx, head, stale, notes))
}

/// `HSCALE REJOIN(backend, server)`: `server`, a server of the backend's
/// set that is not its primary (an old primary back after a failover),
/// made a read-only replica of the primary from its own position; refused
/// (1210, nothing changed) when it holds a transaction the primary lacks
/// (one its clients were never acknowledged, committed to its binary log
/// before it died: replicating around it would keep it in its tables), so
/// that it must be rebuilt from a backup of the primary instead.
pub(super) async fn rejoin(
    ctx: &Context,
    worker: usize,
    backend: BackendId,
    server: &str,
) -> Result<AdminOutput, ProxyError> {
    let _admin = ctx.partitioning.admin_lock.lock().await;
    let cfg = &ctx.config.backends[backend.index()];
    if backend == BackendId::MAIN && !cfg.replicas.is_empty() {
        crate::partition::refresh::follow_main(ctx, worker).await;
    }
    reload(ctx, worker).await?;
    let pool = ctx.pool(worker, backend).clone();
    let primary = pool.address();
    let servers: Vec<&str> = std::iter::once(cfg.address.as_str())
        .chain(cfg.replicas.iter().map(String::as_str))
        .collect();
    if !servers.contains(&server) {
        return Err(ProxyError::Wrong(format!(
            "{server} is not a server of backend '{}': its servers are {}",
            cfg.name,
            servers.join(", ")
        )));
    }
    if server == primary {
        return Err(ProxyError::Wrong(format!(
            "{server} is the primary of backend '{}'",
            cfg.name
        )));
    }
    // No switch of this backend meanwhile.
    let _lock = if backend == BackendId::MAIN {
        super::failover_main::main_lock(ctx, worker, &primary).await?
    } else {
        vec![fleet_lock(ctx, worker, &cfg.name).await?]
    };
    let mut p = pool.connect_to(&primary).await?;
    let mut c = pool.connect_to(server).await?;
    // Never written again by anyone: read-only, its clients gone.
    exec(&mut c, &["SET GLOBAL read_only = 1".into()]).await?;
    kill_clients(&mut c).await?;
    let pos = one(&mut c, "SELECT @@GLOBAL.gtid_binlog_pos")
        .await?
        .unwrap_or_default();
    let state = one(&mut p, "SELECT @@GLOBAL.gtid_binlog_state")
        .await?
        .unwrap_or_default();
    let extra = lacking(&pos, &state);
    if !extra.is_empty() {
        return Err(ProxyError::Wrong(format!(
            "{server} holds transactions the primary {primary} of backend '{}' lacks ({}): it cannot replicate from it; rebuild it from a backup of the primary (it stays read-only)",
            cfg.name,
            extra.join(", ")
        )));
    }
    replicate_from(&mut c, &primary, cfg, Some(&pos)).await?;
    Ok(AdminOutput::Ok {
        info: format!(
            "{server} replicates from {primary}, the primary of backend '{}', from its position {pos}",
            cfg.name
        ),
    })
}

/// A switchover's answer: `head`, then the proxies that had not loaded
/// the new dictionary in time (`stale`) and what went wrong after the
/// switch (`notes`).
pub(super) fn switched(
    ctx: &Context,
    mut info: String,
    stale: u64,
    notes: Vec<String>,
) -> AdminOutput {
    if stale > 0 {
        info.push_str(&format!(
            "; {stale} proxy(ies) had not loaded the new dictionary within {} ms",
            fleet_wait(ctx).as_millis()
        ));
    }
    for n in notes {
        info.push_str("; ");
        info.push_str(&n);
    }
    AdminOutput::Ok { info }
}

/// The switch lock of backend `name` on the main backend, on a connection
/// of its own (closing it releases the lock): one switchover or failover
/// of a backend at a time in the fleet.
pub(super) async fn fleet_lock(
    ctx: &Context,
    worker: usize,
    name: &str,
) -> Result<BackendConn, ProxyError> {
    let mut c = ctx
        .pool(worker, BackendId::MAIN)
        .connect_to(&ctx.pool(worker, BackendId::MAIN).address())
        .await?;
    let lock = format!("hscale_switch_{name}");
    let sql = format!(
        "SELECT GET_LOCK({}, 0)",
        quote_str(&lock[..lock.len().min(64)])
    );
    if one(&mut c, &sql).await?.as_deref() != Some("1") {
        return Err(ProxyError::ChangeBusy {
            running: "a switchover or failover of it, through another proxy".into(),
            table: format!("backend {name}"),
            ms: 0,
        });
    }
    Ok(c)
}

/// Store `address` as `backend`'s primary (one dictionary change); the new
/// version.
async fn commit_address(
    ctx: &Context,
    worker: usize,
    backend: &str,
    address: &str,
    reason: &str,
) -> Result<u64, ProxyError> {
    let sql = store::set_address_sql(
        backend,
        address,
        &super::change::journal::owner(ctx),
        reason,
        0,
    );
    for attempt in 1.. {
        let version = reload(ctx, worker).await?.stored_version;
        let mut main = ctx.pool(worker, BackendId::MAIN).get_own().await?;
        match store::commit_change(&mut main, version, std::slice::from_ref(&sql)).await {
            Err(ProxyError::DictionaryMoved) if attempt < 50 => {
                super::moved_pause(attempt).await;
            }
            r => return r,
        }
    }
    Err(ProxyError::DictionaryMoved)
}

/// How long a switch waits for the fleet to load its dictionary.
pub(super) fn fleet_wait(ctx: &Context) -> std::time::Duration {
    let p = &ctx.config.proxy;
    std::time::Duration::from_millis(
        p.fence_wait_ms
            .max(2 * (p.reload_interval_ms + p.heartbeat_interval_ms)),
    )
}

/// Wait until every live proxy (a heartbeat within three intervals) shows
/// dictionary `version` or later, at most [`fleet_wait`]; the proxies that
/// still did not.
pub(super) async fn await_fleet(ctx: &Context, worker: usize, version: u64) -> u64 {
    await_proxies(ctx, worker, version, None).await
}

/// [`await_fleet`], for the proxies `ids` when given (those live before a
/// switch of the main backend, whose heartbeats stop while they still
/// write to the fenced old primary) rather than those with a fresh
/// heartbeat.
pub(super) async fn await_proxies(
    ctx: &Context,
    worker: usize,
    version: u64,
    ids: Option<&[String]>,
) -> u64 {
    let beat_us = 3 * ctx.config.proxy.heartbeat_interval_ms.max(100) * 1000;
    let which = match ids {
        Some([]) => return 0,
        Some(ids) => format!(
            "id IN ({})",
            ids.iter()
                .map(|i| quote_str(i))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!("heartbeat > NOW(6) - INTERVAL {beat_us} MICROSECOND"),
    };
    let sql = format!(
        "SELECT COUNT(*) FROM `hscale`.`proxies` WHERE dictionary_version < {version} \
         AND id <> {} AND {which}",
        quote_str(&ctx.fleet.id)
    );
    let deadline = std::time::Instant::now() + fleet_wait(ctx);
    loop {
        let stale = async {
            let mut c = ctx.pool(worker, BackendId::MAIN).get_own().await?;
            one(&mut c, &sql).await
        }
        .await;
        let stale = match stale {
            Ok(n) => n.and_then(|n| n.parse().ok()).unwrap_or(0),
            Err(e) => {
                tracing::warn!(error = %e, "switchover: cannot read the fleet's dictionary versions");
                return 0;
            }
        };
        if stale == 0 || std::time::Instant::now() >= deadline {
            return stale;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The failover watch (`[proxy] failover_after_ms` > 0, worker 0 of every
/// proxy): every twentieth of the bound, each backend with replicas whose
/// primary has been found down (`BackendWatch::down_since_ms`:
/// a connect or a ping failed, or it stopped answering) for at least the
/// bound is failed over ([`failover`]; the main backend by
/// `failover_main::failover`) by the proxy that takes its switch lock; the
/// others find the dictionary moved. Ends with the proxy.
pub async fn watch(ctx: std::sync::Weak<Context>, worker: usize) {
    loop {
        let Some(c) = ctx.upgrade() else { return };
        let after = c.config.proxy.failover_after_ms;
        // A twentieth of the bound (50 to 250 ms), whatever the health
        // check's interval: each round reads one atomic per backend with
        // replicas, and a round of the health check's 5 s made the first
        // benchmark wait up to 5 s past the bound (bench/RESULTS.md).
        let every = std::time::Duration::from_millis((after / 20).clamp(50, 250));
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        for b in c.backend_ids() {
            if c.config.backends[b.index()].replicas.is_empty() {
                continue;
            }
            let pool = c.pool(worker, b);
            let Some(since) = pool.watch.down_since_ms() else {
                continue;
            };
            if now_ms.saturating_sub(since) < after {
                continue;
            }
            let down = pool.address();
            let done = if b == BackendId::MAIN {
                super::failover_main::failover(&c, worker, &down).await
            } else {
                failover(&c, worker, b, &down).await
            };
            match done {
                Ok(Some(info)) => {
                    tracing::warn!(backend = %c.config.backends[b.index()].name, info, "failover")
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(backend = %c.config.backends[b.index()].name, error = %e, "failover failed")
                }
            }
        }
        drop(c);
        tokio::time::sleep(every).await;
    }
}

/// Replace `backend`'s primary `down`, found down for
/// `failover_after_ms`, by its most advanced replica:
///
/// ```text
///  switch lock (or another proxy is at it: nothing to do)
///  the dictionary read again: already moved → nothing to do
///  `down` probed once more: it answers → nothing to do
///  each replica: STOP SLAVE IO_THREAD, apply what it received
///    (MASTER_GTID_WAIT(Gtid_IO_Pos)), its position read
///  the one with the highest position: the journal's row (switching, on
///    the main backend), STOP SLAVE; named in the dictionary (one
///    change); RESET SLAVE ALL, read_only = 0
///  the other replicas: replicas of it; the row done
/// ```
/// A proxy that dies half-way leaves the row: before the dictionary
/// names the replica, the next attempt (the primary is still down) finds
/// it among the candidates again, since it still has its replication
/// settings, and carries on; after, the next proxy's reload finishes it
/// (`switch_journal.rs`).
/// With semi-synchronous replication every write the old primary
/// acknowledged reached a replica's relay log, so the most advanced
/// replica has it. The old primary, when it returns, is found by the
/// replica monitor (not a replica, writable) and made read-only; no
/// proxy routes to it, since the dictionary no longer names it.
/// `Ok(None)`: nothing was done.
pub(super) async fn failover(
    ctx: &Context,
    worker: usize,
    backend: BackendId,
    down: &str,
) -> Result<Option<String>, ProxyError> {
    let cfg = &ctx.config.backends[backend.index()];
    let started = std::time::Instant::now();
    let _admin = ctx.partitioning.admin_lock.lock().await;
    let Ok(_lock) = fleet_lock(ctx, worker, &cfg.name).await else {
        return Ok(None);
    };
    reload(ctx, worker).await?;
    let pool = ctx.pool(worker, backend).clone();
    if pool.address() != down {
        return Ok(None);
    }
    if pool.connect_to(down).await.is_ok() {
        pool.watch.note_up();
        return Ok(None);
    }
    let servers: Vec<&str> = std::iter::once(cfg.address.as_str())
        .chain(cfg.replicas.iter().map(String::as_str))
        .filter(|s| *s != down)
        .collect();
    let mut candidates = Vec::new();
    for s in &servers {
        match caught_up(&pool, s).await {
            Ok((conn, pos)) => candidates.push((*s, conn, pos)),
            Err(e) => tracing::warn!(replica = s, error = %e, "failover: replica left out"),
        }
    }
    let Some(best) = (0..candidates.len()).max_by_key(|&i| gtid_rank(&candidates[i].2)) else {
        return Err(ProxyError::Refused(format!(
            "backend '{}': no replica of it answers; its primary {down} stays",
            cfg.name
        )));
    };
    let caught = started.elapsed();
    let (chosen, mut conn, pos) = candidates.swap_remove(best);
    // The journal's row first, so that a proxy dying from here on leaves
    // a switch the next one finishes (`switch_journal.rs`); the chosen
    // replica keeps its replication settings until the dictionary names
    // it, so that until then it is still a candidate of the next attempt.
    let journal = Switch {
        backend: cfg.name.clone(),
        from: down.to_string(),
        to: chosen.to_string(),
        position: pos.clone(),
        was_read_only: false,
    };
    {
        let mut main = ctx.pool(worker, BackendId::MAIN).get_own().await?;
        exec(
            &mut main,
            &[begin_sql(&journal, &super::change::journal::owner(ctx))],
        )
        .await?;
    }
    exec(&mut conn, &["STOP SLAVE".into()]).await?;
    failpoint("after_promote");
    let version = commit_address(ctx, worker, &cfg.name, chosen, "failover").await?;
    failpoint("after_address");
    // Writable once the dictionary names it (see `switchover`).
    exec(
        &mut conn,
        &["RESET SLAVE ALL".into(), "SET GLOBAL read_only = 0".into()],
    )
    .await?;
    reload(ctx, worker).await?;
    let named = started.elapsed();
    let mut notes = Vec::new();
    for (other, mut c, _) in candidates {
        if let Err(e) = replicate_from(&mut c, chosen, cfg, None).await {
            notes.push(format!("replica {other} was not repointed: {e}"));
        }
    }
    let stale = await_fleet(ctx, worker, version).await;
    let mut main = ctx.pool(worker, BackendId::MAIN).get_own().await?;
    exec(&mut main, &[end_sql(&cfg.name, "done")]).await?;
    let mut info = format!(
        "backend '{}': primary {chosen} (position {pos}) in place of {down}, down for {} ms or more; dictionary version {version}; replicas caught up after {} ms, named and writable after {} ms, the fleet awaited after {} ms",
        cfg.name,
        ctx.config.proxy.failover_after_ms,
        caught.as_millis(),
        named.as_millis(),
        started.elapsed().as_millis()
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
