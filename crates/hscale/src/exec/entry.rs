//! The executor's entry for a client's text statement (and a prepared
//! execution split by rows): planned with the current dictionary
//! (`planning.rs`), then run by the plan's kind. The session hands a
//! statement it does not answer itself to [`run_statement`], which runs
//! it in the fenced loop (`run_text`, `fence.rs`): each attempt
//! ([`TextRun`]) puts an INSERT in its normal form, fills in sequence ids
//! and calls [`Exec::plan_and_run`], which gives back [`Ran`]: answered,
//! or a statement the session runs as the client's (the assignment of a
//! SELECT ... INTO @vars over partitions, `steps/select_into.rs`). A
//! prepared execution split by rows calls `plan_and_run` itself. An
//! `HSCALE` command enters at [`Exec::run_admin`].
//!
//! ```text
//!  plan_and_run ─► planning::plan ─► run_planned ─┬─ SELECT ... INTO @vars ─► Ran::Query
//!                                                 ├─ DO, SQL_CALC_FOUND_ROWS ─► steps/
//!                                                 └─ run_plan ─┬─ ordered write, key move, dictionary plans
//!                                                              └─ Exec::run (coalesced when it may be)
//!               └─ passthrough ─► execute_on_backend (or coalesced)
//! ```

use std::sync::Arc;

use bytes::Bytes;
use hscale_route::admin::AdminCommand;
use hscale_route::router::{Plan, StatementKind};
use hscale_route::BackendId;
use tokio::io::{AsyncRead, AsyncWrite};

use super::coalesce::{self, Target, Work};
use super::fence::{self, Attempt, Fenced};
use super::forward::Expect;
use super::insert_form::Normal;
use super::{Effects, Exec};
use crate::error::ProxyError;
use crate::metrics::PlanKind;
use crate::planning::{self, Asker, Db, Form};

/// What a text statement left the session to do once the executor ran it.
pub enum Ran {
    /// It was answered.
    Done,
    /// Run this COM_QUERY payload as the client's statement: the
    /// assignment a SELECT ... INTO @vars over partitions ends with.
    Query(Bytes),
}

/// A statement that reads or writes no table, so any backend can run it.
/// `lexed`: its tokens, when the session has them (`Facts::tokens`).
fn is_table_free(
    facts: &hscale_sql::Facts,
    sql: &str,
    lexed: Option<&[hscale_sql::Token]>,
) -> bool {
    use hscale_sql::Kind;
    let is_kind = matches!(
        facts.kind,
        Kind::Commit | Kind::Rollback | Kind::Set | Kind::Begin | Kind::Select
    ) || {
        let first = sql.split_whitespace().next().unwrap_or("");
        ["SAVEPOINT", "RELEASE", "DO"]
            .iter()
            .any(|w| first.eq_ignore_ascii_case(w))
    };
    // Every statement that reaches a backend passes here: the words'
    // lengths (4 to 6) are compared before their letters.
    let names_none = |t: &[hscale_sql::Token]| {
        !t.iter().any(|x| {
            x.kind == hscale_sql::TokenKind::Word
                && (4..=6).contains(&(x.end - x.start))
                && ["FROM", "INTO", "TABLE", "JOIN", "UPDATE"]
                    .iter()
                    .any(|w| x.is_word(sql, w))
        })
    };
    is_kind
        && match lexed {
            Some(t) => names_none(t),
            None => hscale_sql::tokenize(sql).is_ok_and(|t| names_none(&t)),
        }
}

/// What a text statement runs in: the fenced loop's bindings and
/// answer (`fence::Fenced`), an executor on the client, and the client's
/// whole text path for a statement the executor gives back
/// ([`Ran::Query`]). The session is one.
pub(crate) trait TextSession: Fenced {
    type Stream: AsyncRead + AsyncWrite + Unpin + Send;
    /// The executor for one step of the statement.
    fn exec(&mut self) -> Exec<'_, Self::Stream>;
    /// Run `payload` as the client's COM_QUERY.
    async fn run_query(&mut self, payload: &Bytes) -> Result<(), ProxyError>;
}

/// One run of a text statement under the fence: the INSERT's normal form
/// and the ids filled in are kept for a retry.
struct TextRun<'a> {
    payload: &'a Bytes,
    text: Option<&'a str>,
    facts: &'a hscale_sql::Facts,
    effects: Effects<'a>,
    is_insert: bool,
    normal: Option<Bytes>,
    filled: Option<Bytes>,
}

impl<T: TextSession> Attempt<T> for TextRun<'_> {
    async fn attempt(&mut self, s: &mut T) -> Result<(), ProxyError> {
        let sql = self.text.unwrap_or("<not UTF-8>");
        // INSERT ... SET, without a column list, ... SELECT: into the
        // `(columns) VALUES` form first (`insert_form.rs`).
        if self.is_insert && self.normal.is_none() && self.filled.is_none() {
            match s.exec().insert_form(sql).await? {
                Normal::Answered => return Ok(()),
                Normal::Payload(p) => self.normal = Some(p),
                Normal::AsIs => {}
            }
        }
        let base = self.normal.as_ref().unwrap_or(self.payload);
        let base_text = match &self.normal {
            Some(n) => std::str::from_utf8(&n[1..]).ok(),
            None => self.text,
        };
        let base_sql = base_text.unwrap_or(sql);
        // Ids from a sequence are filled in before planning (the id may
        // be the partition key). A retry after the fence keeps them, or
        // looks again: the newer dictionary may give the table a sequence.
        if self.filled.is_none() && s.scratch().generated_id.is_none() {
            let (b, scratch) = s.parts();
            self.filled = b.fill_ids(base_sql, scratch).await?;
        }
        let payload = self.filled.as_ref().unwrap_or(base);
        let payload_text = match &self.filled {
            Some(f) => std::str::from_utf8(&f[1..]).ok(),
            None => base_text,
        };
        let analyzed = &self.payload[1..];
        // The write of an INSERT ... SELECT copying invalid dates runs
        // with ALLOW_INVALID_DATES (`insert_form.rs`): the session's own
        // variables come back after it, whatever it answered.
        let write_vars = s.scratch().write_vars.clone();
        let own_vars = write_vars.map(|v| std::mem::replace(&mut s.bindings().state.vars, v));
        let ran = s
            .exec()
            .plan_and_run(payload, payload_text, self.facts, self.effects, analyzed)
            .await;
        if let Some(v) = own_vars {
            s.bindings().state.vars = v;
        }
        let ran = ran?;
        match ran {
            Ran::Done => Ok(()),
            Ran::Query(p) => s.run_query(&p).await,
        }
    }
}

/// A statement for the backends: its effects on the session, the
/// dictionary read first after start, then planned and run
/// (`run_text`); a `SET GLOBAL` resets the pools' session defaults.
pub(crate) async fn run_statement<T: TextSession>(
    this: &mut T,
    payload: &Bytes,
    facts: &hscale_sql::Facts,
    utf8: Option<&str>,
) -> Result<(), ProxyError> {
    let sql = utf8.unwrap_or("<not UTF-8>");
    let sql_bytes = &payload[1..];
    let savepoint = super::txn::savepoint::savepoint_op(facts, sql);
    let effects = Effects::of_text(facts, sql_bytes, savepoint.as_ref());
    {
        // Right after start: read the dictionary before routing anything.
        let b = this.bindings();
        crate::partition::refresh::load_first(&b.ctx, b.worker).await;
    }
    // `SET GLOBAL` (or PERSIST) may change the defaults later sessions
    // start with: pooled connections take them again (a reset) before
    // their next use. Raised before the statement runs and again after,
    // so no connection reset in between keeps the old defaults.
    let is_set_global = facts.kind == hscale_sql::Kind::Set
        && (hscale_sql::mentions::contains_ci(sql_bytes, b"GLOBAL")
            || hscale_sql::mentions::contains_ci(sql_bytes, b"PERSIST"));
    if is_set_global {
        this.bindings().ctx.session_defaults_changed();
    }
    // DDL naming a table cached EXACT: marked around it (`cache_ddl.rs`).
    let marks = match utf8 {
        Some(sql) => super::cache_ddl::before(this.bindings(), facts, sql).await,
        None => None,
    };
    let done = run_text(this, payload, facts, effects, utf8).await;
    if let Some(marks) = marks {
        super::cache_ddl::after(this.bindings(), marks).await;
    }
    if is_set_global {
        this.bindings().ctx.session_defaults_changed();
        if done.is_ok()
            && (hscale_sql::mentions::contains_ci(sql_bytes, b"WAIT_TIMEOUT")
                || hscale_sql::mentions::contains_ci(sql_bytes, b"INTERACTIVE_TIMEOUT"))
        {
            this.bindings().read_global_timeouts().await;
        }
    }
    done
}

/// Fill sequence ids, plan and run, again after a stale route. `text`:
/// `payload`'s statement, when it is UTF-8.
async fn run_text<T: TextSession>(
    this: &mut T,
    payload: &Bytes,
    facts: &hscale_sql::Facts,
    effects: Effects<'_>,
    text: Option<&str>,
) -> Result<(), ProxyError> {
    let is_insert = matches!(
        facts.kind,
        hscale_sql::Kind::Insert | hscale_sql::Kind::Replace
    ) && facts.statements == 1
        && !this.bindings().ctx.partitioning.is_empty();
    let mut run = TextRun {
        payload,
        text,
        facts,
        effects,
        is_insert,
        normal: None,
        filled: None,
    };
    let done = fence::run_fenced(this, &mut run).await;
    match done {
        // A partition's syntax error quotes the rewritten text:
        // one server's is about the client's own.
        Err(ProxyError::Syntax { err }) => {
            let own = match text {
                Some(sql) => this.bindings().server_parse_error(sql).await?,
                None => None,
            };
            match own {
                Some(err) => Err(ProxyError::Statement { err }),
                None => this.exec().write_server_error(1, &err).await,
            }
        }
        r => r,
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Plan a statement with the current dictionary and run it (fenced: an
    /// answer that is only error 1146 comes back as `StaleRoute`).
    /// `analyzed`: the text `facts` were read from.
    pub async fn plan_and_run(
        &mut self,
        payload: &Bytes,
        text: Option<&str>,
        facts: &hscale_sql::Facts,
        effects: Effects<'_>,
        analyzed: &[u8],
    ) -> Result<Ran, ProxyError> {
        let sql_bytes = &payload[1..];
        let sql = text.unwrap_or("<not UTF-8>");
        // The tokens of the analysis, when this is the analyzed text (not
        // one with ids filled in or another INSERT form): not lexed again.
        let lexed = match &facts.fingerprint {
            Some(fp) if std::ptr::eq(sql_bytes, analyzed) => Some((&facts.tokens[..], fp)),
            _ => None,
        };
        self.b.planned_version = self.b.ctx.partitioning.stored_version();
        if !self.b.ctx.partitioning.is_empty() {
            let dict = self.b.ctx.partitioning.dictionary();
            self.b.planned_version = dict.stored_version;
            if text.is_none() {
                if let Some(why) = self.b.ctx.partitioning.refusal(sql_bytes) {
                    return Err(ProxyError::Refused(why));
                }
            }
            let plan = planning::plan(
                Asker::Session(self.b),
                &dict,
                sql,
                Db::OfSession,
                Form::Client { payload, lexed },
            )
            .await?;
            // What hscale cannot read may be what no server reads: the
            // server's own syntax error answers it, not a refusal.
            if matches!(plan, Plan::Refuse(_)) && text.is_some() {
                if let Some(err) = self.b.server_parse_error(sql).await? {
                    return Err(ProxyError::Statement { err });
                }
            }
            let shared = (payload, lexed.map(|(t, _)| t));
            if let Some(ran) = self
                .run_planned(plan, dict, facts, effects, sql, shared)
                .await?
            {
                return Ok(ran);
            }
        }
        // Statements that touch no table (COMMIT, SET, SELECT @@x, ...) run
        // on the backend the session is bound to; the rest on the main one.
        // While the main backend is frozen, those go to one that answers.
        let lexed = lexed.map(|(tokens, _)| tokens);
        let is_table_free = is_table_free(facts, sql, lexed);
        let backend = match &self.b.pinned {
            Some(c) if is_table_free => c.pool().backend_id,
            Some(_) => BackendId::MAIN,
            None => match self.b.ctx.answering_backend() {
                BackendId::MAIN => BackendId::MAIN,
                other if is_table_free => other,
                _ => BackendId::MAIN,
            },
        };
        if self.b.is_undoubling {
            return Err(crate::exec::sql_mode::undoubled(Plan::Passthrough)
                .err()
                .unwrap_or(ProxyError::Refused(String::new())));
        }
        self.scratch.note.kind = PlanKind::Passthrough;
        self.scratch.note.parts = 1;
        let is_movable = is_table_free && self.b.pinned.is_none();
        let target = Target::Backend(backend);
        let lexed = lexed.map(|tokens| (sql, tokens));
        let key = coalesce::key(
            self.b,
            self.scratch,
            facts,
            payload,
            lexed,
            self.capabilities,
            target,
        );
        let exec = self;
        exec.is_fenced = true;
        exec.is_movable = is_movable;
        match key {
            Some(key) => {
                let work = Work::Backend(backend, payload);
                exec.run_coalesced(key, work, effects).await
            }
            None => {
                exec.execute_on_backend(backend, payload, Expect::Query, effects)
                    .await
            }
        }
        .map(|()| Ran::Done)
    }

    /// A plan of a partitioned dictionary, before it runs: reads with user
    /// variables put on copies, the forms run as other statements (SELECT
    /// ... INTO @vars, DO, SQL_CALC_FOUND_ROWS), and what cannot be spread
    /// over several connections refused. `Ok(None)`: a passthrough, left
    /// to `plan_and_run`.
    async fn run_planned(
        &mut self,
        mut plan: Plan,
        dict: Arc<hscale_route::dictionary::Dictionary>,
        facts: &hscale_sql::Facts,
        effects: Effects<'_>,
        sql: &str,
        shared: (&Bytes, Option<&[hscale_sql::Token]>),
    ) -> Result<Option<Ran>, ProxyError> {
        // Read with its backslashes doubled: sent with them as written.
        if self.b.is_undoubling {
            plan = crate::exec::sql_mode::undoubled(plan)?;
        }
        // A statement spread over several connections cannot carry what
        // binds a session to one: user variables, locks, temporary
        // tables. (Inside a transaction its parts run one at a time on
        // the transaction's branches.) LAST_INSERT_ID() is synced on
        // every part; LAST_INSERT_ID(expr) is learnt from a write's
        // OKs, not from a read over several parts, and a global
        // table's copies would each evaluate it.
        let spread = match &plan {
            Plan::Targets { parts, .. } => parts.len() > 1,
            Plan::Merge(_)
            | Plan::GlobalWrite { .. }
            | Plan::OrderedWrite(_)
            | Plan::KeyMove(_)
            | Plan::JoinWrite(_)
            | Plan::UniqueWrite(_)
            | Plan::ByLookup(_) => true,
            _ => false,
        };
        let last_insert_id = match &plan {
            Plan::GlobalWrite { .. } => facts.uses_last_insert_id,
            Plan::Targets { kind, .. } => {
                facts.sets_last_insert_id && *kind == hscale_route::router::StatementKind::Select
            }
            _ => facts.sets_last_insert_id,
        };
        // SELECT ... INTO @vars over several partitions: read, then
        // assigned by one server (`exec/steps/select_into.rs`).
        let is_partitioned_read = matches!(
            &plan,
            Plan::Merge(_)
                | Plan::Refuse(_)
                | Plan::Targets {
                    kind: StatementKind::Select,
                    ..
                }
        );
        if facts.kind == hscale_sql::Kind::Select && is_partitioned_read {
            if let Some(into) = hscale_route::router::select_into_variables(sql) {
                drop(dict);
                return match self.select_into(into).await? {
                    Some(p) => Ok(Some(Ran::Query(p))),
                    None => Ok(Some(Ran::Done)),
                };
            }
        }
        // DO over partitioned tables: its expressions read as a
        // SELECT, whose rows are dropped (`exec/steps/do_statement.rs`).
        if let (Plan::Refuse(_), Some(select)) = (&plan, crate::exec::steps::do_as_select(sql)) {
            drop(dict);
            return Box::pin(self.do_statement(&select))
                .await
                .map(|()| Some(Ran::Done));
        }
        let is_on_copies = self
            .b
            .with_variables(&mut plan, facts, sql, &dict, spread, last_insert_id)
            .await?;
        // SQL_CALC_FOUND_ROWS on partitions: counted by hscale, even on
        // one partition, so the session is not pinned for it.
        if is_partitioned_read
            && !matches!(plan, Plan::Refuse(_))
            && !is_on_copies
            && facts.pins.contains(hscale_sql::Pins::FOUND_ROWS)
        {
            drop(dict);
            return Box::pin(self.calc_found_rows(sql, effects)).await.map(Some);
        }
        if spread && !is_on_copies && (!facts.pins.is_empty() || last_insert_id) {
            return Err(ProxyError::Unsupported {
                what: "a statement over several partitions or backends with session-bound state (user variables, locks, temporary tables), a read over several partitions calling LAST_INSERT_ID(expr), or LAST_INSERT_ID() in a write to a global table".into(),
            });
        }
        let done = self.run_plan(plan, dict, facts, effects, sql, shared);
        Ok(done.await?.then_some(Ran::Done))
    }

    /// Run a plan by its kind; `Ok(false)`: a passthrough, left to run
    /// (after a DROP DATABASE's partitioned tables were dropped).
    /// `shared`: the client's payload and its tokens, which key an
    /// execution identical reads may share (`exec/coalesce.rs`).
    async fn run_plan(
        &mut self,
        plan: Plan,
        dict: Arc<hscale_route::dictionary::Dictionary>,
        facts: &hscale_sql::Facts,
        effects: Effects<'_>,
        sql: &str,
        (payload, tokens): (&Bytes, Option<&[hscale_sql::Token]>),
    ) -> Result<bool, ProxyError> {
        match plan {
            Plan::Passthrough => {
                // DROP DATABASE drops its partitioned and global tables
                // through the journal first (every backend, the
                // dictionary); the statement itself then runs below.
                if let Some(hscale_sql::SessionChange::DropDatabase(db)) = &facts.change {
                    if dict.tables().any(|t| t.name.db == *db)
                        || dict.globals().any(|g| g.db == *db)
                        || dict.views().any(|v| v.name.db == *db)
                    {
                        drop(dict);
                        crate::admin::forget_database(&self.b.ctx, self.b.worker, db).await?;
                    }
                }
                Ok(false)
            }
            Plan::OrderedWrite(w) => {
                drop(dict);
                self.run_ordered_write(w, sql, effects).await.map(|()| true)
            }
            Plan::KeyMove(m) => {
                drop(dict);
                self.run_key_move(m, effects).await.map(|()| true)
            }
            Plan::JoinWrite(w) => {
                drop(dict);
                self.run_join_write(*w).await.map(|()| true)
            }
            // A table with a global unique index (`exec/unique.rs`).
            Plan::UniqueWrite(w) => {
                drop(dict);
                if w.kind == StatementKind::Insert && w.parts.len() > 1 {
                    self.scratch.gathered.part_rows =
                        hscale_route::router::insert_part_rows(sql, &w.parts);
                }
                self.is_fenced = true;
                self.holds_parse_errors = true;
                self.run_unique_write(*w, effects).await.map(|()| true)
            }
            Plan::ByLookup(l) => {
                drop(dict);
                self.is_fenced = true;
                self.holds_parse_errors = true;
                self.run_by_lookup(*l, effects).await.map(|()| true)
            }
            Plan::CreateView(ddl) => {
                drop(dict);
                let out = self.b.create_view(*ddl, self.scratch).await?;
                self.write_admin_output(out).await.map(|()| true)
            }
            plan if crate::admin::is_dictionary_plan(&plan) => {
                drop(dict);
                let db = self.b.state.db.clone();
                // SHOW CREATE TABLE is written as the client's sql_mode
                // says (ANSI_QUOTES, NO_TABLE_OPTIONS, ...).
                let mode = match &plan {
                    Plan::ShowCreate(_) => Some(self.b.session_sql_mode().await?),
                    _ => None,
                };
                let (ctx, worker) = (&self.b.ctx, self.b.worker);
                let out =
                    crate::admin::run_plan(ctx, worker, plan, sql, db.as_deref(), mode.as_deref())
                        .await?;
                self.write_admin_output(out).await.map(|()| true)
            }
            plan => {
                // A write into the default partition of a table with
                // auto-partitioning may name a value to create a
                // partition for (`admin::auto_partition`).
                let is_auto = matches!(&plan, Plan::Targets { kind: StatementKind::Insert, parts }
                    if parts.iter().any(|(t, _)| dict.is_auto_default(t)));
                drop(dict);
                // "at row N" of a part's rows said as the statement's.
                if let Plan::Targets {
                    kind: StatementKind::Insert,
                    parts,
                } = &plan
                {
                    if parts.len() > 1 {
                        self.scratch.gathered.part_rows =
                            hscale_route::router::insert_part_rows(sql, parts);
                    }
                }
                // Identical reads may share one execution (`exec/coalesce.rs`).
                let target = Target::Planned {
                    version: self.b.planned_version,
                };
                let lexed = tokens.map(|tokens| (sql, tokens));
                let key = coalesce::key(
                    self.b,
                    self.scratch,
                    facts,
                    payload,
                    lexed,
                    self.capabilities,
                    target,
                );
                let exec = &mut *self;
                exec.is_fenced = true;
                exec.holds_parse_errors = true;
                let done = match key {
                    Some(key) => exec.run_coalesced(key, Work::Plan(plan), effects).await,
                    None => exec.run(plan, effects).await,
                };
                if is_auto && done.is_ok() {
                    crate::admin::auto_partition::notice(
                        &self.b.ctx.partitioning,
                        sql,
                        self.b.state.db.as_deref(),
                    );
                }
                done.map(|()| true)
            }
        }
    }

    /// `SELECT SQL_CALC_FOUND_ROWS ...` over several partitions: the rows
    /// counted first (`exec/steps/found_rows.rs`), then the SELECT run
    /// without SQL_CALC_FOUND_ROWS; FOUND_ROWS() answers the count.
    async fn calc_found_rows(
        &mut self,
        sql: &str,
        effects: Effects<'_>,
    ) -> Result<Ran, ProxyError> {
        let (found, stripped) = self.b.count_found_rows(sql, self.scratch).await?;
        let payload = crate::backend::BackendConn::payload_for_query(&stripped);
        let facts = hscale_sql::analyze_bytes(stripped.as_bytes());
        let mut pins = effects.pins;
        pins.remove(hscale_sql::Pins::FOUND_ROWS);
        let effects = Effects { pins, ..effects };
        let ran = self
            .plan_and_run(
                &payload,
                Some(stripped.as_str()),
                &facts,
                effects,
                &payload[1..],
            )
            .await?;
        if let Ran::Query(p) = ran {
            return Ok(Ran::Query(p));
        }
        if self.scratch.note.error == 0 {
            if let Some(n) = found {
                self.scratch.note.found_rows = Some(n);
            }
        }
        Ok(Ran::Done)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// An `HSCALE` command (the session checked the admin right), run and
    /// answered: `SHOW TRANSACTIONS`, the commit protocol's own state, by
    /// `txn/show.rs`; every other by `crate::admin::execute`.
    pub(crate) async fn run_admin(&mut self, cmd: AdminCommand) -> Result<(), ProxyError> {
        let (ctx, worker) = (&self.b.ctx, self.b.worker);
        let out = match cmd {
            AdminCommand::ShowTransactions => super::txn::show::show(ctx, worker).await?,
            cmd => {
                let cache = self.b.reads.cached_answers();
                let db = self.b.state.db.as_deref();
                crate::admin::execute((ctx, cache), worker, db, cmd).await?
            }
        };
        self.write_admin_output(out).await
    }
}
