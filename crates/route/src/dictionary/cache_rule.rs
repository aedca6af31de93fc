//! What the result cache keeps, as the dictionary holds it: a rule per
//! table (`HSCALE CACHE_TABLE`) and per statement fingerprint (`HSCALE
//! CACHE_STATEMENT`), stored with the dictionary on the main
//! backend so that every proxy serves the same reads from its cache.

use super::{Dictionary, TableName};

/// How the result cache serves reads of a table (`HSCALE CACHE_TABLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheRule {
    /// Served only while no write touched the table since it was stored
    /// (version rows bumped by triggers, checked on every hit).
    Exact,
    /// Served for up to this many milliseconds, whatever was written.
    Ttl(u64),
}

impl CacheRule {
    /// The mode's name as stored and shown.
    pub fn mode(&self) -> &'static str {
        match self {
            CacheRule::Exact => "EXACT",
            CacheRule::Ttl(_) => "TTL",
        }
    }

    pub fn ttl_ms(&self) -> u64 {
        match self {
            CacheRule::Exact => 0,
            CacheRule::Ttl(ms) => *ms,
        }
    }

    /// From the stored mode and milliseconds.
    pub fn parse(mode: &str, ttl_ms: u64) -> Option<CacheRule> {
        if mode.eq_ignore_ascii_case("EXACT") {
            Some(CacheRule::Exact)
        } else if mode.eq_ignore_ascii_case("TTL") && ttl_ms > 0 {
            Some(CacheRule::Ttl(ttl_ms))
        } else {
            None
        }
    }
}

impl Dictionary {
    /// The result cache's rule for `name` (`None`: not cached).
    pub fn cache_rule(&self, name: &TableName) -> Option<CacheRule> {
        self.cached.get(name).copied()
    }

    /// Whether any table is cached: only then does a shareable read look
    /// for the tables it reads (`exec/cache.rs`).
    pub fn has_cached(&self) -> bool {
        !self.cached.is_empty() || !self.cached_statements.is_empty()
    }

    /// The rule of statements of fingerprint hash `digest` (`HSCALE
    /// CACHE_STATEMENT`).
    pub fn statement_rule(&self, digest: u64) -> Option<CacheRule> {
        self.cached_statements.get(&digest).map(|(_, r)| *r)
    }

    /// The cached statements: fingerprint hash, statement, rule.
    pub fn cached_statements(&self) -> impl Iterator<Item = (u64, &str, CacheRule)> {
        self.cached_statements
            .iter()
            .map(|(h, (s, r))| (*h, s.as_str(), *r))
    }

    /// Cache statements of fingerprint hash `digest` by `rule`, or stop
    /// (`None`).
    pub fn set_statement_rule(&mut self, digest: u64, statement: &str, rule: Option<CacheRule>) {
        match rule {
            Some(r) => self
                .cached_statements
                .insert(digest, (statement.to_string(), r)),
            None => self.cached_statements.remove(&digest),
        };
        self.version += 1;
    }

    pub fn cached(&self) -> impl Iterator<Item = (&TableName, &CacheRule)> {
        self.cached.iter()
    }

    /// Cache `name`'s reads by `rule`, or stop (`None`).
    pub fn set_cache_rule(&mut self, name: TableName, rule: Option<CacheRule>) {
        match rule {
            Some(r) => self.cached.insert(name, r),
            None => self.cached.remove(&name),
        };
        self.version += 1;
    }
}
