//! Running a `MergePlan` (`hscale_route::router::merge`): the partitions'
//! fragments run in parallel, and their rows are merged here.
//!
//! - **Sort**: every fragment is sorted (and limited to OFFSET + LIMIT rows)
//!   by its backend; the proxy keeps one row per partition and repeatedly
//!   sends the smallest (a k-way merge), so memory does not grow with the
//!   result. Partitions beyond the connections a statement may hold at
//!   once are read into a bounded buffer instead (only with LIMIT).
//! - **Group**: each fragment returns partial groups; the proxy combines
//!   them in a hash map keyed by the values' comparison forms, computes the
//!   final values, sorts and cuts. The column definitions come from the
//!   statement itself run with `LIMIT 0` on one partition, so the client
//!   sees exactly what one server would send.
//!
//! At most `[proxy] merge_max_rows` rows are held; past that the statement
//! fails with `ProxyError::MergeLimit`.
//!
//! | file | does |
//! |---|---|
//! | `mod.rs` | the drivers: shipping, sort and group merges |
//! | `part.rs` | one partition's answer read row by row (`Part`) |
//! | `reply.rs` | the merged rows written to the client, and the answer's end (terminator or error) |
//! | `sort.rs` | row ordering and the k-way merge's choice (pure) |
//! | `aggregate.rs` | the GROUP BY operator: partial rows into groups, final rows, HAVING, ORDER BY (pure) |
//! | `group.rs` | aggregate accumulators and grouping forms (pure) |
//! | `having.rs` | HAVING evaluation, three-valued (pure) |
//! | `columns.rs` | column definitions unified across parts; comparison kinds (pure) |

mod aggregate;
mod columns;
mod create_select;
mod cut;
mod errors;
#[cfg(test)]
mod fixtures;
mod group;
mod having;
mod part;
pub mod prepared;
mod reply;
mod ship;
mod sort;

use bytes::Bytes;
use hscale_route::dictionary::Target;
use hscale_route::router::{GroupPlan, MergePlan, Mode, OrderKey, Output};
use hscale_route::value::Kind;
use hscale_route::BackendId;
use hscale_wire::consts::status;
use hscale_wire::reply::{Reply, Rows};
use hscale_wire::resultset::ColumnInfo;
use tokio::io::{AsyncRead, AsyncWrite};

use super::conditions;
use super::forward::Outcome;
use super::scratch::StatementScratch;
use super::{write_error, Bindings, Effects, Exec};
use crate::backend::state::SelectLimit;
use crate::backend::BackendConn;
use crate::error::ProxyError;
use aggregate::Aggregate;
use columns::{kind_of, Unified};
use errors::{bad_value, unordered, Stop};
use part::Part;
use reply::{end_rows, write_row};
use sort::{order_rows, smallest, sort_keys};

type Row = Vec<Option<Vec<u8>>>;

/// "Column 'x' in GROUP BY is ambiguous", as a warning.
const ER_NON_UNIQ_ERROR: u16 = 1052;

/// A streamed merge sending more rows than this holds every part's
/// connection open at the client's pace (`Exec::hold_open`).
const HELD_ABOVE_ROWS: u64 = 1000;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    pub(crate) async fn run_merge(&mut self, mut plan: MergePlan) -> Result<(), ProxyError> {
        // sql_select_limit limits what the client gets, as one server
        // limits the statement's outermost SELECT without LIMIT; every
        // part reads its rows in full.
        match self.b.state.vars.select_limit() {
            SelectLimit::Unset => self.is_unlimited = false,
            SelectLimit::Rows(n) => {
                self.is_unlimited = true;
                plan.limit = plan.limit.or(Some(n));
            }
            SelectLimit::Expression => {
                return Err(ProxyError::Unsupported {
                    what: "a statement over several partitions while sql_select_limit is set to an expression".into(),
                })
            }
        }
        // Inside a transaction the parts run on its branches, one at a
        // time and each read to its end (one connection per backend), and
        // shipped tables are copied from the branches (`ship.rs`).
        self.ship_setup = None;
        self.ship_cleanup = None;
        if !plan.ship.is_empty() && self.b.is_read_only_transaction() {
            return Err(ProxyError::Unsupported {
                what: "a read that ships a table between partitions (a join of tables partitioned differently, or a subquery over another partitioned table) inside a READ ONLY transaction (MariaDB refuses the temporary tables it needs there: run it in a READ WRITE transaction or outside one)".into(),
            });
        }
        self.ship_names = plan
            .ship
            .iter()
            .map(|ship| {
                let (_, like) = &ship.like;
                let table = self
                    .b
                    .ctx
                    .partitioning
                    .logical_table(ship.db.as_bytes(), like.as_bytes())
                    .unwrap_or_else(|| like.clone());
                (ship.temp.clone(), table)
            })
            .collect();
        if !plan.ship.is_empty() {
            match self.ship_statements(&plan.ship).await {
                Ok(s) => self.ship_setup = Some(std::sync::Arc::new(s)),
                Err(Stop::Server(err)) => {
                    let err = crate::exec::fence::stale_route(self.is_fenced, err)?;
                    return self.write_server_error(1, &err).await;
                }
                Err(Stop::Proxy(ProxyError::ClientGone)) => return Err(ProxyError::ClientGone),
                Err(Stop::Proxy(e)) => {
                    write_error(&mut *self.client, 1, &e).await;
                    return Ok(());
                }
            }
            // A connection that stays with the session (a transaction's
            // branch, or pinned by user variables, ...) drops the copies
            // after the part instead of being closed.
            if self.b.is_in_transaction() || self.b.pinned.is_some() {
                self.ship_cleanup = Some(ship::cleanup(&plan.ship));
            }
        }
        // One server answers the whole statement: a prepared execution
        // gets its binary rows as they are (`prepared.rs`).
        if self.is_binary && prepared::is_whole(&plan) {
            return self.run_whole_binary(&plan).await;
        }
        // Parts still reading when this returns close their connections.
        let (mark, merged) = (self.scratch.gathered.mark(), self.scratch.note.merged);
        let r = match &plan.mode {
            Mode::Sort { hidden } => self.merge_sorted(&plan, *hidden).await,
            Mode::Group(g) => self.merge_groups(&plan, g).await,
        };
        // Values that do not merge exactly are refused before anything is
        // sent: one server answers instead, with copies of the tables.
        // The parts it ran are forgotten: their warnings are not the
        // statement's.
        if let (Err(Stop::Proxy(ProxyError::Refused(_))), Some(fallback)) = (&r, plan.fallback) {
            self.scratch.gathered.rewind(mark);
            self.scratch.note.merged = merged;
            return Box::pin(self.run_merge(*fallback)).await;
        }
        // A name of an ORDER BY expression is no column of the tables: one
        // server reads it as the select alias (`MergePlan::aliased`). A
        // part's 1054 comes before any row reaches the client.
        if let (Err(Stop::Server(e)), Some(aliased)) = (&r, plan.aliased) {
            if e.code == errors::ER_BAD_FIELD_ERROR {
                self.scratch.gathered.rewind(mark);
                self.scratch.note.merged = merged;
                return Box::pin(self.run_merge(*aliased)).await;
            }
        }
        match r {
            Ok(()) => Ok(()),
            Err(Stop::Server(e)) => {
                let e = crate::exec::fence::stale_route(self.is_fenced, e)?;
                let e = match (&plan.mode, plan.parts.first()) {
                    (Mode::Sort { hidden }, Some((_, fragment))) => {
                        errors::as_client_sees(e, fragment, *hidden)
                    }
                    _ => e,
                };
                self.write_server_error(1, &e).await
            }
            Err(Stop::Proxy(ProxyError::ClientGone)) => Err(ProxyError::ClientGone),
            Err(Stop::Proxy(e)) => {
                write_error(&mut *self.client, 1, &e).await;
                Ok(())
            }
        }
    }

    /// Send `sql` on a connection to `backend`, synced to the session,
    /// after the statements that set up shipped tables (such a connection
    /// is closed after use, which drops its temporary tables).
    async fn start_part(&mut self, target: &Target, sql: &str) -> Result<Part, Stop> {
        self.start_part_held(target, sql, false).await
    }

    /// [`Self::start_part`]; `is_held`: the part is one of several streams
    /// read at the client's pace, so its server must wait for its turn
    /// longer than its net_write_timeout (`Exec::hold_open`).
    async fn start_part_held(
        &mut self,
        target: &Target,
        sql: &str,
        is_held: bool,
    ) -> Result<Part, Stop> {
        let mut conn = self.b.acquire(target.backend).await?;
        if let Some(err) = self.b.sync(&mut conn, self.uses_last_insert_id).await? {
            self.b.give_back(conn);
            return Err(Stop::Server(err));
        }
        if is_held {
            if let Err(err) = self.hold_open(&mut conn).await? {
                self.b.give_back(conn);
                return Err(Stop::Server(err));
            }
        }
        let setup = self.ship_setup.clone();
        for statement in setup.as_deref().into_iter().flatten() {
            // Never reused (it holds temporary tables), unless it is a
            // transaction's branch: it drops them after the part.
            conn.is_broken |= self.ship_cleanup.is_none();
            match conn
                .command(&BackendConn::payload_for_query(statement))
                .await
            {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    // Closed, with its temporary tables (inside a
                    // transaction the transaction is lost with it).
                    self.b
                        .close(conn, "setting up shipped tables failed".into());
                    return Err(Stop::Server(e));
                }
                Err(e) => {
                    self.b.close(conn, e.to_string());
                    return Err(Stop::Proxy(e));
                }
            }
        }
        let fragment = sql.to_string();
        let unlimited;
        let sql = if self.is_unlimited {
            unlimited = format!("SET STATEMENT sql_select_limit = DEFAULT FOR {sql}");
            &unlimited
        } else {
            sql
        };
        if let Err(e) = conn
            .stream
            .send_command(&BackendConn::payload_for_query(sql))
            .await
        {
            let backend = conn.backend.to_string();
            self.b.close(conn, e.to_string());
            return Err(Stop::Proxy(ProxyError::BackendLost {
                backend,
                reason: e.to_string(),
            }));
        }
        let running = self.b.running(&conn, target.backend);
        let mut part = Part::started(conn, running);
        part.branches = super::conditions::union_branches(target);
        part.fragment = Some(fragment);
        if setup.as_ref().is_some_and(|s| !s.is_empty()) {
            part.cleanup = self.ship_cleanup.clone();
            part.holds_copies = self.ship_cleanup.is_none();
        }
        Ok(part)
    }

    /// Give a part's connection back once its result was read to the end.
    async fn end_part(&mut self, part: Part) {
        end_part(self.b, self.scratch, part).await;
    }

    /// After `e` stopped the statement while reading part `p`: read the
    /// rest of its answer if the connection still serves (an error packet
    /// ends it; a proxy-side stop such as the merge's row limit leaves rows
    /// to read), and give the connection back. Inside a transaction it is
    /// a branch that holds the transaction's writes: closing it would roll
    /// them back on its server while the other branches commit. Returns `e`.
    async fn end_failed_part(&mut self, mut p: Part, e: Stop) -> Stop {
        let is_lost = matches!(
            e,
            Stop::Proxy(ProxyError::BackendLost { .. } | ProxyError::ClientGone)
        );
        // Only the session's own connection is worth reading out (a part
        // past the merge's row limit may have millions of rows left): a
        // pooled one is simply closed.
        let is_own = self.b.is_in_transaction() || !self.b.pins.is_empty();
        if is_own && !is_lost && !p.is_done() && p.conn.as_ref().is_some_and(|c| !c.is_broken) {
            let _ = p.drain().await;
        }
        self.end_part(p).await;
        e
    }

    /// Whether every part of this plan may run at once (never inside a
    /// transaction: its parts share the transaction's branches).
    fn concurrent_parts(&self, parts: &[(Target, String)]) -> bool {
        if self.b.is_in_transaction() {
            return false;
        }
        let mut per_backend = vec![0usize; self.b.ctx.config.backends.len()];
        for (t, _) in parts {
            per_backend[t.backend.index()] += 1;
        }
        per_backend.iter().enumerate().all(|(b, n)| {
            *n <= (self
                .b
                .ctx
                .pool(self.b.worker, BackendId::new(b))
                .cfg
                .max_connections
                / 2)
            .max(1)
        }) && parts.len() <= 64
    }

    /// ORDER BY / LIMIT: a k-way merge of sorted partition streams.
    async fn merge_sorted(&mut self, plan: &MergePlan, hidden: usize) -> Result<(), Stop> {
        let max_rows = self.b.ctx.config.proxy.merge_max_rows;
        let streaming = self.concurrent_parts(&plan.parts);
        if !streaming && !self.b.is_in_transaction() {
            let per_part = plan.limit.map(|l| l.saturating_add(plan.offset) as usize);
            match per_part {
                Some(n) if n.saturating_mul(plan.parts.len()) <= max_rows => {}
                _ => {
                    return Err(Stop::Proxy(ProxyError::Refused(format!(
                        "ORDER BY over {} partitions needs more connections than a statement may hold at once; add LIMIT or raise the backends' max_connections",
                        plan.parts.len()
                    ))))
                }
            }
        }
        // Start every part (streaming) or read them one by one (buffered).
        let (source, defs) = if streaming {
            self.open_streams(plan).await?
        } else {
            self.read_buffered(plan).await?
        };
        let Some((defs, columns)) = defs else {
            return Err(Stop::Proxy(ProxyError::Wrong(
                "no partition answered".into(),
            )));
        };
        let visible = columns.len().saturating_sub(hidden);
        let keys = sort_keys(&plan.order, &columns, visible)?;
        let st = self.b.status();
        let deprecated = self.is_eof_deprecated();
        let logical: Vec<_> = defs[..visible]
            .iter()
            .map(|d| self.logical_def(d))
            .collect();
        let mut header = Reply::new(&mut *self.client, 1, deprecated).columns(visible);
        for (d, logical) in defs[..visible].iter().zip(logical) {
            header.column_def(logical.as_deref().unwrap_or(d));
        }
        let mut rows = header.rows(st);
        let binary = self.is_binary.then_some(&columns[..visible]);
        let r = match source {
            Sorted::Streams(held, heads) => {
                let order = Order {
                    keys: &keys,
                    visible,
                    binary,
                };
                send_streams(self.b, self.scratch, &mut rows, plan, held, heads, order).await
            }
            Sorted::Buffered(mut buffered) => {
                buffered.sort_by(|a, b| order_rows(a, b, &keys, visible));
                let mut r = Ok(());
                for row in buffered
                    .iter()
                    .skip(plan.offset as usize)
                    .take(plan.limit.unwrap_or(u64::MAX) as usize)
                {
                    r = write_row(&mut rows, &row[..visible], binary).await;
                    if r.is_err() {
                        break;
                    }
                }
                r
            }
        };
        end_rows(rows, r, st, self.b, self.scratch, plan).await
    }

    /// Start every part, read the column definitions and every part's
    /// first row.
    async fn open_streams(&mut self, plan: &MergePlan) -> Result<(Sorted, Option<Defs>), Stop> {
        let mut held: Vec<Part> = Vec::new();
        // Every part waits while the others reach the client, at its
        // pace; not worth a round trip per part when a small LIMIT bounds
        // what the client is sent (the parts are then drained at once).
        let is_held = plan.parts.len() > 1
            && plan
                .limit
                .is_none_or(|l| l.saturating_add(plan.offset) > HELD_ABOVE_ROWS);
        for (t, sql) in &plan.parts {
            held.push(self.start_part_held(t, sql, is_held).await?);
        }
        for p in held.iter_mut() {
            p.open().await?;
        }
        let mut defs = None;
        if let Some(first) = held.first() {
            let mut u = Unified::new(&first.defs, &first.columns);
            for p in &held[1..] {
                u.add(&p.columns)?;
            }
            defs = Some(u.finish()?);
        }
        let mut heads = Vec::new();
        for p in held.iter_mut() {
            heads.push(p.row().await?);
        }
        Ok((Sorted::Streams(held, heads), defs))
    }

    /// Run the parts one after the other, every row read into memory.
    async fn read_buffered(&mut self, plan: &MergePlan) -> Result<(Sorted, Option<Defs>), Stop> {
        let max_rows = self.b.ctx.config.proxy.merge_max_rows;
        let mut buffered: Vec<Row> = Vec::new();
        let mut unified: Option<Unified> = None;
        for (t, sql) in &plan.parts {
            let mut p = self.start_part(t, sql).await?;
            let read = async {
                p.open().await?;
                match unified.as_mut() {
                    None => unified = Some(Unified::new(&p.defs, &p.columns)),
                    Some(u) => u.add(&p.columns)?,
                }
                while let Some(r) = p.row().await? {
                    buffered.push(r);
                    if buffered.len() > max_rows {
                        return Err(Stop::Proxy(ProxyError::MergeLimit { limit: max_rows }));
                    }
                }
                Ok(())
            }
            .await;
            if let Err(e) = read {
                return Err(self.end_failed_part(p, e).await);
            }
            self.end_part(p).await;
        }
        let defs = match unified {
            Some(u) => Some(u.finish()?),
            None => None,
        };
        Ok((Sorted::Buffered(buffered), defs))
    }

    /// Without GROUP BY, a MIN or MAX whose value is a string may read an
    /// ENUM or SET column, which one server may answer by member order
    /// (the end of an index on it): the columns are looked at
    /// (`GroupPlan::enum_probe`), and such a statement falls back to
    /// copies (`unordered`).
    async fn refuse_enum_min_max(
        &mut self,
        g: &GroupPlan,
        out_cols: &[ColumnInfo],
    ) -> Result<(), Stop> {
        let Some(probe) = &g.enum_probe else {
            return Ok(());
        };
        let reads_strings = g.outputs[..g.visible].iter().zip(out_cols).any(|(o, c)| {
            matches!(o, Output::Min(_) | Output::Max(_))
                && matches!(
                    kind_of(c),
                    Kind::Collated { .. } | Kind::Bytes | Kind::Unordered
                )
        });
        if !reads_strings {
            return Ok(());
        }
        let mut p = self.start_part(&g.meta.0, probe).await?;
        p.fragment = None;
        let read = async {
            p.open().await?;
            p.drain().await
        }
        .await;
        if let Err(e) = read {
            return Err(self.end_failed_part(p, e).await);
        }
        let is_enum = p.columns.iter().any(|c| kind_of(c) == Kind::Unordered);
        self.end_part(p).await;
        if is_enum {
            return Err(unordered());
        }
        Ok(())
    }

    /// A name of GROUP BY (or HAVING) that is both a select alias and a
    /// column: MariaDB groups by the column (ORDER BY and HAVING prefer
    /// the alias) and says so with warning 1052 "Column 'x' in GROUP BY
    /// is ambiguous", which the statement itself raised on the first
    /// partition (`GroupPlan::meta`, gathered since `since`). The merge
    /// groups by the alias's value, which the parts' rows carry; the
    /// column's value they do not: refused before any part runs, so that
    /// a plain read falls back to one server on copies of the tables
    /// (`MergePlan::fallback`) and anything else gets 1235, never groups
    /// one server keeps apart.
    /// When a GROUP BY item names an alias and the statement's warnings
    /// were not all listed (a session's `max_error_count` below them),
    /// the 1052 may be among the hidden ones: it falls back the same way.
    fn refuse_ambiguous_names(
        &self,
        plan: &GroupPlan,
        since: conditions::Mark,
    ) -> Result<(), Stop> {
        let g = &self.scratch.gathered;
        let message = match g.warning_since(since, ER_NON_UNIQ_ERROR) {
            Some(message) => message,
            None if plan.groups_by_alias && g.is_unlisted_since(since) => {
                "warnings not listed".to_string()
            }
            None => return Ok(()),
        };
        Err(Stop::Proxy(ProxyError::Refused(format!(
            "a GROUP BY or HAVING name that is both a select alias and a column of the table ({message}) over several partitions"
        ))))
    }

    /// Aggregates, GROUP BY, DISTINCT: combine partial groups.
    async fn merge_groups(&mut self, plan: &MergePlan, g: &GroupPlan) -> Result<(), Stop> {
        let max_rows = self.b.ctx.config.proxy.merge_max_rows;
        // The client's column definitions.
        let before_meta = self.scratch.gathered.mark();
        let mut meta = self.start_part(&g.meta.0, &g.meta.1).await?;
        meta.fragment = None; // EXPLAIN of LIMIT 0 analyzes nothing
        let read = async {
            meta.open().await?;
            meta.drain().await
        }
        .await;
        if let Err(e) = read {
            return Err(self.end_failed_part(meta, e).await);
        }
        let (out_defs, out_cols) = (meta.defs.clone(), meta.columns.clone());
        self.end_part(meta).await;
        self.refuse_ambiguous_names(g, before_meta)?;
        self.refuse_enum_min_max(g, &out_cols).await?;
        if out_cols.len() != g.visible {
            return Err(Stop::Proxy(ProxyError::Wrong(format!(
                "the statement has {} columns, the merge computes {}",
                out_cols.len(),
                g.visible
            ))));
        }
        let mut groups = Aggregate::new(g, max_rows);
        // Parts run a few at a time, each read to its end.
        let window = if self.concurrent_parts(&plan.parts) {
            plan.parts.len()
        } else {
            1
        };
        for chunk in plan.parts.chunks(window.max(1)) {
            let mut started = Vec::new();
            for (t, sql) in chunk {
                started.push(self.start_part(t, sql).await?);
            }
            for mut p in started {
                let read = async {
                    p.open().await?;
                    groups.columns(&p.columns)?;
                    while let Some(row) = p.row().await? {
                        groups.add(row)?;
                    }
                    Ok(())
                }
                .await;
                if let Err(e) = read {
                    // The parts started after it were sent ahead (outside
                    // a transaction only): closed unread.
                    return Err(self.end_failed_part(p, e).await);
                }
                self.end_part(p).await;
            }
        }
        let is_subtraction_signed = match self.b.sql_mode {
            Some(m) => m.is_no_unsigned_subtraction,
            None => self.b.state.vars.has_sql_mode("NO_UNSIGNED_SUBTRACTION"),
        };
        let out_defs = columns::as_executed(&out_defs, &out_cols, g, groups.part_columns());
        let merged = groups.finish(&out_cols, &plan.order, is_subtraction_signed)?;
        let st = self.b.status();
        let deprecated = self.is_eof_deprecated();
        let logical: Vec<_> = out_defs.iter().map(|d| self.logical_def(d)).collect();
        let mut header = Reply::new(&mut *self.client, 1, deprecated).columns(out_defs.len());
        for (d, logical) in out_defs.iter().zip(logical) {
            header.column_def(logical.as_deref().unwrap_or(d));
        }
        let mut rows = header.rows(st);
        let n = g.visible;
        let binary = self.is_binary.then_some(&out_cols[..]);
        let mut r = Ok(());
        for row in merged
            .iter()
            .skip(plan.offset as usize)
            .take(plan.limit.unwrap_or(u64::MAX) as usize)
        {
            r = write_row(&mut rows, &row[..n], binary).await;
            if r.is_err() {
                break;
            }
        }
        end_rows(rows, r, st, self.b, self.scratch, plan).await
    }
}

/// Give a part's connection back once its result was read to the end
/// (inside a transaction, after dropping the temporary tables of shipped
/// tables from it). The conditions of a part read to its end are
/// gathered first, on every connection that still serves: one closed
/// after use because it holds shipped copies too, and before the copies
/// are dropped (a DROP empties the connection's list).
async fn end_part(b: &mut Bindings, scratch: &mut StatementScratch, mut part: Part) {
    part.running = None;
    let merged = &mut scratch.note.merged;
    merged.0 = merged.0.saturating_add(part.warnings);
    merged.1 |= part.status.unwrap_or(0) & status::INDEX_FLAGS;
    let holds_copies = part.holds_copies;
    if let Some(c) = part.conn.as_mut() {
        if part.status.is_some() && (!c.is_broken || holds_copies) {
            let from = scratch.gathered.rows.len();
            b.gather_branches(c, part.warnings, part.branches, &mut scratch.gathered)
                .await;
            if let Some(sql) = part.fragment.as_deref() {
                b.measure_part(c, sql, part.branches, from, &mut scratch.gathered)
                    .await;
            }
        }
    }
    if !part.is_done() || part.conn.as_ref().is_some_and(|c| c.is_broken) {
        if let Some(conn) = part.conn.take() {
            b.close(conn, "a part of a merged read ended early".into());
        }
        return;
    }
    if let (Some(sql), Some(c)) = (part.cleanup.take(), part.conn.as_mut()) {
        if !matches!(
            c.command(&BackendConn::payload_for_query(&sql)).await,
            Ok(Ok(_))
        ) {
            if let Some(conn) = part.conn.take() {
                b.close(conn, "dropping shipped tables failed".into());
            }
            return;
        }
    }
    // An error packet carries no status flags: the session's stay.
    let outcome = Outcome {
        status: part.status,
        is_err: part.is_err,
        ..Outcome::default()
    };
    // A merge only reads: a transaction branch it ran on needs no commit.
    let read_only = Effects {
        is_read_only: true,
        ..Effects::default()
    };
    if let Some(conn) = part.conn.take() {
        b.finish(conn, outcome, &read_only, scratch);
    }
}

/// How a sort merge orders and writes its rows: order keys are offsets
/// from `visible`; `binary` as for [`write_row`].
struct Order<'a> {
    keys: &'a [(OrderKey, Kind)],
    visible: usize,
    binary: Option<&'a [ColumnInfo]>,
}

/// The k-way merge: send the smallest head row until the limit, then
/// read every part to its end.
async fn send_streams<S: AsyncRead + AsyncWrite + Unpin>(
    b: &mut Bindings,
    scratch: &mut StatementScratch,
    rows: &mut Rows<'_, S>,
    plan: &MergePlan,
    mut held: Vec<Part>,
    mut heads: Vec<Option<Row>>,
    order: Order<'_>,
) -> Result<(), Stop> {
    let Order {
        keys,
        visible,
        binary,
    } = order;
    let mut skip = plan.offset;
    let mut left = plan.limit.unwrap_or(u64::MAX);
    // Each part's rows skipped by OFFSET and sent, and where each stands
    // in the statement's rows (`cut.rs`), for a LIMIT that bounds them.
    let mut used = vec![(0u64, 0u64); held.len()];
    let is_tracked = plan
        .limit
        .is_some_and(|l| l.saturating_add(plan.offset) <= cut::MAX_TRACKED_ROWS);
    let mut places: Vec<Vec<u32>> = vec![Vec::new(); held.len()];
    let mut place = 0u32;
    while left > 0 {
        let Some(i) = smallest(&heads, keys, visible) else {
            break;
        };
        let next = held[i].row().await?;
        let row = std::mem::replace(&mut heads[i], next);
        let Some(row) = row else { break };
        if is_tracked {
            place = place.saturating_add(1);
            places[i].push(place);
        }
        if skip > 0 {
            skip -= 1;
            used[i].0 += 1;
            continue;
        }
        write_row(rows, &row[..visible], binary).await?;
        used[i].1 += 1;
        left -= 1;
    }
    let is_text_as_sent = b.state.vars.is_client_utf8();
    for (((mut p, head), used), places) in held.drain(..).zip(heads).zip(used).zip(places) {
        let mut is_cut = head.is_some() || used.0 > 0;
        while p.row().await?.is_some() {
            is_cut = true;
        }
        let is_rerun = cut::rewarn_used_rows(&mut p, used, is_cut, is_text_as_sent).await;
        // "at row N" of the run again: the row's place in the statement's.
        if is_rerun && is_tracked {
            scratch.gathered.row_map = conditions::RowMap::Rows(places);
        }
        end_part(b, scratch, p).await;
        scratch.gathered.row_map = conditions::RowMap::Same;
    }
    Ok(())
}

/// The column definitions of a merged result, and the columns they describe.
type Defs = (Vec<Bytes>, Vec<ColumnInfo>);

/// The rows of a sort merge: every part open with its next row
/// (streaming), or every row read (buffered).
enum Sorted {
    Streams(Vec<Part>, Vec<Option<Row>>),
    Buffered(Vec<Row>),
}
