//! Partitioning at run time: the dictionary's storage in the main
//! backend's `hscale` database ([`store`]) and its refresh into the
//! snapshot every session reads ([`refresh`]; the snapshot itself,
//! [`Partitioning`], is state the `Context` holds, defined in
//! `runtime/partitioning.rs`), schema questions and DDL on one backend
//! ([`ddl`]), streamed row copies between backends ([`copy`]), the
//! weights of keys under collations the backend weighs ([`weights`]) and
//! the result cache's version triggers ([`versions`]). The admin commands
//! that use them live in `crate::admin`. This module imports `backend/`,
//! `error` and `runtime` (the refresh takes the `Context`), nothing above.

pub mod copy;
pub mod ddl;
pub mod definition;
pub mod load_batcher;
pub mod refresh;
pub mod store;
pub mod versions;
pub mod weights;

use hscale_route::HashingFunction;

/// SQL quoting, written once in `hscale_sql::quote`.
pub use hscale_sql::quote::{qualified, quote_ident, quote_str};

/// The dictionary snapshot and its bookkeeping, held by the `Context`
/// (defined in `runtime/partitioning.rs`, so that `runtime.rs` imports
/// nothing of this module, which takes the `Context` to refresh it).
pub use crate::runtime::{FenceState, Partitioning};

/// The SQL expression that computes a hashing function on a column, equal
/// to [`HashingFunction::apply`] (checked by `tests/hashing.rs`).
pub fn function_sql(f: &HashingFunction, column: &str) -> String {
    function_of(f, &quote_ident(column))
}

/// The hashing function applied to an SQL expression (`NEW.`k`` in a
/// trigger, a quoted column elsewhere).
pub fn function_of(f: &HashingFunction, c: &str) -> String {
    match f {
        HashingFunction::None => c.to_string(),
        HashingFunction::Mod(n) => format!("{c} MOD {n}"),
        HashingFunction::Div(n) => format!("{c} DIV {n}"),
        HashingFunction::Prefix(n) => format!("LEFT({c}, {n})"),
        HashingFunction::Date(p) => format!("DATE_FORMAT({c}, {})", quote_str(p)),
        HashingFunction::Hash(n) => format!("CRC32({c}) % {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashing_function_sql() {
        assert_eq!(
            function_sql(&HashingFunction::Hash(4), "id"),
            "CRC32(`id`) % 4"
        );
    }
}
