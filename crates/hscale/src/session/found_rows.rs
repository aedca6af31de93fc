//! `SELECT SQL_CALC_FOUND_ROWS ...` over several partitions
//! (`hscale_route::router::calc_found_rows` writes the two statements):
//! the rows without LIMIT counted first by a read planned like any other
//! (a COUNT(*) merged over the partitions), then the SELECT run without
//! SQL_CALC_FOUND_ROWS; FOUND_ROWS() answers the count
//! (`StatementNote::found_rows`, kept by `diagnostics.rs`).
//!
//! The count and the SELECT are two reads: inside a transaction they see
//! the same snapshot; in autocommit a write committed between them can
//! make the count differ from the rows the SELECT saw.

use hscale_route::router;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::exec::sink::{self, Answer};
use crate::exec::Effects;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// Run the client's `sql` (see the module).
    pub(super) async fn calc_found_rows(
        &mut self,
        sql: &str,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        let what = "SQL_CALC_FOUND_ROWS over several partitions";
        let unsupported = |why: &str| ProxyError::Unsupported {
            what: format!("{what} {why} (run COUNT(*) without the LIMIT beside it)"),
        };
        let Some((count, stripped)) = router::calc_found_rows(sql) else {
            return Err(unsupported(
                "in a UNION, with INTO, or among several statements",
            ));
        };
        let answer = match sink::read(&mut self.b, &count, what, 1).await {
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
        self.b.note.rows = 0;
        let payload = BackendConn::payload_for_query(&stripped);
        let facts = hscale_sql::analyze_bytes(stripped.as_bytes());
        let mut pins = effects.pins;
        pins.remove(hscale_sql::Pins::FOUND_ROWS);
        let effects = Effects { pins, ..effects };
        self.plan_and_run(
            &payload,
            Some(stripped.as_str()),
            &facts,
            effects,
            &payload[1..],
        )
        .await?;
        if self.b.note.error == 0 {
            if let Some(n) = found {
                self.b.note.found_rows = Some(n);
            }
        }
        Ok(())
    }
}
