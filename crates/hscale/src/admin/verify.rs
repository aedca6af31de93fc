//! Verification before a change's cutover (issue 12 item 6): the source's
//! backend and the destination's each compute checksums of the moving rows
//! per range, and a range that differs is copied again.
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

use super::change::{copy_session, register, Running};
use super::{conn, wrong};
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
/// the sum of their checksums the source computed as it sent them), and
/// copy again the ranges that differ (see the module's comment). Replays
/// run meanwhile.
pub(super) async fn verify(
    ctx: &Context,
    worker: usize,
    r: &mut Running<'_>,
    snap: &mut BackendConn,
    copied: Copied,
) -> Result<Verified, ProxyError> {
    let m = r.m;
    let text = ddl::row_text(&mut r.src, &m.db, &r.src_name).await?;
    let bucket = format!("CRC32(CONCAT_WS(',', {})) % {RANGES}", r.pk_list(""));
    // The destination as the copy left it: a snapshot taken before any
    // replay writes it (the caller runs none before this).
    let mut dst_snap = conn(ctx, worker, m.dst.0).await?;
    dst_snap.is_broken = true;
    // Its transaction holds the copy's metadata lock: a take-over kills it.
    register(ctx, worker, r.id, r.epoch, m.dst.0, &mut dst_snap).await?;
    let mut statements = copy_session();
    statements.extend([
        "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ".to_string(),
        "START TRANSACTION WITH CONSISTENT SNAPSHOT".to_string(),
    ]);
    exec(&mut dst_snap, &statements).await?;
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
    let moving = r.moving(&quote_ident(&m.key_column));
    let dst_total = sums(false, &r.into, "1 = 1");
    let (src_sql, dst_sql) = (
        sums(true, &r.src_name, &moving),
        sums(true, &r.into, "1 = 1"),
    );
    let scanned = AtomicBool::new(false);
    // The source's total came with the copy: the same sum over the same
    // snapshot (an empty copy sums to nothing, as SUM of no rows is NULL).
    let src_total: Sums = [(0, (copied.rows, copied.checksum))]
        .into_iter()
        .filter(|(_, (n, _))| *n > 0)
        .collect();
    let scans = async {
        let totals = read_sums(&mut dst_snap, &dst_total).await;
        let sums = match totals {
            Ok(d) if normalized(&d) == src_total => Ok(None),
            Ok(_) => tokio::try_join!(
                read_sums(snap, &src_sql),
                read_sums(&mut dst_snap, &dst_sql)
            )
            .map(Some),
            Err(e) => Err(e),
        };
        scanned.store(true, Ordering::Release);
        sums
    };
    let replays = async {
        while !scanned.load(Ordering::Acquire) {
            if r.replay().await? == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
        Ok::<(), ProxyError>(())
    };
    let (sums, replayed_meanwhile) = tokio::join!(scans, replays);
    replayed_meanwhile?;
    let sums = sums?;
    exec(&mut dst_snap, &["ROLLBACK".to_string()]).await?;
    drop(dst_snap);
    let differing: Vec<u32> = match &sums {
        None => Vec::new(),
        Some((src_sums, dst_sums)) => (0..RANGES)
            .filter(|b| src_sums.get(b) != dst_sums.get(b))
            .collect(),
    };
    let mut v = Verified {
        ranges: u64::from(RANGES),
        recopied: differing.len() as u64,
        rows: 0,
    };
    tracing::debug!(operation = r.id, differing = differing.len(), "verified");
    if differing.is_empty() {
        return Ok(v);
    }
    tracing::warn!(
        operation = r.id,
        ranges = differing.len(),
        "the copy differs from the source in some ranges; copying them again"
    );
    let list = differing
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let into_q = qualified(&m.db, &r.into);
    exec(
        &mut r.dst,
        &[
            "BEGIN".to_string(),
            format!("DELETE FROM {into_q} WHERE {bucket} IN ({list})"),
        ],
    )
    .await?;
    let select = format!(
        "SELECT {} FROM {} WHERE {} AND {bucket} IN ({list})",
        r.columns,
        qualified(&m.db, &r.src_name),
        r.moving(&quote_ident(&m.key_column))
    );
    v.rows = stream_rows(&mut r.src, &select, &mut r.dst, &into_q, true).await?;
    exec(&mut r.dst, &["COMMIT".to_string()]).await?;
    Ok(v)
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
