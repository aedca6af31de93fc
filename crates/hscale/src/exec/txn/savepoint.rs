//! Savepoints of a transaction, kept in step on every branch.
//!
//! The session's savepoints are tracked as the home backend reports them
//! (`Bindings::finish` applies a [`SavepointOp`] that succeeded), with
//! MariaDB's rules: `SAVEPOINT x` drops `x` and every later savepoint, then
//! sets `x`; `ROLLBACK TO x` drops the later ones and keeps `x`;
//! `RELEASE SAVEPOINT x` drops `x` and the later ones. Names compare
//! without case.
//!
//! ```text
//!  a branch joins ─► XA START ─► SAVEPOINT each tracked name (its state there is empty)
//!  SAVEPOINT / ROLLBACK TO / RELEASE with branches ─► home first, then every branch
//!  ROLLBACK TO x ─► a branch that joined after x holds nothing any more: no commit of its own
//! ```

use crate::exec::scratch::StatementScratch;
use hscale_wire::response::ErrPacket;

use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::exec::Bindings;

/// A statement that changes the savepoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SavepointOp {
    Set(Savepoint),
    RollbackTo(Savepoint),
    Release(Savepoint),
    /// COMMIT or ROLLBACK: the transaction and its savepoints are over.
    Clear,
}

/// One savepoint: its name as written (replayed on new branches) and as
/// compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Savepoint {
    pub written: String,
    key: String,
    /// When it was set, in the session's count of savepoints set.
    seq: u64,
}

/// The savepoints of the open transaction, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Savepoints {
    list: Vec<Savepoint>,
    /// Savepoints set so far (numbers each one).
    set: u64,
}

impl SavepointOp {
    /// `SAVEPOINT x`, `ROLLBACK [WORK] TO [SAVEPOINT] x` or
    /// `RELEASE SAVEPOINT x` (one statement, an optional `;`), else `None`.
    pub fn parse(sql: &str) -> Option<SavepointOp> {
        let sql = sql.trim().trim_end_matches(';').trim_end();
        let (first, rest) = word(sql)?;
        match first.to_ascii_uppercase().as_str() {
            "SAVEPOINT" => name(rest).map(SavepointOp::Set),
            "RELEASE" => {
                let (w, rest) = word(rest)?;
                w.eq_ignore_ascii_case("SAVEPOINT")
                    .then(|| name(rest))
                    .flatten()
                    .map(SavepointOp::Release)
            }
            "ROLLBACK" => {
                let (mut w, mut rest) = word(rest)?;
                if w.eq_ignore_ascii_case("WORK") {
                    (w, rest) = word(rest)?;
                }
                if !w.eq_ignore_ascii_case("TO") {
                    return None;
                }
                if let Some((w, after)) = word(rest) {
                    if w.eq_ignore_ascii_case("SAVEPOINT") && !after.trim().is_empty() {
                        rest = after;
                    }
                }
                name(rest).map(SavepointOp::RollbackTo)
            }
            _ => None,
        }
    }
}

/// The first word of `s` (letters, digits, `_`, `$`) and what follows.
fn word(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(s.len());
    (end > 0).then(|| (&s[..end], &s[end..]))
}

/// A savepoint name that is all of `s`: a plain or back-quoted identifier.
fn name(s: &str) -> Option<Savepoint> {
    let s = s.trim();
    let key = if let Some(inner) = s.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        if inner.is_empty() || inner.replace("``", "").contains('`') {
            return None;
        }
        inner.replace("``", "`")
    } else {
        let (w, rest) = word(s)?;
        if !rest.is_empty() {
            return None;
        }
        w.to_string()
    };
    Some(Savepoint {
        written: s.to_string(),
        key: key.to_lowercase(),
        seq: 0,
    })
}

impl Savepoints {
    fn position(&self, sp: &Savepoint) -> Option<usize> {
        self.list.iter().position(|s| s.key == sp.key)
    }

    /// Apply a statement the home backend accepted.
    pub fn apply(&mut self, op: &SavepointOp) {
        match op {
            SavepointOp::Set(sp) => {
                if let Some(i) = self.position(sp) {
                    self.list.truncate(i);
                }
                self.set += 1;
                self.list.push(Savepoint {
                    seq: self.set,
                    ..sp.clone()
                });
            }
            SavepointOp::RollbackTo(sp) => {
                if let Some(i) = self.position(sp) {
                    self.list.truncate(i + 1);
                }
            }
            SavepointOp::Release(sp) => {
                if let Some(i) = self.position(sp) {
                    self.list.truncate(i);
                }
            }
            SavepointOp::Clear => self.list.clear(),
        }
    }

    /// What a branch joining now records: every savepoint numbered up to
    /// this is set on it before any of its work.
    pub fn mark(&self) -> u64 {
        self.set
    }

    /// Whether rolling back to `sp` leaves a branch that joined at `mark`
    /// with nothing: `sp` was set before the branch joined (and so set on
    /// it ahead of all its work).
    fn empties(&self, sp: &Savepoint, mark: u64) -> bool {
        self.position(sp).is_some_and(|i| self.list[i].seq <= mark)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// A savepoint `name` (compared without case) is set.
    pub fn has(&self, name: &str) -> bool {
        self.list.iter().any(|s| s.key.eq_ignore_ascii_case(name))
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn clear(&mut self) {
        self.list.clear();
    }

    /// The statements that set every savepoint again, oldest first.
    pub fn replay(&self) -> impl Iterator<Item = String> + '_ {
        self.list.iter().map(|s| format!("SAVEPOINT {}", s.written))
    }
}

impl Bindings {
    /// A savepoint statement in a transaction with branches: run on the
    /// home branch, then on every other branch. `Ok(Some(err))`: the home
    /// refused it (nothing changed) or a branch did (the transaction is
    /// rolled back: its branches no longer agree).
    pub async fn savepoint_all(
        &mut self,
        sql: &str,
        op: &SavepointOp,
        scratch: &mut StatementScratch,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        let payload = BackendConn::payload_for_query(sql);
        tracing::debug!(
            connection_id = self.connection_id,
            sql,
            branches = self.txn.as_ref().map_or(0, |t| t.branches.len()),
            "savepoint on every branch"
        );
        let Some(home) = self.pinned.as_mut() else {
            return Err(ProxyError::Wrong(
                "internal: a transaction branch without a home connection".into(),
            ));
        };
        match home.command(&payload).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => return Ok(Some(err)),
            Err(e) => {
                let Some(conn) = self.pinned.take() else {
                    return Err(ProxyError::Wrong("internal: home connection gone".into()));
                };
                self.abandon_branches();
                return Err(self.backend_lost(conn, e.to_string()));
            }
        }
        let rolled_back_to = match op {
            SavepointOp::RollbackTo(sp) => Some(sp),
            _ => None,
        };
        let savepoints = &self.savepoints;
        let mut failed = None;
        if let Some(txn) = self.txn.as_mut() {
            for branch in &mut txn.branches {
                let Some(c) = branch.conn.as_mut() else {
                    continue;
                };
                match c.command(&payload).await {
                    Ok(Ok(_)) => {
                        // Joined after the savepoint rolled back to: the
                        // branch holds nothing of the transaction now.
                        if rolled_back_to
                            .is_some_and(|sp| savepoints.empties(sp, branch.savepoints_mark))
                        {
                            branch.is_written = false;
                        }
                    }
                    Ok(Err(err)) => {
                        tracing::debug!(
                            connection_id = self.connection_id,
                            backend = %branch.backend,
                            sql,
                            error = err.message,
                            "a branch refused a savepoint statement"
                        );
                        failed = Some(err);
                        break;
                    }
                    Err(e) => {
                        c.is_broken = true;
                        failed = Some(ErrPacket {
                            code: hscale_wire::consts::code::ER_XA_RBROLLBACK,
                            sql_state: *b"XA100",
                            message: format!(
                                "XA_RBROLLBACK: Transaction branch was rolled back (hscale: a branch was lost during {sql} ({e}); the whole transaction was rolled back)"
                            ),
                        });
                        break;
                    }
                }
            }
        }
        if let Some(err) = failed {
            // The branches disagree about the savepoint: the transaction
            // cannot go on.
            self.rollback_all(scratch).await?;
            return Ok(Some(err));
        }
        self.savepoints.apply(op);
        Ok(None)
    }
}

/// A savepoint statement (one statement that may be one, checked cheaply
/// first): the change it makes to the session's savepoints.
pub fn savepoint_op(facts: &hscale_sql::Facts, sql: &str) -> Option<SavepointOp> {
    use hscale_sql::Kind;
    if matches!(facts.kind, Kind::Commit | Kind::Rollback)
        && hscale_sql::transaction::is_plain_end(sql)
    {
        return Some(SavepointOp::Clear);
    }
    let may_be = facts.statements == 1
        && match facts.kind {
            Kind::Rollback => true,
            Kind::Other => sql
                .trim_start()
                .get(..4)
                .is_some_and(|w| w.eq_ignore_ascii_case("SAVE") || w.eq_ignore_ascii_case("RELE")),
            _ => false,
        };
    may_be.then(|| SavepointOp::parse(sql)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> SavepointOp {
        SavepointOp::parse(&format!("SAVEPOINT {s}")).expect("parses")
    }

    #[test]
    fn parses_the_three_statements() {
        assert!(
            matches!(SavepointOp::parse("savepoint a1"), Some(SavepointOp::Set(s)) if s.written == "a1")
        );
        assert!(
            matches!(SavepointOp::parse("ROLLBACK TO a"), Some(SavepointOp::RollbackTo(s)) if s.written == "a")
        );
        assert!(
            matches!(SavepointOp::parse("rollback work to savepoint `x y`;"), Some(SavepointOp::RollbackTo(s)) if s.written == "`x y`")
        );
        assert!(
            matches!(SavepointOp::parse("ROLLBACK TO savepoint"), Some(SavepointOp::RollbackTo(s)) if s.written == "savepoint")
        );
        assert!(
            matches!(SavepointOp::parse(" RELEASE SAVEPOINT b "), Some(SavepointOp::Release(s)) if s.written == "b")
        );
        for no in [
            "ROLLBACK",
            "ROLLBACK WORK",
            "ROLLBACK AND CHAIN",
            "RELEASE b",
            "SAVEPOINT",
            "SAVEPOINT a b",
            "SAVEPOINT a; SELECT 1",
            "SELECT 1",
            "SAVEPOINT `a`b`",
        ] {
            assert_eq!(SavepointOp::parse(no), None, "{no}");
        }
    }

    #[test]
    fn follows_mariadb_rules() {
        let mut s = Savepoints::default();
        s.apply(&set("a"));
        s.apply(&set("b"));
        s.apply(&set("c"));
        assert_eq!(s.len(), 3);
        // ROLLBACK TO keeps the savepoint, drops the later ones.
        s.apply(&SavepointOp::parse("ROLLBACK TO B").expect("parses"));
        assert_eq!(
            s.replay().collect::<Vec<_>>(),
            ["SAVEPOINT a", "SAVEPOINT b"]
        );
        // Setting a name again drops it and every later one.
        s.apply(&set("c"));
        s.apply(&set("`A`"));
        assert_eq!(s.replay().collect::<Vec<_>>(), ["SAVEPOINT `A`"]);
        s.apply(&set("d"));
        s.apply(&SavepointOp::parse("RELEASE SAVEPOINT a").expect("parses"));
        assert!(s.is_empty());
        // Unknown names change nothing (the server refuses them).
        s.apply(&set("e"));
        s.apply(&SavepointOp::parse("ROLLBACK TO nope").expect("parses"));
        assert_eq!(s.len(), 1);
        s.apply(&SavepointOp::Clear);
        assert!(s.is_empty());
    }

    #[test]
    fn a_branch_is_emptied_only_by_a_savepoint_older_than_it() {
        let mut s = Savepoints::default();
        s.apply(&set("a"));
        let joined = s.mark();
        let sp = |n: &str| match set(n) {
            SavepointOp::Set(sp) => sp,
            _ => unreachable!(),
        };
        assert!(s.empties(&sp("a"), joined));
        // Set after the branch joined (it may have written before): no.
        s.apply(&set("b"));
        assert!(!s.empties(&sp("b"), joined));
        // Dropped and set again after the join: no, though it sits where
        // an older one was.
        s.apply(&SavepointOp::parse("RELEASE SAVEPOINT a").expect("parses"));
        s.apply(&set("c"));
        assert!(!s.empties(&sp("c"), joined));
        assert!(!s.empties(&sp("a"), joined));
    }
}
