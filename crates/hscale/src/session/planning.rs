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
use hscale_route::conversions::{self, Ask, Converted};
use hscale_route::dictionary::Dictionary;
use hscale_route::key_compare::Weighed;
use hscale_route::router::Plan;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::error::ProxyError;
use crate::partition::weights::Weight;

thread_local! {
    /// This worker thread's plan cache (`hscale_route::router::PlanCache`):
    /// sessions on one worker share it without a lock.
    static PLAN_CACHE: std::cell::RefCell<hscale_route::router::PlanCache> =
        std::cell::RefCell::new(hscale_route::router::PlanCache::new());
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// The plan of COM_QUERY `payload` (its text is `sql`) under `dict`.
    /// `lexed`: the statement's tokens and fingerprint when `sql` is the
    /// text the session analyzed (`hscale_sql::Facts`), so it is not
    /// lexed again.
    pub(super) async fn plan(
        &mut self,
        payload: &Bytes,
        sql: &str,
        dict: &Arc<Dictionary>,
        lexed: Lexed<'_>,
    ) -> Result<Plan, ProxyError> {
        let mut weighed = Vec::new();
        let mut converted = Vec::new();
        let mut round = 0;
        loop {
            let (plan, unweighed, unconverted) = self
                .plan_once(payload, sql, dict, &weighed, &converted, lexed)
                .await?;
            round += 1;
            // Key literals of a write whose stored value the backend
            // knows (`exec/conversions.rs`): ask (every literal of the
            // statement in one statement) and plan again. A failed ask
            // leaves the refusal.
            if !unconverted.is_empty()
                && unconverted.len() <= conversions::MAX_MISSES
                && round <= 2
                && matches!(plan, Plan::Refuse(_))
                && self.b.state.vars.is_client_utf8()
            {
                match self.b.convert_keys(unconverted).await {
                    Ok(c) => {
                        converted.extend(c);
                        continue;
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "key values not converted");
                        return Ok(plan);
                    }
                }
            }
            // Keys the backend weighs, met for the first time: ask for
            // their weights (every key of the statement in one query) and
            // plan again.
            if unweighed.is_empty() || round > 2 {
                return Ok(plan);
            }
            let pool = self
                .b
                .ctx
                .pool(self.b.worker, hscale_route::BackendId::MAIN);
            let asked = crate::partition::weights::fetch_from(pool, unweighed).await;
            match asked {
                Ok(w) => weighed.extend(w),
                // A read planned without the weights reads every
                // partition: right, only slower. Anything else fails.
                Err(_) if !matches!(plan, Plan::Refuse(_)) => return Ok(plan),
                Err(e) => return Err(e),
            }
        }
    }

    /// One planning, with the keys it met without a weight when the
    /// dictionary has keys the backend weighs (`weighed`: weights already
    /// asked for this statement, for a planning thread of its own), and
    /// the key literals it could not convert (`converted`: the backend's
    /// answers for this statement, preset for this planning alone).
    async fn plan_once(
        &mut self,
        payload: &Bytes,
        sql: &str,
        dict: &Arc<Dictionary>,
        weighed: &[Weight],
        converted: &[Converted],
        lexed: Lexed<'_>,
    ) -> Result<Planned, ProxyError> {
        let proxy = &self.b.ctx.config.proxy;
        if sql.len() >= proxy.plan_offload_bytes {
            return plan_apart(
                payload.clone(),
                self.b.state.db.clone(),
                dict.clone(),
                proxy.plan_timeout_ms,
                weighed.to_vec(),
                converted.to_vec(),
            )
            .await;
        }
        let plan = conversions::with_preset(converted, || {
            PLAN_CACHE.with(|c| {
                let mut c = c.borrow_mut();
                let db = self.b.state.db.as_deref();
                let plan = match lexed {
                    Some((tokens, fp)) => c.plan_lexed(sql, tokens, fp, db, dict),
                    None => c.plan(sql, db, dict),
                };
                self.b
                    .ctx
                    .metrics
                    .worker(self.b.worker)
                    .plan_cache(c.stats.hits, c.stats.misses);
                plan
            })
        });
        Ok((plan, unweighed(dict), conversions::take_misses()))
    }
}

/// A statement's tokens and fingerprint, when planning reads the text the
/// session analyzed.
pub(super) type Lexed<'a> = Option<(&'a [hscale_sql::Token], &'a hscale_sql::Fingerprint)>;

/// A plan, the keys it met without a weight, and the key literals it
/// could not convert.
type Planned = (Plan, Vec<(Weighed, String)>, Vec<Ask>);

/// The keys the last planning on this thread met without a weight (none
/// looked for unless the dictionary has keys the backend weighs).
fn unweighed(dict: &Dictionary) -> Vec<(Weighed, String)> {
    if dict.has_weighed_keys() {
        hscale_route::weights::take_misses()
    } else {
        Vec::new()
    }
}

/// Plan COM_QUERY `payload` on a blocking thread, within `timeout_ms`.
async fn plan_apart(
    payload: Bytes,
    db: Option<String>,
    dict: Arc<Dictionary>,
    timeout_ms: u64,
    weighed: Vec<Weight>,
    converted: Vec<Converted>,
) -> Result<Planned, ProxyError> {
    apart(timeout_ms, move || {
        let sql = std::str::from_utf8(&payload[1..]).unwrap_or("<not UTF-8>");
        crate::partition::weights::preset(&weighed);
        let plan = conversions::with_preset(&converted, || {
            hscale_route::router::plan(sql, db.as_deref(), &dict)
        });
        (plan, unweighed(&dict), conversions::take_misses())
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
