//! The owner fence: a change's owner that stops (SIGSTOP, a frozen host)
//! keeps its connections and its owner lock, yet must not stall the change
//! forever, nor write anything once another proxy took it over.
//!
//! - **Heartbeat.** The owner's lock connection sets the journal row's
//!   `heartbeat` every [`BEAT`] while its epoch is the row's
//!   ([`Owner::beat`]). A heartbeat older than `[proxy] takeover_after_ms`
//!   (server clock of the main backend, one clock) lets any proxy take the
//!   change over although its lock is held (`takeover.rs`).
//! - **Registration.** Before its first write on a backend connection, the
//!   owner records `epoch/backend/thread id/server start` in the row's `fence`, by an
//!   UPDATE guarded by its epoch ([`register`]); it fails once the change
//!   was taken over, and the owner stops.
//! - **Take-over.** The taker raises the epoch by compare-and-set ([`flip`]),
//!   then kills every connection registered under an older epoch and waits
//!   until the backends show them gone ([`kill_registered`]); the owner lock
//!   (its connection is registered too) is free then. Registration and the
//!   flip lock the same journal row, so every connection the old owner can
//!   write on was registered before the flip, and is dead before the
//!   take-over undoes or finishes anything. A woken owner finds its
//!   connections killed, cannot register new ones, and its journal
//!   transitions (`mark_cutover`, the commit) are guarded by its epoch.

use hscale_route::BackendId;

use crate::admin::{conn, wrong};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::partition::store::server_error;
use crate::runtime::Context;

/// How often an owner's heartbeat is written.
const BEAT: std::time::Duration = std::time::Duration::from_millis(1_000);
/// How long a take-over waits for killed connections to be gone.
const KILL_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The epoch of a change its first owner runs.
pub(in crate::admin) const FIRST_EPOCH: u64 = 0;

/// Holds the owner lock of a running change and writes its heartbeat;
/// dropping it (or the owner's death, or a take-over's KILL) closes the
/// lock's connection and so releases the lock.
pub(in crate::admin) struct Owner {
    conn: Option<PooledConn>,
    beat: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(t) = self.beat.take() {
            t.abort(); // drops the lock's connection with the task
        }
    }
}

impl Owner {
    pub(in crate::admin) fn new(conn: PooledConn) -> Owner {
        Owner {
            conn: Some(conn),
            beat: None,
        }
    }

    /// Register the lock's connection for operation `id` at `epoch` (a
    /// take-over kills it, which frees the lock) and write the heartbeat on
    /// it every [`BEAT`] from now on, until the epoch moves on.
    pub(in crate::admin) async fn beat(
        &mut self,
        ctx: &Context,
        worker: usize,
        id: u64,
        epoch: u64,
    ) -> Result<(), ProxyError> {
        let Some(mut c) = self.conn.take() else {
            return Ok(());
        };
        register(ctx, worker, id, epoch, BackendId::MAIN, &mut c).await?;
        let sql = format!(
            "UPDATE `hscale`.`operations` SET heartbeat = NOW(6) WHERE id = {id} AND epoch = {epoch}"
        );
        self.beat = Some(tokio::spawn(async move {
            loop {
                match c.command(&BackendConn::payload_for_query(&sql)).await {
                    Ok(Ok(ok)) if ok.affected_rows == 1 => {}
                    Ok(Ok(_)) => {
                        tracing::warn!(
                            operation = id,
                            "the change was taken over by another proxy; its heartbeat stops"
                        );
                        return;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(operation = id, error = %e.message, "heartbeat failed");
                    }
                    Err(e) => {
                        tracing::warn!(operation = id, error = %e, "heartbeat connection lost");
                        return;
                    }
                }
                tokio::time::sleep(BEAT).await;
            }
        }));
        Ok(())
    }
}

/// Record that operation `id`'s owner at `epoch` writes on `c` (a
/// connection to backend `b`), before it does. Fails when the change was
/// taken over: the owner must stop. The entry names the server's start
/// ([`server_start`], read on `c` itself): thread ids start again after a
/// backend restarts, and a take-over must not kill a connection of a later
/// start that reuses one.
pub(in crate::admin) async fn register(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
    b: BackendId,
    c: &mut BackendConn,
) -> Result<(), ProxyError> {
    let name = &ctx.config.backends[b.index()].name;
    let start = server_start(c).await?;
    let entry = format!("{epoch}/{name}/{}/{start};", c.thread_id);
    let sql = format!(
        "UPDATE `hscale`.`operations` SET fence = CONCAT(IFNULL(fence, ''), {}) WHERE id = {id} AND epoch = {epoch}",
        quote_str(&entry)
    );
    let mut main = conn(ctx, worker, BackendId::MAIN).await?;
    match main.command(&BackendConn::payload_for_query(&sql)).await? {
        Ok(ok) if ok.affected_rows == 1 => Ok(()),
        Ok(_) => Err(taken_over(id)),
        Err(e) => Err(server_error(&main, &sql, e)),
    }
}

/// When the server `c` is connected to started (Unix seconds): the one
/// statement's start time less the server's `Uptime`, both whole seconds
/// of the same clock reading, so every connection to one run of a server
/// reads the same value, and a restarted server (at least a second later)
/// another. Thread ids are unique within one such run.
async fn server_start(c: &mut BackendConn) -> Result<u64, ProxyError> {
    let q = "SELECT UNIX_TIMESTAMP() - VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'";
    c.query_rows(q)
        .await?
        .map_err(|e| server_error(c, q, e))?
        .strings()
        .first()
        .and_then(|r| r[0].as_deref()?.parse().ok())
        .ok_or_else(|| wrong(format!("no server start time from {q}")))
}

/// The error of an owner whose change another proxy took over.
pub(in crate::admin) fn taken_over(id: u64) -> ProxyError {
    wrong(format!(
        "operation {id} was taken over by another proxy (its owner looked gone or stopped); this proxy no longer writes for it"
    ))
}

/// Raise operation `id`'s epoch from `epoch` (compare-and-set) and renew
/// its heartbeat: from now on only the caller acts for the change. `false`:
/// another proxy did first, or the change ended.
pub(in crate::admin) async fn flip(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
) -> Result<bool, ProxyError> {
    let sql = format!(
        "UPDATE `hscale`.`operations` SET epoch = epoch + 1, heartbeat = NOW(6) WHERE id = {id} AND epoch = {epoch} AND active IS NOT NULL"
    );
    let mut main = conn(ctx, worker, BackendId::MAIN).await?;
    match main.command(&BackendConn::payload_for_query(&sql)).await? {
        Ok(ok) => Ok(ok.affected_rows == 1),
        Err(e) => Err(server_error(&main, &sql, e)),
    }
}

/// Kill every backend connection registered for operation `id` under an
/// epoch below `epoch`, and wait until each backend shows them gone: no
/// statement of an earlier owner can run after this returns.
pub(in crate::admin) async fn kill_registered(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
) -> Result<(), ProxyError> {
    let q = format!("SELECT IFNULL(fence, '') FROM `hscale`.`operations` WHERE id = {id}");
    let fence = {
        let mut main = conn(ctx, worker, BackendId::MAIN).await?;
        main.query_rows(&q)
            .await?
            .map_err(|e| server_error(&main, &q, e))?
            .strings()
            .into_iter()
            .next()
            .and_then(|r| r[0].clone())
            .unwrap_or_default()
    };
    // Backend -> (server start, thread id) of every older registration.
    let mut by_backend: std::collections::BTreeMap<BackendId, Vec<(u64, u32)>> = Default::default();
    for entry in fence.split(';').filter(|e| !e.is_empty()) {
        let mut parts = entry.splitn(4, '/');
        let (Some(e), Some(b), Some(t), Some(start)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (Ok(e), Some(b), Ok(t), Ok(start)) = (
            e.parse::<u64>(),
            ctx.backend_named(b),
            t.parse::<u32>(),
            start.parse::<u64>(),
        ) else {
            continue;
        };
        if e < epoch {
            by_backend.entry(b).or_default().push((start, t));
        }
    }
    for (b, registered) in by_backend {
        // The server start is read on the connection that kills: if the
        // backend restarts after this read, that connection is gone too
        // and nothing is killed on the new run.
        let mut c = conn(ctx, worker, b).await?;
        let start = server_start(&mut c).await?;
        let mut ids: Vec<u32> = registered
            .iter()
            .filter(|(s, _)| *s == start)
            .map(|(_, t)| *t)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() < registered.len() {
            tracing::info!(operation = id, backend = %ctx.config.backends[b.index()].name, "the backend restarted since some of the old owner's connections were registered: those are gone already");
        }
        if ids.is_empty() {
            continue;
        }
        for t in &ids {
            let sql = format!("KILL CONNECTION {t}");
            match c.command(&BackendConn::payload_for_query(&sql)).await? {
                Ok(_) => {}
                Err(e) if e.code == 1094 => {} // gone already
                Err(e) => return Err(server_error(&c, &sql, e)),
            }
        }
        let list = ids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let q = format!("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ({list})");
        let started = std::time::Instant::now();
        loop {
            let left = c
                .query_rows(&q)
                .await?
                .map_err(|e| server_error(&c, &q, e))?
                .strings()
                .first()
                .and_then(|r| r[0].clone());
            if left.as_deref() == Some("0") {
                break;
            }
            if started.elapsed() > KILL_WAIT {
                return Err(wrong(format!(
                    "operation {id}: the old owner's connections on backend {} do not end",
                    ctx.config.backends[b.index()].name
                )));
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        tracing::info!(operation = id, backend = %ctx.config.backends[b.index()].name, killed = ids.len(), "fenced the old owner's connections");
    }
    Ok(())
}
