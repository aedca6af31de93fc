//! A partition key's value as the proxy sees it in a statement: a literal
//! or a bound parameter.

use std::fmt;

/// A key value. Integers keep their exact value; everything else is kept
/// in its string form, as MySQL would convert it for string functions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyValue {
    Int(i128),
    Str(String),
    Null,
}

/// `s` without the white space the server skips around a number it reads
/// from a string: ASCII only. A string led or ended by another space
/// (U+3000, U+00A0, ...) is not that number to it (`'\u{3000}2'` is 0).
pub fn trim_server_space(s: &str) -> &str {
    s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'))
}

impl KeyValue {
    /// The value's string form, as `CONCAT(v)` would give it.
    pub fn string_form(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            KeyValue::Int(i) => Some(std::borrow::Cow::Owned(i.to_string())),
            KeyValue::Str(s) => Some(std::borrow::Cow::Borrowed(s)),
            KeyValue::Null => None,
        }
    }

    /// The value as an integer, if it is one (strings holding a plain
    /// integer count, as MySQL converts them in arithmetic).
    pub fn as_int(&self) -> Option<i128> {
        match self {
            KeyValue::Int(i) => Some(*i),
            KeyValue::Str(s) => {
                let t = trim_server_space(s);
                if t.is_empty() || t.len() > 38 {
                    return None;
                }
                t.parse().ok()
            }
            KeyValue::Null => None,
        }
    }
}

impl fmt::Display for KeyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyValue::Int(i) => write!(f, "{i}"),
            KeyValue::Str(s) => write!(f, "'{}'", s.replace('\'', "''")),
            KeyValue::Null => f.write_str("NULL"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KeyValue;

    #[test]
    fn only_ascii_white_space_surrounds_an_integer() {
        let v = |s: &str| KeyValue::Str(s.into()).as_int();
        assert_eq!(v(" 2\t"), Some(2));
        assert_eq!(v("\u{3000}2"), None);
        assert_eq!(v("2\u{a0}"), None);
    }
}
