//! `KILL [CONNECTION | QUERY] id` and `COM_PROCESS_KILL`, with hscale's
//! own connection ids. KILL QUERY is sent to the backend thread running the
//! target's statement; KILL CONNECTION also ends the target session.

use hscale_sql::KillStatement;

use super::Bindings;
use crate::backend::BackendConn;
use crate::error::ProxyError;

impl Bindings {
    /// Kill statement `k` of the session of `user` (`is_admin`: any
    /// user's); the caller answers the OK.
    pub async fn kill(
        &mut self,
        k: KillStatement,
        user: &str,
        is_admin: bool,
    ) -> Result<(), ProxyError> {
        let target = u32::try_from(k.id)
            .ok()
            .and_then(|id| self.ctx.session(id))
            .ok_or(ProxyError::NoSuchThread(k.id))?;
        let owner = target
            .user
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if !is_admin && owner != user {
            return Err(ProxyError::KillDenied(k.id));
        }
        for (backend, thread) in target.running() {
            let mut conn = self.ctx.pool(self.worker, backend).get(false).await?;
            // Check again right before killing: the statement may have
            // finished and its connection gone to another session.
            if target.is_running((backend, thread)) {
                let sql = format!("KILL QUERY {thread}");
                // The thread may have finished in between: an error here is fine.
                let _ = conn.command(&BackendConn::payload_for_query(&sql)).await?;
            }
        }
        tracing::info!(
            connection_id = self.connection_id,
            target = k.id,
            query_only = k.is_query_only,
            "kill"
        );
        if k.is_query_only {
            target.interrupt();
        } else {
            target.kill();
        }
        Ok(())
    }
}
