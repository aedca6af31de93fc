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
//!           router does not pass through:
//!             one SELECT / INSERT / REPLACE / UPDATE / DELETE planned to
//!             partitions or merged ──► read with its backslashes doubled
//!             ('back\slash' ──► 'back\\slash': hscale's lexer, which reads `\`
//!             as an escape, then reads the server's values and routes the
//!             key where one server's goes); each partition's statement
//!             undoubled again (`undoubled`) before it is sent
//!             anything else ──► refused (1235)
//! ```
//! Statements on tables hscale does not manage go to the main backend as
//! they are, whatever the mode: the server reads them itself.

use bytes::{BufMut, Bytes, BytesMut};
use hscale_route::router::{MergePlan, Mode, Plan};
use hscale_route::BackendId;
use hscale_sql::TokenKind;

use super::bindings::Bindings;
use crate::backend::SqlModeFlags;
use crate::error::ProxyError;

impl Bindings {
    /// The session's `@@sql_mode` as the main backend reads it.
    pub(crate) async fn session_sql_mode(&mut self) -> Result<String, ProxyError> {
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
        Ok(mode)
    }

    /// The session's sql_mode flags, asked of the main backend in the
    /// session's state once and kept until a statement may change them
    /// ([`Self::forget_sql_mode`]).
    pub async fn sql_mode(&mut self) -> Result<SqlModeFlags, ProxyError> {
        if let Some(m) = self.sql_mode {
            return Ok(m);
        }
        let mode = self.session_sql_mode().await?;
        let flags = SqlModeFlags::of(&mode);
        self.sql_mode = Some(flags);
        Ok(flags)
    }

    /// The session's variables with ALLOW_INVALID_DATES added to its
    /// sql_mode, for the write of an INSERT ... SELECT whose rows hold
    /// DATE, DATETIME or TIMESTAMP values with a day past their month's end
    /// (`sink::has_invalid_days`): one server copies them into columns of
    /// their type as they are, outside NO_ZERO_DATE and NO_ZERO_IN_DATE
    /// (where it checks them as a literal is checked). `None` when the
    /// mode has one of these, or ALLOW_INVALID_DATES already.
    pub async fn vars_allowing_invalid_dates(
        &mut self,
    ) -> Result<Option<std::sync::Arc<crate::backend::state::SessionVars>>, ProxyError> {
        let mode = self.session_sql_mode().await?;
        let has = |m: &str| mode.split(',').any(|x| x.eq_ignore_ascii_case(m));
        if has("NO_ZERO_DATE") || has("NO_ZERO_IN_DATE") || has("ALLOW_INVALID_DATES") {
            return Ok(None);
        }
        let with = match mode.is_empty() {
            true => "ALLOW_INVALID_DATES".to_string(),
            false => format!("{mode},ALLOW_INVALID_DATES"),
        };
        let mut vars = (*self.state.vars).clone();
        vars.apply(&[hscale_sql::SetItem {
            key: "sql_mode".into(),
            assign: format!(
                "@@session.sql_mode = {}",
                crate::partition::quote_str(&with)
            ),
            is_standalone: false,
        }]);
        Ok(Some(std::sync::Arc::new(vars)))
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
        // Each statement of a batch is read anew.
        self.is_undoubling = false;
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
                if !(has_double_quote && mode.is_ansi_quotes) {
                    if let Some(doubled) = self.doubled_to_route(text) {
                        let mut p = BytesMut::with_capacity(1 + doubled.len());
                        p.put_u8(payload[0]);
                        p.put_slice(doubled.as_bytes());
                        self.is_undoubling = true;
                        return Ok(Some(p.freeze()));
                    }
                }
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

    /// Under NO_BACKSLASH_ESCAPES, a statement whose single-quoted strings
    /// hold backslashes, when hscale can route it exactly: its text with
    /// those backslashes doubled (`hscale_sql::backslashes_doubled`),
    /// which hscale reads with the values the server reads in the
    /// original, so its keys route where one server's would. It is
    /// planned from that text, and what goes to each partition has them
    /// undoubled again ([`undoubled`]). Only one SELECT, INSERT, REPLACE,
    /// UPDATE or DELETE without a subquery, user variable, INTO or
    /// SQL_CALC_FOUND_ROWS, planned to partitions as it is or merged
    /// (`Plan::Targets`, `Plan::Merge`): anything else is refused as
    /// before.
    fn doubled_to_route(&self, text: &str) -> Option<String> {
        let doubled = hscale_sql::backslashes_doubled(text)?;
        let tokens = hscale_sql::tokenize(&doubled).ok()?;
        let first = tokens.first()?;
        let is_plain = ["SELECT", "INSERT", "REPLACE", "UPDATE", "DELETE"]
            .iter()
            .any(|k| first.is_word(&doubled, k));
        let selects = tokens
            .iter()
            .filter(|t| t.is_word(&doubled, "SELECT"))
            .count();
        let is_simple = !tokens.iter().any(|t| {
            t.kind == TokenKind::Semicolon
                || t.is_word(&doubled, "INTO")
                    && !first.is_word(&doubled, "INSERT")
                    && !first.is_word(&doubled, "REPLACE")
                || t.is_word(&doubled, "SQL_CALC_FOUND_ROWS")
                || t.kind == TokenKind::UserVar
        });
        let max_selects = usize::from(first.is_word(&doubled, "SELECT"));
        if !is_plain || !is_simple || selects > max_selects {
            return None;
        }
        let plan = {
            let dict = self.ctx.partitioning.dictionary();
            crate::planning::plan_now(
                &dict,
                &doubled,
                self.state.db.as_deref(),
                crate::planning::Form::Plain,
            )
        };
        match plan {
            Plan::Targets { .. } | Plan::Merge(_) => undoubled(plan).ok().map(|_| doubled),
            // Planned without asking the backends (an INSERT without a
            // column list needs the table's columns): planned again when
            // it runs, and a plan `undoubled` cannot send is refused then.
            Plan::Refuse(_) => Some(doubled),
            _ => None,
        }
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

/// A plan made from a statement's text with its backslashes doubled
/// (`StatementScratch::is_undoubling`), with every part's text as the client
/// wrote it (`hscale_sql::backslashes_undoubled`): only partitions'
/// statements (`Plan::Targets`) and merges; anything else is refused, as
/// every such statement was before, never sent with the doubled text.
pub fn undoubled(plan: Plan) -> Result<Plan, ProxyError> {
    let refused = || {
        ProxyError::Unsupported {
        what: "a string holding a backslash under sql_mode NO_BACKSLASH_ESCAPES in a statement hscale does not send to partitions as written (a subquery, a moved key, a write in order)".into(),
    }
    };
    match plan {
        Plan::Targets { kind, parts } => {
            let parts = parts
                .into_iter()
                .map(|(t, sql)| hscale_sql::backslashes_undoubled(&sql).map(|s| (t, s)))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(refused)?;
            Ok(Plan::Targets { kind, parts })
        }
        Plan::Merge(m) => undoubled_merge(m).map(Plan::Merge).ok_or_else(refused),
        Plan::Refuse(why) => Ok(Plan::Refuse(why)),
        _ => Err(refused()),
    }
}

/// A merge with every statement it sends undoubled: the parts, the
/// `LIMIT 0` statement and probe of a grouped merge, the copies' reads,
/// and the plans it may fall back to.
fn undoubled_merge(mut m: MergePlan) -> Option<MergePlan> {
    let undouble = |sql: &mut String| -> Option<()> {
        *sql = hscale_sql::backslashes_undoubled(sql)?;
        Some(())
    };
    for (_, sql) in &mut m.parts {
        undouble(sql)?;
    }
    if let Mode::Group(g) = &mut m.mode {
        undouble(&mut g.meta.1)?;
        if let Some(probe) = &mut g.enum_probe {
            undouble(probe)?;
        }
    }
    for ship in &mut m.ship {
        for (_, sql) in &mut ship.sources {
            undouble(sql)?;
        }
    }
    m.fallback = match m.fallback.take() {
        Some(f) => Some(Box::new(undoubled_merge(*f)?)),
        None => None,
    };
    m.aliased = match m.aliased.take() {
        Some(a) => Some(Box::new(undoubled_merge(*a)?)),
        None => None,
    };
    Some(m)
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
