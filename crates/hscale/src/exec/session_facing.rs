//! What the session (`crate::session`) reads and changes of its
//! [`Bindings`]: their fields are the executor's (`pub(super)`, read and
//! written only under `exec/`), and the session goes through these
//! methods, each named for what it asks or does. Connections are never
//! among them: the session borrows none (`Bindings::ask`,
//! `use_database`, `pin` run what it needs on one).

use std::sync::Arc;

use bytes::Bytes;
use hscale_sql::Pins;

use super::read_from::ReadFrom;
use super::Bindings;
use crate::backend::state::{SessionState, SessionVars};
use crate::config::UserConfig;
use crate::runtime::{Context, SessionHandle};
use crate::tenant::TenantConnection;

impl Bindings {
    pub fn ctx(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The worker thread the session runs on.
    pub fn worker(&self) -> usize {
        self.worker
    }

    pub fn connection_id(&self) -> u32 {
        self.connection_id
    }

    /// The session state replayed onto its connections: database,
    /// variables, multi-statements, LAST_INSERT_ID().
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// What KILL, PROCESSLIST and the idle loop share with other sessions.
    pub fn handle(&self) -> &Arc<SessionHandle> {
        &self.handle
    }

    /// The session's user as a tenant (its admission and figures).
    pub fn tenant(&self) -> &TenantConnection {
        &self.tenant
    }

    pub fn pins(&self) -> Pins {
        self.pins
    }

    /// A connection is pinned to the session.
    pub fn is_pinned(&self) -> bool {
        self.pinned.is_some()
    }

    /// A transaction reached more than one backend (it has branches).
    pub fn has_branches(&self) -> bool {
        self.txn.is_some()
    }

    /// A connection holding the session's state was lost: the client
    /// connection is closed without an answer.
    pub fn is_bound_lost(&self) -> bool {
        self.is_bound_lost
    }

    /// A held connection was closed by its server while the session was
    /// idle (`held_closed`): the session ends as if it were lost.
    pub fn mark_bound_lost(&mut self) {
        self.is_bound_lost = true;
    }

    /// A plain BEGIN may wait for the transaction's first statement
    /// (nothing pinned, no pin set).
    pub fn may_defer_begin(&self) -> bool {
        self.pinned.is_none() && self.pins.is_empty()
    }

    /// Keep `begin` (a plain BEGIN's COM_QUERY) for the backend of the
    /// transaction's first statement.
    pub fn defer_begin(&mut self, begin: Bytes) {
        self.pending_begin = Some(begin);
    }

    pub fn has_deferred_begin(&self) -> bool {
        self.pending_begin.is_some()
    }

    /// A COMMIT or ROLLBACK right after a deferred BEGIN: nothing ran.
    pub fn drop_deferred_begin(&mut self) {
        self.pending_begin = None;
    }

    /// The statement's text is a latin1 client's read as UTF-8
    /// (`Bindings::is_text_utf8`).
    pub fn is_text_utf8(&self) -> bool {
        self.is_text_utf8
    }

    pub fn set_text_utf8(&mut self, is_utf8: bool) {
        self.is_text_utf8 = is_utf8;
    }

    /// `SET hscale_coalesce = ON | OFF`.
    pub fn set_coalescing(&mut self, is_on: bool) {
        self.is_coalescing_off = !is_on;
    }

    /// COM_SET_OPTION: multi-statements on or off.
    pub fn set_multi_statements(&mut self, is_on: bool) {
        self.state.is_multi_statements = is_on;
    }

    /// Where the session's reads go (`read_from.rs`).
    pub fn read_from(&self) -> &ReadFrom {
        &self.read_from
    }

    pub fn read_from_mut(&mut self) -> &mut ReadFrom {
        &mut self.read_from
    }

    /// COM_CHANGE_USER accepted a user: its place as a tenant replaces
    /// the old user's (given back as it drops).
    pub fn replace_tenant(&mut self, tenant: TenantConnection) {
        self.tenant = tenant;
    }

    /// COM_CHANGE_USER accepted `user`: the backend account, reads and
    /// processlist name are the new user's.
    pub fn become_user(&mut self, user: &UserConfig) {
        self.identity = self.ctx.config.identity(&user.name);
        self.read_from = ReadFrom::for_user(Some(user));
        *self.handle.user.lock().unwrap_or_else(|p| p.into_inner()) = user.name.clone();
    }

    /// No database selected (COM_CHANGE_USER, before its own).
    pub fn forget_database(&mut self) {
        self.state.db = None;
    }

    /// The session variables of a new collation (COM_CHANGE_USER's), as
    /// at login.
    pub fn set_base_vars(&mut self, vars: SessionVars) {
        self.base_vars = Arc::new(vars);
        self.state.vars = self.base_vars.clone();
    }
}
