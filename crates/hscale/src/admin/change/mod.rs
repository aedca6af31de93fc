//! Partition changes that lose no row, whatever other proxies do: the
//! engine behind SETUP_TABLE (to another backend), ADD_PARTITION,
//! DROP_PARTITION and MOVE_PARTITION.
//!
//! **The fence.** A physical table that loses keys in a change is renamed
//! at the change's cutover, to a name never used before (`_g<operation id>`),
//! after its writes drained and before the new dictionary commits. MariaDB's
//! `RENAME TABLE` waits for every transaction holding the table, and
//! statements that reach the old name afterwards fail with 1146. So a proxy
//! holding any older dictionary can never read or write a key in a table
//! that is no longer the key's home: it gets 1146, reloads, and runs the
//! statement again (`exec/fence.rs`). No clock, lease or count of proxies
//! is involved.
//!
//! **A change**, one per table at a time (the journal's `active` key):
//! ```text
//!  journal 'copying' ─► destination table (fresh, or a staging table when the
//!  destination already holds keys) ─► capture triggers on the source ─► copy
//!  in bounded LOAD DATA ... REPLACE files ─► replay captured keys until few are left
//!  ─► journal 'cutover' ─► RENAME source ─► replay the rest ─► delete the
//!  moved rows from what stays / merge the staging table ─► commit the new
//!  dictionary with the journal's 'done' (one CAS transaction) ─► drop
//!  triggers, changelog and retired tables
//! ```
//! Writes pause only between the rename and the commit, so what can be
//! done before is: the new dictionary's rows are computed (and the
//! rename's lock wait set) before the rename, and the changelog, complete
//! once the rename has waited out every writer, is read once. The triggers
//! record the primary key of every row of the moving set that changes
//! (old and new key of an update) in `hscale.changes_<operation>` on the
//! source's backend, in the writer's own transaction, so no change escapes.
//! A replay re-reads the rows by key from the source and replaces or
//! deletes them on the destination, so copy and replay are idempotent.
//!
//! The owner holds a named lock for the whole change; when it dies another
//! proxy rolls the change back or finishes its cutover (`takeover.rs`).
//! `HSCALE CANCEL_OPERATION` (`cancel.rs`) moves a change from 'copying' to
//! 'cancelling' by compare-and-set, as `mark_cutover` moves it to 'cutover':
//! one of the two wins. The owner sees the cancel within [`CANCEL_POLL`] and
//! undoes the change; a dead owner's change is undone by a take-over.

use hscale_route::dictionary::Dictionary;
use hscale_route::BackendId;

use super::{conn, wrong};
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::partition::copy::{stream_rows_to, Copy};
use crate::partition::store::exec;
use crate::partition::{ddl, qualified, quote_ident, quote_str};
use crate::runtime::Context;
use std::sync::atomic::Ordering;

mod cutover;
mod fence;
pub(super) mod journal;
mod prepare;
pub(super) mod reshape;
mod running;
pub(super) mod takeover;
mod verify;

use cutover::*;
pub(super) use fence::*;
pub(super) use journal::*;
use prepare::*;
pub(super) use running::*;

/// Captured keys replayed per round; the cutover starts once a round finds
/// fewer than [`CUTOVER_BACKLOG`].
pub(super) const REPLAY_BATCH: usize = 5000;
/// Keys per `IN (...)` list of a replay: MariaDB turns longer lists into a
/// join with a temporary table (`in_predicate_conversion_threshold`, 1000),
/// which scans the whole table here instead of looking the keys up.
const IN_LIST: usize = 900;
/// Connection pairs that replay at once: writers on many connections
/// otherwise get most of the servers' time, and the backlog drains slowly.
const REPLAY_LANES: usize = 3;
/// Destination connections the copy writes on. One: on MariaDB 10.11,
/// 400,000 rows of `bench/moves.sh`'s table loaded on two connections at
/// once cost the server 1.51-1.54 s of CPU against 1.13-1.19 s on one
/// (500-row `REPLACE` statements: 1.74-1.77 s on three, 1.27-1.39 s on
/// one): inserting adjacent key ranges at once costs more CPU in all, and
/// on a machine whose cores the application's writers use too, that CPU
/// is theirs.
const COPY_WRITERS: usize = 1;
/// How long a change catches up with writers before its cutover at most.
const CATCH_UP_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);
const CUTOVER_BACKLOG: usize = 200;
/// Attempts at renaming the source, each waiting at most 2 s for the
/// transactions that hold it.
const RENAME_ATTEMPTS: u32 = 10;

/// Where the key column's expression goes in a [`Move::filter`].
pub(super) const KEY: &str = "\u{1}key\u{1}";

/// One row move of a change.
pub(super) struct Move {
    pub db: String,
    /// The source: backend and physical table.
    pub src: (BackendId, String),
    /// Which rows of the source move: an SQL condition with [`KEY`] where
    /// the key column goes (`col` in a table, `NEW.col` in a trigger).
    /// `None`: every row (the source retires).
    pub filter: Option<String>,
    /// The destination: backend and physical table.
    pub dst: (BackendId, String),
    /// The destination is in the dictionary already (it gains keys): rows
    /// are staged beside it and merged at the cutover, so no reader sees
    /// them twice before.
    pub is_dst_live: bool,
    /// The source's name after the cutover: its next generation when it
    /// keeps other keys, a retired name (dropped afterwards) when not.
    pub src_after: String,
    /// A split (a `filter` with many moving rows): the source's other rows
    /// are copied too, into this fresh table on the source's backend, which
    /// replaces the source at the cutover (the source retires whole). So the
    /// cutover deletes nothing: a delete of the moving rows from what stays
    /// would hold every write of the source for as long as it runs (7 s a
    /// million rows here). `None`: the moving rows are deleted from the
    /// source at the cutover (few rows, see [`moves_many_rows`]).
    pub rest: Option<String>,
    /// The destination's rows this move writes (an SQL condition with
    /// [`KEY`]), when the [`Move::companion`] of another move writes the
    /// same table; `None`: all of it.
    pub dst_filter: Option<String>,
    /// A second move of the same change, into the same destination: a
    /// merge into a rebuilt default partition (DROP_PARTITION of many rows)
    /// copies the default partition's rows beside the dropped partition's
    /// into a fresh table, so the cutover merges nothing. Both sources are
    /// captured, copied and verified on their own, renamed together at the
    /// cutover and retired after it; its triggers and changelog carry
    /// [`COMPANION`].
    pub companion: Option<Box<Move>>,
    /// The partition key column (for the filter).
    pub key_column: String,
    /// The dictionary's rows for the change, committed at the cutover (a
    /// proxy that takes over a dead owner's cutover commits exactly these).
    pub dictionary: Vec<String>,
    /// An online schema change (`online_alter.rs`): the destination is a
    /// shadow of the source with another definition, on the same backend,
    /// and rows are copied and replayed through a column mapping
    /// (`reshape.rs`). Its further moves (one per partition) are chained
    /// as companions.
    pub reshape: Option<reshape::Reshape>,
}

/// The tag of a companion move's triggers and changelog (`Running::tag`).
pub(super) const COMPANION: &str = "m";

/// The tag of the `i`-th move of a change: none for the first,
/// [`COMPANION`] for the second, `m<i>` after (an online schema change
/// has one move per partition).
pub(super) fn tag_of(i: usize) -> String {
    match i {
        0 => String::new(),
        1 => COMPANION.to_string(),
        i => format!("{COMPANION}{i}"),
    }
}

impl Move {
    /// This move and its companions (a chain: one, or one per partition
    /// of an online schema change), with their tags ([`tag_of`]).
    pub fn with_companion(&self) -> impl Iterator<Item = (&Move, String)> {
        std::iter::successors(Some(self), |m| m.companion.as_deref())
            .enumerate()
            .map(|(i, m)| (m, tag_of(i)))
    }

    /// The table the copy of operation `id` writes: the destination, or
    /// its staging table when the destination is live.
    pub fn into(&self, id: u64) -> String {
        if self.is_dst_live {
            format!("{}_stage{id}", self.dst.1)
        } else {
            self.dst.1.clone()
        }
    }

    /// Whether no row stays in the source: it is dropped (or kept aside)
    /// after the cutover.
    pub fn source_retires(&self) -> bool {
        self.filter.is_none() || self.rest.is_some()
    }
}

/// The rows of `t` whose key's partition value is one of `values` (quoted
/// SQL strings), as a [`Move::filter`]: the hashing function applied to the
/// key as the column compares it, as text.
pub(super) fn values_filter(
    t: &hscale_route::dictionary::PartitionedTable,
    values: &[String],
) -> String {
    let keyed = crate::partition::function_of(
        &t.function,
        &t.key_compare
            .as_ref()
            .map_or_else(|| KEY.to_string(), |c| c.sql(KEY)),
    );
    match values {
        [one] => format!("BINARY CAST({keyed} AS CHAR) = {one}"),
        _ => format!("BINARY CAST({keyed} AS CHAR) IN ({})", values.join(", ")),
    }
}

/// Whether a change that carves the rows of `filter` out of `db`.`table`
/// (on `src`) should split it (copy the rows that stay too, [`Move::rest`])
/// rather than delete the moving rows during its cutover: when more than
/// `[proxy] change_delete_max_rows` rows move. Counted with a bound: the
/// count stops there when many rows match; when few do it reads the whole
/// source once (the filter uses no index), as the copy does after it.
pub(super) async fn moves_many_rows(
    ctx: &Context,
    worker: usize,
    src: BackendId,
    db: &str,
    table: &str,
    filter: &str,
    key_column: &str,
) -> Result<bool, ProxyError> {
    let max = ctx.config.proxy.change_delete_max_rows;
    let sql = format!(
        "SELECT COUNT(*) FROM (SELECT 1 FROM {} WHERE {} LIMIT {}) AS moving",
        qualified(db, table),
        filter.replace(KEY, &quote_ident(key_column)),
        max.saturating_add(1)
    );
    let mut c = conn(ctx, worker, src).await?;
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| crate::partition::store::server_error(&c, &sql, e))?;
    let n: u64 = r
        .strings()
        .first()
        .and_then(|row| row[0].as_deref().and_then(|v| v.parse().ok()))
        .unwrap_or(0);
    Ok(n > max)
}

/// What a change did.
pub(super) struct Report {
    pub rows: u64,
    pub seconds: f64,
    pub longest_pause_ms: u64,
}

/// The row that answers a change: rows moved, seconds, longest write pause.
pub(super) fn report_output(r: &Report, info: &str) -> super::AdminOutput {
    super::AdminOutput::Rows {
        columns: super::cols(&["rows_moved", "seconds", "longest_write_pause_ms", "info"]),
        rows: vec![vec![
            Some(r.rows.to_string()),
            Some(format!("{:.3}", r.seconds)),
            Some(r.longest_pause_ms.to_string()),
            Some(info.to_string()),
        ]],
    }
}

/// A pause for tests, in ms, from the environment variable `name`
/// (`HSCALE_TEST_PAUSE_AFTER_RENAME_MS`: right after the cutover's rename,
/// so tests can kill an owner in its cutover; `..._AFTER_COPY_MS`: after the
/// copy, so tests can damage it; `..._TAKEOVER_AFTER_COMMIT_MS`: a
/// take-over between its commit and its clean-up, so tests can wake the
/// old owner there). Unset in production.
pub(super) fn test_pause(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The session every connection of a copy runs in, whatever a client left
/// on it: TIMESTAMPs read and written in one time zone, and a 0 written to
/// an AUTO_INCREMENT column stays 0.
pub(super) fn copy_session() -> Vec<String> {
    vec![
        "SET SESSION time_zone = '+00:00'".to_string(),
        "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'".to_string(),
    ]
}

/// [`copy_session`] for connections that write the destination: READ
/// COMMITTED, so the replay lanes' deletes of absent keys lock no gaps.
pub(super) fn dst_session() -> Vec<String> {
    let mut s = copy_session();
    s.push("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string());
    s
}

/// The session of move `m`'s source (`is_dst`: destination) connections:
/// [`copy_session`] / [`dst_session`], then for a reshape the server's
/// own `sql_mode` and time zone (`reshape::Reshape::session`): its rows
/// never leave the server, and convert as its ALTER would.
pub(super) fn session_of(m: &Move, is_dst: bool) -> Vec<String> {
    let mut s = if is_dst {
        dst_session()
    } else {
        copy_session()
    };
    if m.reshape.is_some() {
        s.extend(reshape::Reshape::session());
    }
    s
}

/// The server's estimate of a table's rows (0 if unknown).
async fn table_rows(c: &mut BackendConn, db: &str, table: &str) -> u64 {
    let sql = format!(
        "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
        quote_str(db),
        quote_str(table)
    );
    match c.query_rows(&sql).await {
        Ok(Ok(r)) => r
            .strings()
            .first()
            .and_then(|row| row[0].as_deref().and_then(|v| v.parse().ok()))
            .unwrap_or(0),
        _ => 0,
    }
}

/// Carry out `m` as operation `id` and commit `apply`'s dictionary change
/// at its cutover. On an error before the cutover everything is undone
/// and the journal says 'failed'.
pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    id: u64,
    m: &Move,
    apply: impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<Report, ProxyError> {
    let shared = &ctx.metrics.shared;
    shared.changes_started.fetch_add(1, Ordering::Relaxed);
    let r = run_change(ctx, worker, id, m, apply).await;
    let done = if r.is_ok() {
        &shared.changes_done
    } else {
        &shared.changes_failed
    };
    done.fetch_add(1, Ordering::Relaxed);
    r
}

async fn run_change(
    ctx: &Context,
    worker: usize,
    id: u64,
    m: &Move,
    apply: impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<Report, ProxyError> {
    let started = std::time::Instant::now();
    // Nothing is created before the spec is recorded: an error here only
    // ends the operation.
    let mut rs = Vec::with_capacity(2);
    for (mv, tag) in m.with_companion() {
        match open(ctx, worker, id, mv, tag).await {
            Ok(r) => rs.push(r),
            Err(e) => {
                fail(ctx, worker, id, &e).await;
                return Err(e);
            }
        }
    }
    if let Err(e) = record_spec(ctx, worker, id, m, false).await {
        fail(ctx, worker, id, &e).await;
        return Err(e);
    }
    // A cancel (HSCALE CANCEL_OPERATION, through any proxy) is seen within
    // CANCEL_POLL; the copy or replay it interrupts is dropped mid-way (the
    // undo, `abandon`, runs on fresh connections).
    let prepared = tokio::select! {
        p = prepare_all(ctx, worker, &mut rs) => Some(p),
        () = cancel_requested(ctx, worker, id) => None,
    };
    let prepared = prepared.unwrap_or(Err(ProxyError::Cancelled(id)));
    if let Err(e) = prepared {
        abandon_all(ctx, worker, &mut rs, &e).await;
        return Err(e);
    }
    let rows = prepared.unwrap_or(0);
    cut_over(ctx, worker, &mut rs, rows, started, apply).await
}

/// The connections of move `m` of operation `id` (`tag`: see
/// [`Running::tag`]), registered before their first write (`fence.rs`): a
/// take-over kills them. A failure to register means the change was taken
/// over already.
async fn open<'m>(
    ctx: &Context,
    worker: usize,
    id: u64,
    m: &'m Move,
    tag: String,
) -> Result<Running<'m>, ProxyError> {
    let mut src = conn(ctx, worker, m.src.0).await?;
    src.is_broken = true; // session settings change below: never pooled again
    let pk = primary_key(&mut src, &m.db, &m.src.1).await?;
    if pk.is_empty() && has_moving_rows(&mut src, m, &m.src.1).await? {
        return Err(no_primary_key(ctx, m));
    }
    let mut dst = conn(ctx, worker, m.dst.0).await?;
    dst.is_broken = true;
    exec(&mut src, &session_of(m, false)).await?;
    exec(&mut dst, &session_of(m, true)).await?;
    let columns = ddl::exact_select_list(&mut src, &m.db, &m.src.1).await?;
    let names = ddl::column_names(&mut src, &m.db, &m.src.1).await?;
    register(ctx, worker, id, FIRST_EPOCH, m.src.0, &mut src).await?;
    register(ctx, worker, id, FIRST_EPOCH, m.dst.0, &mut dst).await?;
    // A split's other destination, on the source's backend.
    let rest = match &m.rest {
        Some(_) => {
            let mut c = conn(ctx, worker, m.src.0).await?;
            c.is_broken = true;
            register(ctx, worker, id, FIRST_EPOCH, m.src.0, &mut c).await?;
            exec(&mut c, &dst_session()).await?;
            Some(c)
        }
        None => None,
    };
    let mut r = Running {
        m,
        id,
        tag,
        epoch: FIRST_EPOCH,
        src,
        dst,
        pk,
        into: m.into(id),
        src_name: m.src.1.clone(),
        replayed: 0,
        lanes: Vec::new(),
        columns,
        rest,
        names,
        log: Changelog::fresh(0),
    };
    r.log = Changelog::of(&mut r.src, &changelog_name(id, &r.tag), r.pk.len()).await?;
    for _ in 1..REPLAY_LANES {
        let mut lane = (
            conn(ctx, worker, m.src.0).await?,
            conn(ctx, worker, m.dst.0).await?,
        );
        lane.0.is_broken = true;
        lane.1.is_broken = true;
        register(ctx, worker, id, FIRST_EPOCH, m.src.0, &mut lane.0).await?;
        register(ctx, worker, id, FIRST_EPOCH, m.dst.0, &mut lane.1).await?;
        exec(&mut lane.0, &session_of(m, false)).await?;
        exec(&mut lane.1, &session_of(m, true)).await?;
        r.lanes.push(lane);
    }
    Ok(r)
}

/// [`prepare`] for each move of the change, one after the other, then a
/// last catch-up of each (the first's backlog grew while the second
/// copied). Returns the rows the first copied.
async fn prepare_all(
    ctx: &Context,
    worker: usize,
    rs: &mut [Running<'_>],
) -> Result<u64, ProxyError> {
    let mut rows = None;
    for r in rs.iter_mut() {
        let n = prepare(ctx, worker, r).await?;
        // An online schema change copies every partition: all count.
        match rows.as_mut() {
            Some(all) if r.m.reshape.is_some() => *all += n,
            _ => {
                rows.get_or_insert(n);
            }
        }
    }
    if rs.len() > 1 {
        for r in rs.iter_mut() {
            catch_up(ctx, worker, r).await?;
        }
    }
    Ok(rows.unwrap_or(0))
}

/// Undo every move of a change that failed before its cutover, and end it
/// in the journal. What cannot be undone now
/// (a backend is down) is left to the take-over: the journal row stays
/// active, in 'rolling_back' (or 'cancelling'), and every proxy tries
/// again each reload interval (`takeover::roll_back`) until the backend is
/// back; the table cannot be changed meanwhile.
async fn abandon_all(ctx: &Context, worker: usize, rs: &mut [Running<'_>], why: &ProxyError) {
    let Some(id) = rs.first().map(|r| r.id) else {
        return;
    };
    tracing::warn!(operation = id, error = %why, "partition change failed before its cutover; undoing it");
    let mut is_clean = true;
    for r in rs.iter_mut() {
        match undo(ctx, worker, r).await {
            Some(clean) => is_clean &= clean,
            None => return,
        }
    }
    if is_clean {
        fail(ctx, worker, id, why).await;
        return;
    }
    tracing::warn!(
        operation = id,
        "a backend is unreachable: the change's tables are dropped by a take-over once it is back"
    );
    let sql = format!(
        "UPDATE `hscale`.`operations` SET state = IF(state = 'cancelling', 'cancelling', 'rolling_back') WHERE id = {id} AND active IS NOT NULL"
    );
    if let Err(e) = journal(ctx, worker, sql).await {
        tracing::warn!(operation = id, error = %e, "cannot mark the operation for a take-over");
    }
}

/// How often a change's owner looks for a cancel in the journal.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// Returns once operation `id` is asked to stop (its journal state is
/// 'cancelling'); errors reading the journal are ignored (the next look
/// may succeed; the cutover's guard catches a cancel anyway).
async fn cancel_requested(ctx: &Context, worker: usize, id: u64) {
    let q = format!("SELECT state FROM `hscale`.`operations` WHERE id = {id}");
    loop {
        tokio::time::sleep(CANCEL_POLL).await;
        if let Ok(mut main) = conn(ctx, worker, BackendId::MAIN).await {
            if let Ok(Ok(r)) = main.query_rows(&q).await {
                if r.strings().first().and_then(|r| r[0].as_deref()) == Some("cancelling") {
                    tracing::info!(operation = id, "cancelled: undoing the change");
                    return;
                }
            }
        }
    }
}

/// Undo move `r` of a change that failed before its cutover: `None` when
/// the change was taken over (the take-over undoes it), else whether
/// everything of it is gone.
async fn undo(ctx: &Context, worker: usize, r: &mut Running<'_>) -> Option<bool> {
    // Fresh connections: the failure may have broken the change's own.
    // Registered first: a change taken over is undone by the take-over.
    for (b, c) in [(r.m.src.0, &mut r.src), (r.m.dst.0, &mut r.dst)] {
        if let Ok(mut fresh) = conn(ctx, worker, b).await {
            fresh.is_broken = true;
            if let Err(e) = register(ctx, worker, r.id, r.epoch, b, &mut fresh).await {
                tracing::warn!(operation = r.id, error = %e, "not undoing the change");
                return None;
            }
            *c = fresh;
        }
    }
    // The lanes' and the rest's connections close now: a replay dropped
    // mid-way (a cancel, an error) may hold a transaction on the source or
    // the destination, whose locks the drops below would wait for.
    r.lanes.clear();
    r.rest = None;
    let _ = exec(
        &mut r.dst,
        &["SET SESSION lock_wait_timeout = 10".to_string()],
    )
    .await;
    let mut is_clean = r.clean_up().await;
    if let Some(rest) = &r.m.rest {
        is_clean &= exec(
            &mut r.src,
            &[format!("DROP TABLE IF EXISTS {}", qualified(&r.m.db, rest))],
        )
        .await
        .is_ok();
    }
    if !r.m.is_dst_live {
        is_clean &= exec(
            &mut r.dst,
            &[format!(
                "DROP TABLE IF EXISTS {}",
                qualified(&r.m.db, &r.into)
            )],
        )
        .await
        .is_ok();
    }
    Some(is_clean)
}

/// Whether any row of `table` (move `m`'s source, under its name now)
/// would move.
pub(super) async fn has_moving_rows(
    c: &mut BackendConn,
    m: &Move,
    table: &str,
) -> Result<bool, ProxyError> {
    let key = quote_ident(&m.key_column);
    let cond = match &m.filter {
        Some(f) => f.replace(KEY, &key),
        None => "1 = 1".to_string(),
    };
    let sql = format!(
        "SELECT COUNT(*) FROM (SELECT 1 FROM {} WHERE {cond} LIMIT 1) AS t",
        qualified(&m.db, table)
    );
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| crate::partition::store::server_error(c, &sql, e))?;
    Ok(r.strings().first().and_then(|r| r[0].as_deref()) != Some("0"))
}

/// The refusal of a change whose rows would move out of a table without a
/// primary key: the cause, and the fix.
/// The table is named as the client knows it (`Dictionary::user_message`).
pub(super) fn no_primary_key(ctx: &Context, m: &Move) -> ProxyError {
    let text = format!(
        "{} has no primary key, and rows would move: rows of a table without one cannot be moved while it is written (a change replays the rows written meanwhile by their key). Give the table a primary key that holds its partition key column `{}` (ALTER TABLE ... ADD PRIMARY KEY (...)) and run the command again; a partition that no row moves to or from needs none",
        qualified(&m.db, &m.src.1),
        m.key_column
    );
    let d = ctx.partitioning.dictionary();
    ProxyError::Refused(d.user_message(&text).unwrap_or(text))
}

/// Record how to undo or finish operation `id` before anything is created
/// (`in_place`: an in-place SETUP_TABLE, see `takeover::Spec`).
pub(super) async fn record_spec(
    ctx: &Context,
    worker: usize,
    id: u64,
    m: &Move,
    in_place: bool,
) -> Result<(), ProxyError> {
    let names: Vec<&str> = ctx
        .config
        .backends
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    let spec_of = |m: &Move| takeover::Spec {
        format: if m.reshape.is_some() {
            takeover::SPEC_FORMAT
        } else {
            takeover::MOVE_FORMAT
        },
        db: m.db.clone(),
        src_backend: names[m.src.0.index()].to_string(),
        dst_backend: names[m.dst.0.index()].to_string(),
        into: m.into(id),
        is_dst_live: m.is_dst_live,
        src_table: m.src.1.clone(),
        src_after: m.src_after.clone(),
        dst_table: m.dst.1.clone(),
        key_column: m.key_column.clone(),
        filter: m.filter.clone(),
        rest: m.rest.clone(),
        dst_filter: m.dst_filter.clone(),
        companion: None,
        dictionary: m.dictionary.clone(),
        in_place,
        reshape: m.reshape.clone(),
    };
    // The chain of moves, as a chain of specs (built from its end).
    let chain: Vec<&Move> = m.with_companion().map(|(m, _)| m).collect();
    let mut spec = None;
    for mv in chain.into_iter().rev() {
        let mut s = spec_of(mv);
        s.companion = spec.map(Box::new);
        spec = Some(s);
    }
    let spec = spec.ok_or_else(|| wrong("a change without a move"))?;
    let text = toml::to_string(&spec).map_err(|e| wrong(e.to_string()))?;
    journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET detail = {} WHERE id = {id} AND epoch = {FIRST_EPOCH}",
            quote_str(&text)
        ),
    )
    .await
}

/// After the last replay: the moved rows leave what stays of the source,
/// and the staging table joins the destination (both can run again).
pub(super) async fn finish_rows(r: &mut Running<'_>) -> Result<(), ProxyError> {
    let m = r.m;
    if m.filter.is_some() && m.rest.is_none() {
        let sql = format!(
            "DELETE FROM {} WHERE {}",
            qualified(&m.db, &r.src_name),
            r.moving(&quote_ident(&m.key_column))
        );
        exec(&mut r.src, &[sql]).await?;
    }
    if m.is_dst_live {
        let sql = format!(
            "REPLACE INTO {} SELECT * FROM {}",
            qualified(&m.db, &m.dst.1),
            qualified(&m.db, &r.into)
        );
        exec(&mut r.dst, &[sql]).await?;
    }
    Ok(())
}
