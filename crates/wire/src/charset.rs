//! Collation ids as sent in the handshake, mapped to names usable in `SET NAMES`.

/// `(id, character set, collation)` for the collations clients commonly send.
const COLLATIONS: &[(u8, &str, &str)] = &[
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

/// Character set and collation names of a handshake collation id. MySQL 8's
/// `utf8mb4_0900_ai_ci` (255) and other ids a MariaDB server does not know are
/// answered as the server itself would: with its default, utf8mb4.
pub fn collation(id: u8) -> (&'static str, &'static str) {
    COLLATIONS
        .iter()
        .find(|c| c.0 == id)
        .map(|c| (c.1, c.2))
        .unwrap_or(("utf8mb4", "utf8mb4_general_ci"))
}
