//! Whether a statement reaches a reserved database (hscale's own schema,
//! which only HSCALE commands may touch), whatever the client's sql_mode.
//!
//! A statement reaches a database by a qualified name (`db.t`, `db . *`,
//! quoted with backquotes or, under ANSI_QUOTES, double quotes), by naming
//! it where a database stands (`USE db`, `CREATE|DROP|ALTER DATABASE db`,
//! `SHOW ... FROM|IN db`), or through dynamic SQL (`PREPARE s FROM ...`,
//! `EXECUTE IMMEDIATE ...`) whose text the proxy cannot see unless it is a
//! string literal. So dynamic SQL must be string literals (checked like any
//! statement); an expression or variable is refused.
//!
//! Where a string ends depends on the session (NO_BACKSLASH_ESCAPES, and
//! character sets such as GBK whose characters may end in a backslash
//! byte), so the statement is lexed both with and without backslash
//! escapes, and a statement with a backslash in it is also scanned for a
//! qualified name regardless of quoting. Anything found by any of them is
//! refused; a false refusal is possible only for text that names the
//! database itself.
//!
//! User variables named `@<schema>_...` (`@hscale_dictionary_version`,
//! which the fence triggers of global tables read) belong to the proxy:
//! a statement that names one in any spelling (`@x`, `@'x'`, `@`x``,
//! `@"x"`, spaces or comments after the `@`, backslash escapes in a quoted
//! name or in dynamic SQL) is refused, whether it reads, assigns (`SET`,
//! `:=`, `INTO`) or passes it to a procedure. The scan is over bytes,
//! quoting aside, so text that merely contains `@hscale_` is refused too.

use crate::lexer::{tokenize, tokenize_without_escapes, Token, TokenKind};

/// How a statement reaches the reserved database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// A qualified name: `command` is the statement's first word,
    /// `table` the name after the database (`*` when none can be read).
    Table { command: String, table: String },
    /// The database itself (USE, CREATE/DROP/ALTER DATABASE, SHOW ... FROM).
    Database,
    /// Dynamic SQL from an expression: its text is not known.
    Dynamic,
    /// A user variable reserved for the proxy (`@<schema>_...`).
    Variable,
}

/// Nesting of dynamic SQL literals checked (the server allows none).
const MAX_DEPTH: usize = 2;

/// How `sql` reaches database `schema` (compared ASCII case-insensitively),
/// if it does. Costs two byte scans when the statement contains neither
/// the name nor PREPARE / IMMEDIATE.
pub fn reserved_reach(sql: &str, schema: &str) -> Option<Reach> {
    check(sql, schema, 0)
}

/// Whether a database name (COM_INIT_DB, the handshake's, COM_CHANGE_USER's)
/// is the reserved one.
pub fn is_reserved_db(name: &str, schema: &str) -> bool {
    name.trim_end_matches('\0').eq_ignore_ascii_case(schema)
}

fn contains_ci(hay: &[u8], needle: &str) -> bool {
    crate::mentions::contains_ci(hay, needle.as_bytes())
}

fn check(sql: &str, schema: &str, depth: usize) -> Option<Reach> {
    let b = sql.as_bytes();
    let names_schema = contains_ci(b, schema);
    // A reserved variable's name is spelled out, or hidden behind
    // backslash escapes (`@'hsc\ale_x'`).
    let may_name_variable = names_schema || (b.contains(&b'@') && b.contains(&b'\\'));
    if may_name_variable && reserved_variable(b, schema) {
        return Some(Reach::Variable);
    }
    let is_dynamic = contains_ci(b, "PREPARE") || contains_ci(b, "IMMEDIATE");
    if !is_dynamic && !names_schema {
        return None;
    }
    for lex in [tokenize, tokenize_without_escapes] {
        if let Ok(tokens) = lex(sql) {
            if let Some(r) = check_tokens(sql, &tokens, schema, depth) {
                return Some(r);
            }
        }
    }
    if b.contains(&b'\\') {
        return raw_qualified(sql, schema);
    }
    None
}

/// Whether a user variable whose name starts with `<schema>_` follows an
/// `@` anywhere in `b`: after the `@`, more `@`s, spaces, quotes,
/// backslashes and comments are skipped (an executable comment's marker
/// only: its text is code), then the name is compared with quotes and
/// backslashes left out. Over-approximates on purpose: the server's lexer
/// reads `@ name`, `@/* c */name`, `@'name'` and escapes in quoted names.
fn reserved_variable(b: &[u8], schema: &str) -> bool {
    let prefix = schema.as_bytes().iter().chain(b"_");
    let is_noise = |c: u8| {
        matches!(
            c,
            b'@' | b' ' | b'\t' | b'\n' | b'\r' | b'`' | b'\'' | b'"' | b'\\'
        )
    };
    let mut i = 0;
    while let Some(at) = b[i..].iter().position(|&c| c == b'@') {
        let mut j = i + at + 1;
        loop {
            let rest = &b[j.min(b.len())..];
            if rest.first().is_some_and(|&c| is_noise(c)) {
                j += 1;
            } else if rest.starts_with(b"/*!") || rest.starts_with(b"/*M!") {
                j += if rest[2] == b'!' { 3 } else { 4 };
                while b.get(j).is_some_and(u8::is_ascii_digit) {
                    j += 1;
                }
            } else if rest.starts_with(b"/*") {
                match rest[2..].windows(2).position(|w| w == b"*/") {
                    Some(k) => j += k + 4,
                    None => break,
                }
            } else if rest.starts_with(b"*/") {
                j += 2;
            } else if rest.starts_with(b"#") || rest.starts_with(b"--") {
                match rest.iter().position(|&c| c == b'\n') {
                    Some(k) => j += k + 1,
                    None => break,
                }
            } else {
                break;
            }
        }
        let mut name = b[j.min(b.len())..]
            .iter()
            .filter(|&&c| !matches!(c, b'`' | b'\'' | b'"' | b'\\'));
        if prefix
            .clone()
            .all(|p| name.next().is_some_and(|c| c.eq_ignore_ascii_case(p)))
        {
            return true;
        }
        i += at + 1;
    }
    false
}

/// A name token's text without its quotes (backquotes, or double quotes
/// under ANSI_QUOTES, or single quotes, which no name has but costs
/// nothing to treat alike).
fn name_of<'a>(t: &Token, sql: &'a str) -> Option<std::borrow::Cow<'a, str>> {
    let text = t.text(sql);
    match t.kind {
        TokenKind::Word => Some(text.into()),
        TokenKind::QuotedIdent | TokenKind::Str if text.len() >= 2 => {
            let q = &text[..1];
            let inner = &text[1..text.len() - 1];
            Some(inner.replace(&format!("{q}{q}"), q).into())
        }
        _ => None,
    }
}

fn check_tokens(sql: &str, tokens: &[Token], schema: &str, depth: usize) -> Option<Reach> {
    let mut seg_start = 0;
    let mut has_show = false;
    for (i, t) in tokens.iter().enumerate() {
        if t.kind == TokenKind::Semicolon {
            seg_start = i + 1;
            has_show = false;
            continue;
        }
        if t.is_word(sql, "SHOW") {
            has_show = true;
        }
        if t.is_word(sql, "PREPARE")
            && tokens.get(i + 1).and_then(|n| name_of(n, sql)).is_some()
            && tokens.get(i + 2).is_some_and(|n| n.is_word(sql, "FROM"))
        {
            if let Some(r) = dynamic_text(sql, &tokens[i + 3..], schema, depth) {
                return Some(r);
            }
        }
        if t.is_word(sql, "EXECUTE")
            && tokens
                .get(i + 1)
                .is_some_and(|n| n.is_word(sql, "IMMEDIATE"))
        {
            if let Some(r) = dynamic_text(sql, &tokens[i + 2..], schema, depth) {
                return Some(r);
            }
        }
        let is_schema = matches!(
            t.kind,
            TokenKind::Word | TokenKind::QuotedIdent | TokenKind::Str
        ) && name_of(t, sql).is_some_and(|n| n.eq_ignore_ascii_case(schema));
        if !is_schema {
            continue;
        }
        if tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, ".")) {
            let command = tokens[seg_start..]
                .iter()
                .find(|x| x.kind == TokenKind::Word)
                .map(|x| x.text(sql).to_ascii_uppercase())
                .unwrap_or_default();
            let table = tokens
                .get(i + 2)
                .and_then(|n| name_of(n, sql))
                .map(|n| n.into_owned())
                .unwrap_or_else(|| "*".into());
            return Some(Reach::Table { command, table });
        }
        let mut p = i;
        while p > seg_start
            && ["IF", "NOT", "EXISTS"]
                .iter()
                .any(|w| tokens[p - 1].is_word(sql, w))
        {
            p -= 1;
        }
        let before = p.checked_sub(1).map(|p| tokens[p]);
        let is_db_place = before.is_some_and(|x| {
            ["USE", "DATABASE", "SCHEMA"]
                .iter()
                .any(|w| x.is_word(sql, w))
                || (has_show && (x.is_word(sql, "FROM") || x.is_word(sql, "IN")))
        });
        if is_db_place {
            return Some(Reach::Database);
        }
    }
    None
}

/// The text of PREPARE ... FROM or EXECUTE IMMEDIATE: string literals up
/// to the end of the statement (or USING); anything else is refused.
fn dynamic_text(sql: &str, rest: &[Token], schema: &str, depth: usize) -> Option<Reach> {
    let end = rest
        .iter()
        .position(|t| t.kind == TokenKind::Semicolon || t.is_word(sql, "USING"))
        .unwrap_or(rest.len());
    let parts = &rest[..end];
    if parts.is_empty() || parts.iter().any(|t| t.kind != TokenKind::Str) {
        return Some(Reach::Dynamic);
    }
    if depth >= MAX_DEPTH {
        return Some(Reach::Dynamic);
    }
    let (mut escaped, mut plain) = (String::new(), String::new());
    for t in parts {
        let text = t.text(sql);
        let q = &text[..1];
        let inner = text[1..text.len() - 1].replace(&format!("{q}{q}"), q);
        escaped.push_str(&unescape(&inner));
        plain.push_str(&inner);
    }
    check(&escaped, schema, depth + 1).or_else(|| check(&plain, schema, depth + 1))
}

/// A string literal's content as the server reads its backslash escapes.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('\0'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('b') => out.push('\u{8}'),
            Some('Z') => out.push('\u{1a}'),
            Some(c @ ('%' | '_')) => {
                out.push('\\');
                out.push(c);
            }
            Some(c) => out.push(c),
            None => out.push('\\'),
        }
    }
    out
}

/// The name as a whole word followed by a dot, quotes, spaces and block
/// comments between them skipped: the net under any lexing difference.
fn raw_qualified(sql: &str, schema: &str) -> Option<Reach> {
    let b = sql.as_bytes();
    let n = schema.len();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
    let mut i = 0;
    while i + n <= b.len() {
        let hit = b[i..i + n].eq_ignore_ascii_case(schema.as_bytes())
            && (i == 0 || !is_ident(b[i - 1]))
            && b.get(i + n).is_none_or(|&c| !is_ident(c));
        if hit {
            let mut j = i + n;
            loop {
                match b.get(j) {
                    Some(b'`' | b'"' | b'\'' | b' ' | b'\t' | b'\n' | b'\r') => j += 1,
                    Some(b'/') if b.get(j + 1) == Some(&b'*') => match sql[j + 2..].find("*/") {
                        Some(k) => j += k + 4,
                        None => break,
                    },
                    _ => break,
                }
            }
            if b.get(j) == Some(&b'.') {
                let command = sql
                    .split(|c: char| !c.is_ascii_alphanumeric())
                    .find(|w| !w.is_empty())
                    .unwrap_or_default()
                    .to_ascii_uppercase();
                return Some(Reach::Table {
                    command,
                    table: "*".into(),
                });
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach(sql: &str) -> Option<Reach> {
        reserved_reach(sql, "hscale")
    }

    fn table(command: &str, table: &str) -> Option<Reach> {
        Some(Reach::Table {
            command: command.into(),
            table: table.into(),
        })
    }

    #[test]
    fn qualified_names_in_any_quoting() {
        assert_eq!(
            reach("SELECT * FROM hscale.operations"),
            table("SELECT", "operations")
        );
        assert_eq!(
            reach("update `HSCALE` . `partitions` set x = 1"),
            table("UPDATE", "partitions")
        );
        assert_eq!(
            reach("SELECT 1; DELETE FROM \"hscale\".\"decisions\""),
            table("DELETE", "decisions")
        );
        assert_eq!(reach("GRANT ALL ON hscale.* TO x"), table("GRANT", "*"));
        assert_eq!(
            reach("SELECT * FROM t WHERE id IN (SELECT id FROM /*!hscale.sequences*/)"),
            table("SELECT", "sequences")
        );
        assert_eq!(
            reach("INSERT INTO a.t SELECT * FROM hscale/* x */.sequences"),
            table("INSERT", "sequences")
        );
    }

    #[test]
    fn the_database_itself() {
        for sql in [
            "USE hscale",
            "use `hscale`",
            "DROP DATABASE hscale",
            "drop schema if exists HScale",
            "CREATE DATABASE IF NOT EXISTS hscale",
            "SHOW TABLES FROM hscale",
            "SHOW TABLE STATUS IN `hscale` LIKE 'x'",
            "SHOW CREATE DATABASE hscale",
            "SHOW COLUMNS FROM operations FROM hscale",
        ] {
            assert_eq!(reach(sql), Some(Reach::Database), "{sql}");
        }
    }

    #[test]
    fn dynamic_sql_must_be_literal() {
        assert_eq!(reach("PREPARE s FROM @q"), Some(Reach::Dynamic));
        assert_eq!(
            reach("EXECUTE IMMEDIATE CONCAT('SELECT * FROM hsc', 'ale.operations')"),
            Some(Reach::Dynamic)
        );
        assert_eq!(
            reach("PREPARE s FROM 'SELECT * FROM hsc' 'ale.operations'"),
            table("SELECT", "operations")
        );
        assert_eq!(
            reach(r"PREPARE s FROM 'SELECT * FROM hsc\ale.operations'"),
            table("SELECT", "operations")
        );
        assert_eq!(
            reach("CREATE PROCEDURE p() BEGIN SET @s = 'x'; PREPARE st FROM @s; END"),
            Some(Reach::Dynamic)
        );
        assert_eq!(reach("PREPARE s FROM 'SELECT ?'"), None);
        assert_eq!(reach("EXECUTE IMMEDIATE 'SELECT ?' USING 1"), None);
    }

    #[test]
    fn backslash_tricks_are_seen() {
        // Under NO_BACKSLASH_ESCAPES the first string ends at the second quote.
        let sql = r"SELECT '\' , (SELECT COUNT(*) FROM hscale.operations), '";
        assert!(reach(sql).is_some());
        // GBK: 0xbf 0x5c is one character, so the quote after it ends the string.
        let sql = "SELECT '\u{bf}\\' , x FROM hscale . operations -- '";
        assert!(reach(sql).is_some());
    }

    #[test]
    fn reserved_variables_in_any_spelling() {
        for sql in [
            "SET @hscale_dictionary_version = 99",
            "SET @a = 1, @HSCALE_dictionary_version := 99",
            "SELECT @hscale_dictionary_version := 99",
            "SELECT 99 INTO @hscale_dictionary_version",
            "SET @`hscale_dictionary_version` = 99",
            "SET @'hscale_dictionary_version' = 99",
            "SET @\"hscale_dictionary_version\" = 99",
            r"SET @'hsc\ale_dictionary_version' = 99",
            "SET @ hscale_dictionary_version = 99",
            "SET @/* c */hscale_dictionary_version = 99",
            "SET @/*!hscale_dictionary_version*/ = 99",
            "SET @/*!100000 hscale_dictionary_version*/ = 99",
            "SET @-- c\nhscale_dictionary_version = 99",
            "CALL p(@hscale_dictionary_version)",
            "PREPARE s FROM 'SET @hscale_dictionary_version = 99'",
            r"PREPARE s FROM 'SET @hsc\ale_dictionary_version = 99'",
            "PREPARE s FROM 'SET @''hscale_dictionary_version'' = 99'",
            "EXECUTE IMMEDIATE 'SELECT 1 INTO @hscale_x'",
            "CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET @hscale_dictionary_version = 99",
        ] {
            assert_eq!(reach(sql), Some(Reach::Variable), "{sql}");
        }
        for sql in [
            "SET @hscale = 1",
            "SET @my_hscale_x = 1",
            "SELECT @@autocommit, @a",
            r"SELECT 'a\b' FROM t WHERE x = @y",
            "SET @hscalex = 1",
        ] {
            assert_eq!(reach(sql), None, "{sql}");
        }
    }

    #[test]
    fn other_names_pass() {
        for sql in [
            "SELECT * FROM t",
            "SELECT hscale FROM t",
            "SELECT t.hscale FROM t",
            "SELECT 'hscale.operations' FROM t",
            "INSERT INTO t VALUES ('see hscale. here')",
            "HSCALE SHOW PARTITIONS('db.t')",
            "SELECT * FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'hscale'",
            "SELECT * FROM hscale_app.t",
            "CREATE DATABASE hscale2",
            "SELECT prepared FROM t",
        ] {
            assert_eq!(reach(sql), None, "{sql}");
        }
        assert!(is_reserved_db("HSCALE", "hscale"));
        assert!(!is_reserved_db("hscale_x", "hscale"));
    }
}
