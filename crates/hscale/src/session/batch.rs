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
use hscale_wire::consts::com;
use hscale_wire::RelayEnd;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::exec::write_error;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// The statements to run one by one when `payload` is a COM_QUERY of
    /// several statements naming partitioned or global tables, on a
    /// session with multi-statements on. Cheap otherwise: one byte scan
    /// when the session may send several statements.
    pub(super) fn batch_of(&self, payload: &Bytes) -> Option<Vec<String>> {
        if !self.b.state().is_multi_statements
            || self.b.ctx().partitioning.is_empty()
            || !payload[1..].contains(&b';')
        {
            return None;
        }
        self.b.ctx().partitioning.refusal(&payload[1..])?;
        let sql = std::str::from_utf8(&payload[1..]).ok()?;
        hscale_sql::batch::split(sql).map(|v| v.into_iter().map(str::to_string).collect())
    }

    /// Run a multi-statement query's statements in order (see the module).
    pub(super) async fn run_batch(&mut self, statements: Vec<String>) -> Result<(), ProxyError> {
        self.client.begin_relay();
        let n = statements.len();
        let mut result = Ok(());
        for (i, sql) in statements.iter().enumerate() {
            if i > 0 {
                // Each statement starts as a command does (`exec/scratch.rs`).
                self.scratch.clear();
                self.b.new_statement();
            }
            let payload = BackendConn::payload_for_query(sql);
            match self.statement(com::QUERY, &payload).await {
                Ok(()) => {}
                Err(e @ (ProxyError::ClientGone | ProxyError::ClientProtocol(_))) => {
                    result = Err(e);
                    break;
                }
                Err(e) => write_error(&mut self.client, 1, &e).await,
            }
            if self.b.is_bound_lost() || self.client.end_relayed(i + 1 < n) == RelayEnd::Failed {
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
