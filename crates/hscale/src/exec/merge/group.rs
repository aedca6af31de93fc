//! Aggregate arithmetic (pure): the accumulator of each output of a group
//! (`Acc`), folding a partition's partial value into it (`combine`: COUNT,
//! SUM, MIN, MAX, AVG as SUM and COUNT, BIT_*, GROUP_CONCAT, the values of
//! COUNT(DISTINCT x)) and the client's final value (`finish`); and the
//! grouping form of a value (`group_form`). Sums are exact decimals, as on
//! the server, which sums integers as DECIMAL too: they do not overflow
//! where the server does not.

use std::cmp::Ordering;
use std::collections::HashSet;

use hscale_route::router::{GroupPlan, Output, Val};
use hscale_route::value::{compare, Cmp, Decimal, Kind};
use hscale_wire::resultset::ColumnInfo;

use super::columns::kind_of;
use super::sort::cmp_of;
use super::{bad_value, unordered, Row, Stop};

/// The binary character set: GROUP_CONCAT of binary strings is cut at
/// exactly its length limit.
const BINARY_CHARSET: u16 = 63;

/// The grouping form of a value: equal forms for values the server groups
/// together (weights without trailing spaces under PAD SPACE).
pub(super) fn group_form(out: &mut Vec<u8>, kind: Kind, v: Cmp<'_>) {
    let Some(text) = v.text else {
        out.push(0);
        return;
    };
    let bytes: &[u8] = match kind {
        Kind::Collated { pad_space } => {
            let mut w = v.weight.unwrap_or(text);
            if let (true, Some(space)) = (pad_space, v.space) {
                if !space.is_empty() {
                    while w.len() >= space.len() && w.ends_with(space) {
                        w = &w[..w.len() - space.len()];
                    }
                }
            }
            w
        }
        _ => text,
    };
    out.push(1);
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// An aggregate being combined.
#[derive(Debug, Clone)]
pub(super) enum Acc {
    Key,
    Count(i128),
    Sum(Option<Decimal>),
    Best(Option<Row>),
    Avg(Option<Decimal>, i128),
    Bits(u64),
    Distinct(HashSet<Vec<u8>>),
    /// GROUP_CONCAT so far, and the length limit.
    Concat(Option<Vec<u8>>, usize),
}

pub(super) struct Group {
    /// The first partial row of the group (key values and weights).
    pub(super) first: Row,
    pub(super) accs: Vec<Acc>,
}

pub(super) fn parse_int(v: Option<&[u8]>) -> Option<i128> {
    std::str::from_utf8(v?).ok()?.parse().ok()
}

pub(super) fn new_acc(o: &Output) -> Acc {
    match o {
        Output::Key(_) => Acc::Key,
        Output::Count(_) => Acc::Count(0),
        Output::Sum(_) => Acc::Sum(None),
        Output::Min(_) | Output::Max(_) => Acc::Best(None),
        Output::Avg { .. } => Acc::Avg(None, 0),
        Output::BitAnd(_) => Acc::Bits(u64::MAX),
        Output::BitOr(_) | Output::BitXor(_) => Acc::Bits(0),
        Output::CountDistinct(_) => Acc::Distinct(Default::default()),
        Output::GroupConcat { .. } => Acc::Concat(None, usize::MAX),
    }
}

/// A partial value as an exact decimal; NULL is `None`. Floating-point
/// columns are refused: their sums depend on the order of addition.
pub(super) fn decimal_cell(
    row: &Row,
    col: usize,
    cols: &[ColumnInfo],
    what: &str,
) -> Result<Option<Decimal>, Stop> {
    let Some(v) = row.get(col).and_then(|c| c.as_deref()) else {
        return Ok(None);
    };
    if cols.get(col).is_some_and(|c| kind_of(c) == Kind::Float) {
        return Err(bad_value(what));
    }
    // A sum read with 30 decimals (a division's, `push_aggregate`) ends
    // in zeros past the digits the server kept.
    let v = match v.iter().position(|&b| b == b'.') {
        Some(point) => {
            let digits = v[point + 1..].iter().rposition(|&b| b != b'0');
            &v[..digits.map_or(point, |d| point + 2 + d)]
        }
        None => v,
    };
    Decimal::parse(v).map(Some).ok_or_else(|| bad_value(what))
}

/// `sum + d`, where `None` is a sum of no values (NULL).
fn add_to(sum: &mut Option<Decimal>, d: Decimal, what: &str) -> Result<(), Stop> {
    *sum = Some(match sum {
        None => d,
        Some(prev) => prev.checked_add(d).ok_or_else(|| bad_value(what))?,
    });
    Ok(())
}

/// Fold one partial row into an aggregate.
/// Returns how many values it started holding (COUNT(DISTINCT)).
pub(super) fn combine(
    acc: &mut Acc,
    out: &Output,
    row: &Row,
    cols: &[ColumnInfo],
    separators: &[String],
) -> Result<usize, Stop> {
    let cell = |i: usize| row.get(i).and_then(|c| c.as_deref());
    match (acc, out) {
        (Acc::Key, _) => {}
        (Acc::Count(n), Output::Count(c)) => {
            if let Some(v) = cell(*c) {
                *n += parse_int(Some(v)).ok_or_else(|| bad_value("COUNT"))?;
            }
        }
        (Acc::Sum(s), Output::Sum(c)) => {
            if let Some(d) = decimal_cell(row, *c, cols, "SUM")? {
                add_to(s, d, "SUM")?;
            }
        }
        (Acc::Avg(s, n), Output::Avg { sum, count }) => {
            if let Some(d) = decimal_cell(row, *sum, cols, "AVG")? {
                add_to(s, d, "AVG")?;
            }
            if let Some(v) = cell(*count) {
                *n += parse_int(Some(v)).ok_or_else(|| bad_value("AVG"))?;
            }
        }
        (Acc::Best(best), Output::Min(v) | Output::Max(v)) => {
            combine_best(best, out, *v, row, cols)?;
        }
        (Acc::Concat(text, limit), Output::GroupConcat { col, sep, max_len }) => {
            if let Some(l) = parse_int(cell(*max_len)) {
                *limit = usize::try_from(l).unwrap_or(usize::MAX);
            }
            if let Some(part) = cell(*col) {
                match text {
                    None => *text = Some(part.to_vec()),
                    Some(t) => {
                        if let Some(s) = separators.get(*sep) {
                            t.extend_from_slice(s.as_bytes());
                        }
                        t.extend_from_slice(part);
                    }
                }
            }
        }
        (Acc::Distinct(set), Output::CountDistinct(v)) => {
            let Some(col) = cols.get(v.col) else {
                return Ok(0);
            };
            let value = cmp_of(row, v.col, v.weight);
            if value.text.is_some() {
                let mut form = Vec::new();
                group_form(&mut form, kind_of(col), value);
                return Ok(usize::from(set.insert(form)));
            }
        }
        (Acc::Bits(b), Output::BitAnd(c) | Output::BitOr(c) | Output::BitXor(c)) => {
            let v: u64 = match cell(*c) {
                None => match out {
                    Output::BitAnd(_) => u64::MAX,
                    _ => 0,
                },
                Some(v) => std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| bad_value("BIT_AND, BIT_OR or BIT_XOR"))?,
            };
            *b = match out {
                Output::BitAnd(_) => *b & v,
                Output::BitOr(_) => *b | v,
                _ => *b ^ v,
            };
        }
        _ => {}
    }
    Ok(0)
}

/// MIN or MAX: keep the partial row whose value comes first (last);
/// NULLs are skipped.
fn combine_best(
    best: &mut Option<Row>,
    out: &Output,
    v: Val,
    row: &Row,
    cols: &[ColumnInfo],
) -> Result<(), Stop> {
    let Some(col) = cols.get(v.col) else {
        return Ok(());
    };
    let kind = kind_of(col);
    if kind == Kind::Unordered {
        return Err(unordered());
    }
    if row.get(v.col).and_then(|c| c.as_deref()).is_none() {
        return Ok(());
    }
    let replace = match best {
        None => true,
        Some(b) => {
            let o = compare(
                kind,
                &cmp_of(row, v.col, v.weight),
                &cmp_of(b, v.col, v.weight),
            );
            match out {
                Output::Min(_) => o == Ordering::Less,
                _ => o == Ordering::Greater,
            }
        }
    };
    if replace {
        *best = Some(row.clone());
    }
    Ok(())
}

/// The client's value of one output of a finished group.
pub(super) fn finish(
    acc: &Acc,
    out: &Output,
    g: &GroupPlan,
    first: &Row,
    col: &ColumnInfo,
) -> Result<Option<Vec<u8>>, Stop> {
    let scale = u32::from(col.decimals);
    let decimal = |d: &Decimal| -> Result<Option<Vec<u8>>, Stop> {
        if col.decimals >= 31 || kind_of(col) == Kind::Float {
            return Err(bad_value("SUM or AVG"));
        }
        d.to_text(scale)
            .map(|s| Some(s.into_bytes()))
            .ok_or_else(|| bad_value("SUM or AVG"))
    };
    Ok(match (acc, out) {
        (Acc::Key, Output::Key(k)) => {
            let Val { col, .. } = g.keys[*k];
            first.get(col).cloned().flatten()
        }
        (Acc::Count(n), _) => Some(n.to_string().into_bytes()),
        (Acc::Sum(Some(d)), _) => decimal(d)?,
        (Acc::Sum(None), _) => None,
        (Acc::Avg(s, n), _) => match (s, *n) {
            (Some(d), n) if n > 0 => {
                let q = d.div_round(n, scale).ok_or_else(|| bad_value("AVG"))?;
                decimal(&q)?
            }
            _ => None,
        },
        (Acc::Best(best), Output::Min(v) | Output::Max(v)) => {
            best.as_ref().and_then(|r| r.get(v.col).cloned().flatten())
        }
        (Acc::Bits(b), _) => Some(b.to_string().into_bytes()),
        (Acc::Distinct(set), _) => Some(set.len().to_string().into_bytes()),
        (Acc::Concat(text, limit), _) => text
            .as_ref()
            .map(|t| cut_concat(t, *limit, col.charset == BINARY_CHARSET)),
        _ => None,
    })
}

/// GROUP_CONCAT cut at its limit in bytes, as the server cuts it: binary
/// strings exactly there, text at the last character that fits whole
/// (a UTF-8 sequence crossing the limit is left out whole; other bytes,
/// such as latin1's 0x80..0xBF, are characters of their own).
pub(super) fn cut_concat(t: &[u8], limit: usize, is_binary: bool) -> Vec<u8> {
    let end = t.len().min(limit);
    if is_binary || end == t.len() {
        return t[..end].to_vec();
    }
    // The start of a UTF-8 sequence at most 3 bytes before the cut.
    let start = (end.saturating_sub(3)..end)
        .rev()
        .find(|&i| t[i] & 0xc0 != 0x80)
        .unwrap_or(end);
    let len = match t.get(start) {
        Some(0xc2..=0xdf) => 2,
        Some(0xe0..=0xef) => 3,
        Some(0xf0..=0xf4) => 4,
        _ => 1,
    };
    let whole =
        t.len() >= start + len && t[start + 1..start + len].iter().all(|b| b & 0xc0 == 0x80);
    if len > 1 && start + len > end && whole {
        t[..start].to_vec()
    } else {
        t[..end].to_vec()
    }
}

/// Expected values are what MariaDB 10.11 answers for the same rows in one
/// table (the partials are what each partition's fragment answers).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::merge::fixtures::*;

    /// One output folded over partial rows whose columns are all `part`,
    /// finished for a client column `out`.
    fn merged(o: Output, part: &ColumnInfo, out: &ColumnInfo, rows: &[Row]) -> Option<String> {
        let g = plan(Vec::new(), vec![o], None);
        let cols = vec![part.clone(); 4];
        let mut acc = new_acc(&o);
        for r in rows {
            combine(&mut acc, &o, r, &cols, &g.separators).unwrap();
        }
        let v = finish(&acc, &o, &g, &Vec::new(), out).unwrap();
        v.map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn decimal_sums_go_past_18_digits() {
        // SUM(DECIMAL(22,2)) over 99999999999999999999.99 and 0.01.
        let rows = [
            text(&[Some("99999999999999999999.99")]),
            text(&[Some("0.01")]),
        ];
        let sum = merged(Output::Sum(0), &dec(2), &dec(2), &rows);
        assert_eq!(sum.as_deref(), Some("100000000000000000000.00"));
        // AVG of the same: partial SUMs and COUNTs, 2 + 4 decimals.
        let rows = [
            text(&[Some("99999999999999999999.99"), Some("1")]),
            text(&[Some("0.01"), Some("1")]),
        ];
        let avg = Output::Avg { sum: 0, count: 1 };
        let avg = merged(avg, &dec(2), &dec(6), &rows);
        assert_eq!(avg.as_deref(), Some("50000000000000000000.000000"));
    }

    #[test]
    fn bigint_unsigned_sums_are_decimal_past_2_pow_64() {
        // SUM(BIGINT UNSIGNED) is DECIMAL(41,0) on the server: no overflow.
        let sum = |a: &str, b: &str| {
            let rows = [text(&[Some(a)]), text(&[Some(b)])];
            merged(Output::Sum(0), &dec(0), &dec(0), &rows)
        };
        assert_eq!(
            sum("18446744073709551614", "1").as_deref(),
            Some("18446744073709551615")
        );
        assert_eq!(
            sum("18446744073709551615", "1").as_deref(),
            Some("18446744073709551616")
        );
        assert_eq!(
            sum("18446744073709551615", "18446744073709551615").as_deref(),
            Some("36893488147419103230")
        );
    }

    #[test]
    fn null_only_groups_sum_to_null_and_count_zero() {
        let nulls = [text(&[None, Some("0")]), text(&[None, Some("0")])];
        assert_eq!(merged(Output::Sum(0), &dec(2), &dec(2), &nulls), None);
        let count = merged(Output::Count(1), &dec(0), &int(), &nulls);
        assert_eq!(count.as_deref(), Some("0"));
        let avg = Output::Avg { sum: 0, count: 1 };
        assert_eq!(merged(avg, &dec(2), &dec(6), &nulls), None);
        // A NULL partial next to a value: the value.
        let some = [text(&[None, Some("0")]), text(&[Some("-1.50"), Some("1")])];
        let sum = merged(Output::Sum(0), &dec(2), &dec(2), &some);
        assert_eq!(sum.as_deref(), Some("-1.50"));
    }

    #[test]
    fn avg_rounds_half_away_from_zero_at_the_servers_scale() {
        let avg = |parts: &[(&str, &str)], arg_scale: u8| {
            let rows: Vec<Row> = parts
                .iter()
                .map(|(s, n)| text(&[Some(s), Some(n)]))
                .collect();
            let o = Output::Avg { sum: 0, count: 1 };
            merged(o, &dec(arg_scale), &dec(arg_scale + 4), &rows)
        };
        // AVG(IF(seq = 1, 1, 0)) FROM seq_1_to_32 is 0.03125: 0.0313.
        let a = avg(&[("1", "16"), ("0", "16")], 0);
        assert_eq!(a.as_deref(), Some("0.0313"));
        let a = avg(&[("-1", "16"), ("0", "16")], 0);
        assert_eq!(a.as_deref(), Some("-0.0313"));
        // -2 / 3: -0.6667.
        let a = avg(&[("-1", "1"), ("-1", "2")], 0);
        assert_eq!(a.as_deref(), Some("-0.6667"));
        // AVG(IF(seq = 1, -0.01, 0.00)) FROM seq_1_to_32: -0.0003125.
        let a = avg(&[("-0.01", "1"), ("0.00", "31")], 2);
        assert_eq!(a.as_deref(), Some("-0.000313"));
        // A partition without rows answers SUM NULL, COUNT 0.
        let rows = [text(&[None, Some("0")]), text(&[Some("1"), Some("3")])];
        let o = Output::Avg { sum: 0, count: 1 };
        let a = merged(o, &dec(0), &dec(4), &rows);
        assert_eq!(a.as_deref(), Some("0.3333"));
    }

    #[test]
    fn min_and_max_skip_nulls_and_compare_numbers_exactly() {
        let v = Val {
            col: 0,
            weight: None,
        };
        let rows = [
            text(&[None]),
            text(&[Some("9.00")]),
            text(&[Some("10.00")]),
            text(&[Some("-0.50")]),
            text(&[Some("0.00")]),
            text(&[None]),
        ];
        let d = dec(2);
        let min = merged(Output::Min(v), &d, &d, &rows);
        assert_eq!(min.as_deref(), Some("-0.50"));
        let max = merged(Output::Max(v), &d, &d, &rows);
        assert_eq!(max.as_deref(), Some("10.00"));
        let nulls = [text(&[None]), text(&[None])];
        assert_eq!(merged(Output::Min(v), &d, &d, &nulls), None);
        assert_eq!(merged(Output::Max(v), &d, &d, &nulls), None);
    }

    #[test]
    fn bit_aggregates_combine_partials_from_their_identities() {
        let bits = |o: Output, parts: &[Option<&str>]| {
            let rows: Vec<Row> = parts.iter().map(|p| text(&[*p])).collect();
            merged(o, &int(), &int(), &rows)
        };
        let all = Some("18446744073709551615");
        // A partition without rows answers BIT_AND 18446744073709551615
        // and BIT_OR, BIT_XOR 0: the identities.
        let a = bits(Output::BitAnd(0), &[all, Some("1")]);
        assert_eq!(a.as_deref(), Some("1"));
        let parts = [all, Some("1"), Some("0")];
        let a = bits(Output::BitOr(0), &parts);
        assert_eq!(a.as_deref(), Some("18446744073709551615"));
        let a = bits(Output::BitXor(0), &parts);
        assert_eq!(a.as_deref(), Some("18446744073709551614"));
        let a = bits(Output::BitXor(0), &[Some("6"), Some("3")]);
        assert_eq!(a.as_deref(), Some("5"));
        // No rows anywhere (a NULL partial counts as the identity too).
        let a = bits(Output::BitAnd(0), &[all, None]);
        assert_eq!(a.as_deref(), Some("18446744073709551615"));
        let a = bits(Output::BitAnd(0), &[]);
        assert_eq!(a.as_deref(), Some("18446744073709551615"));
        let a = bits(Output::BitOr(0), &[Some("0"), None]);
        assert_eq!(a.as_deref(), Some("0"));
    }

    /// GROUP_CONCAT of the partials (column 0) with `@@group_concat_max_len`
    /// (column 1), for a client column of character set `charset`.
    fn concat(parts: &[Option<&[u8]>], sep: usize, max: &str, charset: u16) -> Option<Vec<u8>> {
        let o = Output::GroupConcat {
            col: 0,
            sep,
            max_len: 1,
        };
        let g = plan(Vec::new(), vec![o], None);
        let cols = vec![col(VAR_STRING, charset, 0), int()];
        let mut acc = new_acc(&o);
        for p in parts {
            let r = row(&[*p, Some(max.as_bytes())]);
            combine(&mut acc, &o, &r, &cols, &g.separators).unwrap();
        }
        finish(&acc, &o, &g, &Vec::new(), &cols[0]).unwrap()
    }

    #[test]
    fn group_concat_joins_partials_and_cuts_at_max_len_in_bytes() {
        let c = |parts: &[&str], max: &str| {
            let parts: Vec<Option<&[u8]>> = parts.iter().map(|p| Some(p.as_bytes())).collect();
            let t = concat(&parts, 0, max, UTF8MB4_GENERAL_CI).unwrap();
            String::from_utf8(t).unwrap()
        };
        // SET group_concat_max_len = 5 (or 4).
        assert_eq!(c(&["ab", "cd"], "5"), "ab,cd");
        assert_eq!(c(&["abc", "def"], "5"), "abc,d");
        assert_eq!(c(&["abc", "def"], "4"), "abc,");
        assert_eq!(c(&["abcdef"], "5"), "abcde");
        // A character that does not fit whole is left out.
        assert_eq!(c(&["éé", "é"], "5"), "éé,");
        assert_eq!(c(&["éé", "é"], "4"), "éé");
        assert_eq!(c(&["éééééé"], "5"), "éé");
        assert_eq!(c(&["€€€€"], "5"), "€");
        assert_eq!(c(&["a😀"], "4"), "a");
        assert_eq!(c(&["a😀"], "5"), "a😀");
        // Partials that are NULL are skipped; the separator is the call's.
        let parts: [Option<&[u8]>; 3] = [Some(b"a"), None, Some(b"b")];
        let t = concat(&parts, 1, "1024", UTF8MB4_GENERAL_CI);
        assert_eq!(t.as_deref(), Some(&b"a--b"[..]));
        assert_eq!(concat(&[None, None], 0, "1024", UTF8MB4_GENERAL_CI), None);
    }

    #[test]
    fn group_concat_of_binary_and_latin1_bytes_is_cut_exactly() {
        // VARBINARY 'ab' and 0x808080, group_concat_max_len = 5: the server
        // answers 0x61622C8080. (The cut used to back off to 'ab', taking
        // every 0x80..0xBF byte for a UTF-8 continuation byte.)
        let parts: [Option<&[u8]>; 2] = [Some(b"ab"), Some(&[0x80, 0x80, 0x80])];
        let t = concat(&parts, 0, "5", BINARY);
        assert_eq!(t.as_deref(), Some(&[0x61, 0x62, 0x2c, 0x80, 0x80][..]));
        // latin1 'ab' and '°°°' (0xB0B0B0) to a latin1 client: 0x61622CB0B0.
        let parts: [Option<&[u8]>; 2] = [Some(b"ab"), Some(&[0xb0, 0xb0, 0xb0])];
        let t = concat(&parts, 0, "5", 8);
        assert_eq!(t.as_deref(), Some(&[0x61, 0x62, 0x2c, 0xb0, 0xb0][..]));
    }

    fn forms(pad_space: bool) -> Vec<Vec<u8>> {
        let (v, _, rows) = strings(pad_space);
        let kind = Kind::Collated { pad_space };
        rows.iter()
            .map(|r| {
                let mut form = Vec::new();
                group_form(&mut form, kind, cmp_of(r, v.col, v.weight));
                form
            })
            .collect()
    }

    #[test]
    fn pad_space_forms_ignore_trailing_spaces_no_pad_forms_keep_them() {
        // GROUP BY x: 'a', 'a ', 'A' are one group under
        // utf8mb4_general_ci; 'a ' is a group of its own under
        // utf8mb4_general_nopad_ci.
        let pad = forms(true);
        assert!(pad[0] == pad[1] && pad[1] == pad[2]);
        let no_pad = forms(false);
        assert!(no_pad[0] != no_pad[1] && no_pad[0] == no_pad[2]);
        // NULL has a form of its own.
        let mut null = Vec::new();
        group_form(&mut null, Kind::Decimal, cmp_of(&text(&[None]), 0, None));
        let mut empty = Vec::new();
        group_form(&mut empty, Kind::Bytes, cmp_of(&text(&[Some("")]), 0, None));
        assert_ne!(null, empty);
    }

    #[test]
    fn count_distinct_counts_pad_space_equal_values_once() {
        let count = |pad_space: bool| {
            let (v, cols, rows) = strings(pad_space);
            let o = Output::CountDistinct(v);
            let mut acc = new_acc(&o);
            let new: usize = rows
                .iter()
                .map(|r| combine(&mut acc, &o, r, &cols, &[]).unwrap())
                .sum();
            let g = plan(Vec::new(), vec![o], None);
            let n = finish(&acc, &o, &g, &Vec::new(), &int()).unwrap();
            (new, n.map(|n| String::from_utf8(n).unwrap()))
        };
        assert_eq!(count(true), (1, Some("1".to_string())));
        assert_eq!(count(false), (2, Some("2".to_string())));
    }
}
