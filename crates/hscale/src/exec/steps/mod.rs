//! Statements the proxy runs in steps of its own before (or instead of)
//! the client's plan: a read it makes for itself into the row sink
//! (`sink::read`), then what the client gets. The executor's entry
//! decides which form a statement has (`exec/entry.rs`) and calls one of
//! these.
//!
//! | file | runs |
//! |---|---|
//! | `found_rows.rs` | `SELECT SQL_CALC_FOUND_ROWS` over partitions: the count read first |
//! | `select_into.rs` | `SELECT ... INTO @vars` over partitions: read, then assigned by one server |
//! | `set_values.rs` | `SET var = <expression>`: the expressions read, the SET run with literals |
//! | `do_statement.rs` | `DO expr, ...` naming partitioned tables: read, rows dropped, DO's OK |
//! | `views.rs` | CREATE / ALTER VIEW of a kept view: its SELECT probed for its columns |
//! | `user_vars.rs` | reads with user variables over partitions: run on copies where the variables live |
//! | `remote_views.rs` | information_schema rows of tables with no partition on the main backend |

mod do_statement;
mod found_rows;
mod remote_views;
mod select_into;
mod set_values;
mod user_vars;
mod views;

pub use do_statement::do_as_select;
