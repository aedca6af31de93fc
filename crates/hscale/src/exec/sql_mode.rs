//! What the session's sql_mode is, asked of the main backend in the
//! session's state and kept in [`Bindings`] until a statement may change
//! it; and the server's own verdict on a text hscale cannot read.
//!
//! How that mode makes the server read a statement's text, before hscale
//! reads it (`session/query.rs` calls [`Bindings::in_sql_mode`] first):
//!
//! ```text
//!  statement ── no `"` and no `\` ──────────────────────────► as it is (one pass over its bytes)
//!      │
//!      └─ the session's sql_mode (asked once, `SELECT @@sql_mode`, kept until
//!         a statement that may change it)
//!           ANSI_QUOTES:  "name" ──► `name`         (the same statement to the server)
//!           NO_BACKSLASH_ESCAPES, a string holding `\` in a statement the
//!           router does not pass through ──► refused (1235): hscale's lexer
//!           reads `\` as an escape, so it would route the key as another string
//! ```
//! Statements on tables hscale does not manage go to the main backend as
//! they are, whatever the mode: the server reads them itself.

use bytes::{BufMut, Bytes, BytesMut};
use hscale_route::router::Plan;
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

impl Bindings {
    /// The statement as hscale must read it under the session's sql_mode:
    /// `None` when it reads as it is, the text to analyze and run instead
    /// (double-quoted names as backquoted ones under ANSI_QUOTES), or the
    /// refusal of a statement hscale would misread.
    pub async fn in_sql_mode(&mut self, payload: &Bytes) -> Result<Option<Bytes>, ProxyError> {
        let sql = &payload[1..];
        // memchr's vector search: this runs for every text statement.
        if memchr::memchr2(b'"', b'\\', sql).is_none() {
            return Ok(None);
        }
        let (has_double_quote, has_backslash) = (sql.contains(&b'"'), sql.contains(&b'\\'));
        let mode = self.sql_mode().await?;
        let Ok(text) = std::str::from_utf8(sql) else {
            return Ok(None);
        };
        if has_backslash && mode.is_no_backslash_escapes {
            if let Some(why) = self.misread_backslash(text) {
                return Err(ProxyError::Unsupported { what: why });
            }
        }
        if has_double_quote && mode.is_ansi_quotes {
            if let Some(named) =
                hscale_sql::ansi_names_backquoted(text, !mode.is_no_backslash_escapes)
            {
                let mut p = BytesMut::with_capacity(1 + named.len());
                p.put_u8(payload[0]);
                p.put_slice(named.as_bytes());
                return Ok(Some(p.freeze()));
            }
        }
        Ok(None)
    }

    /// Under NO_BACKSLASH_ESCAPES: why hscale cannot run a statement whose
    /// strings hold a backslash: it names a table hscale manages as the
    /// server reads it, or hscale's reading (a backslash escapes) would
    /// route it anywhere but to the main backend as it is (its keys and
    /// strings would be read as other values, or other names).
    fn misread_backslash(&self, text: &str) -> Option<String> {
        let raw = hscale_sql::tokenize_without_escapes(text).ok()?;
        let holds = raw
            .iter()
            .any(|t| t.kind == TokenKind::Str && t.text(text).contains('\\'));
        if !holds {
            return None;
        }
        let why = |what: &str| {
            format!("a string holding a backslash under sql_mode NO_BACKSLASH_ESCAPES in a statement naming {what}")
        };
        // Where a backslash moves where a string ends, the names the
        // server reads are other tokens than hscale's: any of them a
        // managed table's name is refused (its database unread).
        let is_same_split = hscale_sql::tokenize(text).is_ok_and(|t| t == raw);
        if !is_same_split {
            if let Some(what) = self.ctx.partitioning.managed_name_in(text, &raw) {
                return Some(why(&what));
            }
        }
        let plan = {
            let dict = self.ctx.partitioning.dictionary();
            crate::planning::plan_now(
                &dict,
                text,
                self.state.db.as_deref(),
                crate::planning::Form::Plain,
            )
        };
        match plan {
            Plan::Passthrough => None,
            _ => Some(why("a table hscale manages (as hscale would read it)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use hscale_sql::ansi_names_backquoted;

    #[test]
    fn double_quoted_names_become_backquoted() {
        assert_eq!(
            ansi_names_backquoted(r#"SELECT "cid" FROM "cust" WHERE "cid" = 3"#, true).as_deref(),
            Some("SELECT `cid` FROM `cust` WHERE `cid` = 3")
        );
        assert_eq!(
            ansi_names_backquoted(r#"SELECT 'a"b', "x""y`z" FROM t"#, true).as_deref(),
            Some("SELECT 'a\"b', `x\"y``z` FROM t")
        );
        assert_eq!(ansi_names_backquoted("SELECT 'a\"b' FROM t", true), None);
        assert_eq!(ansi_names_backquoted(r#"SELECT "a\b" FROM t"#, true), None);
    }
}
