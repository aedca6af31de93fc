//! HAVING over merged groups: the condition parsed into a `Having` tree
//! whose leaves are the group's outputs (select items, grouping keys, and
//! aggregates added as hidden outputs), evaluated by the proxy.

use hscale_sql::{Token, TokenKind};

use super::super::{is_name, unquote};
use super::group::push_aggregate;
use super::select::{aggregate_call, calls_aggregate, norm, text, Item};
use super::Output;

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

/// Parse the HAVING condition `t`: references to select items `items`,
/// grouping keys (`key_norms`) and aggregates, which become hidden
/// `outputs` with fragment columns in `cols` when the select list lacks
/// them.
pub(super) fn parse<'t>(
    sql: &str,
    t: &'t [Token],
    items: &[Item<'t>],
    key_norms: &[String],
    outputs: &mut Vec<Output>,
    cols: &mut Vec<String>,
) -> Result<Having, String> {
    let mut hp = HavingParser {
        sql,
        t,
        at: 0,
        items,
        key_norms,
        outputs,
        cols,
    };
    let h = hp.or()?;
    if hp.at != hp.t.len() {
        return Err("this HAVING condition".into());
    }
    Ok(h)
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
