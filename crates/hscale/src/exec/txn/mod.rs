//! Transactions across backends: one branch (connection) per backend.
//! Owned by [`Bindings`] (`bindings.rs` calls [`Bindings::join`] when a
//! statement of a transaction reaches a backend it has no branch on yet);
//! the session calls [`Bindings::commit_all`] / [`Bindings::rollback_all`]
//! (`commit.rs`, the commit protocol) for COMMIT and ROLLBACK;
//! `recovery.rs::resolve` runs in every proxy's reload loop.
//!
//! ```text
//!  BEGIN ─► first statement: plain BEGIN on its backend (the home branch, as without this module)
//!        ─► a statement on another backend: join ─► XA START 'hscale:<home>:<thread>:<time>:<seq>','<backend>'
//!  COMMIT / ROLLBACK ─► commit.rs
//! ```
//!
//! The home branch is never an XA branch: a transaction that stays on one
//! backend costs exactly what it cost before (MariaDB cannot turn a running
//! transaction into an XA branch, so only branches opened later are XA).
//! That is why the decision lives on the home branch's backend, not always
//! on the main one: the home branch's COMMIT is the commit point, and the
//! decision row commits with it or not at all.

//!
//! The other files of the directory: `ends.rs` the statements a client
//! ends a transaction with (across branches, and RELEASE on one
//! connection), `checks.rs` whether a backend can hold an XA branch, `hooks.rs` the commit protocol's test pauses,
//! `savepoint.rs` savepoints kept in step on every branch, `lead_in.rs` a
//! deferred BEGIN or a branch's XA START sent with the statement that
//! needs it, `statement.rs` and `implicit.rs` a write over several parts
//! as one statement (all parts or none), `published.rs` what a session
//! shows `HSCALE SHOW TRANSACTIONS`, which `show.rs` answers.

pub mod checks;
mod commit;
mod ends;
pub mod hooks;
mod implicit;
pub mod lead_in;
mod published;
pub mod recovery;
pub mod savepoint;
pub(crate) mod show;
mod statement;

use hscale_route::BackendId;
use std::sync::Arc;

use hscale_wire::response::ErrPacket;

use super::Bindings;
use crate::backend::state::SessionVars;
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use lead_in::LeadIn;

/// The XA format id of hscale's branches (`hscl`).
pub const FORMAT_ID: u32 = 0x6873_636c;

/// The table that holds commit decisions, on every backend.
pub(crate) const DECISIONS: &str = "`hscale`.`decisions`";

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
    pub(super) fn xid(&self, backend: BackendId) -> String {
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

pub(super) fn xid(gtrid: &str, bqual: &str) -> String {
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

pub(super) fn unix_secs() -> u64 {
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
pub(super) async fn run(conn: &mut PooledConn, sql: &str, during: &str) -> Result<(), ProxyError> {
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
pub(super) fn server_error(e: ProxyError) -> Result<ErrPacket, ProxyError> {
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

    /// A transaction is open or pending (not merely a connection pinned
    /// by user variables, temporary tables, ...).
    pub fn holds_transaction(&self) -> bool {
        self.pending_begin.is_some()
            || self.txn.is_some()
            || self.pins.contains(hscale_sql::Pins::TRANSACTION)
            || self.pins.contains(hscale_sql::Pins::AUTOCOMMIT_OFF)
    }

    /// The open (or pending) transaction was started READ ONLY.
    pub fn is_read_only_transaction(&self) -> bool {
        self.is_read_only_txn
            || self
                .pending_begin
                .as_ref()
                .is_some_and(|b| is_read_only_begin(b))
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
    /// With `lead` (and the connection's multi-statement option on), the
    /// XA START and the savepoints are left there, to go in front of the
    /// branch's first statement (`lead_in.rs`); the branch is recorded now
    /// and forgotten if its XA START is refused.
    pub(super) async fn join(
        &mut self,
        backend: BackendId,
        lead: Option<&mut LeadIn>,
    ) -> Result<PooledConn, ProxyError> {
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
            if let Some(why) = checks::refusal(&self.ctx, self.worker, b).await? {
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
        let is_xa = !txn.is_read_only;
        let start = if is_xa {
            format!("XA START {}", txn.xid(backend))
        } else {
            "START TRANSACTION READ ONLY".to_string()
        };
        let mut conn = self
            .ctx
            .pool_as(self.worker, backend, self.identity)
            .get_as(self.tenant.claim(), self.is_found_rows)
            .await?;
        if let Some(err) = self.sync(&mut conn, false).await? {
            return Err(ProxyError::Backend {
                backend: conn.backend.to_string(),
                during: "hscale: opening a transaction branch".into(),
                err,
            });
        }
        // From here until its end is confirmed (`commit.rs`), the pool
        // closes this connection rather than keep or reset it.
        conn.is_xa_branch = is_xa;
        match lead.filter(|l| l.may_hold(&conn)) {
            Some(lead) => {
                lead.push(&start);
                for sql in self.savepoints.replay() {
                    lead.push(&sql);
                }
                lead.hold_branch(backend);
            }
            None => {
                run(&mut conn, &start, "opening a transaction branch").await?;
                for sql in self.savepoints.replay() {
                    run(
                        &mut conn,
                        &sql,
                        "setting the transaction's savepoints on a new branch",
                    )
                    .await?;
                }
            }
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
