//! `CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] u [(...)] ...
//! [IGNORE | REPLACE] [AS] SELECT ...` whose SELECT reads partitioned
//! tables: the new table is a plain one on the main backend, where plain
//! tables live, made and filled by one server from copies of the
//! partitioned tables it reads.
//!
//! ```text
//!  partitions of t ──rows──► temporary copy hscale_ship_0 on the main
//!                            backend (the connection that runs the CREATE)
//!  CREATE TABLE u ... SELECT ... FROM hscale_ship_0 AS t ...   (there)
//! ```
//!
//! So the new table's columns (types, lengths, NULL-ness, keys the client
//! declares), its rows, the duplicates IGNORE / REPLACE settle, the
//! warnings and the `Records: n  Duplicates: d  Warnings: w` answer are
//! one server's, computed by that server over all the rows. The copies
//! are bounded by `[proxy] ship_max_rows` like every shipped table.
//!
//! Pure: no I/O. `hscale::exec::merge::create_select` runs it.

use hscale_sql::{Token, TokenKind};

use super::merge::{self, Ship, Slot};
use super::refs::table_refs;
use super::{is_name, Plan};
use crate::dictionary::{Dictionary, Target};
use crate::BackendId;

/// A CREATE TABLE ... SELECT reading partitioned tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateSelect {
    /// The partitioned tables it reads, copied first.
    pub ship: Vec<Ship>,
    /// The statement, its partitioned tables named as their copies, run
    /// on the main backend.
    pub sql: String,
    /// CREATE TEMPORARY TABLE (which commits nothing).
    pub is_temporary: bool,
}

/// The token index of the new table's name when `tokens` are `CREATE [OR
/// REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] name`.
fn created_name(sql: &str, tokens: &[Token]) -> Option<usize> {
    let mut i = 0;
    let word = |i: usize, w: &str| tokens.get(i).is_some_and(|t| t.is_word(sql, w));
    if !word(i, "CREATE") {
        return None;
    }
    i += 1;
    if word(i, "OR") && word(i + 1, "REPLACE") {
        i += 2;
    }
    if word(i, "TEMPORARY") {
        i += 1;
    }
    if !word(i, "TABLE") {
        return None;
    }
    i += 1;
    if word(i, "IF") && word(i + 1, "NOT") && word(i + 2, "EXISTS") {
        i += 3;
    }
    tokens.get(i).filter(|t| is_name(t)).map(|_| i)
}

/// The plan of a CREATE TABLE ... SELECT that reads partitioned tables;
/// `None` for anything else (and for one that names a global table or
/// view, or creates a table named like a partitioned one: planned as
/// before).
pub(super) fn create_select(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<Plan> {
    let name = created_name(sql, tokens)?;
    if tokens.iter().any(|t| t.kind == TokenKind::Semicolon) {
        return None;
    }
    // CREATE TABLE u LIKE t has its own plan; a SELECT must follow.
    let rest = &tokens[name + 1..];
    if !rest.iter().any(|t| t.is_word(sql, "SELECT")) {
        return None;
    }
    let after = |k: usize| rest.get(k);
    let skip = if after(0).is_some_and(|t| t.is_punct(sql, ".")) {
        2
    } else {
        0
    };
    if after(skip).is_some_and(|t| t.is_word(sql, "LIKE"))
        || after(skip).is_some_and(|t| t.is_punct(sql, "("))
            && after(skip + 1).is_some_and(|t| t.is_word(sql, "LIKE"))
    {
        return None;
    }
    let refs = table_refs(sql, tokens, session_db, dict);
    if refs.is_empty() || refs.len() > super::MAX_TABLES {
        return None;
    }
    // The new table itself among them: one server's 1050 (or the note of
    // IF NOT EXISTS) comes from planning it as before.
    if refs.iter().any(|r| r.start <= name + 2 && r.end > name) {
        return None;
    }
    let mut ship = Vec::new();
    let mut targets = Vec::new();
    for r in &refs {
        let table = dict.table(&r.name)?;
        let shipped = Ship::partitioned(ship.len(), &r.name.db, table, None);
        targets.push(Target {
            backend: BackendId::MAIN,
            physical_table: shipped.temp.clone(),
        });
        ship.push(shipped);
    }
    let slot = Slot {
        target: Target {
            backend: BackendId::MAIN,
            physical_table: "the new table".into(),
        },
        refs: refs.iter().zip(targets).collect(),
        lists: &[],
    };
    Some(Plan::CreateSelect(Box::new(CreateSelect {
        is_temporary: tokens[..name].iter().any(|t| t.is_word(sql, "TEMPORARY")),
        sql: merge::rewrite_slot_labelled(sql, tokens, &slot),
        ship,
    })))
}
