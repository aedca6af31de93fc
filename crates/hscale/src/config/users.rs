//! `[[users]]` and `[user_defaults]`: the client accounts hscale accepts,
//! the hosts each may connect from, and each user's limits.

use super::*;

#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    pub name: String,
    #[serde(default)]
    pub password: String,
    #[serde(default)]
    pub admin: bool,
    /// The backend account this user's statements run as, on every
    /// backend, so the backends' own grants apply to it. Several users
    /// (a role) may share one. Unset: the backend's own `user` of
    /// `[[backends]]` (the proxy's account).
    #[serde(default)]
    pub backend_user: Option<String>,
    #[serde(default)]
    pub backend_password: String,
    /// The host part of this account, as in MariaDB's `'name'@'host'`:
    /// an address, `localhost`, or a pattern with `%` and `_`. A client
    /// connecting from elsewhere is refused (1045), and `CURRENT_USER()`
    /// names the account with it. Unset: `%`, every host.
    #[serde(default)]
    pub host: Option<String>,
    /// A bearer token for the HTTP API (`Authorization: Bearer <token>`,
    /// `http_api`): a request carrying it runs as this user, as one with
    /// the user's name and password in `Authorization: Basic` does. At
    /// least 16 characters; left out of a written config when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_token: Option<String>,
    // The user's limits (`UserLimits`, `crate::tenant`); unset ones come
    // from `[user_defaults]`.
    #[serde(default)]
    pub max_connections: Option<u32>,
    #[serde(default)]
    pub max_statements_per_s: Option<u32>,
    #[serde(default)]
    pub statements_burst: Option<u32>,
    #[serde(default)]
    pub throttle_wait_ms: Option<u64>,
    #[serde(default)]
    pub backend_share: Option<f64>,
    #[serde(default)]
    pub priority: Option<PriorityName>,
    #[serde(default)]
    pub max_statement_ms: Option<u64>,
    /// Where this user's plain reads go: `"primary"` (the default) or
    /// `"replica"` (a usable replica of each backend, when it has one;
    /// `exec/read_from.rs`). A session changes it with `SET
    /// hscale_read_from`. Left out of a written config when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_from: Option<ReadFromName>,
}

/// `read_from = "primary" | "replica"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadFromName {
    Primary,
    Replica,
}

/// A user's share of the proxy (`[user_defaults]`, and the same keys in
/// `[[users]]`); what each means and its default is in `crate::tenant`
/// and the book's `tenants.md`. `None`: not set here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserLimits {
    /// Client connections of the user at once (0: no limit).
    pub max_connections: Option<u32>,
    /// Statements per second (0: no limit), a token bucket of
    /// `statements_burst` tokens.
    pub max_statements_per_s: Option<u32>,
    pub statements_burst: Option<u32>,
    /// How long a statement beyond the rate waits for a token.
    pub throttle_wait_ms: Option<u64>,
    /// The fraction of each backend's connections the user may hold
    /// while other users are active there, in (0, 1].
    pub backend_share: Option<f64>,
    pub priority: Option<PriorityName>,
    /// A statement running longer is killed on its backend (0: never).
    pub max_statement_ms: Option<u64>,
}

/// `priority = "high" | "normal" | "low"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PriorityName {
    High,
    Normal,
    Low,
}

impl UserLimits {
    /// Nothing set.
    pub fn is_unset(&self) -> bool {
        *self == UserLimits::default()
    }

    /// These limits, each unset one taken from `defaults`.
    pub fn or(&self, defaults: &UserLimits) -> UserLimits {
        UserLimits {
            max_connections: self.max_connections.or(defaults.max_connections),
            max_statements_per_s: self.max_statements_per_s.or(defaults.max_statements_per_s),
            statements_burst: self.statements_burst.or(defaults.statements_burst),
            throttle_wait_ms: self.throttle_wait_ms.or(defaults.throttle_wait_ms),
            backend_share: self.backend_share.or(defaults.backend_share),
            priority: self.priority.or(defaults.priority),
            max_statement_ms: self.max_statement_ms.or(defaults.max_statement_ms),
        }
    }

    /// What is wrong with these limits, each prefixed by `at`.
    pub(super) fn problems(&self, at: &str, out: &mut Vec<String>) {
        if let Some(share) = self.backend_share {
            if !(share > 0.0 && share <= 1.0) {
                out.push(format!(
                    "{at}: backend_share = {share} must be more than 0 and at most 1"
                ));
            }
        }
        if self.statements_burst == Some(0) {
            out.push(format!("{at}: statements_burst must be at least 1"));
        }
    }
}

impl UserConfig {
    /// This user's own limits (unset ones: `None`).
    pub fn limits(&self) -> UserLimits {
        UserLimits {
            max_connections: self.max_connections,
            max_statements_per_s: self.max_statements_per_s,
            statements_burst: self.statements_burst,
            throttle_wait_ms: self.throttle_wait_ms,
            backend_share: self.backend_share,
            priority: self.priority,
            max_statement_ms: self.max_statement_ms,
        }
    }
}

impl UserConfig {
    /// The account's host part (`%` when unset).
    pub fn host(&self) -> &str {
        self.host.as_deref().unwrap_or("%")
    }

    /// Whether a client from `client_host` (its IP, or `localhost`; as
    /// [`client_host_name`](crate::login::client_host_name) gives it,
    /// and its IP too) may log in as this account: MariaDB's host match,
    /// `%` any run of characters, `_` one, case-insensitive.
    pub fn is_host_allowed(&self, client_hosts: &[&str]) -> bool {
        let pattern = self.host();
        client_hosts
            .iter()
            .any(|h| like(pattern.as_bytes(), h.as_bytes()))
    }
}

/// SQL LIKE without escapes, ASCII case-insensitive.
fn like(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'%', rest)) => (0..=s.len()).any(|i| like(rest, &s[i..])),
        Some((b'_', rest)) => !s.is_empty() && like(rest, &s[1..]),
        Some((c, rest)) => s
            .split_first()
            .is_some_and(|(d, tail)| c.eq_ignore_ascii_case(d) && like(rest, tail)),
    }
}

impl std::fmt::Debug for UserConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserConfig")
            .field("name", &self.name)
            .field("password", &"<redacted>")
            .field("admin", &self.admin)
            .field("backend_user", &self.backend_user)
            .field("backend_password", &"<redacted>")
            .field("host", &self.host)
            .field(
                "http_token",
                &self.http_token.as_ref().map(|_| "<redacted>"),
            )
            .field("limits", &self.limits())
            .finish()
    }
}
