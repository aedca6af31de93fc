//! Hashing functions: map a key value to a partition value.
//!
//! | function | partition value | keeps order |
//! |---|---|---|
//! | `NONE()` | the value itself | yes |
//! | `MOD(n)` | `v MOD n` (sign of `v`, as MySQL) | no |
//! | `DIV(n)` | `v DIV n` (truncated toward zero, as MySQL) | yes |
//! | `PREFIX(n)` | first `n` characters of the string form | yes |
//! | `DATE('pattern')` | `DATE_FORMAT(v, pattern)` with `%Y %m %d %H` | yes |
//! | `HASH(n)` | `CRC32(v) % n` | no |

use std::fmt;

use crate::KeyValue;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HashingFunction {
    None,
    Mod(u64),
    Div(u64),
    Prefix(usize),
    Date(String),
    Hash(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    #[error("unknown hashing function {0:?}: use NONE(), MOD(n), DIV(n), PREFIX(n), DATE('pattern') or HASH(n)")]
    UnknownFunction(String),
    #[error("{function}: {problem}")]
    BadArgument {
        function: &'static str,
        problem: String,
    },
    #[error("{function} cannot take the value {value}: {why}")]
    BadValue {
        function: &'static str,
        value: String,
        why: &'static str,
    },
    /// A key under a collation the backend weighs (`key_compare::Weighed`)
    /// whose weight this worker has not asked for yet: the value is noted
    /// (a question in `known::Known`), the proxy asks and routes again.
    #[error("the weight of a key under {collation} is not known yet")]
    WeightUnknown { collation: String },
}

impl HashingFunction {
    /// Parse `MOD(4)`, `DATE('%Y-%m')`, ... (case-insensitive name).
    pub fn parse(text: &str) -> Result<HashingFunction, HashError> {
        let t = text.trim();
        let unknown = || HashError::UnknownFunction(t.to_string());
        let open = t.find('(').ok_or_else(unknown)?;
        if !t.ends_with(')') {
            return Err(unknown());
        }
        let name = t[..open].trim().to_ascii_uppercase();
        let arg = t[open + 1..t.len() - 1].trim();
        let number = |function: &'static str| -> Result<u64, HashError> {
            match arg.parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(HashError::BadArgument {
                    function,
                    problem: format!("needs a positive integer, got {arg:?}"),
                }),
            }
        };
        match name.as_str() {
            "NONE" if arg.is_empty() => Ok(HashingFunction::None),
            "NONE" => Err(HashError::BadArgument {
                function: "NONE",
                problem: "takes no argument".into(),
            }),
            "MOD" => Ok(HashingFunction::Mod(number("MOD")?)),
            "DIV" => Ok(HashingFunction::Div(number("DIV")?)),
            "HASH" => Ok(HashingFunction::Hash(number("HASH")?)),
            "PREFIX" => Ok(HashingFunction::Prefix(number("PREFIX")? as usize)),
            "DATE" => {
                let pattern = arg
                    .strip_prefix('\'')
                    .and_then(|a| a.strip_suffix('\''))
                    .or_else(|| arg.strip_prefix('"').and_then(|a| a.strip_suffix('"')))
                    .ok_or_else(|| HashError::BadArgument {
                        function: "DATE",
                        problem: format!("needs a quoted pattern such as '%Y-%m', got {arg}"),
                    })?;
                check_date_pattern(pattern)?;
                Ok(HashingFunction::Date(pattern.to_string()))
            }
            _ => Err(unknown()),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            HashingFunction::None => "NONE",
            HashingFunction::Mod(_) => "MOD",
            HashingFunction::Div(_) => "DIV",
            HashingFunction::Prefix(_) => "PREFIX",
            HashingFunction::Date(_) => "DATE",
            HashingFunction::Hash(_) => "HASH",
        }
    }

    /// True when `a <= b` implies `f(a) <= f(b)`, so that a range of keys
    /// maps to a range of partition values (NONE, DIV, PREFIX, DATE).
    pub fn is_order_preserving(&self) -> bool {
        matches!(
            self,
            HashingFunction::None
                | HashingFunction::Div(_)
                | HashingFunction::Prefix(_)
                | HashingFunction::Date(_)
        )
    }

    /// The partition value of a key value. NULL has no partition value (it
    /// goes to the default partition).
    pub fn apply(&self, v: &KeyValue) -> Result<Option<String>, HashError> {
        if *v == KeyValue::Null {
            return Ok(None);
        }
        let bad = |function: &'static str, why: &'static str| HashError::BadValue {
            function,
            value: v.to_string(),
            why,
        };
        let s = match self {
            HashingFunction::None => v.string_form().map(|s| s.into_owned()).unwrap_or_default(),
            HashingFunction::Mod(n) => {
                let i = v.as_int().ok_or_else(|| bad("MOD", "not an integer"))?;
                (i % *n as i128).to_string()
            }
            HashingFunction::Div(n) => {
                let i = v.as_int().ok_or_else(|| bad("DIV", "not an integer"))?;
                (i / *n as i128).to_string()
            }
            HashingFunction::Prefix(n) => {
                let s = v.string_form().unwrap_or_default();
                s.chars().take(*n).collect()
            }
            HashingFunction::Date(pattern) => {
                let s = v.string_form().unwrap_or_default();
                if may_round_across(pattern, &s) {
                    return Err(bad(
                        "DATE",
                        "its fractional seconds may round into the next hour or day (sql_mode TIME_ROUND_FRACTIONAL, or a column of fewer fraction digits)",
                    ));
                }
                format_date(pattern, &s, false).ok_or_else(|| {
                    bad(
                        "DATE",
                        "not a date such as '2024-05-17' or '2024-05-17 13:00:00'",
                    )
                })?
            }
            HashingFunction::Hash(n) => {
                let s = v.string_form().unwrap_or_default();
                (crc32fast::hash(s.as_bytes()) as u64 % n).to_string()
            }
        };
        Ok(Some(s))
    }
}

impl HashingFunction {
    /// [`HashingFunction::apply`] to a value a DATE function's column
    /// holds, as the server read it back (`conversions.rs`): a day past
    /// its month's end is the column's value under ALLOW_INVALID_DATES.
    pub fn apply_stored(&self, v: &KeyValue) -> Result<Option<String>, HashError> {
        match (self, v) {
            (HashingFunction::Date(pattern), KeyValue::Str(s)) => {
                Ok(Some(format_date(pattern, s, true).ok_or_else(|| {
                    HashError::BadValue {
                        function: "DATE",
                        value: v.to_string(),
                        why: "not a date such as '2024-05-17' or '2024-05-17 13:00:00'",
                    }
                })?))
            }
            _ => self.apply(v),
        }
    }

    /// Whether some key value maps to partition value `v`; the error says
    /// why not (used to refuse impossible dictionary entries).
    pub fn can_produce(&self, v: &str) -> Result<(), String> {
        let int = || {
            v.parse::<i128>()
                .map_err(|_| format!("{self} produces integers"))
        };
        match self {
            HashingFunction::None => Ok(()),
            HashingFunction::Div(_) => int().map(|_| ()),
            HashingFunction::Mod(n) => {
                let i = int()?;
                if i.unsigned_abs() < *n as u128 {
                    Ok(())
                } else {
                    Err(format!(
                        "{self} produces values from {} to {}",
                        1 - *n as i128,
                        *n - 1
                    ))
                }
            }
            HashingFunction::Hash(n) => {
                let i = int()?;
                if i >= 0 && (i as u128) < *n as u128 {
                    Ok(())
                } else {
                    Err(format!("{self} produces values from 0 to {}", n - 1))
                }
            }
            HashingFunction::Prefix(n) => {
                if v.chars().count() <= *n {
                    Ok(())
                } else {
                    Err(format!("{self} produces at most {n} characters"))
                }
            }
            HashingFunction::Date(p) => {
                // Format a sample and compare the shape: digits where the
                // pattern has fields, the same literal characters elsewhere.
                let sample = format_date(p, "2000-01-01 00:00:00", false).unwrap_or_default();
                let same_shape = sample.len() == v.len()
                    && sample
                        .chars()
                        .zip(v.chars())
                        .all(|(a, b)| (a.is_ascii_digit() && b.is_ascii_digit()) || a == b);
                if same_shape {
                    Ok(())
                } else {
                    Err(format!("{self} produces values shaped like {sample:?}"))
                }
            }
        }
    }
}

impl fmt::Display for HashingFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HashingFunction::None => f.write_str("NONE()"),
            HashingFunction::Mod(n) => write!(f, "MOD({n})"),
            HashingFunction::Div(n) => write!(f, "DIV({n})"),
            HashingFunction::Prefix(n) => write!(f, "PREFIX({n})"),
            HashingFunction::Date(p) => write!(f, "DATE('{p}')"),
            HashingFunction::Hash(n) => write!(f, "HASH({n})"),
        }
    }
}

fn check_date_pattern(p: &str) -> Result<(), HashError> {
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('Y' | 'm' | 'd' | 'H' | '%') => {}
                other => {
                    return Err(HashError::BadArgument {
                        function: "DATE",
                        problem: format!(
                            "pattern {p:?} uses %{}; only %Y %m %d %H are supported",
                            other.map(String::from).unwrap_or_default()
                        ),
                    })
                }
            }
        }
    }
    Ok(())
}

/// Whether the server may store `value` in another period of `pattern`
/// than its text says: a time of `HH:59:59` with a non-zero fraction is
/// truncated by default but rounded up under sql_mode
/// TIME_ROUND_FRACTIONAL (and seven or more fraction digits are rounded
/// to six), which carries into the next hour (or day, month, year). The
/// proxy does not know the session's sql_mode or the column's precision
/// here, so such a key has no single partition: a read asks every
/// candidate, a write is refused.
fn may_round_across(pattern: &str, value: &str) -> bool {
    let Some((_, time)) = value.trim().split_once([' ', 'T']) else {
        return false;
    };
    let Some((hms, frac)) = time.split_once('.') else {
        return false;
    };
    if !frac.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return false;
    }
    let mut parts = hms.split(':').map(|p| p.trim().parse::<u32>().ok());
    let (h, m, s) = (
        parts.next().flatten(),
        parts.next().flatten(),
        parts.next().flatten(),
    );
    let is_hour_end = m == Some(59) && s == Some(59);
    is_hour_end && (pattern.contains("%H") || h == Some(23))
}

/// The last day of month `m` (1-12) of year `y`.
fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        2 if y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `DATE_FORMAT(value, pattern)` for `%Y %m %d %H`, on a DATE, DATETIME or
/// TIMESTAMP literal (`YYYY-MM-DD[ HH[:MM[:SS[.frac]]]]`).
/// `is_stored`: `value` is what a column holds (read back from the
/// server), whose day may pass its month's end under ALLOW_INVALID_DATES.
fn format_date(pattern: &str, value: &str, is_stored: bool) -> Option<String> {
    let v = value.trim();
    let (date, time) = match v.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t)),
        None => (v, None),
    };
    let mut parts = date.split('-');
    // Four-digit years only: the server reads '24-01-15' as 2024.
    let year = parts.next()?;
    if year.len() != 4 {
        return None;
    }
    let y: u32 = year.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let d: u32 = parts.next()?.parse().ok()?;
    // The zero date is a value too: the one a DATETIME column stores for
    // a string it cannot read (with warning 1265 without strict mode,
    // where strict mode fails the statement with 1292 instead, on the
    // partition it is routed to). DATE_FORMAT gives it zeros ('0000-00').
    // A day past its month's end ('2024-02-30') is no date: the zero
    // date without strict mode, an error with it, the date itself under
    // ALLOW_INVALID_DATES. Only the server knows which (the session's
    // mode): such a key has no partition here, and an INSERT asks the
    // server what the column makes of it (`conversions.rs`).
    let is_zero = (y, m, d) == (0, 0, 0);
    if parts.next().is_some()
        || !is_zero
            && if is_stored {
                // A zero month or day is a value too ('2024-02-00' without
                // NO_ZERO_IN_DATE): DATE_FORMAT shows it as zeros.
                m > 12 || d > 31
            } else {
                !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m)
            }
        || y > 9999
    {
        return None;
    }
    let h: u32 = match time {
        Some(t) => {
            let mut fields = t.split(':');
            let h: u32 = fields.next()?.parse().ok()?;
            // Minutes and seconds past 59 make no time either.
            for f in fields.take(2) {
                let whole = f.split('.').next()?;
                if !whole.is_empty() && whole.parse::<u32>().ok()? > 59 {
                    return None;
                }
            }
            if h > 23 {
                return None;
            }
            h
        }
        None => 0,
    };
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&format!("{y:04}")),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('H') => out.push_str(&format!("{h:02}")),
            Some(other) => out.push(other),
            None => out.push('%'),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(f: &str, v: KeyValue) -> String {
        HashingFunction::parse(f)
            .unwrap()
            .apply(&v)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn fractions_that_may_round_into_the_next_period_have_no_partition() {
        let f = HashingFunction::parse("DATE('%Y-%m')").unwrap();
        let v = |s: &str| f.apply(&KeyValue::Str(s.into()));
        assert!(v("2024-01-31 23:59:59.5").is_err());
        assert!(v("2024-01-31 23:59:59.0000001").is_err());
        assert_eq!(v("2024-01-31 23:59:59.000").unwrap().unwrap(), "2024-01");
        assert_eq!(v("2024-01-31 23:59:58.9").unwrap().unwrap(), "2024-01");
        assert_eq!(v("2024-01-31 22:59:59.9").unwrap().unwrap(), "2024-01");
        let h = HashingFunction::parse("DATE('%Y-%m-%d %H')").unwrap();
        assert!(h
            .apply(&KeyValue::Str("2024-01-31 22:59:59.9".into()))
            .is_err());
    }

    #[test]
    fn days_past_the_end_of_their_month_have_no_partition() {
        let f = HashingFunction::parse("DATE('%Y-%m')").unwrap();
        let v = |s: &str| f.apply(&KeyValue::Str(s.into()));
        for bad in [
            "2024-02-30 10:00:00",
            "2023-02-29",
            "2024-04-31",
            "2024-02-00",
            "2024-01-31 23:60:00",
            "2024-01-31 10:00:60",
        ] {
            assert!(v(bad).is_err(), "{bad}");
        }
        assert_eq!(v("2024-02-29").unwrap().unwrap(), "2024-02");
        assert_eq!(v("2000-02-29 23:59:59").unwrap().unwrap(), "2000-02");
        assert_eq!(v("0000-00-00 00:00:00").unwrap().unwrap(), "0000-00");
    }

    /// Golden vectors. Each was checked against MariaDB 10.11 with the
    /// expression in the comment; the integration test `hashing` re-checks
    /// them, and thousands more, on a real server.
    #[test]
    fn golden_vectors() {
        use KeyValue::{Int, Str};
        // MOD(v, 3) and -7 MOD 3 = -1
        assert_eq!(apply("MOD(3)", Int(7)), "1");
        assert_eq!(apply("MOD(3)", Int(-7)), "-1");
        assert_eq!(apply("mod(10)", Str("42".into())), "2");
        // -7 DIV 2 = -3, 7 DIV 2 = 3
        assert_eq!(apply("DIV(2)", Int(-7)), "-3");
        assert_eq!(apply("DIV(1000)", Int(123456)), "123");
        // CRC32('123') = 2286445522, % 16 = 2; CRC32('books') = 1243294354
        assert_eq!(apply("HASH(16)", Int(123)), "2");
        assert_eq!(apply("HASH(1000)", Str("books".into())), "354");
        assert_eq!(apply("HASH(4)", Str("".into())), "0");
        // LEFT('foobar', 3)
        assert_eq!(apply("PREFIX(3)", Str("foobar".into())), "foo");
        assert_eq!(apply("PREFIX(2)", Str("Zoë".into())), "Zo");
        assert_eq!(apply("PREFIX(2)", Int(12345)), "12");
        // DATE_FORMAT
        assert_eq!(apply("DATE('%Y-%m')", Str("2024-05-17".into())), "2024-05");
        assert_eq!(
            apply("DATE('%Y%m%d%H')", Str("2024-05-17 13:45:00".into())),
            "2024051713"
        );
        assert_eq!(apply("NONE()", Str("books".into())), "books");
        assert_eq!(apply("NONE()", Int(-5)), "-5");
    }

    #[test]
    fn refusals_name_the_problem() {
        let e = HashingFunction::parse("MOD(4)")
            .unwrap()
            .apply(&KeyValue::Str("abc".into()))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "MOD cannot take the value 'abc': not an integer"
        );
        assert!(HashingFunction::parse("MOD(0)").is_err());
        assert!(HashingFunction::parse("SHA(3)")
            .unwrap_err()
            .to_string()
            .contains("unknown hashing function"));
        assert!(HashingFunction::parse("DATE('%Y-%i')")
            .unwrap_err()
            .to_string()
            .contains("%i"));
        assert!(HashingFunction::parse("DATE('%Y')")
            .unwrap()
            .apply(&KeyValue::Str("17/05/2024".into()))
            .is_err());
        assert_eq!(
            HashingFunction::parse("HASH(4)")
                .unwrap()
                .apply(&KeyValue::Null)
                .unwrap(),
            None
        );
    }

    #[test]
    fn display_round_trips() {
        for f in [
            "NONE()",
            "MOD(3)",
            "DIV(100)",
            "PREFIX(2)",
            "DATE('%Y-%m')",
            "HASH(16)",
        ] {
            let h = HashingFunction::parse(f).unwrap();
            assert_eq!(h.to_string(), f);
            assert_eq!(HashingFunction::parse(&h.to_string()).unwrap(), h);
        }
    }

    proptest::proptest! {
        #[test]
        fn div_and_prefix_keep_order(a in -100_000i64..100_000, b in -100_000i64..100_000, n in 1u64..1000) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let f = HashingFunction::Div(n);
            let x: i128 = f.apply(&KeyValue::Int(lo as i128)).unwrap().unwrap().parse().unwrap();
            let y: i128 = f.apply(&KeyValue::Int(hi as i128)).unwrap().unwrap().parse().unwrap();
            proptest::prop_assert!(x <= y);
        }

        #[test]
        fn never_panics(s in "\\PC{0,30}", n in 1u64..100) {
            for f in [HashingFunction::None, HashingFunction::Mod(n), HashingFunction::Div(n),
                      HashingFunction::Prefix(n as usize), HashingFunction::Date("%Y-%m-%d %H".into()), HashingFunction::Hash(n)] {
                let _ = f.apply(&KeyValue::Str(s.clone()));
            }
            let _ = HashingFunction::parse(&s);
        }
    }
}
