//! HAVING at the proxy (pure): a condition over a group's final values,
//! evaluated on exact decimals with SQL's three-valued logic (NULL is
//! unknown; a group is kept only when the condition is true).

use std::cmp::Ordering;

use hscale_route::router::{ArithOp, CmpOp, Having};
use hscale_route::value::{Decimal, Kind};
use hscale_wire::resultset::ColumnInfo;

use super::columns::kind_of;
use super::{bad_value, Row, Stop};
use crate::error::ProxyError;

/// The outputs a HAVING condition reads.
pub(super) fn having_outputs(h: &Having, out: &mut Vec<usize>) {
    match h {
        Having::Out(i) => out.push(*i),
        Having::Or(a, b) | Having::And(a, b) | Having::Cmp(_, a, b) | Having::Arith(_, a, b) => {
            having_outputs(a, out);
            having_outputs(b, out);
        }
        Having::Not(x) | Having::IsNull(x, _) | Having::Neg(x) => having_outputs(x, out),
        Having::Num(_) | Having::Null => {}
    }
}

/// Refuse a HAVING that reads floating-point values: the server compares
/// them differently (0.1 stored as a FLOAT is not 0.1). `columns` are the
/// columns of the group's outputs.
pub(super) fn check_exact(h: &Having, columns: &[ColumnInfo]) -> Result<(), Stop> {
    let mut read = Vec::new();
    having_outputs(h, &mut read);
    if read
        .iter()
        .any(|i| columns.get(*i).is_some_and(|c| kind_of(c) == Kind::Float))
    {
        return Err(Stop::Proxy(ProxyError::Refused(
            "HAVING on floating-point values across partitions".into(),
        )));
    }
    Ok(())
}

/// Whether a group with final values `row` is kept.
pub(super) fn keeps(h: &Having, row: &Row) -> Result<bool, Stop> {
    Ok(eval(h, row)?.is_some_and(|d| d.mantissa != 0))
}

fn negated(d: Decimal) -> Decimal {
    Decimal {
        mantissa: -d.mantissa,
        scale: d.scale,
    }
}

/// A HAVING condition on a group's values: `Some(1)` true, `Some(0)`
/// false, `None` unknown (NULL).
pub(super) fn eval(h: &Having, row: &Row) -> Result<Option<Decimal>, Stop> {
    let truth = |b: bool| Some(if b { Decimal::ONE } else { Decimal::ZERO });
    let not_numeric = || {
        Stop::Proxy(ProxyError::Refused(
            "HAVING across partitions compares numbers only".into(),
        ))
    };
    Ok(match h {
        Having::Num(t) => Some(Decimal::parse(t.as_bytes()).ok_or_else(not_numeric)?),
        Having::Null => None,
        Having::Out(i) => match row.get(*i).and_then(|c| c.as_deref()) {
            None => None,
            Some(v) => Some(Decimal::parse(v).ok_or_else(not_numeric)?),
        },
        Having::Neg(x) => eval(x, row)?.map(negated),
        Having::Arith(op, a, b) => match (eval(a, row)?, eval(b, row)?) {
            (Some(x), Some(y)) => {
                let r = match op {
                    ArithOp::Add => x.checked_add(y),
                    ArithOp::Sub => x.checked_add(negated(y)),
                    ArithOp::Mul => x.checked_mul(y),
                };
                Some(r.ok_or_else(|| bad_value("HAVING value"))?)
            }
            _ => None,
        },
        Having::Cmp(op, a, b) => compared(*op, eval(a, row)?, eval(b, row)?),
        Having::IsNull(x, negated) => {
            let is_null = match &**x {
                Having::Out(i) => row.get(*i).is_none_or(|c| c.is_none()),
                other => eval(other, row)?.is_none(),
            };
            truth(is_null != *negated)
        }
        Having::Not(x) => eval(x, row)?.map(|d| {
            if d.mantissa == 0 {
                Decimal::ONE
            } else {
                Decimal::ZERO
            }
        }),
        Having::And(a, b) => {
            let (x, y) = (eval(a, row)?, eval(b, row)?);
            let is_false = |v: &Option<Decimal>| v.is_some_and(|d| d.mantissa == 0);
            if is_false(&x) || is_false(&y) {
                truth(false)
            } else if x.is_none() || y.is_none() {
                None
            } else {
                truth(true)
            }
        }
        Having::Or(a, b) => {
            let (x, y) = (eval(a, row)?, eval(b, row)?);
            let is_true = |v: &Option<Decimal>| v.is_some_and(|d| d.mantissa != 0);
            if is_true(&x) || is_true(&y) {
                truth(true)
            } else if x.is_none() || y.is_none() {
                None
            } else {
                truth(false)
            }
        }
    })
}

/// A comparison: unknown when either side is NULL, except `<=>`.
fn compared(op: CmpOp, x: Option<Decimal>, y: Option<Decimal>) -> Option<Decimal> {
    let truth = |b: bool| Some(if b { Decimal::ONE } else { Decimal::ZERO });
    match (op, x, y) {
        (CmpOp::NullSafeEq, x, y) => {
            truth(x == y || matches!((x, y), (Some(p), Some(q)) if p.cmp(&q) == Ordering::Equal))
        }
        (_, Some(x), Some(y)) => {
            let o = x.cmp(&y);
            truth(match op {
                CmpOp::Eq | CmpOp::NullSafeEq => o == Ordering::Equal,
                CmpOp::Ne => o != Ordering::Equal,
                CmpOp::Lt => o == Ordering::Less,
                CmpOp::Le => o != Ordering::Greater,
                CmpOp::Gt => o == Ordering::Greater,
                CmpOp::Ge => o != Ordering::Less,
            })
        }
        _ => None,
    }
}

/// Expected values are what MariaDB 10.11 answers for the same expressions
/// (`SELECT NULL AND FALSE, ...`) and HAVING clauses.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::merge::fixtures::*;

    fn b(h: Having) -> Box<Having> {
        Box::new(h)
    }

    fn num(t: &str) -> Having {
        Having::Num(t.into())
    }

    fn and(x: Having, y: Having) -> Having {
        Having::And(b(x), b(y))
    }

    fn or(x: Having, y: Having) -> Having {
        Having::Or(b(x), b(y))
    }

    fn cmp(op: CmpOp, x: Having, y: Having) -> Having {
        Having::Cmp(op, b(x), b(y))
    }

    /// The value of `h` as the server prints it: "1", "0" or "NULL".
    fn value(h: &Having, row: &Row) -> String {
        match eval(h, row).unwrap() {
            None => "NULL".into(),
            Some(d) => d.to_text(d.scale).unwrap(),
        }
    }

    #[test]
    fn three_valued_logic() {
        let r = text(&[]);
        let t = || num("1");
        let f = || num("0");
        assert_eq!(value(&and(Having::Null, f()), &r), "0");
        assert_eq!(value(&and(f(), Having::Null), &r), "0");
        assert_eq!(value(&and(Having::Null, t()), &r), "NULL");
        assert_eq!(value(&or(Having::Null, t()), &r), "1");
        assert_eq!(value(&or(Having::Null, f()), &r), "NULL");
        assert_eq!(value(&Having::Not(b(Having::Null)), &r), "NULL");
        assert_eq!(value(&Having::Not(b(num("0.0"))), &r), "1");
        assert_eq!(value(&Having::Not(b(num("0.5"))), &r), "0");
        assert_eq!(value(&and(t(), num("2")), &r), "1");
        // Comparisons with NULL are NULL, except <=>.
        assert_eq!(value(&cmp(CmpOp::Eq, Having::Null, t()), &r), "NULL");
        assert_eq!(value(&cmp(CmpOp::Ne, Having::Null, t()), &r), "NULL");
        assert_eq!(
            value(&cmp(CmpOp::NullSafeEq, Having::Null, Having::Null), &r),
            "1"
        );
        assert_eq!(value(&cmp(CmpOp::NullSafeEq, Having::Null, t()), &r), "0");
        assert_eq!(value(&cmp(CmpOp::NullSafeEq, num("1.0"), t()), &r), "1");
    }

    #[test]
    fn groups_are_kept_only_when_the_condition_is_true() {
        // Group 2 of `SELECT g, SUM(v), COUNT(*) ... GROUP BY g`: SUM NULL,
        // COUNT 2.
        let g2 = text(&[Some("2"), None, Some("2")]);
        let sum_positive = || cmp(CmpOp::Gt, Having::Out(1), num("0"));
        // HAVING SUM(v) > 0: NULL, not kept.
        assert!(!keeps(&sum_positive(), &g2).unwrap());
        // HAVING NOT (SUM(v) > 0): NOT NULL is NULL, not kept.
        assert!(!keeps(&Having::Not(b(sum_positive())), &g2).unwrap());
        // HAVING SUM(v) > 0 OR COUNT(*) > 1: kept.
        let count_gt_1 = cmp(CmpOp::Gt, Having::Out(2), num("1"));
        assert!(keeps(&or(sum_positive(), count_gt_1), &g2).unwrap());
        // HAVING SUM(v) IS NULL AND COUNT(*) = 2: kept.
        let is_null = Having::IsNull(b(Having::Out(1)), false);
        let count_2 = cmp(CmpOp::Eq, Having::Out(2), num("2"));
        assert!(keeps(&and(is_null, count_2), &g2).unwrap());
        assert!(!keeps(&Having::IsNull(b(Having::Out(1)), true), &g2).unwrap());
        // HAVING NULL <=> SUM(v): kept.
        let null_safe = cmp(CmpOp::NullSafeEq, Having::Null, Having::Out(1));
        assert!(keeps(&null_safe, &g2).unwrap());
    }

    #[test]
    fn arithmetic_and_comparisons_are_exact() {
        let big = text(&[Some("100000000000000000000.00")]);
        let gt = cmp(CmpOp::Gt, Having::Out(0), num("99999999999999999999.99"));
        assert!(keeps(&gt, &big).unwrap());
        // 1 - 2 * 3 = -5; -(2) * -3 = 6 (the parser nests by precedence).
        let r = text(&[]);
        let mul = Having::Arith(ArithOp::Mul, b(num("2")), b(num("3")));
        let sub = Having::Arith(ArithOp::Sub, b(num("1")), b(mul));
        assert_eq!(value(&sub, &r), "-5");
        let neg = |h| Having::Neg(b(h));
        let mul = Having::Arith(ArithOp::Mul, b(neg(num("2"))), b(neg(num("3"))));
        assert_eq!(value(&mul, &r), "6");
        // 10 > 9 and -0.5 < 0 as numbers.
        assert!(keeps(&cmp(CmpOp::Gt, num("10"), num("9")), &r).unwrap());
        assert!(keeps(&cmp(CmpOp::Lt, num("-0.5"), num("0")), &r).unwrap());
        assert!(keeps(&cmp(CmpOp::Le, num("0.10"), num("0.1")), &r).unwrap());
        // NULL in arithmetic is NULL.
        let add = Having::Arith(ArithOp::Add, b(Having::Null), b(num("1")));
        assert_eq!(value(&add, &r), "NULL");
        // Text is not compared at the proxy.
        let s = text(&[Some("abc")]);
        let eq = cmp(CmpOp::Eq, Having::Out(0), num("1"));
        assert!(matches!(
            eval(&eq, &s),
            Err(Stop::Proxy(ProxyError::Refused(_)))
        ));
    }

    #[test]
    fn floating_point_outputs_are_refused() {
        let h = and(
            cmp(CmpOp::Gt, Having::Out(2), num("0")),
            Having::Not(b(Having::IsNull(b(Having::Out(0)), false))),
        );
        let mut read = Vec::new();
        having_outputs(&h, &mut read);
        assert_eq!(read, [2, 0]);
        let double = col(0x05, BINARY, 31);
        assert!(check_exact(&h, &[int(), double.clone(), dec(2)]).is_ok());
        assert!(matches!(
            check_exact(&h, &[int(), int(), double]),
            Err(Stop::Proxy(ProxyError::Refused(_)))
        ));
    }
}
