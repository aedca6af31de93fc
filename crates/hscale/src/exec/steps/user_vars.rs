//! Reads over several partitions that use user variables (`SELECT @n :=
//! @n + 1, ... ORDER BY ...`, `WHERE k = @k`): a session's variables live
//! on one backend connection (the session is pinned to it), and one server
//! evaluates assignments row by row in its own order. So such a read runs
//! whole on that connection, with temporary copies of the partitioned
//! tables it reads (`router::on_copies_at`, the plan reads that cannot be
//! split fall back to), dropped after it. A session not yet holding a
//! connection is pinned to one on the main backend first.

use hscale_route::router::{self, Plan};
use hscale_route::BackendId;
use hscale_sql::Pins;

use crate::error::ProxyError;
use crate::exec::Bindings;

impl Bindings {
    /// Before running `plan`: whether this statement may borrow pooled
    /// connections beside the one its session's variables pin
    /// (`StatementScratch::may_borrow_beside`), and a read that uses variables
    /// over several partitions, or on another backend than theirs, put on
    /// copies. `true` when `plan` was replaced so.
    pub async fn with_variables(
        &mut self,
        plan: &mut Plan,
        facts: &hscale_sql::Facts,
        sql: &str,
        dict: &hscale_route::dictionary::Dictionary,
        spread: bool,
        last_insert_id: bool,
    ) -> Result<bool, ProxyError> {
        // A session pinned only by user variables runs reads, and writes
        // on one partition, that use none on other backends too (a write
        // over several needs the statement's own transaction, which a
        // pinned session does not get).
        self.may_borrow_beside = facts.pins.is_empty()
            && facts.unpins.is_empty()
            && (facts.kind == hscale_sql::Kind::Select
                || matches!(&*plan, Plan::Targets { parts, .. } if parts.len() == 1));
        let pinned_at = self.pinned.as_ref().map(|c| c.pool().backend_id);
        let is_elsewhere = matches!(&*plan, Plan::Targets { parts, .. }
            if pinned_at.is_some_and(|b| parts.iter().any(|(t, _)| t.backend != b)));
        if (spread || is_elsewhere || matches!(plan, Plan::Refuse(_)))
            && facts.pins == Pins::USER_VARIABLE
            && !last_insert_id
        {
            if let Some(p) = self.on_copies_with_variables(sql, dict).await? {
                *plan = p;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The plan of a read with user variables over several partitions
    /// (see the module), or `None` when it is not a plain read.
    async fn on_copies_with_variables(
        &mut self,
        sql: &str,
        dict: &hscale_route::dictionary::Dictionary,
    ) -> Result<Option<Plan>, ProxyError> {
        let backend = self
            .pinned
            .as_ref()
            .map_or(BackendId::MAIN, |c| c.pool().backend_id);
        let Some(plan) = router::on_copies_at(sql, self.state.db.as_deref(), dict, backend) else {
            return Ok(None);
        };
        if !matches!(plan, Plan::Merge(_)) {
            return Ok(Some(plan));
        }
        // The variables this read sets must outlive it.
        if let Err(err) = self.pin(backend, Pins::USER_VARIABLE).await? {
            return Err(ProxyError::Refused(format!(
                "a read with user variables could not get a connection: {}",
                err.message
            )));
        }
        Ok(Some(plan))
    }
}
