//! What is wrong with a configuration ([`Config::problems`]): every
//! problem named with its section and entry, all of them at once, so that
//! `hscale` refuses to start with the whole list (`ConfigError::Invalid`).

use std::net::SocketAddr;

use super::{BackendConfig, Config};

impl Config {
    /// Everything wrong with this configuration, each named precisely.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.proxy.listen.parse::<SocketAddr>().is_err() {
            out.push(format!(
                "[proxy] listen = {:?} is not an address such as \"127.0.0.1:6033\"",
                self.proxy.listen
            ));
        }
        if self.proxy.max_connections == 0 {
            out.push("[proxy] max_connections must be at least 1".into());
        }
        if self.proxy.max_handshakes == 0 {
            out.push("[proxy] max_handshakes must be at least 1".into());
        }
        if self.proxy.handshake_timeout_ms == 0 || self.proxy.wait_timeout_ms == 0 {
            out.push("[proxy] handshake_timeout_ms and wait_timeout_ms must be at least 1".into());
        }
        if self.proxy.plan_timeout_ms == 0 {
            out.push("[proxy] plan_timeout_ms must be at least 1".into());
        }
        if self.proxy.max_allowed_packet < 1024 || self.proxy.max_allowed_packet > 1 << 30 {
            out.push(format!(
                "[proxy] max_allowed_packet = {} must be between 1024 and 1073741824",
                self.proxy.max_allowed_packet
            ));
        }
        if self.proxy.auth_plugin != hscale_wire::auth::NATIVE_PASSWORD
            && self.proxy.auth_plugin != hscale_wire::auth::CACHING_SHA2
        {
            out.push(format!(
                "[proxy] auth_plugin = {:?}: use \"mysql_native_password\" or \"caching_sha2_password\"",
                self.proxy.auth_plugin
            ));
        }
        if !self.http.listen.is_empty() && self.http.listen.parse::<SocketAddr>().is_err() {
            out.push(format!(
                "[http] listen = {:?} is not an address such as \"127.0.0.1:8080\"",
                self.http.listen
            ));
        }
        if self.http.tls && self.tls.cert.is_none() {
            out.push("[http] tls = true needs [tls] cert and key".into());
        }
        if self.http.session_idle_ms < 100 {
            out.push(format!(
                "[http] session_idle_ms = {} must be at least 100",
                self.http.session_idle_ms
            ));
        }
        if !self.metrics.listen.is_empty() && self.metrics.listen.parse::<SocketAddr>().is_err() {
            out.push(format!(
                "[metrics] listen = {:?} is not an address such as \"127.0.0.1:9104\"",
                self.metrics.listen
            ));
        }
        if self.tls.cert.is_some() != self.tls.key.is_some() {
            out.push("[tls] cert and key go together: set both or neither".into());
        }
        if self.tls.require && self.tls.cert.is_none() {
            out.push("[tls] require = true needs cert and key".into());
        }
        if self.users.is_empty() {
            out.push("no [[users]]: no client could log in".into());
        }
        self.user_problems(&mut out);
        self.user_defaults.problems("[user_defaults]", &mut out);
        if self.backends.is_empty() {
            out.push(
                "no [[backends]]: the first backend is the main backend and is required".into(),
            );
        }
        self.backend_problems(&mut out);
        self.cache_problems(&mut out);
        if self.proxy.replica_check_interval_ms == 0 {
            out.push("[proxy] replica_check_interval_ms must be at least 1".into());
        }
        out
    }

    /// What is wrong with each `[[users]]` entry (`problems`).
    /// `[[cache.rules]]`: each names one table ("db.table") or one
    /// SELECT, and a mode.
    fn cache_problems(&self, out: &mut Vec<String>) {
        if !self.cache.rules.is_empty() && self.cache.max_bytes == 0 {
            out.push("[[cache.rules]] need a result cache: set [cache] max_bytes".into());
        }
        for (i, r) in self.cache.rules.iter().enumerate() {
            let at = format!("[[cache.rules]] #{}", i + 1);
            if r.rule().is_none() {
                out.push(format!(
                    "{at}: mode = {:?} with ttl_ms = {}: \"exact\" takes no ttl_ms, \"ttl\" a ttl_ms over 0",
                    r.mode, r.ttl_ms
                ));
            }
            match (r.table.is_empty(), r.statement.is_empty()) {
                (false, true) => {
                    if r.table
                        .split_once('.')
                        .is_none_or(|(db, t)| db.is_empty() || t.is_empty())
                    {
                        out.push(format!("{at}: table = {:?} is not \"db.table\"", r.table));
                    }
                }
                (true, false) => {
                    if let Some(e) = statement_problem(&r.statement, r.rule()) {
                        out.push(format!("{at}: statement = {:?}: {e}", r.statement));
                    }
                }
                _ => out.push(format!("{at}: give one of table or statement")),
            }
        }
    }

    fn user_problems(&self, out: &mut Vec<String>) {
        for (i, u) in self.users.iter().enumerate() {
            if u.name.is_empty() {
                out.push(format!("[[users]] #{}: name is empty", i + 1));
            }
            if self.users[..i].iter().any(|o| o.name == u.name) {
                out.push(format!(
                    "[[users]] #{}: user {:?} is defined twice",
                    i + 1,
                    u.name
                ));
            }
            if u.host.as_deref() == Some("") {
                out.push(format!(
                    "[[users]] #{}: host is empty (leave it out for every host)",
                    i + 1
                ));
            }
            if u.backend_user.as_deref() == Some("") {
                out.push(format!("[[users]] #{}: backend_user is empty", i + 1));
            }
            u.limits()
                .problems(&format!("[[users]] #{} ({:?})", i + 1, u.name), out);
            if u.backend_user.is_none() && !u.backend_password.is_empty() {
                out.push(format!(
                    "[[users]] #{}: backend_password without backend_user",
                    i + 1
                ));
            }
            if let Some(token) = &u.http_token {
                if token.len() < 16 {
                    out.push(format!(
                        "[[users]] #{}: http_token must be at least 16 characters",
                        i + 1
                    ));
                }
                if self.users[..i]
                    .iter()
                    .any(|o| o.http_token.as_ref() == Some(token))
                {
                    out.push(format!(
                        "[[users]] #{}: http_token is another user's too",
                        i + 1
                    ));
                }
                if u.host.as_deref().is_some_and(|h| h != "%") {
                    out.push(format!(
                        "[[users]] #{}: http_token on an account bound to a host, which HTTP cannot use",
                        i + 1
                    ));
                }
            }
        }
    }

    /// What is wrong with each `[[backends]]` entry and its replicas
    /// (`problems`).
    fn backend_problems(&self, out: &mut Vec<String>) {
        for (i, b) in self.backends.iter().enumerate() {
            let at = format!("[[backends]] #{} ({:?})", i + 1, b.name);
            if b.name.is_empty() {
                out.push(format!("{at}: name is empty"));
            }
            if self.backends[..i].iter().any(|o| o.name == b.name) {
                out.push(format!("{at}: backend name is used twice"));
            }
            if b.address.parse::<SocketAddr>().is_err() {
                out.push(format!(
                    "{at}: address = {:?} is not an address such as \"127.0.0.1:3306\"",
                    b.address
                ));
            }
            if b.user.is_empty() {
                out.push(format!("{at}: user is empty"));
            }
            if b.max_connections == 0 {
                out.push(format!("{at}: max_connections must be at least 1"));
            }
            if b.min_connections > b.max_connections {
                out.push(format!(
                    "{at}: min_connections ({}) is larger than max_connections ({})",
                    b.min_connections, b.max_connections
                ));
            }
            if b.tls && b.ca.is_none() {
                out.push(format!(
                    "{at}: tls = true needs ca = \"<PEM file of the CA that signed the server's certificate>\""
                ));
            }
            if !b.tls && (b.ca.is_some() || b.cert.is_some() || b.server_name.is_some()) {
                out.push(format!("{at}: ca, cert and server_name need tls = true"));
            }
            if b.cert.is_some() != b.key.is_some() {
                out.push(format!(
                    "{at}: cert and key go together: set both or neither"
                ));
            }
            for (k, r) in b.replicas.iter().enumerate() {
                if r.parse::<SocketAddr>().is_err() {
                    out.push(format!(
                        "{at}: replicas = {r:?} is not an address such as \"127.0.0.1:3307\""
                    ));
                }
                let is_taken = |o: &BackendConfig| o.address == *r || o.replicas.contains(r);
                if self.backends[..i].iter().any(is_taken)
                    || *r == b.address
                    || b.replicas[..k].contains(r)
                {
                    out.push(format!(
                        "{at}: replica {r:?} is listed twice or is a backend's address"
                    ));
                }
            }
            if self.backends[..i]
                .iter()
                .any(|o| o.replicas.contains(&b.address))
            {
                out.push(format!(
                    "{at}: address {:?} is listed as another backend's replica",
                    b.address
                ));
            }
        }
    }
}

/// What keeps `statement` from being cached by `rule`: one SELECT, and
/// for EXACT one whose tables hscale can tell (`hscale_sql::reads`).
fn statement_problem(
    statement: &str,
    rule: Option<hscale_route::dictionary::CacheRule>,
) -> Option<&'static str> {
    let facts = hscale_sql::analyze(statement);
    if facts.kind != hscale_sql::Kind::Select
        || facts.statements != 1
        || facts.fingerprint.is_none()
    {
        return Some("not one SELECT");
    }
    if rule == Some(hscale_route::dictionary::CacheRule::Exact) {
        let tables = hscale_sql::tokenize(statement)
            .ok()
            .and_then(|tokens| hscale_sql::reads::tables_read(statement, &tokens));
        if tables.is_none_or(|t| t.is_empty()) {
            return Some("hscale cannot tell which tables it reads: it cannot be cached EXACT");
        }
    }
    None
}
