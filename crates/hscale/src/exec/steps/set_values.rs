//! `SET var = <expression>` of session variables
//! (`SET sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')`): a SET the
//! proxy cannot replay on other connections would pin the session to one
//! backend, and statements over several partitions would be refused after
//! it. Instead its expressions are evaluated first, in the session's
//! state, by a read planned like any other (`SELECT <expr>, ...`), and the
//! SET runs with their values as literals: replayable, no pin.
//!
//! A value that is not a plain number or printable ASCII text, or an
//! expression the read cannot evaluate, leaves the SET as it is (it then
//! pins the session, as before, or answers its own error).

use crate::exec::scratch::StatementScratch;
use bytes::{BufMut, Bytes, BytesMut};

use hscale_route::BackendId;

use crate::error::ProxyError;
use crate::exec::sink::{self, Answer};
use crate::exec::Bindings;

impl Bindings {
    /// The SET `sql` with its expressions replaced by their values, or
    /// `None` (see the module).
    pub async fn set_with_values(
        &mut self,
        command: u8,
        sql: &str,
        scratch: &mut StatementScratch,
    ) -> Result<Option<Bytes>, ProxyError> {
        let Some(spans) = hscale_sql::set_expressions(sql) else {
            return Ok(None);
        };
        let list: Vec<&str> = spans.iter().map(|(a, b)| &sql[*a..*b]).collect();
        let select = format!("SELECT {}", list.join(", "));
        let answer = match sink::read(
            self,
            scratch,
            &select,
            "SET of a session variable to an expression",
            1,
        )
        .await
        {
            Ok(b) => b,
            Err(ProxyError::Refused(_) | ProxyError::Unsupported { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        // The evaluation's rows are not the client's.
        scratch.note.rows = 0;
        scratch.note.is_result = false;
        let Answer::Rows(_, rows) = answer else {
            return Ok(None);
        };
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let mut out = String::with_capacity(sql.len());
        let mut at = 0;
        for ((a, b), v) in spans.iter().zip(row) {
            let Some(literal) = literal(v.as_deref()) else {
                return Ok(None);
            };
            out.push_str(&sql[at..*a]);
            out.push_str(&literal);
            at = *b;
        }
        out.push_str(&sql[at..]);
        let mut p = BytesMut::with_capacity(1 + out.len());
        p.put_u8(command);
        p.put_slice(out.as_bytes());
        Ok(Some(p.freeze()))
    }
}

/// A value as a literal every sql_mode reads as it: NULL, a number, or
/// printable ASCII text without quotes or backslashes.
fn literal(v: Option<&[u8]>) -> Option<String> {
    let Some(b) = v else {
        return Some("NULL".into());
    };
    let text = std::str::from_utf8(b).ok()?;
    let is_number = !text.is_empty()
        && text.parse::<f64>().is_ok()
        && text
            .bytes()
            .all(|c| c.is_ascii_digit() || b"+-.eE".contains(&c))
        && text
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == b'-');
    if is_number {
        return Some(text.to_string());
    }
    text.bytes()
        .all(|c| (b' '..=b'~').contains(&c) && c != b'\'' && c != b'\\')
        .then(|| format!("'{text}'"))
}

impl Bindings {
    /// After a `SET GLOBAL` of wait_timeout or interactive_timeout: the
    /// main backend's values, which sessions starting later take
    /// (`Context::global_wait_timeout`). Unread, the earlier ones stay.
    pub async fn read_global_timeouts(&self) {
        let pool = self.ctx.pool(self.worker, BackendId::MAIN).clone();
        let Ok(mut conn) = pool.get(false).await else {
            return;
        };
        let r = conn
            .query_rows("SELECT @@global.wait_timeout, @@global.interactive_timeout")
            .await;
        if let Ok(Ok(rows)) = r {
            let row = rows.strings().into_iter().next().unwrap_or_default();
            let secs = |i: usize| {
                row.get(i)
                    .cloned()
                    .flatten()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            self.ctx.set_global_timeouts(secs(0), secs(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::literal;

    #[test]
    fn literals() {
        assert_eq!(literal(None).as_deref(), Some("NULL"));
        assert_eq!(literal(Some(b"12")).as_deref(), Some("12"));
        assert_eq!(literal(Some(b"-1.5")).as_deref(), Some("-1.5"));
        assert_eq!(
            literal(Some(b"STRICT_TRANS_TABLES,PIPES_AS_CONCAT")).as_deref(),
            Some("'STRICT_TRANS_TABLES,PIPES_AS_CONCAT'")
        );
        assert_eq!(literal(Some(b"it's")), None);
        assert_eq!(literal(Some("é".as_bytes())), None);
    }
}
