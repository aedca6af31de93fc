//! Collation ids as sent in the handshake and COM_CHANGE_USER, mapped to
//! the character set and collation a session gets ([`Collations`]).
//!
//! The full table is the main backend's `information_schema.COLLATIONS`,
//! read at start (`Collations::from_rows`); until it is read, a short
//! built-in table answers ([`Collations::builtin`]). What a client gets for
//! an id follows MariaDB's `thd_init_client_charset`: a known collation is
//! set as it is, an id the server does not know gives the server's default,
//! and ucs2, utf16, utf16le, utf32 and filename are refused (the server's
//! parser cannot read them).

use std::collections::HashMap;

/// `(id, character set, collation)` for the collations clients commonly send.
const BUILTIN: &[(u16, &str, &str)] = &[
    (8, "latin1", "latin1_swedish_ci"),
    (11, "ascii", "ascii_general_ci"),
    (28, "gbk", "gbk_chinese_ci"),
    (33, "utf8mb3", "utf8mb3_general_ci"),
    (45, "utf8mb4", "utf8mb4_general_ci"),
    (46, "utf8mb4", "utf8mb4_bin"),
    (47, "latin1", "latin1_bin"),
    (48, "latin1", "latin1_general_ci"),
    (63, "binary", "binary"),
    (83, "utf8mb3", "utf8mb3_bin"),
    (192, "utf8mb3", "utf8mb3_unicode_ci"),
    (224, "utf8mb4", "utf8mb4_unicode_ci"),
];

/// The collation the proxy uses on its own backend connections.
pub const BACKEND_COLLATION: u8 = 45;

/// The character set and collation of [`BACKEND_COLLATION`].
pub const BACKEND_NAMES: (&str, &str) = ("utf8mb4", "utf8mb4_general_ci");

/// Character sets a server refuses as a client character set: its parser
/// cannot read them (MariaDB's `is_supported_parser_charset`).
const NOT_FOR_CLIENTS: &[&str] = &["ucs2", "utf16", "utf16le", "utf32", "filename"];

/// The server's internal `filename` character set: known to the server
/// (and refused for clients) but not listed in `information_schema`.
const FILENAME_ID: u16 = 17;

/// What a session gets for the collation id its client names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientCharset<'a> {
    /// `SET NAMES charset COLLATE collation`.
    Named {
        charset: &'a str,
        collation: &'a str,
    },
    /// An id the server does not know: the server's default character set.
    ServerDefault,
    /// A character set no client may use: the login is refused with
    /// ER_WRONG_VALUE_FOR_VAR for `character_set_client`.
    Refused { charset: &'a str },
}

/// Collation ids to `(character set, collation)`.
#[derive(Debug, Clone, Default)]
pub struct Collations {
    by_id: HashMap<u16, (Box<str>, Box<str>)>,
}

impl Collations {
    /// The short table used until the backend's is read.
    pub fn builtin() -> Collations {
        Collations::from_rows(
            BUILTIN
                .iter()
                .map(|&(id, cs, coll)| (id, cs.to_string(), coll.to_string())),
        )
    }

    /// A table from `(ID, CHARACTER_SET_NAME, COLLATION_NAME)` rows.
    pub fn from_rows(rows: impl IntoIterator<Item = (u16, String, String)>) -> Collations {
        Collations {
            by_id: rows
                .into_iter()
                .map(|(id, cs, coll)| (id, (cs.into(), coll.into())))
                .collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Character set and collation of `id`, if the table knows it.
    pub fn get(&self, id: u16) -> Option<(&str, &str)> {
        self.by_id.get(&id).map(|(cs, coll)| (&**cs, &**coll))
    }

    /// What a client naming collation `id` gets, as a server answers it.
    pub fn for_client(&self, id: u16) -> ClientCharset<'_> {
        match self.get(id) {
            None if id == FILENAME_ID => ClientCharset::Refused {
                charset: "filename",
            },
            None => ClientCharset::ServerDefault,
            Some((cs, _)) if NOT_FOR_CLIENTS.contains(&cs) => {
                ClientCharset::Refused { charset: cs }
            }
            Some((charset, collation)) => ClientCharset::Named { charset, collation },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_charsets() {
        let t = Collations::from_rows([
            (9, "latin2".into(), "latin2_general_ci".into()),
            (35, "ucs2".into(), "ucs2_general_ci".into()),
        ]);
        assert_eq!(
            t.for_client(9),
            ClientCharset::Named {
                charset: "latin2",
                collation: "latin2_general_ci"
            }
        );
        assert_eq!(t.for_client(35), ClientCharset::Refused { charset: "ucs2" });
        assert_eq!(t.for_client(255), ClientCharset::ServerDefault);
        assert_eq!(
            t.for_client(17),
            ClientCharset::Refused {
                charset: "filename"
            }
        );
        let b = Collations::builtin();
        assert_eq!(b.get(45), Some(BACKEND_NAMES));
        assert_eq!(b.get(u16::from(BACKEND_COLLATION)), Some(BACKEND_NAMES));
    }
}
