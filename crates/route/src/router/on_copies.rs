//! Reads run whole on one backend over temporary copies of the
//! partitioned tables they name (`MergePlan::ship`): the fallback for
//! reads the router cannot split (`ship_to_main`) and reads that assign
//! user variables (`on_copies_at`).

use hscale_sql::{Token, TokenKind};

use super::refs::table_refs;
use super::{is_locking_for, merge, views, with_select, MergePlan, Mode, Plan, MAX_TABLES};
use crate::dictionary::{Dictionary, Target};
use crate::BackendId;

/// The whole statement on the main backend, every reference to a
/// partitioned table replaced by a temporary copy of all its rows there
/// (`MergePlan::ship`, bounded by `[proxy] merge_max_rows`).
pub(super) fn ship_to_main(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<Plan> {
    ship_to(sql, tokens, session_db, dict, BackendId::MAIN)
}

/// A read that assigns user variables (`@n := @n + 1`) over partitioned
/// tables: the whole statement on `backend` (the one whose connection
/// holds the session's variables) with copies of the tables, so one
/// server evaluates the assignments in its own row order. `None` for
/// anything but a read (INTO, locking clauses, several statements).
pub fn on_copies_at(
    sql: &str,
    session_db: Option<&str>,
    dict: &Dictionary,
    backend: BackendId,
) -> Option<Plan> {
    let expanded = views::expanded(sql, session_db, dict);
    let sql = expanded.as_deref().unwrap_or(sql);
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let is_read = tokens
        .iter()
        .find(|t| !t.is_punct(sql, "("))
        .is_some_and(|t| t.is_word(sql, "SELECT") || with_select(sql, &tokens))
        && !tokens.iter().enumerate().any(|(i, t)| {
            t.kind == TokenKind::Semicolon
                || t.is_word(sql, "INTO")
                || is_locking_for(sql, &tokens, i)
                || t.is_word(sql, "LOCK")
        });
    if !is_read {
        return None;
    }
    ship_to(sql, &tokens, session_db, dict, backend)
}

/// `ship_to_main` on `backend`.
fn ship_to(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
    backend: BackendId,
) -> Option<Plan> {
    let refs = table_refs(sql, tokens, session_db, dict);
    if refs.is_empty() || refs.len() > MAX_TABLES {
        return None;
    }
    // A common table expression named like a partitioned table hides it
    // where it is in scope: `table_refs` leaves those names out.
    let mut ship = Vec::new();
    let mut targets = Vec::new();
    for r in &refs {
        let table = dict.table(&r.name)?;
        let shipped = merge::Ship::partitioned(ship.len(), &r.name.db, table, None);
        let temp = shipped.temp.clone();
        ship.push(shipped);
        targets.push(Target {
            backend,
            physical_table: temp,
        });
    }
    let slot = merge::Slot {
        target: Target {
            backend,
            physical_table: "whole statement on copies".into(),
        },
        refs: refs.iter().zip(targets).collect(),
        lists: &[],
    };
    Some(Plan::Merge(MergePlan {
        parts: vec![(
            slot.target.clone(),
            merge::rewrite_slot_labelled(sql, tokens, &slot),
        )],
        mode: Mode::Sort { hidden: 0 },
        order: Vec::new(),
        offset: 0,
        limit: None,
        ship,
        fallback: None,
        aliased: None,
    }))
}
