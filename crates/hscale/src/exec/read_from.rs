//! Where a session's reads go: its backends' primaries (the default), or
//! their replicas by an explicit choice (`[[users]] read_from =
//! "replica"`, or `SET hscale_read_from = 'replica'` in the session).
//!
//! A session that chose replicas sends a statement to a usable replica of
//! a backend (`backend/replicas.rs`) only when all of this holds:
//! - it is a plain read: one `SELECT` (or `WITH`, `VALUES`, `TABLE`) that
//!   pins nothing (no user variables, GET_LOCK, SQL_CALC_FOUND_ROWS),
//!   calls no `LAST_INSERT_ID`, `FOUND_ROWS`, `ROW_COUNT`, lock or
//!   sequence function, and has no locking clause (`FOR UPDATE`, `LOCK IN
//!   SHARE MODE`) and no `INTO` ([`is_plain_read`]);
//! - the session is outside a transaction (none open or pending, autocommit
//!   on) and holds no pinned connection;
//! - the session never wrote on that backend (read-your-writes): any
//!   statement other than a read, SET, USE or SHOW that reached a backend,
//!   and every statement of a transaction, marks the backends it ran on,
//!   which the session reads from their primaries from then on, until it
//!   ends (a reset of the connection keeps the marks). Writes are noted
//!   only while the session reads from replicas (noting them always would
//!   cost every session a little per statement);
//! - a replica of the backend is usable now; if none is, or the connection
//!   to it fails, the primary serves (never an error for a replica).
//!
//! A read that finds a table missing on a replica (behind a partition
//! change's rename) runs again on the primary (`Bindings::after_stale_route`).
//! Waiting for the replica to reach the session's last write
//! (`MASTER_GTID_WAIT`) instead of reading the primary is not done yet.
//!
//! Cost for the sessions that read from primaries: the session checks
//! [`ReadFrom::is_replica`] once per statement, and `Bindings::acquire`
//! compares [`ReadFrom::statement`] once per connection it borrows.

use hscale_route::BackendId;
use hscale_sql::{Facts, Kind, Mentions, Pins};

use super::bindings::Bindings;
use crate::backend::PooledConn;
use crate::config::{ReadFromName, UserConfig};

/// What the running statement does about replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Route {
    /// Primaries, and nothing to note (every statement of a session that
    /// reads from primaries; SET, SHOW, locking reads of the others).
    #[default]
    Primary,
    /// A plain read: a usable replica of each backend it reaches that the
    /// session did not write on.
    Replica,
    /// It may write: primaries, and every backend it reaches is marked
    /// written.
    Writes,
}

/// A session's choice of where reads go, and what it wrote.
#[derive(Debug, Clone, Default)]
pub struct ReadFrom {
    /// The session reads from replicas (its user's `read_from`, or `SET
    /// hscale_read_from`).
    pub is_replica: bool,
    /// The user's choice, which a reset of the connection brings back.
    is_user_replica: bool,
    /// Set per statement by the session while `is_replica`; `Primary`
    /// between statements.
    pub statement: Route,
    /// Backends the session wrote on (by `BackendId::index`).
    written: Vec<bool>,
    /// Turns among several replicas of a backend.
    turn: usize,
}

impl ReadFrom {
    /// As user `user` starts: its `read_from`.
    pub fn for_user(user: Option<&UserConfig>) -> ReadFrom {
        let is_replica = user.and_then(|u| u.read_from) == Some(ReadFromName::Replica);
        ReadFrom {
            is_replica,
            is_user_replica: is_replica,
            ..ReadFrom::default()
        }
    }

    /// COM_RESET_CONNECTION: the user's choice again; what the session
    /// wrote stays marked.
    pub fn reset(&mut self) {
        self.is_replica = self.is_user_replica;
        self.statement = Route::Primary;
    }

    pub fn has_written(&self, backend: BackendId) -> bool {
        self.written.get(backend.index()).copied().unwrap_or(false)
    }

    fn note_write(&mut self, backend: BackendId) {
        let i = backend.index();
        if self.written.len() <= i {
            self.written.resize(i + 1, false);
        }
        self.written[i] = true;
    }

    /// A read that met a missing table: when it may have run on a
    /// replica, it runs again on the primaries (true).
    pub fn retry_on_primary(&mut self) -> bool {
        let was = self.statement == Route::Replica;
        if was {
            self.statement = Route::Primary;
        }
        was
    }

    /// `SET hscale_read_from` (`parse_set`): the value, or the
    /// error 1231 a server gives a value it does not take.
    pub fn set(
        &mut self,
        value: Result<Option<bool>, String>,
    ) -> Result<(), hscale_wire::response::ErrPacket> {
        match value {
            Ok(v) => {
                self.is_replica = v.unwrap_or(self.is_user_replica);
                Ok(())
            }
            Err(v) => Err(hscale_wire::response::ErrPacket {
                code: 1231,
                sql_state: *b"42000",
                message: format!(
                    "Variable 'hscale_read_from' can't be set to the value of '{}' (hscale takes 'replica', 'primary' or DEFAULT, alone in its SET)",
                    v.trim_matches('\'')
                ),
            }),
        }
    }

    /// The setting as `SELECT @@hscale_read_from` would show it.
    pub fn name(&self) -> &'static str {
        if self.is_replica {
            "replica"
        } else {
            "primary"
        }
    }
}

/// Session-bound or writing functions and clauses that keep a SELECT on
/// the primary, as words of the statement (a call when followed by `(`).
const PRIMARY_CALLS: &[&str] = &[
    "GET_LOCK",
    "RELEASE_LOCK",
    "RELEASE_ALL_LOCKS",
    "IS_FREE_LOCK",
    "IS_USED_LOCK",
    "LAST_INSERT_ID",
    "FOUND_ROWS",
    "ROW_COUNT",
    "NEXTVAL",
    "LASTVAL",
    "SETVAL",
    "MASTER_POS_WAIT",
    "MASTER_GTID_WAIT",
    "LOAD_FILE",
];

/// One plain read a replica may answer (see the module's list); `sql`:
/// the text `facts.tokens` were lexed from.
pub fn is_plain_read(facts: &Facts, sql: &str) -> bool {
    if facts.kind != Kind::Select
        || facts.statements != 1
        || !facts.pins.is_empty()
        || facts.uses_last_insert_id
        || facts.is_unlexable
        || facts.tokens.is_empty()
        || facts.mentions.intersects(Mentions::LAST_STATEMENT)
    {
        return false;
    }
    let t = &facts.tokens;
    !t.iter().enumerate().any(|(i, tok)| {
        let next_is = |w: &str| t.get(i + 1).is_some_and(|n| n.is_word(sql, w));
        let is_call = t.get(i + 1).is_some_and(|n| n.is_punct(sql, "("));
        tok.is_word(sql, "INTO")
            || (tok.is_word(sql, "FOR") && (next_is("UPDATE") || next_is("SHARE")))
            || (tok.is_word(sql, "LOCK") && next_is("IN"))
            || ((tok.is_word(sql, "NEXT") || tok.is_word(sql, "PREVIOUS")) && next_is("VALUE"))
            || (is_call && PRIMARY_CALLS.iter().any(|w| tok.is_word(sql, w)))
    })
}

/// `SET [SESSION] hscale_read_from = 'replica' | 'primary' | DEFAULT`
/// (also `@@hscale_read_from`, `@@session.`): `Some(Ok(Some(is_replica)))`,
/// `Some(Ok(None))` for DEFAULT, `Some(Err(value))` for another value;
/// `None`: not this statement.
pub fn parse_set(sql: &str) -> Option<Result<Option<bool>, String>> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let words: Vec<&str> = tokens
        .iter()
        .map(|t| t.text(sql))
        .filter(|w| *w != ";")
        .collect();
    let mut w = words.iter().copied();
    if !w.next()?.eq_ignore_ascii_case("SET") {
        return None;
    }
    let mut name = w.next()?;
    if name.eq_ignore_ascii_case("SESSION") || name.eq_ignore_ascii_case("LOCAL") {
        name = w.next()?;
    }
    let lower = name.to_ascii_lowercase();
    let bare = lower
        .strip_prefix("@@session.")
        .or_else(|| lower.strip_prefix("@@local."))
        .or_else(|| lower.strip_prefix("@@"))
        .unwrap_or(&lower);
    if bare.trim_matches('`') != "hscale_read_from" {
        return None;
    }
    let eq = w.next();
    let value = w.next();
    if !matches!(eq, Some("=") | Some(":=")) || w.next().is_some() {
        return Some(Err(words[1..].join(" ")));
    }
    let value = value.unwrap_or("");
    let v = value
        .trim_matches(|c| c == '\'' || c == '"')
        .to_ascii_lowercase();
    Some(match v.as_str() {
        "replica" => Ok(Some(true)),
        "primary" => Ok(Some(false)),
        "default" if !value.starts_with(['\'', '"']) => Ok(None),
        _ => Err(value.to_string()),
    })
}

/// A prepared statement's execution (`sql`, its text) by a session that
/// reads from replicas: routed as its text would be.
pub fn route_prepared(b: &mut Bindings, sql: &[u8]) {
    let facts = hscale_sql::analyze_bytes(sql);
    match std::str::from_utf8(sql) {
        Ok(text) => b.route_reads(&facts, text),
        Err(_) => b.read_from.statement = Route::Writes,
    }
}

impl Bindings {
    /// Decide where the statement about to run goes (`facts`, read from
    /// `sql`); called only while the session reads from replicas.
    pub fn route_reads(&mut self, facts: &Facts, sql: &str) {
        let in_transaction = self.pending_begin.is_some()
            || self.txn.is_some()
            || self
                .pins
                .intersects(Pins::TRANSACTION | Pins::AUTOCOMMIT_OFF);
        self.read_from.statement = if in_transaction {
            Route::Writes
        } else if self.pinned.is_none() && is_plain_read(facts, sql) {
            Route::Replica
        } else if matches!(
            facts.kind,
            Kind::Select
                | Kind::Show
                | Kind::Set
                | Kind::Use
                | Kind::Empty
                | Kind::Admin
                | Kind::Kill
                | Kind::Begin
                | Kind::Commit
                | Kind::Rollback
        ) && facts.statements == 1
        {
            Route::Primary
        } else {
            Route::Writes
        };
    }

    /// The hook in `acquire`: for a plain read, a connection to a usable
    /// replica of `backend` (`None`: the primary's); for a write, the
    /// backend marked written.
    pub(super) async fn replica_for(&mut self, backend: BackendId) -> Option<PooledConn> {
        match self.read_from.statement {
            Route::Primary => None,
            Route::Writes => {
                self.read_from.note_write(backend);
                None
            }
            Route::Replica => {
                if self.pinned.is_some()
                    || self.txn.is_some()
                    || self.pending_begin.is_some()
                    || self.read_from.has_written(backend)
                {
                    return None;
                }
                self.read_from.turn = self.read_from.turn.wrapping_add(1);
                let pool = self
                    .ctx
                    .replicas
                    .pick(self.worker, backend, self.identity, self.read_from.turn)?
                    .clone();
                match pool.get_as(self.tenant.claim(), self.is_found_rows).await {
                    Ok(conn) => Some(conn),
                    Err(e) => {
                        tracing::debug!(connection_id = self.connection_id, replica = pool.name(), error = %e, "replica not reachable: reading the primary");
                        None
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(sql: &str) -> bool {
        is_plain_read(&hscale_sql::analyze(sql), sql)
    }

    #[test]
    fn plain_reads_only() {
        assert!(plain("SELECT v FROM t WHERE id = 1"));
        assert!(plain("WITH x AS (SELECT 1) SELECT * FROM x"));
        assert!(plain("SELECT @@server_id, 'FOR UPDATE'"));
        for sql in [
            "SELECT v FROM t WHERE id = 1 FOR UPDATE",
            "SELECT v FROM t LOCK IN SHARE MODE",
            "SELECT v INTO @x FROM t",
            "SELECT v FROM t INTO OUTFILE '/tmp/x'",
            "SELECT @a := 1",
            "SELECT GET_LOCK('a', 1)",
            "SELECT RELEASE_LOCK('a')",
            "SELECT LAST_INSERT_ID()",
            "SELECT FOUND_ROWS()",
            "SELECT NEXT VALUE FOR s",
            "SELECT NEXTVAL(s)",
            "SELECT SQL_CALC_FOUND_ROWS * FROM t",
            "SELECT 1; SELECT 2",
            "INSERT INTO t VALUES (1)",
            "UPDATE t SET v = 1",
        ] {
            assert!(!plain(sql), "{sql}");
        }
    }

    #[test]
    fn set_statements() {
        assert_eq!(
            parse_set("SET hscale_read_from = 'replica'"),
            Some(Ok(Some(true)))
        );
        assert_eq!(
            parse_set("set session @@HSCALE_READ_FROM=primary"),
            Some(Ok(Some(false)))
        );
        assert_eq!(
            parse_set("SET @@session.hscale_read_from = DEFAULT"),
            Some(Ok(None))
        );
        assert_eq!(
            parse_set("SET hscale_read_from = 'nearest'"),
            Some(Err("'nearest'".into()))
        );
        assert_eq!(parse_set("SET NAMES utf8mb4"), None);
        assert_eq!(parse_set("SET @hscale_read_from = 1"), None);
    }
}
