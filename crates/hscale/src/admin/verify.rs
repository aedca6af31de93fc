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
//! at matching points:
//! 1. a consistent snapshot S on the source reads the changelog entries
//!    committed before S;
//! 2. exactly those are replayed: every key not changed after S now holds
//!    on the destination what it held at S;
//! 3. the keys of the entries left in the changelog (committed after S,
//!    so possibly replayed with later values in step 2) are excluded on
//!    both sides;
//! 4. a snapshot of the destination (written by nothing but the change) is
//!    taken before any other replay, and it and the source's snapshot S are
//!    summed per range, concurrently, and compared; the replays go on
//!    meanwhile.
//!
//! Both sides are first summed as a whole (one scan each, no grouping);
//! only when those totals differ are they summed per range, in the same
//! snapshots, to find the ranges to copy again.
//!
//! A range that differs is copied again like the first copy (delete the
//! range on the destination, insert the source's rows, in one transaction):
//! entries for later writes are still in the changelog and replayed after
//! it, so the copy is as safe as the first one.

use super::change::{copy_session, entries, key_literals, Running};
use super::{conn, wrong};
use crate::error::ProxyError;
use crate::partition::copy::stream_rows;
use crate::partition::store::{exec, server_error};
use crate::partition::{ddl, qualified, quote_ident};
use crate::runtime::Context;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Ranges a change's rows are verified in.
pub(super) const RANGES: u32 = 256;

/// At most this many keys changed during the verification are excluded
/// from it; with more (writers far faster than the replays) the change is
/// not verified, and says so in its log.
const MAX_EXCLUDED: usize = 20_000;

/// What a verification found.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Verified {
    /// Ranges compared (0: not verified).
    pub ranges: u64,
    /// Ranges that differed and were copied again.
    pub recopied: u64,
    /// Rows copied again.
    pub rows: u64,
}

/// A range's checksum: rows and the sum of their CRC32.
type Sums = BTreeMap<u32, (u64, u64)>;

/// Verify the moving rows of change `r` and copy again the ranges that
/// differ (see the module's comment).
pub(super) async fn verify(
    ctx: &Context,
    worker: usize,
    r: &mut Running<'_>,
) -> Result<Verified, ProxyError> {
    let m = r.m;
    let text = ddl::row_text(&mut r.src, &m.db, &r.src_name).await?;
    let bucket = format!("CRC32(CONCAT_WS(',', {})) % {RANGES}", r.pk_list(""));
    let mut snap = conn(ctx, worker, m.src.0).await?;
    snap.is_broken = true; // its session is changed below
    let mut statements = copy_session();
    statements.extend([
        // Keys read as raw bytes, as the replays read them.
        "SET character_set_results = NULL".to_string(),
        "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ".to_string(),
        "START TRANSACTION WITH CONSISTENT SNAPSHOT".to_string(),
    ]);
    exec(&mut snap, &statements).await?;
    // 1, 2: the entries committed before the snapshot, replayed.
    let sql = format!(
        "SELECT seq, {} FROM {} ORDER BY seq",
        r.pk_list(""),
        r.changelog()
    );
    let (seqs, keys) = entries(&mut snap, &sql).await?;
    let replayed = seqs.len();
    for (s, k) in seqs
        .chunks(super::change::REPLAY_BATCH)
        .zip(keys.chunks(super::change::REPLAY_BATCH))
    {
        r.apply(s, k.to_vec()).await?;
    }
    // 3: the keys changed since, excluded.
    let sql = format!("SELECT DISTINCT {} FROM {}", r.pk_list(""), r.changelog());
    let later = r
        .src
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(&r.src, &sql, e))?;
    if later.rows.len() > MAX_EXCLUDED {
        tracing::warn!(
            operation = r.id,
            changed = later.rows.len(),
            "writers change too many rows to verify the copy; cutting over unverified"
        );
        return Ok(Verified::default());
    }
    let excluded = key_literals(&later.columns, later.rows.iter().map(Vec::as_slice));
    let except = if excluded.is_empty() {
        String::new()
    } else {
        format!(" AND ({}) NOT IN ({})", r.pk_list(""), excluded.join(", "))
    };
    // 4: both sides summed per range, at once: the source in its snapshot,
    // the destination in a snapshot taken now, before any other replay. The
    // replays go on meanwhile (they change neither snapshot).
    let mut dst_snap = conn(ctx, worker, m.dst.0).await?;
    dst_snap.is_broken = true;
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
            "SELECT {range}, COUNT(*), SUM(CRC32({text})) FROM {} WHERE {filter}{except}{group}",
            qualified(&m.db, table)
        )
    };
    let moving = r.moving(&quote_ident(&m.key_column));
    let (src_total, dst_total) = (
        sums(false, &r.src_name, &moving),
        sums(false, &r.into, "1 = 1"),
    );
    let (src_sql, dst_sql) = (
        sums(true, &r.src_name, &moving),
        sums(true, &r.into, "1 = 1"),
    );
    let scanned = AtomicBool::new(false);
    let scans = async {
        let totals = tokio::try_join!(
            read_sums(&mut snap, &src_total),
            read_sums(&mut dst_snap, &dst_total)
        );
        let sums = match totals {
            Ok((s, d)) if s == d => Ok(None),
            Ok(_) => tokio::try_join!(
                read_sums(&mut snap, &src_sql),
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
    drop(snap);
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
    tracing::debug!(
        operation = r.id,
        replayed,
        excluded = excluded.len(),
        differing = differing.len(),
        "verified"
    );
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

/// Per-range checksums read by `sql` (range, rows, sum).
async fn read_sums(c: &mut crate::backend::BackendConn, sql: &str) -> Result<Sums, ProxyError> {
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
