//! Taking over a partition change whose owner is gone (issue 12 item 4).
//!
//! The owner of a change holds a named lock on the main backend for the
//! whole change, on a connection of its own (`change::begin`); the kernel
//! closes that connection when the owner's process dies, and the server
//! frees the lock. Every proxy looks at the running changes every reload
//! interval ([`take_over`]); one that can take a change's lock knows its
//! owner is gone:
//! - before the cutover (`copying`, or `cutover` with the source not yet
//!   renamed) nothing is fenced yet: the change is rolled back ([`roll_back`]:
//!   triggers, changelog and the copy's table dropped, journal `failed`);
//! - after the rename the change is finished ([`finish_cutover`]): every
//!   cutover step is idempotent and repeated from the journal's record.
//!
//! A stopped owner (SIGSTOP, a frozen host) keeps its lock; its heartbeat
//! stops, and once it is older than `[proxy] takeover_after_ms` a proxy
//! takes the change over anyway. Every take-over first fences the old owner
//! (`change/fence.rs`): it raises the journal row's epoch by
//! compare-and-set, kills every backend connection the owner registered
//! (its lock's too) and waits until they are gone. Only then does it roll
//! back or finish, on connections registered under its own epoch, with its
//! own heartbeat; so a woken owner can no longer write anything, and a
//! stopped taker is taken over the same way.

use hscale_route::dictionary::TableName;
use hscale_route::BackendId;

use super::{
    capture_drops, changelog_name, commit_with_journal, finish_rows, flip, kill_registered,
    lock_owner, name_back, owner, primary_key, register, session_of, tag_of, Changelog, Move,
    Report, Running,
};
use crate::admin::{conn, wrong};
use crate::error::ProxyError;
use crate::partition::store::{exec, server_error};
use crate::partition::{ddl, qualified, quote_str};
use crate::runtime::Context;

/// The form of [`Spec`] this proxy writes and understands: 2 added `rest`,
/// `dst_filter` and `companion` (a spec without `format` is older, 0).
/// A take-over leaves a spec of a later form to a proxy that knows it:
/// fields it does not know would be ignored, and the change finished or
/// undone wrongly.
/// 3 added `reshape` and chains of more than two moves (an online schema
/// change, one move per partition); a plain move is still written as 2
/// ([`MOVE_FORMAT`]), so proxies that know only 2 take it over.
pub(super) const SPEC_FORMAT: u32 = 3;
/// The form a change without a reshape is written in.
pub(super) const MOVE_FORMAT: u32 = 2;

impl Spec {
    /// This move and its companions, with their tags (`Move::with_companion`).
    pub(super) fn moves(&self) -> impl Iterator<Item = (&Spec, String)> {
        std::iter::successors(Some(self), |s| s.companion.as_deref())
            .enumerate()
            .map(|(i, s)| (s, tag_of(i)))
    }

    /// `Move::source_retires` of the move this spec records.
    fn source_retires(&self) -> bool {
        self.filter.is_none() || self.rest.is_some()
    }
}

/// Whether `detail` is a partition change's spec of a later form than
/// [`SPEC_FORMAT`].
fn is_newer_spec(detail: &str) -> bool {
    toml::from_str::<Spec>(detail).is_ok_and(|s| s.format > SPEC_FORMAT)
}

/// What another proxy needs to undo a change whose owner died before its
/// cutover; kept in the journal row's `detail`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Spec {
    /// Its form ([`SPEC_FORMAT`] when this proxy wrote it).
    #[serde(default)]
    pub(super) format: u32,
    pub(super) db: String,
    pub(super) src_backend: String,
    pub(super) dst_backend: String,
    /// The table the copy writes: the destination, or its staging table.
    pub(super) into: String,
    pub(super) is_dst_live: bool,
    pub(super) src_table: String,
    pub(super) src_after: String,
    pub(super) dst_table: String,
    pub(super) key_column: String,
    pub(super) filter: Option<String>,
    /// A split's rest table, on the source's backend (`Move::rest`).
    #[serde(default)]
    pub(super) rest: Option<String>,
    /// The destination's rows this move writes (`Move::dst_filter`).
    #[serde(default)]
    pub(super) dst_filter: Option<String>,
    /// The change's second move (`Move::companion`), renamed after this
    /// one's source at the cutover.
    #[serde(default)]
    pub(super) companion: Option<Box<Spec>>,
    pub(super) dictionary: Vec<String>,
    /// An in-place SETUP_TABLE: no rows move; the table is renamed to its
    /// default partition (`src_table` to `src_after`, on the main backend),
    /// then the dictionary commits. Finished when the rename happened,
    /// else rolled back; the destination is never dropped.
    #[serde(default)]
    pub(super) in_place: bool,
    /// An online schema change's move (`Move::reshape`).
    #[serde(default)]
    pub(super) reshape: Option<super::reshape::Reshape>,
}

/// Take over the changes whose owner is gone (its owner lock is free): one
/// that died before its cutover is rolled back (triggers, changelog and the
/// copy's table dropped, the journal says 'failed'), so the table is as
/// before and can be changed again. Run by every proxy every reload
/// interval; the owner lock makes one proxy do it. A change that died in its
/// cutover is reported, not yet finished.
pub async fn take_over(ctx: &Context, worker: usize) -> Result<(), ProxyError> {
    // Stale: a heartbeat older than the bound, by the main backend's clock
    // (rows of proxies without heartbeats count as live while locked).
    let sql = format!(
        "SELECT id, db, tbl, epoch, heartbeat < NOW(6) - INTERVAL {} MICROSECOND FROM `hscale`.`operations` WHERE active IS NOT NULL",
        ctx.config.proxy.takeover_after_ms.saturating_mul(1000)
    );
    let running = {
        let mut main = conn(ctx, worker, BackendId::MAIN).await?;
        main.query_rows(&sql)
            .await?
            .map_err(|e| server_error(&main, &sql, e))?
            .strings()
    };
    for r in running {
        let f = |i: usize| r[i].clone().unwrap_or_default();
        let (id, name) = (f(0), TableName::new(&f(1), &f(2)));
        let (Ok(id), Ok(epoch)) = (id.parse::<u64>(), f(3).parse::<u64>()) else {
            continue;
        };
        let is_stale = f(4) == "1";
        let mut owner_lock = match lock_owner(ctx, worker, &name, 0).await? {
            // The owner is gone (or only its lock's connection is): fence
            // whatever else of it may live.
            Some(l) => {
                if !flip(ctx, worker, id, epoch).await? {
                    continue; // another proxy takes it over, or it ended
                }
                kill_registered(ctx, worker, id, epoch + 1).await?;
                l
            }
            None if is_stale => {
                // The owner holds its lock but stopped beating: fence it;
                // killing its lock's connection frees the lock.
                if !flip(ctx, worker, id, epoch).await? {
                    continue;
                }
                tracing::warn!(operation = id, table = %name, "a partition change's owner stopped (no heartbeat): fencing it");
                kill_registered(ctx, worker, id, epoch + 1).await?;
                match lock_owner(ctx, worker, &name, 10).await? {
                    Some(l) => l,
                    None => continue,
                }
            }
            None => continue, // its owner lives (or another proxy takes it over)
        };
        let epoch = epoch + 1;
        owner_lock.beat(ctx, worker, id, epoch).await?;
        // Read it again under the lock: it may have ended meanwhile.
        let q = format!(
            "SELECT state, IFNULL(detail, '') FROM `hscale`.`operations` WHERE id = {id} AND active IS NOT NULL"
        );
        let row = {
            let mut main = conn(ctx, worker, BackendId::MAIN).await?;
            main.query_rows(&q)
                .await?
                .map_err(|e| server_error(&main, &q, e))?
                .strings()
                .into_iter()
                .next()
        };
        let Some(row) = row else { continue };
        let state = row[0].clone().unwrap_or_default();
        let detail = row[1].clone().unwrap_or_default();
        if let Some(spec) = crate::admin::table_ddl::spec_of(&detail) {
            tracing::warn!(operation = id, table = %name, state, "a DDL operation's owner is gone: finishing it");
            crate::admin::table_ddl::take_over(ctx, worker, id, epoch, &state, spec).await?;
            continue;
        }
        if let Some(spec) = crate::admin::setup_global_table::spec_of(&detail) {
            tracing::warn!(operation = id, table = %name, "a SETUP_GLOBAL_TABLE's owner is gone: rolling it back");
            crate::admin::setup_global_table::take_over(ctx, worker, id, epoch, spec).await?;
            continue;
        }
        if is_newer_spec(&detail) {
            tracing::warn!(operation = id, table = %name, "a partition change recorded by a newer proxy: left to a proxy that knows its form");
            continue;
        }
        if state == "cutover" {
            tracing::warn!(operation = id, table = %name, "a partition change's owner is gone in its cutover: finishing it");
            finish_cutover(ctx, worker, id, epoch, &name, &detail).await?;
            continue;
        }
        tracing::warn!(operation = id, table = %name, "a partition change's owner is gone before its cutover: rolling it back");
        roll_back(ctx, worker, id, epoch, &name, &detail).await?;
    }
    // Changes that committed and still owe their clean-up: their owner is
    // gone once its lock is free (it holds the lock until it has cleaned
    // up; a later change of the table holds it too, and waits its turn).
    let owed = "SELECT id, db, tbl, IFNULL(detail, '') FROM `hscale`.`operations` WHERE active IS NULL AND state = 'done' AND cleanup_pending = 1";
    let owed = {
        let mut main = conn(ctx, worker, BackendId::MAIN).await?;
        main.query_rows(owed)
            .await?
            .map_err(|e| server_error(&main, owed, e))?
            .strings()
    };
    for r in owed {
        let f = |i: usize| r[i].clone().unwrap_or_default();
        let Ok(id) = f(0).parse::<u64>() else {
            continue;
        };
        let name = TableName::new(&f(1), &f(2));
        if !OWED.is_due(id) {
            continue;
        }
        let Some(_lock) = lock_owner(ctx, worker, &name, 0).await? else {
            continue;
        };
        tracing::warn!(operation = id, table = %name, "a committed partition change's owner is gone before its clean-up: cleaning up");
        match clean_after(ctx, worker, id, &f(3)).await {
            Ok(()) => OWED.forget(id),
            Err(e) => {
                let after = OWED.failed(id);
                tracing::warn!(operation = id, table = %name, error = %e, retry_in_s = after.as_secs(), "cannot clean up after a committed partition change yet");
            }
        }
    }
    Ok(())
}

/// When this proxy tries the clean-up owed by an operation again after it
/// failed: 2 s, doubling up to 5 minutes. A capture trigger on a live
/// table held by a long transaction cannot be dropped yet, and each attempt
/// has writes to that table wait (up to its 1 s lock wait).
struct Backoff(std::sync::Mutex<std::collections::HashMap<u64, (std::time::Instant, u32)>>);

static OWED: std::sync::LazyLock<Backoff> =
    std::sync::LazyLock::new(|| Backoff(Default::default()));

impl Backoff {
    fn map(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<u64, (std::time::Instant, u32)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_due(&self, id: u64) -> bool {
        self.map()
            .get(&id)
            .is_none_or(|(at, _)| *at <= std::time::Instant::now())
    }

    fn failed(&self, id: u64) -> std::time::Duration {
        let mut m = self.map();
        let e = m.entry(id).or_insert((std::time::Instant::now(), 0));
        e.1 = (e.1 + 1).min(8);
        let after = std::time::Duration::from_secs((1u64 << e.1).min(300));
        e.0 = std::time::Instant::now() + after;
        after
    }

    fn forget(&self, id: u64) {
        self.map().remove(&id);
    }
}

/// Finish the cutover of operation `id` whose owner is gone. If the source
/// was not renamed yet, nothing is fenced: the change is rolled back. Else
/// every step is repeated (each is idempotent): the last replays, the moved
/// rows deleted from what stays, the staging table merged, the dictionary
/// committed, the capture removed.
async fn finish_cutover(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
    name: &TableName,
    detail: &str,
) -> Result<(), ProxyError> {
    let Ok(spec) = toml::from_str::<Spec>(detail) else {
        return roll_back(ctx, worker, id, epoch, name, detail).await;
    };
    let index = |b: &str| {
        ctx.backend_named(b).ok_or_else(|| {
            wrong(format!(
                "operation {id} names backend {b:?}, not in the config"
            ))
        })
    };
    let src_b = index(&spec.src_backend)?;
    let mut src = conn(ctx, worker, src_b).await?;
    src.is_broken = true;
    if ddl::table_exists(&mut src, &spec.db, &spec.src_table).await? {
        return roll_back(ctx, worker, id, epoch, name, detail).await;
    }
    if spec.in_place {
        // Renamed (the old owner's connections are dead, so it stays so):
        // only the dictionary is left to commit.
        if !ddl::table_exists(&mut src, &spec.db, &spec.src_after).await? {
            return roll_back(ctx, worker, id, epoch, name, detail).await;
        }
        let report = Report {
            rows: 0,
            seconds: 0.0,
            longest_pause_ms: 0,
        };
        let rows = spec.dictionary.clone();
        commit_with_journal(ctx, worker, id, epoch, &report, |_| Ok(rows.clone())).await?;
        tracing::info!(operation = id, table = %name, "in-place SETUP_TABLE finished by a take-over");
        return Ok(());
    }
    drop(src);
    // Both moves of a merge: the first's source was renamed (else it was
    // rolled back above); the second's is renamed here if the owner did
    // not get to it.
    let specs: Vec<(&Spec, String)> = spec.moves().collect();
    let mut moves = Vec::with_capacity(specs.len());
    for (s, _) in &specs {
        moves.push(Move {
            db: s.db.clone(),
            src: (index(&s.src_backend)?, s.src_table.clone()),
            filter: s.filter.clone(),
            dst: (index(&s.dst_backend)?, s.dst_table.clone()),
            is_dst_live: s.is_dst_live,
            src_after: s.src_after.clone(),
            rest: s.rest.clone(),
            dst_filter: s.dst_filter.clone(),
            companion: None,
            key_column: s.key_column.clone(),
            dictionary: s.dictionary.clone(),
            reshape: s.reshape.clone(),
        });
    }
    let mut rs = Vec::with_capacity(moves.len());
    for (m, (s, tag)) in moves.iter().zip(&specs) {
        let mut src = conn(ctx, worker, m.src.0).await?;
        src.is_broken = true;
        register(ctx, worker, id, epoch, m.src.0, &mut src).await?;
        let is_renamed = !ddl::table_exists(&mut src, &s.db, &s.src_table).await?;
        let src_name = if is_renamed {
            s.src_after.clone()
        } else {
            s.src_table.clone()
        };
        let pk = primary_key(&mut src, &s.db, &src_name).await?;
        let columns = ddl::exact_select_list(&mut src, &s.db, &src_name).await?;
        let names = ddl::column_names(&mut src, &s.db, &src_name).await?;
        let mut dst = conn(ctx, worker, m.dst.0).await?;
        dst.is_broken = true;
        register(ctx, worker, id, epoch, m.dst.0, &mut dst).await?;
        exec(&mut src, &session_of(m, false)).await?;
        exec(&mut dst, &session_of(m, true)).await?;
        let mut r = Running {
            m,
            id,
            tag: tag.clone(),
            epoch,
            src,
            dst,
            pk,
            into: s.into.clone(),
            src_name,
            replayed: 0,
            lanes: Vec::new(),
            columns,
            // A split's rest is written by the source's connection in replays.
            rest: None,
            names,
            log: Changelog::fresh(0),
        };
        r.log = Changelog::of(&mut r.src, &changelog_name(id, tag), r.pk.len()).await?;
        if !is_renamed {
            r.prepare_rename().await?;
            r.rename_source().await?;
        }
        rs.push(r);
    }
    // A source without a primary key (nothing captured) that holds a row
    // that would move: the change is undone, as its owner would have.
    for r in &mut rs {
        let now = r.src_name.clone();
        if r.pk.is_empty() && super::has_moving_rows(&mut r.src, r.m, &now).await? {
            drop(rs);
            return roll_back(ctx, worker, id, epoch, name, detail).await;
        }
    }
    for r in &mut rs {
        while r.replay().await? > 0 {}
        finish_rows(r).await?;
    }
    let report = Report {
        rows: 0,
        seconds: 0.0,
        longest_pause_ms: 0,
    };
    let rows = spec.dictionary.clone();
    commit_with_journal(ctx, worker, id, epoch, &report, |_| Ok(rows.clone())).await?;
    if let Some(ms) = super::test_pause("HSCALE_TEST_PAUSE_TAKEOVER_AFTER_COMMIT_MS") {
        // Tests wake the old owner here: its staging table, changelog and
        // triggers still exist, and it must write nothing.
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let mut is_clean = true;
    for r in &mut rs {
        is_clean &= r.clean_up().await;
        if r.m.source_retires() {
            is_clean &= exec(&mut r.src, &super::retire_sql(ctx, &r.m.db, &r.m.src_after))
                .await
                .is_ok();
        }
    }
    if is_clean {
        cleaned(ctx, worker, id).await?;
    }
    tracing::info!(operation = id, table = %name, "partition change finished by a take-over");
    Ok(())
}

/// Operation `id` owes no clean-up any more.
async fn cleaned(ctx: &Context, worker: usize, id: u64) -> Result<(), ProxyError> {
    super::journal(
        ctx,
        worker,
        format!("UPDATE `hscale`.`operations` SET cleanup_pending = 0 WHERE id = {id}"),
    )
    .await
}

/// Clean up after operation `id` (its journal `detail`), which committed
/// but whose owner died (or lost a backend) before its clean-up ended:
/// capture triggers and changelogs dropped, retired sources dropped (or
/// moved to `keep_retired_db`), staging tables dropped. Every step can run
/// again. Run under the table's owner lock, so by one proxy, and never
/// beside a later change of the table.
async fn clean_after(
    ctx: &Context,
    worker: usize,
    id: u64,
    detail: &str,
) -> Result<(), ProxyError> {
    let Ok(spec) = toml::from_str::<Spec>(detail) else {
        return cleaned(ctx, worker, id).await;
    };
    if spec.format > SPEC_FORMAT {
        return Err(wrong(format!(
            "operation {id} was recorded by a newer proxy; left to a proxy that knows its form"
        )));
    }
    if spec.in_place {
        return cleaned(ctx, worker, id).await;
    }
    let index = |b: &str| {
        ctx.backend_named(b).ok_or_else(|| {
            wrong(format!(
                "operation {id} names backend {b:?}, not in the config"
            ))
        })
    };
    for (s, tag) in spec.moves() {
        let mut src = conn(ctx, worker, index(&s.src_backend)?).await?;
        src.is_broken = true;
        // Short lock waits: the triggers may sit on a live table (a carve
        // in place), whose writes queue behind a waiting DROP TRIGGER.
        let mut statements = vec!["SET SESSION lock_wait_timeout = 1".to_string()];
        statements.extend(capture_drops(&s.db, id, &tag));
        exec(&mut src, &statements).await?;
        if s.source_retires() && ddl::table_exists(&mut src, &s.db, &s.src_after).await? {
            exec(&mut src, &super::retire_sql(ctx, &s.db, &s.src_after)).await?;
        }
        if s.is_dst_live {
            let mut dst = conn(ctx, worker, index(&s.dst_backend)?).await?;
            dst.is_broken = true;
            exec(
                &mut dst,
                &[format!(
                    "DROP TABLE IF EXISTS {}",
                    qualified(&s.db, &s.into)
                )],
            )
            .await?;
        }
    }
    tracing::info!(
        operation = id,
        "a committed change's clean-up finished by a take-over"
    );
    cleaned(ctx, worker, id).await
}

/// Undo operation `id` (before its cutover) and end it as 'failed'.
async fn roll_back(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
    name: &TableName,
    detail: &str,
) -> Result<(), ProxyError> {
    let spec: Option<Spec> = toml::from_str(detail).ok();
    let index = |b: &str| ctx.backend_named(b);
    // Without a spec (the owner died right after starting) every backend
    // is cleaned: the names are the operation's own.
    let all: Vec<BackendId> = ctx.backend_ids().collect();
    // The change's moves: a merge has two (`Spec::companion`).
    let specs: Vec<&Spec> = spec
        .iter()
        .flat_map(|s| s.moves().map(|(m, _)| m))
        .collect();
    let mut srcs: Vec<BackendId> = specs.iter().filter_map(|s| index(&s.src_backend)).collect();
    if spec.is_none() {
        srcs = all.clone();
    }
    srcs.sort_by_key(|b| b.index());
    srcs.dedup();
    for b in srcs {
        let mut c = conn(ctx, worker, b).await?;
        c.is_broken = true;
        register(ctx, worker, id, epoch, b, &mut c).await?;
        // A source a failed cutover renamed (a change with two sources
        // whose second rename failed, or whose answer was lost) gets its
        // name back.
        for s in specs.iter().filter(|s| !s.in_place) {
            if index(&s.src_backend) == Some(b) {
                name_back(&mut c, &s.db, &s.src_table, &s.src_after).await?;
            }
        }
        // Both tags: without a spec, whether the change had a second move
        // is unknown.
        let mut statements = vec!["SET SESSION lock_wait_timeout = 10".to_string()];
        let tags = (0..specs.len().max(2)).map(tag_of);
        for tag in tags {
            statements.extend(capture_drops(&name.db, id, &tag));
        }
        // An ALTER's empty copy, if its owner died deciding whether to
        // run it online (`online_alter::decide`).
        statements.push(format!(
            "DROP TABLE IF EXISTS {}",
            qualified(&name.db, &format!("hscale_online_check_{id}"))
        ));
        // A split's rest, a fresh table beside its source.
        for s in &specs {
            if let (Some(rest), Some(sb)) = (&s.rest, index(&s.src_backend)) {
                if sb == b {
                    statements.push(format!("DROP TABLE IF EXISTS {}", qualified(&s.db, rest)));
                }
            }
        }
        exec(&mut c, &statements).await?;
    }
    // An in-place change's destination is its renamed source: kept.
    for s in specs.iter().filter(|s| !s.in_place) {
        if let Some(b) = index(&s.dst_backend) {
            let mut c = conn(ctx, worker, b).await?;
            c.is_broken = true;
            register(ctx, worker, id, epoch, b, &mut c).await?;
            exec(
                &mut c,
                &[format!(
                    "DROP TABLE IF EXISTS {}",
                    qualified(&s.db, &s.into)
                )],
            )
            .await?;
        }
    }
    super::journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET state = {}, active = NULL, ended_at = NOW(3), cleanup_pending = 0, detail = CONCAT('rolled back by ', {}, ': its owner was gone before the cutover; ', IFNULL(detail, '')) WHERE id = {id} AND epoch = {epoch} AND active IS NOT NULL",
            super::UNDONE_STATE,
            quote_str(&owner(ctx))
        ),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_of_a_later_form_is_left_alone() {
        let older = "db = 'd'\nsrc_backend = 'a'\ndst_backend = 'b'\ninto = 't'\nis_dst_live = false\nsrc_table = 's'\nsrc_after = 's2'\ndst_table = 't'\nkey_column = 'k'\ndictionary = []\n";
        let spec: Spec = toml::from_str(older).unwrap();
        assert_eq!(spec.format, 0);
        assert!(spec.rest.is_none() && spec.companion.is_none());
        assert!(!is_newer_spec(older));
        assert!(!is_newer_spec(&format!("format = {SPEC_FORMAT}\n{older}")));
        assert!(is_newer_spec(&format!(
            "format = {}\n{older}",
            SPEC_FORMAT + 1
        )));
        assert!(!is_newer_spec("not a spec"));
    }
}
