//! Running a plan: `Exec` is the one place a routed statement meets the
//! backends and its answer reaches the client. The session
//! (`crate::session`) decodes commands and hands a text statement to
//! `entry.rs` (`run_text`), which plans it (`crate::planning`) and runs
//! the `Plan` through [`Exec::run`]; everything below borrows connections
//! only through [`Bindings`].
//!
//! | file | runs |
//! |---|---|
//! | `entry.rs` | a client's text statement: the fenced loop (`run_text`), planned (`Exec::plan_and_run`), run by the plan's kind; the session gets `Ran` back |
//! | `session_start.rs`, `statement.rs` | a session's bindings at login (`Bindings::new`, its collation's variables); what each statement does to them before and after it runs (note, conditions, metrics, slow log) |
//! | `grants.rs` | SHOW GRANTS / SHOW CREATE USER through hscale |
//! | `single.rs` (in this file) | one statement on one backend, streamed straight through ([`forward`]) |
//! | `scatter.rs` | one statement over several partitions in parallel: rows concatenated or affected rows added up |
//! | `global_write.rs` | writes to global tables: every copy in one statement scope |
//! | `merge.rs` | a `MergePlan`: ordered k-way merges, partial groups combined, shipped tables |
//! | `bindings.rs` | every backend connection a session holds, state sync, pins, KILL registration; `session_facing.rs` what the session reads and changes of them (the fields are `pub(super)`); `scratch.rs` what one statement gathers and decides, the session's, lent to each `Exec` |
//! | `txn/` | transactions across backends: branches (`mod.rs`); `commit.rs` the commit protocol (XA), `recovery.rs` recovery; `ends.rs` the statements that end one (COMMIT, ROLLBACK, RELEASE, savepoints, implicit commits); `lead_in.rs` a deferred BEGIN or a branch's XA START sent in one query with the statement that needs it; savepoints, statement atomicity |
//! | `returning.rs` | DELETE ... RETURNING over several partitions: the parts' rows, sent once the statement stands |
//! | `maintenance.rs` | CHECKSUM / ANALYZE / CHECK / OPTIMIZE / REPAIR TABLE of a partitioned table, answered as one table |
//! | `forward.rs` | streaming one backend response to the client packet by packet |
//! | `cache.rs` | the result cache: answers of reads of cached tables kept, served while their TTL lasts or while their tables' version rows did not move |
//! | `cache_ddl.rs` | TRUNCATE, DROP, CREATE, RENAME, ALTER of a table cached EXACT through this proxy: marked around it, its version triggers put back |
//! | `coalesce.rs` | identical reads from several sessions answered by one execution that starts after they all arrived |
//! | `steps/` | statements run in steps of the proxy's own (SQL_CALC_FOUND_ROWS, SELECT ... INTO, SET and DO with expressions, views, reads with user variables) |
//! | `conditions/` | the conditions a statement raised on every connection (`mod.rs`) and the session's list (`list.rs`) |
//! | `rewrite.rs` | statements whose answer is hscale's own (`Bindings::proxy_sql`) and the values put in place of a backend's: its limits, the session's ids and user, logical tables in information_schema |
//! | `fence.rs` | the one stale-route retry loop (`run_fenced`) and what follows a 1146 |
//! | `last_statement.rs`, `processlist.rs`, `sql_mode.rs` | what `ROW_COUNT()` / `FOUND_ROWS()` read; the PROCESSLIST rows; the session's sql_mode and how it makes the server read a text |
//! | `rows.rs`, `figures.rs` | result sets hscale writes itself: SHOW WARNINGS from the list, SHOW INDEX with figures over partitions |

pub mod bindings;
pub mod cache;
pub mod cache_ddl;
pub mod coalesce;
pub mod conditions;
mod conversions;
pub mod entry;
pub mod fence;
mod figures;
pub mod forward;
mod global_write;
mod grants;
pub mod insert_form;
pub mod insert_id;
pub mod interpolate;
mod join_write;
mod key_move;
mod kill;
pub mod last_statement;
mod load_data;
mod lost_copies;
mod maintenance;
mod merge;
mod ordered_write;
mod params;
mod pipeline;
pub mod processlist;
pub use params::ClientText;
pub mod prepared;
pub mod read_from;
mod returning;
pub mod rewrite;
pub mod rows;
mod scatter;
pub mod scratch;
pub mod sequence;
pub mod session_facing;
pub mod session_start;
pub mod shared_reads;
pub mod sink;
pub(crate) mod sql_mode;
mod statement;
pub mod steps;
pub mod txn;
mod unique;
mod unique_rows;
mod unique_update;

use hscale_route::router::{MergePlan, Plan, StatementKind};
use hscale_route::BackendId;
use hscale_sql::{Pins, SessionChange};
use hscale_wire::reply::Reply;
use hscale_wire::response::ErrPacket;
use hscale_wire::PacketStream;
use tokio::io::{AsyncRead, AsyncWrite};

pub use bindings::Bindings;
use forward::{Expect, ForwardError, Forwarder};
pub use shared_reads::SharedReads;

use crate::backend::state::SelectLimit;
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;

/// What a statement does to the session once it succeeds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Effects<'a> {
    pub pins: Pins,
    pub unpins: Pins,
    pub change: Option<&'a SessionChange>,
    pub uses_last_insert_id: bool,
    /// It calls `LAST_INSERT_ID(expr)`: the value the backend holds after
    /// it becomes the session's.
    pub sets_last_insert_id: bool,
    /// The statement only reads (a SELECT or SHOW): a transaction branch
    /// it ran on needs no commit of its own.
    pub is_read_only: bool,
    /// A savepoint statement: applied to the session's savepoints once the
    /// home backend accepted it.
    pub savepoint: Option<&'a txn::savepoint::SavepointOp>,
    /// An INSERT or REPLACE: the values it gives its rows, to tell an OK's
    /// explicit AUTO_INCREMENT value from a generated id (`insert_id.rs`).
    pub supplied: insert_id::Supplied<'a>,
}

impl<'a> Effects<'a> {
    /// What text statement `facts` (`sql_bytes`, the text it was read
    /// from) does to the session once it succeeds; `savepoint`: its
    /// savepoint operation, if it is one.
    pub fn of_text(
        facts: &'a hscale_sql::Facts,
        sql_bytes: &'a [u8],
        savepoint: Option<&'a txn::savepoint::SavepointOp>,
    ) -> Effects<'a> {
        Effects {
            pins: facts.pins,
            unpins: facts.unpins,
            change: facts.change.as_ref(),
            uses_last_insert_id: facts.uses_last_insert_id,
            sets_last_insert_id: facts.sets_last_insert_id,
            is_read_only: facts.statements == 1
                && matches!(
                    facts.kind,
                    hscale_sql::Kind::Select | hscale_sql::Kind::Show
                ),
            savepoint,
            supplied: match facts.kind {
                hscale_sql::Kind::Insert | hscale_sql::Kind::Replace => insert_id::Supplied::Text {
                    sql: sql_bytes,
                    tokens: &facts.tokens,
                },
                _ => insert_id::Supplied::Nothing,
            },
        }
    }
}

/// One statement being run for a session: the client stream its answer
/// goes to and the session's backend connections.
pub struct Exec<'a, S> {
    pub client: &'a mut PacketStream<S>,
    pub b: &'a mut Bindings,
    /// What the statement gathers and decides (`scratch.rs`), the
    /// session's, lent for the statement.
    pub scratch: &'a mut scratch::StatementScratch,
    is_eof_deprecated: bool,
    /// Statements that set up shipped tables on every part of the merge
    /// being run (`merge.rs`); `None` when it ships none (and for every
    /// statement before its merge: no allocation per statement).
    ship_setup: Option<std::sync::Arc<Vec<String>>>,
    /// Inside a transaction: the statement that drops those tables from a
    /// part's connection (a branch) after its rows were read.
    ship_cleanup: Option<String>,
    /// The shipped tables' temporary names and the tables they copy, so
    /// that column definitions name the client's table (`logical_def`).
    ship_names: Vec<(String, String)>,
    /// A first answer that is error 1146 becomes `ProxyError::StaleRoute`
    /// instead of reaching the client, so the session can reload the
    /// dictionary and run the statement again (the fence, `fence.rs`).
    pub is_fenced: bool,
    /// A first answer that is a syntax error (1064, 1149) becomes
    /// `ProxyError::Syntax` instead of reaching the client: the client's
    /// text statement, whose session asks the server about its own text.
    pub holds_parse_errors: bool,
    /// A backend that closes the connection before any answer gives
    /// `Err(BackendLost)` back instead of an error to the client: the
    /// statement runs again on another pooled connection.
    retry_unanswered: bool,
    /// The statement names no table and the session holds no connection:
    /// any backend answers it as well (`SET`, `SELECT @@x`, a driver's
    /// first queries). When its backend cannot be reached (the main one
    /// killed, before the health check says so) it runs on one that can
    /// (`Context::answering_backend`) instead of failing.
    pub is_movable: bool,
    /// The statement is a read a pipelined lane may answer
    /// (`pipeline.rs`; set by `coalesce::run_coalesced`, taken by
    /// [`Exec::execute_on_backend`]).
    is_pipelined: bool,
    /// The statement reads LAST_INSERT_ID(): every connection it runs on
    /// is synced to the session's value (parts of scatters and merges).
    uses_last_insert_id: bool,
    /// Rows the proxy builds go out in the binary format: the answer to a
    /// COM_STMT_EXECUTE merged across partitions (`merge/prepared.rs`).
    is_binary: bool,
    /// The session's sql_select_limit applies to the merged result, so
    /// the parts of the merge being run read every row (`merge/mod.rs`).
    is_unlimited: bool,
    /// The client offered to send files (CLIENT_LOCAL_FILES): LOAD DATA
    /// LOCAL INFILE may ask it for one.
    pub is_local_files: bool,
    /// The client's capability flags, which key an execution identical
    /// reads share (`coalesce.rs`).
    pub capabilities: u32,
}

/// Tries of a statement whose pooled connection turned out closed.
const MAX_ATTEMPTS: u32 = 3;

/// The backend reset the connection (it answered our bytes with RST).
fn is_reset(e: &hscale_wire::WireError) -> bool {
    matches!(e, hscale_wire::WireError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset)
}

/// Flush a finished reply to the client.
pub async fn send<S: AsyncRead + AsyncWrite + Unpin>(
    done: hscale_wire::reply::Done<'_, S>,
) -> Result<(), ProxyError> {
    done.flush()
        .await
        .map(|_| ())
        .map_err(|_| ProxyError::ClientGone)
}

/// Write `e` as the answer (at `seq`) and flush.
pub async fn write_error<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut PacketStream<S>,
    seq: u8,
    e: &ProxyError,
) {
    let (code, state, msg) = e.to_mysql();
    // The EOF mode does not matter for an error.
    let _ = Reply::new(client, seq, false)
        .err(code, &state, &msg)
        .flush()
        .await;
}

impl<'a, S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'a, S> {
    pub fn new(
        client: &'a mut PacketStream<S>,
        b: &'a mut Bindings,
        scratch: &'a mut scratch::StatementScratch,
        is_eof_deprecated: bool,
    ) -> Exec<'a, S> {
        Exec {
            client,
            b,
            scratch,
            is_eof_deprecated,
            ship_setup: None,
            ship_cleanup: None,
            ship_names: Vec::new(),
            is_fenced: false,
            holds_parse_errors: false,
            retry_unanswered: false,
            is_movable: false,
            is_pipelined: false,
            uses_last_insert_id: false,
            is_binary: false,
            is_unlimited: false,
            is_local_files: false,
            capabilities: 0,
        }
    }

    fn is_eof_deprecated(&self) -> bool {
        self.is_eof_deprecated
    }

    /// A reply to the client, its first packet at `seq`.
    fn reply(&mut self, seq: u8) -> Reply<'_, S> {
        Reply::new(&mut *self.client, seq, self.is_eof_deprecated)
    }

    /// A column definition of a merge's answer as one server's names its
    /// original table: a shipped copy's temporary table or a partition's
    /// physical table becomes the client's table (`None`: as it is).
    pub(crate) fn logical_def(&self, def: &[u8]) -> Option<bytes::BytesMut> {
        let (schema, org) = hscale_wire::resultset::aliased_org_table(def)?;
        let logical = self
            .b
            .ctx
            .partitioning
            .client_table(&self.ship_names, schema, org)?;
        hscale_wire::resultset::with_org_table(def, logical.as_bytes()).ok()
    }

    /// Forward a backend's error packet as the answer (at `seq`).
    /// Physical table names in its message become the partitioned
    /// tables' (`Dictionary::user_message`).
    pub async fn write_server_error(&mut self, seq: u8, err: &ErrPacket) -> Result<(), ProxyError> {
        // A syntax error before anything was answered: the session asks
        // about the client's own text (`holds_parse_errors`).
        if self.holds_parse_errors && seq == 1 && forward::is_parse_error(err) {
            return Err(ProxyError::Syntax { err: err.clone() });
        }
        let renamed = self
            .b
            .ctx
            .partitioning
            .with_dictionary(|d| d.user_message(&err.message));
        let mut message = renamed.as_deref().unwrap_or(&err.message).to_string();
        if let Some(m) = self.scratch.gathered.row_map.renumber(message.as_bytes()) {
            message = String::from_utf8_lossy(&m).into_owned();
        }
        let message = message.as_str();
        self.scratch.note.error(err.code);
        self.scratch.gathered.error(err.code, message);
        send(self.reply(seq).err(err.code, &err.sql_state, message)).await
    }

    /// Forward a backend's error packet as it is (at `seq`), noted as the
    /// statement's error: the answer to a statement hscale answers
    /// itself, whose errors name no partition.
    pub async fn write_error_packet(&mut self, seq: u8, err: &ErrPacket) -> Result<(), ProxyError> {
        self.scratch.note.error(err.code);
        self.scratch.gathered.error(err.code, &err.message);
        send(self.reply(seq).err(err.code, &err.sql_state, &err.message)).await
    }

    /// Run a plan that reads or writes partitions or global tables (the
    /// dictionary's own statements are answered by `crate::admin`).
    pub async fn run(&mut self, plan: Plan, effects: Effects<'_>) -> Result<(), ProxyError> {
        use crate::metrics::PlanKind;
        let (kind, parts) = match &plan {
            Plan::Targets { parts, .. } if parts.len() == 1 => (PlanKind::Single, 1),
            Plan::Targets { parts, .. } => (PlanKind::Scatter, parts.len()),
            Plan::Merge(m) => (PlanKind::Merge, m.parts.len()),
            Plan::GlobalWrite { .. } => (PlanKind::GlobalWrite, self.b.ctx.config.backends.len()),
            Plan::Relabeled { .. } => (PlanKind::Single, 1),
            Plan::Refuse(_) => (PlanKind::Refused, 0),
            Plan::LoadData(l) => (PlanKind::Scatter, l.parts.len()),
            Plan::Maintenance(m) => (PlanKind::Scatter, m.parts.len()),
            Plan::CreateSelect(c) => (PlanKind::Merge, c.ship.len()),
            _ => (PlanKind::Dictionary, 0),
        };
        self.scratch.note.kind = kind;
        self.scratch.note.parts = parts as u32;
        self.uses_last_insert_id = effects.uses_last_insert_id;
        match plan {
            // Under sql_select_limit a read over several partitions is
            // limited as a whole: the merge concatenates and limits.
            Plan::Targets { kind, parts }
                if kind == StatementKind::Select
                    && parts.len() > 1
                    && self.b.state.vars.select_limit() != SelectLimit::Unset =>
            {
                self.run_merge(MergePlan::concatenation(parts)).await
            }
            Plan::Targets { kind, parts } => self.run_routed(kind, parts, effects).await,
            Plan::GlobalWrite { table, sql } => self.run_global_write(&table, &sql).await,
            Plan::Merge(m) => self.run_merge(m).await,
            Plan::Relabeled {
                target,
                sql,
                from,
                to,
            } => {
                let payload = BackendConn::payload_for_query(&sql);
                let mut conn = match self
                    .b
                    .lease(target.backend, effects.uses_last_insert_id)
                    .await?
                {
                    Ok(c) => c,
                    Err(err) => return self.write_server_error(1, &err).await,
                };
                if let Err(e) = conn.stream.send_command(&payload).await {
                    return Err(self.b.backend_lost(conn, e.to_string()));
                }
                self.forward_with(conn, Expect::Query, &effects, Some((&from, &to)))
                    .await
            }
            Plan::LoadData(load) => self.run_load_data(&load).await,
            Plan::Maintenance(m) => self.run_maintenance(&m).await,
            Plan::CreateSelect(c) => self.run_create_select(&c, effects).await,
            Plan::Refuse(why) => Err(ProxyError::Refused(why)),
            // A `?` in a text statement (its prepared form runs as text
            // with the parameters written in: `exec/prepared`).
            Plan::PreparedAsText(what) => Err(ProxyError::Refused(format!(
                "{what} with a `?` outside a prepared statement"
            ))),
            Plan::ViewError(e) => Err(ProxyError::View(e)),
            // Its two steps run before planning (`insert_form.rs`): the
            // read into the row sink, then the VALUES form planned.
            Plan::InsertSelect(_) => Err(ProxyError::Wrong(
                "internal: INSERT ... SELECT reached the executor unread".into(),
            )),
            _ => Err(ProxyError::Wrong(
                "internal: a plan the dictionary answers reached the executor".into(),
            )),
        }
    }

    /// Run one command on a backend connection and stream its response.
    pub async fn execute_on_backend(
        &mut self,
        mut backend: BackendId,
        payload: &[u8],
        expect: Expect,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        if std::mem::take(&mut self.is_pipelined)
            && expect == Expect::Query
            && self.run_pipelined(backend, payload).await?
        {
            return Ok(());
        }
        let mut attempt = 1;
        loop {
            // A connection from the pool that the server closed while it
            // was idle (wait_timeout, KILL, a restart) fails before the
            // statement runs: take another. A pinned one holds state that
            // is gone with it.
            let is_pooled = self.b.is_pooled();
            let begin = self.b.pending_begin.clone();
            self.retry_unanswered = is_pooled && attempt < MAX_ATTEMPTS;
            let r = self.execute_once(backend, payload, expect, &effects).await;
            self.retry_unanswered = false;
            let Err(e) = r else {
                return r;
            };
            let is_movable = self.is_movable;
            let Some(next) = self
                .b
                .retry_backend(&e, backend, attempt, is_pooled, is_movable)
            else {
                return Err(e);
            };
            if let ProxyError::BackendLost { reason, .. } = &e {
                tracing::debug!(connection_id = self.b.connection_id, attempt, reason, "pooled backend connection was closed before the statement ran: retrying on another");
                self.b.pins = hscale_sql::Pins::NONE;
                self.b.is_bound_lost = false;
            }
            self.b.pending_begin = begin;
            backend = next;
            attempt += 1;
        }
    }

    async fn execute_once(
        &mut self,
        backend: BackendId,
        payload: &[u8],
        expect: Expect,
        effects: &Effects<'_>,
    ) -> Result<(), ProxyError> {
        // A text statement carries the BEGIN or XA START it needs (`txn/lead_in.rs`).
        let mut lead = match payload.first() {
            Some(&hscale_wire::consts::com::QUERY) => txn::lead_in::LeadIn::allowed(),
            _ => txn::lead_in::LeadIn::default(),
        };
        let mut conn = match self
            .b
            .lease_holding(backend, effects.uses_last_insert_id, Some(&mut lead))
            .await?
        {
            Ok(c) => c,
            Err(err) => return self.write_server_error(1, &err).await,
        };
        // (Not behind a lead-in: its BEGIN goes with the statement; a
        // failed DO would lose it.)
        let supplied = match lead.is_empty() {
            true => effects.supplied,
            false => insert_id::Supplied::Nothing,
        };
        if let Some(err) = self
            .b
            .sync_for_insert(&mut conn, &supplied, self.scratch)
            .await?
        {
            self.b.give_back(conn);
            return self.write_server_error(1, &err).await;
        }
        let conn = if lead.is_empty() {
            let mut conn = conn;
            if let Err(e) = conn.stream.send_command(payload).await {
                return Err(self.b.backend_lost(conn, e.to_string()));
            }
            conn
        } else {
            match self
                .send_behind(conn, payload.get(1..).unwrap_or_default(), lead)
                .await?
            {
                Ok(c) => c,
                Err(err) => return self.write_server_error(1, &err).await,
            }
        };
        self.forward(conn, expect, effects).await
    }

    /// Send the text statement `sql` on a leased connection behind its
    /// lead-in, in one query, and read the lead-in's answers. `Ok(Err(err))`:
    /// the lead-in was refused, the statement did not run and the
    /// connection was given back.
    pub(crate) async fn send_behind(
        &mut self,
        mut conn: PooledConn,
        sql: &[u8],
        lead: txn::lead_in::LeadIn,
    ) -> Result<Result<PooledConn, ErrPacket>, ProxyError> {
        if let Err(e) = conn.stream.send_command(&lead.query_with(sql)).await {
            return Err(self.b.backend_lost(conn, e.to_string()));
        }
        self.b.after_lead_in(conn, lead).await
    }

    /// Stream the response of a command already sent on `conn`.
    pub async fn forward(
        &mut self,
        conn: PooledConn,
        expect: Expect,
        effects: &Effects<'_>,
    ) -> Result<(), ProxyError> {
        self.forward_with(conn, expect, effects, None).await
    }

    /// `forward`, optionally relabeling text-row values (`from`, `to`).
    pub async fn forward_with(
        &mut self,
        mut conn: PooledConn,
        expect: Expect,
        effects: &Effects<'_>,
        relabel: Option<(&str, &str)>,
    ) -> Result<(), ProxyError> {
        let max = self.b.ctx.config.proxy.max_allowed_packet;
        let deprecated = self.is_eof_deprecated();
        let backend = conn.pool().backend_id;
        let running = self.b.running(&conn, backend);
        let mut f = Forwarder::new(&mut conn.stream, &mut *self.client, deprecated, max)
            .insert_id(self.scratch.generated_id.filter(|id| *id != 0))
            .one_row_select(self.scratch.one_row_select.as_deref())
            .replacing_defs(self.scratch.answer_defs.take())
            .shipped(&self.ship_names);
        // Without a partitioned table no physical name is to be renamed.
        if !self.b.ctx.partitioning.is_empty() {
            f = f.naming(&self.b.ctx.partitioning);
        }
        if let Some((from, to)) = relabel {
            f = f.relabel(from, to);
        }
        if self.is_fenced {
            f = f.holding_missing_tables();
        }
        if self.holds_parse_errors {
            f = f.holding_parse_errors();
        }
        let r = f.run(expect).await;
        drop(running);
        match r {
            Ok(mut outcome) => {
                let held = outcome.held.take();
                if held
                    .as_ref()
                    .is_some_and(crate::partition::refresh::is_stale_trigger_error)
                {
                    // Its prepared statements lock the tables of older
                    // triggers: never reuse this connection.
                    conn.is_broken = true;
                }
                if outcome.is_conn_ending {
                    // The server answered and closes the connection (it was
                    // killed): the error reached the client; what the
                    // connection held is gone.
                    let _ = self
                        .b
                        .backend_lost(conn, "the server ended the connection".into());
                    return Ok(());
                }
                if outcome.warnings > 0 && held.is_none() {
                    self.b
                        .gather(&mut conn, outcome.warnings, &mut self.scratch.gathered)
                        .await;
                }
                if effects.sets_last_insert_id
                    && self.scratch.generated_id.is_none()
                    && !outcome.is_err
                    && held.is_none()
                {
                    self.b.read_back_last_insert_id(&mut conn).await?;
                } else if let Some(ok) = outcome.ok.as_mut().filter(|ok| {
                    ok.last_insert_id != 0
                        && self.scratch.generated_id.is_none()
                        && effects.supplied.may_hold(ok.last_insert_id)
                }) {
                    // Perhaps an explicit AUTO_INCREMENT value, which the
                    // OK reports but LAST_INSERT_ID() does not take.
                    if !self
                        .b
                        .is_generated(&mut conn, ok.last_insert_id, &effects.supplied)
                        .await?
                    {
                        ok.last_insert_id = 0;
                    }
                }
                self.b.finish(conn, outcome, effects, self.scratch);
                fence::held_answer(held)
            }
            Err(f) => match f.error {
                ForwardError::Backend(e) => {
                    // The backend's primary moved while the statement ran
                    // (a switchover, `admin/failover.rs`): the old primary
                    // was read-locked from before the move until it killed
                    // this connection, so an unanswered statement did not
                    // commit there.
                    let has_moved =
                        conn.address_generation != conn.pool().watch.address_generation();
                    let err = self.b.backend_lost(conn, e.to_string());
                    if self.retry_unanswered && f.next_seq == 1 && (is_reset(&e) || has_moved) {
                        // Reset before any answer: the server's socket was
                        // closed before the command arrived (a plain close
                        // could come after it ran). The caller retries.
                        return Err(err);
                    }
                    if has_moved
                        && f.next_seq == 1
                        && self.b.txn.is_none()
                        && self.b.pinned.is_none()
                    {
                        // Planned again with the dictionary that moved the
                        // backend, and run on its new primary: the fence
                        // loop (`fence.rs`) takes a newer dictionary as
                        // the go-ahead.
                        let message = err.to_string();
                        return Err(ProxyError::StaleRoute {
                            err: ErrPacket {
                                code: hscale_wire::consts::code::ER_NET_READ_ERROR,
                                sql_state: *b"08S01",
                                message,
                            },
                        });
                    }
                    if !self.b.is_bound_lost {
                        write_error(&mut *self.client, f.next_seq, &err).await;
                    }
                    Ok(())
                }
                ForwardError::Client(_) => {
                    conn.is_broken = true;
                    Err(ProxyError::ClientGone)
                }
            },
        }
    }
}
