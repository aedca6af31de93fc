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

use hscale_sql::{Token, TokenKind};

use super::{is_name, physical_name, unquote, Plan, TableRef};
use std::collections::BTreeSet;

use crate::dictionary::{PartitionedTable, TableName, Target};

/// Where one fragment runs: its backend (and a label for EXPLAIN), and the
/// physical table each partitioned reference becomes there.
pub(super) struct Slot<'a> {
    pub target: Target,
    pub refs: Vec<(&'a TableRef, Target)>,
}

/// What the statement reads, for refusals.
pub(super) struct What {
    pub table: String,
    pub hint: String,
}

/// The statement with every reference of `slot` renamed.
pub(super) fn rewrite_slot(sql: &str, tokens: &[Token], slot: &Slot<'_>) -> String {
    let mut refs: Vec<&(&TableRef, Target)> = slot.refs.iter().collect();
    refs.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut out = sql.to_string();
    for (r, t) in refs {
        let a = tokens[r.start].start as usize;
        let b = tokens[r.end - 1].end as usize;
        out.replace_range(a..b, &physical_name(r, t, true));
    }
    out
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
}

/// A table shipped to every part: its rows (read from `sources`) are
/// inserted into the temporary table `temp` (in database `db`), created
/// like `like` (`db`, table, backend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ship {
    pub db: String,
    pub temp: String,
    pub like: (usize, String),
    pub sources: Vec<(Target, String)>,
}

impl Ship {
    /// The `n`-th shipped table of a statement: partitioned `table` (named
    /// in database `db`), read from the partitions `allowed` (none or an
    /// empty set: all of them).
    pub(super) fn partitioned(
        n: usize,
        db: &str,
        table: &PartitionedTable,
        allowed: Option<&BTreeSet<Target>>,
    ) -> Ship {
        let sources = match allowed {
            Some(set) if !set.is_empty() => set.iter().cloned().collect(),
            _ => table.all_targets(),
        };
        Ship {
            db: db.to_string(),
            temp: format!("hscale_ship_{n}"),
            like: (table.default_backend, table.default_table.clone()),
            sources: sources
                .into_iter()
                .map(|t| {
                    let q = select_all(db, &t.physical_table);
                    (t, q)
                })
                .collect(),
        }
    }

    /// The `n`-th shipped table: an unpartitioned table on the main backend.
    pub(super) fn plain(n: usize, name: &TableName) -> Ship {
        Ship {
            db: name.db.clone(),
            temp: format!("hscale_ship_{n}"),
            like: (0, name.table.clone()),
            sources: vec![(
                Target {
                    backend: 0,
                    physical_table: name.table.clone(),
                },
                select_all(&name.db, &name.table),
            )],
        }
    }
}

fn select_all(db: &str, table: &str) -> String {
    format!(
        "SELECT * FROM `{}`.`{}`",
        db.replace('`', "``"),
        table.replace('`', "``")
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Partition rows are the client's rows plus `hidden` trailing columns
    /// (sort keys and their weights); order keys index the hidden block.
    Sort { hidden: usize },
    /// Partition rows are partial groups; the client's rows are computed.
    Group(GroupPlan),
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

/// A HAVING condition over the outputs of a group, evaluated at the proxy
/// on exact numbers with SQL's three-valued logic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Having {
    Or(Box<Having>, Box<Having>),
    And(Box<Having>, Box<Having>),
    Not(Box<Having>),
    Cmp(CmpOp, Box<Having>, Box<Having>),
    IsNull(Box<Having>, bool),
    Arith(ArithOp, Box<Having>, Box<Having>),
    Neg(Box<Having>),
    /// A number literal, as written.
    Num(String),
    Null,
    /// Output `n` of the group.
    Out(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NullSafeEq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
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

/// One item of the select list.
struct Item<'t> {
    tokens: &'t [Token],
    /// The expression (without the alias).
    expr: &'t [Token],
    alias: Option<String>,
}

const AGGREGATES: &[&str] = &[
    "COUNT", "SUM", "MIN", "MAX", "AVG", "BIT_AND", "BIT_OR", "BIT_XOR",
];

/// Aggregate-like functions the merge does not do (yet).
const UNMERGEABLE: &[&str] = &[
    "GROUP_CONCAT",
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
    "JSON_ARRAYAGG",
    "JSON_OBJECTAGG",
    "FOUND_ROWS",
    "ROW_NUMBER",
    "RANK",
    "DENSE_RANK",
    "PERCENT_RANK",
    "CUME_DIST",
    "NTILE",
    "LAG",
    "LEAD",
    "FIRST_VALUE",
    "LAST_VALUE",
    "NTH_VALUE",
    "MEDIAN",
    "PERCENTILE_CONT",
    "PERCENTILE_DISC",
];

fn refuse(what: &What, n: usize, why: &str) -> Plan {
    Plan::Refuse(format!(
        "{why}, over {n} partitions of {} ({})",
        what.table, what.hint
    ))
}

/// Split `t` at depth-0 commas.
fn split_commas<'t>(sql: &str, t: &'t [Token]) -> Vec<&'t [Token]> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, x) in t.iter().enumerate() {
        if x.is_punct(sql, "(") {
            depth += 1;
        } else if x.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 && x.is_punct(sql, ",") {
            out.push(&t[start..i]);
            start = i + 1;
        }
    }
    out.push(&t[start..]);
    out
}

/// The source text of a token range.
fn text<'s>(sql: &'s str, t: &[Token]) -> &'s str {
    match (t.first(), t.last()) {
        (Some(a), Some(b)) => &sql[a.start as usize..b.end as usize],
        _ => "",
    }
}

/// An expression normalized for matching (`ORDER BY SUM(x)` against the
/// select item `sum( x )`): tokens joined by spaces, words lowercased.
fn norm(sql: &str, t: &[Token]) -> String {
    let mut out = String::new();
    for x in t {
        if !out.is_empty() {
            out.push(' ');
        }
        match x.kind {
            TokenKind::Word => out.push_str(&x.text(sql).to_ascii_lowercase()),
            TokenKind::QuotedIdent => out.push_str(&unquote(x, sql).to_ascii_lowercase()),
            _ => out.push_str(x.text(sql)),
        }
    }
    out
}

fn parse_item<'t>(sql: &str, t: &'t [Token]) -> Item<'t> {
    // `expr AS alias`, `expr alias` (a name after a complete expression).
    let n = t.len();
    if n >= 3
        && t[n - 2].is_word(sql, "AS")
        && (is_name(&t[n - 1]) || t[n - 1].kind == TokenKind::Str)
    {
        return Item {
            tokens: t,
            expr: &t[..n - 2],
            alias: Some(alias_text(sql, &t[n - 1])),
        };
    }
    if n >= 2 && (is_name(&t[n - 1]) || t[n - 1].kind == TokenKind::Str) {
        let prev = &t[n - 2];
        let ends_expr = is_name(prev)
            || prev.is_punct(sql, ")")
            || matches!(prev.kind, TokenKind::Str | TokenKind::Number);
        let is_qualified = prev.is_punct(sql, ".");
        if ends_expr && !is_qualified && !(n == 2 && prev.is_word(sql, "DISTINCT")) {
            return Item {
                tokens: t,
                expr: &t[..n - 1],
                alias: Some(alias_text(sql, &t[n - 1])),
            };
        }
    }
    Item {
        tokens: t,
        expr: t,
        alias: None,
    }
}

fn alias_text(sql: &str, t: &Token) -> String {
    match t.kind {
        TokenKind::Str => super::unescape(t.text(sql)),
        _ => unquote(t, sql),
    }
}

/// `FUNC ( args )` when the whole expression is one aggregate call.
fn aggregate_call<'t>(sql: &str, e: &'t [Token]) -> Option<(String, &'t [Token])> {
    let f = e.first()?;
    if f.kind != TokenKind::Word
        || e.len() < 3
        || !e[1].is_punct(sql, "(")
        || !e[e.len() - 1].is_punct(sql, ")")
    {
        return None;
    }
    let name = f.text(sql).to_ascii_uppercase();
    if !AGGREGATES.contains(&name.as_str()) {
        return None;
    }
    // The parentheses must enclose the rest.
    let mut depth = 0;
    for (i, x) in e[1..].iter().enumerate() {
        if x.is_punct(sql, "(") {
            depth += 1;
        } else if x.is_punct(sql, ")") {
            depth -= 1;
            if depth == 0 && i + 2 != e.len() {
                return None;
            }
        }
    }
    Some((name, &e[2..e.len() - 1]))
}

/// Whether a token range calls any aggregate function.
pub(super) fn calls_aggregate(sql: &str, t: &[Token]) -> bool {
    t.windows(2).any(|w| {
        w[1].is_punct(sql, "(")
            && w[0].kind == TokenKind::Word
            && (AGGREGATES
                .iter()
                .chain(UNMERGEABLE)
                .any(|f| w[0].is_word(sql, f)))
    })
}

/// The clauses of a single SELECT, by token index.
struct Clauses {
    items: (usize, usize),
    distinct: bool,
    from: usize,
    body_end: usize,
    group: Option<(usize, usize)>,
    having: Option<(usize, usize)>,
    order: Option<(usize, usize)>,
    limit: Option<(usize, usize)>,
}

fn clauses(sql: &str, t: &[Token]) -> Result<Clauses, String> {
    let mut depth = 0i32;
    let mut at: Vec<(usize, &'static str)> = Vec::new();
    for (i, x) in t.iter().enumerate() {
        if x.is_punct(sql, "(") {
            depth += 1;
            continue;
        }
        if x.is_punct(sql, ")") {
            depth -= 1;
            continue;
        }
        if depth != 0 || x.kind != TokenKind::Word {
            continue;
        }
        let next_by = t.get(i + 1).is_some_and(|n| n.is_word(sql, "BY"));
        let k = match x.text(sql).to_ascii_uppercase().as_str() {
            "FROM" if !at.iter().any(|a| a.1 == "FROM") => "FROM",
            "GROUP" if next_by => "GROUP",
            "ORDER" if next_by => "ORDER",
            "HAVING" => "HAVING",
            "LIMIT" => "LIMIT",
            "WITH" => return Err("WITH ROLLUP".into()),
            "INTO" => return Err("SELECT ... INTO".into()),
            "FOR" | "LOCK" => return Err("locking reads (FOR UPDATE, LOCK IN SHARE MODE)".into()),
            "WINDOW" | "OVER" => return Err("window functions".into()),
            "PROCEDURE" => return Err("PROCEDURE".into()),
            "SQL_CALC_FOUND_ROWS" => return Err("SQL_CALC_FOUND_ROWS".into()),
            "FETCH" => return Err("FETCH FIRST/NEXT".into()),
            // `LIMIT n OFFSET m` only: elsewhere `offset` is a name.
            "OFFSET"
                if i >= 2
                    && t[i - 2].is_word(sql, "LIMIT")
                    && t[i - 1].kind == TokenKind::Number =>
            {
                "OFFSET"
            }
            _ => continue,
        };
        at.push((i, k));
    }
    let Some(from) = at.iter().find(|a| a.1 == "FROM").map(|a| a.0) else {
        return Err("a SELECT without FROM".into());
    };
    let mut items_start = 1;
    let mut distinct = false;
    while let Some(m) = t.get(items_start) {
        let up = m.text(sql).to_ascii_uppercase();
        match up.as_str() {
            "DISTINCT" | "DISTINCTROW" => distinct = true,
            "ALL" | "HIGH_PRIORITY" | "STRAIGHT_JOIN" | "SQL_SMALL_RESULT" | "SQL_BIG_RESULT"
            | "SQL_BUFFER_RESULT" | "SQL_NO_CACHE" | "SQL_CACHE" => {}
            _ => break,
        }
        items_start += 1;
    }
    let range_of = |k: &str| -> Option<(usize, usize)> {
        let pos = at.iter().position(|a| a.1 == k)?;
        let start = at[pos].0 + if k == "GROUP" || k == "ORDER" { 2 } else { 1 };
        let end = at
            .iter()
            .skip(pos + 1)
            .find(|a| a.1 != "OFFSET" || k != "LIMIT")
            .map_or(t.len(), |a| a.0);
        Some((start, end))
    };
    let body_end = at
        .iter()
        .find(|a| a.0 > from && a.1 != "FROM")
        .map_or(t.len(), |a| a.0);
    Ok(Clauses {
        items: (items_start, from),
        distinct,
        from,
        body_end,
        group: range_of("GROUP"),
        having: range_of("HAVING"),
        order: range_of("ORDER"),
        limit: range_of("LIMIT"),
    })
}

/// `LIMIT n`, `LIMIT m, n`, `LIMIT n OFFSET m`: (offset, count).
fn limit_values(sql: &str, t: &[Token]) -> Option<(u64, u64)> {
    let num = |x: &Token| -> Option<u64> {
        (x.kind == TokenKind::Number)
            .then(|| x.text(sql).parse().ok())
            .flatten()
    };
    match t {
        [n] => Some((0, num(n)?)),
        [m, c, n] if c.is_punct(sql, ",") => Some((num(m)?, num(n)?)),
        [n, o, m] if o.is_word(sql, "OFFSET") => Some((num(m)?, num(n)?)),
        _ => None,
    }
}

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
fn push_weights(cols: &mut Vec<String>, expr: &str) -> (usize, usize) {
    cols.push(format!("WEIGHT_STRING({expr})"));
    cols.push(format!("WEIGHT_STRING(LEFT(CONCAT(' ', {expr}), 1))"));
    (cols.len() - 2, cols.len() - 1)
}

/// The fragment columns of one aggregate call and how it is combined.
fn push_aggregate(cols: &mut Vec<String>, f: &str, a: &str) -> Output {
    let push = |cols: &mut Vec<String>, e: String| {
        cols.push(e);
        cols.len() - 1
    };
    match f {
        "COUNT" => Output::Count(push(cols, format!("COUNT({a})"))),
        "SUM" => Output::Sum(push(cols, format!("SUM({a})"))),
        "AVG" => {
            let sum = push(cols, format!("SUM({a})"));
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

/// Recursive descent over a HAVING condition: references to select items
/// (by alias or identical text), grouping keys and aggregates (new ones
/// become hidden outputs), numbers, NULL, arithmetic, comparisons, logic.
struct HavingParser<'a, 't> {
    sql: &'a str,
    t: &'t [Token],
    at: usize,
    items: &'a [Item<'t>],
    key_norms: &'a [String],
    outputs: &'a mut Vec<Output>,
    cols: &'a mut Vec<String>,
}

impl HavingParser<'_, '_> {
    fn peek_word(&self, w: &str) -> bool {
        self.t.get(self.at).is_some_and(|x| x.is_word(self.sql, w))
    }
    fn peek_punct(&self, p: &str) -> bool {
        self.t.get(self.at).is_some_and(|x| x.is_punct(self.sql, p))
    }

    fn or(&mut self) -> Result<Having, String> {
        let mut l = self.and()?;
        while self.peek_word("OR") {
            self.at += 1;
            l = Having::Or(Box::new(l), Box::new(self.and()?));
        }
        if self.peek_punct("||") || self.peek_word("XOR") {
            return Err("|| or XOR in HAVING".into());
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Having, String> {
        let mut l = self.not()?;
        while self.peek_word("AND") || self.peek_punct("&&") {
            self.at += 1;
            l = Having::And(Box::new(l), Box::new(self.not()?));
        }
        Ok(l)
    }

    fn not(&mut self) -> Result<Having, String> {
        if self.peek_punct("!") {
            // `!` binds tighter than comparisons, unlike NOT.
            return Err("! in HAVING".into());
        }
        if self.peek_word("NOT") {
            self.at += 1;
            return Ok(Having::Not(Box::new(self.not()?)));
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Result<Having, String> {
        let l = self.add()?;
        if self.peek_word("IS") {
            self.at += 1;
            let negated = self.peek_word("NOT");
            if negated {
                self.at += 1;
            }
            if !self.peek_word("NULL") {
                return Err("IS other than IS [NOT] NULL in HAVING".into());
            }
            self.at += 1;
            return Ok(Having::IsNull(Box::new(l), negated));
        }
        if self.peek_word("BETWEEN") {
            self.at += 1;
            let lo = self.add()?;
            if !self.peek_word("AND") {
                return Err("BETWEEN without AND".into());
            }
            self.at += 1;
            let hi = self.add()?;
            return Ok(Having::And(
                Box::new(Having::Cmp(CmpOp::Ge, Box::new(l.clone()), Box::new(lo))),
                Box::new(Having::Cmp(CmpOp::Le, Box::new(l), Box::new(hi))),
            ));
        }
        let op = match self.t.get(self.at).map(|x| (x.kind, x.text(self.sql))) {
            Some((TokenKind::Punct, "=")) => CmpOp::Eq,
            Some((TokenKind::Punct, "<=>")) => CmpOp::NullSafeEq,
            Some((TokenKind::Punct, "<>" | "!=")) => CmpOp::Ne,
            Some((TokenKind::Punct, "<")) => CmpOp::Lt,
            Some((TokenKind::Punct, "<=")) => CmpOp::Le,
            Some((TokenKind::Punct, ">")) => CmpOp::Gt,
            Some((TokenKind::Punct, ">=")) => CmpOp::Ge,
            _ => return Ok(l),
        };
        self.at += 1;
        let r = self.add()?;
        Ok(Having::Cmp(op, Box::new(l), Box::new(r)))
    }

    fn add(&mut self) -> Result<Having, String> {
        let mut l = self.mul()?;
        loop {
            let op = if self.peek_punct("+") {
                ArithOp::Add
            } else if self.peek_punct("-") {
                ArithOp::Sub
            } else {
                return Ok(l);
            };
            self.at += 1;
            l = Having::Arith(op, Box::new(l), Box::new(self.mul()?));
        }
    }

    fn mul(&mut self) -> Result<Having, String> {
        let mut l = self.unary()?;
        while self.peek_punct("*") {
            self.at += 1;
            l = Having::Arith(ArithOp::Mul, Box::new(l), Box::new(self.unary()?));
        }
        if self.peek_punct("/")
            || self.peek_word("DIV")
            || self.peek_punct("%")
            || self.peek_word("MOD")
        {
            return Err("division in HAVING".into());
        }
        Ok(l)
    }

    fn unary(&mut self) -> Result<Having, String> {
        if self.peek_punct("-") {
            self.at += 1;
            return Ok(Having::Neg(Box::new(self.unary()?)));
        }
        self.primary()
    }

    /// The output for an expression, adding a hidden one if needed.
    fn output_of(&mut self, e: &[Token]) -> Result<Having, String> {
        let sql = self.sql;
        let want = norm(sql, e);
        if let [x] = e {
            if is_name(x) {
                let name = unquote(x, sql);
                if let Some(i) = self.items.iter().position(|i| {
                    i.alias
                        .as_deref()
                        .is_some_and(|a| a.eq_ignore_ascii_case(&name))
                }) {
                    return Ok(Having::Out(i));
                }
            }
        }
        if let Some(i) = self.items.iter().position(|i| norm(sql, i.expr) == want) {
            return Ok(Having::Out(i));
        }
        if let Some(k) = self.key_norms.iter().position(|k| *k == want) {
            let i = match self.outputs.iter().position(|o| *o == Output::Key(k)) {
                Some(i) => i,
                None => {
                    self.outputs.push(Output::Key(k));
                    self.outputs.len() - 1
                }
            };
            return Ok(Having::Out(i));
        }
        match aggregate_call(sql, e) {
            Some((f, args))
                if !args.is_empty()
                    && !args.first().is_some_and(|t| t.is_word(sql, "DISTINCT"))
                    && !calls_aggregate(sql, args) =>
            {
                let o = push_aggregate(self.cols, &f, text(sql, args));
                self.outputs.push(o);
                Ok(Having::Out(self.outputs.len() - 1))
            }
            _ => Err(format!("{} in HAVING", text(sql, e))),
        }
    }

    fn primary(&mut self) -> Result<Having, String> {
        let sql = self.sql;
        let Some(x) = self.t.get(self.at) else {
            return Err("an incomplete HAVING condition".into());
        };
        if x.kind == TokenKind::Number {
            self.at += 1;
            return Ok(Having::Num(x.text(sql).to_string()));
        }
        if x.is_word(sql, "NULL") {
            self.at += 1;
            return Ok(Having::Null);
        }
        if x.is_punct(sql, "(") {
            self.at += 1;
            let inner = self.or()?;
            if !self.peek_punct(")") {
                return Err("unbalanced parentheses in HAVING".into());
            }
            self.at += 1;
            return Ok(inner);
        }
        // A function call: up to its closing parenthesis.
        if x.kind == TokenKind::Word
            && self
                .t
                .get(self.at + 1)
                .is_some_and(|p| p.is_punct(sql, "("))
        {
            let mut depth = 0;
            let mut end = None;
            for (i, y) in self.t[self.at + 1..].iter().enumerate() {
                if y.is_punct(sql, "(") {
                    depth += 1;
                } else if y.is_punct(sql, ")") {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(self.at + 1 + i);
                        break;
                    }
                }
            }
            let end = end.ok_or("unbalanced parentheses in HAVING")?;
            let e = &self.t[self.at..=end];
            self.at = end + 1;
            return self.output_of(e);
        }
        // A column: `c` or `q.c`.
        if is_name(x) {
            let len = if self
                .t
                .get(self.at + 1)
                .is_some_and(|d| d.is_punct(sql, "."))
                && self.t.get(self.at + 2).is_some_and(is_name)
            {
                3
            } else {
                1
            };
            let e = &self.t[self.at..self.at + len];
            self.at += len;
            return self.output_of(e);
        }
        Err(format!("{:?} in HAVING", x.text(sql)))
    }
}

/// Plan a SELECT on one partitioned table that reads several partitions
/// and needs their rows merged.
pub(super) fn plan_merge(sql: &str, tokens: &[Token], slots: &[Slot<'_>], what: &What) -> Plan {
    let n = slots.len();
    let table = what;
    let c = match clauses(sql, tokens) {
        Ok(c) => c,
        Err(what) => return refuse(table, n, &format!("{what} is not supported")),
    };
    let items: Vec<Item> = split_commas(sql, &tokens[c.items.0..c.items.1])
        .into_iter()
        .map(|t| parse_item(sql, t))
        .collect();
    if items.iter().any(|i| i.expr.is_empty()) {
        return refuse(table, n, "an empty select item");
    }
    let (offset, limit) = match c.limit {
        Some((a, b)) => match limit_values(sql, &tokens[a..b]) {
            Some((o, l)) => (o, Some(l)),
            None => return refuse(table, n, "a LIMIT that is not plain numbers"),
        },
        None => (0, None),
    };
    let body = |slot: &Slot<'_>| -> String {
        // FROM ... WHERE ..., with the tables renamed for `slot`.
        let a = tokens[c.from].start as usize;
        let b = tokens
            .get(c.body_end)
            .map_or(sql.len(), |t| t.start as usize);
        let whole = rewrite_slot(sql, tokens, slot);
        // The rewrite changed the text after the reference only by the
        // name's length: shift the end.
        let delta = whole.len() as isize - sql.len() as isize;
        whole[a..(b as isize + delta) as usize]
            .trim_end()
            .to_string()
    };
    let is_star = |i: &Item| i.expr.last().is_some_and(|t| t.is_punct(sql, "*"));
    let grouped = c.group.is_some() || items.iter().any(|i| calls_aggregate(sql, i.expr));
    if c.having.is_some() && !grouped {
        return refuse(table, n, "HAVING without GROUP BY or aggregates");
    }
    // Matching ORDER BY / GROUP BY items to select items.
    let find_item = |t: &[Token]| -> Option<usize> {
        if let [x] = t {
            if x.kind == TokenKind::Number {
                let p: usize = x.text(sql).parse().ok()?;
                return (1..=items.len()).contains(&p).then(|| p - 1);
            }
            if is_name(x) {
                let name = unquote(x, sql);
                if let Some(i) = items.iter().position(|i| {
                    i.alias
                        .as_deref()
                        .is_some_and(|a| a.eq_ignore_ascii_case(&name))
                }) {
                    return Some(i);
                }
            }
        }
        let want = norm(sql, t);
        items.iter().position(|i| norm(sql, i.expr) == want)
    };
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
        return refuse(table, n, "an empty ORDER BY item");
    }
    if order_items.iter().any(|(o, _)| {
        o.iter().any(|t| t.is_word(sql, "RAND")) || calls_aggregate(sql, o) && !grouped
    }) {
        return refuse(table, n, "this ORDER BY is not supported");
    }
    let order_by_null = order_items
        .iter()
        .any(|(o, _)| matches!(o, [x] if x.is_word(sql, "NULL")));
    let order_items: Vec<_> = order_items
        .into_iter()
        .filter(|(o, _)| !matches!(o, [x] if x.is_word(sql, "NULL")))
        .collect();
    // Positions must name a select item, and cannot count through a `*`.
    let by_position = |o: &[Token]| matches!(o, [x] if x.kind == TokenKind::Number);
    if order_items
        .iter()
        .any(|(o, _)| by_position(o) && (items.iter().any(is_star) || find_item(o).is_none()))
    {
        return refuse(
            table,
            n,
            "ORDER BY a position that is not a plain select item",
        );
    }

    if !grouped && !c.distinct {
        // ORDER BY / LIMIT: a k-way merge of the partitions' sorted rows.
        let mut hidden: Vec<String> = Vec::new();
        let mut order = Vec::new();
        for (o, desc) in &order_items {
            let expr = match find_item(o) {
                Some(i) if is_star(&items[i]) => {
                    return refuse(table, n, "ORDER BY the position of a * column")
                }
                Some(i) => text(sql, items[i].expr).to_string(),
                None => text(sql, o).to_string(),
            };
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
        let modifiers = text(sql, &tokens[1..c.items.0]);
        let parts = slots
            .iter()
            .map(|slot| {
                let mut s = String::from("SELECT ");
                if !modifiers.is_empty() {
                    s.push_str(modifiers);
                    s.push(' ');
                }
                s.push_str(items_text);
                for h in &hidden {
                    s.push_str(", ");
                    s.push_str(h);
                }
                s.push(' ');
                s.push_str(&body(slot));
                s.push_str(&tail);
                (slot.target.clone(), s)
            })
            .collect();
        return Plan::Merge(MergePlan {
            parts,
            mode: Mode::Sort {
                hidden: hidden.len(),
            },
            order,
            offset,
            limit,
            ship: Vec::new(),
            fallback: None,
        });
    }

    // Aggregates, GROUP BY, DISTINCT: partial groups per partition.
    if items.iter().any(is_star) {
        return refuse(table, n, "SELECT * with GROUP BY or DISTINCT");
    }
    // Grouping keys: (fragment select column, its expression, GROUP BY text, match form).
    struct Key {
        select: String,
        expr: String,
        group_by: String,
        norm: String,
    }
    let mut group_keys: Vec<Key> = Vec::new();
    match c.group {
        Some((a, b)) => {
            for g in split_commas(sql, &tokens[a..b]) {
                if g.iter()
                    .any(|t| t.is_word(sql, "ASC") || t.is_word(sql, "DESC"))
                {
                    return refuse(table, n, "GROUP BY ... ASC/DESC");
                }
                if calls_aggregate(sql, g) {
                    return refuse(table, n, "GROUP BY an aggregate");
                }
                let item = find_item(g).map(|i| &items[i]);
                let key = match (g, item) {
                    // GROUP BY 2: the item's expression.
                    ([x], Some(item)) if x.kind == TokenKind::Number => {
                        if calls_aggregate(sql, item.expr) {
                            return refuse(table, n, "GROUP BY an aggregate");
                        }
                        let e = text(sql, item.expr).to_string();
                        Key {
                            select: e.clone(),
                            expr: e.clone(),
                            group_by: e,
                            norm: norm(sql, item.expr),
                        }
                    }
                    // GROUP BY alias: resolved by the server as in the
                    // statement; the fragment defines the alias too.
                    ([x], Some(item)) if is_name(x) && item.alias.is_some() => {
                        if calls_aggregate(sql, item.expr) {
                            return refuse(table, n, "GROUP BY an aggregate");
                        }
                        let e = text(sql, item.expr).to_string();
                        Key {
                            select: format!("{e} AS {}", x.text(sql)),
                            expr: e,
                            group_by: x.text(sql).to_string(),
                            norm: norm(sql, item.expr),
                        }
                    }
                    _ => {
                        let e = text(sql, g).to_string();
                        Key {
                            select: e.clone(),
                            expr: e.clone(),
                            group_by: e,
                            norm: norm(sql, g),
                        }
                    }
                };
                group_keys.push(key);
            }
        }
        // DISTINCT without aggregates groups by every item.
        None if c.distinct && !items.iter().any(|i| calls_aggregate(sql, i.expr)) => {
            for item in &items {
                let e = text(sql, item.expr).to_string();
                group_keys.push(Key {
                    select: e.clone(),
                    expr: e.clone(),
                    group_by: e,
                    norm: norm(sql, item.expr),
                });
            }
        }
        None if c.distinct => return refuse(table, n, "DISTINCT with aggregates"),
        None => {}
    }
    if c.distinct && c.group.is_some() {
        return refuse(table, n, "DISTINCT with GROUP BY");
    }
    let mut cols: Vec<String> = Vec::new();
    let mut keys = Vec::new();
    for k in &group_keys {
        cols.push(k.select.clone());
        let col = cols.len() - 1;
        let weight = push_weights(&mut cols, &k.expr);
        keys.push(Val {
            col,
            weight: Some(weight),
        });
    }
    let key_norms: Vec<String> = group_keys.iter().map(|k| k.norm.clone()).collect();
    let mut outputs = Vec::new();
    // The one expression of COUNT(DISTINCT ...), added to the fragments' GROUP BY.
    let mut distinct_by: Option<(String, String, Val)> = None;
    let mut separators: Vec<String> = Vec::new();
    let mut max_len_col: Option<usize> = None;
    for item in &items {
        // GROUP_CONCAT(x [SEPARATOR 's']), in no particular order.
        if let [f, open, args @ .., close] = item.expr {
            if f.is_word(sql, "GROUP_CONCAT") && open.is_punct(sql, "(") && close.is_punct(sql, ")")
            {
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
                    return refuse(
                        table,
                        n,
                        "GROUP_CONCAT with DISTINCT, ORDER BY or LIMIT is not supported yet",
                    );
                }
                let sep = match args.iter().position(|t| t.is_word(sql, "SEPARATOR")) {
                    Some(p) => match &args[p + 1..] {
                        [lit] if lit.kind == TokenKind::Str => super::unescape(lit.text(sql)),
                        _ => return refuse(table, n, "this GROUP_CONCAT separator"),
                    },
                    None => ",".to_string(),
                };
                if args.is_empty() || calls_aggregate(sql, args) {
                    return refuse(table, n, "this GROUP_CONCAT");
                }
                cols.push(text(sql, item.expr).to_string());
                let col = cols.len() - 1;
                let max_len = match max_len_col {
                    Some(c) => c,
                    None => {
                        cols.push("@@group_concat_max_len".to_string());
                        max_len_col = Some(cols.len() - 1);
                        cols.len() - 1
                    }
                };
                separators.push(sep);
                outputs.push(Output::GroupConcat {
                    col,
                    sep: separators.len() - 1,
                    max_len,
                });
                continue;
            }
        }
        if let Some((f, args)) = aggregate_call(sql, item.expr) {
            if args.first().is_some_and(|t| t.is_word(sql, "DISTINCT")) {
                let inner = &args[1..];
                if f != "COUNT" || inner.is_empty() || split_commas(sql, inner).len() != 1 {
                    return refuse(
                        table,
                        n,
                        &format!(
                            "{f}(DISTINCT ...) other than COUNT(DISTINCT x) is not supported yet"
                        ),
                    );
                }
                if calls_aggregate(sql, inner) {
                    return refuse(table, n, "an aggregate inside COUNT(DISTINCT ...)");
                }
                let e = text(sql, inner).to_string();
                let nm = norm(sql, inner);
                let v =
                    match &distinct_by {
                        Some((_, other, v)) if *other == nm => *v,
                        Some(_) => return refuse(
                            table,
                            n,
                            "COUNT(DISTINCT ...) of more than one expression is not supported yet",
                        ),
                        None => {
                            cols.push(e.clone());
                            let col = cols.len() - 1;
                            let weight = Some(push_weights(&mut cols, &e));
                            let v = Val { col, weight };
                            distinct_by = Some((e, nm, v));
                            v
                        }
                    };
                outputs.push(Output::CountDistinct(v));
                continue;
            }
            if args.is_empty() || calls_aggregate(sql, args) {
                return refuse(table, n, &format!("this {f}(...)"));
            }
            outputs.push(push_aggregate(&mut cols, &f, text(sql, args)));
            continue;
        }
        if let Some(f) = item.expr.windows(2).find_map(|w| {
            (w[1].is_punct(sql, "(") && UNMERGEABLE.iter().any(|f| w[0].is_word(sql, f)))
                .then(|| w[0].text(sql).to_ascii_uppercase())
        }) {
            return refuse(table, n, &format!("{f}() is not supported yet"));
        }
        if calls_aggregate(sql, item.expr) {
            return refuse(
                table,
                n,
                "expressions over aggregates (other than a single aggregate call) are not supported yet",
            );
        }
        match key_norms.iter().position(|k| *k == norm(sql, item.expr)) {
            Some(k) => outputs.push(Output::Key(k)),
            None => {
                return refuse(
                    table,
                    n,
                    &format!(
                        "the select item {} is neither grouped nor an aggregate",
                        text(sql, item.tokens)
                    ),
                )
            }
        }
    }
    let visible = outputs.len();
    let having = match c.having {
        Some((a, b)) => {
            let mut hp = HavingParser {
                sql,
                t: &tokens[a..b],
                at: 0,
                items: &items,
                key_norms: &key_norms,
                outputs: &mut outputs,
                cols: &mut cols,
            };
            match hp.or() {
                Ok(h) if hp.at == hp.t.len() => Some(h),
                Ok(_) => return refuse(table, n, "this HAVING condition"),
                Err(why) => return refuse(table, n, &why),
            }
        }
        None => None,
    };
    let mut order = Vec::new();
    for (o, desc) in &order_items {
        let out = match find_item(o) {
            Some(i) => i,
            None => {
                let want = norm(sql, o);
                match key_norms
                    .iter()
                    .position(|k| *k == want)
                    .and_then(|k| outputs.iter().position(|x| *x == Output::Key(k)))
                {
                    Some(i) => i,
                    None => {
                        return refuse(
                            table,
                            n,
                            "ORDER BY something that is not in the select list",
                        )
                    }
                }
            }
        };
        let weight = match outputs[out] {
            Output::Key(k) => keys[k].weight,
            Output::Min(v) | Output::Max(v) => v.weight,
            Output::GroupConcat { .. } => {
                return refuse(table, n, "ORDER BY a GROUP_CONCAT across partitions")
            }
            _ => None,
        };
        order.push(OrderKey {
            col: out,
            weight,
            desc: *desc,
        });
    }
    // MariaDB sorts GROUP BY results by the grouping keys unless ORDER BY
    // says otherwise (ORDER BY NULL: no order).
    if order.is_empty() && c.group.is_some() && !order_by_null {
        for (k, key) in keys.iter().enumerate() {
            let out = match outputs.iter().position(|o| *o == Output::Key(k)) {
                Some(i) => i,
                None => {
                    outputs.push(Output::Key(k));
                    outputs.len() - 1
                }
            };
            order.push(OrderKey {
                col: out,
                weight: key.weight,
                desc: false,
            });
        }
    }
    let mut group_by: Vec<&str> = group_keys.iter().map(|k| k.group_by.as_str()).collect();
    if let Some((e, _, _)) = &distinct_by {
        group_by.push(e);
    }
    let group_text = if group_by.is_empty() {
        String::new()
    } else {
        format!(" GROUP BY {}", group_by.join(", "))
    };
    let parts: Vec<(Target, String)> = slots
        .iter()
        .map(|slot| {
            (
                slot.target.clone(),
                format!("SELECT {} {}{group_text}", cols.join(", "), body(slot)),
            )
        })
        .collect();
    // Partial groups need no order: the partitions of one backend share one
    // statement (UNION ALL of their fragments), so a backend holding many
    // partitions costs one round trip. Not with shipped (temporary)
    // tables, which one statement cannot open twice.
    let ships = slots.iter().any(|s| {
        s.refs
            .iter()
            .any(|(_, t)| t.physical_table.starts_with("hscale_ship_"))
    });
    let parts = if ships { parts } else { per_backend(parts) };
    // The client's column definitions: the statement itself, LIMIT 0.
    let meta_target = slots[0].target.clone();
    let whole = rewrite_slot(sql, tokens, &slots[0]);
    let delta = whole.len() as isize - sql.len() as isize;
    let cut = match c.limit {
        Some(_) => {
            let at = tokens[c.limit.map_or(0, |l| l.0) - 1].start as isize + delta;
            whole[..at as usize].trim_end().to_string()
        }
        None => whole.trim_end().to_string(),
    };
    let meta = (meta_target, format!("{cut} LIMIT 0"));
    Plan::Merge(MergePlan {
        parts,
        mode: Mode::Group(GroupPlan {
            keys,
            outputs,
            visible,
            having,
            separators,
            meta,
        }),
        order,
        offset,
        limit,
        ship: Vec::new(),
        fallback: None,
    })
}
