//! Conditions one server raises once per statement, raised by every part
//! of a statement over several: [`Gathered::settle`] keeps them once
//! (the conversion of a literal the statement compares with a column, by
//! the statement's constants, [`text_constants`] / [`execution_constants`];
//! one only a server's plan tells from a per-row one by what EXPLAIN
//! raised, `Measured`), before the statement's terminator is written.

use super::{Condition, Gathered, Measured};

impl Gathered {
    /// Drop the repeated listings of conditions one server raises once
    /// per statement ([`once_per_statement`]), once the statement's parts
    /// were all gathered and before its terminator is written; `values`
    /// gives the statement's constants (`hscale_sql::diagnostics::
    /// statement_constants`), asked only when several parts listed
    /// conditions. Runs once per statement; returns how many listings it
    /// dropped, which the terminator's warning count leaves out. A part
    /// whose list `max_error_count` cut lists what it raised first, which
    /// is where conversions raised once per statement are (before any
    /// row is read): those it shows are settled, and the hidden ones,
    /// raised per row, stay counted.
    pub fn settle(&mut self, values: impl FnOnce() -> Vec<String>) -> u64 {
        if let Some(n) = self.settled {
            return n;
        }
        let n = if self.is_spread() && !self.missed {
            let values = values();
            let mut n = 0;
            let mut per_row = Vec::new();
            if let Some(m) = self.measured.take() {
                let parts = (&mut self.part_ends, &self.part_branches[..]);
                n += measured_once(&mut self.rows, parts, &m, &values);
                // A conversion of a compared literal is raised at most
                // once per branch (on the first row compared) unless
                // EXPLAIN raises it: listed more often, it is per row.
                per_row = self
                    .repeated(&self.whole_parts(), &values)
                    .into_iter()
                    .filter(|c| names(c, &values) && !m.conditions.contains(c))
                    .collect();
            }
            let parts = (&self.part_ends[..], &self.part_branches[..]);
            n + once_per_statement(&mut self.rows, parts, &values, &per_row)
        } else {
            0
        };
        self.count = self.count.saturating_sub(n);
        self.reported = self.reported.saturating_sub(n);
        self.settled = Some(n);
        n
    }

    /// Each part's listings (where they are in `rows`) and branches.
    pub(super) fn whole_parts(&self) -> Vec<(std::ops::Range<usize>, u32)> {
        let mut from = 0;
        self.part_ends
            .iter()
            .zip(&self.part_branches)
            .map(|(end, b)| {
                let r = from..*end;
                from = *end;
                (r, *b)
            })
            .collect()
    }

    /// The conditions some part of `parts` lists more often per UNION ALL
    /// branch than the statement's constants (`values`, as often as they
    /// stand in it) name their value: more than once per comparison.
    pub(super) fn repeated(
        &self,
        parts: &[(std::ops::Range<usize>, u32)],
        values: &[String],
    ) -> Vec<Condition> {
        let mut out: Vec<Condition> = Vec::new();
        for (range, branches) in parts {
            let Some(rows) = self.rows.get(range.clone()) else {
                continue;
            };
            for (i, c) in rows.iter().enumerate() {
                if out.contains(c) || rows[..i].contains(c) {
                    continue;
                }
                let n = rows[i..].iter().filter(|x| *x == c).count();
                let named = values
                    .iter()
                    .filter(|v| names(c, std::slice::from_ref(v)))
                    .count();
                if n > named.max(1) * (*branches).max(1) as usize {
                    out.push(c.clone());
                }
            }
        }
        out
    }

    /// Whether several parts (or UNION ALL branches) listed conditions.
    pub fn is_spread(&self) -> bool {
        self.part_ends.len() > 1 || self.part_branches.iter().any(|b| *b > 1)
    }

    /// A terminator's warning count: the parts' `sum`, less the listings
    /// [`Gathered::settle`] dropped.
    pub fn settled_count(&mut self, sum: u16, values: impl FnOnce() -> Vec<String>) -> u16 {
        let dropped = self.settle(values);
        sum.saturating_sub(u16::try_from(dropped).unwrap_or(u16::MAX))
    }
}

/// The string values of the constants of a text statement `sql`
/// (`statement_constants`; it has no parameters).
pub fn text_constants(sql: &[u8]) -> Vec<String> {
    let Ok(sql) = std::str::from_utf8(sql) else {
        return Vec::new();
    };
    hscale_sql::diagnostics::statement_constants(sql)
        .into_iter()
        .filter_map(|c| match c {
            hscale_sql::diagnostics::Constant::Str(v) => Some(v),
            hscale_sql::diagnostics::Constant::Param(_) => None,
        })
        .collect()
}

/// The string values of the constants of the prepared statement `sql` in
/// one execution: its literals and its string parameters where a literal
/// would count.
pub fn execution_constants(sql: &[u8], e: &crate::exec::prepared::Execution<'_>) -> Vec<String> {
    use hscale_sql::diagnostics::Constant;
    let Ok(text) = std::str::from_utf8(sql) else {
        return Vec::new();
    };
    let constants = hscale_sql::diagnostics::statement_constants(text);
    let count = constants
        .iter()
        .filter_map(|c| match c {
            Constant::Param(n) => Some(n + 1),
            Constant::Str(_) => None,
        })
        .max()
        .unwrap_or(0);
    let params = if count > 0 {
        crate::exec::interpolate::literals(e.exec, e.types, count, e.long_data).unwrap_or_default()
    } else {
        Vec::new()
    };
    constants
        .into_iter()
        .filter_map(|c| match c {
            Constant::Str(v) => Some(v),
            Constant::Param(n) => match params.get(n) {
                Some(crate::exec::interpolate::Literal::Str(b)) => {
                    Some(String::from_utf8_lossy(b).into_owned())
                }
                _ => None,
            },
        })
        .collect()
}

/// The prepared statement `sql` as the text of one execution `e`, its
/// parameters written in as literals (`interpolate.rs`), for EXPLAIN
/// ([`Bindings::measure`]); `None` when that cannot be done without
/// knowing the session's sql_mode (a string holding a backslash).
pub fn execution_text(sql: &[u8], e: &crate::exec::prepared::Execution<'_>) -> Option<String> {
    let text = std::str::from_utf8(sql).ok()?;
    let at: Vec<u32> = hscale_sql::tokenize(text)
        .ok()?
        .iter()
        .filter(|t| t.kind == hscale_sql::TokenKind::Placeholder)
        .map(|t| t.start)
        .collect();
    let literals =
        crate::exec::interpolate::literals(e.exec, e.types, at.len(), e.long_data).ok()?;
    if literals.iter().any(|l| l.needs_mode()) {
        return None;
    }
    crate::exec::interpolate::render(sql, &at, &literals, false).ok()
}

/// Conditions one server raises per statement, raised by each part it
/// ran on: a conversion warning (1292) naming a value of `values` (the
/// statement's constants, `hscale_sql::diagnostics::statement_constants`:
/// a string literal compared with a column, in an IN list of strings, or
/// a whole condition), which a server converts when it sets the statement
/// up (once, or once more where it analyzes an index range with it, or a
/// fixed number of times for a constant condition; measured on MariaDB
/// 10.11), never per row. Such a message is kept as often as the part
/// that lists it most often per branch lists it (a part that joins the
/// fragments of several partitions with UNION ALL, `branches`, sets the
/// statement up once per branch): as one server's holding all the rows
/// would; its other listings are dropped, other messages left.
/// `part_ends`: where each part's list ends in `rows`; `branches`: each
/// part's branches (1 when absent); `per_row`: messages naming such a
/// value that are raised per row all the same (a part lists them more
/// than once per branch and EXPLAIN does not raise them: another
/// comparison with the same literal), left. Returns how many were
/// dropped.
pub(super) fn once_per_statement(
    rows: &mut Vec<Condition>,
    (part_ends, branches): (&[usize], &[u32]),
    values: &[String],
    per_row: &[Condition],
) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let is_candidate = |c: &Condition| names(c, values) && !per_row.contains(c);
    let part_of = |i: usize| part_ends.iter().position(|end| i < *end).unwrap_or(0);
    let mut dropped = vec![false; rows.len()];
    for (i, c) in rows.iter().enumerate() {
        // Each message once, from its first listing.
        if !is_candidate(c) || rows[..i].contains(c) {
            continue;
        }
        let same: Vec<usize> = (i..rows.len()).filter(|j| rows[*j] == *c).collect();
        // How often each part that lists it does, per branch.
        let mut per_part: Vec<(usize, usize)> = Vec::new();
        for j in &same {
            match per_part.last_mut() {
                Some((p, n)) if *p == part_of(*j) => *n += 1,
                _ => per_part.push((part_of(*j), 1)),
            }
        }
        let per_branch = |(p, n): &(usize, usize)| {
            let b = branches.get(*p).map_or(1, |b| (*b).max(1) as usize);
            n.div_ceil(b)
        };
        // The first part that lists it most often, as often as that.
        let (kept, times) = per_part
            .iter()
            .rev()
            .map(|x| (x.0, per_branch(x)))
            .max_by_key(|(_, n)| *n)
            .unwrap_or((0, 1));
        let mut left = times;
        for j in &same {
            if part_of(*j) == kept && left > 0 {
                left -= 1;
            } else {
                dropped[*j] = true;
            }
        }
    }
    let mut at = 0;
    rows.retain(|_| {
        at += 1;
        !dropped[at - 1]
    });
    dropped.iter().filter(|d| **d).count() as u64
}

/// Whether condition `c` is a conversion warning naming one of `values`.
pub(super) fn names(c: &Condition, values: &[String]) -> bool {
    c[1] == b"1292"
        && values.iter().any(|l| {
            let tail = format!("value: '{l}'");
            c[2].ends_with(tail.as_bytes())
        })
}

/// Conversion warnings naming a string literal of the statement that
/// [`once_per_statement`] does not know (a literal in BETWEEN or in an IN
/// list that mixes strings and numbers, `values` being the ones it
/// knows): a server raises such a warning either once for the statement
/// (converting the literal when it sets the statement up or analyzes an
/// index range with it: `EXPLAIN` raises it too, `m`) or once per row it
/// compares (`EXPLAIN` does not). Each part raised the statement's share
/// once per UNION ALL branch, plus its rows' share: the statement's share
/// is kept once, as one server raises it, and every part's rows' share.
/// `part_ends` are brought in line with what is left. Returns how many
/// listings were dropped.
pub(super) fn measured_once(
    rows: &mut Vec<Condition>,
    (part_ends, branches): (&mut Vec<usize>, &[u32]),
    m: &Measured,
    values: &[String],
) -> u64 {
    let part_of = |i: usize| part_ends.iter().position(|end| i < *end).unwrap_or(0);
    let mut dropped = vec![false; rows.len()];
    for (i, c) in rows.iter().enumerate() {
        if !names(c, &m.literals) || names(c, values) || rows[..i].contains(c) {
            continue;
        }
        let explained = m.conditions.iter().filter(|x| *x == c).count();
        if explained == 0 {
            continue; // raised per row: every listing counts
        }
        let once = explained.div_ceil(m.branches.max(1) as usize);
        // Listings so far per part; the first part listing it keeps the
        // statement's share.
        let mut listed = vec![0usize; part_ends.len().max(1)];
        let first = part_of(i);
        for j in (i..rows.len()).filter(|j| rows[*j] == *c) {
            let p = part_of(j);
            listed[p] += 1;
            let share = once * branches.get(p).map_or(1, |b| (*b).max(1) as usize);
            let is_kept = p == first && listed[p] <= once;
            dropped[j] = listed[p] <= share && !is_kept;
        }
    }
    let mut at = 0;
    rows.retain(|_| {
        at += 1;
        !dropped[at - 1]
    });
    for end in part_ends.iter_mut() {
        *end -= dropped[..*end].iter().filter(|d| **d).count();
    }
    dropped.iter().filter(|d| **d).count() as u64
}
