//! Planning a text statement: on the worker through its plan cache, or,
//! for a statement of `[proxy] plan_offload_bytes` or more, on a blocking
//! thread within `plan_timeout_ms` (statements being prepared likewise,
//! through [`apart`], in `commands.rs`). Planning is linear in the statement's
//! size (`hscale_route::router`), so a long statement costs time in
//! proportion; planned on its own thread it does not hold up the other
//! sessions of its worker, and one that takes longer than the budget is
//! refused (1969) before anything of it ran. The statement's length is the
//! only thing the common, short path looks at.

use std::sync::Arc;

use bytes::Bytes;
use hscale_route::dictionary::Dictionary;
use hscale_route::router::Plan;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::error::ProxyError;

thread_local! {
    /// This worker thread's plan cache (`hscale_route::router::PlanCache`):
    /// sessions on one worker share it without a lock.
    static PLAN_CACHE: std::cell::RefCell<hscale_route::router::PlanCache> =
        std::cell::RefCell::new(hscale_route::router::PlanCache::new());
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// The plan of COM_QUERY `payload` (its text is `sql`) under `dict`.
    pub(super) async fn plan(
        &mut self,
        payload: &Bytes,
        sql: &str,
        dict: &Arc<Dictionary>,
    ) -> Result<Plan, ProxyError> {
        let proxy = &self.b.ctx.config.proxy;
        if sql.len() >= proxy.plan_offload_bytes {
            return plan_apart(
                payload.clone(),
                self.b.state.db.clone(),
                dict.clone(),
                proxy.plan_timeout_ms,
            )
            .await;
        }
        Ok(PLAN_CACHE.with(|c| {
            let mut c = c.borrow_mut();
            let plan = c.plan(sql, self.b.state.db.as_deref(), dict);
            self.b
                .ctx
                .metrics
                .worker(self.b.worker)
                .plan_cache(c.stats.hits, c.stats.misses);
            plan
        }))
    }
}

/// Plan COM_QUERY `payload` on a blocking thread, within `timeout_ms`.
async fn plan_apart(
    payload: Bytes,
    db: Option<String>,
    dict: Arc<Dictionary>,
    timeout_ms: u64,
) -> Result<Plan, ProxyError> {
    apart(timeout_ms, move || {
        let sql = std::str::from_utf8(&payload[1..]).unwrap_or("<not UTF-8>");
        hscale_route::router::plan(sql, db.as_deref(), &dict)
    })
    .await
}

/// Run `planning` on a blocking thread, waiting at most `timeout_ms` for
/// it. A planning that runs past it is left to end on its thread (linear
/// in a statement of at most `max_allowed_packet` bytes) and its result
/// dropped; the statement is refused with 1969.
pub(super) async fn apart<T: Send + 'static>(
    timeout_ms: u64,
    planning: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ProxyError> {
    let planning = tokio::task::spawn_blocking(planning);
    let limit = std::time::Duration::from_millis(timeout_ms);
    match tokio::time::timeout(limit, planning).await {
        Ok(Ok(planned)) => Ok(planned),
        Ok(Err(e)) => Err(ProxyError::Refused(format!(
            "planning this statement failed: {e}"
        ))),
        Err(_) => {
            tracing::info!(timeout_ms, "statement refused: planning took too long");
            Err(ProxyError::PlanTimeout { ms: timeout_ms })
        }
    }
}
