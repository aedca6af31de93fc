//! Row ordering for merges (pure): values compared as the server compares
//! them (`hscale_route::value::compare`: numbers as exact decimals, strings
//! by the backend's weight strings, NULL first), keys in ORDER BY order,
//! DESC reversed.

use std::cmp::Ordering;

use hscale_route::router::OrderKey;
use hscale_route::value::{compare, Cmp, Kind};
use hscale_wire::resultset::ColumnInfo;

use super::columns::ordered_kind;
use super::{Row, Stop};
use crate::error::ProxyError;

/// A value of a row with its weight columns, for `compare`.
pub(super) fn cmp_of(row: &Row, col: usize, weight: Option<(usize, usize)>) -> Cmp<'_> {
    let cell = |i: usize| row.get(i).and_then(|c| c.as_deref());
    Cmp {
        text: cell(col),
        weight: weight.and_then(|(w, _)| cell(w)),
        space: weight.and_then(|(_, s)| cell(s)),
    }
}

/// Compare two rows by `keys`, whose columns are offsets from `base`.
pub(super) fn order_rows(a: &Row, b: &Row, keys: &[(OrderKey, Kind)], base: usize) -> Ordering {
    for (k, kind) in keys {
        let shift = |w: Option<(usize, usize)>| w.map(|(x, y)| (x + base, y + base));
        let o = compare(
            *kind,
            &cmp_of(a, k.col + base, shift(k.weight)),
            &cmp_of(b, k.col + base, shift(k.weight)),
        );
        let o = if k.desc { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The order keys of a sort merge with the comparison of each, from the
/// partitions' columns (keys are offsets from `base`, the hidden block).
pub(super) fn sort_keys(
    order: &[OrderKey],
    columns: &[ColumnInfo],
    base: usize,
) -> Result<Vec<(OrderKey, Kind)>, Stop> {
    let mut keys = Vec::new();
    for k in order {
        let Some(c) = columns.get(base + k.col) else {
            return Err(Stop::Proxy(ProxyError::Wrong(
                "a partition answered with too few columns".into(),
            )));
        };
        keys.push((*k, ordered_kind(c)?));
    }
    Ok(keys)
}

/// The partition whose next row comes first; ties go to the earlier
/// partition. `None` when every partition is done.
pub(super) fn smallest(
    heads: &[Option<Row>],
    keys: &[(OrderKey, Kind)],
    base: usize,
) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, h) in heads.iter().enumerate() {
        let Some(row) = h else { continue };
        let better = match best.and_then(|b| heads[b].as_ref()) {
            None => true,
            Some(cur) => order_rows(row, cur, keys, base) == Ordering::Less,
        };
        if better {
            best = Some(i);
        }
    }
    best
}

/// Expected orders are what MariaDB 10.11 answers for ORDER BY over the
/// same values in one table.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::merge::fixtures::*;

    fn key(col: usize, desc: bool) -> (OrderKey, Kind) {
        let k = OrderKey {
            col,
            weight: None,
            desc,
        };
        (k, Kind::Decimal)
    }

    fn sorted(values: &[Option<&str>], desc: bool) -> Vec<Option<String>> {
        let mut rows: Vec<Row> = values.iter().map(|v| text(&[*v])).collect();
        rows.sort_by(|a, b| order_rows(a, b, &[key(0, desc)], 0));
        rows.iter()
            .map(|r| r[0].clone().map(|v| String::from_utf8(v).unwrap()))
            .collect()
    }

    #[test]
    fn nulls_first_ascending_last_descending_numbers_as_decimals() {
        // DECIMAL(10,2) values 10, 9, -0.5, 0, NULL, NULL, 1.5.
        let values = [
            Some("10.00"),
            Some("9.00"),
            Some("-0.50"),
            Some("0.00"),
            None,
            None,
            Some("1.50"),
        ];
        let s = |v: &[Option<&str>]| -> Vec<Option<String>> {
            v.iter().map(|x| x.map(str::to_string)).collect()
        };
        assert_eq!(
            sorted(&values, false),
            s(&[
                None,
                None,
                Some("-0.50"),
                Some("0.00"),
                Some("1.50"),
                Some("9.00"),
                Some("10.00")
            ])
        );
        assert_eq!(
            sorted(&values, true),
            s(&[
                Some("10.00"),
                Some("9.00"),
                Some("1.50"),
                Some("0.00"),
                Some("-0.50"),
                None,
                None
            ])
        );
        // Integers of different lengths, and numbers past 2^64.
        let big = [Some("18446744073709551616"), Some("9"), Some("-1")];
        assert_eq!(
            sorted(&big, false),
            s(&[Some("-1"), Some("9"), Some("18446744073709551616")])
        );
    }

    #[test]
    fn later_keys_break_ties_and_offsets_start_at_base() {
        // Two client columns, then the hidden block: (a, b DESC).
        let r = |a: &str, b: &str| text(&[Some("x"), Some("y"), Some(a), Some(b)]);
        let keys = [key(0, false), key(1, true)];
        assert_eq!(
            order_rows(&r("1", "2"), &r("1", "3"), &keys, 2),
            Ordering::Greater
        );
        assert_eq!(
            order_rows(&r("1", "2"), &r("2", "3"), &keys, 2),
            Ordering::Less
        );
        assert_eq!(
            order_rows(&r("1", "2"), &r("1.0", "2.00"), &keys, 2),
            Ordering::Equal
        );
    }

    #[test]
    fn strings_order_by_weights_with_pad_space() {
        // 'a ' = 'a' = 'A' < 'b' under utf8mb4_general_ci.
        let (v, _, rows) = strings(true);
        let k = OrderKey {
            col: v.col,
            weight: v.weight,
            desc: false,
        };
        let keys = [(k, Kind::Collated { pad_space: true })];
        assert_eq!(order_rows(&rows[0], &rows[1], &keys, 0), Ordering::Equal);
        assert_eq!(order_rows(&rows[1], &rows[2], &keys, 0), Ordering::Equal);
        let no_pad = [(k, Kind::Collated { pad_space: false })];
        assert_eq!(order_rows(&rows[0], &rows[1], &no_pad, 0), Ordering::Less);
    }

    #[test]
    fn the_smallest_head_wins_and_ties_go_to_the_earlier_partition() {
        let keys = [key(0, false)];
        let heads = [
            Some(text(&[Some("5")])),
            None,
            Some(text(&[Some("-3")])),
            Some(text(&[Some("-3.0")])),
        ];
        assert_eq!(smallest(&heads, &keys, 0), Some(2));
        // A NULL head comes first ascending.
        let heads = [Some(text(&[Some("5")])), Some(text(&[None]))];
        assert_eq!(smallest(&heads, &keys, 0), Some(1));
        assert_eq!(smallest(&[None, None], &keys, 0), None);
    }

    #[test]
    fn sort_keys_refuse_missing_columns_and_enums() {
        let order = [OrderKey {
            col: 0,
            weight: None,
            desc: true,
        }];
        let keys = sort_keys(&order, &[int(), dec(2)], 1).unwrap();
        assert_eq!(keys, vec![(order[0], Kind::Decimal)]);
        assert!(matches!(
            sort_keys(&order, &[int()], 1),
            Err(Stop::Proxy(ProxyError::Wrong(_)))
        ));
        let enum_col = col(0xf7, UTF8MB4_GENERAL_CI, 0);
        assert!(matches!(
            sort_keys(&order, &[enum_col], 0),
            Err(Stop::Proxy(ProxyError::Refused(_)))
        ));
    }
}
