//! The dictionary refresh: reading the stored dictionary and making it
//! current ([`reload`], and [`reload_if_idle`] for the periodic reload of
//! `server.rs`), and the fence's side of it: a statement that ran into a
//! table a partition change renamed (a 1146, [`missing_table`], or a stale
//! trigger's, [`is_stale_trigger_error`]) waits for a dictionary that no
//! longer routes there ([`await_newer_dictionary`], answering a [`Fence`])
//! or learns whether a change is in its cutover ([`cutover_under_way`]).
//! Used by `exec/fence.rs` and `exec/prepared/prepare.rs` (statements), by
//! `crate::admin` (every command reads the dictionary afresh) and by
//! `server.rs`.

use std::sync::Arc;

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::BackendId;
use hscale_wire::response::ErrPacket;

use crate::error::ProxyError;
use crate::partition::store;
use crate::runtime::Context;

/// Whether a partition change is in its cutover now, by a fresh read of the
/// dictionary and the journal (false when they cannot be read).
pub async fn cutover_under_way(ctx: &Context, worker: usize) -> bool {
    reload(ctx, worker).await.is_ok()
        && !ctx
            .partitioning
            .cutovers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
}

/// Read the dictionary from the main backend and make it current.
///
/// When the main backend has replicas, its primary may have moved
/// (`admin/failover_main.rs`) without this proxy seeing it (it was down,
/// stopped or cut off): at the first load, and whenever the main backend
/// cannot be read or is read-only (fenced by a switch), each of its
/// servers is asked where the primary is ([`follow_main`]) and the
/// dictionary is read there.
pub async fn reload(ctx: &Context, worker: usize) -> Result<Arc<Dictionary>, ProxyError> {
    if !has_main_replicas(ctx) {
        return reload_from_main(ctx, worker).await;
    }
    let is_first = !ctx
        .partitioning
        .is_loaded
        .load(std::sync::atomic::Ordering::Relaxed);
    if is_first {
        follow_main(ctx, worker).await;
    }
    match reload_from_main(ctx, worker).await {
        Ok(d) => Ok(d),
        Err(e) => {
            if follow_main(ctx, worker).await {
                reload_from_main(ctx, worker).await
            } else {
                Err(e)
            }
        }
    }
}

/// Right after start, before routing anything: read the dictionary if no
/// reload has made one current yet. One at a time (the fence's gate): a
/// statement arriving while another's (or the start's) first load runs
/// waits for it rather than routing with no dictionary (a partitioned
/// table taken for a plain one on the main backend); tried at most once a
/// second while the main backend cannot be read.
pub async fn load_first(ctx: &Context, worker: usize) {
    let is_loaded = || {
        ctx.partitioning
            .is_loaded
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    if is_loaded() {
        return;
    }
    let _g = ctx.partitioning.fence_gate.lock().await;
    if is_loaded() || !ctx.partitioning.should_try_loading() {
        return;
    }
    if let Err(e) = reload(ctx, worker).await {
        tracing::warn!(error = %e, "partition dictionary not readable");
    }
}

fn has_main_replicas(ctx: &Context) -> bool {
    ctx.config
        .backends
        .first()
        .is_some_and(|b| !b.replicas.is_empty())
}

/// Ask each server of the main backend where its primary is
/// (`backend::addresses::read_main_records`) and move this proxy's main
/// backend there if it is elsewhere; true when it moved.
pub async fn follow_main(ctx: &Context, worker: usize) -> bool {
    let cfg = &ctx.config.backends[0];
    let servers: Vec<&str> = std::iter::once(cfg.address.as_str())
        .chain(cfg.replicas.iter().map(String::as_str))
        .collect();
    let pool = ctx.pool(worker, BackendId::MAIN);
    let records = crate::backend::addresses::read_main_records(pool, &servers).await;
    let Some((primary, epoch)) = crate::backend::addresses::pick_main(&records) else {
        return false;
    };
    if primary == pool.address() {
        return false;
    }
    tracing::warn!(backend = %cfg.name, address = primary, epoch, "the main backend's primary is elsewhere: following it");
    let named = [(cfg.name.clone(), primary.to_string())];
    let watches = [pool.watch.clone()];
    let mut only_main = ctx.config.as_ref().clone();
    only_main.backends.truncate(1);
    crate::backend::addresses::apply(&only_main, &watches, &ctx.replicas, &named);
    true
}

/// [`reload`] from the main backend's primary as this proxy knows it;
/// an error when it is read-only (a switch fenced it: [`follow_main`]).
async fn reload_from_main(ctx: &Context, worker: usize) -> Result<Arc<Dictionary>, ProxyError> {
    let mut c = ctx.pool(worker, BackendId::MAIN).get_own().await?;
    if has_main_replicas(ctx) {
        // Once per reload, never per statement: a pooled connection
        // opened before a switch fenced the server still reads it.
        let sql = "SELECT @@GLOBAL.read_only";
        let ro = c
            .query_rows(sql)
            .await?
            .map_err(|e| store::server_error(&c, sql, e))?;
        if ro.strings().first().and_then(|r| r[0].clone()).as_deref() != Some("0") {
            return Err(ProxyError::BackendConnect {
                backend: ctx.config.backends[0].name.clone(),
                address: c.pool().address(),
                reason:
                    "the main backend's server is read-only: a switchover or failover fenced it"
                        .into(),
            });
        }
    }
    if !ctx
        .partitioning
        .is_schema_ready
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        store::ensure_schema(&mut c).await?;
        ctx.partitioning
            .is_schema_ready
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let (d, cutovers, addresses) = store::load_with_cutovers(&mut c, &backend_names(ctx)).await?;
    // The backends' addresses first: a statement planned with the new
    // dictionary connects to the primaries it names.
    apply_addresses(ctx, &addresses);
    ctx.partitioning.replace(d);
    *ctx.partitioning
        .cutovers
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = cutovers;
    ctx.partitioning
        .is_loaded
        .store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(ctx.partitioning.dictionary())
}

/// Whether a server error is a statement's failure to open a table of the
/// `hscale` schema that triggers on its table read or write: a change's
/// capture triggers write its changelog (`hscale.changes_*`), a global
/// table's fence triggers read `hscale.global_tables`. A statement prepared
/// on a backend before such triggers were created (or while they were
/// being created) runs with the tables it locked then, and MariaDB answers
/// 1146 for the table the trigger uses, again at every execution of that
/// prepared statement (measured on 10.11: a loop of prepared DELETEs beside
/// CREATE/DROP TRIGGER fails thousands of times; one prepared anew
/// succeeds). Nothing of the statement was applied; it must run again,
/// prepared anew on another connection. Clients cannot name the `hscale`
/// schema (`session/access.rs`), so no other 1146 names it.
pub fn is_stale_trigger_error(err: &hscale_wire::response::ErrPacket) -> bool {
    err.code == hscale_wire::consts::code::ER_NO_SUCH_TABLE && err.message.contains("'hscale.")
}

/// Whether `err`, a server's answer to a statement, may mean a stale
/// route: 1146, a table the statement was routed to is gone (a change's
/// cutover renamed it). The one rule; the executor's forwarder holds such
/// an answer back with it (`exec/forward.rs`, `holding_missing_tables`).
pub fn is_stale(err: &ErrPacket) -> bool {
    err.code == hscale_wire::consts::code::ER_NO_SUCH_TABLE
}

/// A server's error `err` to a statement, before anything reached the
/// client: for a fenced statement (`is_fenced`: one the fence loop runs,
/// `exec/fence.rs`) a stale route ([`is_stale`]) becomes
/// `Err(ProxyError::StaleRoute)`, which the fence plans and runs again;
/// anything else is `Ok(err)`, the statement's answer. The one place a
/// 1146 becomes a retry: the executor (`exec::fence::stale_route`) and
/// the admin commands a statement runs call it.
pub fn stale_route(is_fenced: bool, err: ErrPacket) -> Result<ErrPacket, ProxyError> {
    if is_fenced && is_stale(&err) {
        return Err(ProxyError::StaleRoute { err });
    }
    Ok(err)
}

/// What a statement that ran into a missing table finds after waiting.
#[derive(Debug)]
pub enum Fence {
    /// A newer dictionary: plan the statement again.
    Newer,
    /// The same dictionary and no change in its cutover: the table is
    /// really missing.
    Unchanged,
    /// The same dictionary, and the changes seen in their cutover while
    /// waiting ended without one (rolled back, e.g. a SETUP_GLOBAL_TABLE
    /// whose owner died: its fence triggers are gone): run it again.
    Ended,
    /// Changes still in their cutover after `[proxy] fence_wait_ms`.
    Timeout(String),
}

/// The fence: wait until the stored dictionary is newer than `planned` and
/// no longer names the table `gone` says is missing,
/// reloading it (one reload at a time per proxy, at most every 20 ms) for
/// as long as a change is in its cutover, at most `[proxy] fence_wait_ms`.
pub async fn await_newer_dictionary(
    ctx: &Context,
    worker: usize,
    planned: u64,
    gone: &ErrPacket,
) -> Fence {
    // Newer is not enough: another table's change (or a change of this
    // table's rule) moves the one version on while this table's cutover is
    // still under way, and planning again would meet the same missing
    // table. Progress is a dictionary that no longer routes to the table
    // the backend says is gone: one that no longer names a partition's
    // table, or, for a plain table's name (an in-place SETUP_TABLE renamed
    // it to its default partition), one that has made it partitioned,
    // global or a view hscale keeps (made through another proxy).
    let gone = missing_table(gone);
    let is_newer = || {
        let d = ctx.partitioning.dictionary();
        if d.stored_version <= planned {
            return false;
        }
        let Some((db, t)) = &gone else {
            return true;
        };
        if d.names_physical(db, t) {
            return false;
        }
        let name = TableName::new(db, t);
        ctx.partitioning.was_retired(db, t)
            || d.table(&name).is_some()
            || d.is_global(&name)
            || d.view(&name).is_some()
    };
    let wait = std::time::Duration::from_millis(ctx.config.proxy.fence_wait_ms);
    let since = std::time::Instant::now();
    let deadline = since + wait;
    let every = std::time::Duration::from_millis(20);
    let mut saw_cutover = false;
    loop {
        if is_newer() {
            return Fence::Newer;
        }
        {
            let mut g = ctx.partitioning.fence_gate.lock().await;
            if is_newer() {
                return Fence::Newer;
            }
            if g.last_reload.is_none_or(|t| t.elapsed() >= every) {
                g.last_reload = Some(std::time::Instant::now());
                let found = reload(ctx, worker).await.map(|_| {
                    ctx.partitioning
                        .cutovers
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .clone()
                });
                match found {
                    Ok(c) => g.cutovers = c,
                    Err(e) => {
                        tracing::warn!(error = %e, "fence: cannot read the dictionary");
                        g.cutovers = vec!["an unreadable dictionary".into()];
                    }
                }
            }
            if is_newer() {
                return Fence::Newer;
            }
            // Only a reload that began after the statement failed can say
            // no change is in its cutover: an earlier one (another session's,
            // within `every`) may predate the rename the statement met.
            let is_fresh = g.last_reload.is_some_and(|t| t >= since);
            if is_fresh && !g.cutovers.is_empty() {
                saw_cutover = true;
            }
            if g.cutovers.is_empty() && is_fresh {
                return if saw_cutover {
                    Fence::Ended
                } else {
                    Fence::Unchanged
                };
            }
            if std::time::Instant::now() >= deadline {
                return Fence::Timeout(g.cutovers.join(", "));
            }
        }
        // The next poll, or at once when this proxy makes a new dictionary
        // current (the change's owner commits and reloads it).
        let replaced = ctx.partitioning.replaced.notified();
        tokio::pin!(replaced);
        replaced.as_mut().enable();
        if is_newer() {
            return Fence::Newer;
        }
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = replaced => {}
        }
    }
}

/// The database and table of a 1146 (`Table 'db.t' doesn't exist`), as
/// the backend names it.
pub fn missing_table(err: &ErrPacket) -> Option<(String, String)> {
    let rest = err.message.strip_prefix("Table '")?;
    let name = &rest[..rest.find("' doesn't exist")?];
    let (db, table) = name.split_once('.')?;
    Some((db.to_string(), table.to_string()))
}

/// The periodic reload: skipped while an admin command on this proxy is
/// changing the dictionary (it reloads and swaps itself), all but the
/// backends' addresses.
pub async fn reload_if_idle(ctx: &Context, worker: usize) -> Result<(), ProxyError> {
    let Ok(_g) = ctx.partitioning.admin_lock.try_lock() else {
        // The backends' primaries still follow the dictionary: a long
        // partition change must not keep this proxy writing to a primary
        // that a switchover or failover replaced.
        let mut c = match ctx.pool(worker, BackendId::MAIN).get_own().await {
            Ok(c) => c,
            Err(e) => {
                // The main backend itself may have moved.
                if has_main_replicas(ctx) {
                    follow_main(ctx, worker).await;
                }
                return Err(e);
            }
        };
        let addresses = store::addresses(&mut c).await?;
        apply_addresses(ctx, &addresses);
        return Ok(());
    };
    reload(ctx, worker).await.map(|_| ())
}

/// Point every pool at the primaries `addresses` names (a backend not
/// named: its config's address), and the backends' replicas at the other
/// servers of each (`backend::addresses`).
pub fn apply_addresses(ctx: &Context, addresses: &[store::BackendAddress]) {
    let watches: Vec<_> = ctx
        .backend_ids()
        .map(|b| ctx.pool(0, b).watch.clone())
        .collect();
    crate::backend::addresses::apply(&ctx.config, &watches, &ctx.replicas, addresses);
}

/// The configured backends' names, in order.
pub fn backend_names(ctx: &Context) -> Vec<&str> {
    ctx.config
        .backends
        .iter()
        .map(|b| b.name.as_str())
        .collect()
}
