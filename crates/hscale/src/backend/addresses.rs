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

/// What one server of the main backend's set says of where the main
/// backend's primary is: its own `hscale.backend_addresses` row for the
/// main backend (the config's address with epoch 0 when it has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MainRecord {
    /// The server asked.
    pub server: String,
    /// The primary its record names, and the record's epoch.
    pub names: String,
    pub epoch: u64,
    pub is_read_only: bool,
}

/// Ask each of `servers` (the main backend's config address and replicas)
/// for its record (`MainRecord`), each within the pool's connect timeout;
/// servers that do not answer are left out. The main backend's record is
/// part of the dictionary, so every server of the set has it by
/// replication: the new primary's and its replicas' name it, while an old
/// primary that missed the switch (dead, cut off, or back without
/// rejoining) names itself with a lower epoch.
pub async fn read_main_records(pool: &crate::backend::Pool, servers: &[&str]) -> Vec<MainRecord> {
    let name = hscale_sql::quote::quote_str(&pool.cfg.name);
    let full = format!(
        "SELECT @@GLOBAL.read_only, \
         (SELECT address FROM `hscale`.`backend_addresses` WHERE backend = {name}), \
         (SELECT epoch FROM `hscale`.`backend_addresses` WHERE backend = {name})"
    );
    let asks = servers.iter().map(|&server| {
        let full = &full;
        async move {
            let mut c = pool.connect_to(server).await.ok()?;
            let first = |r: crate::backend::conn::TextResult| {
                r.strings().into_iter().next().unwrap_or_default()
            };
            let row = match c.query_rows(full).await.ok()? {
                Ok(r) => first(r),
                // No dictionary (or no epoch column) there yet.
                Err(_) => match c.query_rows("SELECT @@GLOBAL.read_only").await.ok()? {
                    Ok(r) => first(r),
                    Err(_) => return None,
                },
            };
            let field = |i: usize| row.get(i).cloned().flatten();
            Some(MainRecord {
                server: server.to_string(),
                names: field(1).unwrap_or_else(|| pool.cfg.address.clone()),
                epoch: field(2).and_then(|e| e.parse().ok()).unwrap_or(0),
                is_read_only: field(0).as_deref() != Some("0"),
            })
        }
    });
    futures_util::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The main backend's primary by `records`: what the record with the
/// highest epoch names (the first such in the servers' order); `None`
/// when no server answered.
pub fn pick_main(records: &[MainRecord]) -> Option<(&str, u64)> {
    let top = records.iter().map(|r| r.epoch).max()?;
    records
        .iter()
        .find(|r| r.epoch == top)
        .map(|r| (r.names.as_str(), r.epoch))
}

/// The epoch a switch of the main backend stores: above every record seen,
/// and at least the time now in ms, so that it is above the records of
/// servers that did not answer too unless they were switched later than
/// now by a clock ahead of this one.
pub fn next_epoch(records: &[MainRecord]) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let seen = records.iter().map(|r| r.epoch).max().unwrap_or(0);
    (seen + 1).max(now)
}

#[cfg(test)]
mod tests {
    use super::{next_epoch, others, pick_main, MainRecord};

    fn record(server: &str, names: &str, epoch: u64) -> MainRecord {
        MainRecord {
            server: server.into(),
            names: names.into(),
            epoch,
            is_read_only: false,
        }
    }

    #[test]
    fn the_record_with_the_highest_epoch_names_the_main_primary() {
        // The old primary back without rejoining names itself, older.
        let r = [
            record("a", "a", 5),
            record("b", "b", 9),
            record("c", "b", 9),
        ];
        assert_eq!(pick_main(&r), Some(("b", 9)));
        // Only a replica of the new primary answers: it names it.
        assert_eq!(pick_main(&r[2..]), Some(("b", 9)));
        assert_eq!(pick_main(&[]), None);
        assert!(next_epoch(&r) > 9);
        let far = [record("a", "a", u64::MAX / 2)];
        assert_eq!(next_epoch(&far), u64::MAX / 2 + 1);
    }

    #[test]
    fn the_old_primary_takes_the_promoted_replicas_place() {
        assert_eq!(others("a", &["b", "c"], "a"), Some(vec!["b", "c"]));
        assert_eq!(others("a", &["b", "c"], "b"), Some(vec!["a", "c"]));
        assert_eq!(others("a", &["b", "c"], "c"), Some(vec!["a", "b"]));
        assert_eq!(others("a", &["b"], "z"), None);
    }
}
