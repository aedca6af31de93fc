//! State the `Context` holds for subsystems that take the `Context`
//! themselves, kept here so that `runtime.rs` imports none of them: each
//! type with its plain bookkeeping, while what it does with backends
//! stays in its subsystem.
//!
//! | type | its subsystem |
//! |---|---|
//! | `Member` (this proxy in `hscale.proxies`) | `fleet.rs` (heartbeat, rows, leave) |
//! | `XaChecks` (can a backend hold XA branches) | `exec/txn/checks.rs` (asks each backend once) |
//! | `AutoIncrementColumns` (tables' AUTO_INCREMENT columns, read moments ago) | `exec/sequence.rs` (reads and puts them; `session/query.rs` notes DDL) |

use std::sync::OnceLock;
use std::time::Instant;

use hscale_route::BackendId;

/// This proxy as the fleet sees it.
pub struct Member {
    /// Unique per process: 12 random hex digits.
    pub id: String,
    /// When the process started (the row's `started_at` is derived from it
    /// on the main backend's clock).
    pub(crate) started: Instant,
    /// `host:port` clients reach this proxy at; set once the listening
    /// socket is bound ([`Member::set_address`]).
    address: OnceLock<String>,
    /// Held by a heartbeat while it writes and by `fleet::leave`; true once the
    /// proxy left, so a heartbeat under way cannot write the row back
    /// after the graceful stop deleted it.
    pub(crate) has_left: tokio::sync::Mutex<bool>,
}

impl Member {
    pub fn new() -> Member {
        let mut bytes = [0u8; 6];
        if getrandom::fill(&mut bytes).is_err() {
            // No randomness: the pid and the start time still differ.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            bytes[..4].copy_from_slice(&std::process::id().to_be_bytes());
            bytes[4..].copy_from_slice(&(t as u16).to_be_bytes());
        }
        Member {
            id: bytes.iter().map(|b| format!("{b:02x}")).collect(),
            started: Instant::now(),
            address: OnceLock::new(),
            has_left: tokio::sync::Mutex::new(false),
        }
    }

    /// The bound listening address; an unspecified IP (`0.0.0.0`, `::`)
    /// is replaced by the host's name, which other hosts can reach.
    pub fn set_address(&self, addr: std::net::SocketAddr) {
        let host = if addr.ip().is_unspecified() {
            host_name()
        } else {
            addr.ip().to_string()
        };
        let _ = self.address.set(match addr {
            std::net::SocketAddr::V6(_) if !addr.ip().is_unspecified() => {
                format!("[{host}]:{}", addr.port())
            }
            _ => format!("{host}:{}", addr.port()),
        });
    }

    pub fn address(&self) -> &str {
        self.address.get().map(String::as_str).unwrap_or("")
    }
}

impl Default for Member {
    fn default() -> Self {
        Member::new()
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// One answer per backend: `None` once it passed, `Some(reason)` once it
/// failed; unset while it could not be asked.
pub struct XaChecks {
    by_backend: Vec<tokio::sync::OnceCell<Option<String>>>,
}

impl XaChecks {
    pub fn new(backends: usize) -> XaChecks {
        XaChecks {
            by_backend: (0..backends)
                .map(|_| tokio::sync::OnceCell::new())
                .collect(),
        }
    }

    /// `backend`'s answer, set once it was asked (`exec/txn/checks.rs`).
    pub fn cell(&self, backend: BackendId) -> Option<&tokio::sync::OnceCell<Option<String>>> {
        self.by_backend.get(backend.index())
    }
}

/// A table's AUTO_INCREMENT column (`None`: it has none) and when it was read.
type Described = (Option<Box<str>>, std::time::Instant);

/// Each table's AUTO_INCREMENT column as a backend described it a moment
/// ago, so that an INSERT giving that column its values needs no read-back
/// of LAST_INSERT_ID() (`Bindings::is_generated`). An entry is trusted for
/// [`FRESH`] and forgotten when DDL passes through this proxy; a change
/// made elsewhere within that time is still caught unless the id the
/// server generated for another column equals the value the statement
/// gave the old one (the OK's id must be the last row's value).
#[derive(Default)]
pub struct AutoIncrementColumns {
    /// `backend \0 database \0 table` -> (column, when read).
    known: std::sync::Mutex<std::collections::HashMap<String, Described>>,
}

/// How long a described AUTO_INCREMENT column is trusted.
const FRESH: std::time::Duration = std::time::Duration::from_secs(2);

impl AutoIncrementColumns {
    fn key(backend: &str, db: &str, table: &str) -> String {
        format!("{backend}\0{db}\0{table}")
    }

    /// The table's AUTO_INCREMENT column (`Some(None)`: it has none), when
    /// described less than [`FRESH`] ago.
    pub fn get(&self, backend: &str, db: &str, table: &str) -> Option<Option<Box<str>>> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known
            .get(&Self::key(backend, db, table))
            .filter(|(_, at)| at.elapsed() < FRESH)
            .map(|(c, _)| c.clone())
    }

    pub fn put(&self, backend: &str, db: &str, table: &str, column: Option<Box<str>>) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= 10_000 {
            known.retain(|_, (_, at)| at.elapsed() < FRESH);
        }
        known.insert(
            Self::key(backend, db, table),
            (column, std::time::Instant::now()),
        );
    }

    /// A statement passed through this proxy: DDL forgets every table.
    pub fn note(&self, facts: &hscale_sql::Facts, sql: &str) {
        if facts.kind != hscale_sql::Kind::Other {
            return;
        }
        let is_ddl = facts.tokens.first().is_some_and(|t| {
            ["ALTER", "CREATE", "DROP", "RENAME"]
                .iter()
                .any(|w| t.is_word(sql, w))
        });
        if is_ddl {
            self.known.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
    }
}
