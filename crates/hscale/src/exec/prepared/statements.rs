//! The client's server-side prepared statements. hscale hands out its own
//! statement ids; each statement is prepared lazily on whichever backend
//! connection runs it (see `BackendConn::prepare`), so a statement survives
//! the session moving between pooled connections.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use hscale_sql::Pins;

use super::routing::Routed;

/// One statement the client prepared.
#[derive(Debug, Clone)]
pub struct ClientStatement {
    /// The statement text as the backends prepare it: the client's, with
    /// hscale's own answers in place (`session/rewrite.rs`).
    pub sql: Arc<[u8]>,
    pub num_params: u16,
    pub num_columns: u16,
    /// Pins running this statement adds (GET_LOCK, user variables, ...).
    pub pins: Pins,
    pub uses_last_insert_id: bool,
    /// It calls `LAST_INSERT_ID(expr)`.
    pub sets_last_insert_id: bool,
    /// An INSERT or REPLACE (its OK may report an explicit
    /// AUTO_INCREMENT value, `exec/insert_id.rs`).
    pub is_insert: bool,
    /// An INSERT's or REPLACE's tokens, lexed once at its PREPARE
    /// (`exec/insert_id.rs` reads them per execution); empty otherwise.
    pub insert_tokens: Arc<[hscale_sql::Token]>,
    /// Parameter types from the last execute that bound them.
    pub param_types: Option<Bytes>,
    /// COM_STMT_SEND_LONG_DATA chunks since the last execute: (param, data).
    pub long_data: Vec<(u16, Bytes)>,
    /// Bytes in `long_data`; at most `[proxy] max_allowed_packet`.
    pub long_data_bytes: usize,
    /// Long data went past the limit: executions fail with the server's
    /// error and long data is ignored until COM_STMT_RESET.
    pub is_long_data_refused: bool,
    /// The client's text of a statement that reads PROCESSLIST, rewritten
    /// with the sessions of the moment at every execution (`sql` holds
    /// those of its PREPARE).
    pub live: Option<Arc<[u8]>>,
    /// How it reaches partitioned tables (`Plain` when it names none).
    pub routing: Routed,
    /// An INSERT into a table with a sequence: its backends run
    /// `ids.sql`, whose parameters each execution fills in.
    pub ids: Option<Arc<hscale_route::router::PreparedIds>>,
    /// The dictionary version `routing` was planned with: a statement is
    /// planned again when the dictionary changed since.
    pub dict_version: u64,
    /// Its executions are answered by hscale, as the text statement is.
    pub own: Option<OwnRead>,
    /// It uses tables: an execution resets the diagnostics area
    /// (`hscale_sql::Facts::uses_tables`).
    pub uses_tables: bool,
}

/// A prepared statement whose executions hscale answers itself, as it
/// answers the text statement (binary rows, `exec/rows.rs`).
#[derive(Debug, Clone)]
pub enum OwnRead {
    /// `SHOW WARNINGS` / `SHOW ERRORS`: the session's list
    /// (`exec/conditions/list.rs`), when hscale knows it.
    Conditions(hscale_sql::diagnostics::ConditionRead),
    /// `SHOW INDEX` of this partitioned table (`exec/figures.rs`).
    Index(hscale_route::dictionary::TableName),
}

/// The statements of one session.
#[derive(Debug, Default)]
pub struct Statements {
    next_id: u32,
    map: HashMap<u32, ClientStatement>,
}

impl ClientStatement {
    /// Forget the long data sent since the last execute.
    pub fn clear_long_data(&mut self) {
        self.long_data.clear();
        self.long_data_bytes = 0;
    }
}

impl Statements {
    pub fn add(&mut self, stmt: ClientStatement) -> u32 {
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.map.insert(self.next_id, stmt);
        self.next_id
    }
    pub fn get(&self, id: u32) -> Option<&ClientStatement> {
        self.map.get(&id)
    }
    pub fn get_mut(&mut self, id: u32) -> Option<&mut ClientStatement> {
        self.map.get_mut(&id)
    }
    pub fn remove(&mut self, id: u32) {
        self.map.remove(&id);
    }
    pub fn clear(&mut self) {
        self.map.clear();
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
