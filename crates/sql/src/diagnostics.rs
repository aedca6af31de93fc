//! The statements that read a session's diagnostics area (its list of
//! conditions: warnings, notes, errors) and which statements reset it,
//! as MariaDB decides.
//!
//! Through hscale a statement may run on several backend connections, so
//! the proxy keeps the list itself (`hscale` crate, `exec/conditions/list.rs`)
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

/// A value a statement names that one server converts once per
/// statement, not per row ([`statement_constants`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constant {
    /// A string literal's value.
    Str(String),
    /// The value of parameter `n` (the `n`th `?`, from 0).
    Param(usize),
}

/// The string literals (and parameters) one server converts once per
/// statement, so that a conversion warning naming one comes once from
/// each server the statement runs on, however many rows it reads
/// (measured on MariaDB 10.11):
///
/// - compared with a column in a simple comparison (`col = 'v'`, `'v' <>
///   t.col`, any of `= <> != < > <= >= <=>`): converted when the
///   comparison is set up (once, or once more where an index range is
///   analyzed with it);
/// - in an IN list of string literals only (`col [NOT] IN ('a', 'b')`):
///   the list is converted once (a list that mixes strings and numbers
///   compares per row, and is not listed);
/// - a whole operand of WHERE, AND, OR, XOR or NOT (`WHERE k = 1 OR 'a'`):
///   a constant condition, evaluated while the statement is optimized (a
///   fixed number of times per server, never per row).
///
/// A literal in BETWEEN or another expression may be converted per row,
/// and is not listed. Parameters count where a literal would, except in
/// IN lists (whose parameters' types decide).
pub fn statement_constants(sql: &str) -> Vec<Constant> {
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
    let is_word_in = |i: usize, words: &[&str]| {
        t.get(i)
            .is_some_and(|x| words.iter().any(|w| x.is_word(sql, w)))
    };
    // The AND of each BETWEEN ... AND, which joins no conditions.
    let mut between_ands = Vec::new();
    let mut depth = 0i32;
    let mut open: Vec<i32> = Vec::new();
    for (i, x) in t.iter().enumerate() {
        if x.is_punct(sql, "(") {
            depth += 1;
        } else if x.is_punct(sql, ")") {
            depth -= 1;
        } else if x.is_word(sql, "BETWEEN") {
            open.push(depth);
        } else if x.is_word(sql, "AND") && open.last() == Some(&depth) {
            open.pop();
            between_ands.push(i);
        }
    }
    let is_condition_start = |i: usize| {
        i >= 1
            && is_word_in(i - 1, &["WHERE", "AND", "OR", "XOR", "NOT"])
            && !between_ands.contains(&(i - 1))
    };
    let is_condition_end = |i: usize| {
        t.get(i).is_none_or(|x| {
            x.kind == TokenKind::Semicolon
                || x.is_punct(sql, ")")
                || [
                    "AND", "OR", "XOR", "ORDER", "GROUP", "LIMIT", "HAVING", "WINDOW", "UNION",
                ]
                .iter()
                .any(|w| x.is_word(sql, w))
        })
    };
    let mut params = 0usize;
    let mut out = Vec::new();
    for (i, tok) in t.iter().enumerate() {
        let value = match tok.kind {
            TokenKind::Str => match crate::show::string_value(tok.text(sql)) {
                Some(v) => Constant::Str(v),
                None => continue,
            },
            TokenKind::Placeholder => {
                params += 1;
                Constant::Param(params - 1)
            }
            _ => continue,
        };
        let compared =
            i >= 2 && is_op(i - 1) && is_column(i - 2) || is_op(i + 1) && is_column(i + 2);
        let condition = is_condition_start(i) && is_condition_end(i + 1);
        if compared || condition {
            out.push(value);
        }
    }
    // IN lists of string literals only.
    for (i, tok) in t.iter().enumerate() {
        if !tok.is_word(sql, "IN") || !t.get(i + 1).is_some_and(|x| x.is_punct(sql, "(")) {
            continue;
        }
        let before = if is_word_in(i.wrapping_sub(1), &["NOT"]) {
            i.wrapping_sub(2)
        } else {
            i.wrapping_sub(1)
        };
        if !is_column(before) {
            continue;
        }
        let mut values = Vec::new();
        let mut j = i + 2;
        let is_list = loop {
            let Some(v) = t.get(j).filter(|x| x.kind == TokenKind::Str) else {
                break false;
            };
            match crate::show::string_value(v.text(sql)) {
                Some(v) => values.push(Constant::Str(v)),
                None => break false,
            }
            match t.get(j + 1) {
                Some(x) if x.is_punct(sql, ",") => j += 2,
                Some(x) if x.is_punct(sql, ")") => break true,
                _ => break false,
            }
        };
        if is_list {
            out.extend(values);
        }
    }
    out
}

/// The values of every string literal of `sql`, wherever it stands: the
/// values a conversion warning (1292) of the statement may name, once
/// per statement or once per row compared (which, a server's EXPLAIN of
/// it tells: `hscale` crate, `exec/conditions/mod.rs`).
pub fn string_literals(sql: &str) -> Vec<String> {
    let Ok(t) = crate::lexer::tokenize(sql) else {
        return Vec::new();
    };
    t.iter()
        .filter(|x| x.kind == TokenKind::Str)
        .filter_map(|x| crate::show::string_value(x.text(sql)))
        .collect()
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
    fn constants_converted_once_per_statement() {
        let strs = |sql: &str| -> Vec<String> {
            statement_constants(sql)
                .into_iter()
                .map(|c| match c {
                    Constant::Str(s) => s,
                    Constant::Param(n) => format!("?{n}"),
                })
                .collect()
        };
        assert_eq!(
            strs("SELECT id FROM t WHERE k = '1x' AND 'b' <=> t.`n` AND c IN ('z')"),
            ["1x", "b", "z"]
        );
        assert!(strs("SELECT CAST('x' AS INT), f(a) = 'y', 'u' = 'v' FROM t").is_empty());
        assert!(strs("SELECT id FROM t WHERE k BETWEEN '1x' AND '2y'").is_empty());
        assert_eq!(
            string_literals("SELECT 'a' FROM t WHERE k BETWEEN '1x' AND 2 OR k IN (3, 'it''s')"),
            ["a", "1x", "it's"]
        );
        assert!(strs("SELECT id FROM t WHERE k BETWEEN 1 AND '2y' ORDER BY id").is_empty());
        // IN lists of strings only; a mixed list compares per row.
        assert_eq!(
            strs("SELECT k FROM c WHERE k NOT IN ('1x', '2y') OR t.v IN ('3z')"),
            ["1x", "2y", "3z"]
        );
        assert!(strs("SELECT k FROM c WHERE k IN ('2x', 3) OR f(k) IN ('a', 'b')").is_empty());
        assert!(strs("SELECT k FROM c WHERE k IN ('2x', ?)").is_empty());
        // Whole conditions.
        assert_eq!(
            strs("SELECT s FROM sk WHERE s = 'ab' OR 'a' ORDER BY v"),
            ["ab", "a"]
        );
        assert_eq!(
            strs("SELECT k FROM c WHERE k > 3 AND (t = 1 OR 'a') AND NOT 'b'"),
            ["a", "b"]
        );
        assert!(strs("SELECT 'a' FROM t WHERE CONCAT(b, 'a') OR 'x' + b").is_empty());
        // Parameters where literals would be.
        assert_eq!(
            strs("SELECT k FROM c WHERE t = ? AND k IN (?, ?) AND 'a' < k OR ?"),
            ["?0", "a", "?3"]
        );
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
