//! Transaction facts about a statement: whether MariaDB commits the open
//! transaction before running it.

use crate::facts::{Facts, Kind, SessionChange};

/// MariaDB commits the open transaction before these statements.
pub fn is_implicit_commit(facts: &Facts, sql: &str) -> bool {
    let mut words = sql.split_whitespace().map(str::to_ascii_uppercase);
    let first = words.next().unwrap_or_default();
    let is_temporary = words.take(2).any(|w| w == "TEMPORARY");
    match facts.kind {
        Kind::Begin | Kind::Lock | Kind::Unlock => true,
        Kind::Set => {
            matches!(&facts.change, Some(SessionChange::Set(items)) if items.iter().any(|i| {
                i.key == "autocommit"
                    && i.assign
                        .rsplit('=')
                        .next()
                        .is_some_and(|v| matches!(v.trim().to_ascii_uppercase().as_str(), "1" | "ON" | "TRUE"))
            }))
        }
        Kind::Other => {
            matches!(
                first.as_str(),
                "CREATE" | "ALTER" | "DROP" | "RENAME" | "TRUNCATE" | "GRANT" | "REVOKE"
            ) && !is_temporary
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implicit_commits() {
        let f = |s: &str| is_implicit_commit(&crate::analyze(s), s);
        assert!(f("BEGIN"));
        assert!(f("START TRANSACTION"));
        assert!(f("SET autocommit=1"));
        assert!(f("set autocommit = ON"));
        assert!(!f("SET autocommit=0"));
        assert!(f("CREATE TABLE t (a INT)"));
        assert!(f("drop table t"));
        assert!(!f("CREATE TEMPORARY TABLE t (a INT)"));
        assert!(!f("DROP TEMPORARY TABLE t"));
        assert!(f("LOCK TABLES t WRITE"));
        assert!(!f("SELECT 1"));
        assert!(!f("UPDATE t SET a = 1"));
    }
}
