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
//!   hscale's client sessions (`exec/processlist.rs`); in a prepared
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
//!
//! `Bindings::proxy_sql` decides which statements need them (the session
//! calls it for every text statement and at PREPARE, with the client's
//! [`Client`]); the values themselves follow: its limits, the session's
//! ids and user, information_schema's tables with the logical tables in
//! place of their partitions, SHOW VARIABLES and SHOW STATUS as the
//! SELECTs over information_schema they are on a server.

use std::fmt::Write;

use bytes::Bytes;
use hscale_route::BackendId;
use hscale_sql::show::{classify, ident, replace_table, table_status_sql, Show};
use hscale_sql::Mentions;

use crate::error::ProxyError;
use crate::exec::last_statement::LastStatement;
use crate::exec::processlist;
use crate::exec::Bindings;
use crate::tls::TlsSession;

/// What hscale's own answers read of the client and of its session's
/// previous statement.
pub struct Client<'a> {
    pub user: &'a str,
    /// The client's host as `USER()` names it.
    pub host_name: &'a str,
    /// May see every user's sessions in PROCESSLIST.
    pub is_admin: bool,
    pub tls: Option<&'a TlsSession>,
    /// For `ROW_COUNT()` and `FOUND_ROWS()`.
    pub last: LastStatement,
    /// The session's warning and error counts, when it keeps its list.
    pub counts: Option<(u64, u64)>,
}

impl Bindings {
    /// The column definitions of one server's `SHOW TABLE STATUS`, in
    /// the session's state (its character set of results): asked of the
    /// main backend for no table (`LIKE ''` matches none), so that the
    /// answer hscale computes over information_schema carries them
    /// (`StatementScratch::answer_defs`). `None` if the server refuses.
    async fn table_status_defs(&mut self, db: &str) -> Result<Option<Vec<Bytes>>, ProxyError> {
        let sql = format!(
            "SHOW TABLE STATUS FROM {} LIKE ''",
            crate::partition::quote_ident(db)
        );
        let asked = self
            .ask(BackendId::MAIN, async |conn| conn.query_raw(&sql).await)
            .await?;
        Ok(asked.ok().map(|(defs, _)| defs))
    }

    /// `sql` with hscale's own answers in place, and whether they hold
    /// this moment's sessions (PROCESSLIST): such a prepared statement is
    /// rewritten again at every execution (`commands.rs`). `None` when
    /// the statement reads nothing whose answer is hscale's. `mentions`
    /// (`hscale_sql::Facts::mentions`, from the lex the statement gets
    /// anyway) says which rewrites may apply: a statement that mentions
    /// none is not scanned again.
    pub async fn proxy_sql(
        &mut self,
        sql: &str,
        mentions: Mentions,
        client: &Client<'_>,
        scratch: &mut crate::exec::scratch::StatementScratch,
    ) -> Result<Option<(String, bool)>, ProxyError> {
        let (mut out, mut is_live) = match classify(sql) {
            Some(Show::Processlist { is_full }) => {
                let (admin, user) = (client.is_admin, client.user);
                let sql = processlist::show_processlist(self, admin, user, is_full);
                (Some(sql), true)
            }
            Some(Show::Variables { is_global, filter }) => {
                (Some(show_variables(is_global, filter)), false)
            }
            Some(Show::Status { filter }) => (Some(show_status(client.tls, filter)), false),
            // A database with partitioned tables: as information_schema
            // shows it (below), with logical tables.
            // with logical tables and their figures summed over their
            // partitions (`exec/figures.rs`), read again at every execution.
            Some(Show::TableStatus { db, filter }) => {
                match db.map(ident).or_else(|| self.state.db.clone()) {
                    Some(db) => {
                        let summed = self.summed_figures(&db).await?;
                        if summed.is_empty() {
                            (None, false)
                        } else {
                            let out = table_status_sql(&db, filter, &summed);
                            if out.is_some() {
                                scratch.answer_defs = self.table_status_defs(&db).await?;
                            }
                            (out, true)
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
                &processlist::processlist_table(self, client.is_admin, client.user),
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
            || (out.is_some()
                && hscale_sql::mentions::contains_ci(current.as_bytes(), b"INFORMATION_SCHEMA"))
        {
            if let Some(s) = self.logical_tables(current).await? {
                out = Some(s);
                is_live = true;
            }
        }
        // System variables as information_schema lists them: hscale's
        // limits and the session's pseudo_thread_id (SHOW VARIABLES,
        // rewritten above, reads them there too).
        let current = out.as_deref().unwrap_or(sql);
        if (mentions.contains(Mentions::INFORMATION_SCHEMA) || out.is_some())
            && hscale_sql::mentions::contains_ci(current.as_bytes(), b"_VARIABLES")
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
        // whichever backends it ran on (`exec/last_statement.rs`).
        if mentions.contains(Mentions::LAST_STATEMENT) {
            let current = out.as_deref().unwrap_or(sql);
            let (row_count, found_rows) = (client.last.row_count, client.last.found_rows);
            if let Some(s) =
                hscale_sql::rewrite::replace_last_statement(current, row_count, found_rows)
            {
                out = Some(s);
                is_live = true;
            }
        }
        // The diagnostics area: the session's own list (`exec/conditions/list.rs`).
        if let Some(counts) = client.counts {
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
            if let Some(s) = self.proxy_values(current, client.user, client.host_name) {
                out = Some(s);
            }
        }
        Ok(out.map(|out| (out, is_live)))
    }

    /// `current` (a statement reading information_schema) with the
    /// logical tables in place of their partitions and the sequences'
    /// next values as TABLES' AUTO_INCREMENT; `None` when nothing changes.
    pub async fn logical_tables(&mut self, current: &str) -> Result<Option<String>, ProxyError> {
        let dict = self.ctx.partitioning.dictionary();
        let counters = if dict.has_sequences()
            && hscale_sql::mentions::contains_ci(current.as_bytes(), b"TABLES")
        {
            crate::seq::logical::auto_increments(self.ctx.pool(self.worker, BackendId::MAIN), &dict)
                .await?
        } else {
            Vec::new()
        };
        let remote = self.remote_view_rows(current, &dict).await?;
        Ok(
            hscale_route::router::logical_views(current, &dict, &counters, &remote).or_else(|| {
                hscale_route::router::remote_auto_increments(current, &dict, &counters)
            }),
        )
    }

    /// `sql` with hscale's values for `@@max_allowed_packet`,
    /// `@@max_connections` and `CONNECTION_ID()`; `None` when it reads
    /// none of them. Also applied at PREPARE: these values do not change
    /// during a session.
    pub fn proxy_values(&self, sql: &str, user: &str, host_name: &str) -> Option<String> {
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
        let id = u64::from(self.connection_id);
        if let Some(s) = hscale_sql::rewrite::replace_connection_id(current, id) {
            out = Some(s);
        }
        // `@@pseudo_thread_id` is the connection id too, unless the
        // session set it (the value keeps the variable's column type).
        let current = out.as_deref().unwrap_or(sql);
        if current.contains("@@")
            && hscale_sql::mentions::contains_ci(current.as_bytes(), b"PSEUDO_THREAD_ID")
        {
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
        let host = self
            .ctx
            .live()
            .user(user)
            .map_or_else(|| "%".to_string(), |u| u.host().to_string());
        let account = format!("{user}@{host}");
        let user = format!("{user}@{host_name}");
        if let Some(s) = hscale_sql::rewrite::replace_user_functions(current, &user, &account) {
            out = Some(s);
        }
        out
    }

    /// The system variables whose value through hscale is hscale's limit.
    fn proxy_limits(&self) -> [(&'static str, u64); 2] {
        let proxy = &self.ctx.config.proxy;
        [
            ("max_allowed_packet", proxy.max_allowed_packet as u64),
            ("max_connections", proxy.max_connections as u64),
        ]
    }

    /// information_schema's `GLOBAL_VARIABLES` (`is_global`) or
    /// `SESSION_VARIABLES` with hscale's values: its limits, and the
    /// session's `pseudo_thread_id` ([`Bindings::pseudo_thread_id`]); the same
    /// columns and types.
    pub fn variables_table(&self, is_global: bool) -> String {
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
            .state
            .vars
            .items()
            .iter()
            .any(|i| i.key == "pseudo_thread_id");
        (!is_set).then_some(u64::from(self.connection_id))
    }
}

/// `SHOW [GLOBAL | SESSION] VARIABLES [filter]` as a SELECT over
/// information_schema with hscale's limits in place of the backend's
/// values; same columns, same order (by name, bytewise).
pub fn show_variables(is_global: bool, filter: &str) -> String {
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

/// `SHOW [SESSION] STATUS [filter]` as a SELECT over
/// information_schema.SESSION_STATUS with the client's TLS session in
/// `Ssl_version` and `Ssl_cipher`; the names as SHOW prints them (the
/// first letter upper case, `wsrep*` all lower case) in the server's
/// own order (SHOW STATUS is not sorted: no ORDER BY).
pub fn show_status(tls: Option<&TlsSession>, filter: &str) -> String {
    let (version, cipher) = match tls {
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

/// `text` after its first word when that word is `word` (any case).
fn strip_word<'a>(text: &'a str, word: &str) -> Option<&'a str> {
    let head = text.get(..word.len())?;
    let rest = text.get(word.len()..)?;
    (head.eq_ignore_ascii_case(word) && rest.starts_with(|c: char| c.is_whitespace() || c == '\''))
        .then_some(rest)
}
