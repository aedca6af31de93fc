//! Transactions across backends: one branch (connection) per backend, and
//! the commit protocol that makes them atomic. Owned by [`Bindings`]
//! (`bindings.rs` calls [`Bindings::join`] when a statement of a
//! transaction reaches a backend it has no branch on yet); the session
//! calls [`Bindings::commit_all`] / [`Bindings::rollback_all`] for COMMIT
//! and ROLLBACK; [`resolve`] runs in every proxy's reload loop.
//!
//! ```text
//!  BEGIN ─► first statement: plain BEGIN on its backend (the home branch, as without this module)
//!        ─► a statement on another backend: join ─► XA START 'hscale:<home>:<thread>:<time>:<seq>','<backend>'
//!  COMMIT ─┬─ no XA branch ─► plain COMMIT (the session never gets here)
//!          ├─ at most one branch wrote ─► branches that only read: XA END + XA ROLLBACK
//!          │                            ─► the writer: XA COMMIT ONE PHASE, or the home's COMMIT
//!          └─ several wrote ─► XA END + XA PREPARE every XA branch that wrote
//!                          ─► INSERT the decision into hscale.decisions inside the home branch, COMMIT it
//!                          ─► XA COMMIT every prepared branch ─► delete the decision (in the background)
//! ```
//!
//! The home branch is never an XA branch: a transaction that stays on one
//! backend costs exactly what it cost before (MariaDB cannot turn a running
//! transaction into an XA branch, so only branches opened later are XA).
//! That is why the decision lives on the home branch's backend, not always
//! on the main one: the home branch's COMMIT is the commit point, and the
//! decision row commits with it or not at all.
//!
//! Recovery ([`resolve`]): a prepared branch whose gtrid carries hscale's
//! format id is committed when its decision row says so; it is rolled back
//! when there is none and the home connection named in its gtrid no longer
//! exists on the home backend (checked first, so no decision can appear
//! after the check: only that connection could have written it).

use hscale_route::BackendId;
use std::sync::Arc;

use hscale_wire::response::ErrPacket;

use super::forward::Outcome;
use super::{Bindings, Effects};
use crate::backend::state::SessionVars;
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::runtime::Context;

/// The XA format id of hscale's branches (`hscl`).
pub const FORMAT_ID: u32 = 0x6873_636c;

/// The table that holds commit decisions, on every backend.
pub(crate) const DECISIONS: &str = "`hscale`.`decisions`";

/// Decision rows older than this, with no branch prepared anywhere, are
/// deleted by the resolver (their owner died before deleting them).
const DECISION_RETENTION_SECS: u64 = 60;

/// Slack for clocks when telling a restarted home backend from a live one.
const CLOCK_SLACK_SECS: u64 = 10;

/// Test hook: after the decision commits, wait this long before the
/// branches commit (so a test can kill the proxy there).
const PAUSE_AFTER_DECISION_ENV: &str = "HSCALE_TEST_PAUSE_AFTER_DECISION_MS";

/// One transaction that spans backends: the home branch is the session's
/// pinned connection; the others are here.
pub struct Txn {
    /// Global transaction id: `hscale:<home backend>:<home thread id>:<unix secs>:<seq>`.
    pub gtrid: String,
    pub home: BackendId,
    /// Started READ ONLY: every branch is a plain read-only transaction.
    pub is_read_only: bool,
    pub branches: Vec<Branch>,
    /// The session's variables as every branch runs them while the
    /// transaction spans backends: `(what the session set, that plus the
    /// cross-backend lock wait)`, rebuilt when the session sets something.
    pub lock_vars: Option<(Arc<SessionVars>, Arc<SessionVars>)>,
}

/// A branch on a backend other than the home's.
pub struct Branch {
    pub backend: BackendId,
    /// `None` while a statement runs on it.
    pub conn: Option<PooledConn>,
    pub is_written: bool,
    /// The session's savepoints when the branch joined (`Savepoints::mark`;
    /// set on it then, over no work): rolling back to one of those empties
    /// the branch.
    pub savepoints_mark: u64,
}

impl Txn {
    /// The XA id of the branch on `backend`.
    fn xid(&self, backend: BackendId) -> String {
        xid(&self.gtrid, &backend.index().to_string())
    }

    /// The branch on `backend`, if the transaction has one and it is free.
    pub fn take(&mut self, backend: BackendId) -> Option<PooledConn> {
        self.branches
            .iter_mut()
            .find(|b| b.backend == backend)
            .and_then(|b| b.conn.take())
    }

    /// The branch on `backend` whose connection is out, to put it back.
    pub fn slot(&mut self, backend: BackendId) -> Option<&mut Branch> {
        self.branches
            .iter_mut()
            .find(|b| b.backend == backend && b.conn.is_none())
    }
}

fn xid(gtrid: &str, bqual: &str) -> String {
    format!("'{gtrid}','{bqual}',{FORMAT_ID}")
}

/// The parts of an hscale gtrid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gtrid {
    pub home: BackendId,
    pub thread: u32,
    pub created: u64,
}

pub fn parse_gtrid(s: &str) -> Option<Gtrid> {
    let mut it = s.split(':');
    if it.next()? != "hscale" {
        return None;
    }
    let home = BackendId::new(usize::from(it.next()?.parse::<u16>().ok()?));
    let thread = it.next()?.parse().ok()?;
    let created = it.next()?.parse().ok()?;
    it.next()?.parse::<u64>().ok()?;
    it.next().is_none().then_some(Gtrid {
        home,
        thread,
        created,
    })
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `BEGIN` / `START TRANSACTION` text that opens a read-only transaction.
pub fn is_read_only_begin(payload: &[u8]) -> bool {
    let sql = String::from_utf8_lossy(payload.get(1..).unwrap_or_default()).to_ascii_uppercase();
    let words: Vec<&str> = sql
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(2).any(|w| w == ["READ", "ONLY"])
}

/// Send one statement; a server error becomes `ProxyError::Backend`.
async fn run(conn: &mut PooledConn, sql: &str, during: &str) -> Result<(), ProxyError> {
    match conn.command(&BackendConn::payload_for_query(sql)).await? {
        Ok(_) => Ok(()),
        Err(err) => Err(ProxyError::Backend {
            backend: conn.backend.to_string(),
            during: format!("hscale: {during}"),
            err,
        }),
    }
}

/// The server error a failed step answers the client with.
fn server_error(e: ProxyError) -> Result<ErrPacket, ProxyError> {
    match e {
        ProxyError::Backend { err, .. } => Ok(err),
        other => Err(other),
    }
}

impl Bindings {
    /// The session may open a branch on another backend: it is in a
    /// transaction (or has autocommit off) and nothing else binds it to
    /// its connection.
    pub fn is_branchable(&self) -> bool {
        use hscale_sql::Pins;
        let txn = Pins(Pins::TRANSACTION.0 | Pins::AUTOCOMMIT_OFF.0);
        self.pins.intersects(txn) && Pins(self.pins.0 & !txn.0).is_empty()
    }

    /// The session is in a transaction or is about to open one: a
    /// statement over several partitions runs its parts one at a time on
    /// the transaction's branches.
    pub fn is_in_transaction(&self) -> bool {
        self.pending_begin.is_some() || self.pinned.is_some() || self.txn.is_some()
    }

    /// The variables a connection of this session must hold: the session's
    /// own, and inside a transaction that spans backends also the
    /// cross-backend lock wait (`[proxy] cross_backend_lock_wait_ms`),
    /// unless the session set `innodb_lock_wait_timeout` itself. Neither
    /// server sees a deadlock between backends; this wait ends it with 1205.
    /// The branches and the home are synced to it at their next statement;
    /// the connections go back to the pool marked with it, so the next
    /// session's sync sets it back.
    pub(super) fn wanted_vars(&mut self) -> Option<Arc<SessionVars>> {
        const LOCK_WAIT: &str = "innodb_lock_wait_timeout";
        let ms = self.ctx.config.proxy.cross_backend_lock_wait_ms;
        let txn = self.txn.as_mut()?;
        if ms == 0 {
            return None;
        }
        if let Some((base, full)) = &txn.lock_vars {
            if Arc::ptr_eq(base, &self.state.vars) {
                return Some(full.clone());
            }
        }
        let base = self.state.vars.clone();
        let full = if base.items().iter().any(|i| i.key == LOCK_WAIT) {
            base.clone()
        } else {
            let secs = ms.div_ceil(1000).max(1);
            let mut vars = (*base).clone();
            vars.apply(&[hscale_sql::SetItem {
                key: LOCK_WAIT.into(),
                assign: format!("@@session.{LOCK_WAIT} = {secs}"),
                is_standalone: false,
            }]);
            Arc::new(vars)
        };
        txn.lock_vars = Some((base, full.clone()));
        Some(full)
    }

    /// Open a branch of the session's transaction on `backend`: a pooled
    /// connection brought to the session's state, then `XA START` (or a
    /// plain read-only transaction when the transaction is READ ONLY).
    pub(super) async fn join(&mut self, backend: BackendId) -> Result<PooledConn, ProxyError> {
        let Some(home) = self.pinned.as_ref() else {
            return Err(ProxyError::Wrong(
                "internal: a transaction branch without a home connection".into(),
            ));
        };
        let (home_backend, thread) = (home.pool().backend_id, home.thread_id);
        // Read-only branches are plain transactions: they need no XA.
        for b in [home_backend, backend]
            .into_iter()
            .filter(|_| !self.is_read_only_txn)
        {
            if let Some(why) = super::txn_checks::refusal(&self.ctx, self.worker, b).await? {
                return Err(ProxyError::Refused(format!(
                    "a transaction across backends cannot use {why}"
                )));
            }
        }
        let is_read_only = self.is_read_only_txn;
        let ctx = self.ctx.clone();
        let txn = self.txn.get_or_insert_with(|| {
            let seq = ctx.next_txn_seq();
            Txn {
                gtrid: format!(
                    "hscale:{}:{thread}:{}:{seq}",
                    home_backend.index(),
                    unix_secs()
                ),
                home: home_backend,
                is_read_only,
                branches: Vec::new(),
                lock_vars: None,
            }
        });
        let start = if txn.is_read_only {
            "START TRANSACTION READ ONLY".to_string()
        } else {
            format!("XA START {}", txn.xid(backend))
        };
        let mut conn = self
            .ctx
            .pool(self.worker, backend)
            .get(self.is_found_rows)
            .await?;
        if let Some(err) = self.sync(&mut conn, false).await? {
            return Err(ProxyError::Backend {
                backend: conn.backend.to_string(),
                during: "hscale: opening a transaction branch".into(),
                err,
            });
        }
        run(&mut conn, &start, "opening a transaction branch").await?;
        for sql in self.savepoints.replay() {
            run(
                &mut conn,
                &sql,
                "setting the transaction's savepoints on a new branch",
            )
            .await?;
        }
        tracing::debug!(
            connection_id = self.connection_id,
            backend = %backend,
            sql = start,
            "transaction branch opened"
        );
        if let Some(txn) = self.txn.as_mut() {
            txn.branches.push(Branch {
                backend,
                conn: None,
                is_written: false,
                savepoints_mark: self.savepoints.mark(),
            });
        }
        Ok(conn)
    }

    /// Close every branch without I/O (closing a connection rolls back a
    /// branch that is not prepared): the transaction is over.
    pub fn abandon_branches(&mut self) {
        if let Some(txn) = self.txn.take() {
            for b in txn.branches {
                if let Some(mut c) = b.conn {
                    c.is_broken = true;
                }
            }
        }
    }

    /// COMMIT a transaction with branches (`self.txn` is set). `Ok(None)`:
    /// committed; `Ok(Some(err))`: nothing committed, everything rolled
    /// back, `err` is the answer.
    pub async fn commit_all(&mut self) -> Result<Option<ErrPacket>, ProxyError> {
        let Some(mut txn) = self.txn.take() else {
            return Ok(None);
        };
        self.savepoints.clear();
        let Some(home) = self.pinned.take() else {
            self.txn = Some(txn);
            self.abandon_branches();
            self.pins = hscale_sql::Pins::NONE;
            return Err(ProxyError::Wrong(
                "internal: a transaction without its home connection".into(),
            ));
        };
        let branches: Vec<Branch> = std::mem::take(&mut txn.branches);
        if txn.is_read_only {
            for b in branches {
                if let Some(mut c) = b.conn {
                    if run(&mut c, "COMMIT", "COMMIT of a read-only branch")
                        .await
                        .is_err()
                    {
                        c.is_broken = true;
                    }
                }
            }
            return self.end_home(home, "COMMIT").await;
        }
        let mut writers = Vec::new();
        for b in branches {
            let Some(mut c) = b.conn else { continue };
            if b.is_written {
                writers.push((b.backend, c));
            } else {
                // Read only: nothing to commit.
                let x = txn.xid(b.backend);
                let released = async {
                    run(&mut c, &format!("XA END {x}"), "XA END").await?;
                    run(&mut c, &format!("XA ROLLBACK {x}"), "XA ROLLBACK").await
                }
                .await;
                if released.is_err() {
                    c.is_broken = true;
                }
            }
        }
        if writers.len() + usize::from(self.home_written) <= 1 {
            return self.commit_one_phase(home, &txn, writers).await;
        }
        // Phase one: every writing branch prepared.
        let mut prepared = Vec::with_capacity(writers.len());
        let mut writers = writers.into_iter();
        while let Some((backend, mut c)) = writers.next() {
            let x = txn.xid(backend);
            let r = async {
                run(&mut c, &format!("XA END {x}"), "XA END").await?;
                run(&mut c, &format!("XA PREPARE {x}"), "XA PREPARE").await
            }
            .await;
            match r {
                Ok(()) => prepared.push((backend, c)),
                Err(e) => {
                    tracing::info!(connection_id = self.connection_id, backend = %backend, error = %e, "transaction branch failed to prepare: rolling back");
                    let mut rest: Vec<(BackendId, PooledConn, bool)> =
                        prepared.into_iter().map(|(b, c)| (b, c, true)).collect();
                    rest.push((backend, c, false));
                    rest.extend(writers.map(|(b, c)| (b, c, false)));
                    self.abort(home, &txn, rest).await?;
                    return server_error(e).map(Some);
                }
            }
        }
        super::txn_hooks::pause(super::txn_hooks::PAUSE_AFTER_PREPARE_ENV).await;
        // The decision commits with the home branch, or not at all.
        let mut home = home;
        let decide = format!(
            "INSERT INTO {DECISIONS} (xid, state) VALUES ('{}', 'committed')",
            txn.gtrid
        );
        if let Err(e) = run(&mut home, &decide, "recording a commit decision").await {
            let rest = prepared.into_iter().map(|(b, c)| (b, c, true)).collect();
            self.abort(home, &txn, rest).await?;
            return server_error(e).map(Some);
        }
        let committed = home
            .command(&BackendConn::payload_for_query("COMMIT"))
            .await;
        let ok = match committed {
            Ok(Ok(ok)) => ok,
            Ok(Err(err)) => {
                let rest = prepared.into_iter().map(|(b, c)| (b, c, true)).collect();
                self.abort(home, &txn, rest).await?;
                return Ok(Some(err));
            }
            Err(e) => {
                // The decision may or may not have committed: the
                // prepared branches are left to recovery, which reads it
                // once the home connection is gone.
                for (_, mut c) in prepared {
                    c.is_broken = true;
                }
                tracing::warn!(connection_id = self.connection_id, gtrid = txn.gtrid, error = %e, "home backend lost while committing a decision: recovery completes the transaction");
                let _ = self.backend_lost(home, e.to_string());
                return Err(ProxyError::Refused(format!(
                    "the connection to the transaction's home backend was lost while it committed; the transaction commits or rolls back as a whole within the recovery interval ({e})"
                )));
            }
        };
        if let Some(ms) = std::env::var(PAUSE_AFTER_DECISION_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        // Phase two: the decision is durable; every branch commits.
        let mut is_done = true;
        for (i, (backend, mut c)) in prepared.into_iter().enumerate() {
            if i > 0 {
                super::txn_hooks::pause(super::txn_hooks::PAUSE_BETWEEN_COMMITS_ENV).await;
            }
            let x = txn.xid(backend);
            if let Err(e) = run(&mut c, &format!("XA COMMIT {x}"), "XA COMMIT").await {
                // Recovery commits it from the decision.
                tracing::warn!(connection_id = self.connection_id, gtrid = txn.gtrid, backend = %backend, error = %e, "branch not committed yet: left to recovery");
                c.is_broken = true;
                is_done = false;
            }
        }
        let outcome = Outcome {
            status: Some(ok.status),
            ok: Some(ok),
            ..Outcome::default()
        };
        self.finish(home, outcome, &Effects::default());
        self.home_written = false;
        if is_done {
            forget_decision(self.ctx.clone(), self.worker, txn.home, txn.gtrid);
        }
        Ok(None)
    }

    /// At most one branch wrote: it commits alone, the others were
    /// released already.
    async fn commit_one_phase(
        &mut self,
        home: PooledConn,
        txn: &Txn,
        mut writers: Vec<(BackendId, PooledConn)>,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        if let Some((backend, mut c)) = writers.pop() {
            let x = txn.xid(backend);
            let r = async {
                run(&mut c, &format!("XA END {x}"), "XA END").await?;
                run(&mut c, &format!("XA COMMIT {x} ONE PHASE"), "XA COMMIT").await
            }
            .await;
            if let Err(e) = r {
                c.is_broken = true;
                let rolled = self.end_home(home, "ROLLBACK").await;
                let err = server_error(e)?;
                rolled?;
                return Ok(Some(err));
            }
        }
        self.end_home(home, "COMMIT").await
    }

    /// End the home branch with `sql` (COMMIT or ROLLBACK) and keep or
    /// return its connection.
    pub(super) async fn end_home(
        &mut self,
        mut home: PooledConn,
        sql: &str,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        self.home_written = false;
        match home.command(&BackendConn::payload_for_query(sql)).await {
            Ok(Ok(ok)) => {
                let outcome = Outcome {
                    status: Some(ok.status),
                    ok: Some(ok),
                    ..Outcome::default()
                };
                self.finish(home, outcome, &Effects::default());
                Ok(None)
            }
            Ok(Err(err)) => {
                // A failed COMMIT rolls back; the server's flags are unknown here.
                self.finish(home, Outcome::default(), &Effects::default());
                self.pins.remove(hscale_sql::Pins::TRANSACTION);
                Ok(Some(err))
            }
            Err(e) => Err(self.backend_lost(home, e.to_string())),
        }
    }

    /// Roll back every branch (`prepared` tells which were prepared) and
    /// the home. A prepared branch that could not be rolled back gets an
    /// 'aborted' decision, so recovery rolls it back.
    async fn abort(
        &mut self,
        home: PooledConn,
        txn: &Txn,
        branches: Vec<(BackendId, PooledConn, bool)>,
    ) -> Result<(), ProxyError> {
        let mut is_left = false;
        for (backend, mut c, is_prepared) in branches {
            let x = txn.xid(backend);
            if !is_prepared {
                // Ends the branch if it is still active; fails harmlessly otherwise.
                let _ = c
                    .command(&BackendConn::payload_for_query(&format!("XA END {x}")))
                    .await;
            }
            let r = run(&mut c, &format!("XA ROLLBACK {x}"), "XA ROLLBACK").await;
            match r {
                Ok(()) => {}
                Err(ProxyError::Backend { err, .. }) if err.code == ER_XAER_NOTA => {}
                Err(e) => {
                    c.is_broken = true;
                    if is_prepared {
                        tracing::warn!(gtrid = txn.gtrid, backend = %backend, error = %e, "prepared branch not rolled back: left to recovery");
                        is_left = true;
                    }
                }
            }
        }
        if is_left {
            let sql = format!(
                "INSERT IGNORE INTO {DECISIONS} (xid, state) VALUES ('{}', 'aborted')",
                txn.gtrid
            );
            if let Ok(mut c) = self.ctx.pool(self.worker, txn.home).get(false).await {
                let _ = c.command(&BackendConn::payload_for_query(&sql)).await;
            }
        }
        self.end_home(home, "ROLLBACK").await.map(|_| ())
    }

    /// ROLLBACK a transaction with branches: every branch, then the home.
    pub async fn rollback_all(&mut self) -> Result<Option<ErrPacket>, ProxyError> {
        let Some(mut txn) = self.txn.take() else {
            return Ok(None);
        };
        self.savepoints.clear();
        let branches = std::mem::take(&mut txn.branches);
        for b in branches {
            let Some(mut c) = b.conn else { continue };
            let r = if txn.is_read_only {
                run(&mut c, "ROLLBACK", "ROLLBACK").await
            } else {
                let x = txn.xid(b.backend);
                let _ = c
                    .command(&BackendConn::payload_for_query(&format!("XA END {x}")))
                    .await;
                run(&mut c, &format!("XA ROLLBACK {x}"), "XA ROLLBACK").await
            };
            if r.is_err() {
                // Closing the connection rolls back a branch that is not prepared.
                c.is_broken = true;
            }
        }
        match self.pinned.take() {
            Some(home) => self.end_home(home, "ROLLBACK").await,
            None => Ok(None),
        }
    }
}

/// XAER_NOTA: unknown XID (or a branch still attached to another connection).
const ER_XAER_NOTA: u16 = 1397;

/// Delete a decision whose branches all committed, on a pooled connection
/// in the background: the client's COMMIT does not wait for it.
fn forget_decision(ctx: Arc<Context>, worker: usize, home: BackendId, gtrid: String) {
    tokio::spawn(async move {
        let sql = format!("DELETE FROM {DECISIONS} WHERE xid = '{gtrid}'");
        if let Ok(mut c) = ctx.pool(worker, home).get(false).await {
            if let Err(e) = run(&mut c, &sql, "deleting a commit decision").await {
                tracing::debug!(error = %e, "decision not deleted: recovery deletes it later");
            }
        }
    });
}

/// The statements that create the decisions table on a backend.
pub const DECISIONS_DDL: [&str; 2] = [
    "CREATE DATABASE IF NOT EXISTS `hscale`",
    "CREATE TABLE IF NOT EXISTS `hscale`.`decisions` (\
     xid VARBINARY(64) NOT NULL PRIMARY KEY, \
     state VARCHAR(16) NOT NULL, \
     created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB",
];

/// Create the decisions table on every backend (idempotent).
pub async fn ensure_decisions(ctx: &Arc<Context>, worker: usize) -> Result<(), ProxyError> {
    for backend in ctx.backend_ids() {
        let mut c = ctx.pool(worker, backend).get(false).await?;
        for sql in DECISIONS_DDL {
            run(&mut c, sql, "creating hscale.decisions").await?;
        }
    }
    Ok(())
}

/// One prepared branch found by `XA RECOVER`.
pub(crate) struct Found {
    pub backend: BackendId,
    pub gtrid: String,
    pub bqual: String,
    pub parts: Gtrid,
}

/// Recovery, one pass: commit or roll back the prepared branches of
/// hscale's transactions whose owners are gone, then delete decisions no
/// branch needs any more. Safe to run in many proxies at once: a decision
/// row never changes, and a branch is rolled back only when its home
/// connection, the only one that could write its decision, is gone.
pub async fn resolve(ctx: &Arc<Context>, worker: usize) -> Result<(), ProxyError> {
    let n = ctx.config.backends.len();
    let mut found = Vec::new();
    let mut is_complete = true;
    for backend in BackendId::all(n) {
        match recover(ctx, worker, backend).await {
            Ok(mut f) => found.append(&mut f),
            Err(e) => {
                tracing::debug!(backend = %backend, error = %e, "XA RECOVER failed");
                is_complete = false;
            }
        }
    }
    let mut gtrids: Vec<(String, Gtrid)> =
        found.iter().map(|f| (f.gtrid.clone(), f.parts)).collect();
    gtrids.sort_by(|a, b| a.0.cmp(&b.0));
    gtrids.dedup_by(|a, b| a.0 == b.0);
    for (gtrid, parts) in &gtrids {
        if parts.home.index() >= n {
            continue;
        }
        // Liveness first, then the decision: once the home connection is
        // gone no decision can appear.
        let is_alive = match home_alive(ctx, worker, *parts).await {
            Ok(a) => a,
            Err(_) => continue,
        };
        let decision = match decision_of(ctx, worker, parts.home, gtrid).await {
            Ok(d) => d,
            Err(_) => continue,
        };
        let verb = match decision.as_deref() {
            Some("committed") => "COMMIT",
            Some(_) => "ROLLBACK",
            None if !is_alive => "ROLLBACK",
            None => continue,
        };
        for f in found.iter().filter(|f| &f.gtrid == gtrid) {
            let sql = format!("XA {verb} {}", xid(&f.gtrid, &f.bqual));
            let Ok(mut c) = ctx.pool(worker, f.backend).get(false).await else {
                continue;
            };
            match run(&mut c, &sql, "recovering a prepared branch").await {
                Ok(()) => {
                    tracing::info!(
                        gtrid,
                        backend = %f.backend,
                        verb,
                        "recovered a prepared branch"
                    )
                }
                Err(e) => {
                    tracing::debug!(gtrid, backend = %f.backend, error = %e, "prepared branch not recovered yet (still attached to a connection?)")
                }
            }
        }
    }
    if is_complete {
        for backend in BackendId::all(n) {
            let _ = forget_old_decisions(ctx, worker, backend, &gtrids).await;
        }
    }
    Ok(())
}

/// hscale's prepared branches on `backend`.
pub(crate) async fn recover(
    ctx: &Context,
    worker: usize,
    backend: BackendId,
) -> Result<Vec<Found>, ProxyError> {
    let mut c = ctx.pool(worker, backend).get(false).await?;
    let rows = match c.query_rows("XA RECOVER").await? {
        Ok(r) => r.strings(),
        Err(err) => {
            return Err(ProxyError::Backend {
                backend: c.backend.to_string(),
                during: "hscale: XA RECOVER".into(),
                err,
            })
        }
    };
    let mut out = Vec::new();
    for row in rows {
        let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        if get(0).parse::<u32>().ok() != Some(FORMAT_ID) {
            continue;
        }
        let (Ok(glen), data) = (get(1).parse::<usize>(), get(3)) else {
            continue;
        };
        let Some((gtrid, bqual)) = data.split_at_checked(glen) else {
            continue;
        };
        if let Some(parts) = parse_gtrid(gtrid) {
            out.push(Found {
                backend,
                gtrid: gtrid.to_string(),
                bqual: bqual.to_string(),
                parts,
            });
        }
    }
    Ok(out)
}

/// Whether the home connection named in a gtrid still exists: its thread
/// id is live on the home backend, and the backend has not restarted since
/// the transaction began (thread ids restart with the server).
async fn home_alive(ctx: &Arc<Context>, worker: usize, g: Gtrid) -> Result<bool, ProxyError> {
    let mut c = ctx.pool(worker, g.home).get(false).await?;
    let sql = format!(
        "SELECT (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {}), \
         (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME')",
        g.thread
    );
    let rows = match c.query_rows(&sql).await? {
        Ok(r) => r.strings(),
        Err(err) => {
            return Err(ProxyError::Backend {
                backend: c.backend.to_string(),
                during: "hscale: checking a transaction's home connection".into(),
                err,
            })
        }
    };
    let cell = |i: usize| -> u64 {
        rows.first()
            .and_then(|r| r.get(i).cloned().flatten())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (count, uptime) = (cell(0), cell(1));
    let age = unix_secs().saturating_sub(g.created);
    Ok(count > 0 && uptime + CLOCK_SLACK_SECS >= age)
}

pub(crate) async fn decision_of(
    ctx: &Context,
    worker: usize,
    home: BackendId,
    gtrid: &str,
) -> Result<Option<String>, ProxyError> {
    let mut c = ctx.pool(worker, home).get(false).await?;
    let sql = format!("SELECT state FROM {DECISIONS} WHERE xid = '{gtrid}'");
    match c.query_rows(&sql).await? {
        Ok(r) => Ok(r
            .strings()
            .first()
            .and_then(|row| row.first().cloned().flatten())),
        Err(err) => Err(ProxyError::Backend {
            backend: c.backend.to_string(),
            during: "hscale: reading a commit decision".into(),
            err,
        }),
    }
}

/// Delete decisions older than the retention that no prepared branch
/// (in this pass's complete `XA RECOVER`) still needs.
async fn forget_old_decisions(
    ctx: &Arc<Context>,
    worker: usize,
    backend: BackendId,
    prepared: &[(String, Gtrid)],
) -> Result<(), ProxyError> {
    let mut c = ctx.pool(worker, backend).get(false).await?;
    let sql = format!(
        "SELECT xid FROM {DECISIONS} WHERE created < NOW(6) - INTERVAL {DECISION_RETENTION_SECS} SECOND LIMIT 1000"
    );
    let rows = match c.query_rows(&sql).await? {
        Ok(r) => r.strings(),
        Err(_) => return Ok(()),
    };
    for row in rows {
        let Some(x) = row.first().cloned().flatten() else {
            continue;
        };
        if prepared.iter().any(|(g, _)| *g == x) || parse_gtrid(&x).is_none() {
            continue;
        }
        run(
            &mut c,
            &format!("DELETE FROM {DECISIONS} WHERE xid = '{x}'"),
            "deleting an old decision",
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtrids_round_trip() {
        let g = "hscale:1:4294967295:1750000000:18446744073709551615";
        assert!(g.len() <= 64);
        assert_eq!(
            parse_gtrid(g),
            Some(Gtrid {
                home: BackendId::new(1),
                thread: u32::MAX,
                created: 1_750_000_000
            })
        );
        assert_eq!(parse_gtrid("other:1:2:3:4"), None);
        assert_eq!(parse_gtrid("hscale:1:2:3"), None);
        assert_eq!(parse_gtrid("hscale:1:2:3:4:5"), None);
    }

    #[test]
    fn read_only_begins() {
        let p = |s: &str| {
            let mut v = vec![3u8];
            v.extend_from_slice(s.as_bytes());
            is_read_only_begin(&v)
        };
        assert!(p("START TRANSACTION READ ONLY"));
        assert!(p("start transaction with consistent snapshot, read  only"));
        assert!(!p("START TRANSACTION READ WRITE"));
        assert!(!p("BEGIN"));
    }
}
