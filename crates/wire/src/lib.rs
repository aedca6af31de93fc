//! The MySQL wire protocol, both directions: packet framing ([`PacketStream`]),
//! the handshake ([`handshake`]), authentication scrambles ([`auth`]), the
//! generic response packets OK / ERR / EOF ([`response`]), length-encoded
//! values ([`buf`]), the prepared-statement packets ([`stmt`]) and the reply
//! writer every answer to a client goes through ([`reply`]).
//!
//! This crate knows packets, not sessions: it never decides what a packet
//! means for a connection's state. The proxy runtime (`hscale`) uses it on
//! the client side and on the backend side alike.

pub mod auth;
pub mod binary_row;
pub mod buf;
pub mod charset;
pub mod compress;
pub mod consts;
pub mod error;
pub mod handshake;
pub mod packet;
pub mod reply;
pub mod response;
pub mod resultset;
pub mod stmt;

pub use error::WireError;
pub use packet::{Packet, PacketStream, RelayEnd, WholeResult, MAX_PAYLOAD};
