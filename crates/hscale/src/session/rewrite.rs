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
//!   statement left (`diagnostics.rs`), whichever backends it ran on;
//!   rewritten again at every execution of a prepared statement;
//! - `SHOW [SESSION] STATUS`: `Ssl_version` and `Ssl_cipher` of the
//!   client's own TLS session with hscale (empty without TLS), not of the
//!   backend connection that runs the statement.
//!
//! Each is a rewrite into SQL the backend evaluates, so filters,
//! expressions and column types work as on a server.

use std::fmt::Write;

use bytes::Bytes;
use hscale_sql::show::{classify, ident, replace_table, table_status_sql, Show};
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
            Some(Show::Processlist { is_full }) => (Some(self.show_processlist(is_full)), true),
            Some(Show::Variables { is_global, filter }) => {
                (Some(self.show_variables(is_global, filter)), false)
            }
            Some(Show::Status { filter }) => (Some(self.show_status(filter)), false),
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
                &self.processlist_table(),
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
            let dict = self.b.ctx.partitioning.dictionary();
            let counters = if dict.has_sequences() && self::mentions(current.as_bytes(), b"TABLES")
            {
                crate::seq::logical::auto_increments(&self.b.ctx, self.b.worker, &dict).await?
            } else {
                Vec::new()
            };
            let current = out.as_deref().unwrap_or(sql);
            let remote = self.b.remote_view_rows(current, &dict).await?;
            let current = out.as_deref().unwrap_or(sql);
            if let Some(s) = hscale_route::router::logical_views(current, &dict, &counters, &remote)
                .or_else(|| hscale_route::router::remote_auto_increments(current, &dict, &counters))
            {
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
                let derived = self.variables_table(is_global);
                if let Some(s) = replace_table(current, "information_schema", view, &derived) {
                    out = Some(s);
                }
            }
        }
        // ROW_COUNT() and FOUND_ROWS(): the session's previous statement,
        // whichever backends it ran on (`diagnostics.rs`).
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
            if let Some(s) = self.proxy_values(out.as_deref().unwrap_or(sql)) {
                out = Some(s);
            }
        }
        Ok(out.map(|out| (out, is_live)))
    }

    /// `sql` with hscale's values for `@@max_allowed_packet`,
    /// `@@max_connections` and `CONNECTION_ID()`; `None` when it reads
    /// none of them. Also applied at PREPARE: these values do not change
    /// during a session.
    pub(super) fn proxy_values(&self, sql: &str) -> Option<String> {
        let mut out: Option<String> = None;
        if sql.contains("@@") {
            for (name, limit) in self.proxy_limits() {
                let current = out.as_deref().unwrap_or(sql);
                if let Some(s) = hscale_sql::rewrite::replace_sysvar(current, name, limit) {
                    out = Some(s);
                }
            }
        }
        let current = out.as_deref().unwrap_or(sql);
        let id = u64::from(self.b.connection_id);
        if let Some(s) = hscale_sql::rewrite::replace_connection_id(current, id) {
            out = Some(s);
        }
        // `@@pseudo_thread_id` is the connection id too, unless the
        // session set it (the value keeps the variable's column type).
        let current = out.as_deref().unwrap_or(sql);
        if current.contains("@@") && mentions(current.as_bytes(), b"PSEUDO_THREAD_ID") {
            if let Some(id) = self.pseudo_thread_id() {
                let expr = format!("(CAST({id} AS UNSIGNED) | @@session.pseudo_thread_id & 0)");
                if let Some(s) =
                    hscale_sql::rewrite::replace_sysvar_with(current, "pseudo_thread_id", &expr)
                {
                    out = Some(s);
                }
            }
        }
        // `CURRENT_USER()`, `USER()` and the like are the proxy user, not
        // its backend account.
        let current = out.as_deref().unwrap_or(sql);
        let user = format!("{}@{}", self.info.user, self.info.host_name);
        let host = self
            .b
            .ctx
            .live()
            .user(&self.info.user)
            .map_or_else(|| "%".to_string(), |u| u.host().to_string());
        let account = format!("{}@{host}", self.info.user);
        if let Some(s) = hscale_sql::rewrite::replace_user_functions(current, &user, &account) {
            out = Some(s);
        }
        out
    }

    /// The system variables whose value through hscale is hscale's limit.
    fn proxy_limits(&self) -> [(&'static str, u64); 2] {
        let proxy = &self.b.ctx.config.proxy;
        [
            ("max_allowed_packet", proxy.max_allowed_packet as u64),
            ("max_connections", proxy.max_connections as u64),
        ]
    }

    /// `SHOW [GLOBAL | SESSION] VARIABLES [filter]` as a SELECT over
    /// information_schema with hscale's limits in place of the backend's
    /// values; same columns, same order (by name, bytewise).
    fn show_variables(&self, is_global: bool, filter: &str) -> String {
        let table = if is_global {
            "GLOBAL_VARIABLES"
        } else {
            "SESSION_VARIABLES"
        };
        // hscale's values come in with information_schema's table
        // (`variables_table`), as for a client reading it.
        let mut sql = format!(
            "SELECT Variable_name, Value FROM (SELECT LOWER(VARIABLE_NAME) AS Variable_name, \
             VARIABLE_VALUE AS Value FROM information_schema.{table}) AS v"
        );
        if let Some(pattern) = strip_word(filter, "LIKE") {
            let _ = write!(sql, " WHERE Variable_name LIKE {pattern}");
        } else if !filter.is_empty() {
            let _ = write!(sql, " {filter}");
        }
        sql.push_str(" ORDER BY BINARY Variable_name");
        sql
    }

    /// information_schema's `GLOBAL_VARIABLES` (`is_global`) or
    /// `SESSION_VARIABLES` with hscale's values: its limits, and the
    /// session's `pseudo_thread_id` ([`Self::pseudo_thread_id`]); the same
    /// columns and types.
    fn variables_table(&self, is_global: bool) -> String {
        let mut values: Vec<(&str, u64)> = self.proxy_limits().to_vec();
        if let Some(id) = self.pseudo_thread_id().filter(|_| !is_global) {
            values.push(("pseudo_thread_id", id));
        }
        let mut sql = String::from("SELECT VARIABLE_NAME, CASE VARIABLE_NAME");
        for (name, value) in values {
            let _ = write!(sql, " WHEN '{}' THEN '{value}'", name.to_ascii_uppercase());
        }
        let table = if is_global {
            "GLOBAL_VARIABLES"
        } else {
            "SESSION_VARIABLES"
        };
        let _ = write!(
            sql,
            " ELSE VARIABLE_VALUE END AS VARIABLE_VALUE FROM information_schema.{table}"
        );
        sql
    }

    /// `@@pseudo_thread_id` through hscale: the session's hscale id (as
    /// `CONNECTION_ID()`), unless the session set the variable itself.
    fn pseudo_thread_id(&self) -> Option<u64> {
        let is_set = self
            .b
            .state
            .vars
            .items()
            .iter()
            .any(|i| i.key == "pseudo_thread_id");
        (!is_set).then_some(u64::from(self.b.connection_id))
    }

    /// `SHOW [SESSION] STATUS [filter]` as a SELECT over
    /// information_schema.SESSION_STATUS with the client's TLS session in
    /// `Ssl_version` and `Ssl_cipher`; the names as SHOW prints them (the
    /// first letter upper case, `wsrep*` all lower case) in the server's
    /// own order (SHOW STATUS is not sorted: no ORDER BY).
    fn show_status(&self, filter: &str) -> String {
        let (version, cipher) = match &self.info.tls {
            Some(t) => (t.version.as_str(), t.cipher.as_str()),
            None => ("", ""),
        };
        let mut sql = format!(
            "SELECT Variable_name, Value FROM (SELECT IF(VARIABLE_NAME LIKE 'WSREP%', \
             LOWER(VARIABLE_NAME), CONCAT(UPPER(LEFT(VARIABLE_NAME, 1)), \
             LOWER(SUBSTRING(VARIABLE_NAME, 2)))) AS Variable_name, CASE VARIABLE_NAME \
             WHEN 'SSL_VERSION' THEN '{}' WHEN 'SSL_CIPHER' THEN '{}' \
             ELSE VARIABLE_VALUE END AS Value FROM information_schema.SESSION_STATUS) AS v",
            version.replace('\'', "''"),
            cipher.replace('\'', "''"),
        );
        if let Some(pattern) = strip_word(filter, "LIKE") {
            let _ = write!(sql, " WHERE Variable_name LIKE {pattern}");
        } else if !filter.is_empty() {
            let _ = write!(sql, " {filter}");
        }
        sql
    }
}

/// `text` after its first word when that word is `word` (any case).
fn strip_word<'a>(text: &'a str, word: &str) -> Option<&'a str> {
    let head = text.get(..word.len())?;
    let rest = text.get(word.len()..)?;
    (head.eq_ignore_ascii_case(word) && rest.starts_with(|c: char| c.is_whitespace() || c == '\''))
        .then_some(rest)
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
