//! Test hooks of the commit protocol (`commit.rs`): pauses at its kill
//! points, set by environment variables, so a fault test can SIGKILL the
//! proxy exactly there (`tests/txn_faults.rs`). The environment is read
//! once per process; unset, a hook costs a load.

use std::sync::OnceLock;

/// After every writing branch is prepared (and the decision row written,
/// not yet committed), before the home's COMMIT, the commit point.
pub const PAUSE_AFTER_PREPARE_ENV: &str = "HSCALE_TEST_PAUSE_AFTER_PREPARE_MS";

/// After the decision commits, before any branch commits.
pub const PAUSE_AFTER_DECISION_ENV: &str = "HSCALE_TEST_PAUSE_AFTER_DECISION_MS";

/// After the first prepared branch commits, before the others do (set, the
/// first branch commits alone; unset, every branch commits at once).
pub const PAUSE_BETWEEN_COMMITS_ENV: &str = "HSCALE_TEST_PAUSE_BETWEEN_COMMITS_MS";

const HOOKS: [&str; 3] = [
    PAUSE_AFTER_PREPARE_ENV,
    PAUSE_AFTER_DECISION_ENV,
    PAUSE_BETWEEN_COMMITS_ENV,
];

/// The milliseconds the hook `env` pauses for, if its variable is set.
pub fn millis(env: &str) -> Option<u64> {
    static SET: OnceLock<[Option<u64>; 3]> = OnceLock::new();
    let set = SET
        .get_or_init(|| HOOKS.map(|h| std::env::var(h).ok().and_then(|v| v.parse::<u64>().ok())));
    HOOKS.iter().position(|h| *h == env).and_then(|i| set[i])
}

/// Sleep for the milliseconds the environment variable `env` names, if set.
pub async fn pause(env: &str) {
    if let Some(ms) = millis(env) {
        tracing::warn!(hook = env, ms, "test hook: pausing the commit protocol");
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}
