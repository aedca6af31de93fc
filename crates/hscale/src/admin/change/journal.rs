//! The operations journal and the owner lock of a change: starting a
//! change (or finding its twin running or done), the guarded journal
//! transitions (`mark_cutover`, `fail`) and the commit of the dictionary
//! with the journal's 'done' in one compare-and-set transaction.

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::BackendId;

use super::fence::{Owner, FIRST_EPOCH};
use super::Report;
use crate::admin::{conn, wrong};
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::partition::refresh::reload;
use crate::partition::store::{self, exec, server_error};
use crate::runtime::Context;

/// Who runs a change, for the journal: the address clients reach this
/// proxy at once it is bound (the configured one may name port 0).
pub(in crate::admin) fn owner(ctx: &Context) -> String {
    let bound = ctx.fleet.address();
    let at = if bound.is_empty() {
        ctx.config.proxy.listen.as_str()
    } else {
        bound
    };
    format!("pid {} on {at}", std::process::id())
}

/// The named lock on the main backend that a change's owner holds for the
/// whole change (on a connection of its own, closed when the change ends or
/// the owner dies). Another proxy that can take it knows the owner is gone.
fn owner_lock(name: &TableName) -> String {
    // FNV-1a: stable across processes, and lock names are at most 64 bytes.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    quote_str(&format!("hscale_op_{h:016x}"))
}

/// Take `name`'s owner lock on a connection of its own, waiting at most
/// `wait_s` seconds; `None` when another proxy holds it.
pub(in crate::admin) async fn lock_owner(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    wait_s: u32,
) -> Result<Option<Owner>, ProxyError> {
    let mut c = conn(ctx, worker, BackendId::MAIN).await?;
    c.is_broken = true; // closed, never pooled: closing releases the lock
    let sql = format!("SELECT GET_LOCK({}, {wait_s})", owner_lock(name));
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(&c, &sql, e))?;
    let got = r.strings().first().and_then(|r| r[0].clone()) == Some("1".into());
    Ok(got.then(|| Owner::new(c)))
}

/// What starting a change found.
pub(in crate::admin) enum Began {
    /// This proxy runs operation `.0`, holding the owner lock.
    Started(u64, Box<Owner>),
    /// The same command, run through another proxy, was running and is
    /// done now (operation `.0`): nothing to do.
    AlreadyDone(u64),
}

/// [`begin`] for a command: `Err(answer)` when the same command, run
/// through another proxy, already did the work.
pub(in crate::admin) async fn start(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    command: &str,
) -> Result<Result<(u64, Box<Owner>), crate::admin::AdminOutput>, ProxyError> {
    let wait = std::time::Duration::from_millis(ctx.config.proxy.change_wait_ms);
    start_within(ctx, worker, name, command, wait).await
}

/// [`start`], waiting at most `change_wait` for another change of the
/// table (auto-partitioning waits for none: its placement was read before,
/// and the next write of the value asks again).
pub(in crate::admin) async fn start_within(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    command: &str,
    change_wait: std::time::Duration,
) -> Result<Result<(u64, Box<Owner>), crate::admin::AdminOutput>, ProxyError> {
    Ok(
        match begin(ctx, worker, name, command, change_wait).await? {
            Began::Started(op, owner) => Ok((op, owner)),
            Began::AlreadyDone(id) => Err(crate::admin::AdminOutput::Ok {
                info: format!(
                    "already done by operation {id} (the same command, through another proxy)"
                ),
            }),
        },
    )
}

/// After [`start`], under the owner lock: derive the change from the
/// dictionary as it is now (the command may have waited for another change
/// of the table, which `f` must see). `Ok(None)`: nothing to do any more;
/// the operation is discarded from the journal, as on an error of `f`.
pub(in crate::admin) async fn recheck<T>(
    ctx: &Context,
    worker: usize,
    op: u64,
    f: impl FnOnce(&Dictionary) -> Result<Option<T>, ProxyError>,
) -> Result<Option<T>, ProxyError> {
    let checked = match reload(ctx, worker).await {
        Ok(d) => f(&d),
        Err(e) => Err(e),
    };
    if !matches!(checked, Ok(Some(_))) {
        let sql = format!("DELETE FROM `hscale`.`operations` WHERE id = {op}");
        if let Err(e) = journal(ctx, worker, sql).await {
            tracing::warn!(operation = op, error = %e, "cannot discard the operation");
        }
    }
    checked
}

/// How long the same command waits for a running twin at most.
const TWIN_WAIT: std::time::Duration = std::time::Duration::from_secs(1800);

/// Start an operation on `name`: its owner lock, then its journal row. The
/// same command already running (through any proxy) is waited for, and
/// reported done if it succeeded; another change of the table is waited
/// for up to `[proxy] change_wait_ms`, then refused with 1205 naming it.
/// (This proxy's admin lock is held meanwhile: its other HSCALE commands
/// wait too, and the periodic reload skips; the fence keeps routes safe.)
pub(in crate::admin) async fn begin(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    command: &str,
    change_wait: std::time::Duration,
) -> Result<Began, ProxyError> {
    let started = std::time::Instant::now();
    let mut twin: Option<u64> = None;
    loop {
        let mut main = conn(ctx, worker, BackendId::MAIN).await?;
        if let Some(mut owner_lock) = lock_owner(ctx, worker, name, 0).await? {
            if let Some(id) = twin {
                let q = format!("SELECT state FROM `hscale`.`operations` WHERE id = {id}");
                let state = main
                    .query_rows(&q)
                    .await?
                    .map_err(|e| server_error(&main, &q, e))?
                    .strings()
                    .first()
                    .and_then(|r| r[0].clone());
                if state.as_deref() == Some("done") {
                    return Ok(Began::AlreadyDone(id));
                }
            }
            let sql = format!(
                "INSERT INTO `hscale`.`operations` (db, tbl, command, state, active, owner, started_at, heartbeat, epoch) VALUES ({}, {}, {}, 'copying', {}, {}, NOW(3), NOW(6), {FIRST_EPOCH})",
                quote_str(&name.db),
                quote_str(&name.table),
                quote_str(command),
                quote_str(&name.to_string()),
                quote_str(&owner(ctx))
            );
            match main.command(&BackendConn::payload_for_query(&sql)).await? {
                Ok(ok) => {
                    let id = ok.last_insert_id;
                    owner_lock.beat(ctx, worker, id, FIRST_EPOCH).await?;
                    return Ok(Began::Started(id, Box::new(owner_lock)));
                }
                Err(e) if e.code == 1062 => {}
                Err(e) => return Err(server_error(&main, &sql, e)),
            }
        }
        // Busy: wait for the same command, and for another one at most
        // `change_wait_ms`.
        match running_op(&mut main, name).await? {
            Some((id, running)) if running == command && started.elapsed() < TWIN_WAIT => {
                twin = Some(id);
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            None if started.elapsed() < std::time::Duration::from_secs(2) => {
                // Between a change's lock and its journal row: look again.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            _ if started.elapsed() < change_wait => {
                // (A twin seen before stays: done, it answers for this one.)
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            _ => {
                return Err(ProxyError::ChangeBusy {
                    running: running_description(&mut main, name).await?,
                    table: name.to_string(),
                    ms: started.elapsed().as_millis() as u64,
                });
            }
        }
    }
}

/// The running operation on `name`: its id and command.
async fn running_op(
    main: &mut BackendConn,
    name: &TableName,
) -> Result<Option<(u64, String)>, ProxyError> {
    let q = format!(
        "SELECT id, command FROM `hscale`.`operations` WHERE active = {}",
        quote_str(&name.to_string())
    );
    Ok(main
        .query_rows(&q)
        .await?
        .map_err(|e| server_error(main, &q, e))?
        .strings()
        .into_iter()
        .next()
        .and_then(|r| Some((r[0].as_deref()?.parse().ok()?, r[1].clone()?))))
}

/// The running operation on `name`, described for an error message.
async fn running_description(
    main: &mut BackendConn,
    name: &TableName,
) -> Result<String, ProxyError> {
    let q = format!(
        "SELECT id, command, state, owner FROM `hscale`.`operations` WHERE active = {}",
        quote_str(&name.to_string())
    );
    Ok(main
        .query_rows(&q)
        .await?
        .ok()
        .and_then(|r| r.strings().into_iter().next())
        .map(|r| {
            format!(
                "operation {} ({}, {} by {})",
                r[0].clone().unwrap_or_default(),
                r[1].clone().unwrap_or_default(),
                r[2].clone().unwrap_or_default(),
                r[3].clone().unwrap_or_default()
            )
        })
        .unwrap_or_else(|| "another proxy (a change starting, or a take-over)".into()))
}

/// Operation `id`'s state in the journal (`None`: no such row, or the
/// main backend did not answer).
pub(in crate::admin) async fn state_of(ctx: &Context, worker: usize, id: u64) -> Option<String> {
    let q = format!("SELECT state FROM `hscale`.`operations` WHERE id = {id}");
    let mut main = conn(ctx, worker, BackendId::MAIN).await.ok()?;
    main.query_rows(&q)
        .await
        .ok()?
        .ok()?
        .strings()
        .first()
        .and_then(|r| r[0].clone())
}

/// The journal statement that ends operation `id` in `state`.
pub(in crate::admin) fn end_sql(id: u64, state: &str, report: Option<&Report>) -> String {
    let (rows, pause) = report.map_or((0, 0), |r| (r.rows, r.longest_pause_ms));
    format!(
        "UPDATE `hscale`.`operations` SET state = {}, active = NULL, ended_at = NOW(3), rows_copied = GREATEST(rows_copied, {rows}), longest_pause_ms = {pause} WHERE id = {id}",
        quote_str(state)
    )
}

/// Operation `id` enters its cutover: statements that run into a renamed
/// table wait for the new dictionary from now on (`partition::refresh::await_newer_dictionary`).
/// Only its owner at `epoch` moves it (a take-over raised the epoch).
pub(in crate::admin) async fn mark_cutover(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
) -> Result<(), ProxyError> {
    enter(ctx, worker, id, epoch, "copying", "cutover").await
}

/// Move operation `id` from state `from` to `to`, as its owner at `epoch`
/// (compare-and-set): a cancelled operation answers [`ProxyError::Cancelled`],
/// one another proxy took over (epoch raised, or rolled back) is not moved.
pub(in crate::admin) async fn enter(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
    from: &str,
    to: &str,
) -> Result<(), ProxyError> {
    let sql = format!(
        "UPDATE `hscale`.`operations` SET state = {} WHERE id = {id} AND state = {} AND epoch = {epoch} AND active IS NOT NULL",
        crate::partition::quote_str(to),
        crate::partition::quote_str(from)
    );
    let mut main = conn(ctx, worker, BackendId::MAIN).await?;
    match main.command(&BackendConn::payload_for_query(&sql)).await? {
        Ok(ok) if ok.affected_rows == 1 => Ok(()),
        Ok(_) => {
            let q = format!("SELECT state FROM `hscale`.`operations` WHERE id = {id}");
            let state = main
                .query_rows(&q)
                .await?
                .ok()
                .and_then(|r| r.strings().into_iter().next())
                .and_then(|r| r[0].clone());
            Err(if state.as_deref() == Some("cancelling") {
                ProxyError::Cancelled(id)
            } else {
                super::taken_over(id)
            })
        }
        Err(e) => Err(server_error(&main, &sql, e)),
    }
}

pub(in crate::admin) async fn journal(
    ctx: &Context,
    worker: usize,
    sql: String,
) -> Result<(), ProxyError> {
    let mut main = conn(ctx, worker, BackendId::MAIN).await?;
    exec(&mut main, &[sql]).await
}

/// The journal state of a change undone before its cutover: 'cancelled'
/// when asked to stop, 'failed' otherwise.
pub(in crate::admin) const UNDONE_STATE: &str = "IF(state = 'cancelling', 'cancelled', 'failed')";

/// Mark operation `id` failed, or cancelled (best effort: the error that
/// failed it is what the client sees). Only its first owner calls this; a
/// change taken over (a later epoch) is ended by the take-over.
pub(in crate::admin) async fn fail(ctx: &Context, worker: usize, id: u64, why: &ProxyError) {
    let sql = format!(
        "UPDATE `hscale`.`operations` SET state = {UNDONE_STATE}, active = NULL, ended_at = NOW(3), cleanup_pending = 0, detail = {} WHERE id = {id} AND epoch = {FIRST_EPOCH}",
        quote_str(&why.to_string())
    );
    if let Err(e) = journal(ctx, worker, sql).await {
        tracing::warn!(operation = id, error = %e, "cannot end the operation in the journal");
    }
}

/// Commit the dictionary change `apply` makes, with the journal's end of
/// operation `id`, by compare-and-set; another proxy's change to another
/// table in between makes it reload and apply again. Only the change's
/// owner at `epoch` commits.
pub(in crate::admin) async fn commit_with_journal(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
    report: &Report,
    apply: impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<(), ProxyError> {
    commit_prepared_with_journal(ctx, worker, id, epoch, report, None, apply).await
}

/// `apply` to the dictionary as stored now: the version it was read at and
/// the statements that store the change ([`commit_prepared_with_journal`]'s
/// first attempt, made before a cutover's writes wait).
pub(in crate::admin) async fn prepare_commit(
    ctx: &Context,
    worker: usize,
    apply: &mut impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<(u64, Vec<String>), ProxyError> {
    let mut d = (*reload(ctx, worker).await?).clone();
    let statements = apply(&mut d)?;
    Ok((d.stored_version, statements))
}

/// [`commit_with_journal`], trying `first` (from [`prepare_commit`]) before
/// reading the dictionary again: a cutover prepares its dictionary before
/// its rename, so writes wait for one round of commits, not a reload too.
/// Should the version have moved on meanwhile, the compare-and-set fails
/// and `apply` runs again on the dictionary read anew.
pub(in crate::admin) async fn commit_prepared_with_journal(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
    report: &Report,
    mut first: Option<(u64, Vec<String>)>,
    mut apply: impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<(), ProxyError> {
    // A change in its cutover has to commit: another proxy's changes (of
    // any table, e.g. AUTO_PARTITION toggled in a loop) move the one
    // version on, so apply it again, after a short random pause, many times.
    for attempt in 0..200 {
        if attempt > 0 {
            crate::admin::moved_pause(attempt).await;
        }
        let (version, statements) = match first.take() {
            Some(f) => f,
            None => prepare_commit(ctx, worker, &mut apply).await?,
        };
        // Only a change still in its cutover commits: one another proxy
        // rolled back (its owner looked gone) does not.
        let guard = format!(
            "{} AND state = 'cutover' AND epoch = {epoch}",
            end_sql(id, "done", Some(report))
        );
        let mut main = conn(ctx, worker, BackendId::MAIN).await?;
        match store::commit_change_guarded(&mut main, version, &guard, &statements).await {
            Ok(_) => {
                // What was committed, read back (a take-over commits rows
                // it did not apply to `d`).
                reload(ctx, worker).await?;
                return Ok(());
            }
            Err(ProxyError::DictionaryMoved) => continue, // the version moved on: apply again
            Err(e) => return Err(e),
        }
    }
    Err(wrong(
        "the dictionary kept changing; the operation's commit did not go through",
    ))
}
