//! What a client may reach through the proxy, whatever its backend
//! account's grants: hscale's own schema only through HSCALE commands
//! (`hscale_sql::guard`), and nothing of the backend accounts' credentials
//! (SHOW GRANTS answers for the proxy user, SHOW GRANTS FOR another account
//! and SHOW CREATE USER are refused).
//!
//! A client's statements run as its backend identity
//! (`[[users]] backend_user`, `Context::pool_as`), so the backends' own
//! grants apply to everything else.

use hscale_route::BackendId;
use hscale_sql::guard::{self, Reach};
use hscale_sql::{tokenize, TokenKind};
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::admin::AdminOutput;
use crate::error::ProxyError;

/// The proxy's own schema: the dictionary, the operations journal, the
/// decisions of transactions across backends, the sequences.
pub const RESERVED_SCHEMA: &str = "hscale";

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// Refuse a statement that reaches hscale's own schema, as the server
    /// refuses a table or database without grants (1142, 1044), dynamic
    /// SQL whose text the proxy cannot check, or a user variable the
    /// proxy reserves (1235).
    pub(super) fn check_reach(&self, sql: &str) -> Result<(), ProxyError> {
        match guard::reserved_reach(sql, RESERVED_SCHEMA) {
            None => Ok(()),
            Some(Reach::Table { command, table }) => Err(ProxyError::TableAccessDenied {
                command,
                user: self.info.user.clone(),
                host: self.info.host.clone(),
                db: RESERVED_SCHEMA.into(),
                table,
            }),
            Some(Reach::Database) => Err(self.db_denied(RESERVED_SCHEMA)),
            Some(Reach::Dynamic) => Err(ProxyError::Unsupported {
                what: "PREPARE ... FROM or EXECUTE IMMEDIATE with anything but string literals through hscale".into(),
            }),
            // `@hscale_dictionary_version` is what global tables' fence
            // triggers trust (`admin/setup_global_table.rs`).
            Some(Reach::Variable) => Err(ProxyError::Unsupported {
                what: format!("naming a user variable @{RESERVED_SCHEMA}_... (reserved for the proxy's fences)"),
            }),
        }
    }

    /// Refuse `USE` (COM_INIT_DB, the handshake's or COM_CHANGE_USER's
    /// database) of hscale's own schema.
    pub(super) fn check_db(&self, db: &str) -> Result<(), ProxyError> {
        if guard::is_reserved_db(db, RESERVED_SCHEMA) {
            return Err(self.db_denied(RESERVED_SCHEMA));
        }
        Ok(())
    }

    fn db_denied(&self, db: &str) -> ProxyError {
        ProxyError::DbAccessDenied {
            user: self.info.user.clone(),
            host: self.info.host.clone(),
            db: db.into(),
        }
    }

    /// SHOW GRANTS [FOR CURRENT_USER[()] | <this user>] answers for the
    /// proxy user: the grants of its backend account, with that account's
    /// name replaced by the proxy user's and nothing of its credentials.
    /// SHOW GRANTS for any other account and SHOW CREATE USER are refused
    /// as the server refuses them without rights on `mysql` (1044).
    /// `Ok(false)`: not such a statement.
    pub(super) async fn account_statement(&mut self, sql: &str) -> Result<bool, ProxyError> {
        let Ok(tokens) = tokenize(sql) else {
            return Ok(false);
        };
        let words: Vec<&hscale_sql::Token> = tokens
            .iter()
            .filter(|t| t.kind != TokenKind::Semicolon)
            .collect();
        let is = |i: usize, w: &str| words.get(i).is_some_and(|t| t.is_word(sql, w));
        if is(0, "SHOW") && is(1, "CREATE") && is(2, "USER") {
            return Err(self.db_denied("mysql"));
        }
        if !(is(0, "SHOW") && is(1, "GRANTS")) {
            return Ok(false);
        }
        if words.len() > 2 {
            let is_self = is(2, "FOR") && {
                let target: String = words[3..]
                    .iter()
                    .map(|t| t.text(sql))
                    .collect::<Vec<_>>()
                    .join("");
                let user = target.split('@').next().unwrap_or("");
                let user = user.trim_matches(|c| c == '`' || c == '\'' || c == '"');
                target.eq_ignore_ascii_case("CURRENT_USER")
                    || target.eq_ignore_ascii_case("CURRENT_USER()")
                    || user == self.info.user
            };
            if !is_self {
                return Err(self.db_denied("mysql"));
            }
        }
        let identity = self.b.ctx.config.identity(&self.info.user);
        let pool = self
            .b
            .ctx
            .pool_as(self.b.worker, BackendId::MAIN, identity)
            .clone();
        let backend_user = pool.cfg.user.clone();
        let mut conn = pool.get(false).await?;
        let rows = match conn.query_rows("SHOW GRANTS").await? {
            Ok(r) => r.strings(),
            Err(err) => {
                return Err(ProxyError::Backend {
                    backend: pool.name().to_string(),
                    during: "hscale: SHOW GRANTS".into(),
                    err,
                })
            }
        };
        drop(conn);
        let rows = rows
            .iter()
            .filter_map(|r| r.first().cloned().flatten())
            .filter_map(|g| proxy_grant(&g, &backend_user, &self.info.user))
            .map(|g| vec![Some(g)])
            .collect();
        let column = format!("Grants for {}@%", self.info.user);
        self.exec()
            .write_admin_output(AdminOutput::Rows {
                columns: vec![column],
                rows,
            })
            .await?;
        Ok(true)
    }
}

/// One row of the backend's SHOW GRANTS as the proxy user's: the
/// privileges and object kept, the account replaced, everything after the
/// account (passwords, authentication plugins, TLS requirements) dropped
/// except WITH GRANT OPTION. Rows that are not a GRANT to the backend
/// account itself are left out.
fn proxy_grant(row: &str, backend_user: &str, proxy_user: &str) -> Option<String> {
    if !row.starts_with("GRANT ") {
        return None;
    }
    let at = ['`', '\''].iter().find_map(|q| {
        let quoted = backend_user.replace(*q, &format!("{q}{q}"));
        row.find(&format!(" TO {q}{quoted}{q}@"))
    })?;
    let privileges = &row[..at];
    let grant_option = if row[at..].contains(" WITH GRANT OPTION") {
        " WITH GRANT OPTION"
    } else {
        ""
    };
    let user = proxy_user.replace('`', "``");
    Some(format!("{privileges} TO `{user}`@`%`{grant_option}"))
}

#[cfg(test)]
mod tests {
    use super::proxy_grant;

    #[test]
    fn grants_lose_the_backend_account_and_its_secrets() {
        let g = |row| proxy_grant(row, "app_ro", "alice");
        assert_eq!(
            g("GRANT USAGE ON *.* TO `app_ro`@`%` IDENTIFIED BY PASSWORD '*0123456789ABCDEF'")
                .as_deref(),
            Some("GRANT USAGE ON *.* TO `alice`@`%`")
        );
        assert_eq!(
            g("GRANT SELECT ON `shop`.* TO `app_ro`@`localhost` IDENTIFIED VIA ed25519 USING 'secret' REQUIRE SSL WITH GRANT OPTION")
                .as_deref(),
            Some("GRANT SELECT ON `shop`.* TO `alice`@`%` WITH GRANT OPTION")
        );
        assert_eq!(g("SET DEFAULT ROLE `r` FOR `app_ro`@`%`"), None);
        assert_eq!(g("GRANT USAGE ON *.* TO `other`@`%`"), None);
    }
}
