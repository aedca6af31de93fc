//! SQL analysis for hscale, without I/O: a fast hand-written [`lexer`] that
//! runs on every statement, and [`facts`], which classifies a statement and
//! says what it does to the session (database, SET variables, what pins the
//! session to one backend connection).
//!
//! The proxy runtime calls [`facts::analyze`] once per `COM_QUERY` and
//! `COM_STMT_PREPARE`; nothing here allocates for a plain SELECT/INSERT
//! beyond the token vector.

pub mod batch;
pub mod diagnostics;
pub mod facts;
pub mod fingerprint;
pub mod guard;
pub mod lexer;
pub mod mentions;
pub mod quote;
pub mod reads;
pub mod rewrite;
pub mod shareable;
pub mod show;
pub mod transaction;

pub use facts::{
    analyze, analyze_bytes, parse_kill, set_expressions, Facts, KillStatement, Kind, Mentions,
    Pins, SessionChange, SetItem,
};
pub use fingerprint::{fingerprint, Fingerprint, Literal};
pub use lexer::{
    ansi_names_backquoted, backslashes_doubled, backslashes_undoubled, tokenize,
    tokenize_without_escapes, LexError, Token, TokenKind,
};
