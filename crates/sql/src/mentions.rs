//! Names in a query that the proxy answers itself ([`Mentions`]), noted
//! by [`crate::analyze`] from the tokens it reads anyway.

/// Names in a query whose presence makes the proxy answer part of it
/// itself (`hscale/src/session/rewrite.rs`): a set of bits, found while
/// [`analyze`] reads the tokens, so the proxy scans no statement's text
/// for them. A bit is set for any word (or quoted identifier) of that
/// name, in any statement of the query: a superset of what the rewrites,
/// which read the same tokens, replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Mentions(pub u8);

impl Mentions {
    pub const NONE: Mentions = Mentions(0);
    /// `INFORMATION_SCHEMA`.
    pub const INFORMATION_SCHEMA: Mentions = Mentions(1);
    /// `PROCESSLIST`.
    pub const PROCESSLIST: Mentions = Mentions(1 << 1);
    /// `ROW_COUNT(` or `FOUND_ROWS(`: what the previous statement left.
    pub const LAST_STATEMENT: Mentions = Mentions(1 << 2);
    /// A system variable (`@@name`).
    pub const SYSTEM_VARIABLE: Mentions = Mentions(1 << 3);
    /// `CONNECTION_ID(`.
    pub const CONNECTION_ID: Mentions = Mentions(1 << 4);
    /// `CURRENT_USER`, `USER`, `SESSION_USER` or `SYSTEM_USER`.
    pub const USER_FUNCTION: Mentions = Mentions(1 << 5);
    /// Every bit: text that did not lex, or a caller without facts.
    pub const ALL: Mentions = Mentions(0x3f);

    pub fn contains(self, other: Mentions) -> bool {
        self.0 & other.0 == other.0
    }
    pub fn intersects(self, other: Mentions) -> bool {
        self.0 & other.0 != 0
    }
    pub fn insert(&mut self, other: Mentions) {
        self.0 |= other.0;
    }

    /// The bit a word names, if any (`is_call`: a `(` follows it).
    #[inline]
    pub(crate) fn of_word(text: &str, is_call: bool) -> Mentions {
        let is = |w: &str| text.eq_ignore_ascii_case(w);
        // Most words have none of these lengths: one comparison.
        match text.len() {
            4 if is("USER") => Mentions::USER_FUNCTION,
            9 if is_call && is("ROW_COUNT") => Mentions::LAST_STATEMENT,
            10 if is_call && is("FOUND_ROWS") => Mentions::LAST_STATEMENT,
            11 if is("PROCESSLIST") => Mentions::PROCESSLIST,
            11 if is("SYSTEM_USER") => Mentions::USER_FUNCTION,
            12 if is("CURRENT_USER") || is("SESSION_USER") => Mentions::USER_FUNCTION,
            13 if is_call && is("CONNECTION_ID") => Mentions::CONNECTION_ID,
            18 if is("INFORMATION_SCHEMA") => Mentions::INFORMATION_SCHEMA,
            _ => Mentions::NONE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Mentions;
    use crate::analyze;

    #[test]
    fn found_in_the_tokens_of_every_statement() {
        let m = |sql: &str| analyze(sql).mentions;
        assert_eq!(m("SELECT id FROM t WHERE id = 1"), Mentions::NONE);
        // In strings and comments the rewrites have nothing to replace.
        assert_eq!(
            m("SELECT 'information_schema', 'ROW_COUNT()' /* USER() */"),
            Mentions::NONE
        );
        assert_eq!(
            m("select * from Information_Schema.tables"),
            Mentions::INFORMATION_SCHEMA
        );
        assert_eq!(
            m("SELECT * FROM `information_schema`.`PROCESSLIST`"),
            Mentions(Mentions::INFORMATION_SCHEMA.0 | Mentions::PROCESSLIST.0)
        );
        assert_eq!(m("SELECT row_count(), 1"), Mentions::LAST_STATEMENT);
        assert_eq!(m("DO 1; SELECT FOUND_ROWS ()"), Mentions::LAST_STATEMENT);
        // A column named like the function is no call.
        assert_eq!(m("SELECT row_count FROM t"), Mentions::NONE);
        assert_eq!(m("SELECT @@max_allowed_packet"), Mentions::SYSTEM_VARIABLE);
        assert_eq!(m("SELECT CONNECTION_ID()"), Mentions::CONNECTION_ID);
        assert_eq!(m("SELECT CURRENT_USER"), Mentions::USER_FUNCTION);
        assert_eq!(m("SELECT user()"), Mentions::USER_FUNCTION);
        // Executable comments run: their content counts.
        assert_eq!(
            m("SELECT /*!50000 ROW_COUNT() */"),
            Mentions::LAST_STATEMENT
        );
        assert_eq!(m("SELECT 'unterminated"), Mentions::ALL);
    }
}

/// Whether `hay` contains `needle` in any ASCII case. Runs for every
/// statement (`guard.rs`): a scan for the needle's first byte in either
/// case, then a comparison where one is found.
pub fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let Some(last) = hay.len().checked_sub(needle.len()) else {
        return false;
    };
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    // The first byte's candidates found with SIMD (memchr): a statement
    // without the needle's first letter costs a few instructions per 16
    // or 32 bytes, not a compare per byte.
    memchr::memchr2_iter(lower, upper, &hay[..=last])
        .any(|i| hay[i + 1..i + needle.len()].eq_ignore_ascii_case(rest))
}

#[cfg(test)]
mod contains_tests {
    use super::contains_ci;

    #[test]
    fn finds_in_any_case() {
        assert!(contains_ci(b"select row_count()", b"ROW"));
        assert!(contains_ci(b"SELECT 1 FROM Hscale.x", b"hscale"));
        assert!(contains_ci(b"abc", b""));
        assert!(!contains_ci(b"ab", b"abc"));
        assert!(!contains_ci(b"select 1", b"hscale"));
        assert!(contains_ci(b"hscal hscalE", b"HSCALE"));
    }
}
