//! The single-byte character sets a client may send its statements in
//! (`SET NAMES cp1251`, a latin2 handshake collation, ...), read as the
//! server reads them: each byte one character, by the server's own tables
//! (`single_byte/tables.rs`, generated from MariaDB's conversions and
//! checked against a running server by the integration tests).
//!
//! The proxy plans text as UTF-8. A statement from such a client that
//! names partitioned tables is read into UTF-8 here ([`SingleByte::decode`])
//! and run with `character_set_client` utf8mb4, so its keys route as their
//! column holds them and the server converts its literals as it would have
//! converted the client's bytes. A byte the server reads as no character
//! (it stores `?`), or as an ASCII character (armscii8's punctuation,
//! swe7's letters in ASCII's places) has no text that reads back the same:
//! [`SingleByte::decode`] gives `None` and the statement is refused.

mod tables;

/// One single-byte character set.
#[derive(Debug, PartialEq, Eq)]
pub struct SingleByte {
    pub name: &'static str,
    /// Bytes under 0x80 the server does not read as ASCII (swe7's).
    low_remapped: &'static [u8],
    /// The code point of each byte 0x80-0xFF; 0: none that reads back.
    high: [u16; 128],
}

impl SingleByte {
    /// The character set named `name` (in any case), if it is one of the
    /// server's single-byte sets other than binary.
    pub fn by_name(name: &str) -> Option<&'static SingleByte> {
        tables::ALL
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// Every single-byte character set, for the tests.
    pub fn all() -> &'static [SingleByte] {
        tables::ALL
    }

    /// Whether `bytes` holds a byte this character set does not read as
    /// ASCII: text that is not the same read as UTF-8.
    pub fn is_foreign(&self, bytes: &[u8]) -> bool {
        !bytes.is_ascii()
            || (!self.low_remapped.is_empty()
                && bytes.iter().any(|b| self.low_remapped.contains(b)))
    }

    /// The character byte `b` is, if it reads back as the same byte.
    pub fn char_of(&self, b: u8) -> Option<char> {
        if b < 0x80 {
            return (!self.low_remapped.contains(&b)).then_some(char::from(b));
        }
        match self.high[usize::from(b - 0x80)] {
            0 => None,
            cp => char::from_u32(u32::from(cp)),
        }
    }

    /// `bytes` as the text the server reads; `None` when a byte reads as
    /// no character or as ASCII (see the module's comment).
    pub fn decode(&self, bytes: &[u8]) -> Option<String> {
        let mut out = String::with_capacity(bytes.len() + bytes.len() / 2);
        for &b in bytes {
            out.push(self.char_of(b)?);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bytes_as_the_server_does() {
        let cp1251 = SingleByte::by_name("cp1251").unwrap();
        assert_eq!(cp1251.decode(b"\xc6\xe0\xf0").as_deref(), Some("Жар"));
        assert_eq!(cp1251.decode(b"x\x88").as_deref(), Some("x€"));
        // 0x98 is no character in cp1251: the server stores '?'.
        assert_eq!(cp1251.decode(b"a\x98"), None);
        let koi8r = SingleByte::by_name("koi8r").unwrap();
        assert_eq!(koi8r.decode(b"\xf7").as_deref(), Some("В"));
        let latin2 = SingleByte::by_name("latin2").unwrap();
        assert_eq!(latin2.decode(b"\xb1").as_deref(), Some("ą"));
        // armscii8's 0xFF reads as an apostrophe: refused, not a quote.
        let armscii8 = SingleByte::by_name("armscii8").unwrap();
        assert_eq!(armscii8.decode(b"\xff"), None);
        let swe7 = SingleByte::by_name("swe7").unwrap();
        assert!(swe7.is_foreign(b"a@b"));
        assert_eq!(swe7.decode(b"a@b"), None);
        assert!(!swe7.is_foreign(b"abc"));
        let ascii = SingleByte::by_name("ascii").unwrap();
        assert_eq!(ascii.decode(b"\xe9"), None);
        assert!(SingleByte::by_name("utf8mb4").is_none());
        assert!(SingleByte::by_name("binary").is_none());
    }

    #[test]
    fn latin1_is_the_collation_tables_latin1() {
        let latin1 = SingleByte::by_name("latin1").unwrap();
        for b in 0..=255u8 {
            let want = char::from_u32(u32::from(crate::collation_tables::LATIN1[usize::from(b)]));
            assert_eq!(latin1.char_of(b), want, "byte {b:#x}");
        }
    }

    #[test]
    fn every_mapped_byte_is_one_character_of_its_own() {
        for cs in SingleByte::all() {
            let mut seen = std::collections::HashSet::new();
            for b in 0..=255u8 {
                if let Some(c) = cs.char_of(b) {
                    assert!(seen.insert(c), "{}: {c:?} twice", cs.name);
                }
            }
        }
    }
}
