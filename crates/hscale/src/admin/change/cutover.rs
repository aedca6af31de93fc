//! A change's cutover (see the module above): the source renamed, the
//! rest replayed, the moved rows deleted or merged, the new dictionary
//! committed with the journal's 'done'; and the renames undone when a
//! change is rolled back.

use super::*;

pub(super) async fn cut_over(
    ctx: &Context,
    worker: usize,
    rs: &mut [Running<'_>],
    rows: u64,
    started: std::time::Instant,
    apply: impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<Report, ProxyError> {
    let Some(id) = rs.first().map(|r| r.id) else {
        return Err(wrong("a change without a move"));
    };
    let epoch = rs[0].epoch;
    let mut apply = apply;
    let prepared = enter_cutover(ctx, worker, rs, id, epoch, &mut apply).await?;
    let pause = std::time::Instant::now();
    tracing::debug!(operation = id, "rename");
    rename_sources(ctx, worker, rs, id).await?;
    let renamed = pause.elapsed();
    if let Some(ms) = test_pause("HSCALE_TEST_PAUSE_AFTER_RENAME_MS") {
        // Tests kill the owner here: the cutover is finished by another proxy.
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    // From here on writes to the sources wait for the new dictionary: roll
    // forward. A failure leaves the journal in 'cutover' for a take-over.
    let mut entries = 0;
    for r in rs.iter_mut() {
        entries += r.replay_final().await?;
    }
    let replayed = pause.elapsed();
    for r in rs.iter_mut() {
        finish_rows(r).await?;
    }
    let finished = pause.elapsed();
    let mut report = Report {
        rows,
        seconds: 0.0,
        longest_pause_ms: 0,
    };
    report.longest_pause_ms = pause.elapsed().as_millis() as u64;
    commit_prepared_with_journal(ctx, worker, id, epoch, &report, Some(prepared), apply).await?;
    report.longest_pause_ms = pause.elapsed().as_millis() as u64;
    // Where the pause went (bench/moves.sh reads it).
    tracing::debug!(
        operation = id,
        rename_ms = ms(renamed),
        replay_ms = ms(replayed - renamed),
        entries,
        finish_ms = ms(finished - replayed),
        commit_ms = ms(pause.elapsed() - finished),
        "cutover steps"
    );
    let shared = &ctx.metrics.shared;
    shared.cutover_pauses.fetch_add(1, Ordering::Relaxed);
    shared
        .cutover_pause_us
        .fetch_add(pause.elapsed().as_micros() as u64, Ordering::Relaxed);
    if let Some(ms) = test_pause("HSCALE_TEST_PAUSE_AFTER_COMMIT_MS") {
        // Tests kill the owner here: another proxy cleans up.
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    clean_up(ctx, worker, rs, id, started, &mut report).await;
    tracing::info!(
        operation = id,
        rows,
        pause_ms = report.longest_pause_ms,
        "partition change done"
    );
    Ok(report)
}

/// Before writes wait: every source's rename prepared and the new
/// dictionary's rows (committed after the rename unless another change
/// moved the version on meanwhile), the cleanup owed and the journal in
/// 'cutover'. A failure undoes the change.
async fn enter_cutover(
    ctx: &Context,
    worker: usize,
    rs: &mut [Running<'_>],
    id: u64,
    epoch: u64,
    apply: &mut impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<(u64, Vec<String>), ProxyError> {
    let mut prepared = Ok(());
    for r in rs.iter_mut() {
        if prepared.is_ok() {
            prepared = r.prepare_rename().await;
        }
    }
    let prepared = match prepared {
        Ok(()) => prepare_commit(ctx, worker, apply).await,
        Err(e) => Err(e),
    };
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            abandon_all(ctx, worker, rs, &e).await;
            return Err(e);
        }
    };
    // Owed once the change commits: a proxy that finds it owed after the
    // owner died cleans up (`takeover::clean_after`).
    let owed = format!("UPDATE `hscale`.`operations` SET cleanup_pending = 1 WHERE id = {id}");
    let entered = match journal(ctx, worker, owed).await {
        Ok(()) => mark_cutover(ctx, worker, id, epoch).await,
        Err(e) => Err(e),
    };
    if let Err(e) = entered {
        abandon_all(ctx, worker, rs, &e).await;
        return Err(e);
    }
    Ok(prepared)
}

/// Every source is renamed, or none: a failure names the renamed ones
/// back and undoes the change.
async fn rename_sources(
    ctx: &Context,
    worker: usize,
    rs: &mut [Running<'_>],
    id: u64,
) -> Result<(), ProxyError> {
    // Every source is renamed, or none: a later one that cannot be renamed
    // has the earlier ones renamed back before the change is undone.
    // A rename that failed may have happened all the same (its answer
    // lost): each source up to the failed one is named back by what its
    // backend holds, on a fresh connection.
    for i in 0..rs.len() {
        if let Err(e) = rs[i].rename_source().await {
            for r in rs[..=i].iter_mut() {
                if let Err(back) = restore_name(ctx, worker, r).await {
                    // Fenced and not undone: a take-over rolls it back
                    // (`takeover::roll_back` names sources back too).
                    tracing::error!(operation = id, error = %back, "cannot rename a source back; the change is left to a take-over");
                    return Err(e);
                }
            }
            abandon_all(ctx, worker, rs, &e).await;
            return Err(e);
        }
        // Without a primary key nothing was captured: a row that moves,
        // written since `open` looked, undoes the change (the source is
        // renamed: no writer can add one now).
        let unmovable = if rs[i].pk.is_empty() {
            let (m, name) = (rs[i].m, rs[i].src_name.clone());
            match has_moving_rows(&mut rs[i].src, m, &name).await {
                Ok(false) => None,
                Ok(true) => Some(no_primary_key(ctx, m)),
                Err(e) => Some(e),
            }
        } else {
            None
        };
        if let Some(e) = unmovable {
            for r in rs[..=i].iter_mut() {
                if let Err(back) = restore_name(ctx, worker, r).await {
                    tracing::error!(operation = id, error = %back, "cannot rename a source back; the change is left to a take-over");
                    return Err(e);
                }
            }
            abandon_all(ctx, worker, rs, &e).await;
            return Err(e);
        }
        if i + 1 < rs.len() {
            if let Some(ms) = test_pause("HSCALE_TEST_PAUSE_BETWEEN_RENAMES_MS") {
                // Tests kill the owner here: a take-over renames the
                // second source and finishes the change.
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            }
        }
    }
    Ok(())
}

/// After the commit: the change's leftovers removed (a retiring source
/// too), its time taken, and the journal told the longest pause and
/// whether a cleanup is still owed.
async fn clean_up(
    ctx: &Context,
    worker: usize,
    rs: &mut [Running<'_>],
    id: u64,
    started: std::time::Instant,
    report: &mut Report,
) {
    let mut is_clean = true;
    for r in rs.iter_mut() {
        is_clean &= r.clean_up().await;
        if r.m.source_retires() {
            is_clean &= exec(&mut r.src, &retire_sql(ctx, &r.m.db, &r.src_name))
                .await
                .is_ok();
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    let _ = journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET longest_pause_ms = {}, cleanup_pending = {} WHERE id = {id}",
            report.longest_pause_ms,
            u8::from(!is_clean)
        ),
    )
    .await;
}

/// Give move `r`'s source its name back if the cutover renamed it (a later
/// source could not be renamed), judged by the tables its backend holds.
pub(super) async fn restore_name(
    ctx: &Context,
    worker: usize,
    r: &mut Running<'_>,
) -> Result<(), ProxyError> {
    let mut c = conn(ctx, worker, r.m.src.0).await?;
    c.is_broken = true;
    register(ctx, worker, r.id, r.epoch, r.m.src.0, &mut c).await?;
    // A rename whose answer was lost may still wait on the server: its
    // connection is killed, and gone, before the tables are judged.
    kill_and_wait(&mut c, r.src.thread_id).await?;
    name_back(&mut c, &r.m.db, &r.m.src.1, &r.m.src_after).await?;
    r.src = c;
    r.src_name = r.m.src.1.clone();
    Ok(())
}

/// Kill the server thread `thread` (a connection of ours on `c`'s server)
/// and wait, at most 10 s, until it is gone.
pub(super) async fn kill_and_wait(c: &mut BackendConn, thread: u32) -> Result<(), ProxyError> {
    // Unknown thread (1094): gone already.
    let _ = c
        .command(&BackendConn::payload_for_query(&format!(
            "KILL CONNECTION {thread}"
        )))
        .await?;
    let q = format!("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {thread}");
    for _ in 0..200 {
        let n = c
            .query_rows(&q)
            .await?
            .map_err(|e| crate::partition::store::server_error(c, &q, e))?;
        if n.strings().first().and_then(|r| r[0].as_deref()) == Some("0") {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Err(wrong(format!("connection {thread} did not end after KILL")))
}

/// Rename `db`.`after` back to `db`.`before` if only `after` exists (a
/// cutover renamed the source and the change is undone). Each attempt
/// waits at most 10 s for the transactions that hold it.
pub(in crate::admin) async fn name_back(
    c: &mut BackendConn,
    db: &str,
    before: &str,
    after: &str,
) -> Result<(), ProxyError> {
    if ddl::table_exists(c, db, before).await? || !ddl::table_exists(c, db, after).await? {
        return Ok(());
    }
    exec(
        c,
        &[
            "SET SESSION lock_wait_timeout = 10".to_string(),
            format!(
                "RENAME TABLE {} TO {}",
                qualified(db, after),
                qualified(db, before)
            ),
        ],
    )
    .await
}

/// Milliseconds with a fraction, for logs.
pub(super) fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e4).round() / 10.0
}

/// Retire `db`.`table` (a source every key left): dropped, or moved to
/// `[proxy] keep_retired_db` under the same (never reused) name.
pub(in crate::admin) fn retire_sql(ctx: &Context, db: &str, table: &str) -> Vec<String> {
    let keep = &ctx.config.proxy.keep_retired_db;
    if keep.is_empty() {
        return vec![format!("DROP TABLE IF EXISTS {}", qualified(db, table))];
    }
    vec![
        format!("CREATE DATABASE IF NOT EXISTS {}", quote_ident(keep)),
        format!(
            "RENAME TABLE {} TO {}",
            qualified(db, table),
            qualified(keep, table)
        ),
    ]
}
