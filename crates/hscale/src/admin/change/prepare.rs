//! Before a change's cutover (see the module above): destination,
//! capture, copy, verification, and the replays that catch up with the
//! writes made meanwhile.

use super::*;

/// Before the cutover: destination, capture, copy, replays. Returns the
/// rows copied.
pub(super) async fn prepare(
    ctx: &Context,
    worker: usize,
    r: &mut Running<'_>,
) -> Result<u64, ProxyError> {
    let m = r.m;
    {
        let mut like = conn(ctx, worker, m.src.0).await?;
        ddl::create_like(&mut like, &m.db, &m.src.1, &mut r.dst, &r.into).await?;
        if let (Some(rest), Some(c)) = (&m.rest, r.rest.as_mut()) {
            ddl::create_like(&mut like, &m.db, &m.src.1, c, rest).await?;
        }
    }
    if let Some(rs) = &m.reshape {
        exec(&mut r.dst, std::slice::from_ref(&rs.alter)).await?;
        return prepare_reshape(ctx, worker, r).await;
    }
    // A table without a primary key, none of whose rows moves (`open`
    // checked): nothing to capture or copy. The cutover checks again
    // once writes are fenced (`cut_over`).
    if r.pk.is_empty() {
        if let Some(ms) = test_pause("HSCALE_TEST_PAUSE_AFTER_COPY_MS") {
            // Tests write a row that moves here: the cutover must see it.
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        return Ok(0);
    }
    r.capture().await?;
    // The source sums what it sends (the verification's checksum of each
    // row, `verify.rs`) in the same pass.
    let text = ddl::row_text(&mut r.src, &m.db, &r.src_name).await?;
    let select = format!(
        "SELECT {}, CRC32({text}) FROM {} WHERE {}",
        r.columns,
        qualified(&m.db, &r.src_name),
        r.moving(&quote_ident(&m.key_column))
    );
    let mut reader = conn(ctx, worker, m.src.0).await?;
    reader.is_broken = true;
    exec(&mut reader, &copy_session()).await?;
    // The journal's estimate of the rows to copy: the source's statistics
    // (all its rows; the moving share is unknown without a scan).
    journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET rows_estimate = {}{} WHERE id = {}",
            r.after_first("rows_estimate"),
            table_rows(&mut reader, &m.db, &r.src_name).await,
            r.id
        ),
    )
    .await?;
    let into_q = qualified(&m.db, &r.into);
    // The copy reads one snapshot, kept open after it: the verification
    // sums the source in exactly the state the copy read. Its transaction
    // holds the source's metadata lock until then, so the connection is
    // registered: a take-over kills it, or the undo's DROP TRIGGER would
    // wait for a stopped owner.
    register(ctx, worker, r.id, r.epoch, m.src.0, &mut reader).await?;
    exec(
        &mut reader,
        &[
            "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ".to_string(),
            "START TRANSACTION WITH CONSISTENT SNAPSHOT".to_string(),
        ],
    )
    .await?;
    tracing::debug!(operation = r.id, "copy starts");
    // The source is read once; the destination writes on COPY_WRITERS
    // connections (the replay lanes' first).
    let mut dsts = vec![&mut *r.dst];
    dsts.extend(r.lanes.iter_mut().map(|(_, d)| &mut **d));
    dsts.truncate(COPY_WRITERS);
    let how = Copy {
        is_replace: true,
        is_load_data: true,
        has_checksum: true,
        rows_per_s: ctx.config.proxy.change_copy_rows_per_s,
        ..Copy::new(&select, &into_q)
    };
    let copied = stream_rows_to(&mut reader, dsts, &how).await?;
    let rows = copied.rows;
    // A split's rows that stay, from the same snapshot, into their own
    // fresh table.
    let staying = r.staying(&quote_ident(&m.key_column));
    let rest_copied = match (&m.rest, r.rest.as_mut()) {
        (Some(rest), Some(c)) => {
            let select = format!(
                "SELECT {}, CRC32({text}) FROM {} WHERE {staying}",
                r.columns,
                qualified(&m.db, &r.src_name),
            );
            let rest_q = qualified(&m.db, rest);
            let how = Copy {
                is_replace: true,
                is_load_data: true,
                has_checksum: true,
                rows_per_s: ctx.config.proxy.change_copy_rows_per_s,
                ..Copy::new(&select, &rest_q)
            };
            Some(stream_rows_to(&mut reader, vec![c], &how).await?)
        }
        _ => None,
    };
    let all = rows + rest_copied.map_or(0, |c| c.rows);
    tracing::debug!(operation = r.id, rows, all, "copy done");
    journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET rows_copied = {}{all} WHERE id = {}",
            r.after_first("rows_copied"),
            r.id
        ),
    )
    .await?;
    if let Some(ms) = test_pause("HSCALE_TEST_PAUSE_AFTER_COPY_MS") {
        // Tests damage the copy here: the verification must repair it.
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    // No replay before the verification: it compares the destination as
    // the copy left it with the copy's snapshot, and replays meanwhile.
    tracing::debug!(operation = r.id, "verification starts");
    let v = verify::verify(ctx, worker, r, &mut reader, copied, rest_copied).await?;
    // Its metadata lock released now, not when the server notices the
    // closed connection: the cutover renames the source.
    exec(&mut reader, &["ROLLBACK".to_string()]).await?;
    drop(reader);
    journal_verified(ctx, worker, r, v.ranges, v.recopied).await?;
    // The backlog that the replays during the verification left.
    catch_up(ctx, worker, r).await?;
    Ok(rows)
}

/// [`prepare`] of a reshape (`reshape.rs`), once the shadow has its new
/// definition: capture, copy, verification, catch-up. Returns the rows
/// copied.
pub(super) async fn prepare_reshape(
    ctx: &Context,
    worker: usize,
    r: &mut Running<'_>,
) -> Result<u64, ProxyError> {
    let m = r.m;
    r.capture().await?;
    let mut c = conn(ctx, worker, m.src.0).await?;
    c.is_broken = true;
    register(ctx, worker, r.id, r.epoch, m.src.0, &mut c).await?;
    exec(&mut c, &session_of(m, false)).await?;
    journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET rows_estimate = {}{} WHERE id = {}",
            r.after_first("rows_estimate"),
            table_rows(&mut c, &m.db, &r.src_name).await,
            r.id
        ),
    )
    .await?;
    tracing::debug!(operation = r.id, "reshape copy starts");
    let rows = reshape::copy(ctx, worker, r, &mut c).await?;
    if let Some(ms) = test_pause("HSCALE_TEST_PAUSE_AFTER_COPY_MS") {
        // Tests damage the copy (or kill the owner) here.
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let v = reshape::verify(r, &mut c).await?;
    journal_verified(ctx, worker, r, v.ranges, v.recopied).await?;
    drop(c);
    catch_up(ctx, worker, r).await?;
    Ok(rows)
}

/// Replay until the backlog is small, so the cutover's replay (during
/// which writes to the moving rows wait) is short. Writers faster than the
/// replays keep it going; after CATCH_UP_LIMIT the cutover starts anyway,
/// with a longer pause.
pub(super) async fn catch_up(
    ctx: &Context,
    worker: usize,
    r: &mut Running<'_>,
) -> Result<(), ProxyError> {
    let catching_up = std::time::Instant::now();
    loop {
        let n = r.replay().await?;
        journal(
            ctx,
            worker,
            format!(
                "UPDATE `hscale`.`operations` SET backlog = {n} WHERE id = {}",
                r.id
            ),
        )
        .await?;
        if n < CUTOVER_BACKLOG {
            break;
        }
        if catching_up.elapsed() > CATCH_UP_LIMIT {
            tracing::warn!(
                operation = r.id,
                backlog = n,
                "writers outpace the change's replays; cutting over with a backlog"
            );
            break;
        }
    }
    Ok(())
}

/// The journal's record of a verification: `ranges` compared, `recopied`
/// of them copied again.
pub(super) async fn journal_verified(
    ctx: &Context,
    worker: usize,
    r: &Running<'_>,
    ranges: u64,
    recopied: u64,
) -> Result<(), ProxyError> {
    journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET ranges_verified = {}{}, ranges_recopied = {}{} WHERE id = {}",
            r.after_first("ranges_verified"),
            ranges,
            r.after_first("ranges_recopied"),
            recopied,
            r.id
        ),
    )
    .await
}
