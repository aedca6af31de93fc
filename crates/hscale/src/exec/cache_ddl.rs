//! The result cache around a DDL statement through this proxy (issue 33):
//! TRUNCATE fires no trigger, DROP and CREATE lose and need the version
//! triggers, RENAME and ALTER may put another table under a cached name.
//! A statement whose first word is TRUNCATE, DROP, CREATE, RENAME or
//! ALTER and that names a table cached EXACT, or one a statement cached
//! EXACT reads (a name it uses without a database matches the table in
//! any), or drops the database of one, runs between two steps on each backend of the table's physical
//! tables (`partition/versions.rs`):
//!
//! ```text
//!  mark (autocommitted) ─► the statement ─► triggers put back if the
//!  table is there ─► marks deleted and versions bumped (one transaction)
//! ```
//!
//! While a mark is there no proxy stores or serves an answer of the
//! table (its version read sees it), so no answer read before or during
//! the statement is served after it, even the instant its OK reaches the
//! client; after the bump, every answer stored before the mark is out of
//! date. Triggers are back before the marks go: a write between the
//! CREATE and the triggers is committed before (CREATE TRIGGER waits for
//! its metadata lock) and seen by every read stored after. A proxy that
//! dies between the steps leaves a mark: the table is not cached until
//! `HSCALE CACHE_TABLE` again (which clears marks), never a stale answer.
//!
//! Other statements pay one comparison of their kind. DDL run on a
//! backend directly is not seen: see docs/src/cache.md.

use hscale_route::dictionary::{CacheRule, TableName};
use hscale_route::BackendId;

use super::bindings::Bindings;
use crate::partition::versions::{self, physical_tables};

/// The physical tables a DDL statement marked, per backend, with the
/// mark's slot.
pub struct Marks {
    slot: u64,
    by_backend: Vec<(BackendId, Vec<(String, String)>)>,
}

/// The statement's first word, upper-cased, when a DDL the cache cares
/// about.
fn ddl_word(sql: &str) -> Option<&'static str> {
    let first = sql
        .trim_start()
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()?;
    ["TRUNCATE", "DROP", "CREATE", "RENAME", "ALTER"]
        .into_iter()
        .find(|w| first.eq_ignore_ascii_case(w))
}

/// Before `sql` runs: mark the cached EXACT tables it names. `None` (and
/// nothing done) for any other statement.
pub async fn before(b: &Bindings, facts: &hscale_sql::Facts, sql: &str) -> Option<Marks> {
    if facts.kind != hscale_sql::Kind::Other {
        return None;
    }
    let word = ddl_word(sql)?;
    let d = b.ctx.partitioning.dictionary();
    let by_statements = versions::exact_statement_tables(&d);
    let local = b.reads.cache.as_ref().map(|c| c.local());
    let is_local = |n: &TableName| local.as_ref().is_some_and(|l| l.is_exact(n));
    if !d.cached().any(|(_, r)| *r == CacheRule::Exact)
        && by_statements.is_empty()
        && local.as_ref().is_none_or(|l| l.is_empty())
    {
        return None;
    }
    let db = b.state.db.as_deref();
    let mut names: Vec<TableName> = match &facts.change {
        Some(hscale_sql::SessionChange::DropDatabase(gone)) => d
            .cached()
            .map(|(n, _)| n.clone())
            .chain(
                by_statements
                    .iter()
                    .map(|t| TableName::new(t.db.as_deref().unwrap_or(gone), &t.table)),
            )
            .filter(|n| n.db == *gone)
            .collect(),
        _ => {
            let lexed;
            let tokens = if facts.tokens.is_empty() {
                lexed = hscale_sql::tokenize(sql).ok()?;
                &lexed[..]
            } else {
                &facts.tokens[..]
            };
            hscale_route::router::tables_named(sql, tokens, db)
        }
    };
    // Tables cached EXACT, and those a statement cached EXACT may read
    // (by name, whatever the reading session's database).
    names.retain(|n| {
        d.cache_rule(n) == Some(CacheRule::Exact)
            || versions::is_read_by(&by_statements, n)
            || is_local(n)
    });
    if names.is_empty() {
        return None;
    }
    let mut by_backend: Vec<(BackendId, Vec<(String, String)>)> = Vec::new();
    for name in &names {
        for (backend, pdb, table) in
            physical_tables(&d, name, BackendId::MAIN, b.ctx.backend_count()).unwrap_or_default()
        {
            match by_backend.iter_mut().find(|(x, _)| *x == backend) {
                Some((_, list)) => list.push((pdb, table)),
                None => by_backend.push((backend, vec![(pdb, table)])),
            }
        }
    }
    drop(d);
    let slot = versions::MARKED | mark_id();
    let marks = Marks { slot, by_backend };
    for (backend, tables) in &marks.by_backend {
        let r = async {
            let mut c = b.ctx.pool(b.worker, *backend).get_own().await?;
            versions::mark(&mut c, tables, slot).await
        };
        if let Err(e) = r.await {
            tracing::warn!(error = %e, word, "marking cached tables before a DDL statement");
        }
    }
    Some(marks)
}

/// A mark's slot below [`versions::MARKED`]: unique to this statement
/// among the proxies of a fleet (the process, the time, a count).
fn mark_id() -> u64 {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&u64::from(std::process::id()).to_le_bytes());
    h.update(&nanos.to_le_bytes());
    h.update(&n.to_le_bytes());
    h.digest() & (versions::MARKED - 1)
}

/// After the statement (whatever its outcome): triggers put back where
/// the table is (again) there, then the marks deleted and the versions
/// bumped.
pub async fn after(b: &Bindings, marks: Marks) {
    let mut tables = Vec::new();
    for (backend, list) in &marks.by_backend {
        let r = async {
            let mut c = b.ctx.pool(b.worker, *backend).get_own().await?;
            for (db, table) in list {
                // A table dropped (or renamed away) has nothing to arm.
                if let Err(e) = versions::arm(&mut c, db, table, Some(2)).await {
                    tracing::debug!(error = %e, db, table, "no version triggers after a DDL statement");
                    c = b.ctx.pool(b.worker, *backend).get_own().await?;
                }
                tables.push((*backend, db.clone(), table.clone()));
            }
            versions::unmark(&mut c, list, marks.slot).await
        };
        if let Err(e) = r.await {
            tracing::warn!(error = %e, "unmarking cached tables after a DDL statement");
        }
    }
    if let Some(cache) = &b.reads.cache {
        cache.disarmed(&tables);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ddl_words_are_taken() {
        assert_eq!(ddl_word("TRUNCATE TABLE t"), Some("TRUNCATE"));
        assert_eq!(ddl_word("  drop table t"), Some("DROP"));
        assert_eq!(ddl_word("Rename table a to b"), Some("RENAME"));
        assert_eq!(ddl_word("ALTER TABLE t ADD c INT"), Some("ALTER"));
        assert_eq!(ddl_word("CREATE TABLE t (a INT)"), Some("CREATE"));
        assert_eq!(ddl_word("CREATED"), None);
        assert_eq!(ddl_word("OPTIMIZE TABLE t"), None);
        assert_eq!(ddl_word("SELECT 1"), None);
    }

    #[test]
    fn a_mark_is_a_mark() {
        for _ in 0..100 {
            let slot = versions::MARKED | mark_id();
            assert!(slot >= versions::MARKED);
        }
        assert_ne!(mark_id(), mark_id());
    }
}
