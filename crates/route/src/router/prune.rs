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
//! superset of the partitions that hold matching rows.

use std::collections::BTreeSet;

use hscale_sql::{Token, TokenKind};

use super::literal;
use crate::dictionary::{PartitionedTable, Target};
use crate::hashing::HashingFunction;
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
) -> Option<BTreeSet<Target>> {
    let p = Pruner { sql, is_key, table };
    p.cond(cond)
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
    is_key: IsKey<'a>,
    table: &'a PartitionedTable,
}

#[derive(Clone, Copy, PartialEq)]
enum Domain {
    Int,
    Str,
}

impl Pruner<'_> {
    fn cond(&self, cond: &[Token]) -> Option<BTreeSet<Target>> {
        match self.expr(cond) {
            Atom::Targets(t) => Some(t),
            Atom::Range(r) => self.range_targets(&r),
            Atom::All => None,
        }
    }

    fn expr(&self, cond: &[Token]) -> Atom {
        let sql = self.sql;
        let cond = strip_parens(sql, cond);
        if cond.is_empty() {
            return Atom::All;
        }
        // Constructs whose keywords hide the structure: no pruning.
        if depth0(sql, cond)
            .any(|t| t.is_word(sql, "CASE") || t.is_word(sql, "XOR") || t.is_punct(sql, "||"))
        {
            return Atom::All;
        }
        let disjuncts = split(sql, cond, |t| t.is_word(sql, "OR"));
        if disjuncts.len() > 1 {
            let mut out = BTreeSet::new();
            for d in disjuncts {
                match self.cond(d) {
                    Some(t) => out.extend(t),
                    None => return Atom::All,
                }
            }
            return Atom::Targets(out);
        }
        let conjuncts = split(sql, cond, |t| {
            t.is_word(sql, "AND") || t.is_punct(sql, "&&")
        });
        if conjuncts.len() > 1 {
            let mut sets: Option<BTreeSet<Target>> = None;
            let mut range: Option<Range> = None;
            for c in conjuncts {
                match self.expr(c) {
                    Atom::Targets(t) => {
                        sets = Some(match sets {
                            None => t,
                            Some(prev) => prev.intersection(&t).cloned().collect(),
                        })
                    }
                    Atom::Range(r) => range = Some(intersect(range, r)),
                    Atom::All => {}
                }
            }
            if let Some(r) = range {
                if let Some(t) = self.range_targets(&r) {
                    sets = Some(match sets {
                        None => t,
                        Some(prev) => prev.intersection(&t).cloned().collect(),
                    });
                }
            }
            return sets.map_or(Atom::All, Atom::Targets);
        }
        self.atom(cond)
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
            if !is_key(&c[..b]) {
                return Atom::All;
            }
            let rest = &c[b + 1..];
            let Some(and) = rest.iter().position(|t| t.is_word(sql, "AND")) else {
                return Atom::All;
            };
            let (Some(lo), Some(hi)) = (self.key(&rest[..and]), self.key(&rest[and + 1..])) else {
                return Atom::All;
            };
            return self.range(Some((lo, true)), Some((hi, true)));
        }
        // key IN (lit, ...)
        if let Some(in_at) = c.iter().position(|t| t.is_word(sql, "IN")) {
            if !is_key(&c[..in_at]) {
                return Atom::All;
            }
            let list = &c[in_at + 1..];
            if list.len() < 3
                || !list[0].is_punct(sql, "(")
                || !list[list.len() - 1].is_punct(sql, ")")
            {
                return Atom::All;
            }
            let mut values = Vec::new();
            for item in list[1..list.len() - 1].split(|t| t.is_punct(sql, ",")) {
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

    /// A literal as the key's column holds it (`stored_key`): integer keys
    /// compare as numbers ('05' = 5), ENUM keys by member; a literal that
    /// cannot be placed is not pruned on.
    fn key(&self, t: &[Token]) -> Option<KeyValue> {
        self.table.stored_key(literal(self.sql, t)?)
    }

    fn values(&self, values: &[KeyValue]) -> Atom {
        if !self.table.is_key_exact {
            return Atom::All;
        }
        let mut out = BTreeSet::new();
        for v in values {
            match self.table.route(v) {
                Ok(t) => {
                    out.insert(t);
                }
                // A value the function cannot take (e.g. 'abc' for MOD).
                Err(_) => return Atom::All,
            }
        }
        Atom::Targets(out)
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
        let s = self.table.function.apply(v).ok()??;
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

/// `( cond )` → `cond`, repeatedly, when the parentheses enclose it all.
fn strip_parens<'t>(sql: &str, mut c: &'t [Token]) -> &'t [Token] {
    while c.len() >= 2 && c[0].is_punct(sql, "(") && c[c.len() - 1].is_punct(sql, ")") {
        let mut depth = 0;
        let closes_at_end = c.iter().enumerate().all(|(i, t)| {
            if t.is_punct(sql, "(") {
                depth += 1;
            } else if t.is_punct(sql, ")") {
                depth -= 1;
            }
            depth > 0 || i == c.len() - 1
        });
        if !closes_at_end {
            break;
        }
        c = &c[1..c.len() - 1];
    }
    c
}

/// The tokens at parenthesis depth 0.
fn depth0<'t>(sql: &'t str, c: &'t [Token]) -> impl Iterator<Item = &'t Token> + 't {
    let mut depth = 0i32;
    c.iter().filter(move |t| {
        if t.is_punct(sql, "(") {
            depth += 1;
            false
        } else if t.is_punct(sql, ")") {
            depth -= 1;
            false
        } else {
            depth == 0
        }
    })
}

/// Split at depth-0 separators; the `AND` of a `BETWEEN ... AND` is not one.
fn split<'t>(sql: &str, c: &'t [Token], is_sep: impl Fn(&Token) -> bool) -> Vec<&'t [Token]> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut in_between = false;
    for (i, t) in c.iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 {
            if t.is_word(sql, "BETWEEN") {
                in_between = true;
            } else if in_between && t.is_word(sql, "AND") {
                in_between = false;
            } else if is_sep(t) {
                out.push(&c[start..i]);
                start = i + 1;
            }
        }
    }
    out.push(&c[start..]);
    out
}
