//! The commit protocol of a transaction across backends (`mod.rs` owns its
//! branches; the session calls [`Bindings::commit_all`] and
//! [`Bindings::rollback_all`]). Every step is one round trip: each
//! connection's statements go out in one write (pipelined, [`Leg`]), every
//! connection of the step is sent to before any reply is read, so the
//! backends work at once.
//!
//! ```text
//!  COMMIT ─┬─ a branch lost its connection ─► everything rolled back, 1402 (XA_RBROLLBACK)
//!          ├─ READ ONLY ─► COMMIT every branch ─► the home's COMMIT
//!          ├─ at most one wrote ─► 1 trip: readers XA END + XA ROLLBACK, the writer
//!          │                       XA END + XA COMMIT ONE PHASE ─► the home's COMMIT
//!          └─ several wrote ─► trip 1: every writing branch XA END + XA PREPARE,
//!                              every reading one XA END + XA ROLLBACK, and the
//!                              home the decision INSERT (inside its transaction:
//!                              written, not yet committed)
//!                          ─► trip 2 (every prepare answered OK): the home's COMMIT,
//!                              the commit point: decision and home's writes durable at once
//!                          ─► trip 3: XA COMMIT every prepared branch
//!                          ─► the decision deleted in the background
//! ```
//!
//! Safety: no branch commits before the home's COMMIT returned, and the
//! home's COMMIT is sent only after every branch answered its PREPARE. A
//! proxy that dies before that COMMIT leaves the decision uncommitted; its
//! home connection closes, so the home backend rolls the row back with the
//! home's writes, and recovery (`recovery.rs`) rolls back the prepared
//! branches (presumed abort). Before the commit point any failure rolls
//! back every branch; a lost home connection during its COMMIT leaves the
//! prepared branches to recovery, which reads the decision once the home
//! connection is gone.

use crate::exec::scratch::StatementScratch;
use hscale_route::BackendId;
use std::sync::Arc;

use hscale_wire::response::ErrPacket;

use super::hooks::{
    self, PAUSE_AFTER_DECISION_ENV, PAUSE_AFTER_PREPARE_ENV, PAUSE_BETWEEN_COMMITS_ENV,
};
use super::{server_error, Txn, DECISIONS};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::exec::forward::Outcome;
use crate::exec::{Bindings, Effects};
use crate::runtime::Context;

/// XAER_NOTA: unknown XID (or a branch still attached to another connection).
const ER_XAER_NOTA: u16 = 1397;

/// One connection's share of a round trip: its statements, sent in one
/// write before any reply of the round trip is read.
struct Leg {
    backend: BackendId,
    conn: PooledConn,
    sql: Vec<String>,
    /// The server's answer to each statement, in order.
    replies: Vec<Result<(), ErrPacket>>,
    /// The connection failed (and is marked broken): what was sent may or
    /// may not have run.
    lost: Option<ProxyError>,
    /// The last statement ends the connection's XA branch (XA COMMIT or
    /// XA ROLLBACK): once it answers OK the pool may keep the connection.
    ends_branch: bool,
}

impl Leg {
    /// A leg whose last statement ends the branch on `conn`.
    fn new(backend: BackendId, conn: PooledConn, sql: Vec<String>) -> Leg {
        Leg {
            backend,
            conn,
            sql,
            replies: Vec::new(),
            lost: None,
            ends_branch: true,
        }
    }

    /// A leg that leaves the branch on `conn` (prepared) or has none (the
    /// home's decision).
    fn keeping(backend: BackendId, conn: PooledConn, sql: Vec<String>) -> Leg {
        Leg {
            ends_branch: false,
            ..Leg::new(backend, conn, sql)
        }
    }

    /// The first failure: the connection lost, or the first statement the
    /// server refused.
    fn failure(&mut self, during: &str) -> Option<ProxyError> {
        if let Some(e) = self.lost.take() {
            return Some(e);
        }
        let err = self.replies.iter().find_map(|r| r.as_ref().err())?.clone();
        Some(ProxyError::Backend {
            backend: self.conn.backend.to_string(),
            during: format!("hscale: {during}"),
            err,
        })
    }
}

/// Send every leg's statements, then read every reply.
async fn round_trip(legs: &mut [Leg]) {
    for leg in legs.iter_mut() {
        if let Err(e) = leg.conn.send_queries(&leg.sql).await {
            leg.lost = Some(e);
        }
    }
    for leg in legs.iter_mut().filter(|l| l.lost.is_none()) {
        for _ in 0..leg.sql.len() {
            match leg.conn.read_response().await {
                Ok(r) => leg.replies.push(r.map(|_| ())),
                Err(e) => {
                    leg.lost = Some(e);
                    break;
                }
            }
        }
        if leg.ends_branch && matches!(leg.replies.last(), Some(Ok(()))) {
            leg.conn.is_xa_branch = false;
        }
    }
}

/// Release branches that only read (nothing to commit) or whose
/// transaction is over: a failure only closes the connection, which
/// ends such a branch on its server.
fn release(mut legs: Vec<Leg>) {
    for leg in &mut legs {
        if leg.failure("ending a branch").is_some() {
            leg.conn.is_broken = true;
        }
    }
}

/// The answer to a COMMIT whose transaction lost a branch mid-statement:
/// its server rolled the branch back, so the transaction cannot commit.
fn branch_lost(backend: &str) -> ErrPacket {
    ErrPacket {
        code: hscale_wire::consts::code::ER_XA_RBROLLBACK,
        sql_state: *b"XA100",
        message: format!(
            "XA_RBROLLBACK: Transaction branch was rolled back (hscale: the transaction's connection to backend '{backend}' was closed by an earlier error; the whole transaction was rolled back)"
        ),
    }
}

impl Bindings {
    /// COMMIT a transaction with branches (`self.txn` is set). `Ok(None)`:
    /// committed; `Ok(Some(err))`: nothing committed, everything rolled
    /// back, `err` is the answer.
    pub async fn commit_all(
        &mut self,
        scratch: &mut StatementScratch,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        let Some(mut txn) = self.txn.take() else {
            return Ok(None);
        };
        self.savepoints.clear();
        let Some(home) = self.pinned.take() else {
            // The home's connection was closed by an earlier error: its
            // server rolled it back, and closing the branches rolls them back.
            let lost = self.ctx.config.backends[txn.home.index()].name.clone();
            self.txn = Some(txn);
            self.abandon_branches();
            self.pins = hscale_sql::Pins::NONE;
            self.home_written = false;
            return Ok(Some(branch_lost(&lost)));
        };
        let branches = std::mem::take(&mut txn.branches);
        // A branch whose connection was closed (an error left it with an
        // unread answer) was rolled back by its server: commit nothing.
        if let Some(b) = branches.iter().find(|b| b.conn.is_none()) {
            let lost = self.ctx.config.backends[b.backend.index()].name.clone();
            tracing::warn!(
                connection_id = self.connection_id,
                gtrid = txn.gtrid,
                backend = lost,
                "a branch was lost before COMMIT: rolling back"
            );
            let rest = branches
                .into_iter()
                .filter_map(|b| Some((b.backend, b.conn?, false)))
                .collect();
            self.abort(home, &txn, rest, scratch).await?;
            return Ok(Some(branch_lost(&lost)));
        }
        if txn.is_read_only {
            let mut legs: Vec<Leg> = branches
                .into_iter()
                .filter_map(|b| Some(Leg::new(b.backend, b.conn?, vec!["COMMIT".into()])))
                .collect();
            round_trip(&mut legs).await;
            release(legs);
            return self.end_home(home, "COMMIT", scratch).await;
        }
        let mut writers = Vec::new();
        let mut readers = Vec::new();
        for b in branches {
            let Some(c) = b.conn else { continue };
            let x = txn.xid(b.backend);
            if b.is_written {
                writers.push((b.backend, c));
            } else {
                // Read only: nothing to commit.
                readers.push(Leg::new(
                    b.backend,
                    c,
                    vec![format!("XA END {x}"), format!("XA ROLLBACK {x}")],
                ));
            }
        }
        if writers.len() + usize::from(self.home_written) <= 1 {
            return self
                .commit_one_phase(home, &txn, writers, readers, scratch)
                .await;
        }
        self.commit_two_phase(home, txn, writers, readers, scratch)
            .await
    }

    /// At most one branch wrote: it commits alone, in the round trip that
    /// releases the others; then the home.
    async fn commit_one_phase(
        &mut self,
        home: PooledConn,
        txn: &Txn,
        mut writers: Vec<(BackendId, PooledConn)>,
        readers: Vec<Leg>,
        scratch: &mut StatementScratch,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        let mut legs = readers;
        let writer = writers.pop().map(|(backend, c)| {
            let x = txn.xid(backend);
            let sql = if c.is_multi_statements {
                vec![format!("XA END {x};XA COMMIT {x} ONE PHASE")]
            } else {
                vec![format!("XA END {x}"), format!("XA COMMIT {x} ONE PHASE")]
            };
            Leg::new(backend, c, sql)
        });
        let has_writer = writer.is_some();
        legs.extend(writer);
        round_trip(&mut legs).await;
        let failed = if has_writer {
            legs.last_mut()
                .and_then(|w| w.failure("XA COMMIT ONE PHASE"))
        } else {
            None
        };
        release(legs);
        if let Some(e) = failed {
            let rolled = self.end_home(home, "ROLLBACK", scratch).await;
            let err = server_error(e)?;
            rolled?;
            return Ok(Some(err));
        }
        self.end_home(home, "COMMIT", scratch).await
    }

    /// Several wrote: prepare them with the decision written, commit the
    /// decision with the home, then commit every prepared branch.
    async fn commit_two_phase(
        &mut self,
        home: PooledConn,
        txn: Txn,
        writers: Vec<(BackendId, PooledConn)>,
        readers: Vec<Leg>,
        scratch: &mut StatementScratch,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        // Trip 1: every writer prepared (XA END and XA PREPARE in one
        // query where the connection takes several), the readers released,
        // and the decision written in the home's transaction, unless it
        // goes with the COMMIT in trip 2.
        let n = writers.len();
        let mut legs: Vec<Leg> = writers
            .into_iter()
            .map(|(backend, c)| {
                let x = txn.xid(backend);
                let sql = if c.is_multi_statements {
                    vec![format!("XA END {x};XA PREPARE {x}")]
                } else {
                    vec![format!("XA END {x}"), format!("XA PREPARE {x}")]
                };
                Leg::keeping(backend, c, sql)
            })
            .collect();
        let decide = format!(
            "INSERT INTO {DECISIONS} (xid, state) VALUES ('{}', 'committed')",
            txn.gtrid
        );
        // The decision and the COMMIT in one query: the server stops at a
        // refused INSERT, so the COMMIT never runs without its decision.
        let decides_with_commit = home.is_multi_statements;
        let mut home = Some(home);
        if !decides_with_commit {
            legs.extend(
                home.take()
                    .map(|h| Leg::keeping(txn.home, h, vec![decide.clone()])),
            );
        }
        let with_home = usize::from(home.is_none());
        legs.extend(readers);
        round_trip(&mut legs).await;
        let mut legs = legs.into_iter();
        let mut prepared = Vec::with_capacity(n);
        let mut unprepared = Vec::new();
        let mut failed = None;
        for mut leg in legs.by_ref().take(n) {
            match leg.failure("XA PREPARE") {
                None => prepared.push((leg.backend, leg.conn)),
                Some(e) => {
                    tracing::info!(connection_id = self.connection_id, backend = %leg.backend, error = %e, "transaction branch failed to prepare: rolling back");
                    // A connection lost during PREPARE may have left the
                    // branch prepared: treated as prepared, so an abort
                    // that cannot reach it records 'aborted' for recovery.
                    let maybe_prepared = matches!(e, ProxyError::BackendLost { .. });
                    unprepared.push((leg.backend, leg.conn, maybe_prepared));
                    failed.get_or_insert(e);
                }
            }
        }
        let mut decision_failed = None;
        for mut home_leg in legs.by_ref().take(with_home) {
            decision_failed = home_leg.failure("recording a commit decision");
            home = Some(home_leg.conn);
        }
        release(legs.collect());
        let Some(mut home) = home else {
            return Err(ProxyError::Wrong(
                "internal: the home left the commit".into(),
            ));
        };
        if let Some(e) = failed.or(decision_failed) {
            let mut rest: Vec<_> = prepared.into_iter().map(|(b, c)| (b, c, true)).collect();
            rest.extend(unprepared);
            self.abort(home, &txn, rest, scratch).await?;
            return server_error(e).map(Some);
        }
        hooks::pause(PAUSE_AFTER_PREPARE_ENV).await;
        // Trip 2: the commit point.
        let commit = if decides_with_commit {
            format!("{decide};COMMIT")
        } else {
            "COMMIT".to_string()
        };
        let ok = match home.command(&BackendConn::payload_for_query(&commit)).await {
            Ok(Ok(ok)) => ok,
            Ok(Err(err)) => {
                // Refused (the INSERT or the COMMIT): nothing committed.
                let rest = prepared.into_iter().map(|(b, c)| (b, c, true)).collect();
                self.abort(home, &txn, rest, scratch).await?;
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
        hooks::pause(PAUSE_AFTER_DECISION_ENV).await;
        // Trip 3: the decision is durable; every branch commits.
        let mut is_done = true;
        if hooks::millis(PAUSE_BETWEEN_COMMITS_ENV).is_some() && prepared.len() > 1 {
            let first = prepared.remove(0);
            is_done &= self.commit_prepared(&txn, vec![first]).await;
            hooks::pause(PAUSE_BETWEEN_COMMITS_ENV).await;
        }
        is_done &= self.commit_prepared(&txn, prepared).await;
        let outcome = Outcome {
            status: Some(ok.status),
            ok: Some(ok),
            ..Outcome::default()
        };
        self.finish(home, outcome, &Effects::default(), scratch);
        self.home_written = false;
        if is_done {
            forget_decision(self.ctx.clone(), self.worker, txn.home, txn.gtrid);
        }
        Ok(None)
    }

    /// XA COMMIT prepared branches, all at once. `false`: some are left to
    /// recovery, which commits them from the decision.
    async fn commit_prepared(&self, txn: &Txn, prepared: Vec<(BackendId, PooledConn)>) -> bool {
        let mut legs: Vec<Leg> = prepared
            .into_iter()
            .map(|(backend, c)| {
                let x = txn.xid(backend);
                Leg::new(backend, c, vec![format!("XA COMMIT {x}")])
            })
            .collect();
        round_trip(&mut legs).await;
        let mut is_done = true;
        for leg in &mut legs {
            if let Some(e) = leg.failure("XA COMMIT") {
                tracing::warn!(connection_id = self.connection_id, gtrid = txn.gtrid, backend = %leg.backend, error = %e, "branch not committed yet: left to recovery");
                leg.conn.is_broken = true;
                is_done = false;
            }
        }
        is_done
    }

    /// End the home branch with `sql` (COMMIT or ROLLBACK) and keep or
    /// return its connection.
    pub(crate) async fn end_home(
        &mut self,
        mut home: PooledConn,
        sql: &str,
        scratch: &mut StatementScratch,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        self.home_written = false;
        match home.command(&BackendConn::payload_for_query(sql)).await {
            Ok(Ok(ok)) => {
                let outcome = Outcome {
                    status: Some(ok.status),
                    ok: Some(ok),
                    ..Outcome::default()
                };
                self.finish(home, outcome, &Effects::default(), scratch);
                Ok(None)
            }
            Ok(Err(err)) => {
                // A failed COMMIT rolls back; the server's flags are unknown here.
                self.give_back(home);
                self.pins.remove(hscale_sql::Pins::TRANSACTION);
                Ok(Some(err))
            }
            Err(e) => Err(self.backend_lost(home, e.to_string())),
        }
    }

    /// Roll back every branch (`true`: prepared, or maybe) at once, then
    /// the home. A prepared branch that could not be rolled back gets an
    /// 'aborted' decision, so recovery rolls it back.
    async fn abort(
        &mut self,
        home: PooledConn,
        txn: &Txn,
        branches: Vec<(BackendId, PooledConn, bool)>,
        scratch: &mut StatementScratch,
    ) -> Result<(), ProxyError> {
        let mut legs = Vec::with_capacity(branches.len());
        let mut prepared = Vec::with_capacity(branches.len());
        for (backend, c, is_prepared) in branches {
            let x = txn.xid(backend);
            // XA END ends a branch still active; it fails harmlessly otherwise.
            let mut sql = vec![format!("XA END {x}")];
            if is_prepared {
                sql.clear();
            }
            sql.push(format!("XA ROLLBACK {x}"));
            legs.push(Leg::new(backend, c, sql));
            prepared.push(is_prepared);
        }
        round_trip(&mut legs).await;
        let mut is_left = false;
        for (leg, is_prepared) in legs.iter_mut().zip(prepared) {
            let is_rolled_back = leg.lost.is_none() && matches!(leg.replies.last(), Some(Ok(())))
                || matches!(leg.replies.last(), Some(Err(e)) if e.code == ER_XAER_NOTA);
            if is_rolled_back {
                // XAER_NOTA: no such branch (any more) on this connection.
                leg.conn.is_xa_branch = false;
            } else {
                leg.conn.is_broken = true;
                if is_prepared {
                    tracing::warn!(gtrid = txn.gtrid, backend = %leg.backend, "prepared branch not rolled back: left to recovery");
                    is_left = true;
                }
            }
        }
        drop(legs);
        // The home first: it may hold the decision row uncommitted, which
        // the 'aborted' row below would wait for.
        let ended = self.end_home(home, "ROLLBACK", scratch).await;
        if is_left {
            let sql = format!(
                "INSERT IGNORE INTO {DECISIONS} (xid, state) VALUES ('{}', 'aborted')",
                txn.gtrid
            );
            if let Ok(mut c) = self.ctx.pool(self.worker, txn.home).get(false).await {
                let _ = c.command(&BackendConn::payload_for_query(&sql)).await;
            }
        }
        ended.map(|_| ())
    }

    /// ROLLBACK a transaction with branches: every branch at once, then the home.
    pub async fn rollback_all(
        &mut self,
        scratch: &mut StatementScratch,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        let Some(mut txn) = self.txn.take() else {
            return Ok(None);
        };
        self.savepoints.clear();
        let mut legs: Vec<Leg> = std::mem::take(&mut txn.branches)
            .into_iter()
            .filter_map(|b| {
                let sql = if txn.is_read_only {
                    vec!["ROLLBACK".to_string()]
                } else {
                    let x = txn.xid(b.backend);
                    vec![format!("XA END {x}"), format!("XA ROLLBACK {x}")]
                };
                Some(Leg::new(b.backend, b.conn?, sql))
            })
            .collect();
        round_trip(&mut legs).await;
        for leg in &mut legs {
            // Only the last statement matters: XA END fails harmlessly on
            // a branch that already ended. Closing the connection rolls
            // back a branch that is not prepared.
            if leg.lost.is_some() || !matches!(leg.replies.last(), Some(Ok(()))) {
                leg.conn.is_broken = true;
            }
        }
        drop(legs);
        match self.pinned.take() {
            Some(home) => self.end_home(home, "ROLLBACK", scratch).await,
            None => Ok(None),
        }
    }
}

/// How long finished decisions gather before one statement deletes them.
const FORGET_GATHER_MS: u64 = 50;

/// At most this many decisions per DELETE.
const FORGET_BATCH: usize = 256;

/// Delete a decision whose branches all committed, in the background: the
/// client's COMMIT does not wait for it. The worker's finished decisions
/// gather for a few milliseconds and go in one DELETE per home backend,
/// on a pooled connection; one that is not deleted (an error, a stopped
/// proxy) is deleted by recovery once it is old (`recovery.rs`).
fn forget_decision(ctx: Arc<Context>, worker: usize, home: BackendId, gtrid: String) {
    let Some(slot) = ctx.finished_decisions.get(worker) else {
        return;
    };
    let is_started = {
        let mut f = slot.lock().unwrap_or_else(|p| p.into_inner());
        f.pending.push((home, gtrid));
        std::mem::replace(&mut f.is_deleting, true)
    };
    if !is_started {
        tokio::spawn(forget_finished(ctx, worker));
    }
}

/// Delete the worker's finished decisions until none is left.
async fn forget_finished(ctx: Arc<Context>, worker: usize) {
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(FORGET_GATHER_MS)).await;
        let mut batch = {
            let Some(slot) = ctx.finished_decisions.get(worker) else {
                return;
            };
            let mut f = slot.lock().unwrap_or_else(|p| p.into_inner());
            if f.pending.is_empty() {
                f.is_deleting = false;
                return;
            }
            std::mem::take(&mut f.pending)
        };
        batch.sort_unstable();
        for chunk in batch.chunk_by(|a, b| a.0 == b.0) {
            for part in chunk.chunks(FORGET_BATCH) {
                if let Ok(mut c) = ctx.pool(worker, part[0].0).get(false).await {
                    if let Err(e) = delete_each(&mut c, part).await {
                        tracing::debug!(error = %e, "decisions not deleted: recovery deletes them later");
                    }
                }
            }
        }
    }
}

/// Delete `decisions` by their keys, one autocommitted `DELETE ... WHERE
/// xid = '...'` each, pipelined in one write. Each locks its own row only
/// (a unique key's equality): never another proxy's decision row that is
/// written but not yet committed (a proxy paused between its decision and
/// its home's COMMIT), and no gap that a new decision INSERT would wait
/// for. One `WHERE xid IN (...)` over the small table ran as a full scan
/// (EXPLAIN: ALL), waited on such a row for innodb_lock_wait_timeout and,
/// in REPEATABLE READ, held next-key locks meanwhile that queued every
/// proxy's decision INSERT on that backend behind it.
async fn delete_each(
    c: &mut PooledConn,
    decisions: &[(BackendId, String)],
) -> Result<(), ProxyError> {
    let sqls: Vec<String> = decisions
        .iter()
        .map(|(_, gtrid)| format!("DELETE FROM {DECISIONS} WHERE xid = '{gtrid}'"))
        .collect();
    c.send_queries(&sqls).await?;
    let mut failed = None;
    for _ in &sqls {
        if let Err(err) = c.read_response().await? {
            failed.get_or_insert(err);
        }
    }
    match failed {
        None => Ok(()),
        Some(err) => Err(ProxyError::Backend {
            backend: c.backend.to_string(),
            during: "hscale: deleting commit decisions".into(),
            err,
        }),
    }
}
