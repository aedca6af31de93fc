//! The conditions (warnings, notes, errors) of the statement running,
//! gathered from every connection it ran on ([`Gathered`]). One server
//! lists every condition of a statement in SHOW WARNINGS; through hscale
//! a statement may run on several connections, each of which knows only
//! its own, and gives them back to the pool. So when a part's terminator
//! (OK or EOF) counts conditions, its list is read on its connection
//! before that connection is given back ([`Bindings::gather`]): one more
//! round trip, only for a part that reported some. The session keeps the
//! statement's list ([`list::Conditions`], `list.rs`) and answers SHOW
//! WARNINGS, SHOW ERRORS and the counts from it.
//!
//! A condition one server raises once per statement (the conversion of a
//! literal it compares with a column, [`Gathered::settle`]) is raised by
//! every part: its repeated listings are dropped before the statement's
//! terminator is written, so the warning count the client gets in the
//! EOF or OK that hscale writes over several parts, `SHOW WARNINGS` and
//! `@@warning_count` all say what one server would.
//!
//! A conversion of a literal in BETWEEN or in an IN list that mixes
//! strings and numbers is raised once per statement or once per row
//! compared, by the column's type, which hscale does not know: the
//! server tells ([`Bindings::measure`]: EXPLAIN of a part's statement
//! raises the once-per-statement ones and no per-row one), and
//! [`Gathered::settle`] keeps that share once and every part's rows'.

pub mod list;
mod settle;

use settle::names;
pub use settle::{execution_constants, execution_text, text_constants};

use super::bindings::Bindings;
use crate::backend::PooledConn;

/// One condition: its Level, Code and Message as SHOW WARNINGS lists it.
pub type Condition = [Vec<u8>; 3];

/// What the statement running raised, on every connection it ran on.
#[derive(Debug, Clone, Default)]
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
    /// What a server raises for the statement of its first part before
    /// reading a row ([`Bindings::measure`]), when it was asked.
    pub measured: Option<Measured>,
    /// For an INSERT split over several parts: each part's rows' numbers
    /// in the statement (`hscale_route::router::insert_part_rows`).
    pub part_rows: Option<Vec<Vec<u32>>>,
    /// How "at row N" of the part being read becomes the statement's row.
    pub row_map: RowMap,
    /// A part's list was renumbered ([`RowMap`]): the list is put in the
    /// statement's row order before it is cut ([`Gathered::in_row_order`]).
    pub is_renumbered: bool,
}

/// How a part's row numbers ("at row N" in its warnings and errors) become
/// the statement's: one server counts the rows of the whole statement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RowMap {
    /// As the part says (one part, or a read).
    #[default]
    Same,
    /// The part's rows come after this many rows of the parts before it
    /// (an UPDATE or DELETE over several partitions: as if one server
    /// read the partitions one after another).
    After(u64),
    /// The part's row N is the statement's row `rows[N - 1]` (an INSERT's
    /// rows split by partition).
    Rows(Vec<u32>),
}

/// Where a message names its row: the digits of "... at row N" (at its
/// end) or "Row N ..." (at its start, 1261 and 1262).
fn row_digits(message: &[u8]) -> Option<std::ops::Range<usize>> {
    const AT: &[u8] = b" at row ";
    const ROW: &[u8] = b"Row ";
    let digits = |from: usize| {
        message[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    if let Some(at) = message.windows(AT.len()).rposition(|w| w == AT) {
        let at = at + AT.len();
        let n = digits(at);
        if n > 0 && at + n == message.len() {
            return Some(at..at + n);
        }
    }
    if message.starts_with(ROW) {
        let n = digits(ROW.len());
        if n > 0 && message.get(ROW.len() + n) == Some(&b' ') {
            return Some(ROW.len()..ROW.len() + n);
        }
    }
    None
}

/// The row a message names, if any.
fn row_of(message: &[u8]) -> Option<u64> {
    let r = row_digits(message)?;
    std::str::from_utf8(&message[r]).ok()?.parse().ok()
}

impl RowMap {
    /// `message` with the row it names ("at row N", "Row N ...") as the
    /// statement's row, or `None`.
    pub fn renumber(&self, message: &[u8]) -> Option<Vec<u8>> {
        if *self == RowMap::Same {
            return None;
        }
        let at = row_digits(message)?;
        let n: u64 = std::str::from_utf8(&message[at.clone()])
            .ok()?
            .parse()
            .ok()?;
        let row = match self {
            RowMap::Same => return None,
            RowMap::After(before) => before + n,
            RowMap::Rows(rows) => u64::from(*rows.get(usize::try_from(n).ok()?.checked_sub(1)?)?),
        };
        let mut out = message[..at.start].to_vec();
        out.extend_from_slice(row.to_string().as_bytes());
        out.extend_from_slice(&message[at.end..]);
        Some(out)
    }
}

impl Gathered {
    /// After parts whose lists were renumbered: the conditions in the
    /// statement's row order, as one server lists them reading its rows in
    /// order (a condition naming no row stays after the one before it in
    /// its part's list), so that cutting the list at `max_error_count`
    /// keeps the ones one server keeps (each part listed its first ones).
    pub fn in_row_order(&mut self) {
        if !self.is_renumbered || self.rows.len() < 2 {
            return;
        }
        let mut ends = self.part_ends.clone();
        ends.push(self.rows.len());
        let mut keyed = Vec::with_capacity(self.rows.len());
        let mut start = 0;
        let mut rows = std::mem::take(&mut self.rows).into_iter();
        for end in ends {
            let mut last = 0;
            for c in rows.by_ref().take(end.saturating_sub(start)) {
                last = row_of(&c[2]).unwrap_or(last);
                keyed.push((last, c));
            }
            start = start.max(end);
        }
        keyed.extend(rows.map(|c| (u64::MAX, c)));
        keyed.sort_by_key(|(k, _)| *k);
        self.rows = keyed.into_iter().map(|(_, c)| c).collect();
    }
}

/// The conditions `EXPLAIN` of a statement's first part raised: those a
/// server raises once for the statement (setting it up, analyzing its
/// index ranges), not per row it reads.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub conditions: Vec<Condition>,
    /// The first part's UNION ALL branches ([`union_branches`]).
    pub branches: u32,
    /// The values of its string literals.
    pub literals: Vec<String>,
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

/// How long [`Bindings::measure`] waits for a pooled connection.
const MEASURE_ACQUIRE: std::time::Duration = std::time::Duration::from_millis(50);

/// Where a statement's gathered conditions stood ([`Gathered::mark`]).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    rows: usize,
    parts: usize,
    count: u64,
    reported: u64,
    cap: Option<usize>,
    missed: bool,
}

impl Gathered {
    /// Where the gathered conditions stand now, for [`Gathered::rewind`].
    pub fn mark(&self) -> Mark {
        Mark {
            rows: self.rows.len(),
            parts: self.part_ends.len(),
            count: self.count,
            reported: self.reported,
            cap: self.cap,
            missed: self.missed,
        }
    }

    /// The first condition of level Warning gathered since `m`: its code
    /// and message.
    pub fn first_warning_since(&self, m: Mark) -> Option<(u16, String)> {
        self.rows
            .get(m.rows..)?
            .iter()
            .find_map(|[level, code, message]| {
                (level.as_slice() == b"Warning").then(|| {
                    let code = std::str::from_utf8(code).ok()?.parse().ok()?;
                    Some((code, String::from_utf8_lossy(message).into_owned()))
                })?
            })
    }

    /// The message of the first condition of level Warning with `code`
    /// gathered since `m`.
    pub fn warning_since(&self, m: Mark, code: u16) -> Option<String> {
        let code = code.to_string();
        self.rows
            .get(m.rows..)?
            .iter()
            .find(|[level, c, _]| level.as_slice() == b"Warning" && c.as_slice() == code.as_bytes())
            .map(|[_, _, message]| String::from_utf8_lossy(message).into_owned())
    }

    /// Whether parts since `m` counted more warnings than they listed
    /// (`max_error_count` below their count, or a list not read).
    pub fn is_unlisted_since(&self, m: Mark) -> bool {
        let listed = self.rows.len().saturating_sub(m.rows) as u64;
        self.missed || self.count.saturating_sub(m.count) > listed
    }

    /// Forget what was gathered since `m`: the parts of an attempt given
    /// up before anything reached the client (a merge that falls back to
    /// another plan), whose conditions one server never raises.
    pub fn rewind(&mut self, m: Mark) {
        self.rows.truncate(m.rows);
        self.part_ends.truncate(m.parts);
        self.part_branches.truncate(m.parts);
        self.count = m.count;
        self.reported = m.reported;
        self.cap = m.cap;
        self.missed = m.missed;
    }
}

/// How many partitions' fragments `target`'s statement joins with UNION
/// ALL (the router's merges give one backend's partitions one statement,
/// naming them all in `physical_table`, comma-separated).
pub fn union_branches(target: &hscale_route::dictionary::Target) -> u32 {
    target.physical_table.matches(", ").count() as u32 + 1
}

impl Bindings {
    /// Before the terminator of a statement that ran over several parts,
    /// several of which listed conversion warnings naming a string
    /// literal of `sql` (the first part's statement, on `target`) that
    /// [`Gathered::settle`] cannot tell raised once per statement from
    /// once per row: EXPLAIN `sql` on a pooled connection of the same
    /// backend (synced to the session; never a transaction's branch) and
    /// keep the conditions it raised ([`Measured`]). One more round trip,
    /// only then; nothing is measured when it fails (a part may have
    /// measured already, [`Bindings::measure_part`]).
    pub async fn measure(
        &mut self,
        target: &hscale_route::dictionary::Target,
        sql: &str,
        gathered: &mut Gathered,
    ) {
        if !gathered.is_spread() {
            return;
        }
        let parts = gathered.whole_parts();
        let Some(literals) = self.unsure(sql, &parts, gathered) else {
            return;
        };
        let pool = self.ctx.pool_as(self.worker, target.backend, self.identity);
        // Not worth a wait: a session holding its pool's last connections
        // (a transaction's branches) would wait the acquire timeout.
        let get = pool.get_as(self.tenant.claim(), self.is_found_rows);
        let Ok(Ok(mut conn)) = tokio::time::timeout(MEASURE_ACQUIRE, get).await else {
            return;
        };
        // The session's variables and database only: a deferred BEGIN
        // waits for the statement that needs it.
        let begin = self.pending_begin.take();
        let synced = self.sync(&mut conn, false).await;
        self.pending_begin = begin;
        if !matches!(synced, Ok(None)) {
            conn.is_broken = true;
            return;
        }
        self.explain(&mut conn, sql, literals, union_branches(target), gathered)
            .await;
    }

    /// [`Bindings::measure`] on the connection a part's statement `sql`
    /// (joining `branches` partitions' statements) just ran on, once its
    /// list was gathered from `from` on: the statement is EXPLAINed there
    /// when that list names such a literal (the connection may hold
    /// temporary copies of shipped tables no other connection has).
    pub async fn measure_part(
        &mut self,
        conn: &mut PooledConn,
        sql: &str,
        branches: u32,
        from: usize,
        gathered: &mut Gathered,
    ) {
        let part = [(from..gathered.rows.len(), branches)];
        if let Some(literals) = self.unsure(sql, &part, gathered) {
            self.explain(conn, sql, literals, branches, gathered).await;
        }
    }

    /// The values of `sql`'s string literals when the gathered list (of
    /// `parts`) holds a conversion warning naming one that
    /// [`Gathered::settle`] does not know to be raised once per statement,
    /// or one it takes for such that a part lists more than once per
    /// branch, and nothing was measured yet.
    fn unsure(
        &self,
        sql: &str,
        parts: &[(std::ops::Range<usize>, u32)],
        gathered: &Gathered,
    ) -> Option<Vec<String>> {
        let g = gathered;
        if g.missed || g.measured.is_some() {
            return None;
        }
        let from = parts.first().map_or(0, |p| p.0.start);
        let rows = g.rows.get(from..)?;
        let literals = hscale_sql::diagnostics::string_literals(sql);
        if !rows.iter().any(|c| names(c, &literals)) {
            return None;
        }
        let values = text_constants(sql.as_bytes());
        let is_unknown = rows
            .iter()
            .any(|c| names(c, &literals) && !names(c, &values));
        let is_repeated = || g.repeated(parts, &values).iter().any(|c| names(c, &values));
        (is_unknown || is_repeated()).then_some(literals)
    }

    /// EXPLAIN `sql` on `conn` and keep the conditions it raised.
    async fn explain(
        &mut self,
        conn: &mut PooledConn,
        sql: &str,
        literals: Vec<String>,
        branches: u32,
        gathered: &mut Gathered,
    ) {
        if !matches!(conn.query_rows(&format!("EXPLAIN {sql}")).await, Ok(Ok(_))) {
            return;
        }
        if let Ok(Ok(list)) = conn.query_rows("SHOW WARNINGS").await {
            let conditions = list
                .rows
                .into_iter()
                .filter_map(|row| {
                    let mut cells = row.into_iter().map(Option::unwrap_or_default);
                    Some([cells.next()?, cells.next()?, cells.next()?])
                })
                .collect();
            gathered.measured = Some(Measured {
                conditions,
                branches,
                literals,
            });
        }
    }

    /// After a part's terminator counted `warnings` conditions: read its
    /// list on `conn` (synced to the session, so the session's
    /// `max_error_count` bounds it) before the connection is given back.
    /// Costs nothing when `warnings` is 0.
    pub async fn gather(&mut self, conn: &mut PooledConn, warnings: u16, gathered: &mut Gathered) {
        self.gather_branches(conn, warnings, 1, gathered).await;
    }

    /// [`Bindings::gather`] for a part whose statement joins `branches`
    /// partitions' statements with UNION ALL ([`union_branches`]).
    pub async fn gather_branches(
        &mut self,
        conn: &mut PooledConn,
        warnings: u16,
        branches: u32,
        gathered: &mut Gathered,
    ) {
        if warnings == 0 {
            return;
        }
        gathered.count += u64::from(warnings);
        match conn.query_rows("SHOW WARNINGS").await {
            Ok(Ok(list)) if list.columns.len() == 3 => {
                if list.rows.len() < usize::from(warnings) {
                    let cap = gathered.cap.unwrap_or(usize::MAX);
                    gathered.cap = Some(cap.min(list.rows.len()));
                }
                let mut dict = None;
                for row in list.rows {
                    let mut cells = row.into_iter().map(Option::unwrap_or_default);
                    let (Some(level), Some(code), Some(mut message)) =
                        (cells.next(), cells.next(), cells.next())
                    else {
                        continue;
                    };
                    // A partition's table named as the client names it
                    // (1366 names `db`.`table`.`column`), its row as the
                    // statement's.
                    if message.windows(3).any(|w| w == b"`.`") {
                        let d = dict.get_or_insert_with(|| self.ctx.partitioning.dictionary());
                        if let Some(m) = d.user_message(&String::from_utf8_lossy(&message)) {
                            message = m.into_bytes();
                        }
                    }
                    if let Some(m) = gathered.row_map.renumber(&message) {
                        message = m;
                        gathered.is_renumbered = true;
                    }
                    gathered.rows.push([level, code, message]);
                }
                gathered.part_ends.push(gathered.rows.len());
                gathered.part_branches.push(branches);
            }
            _ => gathered.missed = true,
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
    fn a_parts_row_numbers_become_the_statements() {
        let m = b"Out of range value for column 'tk' at row 2";
        assert_eq!(RowMap::Same.renumber(m), None);
        assert_eq!(
            RowMap::After(5).renumber(m).as_deref(),
            Some(&b"Out of range value for column 'tk' at row 7"[..])
        );
        assert_eq!(
            RowMap::Rows(vec![3, 9]).renumber(m).as_deref(),
            Some(&b"Out of range value for column 'tk' at row 9"[..])
        );
        assert_eq!(RowMap::Rows(vec![3]).renumber(m), None);
        assert_eq!(RowMap::After(1).renumber(b"at row 2 of nothing"), None);
    }

    #[test]
    fn rows_named_at_the_start_are_renumbered_too() {
        assert_eq!(
            RowMap::Rows(vec![4, 6]).renumber(b"Row 2 doesn't contain data for all columns"),
            Some(b"Row 6 doesn't contain data for all columns".to_vec())
        );
        assert_eq!(RowMap::After(3).renumber(b"Row 2x"), None);
    }

    #[test]
    fn renumbered_conditions_are_listed_in_row_order() {
        let c = |m: &str| [b"Warning".to_vec(), b"1265".to_vec(), m.as_bytes().to_vec()];
        let mut g = Gathered {
            rows: vec![
                c("Data truncated for column 's' at row 2"),
                c("Duplicate entry '1' for key 'PRIMARY'"),
                c("Data truncated for column 's' at row 5"),
                c("Row 1 doesn't contain data for all columns"),
                c("Data truncated for column 's' at row 4"),
            ],
            part_ends: vec![3, 5],
            is_renumbered: true,
            ..Default::default()
        };
        g.in_row_order();
        let order: Vec<String> = g
            .rows
            .iter()
            .map(|r| String::from_utf8_lossy(&r[2]).into_owned())
            .collect();
        assert_eq!(
            order,
            [
                "Row 1 doesn't contain data for all columns",
                "Data truncated for column 's' at row 2",
                "Duplicate entry '1' for key 'PRIMARY'",
                "Data truncated for column 's' at row 4",
                "Data truncated for column 's' at row 5",
            ]
        );
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

    #[test]
    fn a_compared_literal_converted_per_row_elsewhere_adds_up() {
        // '0 ' compared with a BIGINT column (once: EXPLAIN raises it)
        // and in BETWEEN over a DECIMAL (per row, as a DOUBLE).
        let dbl = |v: &str| {
            let mut c = w(v);
            c[2] = format!("Truncated incorrect DOUBLE value: '{v}'").into_bytes();
            c
        };
        let mut g = Gathered {
            rows: vec![w("0 "), dbl("0 "), dbl("0 "), w("0 "), dbl("0 ")],
            count: 5,
            reported: 5,
            part_ends: vec![3, 5],
            part_branches: vec![1, 1],
            measured: Some(Measured {
                conditions: vec![w("0 ")],
                branches: 1,
                literals: vec!["0 ".into()],
            }),
            ..Default::default()
        };
        assert_eq!(g.settled_count(5, || vec!["0 ".into()]), 4);
        assert_eq!(g.rows, vec![w("0 "), dbl("0 "), dbl("0 "), dbl("0 ")]);
    }

    #[test]
    fn what_explain_raises_counts_once_and_rows_add_up() {
        // Three parts (the second joining two partitions): '7 ' of BETWEEN
        // over a BIGINT is converted as the statement is set up (EXPLAIN
        // raises it), once per branch; '3 ' of a mixed IN list once per
        // row compared (EXPLAIN does not).
        let mut g = Gathered {
            rows: vec![
                w("7 "),
                w("3 "),
                w("3 "),
                w("7 "),
                w("7 "),
                w("3 "),
                w("7 "),
            ],
            count: 7,
            reported: 7,
            part_ends: vec![3, 6, 7],
            part_branches: vec![1, 2, 1],
            measured: Some(Measured {
                conditions: vec![w("7 ")],
                branches: 1,
                literals: vec!["7 ".into(), "3 ".into()],
            }),
            ..Default::default()
        };
        assert_eq!(g.settled_count(7, Vec::new), 4);
        assert_eq!(g.rows, vec![w("7 "), w("3 "), w("3 "), w("3 ")]);
        assert_eq!(g.part_ends, vec![3, 4, 4]);
    }
}
