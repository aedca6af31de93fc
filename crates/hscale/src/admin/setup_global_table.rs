//! `HSCALE SETUP_GLOBAL_TABLE('t')`: copy `t` from the main backend to
//! every other backend and record it as global, while proxies write `t`.
//!
//! A global table keeps its name on every backend, so the fence of
//! partition changes (a name never used again) cannot apply. Instead the
//! main copy gets **fence triggers** (BEFORE INSERT / UPDATE / DELETE): a
//! write passes only when its connection's `@hscale_dictionary_version`
//! (set by `Bindings::sync` on main-backend connections of proxies whose
//! dictionary has global tables, to the version that planned the
//! statement) is at least the version that made `t` global
//! (`hscale.global_tables.since_version`, committed with the dictionary).
//! Any other write is refused with 1146, which the proxy's fence turns
//! into a reload and a new plan: a write to every copy. So a proxy that
//! does not know yet that `t` is global never writes one copy alone.
//!
//! The operation (one change of `t` in the journal): journal `cutover`
//! (statements that meet the fence wait for the new dictionary), the
//! triggers (they wait for every transaction holding `t`; until the
//! dictionary commits no row names the version, so every write waits),
//! the copies, then the dictionary with the journal's `done`. Writes to
//! `t` pause for the copy: meant for the small tables that are made
//! global. A take-over of a dead owner's setup rolls it back: triggers and
//! copies dropped, journal `failed`.

use hscale_route::dictionary::TableName;
use hscale_route::BackendId;

use super::change::{self, register, FIRST_EPOCH};
use super::{backend_names, conn, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::store::exec;
use crate::partition::{copy, ddl, qualified, quote_str};
use crate::runtime::Context;

/// What a take-over needs to roll a setup back; the journal row's `detail`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct GlobalSpec {
    pub(super) global_db: String,
    pub(super) global_table: String,
}

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    name: TableName,
) -> Result<AdminOutput, ProxyError> {
    let names = backend_names(ctx);
    let _g = ctx.partitioning.admin_lock.lock().await;
    {
        let mut d = (*reload(ctx, worker).await?).clone();
        d.add_global(name.clone()).map_err(wrong)?;
    }
    {
        let mut main = conn(ctx, worker, BackendId::MAIN).await?;
        if !ddl::table_exists(&mut main, &name.db, &name.table).await? {
            return Err(wrong(format!(
                "table {name} does not exist on the main backend"
            )));
        }
    }
    let command = format!("SETUP_GLOBAL_TABLE('{name}')");
    let (op, _owner) = match change::start(ctx, worker, &name, &command).await? {
        Ok(started) => started,
        Err(done) => return Ok(done),
    };
    let checked = change::recheck(ctx, worker, op, |d| {
        (*d).clone().add_global(name.clone()).map_err(wrong)?;
        Ok(Some(()))
    })
    .await?;
    if checked.is_none() {
        return Ok(AdminOutput::done());
    }
    let set_up = async {
        let spec = GlobalSpec {
            global_db: name.db.clone(),
            global_table: name.table.clone(),
        };
        let text = toml::to_string(&spec).map_err(|e| wrong(e.to_string()))?;
        change::journal(
            ctx,
            worker,
            format!(
                "UPDATE `hscale`.`operations` SET detail = {} WHERE id = {op} AND epoch = {FIRST_EPOCH}",
                quote_str(&text)
            ),
        )
        .await?;
        change::mark_cutover(ctx, worker, op, FIRST_EPOCH).await?;
        let mut main = conn(ctx, worker, BackendId::MAIN).await?;
        main.is_broken = true;
        register(ctx, worker, op, FIRST_EPOCH, BackendId::MAIN, &mut main).await?;
        exec(&mut main, &fence_triggers(&name)).await?;
        for (i, b) in BackendId::all(names.len()).skip(1).enumerate() {
            copy_to(ctx, worker, op, &name, b).await?;
            // Progress (SHOW OPERATIONS' rows copied counts the copies),
            // guarded by the epoch: a taken-over owner stops here.
            change::journal(
                ctx,
                worker,
                format!(
                    "UPDATE `hscale`.`operations` SET rows_copied = {} WHERE id = {op} AND epoch = {FIRST_EPOCH} AND state = 'cutover'",
                    i + 1
                ),
            )
            .await?;
            if i == 0 {
                if let Some(ms) = change::test_pause("HSCALE_TEST_PAUSE_IN_GLOBAL_SETUP_MS") {
                    // Tests kill or stop the owner here: one copy made,
                    // the fence triggers on.
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                }
            }
        }
        Ok(())
    };
    if let Err(e) = set_up.await {
        give_up(ctx, worker, op, &name, &e).await;
        return Err(e);
    }
    let report = change::Report {
        rows: 0,
        seconds: 0.0,
        longest_pause_ms: 0,
    };
    let rows = vec![insert_global_sql(&name)];
    if let Err(e) =
        change::commit_with_journal(ctx, worker, op, FIRST_EPOCH, &report, |_| Ok(rows.clone()))
            .await
    {
        // A commit whose answer was lost may have happened: then the
        // copies are the table's, and stay. Not known (the main backend
        // did not answer): left to a take-over, which undoes only an
        // operation still active.
        match change::state_of(ctx, worker, op).await.as_deref() {
            Some("done") => {}
            Some(_) => {
                give_up(ctx, worker, op, &name, &e).await;
                return Err(e);
            }
            None => return Err(e),
        }
    }
    Ok(AdminOutput::Ok {
        info: format!(
            "{name} is global: a copy on each of {} backends",
            names.len()
        ),
    })
}

/// A copy of the main backend's `name` on backend `b`, replacing whatever
/// is there (writes to `name` are held by the fence triggers meanwhile).
async fn copy_to(
    ctx: &Context,
    worker: usize,
    op: u64,
    name: &TableName,
    b: BackendId,
) -> Result<(), ProxyError> {
    let table_q = qualified(&name.db, &name.table);
    let mut src = conn(ctx, worker, BackendId::MAIN).await?;
    src.is_broken = true;
    let mut dst = conn(ctx, worker, b).await?;
    dst.is_broken = true;
    register(ctx, worker, op, FIRST_EPOCH, b, &mut dst).await?;
    exec(&mut dst, &[format!("DROP TABLE IF EXISTS {table_q}")]).await?;
    ddl::create_like(&mut src, &name.db, &name.table, &mut dst, &name.table).await?;
    exec(&mut src, &change::copy_session()).await?;
    exec(&mut dst, &change::copy_session()).await?;
    copy::copy_rows(
        &mut src,
        &format!("SELECT * FROM {table_q}"),
        &mut dst,
        &table_q,
    )
    .await?;
    Ok(())
}

/// The dictionary row of a global table, with the version that made it
/// global (the one this commit raises the dictionary to: the version is
/// raised first in `store::commit_change`).
fn insert_global_sql(name: &TableName) -> String {
    format!(
        "INSERT INTO {} (db, tbl, since_version) SELECT {}, {}, version FROM {} WHERE id = 1",
        qualified("hscale", "global_tables"),
        quote_str(&name.db),
        quote_str(&name.table),
        qualified("hscale", "dictionary_version"),
    )
}

/// The fence triggers' names on `name`.
fn trigger_names(name: &TableName) -> Vec<String> {
    ["bi", "bu", "bd"]
        .iter()
        .map(|e| {
            // Trigger names are per database and at most 64 characters.
            let mut h: u32 = 0x811c_9dc5;
            for b in name.table.bytes() {
                h ^= u32::from(b);
                h = h.wrapping_mul(0x0100_0193);
            }
            format!("hscale_global_{h:08x}_{e}")
        })
        .collect()
}

/// The statements that create the fence triggers on the main copy of
/// `name`: a write whose connection does not hold a dictionary at least as
/// new as the one that made `name` global fails with 1146.
fn fence_triggers(name: &TableName) -> Vec<String> {
    let gone = format!("Table '{}.{}' doesn't exist", name.db, name.table);
    let since = format!(
        "(SELECT since_version FROM {} WHERE db = {} AND tbl = {})",
        qualified("hscale", "global_tables"),
        quote_str(&name.db),
        quote_str(&name.table)
    );
    let mut sql = vec!["SET SESSION lock_wait_timeout = 30".to_string()];
    for (t, event) in trigger_names(name)
        .iter()
        .zip(["INSERT", "UPDATE", "DELETE"])
    {
        sql.push(format!(
            "CREATE OR REPLACE TRIGGER {} BEFORE {event} ON {} FOR EACH ROW \
             IF IFNULL(@hscale_dictionary_version, 0) < IFNULL({since}, 18446744073709551615) THEN \
             SIGNAL SQLSTATE '42S02' SET MYSQL_ERRNO = 1146, MESSAGE_TEXT = {}; END IF",
            qualified(&name.db, t),
            qualified(&name.db, &name.table),
            quote_str(&gone)
        ));
    }
    sql
}

/// End a setup that failed as its owner: undo it, then end the operation
/// `failed`. In that order: a write that met the fence triggers waits while
/// the operation is in its cutover and runs again once it ended
/// (`partition::refresh::Fence::Ended`), so the triggers must be gone by then. What
/// cannot be undone now (a backend lost, or the setup taken over) stays
/// active in the journal for a take-over, which undoes it again.
async fn give_up(ctx: &Context, worker: usize, op: u64, name: &TableName, why: &ProxyError) {
    match undo(ctx, worker, op, FIRST_EPOCH, name).await {
        Ok(()) => change::fail(ctx, worker, op, why).await,
        Err(e) => {
            tracing::warn!(operation = op, error = %e, "cannot undo SETUP_GLOBAL_TABLE: left to a take-over");
        }
    }
}

/// Undo a setup that did not commit, as operation `op`'s owner at `epoch`
/// (each step can run again): the fence triggers and the copies go.
async fn undo(
    ctx: &Context,
    worker: usize,
    op: u64,
    epoch: u64,
    name: &TableName,
) -> Result<(), ProxyError> {
    for b in ctx.backend_ids() {
        let mut c = conn(ctx, worker, b).await?;
        c.is_broken = true;
        register(ctx, worker, op, epoch, b, &mut c).await?;
        let sql = if b.is_main() {
            trigger_names(name)
                .iter()
                .map(|t| format!("DROP TRIGGER IF EXISTS {}", qualified(&name.db, t)))
                .collect()
        } else {
            vec![format!(
                "DROP TABLE IF EXISTS {}",
                qualified(&name.db, &name.table)
            )]
        };
        exec(&mut c, &sql).await?;
    }
    Ok(())
}

/// Whether a journal row's `detail` is a global setup's spec.
pub(super) fn spec_of(detail: &str) -> Option<GlobalSpec> {
    toml::from_str(detail).ok()
}

/// Roll back the setup of operation `id` whose owner is gone (called by
/// `takeover::take_over` at `epoch`, holding the owner lock; the setup did
/// not commit, or the journal would not be active).
pub(super) async fn take_over(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
    spec: GlobalSpec,
) -> Result<(), ProxyError> {
    let name = TableName::new(&spec.global_db, &spec.global_table);
    // Not undone (a backend down): the operation stays active, and the
    // next round tries again.
    undo(ctx, worker, id, epoch, &name).await?;
    change::journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET state = {}, active = NULL, ended_at = NOW(3) WHERE id = {id} AND epoch = {epoch} AND active IS NOT NULL",
            change::UNDONE_STATE
        ),
    )
    .await
}
