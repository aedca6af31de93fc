//! SELECTs over several partitions whose rows must be merged at the proxy:
//! ORDER BY / LIMIT (a k-way merge of sorted partition streams), and
//! aggregates, GROUP BY and DISTINCT (partial aggregates per partition,
//! combined at the proxy).
//!
//! Each partition runs a *fragment*: the statement with its table renamed
//! and its select list changed to what the merge needs. Values are compared
//! as the server compares them (`crate::value`): for strings the fragment
//! also returns `WEIGHT_STRING(x)` and the weight of a space in x's
//! collation, so the proxy orders and groups by the backend's own
//! collation rules.
//!
//! ```text
//! SELECT a, SUM(b) FROM T WHERE w GROUP BY a ORDER BY 2 DESC LIMIT 5
//!   fragment: SELECT a, WEIGHT_STRING(a), <space weight of a>, SUM(b)
//!             FROM `T_p` AS `T` WHERE w GROUP BY a
//!   proxy:    group by weight(a), add the SUMs, order by SUM desc, cut at 5
//! ```
//!
//! Here: the `MergePlan` types and sorted merges. `select` reads the select
//! list and clauses, `group` builds partial-group fragments, `having`
//! parses HAVING, `ship` describes tables copied next to the fragments.

use std::collections::HashMap;

use hscale_sql::{Token, TokenKind};

use super::{is_name, physical_name, unquote, Plan, TableRef};
use crate::dictionary::Target;

mod group;
mod having;
pub(super) mod select;
mod ship;

use group::push_weights;
pub use having::{ArithOp, CmpOp, Having};
pub(super) use select::calls_aggregate;
use select::{clauses, limit_values, norm, parse_item, split_commas, text, Clauses, Item};
pub use ship::Ship;

/// Where one fragment runs: its backend (and a label for EXPLAIN), and the
/// physical table each partitioned reference becomes there.
pub(super) struct Slot<'a> {
    pub target: Target,
    pub refs: Vec<(&'a TableRef, Target)>,
    /// Key IN lists cut to `target`'s keys (`in_lists.rs`; single-table
    /// statements only).
    pub lists: &'a [super::in_lists::KeyList],
}

/// What the statement reads, for refusals.
pub(super) struct What {
    pub table: String,
    pub hint: String,
}

/// The statement with every reference of `slot` renamed.
pub(super) fn rewrite_slot(sql: &str, tokens: &[Token], slot: &Slot<'_>) -> String {
    rewrite(sql, tokens, slot, false)
}

/// [`rewrite_slot`] for a statement whose column labels the client sees:
/// a select item without an alias that contains a renamed reference (a
/// subquery) gets its own text as alias, the label one server gives it,
/// not the physical or temporary table's name.
pub(super) fn rewrite_slot_labelled(sql: &str, tokens: &[Token], slot: &Slot<'_>) -> String {
    rewrite(sql, tokens, slot, true)
}

fn rewrite(sql: &str, tokens: &[Token], slot: &Slot<'_>, labelled: bool) -> String {
    let mut refs: Vec<&(&TableRef, Target)> = slot.refs.iter().collect();
    refs.sort_by_key(|(r, _)| r.start);
    // (byte start, byte end, replacement), in statement order.
    let mut edits: Vec<(usize, usize, String)> = Vec::with_capacity(refs.len() + 2);
    for (r, t) in refs {
        let a = tokens[r.start].start as usize;
        let b = tokens[r.end - 1].end as usize;
        edits.push((a, b, physical_name(r, t, true)));
    }
    let labels = if labelled {
        labels_to_keep(sql, tokens, &slot.refs)
    } else {
        Vec::new()
    };
    for (at, label) in labels {
        edits.push((at, at, format!(" AS `{}`", label.replace('`', "``"))));
    }
    for l in slot.lists {
        edits.push(l.edit_for(sql, &slot.target));
    }
    edits.sort_by_key(|e| (e.0, e.1));
    let mut out = String::with_capacity(sql.len() + 32 * edits.len());
    let mut at = 0;
    for (a, b, with) in edits {
        if a < at {
            continue;
        }
        out.push_str(&sql[at..a]);
        out.push_str(&with);
        at = b;
    }
    out.push_str(&sql[at..]);
    out
}

/// The longest label MariaDB derives from an item's text (in characters).
const MAX_LABEL_CHARS: usize = 256;

/// The select items of the statement's SELECTs (the first one, and those
/// of derived tables and subqueries, whose labels name a derived table's
/// columns) that have no alias and contain one of `refs`: where each item
/// ends (a byte offset) and the label one server shows for it (its text).
fn labels_to_keep(
    sql: &str,
    tokens: &[Token],
    refs: &[(&TableRef, Target)],
) -> Vec<(usize, String)> {
    if !tokens.first().is_some_and(|t| t.is_word(sql, "SELECT")) {
        return Vec::new();
    }
    // Each SELECT with the parenthesis around it, and where each
    // parenthesis closes (one pass).
    let mut selects: Vec<(usize, Option<usize>)> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut closes: HashMap<usize, usize> = HashMap::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.is_punct(sql, "(") {
            open.push(i);
        } else if t.is_punct(sql, ")") {
            if let Some(o) = open.pop() {
                closes.insert(o, i);
            }
        } else if t.is_word(sql, "SELECT") {
            selects.push((i, open.last().copied()));
        }
    }
    // Nested SELECTs are read in a budget of tokens linear in the
    // statement (past it, deeper ones keep the server's labels).
    let mut budget = 4 * tokens.len() + 1024;
    let mut out = Vec::new();
    for (at, around) in selects {
        // The SELECT's tokens: up to the parenthesis that closes around it.
        let end = around
            .and_then(|o| closes.get(&o).copied())
            .unwrap_or(tokens.len());
        let Some(left) = budget.checked_sub(end - at) else {
            break;
        };
        budget = left;
        let select = &tokens[at..end];
        let (from, to) = match clauses(sql, select) {
            Ok(c) => c.items,
            Err(_) => match items_without_from(sql, select) {
                Some(items) => items,
                None => continue,
            },
        };
        if from >= to {
            continue;
        }
        let mut first = at + from;
        for part in split_commas(sql, &select[from..to]) {
            let range = first..first + part.len();
            first += part.len() + 1;
            let item = parse_item(sql, part);
            if item.alias.is_some() || part.is_empty() {
                continue;
            }
            if refs.iter().any(|(r, _)| range.contains(&r.start)) {
                let label: String = text(sql, part).chars().take(MAX_LABEL_CHARS).collect();
                out.push((part[part.len() - 1].end as usize, label));
            }
        }
    }
    out
}

/// The select items (token range) of a SELECT that `clauses` does not
/// read, one without FROM (`SELECT (SELECT COUNT(*) FROM t)`): after the
/// modifiers, up to the first clause outside parentheses.
fn items_without_from(sql: &str, tokens: &[Token]) -> Option<(usize, usize)> {
    const MODIFIERS: &[&str] = &[
        "ALL",
        "DISTINCT",
        "DISTINCTROW",
        "HIGH_PRIORITY",
        "STRAIGHT_JOIN",
        "SQL_SMALL_RESULT",
        "SQL_BIG_RESULT",
        "SQL_BUFFER_RESULT",
        "SQL_CACHE",
        "SQL_NO_CACHE",
        "SQL_CALC_FOUND_ROWS",
    ];
    const ENDS: &[&str] = &[
        "FROM",
        "WHERE",
        "GROUP",
        "HAVING",
        "ORDER",
        "LIMIT",
        "INTO",
        "FOR",
        "LOCK",
        "UNION",
        "EXCEPT",
        "INTERSECT",
        "WINDOW",
    ];
    let mut from = 1;
    while tokens
        .get(from)
        .is_some_and(|t| MODIFIERS.iter().any(|m| t.is_word(sql, m)))
    {
        from += 1;
    }
    let mut depth = 0i32;
    let mut to = tokens.len();
    for (i, t) in tokens.iter().enumerate().skip(from) {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0
            && (t.kind == TokenKind::Semicolon || ENDS.iter().any(|w| t.is_word(sql, w)))
        {
            to = i;
            break;
        }
    }
    (from < to).then_some((from, to))
}

/// How the proxy merges the partitions' rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergePlan {
    /// The fragment for each partition.
    pub parts: Vec<(Target, String)>,
    pub mode: Mode,
    /// Order of the rows the client gets (empty: any order).
    pub order: Vec<OrderKey>,
    pub offset: u64,
    pub limit: Option<u64>,
    /// Tables copied into a temporary table on every part's connection
    /// before its fragment runs (joins that are not co-partitioned).
    pub ship: Vec<Ship>,
    /// For a read: the same statement on one server with copies of its
    /// partitioned tables, used when the values turn out not to merge
    /// exactly (floating-point sums, ENUM ordering).
    pub fallback: Option<Box<MergePlan>>,
    /// The same sorted merge with the select aliases an ORDER BY
    /// expression names (`ORDER BY b + 1` of `balance AS b`) written as
    /// their select items, run when a part answers 1054: the fragment
    /// sorts on its own `ORDER BY` but reads the key in its select list,
    /// where a server sees no aliases. In an ORDER BY expression a table
    /// column wins over an alias of its name, so the name is tried as a
    /// column first; 1054 says it is none, and one server then reads
    /// the alias.
    pub aliased: Option<Box<MergePlan>>,
}

impl MergePlan {
    /// The parts' rows one part after another, in no particular order
    /// (a read over several partitions that the proxy must limit as a
    /// whole).
    pub fn concatenation(parts: Vec<(Target, String)>) -> MergePlan {
        MergePlan {
            parts,
            mode: Mode::Sort { hidden: 0 },
            order: Vec::new(),
            offset: 0,
            limit: None,
            ship: Vec::new(),
            fallback: None,
            aliased: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Partition rows are the client's rows plus `hidden` trailing columns
    /// (sort keys and their weights); order keys index the hidden block.
    Sort { hidden: usize },
    /// Partition rows are partial groups; the client's rows are computed.
    Group(Box<GroupPlan>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPlan {
    /// Fragment columns of the grouping values.
    pub keys: Vec<Val>,
    /// The client's columns first (`visible` of them), then values only
    /// HAVING reads.
    pub outputs: Vec<Output>,
    pub visible: usize,
    /// Groups are kept when this is true.
    pub having: Option<Having>,
    /// Separators of the GROUP_CONCAT outputs.
    pub separators: Vec<String>,
    /// The statement as the client sent it, for one partition, with
    /// `LIMIT 0`: its column definitions are the client's.
    pub meta: (Target, String),
    /// Without GROUP BY: the columns that MIN and MAX read, selected
    /// with `LIMIT 0` on `meta`'s partition. A MIN or MAX of an ENUM or
    /// SET is a plain string in the result, but one server may answer it
    /// by member order (reading an index's end); this query's column
    /// flags tell, and such a statement is then run on copies.
    pub enum_probe: Option<String>,
    /// A GROUP BY item names a select alias, which one server reads as a
    /// column of that name if the table has one (warning 1052).
    pub groups_by_alias: bool,
}

/// A fragment column and, for strings, its weight and space-weight columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Val {
    pub col: usize,
    pub weight: Option<(usize, usize)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The value of grouping key `n`.
    Key(usize),
    /// COUNT: partial counts added up.
    Count(usize),
    /// SUM: partial sums added up, NULL when all are NULL.
    Sum(usize),
    Min(Val),
    Max(Val),
    /// AVG: partial SUM and COUNT columns.
    Avg {
        sum: usize,
        count: usize,
    },
    BitAnd(usize),
    BitOr(usize),
    BitXor(usize),
    /// COUNT(DISTINCT x): the fragments group by x too; the proxy counts
    /// the distinct non-NULL values of each group.
    CountDistinct(Val),
    /// GROUP_CONCAT(x [SEPARATOR s]): the partial strings joined with
    /// `separators[sep]`, cut at `@@group_concat_max_len` (column `max_len`).
    GroupConcat {
        col: usize,
        sep: usize,
        max_len: usize,
    },
}

/// An order key. In `Mode::Sort` the columns are offsets into the hidden
/// block; in `Mode::Group`, `col` is a client column (its weights are the
/// key's or the MIN/MAX's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderKey {
    pub col: usize,
    pub weight: Option<(usize, usize)>,
    pub desc: bool,
}

/// How many times its statement's size a fragment's select list may grow
/// by repeating select items (see `Select::check_growth`).
const MAX_GROWTH: usize = 16;

fn refuse(what: &What, n: usize, why: &str) -> Plan {
    Plan::Refuse(format!(
        "{why}, over {n} partitions of {} ({})",
        what.table, what.hint
    ))
}

/// A SELECT taken apart for merging over `slots`: its clauses, select
/// items, ORDER BY items and LIMIT.
struct Select<'a> {
    sql: &'a str,
    tokens: &'a [Token],
    slots: &'a [Slot<'a>],
    what: &'a What,
    c: Clauses,
    items: Vec<Item<'a>>,
    /// Each item's expression as `norm` writes it, and whether it calls an
    /// aggregate.
    item_norms: Vec<String>,
    item_aggregates: Vec<bool>,
    /// The first item with each alias (lowercase) and with each `norm`.
    by_alias: HashMap<String, usize>,
    by_norm: HashMap<String, usize>,
    /// Aggregates or GROUP BY.
    grouped: bool,
    /// ORDER BY items other than NULL, and whether each is DESC.
    order_items: Vec<(&'a [Token], bool)>,
    order_by_null: bool,
    offset: u64,
    limit: Option<u64>,
}

impl<'a> Select<'a> {
    /// The statement's parts, or the refusal of what the merge cannot do.
    fn new(
        sql: &'a str,
        tokens: &'a [Token],
        slots: &'a [Slot<'a>],
        what: &'a What,
    ) -> Result<Select<'a>, String> {
        let c = match clauses(sql, tokens) {
            Ok(c) => c,
            Err(what) => return Err(format!("{what} is not supported")),
        };
        let items: Vec<Item> = split_commas(sql, &tokens[c.items.0..c.items.1])
            .into_iter()
            .map(|t| parse_item(sql, t))
            .collect();
        if items.iter().any(|i| i.expr.is_empty()) {
            return Err("an empty select item".into());
        }
        let item_norms: Vec<String> = items.iter().map(|i| norm(sql, i.expr)).collect();
        let item_aggregates: Vec<bool> =
            items.iter().map(|i| calls_aggregate(sql, i.expr)).collect();
        let mut by_alias = HashMap::new();
        let mut by_norm = HashMap::new();
        for (n, item) in items.iter().enumerate() {
            if let Some(a) = &item.alias {
                by_alias.entry(a.to_ascii_lowercase()).or_insert(n);
            }
            by_norm.entry(item_norms[n].clone()).or_insert(n);
        }
        let (offset, limit) = match c.limit {
            Some((a, b)) => match limit_values(sql, &tokens[a..b]) {
                Some((o, l)) => (o, Some(l)),
                None => return Err("a LIMIT that is not plain numbers".into()),
            },
            None => (0, None),
        };
        let grouped = c.group.is_some() || item_aggregates.contains(&true);
        if c.having.is_some() && !grouped {
            return Err("HAVING without GROUP BY or aggregates".into());
        }
        if c.lock.is_some() {
            check_lock(grouped || c.distinct, limit.is_some(), slots)?;
        }
        let order_items: Vec<(&[Token], bool)> = match c.order {
            Some((a, b)) => split_commas(sql, &tokens[a..b])
                .into_iter()
                .map(|o| match o {
                    [rest @ .., d] if d.is_word(sql, "DESC") => (rest, true),
                    [rest @ .., d] if d.is_word(sql, "ASC") => (rest, false),
                    _ => (o, false),
                })
                .collect(),
            None => Vec::new(),
        };
        if order_items.iter().any(|(o, _)| o.is_empty()) {
            return Err("an empty ORDER BY item".into());
        }
        if order_items.iter().any(|(o, _)| {
            o.iter().any(|t| t.is_word(sql, "RAND")) || calls_aggregate(sql, o) && !grouped
        }) {
            return Err("this ORDER BY is not supported".into());
        }
        let order_by_null = order_items
            .iter()
            .any(|(o, _)| matches!(o, [x] if x.is_word(sql, "NULL")));
        let order_items: Vec<_> = order_items
            .into_iter()
            .filter(|(o, _)| !matches!(o, [x] if x.is_word(sql, "NULL")))
            .collect();
        let s = Select {
            sql,
            tokens,
            slots,
            what,
            c,
            items,
            item_norms,
            item_aggregates,
            by_alias,
            by_norm,
            grouped,
            order_items,
            order_by_null,
            offset,
            limit,
        };
        // Positions must name a select item, and cannot count through a `*`.
        let by_position = |o: &[Token]| matches!(o, [x] if x.kind == TokenKind::Number);
        let has_star = s.items.iter().any(|i| s.is_star(i));
        if s.order_items
            .iter()
            .any(|(o, _)| by_position(o) && (has_star || s.find_item(o).is_none()))
        {
            return Err("ORDER BY a position that is not a plain select item".into());
        }
        Ok(s)
    }

    fn refuse(&self, why: &str) -> Plan {
        refuse(self.what, self.slots.len(), why)
    }

    /// Refuse fragments that would repeat select items (`ORDER BY 1, 1,
    /// ...`) into text of `grown` bytes, more than `MAX_GROWTH` times the
    /// statement plus 64 KiB: planning stays linear in the statement's size.
    fn check_growth(&self, grown: usize) -> Result<(), String> {
        if grown > MAX_GROWTH * self.sql.len() + 65536 {
            return Err("ORDER BY or GROUP BY that repeats select items this often".into());
        }
        Ok(())
    }

    fn is_star(&self, i: &Item) -> bool {
        i.expr.last().is_some_and(|t| t.is_punct(self.sql, "*"))
    }

    /// FROM ... WHERE ..., with the tables renamed for `slot`.
    fn body(&self, slot: &Slot<'_>) -> String {
        let (sql, tokens) = (self.sql, self.tokens);
        let a = tokens[self.c.from].start as usize;
        let b = tokens
            .get(self.c.body_end)
            .map_or(sql.len(), |t| t.start as usize);
        let whole = rewrite_slot(sql, tokens, slot);
        // The rewrite changed the text after the reference only by the
        // name's length: shift the end.
        let delta = whole.len() as isize - sql.len() as isize;
        whole[a..(b as isize + delta) as usize]
            .trim_end()
            .to_string()
    }

    /// The select item an ORDER BY / GROUP BY item names: by position,
    /// alias or identical expression.
    fn find_item(&self, t: &[Token]) -> Option<usize> {
        let sql = self.sql;
        if let [x] = t {
            if x.kind == TokenKind::Number {
                let p: usize = x.text(sql).parse().ok()?;
                return (1..=self.items.len()).contains(&p).then(|| p - 1);
            }
            if is_name(x) {
                if let Some(i) = self.item_by_alias(&unquote(x, sql)) {
                    return Some(i);
                }
            }
        }
        self.item_by_norm(&norm(sql, t))
    }

    /// The first select item with alias `name` (ignoring ASCII case).
    fn item_by_alias(&self, name: &str) -> Option<usize> {
        self.by_alias.get(&name.to_ascii_lowercase()).copied()
    }

    /// The first select item whose expression is `norm`.
    fn item_by_norm(&self, norm: &str) -> Option<usize> {
        self.by_norm.get(norm).copied()
    }

    /// ORDER BY / LIMIT: a k-way merge of the partitions' sorted rows.
    fn plan_sorted(&self) -> Plan {
        let plan = match self.sorted(false) {
            Ok(m) => m,
            Err(why) => return self.refuse(&why),
        };
        match self.sorted(true) {
            Ok(aliased) if aliased.parts != plan.parts => Plan::Merge(MergePlan {
                aliased: Some(Box::new(aliased)),
                ..plan
            }),
            Ok(_) => Plan::Merge(plan),
            Err(why) => self.refuse(&why),
        }
    }

    /// An ORDER BY expression that is no select item, with the select
    /// aliases it names written as `(item)` when `is_aliased`.
    fn order_expr(&self, o: &[Token], is_aliased: bool) -> String {
        let sql = self.sql;
        if !is_aliased {
            return text(sql, o).to_string();
        }
        let mut out = String::new();
        let mut at = o.first().map_or(0, |t| t.start as usize);
        for (k, t) in o.iter().enumerate() {
            let is_qualified = k > 0 && o[k - 1].is_punct(sql, ".")
                || o.get(k + 1).is_some_and(|n| n.is_punct(sql, "."));
            let is_call = o.get(k + 1).is_some_and(|n| n.is_punct(sql, "("));
            if !is_name(t) || is_qualified || is_call {
                continue;
            }
            let Some(i) = self.item_by_alias(&unquote(t, sql)) else {
                continue;
            };
            if self.is_star(&self.items[i]) {
                continue;
            }
            out.push_str(&sql[at..t.start as usize]);
            out.push('(');
            out.push_str(text(sql, self.items[i].expr));
            out.push(')');
            at = t.end as usize;
        }
        out.push_str(&sql[at..o.last().map_or(at, |t| t.end as usize)]);
        out
    }

    /// The sorted merge, ORDER BY expressions read as `order_expr` does.
    fn sorted(&self, is_aliased: bool) -> Result<MergePlan, String> {
        let (sql, tokens, c, items) = (self.sql, self.tokens, &self.c, &self.items);
        let (offset, limit) = (self.offset, self.limit);
        let mut hidden: Vec<String> = Vec::new();
        let mut order = Vec::new();
        let mut grown = 0usize;
        for (o, desc) in &self.order_items {
            let expr = match self.find_item(o) {
                Some(i) if self.is_star(&items[i]) => {
                    return Err("ORDER BY the position of a * column".into())
                }
                Some(i) => text(sql, items[i].expr).to_string(),
                None => self.order_expr(o, is_aliased),
            };
            grown += 3 * expr.len();
            self.check_growth(grown)?;
            hidden.push(expr.clone());
            let col = hidden.len() - 1;
            let weight = push_weights(&mut hidden, &expr);
            order.push(OrderKey {
                col,
                weight: Some(weight),
                desc: *desc,
            });
        }
        let items_text = text(sql, &tokens[c.items.0..c.items.1]);
        let tail = match (c.order, limit) {
            (Some((a, b)), _) => {
                let order_text = text(sql, &tokens[a..b]);
                match limit {
                    Some(l) => format!(" ORDER BY {order_text} LIMIT {}", offset.saturating_add(l)),
                    None => format!(" ORDER BY {order_text}"),
                }
            }
            (None, Some(l)) => format!(" LIMIT {}", offset.saturating_add(l)),
            (None, None) => String::new(),
        };
        let lock = c.lock.map(|at| text(sql, &tokens[at..]));
        let modifiers = text(sql, &tokens[1..c.items.0]);
        let parts = self
            .slots
            .iter()
            .map(|slot| {
                let mut s = String::from("SELECT ");
                if !modifiers.is_empty() {
                    s.push_str(modifiers);
                    s.push(' ');
                }
                s.push_str(items_text);
                // Each sort key under a name of its own: a bare column
                // would also answer to its name in the fragment's ORDER
                // BY, beside a select alias of that name (`SELECT oid AS
                // k, k AS oid ... ORDER BY k, oid`: 1052 "Column 'k' in
                // ORDER BY is ambiguous"), where one server's statement
                // reads the alias. Aliased, it only answers where no
                // select item does, as the column itself would.
                for (n, h) in hidden.iter().enumerate() {
                    s.push_str(", ");
                    s.push_str(h);
                    s.push_str(" AS `hscale_sort_");
                    s.push_str(&n.to_string());
                    s.push('`');
                }
                s.push(' ');
                s.push_str(&self.body(slot));
                s.push_str(&tail);
                if let Some(lock) = lock {
                    s.push(' ');
                    s.push_str(lock);
                }
                (slot.target.clone(), s)
            })
            .collect();
        Ok(MergePlan {
            parts,
            mode: Mode::Sort {
                hidden: hidden.len(),
            },
            order,
            offset,
            limit,
            ship: Vec::new(),
            fallback: None,
            aliased: None,
        })
    }
}

/// Whether a locking read (`FOR UPDATE ...`, `LOCK IN SHARE MODE ...`)
/// can run over several partitions: each part locks the rows it reads, in
/// the statement's transaction (on its branch of each backend), and
/// without a LIMIT the parts read, and lock, the rows one server would
/// (SKIP LOCKED, NOWAIT and WAIT n alike). With a LIMIT each part would
/// read and lock up to offset + count rows of its own before the merge
/// cuts them: rows one server leaves unlocked, which another session's
/// SKIP LOCKED read would then skip (a different answer, measured) or its
/// NOWAIT read fail on; refused. Groups and DISTINCT merge partial rows
/// (refused as well), and shipped tables are copies that lock nothing.
fn check_lock(is_grouped: bool, has_limit: bool, slots: &[Slot<'_>]) -> Result<(), String> {
    if is_grouped {
        return Err("locking reads (FOR UPDATE, LOCK IN SHARE MODE) with GROUP BY, DISTINCT or aggregates over several partitions".into());
    }
    if has_limit {
        return Err("locking reads (FOR UPDATE, LOCK IN SHARE MODE) with LIMIT over several partitions (each partition would lock rows beyond the ones returned)".into());
    }
    let ships = slots.iter().any(|s| {
        s.refs
            .iter()
            .any(|(_, t)| t.physical_table.starts_with("hscale_ship_"))
    });
    if ships {
        return Err("locking reads of tables shipped between partitions".into());
    }
    Ok(())
}

/// Plan a SELECT on one partitioned table that reads several partitions
/// and needs their rows merged.
pub(super) fn plan_merge(sql: &str, tokens: &[Token], slots: &[Slot<'_>], what: &What) -> Plan {
    let s = match Select::new(sql, tokens, slots, what) {
        Ok(s) => s,
        Err(why) => return refuse(what, slots.len(), &why),
    };
    if !s.grouped && !s.c.distinct {
        return s.plan_sorted();
    }
    group::plan_grouped(&s)
}
