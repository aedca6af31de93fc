//! A session's replayable state and how to bring a backend connection to it.
//!
//! ```text
//!   client statement ──► session state (db, SET items, multi-statements,
//!                         last insert id)
//!                              │ sync before each statement
//!                              ▼
//!   borrowed backend conn: COM_INIT_DB / SET ... / COM_SET_OPTION / DO LAST_INSERT_ID(n)
//! ```
//! SET items are kept in the order they were last applied, so replaying them
//! in order gives the same result (`SET NAMES` after `SET
//! character_set_results` overrides it, and the other way round).

use std::sync::Arc;

use hscale_sql::SetItem;

/// A session's `sql_select_limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectLimit {
    /// Not set, DEFAULT, or its maximum.
    Unset,
    Rows(u64),
    /// Set to an expression the proxy does not evaluate.
    Expression,
}

/// What a session's sql_mode makes of its statements: how the server reads
/// their text, and whether a write's conversion warning is an error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqlModeFlags {
    /// NO_BACKSLASH_ESCAPES: a backslash in a string is itself.
    pub is_no_backslash_escapes: bool,
    /// ANSI_QUOTES: `"x"` is a name, not a string.
    pub is_ansi_quotes: bool,
    /// STRICT_TRANS_TABLES or STRICT_ALL_TABLES: a write's conversion
    /// warning is an error.
    pub is_strict: bool,
    /// NO_UNSIGNED_SUBTRACTION: a difference with an UNSIGNED operand is
    /// signed (HAVING over merged groups, `exec/merge/having.rs`).
    pub is_no_unsigned_subtraction: bool,
}

impl SqlModeFlags {
    /// The flags of a value of `@@sql_mode` (its modes, comma separated).
    pub fn of(mode: &str) -> SqlModeFlags {
        let has = |m: &str| mode.split(',').any(|x| x.trim().eq_ignore_ascii_case(m));
        SqlModeFlags {
            is_no_backslash_escapes: has("NO_BACKSLASH_ESCAPES"),
            // ANSI is a combination the server expands in @@sql_mode.
            is_ansi_quotes: has("ANSI_QUOTES") || has("ANSI"),
            is_strict: has("STRICT_TRANS_TABLES") || has("STRICT_ALL_TABLES"),
            is_no_unsigned_subtraction: has("NO_UNSIGNED_SUBTRACTION"),
        }
    }
}

/// Replayable SET items of a session, in last-applied order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionVars {
    items: Vec<SetItem>,
}

impl SessionVars {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn items(&self) -> &[SetItem] {
        &self.items
    }

    /// The session turned autocommit off: a connection holding that must
    /// not serve the proxy's own queries (a SELECT there would open a
    /// transaction that a later XA START meets as XAER_OUTSIDE).
    pub fn holds_autocommit_off(&self) -> bool {
        self.items.iter().any(|i| {
            i.key == "autocommit"
                && i.assign.rsplit('=').next().is_some_and(|v| {
                    let v = v.trim();
                    v == "0" || v.eq_ignore_ascii_case("OFF") || v.eq_ignore_ascii_case("FALSE")
                })
        })
    }

    /// The session's `sql_select_limit`.
    pub fn select_limit(&self) -> SelectLimit {
        let Some(item) = self.items.iter().find(|i| i.key == "sql_select_limit") else {
            return SelectLimit::Unset;
        };
        let value = item.assign.rsplit('=').next().unwrap_or("").trim();
        if value.eq_ignore_ascii_case("DEFAULT") {
            return SelectLimit::Unset;
        }
        match value.parse::<u64>() {
            Ok(u64::MAX) => SelectLimit::Unset,
            Ok(n) => SelectLimit::Rows(n),
            Err(_) => SelectLimit::Expression,
        }
    }

    /// Whether the sql_mode the session set names `mode`
    /// (`NO_UNSIGNED_SUBTRACTION`), for when its flags were not asked for
    /// (`Bindings::sql_mode`). A mode set by an expression, or the
    /// server's global one the session never changed, is not seen.
    pub fn has_sql_mode(&self, mode: &str) -> bool {
        self.items.iter().any(|i| {
            i.key == "sql_mode"
                && i.assign
                    .rsplit('=')
                    .next()
                    .is_some_and(|v| v.to_ascii_uppercase().contains(mode))
        })
    }

    /// These variables without the session's `sql_select_limit`; `None`
    /// when it set none. What a connection holds while it reads rows the
    /// statement consumes itself (the SELECT of an INSERT ... SELECT, the
    /// keys of an ordered write): one server limits only the rows a
    /// statement sends its client.
    pub fn without_select_limit(&self) -> Option<SessionVars> {
        let is_limit = |i: &SetItem| i.key == "sql_select_limit";
        if !self.items.iter().any(is_limit) {
            return None;
        }
        let mut v = self.clone();
        v.items.retain(|i| !is_limit(i));
        Some(v)
    }

    /// The session's `max_error_count`, when it set a number.
    pub fn max_error_count(&self) -> Option<usize> {
        let item = self.items.iter().find(|i| i.key == "max_error_count")?;
        item.assign.rsplit('=').next()?.trim().parse().ok()
    }

    /// Whether the client sends UTF-8 (or bytes as they are): the
    /// character set of the last `SET NAMES`, `SET CHARACTER SET` or
    /// `character_set_client` the session applied is utf8mb4, utf8mb3,
    /// binary or the server's default. A latin1 client's non-ASCII bytes
    /// read as UTF-8 would be another string than the server reads (and an
    /// ascii client's are `?` to the server).
    pub fn is_client_utf8(&self) -> bool {
        let name = self.client_charset();
        name.get(..4)
            .is_some_and(|p| p.eq_ignore_ascii_case("utf8"))
            || ["", "binary", "default"]
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n))
    }

    /// The client's character set when it is a single-byte one (`SET NAMES
    /// latin1`, a cp1251 handshake collation, ...): its text is read byte
    /// by byte as the server reads it.
    pub fn client_single_byte(&self) -> Option<&'static hscale_route::single_byte::SingleByte> {
        hscale_route::single_byte::SingleByte::by_name(self.client_charset())
    }

    /// The character set of the last `SET NAMES`, `SET CHARACTER SET` or
    /// `character_set_client` the session applied, as written (compare it
    /// without case); empty when none (the server's default). Asked for
    /// every statement: it allocates nothing.
    fn client_charset(&self) -> &str {
        let Some(item) = self
            .items
            .iter()
            .rev()
            .find(|i| i.key == "names" || i.key == "character_set_client")
        else {
            return "";
        };
        let a = item.assign.as_str();
        const VAR: &str = "character_set_client";
        let at = a
            .as_bytes()
            .windows(VAR.len())
            .position(|w| w.eq_ignore_ascii_case(VAR.as_bytes()));
        let name = match at {
            // `@@session.character_set_client = x[, ...]`.
            Some(at) => a[at..]
                .split_once('=')
                .map(|(_, v)| v.split(',').next().unwrap_or_default().trim())
                .unwrap_or_default(),
            // `NAMES x [COLLATE y]`, `CHARSET x`, `CHARACTER SET x`.
            None => {
                let mut words = a.split_whitespace();
                if words
                    .next()
                    .is_some_and(|w| w.eq_ignore_ascii_case("CHARACTER"))
                {
                    words.next();
                }
                words.next().unwrap_or_default()
            }
        };
        name.trim_matches(|c| c == '\'' || c == '"' || c == '`')
    }

    /// These variables with `character_set_client` utf8mb4 on top: what a
    /// connection holds while it runs a latin1 client's statement that the
    /// proxy read as UTF-8 (`Bindings::is_text_utf8`); the server then
    /// converts its literals to the connection's character set as it would
    /// have converted the latin1 bytes.
    pub fn with_utf8_client(&self) -> SessionVars {
        let mut v = self.clone();
        v.apply(&[SetItem {
            key: "character_set_client".into(),
            assign: "@@session.character_set_client = utf8mb4".into(),
            is_standalone: false,
        }]);
        v
    }

    /// These variables without the character set a session set (`SET
    /// NAMES`, `character_set_*`); `None` when they name none.
    pub fn without_charset(&self) -> Option<SessionVars> {
        let is_charset = |i: &SetItem| i.key == "names" || i.key.starts_with("character_set");
        if !self.items.iter().any(is_charset) {
            return None;
        }
        let mut v = self.clone();
        v.items.retain(|i| !is_charset(i));
        Some(v)
    }

    /// Forget the assignment of `key` (the next sync resets it).
    pub fn remove(&mut self, key: &str) {
        self.items.retain(|i| i.key != key);
    }

    /// Whether it sets `max_statement_time` (`max_statement_ms` of a
    /// tenant, or the session's own).
    pub fn has_statement_time(&self) -> bool {
        self.items.iter().any(|i| i.key == "max_statement_time")
    }

    /// Record assignments that succeeded.
    pub fn apply(&mut self, items: &[SetItem]) {
        for item in items {
            self.items.retain(|i| i.key != item.key);
            self.items.push(item.clone());
        }
    }

    /// The `SET` statements that turn a connection holding `have` into one
    /// holding `self` (none if they are equal): one combined statement, plus
    /// one per standalone item (`SET SESSION TRANSACTION ...`). A variable
    /// `self` assigns is not reset first: its assignment replaces it, and a
    /// reset could act on its own (`autocommit = DEFAULT` commits the
    /// transaction the connection holds, before `autocommit = 0` is set
    /// again: an `autocommit=0` session's work on its home was committed
    /// by the next statement's sync whenever another variable changed).
    pub fn sync_sql(&self, have: &SessionVars) -> Vec<String> {
        if self == have {
            return Vec::new();
        }
        let mut parts: Vec<String> = have
            .items
            .iter()
            .filter(|i| !self.items.iter().any(|w| w.key == i.key))
            .map(|i| reset_assignment(&i.key))
            .collect();
        let mut standalone = Vec::new();
        for item in &self.items {
            if item.is_standalone {
                standalone.push(format!("SET {}", item.assign));
            } else {
                parts.push(item.assign.clone());
            }
        }
        let mut out = Vec::with_capacity(1 + standalone.len());
        if !parts.is_empty() {
            out.push(format!("SET {}", parts.join(", ")));
        }
        out.extend(standalone);
        out
    }
}

/// The assignment that gives a variable back its global default.
fn reset_assignment(key: &str) -> String {
    match key {
        "names" => "NAMES utf8mb4 COLLATE utf8mb4_general_ci".to_string(),
        // MariaDB's (and MySQL 5.7's) names; MySQL 8 only knows
        // transaction_isolation and transaction_read_only.
        "tx_isolation" => "@@session.tx_isolation = DEFAULT".to_string(),
        "tx_read_only" => "@@session.tx_read_only = DEFAULT".to_string(),
        var => format!("@@session.{var} = DEFAULT"),
    }
}

/// Everything a statement needs restored on the connection that runs it.
#[derive(Debug, Clone)]
pub struct SessionState {
    pub db: Option<String>,
    pub vars: Arc<SessionVars>,
    pub is_multi_statements: bool,
    pub last_insert_id: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(key: &str, assign: &str) -> SetItem {
        SetItem {
            key: key.into(),
            assign: assign.into(),
            is_standalone: key.starts_with("tx_"),
        }
    }

    #[test]
    fn sync_from_fresh_and_back() {
        let mut want = SessionVars::default();
        want.apply(&[item("sql_mode", "@@session.sql_mode = 'ANSI'")]);
        want.apply(&[item("names", "NAMES latin1")]);
        let fresh = SessionVars::default();
        assert_eq!(
            want.sync_sql(&fresh),
            vec!["SET @@session.sql_mode = 'ANSI', NAMES latin1"]
        );
        assert!(want.sync_sql(&want.clone()).is_empty());
        assert_eq!(
            fresh.sync_sql(&want),
            vec!["SET @@session.sql_mode = DEFAULT, NAMES utf8mb4 COLLATE utf8mb4_general_ci"]
        );
        let mut tx = SessionVars::default();
        tx.apply(&[item(
            "tx_isolation",
            "SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
        )]);
        assert_eq!(
            tx.sync_sql(&want),
            vec![
                "SET @@session.sql_mode = DEFAULT, NAMES utf8mb4 COLLATE utf8mb4_general_ci",
                "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"
            ]
        );
        assert_eq!(
            fresh.sync_sql(&tx),
            vec!["SET @@session.tx_isolation = DEFAULT"]
        );
    }

    #[test]
    fn client_character_sets() {
        let after = |items: &[(&str, &str)]| {
            let mut v = SessionVars::default();
            for (k, a) in items {
                v.apply(&[item(k, a)]);
            }
            v.is_client_utf8()
        };
        assert!(after(&[]));
        assert!(after(&[("names", "NAMES utf8mb4 COLLATE utf8mb4_bin")]));
        assert!(after(&[("names", "NAMES 'utf8'")]));
        assert!(!after(&[("names", "NAMES latin1")]));
        assert!(!after(&[("names", "CHARACTER SET cp1251")]));
        assert!(!after(&[("names", "CHARSET latin2")]));
        assert!(!after(&[(
            "character_set_client",
            "@@session.character_set_client = latin1"
        )]));
        assert!(after(&[
            ("names", "NAMES latin1"),
            (
                "character_set_client",
                "@@session.character_set_client = utf8mb4"
            ),
        ]));
        assert!(!after(&[
            (
                "character_set_client",
                "@@session.character_set_client = utf8mb4"
            ),
            ("names", "NAMES latin1"),
        ]));
        // The handshake's "server default" (`session::vars_for_collation`).
        assert!(after(&[(
            "names",
            "@@session.character_set_client = DEFAULT, @@session.collation_connection = DEFAULT"
        )]));
    }

    #[test]
    fn a_variable_assigned_again_is_not_reset_first() {
        // `autocommit = DEFAULT` would commit the connection's transaction.
        let mut have = SessionVars::default();
        have.apply(&[
            item("names", "NAMES utf8mb3 COLLATE utf8mb3_general_ci"),
            item("autocommit", "@@session.autocommit = 0"),
        ]);
        let mut want = have.clone();
        want.apply(&[item(
            "innodb_lock_wait_timeout",
            "@@session.innodb_lock_wait_timeout = 10",
        )]);
        want.apply(&[item("names", "NAMES utf8mb3 COLLATE utf8mb3_general_ci")]);
        let sql = want.sync_sql(&have);
        assert_eq!(sql.len(), 1, "{sql:?}");
        assert!(!sql[0].contains("autocommit = DEFAULT"), "{sql:?}");
        assert!(sql[0].contains("@@session.autocommit = 0"), "{sql:?}");
        // Back to a session without the lock wait: that one is reset.
        let sql = have.sync_sql(&want);
        assert!(
            sql[0].contains("innodb_lock_wait_timeout = DEFAULT"),
            "{sql:?}"
        );
        assert!(!sql[0].contains("autocommit = DEFAULT"), "{sql:?}");
    }

    #[test]
    fn last_applied_order_is_kept() {
        let mut v = SessionVars::default();
        v.apply(&[item("names", "NAMES a")]);
        v.apply(&[item(
            "character_set_results",
            "@@session.character_set_results = NULL",
        )]);
        v.apply(&[item("names", "NAMES b")]);
        let keys: Vec<_> = v.items().iter().map(|i| i.key.as_str()).collect();
        assert_eq!(keys, ["character_set_results", "names"]);
    }
}
