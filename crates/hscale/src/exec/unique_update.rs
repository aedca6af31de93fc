//! UPDATE of a column with a global unique index (`docs/src/unique-keys.md`;
//! planned by `hscale_route::router::lookups` as a `UniqueWrite` with an
//! `IndexUpdate`), inside the statement scope `exec/unique.rs` opens.
//!
//! ```text
//!  1. SELECT key FROM t WHERE w FOR UPDATE         the keys K of the rows it matches, locked
//!  2. SELECT key, col.. FROM t WHERE key IN (K) FOR UPDATE    every row of those keys, before
//!  3. the UPDATE on its partitions, as it is       the server computes the new values
//!  4. step 2 again                                 the same rows, after
//!  5. per index: the (value, key) pairs that went deleted from the lookup
//!     table, the pairs that came inserted (1062 there: a value another
//!     row holds, named as the key)
//! ```
//!
//! Rows of one key sit in one partition, whose own UNIQUE key decides
//! among them in the server's order. Across partitions the index decides:
//! when a value the statement sets is one it also takes from another row
//! (`a→b` here, `c→a` there), one server's answer depends on the order it
//! updates rows in; step 5 then works key by key in key order (PRIMARY KEY
//! order, a full scan's), deleting each key's old values before inserting
//! its new ones, so a swap (`a→b`, `b→a`) fails as on one server and a
//! chain in key order passes. Otherwise all deletes, then all inserts.

use std::collections::{BTreeMap, BTreeSet};

use hscale_route::dictionary::Lookup;
use hscale_route::router::{self, IndexUpdate, Plan, StatementKind, UniqueWrite};
use hscale_wire::response::{OkInfo, OkPacket};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ProxyError;
use crate::exec::sink::{self, Answer};
use crate::exec::{Effects, Exec};

const WHAT: &str = "an UPDATE of a column with a global unique index";

/// Each key's non-NULL values of one indexed column (literals).
type Pairs = BTreeMap<String, BTreeSet<String>>;

/// A key whose values changed: the key, the values it lost, the values
/// it gained.
type Change<'a> = (&'a String, Vec<&'a String>, Vec<&'a String>);

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Steps 1 to 5 (see the module); `Ok(None)`: an error was written.
    pub(crate) async fn unique_update(
        &mut self,
        w: &UniqueWrite,
        u: &IndexUpdate,
        effects: Effects<'_>,
    ) -> Result<Option<OkPacket>, ProxyError> {
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        let Some(matched) = self.unique_rows(&u.select, max_rows).await? else {
            return Ok(None);
        };
        let keys: BTreeSet<String> = matched
            .iter()
            .filter_map(|r| r.first())
            .filter(|k| k.as_str() != "NULL")
            .cloned()
            .collect();
        let keys: Vec<String> = keys.into_iter().collect();
        let table = self
            .b
            .ctx
            .partitioning
            .dictionary()
            .table(&w.table)
            .cloned()
            .ok_or_else(|| {
                ProxyError::Refused(format!("internal: {} is no longer partitioned", w.table))
            })?;
        let by_keys = |is_locking| router::rows_by_keys_sql(&table, &u.lookups, &keys, is_locking);
        let before = if keys.is_empty() {
            Vec::new()
        } else {
            match self.unique_rows(&by_keys(true), max_rows).await? {
                Some(rows) => rows,
                None => return Ok(None),
            }
        };
        let plan = Plan::Targets {
            kind: StatementKind::Update,
            parts: w.parts.clone(),
        };
        let ok = match sink::run(self.b, self.scratch, "", WHAT, plan, effects, 0).await? {
            Answer::Ok(ok) => ok,
            Answer::Error(err) => {
                self.write_server_error(1, &err).await?;
                return Ok(None);
            }
            Answer::Rows(..) => {
                return Err(ProxyError::Wrong(format!(
                    "internal: the UPDATE of {} answered rows",
                    w.table
                )))
            }
        };
        // Step 1's lock holds the rows it read; a row it could not see
        // (inserted since, under READ COMMITTED) would escape the index.
        if let OkInfo::Matched { matched: n, .. } = ok.info {
            if n != matched.len() as u64 {
                return Err(ProxyError::Refused(format!(
                    "{WHAT} of {}: it matched {n} rows where its locking read found {} (a row written in between); run it again",
                    w.table,
                    matched.len()
                )));
            }
        }
        if keys.is_empty() {
            return Ok(Some(ok));
        }
        let Some(after) = self.unique_rows(&by_keys(false), max_rows).await? else {
            return Ok(None);
        };
        let is_one_part = w.parts.len() == 1;
        for (i, lookup) in u.lookups.iter().enumerate() {
            let (old, new) = (pairs(&before, i + 1), pairs(&after, i + 1));
            if !self
                .update_index(w, lookup, &table.column, (&old, &new), is_one_part)
                .await?
            {
                return Ok(None);
            }
        }
        Ok(Some(ok))
    }

    /// Step 5 for one index; `Ok(false)`: an error was written.
    async fn update_index(
        &mut self,
        w: &UniqueWrite,
        lookup: &Lookup,
        key_column: &str,
        (old, new): (&Pairs, &Pairs),
        is_one_part: bool,
    ) -> Result<bool, ProxyError> {
        let empty = BTreeSet::new();
        let mut changes: Vec<Change<'_>> = Vec::new();
        for key in old.keys().chain(new.keys()).collect::<BTreeSet<_>>() {
            let (o, n) = (
                old.get(key).unwrap_or(&empty),
                new.get(key).unwrap_or(&empty),
            );
            let gone: Vec<&String> = o.difference(n).collect();
            let came: Vec<&String> = n.difference(o).collect();
            if !gone.is_empty() || !came.is_empty() {
                changes.push((key, gone, came));
            }
        }
        changes.sort_by(|a, b| key_order(a.0, b.0));
        let gone_folded: BTreeSet<String> = changes
            .iter()
            .flat_map(|c| c.1.iter().map(|v| folded(v)))
            .collect();
        let moves_within = changes
            .iter()
            .any(|c| c.2.iter().any(|v| gone_folded.contains(&folded(v))));
        let groups: Vec<Vec<Change<'_>>> = if moves_within && !is_one_part {
            changes.into_iter().map(|c| vec![c]).collect()
        } else {
            vec![changes]
        };
        for group in groups {
            let gone: Vec<&String> = group.iter().flat_map(|c| c.1.iter().copied()).collect();
            for chunk in gone.chunks(500) {
                let values: Vec<&str> = chunk.iter().map(|v| v.as_str()).collect();
                let sql = format!(
                    "DELETE FROM {} WHERE {} IN ({})",
                    crate::partition::qualified(&lookup.table.db, &lookup.table.table),
                    crate::partition::quote_ident(&lookup.column),
                    values.join(", ")
                );
                if !self.index_write(w, lookup, &sql).await? {
                    return Ok(false);
                }
            }
            let mut came: Vec<String> = group
                .iter()
                .flat_map(|c| c.2.iter().map(move |v| format!("({v}, {})", c.0)))
                .collect();
            came.sort();
            for chunk in came.chunks(500) {
                let sql = format!(
                    "INSERT INTO {} ({}, {}) VALUES {}",
                    crate::partition::qualified(&lookup.table.db, &lookup.table.table),
                    crate::partition::quote_ident(&lookup.column),
                    crate::partition::quote_ident(key_column),
                    chunk.join(", ")
                );
                if !self.index_write(w, lookup, &sql).await? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Plan and run a write of a lookup table; `Ok(false)`: its error
    /// (a duplicate named as `lookup`'s key) was written.
    pub(super) async fn index_write(
        &mut self,
        w: &UniqueWrite,
        lookup: &Lookup,
        sql: &str,
    ) -> Result<bool, ProxyError> {
        let dict = self.b.ctx.partitioning.dictionary();
        let plan = crate::planning::plan(
            crate::planning::Asker::Session(self.b),
            &dict,
            sql,
            crate::planning::Db::Given(None),
            crate::planning::Form::Plain,
        )
        .await?;
        drop(dict);
        let kept = (self.scratch.generated_id, self.b.state.last_insert_id);
        let answer = sink::run(self.b, self.scratch, sql, WHAT, plan, Effects::default(), 0).await;
        (self.scratch.generated_id, self.b.state.last_insert_id) = kept;
        match answer? {
            Answer::Ok(_) => Ok(true),
            Answer::Error(err) => {
                let err = super::unique::duplicate_of_key(&err, &lookup.key, &w.table.table);
                self.write_error_packet(1, &err).await?;
                Ok(false)
            }
            Answer::Rows(..) => Err(ProxyError::Wrong(format!(
                "internal: a write of the index of {} answered rows",
                w.table
            ))),
        }
    }

    /// A read of the statement's own (planned with the session's default
    /// database, narrowed through an index when it reads by one), as
    /// literals; `Ok(None)`: its error was written.
    pub(super) async fn unique_rows(
        &mut self,
        select: &str,
        max_rows: usize,
    ) -> Result<Option<Vec<Vec<String>>>, ProxyError> {
        let dict = self.b.ctx.partitioning.dictionary();
        let plan = crate::planning::plan(
            crate::planning::Asker::Session(self.b),
            &dict,
            select,
            crate::planning::Db::OfSession,
            crate::planning::Form::Plain,
        )
        .await?;
        drop(dict);
        let plan = match plan {
            Plan::ByLookup(mut l) => {
                if !self.narrow_by_lookup(&mut l).await? {
                    return Ok(None);
                }
                *l.inner
            }
            other => other,
        };
        let effects = Effects {
            is_read_only: true,
            ..Effects::default()
        };
        // Every row the statement matches, whatever sql_select_limit.
        let limited = self
            .b
            .state
            .vars
            .without_select_limit()
            .map(|v| std::mem::replace(&mut self.b.state.vars, std::sync::Arc::new(v)));
        let answer = sink::run(self.b, self.scratch, select, WHAT, plan, effects, max_rows).await;
        if let Some(vars) = limited {
            self.b.state.vars = vars;
        }
        self.literal_rows_or_answer(answer?).await
    }
}

/// Column `at` of each row, by the row's key (column 0); NULLs left out.
fn pairs(rows: &[Vec<String>], at: usize) -> Pairs {
    let mut out = Pairs::new();
    for row in rows {
        if let (Some(k), Some(v)) = (row.first(), row.get(at)) {
            if v != "NULL" {
                out.entry(k.clone()).or_default().insert(v.clone());
            }
        }
    }
    out
}

/// Keys in the order one server updates rows by a full scan of an integer
/// PRIMARY KEY: numbers by value, other literals by text.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<i128>(), b.parse::<i128>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

/// A literal as a case-insensitive, trailing-space-insensitive collation
/// may compare it (ASCII letters folded): two values that may be equal
/// fold alike. Used only to choose the key-by-key order, which is right
/// whatever the collation.
fn folded(literal: &str) -> String {
    if let Some(hex) = literal
        .find(" X'")
        .map(|at| &literal[at + 3..literal.len().saturating_sub(1)])
    {
        let bytes: Vec<u8> = (0..hex.len() / 2)
            .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
            .collect();
        return String::from_utf8_lossy(&bytes)
            .trim_end_matches(' ')
            .to_ascii_lowercase();
    }
    literal
        .trim_end_matches('\'')
        .trim_start_matches('\'')
        .trim_end_matches(' ')
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_may_collate_alike_fold_alike() {
        assert_eq!(folded("'A@x'"), folded("'a@x'"));
        assert_eq!(folded("'a@x  '"), folded("'a@x'"));
        assert_eq!(folded("_utf8mb4 X'41'"), folded("'a'"));
        assert_ne!(folded("'a'"), folded("'b'"));
    }

    #[test]
    fn keys_sort_as_numbers() {
        let mut keys = vec!["10", "9", "100"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(keys, ["9", "10", "100"]);
    }
}
