//! Replicas of backends (`[[backends]] replicas`): their pools, beside
//! the primaries' in `runtime.rs`, and the monitor that reads each one's
//! replication state (`Replicas::look`; its loop on every worker is
//! `server.rs::replica_monitor`).
//!
//! A replica is a MariaDB server replicating from its backend (GTID
//! replication). hscale never writes to it and never sends it a read by
//! default: a session that chose to read from replicas
//! (`exec/read_from.rs`) sends its plain reads to a *usable* replica of
//! each backend they reach. Usable means the monitor's last look, at most
//! `[proxy] replica_check_interval_ms` ago, found `Slave_SQL_Running` and
//! `Slave_IO_Running` `Yes` and `Seconds_Behind_Master` not NULL and at
//! most `[proxy] replica_max_lag_ms` (MariaDB counts whole seconds), and
//! this worker's pool of it reachable. Anything else (no answer, an error,
//! replication stopped or lagging) leaves it unusable until a later look
//! finds it well again; reads then go to the primary.
//!
//! ```text
//!  monitor (worker 0, every replica_check_interval_ms)
//!      SHOW SLAVE STATUS ─► ReplicaState { is_usable, lag_ms, error }
//!  session read (read_from = replica) ─► Replicas::pick(worker, backend)
//!      ─► a usable replica's pool, or None: the primary's
//! ```
//! Pools open no connection before a read uses them (`min_connections`
//! 0); the monitor's own connection is the proxy account's pool's.
//! Switchover and failover (promoting a replica) are `admin/failover.rs`;
//! after one, `follow_primary` re-points the replicas.

use hscale_route::BackendId;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::backend::tls::BackendTls;
use crate::backend::{BackendWatch, Pool};
use crate::config::{BackendConfig, Config};

/// One replica's last known replication state (written by the monitor,
/// read by sessions: atomics, no lock on the statement path).
#[derive(Debug, Default)]
pub struct ReplicaState {
    is_usable: AtomicBool,
    /// `Seconds_Behind_Master` × 1000 at the last look; -1: NULL or not read.
    lag_ms: AtomicI64,
    /// Looks so far (0: none yet).
    looks: AtomicU64,
    /// Why it is not usable, from the last look.
    why: Mutex<Option<String>>,
}

impl ReplicaState {
    pub fn is_usable(&self) -> bool {
        self.is_usable.load(Ordering::Relaxed)
    }

    /// The lag at the last look, in milliseconds (`None`: unknown).
    pub fn lag_ms(&self) -> Option<u64> {
        u64::try_from(self.lag_ms.load(Ordering::Relaxed)).ok()
    }

    /// Why it is not usable (the last look's finding).
    pub fn why(&self) -> Option<String> {
        self.why.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn record(&self, name: &str, lag_ms: Option<u64>, why: Option<String>) {
        self.lag_ms.store(
            lag_ms.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX)),
            Ordering::Relaxed,
        );
        let is_usable = why.is_none();
        if self.is_usable.swap(is_usable, Ordering::Relaxed) != is_usable
            || self.looks.load(Ordering::Relaxed) == 0
        {
            match &why {
                None => tracing::info!(replica = name, lag_ms, "replica is usable"),
                Some(why) => tracing::info!(replica = name, why, "replica is not usable"),
            }
        }
        self.looks.fetch_add(1, Ordering::Relaxed);
        *self.why.lock().unwrap_or_else(|p| p.into_inner()) = why;
    }
}

/// One replica of one backend.
pub struct Replica {
    /// The backend it replicates.
    pub backend: BackendId,
    pub address: String,
    /// `<backend>/replica<n>`, n from 1 in the backend's list.
    pub name: String,
    /// Its backend's name.
    pub backend_name: String,
    pub state: ReplicaState,
}

/// Every backend's replicas, with their pools on every worker.
#[derive(Default)]
pub struct Replicas {
    pub list: Vec<Replica>,
    /// Per backend: its replicas' places in `list`.
    of_backend: Vec<Vec<usize>>,
    /// `pools[worker][identity * list.len() + replica]`.
    pools: Vec<Vec<Arc<Pool>>>,
}

impl Replicas {
    /// The replicas `config` lists, with a pool per worker and backend
    /// identity, as the primaries' (`backend_tls`: the primaries' TLS,
    /// whose connector a replica shares, checked against its own host
    /// unless `server_name` is set).
    pub fn new(
        config: &Config,
        workers: usize,
        backend_tls: &[Option<Arc<BackendTls>>],
        connect: Duration,
        acquire: Duration,
    ) -> Replicas {
        let mut list = Vec::new();
        let mut of_backend = Vec::new();
        let mut cfgs = Vec::new();
        let mut tls = Vec::new();
        for (i, b) in config.backends.iter().enumerate() {
            let mut mine = Vec::new();
            for (k, address) in b.replicas.iter().enumerate() {
                mine.push(list.len());
                list.push(Replica {
                    backend: BackendId::new(i),
                    address: address.clone(),
                    name: format!("{}/replica{}", b.name, k + 1),
                    backend_name: b.name.clone(),
                    state: ReplicaState::default(),
                });
                cfgs.push(BackendConfig {
                    name: format!("{}/replica{}", b.name, k + 1),
                    address: address.clone(),
                    min_connections: 0,
                    replicas: Vec::new(),
                    ..b.clone()
                });
                tls.push(
                    backend_tls
                        .get(i)
                        .cloned()
                        .flatten()
                        .map(|t| Arc::new(t.for_address(b, address))),
                );
            }
            of_backend.push(mine);
        }
        if list.is_empty() {
            return Replicas::default();
        }
        let read_timeout = match config.proxy.backend_read_timeout_ms {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        };
        let ping = Duration::from_millis(config.proxy.backend_ping_timeout_ms);
        let watches: Vec<Arc<BackendWatch>> = list
            .iter()
            .map(|_| Arc::new(BackendWatch::new(read_timeout, ping)))
            .collect();
        let identities = config.backend_identities();
        let pools = (0..workers)
            .map(|_| {
                let mut pools = Vec::new();
                for identity in 0..=identities.len() {
                    for (r, cfg) in cfgs.iter().enumerate() {
                        let mut cfg = BackendConfig {
                            max_connections: (cfg.max_connections / workers).max(1),
                            ..cfg.clone()
                        };
                        if let Some((user, password)) =
                            identity.checked_sub(1).map(|k| &identities[k])
                        {
                            cfg.user = user.clone();
                            cfg.password = password.clone();
                        }
                        pools.push(Pool::new(
                            cfg,
                            list[r].backend,
                            connect,
                            acquire,
                            watches[r].clone(),
                            tls[r].clone(),
                            false,
                        ));
                    }
                }
                pools
            })
            .collect();
        Replicas {
            list,
            of_backend,
            pools,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Whether `backend` has replicas at all.
    pub fn has(&self, backend: BackendId) -> bool {
        self.of_backend
            .get(backend.index())
            .is_some_and(|r| !r.is_empty())
    }

    /// A usable replica of `backend` for a read on `worker` as backend
    /// identity `identity`, taking turns among several by `turn`; `None`:
    /// the primary serves.
    pub fn pick(
        &self,
        worker: usize,
        backend: BackendId,
        identity: usize,
        turn: usize,
    ) -> Option<&Arc<Pool>> {
        let mine = self.of_backend.get(backend.index())?;
        let n = mine.len();
        (0..n)
            .map(|k| mine[(turn + k) % n])
            .filter(|&r| self.list[r].state.is_usable())
            .map(|r| &self.pools[worker][identity * self.list.len() + r])
            .find(|p| p.is_reachable())
    }

    /// Where replica `r` is now (after a switchover, maybe the old primary).
    pub fn address(&self, r: usize) -> String {
        self.own_pool(0, r).address()
    }

    /// `backend`'s primary is `primary` now: its replicas are the other
    /// servers of its set, in the config's order
    /// (`backend::addresses::others`); a replica that moves is not used
    /// until the monitor has looked at its new server.
    pub fn follow_primary(&self, backend: BackendId, config_primary: &str, primary: &str) {
        let Some(mine) = self.of_backend.get(backend.index()) else {
            return;
        };
        let configured: Vec<&str> = mine
            .iter()
            .map(|&r| self.list[r].address.as_str())
            .collect();
        let Some(others) = crate::backend::addresses::others(config_primary, &configured, primary)
        else {
            return;
        };
        for (&r, address) in mine.iter().zip(others) {
            let replica = &self.list[r];
            let to = (address != replica.address).then(|| address.to_string());
            if self.own_pool(0, r).watch.set_address(to) {
                replica.state.record(
                    &replica.name,
                    None,
                    Some(format!(
                        "moved to {address} (the backend's primary moved); not looked at yet"
                    )),
                );
            }
        }
    }

    /// Worker `worker`'s pools of every replica, every identity.
    pub fn worker_pools(&self, worker: usize) -> &[Arc<Pool>] {
        self.pools.get(worker).map_or(&[], |p| &p[..])
    }

    /// The proxy account's pool of replica `r` on `worker`.
    fn own_pool(&self, worker: usize, r: usize) -> &Arc<Pool> {
        &self.pools[worker][r]
    }

    /// Open and idle connections to replica `r` over every worker and
    /// identity, and whether every pool of it is up.
    pub fn stats(&self, r: usize) -> (usize, usize, bool) {
        let n = self.list.len();
        let (mut open, mut idle, mut up) = (0, 0, true);
        for w in &self.pools {
            for p in w.iter().skip(r).step_by(n) {
                let s = p.stats();
                open += s.open;
                idle += s.idle;
                up &= s.is_up;
            }
        }
        (open, idle, up)
    }

    /// One look at replica `r` on `worker`'s pool: `SHOW SLAVE STATUS`
    /// (the connect included) within the ping timeout, recorded in its
    /// state.
    pub async fn look(&self, worker: usize, r: usize, max_lag_ms: u64, main: &Arc<Pool>) {
        let pool = self.own_pool(worker, r).clone();
        let timeout = pool.watch.ping_timeout;
        let (state, name) = (&self.list[r].state, &self.list[r].name);
        let read = async {
            let mut conn = pool.get(false).await.map_err(|e| e.to_string())?;
            match tokio::time::timeout(timeout, conn.query_rows("SHOW SLAVE STATUS")).await {
                Ok(Ok(Ok(r))) => Ok(r),
                Ok(Ok(Err(e))) => Err(format!("SHOW SLAVE STATUS: {}", e.message)),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => {
                    conn.is_broken = true;
                    Err(format!("no answer within {} ms", timeout.as_millis()))
                }
            }
        };
        // The whole look (a connect included) within the ping timeout: a
        // replica that does not answer is left at once.
        let read = async {
            tokio::time::timeout(timeout, read)
                .await
                .unwrap_or_else(|_| Err(format!("no answer within {} ms", timeout.as_millis())))
        };
        match read.await {
            Ok(status) => {
                // It answers: every worker's pools of it may try again.
                let n = self.list.len();
                for w in &self.pools {
                    for p in w.iter().skip(r).step_by(n) {
                        p.note_reachable();
                    }
                }
                let names: Vec<&str> = status.columns.iter().map(|c| c.name.as_str()).collect();
                let rows = status.strings();
                let (lag, mut why) = judge(&names, rows.first().map(|r| &r[..]), max_lag_ms);
                if rows.is_empty() {
                    // Not replicating at all: an old primary back after a
                    // failover, say. Never the primary while the
                    // dictionary names another: read-only, so no account
                    // without READ_ONLY ADMIN writes to it.
                    if let Some(w) = why.as_mut() {
                        if let Err(e) = self.fence(worker, r, main).await {
                            w.push_str(&format!("; cannot make it read-only: {e}"));
                        }
                    }
                }
                state.record(name, lag, why);
            }
            Err(why) => state.record(name, None, Some(why)),
        }
    }
}

impl Replicas {
    /// Make replica `r`, which does not replicate, read-only if it is not.
    /// Not while the dictionary on the main backend (`main`), read now,
    /// names it its backend's primary: a replica being promoted does not
    /// replicate either, and this proxy's dictionary may be older.
    async fn fence(&self, worker: usize, r: usize, main: &Arc<Pool>) -> Result<(), String> {
        let pool = self.own_pool(worker, r).clone();
        let address = pool.address();
        let mut m = main.get(false).await.map_err(|e| e.to_string())?;
        let sql = format!(
            "SELECT address, epoch FROM `hscale`.`backend_addresses` WHERE backend = {}",
            hscale_sql::quote::quote_str(&self.list[r].backend_name)
        );
        let named = m
            .query_rows(&sql)
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.message)?
            .strings();
        let named = named.first();
        if named.and_then(|r| r[0].clone()).as_deref() == Some(&address) {
            return Ok(());
        }
        drop(m);
        let mut conn = pool.get(false).await.map_err(|e| e.to_string())?;
        if self.list[r].backend == BackendId::MAIN {
            // A server of the main backend's set whose own record names it
            // with a higher epoch than the main backend this proxy reads is
            // the new primary of a switch this proxy has not followed yet
            // (`partition::refresh::follow_main`): never fenced.
            let epoch = |r: Option<&Vec<Option<String>>>| {
                r.and_then(|r| r.get(1).cloned().flatten())
                    .and_then(|e| e.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            let known = epoch(named);
            let own = conn
                .query_rows(&sql)
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.message)?
                .strings();
            let own = own.first();
            if own.and_then(|r| r[0].clone()).as_deref() == Some(&address) && epoch(own) > known {
                return Ok(());
            }
        }
        let ro = conn
            .query_rows("SELECT @@GLOBAL.read_only")
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.message)?;
        if ro.strings().first().and_then(|r| r[0].clone()).as_deref() == Some("0") {
            conn.command(&crate::backend::BackendConn::payload_for_query(
                "SET GLOBAL read_only = 1",
            ))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.message)?;
            tracing::warn!(replica = %self.list[r].name, address = %pool.address(), "a replica that does not replicate was writable: made read-only");
        }
        Ok(())
    }
}

/// What one row of `SHOW SLAVE STATUS` (columns `names`; `None`: no row,
/// not a replica) says: the lag in milliseconds, and why the replica is
/// not usable (`None`: usable).
pub fn judge(
    names: &[&str],
    row: Option<&[Option<String>]>,
    max_lag_ms: u64,
) -> (Option<u64>, Option<String>) {
    let Some(row) = row else {
        return (
            None,
            Some("not a replica (SHOW SLAVE STATUS is empty)".into()),
        );
    };
    let field = |name: &str| {
        names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .and_then(|i| row.get(i).cloned().flatten())
    };
    let lag = field("Seconds_Behind_Master")
        .and_then(|s| s.parse::<u64>().ok())
        .map(|s| s.saturating_mul(1000));
    for thread in ["Slave_SQL_Running", "Slave_IO_Running"] {
        let running = field(thread);
        if running.as_deref() != Some("Yes") {
            let error = field(if thread == "Slave_SQL_Running" {
                "Last_SQL_Error"
            } else {
                "Last_IO_Error"
            })
            .filter(|e| !e.is_empty());
            let mut why = format!("{thread} = {}", running.as_deref().unwrap_or("NULL"));
            if let Some(e) = error {
                why.push_str(&format!(": {e}"));
            }
            return (lag, Some(why));
        }
    }
    match lag {
        None => (None, Some("Seconds_Behind_Master is NULL".into())),
        Some(l) if l > max_lag_ms => (
            lag,
            Some(format!(
                "lagging {l} ms, more than replica_max_lag_ms {max_lag_ms}"
            )),
        ),
        Some(_) => (lag, None),
    }
}

#[cfg(test)]
mod tests {
    use super::judge;

    fn row(v: &[Option<&str>]) -> Vec<Option<String>> {
        v.iter().map(|s| s.map(str::to_string)).collect()
    }

    #[test]
    fn usable_only_running_and_within_the_bound() {
        let names = [
            "Slave_IO_Running",
            "Slave_SQL_Running",
            "Last_SQL_Error",
            "Seconds_Behind_Master",
        ];
        let ok = row(&[Some("Yes"), Some("Yes"), Some(""), Some("1")]);
        assert_eq!(judge(&names, Some(&ok), 1000), (Some(1000), None));
        let (lag, why) = judge(&names, Some(&ok), 999);
        assert_eq!(lag, Some(1000));
        assert!(why.unwrap().contains("lagging 1000 ms"));
        let stopped = row(&[Some("Yes"), Some("No"), Some("boom"), None]);
        let (_, why) = judge(&names, Some(&stopped), 1000);
        assert_eq!(why.as_deref(), Some("Slave_SQL_Running = No: boom"));
        let null = row(&[Some("Yes"), Some("Yes"), Some(""), None]);
        assert!(judge(&names, Some(&null), 1000).1.unwrap().contains("NULL"));
        assert!(judge(&names, None, 1000)
            .1
            .unwrap()
            .contains("not a replica"));
    }
}
