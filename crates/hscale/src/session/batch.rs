//! Multi-statement queries (CLIENT_MULTI_STATEMENTS) that name
//! partitioned or global tables: split at their top-level semicolons and
//! run one statement at a time through the whole COM_QUERY path, as one
//! server runs them, each answered in order. The replies are joined into
//! the one reply to the command by the client stream's relay
//! (`PacketStream::begin_relay`): sequence ids go on from one statement's
//! reply to the next, and each reply's last packet carries
//! SERVER_MORE_RESULTS_EXISTS when another follows. An error ends the
//! query: the statements after it do not run (as on one server).
//!
//! ```text
//!  "UPDATE t ..; SELECT .. FROM t; SELECT 1"
//!     ─► UPDATE t .. ─► OK (more) ─► SELECT .. FROM t ─► rows, EOF (more)
//!     ─► SELECT 1 ─► rows, EOF
//! ```
//!
//! Compound statements (BEGIN ... END, stored program bodies), whose
//! semicolons are inside one statement, are not split; they run as before.

use bytes::Bytes;
use hscale_sql::TokenKind;
use hscale_wire::consts::com;
use hscale_wire::RelayEnd;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::exec::write_error;

/// Words that start or mark a compound statement or stored program.
const COMPOUND: &[&str] = &[
    "PROCEDURE",
    "FUNCTION",
    "TRIGGER",
    "EVENT",
    "DECLARE",
    "LOOP",
    "WHILE",
    "REPEAT",
    "ATOMIC",
    "ELSEIF",
    "PACKAGE",
];

/// The statements of a multi-statement query, or `None` when it is not
/// one (a single statement, or a trailing semicolon) or holds a compound
/// statement.
pub(super) fn split(sql: &str) -> Option<Vec<&str>> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut has_tokens = false;
    for (i, t) in tokens.iter().enumerate() {
        if t.kind == TokenKind::Semicolon {
            if has_tokens {
                out.push(sql[start..t.start as usize].trim());
            }
            start = t.end as usize;
            has_tokens = false;
            continue;
        }
        if t.kind == TokenKind::Word {
            let w = t.text(sql);
            let next_is_end = tokens
                .get(i + 1)
                .is_none_or(|n| n.kind == TokenKind::Semicolon);
            let is_call = tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, "("));
            if (!is_call && COMPOUND.iter().any(|c| w.eq_ignore_ascii_case(c)))
                || (w.eq_ignore_ascii_case("BEGIN")
                    && !next_is_end
                    && !tokens[i + 1].is_word(sql, "WORK"))
                || (w.eq_ignore_ascii_case("END") && !has_tokens)
            {
                return None;
            }
        }
        has_tokens = true;
    }
    if has_tokens {
        out.push(sql[start..].trim());
    }
    (out.len() > 1).then_some(out)
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// The statements to run one by one when `payload` is a COM_QUERY of
    /// several statements naming partitioned or global tables, on a
    /// session with multi-statements on. Cheap otherwise: one byte scan
    /// when the session may send several statements.
    pub(super) fn batch_of(&self, payload: &Bytes) -> Option<Vec<String>> {
        if !self.b.state.is_multi_statements
            || self.b.ctx.partitioning.is_empty()
            || !payload[1..].contains(&b';')
        {
            return None;
        }
        self.b.ctx.partitioning.refusal(&payload[1..])?;
        let sql = std::str::from_utf8(&payload[1..]).ok()?;
        split(sql).map(|v| v.into_iter().map(str::to_string).collect())
    }

    /// Run a multi-statement query's statements in order (see the module).
    pub(super) async fn run_batch(&mut self, statements: Vec<String>) -> Result<(), ProxyError> {
        self.client.begin_relay();
        let n = statements.len();
        let mut result = Ok(());
        for (i, sql) in statements.iter().enumerate() {
            let payload = BackendConn::payload_for_query(sql);
            match self.statement(com::QUERY, &payload).await {
                Ok(()) => {}
                Err(e @ (ProxyError::ClientGone | ProxyError::ClientProtocol(_))) => {
                    result = Err(e);
                    break;
                }
                Err(e) => write_error(&mut self.client, 1, &e).await,
            }
            if self.b.is_bound_lost || self.client.end_relayed(i + 1 < n) == RelayEnd::Failed {
                break;
            }
        }
        self.client.end_relay();
        self.client
            .flush()
            .await
            .map_err(|_| ProxyError::ClientGone)?;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_at_top_level_semicolons() {
        assert_eq!(
            split("SELECT 1; UPDATE t SET v = ';' WHERE k = 2 ;SELECT REPEAT('x', 2);"),
            Some(vec![
                "SELECT 1",
                "UPDATE t SET v = ';' WHERE k = 2",
                "SELECT REPEAT('x', 2)"
            ])
        );
        assert_eq!(split("SELECT 1;"), None);
        assert_eq!(split("SELECT 1"), None);
        assert_eq!(
            split("BEGIN; SELECT 1; COMMIT"),
            Some(vec!["BEGIN", "SELECT 1", "COMMIT"])
        );
        assert_eq!(split("BEGIN NOT ATOMIC SELECT 1; SELECT 2; END"), None);
        assert_eq!(
            split("CREATE PROCEDURE p() BEGIN SELECT 1; END; CALL p()"),
            None
        );
    }
}
