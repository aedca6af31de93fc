//! Protocol constants: capability flags, command bytes, status flags.

/// Capability flags (`CLIENT_*`).
pub mod cap {
    pub const LONG_PASSWORD: u32 = 1;
    pub const FOUND_ROWS: u32 = 1 << 1;
    pub const LONG_FLAG: u32 = 1 << 2;
    pub const CONNECT_WITH_DB: u32 = 1 << 3;
    pub const NO_SCHEMA: u32 = 1 << 4;
    pub const COMPRESS: u32 = 1 << 5;
    pub const ODBC: u32 = 1 << 6;
    pub const LOCAL_FILES: u32 = 1 << 7;
    pub const IGNORE_SPACE: u32 = 1 << 8;
    pub const PROTOCOL_41: u32 = 1 << 9;
    pub const INTERACTIVE: u32 = 1 << 10;
    pub const SSL: u32 = 1 << 11;
    pub const IGNORE_SIGPIPE: u32 = 1 << 12;
    pub const TRANSACTIONS: u32 = 1 << 13;
    pub const RESERVED: u32 = 1 << 14;
    pub const SECURE_CONNECTION: u32 = 1 << 15;
    pub const MULTI_STATEMENTS: u32 = 1 << 16;
    pub const MULTI_RESULTS: u32 = 1 << 17;
    pub const PS_MULTI_RESULTS: u32 = 1 << 18;
    pub const PLUGIN_AUTH: u32 = 1 << 19;
    pub const CONNECT_ATTRS: u32 = 1 << 20;
    pub const PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
    pub const CAN_HANDLE_EXPIRED_PASSWORDS: u32 = 1 << 22;
    pub const SESSION_TRACK: u32 = 1 << 23;
    pub const DEPRECATE_EOF: u32 = 1 << 24;
}

/// Command bytes (`COM_*`), the first byte of a client command packet.
pub mod com {
    pub const SLEEP: u8 = 0x00;
    pub const QUIT: u8 = 0x01;
    pub const INIT_DB: u8 = 0x02;
    pub const QUERY: u8 = 0x03;
    pub const FIELD_LIST: u8 = 0x04;
    pub const STATISTICS: u8 = 0x09;
    pub const PROCESS_KILL: u8 = 0x0c;
    pub const PING: u8 = 0x0e;
    pub const CHANGE_USER: u8 = 0x11;
    pub const STMT_PREPARE: u8 = 0x16;
    pub const STMT_EXECUTE: u8 = 0x17;
    pub const STMT_SEND_LONG_DATA: u8 = 0x18;
    pub const STMT_CLOSE: u8 = 0x19;
    pub const STMT_RESET: u8 = 0x1a;
    pub const SET_OPTION: u8 = 0x1b;
    pub const STMT_FETCH: u8 = 0x1c;
    pub const RESET_CONNECTION: u8 = 0x1f;
}

/// Server status flags (`SERVER_STATUS_*`, `SERVER_MORE_RESULTS_EXISTS`, ...).
pub mod status {
    pub const IN_TRANS: u16 = 1;
    pub const AUTOCOMMIT: u16 = 2;
    pub const MORE_RESULTS_EXISTS: u16 = 8;
    pub const NO_GOOD_INDEX_USED: u16 = 0x10;
    pub const NO_INDEX_USED: u16 = 0x20;
    /// What a statement's parts say about the indexes they used: a result
    /// merged from several parts carries the union.
    pub const INDEX_FLAGS: u16 = NO_GOOD_INDEX_USED | NO_INDEX_USED;
    pub const CURSOR_EXISTS: u16 = 0x40;
    pub const LAST_ROW_SENT: u16 = 0x80;
    pub const IN_TRANS_READONLY: u16 = 0x2000;
}

/// Well-known error codes used by the proxy itself.
pub mod code {
    pub const ER_CON_COUNT_ERROR: u16 = 1040;
    pub const ER_HANDSHAKE_ERROR: u16 = 1043;
    pub const ER_NO_SUCH_THREAD: u16 = 1094;
    /// MariaDB: the connection was killed while a statement ran.
    pub const ER_CONNECTION_KILLED: u16 = 1927;
    pub const ER_KILL_DENIED_ERROR: u16 = 1095;
    pub const ER_ACCESS_DENIED_ERROR: u16 = 1045;
    pub const ER_UNKNOWN_COM_ERROR: u16 = 1047;
    pub const ER_NET_PACKET_TOO_LARGE: u16 = 1153;
    pub const ER_NET_READ_ERROR: u16 = 1158;
    pub const ER_NET_PACKETS_OUT_OF_ORDER: u16 = 1156;
    pub const ER_UNKNOWN_STMT_HANDLER: u16 = 1243;
    pub const ER_SPECIFIC_ACCESS_DENIED: u16 = 1227;
    pub const ER_DBACCESS_DENIED_ERROR: u16 = 1044;
    pub const ER_TABLEACCESS_DENIED_ERROR: u16 = 1142;
    pub const ER_NOT_SUPPORTED_YET: u16 = 1235;
    /// LOAD DATA LOCAL from a client without CLIENT_LOCAL_FILES (MariaDB).
    pub const ER_LOAD_INFILE_CAPABILITY_DISABLED: u16 = 4166;
    pub const ER_SECURE_TRANSPORT_REQUIRED: u16 = 3159;
    pub const ER_UNIQUE_KEY_NEED_ALL_FIELDS_IN_PF: u16 = 1503;
    pub const ER_OUT_OF_SORTMEMORY: u16 = 1038;
    pub const ER_CONNECT_TO_FOREIGN_DATA_SOURCE: u16 = 1429;
    pub const ER_UNKNOWN_ERROR: u16 = 1105;
    pub const ER_MALFORMED_PACKET: u16 = 1835;
    pub const ER_WRONG_ARGUMENTS: u16 = 1210;
    pub const ER_WRONG_VALUE_FOR_VAR: u16 = 1231;
    pub const ER_SERVER_SHUTDOWN: u16 = 1053;
    pub const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
    pub const ER_LOCK_DEADLOCK: u16 = 1213;
    pub const ER_QUERY_INTERRUPTED: u16 = 1317;
    /// A user's `max_user_connections` (hscale: `[[users]] max_connections`).
    pub const ER_TOO_MANY_USER_CONNECTIONS: u16 = 1203;
    /// A user's resource limit (hscale: `max_statements_per_s`).
    pub const ER_USER_LIMIT_REACHED: u16 = 1226;
    /// MariaDB's max_statement_time exceeded.
    pub const ER_STATEMENT_TIMEOUT: u16 = 1969;
    pub const ER_TABLE_DEF_CHANGED: u16 = 1412;
    /// XA_RBROLLBACK (SQLSTATE XA100): the transaction branch was rolled back.
    pub const ER_XA_RBROLLBACK: u16 = 1402;
    pub const ER_NO_SUCH_TABLE: u16 = 1146;
    /// "BIGINT UNSIGNED value is out of range in '...'" (SQLSTATE 22003).
    pub const ER_DATA_OUT_OF_RANGE: u16 = 1690;
}
