//! Whether a backend can take part in a transaction across backends
//! (issue 13 item 4). Checked once per backend and process, at start and
//! again at the first branch that needs it if the backend was unreachable
//! then; [`Bindings::join`](super::Bindings::join) refuses a branch on a
//! backend that failed, with the reason.
//!
//! ```text
//!  VERSION()            MariaDB 10.5+ / MySQL 5.7.7+: a prepared XA branch survives
//!                       its connection and a restart (older servers roll it back)
//!  @@wsrep_on           Galera replicates no prepared XA state: refused when ON
//!  PROCESS (or SUPER)   recovery rolls a branch back only when its home connection
//!                       is gone from information_schema.PROCESSLIST; without it
//!                       other users' connections are invisible and would look gone
//! ```

use hscale_route::BackendId;
use std::sync::Arc;

use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::runtime::Context;

/// Check `backend` now if it has not been checked; `Ok(Some(reason))`
/// when it cannot take part in a transaction across backends.
pub async fn refusal(
    ctx: &Arc<Context>,
    worker: usize,
    backend: BackendId,
) -> Result<Option<String>, ProxyError> {
    let Some(cell) = ctx.xa_checks.cell(backend) else {
        return Ok(None);
    };
    let answer = cell
        .get_or_try_init(|| async {
            let name = ctx.config.backends[backend.index()].name.clone();
            let mut c = ctx.pool(worker, backend).get(false).await?;
            let reason = ask(&mut c).await?;
            if let Some(r) = &reason {
                tracing::warn!(
                    backend = name,
                    reason = r,
                    "transactions across backends are refused on this backend"
                );
            }
            Ok::<_, ProxyError>(reason.map(|r| format!("backend '{name}': {r}")))
        })
        .await?;
    Ok(answer.clone())
}

/// Check every backend (at start; failures to reach one are retried later).
pub async fn check_all(ctx: &Arc<Context>, worker: usize) {
    for backend in ctx.backend_ids() {
        if let Err(e) = refusal(ctx, worker, backend).await {
            tracing::debug!(backend = %backend, error = %e, "XA checks postponed: backend unreachable");
        }
    }
}

async fn ask(c: &mut BackendConn) -> Result<Option<String>, ProxyError> {
    let version = first_value(c, "SELECT VERSION()")
        .await?
        .unwrap_or_default();
    if let Some(r) = version_refusal(&version) {
        return Ok(Some(r));
    }
    // MySQL has no @@wsrep_on (error 1193): no Galera.
    if let Ok(Some(on)) = first_value(c, "SELECT @@global.wsrep_on").await {
        if on == "1" || on.eq_ignore_ascii_case("ON") {
            return Ok(Some(
                "Galera (wsrep_on) does not keep prepared XA transactions; hscale cannot commit atomically there".into(),
            ));
        }
    }
    let grants = first_value(
        c,
        "SELECT GROUP_CONCAT(PRIVILEGE_TYPE) FROM information_schema.USER_PRIVILEGES \
         WHERE GRANTEE = CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', \
         SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')",
    )
    .await?
    .unwrap_or_default();
    let has = |p: &str| grants.split(',').any(|g| g.eq_ignore_ascii_case(p));
    if !has("PROCESS") && !has("SUPER") {
        return Ok(Some(
            "hscale's backend user lacks the PROCESS privilege, which recovery needs to see whether a transaction's home connection is still alive".into(),
        ));
    }
    Ok(None)
}

/// Servers that roll back a prepared XA branch when its connection ends
/// or the server restarts.
pub fn version_refusal(version: &str) -> Option<String> {
    // MariaDB before 11 may prefix the version with "5.5.5-".
    let version = version.strip_prefix("5.5.5-").unwrap_or(version);
    let numbers: Vec<u32> = version
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    let v = (
        numbers.first().copied().unwrap_or(0),
        numbers.get(1).copied().unwrap_or(0),
        numbers.get(2).copied().unwrap_or(0),
    );
    let is_mariadb = version.to_ascii_lowercase().contains("mariadb");
    let (ok, needed) = if is_mariadb {
        (v >= (10, 5, 0), "MariaDB 10.5")
    } else {
        (v >= (5, 7, 7), "MySQL 5.7.7")
    };
    (!ok).then(|| {
        format!("{version} does not keep prepared XA transactions across disconnects and restarts ({needed} or later does)")
    })
}

/// The first column of the first row, as text (`None` for no row or NULL).
async fn first_value(c: &mut BackendConn, sql: &str) -> Result<Option<String>, ProxyError> {
    match c.query_rows(sql).await? {
        Ok(rows) => Ok(rows
            .strings()
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .flatten()),
        Err(err) => Err(ProxyError::Backend {
            backend: "?".into(),
            during: format!("hscale: checking XA support ({sql})"),
            err,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::version_refusal;

    #[test]
    fn versions_with_durable_xa() {
        assert!(version_refusal("10.11.19-MariaDB-0+deb12u1").is_none());
        assert!(version_refusal("10.5.0-MariaDB").is_none());
        assert!(version_refusal("11.4.2-MariaDB-log").is_none());
        assert!(version_refusal("10.4.30-MariaDB").is_some());
        assert!(version_refusal("5.5.5-10.3.39-MariaDB").is_some());
        assert!(version_refusal("8.0.36").is_none());
        assert!(version_refusal("5.7.7-log").is_none());
        assert!(version_refusal("5.6.51").is_some());
    }
}
