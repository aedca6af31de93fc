//! Errors of the wire layer.

/// What went wrong reading or decoding packets.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    #[error("connection closed by peer")]
    Closed,
    #[error("malformed packet: {0}")]
    Malformed(&'static str),
    #[error("packet of {size} bytes exceeds max_allowed_packet ({max})")]
    TooLarge { size: usize, max: usize },
    #[error("packet sequence id {got}, expected {expected}")]
    Sequence { got: u8, expected: u8 },
}

impl WireError {
    /// True when the peer went away (closed or reset), as opposed to sending garbage.
    pub fn is_disconnect(&self) -> bool {
        match self {
            WireError::Closed => true,
            WireError::Io(e) => matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::ConnectionAborted
            ),
            _ => false,
        }
    }
}
