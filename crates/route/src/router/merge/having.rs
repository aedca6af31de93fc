//! HAVING over merged groups: the condition parsed into a `Having` tree
//! whose leaves are the group's outputs (select items, grouping keys, and
//! aggregates added as hidden outputs), evaluated by the proxy.
//!
//! The parser is a recursive descent written with its own stack (no
//! recursion, so no statement can overflow a thread's stack), and the tree
//! it builds is at most `MAX_DEPTH` deep: chains of OR and AND become
//! balanced trees, and deeper nesting is refused.

use hscale_sql::{Token, TokenKind};

use super::super::{is_name, unquote, MAX_DEPTH};
use super::group::{push_aggregate, Fragment};
use super::select::{aggregate_call, calls_aggregate, norm, text};
use super::Select;

/// A HAVING condition over the outputs of a group, evaluated at the proxy
/// on exact numbers with SQL's three-valued logic.
///
/// A tree the planner builds is never deeper than `router::MAX_DEPTH`
/// (200) nodes, so walking it recursively (as the proxy's evaluation does)
/// is safe on any worker thread.
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

/// Parse the HAVING condition `t` of `s`: references to select items,
/// grouping keys and aggregates, which become hidden outputs of `f` (with
/// fragment columns) when the select list lacks them.
pub(super) fn parse(s: &Select<'_>, f: &mut Fragment, t: &[Token]) -> Result<Having, String> {
    let mut hp = HavingParser {
        s,
        f,
        t,
        at: 0,
        nesting: 0,
        // `BETWEEN` copies its operand; nothing else makes more nodes than
        // tokens.
        max_nodes: 4 * t.len() + 64,
    };
    let h = hp.condition()?;
    if hp.at != hp.t.len() {
        return Err("this HAVING condition".into());
    }
    Ok(h.h)
}

/// A parsed (sub)condition with the depth and size of its tree.
struct Node {
    h: Having,
    depth: usize,
    size: usize,
}

/// The rules of the grammar, from the loosest binding to the tightest:
///
/// ```text
/// or      := and (OR and)*
/// and     := not ((AND | &&) not)*
/// not     := NOT not | cmp
/// cmp     := add [IS [NOT] NULL | BETWEEN add AND add | (= <=> <> != < <= > >=) add]
/// add     := mul ((+ | -) mul)*
/// mul     := unary (* unary)*
/// unary   := - unary | primary
/// primary := number | NULL | ( or ) | f(...) | name | name.name
/// ```
#[derive(Clone, Copy)]
enum Rule {
    Or,
    And,
    Not,
    Cmp,
    Add,
    Mul,
    Unary,
    Primary,
}

/// A rule waiting for the value of a rule it started.
enum Frame {
    /// The OR (AND) operands so far.
    Or(Vec<Node>),
    And(Vec<Node>),
    Not,
    /// The left side of a comparison.
    Cmp,
    /// `l BETWEEN` (`l BETWEEN lo AND`).
    BetweenLo(Node),
    BetweenHi(Node, Node),
    /// `l op`.
    CmpRight(Node, CmpOp),
    /// The next operand of a sum (product), after `l op`.
    Add(Option<(Node, ArithOp)>),
    Mul(Option<Node>),
    Neg,
    /// `(`.
    Paren,
}

struct HavingParser<'a, 's> {
    s: &'a Select<'s>,
    f: &'a mut Fragment,
    t: &'a [Token],
    at: usize,
    /// Open parentheses, NOTs and unary minuses around the current token.
    nesting: usize,
    max_nodes: usize,
}

fn too_deep() -> String {
    format!("a HAVING condition nested more than {MAX_DEPTH} levels deep")
}

impl HavingParser<'_, '_> {
    fn peek_word(&self, w: &str) -> bool {
        self.t
            .get(self.at)
            .is_some_and(|x| x.is_word(self.s.sql, w))
    }
    fn peek_punct(&self, p: &str) -> bool {
        self.t
            .get(self.at)
            .is_some_and(|x| x.is_punct(self.s.sql, p))
    }

    /// One more level of nesting, refused past `MAX_DEPTH`.
    fn enter(&mut self) -> Result<(), String> {
        self.nesting += 1;
        if self.nesting > MAX_DEPTH {
            return Err(too_deep());
        }
        Ok(())
    }

    /// Trees deeper than `MAX_DEPTH` or larger than `max_nodes` are refused.
    fn check(&self, depth: usize, size: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(too_deep());
        }
        if size > self.max_nodes {
            return Err("a HAVING condition that grows too large (nested BETWEEN)".into());
        }
        Ok(())
    }

    fn node(&self, h: Having, depth: usize, size: usize) -> Result<Node, String> {
        self.check(depth, size)?;
        Ok(Node { h, depth, size })
    }

    fn unary_node(&self, make: fn(Box<Having>) -> Having, x: Node) -> Result<Node, String> {
        self.node(make(Box::new(x.h)), x.depth + 1, x.size + 1)
    }

    fn binary_node(
        &self,
        make: impl FnOnce(Box<Having>, Box<Having>) -> Having,
        l: Node,
        r: Node,
    ) -> Result<Node, String> {
        let (depth, size) = (l.depth.max(r.depth) + 1, l.size + r.size + 1);
        self.node(make(Box::new(l.h), Box::new(r.h)), depth, size)
    }

    /// Operands of an OR (AND) chain as a balanced tree: neighbours are
    /// joined pairwise, left to right, until one is left (for two or three
    /// operands, the left-deep tree a recursive descent builds).
    fn balanced(
        &self,
        mut parts: Vec<Node>,
        make: fn(Box<Having>, Box<Having>) -> Having,
    ) -> Result<Node, String> {
        while parts.len() > 1 {
            let mut joined = Vec::with_capacity(parts.len().div_ceil(2));
            let mut it = parts.into_iter();
            while let Some(l) = it.next() {
                match it.next() {
                    Some(r) => joined.push(self.binary_node(make, l, r)?),
                    None => joined.push(l),
                }
            }
            parts = joined;
        }
        parts
            .pop()
            .ok_or_else(|| "an incomplete HAVING condition".to_string())
    }

    /// The whole condition (`or`), rule by rule with an explicit stack.
    fn condition(&mut self) -> Result<Node, String> {
        let mut stack: Vec<Frame> = Vec::new();
        let mut rule = Rule::Or;
        loop {
            let mut value = self.descend(rule, &mut stack)?;
            // Hand the value up until a rule starts another one.
            loop {
                let Some(frame) = stack.pop() else {
                    return Ok(value);
                };
                match self.resume(frame, value, &mut stack)? {
                    Ok(next) => {
                        rule = next;
                        break;
                    }
                    Err(v) => value = v,
                }
            }
        }
    }

    /// Start `rule` and the rules it starts first, until one has a value.
    fn descend(&mut self, mut rule: Rule, stack: &mut Vec<Frame>) -> Result<Node, String> {
        loop {
            rule = match rule {
                Rule::Or => {
                    stack.push(Frame::Or(Vec::new()));
                    Rule::And
                }
                Rule::And => {
                    stack.push(Frame::And(Vec::new()));
                    Rule::Not
                }
                Rule::Not => {
                    if self.peek_punct("!") {
                        // `!` binds tighter than comparisons, unlike NOT.
                        return Err("! in HAVING".into());
                    }
                    if !self.peek_word("NOT") {
                        Rule::Cmp
                    } else {
                        self.at += 1;
                        self.enter()?;
                        stack.push(Frame::Not);
                        Rule::Not
                    }
                }
                Rule::Cmp => {
                    stack.push(Frame::Cmp);
                    Rule::Add
                }
                Rule::Add => {
                    stack.push(Frame::Add(None));
                    Rule::Mul
                }
                Rule::Mul => {
                    stack.push(Frame::Mul(None));
                    Rule::Unary
                }
                Rule::Unary => {
                    if !self.peek_punct("-") {
                        Rule::Primary
                    } else {
                        self.at += 1;
                        self.enter()?;
                        stack.push(Frame::Neg);
                        Rule::Unary
                    }
                }
                Rule::Primary => {
                    if self.peek_punct("(") {
                        self.at += 1;
                        self.enter()?;
                        stack.push(Frame::Paren);
                        Rule::Or
                    } else {
                        let h = self.primary()?;
                        return self.node(h, 1, 1);
                    }
                }
            };
        }
    }

    /// Give `value` to the rule waiting in `frame`: `Ok(rule)` when that
    /// rule starts another one (its frame pushed back), `Err(value)` when
    /// it is done.
    fn resume(
        &mut self,
        frame: Frame,
        value: Node,
        stack: &mut Vec<Frame>,
    ) -> Result<Result<Rule, Node>, String> {
        let sql = self.s.sql;
        Ok(Err(match frame {
            Frame::Or(mut parts) => {
                parts.push(value);
                if self.peek_word("OR") {
                    self.at += 1;
                    stack.push(Frame::Or(parts));
                    return Ok(Ok(Rule::And));
                }
                if self.peek_punct("||") || self.peek_word("XOR") {
                    return Err("|| or XOR in HAVING".into());
                }
                self.balanced(parts, Having::Or)?
            }
            Frame::And(mut parts) => {
                parts.push(value);
                if self.peek_word("AND") || self.peek_punct("&&") {
                    self.at += 1;
                    stack.push(Frame::And(parts));
                    return Ok(Ok(Rule::Not));
                }
                self.balanced(parts, Having::And)?
            }
            Frame::Not => {
                self.nesting -= 1;
                self.unary_node(Having::Not, value)?
            }
            Frame::Neg => {
                self.nesting -= 1;
                self.unary_node(Having::Neg, value)?
            }
            Frame::Paren => {
                self.nesting -= 1;
                if !self.peek_punct(")") {
                    return Err("unbalanced parentheses in HAVING".into());
                }
                self.at += 1;
                value
            }
            Frame::Cmp => {
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
                    let (depth, size) = (value.depth + 1, value.size + 1);
                    return Ok(Err(self.node(
                        Having::IsNull(Box::new(value.h), negated),
                        depth,
                        size,
                    )?));
                }
                if self.peek_word("BETWEEN") {
                    self.at += 1;
                    stack.push(Frame::BetweenLo(value));
                    return Ok(Ok(Rule::Add));
                }
                let op = match self.t.get(self.at).map(|x| (x.kind, x.text(sql))) {
                    Some((TokenKind::Punct, "=")) => CmpOp::Eq,
                    Some((TokenKind::Punct, "<=>")) => CmpOp::NullSafeEq,
                    Some((TokenKind::Punct, "<>" | "!=")) => CmpOp::Ne,
                    Some((TokenKind::Punct, "<")) => CmpOp::Lt,
                    Some((TokenKind::Punct, "<=")) => CmpOp::Le,
                    Some((TokenKind::Punct, ">")) => CmpOp::Gt,
                    Some((TokenKind::Punct, ">=")) => CmpOp::Ge,
                    _ => return Ok(Err(value)),
                };
                self.at += 1;
                stack.push(Frame::CmpRight(value, op));
                return Ok(Ok(Rule::Add));
            }
            Frame::BetweenLo(l) => {
                if !self.peek_word("AND") {
                    return Err("BETWEEN without AND".into());
                }
                self.at += 1;
                stack.push(Frame::BetweenHi(l, value));
                return Ok(Ok(Rule::Add));
            }
            Frame::BetweenHi(l, lo) => {
                // `l BETWEEN lo AND hi` is `l >= lo AND l <= hi`; checked
                // before `l` is copied.
                let depth = l.depth.max(lo.depth).max(value.depth) + 2;
                self.check(depth, 2 * l.size + lo.size + value.size + 3)?;
                let ge = Node {
                    h: l.h.clone(),
                    depth: l.depth,
                    size: l.size,
                };
                let ge = self.binary_node(|a, b| Having::Cmp(CmpOp::Ge, a, b), ge, lo)?;
                let le = self.binary_node(|a, b| Having::Cmp(CmpOp::Le, a, b), l, value)?;
                self.binary_node(Having::And, ge, le)?
            }
            Frame::CmpRight(l, op) => self.binary_node(|a, b| Having::Cmp(op, a, b), l, value)?,
            Frame::Add(pending) => {
                let l = match pending {
                    None => value,
                    Some((l, op)) => self.binary_node(|a, b| Having::Arith(op, a, b), l, value)?,
                };
                let op = if self.peek_punct("+") {
                    ArithOp::Add
                } else if self.peek_punct("-") {
                    ArithOp::Sub
                } else {
                    return Ok(Err(l));
                };
                self.at += 1;
                stack.push(Frame::Add(Some((l, op))));
                return Ok(Ok(Rule::Mul));
            }
            Frame::Mul(pending) => {
                let l = match pending {
                    None => value,
                    Some(l) => {
                        self.binary_node(|a, b| Having::Arith(ArithOp::Mul, a, b), l, value)?
                    }
                };
                if self.peek_punct("*") {
                    self.at += 1;
                    stack.push(Frame::Mul(Some(l)));
                    return Ok(Ok(Rule::Unary));
                }
                if self.peek_punct("/")
                    || self.peek_word("DIV")
                    || self.peek_punct("%")
                    || self.peek_word("MOD")
                {
                    return Err("division in HAVING".into());
                }
                l
            }
        }))
    }

    /// The output for an expression, adding a hidden one if needed.
    fn output_of(&mut self, e: &[Token]) -> Result<Having, String> {
        let s = self.s;
        let sql = s.sql;
        let want = norm(sql, e);
        if let [x] = e {
            if is_name(x) {
                if let Some(i) = s.item_by_alias(&unquote(x, sql)) {
                    return Ok(Having::Out(i));
                }
            }
        }
        if let Some(i) = s.item_by_norm(&want) {
            return Ok(Having::Out(i));
        }
        if let Some(k) = self.f.key_of(&want) {
            return Ok(Having::Out(self.f.key_output(k)));
        }
        match aggregate_call(sql, e) {
            Some((_, args)) if self.names_an_alias(args) => Err(format!(
                "{} in HAVING, an aggregate of a select alias (one server's answer depends on its plan)",
                text(sql, e)
            )),
            Some((f, args))
                if !args.is_empty()
                    && !args.first().is_some_and(|t| t.is_word(sql, "DISTINCT"))
                    && !calls_aggregate(sql, args) =>
            {
                let o = push_aggregate(&mut self.f.cols, &f, text(sql, args), false);
                Ok(Having::Out(self.f.push_output(o)))
            }
            _ => Err(format!("{} in HAVING", text(sql, e))),
        }
    }

    /// Whether the argument of an aggregate names a select alias (not
    /// qualified, not a function's name) other than of an item that is
    /// that very column. A part's select list sees no aliases, so there
    /// the name is a column of the table or 1054; one server reads the
    /// column if there is one, and otherwise the alias's item: for an
    /// aggregate's alias (`HAVING c = MAX(c)` of `COUNT(*) c`) the
    /// aggregate while it is still being computed, a value that depends
    /// on the server's plan (0 or a running count). Refused here, so that
    /// a plain read runs on one server with copies of its tables
    /// (`MergePlan::fallback`).
    fn names_an_alias(&self, args: &[Token]) -> bool {
        let sql = self.s.sql;
        args.iter().enumerate().any(|(i, x)| {
            if !is_name(x)
                || i.checked_sub(1)
                    .and_then(|j| args.get(j))
                    .is_some_and(|d| d.is_punct(sql, "."))
                || args
                    .get(i + 1)
                    .is_some_and(|n| n.is_punct(sql, "(") || n.is_punct(sql, "."))
            {
                return false;
            }
            let name = unquote(x, sql);
            self.s
                .item_by_alias(&name)
                .is_some_and(|item| self.s.item_norms[item] != name.to_ascii_lowercase())
        })
    }

    /// A number, NULL, a function call or a column (parentheses are the
    /// caller's).
    fn primary(&mut self) -> Result<Having, String> {
        let sql = self.s.sql;
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
