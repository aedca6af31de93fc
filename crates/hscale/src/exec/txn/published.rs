//! A session's transaction across backends, published for `HSCALE SHOW
//! TRANSACTIONS` (`exec/txn/show.rs`) in its [`SessionHandle`]'s
//! [`Published`] at the top of each command ([`Bindings::publish_txn`]).
//!
//! [`SessionHandle`]: crate::runtime::SessionHandle

use crate::exec::Bindings;
use crate::runtime::{Published, TxnView};

impl Bindings {
    /// Publish the session's transaction across backends (or its end) for
    /// `HSCALE SHOW TRANSACTIONS`.
    pub fn publish_txn(&self) {
        let published: &Published = &self.handle.txn;
        match &self.txn {
            None => published.clear(),
            Some(t) => published.set(TxnView {
                gtrid: t.gtrid.clone(),
                home: t.home,
                home_written: self.home_written,
                branches: t
                    .branches
                    .iter()
                    .map(|b| (b.backend, b.is_written))
                    .collect(),
            }),
        }
    }
}
