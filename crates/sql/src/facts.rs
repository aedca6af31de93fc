//! What a statement is and what it does to the session.
//!
//! The proxy keeps a session's state (current database, SET variables) and
//! replays it onto whichever pooled backend connection runs the next
//! statement. Some statements create state that cannot be replayed (user
//! variables, temporary tables, GET_LOCK, LOCK TABLES, ...): they *pin* the
//! session to its backend connection. [`analyze`] finds both from tokens.

use crate::fingerprint::{fingerprint_tokens, Fingerprint};
use crate::lexer::{tokenize, Token, TokenKind};
pub use crate::mentions::Mentions;

mod set;

pub use set::set_expressions;
use set::set_items;

/// The statement's leading keyword, as far as the proxy cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Select,
    Insert,
    Update,
    Delete,
    Replace,
    Set,
    Use,
    Begin,
    Commit,
    Rollback,
    Show,
    Lock,
    Unlock,
    Kill,
    /// `HSCALE ...` admin command.
    Admin,
    Empty,
    Other,
}

/// Why a session must keep its backend connection: a set of bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Pins(pub u32);

impl Pins {
    pub const NONE: Pins = Pins(0);
    /// In a transaction (from the server's status flags).
    pub const TRANSACTION: Pins = Pins(1);
    /// autocommit is off (from the server's status flags).
    pub const AUTOCOMMIT_OFF: Pins = Pins(1 << 1);
    pub const LOCK_TABLES: Pins = Pins(1 << 2);
    pub const TEMPORARY_TABLE: Pins = Pins(1 << 3);
    pub const USER_LOCK: Pins = Pins(1 << 4);
    pub const USER_VARIABLE: Pins = Pins(1 << 5);
    pub const SQL_PREPARE: Pins = Pins(1 << 6);
    pub const FOUND_ROWS: Pins = Pins(1 << 7);
    pub const XA: Pins = Pins(1 << 8);
    pub const HANDLER: Pins = Pins(1 << 9);
    /// A SET the proxy cannot replay (an expression, a role, ...).
    pub const COMPLEX_SET: Pins = Pins(1 << 10);
    /// `SET TRANSACTION` without scope: applies to the next transaction only.
    pub const NEXT_TRANSACTION: Pins = Pins(1 << 11);
    /// A multi-statement query that changes session state.
    pub const MULTI_STATEMENT_STATE: Pins = Pins(1 << 12);
    /// A prepared statement with an open cursor.
    pub const CURSOR: Pins = Pins(1 << 13);

    pub const NAMES: [(Pins, &'static str); 14] = [
        (Pins::TRANSACTION, "transaction"),
        (Pins::AUTOCOMMIT_OFF, "autocommit_off"),
        (Pins::LOCK_TABLES, "lock_tables"),
        (Pins::TEMPORARY_TABLE, "temporary_table"),
        (Pins::USER_LOCK, "user_lock"),
        (Pins::USER_VARIABLE, "user_variable"),
        (Pins::SQL_PREPARE, "sql_prepare"),
        (Pins::FOUND_ROWS, "found_rows"),
        (Pins::XA, "xa"),
        (Pins::HANDLER, "handler"),
        (Pins::COMPLEX_SET, "complex_set"),
        (Pins::NEXT_TRANSACTION, "next_transaction"),
        (Pins::MULTI_STATEMENT_STATE, "multi_statement_state"),
        (Pins::CURSOR, "cursor"),
    ];

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn contains(self, other: Pins) -> bool {
        self.0 & other.0 == other.0
    }
    pub fn intersects(self, other: Pins) -> bool {
        self.0 & other.0 != 0
    }
    pub fn insert(&mut self, other: Pins) {
        self.0 |= other.0;
    }
    pub fn remove(&mut self, other: Pins) {
        self.0 &= !other.0;
    }
    /// Names of the set bits, for logs and metrics.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Pins::NAMES
            .into_iter()
            .filter(move |(p, _)| self.intersects(*p))
            .map(|(_, n)| n)
    }
}

impl std::ops::BitOr for Pins {
    type Output = Pins;
    fn bitor(self, rhs: Pins) -> Pins {
        Pins(self.0 | rhs.0)
    }
}

/// One replayable assignment of a SET statement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SetItem {
    /// Normalized name: a lowercase variable name, or `names` for
    /// `SET NAMES` / `SET CHARACTER SET`, or `transaction` for
    /// `SET SESSION TRANSACTION ...`.
    pub key: String,
    /// SQL that re-applies it after `SET `, e.g. `@@session.sql_mode = 'ANSI'`.
    pub assign: String,
    /// Must be sent as a `SET` of its own (`SET SESSION TRANSACTION ...`
    /// cannot be combined with other assignments).
    pub is_standalone: bool,
}

/// A change to replayable session state, made once the statement succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChange {
    Use(String),
    Set(Vec<SetItem>),
    /// `DROP DATABASE x`: a session whose current database is `x` has none afterwards.
    DropDatabase(String),
}

/// Everything the proxy learns from one `COM_QUERY` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// The kind of the first statement.
    pub kind: Kind,
    /// Number of statements (more than one for a multi-statement query).
    pub statements: usize,
    /// Pins this query adds once it succeeds.
    pub pins: Pins,
    /// Pins this query releases once it succeeds (`UNLOCK TABLES`).
    pub unpins: Pins,
    /// Replayable state change (single statements only).
    pub change: Option<SessionChange>,
    /// Mentions `LAST_INSERT_ID()`, whose value lives in the connection.
    pub uses_last_insert_id: bool,
    /// Calls `LAST_INSERT_ID(expr)`, which sets that value.
    pub sets_last_insert_id: bool,
    /// The text did not lex (the server will report the syntax error).
    pub is_unlexable: bool,
    /// Names the proxy answers itself (every bit when the text did not lex).
    pub mentions: Mentions,
    /// A statement uses tables, so running it resets the session's
    /// diagnostics area (`diagnostics::uses_tables`); true when the text
    /// did not lex.
    pub uses_tables: bool,
    /// The text's tokens, lexed once for everything that reads the
    /// statement after this (the plan cache, the query digest); empty when
    /// it did not lex or is not UTF-8.
    pub tokens: Vec<Token>,
    /// The statement's fingerprint from those tokens (its hash keys the
    /// plan cache and the query digests); `None` when there are none.
    pub fingerprint: Option<Fingerprint>,
}

/// Classify query bytes as sent by the client. Text that is not UTF-8 (a
/// latin1 client, say) is classified from its lossy UTF-8 form, but its
/// state changes cannot be replayed byte for byte, so they pin instead.
pub fn analyze_bytes(sql: &[u8]) -> Facts {
    match std::str::from_utf8(sql) {
        Ok(s) => analyze(s),
        Err(_) => {
            let mut f = analyze(&String::from_utf8_lossy(sql));
            if f.change.take().is_some() {
                f.pins.insert(Pins::COMPLEX_SET);
            }
            // Spans of another text than the client's bytes.
            f.tokens = Vec::new();
            f.fingerprint = None;
            f
        }
    }
}

/// Classify a query text (one statement or several separated by `;`).
pub fn analyze(sql: &str) -> Facts {
    let tokens = match tokenize(sql) {
        Ok(t) => t,
        Err(_) => {
            return Facts {
                kind: Kind::Other,
                statements: 1,
                pins: Pins::NONE,
                unpins: Pins::NONE,
                change: None,
                uses_last_insert_id: false,
                sets_last_insert_id: false,
                is_unlexable: true,
                mentions: Mentions::ALL,
                uses_tables: true,
                tokens: Vec::new(),
                fingerprint: None,
            }
        }
    };
    let mut facts = Facts {
        kind: Kind::Empty,
        statements: 0,
        pins: Pins::NONE,
        unpins: Pins::NONE,
        change: None,
        uses_last_insert_id: false,
        sets_last_insert_id: false,
        is_unlexable: false,
        mentions: Mentions::NONE,
        uses_tables: false,
        tokens: Vec::new(),
        fingerprint: None,
    };
    let mut changes = 0;
    for stmt in tokens.split(|t| t.kind == TokenKind::Semicolon) {
        if stmt.is_empty() {
            continue;
        }
        let one = analyze_one(sql, stmt);
        if facts.statements == 0 {
            facts.kind = one.kind;
        }
        facts.statements += 1;
        facts.pins.insert(one.pins);
        facts.unpins.insert(one.unpins);
        facts.uses_last_insert_id |= one.uses_last_insert_id;
        facts.sets_last_insert_id |= one.sets_last_insert_id;
        facts.mentions.insert(one.mentions);
        facts.uses_tables |= one.uses_tables;
        if one.change.is_some() || one.kind == Kind::Set {
            changes += 1;
            facts.change = one.change;
        }
    }
    if facts.statements > 1 && (changes > 0 || !facts.unpins.is_empty()) {
        facts.pins.insert(Pins::MULTI_STATEMENT_STATE);
        facts.change = None;
    }
    facts.fingerprint = Some(fingerprint_tokens(sql, &tokens));
    facts.tokens = tokens;
    facts
}

struct One {
    kind: Kind,
    pins: Pins,
    unpins: Pins,
    change: Option<SessionChange>,
    uses_last_insert_id: bool,
    sets_last_insert_id: bool,
    mentions: Mentions,
    uses_tables: bool,
}

fn analyze_one(sql: &str, t: &[Token]) -> One {
    let w = |i: usize, word: &str| t.get(i).is_some_and(|x| x.is_word(sql, word));
    // Skip leading parentheses: `(SELECT ...)`.
    let lead = t
        .iter()
        .position(|x| !x.is_punct(sql, "("))
        .unwrap_or(t.len());
    let first = t.get(lead).map(|x| x.text(sql)).unwrap_or("");
    let kw = |k: &str| first.eq_ignore_ascii_case(k);
    let kind = if kw("SELECT") || kw("WITH") || kw("VALUES") || kw("TABLE") {
        Kind::Select
    } else if kw("INSERT") {
        Kind::Insert
    } else if kw("UPDATE") {
        Kind::Update
    } else if kw("DELETE") {
        Kind::Delete
    } else if kw("REPLACE") {
        Kind::Replace
    } else if kw("SET") {
        Kind::Set
    } else if kw("USE") {
        Kind::Use
    } else if kw("BEGIN") || (kw("START") && w(lead + 1, "TRANSACTION")) {
        Kind::Begin
    } else if kw("COMMIT") {
        Kind::Commit
    } else if kw("ROLLBACK") {
        Kind::Rollback
    } else if kw("SHOW") {
        Kind::Show
    } else if kw("LOCK") {
        Kind::Lock
    } else if kw("UNLOCK") {
        Kind::Unlock
    } else if kw("KILL") {
        Kind::Kill
    } else if kw("HSCALE") {
        Kind::Admin
    } else {
        Kind::Other
    };
    let mut pins = Pins::NONE;
    let mut unpins = Pins::NONE;
    let mut uses_last_insert_id = false;
    let mut sets_last_insert_id = false;
    let mut mentions = Mentions::NONE;
    // A FROM naming a table (not DUAL) or a derived table.
    let mut reads_from = false;
    for (i, tok) in t.iter().enumerate() {
        match tok.kind {
            TokenKind::UserVar => pins.insert(Pins::USER_VARIABLE),
            TokenKind::SysVar => mentions.insert(Mentions::SYSTEM_VARIABLE),
            TokenKind::Word => {
                let next_is_paren = t.get(i + 1).is_some_and(|x| x.is_punct(sql, "("));
                let text = tok.text(sql);
                if text.len() == 4 && text.eq_ignore_ascii_case("FROM") {
                    reads_from |= t.get(i + 1).is_some_and(|n| {
                        next_is_paren
                            || n.kind == TokenKind::QuotedIdent
                            || (n.kind == TokenKind::Word && !n.is_word(sql, "DUAL"))
                    });
                }
                if next_is_paren && text.eq_ignore_ascii_case("GET_LOCK") {
                    pins.insert(Pins::USER_LOCK);
                } else if next_is_paren && text.eq_ignore_ascii_case("LAST_INSERT_ID") {
                    uses_last_insert_id = true;
                    sets_last_insert_id |= t.get(i + 2).is_some_and(|x| !x.is_punct(sql, ")"));
                } else if text.eq_ignore_ascii_case("SQL_CALC_FOUND_ROWS") {
                    pins.insert(Pins::FOUND_ROWS);
                } else {
                    mentions.insert(Mentions::of_word(text, next_is_paren));
                }
            }
            TokenKind::QuotedIdent => {
                let text = tok.text(sql);
                let inner = text.get(1..text.len().saturating_sub(1)).unwrap_or("");
                if !inner.contains('`') {
                    mentions.insert(Mentions::of_word(inner, false));
                }
            }
            _ => {}
        }
    }
    let mut change = None;
    match kind {
        Kind::Lock => pins.insert(Pins::LOCK_TABLES),
        Kind::Unlock if w(lead + 1, "TABLES") || w(lead + 1, "TABLE") => {
            unpins.insert(Pins::LOCK_TABLES)
        }
        Kind::Use => {
            if let Some(db) = t.get(lead + 1) {
                change = Some(SessionChange::Use(unquote_ident(db.text(sql))));
            }
        }
        Kind::Set => {
            let (items, extra) = set_items(sql, &t[lead + 1..]);
            pins.insert(extra);
            if !items.is_empty() {
                change = Some(SessionChange::Set(items));
            }
        }
        Kind::Other => {
            if first.eq_ignore_ascii_case("CREATE")
                && t[lead + 1..]
                    .iter()
                    .take(3)
                    .any(|x| x.is_word(sql, "TEMPORARY"))
            {
                pins.insert(Pins::TEMPORARY_TABLE);
            } else if first.eq_ignore_ascii_case("DROP")
                && (w(lead + 1, "DATABASE") || w(lead + 1, "SCHEMA"))
            {
                let at = if w(lead + 2, "IF") {
                    lead + 4
                } else {
                    lead + 2
                };
                if let Some(db) = t.get(at) {
                    change = Some(SessionChange::DropDatabase(unquote_ident(db.text(sql))));
                }
            } else if first.eq_ignore_ascii_case("PREPARE") {
                pins.insert(Pins::SQL_PREPARE);
            } else if first.eq_ignore_ascii_case("XA") {
                pins.insert(Pins::XA);
            } else if first.eq_ignore_ascii_case("HANDLER") {
                pins.insert(Pins::HANDLER);
            } else if first.eq_ignore_ascii_case("FLUSH")
                && t.iter().any(|x| x.is_word(sql, "LOCK"))
            {
                pins.insert(Pins::LOCK_TABLES);
            }
        }
        _ => {}
    }
    let uses_tables = crate::diagnostics::resets(sql, &t[lead..], kind, reads_from);
    One {
        kind,
        pins,
        unpins,
        change,
        uses_last_insert_id,
        sets_last_insert_id,
        mentions,
        uses_tables,
    }
}

/// `KILL [HARD | SOFT] [CONNECTION | QUERY] <id>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KillStatement {
    pub is_query_only: bool,
    pub id: u64,
}

/// Parse a KILL statement; `None` for forms hscale does not handle
/// (`KILL QUERY ID`, `KILL USER`, expressions).
pub fn parse_kill(sql: &str) -> Option<KillStatement> {
    let t = tokenize(sql).ok()?;
    let mut i = 0;
    if !t.get(i)?.is_word(sql, "KILL") {
        return None;
    }
    i += 1;
    if t.get(i)
        .is_some_and(|x| x.is_word(sql, "HARD") || x.is_word(sql, "SOFT"))
    {
        i += 1;
    }
    let mut is_query_only = false;
    if t.get(i).is_some_and(|x| x.is_word(sql, "QUERY")) {
        is_query_only = true;
        i += 1;
    } else if t.get(i).is_some_and(|x| x.is_word(sql, "CONNECTION")) {
        i += 1;
    }
    let id = t.get(i).filter(|x| x.kind == TokenKind::Number)?;
    let rest = &t[i + 1..];
    if !rest.iter().all(|x| x.kind == TokenKind::Semicolon) {
        return None;
    }
    Some(KillStatement {
        is_query_only,
        id: id.text(sql).parse().ok()?,
    })
}

/// Strip backquotes from an identifier.
pub fn unquote_ident(s: &str) -> String {
    if s.len() >= 2 && s.starts_with('`') && s.ends_with('`') {
        s[1..s.len() - 1].replace("``", "`")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(sql: &str) -> Vec<(String, String)> {
        match analyze(sql).change {
            Some(SessionChange::Set(items)) => {
                items.into_iter().map(|i| (i.key, i.assign)).collect()
            }
            other => panic!("no SET change for {sql}: {other:?}"),
        }
    }

    #[test]
    fn kinds() {
        assert_eq!(analyze("select 1").kind, Kind::Select);
        assert_eq!(analyze("  (SELECT 1) UNION (SELECT 2)").kind, Kind::Select);
        assert_eq!(analyze("START TRANSACTION").kind, Kind::Begin);
        assert_eq!(analyze("hscale show tables").kind, Kind::Admin);
        assert_eq!(analyze("").kind, Kind::Empty);
        assert_eq!(
            analyze("/* x */ insert into t values (1)").kind,
            Kind::Insert
        );
    }

    #[test]
    fn set_items_replayable() {
        assert_eq!(
            set("SET sql_mode = 'ANSI', @@session.time_zone='+00:00', SESSION wait_timeout=10"),
            vec![
                ("sql_mode".into(), "@@session.sql_mode = 'ANSI'".into()),
                ("time_zone".into(), "@@session.time_zone = '+00:00'".into()),
                ("wait_timeout".into(), "@@session.wait_timeout = 10".into()),
            ]
        );
        assert_eq!(
            set("SET NAMES utf8mb4 COLLATE utf8mb4_bin"),
            vec![("names".into(), "NAMES utf8mb4 COLLATE utf8mb4_bin".into())]
        );
        assert_eq!(
            set("SET autocommit=0"),
            vec![("autocommit".into(), "@@session.autocommit = 0".into())]
        );
        assert_eq!(
            set("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY"),
            vec![
                (
                    "tx_isolation".into(),
                    "SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".into()
                ),
                (
                    "tx_read_only".into(),
                    "SESSION TRANSACTION READ ONLY".into()
                ),
            ]
        );
        assert_eq!(
            set("/*!40101 SET character_set_client = utf8 */"),
            vec![(
                "character_set_client".into(),
                "@@session.character_set_client = utf8".into()
            )]
        );
    }

    #[test]
    fn set_global_is_not_session_state() {
        let f = analyze("SET GLOBAL max_connections = 100");
        assert_eq!(f.change, None);
        assert!(f.pins.is_empty());
        assert_eq!(analyze("SET @@global.x = 1").change, None);
    }

    #[test]
    fn pins() {
        assert!(analyze("SET @a = 1").pins.contains(Pins::USER_VARIABLE));
        assert!(analyze("select @a").pins.contains(Pins::USER_VARIABLE));
        assert!(analyze("SET sql_mode = CONCAT(@@sql_mode, ',X')")
            .pins
            .contains(Pins::COMPLEX_SET));
        assert!(analyze("create temporary table t (a int)")
            .pins
            .contains(Pins::TEMPORARY_TABLE));
        assert!(analyze("SELECT GET_LOCK('x', 1)")
            .pins
            .contains(Pins::USER_LOCK));
        assert!(analyze("LOCK TABLES t WRITE")
            .pins
            .contains(Pins::LOCK_TABLES));
        assert!(analyze("UNLOCK TABLES").unpins.contains(Pins::LOCK_TABLES));
        assert!(analyze("SET TRANSACTION READ ONLY")
            .pins
            .contains(Pins::NEXT_TRANSACTION));
        assert!(analyze("select 'GET_LOCK(' from t").pins.is_empty());
        assert!(analyze("select * from sbtest1 where id = 5")
            .pins
            .is_empty());
        assert!(analyze("XA START 'x'").pins.contains(Pins::XA));
        assert!(analyze("select LAST_INSERT_ID()").uses_last_insert_id);
        assert!(!analyze("select LAST_INSERT_ID()").sets_last_insert_id);
        assert!(analyze("update t set n = last_insert_id(n + 1)").sets_last_insert_id);
    }

    #[test]
    fn non_utf8_changes_pin() {
        let f = analyze_bytes(b"SET @@session.lc_messages = 'caf\xe9'");
        assert_eq!(f.change, None);
        assert!(f.pins.contains(Pins::COMPLEX_SET));
        let f = analyze_bytes(b"SELECT 'caf\xe9'");
        assert_eq!(f.kind, Kind::Select);
        assert!(f.pins.is_empty());
    }

    #[test]
    fn kill_statements() {
        assert_eq!(
            parse_kill("KILL 5"),
            Some(KillStatement {
                is_query_only: false,
                id: 5
            })
        );
        assert_eq!(
            parse_kill("kill query 7;"),
            Some(KillStatement {
                is_query_only: true,
                id: 7
            })
        );
        assert_eq!(
            parse_kill("KILL HARD CONNECTION 9"),
            Some(KillStatement {
                is_query_only: false,
                id: 9
            })
        );
        assert_eq!(parse_kill("KILL QUERY ID 7"), None);
        assert_eq!(parse_kill("KILL USER bob"), None);
        assert_eq!(parse_kill("KILL 1+1"), None);
    }

    #[test]
    fn multi_statements() {
        let f = analyze("select 1; select 2;");
        assert_eq!(f.statements, 2);
        assert!(f.pins.is_empty());
        let f = analyze("set sql_mode=''; select 1");
        assert!(f.pins.contains(Pins::MULTI_STATEMENT_STATE));
        assert_eq!(f.change, None);
        let f = analyze("use db1");
        assert_eq!(f.change, Some(SessionChange::Use("db1".into())));
        let f = analyze("DROP SCHEMA IF EXISTS `x`");
        assert_eq!(f.change, Some(SessionChange::DropDatabase("x".into())));
        let f = analyze("use `my``db`");
        assert_eq!(f.change, Some(SessionChange::Use("my`db".into())));
    }

    /// Statement analysis and fingerprints walk tokens in loops: deep
    /// nesting needs no stack and time linear in the statement's size.
    #[test]
    fn deep_nesting_on_a_small_stack() {
        let n = 100_000;
        let statements = [
            format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n)),
            format!(
                "SELECT * FROM t WHERE a IN ({}1{})",
                "(1,".repeat(n),
                ")".repeat(n)
            ),
            format!("SELECT {}1", "NOT ".repeat(n)),
            format!("SET @a = {}1{}", "(".repeat(n), ")".repeat(n)),
            format!("INSERT INTO t VALUES (1){}", ",(1)".repeat(n)),
            format!("{}SELECT 1", "/*!40101 ".repeat(n)),
            ")(".repeat(n),
        ];
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                for s in &statements {
                    let _ = analyze(s);
                    let _ = crate::fingerprint(s);
                }
            })
            .expect("spawn")
            .join()
            .expect("no overflow");
    }

    proptest::proptest! {
        #[test]
        fn analyze_never_panics(s in "\\PC{0,80}") {
            let _ = analyze(&s);
        }

        #[test]
        fn analyze_never_panics_on_sqlish(s in "(SET|USE|DROP|SELECT|@|@@|'|`|;|,|=|\\(|\\)| |x|1|/\\*!|\\*/|--|#|\n){0,40}") {
            let _ = analyze(&s);
        }
    }
}
