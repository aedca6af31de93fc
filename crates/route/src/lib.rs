//! Partitioning, without I/O: the values a partition key takes
//! ([`KeyValue`]), the hashing functions that map them to partition values
//! ([`HashingFunction`]), and (next) the dictionary that maps partition
//! values to partitions and the planner that routes statements.
//!
//! A silently changed hashing function sends rows to the wrong partition,
//! so every function has golden vectors here and is checked against the
//! MariaDB expressions it promises to equal in the integration tests.

pub mod admin;
pub mod backend_id;
mod collation_tables;
pub mod conversions;
pub mod dictionary;
pub mod hashing;
pub mod key;
pub mod key_compare;
pub mod known;
pub mod load_split;
pub mod router;
pub mod single_byte;
pub mod value;
pub mod view;
pub mod weights;

pub use backend_id::BackendId;
pub use hashing::{HashError, HashingFunction};
pub use key::KeyValue;
