//! What a client may reach through the proxy, whatever its backend
//! account's grants: hscale's own schema only through HSCALE commands
//! (`hscale_sql::guard`), and nothing of the backend accounts' credentials
//! (SHOW GRANTS answers for the proxy user, SHOW GRANTS FOR another account
//! and SHOW CREATE USER are refused).
//!
//! A client's statements run as its backend identity
//! (`[[users]] backend_user`, `Context::pool_as`), so the backends' own
//! grants apply to everything else.

use hscale_sql::guard::{self, Reach};
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::error::ProxyError;
use crate::exec::Exec;

/// The proxy's own schema: the dictionary, the operations journal, the
/// decisions of transactions across backends, the sequences.
pub const RESERVED_SCHEMA: &str = "hscale";

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// Refuse a statement that reaches hscale's own schema, as the server
    /// refuses a table or database without grants (1142, 1044), dynamic
    /// SQL whose text the proxy cannot check, or a user variable the
    /// proxy reserves (1235).
    pub(super) fn check_reach(&self, sql: &str) -> Result<(), ProxyError> {
        match guard::reserved_reach(sql, RESERVED_SCHEMA) {
            None => Ok(()),
            Some(Reach::Table { command, table }) => Err(ProxyError::TableAccessDenied {
                command,
                user: self.info.user.clone(),
                host: self.info.host.clone(),
                db: RESERVED_SCHEMA.into(),
                table,
            }),
            Some(Reach::Database) => Err(self.db_denied(RESERVED_SCHEMA)),
            Some(Reach::Dynamic) => Err(ProxyError::Unsupported {
                what: "PREPARE ... FROM or EXECUTE IMMEDIATE with anything but string literals through hscale".into(),
            }),
            // `@hscale_dictionary_version` is what global tables' fence
            // triggers trust (`admin/setup_global_table.rs`).
            Some(Reach::Variable) => Err(ProxyError::Unsupported {
                what: format!("naming a user variable @{RESERVED_SCHEMA}_... (reserved for the proxy's fences)"),
            }),
        }
    }

    /// Refuse `USE` (COM_INIT_DB, the handshake's or COM_CHANGE_USER's
    /// database) of hscale's own schema.
    pub(super) fn check_db(&self, db: &str) -> Result<(), ProxyError> {
        if guard::is_reserved_db(db, RESERVED_SCHEMA) {
            return Err(self.db_denied(RESERVED_SCHEMA));
        }
        Ok(())
    }

    /// SHOW GRANTS and SHOW CREATE USER, answered or refused
    /// (`exec/grants.rs`); `Ok(false)`: not such a statement.
    pub(super) async fn account_statement(&mut self, sql: &str) -> Result<bool, ProxyError> {
        let deprecated = self.is_eof_deprecated();
        let mut exec = Exec::new(&mut self.client, &mut self.b, &mut self.scratch, deprecated);
        exec.account_statement(sql, &self.info.user, &self.info.host)
            .await
    }

    fn db_denied(&self, db: &str) -> ProxyError {
        ProxyError::DbAccessDenied {
            user: self.info.user.clone(),
            host: self.info.host.clone(),
            db: db.into(),
        }
    }
}
