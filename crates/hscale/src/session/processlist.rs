//! PROCESSLIST through hscale: one row per hscale client session, with
//! the session's hscale id (the id of the handshake, `CONNECTION_ID()` and
//! KILL), never a backend thread. Each session publishes what it does in
//! its `SessionHandle` (`runtime::Activity`: the command, since when, the
//! statement, the database) when a command starts and ends; PROCESSLIST
//! reads every session's and builds a derived table of them, which
//! `rewrite.rs` puts in place of `information_schema.PROCESSLIST`.
//!
//! As on a server, a client without the right to see others (hscale's
//! `admin`, the PROCESS privilege of a server) sees only its own user's
//! sessions.

use std::fmt::Write;

use bytes::Bytes;
use hscale_wire::consts::com;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::runtime::Info;

/// The longest statement text shown; a server shows all of it, but the
/// rewritten statement must stay well under the backend's packet limit.
const MAX_INFO: usize = 64 * 1024;

/// The name a server gives command `cmd` in PROCESSLIST.
pub(super) fn command_name(cmd: u8) -> &'static str {
    match cmd {
        com::QUERY => "Query",
        com::INIT_DB => "Init DB",
        com::FIELD_LIST => "Field List",
        com::STATISTICS => "Statistics",
        com::PROCESS_KILL => "Kill",
        com::PING => "Ping",
        com::CHANGE_USER => "Change user",
        com::STMT_PREPARE => "Prepare",
        com::STMT_EXECUTE => "Execute",
        com::STMT_SEND_LONG_DATA => "Long Data",
        com::STMT_CLOSE => "Close stmt",
        com::STMT_RESET => "Reset stmt",
        com::SET_OPTION => "Set option",
        com::STMT_FETCH => "Fetch",
        com::RESET_CONNECTION => "Reset connection",
        com::QUIT => "Quit",
        _ => "Query",
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// Publish that command `payload` starts (for PROCESSLIST).
    pub(super) fn begin_command(&mut self, payload: &Bytes) {
        let Some(&cmd) = payload.first() else { return };
        let info = match cmd {
            com::QUERY | com::STMT_PREPARE => Some(Info::Text(payload.slice(1..))),
            com::STMT_EXECUTE => hscale_wire::stmt::statement_id(payload)
                .ok()
                .and_then(|id| self.statements.get_mut(id))
                .map(|s| Info::Prepared(s.live.clone().unwrap_or_else(|| s.sql.clone()))),
            _ => None,
        };
        self.b.handle.begin(command_name(cmd), info);
    }

    /// The sessions this client may see, as the rows of
    /// `information_schema.PROCESSLIST`: a `SELECT ... UNION ALL ...`
    /// with MariaDB's columns, ordered by id.
    pub(super) fn processlist_table(&self) -> String {
        let mut sessions = self.b.ctx.sessions();
        // The session itself (registered after its login).
        if !sessions.iter().any(|(id, _)| *id == self.b.connection_id) {
            sessions.push((self.b.connection_id, self.b.handle.clone()));
        }
        sessions.sort_by_key(|(id, _)| *id);
        let now = std::time::Instant::now();
        let mut sql = String::new();
        for (id, handle) in &sessions {
            let user = handle
                .user
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            if !self.info.is_admin && user != self.info.user {
                continue;
            }
            let a = handle.activity();
            let elapsed = now.saturating_duration_since(a.since);
            if !sql.is_empty() {
                sql.push_str(" UNION ALL ");
            }
            let _ = write!(sql, "SELECT CAST({id} AS UNSIGNED) AS ID, ");
            text(&mut sql, Some(user.as_bytes()));
            sql.push_str(" AS USER, ");
            text(&mut sql, Some(handle.host.as_bytes()));
            sql.push_str(" AS HOST, ");
            text(&mut sql, a.db.as_deref().map(str::as_bytes));
            let state = if a.command == "Sleep" {
                ""
            } else {
                "executing"
            };
            let _ = write!(
                sql,
                " AS DB, '{}' AS COMMAND, CAST({} AS SIGNED) AS TIME, '{state}' AS STATE, ",
                a.command,
                elapsed.as_secs()
            );
            let info = a.info.as_ref().map(|i| {
                let b = i.as_bytes();
                &b[..b.len().min(MAX_INFO)]
            });
            text(&mut sql, info);
            let _ = write!(
                sql,
                " AS INFO, CAST({}.{:03} AS DECIMAL(22,3)) AS TIME_MS, 0 AS STAGE, 0 AS MAX_STAGE, \
                 CAST(0 AS DECIMAL(7,3)) AS PROGRESS, 0 AS MEMORY_USED, 0 AS MAX_MEMORY_USED, \
                 0 AS EXAMINED_ROWS, 0 AS QUERY_ID, ",
                elapsed.as_millis(),
                elapsed.subsec_micros() % 1000
            );
            match info {
                Some(b) => hex(&mut sql, b),
                None => sql.push_str("NULL"),
            }
            sql.push_str(" AS INFO_BINARY, 0 AS TID");
        }
        sql
    }

    /// `SHOW [FULL] PROCESSLIST` as a SELECT over [`Self::processlist_table`]:
    /// a server's columns, the statement cut to 100 characters unless FULL.
    pub(super) fn show_processlist(&self, is_full: bool) -> String {
        let info = if is_full { "INFO" } else { "LEFT(INFO, 100)" };
        format!(
            "SELECT ID AS Id, USER AS User, HOST AS Host, DB AS db, COMMAND AS Command, \
             TIME AS Time, STATE AS State, {info} AS Info, PROGRESS AS Progress \
             FROM ({}) AS p ORDER BY ID",
            self.processlist_table()
        )
    }
}

/// `bytes` as an SQL string in utf8mb4 (a hex literal: any byte is safe),
/// or NULL.
fn text(sql: &mut String, bytes: Option<&[u8]>) {
    match bytes {
        Some(b) => {
            sql.push_str("CONVERT(");
            hex(sql, b);
            sql.push_str(" USING utf8mb4)");
        }
        None => sql.push_str("NULL"),
    }
}

/// `bytes` as a hex literal.
fn hex(sql: &mut String, bytes: &[u8]) {
    sql.push_str("X'");
    for b in bytes {
        let _ = write!(sql, "{b:02X}");
    }
    sql.push('\'');
}
