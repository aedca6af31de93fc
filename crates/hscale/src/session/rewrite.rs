//! Statements whose answer through hscale is hscale's own, rewritten
//! before they are analyzed and planned (text statements, and prepared
//! ones where the answer cannot change between executions):
//!
//! - `@@max_allowed_packet` / `@@max_connections` in a SELECT, and the
//!   same variables in `SHOW VARIABLES`: the limits hscale enforces
//!   (`[proxy] max_allowed_packet` on commands, `max_connections` on
//!   clients), not the backend's;
//! - `CONNECTION_ID()`: the session's hscale id (the one in the handshake
//!   and in KILL), the same for the whole session whichever backend
//!   connection runs the statement; `@@pseudo_thread_id` too (and its
//!   row in information_schema.SESSION_VARIABLES and SHOW VARIABLES),
//!   unless the session set it;
//! - `@@warning_count`, `@@error_count` and `SHOW COUNT(*) WARNINGS |
//!   ERRORS`: the session's list of conditions (`exec/conditions/list.rs`);
//! - `SHOW [FULL] PROCESSLIST` and `information_schema.PROCESSLIST`:
//!   hscale's client sessions (`processlist.rs`); in a prepared
//!   statement rewritten again at every execution, since the sessions
//!   change;
//! - information_schema's TABLES, COLUMNS, STATISTICS and
//!   KEY_COLUMN_USAGE: each partitioned table once, under its name
//!   (`hscale_route::router::logical_views`), rewritten again at every
//!   execution of a prepared statement, since the dictionary changes;
//!   TABLES' AUTO_INCREMENT of a table with a sequence is the sequence's
//!   next value (`seq::logical`, read from the main backend for a
//!   statement that names TABLES when some table has a sequence);
//! - `SHOW TABLE STATUS` of a database with partitioned tables: the
//!   SELECT over information_schema.TABLES it is on a server
//!   (`hscale_sql::show::table_status_sql`) with the partitioned tables'
//!   figures summed over their partitions (`exec/figures.rs`), then shown as
//!   above; in a prepared statement rewritten again at every execution;
//! - `ROW_COUNT()` and `FOUND_ROWS()`: what the session's previous
//!   statement left (`exec/last_statement.rs`), whichever backends it ran on;
//!   rewritten again at every execution of a prepared statement;
//! - `SHOW [SESSION] STATUS`: `Ssl_version` and `Ssl_cipher` of the
//!   client's own TLS session with hscale (empty without TLS), not of the
//!   backend connection that runs the statement.
//!
//! Each is a rewrite into SQL the backend evaluates, so filters,
//! expressions and column types work as on a server.

use bytes::Bytes;
use hscale_sql::show::{classify, ident, replace_table, table_status_sql, Show};

use crate::exec::processlist;
use crate::exec::rewrite::{show_status, show_variables};
use hscale_sql::Mentions;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::error::ProxyError;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// The `COM_QUERY` payload to run instead of `sql`, when the
    /// statement reads something whose answer is hscale's own
    /// (`mentions`: what the statement's analysis found).
    pub(super) async fn proxy_answers(
        &mut self,
        sql: &str,
        mentions: Mentions,
    ) -> Result<Option<Bytes>, ProxyError> {
        Ok(self
            .proxy_sql(sql, mentions)
            .await?
            .map(|(out, _)| crate::backend::BackendConn::payload_for_query(&out)))
    }

    /// `sql` with hscale's own answers in place, and whether they hold
    /// this moment's sessions (PROCESSLIST): such a prepared statement is
    /// rewritten again at every execution (`commands.rs`). `None` when
    /// the statement reads nothing whose answer is hscale's. `mentions`
    /// (`hscale_sql::Facts::mentions`, from the lex the statement gets
    /// anyway) says which rewrites may apply: a statement that mentions
    /// none is not scanned again.
    pub(super) async fn proxy_sql(
        &mut self,
        sql: &str,
        mentions: Mentions,
    ) -> Result<Option<(String, bool)>, ProxyError> {
        let (mut out, mut is_live) = match classify(sql) {
            Some(Show::Processlist { is_full }) => {
                let (admin, user) = (self.info.is_admin, &self.info.user);
                let sql = processlist::show_processlist(&self.b, admin, user, is_full);
                (Some(sql), true)
            }
            Some(Show::Variables { is_global, filter }) => {
                (Some(show_variables(is_global, filter)), false)
            }
            Some(Show::Status { filter }) => {
                (Some(show_status(self.info.tls.as_ref(), filter)), false)
            }
            // A database with partitioned tables: as information_schema
            // shows it (below), with logical tables.
            // with logical tables and their figures summed over their
            // partitions (`exec/figures.rs`), read again at every execution.
            Some(Show::TableStatus { db, filter }) => {
                match db.map(ident).or_else(|| self.b.state.db.clone()) {
                    Some(db) => {
                        let summed = self.b.summed_figures(&db).await?;
                        if summed.is_empty() {
                            (None, false)
                        } else {
                            (table_status_sql(&db, filter, &summed), true)
                        }
                    }
                    None => (None, false),
                }
            }
            None => (None, false),
        };
        if out.is_none() && mentions.contains(Mentions::PROCESSLIST) {
            out = replace_table(
                sql,
                "information_schema",
                "PROCESSLIST",
                &processlist::processlist_table(&self.b, self.info.is_admin, &self.info.user),
            );
            is_live = out.is_some();
        }
        // information_schema's tables with the logical tables in place of
        // their partitions, and the sequences' next values as TABLES'
        // AUTO_INCREMENT; rewritten again at every execution, since the
        // dictionary and the sequences change. A SHOW TABLE STATUS
        // rewritten above reads information_schema too.
        let current = out.as_deref().unwrap_or(sql);
        if mentions.contains(Mentions::INFORMATION_SCHEMA)
            || (out.is_some() && self::mentions(current.as_bytes(), b"INFORMATION_SCHEMA"))
        {
            if let Some(s) = self.b.logical_tables(current).await? {
                out = Some(s);
                is_live = true;
            }
        }
        // System variables as information_schema lists them: hscale's
        // limits and the session's pseudo_thread_id (SHOW VARIABLES,
        // rewritten above, reads them there too).
        let current = out.as_deref().unwrap_or(sql);
        if (mentions.contains(Mentions::INFORMATION_SCHEMA) || out.is_some())
            && self::mentions(current.as_bytes(), b"_VARIABLES")
        {
            for (view, is_global) in [("GLOBAL_VARIABLES", true), ("SESSION_VARIABLES", false)] {
                let current = out.as_deref().unwrap_or(sql);
                let derived = self.b.variables_table(is_global);
                if let Some(s) = replace_table(current, "information_schema", view, &derived) {
                    out = Some(s);
                }
            }
        }
        // ROW_COUNT() and FOUND_ROWS(): the session's previous statement,
        // whichever backends it ran on (`exec/last_statement.rs`).
        if mentions.contains(Mentions::LAST_STATEMENT) {
            let current = out.as_deref().unwrap_or(sql);
            let (row_count, found_rows) = (self.last.row_count, self.last.found_rows);
            if let Some(s) =
                hscale_sql::rewrite::replace_last_statement(current, row_count, found_rows)
            {
                out = Some(s);
                is_live = true;
            }
        }
        // The diagnostics area: the session's own list (`exec/conditions/list.rs`).
        if let Some(counts) = self.conditions.counts() {
            if out.is_none() {
                if let Some(hscale_sql::diagnostics::ConditionRead::Count { is_errors }) =
                    hscale_sql::diagnostics::classify_condition_read(sql)
                {
                    out = Some(crate::exec::conditions::list::count_sql(is_errors, counts));
                    is_live = true;
                }
            }
            if mentions.contains(Mentions::SYSTEM_VARIABLE) {
                let current = out.as_deref().unwrap_or(sql);
                if let Some(s) = crate::exec::conditions::list::replace_counts(current, counts) {
                    out = Some(s);
                    is_live = true;
                }
            }
        }
        // On the text as rewritten so far, which may name them too.
        let values = Mentions(
            Mentions::SYSTEM_VARIABLE.0 | Mentions::CONNECTION_ID.0 | Mentions::USER_FUNCTION.0,
        );
        if out.is_some() || mentions.intersects(values) {
            let current = out.as_deref().unwrap_or(sql);
            if let Some(s) = self
                .b
                .proxy_values(current, &self.info.user, &self.info.host_name)
            {
                out = Some(s);
            }
        }
        Ok(out.map(|out| (out, is_live)))
    }
}

/// Whether `haystack` contains `needle` (ASCII, any case). Every
/// statement is scanned for a few words, so a byte that cannot start the
/// needle costs one comparison.
pub(super) fn mentions(haystack: &[u8], needle: &[u8]) -> bool {
    hscale_sql::mentions::contains_ci(haystack, needle)
}

#[cfg(test)]
mod tests {
    use super::mentions;

    #[test]
    fn mentions_in_any_case() {
        assert!(mentions(b"select row_count()", b"ROW"));
        assert!(mentions(
            b"FROM Information_Schema.TABLES",
            b"INFORMATION_SCHEMA"
        ));
        assert!(mentions(b"ROW", b"ROW"));
        assert!(!mentions(b"RO", b"ROW"));
        assert!(!mentions(b"SELECT 1", b"ROW"));
    }
}
