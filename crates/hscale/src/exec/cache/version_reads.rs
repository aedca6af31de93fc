//! The result cache's version reads, coalesced as statements are (see
//! `exec/cache.rs`): per worker and backend one read in flight at a
//! time, the requests that arrive meanwhile forming the next, which
//! reads every table any of them asks for in one statement.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hscale_route::BackendId;
use tokio::sync::watch;

use super::{Physical, Probe, ResultCache, Seen, SHARDS};
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::partition::versions;
use crate::runtime::Context;

/// One worker's version reads of one backend: one in flight at a time;
/// the requests that arrive meanwhile wait in `next`, read together when
/// it ends (see the module's comment).
#[derive(Default)]
pub(super) struct Queue {
    is_running: bool,
    next: Option<Forming>,
}

/// A version read not sent yet: the tables its requests ask for.
struct Forming {
    tx: watch::Sender<Option<Shared>>,
    tables: Vec<Arc<[(String, String)]>>,
}

/// What one version read found, for every request it answers.
type Shared = Arc<Result<Read, String>>;

#[derive(Default)]
struct Read {
    dict: Option<u64>,
    sums: HashMap<(String, String), u64>,
}

impl ResultCache {
    /// Read the versions of every probe at once, each through its
    /// backend's queue.
    pub(super) async fn read_versions(
        self: &Arc<Self>,
        ctx: &Arc<Context>,
        worker: usize,
        probes: &[Probe],
    ) -> Result<Seen, ProxyError> {
        let reads = match probes {
            [one] => vec![self.queued(ctx, worker, one).await?],
            _ => {
                let reads = probes.iter().map(|p| self.queued(ctx, worker, p));
                futures_util::future::try_join_all(reads).await?
            }
        };
        let mut seen = vec![u64::MAX];
        for (p, read) in probes.iter().zip(&reads) {
            let read = read.as_ref().as_ref().map_err(|e| {
                ProxyError::Wrong(format!(
                    "reading the result cache's table versions on backend {}: {e}",
                    p.backend.index()
                ))
            })?;
            if p.backend == BackendId::MAIN {
                seen[0] = read.dict.unwrap_or(u64::MAX);
            }
            seen.extend(
                p.tables
                    .iter()
                    .map(|t| read.sums.get(t).copied().unwrap_or(0)),
            );
        }
        Ok(seen)
    }

    fn queue(&self, worker: usize) -> std::sync::MutexGuard<'_, HashMap<BackendId, Queue>> {
        self.queues[worker % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// `probe`'s tables read with the next read of its backend's queue
    /// (one not sent yet), started now if none is in flight.
    async fn queued(
        self: &Arc<Self>,
        ctx: &Arc<Context>,
        worker: usize,
        probe: &Probe,
    ) -> Result<Shared, ProxyError> {
        let mut rx = {
            let mut queues = self.queue(worker);
            let q = queues.entry(probe.backend).or_default();
            let next = q.next.get_or_insert_with(|| Forming {
                tx: watch::channel(None).0,
                tables: Vec::new(),
            });
            // Reads of one rule share its tables' list: kept once.
            if !next.tables.iter().any(|t| Arc::ptr_eq(t, &probe.tables)) {
                next.tables.push(probe.tables.clone());
            }
            let rx = next.tx.subscribe();
            if !q.is_running {
                q.is_running = true;
                let run = Running {
                    cache: self.clone(),
                    worker,
                    backend: probe.backend,
                    is_done: false,
                };
                tokio::spawn(run.run(ctx.clone()));
            }
            rx
        };
        loop {
            if let Some(r) = rx.borrow_and_update().clone() {
                return Ok(r);
            }
            if rx.changed().await.is_err() {
                return Err(ProxyError::Wrong(
                    "the result cache's version read ended without an answer".into(),
                ));
            }
        }
    }

    /// Fold `t`'s version rows (`versions::fold`) unless this proxy did
    /// in the last ten seconds; in the background, errors only logged.
    fn fold_later(&self, ctx: &Arc<Context>, worker: usize, t: Physical) {
        {
            let mut f = self.folded.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            if f.get(&t)
                .is_some_and(|at| now < *at + Duration::from_secs(10))
            {
                return;
            }
            if f.len() > 4096 {
                f.clear();
            }
            f.insert(t.clone(), now);
        }
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let (backend, db, table) = t;
            let r = async {
                let mut conn = ctx.pool(worker, backend).get_own().await?;
                versions::fold(&mut conn, &db, &table).await
            };
            if let Err(e) = r.await {
                tracing::debug!(error = %e, db, table, "folding the result cache's version rows");
            }
        });
    }
}

/// The runner of one queue's reads (spawned, so no session's end stops
/// a read others wait for). Dropped before its queue is empty (the
/// runtime ends), it lets the queue start again and its waiters fail.
struct Running {
    cache: Arc<ResultCache>,
    worker: usize,
    backend: BackendId,
    is_done: bool,
}

impl Running {
    async fn run(mut self, ctx: Arc<Context>) {
        loop {
            let next = {
                let mut queues = self.cache.queue(self.worker);
                let q = queues.entry(self.backend).or_default();
                match q.next.take() {
                    Some(n) => n,
                    None => {
                        q.is_running = false;
                        self.is_done = true;
                        return;
                    }
                }
            };
            let read = read_backend(&ctx, self.worker, self.backend, &next.tables).await;
            let read = match read {
                Ok((read, found)) => {
                    for (db, table) in found.crowded {
                        self.cache
                            .fold_later(&ctx, self.worker, (self.backend, db, table));
                    }
                    // Checked again, and armed, by the next miss.
                    let unarmed: Vec<Physical> = found
                        .unarmed
                        .into_iter()
                        .map(|(db, table)| (self.backend, db, table))
                        .collect();
                    if !unarmed.is_empty() {
                        self.cache.disarmed(&unarmed);
                    }
                    Ok(read)
                }
                Err(e) => Err(e.to_string()),
            };
            next.tx.send_replace(Some(Arc::new(read)));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.is_done {
            let mut queues = self.cache.queue(self.worker);
            let q = queues.entry(self.backend).or_default();
            q.is_running = false;
            q.next = None;
        }
    }
}

/// What a version read found besides the sums.
#[derive(Default)]
struct Found {
    /// Tables with many version rows (to fold).
    crowded: Vec<(String, String)>,
    /// Tables without their three version triggers.
    unarmed: Vec<(String, String)>,
}

/// One version read on `backend`: the sums of every table of `tables`
/// (and the dictionary version on the main backend), in one statement,
/// so one snapshot, and whether each still has its version triggers; a
/// table marked by a DDL statement through a proxy, or without its
/// triggers (dropped and created again, or renamed onto, on the backend
/// directly: `versions::armed_count`), reads `u64::MAX`, never served
/// nor stored.
async fn read_backend(
    ctx: &Context,
    worker: usize,
    backend: BackendId,
    tables: &[Arc<[(String, String)]>],
) -> Result<(Read, Found), ProxyError> {
    let mut pairs: Vec<&(String, String)> = tables.iter().flat_map(|t| t.iter()).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let mut parts = Vec::new();
    if backend == BackendId::MAIN {
        parts.push(
            "SELECT '', '', version, 0, 0 FROM `hscale`.`dictionary_version` WHERE id = 1"
                .to_string(),
        );
    }
    if !pairs.is_empty() {
        let list: Vec<String> = pairs
            .iter()
            .map(|(db, t)| format!("({}, {})", quote_str(db), quote_str(t)))
            .collect();
        parts.push(format!(
            "SELECT db, tbl, SUM(version), COUNT(*), MAX(slot) FROM {} WHERE (db, tbl) IN ({}) GROUP BY db, tbl",
            versions::TABLE,
            list.join(", ")
        ));
        parts.extend(pairs.iter().map(|(db, t)| versions::armed_count(db, t)));
    }
    if parts.is_empty() {
        return Ok((Read::default(), Found::default()));
    }
    let sql = parts.join(" UNION ALL ");
    let mut conn = ctx.pool(worker, backend).get(false).await?;
    let rows = match conn.query_rows(&sql).await? {
        Ok(t) => t.strings(),
        Err(e) => return Err(ProxyError::Wrong(e.message)),
    };
    Ok(read_of(rows, &pairs))
}

/// What the rows of a version read (see [`read_backend`]) of `pairs`
/// say: the dictionary version, each table's sum (`u64::MAX` when
/// marked or not armed), the tables to fold and those not armed.
fn read_of(rows: Vec<Vec<Option<String>>>, pairs: &[&(String, String)]) -> (Read, Found) {
    let (mut read, mut found) = (Read::default(), Found::default());
    let mut armed = std::collections::HashSet::new();
    for r in rows {
        let field = |i: usize| r.get(i).and_then(|v| v.clone()).unwrap_or_default();
        let (db, table) = (field(0), field(1));
        let count: u64 = field(3).parse().unwrap_or(0);
        if r.get(2).is_some_and(|v| v.is_none()) {
            // `versions::armed_count`'s row.
            if count == versions::ARMED {
                armed.insert((db, table));
            }
            continue;
        }
        let version = field(2).parse().unwrap_or(0);
        if db.is_empty() {
            read.dict = Some(version);
            continue;
        }
        if count > versions::FOLD_AT {
            found.crowded.push((db.clone(), table.clone()));
        }
        // A DDL statement through a proxy is in progress: not cached.
        let is_marked = field(4).parse().unwrap_or(0) >= versions::MARKED;
        let version = if is_marked { u64::MAX } else { version };
        read.sums.insert((db, table), version);
    }
    for &pair in pairs {
        if !armed.contains(pair) {
            read.sums.insert(pair.clone(), u64::MAX);
            found.unarmed.push(pair.clone());
        }
    }
    (read, found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(fields: &[Option<&str>]) -> Vec<Option<String>> {
        fields.iter().map(|f| f.map(str::to_string)).collect()
    }

    /// Sums, marks, crowded tables, and tables without their three
    /// triggers (dropped and created again on a backend directly) read
    /// as changing.
    #[test]
    fn unarmed_and_marked_tables_read_as_changing() {
        let pair = |t: &str| ("d".to_string(), t.to_string());
        let (a, b, c, e) = (pair("a"), pair("b"), pair("c"), pair("e"));
        let rows = vec![
            row(&[Some(""), Some(""), Some("7"), Some("0"), Some("0")]),
            row(&[Some("d"), Some("a"), Some("5"), Some("2"), Some("9")]),
            row(&[Some("d"), Some("b"), Some("6"), Some("65"), Some("1")]),
            row(&[
                Some("d"),
                Some("c"),
                Some("1"),
                Some("1"),
                Some("9223372036854775809"),
            ]),
            row(&[Some("d"), Some("a"), None, Some("3"), Some("0")]),
            row(&[Some("d"), Some("b"), None, Some("2"), Some("0")]),
            row(&[Some("d"), Some("c"), None, Some("3"), Some("0")]),
            row(&[Some("d"), Some("e"), None, Some("3"), Some("0")]),
        ];
        let (read, found) = read_of(rows, &[&a, &b, &c, &e]);
        assert_eq!(read.dict, Some(7));
        assert_eq!(read.sums[&a], 5);
        assert_eq!(read.sums[&b], u64::MAX, "two triggers of three");
        assert_eq!(read.sums[&c], u64::MAX, "marked");
        assert_eq!(read.sums.get(&e), None, "armed, no version row yet: 0");
        assert_eq!(found.crowded, vec![b.clone()]);
        assert_eq!(found.unarmed, vec![b]);
    }
}
