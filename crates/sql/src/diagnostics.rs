//! The statements that read a session's diagnostics area (its list of
//! conditions: warnings, notes, errors) and which statements reset it,
//! as MariaDB decides.
//!
//! Through hscale a statement may run on several backend connections, so
//! the proxy keeps the list itself (`hscale` crate, `session/conditions.rs`)
//! and answers these reads from it:
//!
//! - `SHOW WARNINGS [LIMIT [offset,] n]`, `SHOW ERRORS [LIMIT ...]`;
//! - `SHOW COUNT(*) WARNINGS`, `SHOW COUNT(*) ERRORS`;
//! - `@@warning_count` and `@@error_count` in a SELECT (`rewrite.rs`).
//!
//! None of them resets the list. Another statement resets it when it
//! raises a condition (the list is then that statement's) or when it uses
//! tables (MariaDB's `mysql_execute_command` clears it for a statement
//! with tables); a statement without tables and without conditions
//! (`SELECT 1`, `SET @x = 1`, `USE db`, `BEGIN`) leaves it.

use crate::lexer::{Token, TokenKind};

/// A read of the diagnostics area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionRead {
    /// `SHOW WARNINGS` (`is_errors: false`: every level) or `SHOW ERRORS`
    /// (errors only), with its LIMIT: rows skipped, rows at most.
    List {
        is_errors: bool,
        offset: u64,
        limit: Option<u64>,
    },
    /// `SHOW COUNT(*) WARNINGS` / `SHOW COUNT(*) ERRORS`.
    Count { is_errors: bool },
}

/// `sql` as a read of the diagnostics area, or `None`.
pub fn classify_condition_read(sql: &str) -> Option<ConditionRead> {
    condition_read_of(sql, &crate::show::show_tokens(sql)?)
}

/// The tokens `t` of one SHOW statement of `sql` as a read of the
/// diagnostics area, or `None`.
pub(crate) fn condition_read_of(sql: &str, t: &[Token]) -> Option<ConditionRead> {
    let kind = |tok: &Token| {
        if tok.is_word(sql, "WARNINGS") {
            Some(false)
        } else if tok.is_word(sql, "ERRORS") {
            Some(true)
        } else {
            None
        }
    };
    if t.get(1)?.is_word(sql, "COUNT") {
        // COUNT ( * ) WARNINGS, however the lexer splits the parentheses.
        let last = t.len().checked_sub(1)?;
        let inner: String = t[2..last]
            .iter()
            .map(|x| x.text(sql))
            .collect::<Vec<_>>()
            .concat();
        if inner != "(*)" {
            return None;
        }
        return kind(&t[last]).map(|is_errors| ConditionRead::Count { is_errors });
    }
    let is_errors = kind(t.get(1)?)?;
    let (offset, limit) = match &t[2..] {
        [] => (0, None),
        [l, n] if l.is_word(sql, "LIMIT") => (0, Some(number(n, sql)?)),
        [l, o, c, n] if l.is_word(sql, "LIMIT") && c.is_punct(sql, ",") => {
            (number(o, sql)?, Some(number(n, sql)?))
        }
        [l, n, w, o] if l.is_word(sql, "LIMIT") && w.is_word(sql, "OFFSET") => {
            (number(o, sql)?, Some(number(n, sql)?))
        }
        _ => return None,
    };
    Some(ConditionRead::List {
        is_errors,
        offset,
        limit,
    })
}

fn number(t: &Token, sql: &str) -> Option<u64> {
    (t.kind == TokenKind::Number)
        .then(|| t.text(sql).parse().ok())
        .flatten()
}

/// The values of the string literals `sql` compares with a column in a
/// simple comparison (`col = 'v'`, `'v' <> t.col`, any of `= <> != < >
/// <= >= <=>`). The server converts such a literal once per statement
/// (when the comparison is set up), so a conversion warning naming it
/// comes once from each server the statement runs on, however many rows
/// it reads; a literal in IN, BETWEEN or an expression is converted per
/// row, and is not listed.
pub fn compared_literals(sql: &str) -> Vec<String> {
    let Ok(t) = crate::lexer::tokenize(sql) else {
        return Vec::new();
    };
    let is_op = |i: usize| {
        t.get(i).is_some_and(|x| {
            x.kind == TokenKind::Punct
                && ["=", "<>", "!=", "<", ">", "<=", ">=", "<=>"].contains(&x.text(sql))
        })
    };
    let is_column = |i: usize| {
        t.get(i).is_some_and(|x| {
            matches!(x.kind, TokenKind::Word | TokenKind::QuotedIdent)
                && !t.get(i + 1).is_some_and(|n| n.is_punct(sql, "("))
        })
    };
    let mut out = Vec::new();
    for (i, tok) in t.iter().enumerate() {
        if tok.kind != TokenKind::Str {
            continue;
        }
        let before = i >= 2 && is_op(i - 1) && is_column(i - 2);
        // `'v' = col`, `'v' = t.col`.
        let after = is_op(i + 1) && is_column(i + 2);
        if before || after {
            if let Some(v) = crate::show::string_value(tok.text(sql)) {
                out.push(v);
            }
        }
    }
    out
}

/// Statements that use tables whatever they say (their first word).
const WITH_TABLES: &[&str] = &[
    "INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "ALTER", "DROP", "TRUNCATE", "RENAME",
    "LOAD", "ANALYZE", "OPTIMIZE", "CHECK", "CHECKSUM", "REPAIR", "LOCK", "HANDLER", "DESCRIBE",
    "DESC", "EXPLAIN", "SHOW", "TABLE",
];

/// Whether the statement of tokens `t` (from its first word on), of kind
/// `kind`, uses tables ([`uses_tables`]); `reads_from`: a FROM in it
/// names a table or a derived table (not DUAL).
pub(crate) fn resets(sql: &str, t: &[Token], kind: crate::Kind, reads_from: bool) -> bool {
    use crate::Kind;
    let first = t.first().map_or("", |x| x.text(sql));
    match kind {
        Kind::Show => condition_read_of(sql, t).is_none(),
        Kind::Insert | Kind::Update | Kind::Delete | Kind::Replace | Kind::Lock => true,
        Kind::Select => reads_from || first.eq_ignore_ascii_case("TABLE"),
        Kind::Other => reads_from || WITH_TABLES.iter().any(|w| first.eq_ignore_ascii_case(w)),
        _ => reads_from,
    }
}

/// Whether `sql` uses tables, so that running it resets the diagnostics
/// area: a statement that always names tables, or a SELECT / SET / DO /
/// WITH with a `FROM` that names something other than `DUAL`. A read of
/// the diagnostics area itself never resets it. Unknown text counts as
/// using tables (the list is then reset, as the server's would be for
/// nearly every statement that fails to lex). The statement's
/// [`crate::Facts::uses_tables`], from the lex every statement gets.
pub fn uses_tables(sql: &str) -> bool {
    crate::analyze(sql).uses_tables
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_compared_with_a_column() {
        assert_eq!(
            compared_literals("SELECT id FROM t WHERE k = '1x' AND 'b' <=> t.`n` AND c IN ('z')"),
            vec!["1x".to_string(), "b".to_string()]
        );
        assert!(
            compared_literals("SELECT CAST('x' AS INT), f(a) = 'y', 'u' = 'v' FROM t").is_empty()
        );
        assert!(compared_literals("SELECT id FROM t WHERE k BETWEEN '1x' AND '2y'").is_empty());
    }

    #[test]
    fn reads_of_the_diagnostics_area() {
        let list = |is_errors, offset, limit| {
            Some(ConditionRead::List {
                is_errors,
                offset,
                limit,
            })
        };
        let c = classify_condition_read;
        assert_eq!(c("SHOW WARNINGS"), list(false, 0, None));
        assert_eq!(c(" show errors;"), list(true, 0, None));
        assert_eq!(c("SHOW WARNINGS LIMIT 2"), list(false, 0, Some(2)));
        assert_eq!(c("SHOW WARNINGS LIMIT 1, 2"), list(false, 1, Some(2)));
        assert_eq!(c("SHOW ERRORS LIMIT 2 OFFSET 3"), list(true, 3, Some(2)));
        assert_eq!(
            c("SHOW COUNT(*) WARNINGS"),
            Some(ConditionRead::Count { is_errors: false })
        );
        assert_eq!(
            c("show count ( * ) errors"),
            Some(ConditionRead::Count { is_errors: true })
        );
        assert_eq!(c("SHOW WARNINGS LIMIT ?"), None);
        assert_eq!(c("SHOW TABLES"), None);
        assert_eq!(c("SHOW COUNT(x) WARNINGS"), None);
        assert_eq!(c("SELECT 1"), None);
    }

    #[test]
    fn which_statements_use_tables() {
        for sql in [
            "SELECT a FROM t",
            "select (select a from t)",
            "INSERT INTO t VALUES (1)",
            "SET @x = (SELECT a FROM t)",
            "SHOW TABLES",
            "SELECT * FROM (SELECT 1) AS d",
        ] {
            assert!(uses_tables(sql), "{sql}");
        }
        for sql in [
            "SELECT 1",
            "SELECT 1 FROM DUAL",
            "SELECT @@warning_count",
            "SET @x = 1",
            "USE d",
            "BEGIN",
            "SHOW WARNINGS",
            "SHOW COUNT(*) ERRORS",
            "SELECT TRIM(LEADING 'a' FROM 'ab')",
        ] {
            assert!(!uses_tables(sql), "{sql}");
        }
    }
}
