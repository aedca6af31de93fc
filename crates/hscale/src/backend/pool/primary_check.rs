//! Whether a server the pool of a backend's primary connects to is still
//! that backend's primary by the newest dictionary: the guard against a
//! returning old primary (issue 34).
//!
//! A proxy that missed a failover (stopped with SIGSTOP through it, cut
//! off, or between two reloads) still names the old primary. When that
//! server comes back (restarted, it is writable: `read_only` is not kept
//! across a restart) before any proxy's replica monitor fenced it, the
//! read-only check of `Pool::connect` lets it through, and for the main
//! backend the proxy would even read its stale dictionary there. So a
//! pool of a backend with replicas confirms each run of its server (the
//! server's start time, read with `read_only` in the connect's one query,
//! under the watch's address generation) before it uses it: at the first
//! connection, after the address moved and after the server restarted;
//! never per statement, and not again for the other connections to the
//! same run. Confirming asks where the newest dictionary puts the
//! primary: for the main backend every server of its set (the record with
//! the highest epoch, `backend::addresses::pick_main`, as
//! `partition::refresh::follow_main` does), for another backend the main
//! backend's `hscale.backend_addresses`. A server it no longer names is
//! made read-only there and then (which fences it for every other proxy
//! too) and refused, and the backend's watch follows the named primary.
//! When the newest dictionary cannot be read (no server of the main
//! backend's set answers in time), the server is used: a double failure
//! (the main backend lost while another backend's old primary returns to
//! a proxy that missed its failover) is the documented limit.

use std::time::Duration;

use super::Pool;
use crate::backend::BackendConn;

/// `read_only` and the server's start time (Unix seconds: the statement's
/// time less `Uptime`, both whole seconds of the same reading, so every
/// connection to one run reads the same value).
pub(super) const READ_ONLY_AND_START: &str = "SELECT @@GLOBAL.read_only, UNIX_TIMESTAMP() - \
     (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME')";

/// What confirming found.
pub(super) enum Confirmed {
    /// The newest dictionary names this server (or cannot be read).
    Primary,
    /// It names another: the reason to refuse this one.
    Retired(String),
}

impl Pool {
    /// Confirm that `conn`'s server (started at `start`) is the backend's
    /// primary, once per run (see the module's docs).
    pub(super) async fn confirm_primary(
        &self,
        conn: &mut BackendConn,
        start: Option<u64>,
    ) -> Confirmed {
        let generation = conn.address_generation;
        if start.is_some_and(|s| self.watch.is_confirmed(generation, s)) {
            return Confirmed::Primary;
        }
        let address = self.address();
        let wait = self.connect_timeout * 2 + Duration::from_millis(500);
        let Ok(Some(named)) = tokio::time::timeout(wait, self.newest_primary()).await else {
            tracing::warn!(backend = %self.cfg.name, address, "cannot read the newest dictionary to confirm the primary: using it");
            return Confirmed::Primary;
        };
        if named == address && self.watch.address_generation() == generation {
            if let Some(s) = start {
                self.watch.confirm(generation, s);
            }
            return Confirmed::Primary;
        }
        if named != address {
            // A failover or switchover this proxy has not seen: the server
            // is an old primary back. Fenced for everyone at once (the
            // replica monitors of the proxies that saw the switch do the
            // same within their check interval).
            let _ = conn.query_rows("SET GLOBAL read_only = 1").await;
            tracing::warn!(backend = %self.cfg.name, old = address, primary = named, "an old primary is back: made read-only, following the newest dictionary's primary");
            self.watch
                .set_address((named != self.cfg.address).then(|| named.clone()));
        }
        Confirmed::Retired(format!(
            "the server at {address} is no longer the backend's primary: the newest dictionary names {named} (a switchover or failover this proxy had not seen yet moved it)"
        ))
    }

    /// Where the newest dictionary puts this backend's primary; `None`
    /// when it cannot be read.
    async fn newest_primary(&self) -> Option<String> {
        let Some(main) = self.dictionary.get() else {
            // The main backend: its servers' records.
            let servers: Vec<&str> = std::iter::once(self.cfg.address.as_str())
                .chain(self.cfg.replicas.iter().map(String::as_str))
                .collect();
            let records = crate::backend::addresses::read_main_records(self, &servers).await;
            return crate::backend::addresses::pick_main(&records).map(|(a, _)| a.to_string());
        };
        let mut c = main.connect_to(&main.address()).await.ok()?;
        let sql = format!(
            "SELECT address FROM `hscale`.`backend_addresses` WHERE backend = {}",
            hscale_sql::quote::quote_str(&self.cfg.name)
        );
        match c.query_rows(&sql).await.ok()? {
            Ok(r) => Some(
                r.strings()
                    .into_iter()
                    .next()
                    .and_then(|row| row.into_iter().next().flatten())
                    .unwrap_or_else(|| self.cfg.address.clone()),
            ),
            // No dictionary yet: nothing moved the backend.
            Err(e) if e.code == hscale_wire::consts::code::ER_NO_SUCH_TABLE => {
                Some(self.cfg.address.clone())
            }
            Err(_) => None,
        }
    }
}
