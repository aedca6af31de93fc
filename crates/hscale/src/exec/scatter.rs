//! Statements routed to partitions (`hscale_route::router`): one target
//! runs like any statement on that backend; several targets run in
//! parallel (each on its own connection, sent ahead of reading), their
//! SELECT rows concatenated into one result set in partition order, and the
//! affected rows of INSERT/UPDATE/DELETE added up into one OK.
//!
//! A part sent ahead gets a long net_write_timeout on its connection
//! (`hold_open`), so a client that reads slowly still gets every row.
//!
//! Sending ahead is bounded: at most `MAX_IN_FLIGHT` parts at once, and on
//! one backend at most half of this worker's pool for it, so a scan over
//! many partitions on one backend cannot wait on connections it holds.

use hscale_route::dictionary::Target;
use hscale_route::router::StatementKind;
use hscale_route::BackendId;
use hscale_wire::consts::status;
use hscale_wire::reply::OkParts;
use hscale_wire::response::{ErrPacket, OkInfo, OkPacket};
use tokio::io::{AsyncRead, AsyncWrite};

use std::collections::VecDeque;

use super::conditions::RowMap;
use super::forward::{ForwardError, Forwarder, Outcome};
use super::prepared::Command;
use super::{send, write_error, Effects, Exec};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;

/// Parts of one statement running at once.
const MAX_IN_FLIGHT: usize = 16;

/// What the terminators of a concatenated result's parts said: their
/// warnings added up, their index flags, the last one's status.
#[derive(Default)]
struct PartsSum {
    warnings: u16,
    flags: u16,
    status: u16,
}

/// The string values of the constants of a part's statement `sql` run as
/// `cmd` (`exec/conditions/mod.rs`).
fn constants(sql: &[u8], cmd: Command<'_>) -> Vec<String> {
    match cmd {
        Command::Query => super::conditions::text_constants(sql),
        Command::Execute(e) => super::conditions::execution_constants(sql, e),
    }
}

/// Parts sent ahead and not read yet.
struct InFlight {
    conns: VecDeque<PooledConn>,
    /// Each part sent and not read yet is registered for KILL QUERY from
    /// the moment it is sent (a part waiting its turn runs on its server
    /// too), in the order of `conns`.
    running: VecDeque<super::bindings::Running>,
    per_backend: Vec<usize>,
    /// Inside a transaction (decided before the first part opened it):
    /// each part runs on the transaction's branch of its backend, one
    /// part at a time.
    is_serial: bool,
}

impl InFlight {
    /// Connections with unread responses cannot go back to the pool.
    fn abandon(self) {}
}

impl Drop for InFlight {
    /// Whatever path leaves a statement early, parts sent and not read
    /// close their connections.
    fn drop(&mut self) {
        for c in &mut self.conns {
            c.is_broken = true;
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Send parts ahead of part `i` (always part `i` itself) while the
    /// bounds allow. `Ok(false)`: an error was written to the client.
    async fn send_ahead<P: AsRef<[u8]>>(
        &mut self,
        parts: &[(Target, P)],
        cmd: Command<'_>,
        i: usize,
        next_send: &mut usize,
        flight: &mut InFlight,
        seq: u8,
    ) -> Result<bool, ProxyError> {
        while *next_send < parts.len() {
            let (target, sql) = &parts[*next_send];
            let limit = (self
                .b
                .ctx
                .pool(self.b.worker, target.backend)
                .cfg
                .max_connections
                / 2)
            .max(1);
            let must = *next_send == i;
            if !must
                && (flight.is_serial
                    || flight.conns.len() >= MAX_IN_FLIGHT
                    || flight.per_backend[target.backend.index()] >= limit)
            {
                break;
            }
            // A part sent ahead takes a connection only if one is free
            // now: waiting for it while holding the parts sent before
            // could wait for sessions that wait for these (every
            // session's pool exhausted until the acquire timeout, 1429).
            let acquired = if must {
                self.b.acquire(target.backend).await
            } else {
                match self.b.try_acquire(target.backend).await {
                    Some(acquired) => acquired,
                    None => break,
                }
            };
            let Some(mut conn) = self.synced_part(acquired, seq, cmd).await? else {
                return Ok(false);
            };
            // A part sent ahead is held open first; a failure of either
            // step ends the scatter the same way.
            let held = if must {
                Ok(Ok(()))
            } else {
                self.hold_open(&mut conn).await
            };
            let sent = match held {
                Ok(Ok(())) => self.send_part(&mut conn, sql.as_ref(), cmd).await,
                failed => failed,
            };
            match sent {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    self.b.give_back(conn);
                    self.write_server_error(seq, &err).await?;
                    return Ok(false);
                }
                Err(e) => {
                    let err = self.b.backend_lost(conn, e.to_string());
                    if !self.b.is_bound_lost {
                        write_error(&mut *self.client, seq, &err).await;
                    }
                    return Ok(false);
                }
            }
            flight
                .running
                .push_back(self.b.running(&conn, target.backend));
            flight.conns.push_back(conn);
            flight.per_backend[target.backend.index()] += 1;
            *next_send += 1;
        }
        Ok(true)
    }

    /// A part sent ahead waits while the parts before it reach the client,
    /// at the client's pace: its server must not give up writing after its
    /// net_write_timeout (60 s by default), so the connection gets
    /// `[proxy] scatter_write_timeout_ms` instead. Its replayable state
    /// records the change, so the next statement on it sets it back.
    pub(super) async fn hold_open(
        &mut self,
        conn: &mut PooledConn,
    ) -> Result<Result<(), hscale_wire::response::ErrPacket>, ProxyError> {
        let secs = (self.b.ctx.config.proxy.scatter_write_timeout_ms / 1000).max(1);
        let assign = format!("@@session.net_write_timeout = {secs}");
        let sql = format!("SET {assign}");
        if let Err(err) = conn.command(&BackendConn::payload_for_query(&sql)).await? {
            return Ok(Err(err));
        }
        let mut vars = (*conn.vars).clone();
        vars.apply(&[hscale_sql::SetItem {
            key: "net_write_timeout".into(),
            assign,
            is_standalone: false,
        }]);
        conn.vars = std::sync::Arc::new(vars);
        Ok(Ok(()))
    }

    /// The connection of the next part to read.
    /// With the registration for KILL QUERY it holds until it was read.
    fn next_in_flight(
        &self,
        flight: &mut InFlight,
    ) -> Option<(PooledConn, Option<super::bindings::Running>)> {
        let conn = flight.conns.pop_front()?;
        flight.per_backend[conn.pool().backend_id.index()] -= 1;
        Some((conn, flight.running.pop_front()))
    }

    pub(crate) async fn run_routed(
        &mut self,
        kind: StatementKind,
        parts: Vec<(Target, String)>,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        tracing::debug!(
            connection_id = self.b.connection_id,
            parts = parts.len(),
            "routed"
        );
        match parts.as_slice() {
            [(target, sql)] => {
                self.run_single(target.backend, sql.as_bytes(), Command::Query, effects)
                    .await
            }
            _ => self.scatter(kind, &parts, Command::Query).await,
        }
    }

    /// One statement over several partitions, text or prepared.
    pub(crate) async fn scatter<P: AsRef<[u8]>>(
        &mut self,
        kind: StatementKind,
        parts: &[(Target, P)],
        cmd: Command<'_>,
    ) -> Result<(), ProxyError> {
        // A read that uses none of the variables a session is pinned by
        // runs beside its pinned connection (`StatementScratch::may_borrow_beside`).
        let is_beside = kind == StatementKind::Select
            && self.b.may_borrow_beside
            && self.b.pins == hscale_sql::Pins::USER_VARIABLE;
        if self.b.pinned.is_some() && !self.b.is_branchable() && !is_beside {
            return Err(ProxyError::Unsupported {
                what: "a statement over several partitions with connection-bound state (temporary tables, locks, user variables, ...)".into(),
            });
        }
        if kind == StatementKind::Select {
            return self.concatenate(parts, cmd).await;
        }
        // Each part would answer rows, and adding up OKs would tell the
        // client nothing was written while rows are gone: refused before
        // any part runs.
        if parts
            .first()
            .is_some_and(|(_, sql)| returns_rows(sql.as_ref()))
        {
            // DELETE ... RETURNING as a query: every part's rows, read in
            // the statement's own transaction and sent once it committed
            // (`returning.rs`).
            if kind == StatementKind::Delete && matches!(cmd, Command::Query) {
                return self.delete_returning(parts).await;
            }
            return Err(ProxyError::Unsupported {
                what: "a write with RETURNING over several partitions (INSERT or REPLACE ... RETURNING, and a prepared DELETE ... RETURNING: name one partition's key, send the DELETE as a query, or read the rows first)".into(),
            });
        }
        // One statement: all parts or none (`txn/statement.rs`).
        let is_implicit = self.b.needs_implicit_txn();
        let Some(scope) = self.open_write(is_implicit).await? else {
            return Ok(());
        };
        let total = self.add_up(kind, parts, cmd).await;
        self.close_write(scope, total).await
    }

    /// SELECT over several partitions: one result set, rows in partition
    /// order, the partitions running in parallel. The terminator is
    /// written after the last part, once every part's conditions were
    /// gathered: its warning count is one server's (`Gathered::settle`).
    async fn concatenate<P: AsRef<[u8]>>(
        &mut self,
        parts: &[(Target, P)],
        cmd: Command<'_>,
    ) -> Result<(), ProxyError> {
        let mut seq = 1u8;
        let mut flight = InFlight {
            conns: VecDeque::new(),
            running: VecDeque::new(),
            per_backend: vec![0; self.b.ctx.config.backends.len()],
            is_serial: self.b.is_in_transaction(),
        };
        let mut next_send = 0;
        // What the parts read so far said.
        let mut sum = PartsSum::default();
        // Parts 1.. whose column definitions were read before the first
        // row reached the client.
        let mut checked = 0..0;
        for i in 0..parts.len() {
            // An error while sending ahead ends the result where it is.
            if !self
                .send_ahead(parts, cmd, i, &mut next_send, &mut flight, seq)
                .await?
            {
                flight.abandon();
                return Ok(());
            }
            if i == 0 {
                match self.preflight(&mut flight).await {
                    Ok(n) => checked = 1..1 + n,
                    Err(e) => {
                        flight.abandon();
                        return match e {
                            Preflight::Server(err) => {
                                let err = super::fence::stale_route(self.is_fenced, err)?;
                                self.write_server_error(seq, &err).await
                            }
                            Preflight::Lost(err) => {
                                if !self.b.is_bound_lost {
                                    write_error(&mut *self.client, seq, &err).await;
                                }
                                Ok(())
                            }
                        };
                    }
                }
            }
            let Some((conn, _running)) = self.next_in_flight(&mut flight) else {
                flight.abandon();
                return Ok(());
            };
            let branches = super::conditions::union_branches(&parts[i].0);
            match self
                .receive_part(
                    conn,
                    seq,
                    (i == 0, branches),
                    &mut sum,
                    checked.contains(&i),
                )
                .await
            {
                Ok(Some(next)) => seq = next,
                other => {
                    flight.abandon();
                    return other.map(|_| ());
                }
            }
        }
        let sql = parts.first().map_or(&[][..], |(_, sql)| sql.as_ref());
        // An execution's text, its parameters written in, says which of
        // its literals compare how, as the statement's does.
        let mut text = None;
        if let (Some((target, _)), true) = (parts.first(), self.scratch.gathered.is_spread()) {
            text = match cmd {
                Command::Query => std::str::from_utf8(sql).ok().map(str::to_string),
                Command::Execute(e) => super::conditions::execution_text(sql, e),
            };
            if let Some(text) = &text {
                self.b
                    .measure(target, text, &mut self.scratch.gathered)
                    .await;
            }
        }
        let warnings = self
            .scratch
            .gathered
            .settled_count(sum.warnings, || match &text {
                Some(text) => super::conditions::text_constants(text.as_bytes()),
                None => constants(sql, cmd),
            });
        let deprecated = self.is_eof_deprecated();
        let mut end = hscale_wire::reply::Relay::new(&mut *self.client, seq, deprecated);
        end.terminator(sum.status | sum.flags, warnings);
        end.stream()
            .flush()
            .await
            .map_err(|_| ProxyError::ClientGone)
    }

    /// INSERT / UPDATE / DELETE over several partitions: the sum of their
    /// OKs, `None` when a part's error was written to the client. Parts
    /// run in parallel outside a transaction, one at a time on its
    /// branches inside one (`scatter` opens one for an autocommit write).
    async fn add_up<P: AsRef<[u8]>>(
        &mut self,
        kind: StatementKind,
        parts: &[(Target, P)],
        cmd: Command<'_>,
    ) -> Result<Option<OkPacket>, ProxyError> {
        let mut total = OkPacket::default();
        let mut flight = InFlight {
            conns: VecDeque::new(),
            running: VecDeque::new(),
            per_backend: vec![0; self.b.ctx.config.backends.len()],
            is_serial: self.b.is_in_transaction(),
        };
        let mut next_send = 0;
        let mut info: Option<OkInfo> = None;
        // Rows the parts before this one counted, for its row numbers.
        let mut rows_before = 0;
        let part_rows = self.scratch.gathered.part_rows.take();
        // Without a generated id one server's OK carries the AUTO_INCREMENT
        // value of the statement's last row (its `next_number_field`),
        // which the part holding that row reports as its own last row's:
        // (that row's number, the part's insert id).
        let mut last_row: Option<(u32, u64)> = None;
        for i in 0..parts.len() {
            if !self
                .send_ahead(parts, cmd, i, &mut next_send, &mut flight, 1)
                .await?
            {
                flight.abandon();
                return Ok(None);
            }
            let Some((conn, _running)) = self.next_in_flight(&mut flight) else {
                flight.abandon();
                return Ok(None);
            };
            self.scratch.gathered.row_map = match (&part_rows, kind) {
                (Some(rows), _) => rows.get(i).cloned().map_or(RowMap::Same, RowMap::Rows),
                (None, StatementKind::Update | StatementKind::Delete) => RowMap::After(rows_before),
                (None, _) => RowMap::Same,
            };
            let (affected, warnings) = (total.affected_rows, total.warnings);
            let id_before = std::mem::take(&mut total.last_insert_id);
            let read = self.read_part_ok(conn, &mut total).await;
            self.scratch.gathered.row_map = RowMap::Same;
            match read {
                Ok(true) => {}
                other => {
                    flight.abandon();
                    return other.map(|_| None);
                }
            }
            let part_id = total.last_insert_id;
            if id_before != 0 {
                total.last_insert_id = id_before;
            }
            let part_last = part_rows
                .as_ref()
                .and_then(|rows| rows.get(i)?.iter().max().copied());
            if let Some(row) = part_last {
                if last_row.is_none_or(|(r, _)| row > r) {
                    last_row = Some((row, part_id));
                }
            }
            rows_before += match total.info {
                OkInfo::Matched { matched, .. } => matched,
                _ => total.affected_rows - affected,
            };
            let part = part_info(
                parts[i].1.as_ref(),
                total.info,
                total.affected_rows - affected,
                total.warnings - warnings,
            );
            info = Some(info.map_or(part, |i| i.plus(part)));
        }
        // One server's count: a conversion it raises once per statement
        // counted once (`Gathered::settle`), in the info text too.
        let sql = parts.first().map_or(&[][..], |(_, sql)| sql.as_ref());
        let warnings = self
            .scratch
            .gathered
            .settled_count(total.warnings, || constants(sql, cmd));
        total.warnings = warnings;
        total.info = info.unwrap_or_default().with_warnings(u64::from(warnings));
        if let Some((_, id)) = last_row.filter(|(_, id)| *id != 0) {
            total.last_insert_id = id;
        }
        Ok(Some(total))
    }

    /// A connection on `backend` synced to the session, or `None` when an
    /// error was written to the client (at `seq`).
    pub(crate) async fn connect_part(
        &mut self,
        backend: BackendId,
        seq: u8,
        cmd: Command<'_>,
    ) -> Result<Option<PooledConn>, ProxyError> {
        let acquired = self.b.acquire(backend).await;
        self.synced_part(acquired, seq, cmd).await
    }

    /// [`Self::connect_part`] once the connection was `acquired`.
    async fn synced_part(
        &mut self,
        acquired: Result<PooledConn, ProxyError>,
        seq: u8,
        cmd: Command<'_>,
    ) -> Result<Option<PooledConn>, ProxyError> {
        let mut conn = match acquired {
            Ok(c) => c,
            Err(e) => {
                write_error(&mut *self.client, seq, &e).await;
                return Ok(None);
            }
        };
        let uses_last_insert_id = cmd.uses_last_insert_id() || self.uses_last_insert_id;
        if let Some(err) = self.b.sync(&mut conn, uses_last_insert_id).await? {
            self.b.give_back(conn);
            self.write_server_error(seq, &err).await?;
            return Ok(None);
        }
        Ok(Some(conn))
    }

    /// Stream the response of a part already sent on `conn` as one part of
    /// a concatenated result set (`is_first`: with the column
    /// definitions; `branches`: the partitions' statements it joins,
    /// `conditions::union_branches`), adding what its terminator said to
    /// `sum`. Returns
    /// the next sequence id, or `None` when the response already ended
    /// (with an error).
    async fn receive_part(
        &mut self,
        mut conn: PooledConn,
        seq: u8,
        (is_first, branches): (bool, u32),
        sum: &mut PartsSum,
        is_past_metadata: bool,
    ) -> Result<Option<u8>, ProxyError> {
        let max = self.b.ctx.config.proxy.max_allowed_packet;
        let deprecated = self.is_eof_deprecated();
        let running = self.b.running(&conn, conn.pool().backend_id);
        let mut f = Forwarder::new(&mut conn.stream, &mut *self.client, deprecated, max)
            .starting_at(seq)
            .naming(&self.b.ctx.partitioning)
            .shipped(&self.ship_names)
            .past_metadata(is_past_metadata);
        if self.is_fenced {
            f = f.holding_missing_tables();
        }
        if self.holds_parse_errors {
            f = f.holding_parse_errors();
        }
        let r = f.run_part(is_first).await;
        drop(running);
        match r {
            Ok((mut outcome, next)) => {
                let is_err = outcome.is_err;
                sum.warnings = sum.warnings.saturating_add(outcome.warnings);
                let st = outcome.status.unwrap_or(0);
                sum.flags |= st & status::INDEX_FLAGS;
                sum.status = st;
                let held = outcome.held.take();
                if held
                    .as_ref()
                    .is_some_and(crate::partition::refresh::is_stale_trigger_error)
                {
                    conn.is_broken = true;
                }
                if outcome.warnings > 0 && held.is_none() {
                    self.b
                        .gather_branches(
                            &mut conn,
                            outcome.warnings,
                            branches,
                            &mut self.scratch.gathered,
                        )
                        .await;
                }
                self.b
                    .finish(conn, outcome, &Effects::default(), self.scratch);
                super::fence::held_answer(held)?;
                Ok((!is_err).then_some(next))
            }
            Err(f) => match f.error {
                ForwardError::Backend(e) => {
                    let err = self.b.backend_lost(conn, e.to_string());
                    if !self.b.is_bound_lost {
                        write_error(&mut *self.client, f.next_seq, &err).await;
                    }
                    Ok(None)
                }
                ForwardError::Client(_) => {
                    conn.is_broken = true;
                    Err(ProxyError::ClientGone)
                }
            },
        }
    }

    /// Before the first part's answer reaches the client: read the column
    /// definitions of the other parts sent ahead (flight's second part
    /// on). A server writes them once it opened the part's tables (they
    /// reach the proxy with its first flush: its first 16 KiB of rows, or
    /// its end), and a partition change's rename waits for such a
    /// statement to end; so a part renamed away fails here, while the
    /// statement can still be planned again as a whole
    /// (`fence::stale_route`), never after rows were sent. Every part sent
    /// is registered for KILL QUERY meanwhile (`InFlight::running`).
    /// Returns how many parts were read so. Parts that were
    /// not sent ahead (more than `MAX_IN_FLIGHT`, or inside a transaction,
    /// one part at a time) are not read early (docs/src/queries.md lists it).
    async fn preflight(&mut self, flight: &mut InFlight) -> Result<usize, Preflight> {
        let mut n = 0;
        for conn in flight.conns.iter_mut().skip(1) {
            let r = preflight_part(&mut conn.stream).await;
            match r {
                Ok(None) => n += 1,
                Ok(Some(err)) => return Err(Preflight::Server(err)),
                Err(e) => {
                    return Err(Preflight::Lost(ProxyError::BackendLost {
                        backend: conn.backend.to_string(),
                        reason: e.to_string(),
                    }))
                }
            }
        }
        Ok(n)
    }

    /// Read the OK of a write already sent on `conn` into `total`.
    pub(super) async fn read_part_ok(
        &mut self,
        mut conn: PooledConn,
        total: &mut OkPacket,
    ) -> Result<bool, ProxyError> {
        let running = self.b.running(&conn, conn.pool().backend_id);
        let r = conn.read_response().await;
        drop(running);
        self.add_ok(conn, r, total).await
    }

    pub(super) async fn add_ok(
        &mut self,
        mut conn: PooledConn,
        r: Result<Result<OkPacket, hscale_wire::response::ErrPacket>, ProxyError>,
        total: &mut OkPacket,
    ) -> Result<bool, ProxyError> {
        match r {
            Ok(Ok(ok)) => {
                total.affected_rows += ok.affected_rows;
                total.warnings = total.warnings.saturating_add(ok.warnings);
                // The last part's flags, and every part's index flags.
                total.status = ok.status | (total.status & status::INDEX_FLAGS);
                // This part's counts; `add_up` adds them up.
                total.info = ok.info;
                if total.last_insert_id == 0 {
                    total.last_insert_id = ok.last_insert_id;
                }
                self.b
                    .gather(&mut conn, ok.warnings, &mut self.scratch.gathered)
                    .await;
                let outcome = Outcome {
                    status: Some(ok.status),
                    ok: Some(ok),
                    is_err: false,
                    packets: 0,
                    held: None,
                    is_conn_ending: false,
                    ..Outcome::default()
                };
                self.b
                    .finish(conn, outcome, &Effects::default(), self.scratch);
                Ok(true)
            }
            Ok(Err(err)) => {
                if self.is_fenced && crate::partition::refresh::is_stale_trigger_error(&err) {
                    // Its prepared statements lock older triggers' tables.
                    conn.is_broken = true;
                }
                self.b.give_back(conn);
                // A part that ran into a renamed table (a stale route):
                // nothing reached the client yet, so the fence runs the
                // statement again whole (its own transaction is rolled
                // back by `finish_write`).
                let err = super::fence::stale_route(self.is_fenced, err)?;
                self.write_server_error(1, &err).await?;
                Ok(false)
            }
            Err(e) => Err(self.b.backend_lost(conn, e.to_string())),
        }
    }

    /// The one OK of a write over several partitions; its insert id is the
    /// first id the statement generated, as on one server, or without one
    /// the statement's last row's (`add_up`).
    pub(crate) async fn write_total(&mut self, mut total: OkPacket) -> Result<(), ProxyError> {
        self.scratch.note.affected = Some(total.affected_rows);
        match self.scratch.generated_id {
            Some(0) => {}
            Some(id) => {
                total.last_insert_id = id;
                self.b.state.last_insert_id = id;
            }
            None if total.last_insert_id != 0 => {
                self.b.state.last_insert_id = total.last_insert_id;
            }
            None => {}
        }
        // The last part's flags, with the session's autocommit and
        // transaction state (each part ran on its own connection).
        let st = (total.status & !(status::AUTOCOMMIT | status::IN_TRANS)) | self.b.status();
        send(self.reply(1).ok(OkParts {
            affected_rows: total.affected_rows,
            last_insert_id: total.last_insert_id,
            status: st,
            warnings: total.warnings,
            info: &total.info.text(),
        }))
        .await
    }
}

/// Why the parts sent ahead of a concatenation stopped before its first
/// row ([`Exec::preflight`]).
enum Preflight {
    /// A part's error, which the client gets before any row (or a stale
    /// route: a part's table was renamed away by a partition change,
    /// `fence::stale_route`).
    Server(ErrPacket),
    /// A part's backend connection broke.
    Lost(ProxyError),
}

/// Read a SELECT's response on `stream` up to its rows: `Some(error)`
/// when it failed there.
async fn preflight_part<B: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut hscale_wire::PacketStream<B>,
) -> Result<Option<ErrPacket>, hscale_wire::WireError> {
    let malformed = || hscale_wire::WireError::Malformed("a read's part answered without rows");
    let first = stream.read_packet().await?;
    match first.first() {
        Some(0xff) => return ErrPacket::decode(&first.payload).map(Some),
        Some(0x00) | None => return Err(malformed()),
        _ => {}
    }
    loop {
        let d = stream.read_packet().await?;
        match d.first() {
            Some(0xfe) if d.payload.len() < 9 => return Ok(None),
            Some(0xff) => return ErrPacket::decode(&d.payload).map(Some),
            _ => {}
        }
    }
}

/// The counts of one part's OK, as one server would have counted its rows
/// in the whole statement: an INSERT of one row has no info text, but in a
/// statement of several rows it counts one record, and a duplicate when
/// REPLACE replaced it (2 affected), IGNORE skipped it (0 affected) or ON
/// DUPLICATE KEY UPDATE changed it (2 affected; with IGNORE, left it as it
/// was: 0 affected).
pub(super) fn part_info(sql: &[u8], info: OkInfo, affected: u64, warnings: u16) -> OkInfo {
    if info != OkInfo::None {
        return info;
    }
    let text = String::from_utf8_lossy(sql.get(..sql.len().min(64)).unwrap_or(sql));
    let head = text.trim_start().to_ascii_uppercase();
    let is_replace = head.starts_with("REPLACE");
    if !is_replace && !head.starts_with("INSERT") {
        return OkInfo::None;
    }
    let upper = String::from_utf8_lossy(sql).to_ascii_uppercase();
    let is_odku = upper.contains("ON DUPLICATE");
    let is_ignore = head.split_whitespace().take(3).any(|w| w == "IGNORE");
    let duplicates = if is_replace {
        affected.saturating_sub(1)
    } else if is_odku && is_ignore {
        // Under IGNORE a server counts the rows it did not copy: an ON
        // DUPLICATE KEY UPDATE that changed nothing (0 affected).
        u64::from(affected == 0)
    } else if is_odku {
        u64::from(affected == 2)
    } else if is_ignore {
        1u64.saturating_sub(affected)
    } else {
        0
    };
    OkInfo::Records {
        records: 1,
        duplicates,
        warnings: u64::from(warnings),
    }
}

/// Whether a write's text has a `RETURNING` clause (a word token, so not
/// inside a string, a comment or a quoted name).
fn returns_rows(sql: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(sql) else {
        return false;
    };
    hscale_sql::mentions::contains_ci(sql, b"RETURNING")
        && hscale_sql::tokenize(text)
            .is_ok_and(|tokens| tokens.iter().any(|t| t.is_word(text, "RETURNING")))
}
