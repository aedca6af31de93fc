//! The session's diagnostics area: the conditions (warnings, notes,
//! errors) of its last statement that raised any, as one server holding
//! all the data would list them. A statement through hscale may run on
//! several backend connections (a merge, a scatter, a write over several
//! partitions) or on a pooled one another statement uses next, so each
//! connection's own list is not the session's: the executor reads the
//! list of every part that counted conditions (`conditions/mod.rs`) and
//! the session keeps the statement's whole list ([`Conditions`]). From it hscale
//! answers `SHOW WARNINGS [LIMIT]`, `SHOW ERRORS [LIMIT]`, `SHOW COUNT(*)
//! WARNINGS | ERRORS` and `@@warning_count` / `@@error_count` (text and
//! prepared: an execution of a prepared SHOW WARNINGS is answered from
//! the list in the binary format, `session/commands.rs`).
//!
//! MariaDB's rules, kept here (`hscale_sql::diagnostics`): a statement that
//! raises conditions replaces the list with its own (at most
//! `max_error_count` of them; the counts go on); one that uses tables and
//! raises none empties it; one without tables that raises none (`SELECT
//! 1`, `SET`, `USE`, `BEGIN`, the reads above) leaves it. Across parts the
//! order of the list is the parts' order; one server's would be its scan
//! order, which is not defined either.
//!
//! When hscale cannot know the list (a part's list could not be read,
//! several statements in one query ran on one connection, an error whose
//! text it did not see), it stops answering until the next statement that
//! uses tables, and the backend connection answers as before.

use hscale_route::BackendId;
use hscale_sql::diagnostics::{uses_tables, ConditionRead};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{Condition, Gathered};
use crate::error::ProxyError;
use crate::exec::rows::TextRows;
use crate::exec::Exec;

/// The server's default `max_error_count`.
const MAX_ERROR_COUNT: usize = 64;

/// The session's list of conditions; `None`: the backend connection
/// answers (hscale does not know the list).
#[derive(Debug)]
pub struct Conditions {
    own: Option<Own>,
}

impl Default for Conditions {
    /// A new session's list is empty.
    fn default() -> Self {
        Conditions {
            own: Some(Own::default()),
        }
    }
}

#[derive(Debug, Default, Clone)]
struct Own {
    rows: Vec<Condition>,
    /// `@@warning_count`: every condition counted, listed or not.
    warnings: u64,
    /// `@@error_count`.
    errors: u64,
}

fn is_error(c: &Condition) -> bool {
    c[0].eq_ignore_ascii_case(b"Error")
}

impl Conditions {
    /// After a statement: what it raised (`g`), the error code the client
    /// got (0: none), the session's `max_error_count` if it set one, and
    /// the statement's text (read only when several parts listed
    /// conditions and the statement did not settle its list,
    /// `Gathered::settle`).
    pub fn record(
        &mut self,
        mut g: Gathered,
        error: u16,
        max_error_count: impl FnOnce() -> Option<usize>,
        sql: &[u8],
    ) {
        if g.missed || g.reported > g.count {
            self.own = None;
            return;
        }
        // Most statements over several parts settled their list before
        // writing their terminator; the others' text is the client's.
        g.settle(|| crate::exec::conditions::text_constants(sql));
        g.in_row_order();
        let (mut rows, mut count) = (g.rows, g.count);
        if error != 0 {
            match g.error {
                Some((code, message)) if code == error => {
                    let code = code.to_string().into_bytes();
                    if !rows.iter().any(|c| is_error(c) && c[1] == code) {
                        rows.push([b"Error".to_vec(), code, message.into_bytes()]);
                        count += 1;
                    }
                }
                _ => {
                    self.own = None;
                    return;
                }
            }
        }
        if count > 0 || !rows.is_empty() {
            rows.truncate(g.cap.or_else(max_error_count).unwrap_or(MAX_ERROR_COUNT));
            let errors = rows.iter().filter(|c| is_error(c)).count() as u64;
            self.own = Some(Own {
                warnings: count.max(rows.len() as u64),
                errors,
                rows,
            });
            return;
        }
        let is_empty = self
            .own
            .as_ref()
            .is_some_and(|o| o.rows.is_empty() && o.warnings == 0);
        if !is_empty && g.uses_tables.unwrap_or(true) {
            self.own = Some(Own::default());
        }
    }

    /// The counts `@@warning_count` and `@@error_count` read, when hscale
    /// knows them.
    pub fn counts(&self) -> Option<(u64, u64)> {
        self.own.as_ref().map(|o| (o.warnings, o.errors))
    }
}

/// `sql` with `@@warning_count` and `@@error_count` read from the session's
/// list (`counts`); `None` when it reads neither. A statement that uses
/// tables starts with an empty list, so it reads 0. The value keeps the
/// variables' column type (BIGINT UNSIGNED, nullable): a bitwise OR with
/// the variable itself times nothing.
pub fn replace_counts(sql: &str, (warnings, errors): (u64, u64)) -> Option<String> {
    if !hscale_sql::mentions::contains_ci(sql.as_bytes(), b"_COUNT") {
        return None;
    }
    let (warnings, errors) = if uses_tables(sql) {
        (0, 0)
    } else {
        (warnings, errors)
    };
    let mut out: Option<String> = None;
    for (name, n) in [("warning_count", warnings), ("error_count", errors)] {
        let current = out.as_deref().unwrap_or(sql);
        let expr = format!("(CAST({n} AS UNSIGNED) | @@session.{name} & 0)");
        if let Some(s) = hscale_sql::rewrite::replace_sysvar_with(current, name, &expr) {
            out = Some(s);
        }
    }
    out
}

/// `SHOW COUNT(*) WARNINGS | ERRORS` as the SELECT the server runs for it.
pub fn count_sql(is_errors: bool, (warnings, errors): (u64, u64)) -> String {
    let (name, n) = if is_errors {
        ("error_count", errors)
    } else {
        ("warning_count", warnings)
    };
    format!("SELECT (CAST({n} AS UNSIGNED) | @@session.{name} & 0) AS `@@session.{name}`")
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Answer `SHOW WARNINGS` / `SHOW ERRORS` from the session's list, in
    /// the binary format when `is_binary` (a prepared one's execution).
    /// `Ok(false)`: hscale does not know the list; the backend answers.
    pub async fn answer_conditions(
        &mut self,
        list: &Conditions,
        read: ConditionRead,
        is_binary: bool,
    ) -> Result<bool, ProxyError> {
        let ConditionRead::List {
            is_errors,
            offset,
            limit,
        } = read
        else {
            return Ok(false);
        };
        let Some(own) = list.own.as_ref() else {
            return Ok(false);
        };
        let rows: TextRows = own
            .rows
            .iter()
            .filter(|c| !is_errors || is_error(c))
            .skip(usize::try_from(offset).unwrap_or(usize::MAX))
            .take(limit.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)))
            .map(|c| c.iter().cloned().map(Some).collect())
            .collect();
        // The column definitions exactly as the server sends them to this
        // session (its character set): the same statement listing nothing.
        let backend = self
            .b
            .pinned
            .as_ref()
            .map_or(BackendId::MAIN, |c| c.pool().backend_id);
        let which = if is_errors { "ERRORS" } else { "WARNINGS" };
        let q = format!("SHOW {which} LIMIT 0");
        let defs = match self
            .b
            .ask(backend, async |conn| conn.query_defs(&q).await)
            .await?
        {
            Ok(d) => d,
            Err(err) => {
                self.write_error_packet(1, &err).await?;
                return Ok(true);
            }
        };
        self.write_result(&defs, &rows, is_binary).await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warning(n: u8) -> Condition {
        [b"Warning".to_vec(), b"1292".to_vec(), vec![b'a' + n]]
    }

    /// Nothing raised by a statement that uses tables or not.
    fn used(uses_tables: bool) -> Gathered {
        Gathered {
            uses_tables: Some(uses_tables),
            ..Default::default()
        }
    }

    #[test]
    fn a_literals_conversion_counts_once_a_rows_per_row() {
        let w = |v: &str| -> Condition {
            [
                b"Warning".to_vec(),
                b"1292".to_vec(),
                format!("Truncated incorrect DECIMAL value: '{v}'").into_bytes(),
            ]
        };
        // Four parts each converted `k = '1x'` once: one server's once.
        let mut c = Conditions::default();
        let g = Gathered {
            rows: vec![w("1x"), w("1x"), w("1x"), w("1x")],
            count: 4,
            reported: 4,
            part_ends: vec![1, 2, 3, 4],
            ..Default::default()
        };
        c.record(g, 0, || None, b"SELECT id FROM t WHERE k = '1x'");
        assert_eq!(c.counts(), Some((1, 0)));
        // Parts whose plans used it unequally often: the most.
        let g = Gathered {
            rows: vec![w("1x"), w("1x"), w("1x")],
            count: 3,
            reported: 3,
            part_ends: vec![1, 3],
            ..Default::default()
        };
        c.record(g, 0, || None, b"SELECT id FROM t WHERE k > '1x'");
        assert_eq!(c.counts(), Some((2, 0)));
        // Twice in each part (a range analyzed, then compared): twice.
        let g = Gathered {
            rows: vec![w("4z"), w("4z"), w("4z"), w("4z")],
            count: 4,
            reported: 4,
            part_ends: vec![2, 4],
            ..Default::default()
        };
        c.record(g, 0, || None, b"SELECT id FROM t WHERE id >= '4z'");
        assert_eq!(c.counts(), Some((2, 0)));
        // A literal not compared with a column: per row.
        let g = Gathered {
            rows: vec![w("x"), w("x")],
            count: 2,
            reported: 2,
            part_ends: vec![1, 2],
            ..Default::default()
        };
        c.record(g, 0, || None, b"SELECT CAST('x' AS DECIMAL) FROM t");
        assert_eq!(c.counts(), Some((2, 0)));
    }

    #[test]
    fn a_statement_replaces_empties_or_leaves_the_list() {
        let mut c = Conditions::default();
        let g = Gathered {
            rows: vec![warning(0), warning(1)],
            count: 2,
            reported: 2,
            ..Default::default()
        };
        c.record(g, 0, || None, b"SELECT CAST(b AS INT) FROM t");
        assert_eq!(c.counts(), Some((2, 0)));
        c.record(used(false), 0, || None, b"SELECT 1");
        assert_eq!(c.counts(), Some((2, 0)));
        c.record(used(false), 0, || None, b"SHOW WARNINGS");
        assert_eq!(c.counts(), Some((2, 0)));
        c.record(used(true), 0, || None, b"SELECT id FROM t");
        assert_eq!(c.counts(), Some((0, 0)));
        let mut g = Gathered::default();
        g.error(1054, "Unknown column");
        c.record(g, 1054, || None, b"SELECT nosuch FROM t");
        assert_eq!(c.counts(), Some((1, 1)));
        // An error whose text hscale did not see: the backend answers.
        c.record(Gathered::default(), 1054, || None, b"SELECT nosuch FROM t");
        assert_eq!(c.counts(), None);
        c.record(used(false), 0, || None, b"SELECT 1");
        assert_eq!(c.counts(), None);
        c.record(Gathered::default(), 0, || None, b"SELECT id FROM t");
        assert_eq!(c.counts(), Some((0, 0)));
        // max_error_count bounds the list, not the count.
        let g = Gathered {
            rows: (0..5).map(warning).collect(),
            count: 9,
            reported: 9,
            cap: Some(3),
            ..Default::default()
        };
        c.record(g, 0, || None, b"SELECT CAST(b AS INT) FROM t");
        assert_eq!(c.counts(), Some((9, 0)));
        assert_eq!(c.own.as_ref().map(|o| o.rows.len()), Some(3));
    }

    #[test]
    fn counts_keep_their_column_names() {
        assert_eq!(
            replace_counts("SELECT @@warning_count, @@session.error_count", (3, 1)).as_deref(),
            Some(
                "SELECT (CAST(3 AS UNSIGNED) | @@session.warning_count & 0) AS `@@warning_count`, \
                 (CAST(1 AS UNSIGNED) | @@session.error_count & 0) AS `@@session.error_count`"
            )
        );
        assert_eq!(
            replace_counts("SELECT @@warning_count FROM t", (3, 1))
                .as_deref()
                .map(|s| s.contains("CAST(0 ")),
            Some(true)
        );
        assert_eq!(replace_counts("SELECT 1", (3, 1)), None);
    }
}
