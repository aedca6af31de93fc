//! SHOW GRANTS and SHOW CREATE USER through hscale (what a client may
//! reach, `session/access.rs`): SHOW GRANTS for the client's own account
//! answers the grants of its backend account as the proxy user's; the
//! rest is refused as a server refuses it without rights on `mysql`.

use hscale_route::BackendId;
use hscale_sql::{tokenize, TokenKind};
use tokio::io::{AsyncRead, AsyncWrite};

use super::Exec;
use crate::admin::AdminOutput;
use crate::error::ProxyError;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// SHOW GRANTS [FOR CURRENT_USER[()] | <this user>] answers for the
    /// proxy user: the grants of its backend account, with that account's
    /// name replaced by the proxy user's and nothing of its credentials.
    /// SHOW GRANTS for any other account and SHOW CREATE USER are refused
    /// as the server refuses them without rights on `mysql` (1044).
    /// `Ok(false)`: not such a statement.
    pub async fn account_statement(
        &mut self,
        sql: &str,
        proxy_user: &str,
        host: &str,
    ) -> Result<bool, ProxyError> {
        let db_denied = |db: &str| ProxyError::DbAccessDenied {
            user: proxy_user.to_string(),
            host: host.to_string(),
            db: db.into(),
        };
        let Ok(tokens) = tokenize(sql) else {
            return Ok(false);
        };
        let words: Vec<&hscale_sql::Token> = tokens
            .iter()
            .filter(|t| t.kind != TokenKind::Semicolon)
            .collect();
        let is = |i: usize, w: &str| words.get(i).is_some_and(|t| t.is_word(sql, w));
        if is(0, "SHOW") && is(1, "CREATE") && is(2, "USER") {
            return Err(db_denied("mysql"));
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
                    || user == proxy_user
            };
            if !is_self {
                return Err(db_denied("mysql"));
            }
        }
        let identity = self.b.ctx.config.identity(proxy_user);
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
            .filter_map(|g| proxy_grant(&g, &backend_user, proxy_user))
            .map(|g| vec![Some(g)])
            .collect();
        let column = format!("Grants for {proxy_user}@%");
        self.write_admin_output(AdminOutput::Rows {
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
