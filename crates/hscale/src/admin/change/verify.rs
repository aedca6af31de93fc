//! Verification before a change's cutover (issue 12 item 6): the source's
//! backend and the destination's each compute checksums of the moving rows
//! per range, and a range that differs is copied again. A split's rest
//! (`Move::rest`) is a second destination, verified the same way against
//! the source's rows that stay.
//!
//! Ranges are buckets of the primary key's hash (`CRC32` of its text, modulo
//! [`RANGES`]): both backends compute them alike for any key type, and no
//! key boundaries need to be read first. A range's checksum is its row
//! count with the sum of the rows' `CRC32` (`ddl::row_text`).
//!
//! The source is written while it is verified, so the two sides are compared
//! at one point, the copy's own: the copy reads the source in a consistent
//! snapshot S that stays open after it (`change::prepare`), and the
//! destination's snapshot D is taken right after the copy, before any
//! replay writes it. D holds exactly the rows the copy wrote, so S and D
//! must agree on every key, with nothing excluded. The replays of what
//! writers changed since S go on while the sides are summed (they change
//! neither snapshot).
//!
//! Both sides are first summed as a whole: the source as it sends the copy
//! (the copy's select ends with each row's `CRC32`, which the proxy adds
//! up instead of copying, so the source is scanned once), the destination
//! by one scan without grouping. Only when those totals differ are both
//! summed per range, in the same snapshots, to find the ranges to copy
//! again.
//!
//! A range that differs is copied again like the first copy (delete the
//! range on the destination, insert the source's current rows, in one
//! transaction, after the replays that ran meanwhile): entries for later
//! writes are still in the changelog and replayed after it, so the copy is
//! as safe as the first one.

use super::{copy_session, register, Running};
use crate::admin::{conn, wrong};
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::partition::copy::{stream_rows, Copied};
use crate::partition::store::{exec, server_error};
use crate::partition::{ddl, qualified, quote_ident};
use crate::runtime::Context;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Ranges a change's rows are verified in.
pub(super) const RANGES: u32 = 256;

/// What a verification found.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Verified {
    /// Ranges compared.
    pub ranges: u64,
    /// Ranges that differed and were copied again.
    pub recopied: u64,
    /// Rows copied again.
    pub rows: u64,
}

/// A range's checksum: rows and the sum of their CRC32.
type Sums = BTreeMap<u32, (u64, u64)>;

/// Verify the moving rows of change `r`, copied from `snap` (a source
/// connection still in the copy's snapshot) as `copied` says (rows, and
/// the sum of their checksums the source computed as it sent them), and a
/// split's rest as `rest_copied` says, and copy again the ranges that
/// differ (see the module's comment). Replays run meanwhile.
pub(super) async fn verify(
    ctx: &Context,
    worker: usize,
    r: &mut Running<'_>,
    snap: &mut BackendConn,
    copied: Copied,
    rest_copied: Option<Copied>,
) -> Result<Verified, ProxyError> {
    let m = r.m;
    let text = ddl::row_text(&mut r.src, &m.db, &r.src_name).await?;
    let bucket = format!("CRC32(CONCAT_WS(',', {})) % {RANGES}", r.pk_list(""));
    let key = quote_ident(&m.key_column);
    // Each destination (the moving rows', and a split's rest) against the
    // source's rows that went there.
    let mut sides = vec![Side {
        backend: m.dst.0,
        table: r.into.clone(),
        written: r.written(&key),
        filter: r.moving(&key),
        copied,
    }];
    if let (Some(rest), Some(copied)) = (&m.rest, rest_copied) {
        sides.push(Side {
            backend: m.src.0,
            table: rest.clone(),
            written: "1 = 1".to_string(),
            filter: r.staying(&key),
            copied,
        });
    }
    let mut dst_snaps = snapshots(ctx, worker, r, &sides).await?;
    // Summed as a whole first; per range only when the totals differ (a
    // damaged copy), in the same snapshots: the clean case is one cheaper
    // scan per side (no per-row bucket, no grouping).
    let sums = |per_range: bool, table: &str, filter: &str| {
        let (range, group) = if per_range {
            (bucket.as_str(), " GROUP BY 1")
        } else {
            ("0", "")
        };
        format!(
            "SELECT {range}, COUNT(*), SUM(CRC32({text})) FROM {} WHERE {filter}{group}",
            qualified(&m.db, table)
        )
    };
    let scanned = AtomicBool::new(false);
    let src_name = r.src_name.clone();
    let scans = async {
        let mut found = Vec::with_capacity(sides.len());
        for (side, dst_snap) in sides.iter().zip(dst_snaps.iter_mut()) {
            // The source's total came with the copy: the same sum over the
            // same snapshot (an empty copy sums to nothing, as SUM of no
            // rows is NULL).
            let src_total: Sums = [(0, (side.copied.rows, side.copied.checksum))]
                .into_iter()
                .filter(|(_, (n, _))| *n > 0)
                .collect();
            let totals = read_sums(dst_snap, &sums(false, &side.table, &side.written)).await;
            let per_range = match totals {
                Ok(d) if normalized(&d) == src_total => Ok(None),
                Ok(_) => {
                    let (src_sql, dst_sql) = (
                        sums(true, &src_name, &side.filter),
                        sums(true, &side.table, &side.written),
                    );
                    tokio::try_join!(read_sums(snap, &src_sql), read_sums(dst_snap, &dst_sql))
                        .map(Some)
                }
                Err(e) => Err(e),
            };
            match per_range {
                Ok(p) => found.push(p),
                Err(e) => {
                    scanned.store(true, Ordering::Release);
                    return Err(e);
                }
            }
        }
        scanned.store(true, Ordering::Release);
        Ok(found)
    };
    let replays = async {
        while !scanned.load(Ordering::Acquire) {
            if r.replay().await? == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
        Ok::<(), ProxyError>(())
    };
    let (found, replayed_meanwhile) = tokio::join!(scans, replays);
    replayed_meanwhile?;
    let found = found?;
    for mut dst_snap in dst_snaps {
        exec(&mut dst_snap, &["ROLLBACK".to_string()]).await?;
    }
    let mut v = Verified::default();
    for (i, (side, sums)) in sides.iter().zip(found).enumerate() {
        let differing: Vec<u32> = match &sums {
            None => Vec::new(),
            Some((src_sums, dst_sums)) => (0..RANGES)
                .filter(|b| src_sums.get(b) != dst_sums.get(b))
                .collect(),
        };
        v.ranges += u64::from(RANGES);
        v.recopied += differing.len() as u64;
        tracing::debug!(
            operation = r.id,
            side = i,
            differing = differing.len(),
            "verified"
        );
        if differing.is_empty() {
            continue;
        }
        v.rows += recopy(r, i, side, &differing, &bucket, &src_name).await?;
    }
    Ok(v)
}

/// The destinations as the copy left them: snapshots taken before any
/// replay writes them (the caller runs none before this).
async fn snapshots(
    ctx: &Context,
    worker: usize,
    r: &Running<'_>,
    sides: &[Side],
) -> Result<Vec<crate::backend::PooledConn>, ProxyError> {
    let mut dst_snaps = Vec::with_capacity(sides.len());
    for side in sides {
        let mut dst_snap = conn(ctx, worker, side.backend).await?;
        dst_snap.is_broken = true;
        // Its transaction holds the copy's metadata lock: a take-over kills it.
        register(ctx, worker, r.id, r.epoch, side.backend, &mut dst_snap).await?;
        let mut statements = copy_session();
        statements.extend([
            "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ".to_string(),
            "START TRANSACTION WITH CONSISTENT SNAPSHOT".to_string(),
        ]);
        exec(&mut dst_snap, &statements).await?;
        dst_snaps.push(dst_snap);
    }
    Ok(dst_snaps)
}

/// Copy the ranges `differing` of side `i` again from the source, in one
/// transaction on its destination; the rows copied.
async fn recopy(
    r: &mut Running<'_>,
    i: usize,
    side: &Side,
    differing: &[u32],
    bucket: &str,
    src_name: &str,
) -> Result<u64, ProxyError> {
    let m = r.m;
    tracing::warn!(
        operation = r.id,
        side = i,
        ranges = differing.len(),
        "the copy differs from the source in some ranges; copying them again"
    );
    let list = differing
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let into_q = qualified(&m.db, &side.table);
    let writer = match (i, r.rest.as_mut()) {
        (0, _) => &mut r.dst,
        (_, Some(rest)) => rest,
        (_, None) => return Err(wrong("a split's rest has no connection")),
    };
    exec(
        writer,
        &[
            "BEGIN".to_string(),
            format!(
                "DELETE FROM {into_q} WHERE {bucket} IN ({list}) AND {}",
                side.written
            ),
        ],
    )
    .await?;
    let select = format!(
        "SELECT {} FROM {} WHERE {} AND {bucket} IN ({list})",
        r.columns,
        qualified(&m.db, src_name),
        side.filter
    );
    let rows = stream_rows(&mut r.src, &select, writer, &into_q, true).await?;
    exec(writer, &["COMMIT".to_string()]).await?;
    Ok(rows)
}

/// One destination a verification compares with the source.
struct Side {
    backend: hscale_route::BackendId,
    /// Its table.
    table: String,
    /// Its rows the copy wrote (another move of the change may write the
    /// same table, `Move::dst_filter`).
    written: String,
    /// The source's rows that went there.
    filter: String,
    /// What the copy sent there.
    copied: Copied,
}

/// `sums` without its ranges of no rows (a total over no rows reads as
/// one range of 0 rows).
fn normalized(sums: &Sums) -> Sums {
    sums.iter()
        .filter(|(_, (n, _))| *n > 0)
        .map(|(b, v)| (*b, *v))
        .collect()
}

/// Per-range checksums read by `sql` (range, rows, sum).
async fn read_sums(c: &mut BackendConn, sql: &str) -> Result<Sums, ProxyError> {
    let r = c
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(c, sql, e))?;
    let mut out = Sums::new();
    for row in r.strings() {
        let n = |i: usize| -> Result<u64, ProxyError> {
            row[i]
                .as_deref()
                .unwrap_or("0")
                .parse()
                .map_err(|_| wrong(format!("unreadable checksum {:?}", row[i])))
        };
        out.insert(n(0)? as u32, (n(1)?, n(2)?));
    }
    Ok(out)
}
