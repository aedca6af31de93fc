//! Transaction facts about a statement: whether MariaDB commits the open
//! transaction before running it.

use crate::facts::{analyze, Facts, Kind, Pins, SessionChange};
use crate::lexer::{tokenize, TokenKind};

/// MariaDB commits the open transaction before these statements.
pub fn is_implicit_commit(facts: &Facts, sql: &str) -> bool {
    let words: Vec<String> = sql
        .split_whitespace()
        .take(3)
        .map(str::to_ascii_uppercase)
        .collect();
    let first = words.first().cloned().unwrap_or_default();
    let is_temporary = words.iter().skip(1).any(|w| w == "TEMPORARY");
    // ANALYZE, CHECK, OPTIMIZE and REPAIR TABLE (not `ANALYZE SELECT ...`,
    // not CHECKSUM TABLE).
    let is_table_maintenance =
        matches!(first.as_str(), "ANALYZE" | "CHECK" | "OPTIMIZE" | "REPAIR")
            && words.iter().skip(1).any(|w| w == "TABLE");
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
                || is_table_maintenance
        }
        _ => false,
    }
}

/// Whether a statement of a query text (one or several separated by `;`)
/// begins, ends or changes the open transaction: BEGIN, COMMIT, ROLLBACK
/// (TO SAVEPOINT too), SAVEPOINT, RELEASE SAVEPOINT, XA, LOCK and UNLOCK,
/// `SET autocommit` and statements that commit implicitly. Text that does
/// not lex counts as one.
pub fn touches_transaction(sql: &str) -> bool {
    let Ok(tokens) = tokenize(sql) else {
        return true;
    };
    tokens
        .split(|t| t.kind == TokenKind::Semicolon)
        .filter_map(|stmt| {
            let (first, last) = (stmt.first()?, stmt.last()?);
            sql.get(first.start as usize..last.end as usize)
        })
        .any(|one| {
            let facts = analyze(one);
            let first = one
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_ascii_uppercase();
            let txn = Pins(Pins::TRANSACTION.0 | Pins::AUTOCOMMIT_OFF.0 | Pins::XA.0);
            matches!(
                facts.kind,
                Kind::Begin | Kind::Commit | Kind::Rollback | Kind::Lock | Kind::Unlock
            ) || matches!(first.as_str(), "SAVEPOINT" | "RELEASE" | "XA")
                || facts.pins.intersects(txn)
                || facts.unpins.intersects(txn)
                || matches!(&facts.change, Some(SessionChange::Set(items))
                    if items.iter().any(|i| i.key == "autocommit"))
                || is_implicit_commit(&facts, one)
        })
}

/// `BEGIN [WORK]` or `START TRANSACTION` with its characteristics (WITH
/// CONSISTENT SNAPSHOT, READ ONLY, READ WRITE, separated by commas), with
/// nothing else: what the proxy may answer itself and send later, in front
/// of the transaction's first statement, knowing the server accepts it.
/// Anything else (`BEGIN?`, a typo) goes to the server now, so
/// its error answers it and not the statement after it.
pub fn is_plain_begin(sql: &str) -> bool {
    // Comments are skipped (ORMs tag statements with them), executable
    // ones are not understood here.
    if sql.contains("/*!") || sql.contains("/*M!") {
        return false;
    }
    let Ok(tokens) = tokenize(sql) else {
        return false;
    };
    let mut words = Vec::with_capacity(tokens.len());
    for (i, t) in tokens.iter().enumerate() {
        match t.kind {
            TokenKind::Word => words.push(t.text(sql).to_ascii_uppercase()),
            TokenKind::Punct if t.is_punct(sql, ",") => words.push(",".to_string()),
            TokenKind::Semicolon if i + 1 == tokens.len() => {}
            _ => return false,
        }
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let rest = match words.as_slice() {
        ["BEGIN"] | ["BEGIN", "WORK"] => return true,
        ["START", "TRANSACTION", rest @ ..] => rest,
        _ => return false,
    };
    let (mut snapshot, mut access) = (false, false);
    let mut items = rest;
    while !items.is_empty() {
        let n = match items {
            ["WITH", "CONSISTENT", "SNAPSHOT", ..] if !snapshot => {
                snapshot = true;
                3
            }
            ["READ", "ONLY" | "WRITE", ..] if !access => {
                access = true;
                2
            }
            _ => return false,
        };
        items = &items[n..];
        match items {
            [] => {}
            [",", more @ ..] if !more.is_empty() => items = more,
            _ => return false,
        }
    }
    true
}

/// `COMMIT` / `ROLLBACK` [WORK], without savepoints or chaining.
pub fn is_plain_end(sql: &str) -> bool {
    let words: Vec<String> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    matches!(
        words
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["COMMIT"] | ["ROLLBACK"] | ["COMMIT", "WORK"] | ["ROLLBACK", "WORK"]
    )
}

/// `COMMIT` / `ROLLBACK` `[WORK] [AND [NO] CHAIN] [[NO] RELEASE]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct End {
    pub is_chain: bool,
    pub is_release: bool,
}

/// The end of a transaction a COMMIT or ROLLBACK statement asks for;
/// `None` for anything else (ROLLBACK TO SAVEPOINT, CHAIN with RELEASE,
/// which the server refuses too).
pub fn end_of(sql: &str) -> Option<End> {
    let upper = sql.trim().trim_end_matches(';').to_ascii_uppercase();
    let words: Vec<&str> = upper.split_whitespace().collect();
    let mut rest = match words.split_first() {
        Some((&("COMMIT" | "ROLLBACK"), rest)) => rest,
        _ => return None,
    };
    if let Some((&"WORK", r)) = rest.split_first() {
        rest = r;
    }
    let mut end = End {
        is_chain: false,
        is_release: false,
    };
    match rest {
        ["AND", "CHAIN", r @ ..] => {
            end.is_chain = true;
            rest = r;
        }
        ["AND", "NO", "CHAIN", r @ ..] => rest = r,
        _ => {}
    }
    match rest {
        [] => {}
        ["RELEASE"] => end.is_release = true,
        ["NO", "RELEASE"] => {}
        _ => return None,
    }
    (!(end.is_chain && end.is_release)).then_some(end)
}

/// `COMMIT RELEASE` / `ROLLBACK RELEASE` (one statement). A plain COMMIT
/// costs a short scan, no allocation.
pub fn is_release(facts: &Facts, sql: &str) -> bool {
    matches!(facts.kind, Kind::Commit | Kind::Rollback)
        && facts.statements == 1
        && sql
            .as_bytes()
            .windows(7)
            .any(|w| w.eq_ignore_ascii_case(b"RELEASE"))
        && end_of(sql).is_some_and(|e| e.is_release)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_that_touch_the_transaction() {
        for yes in [
            "UPDATE t SET a = 1; COMMIT",
            "SELECT 1; rollback to savepoint s",
            "savepoint s; SELECT 1",
            "SELECT 1; RELEASE SAVEPOINT s",
            "SELECT 1;BEGIN",
            "SET autocommit = 0; SELECT 1",
            "SELECT 1; CREATE TABLE t (a INT)",
            "SELECT 1; XA END 'x'",
            "LOCK TABLES t WRITE; SELECT 1",
        ] {
            assert!(touches_transaction(yes), "{yes}");
        }
        for no in [
            "SELECT 1; SELECT 2",
            "UPDATE t SET a = 1; SELECT a FROM t",
            "SELECT 'COMMIT'; SELECT 2",
            "INSERT INTO t VALUES (1); /* ROLLBACK */ SELECT 1",
            "CREATE TEMPORARY TABLE x (a INT); SELECT 1",
        ] {
            assert!(!touches_transaction(no), "{no}");
        }
    }

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
        assert!(f("ANALYZE TABLE t"));
        assert!(f("analyze no_write_to_binlog table t"));
        assert!(f("CHECK TABLE t EXTENDED"));
        assert!(f("OPTIMIZE LOCAL TABLE t"));
        assert!(f("REPAIR TABLE t"));
        assert!(!f("ANALYZE SELECT * FROM t"));
        assert!(!f("CHECKSUM TABLE t"));
    }

    #[test]
    fn only_statements_the_server_accepts_are_answered_by_the_proxy() {
        for ok in [
            "BEGIN",
            "begin work",
            "BEGIN;",
            "START TRANSACTION",
            "start transaction read only",
            "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ WRITE",
            "START TRANSACTION READ WRITE,WITH CONSISTENT SNAPSHOT",
            "/* orm tag */ BEGIN",
            "BEGIN -- a comment",
        ] {
            assert!(is_plain_begin(ok), "{ok}");
        }
        for not in [
            "BEGIN?",
            "BEGIN WORK?",
            "BEGIN WORK WORK",
            "BEGIN /*!50000 WORK */",
            "BEGIN NOT ATOMIC SELECT 1; END",
            "START TRANSACTION READ",
            "START TRANSACTION READ ONLY READ WRITE",
            "START TRANSACTION READ ONLY, READ WRITE",
            "START TRANSACTION READ ONLY,",
            "START TRANSACTION , READ ONLY",
            "START TRANSACTION WITH CONSISTENT SNAPSHOT, WITH CONSISTENT SNAPSHOT",
        ] {
            assert!(!is_plain_begin(not), "{not}");
        }
    }

    #[test]
    fn ends() {
        let e = |c, r| {
            Some(End {
                is_chain: c,
                is_release: r,
            })
        };
        assert_eq!(end_of("COMMIT"), e(false, false));
        assert_eq!(end_of("rollback work;"), e(false, false));
        assert_eq!(end_of("COMMIT AND CHAIN"), e(true, false));
        assert_eq!(
            end_of("COMMIT WORK AND NO CHAIN NO RELEASE"),
            e(false, false)
        );
        assert_eq!(end_of("ROLLBACK RELEASE"), e(false, true));
        assert_eq!(end_of("COMMIT AND NO CHAIN RELEASE"), e(false, true));
        assert_eq!(end_of("COMMIT AND CHAIN RELEASE"), None);
        assert_eq!(end_of("ROLLBACK TO SAVEPOINT a"), None);
        assert_eq!(end_of("COMMIT CHAIN"), None);
    }
}
