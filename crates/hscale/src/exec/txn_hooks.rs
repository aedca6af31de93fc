//! Test hooks of the commit protocol (`txn.rs`): pauses at its kill points,
//! set by environment variables, so a fault test can SIGKILL the proxy
//! exactly there (`tests/txn_faults.rs`). Unset, they cost one lookup.

/// After every writing branch is prepared, before the decision is written.
pub const PAUSE_AFTER_PREPARE_ENV: &str = "HSCALE_TEST_PAUSE_AFTER_PREPARE_MS";

/// After the first prepared branch commits, before the next one does.
pub const PAUSE_BETWEEN_COMMITS_ENV: &str = "HSCALE_TEST_PAUSE_BETWEEN_COMMITS_MS";

/// Sleep for the milliseconds the environment variable `env` names, if set.
pub async fn pause(env: &str) {
    if let Some(ms) = std::env::var(env).ok().and_then(|v| v.parse::<u64>().ok()) {
        tracing::warn!(hook = env, ms, "test hook: pausing the commit protocol");
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}
