//! The bindings a session starts with after its login: the session
//! variables its handshake collation implies (also at COM_CHANGE_USER),
//! the main backend's collation table read when a client names an id the
//! built-in one lacks, and `Bindings::new`.

use std::sync::Arc;

use hscale_route::BackendId;
use hscale_sql::{Pins, SetItem};
use hscale_wire::consts::cap;

use super::Bindings;
use crate::backend::state::{SessionState, SessionVars};
use crate::error::ProxyError;
use crate::runtime::{Context, SessionHandle};

impl Bindings {
    /// A logged-in client's bindings: no connection held, its state the
    /// base variables of its collation (`vars_for_collation`).
    /// `capabilities`: the client's flags; `host` as PROCESSLIST shows it.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: Arc<Context>,
        reads: super::SharedReads,
        worker: usize,
        connection_id: u32,
        base_vars: Arc<SessionVars>,
        capabilities: u32,
        user: &str,
        host: String,
        tenant: crate::tenant::TenantConnection,
    ) -> Bindings {
        Bindings {
            state: SessionState {
                db: None,
                vars: base_vars.clone(),
                is_multi_statements: capabilities & cap::MULTI_STATEMENTS != 0,
                last_insert_id: 0,
            },
            base_vars,
            identity: ctx.config.identity(user),
            read_from: crate::exec::read_from::ReadFrom::for_user(ctx.live().user(user)),
            tenant,
            ctx,
            reads,
            worker,
            connection_id,
            pinned: None,
            pins: Pins::NONE,
            pending_begin: None,
            txn: None,
            home_written: false,
            is_read_only_txn: false,
            is_bound_lost: false,
            handle: Arc::new(SessionHandle::new(user, host)),
            is_found_rows: capabilities & cap::FOUND_ROWS != 0,
            planned_version: 0,
            is_text_utf8: false,
            sql_mode: None,
            is_coalescing_off: false,
            savepoints: Default::default(),
            may_borrow_beside: false,
            is_undoubling: false,
        }
    }
}

/// The session variables a handshake (or COM_CHANGE_USER) collation id
/// implies, relative to the backend connections' own utf8mb4_general_ci,
/// as the server would set them (`hscale_wire::charset::ClientCharset`):
/// the named collation, the server's defaults for an id it does not know,
/// or an error for a character set no client may use.
pub fn vars_for_collation(ctx: &Context, collation: u8) -> Result<SessionVars, ProxyError> {
    use hscale_wire::charset::{ClientCharset, BACKEND_NAMES};
    let assign = match ctx.collations().for_client(u16::from(collation)) {
        ClientCharset::Named { charset, collation } if (charset, collation) == BACKEND_NAMES => {
            return Ok(SessionVars::default());
        }
        ClientCharset::Named { charset, collation } => {
            format!("NAMES {charset} COLLATE {collation}")
        }
        ClientCharset::ServerDefault => "@@session.character_set_client = DEFAULT, \
             @@session.collation_connection = DEFAULT, \
             @@session.character_set_results = DEFAULT"
            .to_string(),
        ClientCharset::Refused { charset } => {
            return Err(ProxyError::ClientCharset(charset.to_string()))
        }
    };
    let mut v = SessionVars::default();
    v.apply(&[SetItem {
        key: "names".into(),
        assign,
        is_standalone: false,
    }]);
    Ok(v)
}

/// Read the main backend's collation table now if a client names an id
/// the built-in table does not know before it was read at start.
pub async fn learn_collations(ctx: &Context, worker: usize, collation: u8) {
    if ctx.has_collations() || ctx.collations().get(u16::from(collation)).is_some() {
        return;
    }
    if let Ok(mut conn) = ctx.pool(worker, BackendId::MAIN).get(false).await {
        ctx.learn_main_backend(&mut conn).await;
    }
}
