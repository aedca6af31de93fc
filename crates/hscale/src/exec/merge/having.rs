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

/// What the HAVING condition's values are: the columns of the group's
/// outputs (integer columns compute as the server's BIGINT, signed or
/// UNSIGNED) and whether the session's sql_mode has
/// NO_UNSIGNED_SUBTRACTION (an UNSIGNED operand then leaves a subtraction
/// signed).
pub(super) struct Operands<'a> {
    pub columns: &'a [ColumnInfo],
    pub is_subtraction_signed: bool,
}

/// How the server computes with a value: integer arithmetic in a BIGINT
/// (an error beyond its range, 1690), or exact decimals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Signed,
    Unsigned,
    Decimal,
}

/// A value of the condition: the number and how it computes.
#[derive(Debug, Clone, Copy)]
struct Num {
    d: Decimal,
    class: Class,
}

impl Num {
    fn truth(b: bool) -> Num {
        Num {
            d: if b { Decimal::ONE } else { Decimal::ZERO },
            class: Class::Signed,
        }
    }
}

fn class_of(c: Option<&ColumnInfo>) -> Class {
    const UNSIGNED: u16 = 0x20;
    match c {
        // TINYINT, SMALLINT, INT, BIGINT, MEDIUMINT.
        Some(c) if matches!(c.column_type, 0x01 | 0x02 | 0x03 | 0x08 | 0x09) => {
            if c.flags & UNSIGNED != 0 {
                Class::Unsigned
            } else {
                Class::Signed
            }
        }
        _ => Class::Decimal,
    }
}

/// A number literal: an integer that fits a BIGINT is one (UNSIGNED
/// beyond the signed range), anything else a decimal.
fn literal(t: &str) -> Option<Num> {
    let d = Decimal::parse(t.as_bytes())?;
    let class = if d.scale != 0 {
        Class::Decimal
    } else if i64::try_from(d.mantissa).is_ok() {
        Class::Signed
    } else if u64::try_from(d.mantissa).is_ok() {
        Class::Unsigned
    } else {
        Class::Decimal
    };
    Some(Num { d, class })
}

/// Whether a group with final values `row` is kept.
pub(super) fn keeps(h: &Having, row: &Row, ops: &Operands<'_>) -> Result<bool, Stop> {
    Ok(eval(h, row, ops)?.is_some_and(|n| n.d.mantissa != 0))
}

fn negated(d: Decimal) -> Decimal {
    Decimal {
        mantissa: -d.mantissa,
        scale: d.scale,
    }
}

/// The server's integer result of `op` (both operands integers): the
/// exact value, which must fit the result's type, UNSIGNED when an
/// operand is (but for a subtraction under NO_UNSIGNED_SUBTRACTION).
fn integer_arith(h: &Having, op: ArithOp, x: Num, y: Num, ops: &Operands<'_>) -> Result<Num, Stop> {
    let either_unsigned = x.class == Class::Unsigned || y.class == Class::Unsigned;
    let class = match op {
        ArithOp::Sub if ops.is_subtraction_signed => Class::Signed,
        _ if either_unsigned => Class::Unsigned,
        _ => Class::Signed,
    };
    let (a, b) = (x.d.mantissa, y.d.mantissa);
    let exact = match op {
        ArithOp::Add => a.checked_add(b),
        ArithOp::Sub => a.checked_sub(b),
        ArithOp::Mul => a.checked_mul(b),
    };
    in_range(h, exact, class, ops)
}

/// `v` when it fits `class`'s BIGINT, else the server's 1690 naming `h`.
fn in_range(h: &Having, v: Option<i128>, class: Class, ops: &Operands<'_>) -> Result<Num, Stop> {
    let fits = v.is_some_and(|v| match class {
        Class::Unsigned => u64::try_from(v).is_ok(),
        _ => i64::try_from(v).is_ok(),
    });
    match v {
        Some(v) if fits => Ok(Num {
            d: Decimal {
                mantissa: v,
                scale: 0,
            },
            class,
        }),
        _ => Err(Stop::Proxy(ProxyError::OutOfRange {
            kind: if class == Class::Unsigned {
                "BIGINT UNSIGNED"
            } else {
                "BIGINT"
            },
            expr: printed(h, ops.columns),
        })),
    }
}

/// An expression of the condition as the server prints it in messages:
/// a named output by its name (quoted when it is a plain name, as an
/// alias is), operators spaced, inner operations parenthesized.
fn printed(h: &Having, columns: &[ColumnInfo]) -> String {
    let inner = |x: &Having| match x {
        Having::Arith(..) => format!("({})", printed(x, columns)),
        _ => printed(x, columns),
    };
    match h {
        Having::Out(i) => {
            let name = columns.get(*i).map_or("", |c| c.name.as_str());
            if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                format!("`{name}`")
            } else {
                name.to_string()
            }
        }
        Having::Num(t) => t.clone(),
        Having::Null => "NULL".into(),
        Having::Neg(x) => format!("-{}", inner(x)),
        Having::Arith(op, a, b) => {
            let sign = match op {
                ArithOp::Add => "+",
                ArithOp::Sub => "-",
                ArithOp::Mul => "*",
            };
            format!("{} {sign} {}", inner(a), inner(b))
        }
        _ => String::new(),
    }
}

/// A HAVING condition on a group's values: `Some(1)` true, `Some(0)`
/// false, `None` unknown (NULL).
fn eval(h: &Having, row: &Row, ops: &Operands<'_>) -> Result<Option<Num>, Stop> {
    let truth = |b: bool| Some(Num::truth(b));
    let not_numeric = || {
        Stop::Proxy(ProxyError::Refused(
            "HAVING across partitions compares numbers only".into(),
        ))
    };
    Ok(match h {
        Having::Num(t) => Some(literal(t).ok_or_else(not_numeric)?),
        Having::Null => None,
        Having::Out(i) => match row.get(*i).and_then(|c| c.as_deref()) {
            None => None,
            Some(v) => Some(Num {
                d: Decimal::parse(v).ok_or_else(not_numeric)?,
                class: class_of(ops.columns.get(*i)),
            }),
        },
        Having::Neg(x) => match eval(x, row, ops)? {
            Some(n) if n.class != Class::Decimal => {
                Some(in_range(h, Some(-n.d.mantissa), Class::Signed, ops)?)
            }
            other => other.map(|n| Num {
                d: negated(n.d),
                class: n.class,
            }),
        },
        Having::Arith(op, a, b) => match (eval(a, row, ops)?, eval(b, row, ops)?) {
            (Some(x), Some(y)) if x.class != Class::Decimal && y.class != Class::Decimal => {
                Some(integer_arith(h, *op, x, y, ops)?)
            }
            (Some(x), Some(y)) => {
                let (x, y) = (x.d, y.d);
                let r = match op {
                    ArithOp::Add => x.checked_add(y),
                    ArithOp::Sub => x.checked_add(negated(y)),
                    ArithOp::Mul => x.checked_mul(y),
                };
                Some(Num {
                    d: r.ok_or_else(|| bad_value("HAVING value"))?,
                    class: Class::Decimal,
                })
            }
            _ => None,
        },
        Having::Cmp(op, a, b) => compared(
            *op,
            eval(a, row, ops)?.map(|n| n.d),
            eval(b, row, ops)?.map(|n| n.d),
        )
        .map(|d| Num::truth(d.mantissa != 0)),
        Having::IsNull(x, negated) => {
            let is_null = match &**x {
                Having::Out(i) => row.get(*i).is_none_or(|c| c.is_none()),
                other => eval(other, row, ops)?.is_none(),
            };
            truth(is_null != *negated)
        }
        Having::Not(x) => eval(x, row, ops)?.map(|n| Num::truth(n.d.mantissa == 0)),
        // Left to right, stopping at the first operand that decides, as
        // the server does (an operand not evaluated raises no error).
        Having::And(a, b) => {
            let is_false = |v: &Option<Num>| v.is_some_and(|n| n.d.mantissa == 0);
            let x = eval(a, row, ops)?;
            if is_false(&x) {
                return Ok(truth(false));
            }
            let y = eval(b, row, ops)?;
            if is_false(&y) {
                truth(false)
            } else if x.is_none() || y.is_none() {
                None
            } else {
                truth(true)
            }
        }
        Having::Or(a, b) => {
            let is_true = |v: &Option<Num>| v.is_some_and(|n| n.d.mantissa != 0);
            let x = eval(a, row, ops)?;
            if is_true(&x) {
                return Ok(truth(true));
            }
            let y = eval(b, row, ops)?;
            if is_true(&y) {
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
        match eval(h, row, &NO_COLUMNS).unwrap() {
            None => "NULL".into(),
            Some(n) => n.d.to_text(n.d.scale).unwrap(),
        }
    }

    const NO_COLUMNS: Operands<'static> = Operands {
        columns: &[],
        is_subtraction_signed: false,
    };

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
        assert!(!keeps(&sum_positive(), &g2, &NO_COLUMNS).unwrap());
        // HAVING NOT (SUM(v) > 0): NOT NULL is NULL, not kept.
        assert!(!keeps(&Having::Not(b(sum_positive())), &g2, &NO_COLUMNS).unwrap());
        // HAVING SUM(v) > 0 OR COUNT(*) > 1: kept.
        let count_gt_1 = cmp(CmpOp::Gt, Having::Out(2), num("1"));
        assert!(keeps(&or(sum_positive(), count_gt_1), &g2, &NO_COLUMNS).unwrap());
        // HAVING SUM(v) IS NULL AND COUNT(*) = 2: kept.
        let is_null = Having::IsNull(b(Having::Out(1)), false);
        let count_2 = cmp(CmpOp::Eq, Having::Out(2), num("2"));
        assert!(keeps(&and(is_null, count_2), &g2, &NO_COLUMNS).unwrap());
        assert!(!keeps(&Having::IsNull(b(Having::Out(1)), true), &g2, &NO_COLUMNS).unwrap());
        // HAVING NULL <=> SUM(v): kept.
        let null_safe = cmp(CmpOp::NullSafeEq, Having::Null, Having::Out(1));
        assert!(keeps(&null_safe, &g2, &NO_COLUMNS).unwrap());
    }

    #[test]
    fn arithmetic_and_comparisons_are_exact() {
        let big = text(&[Some("100000000000000000000.00")]);
        let gt = cmp(CmpOp::Gt, Having::Out(0), num("99999999999999999999.99"));
        assert!(keeps(&gt, &big, &NO_COLUMNS).unwrap());
        // 1 - 2 * 3 = -5; -(2) * -3 = 6 (the parser nests by precedence).
        let r = text(&[]);
        let mul = Having::Arith(ArithOp::Mul, b(num("2")), b(num("3")));
        let sub = Having::Arith(ArithOp::Sub, b(num("1")), b(mul));
        assert_eq!(value(&sub, &r), "-5");
        let neg = |h| Having::Neg(b(h));
        let mul = Having::Arith(ArithOp::Mul, b(neg(num("2"))), b(neg(num("3"))));
        assert_eq!(value(&mul, &r), "6");
        // 10 > 9 and -0.5 < 0 as numbers.
        assert!(keeps(&cmp(CmpOp::Gt, num("10"), num("9")), &r, &NO_COLUMNS).unwrap());
        assert!(keeps(&cmp(CmpOp::Lt, num("-0.5"), num("0")), &r, &NO_COLUMNS).unwrap());
        assert!(keeps(&cmp(CmpOp::Le, num("0.10"), num("0.1")), &r, &NO_COLUMNS).unwrap());
        // NULL in arithmetic is NULL.
        let add = Having::Arith(ArithOp::Add, b(Having::Null), b(num("1")));
        assert_eq!(value(&add, &r), "NULL");
        // Text is not compared at the proxy.
        let s = text(&[Some("abc")]);
        let eq = cmp(CmpOp::Eq, Having::Out(0), num("1"));
        assert!(matches!(
            eval(&eq, &s, &NO_COLUMNS),
            Err(Stop::Proxy(ProxyError::Refused(_)))
        ));
    }

    #[test]
    fn integer_arithmetic_stays_in_its_bigint() {
        const UNSIGNED: u16 = 0x20;
        let mut unsigned = int();
        unsigned.flags = UNSIGNED;
        unsigned.name = "m".into();
        let columns = [unsigned];
        let ops = Operands {
            columns: &columns,
            is_subtraction_signed: false,
        };
        let add = |x: &str| Having::Arith(ArithOp::Add, b(Having::Out(0)), b(num(x)));
        let sub = |x: &str| Having::Arith(ArithOp::Sub, b(Having::Out(0)), b(num(x)));
        let max = text(&[Some("18446744073709551615")]);
        let zero = text(&[Some("0")]);
        let out_of_range = |r: Result<Option<Num>, Stop>| match r {
            Err(Stop::Proxy(e @ ProxyError::OutOfRange { .. })) => e.to_mysql(),
            other => panic!("{other:?}"),
        };
        let (code, _, msg) = out_of_range(eval(&add("1"), &max, &ops));
        assert_eq!(code, 1690);
        assert_eq!(msg, "BIGINT UNSIGNED value is out of range in '`m` + 1'");
        let (_, _, msg) = out_of_range(eval(&sub("1"), &zero, &ops));
        assert_eq!(msg, "BIGINT UNSIGNED value is out of range in '`m` - 1'");
        // A decimal operand computes exactly; under NO_UNSIGNED_SUBTRACTION
        // the difference is signed.
        assert!(eval(&add("1.5"), &max, &ops).is_ok());
        let signed = Operands {
            is_subtraction_signed: true,
            ..ops
        };
        assert_eq!(
            eval(&sub("1"), &zero, &signed).unwrap().unwrap().d.mantissa,
            -1
        );
        // A signed BIGINT.
        let (_, _, msg) = out_of_range(eval(
            &Having::Arith(ArithOp::Mul, b(num("9223372036854775807")), b(num("2"))),
            &zero,
            &NO_COLUMNS,
        ));
        assert_eq!(
            msg,
            "BIGINT value is out of range in '9223372036854775807 * 2'"
        );
        // OR stops at its first true operand.
        let or_first = or(num("1"), cmp(CmpOp::Gt, add("1"), num("0")));
        assert!(keeps(&or_first, &max, &ops).unwrap());
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
