//! An ENUM partition key: its members and how its collation compares
//! them, so a key value routes as the column stores it.

/// The members of an ENUM key and how its collation compares them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumKey {
    pub members: Vec<String>,
    /// `_ci` collation: ASCII case is ignored.
    pub is_case_insensitive: bool,
    /// PAD SPACE collation (not `_nopad_`): trailing spaces are ignored.
    pub is_pad_space: bool,
}

impl EnumKey {
    /// Parse `enum('a','b''c') [COLLATE name]` (information_schema
    /// COLUMN_TYPE, plus the collation as hscale stores it).
    pub fn parse(key_type: &str) -> Option<EnumKey> {
        let lower = key_type.to_ascii_lowercase();
        let rest = lower.strip_prefix("enum(")?;
        let body_len = rest.len();
        let original = &key_type[key_type.len() - body_len..];
        let mut members = Vec::new();
        let mut chars = original.char_indices().peekable();
        let end = loop {
            match chars.next()? {
                (_, '\'') => {
                    let mut m = String::new();
                    loop {
                        match chars.next()? {
                            (_, '\'') if chars.peek().map(|c| c.1) == Some('\'') => {
                                chars.next();
                                m.push('\'');
                            }
                            (_, '\'') => break,
                            (_, '\\') => m.push(chars.next()?.1),
                            (_, c) => m.push(c),
                        }
                    }
                    members.push(m);
                }
                (_, ',') => {}
                (i, ')') => break i,
                _ => return None,
            }
        };
        let after = &lower[lower.len() - body_len + end + 1..];
        let collation = after
            .split_once("collate ")
            .map(|(_, c)| c.trim().to_string())?;
        Some(EnumKey {
            members,
            is_case_insensitive: collation.contains("_ci"),
            is_pad_space: !collation.contains("nopad"),
        })
    }

    /// The member a string names, as the column's collation compares; only
    /// exact matches and ASCII case/space differences are recognized.
    pub fn member(&self, s: &str) -> Option<&str> {
        if let Some(m) = self.members.iter().find(|m| *m == s) {
            return Some(m);
        }
        let trim = |x: &str| -> String {
            if self.is_pad_space {
                x.trim_end_matches(' ').to_string()
            } else {
                x.to_string()
            }
        };
        let want = trim(s);
        if !want.is_ascii() {
            return None;
        }
        let mut found = self.members.iter().filter(|m| {
            let m = trim(m);
            if self.is_case_insensitive {
                m.eq_ignore_ascii_case(&want)
            } else {
                m == want
            }
        });
        let first = found.next()?;
        found.next().is_none().then_some(first.as_str())
    }
}
