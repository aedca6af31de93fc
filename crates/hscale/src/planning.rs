//! The one planning driver: every statement the proxy plans (a client's
//! text or prepared statement, EXPLAIN, LOAD DATA's re-check, a moved
//! key's INSERT, the sub-reads of INSERT ... SELECT, schema changes) is
//! planned here, and this is the only caller of `router::plan`.
//!
//! Routing sometimes needs an answer only a backend has (a key's weight
//! under a collation hscale has no table for, the value a key column
//! makes of a literal: `hscale_route::known`). The router never guesses:
//! it plans without the answer and returns the question. The driver asks
//! the backends and plans again:
//!
//! ```text
//!  plan(asker, dict, statement)
//!    └─► Learnt::attempt ──► router (Known: worker's weights + answers)
//!          ├─ no questions ─────────────────────────► the plan
//!          └─ questions ─► Learnt::ask ─► main backend: weights
//!                                       └► session's state: conversions
//!                          └─► plan again (at most MAX_ROUNDS asks)
//! ```
//!
//! Other planners of keys (a prepared execution's key parameters, LOAD
//! DATA's rows) use the same [`Learnt::attempt`] and [`Learnt::ask`], so
//! asking is written once.
//!
//! Each worker thread keeps its plan cache and its weight book here
//! (sessions on one worker share them without a lock). A long statement
//! is planned on a blocking thread within `plan_timeout_ms`
//! ([`apart`]): planning is linear in the statement's size, and a long
//! one must not hold up the other sessions of its worker.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::Bytes;
use hscale_route::conversions;
use hscale_route::dictionary::Dictionary;
use hscale_route::known::{self, Known, Questions};
use hscale_route::router::{Plan, PlanCache};
use hscale_route::weights::{WeightBook, WeightCounters};
use hscale_route::BackendId;

use crate::error::ProxyError;
use crate::partition::weights::Weight;
use crate::runtime::Context;

/// Times one statement asks the backends before it is planned with what
/// it has (a conversion, then weights, is two).
pub const MAX_ROUNDS: usize = 2;

thread_local! {
    /// This worker thread's plan cache: sessions on one worker share it.
    static PLAN_CACHE: RefCell<PlanCache> = RefCell::new(PlanCache::new());
    /// This worker thread's weights (`hscale_route::weights`).
    static WEIGHTS: RefCell<WeightBook> = RefCell::new(WeightBook::new());
}

/// Count this worker thread's weight lookups and fetches in `counters`
/// (once, before it serves).
pub fn count_weights_into(counters: Arc<WeightCounters>) {
    WEIGHTS.with(|w| w.borrow_mut().count_into(counters));
}

/// A query that asked a backend for weights, and whether it failed, in
/// this worker's counters.
fn note_weight_fetch(is_failed: bool) {
    WEIGHTS.with(|w| w.borrow().note_fetch(is_failed));
}

/// Keep weights a backend gave in this worker's book.
fn keep_weights(weights: &[Weight]) {
    WEIGHTS.with(|book| {
        let mut book = book.borrow_mut();
        for (w, key, weight) in weights {
            book.insert(w, key.clone(), weight.clone());
        }
    });
}

/// A session the driver plans for: what planning reads of it (its
/// worker, its current database) and the key conversions only its state
/// on a backend can answer (`exec/conversions.rs`). The executor's
/// `Bindings` is the one implementation; the driver takes it as a type
/// parameter, so this module imports nothing of the executor and a
/// statement's planning makes no dynamic call.
pub trait Session {
    fn ctx(&self) -> &Context;
    fn worker(&self) -> usize;
    /// The session's current database.
    fn db(&self) -> Option<&str>;
    /// Its client character set is UTF-8 (its literals read as written).
    fn is_client_utf8(&self) -> bool;
    /// The values `asks`' columns make of their literals, asked of the
    /// backends in the session's state.
    fn convert_keys(
        &mut self,
        asks: Vec<conversions::Ask>,
    ) -> impl std::future::Future<Output = Result<Vec<conversions::Converted>, ProxyError>> + Send;
}

/// No session: the type of an [`Asker::proxy`] (never made).
pub enum NoSession {}

impl Session for NoSession {
    fn ctx(&self) -> &Context {
        match *self {}
    }
    fn worker(&self) -> usize {
        match *self {}
    }
    fn db(&self) -> Option<&str> {
        match *self {}
    }
    fn is_client_utf8(&self) -> bool {
        match *self {}
    }
    async fn convert_keys(
        &mut self,
        _: Vec<conversions::Ask>,
    ) -> Result<Vec<conversions::Converted>, ProxyError> {
        match *self {}
    }
}

/// Whom the driver asks: the main backend for weights, and the session's
/// state for conversions (a planning without a session converts
/// nothing: its statement stays refused).
pub enum Asker<'a, S: Session = NoSession> {
    /// A session's statement.
    Session(&'a mut S),
    /// The proxy's own statement (EXPLAIN, partition commands) on a
    /// worker.
    Proxy(&'a Context, usize),
}

impl<'a> Asker<'a, NoSession> {
    /// The proxy's own statement on `worker` ([`Asker::Proxy`]).
    pub fn proxy(ctx: &'a Context, worker: usize) -> Self {
        Asker::Proxy(ctx, worker)
    }
}

impl<S: Session> Asker<'_, S> {
    fn ctx(&self) -> &Context {
        match self {
            Asker::Session(b) => b.ctx(),
            Asker::Proxy(ctx, _) => ctx,
        }
    }

    fn worker(&self) -> usize {
        match self {
            Asker::Session(b) => b.worker(),
            Asker::Proxy(_, worker) => *worker,
        }
    }
}

/// What one statement has learnt from the backends so far.
#[derive(Default)]
pub struct Learnt {
    /// Weights asked for this statement (for a planning thread of its
    /// own, which does not see the worker's book).
    weights: Vec<Weight>,
    answers: known::Answers,
    rounds: usize,
    max_rounds: usize,
}

impl Learnt {
    pub fn new() -> Learnt {
        Learnt::with_rounds(MAX_ROUNDS)
    }

    /// Asking at most `max_rounds` times (LOAD DATA's many keys).
    pub fn with_rounds(max_rounds: usize) -> Learnt {
        Learnt {
            max_rounds,
            ..Learnt::default()
        }
    }

    /// Run `planning` with what this worker and this statement know; its
    /// result and the questions it met.
    pub fn attempt<T>(&self, planning: impl FnOnce(&Known<'_>) -> T) -> (T, Questions) {
        WEIGHTS.with(|book| {
            let known = Known::new(Some(book), Some(&self.answers));
            let out = planning(&known);
            (out, known.questions())
        })
    }

    /// Ask the backends `questions`. `Ok(true)`: something was learnt,
    /// plan again; `Ok(false)`: nothing to ask, nothing more may be asked
    /// or the asking failed where the attempt's result stands on its own
    /// (`is_usable`: a read planned without weights reads every
    /// partition, right, only slower): go with what you have.
    pub async fn ask<S: Session>(
        &mut self,
        asker: &mut Asker<'_, S>,
        questions: Questions,
        is_usable: bool,
    ) -> Result<bool, ProxyError> {
        if questions.is_empty() || self.rounds >= self.max_rounds {
            return Ok(false);
        }
        self.rounds += 1;
        // Key literals of a write whose stored value the backend knows
        // (`exec/conversions.rs`): every literal of the statement in one
        // statement, in the session's state (only for a UTF-8 session,
        // whose literals the conversion reads as written). A failed ask
        // leaves the refusal. (A planning that stands without the
        // answers does not wait for them.)
        if !questions.conversions.is_empty() && !is_usable {
            let Asker::Session(b) = asker else {
                return Ok(false);
            };
            if questions.conversions.len() > conversions::MAX_MISSES || !b.is_client_utf8() {
                return Ok(false);
            }
            return match b.convert_keys(questions.conversions).await {
                Ok(c) => {
                    self.answers.extend(known::answers(&c));
                    Ok(true)
                }
                Err(e) => {
                    tracing::debug!(error = %e, "key values not converted");
                    Ok(false)
                }
            };
        }
        // Keys the backend weighs, met for the first time: their weights
        // in one query (per 256 keys).
        if questions.weights.is_empty() {
            return Ok(false);
        }
        let pool = asker.ctx().pool(asker.worker(), BackendId::MAIN);
        match crate::partition::weights::fetch_from(pool, questions.weights, note_weight_fetch)
            .await
        {
            Ok(w) => {
                keep_weights(&w);
                self.weights.extend(w);
                Ok(true)
            }
            Err(_) if is_usable => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// A statement's tokens and fingerprint, when planning reads the text the
/// session analyzed.
pub type Lexed<'a> = Option<(&'a [hscale_sql::Token], &'a hscale_sql::Fingerprint)>;

/// How a statement is planned.
#[derive(Clone, Copy)]
pub enum Form<'a> {
    /// A client's text statement (COM_QUERY `payload`): through the
    /// worker's plan cache, with the session's tokens when `lexed`, on a
    /// thread of its own from `[proxy] plan_offload_bytes` on.
    Client {
        payload: &'a Bytes,
        lexed: Lexed<'a>,
    },
    /// A statement the proxy wrote or re-plans (no cache).
    Plain,
    /// A statement being prepared (`router::plan_prepared`).
    Prepared,
}

/// The database a statement's unqualified names are in.
#[derive(Clone, Copy)]
pub enum Db<'a> {
    /// The asking session's current database.
    OfSession,
    Given(Option<&'a str>),
}

/// Plan `sql` (its unqualified names in `db`) under `dict`, asking the
/// backends what the planning needs.
pub async fn plan<S: Session>(
    mut asker: Asker<'_, S>,
    dict: &Arc<Dictionary>,
    sql: &str,
    db: Db<'_>,
    form: Form<'_>,
) -> Result<Plan, ProxyError> {
    let mut learnt = Learnt::new();
    loop {
        let db = match (db, &asker) {
            (Db::Given(db), _) => db,
            (Db::OfSession, Asker::Session(b)) => b.db(),
            (Db::OfSession, Asker::Proxy(..)) => None,
        };
        let (plan, questions) = match form {
            Form::Client { payload, lexed } => {
                let proxy = &asker.ctx().config.proxy;
                if sql.len() >= proxy.plan_offload_bytes {
                    plan_apart(
                        payload.clone(),
                        db.map(str::to_string),
                        dict.clone(),
                        proxy.plan_timeout_ms,
                        &learnt,
                    )
                    .await?
                } else {
                    let metrics = asker.ctx().metrics.worker(asker.worker());
                    learnt.attempt(|known| {
                        PLAN_CACHE.with(|c| {
                            let mut c = c.borrow_mut();
                            let plan = match lexed {
                                Some((tokens, fp)) => {
                                    c.plan_lexed(sql, tokens, fp, db, dict, known)
                                }
                                None => c.plan(sql, db, dict, known),
                            };
                            metrics.plan_cache(c.stats.hits, c.stats.misses);
                            plan
                        })
                    })
                }
            }
            Form::Plain | Form::Prepared => {
                learnt.attempt(|known| plan_with(dict, sql, db, form, known))
            }
        };
        let is_usable = !matches!(plan, Plan::Refuse(_));
        if !learnt.ask(&mut asker, questions, is_usable).await? {
            return Ok(plan);
        }
    }
}

/// Plan `sql` now, with what this worker knows, asking nothing: for
/// callers that cannot wait (a schema change re-planned under its lock,
/// a check of the names a statement reads). The questions it met are
/// dropped: such a plan routes no key, or only needs to know whether
/// the statement names a managed table.
pub fn plan_now(dict: &Dictionary, sql: &str, db: Option<&str>, form: Form<'_>) -> Plan {
    Learnt::new()
        .attempt(|known| plan_with(dict, sql, db, form, known))
        .0
}

/// The one call of the router.
fn plan_with(
    dict: &Dictionary,
    sql: &str,
    db: Option<&str>,
    form: Form<'_>,
    known: &Known<'_>,
) -> Plan {
    match form {
        Form::Prepared => hscale_route::router::plan_prepared(sql, db, dict, known),
        Form::Client { .. } | Form::Plain => hscale_route::router::plan(sql, db, dict, known),
    }
}

/// Plan COM_QUERY `payload` on a blocking thread, within `timeout_ms`,
/// with the weights and answers this statement learnt.
async fn plan_apart(
    payload: Bytes,
    db: Option<String>,
    dict: Arc<Dictionary>,
    timeout_ms: u64,
    learnt: &Learnt,
) -> Result<(Plan, Questions), ProxyError> {
    let weights = learnt.weights.clone();
    let answers = learnt.answers.clone();
    apart(timeout_ms, move || {
        let sql = std::str::from_utf8(&payload[1..]).unwrap_or("<not UTF-8>");
        let mut book = WeightBook::new();
        for (w, key, weight) in &weights {
            book.insert(w, key.clone(), weight.clone());
        }
        let book = RefCell::new(book);
        let known = Known::new(Some(&book), Some(&answers));
        let plan = plan_with(&dict, sql, db.as_deref(), Form::Plain, &known);
        (plan, known.questions())
    })
    .await
}

/// Run `planning` on a blocking thread, waiting at most `timeout_ms` for
/// it. A planning that runs past it is left to end on its thread (linear
/// in a statement of at most `max_allowed_packet` bytes) and its result
/// dropped; the statement is refused with 1969.
pub async fn apart<T: Send + 'static>(
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
