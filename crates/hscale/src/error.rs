//! Typed errors of the proxy runtime, and the one place they become MySQL
//! error packets ([`ProxyError::to_mysql`]).

use hscale_wire::consts::code;
use hscale_wire::response::ErrPacket;
use hscale_wire::WireError;

/// Something that went wrong while serving a client.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The client broke the protocol; the connection is closed after the error.
    #[error("client protocol error: {0}")]
    ClientProtocol(WireError),
    /// The client went away.
    #[error("client disconnected")]
    ClientGone,
    #[error("Access denied for user '{user}'")]
    AccessDenied { user: String },
    #[error("Too many connections")]
    TooManyConnections,
    /// The user's `max_connections` clients are logged in already.
    #[error(
        "User '{user}' has exceeded the 'max_user_connections' resource (current value: {max})"
    )]
    UserConnections { user: String, max: u64 },
    /// A statement beyond the user's `max_statements_per_s` that would
    /// wait longer than `throttle_wait_ms`.
    #[error("User '{user}' has exceeded the '{limit}' resource (current value: {value})")]
    UserLimit {
        user: String,
        limit: &'static str,
        value: u64,
    },
    /// `[tls] require` and a TCP client that did not ask for TLS.
    #[error(
        "Connections using insecure transport are prohibited while --require_secure_transport=ON."
    )]
    SecureTransportRequired,
    /// An SSLRequest when `[tls]` has no certificate, or a failed TLS
    /// handshake (nothing can be answered over the broken stream).
    #[error("hscale: TLS: {0}")]
    Tls(String),
    #[error("hscale: can't connect to backend '{backend}' ({address}): {reason}")]
    BackendConnect {
        backend: String,
        address: String,
        reason: String,
    },
    #[error(
        "hscale: timed out after {ms} ms waiting for a free connection to backend '{backend}'"
    )]
    PoolTimeout { backend: String, ms: u64 },
    #[error("hscale: lost connection to backend '{backend}' during the statement: {reason}")]
    BackendLost { backend: String, reason: String },
    /// A server error from a backend during work the proxy does itself
    /// (admin commands, row copies, dictionary reads): the code and SQLSTATE
    /// reach the client unchanged, the message says what hscale was doing.
    #[error("{during} on backend '{backend}': {}", err.message)]
    Backend {
        backend: String,
        during: String,
        err: ErrPacket,
    },
    /// A statement ran into a table that does not exist (1146) before
    /// anything reached the client: it may have been routed by an older
    /// dictionary. The session reloads the dictionary and runs it again
    /// (`exec/fence.rs`, the only place one is made: `fence::stale_route`);
    /// the server's error is answered if it stays.
    #[error("{}", err.message)]
    StaleRoute { err: ErrPacket },
    /// The client's own statement failed on a backend before it changed
    /// anything (a schema change's first partition), as it fails on one
    /// server: the server's error as it is.
    #[error("{}", err.message)]
    Statement { err: ErrPacket },
    /// A partition's server could not parse the statement it was sent
    /// (1064, 1149), before anything reached the client: its message
    /// quotes the statement as rewritten for the partition, so the
    /// session asks the server about the client's own text instead
    /// (`Session::server_parse_error`) and answers with that.
    #[error("{}", err.message)]
    Syntax { err: ErrPacket },
    #[error("hscale: backend '{backend}' sent a malformed response: {reason}")]
    BackendProtocol { backend: String, reason: String },
    #[error("hscale: {what} is not supported")]
    Unsupported { what: String },
    /// Another change of the table ran longer than `[proxy] change_wait_ms`.
    #[error("Lock wait timeout exceeded; try restarting transaction (hscale: {running} is changing {table}; waited {ms} ms, [proxy] change_wait_ms; see HSCALE SHOW OPERATIONS)")]
    ChangeBusy {
        running: String,
        table: String,
        ms: u64,
    },
    /// LOAD DATA LOCAL INFILE from a client that did not offer to send
    /// files (no CLIENT_LOCAL_FILES): the server's own error and message.
    #[error("The used command is not allowed because the MariaDB server or client has disabled the local infile capability")]
    LocalInfileDisabled,
    /// A statement hscale will not run, with the whole reason.
    #[error("hscale: {0}")]
    Refused(String),
    /// A merge across partitions would hold more rows than allowed.
    #[error("hscale: this statement needs more than {limit} rows held at the proxy to merge its partitions ([proxy] merge_max_rows)")]
    MergeLimit { limit: usize },
    /// A statement would copy more rows between backends than allowed.
    #[error("hscale: this statement needs more than {limit} rows copied between backends to run ([proxy] ship_max_rows)")]
    ShipLimit { limit: usize },
    /// COM_STMT_SEND_LONG_DATA went past max_allowed_packet for one
    /// statement (the server's own error and message).
    #[error("Parameter of prepared statement which is set through mysql_send_long_data() is longer than 'max_allowed_packet' bytes")]
    LongDataTooLarge,
    #[error("Unknown prepared statement handler ({id}) given to {command}")]
    UnknownStatement { id: u32, command: &'static str },
    #[error("hscale: {0}")]
    Wrong(String),
    /// The dictionary's compare-and-set found another version: another
    /// change committed while this one was prepared (`store::commit_change`);
    /// nothing was written, and the change can be applied again.
    #[error("hscale: the partition dictionary was changed by another proxy while this command ran; nothing was changed, run it again")]
    DictionaryMoved,
    /// A handshake or COM_CHANGE_USER naming a character set no client may
    /// use (ucs2, utf16, utf16le, utf32), refused as the server refuses it.
    #[error("Variable 'character_set_client' can't be set to the value of '{0}'")]
    ClientCharset(String),
    /// A value hscale's own session variable does not take.
    #[error("Variable '{var}' can't be set to the value of '{value}'")]
    WrongValue { var: &'static str, value: String },
    #[error("Unknown thread id: {0}")]
    NoSuchThread(u64),
    #[error("You are not owner of thread {0}")]
    KillDenied(u64),
    #[error(
        "Access denied for user '{user}': HSCALE commands need admin = true in hscale's [[users]]"
    )]
    AdminDenied { user: String },
    /// A PRIMARY or UNIQUE key no backend can enforce: it does not
    /// contain the partition column (MySQL's own partitioning refuses such
    /// keys with the same error).
    #[error("A {key} must include all columns in the table's partitioning function: hscale partitions {table} by {column}, so {key} ({columns}) could only be unique within each partition; add {column} to it or drop it")]
    UniqueKeyNeedsPartitionColumn {
        table: String,
        column: String,
        key: String,
        columns: String,
    },
    /// A statement that names hscale's own schema (only HSCALE commands
    /// reach it), refused as the server refuses a table without grants.
    #[error("{command} command denied to user '{user}'@'{host}' for table `{db}`.`{table}`")]
    TableAccessDenied {
        command: String,
        user: String,
        host: String,
        db: String,
        table: String,
    },
    /// `USE`, COM_INIT_DB or a statement naming hscale's own schema as a
    /// database; also SHOW GRANTS for another account.
    #[error("Access denied for user '{user}'@'{host}' to database '{db}'")]
    DbAccessDenied {
        user: String,
        host: String,
        db: String,
    },
    #[error("hscale: operation {0} was cancelled (HSCALE CANCEL_OPERATION); the table is as it was before it")]
    Cancelled(u64),
    /// KILL QUERY of a statement waiting for another session's execution
    /// of the same read (`exec/coalesce.rs`).
    #[error("Query execution was interrupted")]
    Interrupted,
    /// Planning took longer than `[proxy] plan_timeout_ms`.
    #[error("Query execution was interrupted (hscale: planning this statement took more than plan_timeout_ms = {ms})")]
    PlanTimeout { ms: u64 },
    /// Integer arithmetic the proxy evaluates (HAVING over merged groups)
    /// went beyond its type, as the server's would: `kind` is `BIGINT` or
    /// `BIGINT UNSIGNED`, `expr` the expression as the server prints it.
    #[error("{kind} value is out of range in '{expr}'")]
    OutOfRange { kind: &'static str, expr: String },
    /// A statement on a view hscale keeps that one server refuses too.
    #[error(transparent)]
    View(#[from] hscale_route::view::ViewError),
}

impl ProxyError {
    /// Error code, SQLSTATE and message sent to the client.
    pub fn to_mysql(&self) -> (u16, [u8; 5], String) {
        let (code, state, msg) = self.to_mysql_static();
        (code, *state, msg)
    }

    /// Whether running the same statement again may succeed: the backend
    /// went away or timed out, or its error is one a server reports for a
    /// transient conflict (deadlock, lock wait timeout, changed table
    /// definition, a server shutting down).
    pub fn is_retryable(&self) -> bool {
        match self {
            ProxyError::Backend { err, .. } => matches!(
                err.code,
                code::ER_LOCK_DEADLOCK
                    | code::ER_LOCK_WAIT_TIMEOUT
                    | code::ER_TABLE_DEF_CHANGED
                    | code::ER_SERVER_SHUTDOWN
                    | code::ER_QUERY_INTERRUPTED
            ),
            ProxyError::BackendConnect { .. }
            | ProxyError::PoolTimeout { .. }
            | ProxyError::BackendLost { .. } => true,
            _ => false,
        }
    }

    fn to_mysql_static(&self) -> (u16, &[u8; 5], String) {
        let msg = self.to_string();
        match self {
            ProxyError::Backend { err, .. }
            | ProxyError::StaleRoute { err }
            | ProxyError::Statement { err }
            | ProxyError::Syntax { err } => (err.code, &err.sql_state, msg),
            ProxyError::ClientProtocol(WireError::TooLarge { .. }) => (
                code::ER_NET_PACKET_TOO_LARGE,
                b"08S01",
                "Got a packet bigger than 'max_allowed_packet' bytes".into(),
            ),
            ProxyError::ClientProtocol(WireError::Sequence { .. }) => {
                (code::ER_NET_PACKETS_OUT_OF_ORDER, b"08S01", msg)
            }
            ProxyError::ClientProtocol(_) => (code::ER_MALFORMED_PACKET, b"HY000", msg),
            ProxyError::ClientGone => (code::ER_NET_READ_ERROR, b"08S01", msg),
            ProxyError::AccessDenied { .. } => (code::ER_ACCESS_DENIED_ERROR, b"28000", msg),
            ProxyError::TooManyConnections => (code::ER_CON_COUNT_ERROR, b"08004", msg),
            ProxyError::UserConnections { .. } => {
                (code::ER_TOO_MANY_USER_CONNECTIONS, b"42000", msg)
            }
            ProxyError::UserLimit { .. } => (code::ER_USER_LIMIT_REACHED, b"42000", msg),
            ProxyError::SecureTransportRequired => {
                (code::ER_SECURE_TRANSPORT_REQUIRED, b"HY000", msg)
            }
            ProxyError::Tls(_) => (code::ER_NOT_SUPPORTED_YET, b"08S01", msg),
            ProxyError::BackendConnect { .. } | ProxyError::PoolTimeout { .. } => {
                (code::ER_CONNECT_TO_FOREIGN_DATA_SOURCE, b"HY000", msg)
            }
            ProxyError::BackendLost { .. } => (code::ER_NET_READ_ERROR, b"08S01", msg),
            ProxyError::BackendProtocol { .. } => (code::ER_UNKNOWN_ERROR, b"HY000", msg),
            ProxyError::Unsupported { .. } | ProxyError::Refused(_) => {
                (code::ER_NOT_SUPPORTED_YET, b"42000", msg)
            }
            ProxyError::UnknownStatement { .. } => (code::ER_UNKNOWN_STMT_HANDLER, b"HY000", msg),
            ProxyError::LongDataTooLarge => (code::ER_UNKNOWN_ERROR, b"HY000", msg),
            ProxyError::LocalInfileDisabled => {
                (code::ER_LOAD_INFILE_CAPABILITY_DISABLED, b"HY000", msg)
            }
            ProxyError::MergeLimit { .. } | ProxyError::ShipLimit { .. } => {
                (code::ER_OUT_OF_SORTMEMORY, b"HY001", msg)
            }
            ProxyError::Wrong(_) | ProxyError::DictionaryMoved => {
                (code::ER_WRONG_ARGUMENTS, b"HY000", msg)
            }
            ProxyError::ChangeBusy { .. } => (code::ER_LOCK_WAIT_TIMEOUT, b"HY000", msg),
            ProxyError::ClientCharset(_) => (code::ER_WRONG_VALUE_FOR_VAR, b"42000", msg),
            ProxyError::WrongValue { .. } => (code::ER_WRONG_VALUE_FOR_VAR, b"42000", msg),
            ProxyError::NoSuchThread(_) => (code::ER_NO_SUCH_THREAD, b"HY000", msg),
            ProxyError::KillDenied(_) => (code::ER_KILL_DENIED_ERROR, b"HY000", msg),
            ProxyError::AdminDenied { .. } => (code::ER_SPECIFIC_ACCESS_DENIED, b"42000", msg),
            ProxyError::Cancelled(_) => (code::ER_QUERY_INTERRUPTED, b"70100", msg),
            ProxyError::Interrupted => (code::ER_QUERY_INTERRUPTED, b"70100", msg),
            ProxyError::PlanTimeout { .. } => (code::ER_STATEMENT_TIMEOUT, b"70100", msg),
            ProxyError::TableAccessDenied { .. } => {
                (code::ER_TABLEACCESS_DENIED_ERROR, b"42000", msg)
            }
            ProxyError::DbAccessDenied { .. } => (code::ER_DBACCESS_DENIED_ERROR, b"42000", msg),
            ProxyError::View(e) => {
                let (code, state) = e.code();
                (code, state, msg)
            }
            ProxyError::OutOfRange { .. } => (code::ER_DATA_OUT_OF_RANGE, b"22003", msg),
            ProxyError::UniqueKeyNeedsPartitionColumn { .. } => {
                (code::ER_UNIQUE_KEY_NEED_ALL_FIELDS_IN_PF, b"HY000", msg)
            }
        }
    }
}
