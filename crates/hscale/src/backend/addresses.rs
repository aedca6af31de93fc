//! Where each backend's primary is: the config's address until a
//! switchover or failover (`admin/failover.rs`) names one of its replicas
//! in the dictionary (`hscale.backend_addresses`). Applied at every
//! dictionary reload (`partition::refresh::reload`): the backend's
//! [`BackendWatch`] takes the new address, so every pool of it, on every
//! worker, connects there from now on and closes its connections to the
//! old one at their next checkout (the checkout's existing comparison of
//! the defaults' generation notices; nothing is added per statement).
//! The backend's replicas become the other servers of its set (the
//! config's address and replicas), in the config's order, so the old
//! primary, a replica now, serves the reads a replica serves.

use std::sync::Arc;

use crate::backend::replicas::Replicas;
use crate::backend::BackendWatch;
use crate::config::Config;

/// Apply `named` (backend name, primary address): `watches[i]` is backend
/// `i`'s; a backend not named goes back to its config's address.
pub fn apply(
    config: &Config,
    watches: &[Arc<BackendWatch>],
    replicas: &Replicas,
    named: &[(String, String)],
) {
    for (i, b) in config.backends.iter().enumerate() {
        let Some(watch) = watches.get(i) else {
            continue;
        };
        let primary = named
            .iter()
            .find(|(n, _)| *n == b.name)
            .map_or(b.address.as_str(), |(_, a)| a.as_str());
        let address = (primary != b.address).then(|| primary.to_string());
        if watch.set_address(address) {
            tracing::warn!(backend = %b.name, address = primary, "the backend's primary moved: connections go to the new one");
        }
        replicas.follow_primary(hscale_route::BackendId::new(i), &b.address, primary);
    }
}

/// The servers of a backend other than its primary `primary`, in the
/// config's order (`config_primary` first, then its replicas); `None` when
/// `primary` is none of them (the replicas are left as they are).
pub fn others<'a>(
    config_primary: &'a str,
    replicas: &[&'a str],
    primary: &str,
) -> Option<Vec<&'a str>> {
    let all: Vec<&str> = std::iter::once(config_primary)
        .chain(replicas.iter().copied())
        .collect();
    all.contains(&primary)
        .then(|| all.into_iter().filter(|a| *a != primary).collect())
}

#[cfg(test)]
mod tests {
    use super::others;

    #[test]
    fn the_old_primary_takes_the_promoted_replicas_place() {
        assert_eq!(others("a", &["b", "c"], "a"), Some(vec!["b", "c"]));
        assert_eq!(others("a", &["b", "c"], "b"), Some(vec!["a", "c"]));
        assert_eq!(others("a", &["b", "c"], "c"), Some(vec!["a", "b"]));
        assert_eq!(others("a", &["b"], "z"), None);
    }
}
