//! Statements whose answer through hscale is hscale's own, rewritten
//! before they are analyzed and planned: what the session gives
//! `Bindings::proxy_sql` (`exec/rewrite.rs`, which says which statements
//! and why) of its client and its previous statement.

use bytes::Bytes;
use hscale_sql::Mentions;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::error::ProxyError;
use crate::exec::rewrite::Client;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// The `COM_QUERY` payload to run instead of `sql`, when the
    /// statement reads something whose answer is hscale's own
    /// (`mentions`: what the statement's analysis found).
    pub(super) async fn proxy_answers(
        &mut self,
        sql: &str,
        mentions: Mentions,
    ) -> Result<Option<Bytes>, ProxyError> {
        Ok(self
            .proxy_sql(sql, mentions)
            .await?
            .map(|(out, _)| crate::backend::BackendConn::payload_for_query(&out)))
    }

    /// `sql` with hscale's own answers in place, and whether they hold
    /// this moment's sessions (`Bindings::proxy_sql`).
    pub(super) async fn proxy_sql(
        &mut self,
        sql: &str,
        mentions: Mentions,
    ) -> Result<Option<(String, bool)>, ProxyError> {
        // Most statements: nothing of hscale's own named, and no SHOW
        // (what `Bindings::proxy_sql` rewrites needs one or the other).
        if mentions == Mentions::NONE {
            let head = sql.trim_start().as_bytes();
            if head.len() < 4 || !head[..4].eq_ignore_ascii_case(b"SHOW") {
                return Ok(None);
            }
        }
        let client = Client {
            user: &self.info.user,
            host_name: &self.info.host_name,
            is_admin: self.info.is_admin,
            tls: self.info.tls.as_ref(),
            last: self.last,
            counts: self.conditions.counts(),
        };
        self.b
            .proxy_sql(sql, mentions, &client, &mut self.scratch)
            .await
    }
}
