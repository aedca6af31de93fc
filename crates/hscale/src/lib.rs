//! hscale: a multi-core MySQL-protocol proxy.
//!
//! The path of a statement: [`server`] accepts a client and hands it to
//! [`session::serve`], which authenticates it ([`login`]) and then
//! loops over commands. Each statement is classified by `hscale_sql`,
//! runs on a backend connection borrowed from a [`backend::Pool`] (with the
//! session's state synced onto it, [`session::state`]), and its response is
//! streamed back by [`session::forward`]. See ARCHITECTURE.md.

pub mod admin;
pub mod backend;
pub mod config;
pub mod error;
pub mod exec;
pub mod fleet;
pub mod http;
pub mod http_api;
pub mod huge_text;
pub mod logging;
pub mod login;
pub mod metrics;
pub mod partition;
pub mod planning;
pub mod playground;
pub mod runtime;
pub mod seq;
pub mod server;
pub mod session;
pub mod tenant;
pub mod tls;
pub mod write_timeout;

pub use config::Config;
pub use server::RunningProxy;
