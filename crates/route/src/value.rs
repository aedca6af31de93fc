//! Values of result rows as the proxy merges them: compared the way the
//! server compares them, and added up exactly.
//!
//! Rows arrive in the text protocol, so a value is its text plus the column
//! type. Numbers compare as numbers (exact decimals, not floats), dates and
//! times by their fields, binary strings by bytes, and other strings by
//! the weight string the backend computed for them (`WEIGHT_STRING(x)`),
//! with PAD SPACE collations padded with the weight of a space. NULL sorts
//! first.

use std::cmp::Ordering;

/// How a column's values compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Integers and DECIMAL: exact.
    Decimal,
    /// FLOAT, DOUBLE.
    Float,
    /// DATE, DATETIME, TIMESTAMP, YEAR: text order is time order.
    Temporal,
    /// TIME: signed.
    Time,
    /// Binary strings: bytes.
    Bytes,
    /// Strings under a collation: by weight string.
    Collated { pad_space: bool },
    /// ENUM and SET: by member position, which the text does not tell.
    Unordered,
}

/// Protocol column types and flags.
mod ty {
    pub const DECIMAL: u8 = 0x00;
    pub const TINY: u8 = 0x01;
    pub const SHORT: u8 = 0x02;
    pub const LONG: u8 = 0x03;
    pub const FLOAT: u8 = 0x04;
    pub const DOUBLE: u8 = 0x05;
    pub const NULL: u8 = 0x06;
    pub const TIMESTAMP: u8 = 0x07;
    pub const LONGLONG: u8 = 0x08;
    pub const INT24: u8 = 0x09;
    pub const DATE: u8 = 0x0a;
    pub const TIME: u8 = 0x0b;
    pub const DATETIME: u8 = 0x0c;
    pub const YEAR: u8 = 0x0d;
    pub const NEWDATE: u8 = 0x0e;
    pub const BIT: u8 = 0x10;
    pub const TIMESTAMP2: u8 = 0x11;
    pub const DATETIME2: u8 = 0x12;
    pub const TIME2: u8 = 0x13;
    pub const NEWDECIMAL: u8 = 0xf6;
    pub const ENUM: u8 = 0xf7;
    pub const SET: u8 = 0xf8;
    pub const FLAG_ENUM: u16 = 0x0100;
    pub const FLAG_SET: u16 = 0x0800;
    pub const BINARY_CHARSET: u16 = 63;
}

impl Kind {
    /// The comparison for a column of protocol type `column_type`,
    /// collation `charset` and `flags`.
    pub fn of(column_type: u8, charset: u16, flags: u16) -> Kind {
        use ty::*;
        match column_type {
            DECIMAL | NEWDECIMAL | TINY | SHORT | LONG | LONGLONG | INT24 | NULL => Kind::Decimal,
            FLOAT | DOUBLE => Kind::Float,
            TIMESTAMP | DATE | DATETIME | YEAR | NEWDATE | TIMESTAMP2 | DATETIME2 => Kind::Temporal,
            TIME | TIME2 => Kind::Time,
            ENUM | SET => Kind::Unordered,
            BIT => Kind::Bytes,
            _ if flags & (FLAG_ENUM | FLAG_SET) != 0 => Kind::Unordered,
            _ if charset == BINARY_CHARSET => Kind::Bytes,
            // MariaDB numbers NO PAD collations 1024 above their PAD twins.
            _ => Kind::Collated {
                pad_space: charset & 1024 == 0,
            },
        }
    }

    pub fn is_number(self) -> bool {
        matches!(self, Kind::Decimal | Kind::Float)
    }
}

/// A value to compare: its text, and for collated strings its weight
/// string and the weight of a space in its collation.
#[derive(Debug, Clone, Copy)]
pub struct Cmp<'a> {
    pub text: Option<&'a [u8]>,
    pub weight: Option<&'a [u8]>,
    pub space: Option<&'a [u8]>,
}

/// Compare two values of one column as the server orders them (NULL first).
pub fn compare(kind: Kind, a: &Cmp<'_>, b: &Cmp<'_>) -> Ordering {
    match (a.text, b.text) {
        (None, None) => return Ordering::Equal,
        (None, Some(_)) => return Ordering::Less,
        (Some(_), None) => return Ordering::Greater,
        _ => {}
    }
    let (x, y) = (a.text.unwrap_or_default(), b.text.unwrap_or_default());
    match kind {
        Kind::Decimal => match (Decimal::parse(x), Decimal::parse(y)) {
            (Some(p), Some(q)) => p.cmp(&q),
            _ => compare_decimal_text(x, y),
        },
        Kind::Float => {
            let p: f64 = std::str::from_utf8(x)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0.0);
            let q: f64 = std::str::from_utf8(y)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0.0);
            p.total_cmp(&q)
        }
        Kind::Temporal | Kind::Bytes | Kind::Unordered => x.cmp(y),
        Kind::Time => compare_time(x, y),
        Kind::Collated { pad_space } => {
            let (wa, wb) = (a.weight.unwrap_or(x), b.weight.unwrap_or(y));
            match (pad_space, a.space.or(b.space)) {
                (true, Some(space)) if !space.is_empty() => compare_padded(wa, wb, space),
                _ => wa.cmp(wb),
            }
        }
    }
}

/// Weight strings compared as PAD SPACE does: the shorter one is extended
/// with the weight of a space.
fn compare_padded(a: &[u8], b: &[u8], space: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    match a[..n].cmp(&b[..n]) {
        Ordering::Equal => {}
        other => return other,
    }
    let (rest, flip) = if a.len() > n {
        (&a[n..], false)
    } else {
        (&b[n..], true)
    };
    let mut o = Ordering::Equal;
    for (i, byte) in rest.iter().enumerate() {
        o = byte.cmp(&space[i % space.len()]);
        if o != Ordering::Equal {
            break;
        }
    }
    if flip {
        o.reverse()
    } else {
        o
    }
}

/// `[-]HHH:MM:SS[.ffffff]`: negative before positive, then by fields.
fn compare_time(x: &[u8], y: &[u8]) -> Ordering {
    let neg = |t: &[u8]| t.first() == Some(&b'-');
    let key = |t: &[u8]| -> (usize, Vec<u8>) {
        let t = if neg(t) { &t[1..] } else { t };
        let hours = t.iter().position(|&c| c == b':').unwrap_or(t.len());
        (hours, t.to_vec())
    };
    match (neg(x), neg(y)) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (n, _) => {
            let o = key(x).cmp(&key(y));
            if n {
                o.reverse()
            } else {
                o
            }
        }
    }
}

/// Decimal text too long for [`Decimal`]: sign, then integer digits by
/// length, then digits.
fn compare_decimal_text(x: &[u8], y: &[u8]) -> Ordering {
    let split = |t: &[u8]| -> (bool, Vec<u8>, Vec<u8>) {
        let (neg, t) = match t.first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let (i, f) = match t.iter().position(|&c| c == b'.') {
            Some(p) => (&t[..p], &t[p + 1..]),
            None => (t, &t[t.len()..]),
        };
        let i: Vec<u8> = i.iter().copied().skip_while(|&c| c == b'0').collect();
        let mut f = f.to_vec();
        while f.last() == Some(&b'0') {
            f.pop();
        }
        let zero = i.is_empty() && f.is_empty();
        (neg && !zero, i, f)
    };
    let (na, ia, fa) = split(x);
    let (nb, ib, fb) = split(y);
    let magnitude = ia.len().cmp(&ib.len()).then(ia.cmp(&ib)).then(fa.cmp(&fb));
    match (na, nb) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (true, true) => magnitude.reverse(),
        (false, false) => magnitude,
    }
}

/// An exact decimal: `mantissa * 10^-scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal {
    pub mantissa: i128,
    pub scale: u32,
}

impl Decimal {
    pub const ZERO: Decimal = Decimal {
        mantissa: 0,
        scale: 0,
    };
    pub const ONE: Decimal = Decimal {
        mantissa: 1,
        scale: 0,
    };

    pub fn checked_mul(self, other: Decimal) -> Option<Decimal> {
        Some(Decimal {
            mantissa: self.mantissa.checked_mul(other.mantissa)?,
            scale: self.scale.checked_add(other.scale)?,
        })
    }

    /// Parse `[-]digits[.digits]`; `None` if it is not that or too long.
    pub fn parse(t: &[u8]) -> Option<Decimal> {
        let (neg, t) = match t.first()? {
            b'-' => (true, &t[1..]),
            b'+' => (false, &t[1..]),
            _ => (false, t),
        };
        if t.is_empty() || t.len() > 36 {
            return None;
        }
        let mut mantissa: i128 = 0;
        let mut scale = 0;
        let mut seen_point = false;
        for &c in t {
            match c {
                b'0'..=b'9' => {
                    mantissa = mantissa * 10 + i128::from(c - b'0');
                    if seen_point {
                        scale += 1;
                    }
                }
                b'.' if !seen_point => seen_point = true,
                _ => return None,
            }
        }
        Some(Decimal {
            mantissa: if neg { -mantissa } else { mantissa },
            scale,
        })
    }

    fn rescale(self, scale: u32) -> Option<i128> {
        if scale >= self.scale {
            self.mantissa
                .checked_mul(10i128.checked_pow(scale - self.scale)?)
        } else {
            None
        }
    }

    pub fn checked_add(self, other: Decimal) -> Option<Decimal> {
        let scale = self.scale.max(other.scale);
        Some(Decimal {
            mantissa: self.rescale(scale)?.checked_add(other.rescale(scale)?)?,
            scale,
        })
    }

    /// `self / n` rounded half away from zero to `scale` digits (as the
    /// server rounds AVG).
    pub fn div_round(self, n: i128, scale: u32) -> Option<Decimal> {
        if n == 0 {
            return None;
        }
        // self.mantissa * 10^(scale - self.scale) / n, with one extra digit.
        let up = (scale + 1).checked_sub(self.scale);
        let num = match up {
            Some(k) => self.mantissa.checked_mul(10i128.checked_pow(k)?)?,
            None => self.mantissa / 10i128.checked_pow(self.scale - scale - 1)?,
        };
        let q = num / n;
        let rounded = if q >= 0 { (q + 5) / 10 } else { (q - 5) / 10 };
        Some(Decimal {
            mantissa: rounded,
            scale,
        })
    }

    /// Text with exactly `scale` fraction digits, as the server prints it.
    pub fn to_text(self, scale: u32) -> Option<String> {
        let m = if scale >= self.scale {
            self.rescale(scale)?
        } else {
            self.div_round(1, scale)?.mantissa
        };
        let neg = m < 0;
        let digits = m.unsigned_abs().to_string();
        let s = scale as usize;
        let (int, frac) = if digits.len() > s {
            digits.split_at(digits.len() - s)
        } else {
            ("", digits.as_str())
        };
        let mut out = String::with_capacity(digits.len() + 3);
        if neg {
            out.push('-');
        }
        out.push_str(if int.is_empty() { "0" } else { int });
        if s > 0 {
            out.push('.');
            for _ in frac.len()..s {
                out.push('0');
            }
            out.push_str(frac);
        }
        Some(out)
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        let scale = self.scale.max(other.scale);
        match (self.rescale(scale), other.rescale(scale)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => compare_decimal_text(
                self.to_text(self.scale).unwrap_or_default().as_bytes(),
                other.to_text(other.scale).unwrap_or_default().as_bytes(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn decimals_add_divide_and_print_like_the_server() {
        assert_eq!(
            d("1.50").checked_add(d("-2")).unwrap().to_text(2).unwrap(),
            "-0.50"
        );
        assert_eq!(
            d("10").div_round(4, 4).unwrap().to_text(4).unwrap(),
            "2.5000"
        );
        assert_eq!(
            d("2").div_round(3, 4).unwrap().to_text(4).unwrap(),
            "0.6667"
        );
        assert_eq!(
            d("-2").div_round(3, 4).unwrap().to_text(4).unwrap(),
            "-0.6667"
        );
        assert_eq!(d("1.005").to_text(2).unwrap(), "1.01");
        assert_eq!(d("0").to_text(0).unwrap(), "0");
        assert!(d("-0.5") < d("0.25"));
        assert!(d("10") > d("9.99"));
    }

    #[test]
    fn comparisons_follow_the_server() {
        let t = |s: &'static str| Cmp {
            text: Some(s.as_bytes()),
            weight: None,
            space: None,
        };
        let null = Cmp {
            text: None,
            weight: None,
            space: None,
        };
        assert_eq!(compare(Kind::Decimal, &t("9"), &t("10")), Ordering::Less);
        assert_eq!(compare(Kind::Decimal, &null, &t("-10")), Ordering::Less);
        assert_eq!(
            compare(Kind::Time, &t("-01:00:00"), &t("00:30:00")),
            Ordering::Less
        );
        assert_eq!(
            compare(Kind::Time, &t("100:00:00"), &t("20:00:00")),
            Ordering::Greater
        );
        assert_eq!(
            compare_decimal_text(b"-123456789012345678901234567890123456789", b"1"),
            Ordering::Less
        );
        // PAD SPACE: 'a' = 'a ', and 'a\t' < 'a' because \t sorts below a space.
        let w = |weight: &'static [u8]| Cmp {
            text: Some(b"x"),
            weight: Some(weight),
            space: Some(&[0x00, 0x20]),
        };
        let pad = Kind::Collated { pad_space: true };
        assert_eq!(
            compare(pad, &w(&[0, 0x41]), &w(&[0, 0x41, 0, 0x20])),
            Ordering::Equal
        );
        assert_eq!(
            compare(pad, &w(&[0, 0x41, 0, 0x09]), &w(&[0, 0x41])),
            Ordering::Less
        );
        assert_eq!(
            compare(pad, &w(&[0, 0x41]), &w(&[0, 0x41, 0, 0x09])),
            Ordering::Greater
        );
        let nopad = Kind::Collated { pad_space: false };
        assert_eq!(
            compare(nopad, &w(&[0, 0x41]), &w(&[0, 0x41, 0, 0x20])),
            Ordering::Less
        );
    }
}
