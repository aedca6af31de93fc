//! `tracing` set-up: the filter comes from `RUST_LOG` if set, else from
//! the config's `[log] filter`.

use tracing_subscriber::EnvFilter;

pub fn init(filter: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(filter))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Statement text for debug logs, with anything that may hold a password hidden.
pub fn loggable(sql: &str) -> &str {
    let upper_has = |w: &str| {
        sql.as_bytes()
            .windows(w.len())
            .any(|win| win.eq_ignore_ascii_case(w.as_bytes()))
    };
    if upper_has("PASSWORD") || upper_has("IDENTIFIED") {
        "<statement hidden: it may contain a password>"
    } else {
        sql.get(..sql.len().min(1000)).unwrap_or(sql)
    }
}
