//! This proxy's own result cache rules (`[[cache.rules]]` in the config
//! file), beside the dictionary's (`HSCALE CACHE_TABLE` and
//! `CACHE_STATEMENT`, the fleet's): the dictionary's rule wins where both
//! name a table or a statement. Replaced whole by SIGHUP
//! (`Context::reload` calls [`ResultCache::set_local`], which also
//! forgets every answer kept). A read looks here only when the
//! dictionary has no rule for it, and a proxy without local rules never
//! does (`ResultCache::has_rules`, one relaxed load).
//!
//! An EXACT table or statement of the config gets its version triggers
//! from the first miss of a read under it (`ResultCache::arm`), as a
//! physical table a partition change created does; they stay when the
//! rule is removed (writers keep paying one row update per row written
//! until `HSCALE UNCACHE_TABLE` or `UNCACHE_STATEMENT` of a rule that
//! names the table removes them).

use std::collections::HashMap;

use hscale_route::dictionary::{CacheRule, TableName};
use hscale_sql::reads::TableRead;

use super::ResultCache;
use crate::config::CacheConfig;

/// The rules of one config, ready to look up.
#[derive(Debug, Default)]
pub struct LocalRules {
    tables: HashMap<TableName, CacheRule>,
    /// By fingerprint hash.
    statements: HashMap<u64, CacheRule>,
    /// The tables the EXACT statements read, as they name them (DDL
    /// through this proxy marks them: `exec/cache_ddl.rs`).
    exact_statement_tables: Vec<TableRead>,
    /// The entries they were made of.
    source: Vec<crate::config::CacheRuleConfig>,
}

impl LocalRules {
    /// The rules of `config` (validated: `Config::problems`; an entry
    /// that names no rule is skipped).
    pub fn of(config: &CacheConfig) -> LocalRules {
        let mut out = LocalRules {
            source: config.rules.clone(),
            ..LocalRules::default()
        };
        for r in &config.rules {
            let Some(rule) = r.rule() else {
                continue;
            };
            if let Some((db, table)) = r.table.split_once('.') {
                out.tables.insert(TableName::new(db, table), rule);
                continue;
            }
            let Some(fp) = hscale_sql::analyze(&r.statement).fingerprint else {
                continue;
            };
            out.statements.insert(fp.hash, rule);
            if rule == CacheRule::Exact {
                let tables = hscale_sql::tokenize(&r.statement)
                    .ok()
                    .and_then(|tokens| hscale_sql::reads::tables_read(&r.statement, &tokens));
                for t in tables.unwrap_or_default() {
                    if !out.exact_statement_tables.contains(&t) {
                        out.exact_statement_tables.push(t);
                    }
                }
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.statements.is_empty()
    }

    pub fn table(&self, name: &TableName) -> Option<CacheRule> {
        self.tables.get(name).copied()
    }

    pub fn statement(&self, digest: u64) -> Option<CacheRule> {
        self.statements.get(&digest).copied()
    }

    /// Whether a DDL statement naming `name` changes what a local EXACT
    /// rule serves (a table cached EXACT, or one an EXACT statement may
    /// read, by name whatever the reading session's database).
    pub fn is_exact(&self, name: &TableName) -> bool {
        self.table(name) == Some(CacheRule::Exact)
            || crate::partition::versions::is_read_by(&self.exact_statement_tables, name)
    }
}

impl ResultCache {
    /// This proxy's rules now.
    pub fn local(&self) -> arc_swap::Guard<std::sync::Arc<LocalRules>> {
        self.local.load()
    }

    /// Whether this proxy has rules of its own (a read of a dictionary
    /// that caches nothing looks no further when it has not).
    pub fn has_rules(&self) -> bool {
        self.has_local.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// SIGHUP: take `config`'s rules, and forget every answer kept when
    /// they changed (a rule gone or changed must not serve what it
    /// stored).
    pub fn set_local(&self, config: &CacheConfig) {
        if self.local.load().source == config.rules {
            return;
        }
        let rules = LocalRules::of(config);
        self.has_local
            .store(!rules.is_empty(), std::sync::atomic::Ordering::Relaxed);
        self.local.store(std::sync::Arc::new(rules));
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CacheRuleConfig;

    #[test]
    fn rules_of_a_config() {
        let rule = |table: &str, statement: &str, mode: &str, ttl_ms| CacheRuleConfig {
            table: table.into(),
            statement: statement.into(),
            mode: mode.into(),
            ttl_ms,
        };
        let config = CacheConfig {
            max_bytes: 1 << 20,
            rules: vec![
                rule("shop.products", "", "exact", 0),
                rule("shop.stats", "", "TTL", 5000),
                rule("", "SELECT v FROM top WHERE id = 1", "exact", 0),
                rule("", "SELECT n FROM hits WHERE day = 3", "ttl", 200),
            ],
        };
        let r = LocalRules::of(&config);
        assert_eq!(
            r.table(&TableName::new("shop", "products")),
            Some(CacheRule::Exact)
        );
        assert_eq!(
            r.table(&TableName::new("shop", "stats")),
            Some(CacheRule::Ttl(5000))
        );
        assert_eq!(r.table(&TableName::new("other", "products")), None);
        let digest = |sql: &str| hscale_sql::analyze(sql).fingerprint.unwrap().hash;
        // Any literals: the statement's shape.
        assert_eq!(
            r.statement(digest("SELECT v FROM top WHERE id = 42")),
            Some(CacheRule::Exact)
        );
        assert_eq!(
            r.statement(digest("SELECT n FROM hits WHERE day = 9")),
            Some(CacheRule::Ttl(200))
        );
        assert!(r.is_exact(&TableName::new("any", "top")));
        assert!(r.is_exact(&TableName::new("shop", "products")));
        assert!(!r.is_exact(&TableName::new("shop", "stats")));
        assert!(!r.is_exact(&TableName::new("shop", "hits")));
        assert!(LocalRules::of(&CacheConfig::default()).is_empty());
    }
}
