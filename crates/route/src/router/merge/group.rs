//! Aggregates, GROUP BY and DISTINCT over several partitions: each
//! fragment returns partial groups (`Output` says how each column
//! combines), the proxy combines them, applies HAVING, sorts and cuts.

use std::collections::HashMap;

use hscale_sql::{Token, TokenKind};

use super::select::{
    aggregate_call, calls_aggregate, norm, split_commas, text, Item, UNMERGEABLE_OTHERS,
    UNMERGED_AGGREGATES,
};
use super::{
    having, rewrite_slot_labelled, GroupPlan, MergePlan, Mode, OrderKey, Output, Plan, Select, Val,
};
use crate::dictionary::Target;
use crate::router::{is_name, unescape};

/// Fragments of one backend joined into one statement with UNION ALL, in
/// the order their backends first appear.
fn per_backend(parts: Vec<(Target, String)>) -> Vec<(Target, String)> {
    let mut out: Vec<(Target, Vec<String>)> = Vec::new();
    for (t, sql) in parts {
        match out.iter_mut().find(|(o, _)| o.backend == t.backend) {
            Some((o, sqls)) => {
                o.physical_table.push_str(", ");
                o.physical_table.push_str(&t.physical_table);
                sqls.push(sql);
            }
            None => out.push((t, vec![sql])),
        }
    }
    out.into_iter()
        .map(|(t, sqls)| (t, sqls.join(" UNION ALL ")))
        .collect()
}

/// The weight columns of a string-capable value `expr`, appended to `cols`.
pub(super) fn push_weights(cols: &mut Vec<String>, expr: &str) -> (usize, usize) {
    cols.push(format!("WEIGHT_STRING({expr})"));
    // The weight of a space in the value's collation, or an empty weight
    // when the collation does not pad (NO PAD: utf8mb4_bin's `_nopad_`
    // twins, binary strings), which result metadata does not tell: there
    // ' ' and '' differ.
    cols.push(format!(
        "WEIGHT_STRING(IF(CONCAT(LEFT({expr}, 0), ' ') = LEFT({expr}, 0), LEFT(CONCAT(' ', {expr}), 1), LEFT({expr}, 0)))"
    ));
    (cols.len() - 2, cols.len() - 1)
}

/// The fragment columns of one aggregate call and how it is combined.
/// `is_visible`: a select item, whose column definition the client gets
/// from the statement itself (`GroupPlan::meta`), not from the fragment.
pub(super) fn push_aggregate(cols: &mut Vec<String>, f: &str, a: &str, is_visible: bool) -> Output {
    let push = |cols: &mut Vec<String>, e: String| {
        cols.push(e);
        cols.len() - 1
    };
    // A division's quotient keeps more digits inside the server (whole
    // groups of 9) than its column shows, and one server's SUM adds
    // those: a partition's sum is read with them (as a DECIMAL(65,30);
    // the IF keeps a DOUBLE sum a DOUBLE, which the merge refuses), so
    // that only the total is rounded to the column's decimals.
    let sum = if is_visible && a.contains('/') {
        format!("IF(0, SUM({a}), CAST(SUM({a}) AS DECIMAL(65,30)))")
    } else {
        format!("SUM({a})")
    };
    match f {
        "COUNT" => Output::Count(push(cols, format!("COUNT({a})"))),
        "SUM" => Output::Sum(push(cols, sum)),
        "AVG" => {
            let sum = push(cols, sum);
            let count = push(cols, format!("COUNT({a})"));
            Output::Avg { sum, count }
        }
        "MIN" | "MAX" => {
            let e = format!("{f}({a})");
            let col = push(cols, e.clone());
            let weight = Some(push_weights(cols, &e));
            let v = Val { col, weight };
            if f == "MIN" {
                Output::Min(v)
            } else {
                Output::Max(v)
            }
        }
        "BIT_AND" => Output::BitAnd(push(cols, format!("BIT_AND({a})"))),
        "BIT_OR" => Output::BitOr(push(cols, format!("BIT_OR({a})"))),
        _ => Output::BitXor(push(cols, format!("BIT_XOR({a})"))),
    }
}

/// A grouping key: the fragment's select column, its expression, its
/// GROUP BY text, and its form for matching (`norm`).
struct Key {
    select: String,
    expr: String,
    group_by: String,
    norm: String,
    /// Named by a select alias in GROUP BY.
    is_alias: bool,
}

/// The fragment's select list and the group plan's outputs, as they are
/// built from the select items and HAVING.
pub(super) struct Fragment {
    pub(super) cols: Vec<String>,
    keys: Vec<Val>,
    /// The first grouping key with each `norm`.
    key_at: HashMap<String, usize>,
    outputs: Vec<Output>,
    /// The first output of each grouping key.
    key_out: HashMap<usize, usize>,
    /// The one expression of COUNT(DISTINCT ...), added to the fragments'
    /// GROUP BY: (text, match form, columns).
    distinct_by: Option<(String, String, Val)>,
    separators: Vec<String>,
    max_len_col: Option<usize>,
}

/// Aggregates, GROUP BY, DISTINCT: partial groups per partition.
pub(super) fn plan_grouped(s: &Select<'_>) -> Plan {
    match grouped(s) {
        Ok(plan) => plan,
        Err(why) => s.refuse(&why),
    }
}

fn grouped(s: &Select<'_>) -> Result<Plan, String> {
    let (tokens, c) = (s.tokens, &s.c);
    if s.items.iter().any(|i| s.is_star(i)) {
        return Err("SELECT * with GROUP BY or DISTINCT".into());
    }
    let group_keys = group_keys(s)?;
    let mut key_at = HashMap::new();
    for (k, key) in group_keys.iter().enumerate() {
        key_at.entry(key.norm.clone()).or_insert(k);
    }
    let mut f = Fragment {
        cols: Vec::new(),
        keys: Vec::new(),
        key_at,
        outputs: Vec::new(),
        key_out: HashMap::new(),
        distinct_by: None,
        separators: Vec::new(),
        max_len_col: None,
    };
    for k in &group_keys {
        f.cols.push(k.select.clone());
        let col = f.cols.len() - 1;
        let weight = push_weights(&mut f.cols, &k.expr);
        f.keys.push(Val {
            col,
            weight: Some(weight),
        });
    }
    for n in 0..s.items.len() {
        f.push_item(s, n)?;
    }
    let visible = f.outputs.len();
    let having = match c.having {
        Some((a, b)) => Some(having::parse(s, &mut f, &tokens[a..b])?),
        None => None,
    };
    let order = f.order(s)?;
    // A key that is an integer literal (`SELECT DISTINCT k, 0`) groups
    // nothing apart; written in the fragment's GROUP BY it would name a
    // column position (1054 "Unknown column '0'"). The merge still
    // groups by its value.
    let mut group_by: Vec<&str> = group_keys
        .iter()
        .map(|k| k.group_by.as_str())
        .filter(|g| !is_integer_literal(g))
        .collect();
    if let Some((e, _, _)) = &f.distinct_by {
        group_by.push(e);
    }
    let group_text = if group_by.is_empty() {
        String::new()
    } else {
        format!(" GROUP BY {}", group_by.join(", "))
    };
    let parts: Vec<(Target, String)> = s
        .slots
        .iter()
        .map(|slot| {
            (
                slot.target.clone(),
                format!("SELECT {} {}{group_text}", f.cols.join(", "), s.body(slot)),
            )
        })
        .collect();
    // Partial groups need no order: the partitions of one backend share one
    // statement (UNION ALL of their fragments), so a backend holding many
    // partitions costs one round trip. Not with shipped (temporary)
    // tables, which one statement cannot open twice.
    let ships = s.slots.iter().any(|s| {
        s.refs
            .iter()
            .any(|(_, t)| t.physical_table.starts_with("hscale_ship_"))
    });
    let parts = if ships { parts } else { per_backend(parts) };
    let enum_probe = if group_keys.is_empty() && f.distinct_by.is_none() {
        min_max_columns(s)
            .map(|cols| format!("SELECT {} {} LIMIT 0", cols.join(", "), s.body(&s.slots[0])))
    } else {
        None
    };
    Ok(Plan::Merge(MergePlan {
        parts,
        mode: Mode::Group(Box::new(GroupPlan {
            keys: f.keys,
            outputs: f.outputs,
            visible,
            having,
            separators: f.separators,
            meta: meta(s),
            enum_probe,
            groups_by_alias: group_keys.iter().any(|k| k.is_alias),
        })),
        order,
        offset: s.offset,
        limit: s.limit,
        ship: Vec::new(),
        fallback: None,
        aliased: None,
    }))
}

/// The columns the select items' MIN and MAX calls read (`MIN(c)`,
/// `MAX(t.c)`), as written; `None` when there are none.
fn min_max_columns(s: &Select<'_>) -> Option<Vec<String>> {
    let sql = s.sql;
    let cols: Vec<String> = s
        .items
        .iter()
        .filter_map(|item| {
            let (f, args) = aggregate_call(sql, item.expr)?;
            let is_column = match args {
                [c] => is_name(c),
                [t, dot, c] => is_name(t) && dot.is_punct(sql, ".") && is_name(c),
                _ => false,
            };
            ((f == "MIN" || f == "MAX") && is_column).then(|| text(sql, args).to_string())
        })
        .collect();
    (!cols.is_empty()).then_some(cols)
}

/// The client's column definitions: the statement itself on the first
/// slot, with `LIMIT 0`.
fn meta(s: &Select<'_>) -> (Target, String) {
    let (sql, tokens, c, slots) = (s.sql, s.tokens, &s.c, s.slots);
    let meta_target = slots[0].target.clone();
    let whole = rewrite_slot_labelled(sql, tokens, &slots[0]);
    let delta = whole.len() as isize - sql.len() as isize;
    let cut = match c.limit {
        Some(_) => {
            let at = tokens[c.limit.map_or(0, |l| l.0) - 1].start as isize + delta;
            whole[..at as usize].trim_end().to_string()
        }
        None => whole.trim_end().to_string(),
    };
    (meta_target, format!("{cut} LIMIT 0"))
}

/// The grouping keys: GROUP BY items (by position, alias or expression),
/// or every select item for DISTINCT.
fn group_keys(s: &Select<'_>) -> Result<Vec<Key>, String> {
    let (sql, tokens, c, items) = (s.sql, s.tokens, &s.c, &s.items);
    let mut group_keys: Vec<Key> = Vec::new();
    // GROUP BY 1, 1, ... repeats item 1's text in the fragment each time.
    let mut grown = 0usize;
    match c.group {
        Some((a, b)) => {
            for g in split_commas(sql, &tokens[a..b]) {
                if g.iter()
                    .any(|t| t.is_word(sql, "ASC") || t.is_word(sql, "DESC"))
                {
                    return Err("GROUP BY ... ASC/DESC".into());
                }
                if calls_aggregate(sql, g) {
                    return Err("GROUP BY an aggregate".into());
                }
                let item = s.find_item(g);
                let key = match (g, item) {
                    // GROUP BY 2: the item's expression.
                    ([x], Some(i)) if x.kind == TokenKind::Number => {
                        if s.item_aggregates[i] {
                            return Err("GROUP BY an aggregate".into());
                        }
                        let e = text(sql, items[i].expr).to_string();
                        Key {
                            select: e.clone(),
                            expr: e.clone(),
                            group_by: e,
                            norm: s.item_norms[i].clone(),
                            is_alias: false,
                        }
                    }
                    // GROUP BY alias: resolved by the server as in the
                    // statement; the fragment defines the alias too.
                    ([x], Some(i)) if is_name(x) && items[i].alias.is_some() => {
                        if s.item_aggregates[i] {
                            return Err("GROUP BY an aggregate".into());
                        }
                        let e = text(sql, items[i].expr).to_string();
                        Key {
                            select: format!("{e} AS {}", x.text(sql)),
                            expr: e,
                            group_by: x.text(sql).to_string(),
                            norm: s.item_norms[i].clone(),
                            is_alias: true,
                        }
                    }
                    _ => {
                        let e = text(sql, g).to_string();
                        Key {
                            select: e.clone(),
                            expr: e.clone(),
                            group_by: e,
                            norm: norm(sql, g),
                            is_alias: false,
                        }
                    }
                };
                grown += key.select.len() + 3 * key.expr.len();
                s.check_growth(grown)?;
                group_keys.push(key);
            }
        }
        // DISTINCT without aggregates groups by every item.
        None if c.distinct && !s.item_aggregates.contains(&true) => {
            for (i, item) in items.iter().enumerate() {
                let e = text(sql, item.expr).to_string();
                group_keys.push(Key {
                    select: e.clone(),
                    expr: e.clone(),
                    group_by: e,
                    norm: s.item_norms[i].clone(),
                    is_alias: false,
                });
            }
        }
        None if c.distinct => return Err("DISTINCT with aggregates".into()),
        None => {}
    }
    if c.distinct && c.group.is_some() {
        return Err("DISTINCT with GROUP BY".into());
    }
    Ok(group_keys)
}

impl Fragment {
    /// Add an output; its index.
    pub(super) fn push_output(&mut self, o: Output) -> usize {
        let n = self.outputs.len();
        if let Output::Key(k) = o {
            self.key_out.entry(k).or_insert(n);
        }
        self.outputs.push(o);
        n
    }

    /// The grouping key whose expression is `norm`.
    pub(super) fn key_of(&self, norm: &str) -> Option<usize> {
        self.key_at.get(norm).copied()
    }

    /// The first output of grouping key `k`, added if there is none.
    pub(super) fn key_output(&mut self, k: usize) -> usize {
        match self.key_out.get(&k) {
            Some(&i) => i,
            None => self.push_output(Output::Key(k)),
        }
    }

    /// The output of one select item: a grouping key or an aggregate.
    fn push_item(&mut self, s: &Select<'_>, n: usize) -> Result<(), String> {
        let sql = s.sql;
        let item = &s.items[n];
        // GROUP_CONCAT(x [SEPARATOR 's']), in no particular order.
        if let [f, open, args @ .., close] = item.expr {
            if f.is_word(sql, "GROUP_CONCAT") && open.is_punct(sql, "(") && close.is_punct(sql, ")")
            {
                return self.push_group_concat(s, item, args);
            }
        }
        if let Some((f, args)) = aggregate_call(sql, item.expr) {
            if args.first().is_some_and(|t| t.is_word(sql, "DISTINCT")) {
                return self.push_count_distinct(s, &f, &args[1..]);
            }
            if args.is_empty() || calls_aggregate(sql, args) {
                return Err(format!("this {f}(...)"));
            }
            let o = push_aggregate(&mut self.cols, &f, text(sql, args), true);
            self.push_output(o);
            return Ok(());
        }
        if let Some(f) = item.expr.windows(2).find_map(|w| {
            (w[1].is_punct(sql, "(")
                && UNMERGED_AGGREGATES
                    .iter()
                    .chain(UNMERGEABLE_OTHERS)
                    .any(|f| w[0].is_word(sql, f)))
            .then(|| w[0].text(sql).to_ascii_uppercase())
        }) {
            return Err(format!("{f}() is not supported yet"));
        }
        if s.item_aggregates[n] {
            return Err(
                "expressions over aggregates (other than a single aggregate call) are not supported yet"
                    .into(),
            );
        }
        match self.key_of(&s.item_norms[n]) {
            Some(k) => {
                self.push_output(Output::Key(k));
            }
            None => {
                return Err(format!(
                    "the select item {} is neither grouped nor an aggregate",
                    text(sql, item.tokens)
                ))
            }
        }
        Ok(())
    }

    /// `GROUP_CONCAT(args)`: partial lists joined by the proxy.
    fn push_group_concat(
        &mut self,
        s: &Select<'_>,
        item: &Item<'_>,
        args: &[Token],
    ) -> Result<(), String> {
        let sql = s.sql;
        let at_depth0 = |w: &str| {
            let mut depth = 0i32;
            args.iter().any(|t| {
                if t.is_punct(sql, "(") {
                    depth += 1;
                } else if t.is_punct(sql, ")") {
                    depth -= 1;
                }
                depth == 0 && t.is_word(sql, w)
            })
        };
        if at_depth0("DISTINCT") || at_depth0("ORDER") || at_depth0("LIMIT") {
            return Err(
                "GROUP_CONCAT with DISTINCT, ORDER BY or LIMIT is not supported yet".into(),
            );
        }
        let sep = match args.iter().position(|t| t.is_word(sql, "SEPARATOR")) {
            Some(p) => match &args[p + 1..] {
                [lit] if lit.kind == TokenKind::Str => unescape(lit.text(sql)),
                _ => return Err("this GROUP_CONCAT separator".into()),
            },
            None => ",".to_string(),
        };
        if args.is_empty() || calls_aggregate(sql, args) {
            return Err("this GROUP_CONCAT".into());
        }
        self.cols.push(text(sql, item.expr).to_string());
        let col = self.cols.len() - 1;
        let max_len = match self.max_len_col {
            Some(c) => c,
            None => {
                self.cols.push("@@group_concat_max_len".to_string());
                self.max_len_col = Some(self.cols.len() - 1);
                self.cols.len() - 1
            }
        };
        self.separators.push(sep);
        self.push_output(Output::GroupConcat {
            col,
            sep: self.separators.len() - 1,
            max_len,
        });
        Ok(())
    }

    /// `f(DISTINCT inner)`: only COUNT of one expression, which the
    /// fragments group by too.
    fn push_count_distinct(
        &mut self,
        s: &Select<'_>,
        f: &str,
        inner: &[Token],
    ) -> Result<(), String> {
        let sql = s.sql;
        if f != "COUNT" || inner.is_empty() || split_commas(sql, inner).len() != 1 {
            return Err(format!(
                "{f}(DISTINCT ...) other than COUNT(DISTINCT x) is not supported yet"
            ));
        }
        if calls_aggregate(sql, inner) {
            return Err("an aggregate inside COUNT(DISTINCT ...)".into());
        }
        let e = text(sql, inner).to_string();
        let nm = norm(sql, inner);
        let v = match &self.distinct_by {
            Some((_, other, v)) if *other == nm => *v,
            Some(_) => {
                return Err(
                    "COUNT(DISTINCT ...) of more than one expression is not supported yet".into(),
                )
            }
            None => {
                self.cols.push(e.clone());
                let col = self.cols.len() - 1;
                let weight = Some(push_weights(&mut self.cols, &e));
                let v = Val { col, weight };
                self.distinct_by = Some((e, nm, v));
                v
            }
        };
        self.push_output(Output::CountDistinct(v));
        Ok(())
    }

    /// The order of the groups: ORDER BY items as outputs, else (GROUP BY
    /// without ORDER BY NULL) the grouping keys, as MariaDB sorts them.
    fn order(&mut self, s: &Select<'_>) -> Result<Vec<OrderKey>, String> {
        let mut order = Vec::new();
        for (o, desc) in &s.order_items {
            let out = match s.find_item(o) {
                Some(i) => i,
                None => {
                    let want = norm(s.sql, o);
                    match self
                        .key_of(&want)
                        .and_then(|k| self.key_out.get(&k).copied())
                    {
                        Some(i) => i,
                        None => {
                            return Err("ORDER BY something that is not in the select list".into())
                        }
                    }
                }
            };
            let weight = match self.outputs[out] {
                Output::Key(k) => self.keys[k].weight,
                Output::Min(v) | Output::Max(v) => v.weight,
                Output::GroupConcat { .. } => {
                    return Err("ORDER BY a GROUP_CONCAT across partitions".into())
                }
                _ => None,
            };
            order.push(OrderKey {
                col: out,
                weight,
                desc: *desc,
            });
        }
        if order.is_empty() && s.c.group.is_some() && !s.order_by_null {
            for k in 0..self.keys.len() {
                order.push(OrderKey {
                    col: self.key_output(k),
                    weight: self.keys[k].weight,
                    desc: false,
                });
            }
        }
        Ok(order)
    }
}

/// `0`, `-1`, `+42`: what GROUP BY would read as a column position.
fn is_integer_literal(text: &str) -> bool {
    let t = text.trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t).trim_start();
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}
