//! What a session's previous statement leaves for `ROW_COUNT()` and
//! `FOUND_ROWS()`. A server keeps them per connection; through hscale a
//! statement runs on pooled connections, several backends or a merge, so
//! the session keeps them itself, from what the client was answered
//! (`StatementNote`, filled by `Bindings::finish`, the scatter's total and
//! the merge), and `rewrite.rs` puts them in place of the calls.
//!
//! MariaDB's rules: `ROW_COUNT()` is the affected rows of an OK answer
//! (0 for statements that change no rows: SET, DDL), -1 after a result set
//! or an error; `FOUND_ROWS()` is the rows of the last result set (errors
//! and OK answers leave it), or after SQL_CALC_FOUND_ROWS the rows without
//! LIMIT, which only the backend knows (the session is then pinned to it,
//! and its own `FOUND_ROWS()` answers).

use crate::metrics::StatementNote;

#[derive(Debug, Clone, Copy)]
pub(super) struct LastStatement {
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
    /// Record the statement just answered; `is_calc_found_rows`: the
    /// session is pinned for SQL_CALC_FOUND_ROWS.
    pub fn record(&mut self, note: &StatementNote, is_calc_found_rows: bool) {
        if note.error != 0 {
            self.row_count = -1;
        } else if note.is_result {
            self.row_count = -1;
            self.found_rows = (!is_calc_found_rows).then_some(note.rows);
        } else {
            self.row_count = note
                .affected
                .map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
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
        last.record(&note(true, 7, None, 0), false);
        assert_eq!((last.row_count, last.found_rows), (-1, Some(7)));
        last.record(&note(false, 0, Some(3), 0), false);
        assert_eq!((last.row_count, last.found_rows), (3, Some(7)));
        last.record(&note(false, 0, None, 1054), false);
        assert_eq!((last.row_count, last.found_rows), (-1, Some(7)));
        last.record(&note(false, 0, None, 0), false);
        assert_eq!(last.row_count, 0);
        last.record(&note(true, 2, None, 0), true);
        assert_eq!(last.found_rows, None);
    }
}
