//! The partition dictionary as the `Context` holds it ([`Partitioning`]):
//! the current snapshot every session reads without locking, swapped
//! whole by `partition/refresh.rs` (which reads it from the main backend),
//! with what the fence and the admin commands keep beside it. Plain
//! state, importing no subsystem; re-exported by `crate::partition`.
//!
//! Statements are routed by `hscale_route::router`; what it cannot route
//! is refused with a clear error ([`Partitioning::refusal`]) rather than
//! sent somewhere it could give a different answer.

use std::sync::Arc;

use arc_swap::ArcSwap;
use hscale_route::dictionary::{Dictionary, TableName};

/// The current dictionary, swapped whole when it changes.
pub struct Partitioning {
    snapshot: ArcSwap<Dictionary>,
    /// Serializes admin commands (never taken on the statement path).
    pub admin_lock: tokio::sync::Mutex<()>,
    /// Serializes writes to global tables on this proxy, so that every
    /// copy applies them in the same order.
    pub global_write_lock: tokio::sync::Mutex<()>,
    /// Whether the dictionary has been read from the main backend.
    pub is_loaded: std::sync::atomic::AtomicBool,
    /// Operations in their cutover at the last reload, read in the same
    /// snapshot as the dictionary.
    pub cutovers: std::sync::Mutex<Vec<String>>,
    /// One fence reload at a time on this proxy (`refresh::await_newer_dictionary`).
    pub fence_gate: tokio::sync::Mutex<FenceState>,
    /// Woken when a new snapshot is made current (`replace`): statements
    /// waiting at the fence run again at once, not at their next poll.
    pub replaced: tokio::sync::Notify,
    /// Whether this process made sure the dictionary's tables exist.
    pub is_schema_ready: std::sync::atomic::AtomicBool,
    /// When a session last tried to read it (ms since `epoch`), so that an
    /// unreadable dictionary costs one attempt a second, not one per statement.
    last_attempt_ms: std::sync::atomic::AtomicU64,
    epoch: std::time::Instant,
    /// Numbers the snapshots: plan caches key their entries by it.
    generation: std::sync::atomic::AtomicU64,
    /// Partition values that writes named without a partition, for
    /// auto-partitioning (`admin::auto_partition`): sent without waiting
    /// (dropped when full: the next write of the value sends it again).
    pub auto_requests: tokio::sync::mpsc::Sender<(TableName, String)>,
    /// The receiving end, taken by the proxy's auto-partitioning task.
    pub auto_receiver: std::sync::Mutex<Option<tokio::sync::mpsc::Receiver<(TableName, String)>>>,
    /// Physical tables (database, table) that earlier snapshots named and
    /// later ones do not, newest last, at most [`RETIRED_KEPT`]: the fence
    /// tells a partition's retired table from a plain table by it.
    retired: std::sync::Mutex<std::collections::VecDeque<(String, String)>>,
}

/// Retired physical tables remembered ([`Partitioning::was_retired`]).
const RETIRED_KEPT: usize = 4096;

impl Default for Partitioning {
    fn default() -> Self {
        let (auto_requests, receiver) = tokio::sync::mpsc::channel(1024);
        Partitioning {
            auto_requests,
            auto_receiver: std::sync::Mutex::new(Some(receiver)),
            snapshot: ArcSwap::from_pointee(Dictionary::default()),
            admin_lock: tokio::sync::Mutex::new(()),
            global_write_lock: tokio::sync::Mutex::new(()),
            is_loaded: std::sync::atomic::AtomicBool::new(false),
            is_schema_ready: std::sync::atomic::AtomicBool::new(false),
            fence_gate: tokio::sync::Mutex::new(FenceState::default()),
            replaced: tokio::sync::Notify::new(),
            cutovers: std::sync::Mutex::new(Vec::new()),
            last_attempt_ms: std::sync::atomic::AtomicU64::new(0),
            epoch: std::time::Instant::now(),
            generation: std::sync::atomic::AtomicU64::new(0),
            retired: Default::default(),
        }
    }
}

/// What the last fence reload found.
#[derive(Debug, Default)]
pub struct FenceState {
    pub last_reload: Option<std::time::Instant>,
    /// Operations in their cutover at that reload.
    pub cutovers: Vec<String>,
}

impl Partitioning {
    /// The stored dictionary version of the current snapshot.
    pub fn stored_version(&self) -> u64 {
        self.snapshot.load().stored_version
    }

    /// True when the dictionary is not loaded yet and nobody tried in the
    /// last second: the caller should try now.
    pub fn should_try_loading(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        if self.is_loaded.load(Relaxed) {
            return false;
        }
        let now = self.epoch.elapsed().as_millis() as u64 + 1000;
        let last = self.last_attempt_ms.load(Relaxed);
        now - last >= 1000
            && self
                .last_attempt_ms
                .compare_exchange(last, now, Relaxed, Relaxed)
                .is_ok()
    }

    pub fn dictionary(&self) -> Arc<Dictionary> {
        self.snapshot.load_full()
    }

    /// `f` of the current snapshot, without touching its reference count.
    pub fn with_dictionary<T>(&self, f: impl FnOnce(&Dictionary) -> T) -> T {
        f(&self.snapshot.load())
    }

    /// The table a column definition's original table `org` (in database
    /// `schema`) stands for: the table a shipped copy (`ships`: its
    /// temporary table, the table) copies, or the partitioned table of a
    /// partition's physical table.
    pub fn client_table(
        &self,
        ships: &[(String, String)],
        schema: &[u8],
        org: &[u8],
    ) -> Option<String> {
        ships
            .iter()
            .find(|(temp, _)| temp.as_bytes() == org)
            .map(|(_, table)| table.clone())
            .or_else(|| self.logical_table(schema, org))
    }

    /// The partitioned table whose default or partition table is
    /// `physical` in database `schema`.
    pub fn logical_table(&self, schema: &[u8], physical: &[u8]) -> Option<String> {
        let (db, physical) = (
            std::str::from_utf8(schema).ok()?,
            std::str::from_utf8(physical).ok()?,
        );
        self.with_dictionary(|d| d.table_of_physical(db, physical).map(|t| t.table.clone()))
    }

    /// The current snapshot's version, without touching its reference
    /// count (shared by every session: no cross-core write).
    pub fn version(&self) -> u64 {
        self.snapshot.load().version
    }

    /// Some table's ids come from a sequence, checked on every statement
    /// without touching a shared reference count.
    pub fn has_sequences(&self) -> bool {
        self.snapshot.load().has_sequences()
    }

    /// Whether any table is global (through the snapshot guard, as
    /// [`Self::has_sequences`]).
    pub fn has_globals(&self) -> bool {
        self.snapshot.load().has_globals()
    }

    /// No partitioned table: the common case, checked on every statement
    /// without touching a shared reference count.
    pub fn is_empty(&self) -> bool {
        self.snapshot.load().is_empty()
    }

    /// Make `d` current, unless it holds what the current one does (the
    /// periodic reload): a new snapshot gets a new version, which
    /// invalidates every cached plan.
    ///
    /// Never an older stored version than the current one: reloads run
    /// concurrently (the periodic one, the fence's, an admin command's), and
    /// one that read the dictionary before another proxy's change committed
    /// may finish after one that read it after.
    pub fn replace(&self, mut d: Dictionary) {
        d.version = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let d = Arc::new(d);
        let mut current = self.snapshot.load_full();
        loop {
            if current.same_tables(&d) || current.stored_version > d.stored_version {
                return;
            }
            let seen = self.snapshot.compare_and_swap(&current, d.clone());
            if Arc::ptr_eq(&seen, &current) {
                break;
            }
            current = arc_swap::Guard::into_inner(seen);
        }
        self.note_retired(&current, &d);
        self.replaced.notify_waiters();
    }

    /// Remember the physical tables `old` names and `new` does not.
    fn note_retired(&self, old: &Dictionary, new: &Dictionary) {
        let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        for t in old.tables() {
            for target in t.all_targets() {
                if !new.names_physical(&t.name.db, &target.physical_table) {
                    retired.push_back((t.name.db.clone(), target.physical_table));
                }
            }
        }
        while retired.len() > RETIRED_KEPT {
            retired.pop_front();
        }
    }

    /// Whether an earlier snapshot named `db`.`table` as a partition's
    /// physical table that the current one no longer names.
    pub fn was_retired(&self, db: &str, table: &str) -> bool {
        self.retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|(d, t)| d == db && t == table)
    }

    /// If the statement names a partitioned table, the error to answer with.
    /// Cheap when nothing is partitioned (one atomic load).
    pub fn refusal(&self, sql: &[u8]) -> Option<String> {
        self.managed_name(sql).map(|what| {
            format!("a statement that is not UTF-8 (non-ASCII text in a connection character set such as latin1) naming {what} is not supported")
        })
    }

    /// The first table hscale manages that the statement names, as words
    /// for an error ("partitioned table db.t", "view db.v (kept by
    /// hscale)", "global table db.g"); `None` when it names none. Cheap when
    /// nothing is partitioned (one atomic load).
    pub fn managed_name(&self, sql: &[u8]) -> Option<String> {
        if self.snapshot.load().is_empty() {
            return None;
        }
        let text = String::from_utf8_lossy(sql);
        let tokens = hscale_sql::tokenize(&text).ok()?;
        self.managed_name_in(&text, &tokens)
    }

    /// [`Partitioning::managed_name`] of a statement lexed already (in the
    /// session's sql_mode).
    pub fn managed_name_in(&self, text: &str, tokens: &[hscale_sql::Token]) -> Option<String> {
        let d = self.snapshot.load();
        if d.is_empty() {
            return None;
        }
        let names = |name: &str| {
            tokens.iter().any(|tok| {
                matches!(
                    tok.kind,
                    hscale_sql::TokenKind::Word | hscale_sql::TokenKind::QuotedIdent
                ) && tok.text(text).trim_matches('`').eq_ignore_ascii_case(name)
            })
        };
        if let Some(t) = d.tables().find(|t| names(&t.name.table)) {
            return Some(format!("partitioned table {}", t.name));
        }
        if let Some(v) = d.views().find(|v| names(&v.name.table)) {
            return Some(format!("view {} (kept by hscale)", v.name));
        }
        let global = d.globals().find(|g| names(&g.table));
        global.map(|g| format!("global table {g}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hscale_route::HashingFunction;

    #[test]
    fn refusal_only_for_partitioned_names() {
        let p = Partitioning::default();
        assert_eq!(p.refusal(b"SELECT * FROM small"), None);
        let mut d = Dictionary::default();
        d.setup_table(
            hscale_route::dictionary::TableName::new("app", "small"),
            "category",
            "small_default",
            hscale_route::BackendId::MAIN,
            HashingFunction::None,
        )
        .unwrap();
        p.replace(d);
        assert!(p.refusal(b"SELECT * FROM `Small` WHERE id = 1").is_some());
        assert!(p.refusal(b"SELECT 'small' FROM other").is_none());
        assert!(p.refusal(b"SELECT * FROM other").is_none());
    }

    /// A snapshot never goes back to an older stored version, and the
    /// tables a newer one stops naming are remembered as retired.
    #[test]
    fn snapshots_only_move_forward_and_remember_retired_tables() {
        use hscale_route::dictionary::TableName;
        let p = Partitioning::default();
        let name = TableName::new("app", "t");
        let at = |version: u64, default: &str| {
            let mut d = Dictionary::default();
            d.setup_table(
                name.clone(),
                "k",
                default,
                hscale_route::BackendId::MAIN,
                HashingFunction::Mod(4),
            )
            .unwrap();
            d.stored_version = version;
            d
        };
        p.replace(at(5, "t_default_g5"));
        p.replace(at(6, "t_default_g6"));
        assert!(p.was_retired("app", "t_default_g5"));
        assert!(!p.was_retired("app", "t_default_g6"));
        assert!(!p.was_retired("other", "t_default_g5"));
        // A reload that read before the change, finishing after it.
        p.replace(at(5, "t_default_g5"));
        assert_eq!(p.stored_version(), 6);
        assert!(p.dictionary().names_physical("app", "t_default_g6"));
    }
}
