//! `HSCALE ...` commands from a client: check the admin right, run the
//! command (`crate::admin`), answer with OK or a result set.

use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::admin::execute;
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
            connection_id = self.b.connection_id,
            command = sql,
            "admin command"
        );
        let out = execute(&self.b.ctx, self.b.worker, self.b.state.db.as_deref(), cmd).await?;
        self.exec().write_admin_output(out).await
    }
}
