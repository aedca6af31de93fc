//! PROCESSLIST through hscale: one row per hscale client session, with
//! the session's hscale id (the id of the handshake, `CONNECTION_ID()` and
//! KILL), never a backend thread. Each session publishes what it does in
//! its `SessionHandle` (`runtime::Activity`: the command, since when, the
//! statement, the database) when a command starts and ends; PROCESSLIST
//! reads every session's and builds a derived table of them
//! (`exec/processlist.rs`), which `rewrite.rs` puts in place of
//! `information_schema.PROCESSLIST`.
//!
//! As on a server, a client without the right to see others (hscale's
//! `admin`, the PROCESS privilege of a server) sees only its own user's
//! sessions.

use bytes::Bytes;
use hscale_wire::consts::com;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::runtime::Info;

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
        self.command_at = std::time::Instant::now();
        self.b.handle().begin(
            crate::exec::processlist::command_name(cmd),
            info,
            self.command_at,
        );
    }
}
