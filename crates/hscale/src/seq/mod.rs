//! Sequences: AUTO_INCREMENT ids for partitioned tables, unique across
//! partitions, proxies and restarts.
//!
//! One counter row per table in `hscale.sequences` on the main backend
//! holds the next id no proxy holds. A proxy reserves a block of ids in
//! one round trip (`UPDATE ... SET next_id = LAST_INSERT_ID(next_id + n)`:
//! the OK packet carries the new value) and hands ids out of it; the block
//! grows while ids go fast and shrinks when they go slowly (bounded both
//! ways). A block dies with its proxy: ids are never reused, gaps are
//! normal, and ids from different proxies interleave (unique, not
//! monotonic).
//!
//! ```text
//!  INSERT ──► router::auto_insert (which values to generate)
//!         ──► Sequences::take (the proxy's block; refilled on the main backend)
//!         ──► Sequences::pass (an explicit id at or above the counter moves it)
//!         ──► the statement with its ids filled in is planned and routed
//! ```
//!
//! Blocks live per proxy per table (and per sequence generation, so a table
//! set up again never gets ids reserved for an older one), each behind its
//! own async lock; tables without a sequence never look here.

pub mod logical;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use hscale_route::dictionary::TableName;

use crate::backend::{BackendConn, Pool};
use crate::error::ProxyError;
use crate::metrics::Metrics;
use hscale_sql::quote::{qualified, quote_str};

/// The smallest and largest block a proxy reserves.
const MIN_BLOCK: u64 = 8;
const MAX_BLOCK: u64 = 65_536;
/// A block used up faster than this makes the next one twice as large;
/// one that lasted longer than [`SLOW`] makes it half as large.
const FAST: Duration = Duration::from_secs(1);
const SLOW: Duration = Duration::from_secs(30);
/// How long a reservation retries while the main backend is unreachable
/// (e.g. restarting) before the statement fails.
const RETRY_FOR: Duration = Duration::from_secs(10);

/// Where the counters are: the caller's worker's pool of the main
/// backend (`Context::pool(worker, BackendId::MAIN)`), and the metrics
/// that count the blocks reserved. All a sequence needs of the
/// `Context`, so that this module imports nothing that holds it.
#[derive(Clone, Copy)]
pub struct Main<'a> {
    pub pool: &'a Arc<Pool>,
    pub metrics: &'a Metrics,
}

/// The proxy's blocks, by table and sequence generation.
#[derive(Default)]
pub struct Sequences {
    tables: RwLock<HashMap<(TableName, u64), Arc<Sequence>>>,
}

/// One table's block in this proxy.
#[derive(Default)]
struct Sequence {
    block: tokio::sync::Mutex<Block>,
}

#[derive(Default)]
struct Block {
    /// The next id to hand out; `next == end`: empty.
    next: u64,
    end: u64,
    /// The size of the next reservation.
    size: u64,
    refilled_at: Option<Instant>,
    /// The largest counter value this proxy has seen: the counter is at
    /// least this, so an explicit id below it needs no round trip.
    counter_floor: u64,
    /// Changes of `next` so far (takes, refills and passes): an undone
    /// pass ([`Sequences::undo_pass`]) checks that none came after it.
    changes: u64,
}

/// What [`Sequences::pass`] did to this proxy's block, for
/// [`Sequences::undo_pass`]: `next` moved from `before` to `after`, as
/// the block's change number `change`.
#[derive(Debug, Clone)]
pub struct Passed {
    table: TableName,
    generation: u64,
    before: u64,
    after: u64,
    change: u64,
}

impl Sequences {
    fn sequence(&self, table: &TableName, generation: u64) -> Arc<Sequence> {
        let key = (table.clone(), generation);
        if let Some(s) = self.tables.read().ok().and_then(|t| t.get(&key).cloned()) {
            return s;
        }
        let mut t = match self.tables.write() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        // A table set up again: blocks of its older generations are dead.
        t.retain(|(name, _), _| name != table);
        t.entry(key).or_default().clone()
    }

    /// `n` new ids for `table`: consecutive, as MySQL gives a multi-row
    /// INSERT (drivers compute the generated keys of a batch from the
    /// first). When the block holds fewer, its rest is dropped (a gap).
    pub async fn take(
        &self,
        main: Main<'_>,
        table: &TableName,
        generation: u64,
        n: usize,
    ) -> Result<Vec<u64>, ProxyError> {
        let seq = self.sequence(table, generation);
        let mut b = seq.block.lock().await;
        let n = n as u64;
        if b.end - b.next < n {
            let size = b.next_size().max(n);
            let end = reserve(main, table, generation, size, None).await?;
            b.next = end - size;
            b.end = end;
            b.size = size.min(MAX_BLOCK);
            b.refilled_at = Some(Instant::now());
            b.counter_floor = b.counter_floor.max(end);
        }
        let first = b.next;
        b.next += n;
        b.changes += 1;
        Ok((first..first + n).collect())
    }

    /// An explicit id `id` was given: make sure no id this or any proxy
    /// generates from now on is `id` (the counter moves past it when it is
    /// at or above it). This proxy's block goes on above it, as one server
    /// would: the ids of its block up to `id` are dropped (a gap), all of
    /// them when `id` is past its end, so the next id this proxy generates
    /// is above `id` and above the table's AUTO_INCREMENT shown then.
    pub async fn pass(
        &self,
        main: Main<'_>,
        table: &TableName,
        generation: u64,
        id: u64,
    ) -> Result<Option<Passed>, ProxyError> {
        let seq = self.sequence(table, generation);
        let mut b = seq.block.lock().await;
        if b.next == b.end && id >= b.counter_floor {
            // No block: one round trip reserves one and moves the counter
            // past `id`, so that the block's ids dropped below can be
            // given back if the statement fails (`undo_pass`), as one
            // server's counter stays; the counter never moves back.
            let size = b.next_size();
            let end = reserve(main, table, generation, size, Some(id)).await?;
            b.next = end - size;
            b.end = end;
            b.size = size.min(MAX_BLOCK);
            b.refilled_at = Some(Instant::now());
            b.counter_floor = b.counter_floor.max(end).max(id.saturating_add(1));
            b.changes += 1;
        }
        let mut passed = None;
        if id >= b.next && b.next < b.end {
            let before = b.next;
            b.next = id.saturating_add(1).min(b.end);
            b.changes += 1;
            passed = Some(Passed {
                table: table.clone(),
                generation,
                before,
                after: b.next,
                change: b.changes,
            });
        }
        if id < b.counter_floor {
            return Ok(passed);
        }
        let next = id.saturating_add(1);
        let sql = format!(
            "UPDATE {} SET next_id = GREATEST(next_id, {next}) WHERE db = {} AND tbl = {} AND generation = {generation}",
            qualified("hscale", "sequences"),
            quote_str(&table.db),
            quote_str(&table.table),
        );
        run_on_main(main.pool, table, &sql).await?;
        b.counter_floor = b.counter_floor.max(next);
        Ok(passed)
    }

    /// A statement whose explicit id [`Sequences::pass`] passed wrote no
    /// row: this proxy's block hands out the ids it dropped for it after
    /// all, as one server's AUTO_INCREMENT stays where it was after a
    /// failed INSERT, unless the block changed since (another take or
    /// pass; its ids are then left dropped). The table's counter on the
    /// main backend stays moved: it only ever grows, and the ids given
    /// back are below it.
    pub async fn undo_pass(&self, p: Passed) {
        let seq = self.sequence(&p.table, p.generation);
        let mut b = seq.block.lock().await;
        if b.changes == p.change && b.next == p.after {
            b.next = p.before;
            b.changes += 1;
        }
    }
}

impl Block {
    /// The next reservation's size: doubled when the last block went in
    /// under [`FAST`], halved when it lasted over [`SLOW`].
    fn next_size(&self) -> u64 {
        let size = if self.size == 0 { MIN_BLOCK } else { self.size };
        match self.refilled_at.map(|t| t.elapsed()) {
            Some(e) if e < FAST => (size * 2).min(MAX_BLOCK),
            Some(e) if e > SLOW => (size / 2).max(MIN_BLOCK),
            _ => size,
        }
    }
}

/// The sequence's counter: every id handed out so far is below it (ids
/// in proxies' blocks too), so it is the table's logical AUTO_INCREMENT
/// (`SHOW CREATE TABLE`). `None`: the table has no sequence row.
pub async fn next_value(
    main: &Arc<Pool>,
    table: &TableName,
    generation: u64,
) -> Result<Option<u64>, ProxyError> {
    let sql = format!(
        "SELECT next_id FROM {} WHERE db = {} AND tbl = {} AND generation = {generation}",
        qualified("hscale", "sequences"),
        quote_str(&table.db),
        quote_str(&table.table),
    );
    let mut c = main.get(false).await?;
    let rows = c
        .query_rows(&sql)
        .await?
        .map_err(|err| ProxyError::Backend {
            backend: main.cfg.name.clone(),
            during: "reading a sequence".into(),
            err,
        })?;
    Ok(rows
        .rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|v| String::from_utf8(v).ok()?.parse().ok()))
}

/// `ddl` (SHOW CREATE TABLE's text) with its table option
/// `AUTO_INCREMENT=` set to `next`, added after `ENGINE=` when absent.
pub fn with_auto_increment(ddl: &str, next: u64) -> String {
    let Some(options) = ddl.rfind("\n)") else {
        return ddl.to_string();
    };
    let tail = &ddl[options..];
    if let Some(at) = tail.find(" AUTO_INCREMENT=") {
        let start = options + at + " AUTO_INCREMENT=".len();
        let digits = ddl[start..].bytes().take_while(u8::is_ascii_digit).count();
        return format!("{}{next}{}", &ddl[..start], &ddl[start + digits..]);
    }
    match tail.find(" ENGINE=") {
        Some(at) => {
            let start = options + at + " ENGINE=".len();
            let word = ddl[start..].find(' ').map_or(ddl.len(), |n| start + n);
            format!("{} AUTO_INCREMENT={next}{}", &ddl[..word], &ddl[word..])
        }
        None => ddl.to_string(),
    }
}

/// Reserve `size` ids of `table`'s sequence: returns the end of the block
/// (the ids are `end - size .. end`). `past`: an explicit id the counter
/// also moves past, in the same statement.
async fn reserve(
    main: Main<'_>,
    table: &TableName,
    generation: u64,
    size: u64,
    past: Option<u64>,
) -> Result<u64, ProxyError> {
    let next = match past {
        Some(id) => format!(
            "GREATEST(LAST_INSERT_ID(next_id + {size}), {})",
            id.saturating_add(1)
        ),
        None => format!("LAST_INSERT_ID(next_id + {size})"),
    };
    let sql = format!(
        "UPDATE {} SET next_id = {next} WHERE db = {} AND tbl = {} AND generation = {generation}",
        qualified("hscale", "sequences"),
        quote_str(&table.db),
        quote_str(&table.table),
    );
    let end = run_on_main(main.pool, table, &sql).await?;
    main.metrics
        .shared
        .sequence_blocks
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if end < size {
        return Err(ProxyError::Wrong(format!(
            "the sequence of {table} returned {end} for a block of {size}"
        )));
    }
    Ok(end)
}

/// Run `sql` (an UPDATE of one counter row) on the main backend, retrying
/// while the backend is unreachable. Returns the OK packet's insert id.
/// A reservation whose answer was lost is simply never used: a gap.
async fn run_on_main(main: &Arc<Pool>, table: &TableName, sql: &str) -> Result<u64, ProxyError> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(20);
    loop {
        let r = async {
            // CLIENT_FOUND_ROWS: a GREATEST that changes nothing still
            // counts its row.
            let mut conn = main.get(true).await?;
            match conn.command(&BackendConn::payload_for_query(sql)).await {
                Ok(Ok(ok)) => {
                    conn.last_insert_id = ok.last_insert_id;
                    Ok(Ok(ok))
                }
                Ok(Err(e)) => Ok(Err(crate::backend::conn::server_error(&conn, sql, e))),
                Err(e) => {
                    conn.is_broken = true;
                    Err(e)
                }
            }
        }
        .await;
        match r {
            Ok(Ok(ok)) if ok.affected_rows == 1 => return Ok(ok.last_insert_id),
            Ok(Ok(_)) => {
                return Err(ProxyError::Refused(format!(
                    "table {table} has no sequence row in hscale.sequences (it was set up again, renamed or dropped by another proxy): run the statement again"
                )))
            }
            Ok(Err(e)) | Err(e) if !e.is_retryable() || started.elapsed() > RETRY_FOR => {
                return Err(e)
            }
            Ok(Err(_)) | Err(_) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_auto_increment;

    #[test]
    fn auto_increment_option_is_set_or_added() {
        let with = "CREATE TABLE `t` (\n  `id` bigint(20) NOT NULL AUTO_INCREMENT,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB AUTO_INCREMENT=6 DEFAULT CHARSET=latin1";
        assert_eq!(
            with_auto_increment(with, 1234),
            with.replace("AUTO_INCREMENT=6", "AUTO_INCREMENT=1234")
        );
        let without = "CREATE TABLE `t` (\n  `id` bigint(20) NOT NULL AUTO_INCREMENT,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB DEFAULT CHARSET=latin1";
        assert_eq!(
            with_auto_increment(without, 9),
            with.replace("AUTO_INCREMENT=6", "AUTO_INCREMENT=9")
        );
    }
}
