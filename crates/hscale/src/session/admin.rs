//! `HSCALE ...` commands from a client: check the admin right, then the
//! executor runs the command and answers (`Exec::run_admin`,
//! `exec/entry.rs`: `crate::admin` or, for SHOW TRANSACTIONS,
//! `exec/txn/show.rs`).

use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::error::ProxyError;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    pub(super) async fn admin(&mut self, sql: &str) -> Result<(), ProxyError> {
        if !self.info.is_admin {
            return Err(ProxyError::AdminDenied {
                user: self.info.user.clone(),
            });
        }
        let cmd = hscale_route::admin::parse(sql).map_err(|e| ProxyError::Wrong(e.to_string()))?;
        tracing::info!(
            connection_id = self.b.connection_id(),
            command = sql,
            "admin command"
        );
        self.exec().run_admin(cmd).await
    }
}
