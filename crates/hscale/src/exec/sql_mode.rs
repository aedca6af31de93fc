//! What the session's sql_mode is, asked of the main backend in the
//! session's state and kept in [`Bindings`] until a statement may change
//! it; and the server's own verdict on a text hscale cannot read.

use hscale_route::BackendId;
use hscale_sql::TokenKind;

use super::bindings::Bindings;
use crate::backend::SqlModeFlags;
use crate::error::ProxyError;

impl Bindings {
    /// The session's sql_mode flags, asked of the main backend in the
    /// session's state once and kept until a statement may change them
    /// ([`Self::forget_sql_mode`]).
    pub async fn sql_mode(&mut self) -> Result<SqlModeFlags, ProxyError> {
        if let Some(m) = self.sql_mode {
            return Ok(m);
        }
        let rows = self
            .ask(BackendId::MAIN, async |conn| {
                conn.query_rows("SELECT @@session.sql_mode").await
            })
            .await?
            .map_err(|err| ProxyError::Backend {
                backend: "main".into(),
                during: "reading the session's sql_mode".into(),
                err,
            })?;
        let mode = rows
            .strings()
            .first()
            .and_then(|row| row.first().cloned().flatten())
            .unwrap_or_default();
        let flags = SqlModeFlags::of(&mode);
        self.sql_mode = Some(flags);
        Ok(flags)
    }

    /// The main backend's syntax error for `sql` in the session's state
    /// (its sql_mode decides what parses), when it has one: a statement
    /// hscale refuses because it cannot read it may be one no server
    /// reads, and one server answers that with 1064, not hscale's 1235.
    /// Only a single statement is asked about (the prepared protocol
    /// takes one); nothing of it runs (`BackendConn::parse_error`).
    pub async fn server_parse_error(
        &mut self,
        sql: &str,
    ) -> Result<Option<hscale_wire::response::ErrPacket>, ProxyError> {
        let is_single = hscale_sql::tokenize(sql)
            .map_or(true, |t| !t.iter().any(|t| t.kind == TokenKind::Semicolon));
        if !is_single {
            return Ok(None);
        }
        let asked = self
            .ask(BackendId::MAIN, async |conn| {
                conn.parse_error(sql.as_bytes()).await.map(Ok)
            })
            .await?;
        Ok(asked.ok().flatten())
    }

    /// Before a statement that may set the session's sql_mode (its own
    /// text was read in the mode before it): ask again when next needed.
    pub fn forget_sql_mode(&mut self, facts: &hscale_sql::Facts, sql: &[u8]) {
        if self.sql_mode.is_some()
            && (facts.kind == hscale_sql::Kind::Set || facts.statements > 1)
            && hscale_sql::mentions::contains_ci(sql, b"sql_mode")
        {
            self.sql_mode = None;
        }
    }
}
