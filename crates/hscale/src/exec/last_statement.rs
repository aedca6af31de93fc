//! What a session's previous statement leaves for `ROW_COUNT()` and
//! `FOUND_ROWS()`. A server keeps them per connection; through hscale a
//! statement runs on pooled connections, several backends or a merge, so
//! the session keeps them itself, from what the client was answered
//! (`StatementNote`, filled by `Bindings::finish`, the scatter's total and
//! the merge), and `exec/rewrite.rs` puts them in place of the calls.
//!
//! MariaDB's rules: `ROW_COUNT()` is the affected rows of an OK answer
//! (0 for statements that change no rows: SET, DDL), -1 after a result set
//! or an error; `FOUND_ROWS()` is the rows of the last result set (errors
//! and OK answers leave it), or after SQL_CALC_FOUND_ROWS the rows without
//! LIMIT, which only the backend knows (the session is then pinned to it,
//! and its own `FOUND_ROWS()` answers).

use crate::metrics::StatementNote;

#[derive(Debug, Clone, Copy)]
pub struct LastStatement {
    pub row_count: i64,
    /// `None`: the backend connection the session is pinned to knows.
    pub found_rows: Option<u64>,
}

impl Default for LastStatement {
    fn default() -> Self {
        LastStatement {
            row_count: -1,
            found_rows: Some(0),
        }
    }
}

impl LastStatement {
    /// Record the statement just answered (its text `sql`, when known);
    /// `is_calc_found_rows`: the session is pinned for SQL_CALC_FOUND_ROWS.
    pub fn record(&mut self, note: &StatementNote, is_calc_found_rows: bool, sql: &[u8]) {
        if note.error != 0 {
            self.row_count = -1;
        } else if note.is_result {
            self.row_count = -1;
            if sets_found_rows(sql) {
                self.found_rows = note
                    .found_rows
                    .or((!is_calc_found_rows).then_some(note.rows));
            }
        } else {
            self.row_count = note
                .affected
                .map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
}

/// Whether a statement's result set sets FOUND_ROWS() on a server
/// (MariaDB 10.11, measured): a SELECT, and the SHOW statements and
/// DESCRIBE the server runs as a SELECT over information_schema (SHOW
/// TABLES, COLUMNS, INDEX, TABLE STATUS, VARIABLES, STATUS, COUNT(*), ...);
/// not SHOW WARNINGS / ERRORS, PROCESSLIST, CREATE ..., DATABASES, GRANTS,
/// ENGINE ... STATUS, EXPLAIN, CHECK TABLE, CALL, ..., which leave it.
fn sets_found_rows(sql: &[u8]) -> bool {
    // The common case, a SELECT with nothing before it, without a lex.
    if let Some(head) = sql.trim_ascii_start().get(..7) {
        if head[..6].eq_ignore_ascii_case(b"SELECT") && !is_name_byte(head[6]) {
            return true;
        }
    }
    let Ok(sql) = std::str::from_utf8(sql) else {
        return true;
    };
    let Ok(tokens) = hscale_sql::tokenize(sql) else {
        return true;
    };
    let upper = |i: usize| {
        let mut w = [0u8; 24];
        let text = tokens.get(i).map_or("", |t| t.text(sql)).as_bytes();
        let n = text.len().min(w.len());
        w[..n].copy_from_slice(&text[..n]);
        w.make_ascii_uppercase();
        (w, if text.len() > w.len() { 0 } else { n })
    };
    let words = [upper(0), upper(1), upper(2)];
    let word = |i: usize| {
        words
            .get(i)
            .and_then(|(w, n)| std::str::from_utf8(&w[..*n]).ok())
            .unwrap_or("")
    };
    match word(0) {
        "SELECT" | "WITH" | "(" => true,
        // DESCRIBE t (columns), not DESCRIBE / EXPLAIN of a statement.
        "DESC" | "DESCRIBE" => !matches!(
            word(1),
            "SELECT"
                | "INSERT"
                | "UPDATE"
                | "DELETE"
                | "REPLACE"
                | "EXTENDED"
                | "PARTITIONS"
                | "FORMAT"
                | "FOR"
                | "ANALYZE"
                | "WITH"
                | "("
        ),
        "SHOW" => {
            let what = match word(1) {
                "FULL" | "GLOBAL" | "SESSION" | "LOCAL" | "ALL" | "EXTENDED" => word(2),
                w => w,
            };
            matches!(
                what,
                "TABLES"
                    | "COLUMNS"
                    | "FIELDS"
                    | "INDEX"
                    | "INDEXES"
                    | "KEYS"
                    | "TABLE"
                    | "OPEN"
                    | "TRIGGERS"
                    | "EVENTS"
                    | "FUNCTION"
                    | "PROCEDURE"
                    | "PACKAGE"
                    | "PLUGINS"
                    | "COLLATION"
                    | "CHARACTER"
                    | "CHARSET"
                    | "STATUS"
                    | "VARIABLES"
                    | "ENGINES"
                    | "STORAGE"
                    | "COUNT"
                    | "USER_STATISTICS"
                    | "CLIENT_STATISTICS"
                    | "INDEX_STATISTICS"
                    | "TABLE_STATISTICS"
            ) && !(what == "TABLE" && word(2) == "TYPES")
        }
        _ => false,
    }
}

/// A byte that continues a name (a keyword ends before any other).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_previous_answer_decides() {
        let mut last = LastStatement::default();
        let note = |is_result, rows, affected, error| StatementNote {
            is_result,
            rows,
            affected,
            error,
            ..Default::default()
        };
        let sel = b"SELECT 1";
        last.record(&note(true, 7, None, 0), false, sel);
        assert_eq!((last.row_count, last.found_rows), (-1, Some(7)));
        last.record(&note(false, 0, Some(3), 0), false, b"DELETE FROM t");
        assert_eq!((last.row_count, last.found_rows), (3, Some(7)));
        last.record(&note(false, 0, None, 1054), false, sel);
        assert_eq!((last.row_count, last.found_rows), (-1, Some(7)));
        last.record(&note(false, 0, None, 0), false, b"SET @a = 1");
        assert_eq!(last.row_count, 0);
        // A result that leaves FOUND_ROWS() alone.
        last.record(&note(true, 1, None, 0), false, b"SHOW WARNINGS");
        assert_eq!((last.row_count, last.found_rows), (-1, Some(7)));
        last.record(&note(true, 2, None, 0), true, sel);
        assert_eq!(last.found_rows, None);
    }

    #[test]
    fn which_results_set_found_rows() {
        for sql in [
            "SELECT 1",
            "select * from t",
            "WITH a AS (SELECT 1) SELECT * FROM a",
            "(SELECT 1) UNION (SELECT 2)",
            "SHOW TABLES",
            "SHOW FULL TABLES",
            "SHOW FULL COLUMNS FROM t",
            "SHOW INDEX FROM t",
            "SHOW TABLE STATUS",
            "SHOW SESSION STATUS LIKE 'x'",
            "SHOW VARIABLES",
            "SHOW COUNT(*) WARNINGS",
            "SHOW CHARACTER SET",
            "DESC t",
            "DESCRIBE t s",
        ] {
            assert!(sets_found_rows(sql.as_bytes()), "{sql}");
        }
        for sql in [
            "SHOW WARNINGS",
            "SHOW ERRORS LIMIT 1",
            "SHOW PROCESSLIST",
            "SHOW FULL PROCESSLIST",
            "SHOW CREATE TABLE t",
            "SHOW DATABASES",
            "SHOW GRANTS",
            "SHOW ENGINE INNODB STATUS",
            "SHOW MASTER STATUS",
            "SHOW TABLE TYPES",
            "EXPLAIN SELECT 1",
            "DESCRIBE SELECT 1",
            "CHECK TABLE t",
            "CALL p()",
            "VALUES (1), (2)",
        ] {
            assert!(!sets_found_rows(sql.as_bytes()), "{sql}");
        }
    }
}
