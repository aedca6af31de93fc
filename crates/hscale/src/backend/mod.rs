//! The backend side: connections to MariaDB/MySQL servers ([`conn`]) and a
//! pool per backend ([`pool`]) from which sessions borrow a connection for
//! each statement (or keep one while pinned), its slots shared fairly
//! among users ([`fair`]); [`replicas`] the backends' replicas, their
//! pools and the monitor of their replication; [`stream`] the sockets whose
//! reads give up on a frozen backend; [`tls`] TLS to backends;
//! [`addresses`] where each backend's primary is after a switchover;
//! [`lane`] pipelined connections that carry many sessions' reads.

pub mod addresses;
pub mod conn;
pub mod fair;
pub mod lane;
pub mod pool;
pub mod replicas;
pub mod state;
pub mod stream;
pub mod tls;

pub use conn::BackendConn;
pub use pool::{Pool, PooledConn};
pub use state::SqlModeFlags;
pub use stream::BackendWatch;
