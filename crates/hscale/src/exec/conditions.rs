//! The conditions (warnings, notes, errors) of the statement running,
//! gathered from every connection it ran on ([`Gathered`]). One server
//! lists every condition of a statement in SHOW WARNINGS; through hscale
//! a statement may run on several connections, each of which knows only
//! its own, and gives them back to the pool. So when a part's terminator
//! (OK or EOF) counts conditions, its list is read on its connection
//! before that connection is given back ([`Bindings::gather`]): one more
//! round trip, only for a part that reported some. The session keeps the
//! statement's list (`session/conditions.rs`) and answers SHOW WARNINGS,
//! SHOW ERRORS and the counts from it.
//!
//! A condition one server raises once per statement (the conversion of a
//! literal it compares with a column, [`Gathered::settle`]) is raised by
//! every part: its repeated listings are dropped before the statement's
//! terminator is written, so the warning count the client gets in the
//! EOF or OK that hscale writes over several parts, `SHOW WARNINGS` and
//! `@@warning_count` all say what one server would.

use super::bindings::Bindings;
use crate::backend::PooledConn;

/// One condition: its Level, Code and Message as SHOW WARNINGS lists it.
pub type Condition = [Vec<u8>; 3];

/// What the statement running raised, on every connection it ran on.
#[derive(Debug, Default)]
pub struct Gathered {
    /// Conditions listed by the parts that counted some.
    pub rows: Vec<Condition>,
    /// Conditions the parts' terminators counted.
    pub count: u64,
    /// A part listed fewer conditions than it counted: the session's
    /// `max_error_count`, which bounds the whole statement's list too.
    pub cap: Option<usize>,
    /// Conditions counted by terminators `Bindings::finish` saw (a path
    /// that did not gather them shows here as more than `count`); both
    /// less the listings [`Gathered::settle`] dropped.
    pub reported: u64,
    /// A list could not be read, or the statement ran in a way whose
    /// conditions only its connection knows (several statements in one
    /// query): the session does not answer from its own list.
    pub missed: bool,
    /// The error the client was answered with (code, message), when it
    /// came from a part's error packet or from hscale.
    pub error: Option<(u16, String)>,
    /// Where each part's list ends in `rows`, one entry per part that
    /// listed some.
    pub part_ends: Vec<usize>,
    /// For each entry of `part_ends`, how many partitions' statements
    /// that part ran joined with UNION ALL ([`union_branches`]).
    pub part_branches: Vec<u32>,
    /// Whether the statement uses tables (`hscale_sql::Facts::uses_tables`,
    /// noted when it was analyzed); `None` counts as using them.
    pub uses_tables: Option<bool>,
    /// The listings dropped by [`Gathered::settle`], once it ran.
    pub settled: Option<u64>,
}

impl Gathered {
    /// Record the error the client is answered with (the first wins).
    pub fn error(&mut self, code: u16, message: &str) {
        if self.error.is_none() {
            self.error = Some((code, message.to_string()));
        }
    }

    /// Record the error packet `payload` (from a part's response).
    pub fn error_packet(&mut self, payload: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if let Ok(e) = hscale_wire::response::ErrPacket::decode(payload) {
            self.error = Some((e.code, e.message));
        }
    }
}

impl Gathered {
    /// Drop the repeated listings of conditions one server raises once
    /// per statement ([`once_per_statement`]), once the statement's parts
    /// were all gathered and before its terminator is written; `values`
    /// gives the statement's constants (`hscale_sql::diagnostics::
    /// statement_constants`), asked only when several parts listed
    /// conditions. Runs once per statement; returns how many listings it
    /// dropped, which the terminator's warning count leaves out.
    pub fn settle(&mut self, values: impl FnOnce() -> Vec<String>) -> u64 {
        if let Some(n) = self.settled {
            return n;
        }
        let is_spread = self.part_ends.len() > 1 || self.part_branches.iter().any(|b| *b > 1);
        let n = if is_spread && self.cap.is_none() && !self.missed {
            let parts = (&self.part_ends[..], &self.part_branches[..]);
            once_per_statement(&mut self.rows, parts, &values())
        } else {
            0
        };
        self.count = self.count.saturating_sub(n);
        self.reported = self.reported.saturating_sub(n);
        self.settled = Some(n);
        n
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
pub fn execution_constants(sql: &[u8], e: &super::prepared::Execution<'_>) -> Vec<String> {
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
        super::interpolate::literals(e.exec, e.types, count, e.long_data).unwrap_or_default()
    } else {
        Vec::new()
    };
    constants
        .into_iter()
        .filter_map(|c| match c {
            Constant::Str(v) => Some(v),
            Constant::Param(n) => match params.get(n) {
                Some(super::interpolate::Literal::Str(b)) => {
                    Some(String::from_utf8_lossy(b).into_owned())
                }
                _ => None,
            },
        })
        .collect()
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
/// part's branches (1 when absent). Returns how many were dropped.
fn once_per_statement(
    rows: &mut Vec<Condition>,
    (part_ends, branches): (&[usize], &[u32]),
    values: &[String],
) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let is_candidate = |c: &Condition| {
        c[1] == b"1292"
            && values.iter().any(|l| {
                let tail = format!("value: '{l}'");
                c[2].ends_with(tail.as_bytes())
            })
    };
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

/// How many partitions' fragments `target`'s statement joins with UNION
/// ALL (the router's merges give one backend's partitions one statement,
/// naming them all in `physical_table`, comma-separated).
pub fn union_branches(target: &hscale_route::dictionary::Target) -> u32 {
    target.physical_table.matches(", ").count() as u32 + 1
}

impl Bindings {
    /// After a part's terminator counted `warnings` conditions: read its
    /// list on `conn` (synced to the session, so the session's
    /// `max_error_count` bounds it) before the connection is given back.
    /// Costs nothing when `warnings` is 0.
    pub async fn gather(&mut self, conn: &mut PooledConn, warnings: u16) {
        self.gather_branches(conn, warnings, 1).await;
    }

    /// [`Bindings::gather`] for a part whose statement joins `branches`
    /// partitions' statements with UNION ALL ([`union_branches`]).
    pub async fn gather_branches(&mut self, conn: &mut PooledConn, warnings: u16, branches: u32) {
        if warnings == 0 {
            return;
        }
        self.gathered.count += u64::from(warnings);
        match conn.query_rows("SHOW WARNINGS").await {
            Ok(Ok(list)) if list.columns.len() == 3 => {
                if list.rows.len() < usize::from(warnings) {
                    let cap = self.gathered.cap.unwrap_or(usize::MAX);
                    self.gathered.cap = Some(cap.min(list.rows.len()));
                }
                for row in list.rows {
                    let mut cells = row.into_iter().map(Option::unwrap_or_default);
                    let (Some(level), Some(code), Some(message)) =
                        (cells.next(), cells.next(), cells.next())
                    else {
                        continue;
                    };
                    self.gathered.rows.push([level, code, message]);
                }
                self.gathered.part_ends.push(self.gathered.rows.len());
                self.gathered.part_branches.push(branches);
            }
            _ => self.gathered.missed = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(v: &str) -> Condition {
        [
            b"Note".to_vec(),
            b"1292".to_vec(),
            format!("Truncated incorrect DECIMAL value: '{v}'").into_bytes(),
        ]
    }

    #[test]
    fn a_constant_counts_once_per_branch_of_the_busiest_part() {
        // Two parts, the first joining two partitions with UNION ALL:
        // each branch converted '5 ' once, and '9 ' per row.
        let mut g = Gathered {
            rows: vec![w("5 "), w("9 "), w("5 "), w("9 "), w("5 "), w("9 ")],
            count: 6,
            reported: 6,
            part_ends: vec![4, 6],
            part_branches: vec![2, 1],
            ..Default::default()
        };
        let values = || vec!["5 ".to_string()];
        assert_eq!(g.settled_count(6, values), 4);
        assert_eq!(g.rows, vec![w("5 "), w("9 "), w("9 "), w("9 ")]);
        // Settled once: the session's record leaves it.
        assert_eq!(g.settle(|| unreachable!()), 2);
    }
}
