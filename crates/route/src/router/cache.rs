//! The plan cache: statements that differ only in their literals share a
//! plan shape, found by fingerprint (`hscale_sql::fingerprint`) instead of
//! being planned again.
//!
//! Two shapes are kept: "passthrough" (the statement names no partitioned
//! table, whatever its literals) and "point" (one partitioned table, one
//! `key = literal` conjunct deciding the partition). A point hit binds the
//! new literal, routes it, and splices the physical table name into the
//! statement: no planning, one allocation for the rewritten text. Anything
//! that does not bind exactly as the planner would (a literal the key
//! cannot take, a reference that moved) falls back to the planner.
//!
//! A cache belongs to one worker thread (no lock); entries are keyed by
//! fingerprint and checked against the session database and the
//! dictionary's version, so a changed dictionary never serves an old plan.

use std::collections::HashMap;

use hscale_sql::fingerprint::{fingerprint_tokens, Fingerprint, Literal};
use hscale_sql::{Token, TokenKind};

use super::{is_name, literal, plan_tokens, Plan, PointHint, StatementKind};
use crate::dictionary::{Dictionary, TableName};
use crate::known::Known;
use crate::KeyValue;

/// Entries per cache; a full cache starts over.
const CAPACITY: usize = 4096;

#[derive(Debug, Clone)]
enum Shape {
    Passthrough,
    Point(Point),
}

#[derive(Debug, Clone)]
struct Point {
    table: TableName,
    kind: StatementKind,
    /// The reference starts at this name token (counting Word and
    /// QuotedIdent tokens only, which literals never shift) and spans
    /// `ref_tokens` tokens (`T` or `db . T`).
    ref_name_ordinal: usize,
    ref_tokens: usize,
    ref_text: String,
    alias: Option<String>,
    keep_alias: bool,
    /// Which literal of the fingerprint is the key's.
    key_literal: usize,
}

#[derive(Debug)]
struct Entry {
    db: Option<String>,
    version: u64,
    shape: Shape,
}

/// Counters, for tests and metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
}

#[derive(Debug, Default)]
pub struct PlanCache {
    entries: HashMap<u64, Entry>,
    pub stats: CacheStats,
}

impl PlanCache {
    pub fn new() -> PlanCache {
        PlanCache::default()
    }

    /// `router::plan`, answered from the cache when the statement's shape
    /// is known.
    pub fn plan(
        &mut self,
        sql: &str,
        session_db: Option<&str>,
        dict: &Dictionary,
        known: &Known<'_>,
    ) -> Plan {
        if dict.is_empty() {
            return Plan::Passthrough;
        }
        let Ok(tokens) = hscale_sql::tokenize(sql) else {
            return Plan::Passthrough;
        };
        let fp = fingerprint_tokens(sql, &tokens);
        self.plan_lexed(sql, &tokens, &fp, session_db, dict, known)
    }

    /// [`PlanCache::plan`] of a statement already lexed and fingerprinted
    /// (`hscale_sql::Facts`): the session's one analysis of it.
    pub fn plan_lexed(
        &mut self,
        sql: &str,
        tokens: &[Token],
        fp: &Fingerprint,
        session_db: Option<&str>,
        dict: &Dictionary,
        known: &Known<'_>,
    ) -> Plan {
        if dict.is_empty() {
            return Plan::Passthrough;
        }
        if let Some(e) = self.entries.get(&fp.hash) {
            if e.version == dict.version && e.db.as_deref() == session_db {
                let hit = match &e.shape {
                    Shape::Passthrough => Some(Plan::Passthrough),
                    Shape::Point(p) => bind(sql, tokens, &fp.literals, p, dict, known),
                };
                if let Some(plan) = hit {
                    self.stats.hits += 1;
                    return plan;
                }
            }
        }
        self.stats.misses += 1;
        let mut hint = None;
        let plan = plan_tokens(sql, tokens, session_db, dict, false, &mut hint, known);
        let shape = match (&plan, hint) {
            (Plan::Passthrough, _)
                if !tokens.iter().any(|t| t.is_word(sql, "information_schema")) =>
            {
                Some(Shape::Passthrough)
            }
            (Plan::Targets { parts, .. }, Some(h)) if parts.len() == 1 && !fp.collapsed => {
                point(sql, tokens, &fp.literals, h).map(Shape::Point)
            }
            _ => None,
        };
        if let Some(shape) = shape {
            if self.entries.len() >= CAPACITY {
                self.entries.clear();
            }
            self.entries.insert(
                fp.hash,
                Entry {
                    db: session_db.map(str::to_string),
                    version: dict.version,
                    shape,
                },
            );
        }
        plan
    }
}

fn name_ordinal(tokens: &[Token], index: usize) -> usize {
    tokens[..index].iter().filter(|t| is_name(t)).count()
}

/// A point shape from the planner's hint.
fn point(sql: &str, tokens: &[Token], literals: &[Literal], h: PointHint) -> Option<Point> {
    let key = &tokens[h.key_token];
    let key_literal = literals.iter().position(|l| l.token.start == key.start)?;
    if !is_name(&tokens[h.ref_start]) {
        return None;
    }
    let alias = if h.has_alias {
        let mut j = h.ref_end;
        if tokens.get(j).is_some_and(|t| t.is_word(sql, "AS")) {
            j += 1;
        }
        Some(super::unquote(tokens.get(j)?, sql))
    } else {
        None
    };
    Some(Point {
        table: h.table,
        kind: h.kind,
        ref_name_ordinal: name_ordinal(tokens, h.ref_start),
        ref_tokens: h.ref_end - h.ref_start,
        ref_text: sql[tokens[h.ref_start].start as usize..tokens[h.ref_end - 1].end as usize]
            .to_string(),
        alias,
        keep_alias: h.keep_alias,
        key_literal,
    })
}

/// The plan of a statement with a point shape, or `None` to plan it afresh.
fn bind(
    sql: &str,
    tokens: &[Token],
    literals: &[Literal],
    p: &Point,
    dict: &Dictionary,
    known: &Known<'_>,
) -> Option<Plan> {
    let table = dict.table(&p.table)?;
    // The reference: the same name tokens, the same text.
    let start = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| is_name(t))
        .nth(p.ref_name_ordinal)?
        .0;
    let end = start + p.ref_tokens;
    let a = tokens[start].start as usize;
    let b = tokens.get(end - 1)?.end as usize;
    if sql.get(a..b)? != p.ref_text {
        return None;
    }
    // The key's literal, read as the planner reads it.
    let lit = literals.get(p.key_literal)?;
    if !matches!(lit.token.kind, TokenKind::Str | TokenKind::Number) {
        return None;
    }
    let at = tokens.iter().position(|t| t.start == lit.token.start)?;
    let value: KeyValue = if lit.is_negative {
        literal(sql, tokens.get(at - 1..=at)?)?
    } else {
        literal(sql, &tokens[at..=at])?
    };
    // A string key under a collation is pruned on string literals only
    // (`prune.rs`); anything else is planned afresh.
    if let Some(c) = table.key_compare.as_ref().filter(|_| !table.is_key_exact) {
        match &value {
            KeyValue::Str(s) if c.prunes_equality(s) => {}
            _ => return None,
        }
    }
    let target = table.route(&table.stored_key(value)?, known).ok()?;
    let mut out = String::with_capacity(sql.len() + 2 * p.table.table.len() + 24);
    out.push_str(&sql[..a]);
    push_quoted(&mut out, &p.table.db);
    out.push('.');
    push_quoted(&mut out, &target.physical_table);
    if p.keep_alias && p.alias.is_none() {
        out.push_str(" AS ");
        push_quoted(&mut out, &p.table.table);
    }
    out.push_str(&sql[b..]);
    Some(Plan::Targets {
        kind: p.kind,
        parts: vec![(target, out)],
    })
}

/// `` `name` `` with backquotes doubled, as `physical_name` writes it.
fn push_quoted(out: &mut String, name: &str) {
    out.push('`');
    for c in name.chars() {
        if c == '`' {
            out.push('`');
        }
        out.push(c);
    }
    out.push('`');
}
