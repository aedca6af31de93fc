//! `SELECT SQL_CALC_FOUND_ROWS ...` over several partitions
//! (`hscale_route::router::calc_found_rows` writes the two statements):
//! the rows without LIMIT counted first by a read planned like any other
//! (a COUNT(*) merged over the partitions), then the SELECT run without
//! SQL_CALC_FOUND_ROWS; FOUND_ROWS() answers the count
//! (`StatementNote::found_rows`, kept by `exec/last_statement.rs`; the
//! executor runs the SELECT, `exec/entry.rs::calc_found_rows`).
//!
//! The count and the SELECT are two reads: inside a transaction they see
//! the same snapshot; in autocommit a write committed between them can
//! make the count differ from the rows the SELECT saw.

use crate::exec::scratch::StatementScratch;
use hscale_route::router;

use crate::error::ProxyError;
use crate::exec::sink::{self, Answer};
use crate::exec::Bindings;

impl Bindings {
    /// Count the rows of the client's `sql` without LIMIT (see the
    /// module): the count (`None` when the read answered an error, which
    /// the SELECT will answer again) and the SELECT to run without
    /// SQL_CALC_FOUND_ROWS.
    pub async fn count_found_rows(
        &mut self,
        sql: &str,
        scratch: &mut StatementScratch,
    ) -> Result<(Option<u64>, String), ProxyError> {
        let what = "SQL_CALC_FOUND_ROWS over several partitions";
        let unsupported = |why: &str| ProxyError::Unsupported {
            what: format!("{what} {why} (run COUNT(*) without the LIMIT beside it)"),
        };
        let Some((count, stripped)) = router::calc_found_rows(sql) else {
            return Err(unsupported(
                "in a UNION, with INTO, or among several statements",
            ));
        };
        let answer = match sink::read(self, scratch, &count, what, 1).await {
            Ok(a) => a,
            Err(ProxyError::Refused(why) | ProxyError::Unsupported { what: why }) => {
                return Err(unsupported(&format!("for this statement: {why}")))
            }
            Err(e) => return Err(e),
        };
        let found = match answer {
            Answer::Rows(_, rows) => rows
                .first()
                .and_then(|r| r.first().cloned().flatten())
                .and_then(|b| std::str::from_utf8(&b).ok()?.parse::<u64>().ok()),
            // The SELECT's own error (an unknown column, ...) is the
            // client's answer: run it to get it.
            Answer::Error(_) | Answer::Ok(_) => None,
        };
        // The count's own rows are not the client's.
        scratch.note.rows = 0;
        Ok((found, stripped))
    }
}
