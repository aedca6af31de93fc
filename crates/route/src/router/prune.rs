//! Which partitions a WHERE clause can match.
//!
//! A condition is taken apart at its top-level `OR`s (union of the parts'
//! partitions) and `AND`s (intersection), through parentheses. The atoms
//! that limit the key are `key = lit`, `key <=> lit`, `key IN (lits)`,
//! `key IS NULL`, and for order-keeping functions (NONE, DIV, DATE with an
//! ordered pattern, PREFIX) the ranges `<`, `<=`, `>`, `>=` and
//! `BETWEEN lit AND lit`: ranges AND-ed together are intersected first, then
//! mapped to the partition values they span. The default partition is
//! included unless every partition value in the range is in the dictionary.
//! Anything else limits nothing, which is always correct: the answer is a
//! superset of the partitions that hold matching rows. A literal a server
//! may convert (with a warning) for every row it compares, in BETWEEN or
//! in an IN list mixing strings and numbers, prunes nothing at all, so
//! every row one server compares is compared
//! (`Pruner::is_converted_per_row`).
//!
//! The walk keeps its own stack (no recursion, so no nesting depth can
//! overflow a thread's stack) and takes the condition apart level by level
//! with `Levels`, so its work grows linearly with the condition's length.

use std::collections::BTreeSet;

use hscale_sql::{Token, TokenKind};

use super::levels::Levels;
use super::literal;
use crate::dictionary::{PartitionedTable, Target};
use crate::hashing::HashingFunction;
use crate::known::Known;
use crate::KeyValue;

/// The widest integer range checked value by value for full coverage.
const MAX_COVERAGE_SPAN: i128 = 100_000;

pub(super) type IsKey<'a> = &'a dyn Fn(&[Token]) -> bool;

/// The partitions a WHERE condition can match; `None`: all of them.
pub(super) fn targets(
    sql: &str,
    cond: &[Token],
    is_key: IsKey<'_>,
    table: &PartitionedTable,
    known: &Known<'_>,
) -> Option<BTreeSet<Target>> {
    walk_condition(sql, cond, is_key, table, known).0
}

/// [`targets`], and whether the condition has a literal a server may
/// convert for every row it compares (`Pruner::is_converted_per_row`):
/// the statement then goes to every partition whole, key IN lists too
/// (`in_lists.rs`).
pub(super) fn walk_condition(
    sql: &str,
    cond: &[Token],
    is_key: IsKey<'_>,
    table: &PartitionedTable,
    known: &Known<'_>,
) -> (Option<BTreeSet<Target>>, bool) {
    let p = Pruner {
        sql,
        cond,
        levels: Levels::new(sql, cond),
        is_key,
        table,
        known,
        is_per_row: std::cell::Cell::new(false),
    };
    let atom = p.walk(0, cond.len());
    // Rows a server converts a literal for may be in any partition.
    if p.is_per_row.get() {
        return (None, true);
    }
    let targets = match atom {
        Atom::Targets(t) => Some(t),
        Atom::Range(r) => p.range_targets(&r),
        Atom::All => None,
    };
    (targets, false)
}

/// The partitions of the rows whose key equals one of `values` (stored
/// as the column holds them); `None` when they cannot be told.
fn equal_targets(
    table: &PartitionedTable,
    values: &[KeyValue],
    known: &Known<'_>,
) -> Option<BTreeSet<Target>> {
    // A string key under a collation: `k = 'abc'` compares under the
    // column's collation, so the key's weight names the one partition
    // of every row it matches (string literals only: a number
    // compares as a number, '05' = 5).
    let is_weighed_equality = || {
        table.key_compare.as_ref().is_some_and(|c| {
            values.iter().all(|v| match v {
                KeyValue::Str(s) => c.prunes_equality(s),
                KeyValue::Null => true,
                _ => false,
            })
        })
    };
    if !table.is_key_exact && !is_weighed_equality() {
        return None;
    }
    let mut out = BTreeSet::new();
    for v in values {
        // A value the function cannot take (e.g. 'abc' for MOD): `None`.
        out.insert(table.route(v, known).ok()?);
    }
    Some(out)
}

/// The partition of the rows whose key equals `v` (not NULL), if it can
/// be told (`in_lists.rs`).
pub(super) fn value_target(
    table: &PartitionedTable,
    v: KeyValue,
    known: &Known<'_>,
) -> Option<Target> {
    equal_targets(table, std::slice::from_ref(&v), known)?
        .into_iter()
        .next()
}

/// A partition value, ordered as the function's results order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Pv {
    Int(i128),
    Str(String),
}

#[derive(Debug, Clone, Default)]
struct Range {
    lo: Option<Pv>,
    hi: Option<Pv>,
}

enum Atom {
    Targets(BTreeSet<Target>),
    Range(Range),
    All,
}

struct Pruner<'a> {
    sql: &'a str,
    cond: &'a [Token],
    levels: Levels,
    is_key: IsKey<'a>,
    table: &'a PartitionedTable,
    known: &'a Known<'a>,
    /// An atom converts a literal per row compared
    /// ([`Pruner::is_converted_per_row`]): nothing is pruned.
    is_per_row: std::cell::Cell<bool>,
}

#[derive(Clone, Copy, PartialEq)]
enum Domain {
    Int,
    Str,
}

/// One step of the walk over the token range of a condition.
enum Step {
    /// What the range allows.
    Done(Atom),
    /// The range is an OR (or an AND) of these ranges.
    Or(Vec<(usize, usize)>),
    And(Vec<(usize, usize)>),
}

/// An OR or AND whose parts are being walked: the parts not yet walked and
/// what those walked allow.
enum Frame {
    Or {
        parts: std::vec::IntoIter<(usize, usize)>,
        out: BTreeSet<Target>,
    },
    And {
        parts: std::vec::IntoIter<(usize, usize)>,
        sets: Option<BTreeSet<Target>>,
        range: Option<Range>,
    },
}

impl Pruner<'_> {
    /// What the condition in tokens `a..b` allows: the union of its OR
    /// parts (all partitions as soon as one part allows all), the
    /// intersection of its AND parts, or an atom.
    fn walk(&self, a: usize, b: usize) -> Atom {
        let mut stack: Vec<Frame> = Vec::new();
        let mut part = (a, b);
        loop {
            let mut atom = match self.step(part.0, part.1) {
                Step::Done(atom) => atom,
                Step::Or(parts) => {
                    let mut parts = parts.into_iter();
                    part = parts.next().unwrap_or((a, a));
                    stack.push(Frame::Or {
                        parts,
                        out: BTreeSet::new(),
                    });
                    continue;
                }
                Step::And(parts) => {
                    let mut parts = parts.into_iter();
                    part = parts.next().unwrap_or((a, a));
                    stack.push(Frame::And {
                        parts,
                        sets: None,
                        range: None,
                    });
                    continue;
                }
            };
            // Hand the part's answer up until a frame has another part.
            loop {
                let Some(frame) = stack.last_mut() else {
                    return atom;
                };
                match frame {
                    Frame::Or { parts, out } => {
                        let t = match atom {
                            Atom::Targets(t) => Some(t),
                            Atom::Range(r) => self.range_targets(&r),
                            Atom::All => None,
                        };
                        let Some(t) = t else {
                            stack.pop();
                            atom = Atom::All;
                            continue;
                        };
                        out.extend(t);
                        if let Some(p) = parts.next() {
                            part = p;
                            break;
                        }
                        atom = Atom::Targets(std::mem::take(out));
                    }
                    Frame::And { parts, sets, range } => {
                        match atom {
                            Atom::Targets(t) => *sets = Some(intersect_sets(sets.take(), t)),
                            Atom::Range(r) => *range = Some(intersect(range.take(), r)),
                            Atom::All => {}
                        }
                        if let Some(p) = parts.next() {
                            part = p;
                            break;
                        }
                        let mut all = sets.take();
                        if let Some(r) = range.take() {
                            if let Some(t) = self.range_targets(&r) {
                                all = Some(intersect_sets(all, t));
                            }
                        }
                        atom = all.map_or(Atom::All, Atom::Targets);
                    }
                }
                stack.pop();
            }
        }
    }

    /// Tokens `a..b` without their enclosing parentheses, taken apart at
    /// their own level.
    fn step(&self, mut a: usize, mut b: usize) -> Step {
        let (sql, c) = (self.sql, self.cond);
        while b >= a + 2
            && c[a].is_punct(sql, "(")
            && c[b - 1].is_punct(sql, ")")
            && self.levels.encloses(a, b)
        {
            a += 1;
            b -= 1;
        }
        if a >= b {
            return Step::Done(Atom::All);
        }
        // Constructs whose keywords hide the structure: no pruning.
        if self.levels.top(a, b).any(|i| {
            c[i].is_word(sql, "CASE") || c[i].is_word(sql, "XOR") || c[i].is_punct(sql, "||")
        }) {
            return Step::Done(Atom::All);
        }
        let disjuncts = self.split(a, b, |t| t.is_word(sql, "OR"));
        if disjuncts.len() > 1 {
            return Step::Or(disjuncts);
        }
        let conjuncts = self.split(a, b, |t| t.is_word(sql, "AND") || t.is_punct(sql, "&&"));
        if conjuncts.len() > 1 {
            return Step::And(conjuncts);
        }
        Step::Done(self.atom(&c[a..b]))
    }

    /// `a..b` split at separators of its own level; the `AND` of a
    /// `BETWEEN ... AND` is not one.
    fn split(&self, a: usize, b: usize, is_sep: impl Fn(&Token) -> bool) -> Vec<(usize, usize)> {
        let (sql, c) = (self.sql, self.cond);
        let mut out = Vec::new();
        let mut start = a;
        let mut in_between = false;
        for i in self.levels.top(a, b) {
            let t = &c[i];
            if t.is_word(sql, "BETWEEN") {
                in_between = true;
            } else if in_between && t.is_word(sql, "AND") {
                in_between = false;
            } else if is_sep(t) {
                out.push((start, i));
                start = i + 1;
            }
        }
        out.push((start, b));
        out
    }

    fn atom(&self, c: &[Token]) -> Atom {
        let sql = self.sql;
        let is_key = self.is_key;
        // key IS NULL
        if let [rest @ .., is, null] = c {
            if is.is_word(sql, "IS") && null.is_word(sql, "NULL") && is_key(rest) {
                return Atom::Targets([self.table.default_target()].into());
            }
        }
        // key BETWEEN lit AND lit
        if let Some(b) = c.iter().position(|t| t.is_word(sql, "BETWEEN")) {
            let rest = &c[b + 1..];
            let Some(and) = rest.iter().position(|t| t.is_word(sql, "AND")) else {
                return Atom::All;
            };
            let (lo, hi) = (&rest[..and], &rest[and + 1..]);
            let is_key_between = is_key(&c[..b]);
            if self.is_converted_per_row([lo, hi].into_iter(), false, is_key_between)
                || !is_key_between
            {
                return Atom::All;
            }
            let (Some(lo), Some(hi)) = (self.key(lo), self.key(hi)) else {
                return Atom::All;
            };
            return self.range(Some((lo, true)), Some((hi, true)));
        }
        // key IN (lit, ...)
        if let Some(in_at) = c.iter().position(|t| t.is_word(sql, "IN")) {
            let list = &c[in_at + 1..];
            if list.len() < 3
                || !list[0].is_punct(sql, "(")
                || !list[list.len() - 1].is_punct(sql, ")")
            {
                return Atom::All;
            }
            let items = list[1..list.len() - 1].split(|t| t.is_punct(sql, ","));
            let is_key_list = is_key(&c[..in_at]);
            if self.is_converted_per_row(items.clone(), true, is_key_list) || !is_key_list {
                return Atom::All;
            }
            let mut values = Vec::new();
            for item in items {
                match self.key(item) {
                    Some(v) => values.push(v),
                    None => return Atom::All,
                }
            }
            return self.values(&values);
        }
        // key op lit, lit op key
        let Some(op_at) = c.iter().position(|t| {
            t.kind == TokenKind::Punct
                && matches!(t.text(sql), "=" | "<=>" | "<" | "<=" | ">" | ">=")
        }) else {
            return Atom::All;
        };
        let (l, r) = (&c[..op_at], &c[op_at + 1..]);
        let op = c[op_at].text(sql);
        let (value, op) = if is_key(l) {
            (self.key(r), op)
        } else if is_key(r) {
            let flipped = match op {
                "<" => ">",
                "<=" => ">=",
                ">" => "<",
                ">=" => "<=",
                same => same,
            };
            (self.key(l), flipped)
        } else {
            return Atom::All;
        };
        let Some(v) = value else {
            return Atom::All;
        };
        match op {
            "=" | "<=>" => self.values(&[v]),
            "<" => self.range(None, Some((v, false))),
            "<=" => self.range(None, Some((v, true))),
            ">" => self.range(Some((v, false)), None),
            _ => self.range(Some((v, true)), None),
        }
    }

    /// Whether a server may convert a string literal of `items` (the
    /// operands of BETWEEN, or an IN list: `is_list`) with a warning for
    /// every row it compares: in BETWEEN (per row unless the column is a
    /// BIGINT), or in an IN list that also holds a number (an IN list of
    /// strings only, or a comparison, converts it once), a string that is
    /// not a plain integer (`'5 '`, `'x'`) compared with an integer key
    /// (`is_key`), or one that reads as a number and is not a plain one
    /// (`'5 '`, `'1.5x'`; not a date or time) compared with another
    /// column, whose type the router does not know. One server compares the rows of every
    /// partition, so the statement is not pruned at all (whatever else
    /// its condition says) and its warnings are those of every row (the
    /// executor counts one server's: `exec/conditions/mod.rs`).
    fn is_converted_per_row<'t>(
        &self,
        items: impl Iterator<Item = &'t [Token]> + Clone,
        is_list: bool,
        is_key: bool,
    ) -> bool {
        let sql = self.sql;
        let is_integer = is_key && self.table.is_key_integer;
        let is_digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
        let warns = |v: &str| {
            let unsigned = v.strip_prefix(['-', '+']).unwrap_or(v);
            if is_integer {
                return !is_digits(unsigned);
            }
            let (whole, fraction) = match unsigned.split_once('.') {
                Some((w, f)) => (w, Some(f)),
                None => (unsigned, None),
            };
            let reads_as_number = v
                .trim_start()
                .trim_start_matches(['-', '+'])
                .starts_with(|c: char| c.is_ascii_digit() || c == '.');
            let is_plain = is_digits(whole) && fraction.is_none_or(is_digits);
            // '2024-01-31', '10:30': a date or time, which such a column
            // more likely holds.
            let is_temporal = v.contains(['-', ':', '/']) && !v.trim().starts_with('-');
            reads_as_number && !is_plain && !is_temporal
        };
        // The string's text between its quotes: escapes do not matter to
        // whether it reads as a number (and nothing is allocated).
        let has_warning_string = items.clone().any(|t| match t {
            [x] if x.kind == TokenKind::Str => {
                let q = x.text(sql);
                warns(q.get(1..q.len().saturating_sub(1)).unwrap_or(""))
            }
            _ => false,
        });
        let has_number = items
            .clone()
            .any(|t| t.last().is_some_and(|x| x.kind == TokenKind::Number));
        let is_per_row = has_warning_string && (!is_list || has_number);
        if is_per_row {
            self.is_per_row.set(true);
        }
        is_per_row
    }

    /// A literal as the key's column holds it (`stored_key`): integer keys
    /// compare as numbers ('05' = 5), ENUM keys by member; a literal that
    /// cannot be placed is not pruned on.
    fn key(&self, t: &[Token]) -> Option<KeyValue> {
        self.table.stored_key(literal(self.sql, t)?)
    }

    fn values(&self, values: &[KeyValue]) -> Atom {
        equal_targets(self.table, values, self.known).map_or(Atom::All, Atom::Targets)
    }

    fn domain(&self) -> Option<Domain> {
        let t = self.table;
        if !t.is_key_exact {
            return None;
        }
        match &t.function {
            HashingFunction::None | HashingFunction::Div(_) if t.is_key_integer => {
                Some(Domain::Int)
            }
            HashingFunction::Date(p) if is_ordered_date_pattern(p) => Some(Domain::Str),
            // Strings order by bytes only without a collation (not ENUMs).
            HashingFunction::Prefix(_) if !t.is_key_integer && t.key_enum.is_none() => {
                Some(Domain::Str)
            }
            _ => None,
        }
    }

    fn pv(&self, domain: Domain, v: &KeyValue) -> Option<Pv> {
        let s = self.table.partition_value_of(v, self.known).ok()??;
        match domain {
            Domain::Int => s.parse().ok().map(Pv::Int),
            Domain::Str => Some(Pv::Str(s)),
        }
    }

    /// A key range (bounds with inclusiveness) as a range of partition values.
    fn range(&self, lo: Option<(KeyValue, bool)>, hi: Option<(KeyValue, bool)>) -> Atom {
        let Some(domain) = self.domain() else {
            return Atom::All;
        };
        // Integer keys: exclusive bounds become inclusive ones.
        let tighten = |b: Option<(KeyValue, bool)>, step: i128| match b {
            Some((KeyValue::Int(i), false)) => Some((KeyValue::Int(i + step), true)),
            other => other,
        };
        let (lo, hi) = if self.table.is_key_integer {
            (tighten(lo, 1), tighten(hi, -1))
        } else {
            (lo, hi)
        };
        let mut r = Range::default();
        for (bound, slot) in [(lo, &mut r.lo), (hi, &mut r.hi)] {
            if let Some((v, _)) = bound {
                if v == KeyValue::Null {
                    // A comparison with NULL matches no row.
                    return Atom::Targets(BTreeSet::new());
                }
                match self.pv(domain, &v) {
                    Some(pv) => *slot = Some(pv),
                    None => return Atom::All,
                }
            }
        }
        Atom::Range(r)
    }

    /// The partitions whose values lie in `r`, plus the default partition
    /// unless the dictionary covers every value of `r`.
    fn range_targets(&self, r: &Range) -> Option<BTreeSet<Target>> {
        let domain = self.domain()?;
        let table = self.table;
        let mut out = BTreeSet::new();
        let mut seen_ints = BTreeSet::new();
        if let (Some(lo), Some(hi)) = (&r.lo, &r.hi) {
            if lo > hi {
                return Some(out);
            }
        }
        for value in table.values.keys() {
            let pv = match domain {
                Domain::Int => match value.parse::<i128>() {
                    Ok(i) => Pv::Int(i),
                    Err(_) => continue,
                },
                Domain::Str => Pv::Str(value.clone()),
            };
            let above = r.lo.as_ref().is_none_or(|lo| &pv >= lo);
            let below = r.hi.as_ref().is_none_or(|hi| &pv <= hi);
            if above && below {
                if let Pv::Int(i) = pv {
                    seen_ints.insert(i);
                }
                out.insert(table.target_of_value(Some(value)));
            }
        }
        let covered = match (&r.lo, &r.hi) {
            (Some(Pv::Int(lo)), Some(Pv::Int(hi))) => {
                hi - lo < MAX_COVERAGE_SPAN && seen_ints.len() as i128 == hi - lo + 1
            }
            _ => false,
        };
        if !covered {
            out.insert(table.default_target());
        }
        Some(out)
    }
}

fn intersect_sets(a: Option<BTreeSet<Target>>, b: BTreeSet<Target>) -> BTreeSet<Target> {
    match a {
        None => b,
        Some(prev) => prev.intersection(&b).cloned().collect(),
    }
}

fn intersect(a: Option<Range>, b: Range) -> Range {
    let Some(a) = a else { return b };
    Range {
        lo: match (a.lo, b.lo) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        },
        hi: match (a.hi, b.hi) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        },
    }
}

/// A DATE pattern whose results sort as the dates do: `%Y` first, then
/// optionally `%m`, `%d`, `%H` in that order, with fixed text between.
fn is_ordered_date_pattern(p: &str) -> bool {
    let specs: Vec<char> = p
        .split('%')
        .skip(1)
        .filter_map(|s| s.chars().next())
        .collect();
    let order = ['Y', 'm', 'd', 'H'];
    !specs.is_empty() && specs.len() <= order.len() && specs.iter().zip(order).all(|(a, b)| *a == b)
}
