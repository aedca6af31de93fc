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
                let t = s.trim();
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
