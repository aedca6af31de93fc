//! The aggregate operator (pure): partial rows from every partition folded
//! into groups keyed by the grouping values' comparison forms
//! (`group::group_form`), one accumulator per output (`group::Acc`); then
//! the groups' final values, HAVING (`having`) and ORDER BY (`sort`). At
//! most `[proxy] merge_max_rows` groups and COUNT(DISTINCT) values are
//! held.

use std::collections::HashMap;

use hscale_route::router::{GroupPlan, OrderKey, Output};
use hscale_route::value::Kind;
use hscale_wire::resultset::ColumnInfo;

use super::columns::{hidden_column, ordered_kind};
use super::group::{combine, finish, group_form, new_acc, Acc, Group};
use super::having;
use super::sort::{cmp_of, order_rows};
use super::{Row, Stop};
use crate::error::ProxyError;

/// The GROUP BY operator: partial rows folded into groups, then the
/// groups' final rows.
pub(super) struct Aggregate<'p> {
    plan: &'p GroupPlan,
    /// At most this many groups plus COUNT(DISTINCT) values are held.
    max_rows: usize,
    /// Grouping forms to indexes in `list`.
    index: HashMap<Vec<u8>, usize>,
    list: Vec<Group>,
    distinct_values: usize,
    /// How each grouping key compares, from the first part's columns.
    key_kinds: Option<Vec<Kind>>,
    /// The first part's columns (partial rows).
    part_cols: Vec<ColumnInfo>,
}

fn too_many(max_rows: usize) -> Stop {
    Stop::Proxy(ProxyError::MergeLimit { limit: max_rows })
}

impl<'p> Aggregate<'p> {
    pub(super) fn new(plan: &'p GroupPlan, max_rows: usize) -> Aggregate<'p> {
        Aggregate {
            plan,
            max_rows,
            index: HashMap::new(),
            list: Vec::new(),
            distinct_values: 0,
            key_kinds: None,
            part_cols: Vec::new(),
        }
    }

    /// A part's columns, before its rows: the first part's are kept.
    pub(super) fn columns(&mut self, columns: &[ColumnInfo]) -> Result<(), Stop> {
        if self.key_kinds.is_some() {
            return Ok(());
        }
        let mut kinds = Vec::new();
        for k in &self.plan.keys {
            let Some(c) = columns.get(k.col) else {
                return Err(Stop::Proxy(ProxyError::Wrong(
                    "a partition answered with too few columns".into(),
                )));
            };
            kinds.push(ordered_kind(c)?);
        }
        self.key_kinds = Some(kinds);
        self.part_cols = columns.to_vec();
        Ok(())
    }

    /// The first partition's column definitions (none before a part
    /// answered).
    pub(super) fn part_columns(&self) -> &[ColumnInfo] {
        &self.part_cols
    }

    /// Fold one partial row into its group.
    pub(super) fn add(&mut self, row: Row) -> Result<(), Stop> {
        let kinds = self.key_kinds.as_deref().unwrap_or_default();
        let mut form = Vec::new();
        for (k, kind) in self.plan.keys.iter().zip(kinds) {
            group_form(&mut form, *kind, cmp_of(&row, k.col, k.weight));
        }
        let idx = match self.index.get(&form) {
            Some(i) => *i,
            None => {
                if self.list.len() >= self.max_rows {
                    return Err(too_many(self.max_rows));
                }
                self.list.push(Group {
                    first: row.clone(),
                    accs: self.plan.outputs.iter().map(new_acc).collect(),
                });
                self.index.insert(form, self.list.len() - 1);
                self.list.len() - 1
            }
        };
        let groups = self.list.len();
        let group = &mut self.list[idx];
        for (acc, out) in group.accs.iter_mut().zip(&self.plan.outputs) {
            self.distinct_values +=
                combine(acc, out, &row, &self.part_cols, &self.plan.separators)?;
            if groups + self.distinct_values > self.max_rows {
                return Err(too_many(self.max_rows));
            }
        }
        Ok(())
    }

    /// The final rows, HAVING applied, sorted by `order` (client column
    /// indexes): the outputs, then two weight columns per order key.
    /// `out_cols` are the client's column definitions.
    pub(super) fn finish(
        mut self,
        out_cols: &[ColumnInfo],
        order: &[OrderKey],
        is_subtraction_signed: bool,
    ) -> Result<Vec<Row>, Stop> {
        let g = self.plan;
        // Aggregates without GROUP BY answer one row, even over no rows.
        if g.keys.is_empty() && self.list.is_empty() {
            self.list.push(Group {
                first: Vec::new(),
                accs: g.outputs.iter().map(new_acc).collect(),
            });
        }
        // The client's columns, then those of the values only HAVING
        // reads (from the partial columns).
        let all_cols: Vec<ColumnInfo> = g
            .outputs
            .iter()
            .enumerate()
            .map(|(i, o)| match out_cols.get(i) {
                Some(c) => c.clone(),
                None => hidden_column(o, g, &self.part_cols),
            })
            .collect();
        if let Some(h) = &g.having {
            having::check_exact(h, &all_cols)?;
        }
        let operands = having::Operands {
            columns: &all_cols,
            is_subtraction_signed,
        };
        let mut rows: Vec<Row> = Vec::with_capacity(self.list.len());
        let mut kept: Vec<&Group> = Vec::with_capacity(self.list.len());
        for group in &self.list {
            let mut out: Row = Vec::with_capacity(g.outputs.len() + 2 * order.len());
            for ((acc, o), col) in group.accs.iter().zip(&g.outputs).zip(&all_cols) {
                out.push(finish(acc, o, g, &group.first, col)?);
            }
            if let Some(h) = &g.having {
                if !having::keeps(h, &out, &operands)? {
                    continue;
                }
            }
            rows.push(out);
            kept.push(group);
        }
        self.sort(&mut rows, &kept, &all_cols, order)?;
        Ok(rows)
    }

    /// Sort finished rows by `order`. The weights of an output come from
    /// its group's first partial row (keys) or from the chosen MIN/MAX
    /// row; they are appended to each row.
    fn sort(
        &self,
        rows: &mut [Row],
        groups: &[&Group],
        all_cols: &[ColumnInfo],
        order: &[OrderKey],
    ) -> Result<(), Stop> {
        let g = self.plan;
        let mut keys = Vec::new();
        for k in order {
            let Some(col) = all_cols.get(k.col) else {
                return Err(Stop::Proxy(ProxyError::Wrong(
                    "an order key past the columns".into(),
                )));
            };
            let at = g.outputs.len() + 2 * keys.len();
            let key = OrderKey {
                col: k.col,
                weight: k.weight.map(|_| (at, at + 1)),
                desc: k.desc,
            };
            keys.push((key, ordered_kind(col)?));
        }
        if keys.is_empty() {
            return Ok(());
        }
        for (row, group) in rows.iter_mut().zip(groups) {
            for k in order {
                let source: Option<&Row> = match g.outputs[k.col] {
                    Output::Key(_) => Some(&group.first),
                    _ => match &group.accs[k.col] {
                        Acc::Best(best) => best.as_ref(),
                        _ => None,
                    },
                };
                let cell = |i: usize| source.and_then(|r| r.get(i).cloned().flatten());
                match k.weight {
                    Some((a, b)) => {
                        row.push(cell(a));
                        row.push(cell(b));
                    }
                    None => {
                        row.push(None);
                        row.push(None);
                    }
                }
            }
        }
        rows.sort_by(|a, b| order_rows(a, b, &keys, 0));
        Ok(())
    }
}

/// Expected rows are what MariaDB 10.11 answers for the same rows in one
/// table.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::merge::fixtures::*;
    use hscale_route::router::{CmpOp, Having, Val};

    /// SELECT x, COUNT(*) ... GROUP BY x over 'a', 'a ', 'A'.
    fn grouped(pad_space: bool) -> Vec<Row> {
        let (v, cols, rows) = strings(pad_space);
        let g = plan(vec![v], vec![Output::Key(0), Output::Count(3)], None);
        let mut agg = Aggregate::new(&g, 100);
        agg.columns(&cols).unwrap();
        for r in rows {
            agg.add(r).unwrap();
        }
        agg.finish(&[cols[0].clone(), int()], &[], false).unwrap()
    }

    #[test]
    fn pad_space_groups_trailing_spaces_together_no_pad_apart() {
        // Under utf8mb4_general_ci: [a] 3 (the first value seen).
        assert_eq!(grouped(true), vec![text(&[Some("a"), Some("3")])]);
        // Under utf8mb4_general_nopad_ci: [a] 2, [a ] 1.
        assert_eq!(
            grouped(false),
            vec![
                text(&[Some("a"), Some("2")]),
                text(&[Some("a "), Some("1")])
            ]
        );
    }

    /// SELECT g, SUM(v) ... GROUP BY g over partial rows (g, SUM(v)).
    fn sums(having: Option<Having>, order: &[OrderKey], rows: &[Row]) -> Vec<String> {
        let key = Val {
            col: 0,
            weight: None,
        };
        let g = plan(vec![key], vec![Output::Key(0), Output::Sum(1)], having);
        let cols = vec![int(), dec(2)];
        let mut agg = Aggregate::new(&g, 100);
        agg.columns(&cols).unwrap();
        for r in rows {
            agg.add(r.clone()).unwrap();
        }
        let show = |c: &Option<Vec<u8>>| match c {
            Some(v) => String::from_utf8(v.clone()).unwrap(),
            None => "NULL".into(),
        };
        let out = agg.finish(&cols, order, false).unwrap();
        out.iter()
            .map(|r| format!("{} {}", show(&r[0]), show(&r[1])))
            .collect()
    }

    #[test]
    fn groups_are_combined_filtered_and_sorted() {
        let rows = [
            text(&[Some("1"), Some("99999999999999999999.99")]),
            text(&[Some("2"), None]),
            text(&[Some("3"), Some("-0.50")]),
            text(&[Some("1"), Some("0.01")]),
            text(&[Some("2"), None]),
            text(&[Some("4"), Some("9.00")]),
            text(&[Some("5"), Some("10.00")]),
        ];
        let by_sum = |desc| OrderKey {
            col: 1,
            weight: None,
            desc,
        };
        // ORDER BY SUM(v): NULL first; descending, NULL last.
        assert_eq!(
            sums(None, &[by_sum(false)], &rows),
            [
                "2 NULL",
                "3 -0.50",
                "4 9.00",
                "5 10.00",
                "1 100000000000000000000.00"
            ]
        );
        assert_eq!(
            sums(None, &[by_sum(true)], &rows),
            [
                "1 100000000000000000000.00",
                "5 10.00",
                "4 9.00",
                "3 -0.50",
                "2 NULL"
            ]
        );
        // HAVING SUM(v) > 0: the NULL group is not kept either.
        let positive = Having::Cmp(
            CmpOp::Gt,
            Box::new(Having::Out(1)),
            Box::new(Having::Num("0".into())),
        );
        assert_eq!(
            sums(Some(positive), &[by_sum(true)], &rows),
            ["1 100000000000000000000.00", "5 10.00", "4 9.00"]
        );
    }

    #[test]
    fn ordering_by_a_string_key_uses_its_weights() {
        // 'b' (weight 0x0042) and 'a ' then 'A' (0x0041...): ORDER BY x
        // under utf8mb4_general_ci puts the 'a' group first.
        let (v, cols, mut rows) = strings(true);
        let sp: &[u8] = &[0x00, 0x20];
        rows.insert(
            0,
            row(&[Some(b"b"), Some(&[0x00, 0x42]), Some(sp), Some(b"1")]),
        );
        let g = plan(vec![v], vec![Output::Key(0), Output::Count(3)], None);
        let mut agg = Aggregate::new(&g, 100);
        agg.columns(&cols).unwrap();
        for r in rows {
            agg.add(r).unwrap();
        }
        let order = [OrderKey {
            col: 0,
            weight: Some((1, 2)),
            desc: false,
        }];
        let out = agg
            .finish(&[cols[0].clone(), int()], &order, false)
            .unwrap();
        let firsts: Vec<&[u8]> = out.iter().map(|r| r[0].as_deref().unwrap()).collect();
        assert_eq!(firsts, [&b"a"[..], &b"b"[..]]);
    }

    #[test]
    fn no_group_by_answers_one_row_over_no_rows() {
        // SELECT COUNT(v), SUM(v), BIT_AND(v) FROM t WHERE FALSE.
        let outputs = vec![Output::Count(0), Output::Sum(1), Output::BitAnd(2)];
        let g = plan(Vec::new(), outputs, None);
        let cols = vec![int(), dec(2), int()];
        let out = Aggregate::new(&g, 100).finish(&cols, &[], false).unwrap();
        assert_eq!(
            out,
            vec![text(&[Some("0"), None, Some("18446744073709551615")])]
        );
    }

    #[test]
    fn more_groups_than_merge_max_rows_stop_the_merge() {
        let key = Val {
            col: 0,
            weight: None,
        };
        let g = plan(vec![key], vec![Output::Key(0)], None);
        let mut agg = Aggregate::new(&g, 2);
        agg.columns(&[int()]).unwrap();
        agg.add(text(&[Some("1")])).unwrap();
        agg.add(text(&[Some("2")])).unwrap();
        agg.add(text(&[Some("1")])).unwrap();
        assert!(matches!(
            agg.add(text(&[Some("3")])),
            Err(Stop::Proxy(ProxyError::MergeLimit { limit: 2 }))
        ));
    }
}
