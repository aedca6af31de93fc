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
//! without grouping, in up to [`SCANS`] scans at once over ranges of the
//! first primary-key column when it is an integer ([`key_ranges`]: the
//! ranges tile every value, so every row of the table is summed once,
//! whatever it holds). Each scan runs on a connection of its own whose
//! snapshot is taken before any replay, so all of them read D: nothing
//! writes the destination between the end of the copy and the first replay.
//! On two shared cores one scan is one thread among the writers' many and
//! took about 40% of a move, though it is about a tenth of the CPU the
//! destination spends on the copy; split, it gets the cores' time sooner.
//! Only when the totals differ are both sides summed per range, in the same
//! snapshots, to find the ranges to copy again.
//!
//! A range that differs is copied again like the first copy (delete the
//! range on the destination, insert the source's current rows, in one
//! transaction, after the replays that ran meanwhile): entries for later
//! writes are still in the changelog and replayed after it, so the copy is
//! as safe as the first one.

use super::change::{copy_session, register, Running};
use super::{conn, wrong};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::partition::copy::{stream_rows, Copied};
use crate::partition::store::{exec, server_error};
use crate::partition::{ddl, qualified, quote_ident};
use crate::runtime::Context;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Ranges a change's rows are verified in.
pub(super) const RANGES: u32 = 256;
/// Scans that sum the destination at once, at most.
const SCANS: usize = 4;
/// Rows copied below which the destination is summed in one scan.
const SPLIT_ROWS: u64 = 10_000;

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
    // The destination as the copy left it: snapshots taken before any
    // replay writes it (the caller runs none before this, and the replays
    // below start once every snapshot is open).
    let mut dst_snaps = vec![dst_snapshot(ctx, worker, r).await?];
    let into_q = qualified(&m.db, &r.into);
    // `HSCALE_TEST_VERIFY_SCANS` sets the number for benchmarks
    // (`bench/moves.sh`: one scan against several in one binary).
    let scans = match super::change::test_pause("HSCALE_TEST_VERIFY_SCANS") {
        Some(n) => (n as usize).clamp(1, 16),
        None => scans_for(ctx.config.backends[m.dst.0.index()].max_connections),
    };
    let key_ranges = match r.pk.first() {
        Some((column, column_type))
            if scans > 1 && copied.rows >= SPLIT_ROWS && is_integer_type(column_type) =>
        {
            key_ranges(&mut dst_snaps[0], &into_q, &quote_ident(column), scans).await?
        }
        _ => vec!["1 = 1".to_string()],
    };
    for _ in 1..key_ranges.len() {
        dst_snaps.push(dst_snapshot(ctx, worker, r).await?);
    }
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
    let dst_totals: Vec<String> = key_ranges
        .iter()
        .map(|range| sums(false, &r.into, range))
        .collect();
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
    let (started, id) = (std::time::Instant::now(), r.id);
    let scans = async {
        let totals = futures_util::future::try_join_all(
            dst_snaps
                .iter_mut()
                .zip(&dst_totals)
                .map(|(c, sql)| read_sums(c, sql)),
        )
        .await;
        tracing::debug!(
            operation = id,
            scans = dst_totals.len(),
            ms = started.elapsed().as_millis() as u64,
            "destination summed"
        );
        let sums = match totals {
            Ok(parts) if normalized(&added(&parts)) == src_total => Ok(None),
            // Every snapshot reads D: the first one sums it per range.
            Ok(_) => tokio::try_join!(
                read_sums(snap, &src_sql),
                read_sums(&mut dst_snaps[0], &dst_sql)
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
    for mut c in dst_snaps {
        exec(&mut c, &["ROLLBACK".to_string()]).await?;
    }
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

/// A connection to the destination in a snapshot of it (D), as the copy
/// left it when no replay has run yet.
async fn dst_snapshot(
    ctx: &Context,
    worker: usize,
    r: &Running<'_>,
) -> Result<PooledConn, ProxyError> {
    let b = r.m.dst.0;
    let mut c = conn(ctx, worker, b).await?;
    c.is_broken = true;
    // Its transaction holds the copy's metadata lock: a take-over kills it.
    register(ctx, worker, r.id, r.epoch, b, &mut c).await?;
    let mut statements = copy_session();
    statements.extend([
        "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ".to_string(),
        "START TRANSACTION WITH CONSISTENT SNAPSHOT".to_string(),
    ]);
    exec(&mut c, &statements).await?;
    Ok(c)
}

/// Scans of the destination at once, for a backend whose pools hold at
/// most `max_connections` per worker: [`SCANS`], fewer for small pools
/// (a change holds several connections already).
fn scans_for(max_connections: usize) -> usize {
    (max_connections / 8).clamp(1, SCANS)
}

/// Whether a `COLUMN_TYPE` is an integer type (`bigint(20) unsigned`).
fn is_integer_type(column_type: &str) -> bool {
    let name = column_type
        .split(['(', ' '])
        .next()
        .unwrap_or("");
    ["tinyint", "smallint", "mediumint", "int", "bigint"]
        .iter()
        .any(|t| name.eq_ignore_ascii_case(t))
}

/// Conditions on the integer column `column_q` of `table_q` that split its
/// rows into at most `n` ranges of about equal width between its least
/// and greatest value (read on `c`, in its snapshot), and together hold
/// every row ([`tiling`]); one range when it has too few values.
async fn key_ranges(
    c: &mut BackendConn,
    table_q: &str,
    column_q: &str,
    n: usize,
) -> Result<Vec<String>, ProxyError> {
    let sql = format!("SELECT MIN({column_q}), MAX({column_q}) FROM {table_q}");
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(c, &sql, e))?;
    let ends = r.strings().first().map(|row| {
        let v = |i: usize| row[i].as_deref().and_then(|t| t.parse::<i128>().ok());
        (v(0), v(1))
    });
    Ok(match ends {
        Some((Some(least), Some(greatest))) => tiling(column_q, least, greatest, n),
        _ => vec!["1 = 1".to_string()],
    })
}

/// `n` conditions on `column_q` (fewer when `least..=greatest` holds fewer
/// values): the first below the first bound, the last from the last bound
/// up, each between two bounds otherwise, so every value satisfies exactly
/// one of them, also one outside `least..=greatest`.
fn tiling(column_q: &str, least: i128, greatest: i128, n: usize) -> Vec<String> {
    let span = greatest - least + 1;
    let n = (n as i128).min(span).max(1);
    let bounds: Vec<i128> = (1..n).map(|i| least + span * i / n).collect();
    if bounds.is_empty() {
        return vec!["1 = 1".to_string()];
    }
    let mut out = vec![format!("{column_q} < {}", bounds[0])];
    for w in bounds.windows(2) {
        out.push(format!("{column_q} >= {} AND {column_q} < {}", w[0], w[1]));
    }
    out.push(format!("{column_q} >= {}", bounds[bounds.len() - 1]));
    out
}

/// Per-range checksums added up over several parts of one table.
fn added(parts: &[Sums]) -> Sums {
    let mut out = Sums::new();
    for (b, (n, sum)) in parts.iter().flatten() {
        let e = out.entry(*b).or_insert((0, 0));
        e.0 += n;
        e.1 = e.1.wrapping_add(*sum);
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Which of `conditions` (as [`tiling`] writes them) hold for `v`.
    fn holding(conditions: &[String], v: i128) -> usize {
        conditions
            .iter()
            .filter(|c| {
                c.split(" AND ").all(|part| {
                    let (op, bound) = if let Some(b) = part.strip_prefix("c >= ") {
                        (">=", b)
                    } else if let Some(b) = part.strip_prefix("c < ") {
                        ("<", b)
                    } else {
                        panic!("unexpected condition {part}")
                    };
                    let b: i128 = bound.parse().unwrap();
                    if op == ">=" {
                        v >= b
                    } else {
                        v < b
                    }
                })
            })
            .count()
    }

    #[test]
    fn ranges_tile_every_value() {
        for (least, greatest, n) in [
            (1, 20_000, 4),
            (-5, 5, 4),
            (7, 9, 4),
            (7, 7, 4),
            (0, 1, 3),
            (i128::from(i64::MIN), i128::from(i64::MAX), 4),
            (0, i128::from(u64::MAX), 4),
        ] {
            let t = tiling("c", least, greatest, n);
            let span = greatest - least + 1;
            assert_eq!(
                t.len() as i128,
                (n as i128).min(span),
                "{least}..={greatest}"
            );
            if t.len() == 1 {
                assert_eq!(t, ["1 = 1"]);
                continue;
            }
            for v in [
                least - 1_000,
                least - 1,
                least,
                least + 1,
                greatest - 1,
                greatest,
                greatest + 1,
            ]
            .into_iter()
            .chain((0..50).map(|i| least + span * i / 50))
            {
                assert_eq!(holding(&t, v), 1, "{v} in {t:?}");
            }
        }
        assert_eq!(
            tiling("`id`", 1, 20_000, 4),
            [
                "`id` < 5001",
                "`id` >= 5001 AND `id` < 10001",
                "`id` >= 10001 AND `id` < 15001",
                "`id` >= 15001"
            ]
        );
    }

    #[test]
    fn integer_column_types() {
        for t in [
            "int(11)",
            "bigint(20) unsigned",
            "TINYINT(1)",
            "mediumint(9)",
            "smallint(6) zerofill",
            "bigint",
        ] {
            assert!(is_integer_type(t), "{t}");
        }
        for t in [
            "varchar(20)",
            "decimal(10,0)",
            "double",
            "date",
            "point",
            "integer_like",
            "binary(16)",
        ] {
            assert!(!is_integer_type(t), "{t}");
        }
        assert_eq!(scans_for(64), SCANS);
        assert_eq!(scans_for(8), 1);
        assert_eq!(scans_for(0), 1);
    }
}
