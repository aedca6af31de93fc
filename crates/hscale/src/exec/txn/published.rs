//! A session's transaction across backends, published for `HSCALE SHOW
//! TRANSACTIONS` (`admin/show_transactions.rs`). Sessions publish their
//! transaction to their [`SessionHandle`] at the top of each command
//! ([`Bindings::publish_txn`]): one relaxed load when they have none, so
//! the statement path of other sessions is untouched.
//!
//! [`SessionHandle`]: crate::runtime::SessionHandle

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use hscale_route::BackendId;

use crate::exec::Bindings;

/// A session's transaction across backends, for the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnView {
    pub gtrid: String,
    pub home: BackendId,
    pub home_written: bool,
    /// Every branch besides the home: backend and whether it wrote.
    pub branches: Vec<(BackendId, bool)>,
}

/// What a session last published (in its `SessionHandle`).
#[derive(Debug, Default)]
pub struct Published {
    has_txn: AtomicBool,
    view: Mutex<Option<TxnView>>,
}

impl Published {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<TxnView>> {
        self.view.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session's transaction across backends, if it has one.
    pub fn get(&self) -> Option<TxnView> {
        if !self.has_txn.load(Ordering::Relaxed) {
            return None;
        }
        self.lock().clone()
    }
}

impl Bindings {
    /// Publish the session's transaction across backends (or its end) for
    /// `HSCALE SHOW TRANSACTIONS`.
    pub fn publish_txn(&self) {
        let published = &self.handle.txn;
        match &self.txn {
            None => {
                if published.has_txn.load(Ordering::Relaxed) {
                    *published.lock() = None;
                    published.has_txn.store(false, Ordering::Relaxed);
                }
            }
            Some(t) => {
                let view = TxnView {
                    gtrid: t.gtrid.clone(),
                    home: t.home,
                    home_written: self.home_written,
                    branches: t
                        .branches
                        .iter()
                        .map(|b| (b.backend, b.is_written))
                        .collect(),
                };
                let mut g = published.lock();
                if g.as_ref() != Some(&view) {
                    *g = Some(view);
                }
                published.has_txn.store(true, Ordering::Relaxed);
            }
        }
    }
}
