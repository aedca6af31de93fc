//! [`BackendId`]: which backend, by its place in the config's list of
//! backends. The first is the main backend, which holds the dictionary,
//! the operations journal and the commit decisions.

use std::fmt;

/// A backend, by its place in the config's list (0 is the main backend).
/// Users and messages number backends from 1 (`#2` is `BackendId(1)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct BackendId(u16);

impl BackendId {
    /// The main backend: the dictionary, the journal, the decisions.
    pub const MAIN: BackendId = BackendId(0);
    /// The most backends a config may list.
    pub const LIMIT: usize = u16::MAX as usize;

    /// The backend at `index` in the config's list. Indexes past
    /// [`BackendId::LIMIT`] (which the config refuses) saturate.
    pub fn new(index: usize) -> BackendId {
        BackendId(u16::try_from(index).unwrap_or(u16::MAX))
    }

    /// The place in the config's list, to index per-backend vectors.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The number users see (1 for the main backend).
    pub const fn number(self) -> usize {
        self.0 as usize + 1
    }

    pub const fn is_main(self) -> bool {
        self.0 == 0
    }

    /// Every backend of a config listing `count`.
    pub fn all(count: usize) -> impl DoubleEndedIterator<Item = BackendId> + Clone {
        (0..count.min(BackendId::LIMIT)).map(BackendId::new)
    }
}

impl fmt::Display for BackendId {
    /// `#N`, numbered from 1 as in messages and `HSCALE SHOW PARTITIONS`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.number())
    }
}

#[cfg(test)]
mod tests {
    use super::BackendId;

    #[test]
    fn numbers_and_indexes() {
        assert_eq!(BackendId::MAIN.index(), 0);
        assert_eq!(BackendId::new(2).number(), 3);
        assert_eq!(BackendId::new(2).to_string(), "#3");
        assert!(BackendId::new(0).is_main());
        assert_eq!(
            BackendId::all(3).map(|b| b.index()).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(BackendId::new(1 << 20), BackendId::new(u16::MAX as usize));
    }
}
