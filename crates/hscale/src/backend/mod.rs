//! The backend side: connections to MariaDB/MySQL servers ([`conn`]) and a
//! pool per backend ([`pool`]) from which sessions borrow a connection for
//! each statement (or keep one while pinned).

pub mod conn;
pub mod pool;
pub mod state;

pub use conn::BackendConn;
pub use pool::{Pool, PooledConn};
