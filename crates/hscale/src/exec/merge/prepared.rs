//! Prepared reads merged across partitions (`Routed::Merged`): the same
//! plans as the text statement, answered in the binary result format.
//!
//! - **PREPARE**: the statement is prepared on the main backend over
//!   empty temporary copies of its partitioned tables (`CREATE TEMPORARY
//!   TABLE` from each model's definition), so the client gets the
//!   parameter and column counts and definitions one server would send;
//!   the connection is closed afterwards (it holds the copies).
//! - **EXECUTE**: the parameters are written into the text as literals of
//!   their types (`exec/interpolate.rs`), the text is planned like a
//!   COM_QUERY and run by the merge operators; each merged row is written
//!   as a binary row (`hscale_wire::binary_row`) from the column
//!   definitions of the answer. A plan that one server answers whole (one
//!   partition, or the statement on copies of its tables) is instead
//!   prepared and executed there, its binary rows streamed through: exact
//!   even where the text form rounds (a DOUBLE with fixed decimals, such
//!   as VAR_POP's).

use bytes::Bytes;
use hscale_route::router::{MergePlan, Mode, Plan, StatementKind};
use hscale_route::BackendId;
use hscale_wire::response::ErrPacket;
use hscale_wire::stmt::{Execute, PrepareOk};
use tokio::io::{AsyncRead, AsyncWrite};

use super::Stop;
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::exec::forward::Expect;
use crate::exec::prepared::{Command, Execution};
use crate::exec::{Effects, Exec};

/// A prepare's answer: its OK and the parameter and column definitions.
pub type PrepareAnswer = (PrepareOk, Vec<Bytes>);

/// A plan whose one part answers the statement whole: nothing to merge.
pub(super) fn is_whole(plan: &MergePlan) -> bool {
    plan.parts.len() == 1
        && plan.mode == Mode::Sort { hidden: 0 }
        && plan.order.is_empty()
        && plan.offset == 0
        && plan.limit.is_none()
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Prepare `plan`'s statement (the whole read on copies of its tables,
    /// `router::prepared_on_copies`) on the main backend over empty copies.
    pub async fn prepare_on_copies(
        &mut self,
        plan: &MergePlan,
    ) -> Result<Result<PrepareAnswer, ErrPacket>, ProxyError> {
        let mut setup = Vec::new();
        for ship in &plan.ship {
            let body = match self.ship_body(ship).await {
                Ok(b) => b,
                Err(Stop::Server(e)) => return Ok(Err(e)),
                Err(Stop::Proxy(e)) => return Err(e),
            };
            let temp = crate::partition::qualified(&ship.db, &ship.temp);
            setup.push(format!("DROP TEMPORARY TABLE IF EXISTS {temp}"));
            setup.push(format!("CREATE TEMPORARY TABLE {temp}{body}"));
        }
        let Some((_, sql)) = plan.parts.first() else {
            return Err(ProxyError::Wrong("a plan without parts".into()));
        };
        // A connection of its own, never the session's pinned one or a
        // branch: it holds the copies and is closed after.
        let mut conn = self
            .b
            .ctx
            .pool_as(self.b.worker, BackendId::MAIN, self.b.identity)
            .get_as(self.b.tenant.claim(), self.b.is_found_rows)
            .await?;
        conn.is_broken = true;
        let lost = |conn: &PooledConn, e: &dyn std::fmt::Display| ProxyError::BackendLost {
            backend: conn.backend.to_string(),
            reason: e.to_string(),
        };
        // The database and variables only: a deferred BEGIN waits for the
        // session's first statement.
        let begin = self.b.pending_begin.take();
        let synced = self.b.sync(&mut conn, false).await;
        self.b.pending_begin = begin;
        if let Some(err) = synced? {
            return Ok(Err(err));
        }
        for s in &super::ship::in_copy_state(setup) {
            if let Err(e) = conn.command(&BackendConn::payload_for_query(s)).await? {
                return Ok(Err(e));
            }
        }
        let mut payload = bytes::BytesMut::with_capacity(1 + sql.len());
        payload.extend_from_slice(&[hscale_wire::consts::com::STMT_PREPARE]);
        payload.extend_from_slice(sql.as_bytes());
        if let Err(e) = conn.stream.send_command(&payload).await {
            return Err(lost(&conn, &e));
        }
        conn.read_prepare().await.map_err(|e| lost(&conn, &e))
    }

    /// The one part of a whole plan prepared and executed on its backend
    /// (after the shipped tables' set-up), its answer streamed through.
    pub(super) async fn run_whole_binary(&mut self, plan: &MergePlan) -> Result<(), ProxyError> {
        let Some((target, sql)) = plan.parts.first() else {
            return Err(ProxyError::Wrong("a plan without parts".into()));
        };
        let mut conn = self.b.acquire(target.backend).await?;
        if let Some(err) = self.b.sync(&mut conn, false).await? {
            self.b.give_back(conn);
            return self.write_server_error(1, &err).await;
        }
        let setup = self.ship_setup.clone();
        for statement in setup.as_deref().into_iter().flatten() {
            conn.is_broken = true; // never reused: it holds temporary tables
            if let Err(err) = conn
                .command(&BackendConn::payload_for_query(statement))
                .await?
            {
                return self.write_server_error(1, &err).await;
            }
        }
        let no_params = Execute {
            statement_id: 0,
            flags: 0,
            null_bitmap: &[],
            types: None,
            values: &[],
        };
        let execution = Execution {
            exec: &no_params,
            types: &[],
            long_data: &[],
            uses_last_insert_id: false,
        };
        let read_only = Effects {
            is_read_only: true,
            ..Effects::default()
        };
        match self
            .send_part(&mut conn, sql.as_bytes(), Command::Execute(&execution))
            .await
        {
            Ok(Ok(())) => self.forward(conn, Expect::Query, &read_only).await,
            Ok(Err(err)) => {
                self.b.give_back(conn);
                let err = crate::exec::fence::stale_route(self.is_fenced, err)?;
                self.write_server_error(1, &err).await
            }
            Err(e) => Err(self.b.backend_lost(conn, e.to_string())),
        }
    }

    /// Run one execution of a merged prepared read: `sql` is its text
    /// with the parameters written in.
    pub async fn run_merged(&mut self, sql: &str) -> Result<(), ProxyError> {
        let dict = self.b.ctx.partitioning.dictionary();
        self.b.planned_version = dict.stored_version;
        let plan = crate::planning::plan(
            crate::planning::Asker::Session(&mut *self.b),
            &dict,
            sql,
            crate::planning::Db::OfSession,
            crate::planning::Form::Plain,
        )
        .await?;
        // A read through a global unique index: the lookup first.
        let plan = match plan {
            Plan::ByLookup(mut l) => {
                if !self.narrow_by_lookup(&mut l).await? {
                    return Ok(());
                }
                *l.inner
            }
            other => other,
        };
        let m = match plan {
            Plan::Merge(m) => m,
            Plan::Targets {
                kind: StatementKind::Select,
                parts,
            } => {
                // Pruned by a parameter, or rows only concatenated: the
                // parts' rows in turn.
                MergePlan {
                    parts,
                    mode: Mode::Sort { hidden: 0 },
                    order: Vec::new(),
                    offset: 0,
                    limit: None,
                    ship: Vec::new(),
                    fallback: None,
                    aliased: None,
                }
            }
            Plan::Refuse(why) => return Err(ProxyError::Refused(why)),
            _ => {
                return Err(ProxyError::Refused(
                    "this prepared statement, with its parameters, is not a read hscale can merge (run it as a query)".into(),
                ))
            }
        };
        self.scratch.note.kind = crate::metrics::PlanKind::Merge;
        self.scratch.note.parts = m.parts.len() as u32;
        self.is_binary = true;
        let r = self.run_merge(m).await;
        self.is_binary = false;
        r
    }
}
