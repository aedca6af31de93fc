//! The values hscale puts in place of what a backend would answer for a
//! client (`session/rewrite.rs` decides which statements need them, and
//! says why each is hscale's own): its limits, the session's ids and
//! user, information_schema's tables with the logical tables in place of
//! their partitions, SHOW VARIABLES and SHOW STATUS as the SELECTs over
//! information_schema they are on a server.

use std::fmt::Write;

use crate::error::ProxyError;
use crate::exec::Bindings;
use crate::tls::TlsSession;

impl Bindings {
    /// `current` (a statement reading information_schema) with the
    /// logical tables in place of their partitions and the sequences'
    /// next values as TABLES' AUTO_INCREMENT; `None` when nothing changes.
    pub async fn logical_tables(&mut self, current: &str) -> Result<Option<String>, ProxyError> {
        let dict = self.ctx.partitioning.dictionary();
        let counters = if dict.has_sequences()
            && hscale_sql::mentions::contains_ci(current.as_bytes(), b"TABLES")
        {
            crate::seq::logical::auto_increments(&self.ctx, self.worker, &dict).await?
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
