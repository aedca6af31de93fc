//! Statements that open a transaction on a connection, sent in the same
//! query as the statement that needs them (one round trip instead of two):
//! a deferred BEGIN (`Bindings::sync`), a new branch's XA START and the
//! savepoints set on it (`Bindings::join`). Only the two paths that stream
//! one text statement straight through (`Exec::execute_once`,
//! `Exec::run_single`) ask for them ([`LeadIn::allowed`]); every other
//! caller gets them run on their own, as before.
//!
//! ```text
//!  lease_holding ─► LeadIn ["XA START x", "SAVEPOINT a"] ─► COM_QUERY "XA START x;SAVEPOINT a;<statement>"
//!                                                        ─► one OK per lead-in statement (read here)
//!                                                        ─► the statement's answer, forwarded as usual
//! ```
//!
//! Why it is safe: a server runs the statements of one multi-statement
//! query in order and stops at the first error, so the statement never
//! runs when its BEGIN or XA START was refused (two pipelined queries would
//! run it anyway, outside the transaction). That needs the connection's
//! multi-statement option on, which is the client's own setting
//! (`SessionState::is_multi_statements`): with it off, the lead-in runs as
//! its own query. A BEGIN is held only in the plain forms below, whose text
//! cannot end in a comment or an empty statement that would swallow or
//! break the statement appended to it. Tests: `tests/transactions/round_trips.rs`
//! (the queries each backend logs; the server's stop at a refused BEGIN or
//! XA START).

use hscale_route::BackendId;
use hscale_sql::Pins;
use hscale_wire::consts::com;
use hscale_wire::response::ErrPacket;

use bytes::{BufMut, Bytes, BytesMut};

use crate::backend::PooledConn;
use crate::error::ProxyError;
use crate::exec::Bindings;

/// Statements held back to go in front of the next query on one connection.
#[derive(Debug, Default)]
pub struct LeadIn {
    /// The caller sends a text statement next and reads the lead-in's
    /// answers ([`Bindings::after_lead_in`]).
    is_allowed: bool,
    /// The statements, joined by `;`.
    sql: String,
    count: usize,
    /// The deferred BEGIN held here: the session is in a transaction once
    /// it answered OK.
    begin: Option<Bytes>,
    /// The branch whose XA START is held here: forgotten if it fails.
    branch: Option<BackendId>,
}

/// The deferred BEGINs held for the next statement, as the server is sent them.
const PLAIN_BEGINS: [&str; 5] = [
    "BEGIN",
    "BEGIN WORK",
    "START TRANSACTION",
    "START TRANSACTION READ ONLY",
    "START TRANSACTION READ WRITE",
];

/// `payload` (a COM_QUERY) is one of the plain BEGINs: its canonical text.
fn plain_begin(payload: &[u8]) -> Option<&'static str> {
    let text = std::str::from_utf8(payload.get(1..)?).ok()?;
    let words = text.split_ascii_whitespace();
    PLAIN_BEGINS.into_iter().find(|b| {
        let mut want = b.split(' ');
        let mut got = words.clone();
        loop {
            match (want.next(), got.next()) {
                (None, None) => return true,
                (Some(w), Some(g)) if w.eq_ignore_ascii_case(g) => {}
                _ => return false,
            }
        }
    })
}

impl LeadIn {
    /// A holder the caller will send with a text statement.
    pub fn allowed() -> LeadIn {
        LeadIn {
            is_allowed: true,
            ..LeadIn::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether `conn` may hold statements here instead of running them.
    pub(in crate::exec) fn may_hold(&self, conn: &PooledConn) -> bool {
        self.is_allowed && conn.is_multi_statements
    }

    pub(in crate::exec) fn push(&mut self, sql: &str) {
        if self.count > 0 {
            self.sql.push(';');
        }
        self.sql.push_str(sql);
        self.count += 1;
    }

    /// Hold a deferred BEGIN, if it is a plain one.
    pub(in crate::exec) fn hold_begin(&mut self, conn: &PooledConn, begin: &Bytes) -> bool {
        match plain_begin(begin).filter(|_| self.may_hold(conn)) {
            Some(text) => {
                self.push(text);
                self.begin = Some(begin.clone());
                true
            }
            None => false,
        }
    }

    pub(in crate::exec) fn hold_branch(&mut self, backend: BackendId) {
        self.branch = Some(backend);
    }

    /// The COM_QUERY that runs the lead-in, then `sql`.
    pub fn query_with(&self, sql: &[u8]) -> BytesMut {
        let mut p = BytesMut::with_capacity(2 + self.sql.len() + sql.len());
        p.put_u8(com::QUERY);
        p.put_slice(self.sql.as_bytes());
        p.put_u8(b';');
        p.put_slice(sql);
        p
    }
}

impl Bindings {
    /// Read the answers of a lead-in sent in front of a statement
    /// ([`LeadIn::query_with`]), before the statement's own answer.
    /// `Ok(Err(err))`: a lead-in statement was refused, so the statement
    /// did not run; `conn` was given back and `err` is the answer.
    pub async fn after_lead_in(
        &mut self,
        mut conn: PooledConn,
        lead: LeadIn,
    ) -> Result<Result<PooledConn, ErrPacket>, ProxyError> {
        // The server may hold the lead-in's OKs until the statement behind
        // it ends: KILL QUERY must reach the connection meanwhile.
        let running = self.running(&conn, conn.pool().backend_id);
        for _ in 0..lead.count {
            match conn.read_one_reply().await {
                Ok(Ok(_)) => {}
                Ok(Err(err)) => {
                    drop(running);
                    self.lead_in_refused(conn, lead);
                    return Ok(Err(err));
                }
                Err(e) => {
                    drop(running);
                    return Err(self.backend_lost(conn, e.to_string()));
                }
            }
        }
        drop(running);
        if let Some(begin) = lead.begin {
            self.pins.insert(Pins::TRANSACTION);
            self.is_read_only_txn = super::is_read_only_begin(&begin);
        }
        Ok(Ok(conn))
    }

    /// A lead-in statement was refused: the BEGIN did not open a
    /// transaction, or the branch was never started (it is forgotten, and
    /// its connection closed rather than trusted again).
    fn lead_in_refused(&mut self, mut conn: PooledConn, lead: LeadIn) {
        match lead.branch {
            Some(backend) => {
                if let Some(txn) = self.txn.as_mut() {
                    txn.branches
                        .retain(|b| !(b.backend == backend && b.conn.is_none()));
                }
                conn.is_broken = true;
            }
            None => self.give_back(conn),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::plain_begin;

    #[test]
    fn only_plain_begins_are_held() {
        let p = |s: &str| {
            let mut v = vec![3u8];
            v.extend_from_slice(s.as_bytes());
            plain_begin(&v)
        };
        assert_eq!(p("BEGIN"), Some("BEGIN"));
        assert_eq!(p("  begin  work\n"), Some("BEGIN WORK"));
        assert_eq!(
            p("start transaction read only"),
            Some("START TRANSACTION READ ONLY")
        );
        assert_eq!(p("BEGIN;"), None);
        assert_eq!(p("BEGIN -- x"), None);
        assert_eq!(p("BEGIN /* x */"), None);
        assert_eq!(p("START TRANSACTION WITH CONSISTENT SNAPSHOT"), None);
        assert_eq!(p("BEGIN WORK WORK"), None);
    }
}
