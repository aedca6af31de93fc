//! A MySQL lexer: identifiers, quoted identifiers, strings, numbers,
//! variables, placeholders and operators, with comments skipped. The
//! content of executable comments (`/*! ... */`, `/*M! ... */`) is lexed as
//! code where the server runs it: always without a version, and with one
//! (`/*!50110 ... */`, `/*M!100500 ... */`) only when the version is not
//! above the server's ([`ServerVersion`], learned from the main backend's
//! handshake); otherwise the whole comment is skipped, as the server skips
//! it, so that routing never reads a condition the server will not run.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A bare word: keyword or identifier.
    Word,
    /// A `backquoted` identifier.
    QuotedIdent,
    /// A 'single' or "double" quoted string.
    Str,
    Number,
    /// `?`
    Placeholder,
    /// `@name`, `@'name'`
    UserVar,
    /// `@@name`, `@@session.name`
    SysVar,
    /// An operator or punctuation, one to three characters.
    Punct,
    Semicolon,
}

/// A token: its kind and byte span in the statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub start: u32,
    pub end: u32,
}

impl Token {
    #[inline]
    pub fn text<'a>(&self, sql: &'a str) -> &'a str {
        sql.get(self.start as usize..self.end as usize)
            .unwrap_or("")
    }
    /// Case-insensitive keyword comparison (for `Word` tokens).
    #[inline]
    pub fn is_word(&self, sql: &str, word: &str) -> bool {
        self.kind == TokenKind::Word && self.text(sql).eq_ignore_ascii_case(word)
    }
    #[inline]
    pub fn is_punct(&self, sql: &str, p: &str) -> bool {
        self.kind == TokenKind::Punct && self.text(sql) == p
    }
}

/// Text the lexer cannot split; the server will reject it too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexError {
    UnterminatedString(u32),
    UnterminatedComment(u32),
}

impl std::fmt::Display for LexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LexError::UnterminatedString(p) => write!(f, "unterminated string at byte {p}"),
            LexError::UnterminatedComment(p) => write!(f, "unterminated comment at byte {p}"),
        }
    }
}

impl std::error::Error for LexError {}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Split a statement into tokens.
pub fn tokenize(sql: &str) -> Result<Vec<Token>, LexError> {
    tokenize_as(sql, true)
}

/// Split a statement into tokens as the server does under the sql_mode
/// NO_BACKSLASH_ESCAPES (a backslash in a string is an ordinary
/// character). A client may set that mode, so checks that must not be
/// evaded look at the statement both ways (`guard.rs`).
pub fn tokenize_without_escapes(sql: &str) -> Result<Vec<Token>, LexError> {
    tokenize_as(sql, false)
}

/// Under the sql_mode ANSI_QUOTES: `sql` with every double-quoted name
/// written with backquotes (`"a""b"` is `` `a"b` ``), which the server
/// reads as the same names in any mode; `None` when it has none, or a name
/// this cannot rewrite (one holding a backslash). `is_escaping`: a
/// backslash escapes in strings (no NO_BACKSLASH_ESCAPES).
pub fn ansi_names_backquoted(sql: &str, is_escaping: bool) -> Option<String> {
    let tokens = tokenize_as(sql, is_escaping).ok()?;
    let mut out = String::with_capacity(sql.len() + 8);
    let mut at = 0;
    for t in &tokens {
        let s = t.text(sql);
        if t.kind != TokenKind::Str || !s.starts_with('"') || s.len() < 2 {
            continue;
        }
        let inner = &s[1..s.len() - 1];
        if inner.contains('\\') {
            return None;
        }
        out.push_str(&sql[at..t.start as usize]);
        out.push('`');
        out.push_str(&inner.replace("\"\"", "\"").replace('`', "``"));
        out.push('`');
        at = t.end as usize;
    }
    if at == 0 {
        return None;
    }
    out.push_str(&sql[at..]);
    Some(out)
}

/// Under the sql_mode NO_BACKSLASH_ESCAPES: `sql` with every backslash
/// in a single-quoted string doubled, the text hscale's lexer (which reads
/// `\` as an escape) reads with the values the server reads in `sql`
/// (`'back\slash'` is `back\slash` to both); `None` when it has no such
/// backslash, or when the two readings split the statement differently
/// (a string ending in a backslash before a quote, a quoted user
/// variable), which doubling cannot make equal. The text to send a
/// server in that mode is [`backslashes_undoubled`] of what hscale makes
/// of it.
pub fn backslashes_doubled(sql: &str) -> Option<String> {
    let raw = tokenize_as(sql, false).ok()?;
    let mut out = String::with_capacity(sql.len() + 8);
    let mut at = 0;
    for t in &raw {
        let s = t.text(sql);
        if t.kind == TokenKind::Str && s.starts_with('\'') && s.contains('\\') {
            out.push_str(&sql[at..t.start as usize]);
            out.push_str(&s.replace('\\', "\\\\"));
            at = t.end as usize;
        } else if s.contains('\\') {
            // A double-quoted string or a quoted name holding one.
            return None;
        }
    }
    if at == 0 {
        return None;
    }
    out.push_str(&sql[at..]);
    let read = tokenize_as(&out, true).ok()?;
    let is_same = read.len() == raw.len() && read.iter().zip(&raw).all(|(a, b)| a.kind == b.kind);
    is_same.then_some(out)
}

/// The inverse of [`backslashes_doubled`] on a statement made from its
/// output: every `\\` in a single-quoted string (as hscale's lexer
/// splits it) becomes one backslash. `None` when a string holds a
/// backslash that is not part of a pair (an escape hscale itself wrote,
/// which the server in NO_BACKSLASH_ESCAPES would read otherwise) or a
/// double-quoted string holds one.
pub fn backslashes_undoubled(sql: &str) -> Option<String> {
    let tokens = tokenize_as(sql, true).ok()?;
    let mut out = String::with_capacity(sql.len());
    let mut at = 0;
    for t in &tokens {
        let s = t.text(sql);
        if !s.contains('\\') {
            continue;
        }
        if t.kind != TokenKind::Str || !s.starts_with('\'') {
            return None;
        }
        let mut inner = String::with_capacity(s.len());
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '\\' && chars.next() != Some('\\') {
                return None;
            }
            inner.push(c);
        }
        out.push_str(&sql[at..t.start as usize]);
        out.push_str(&inner);
        at = t.end as usize;
    }
    out.push_str(&sql[at..]);
    Some(out)
}

#[inline(always)]
fn tokenize_as(sql: &str, is_escaping: bool) -> Result<Vec<Token>, LexError> {
    let b = sql.as_bytes();
    let n = b.len();
    let mut out = Vec::with_capacity(16);
    let mut i = 0usize;
    let mut in_exec_comment = false;
    let push = |out: &mut Vec<Token>, kind, s: usize, e: usize| {
        out.push(Token {
            kind,
            start: s as u32,
            end: e as u32,
        })
    };
    while i < n {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c' => i += 1,
            b'#' => {
                while i < n && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'-' if i + 1 < n
                && b[i + 1] == b'-'
                && (i + 2 == n || b[i + 2].is_ascii_whitespace()) =>
            {
                while i < n && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if i + 1 < n && b[i + 1] == b'*' => {
                i = block_comment(b, i, &mut in_exec_comment)?;
            }
            b'*' if in_exec_comment && i + 1 < n && b[i + 1] == b'/' => {
                in_exec_comment = false;
                i += 2;
            }
            b'\'' | b'"' => {
                let s = i;
                i = skip_quoted(b, i, c, is_escaping)
                    .ok_or(LexError::UnterminatedString(s as u32))?;
                push(&mut out, TokenKind::Str, s, i);
            }
            b'`' => {
                let s = i;
                i = skip_quoted(b, i, c, is_escaping)
                    .ok_or(LexError::UnterminatedString(s as u32))?;
                push(&mut out, TokenKind::QuotedIdent, s, i);
            }
            b'@' => {
                let s = i;
                let kind;
                (kind, i) = scan_variable(b, i, is_escaping)?;
                push(&mut out, kind, s, i);
            }
            b'?' => {
                push(&mut out, TokenKind::Placeholder, i, i + 1);
                i += 1;
            }
            b';' => {
                push(&mut out, TokenKind::Semicolon, i, i + 1);
                i += 1;
            }
            b'0'..=b'9' => {
                let s = i;
                i = scan_number(b, i);
                if i < n && is_ident_byte(b[i]) && b[i - 1] != b'.' {
                    // MySQL allows identifiers that start with digits (`1abc`).
                    while i < n && is_ident_byte(b[i]) {
                        i += 1;
                    }
                    push(&mut out, TokenKind::Word, s, i);
                } else {
                    push(&mut out, TokenKind::Number, s, i);
                }
            }
            b'.' if i + 1 < n
                && b[i + 1].is_ascii_digit()
                && !prev_is_name(&out, s_end(&out), i) =>
            {
                let s = i;
                i = scan_number(b, i);
                push(&mut out, TokenKind::Number, s, i);
            }
            _ if is_ident_byte(c) => {
                let s = i;
                while i < n && is_ident_byte(b[i]) {
                    i += 1;
                }
                push(&mut out, TokenKind::Word, s, i);
            }
            _ => {
                let s = i;
                i += punct_len(sql, i);
                push(&mut out, TokenKind::Punct, s, i);
            }
        }
    }
    Ok(out)
}

/// A comment `/* ... */` at `i`: where the text after it starts. An
/// executable comment the server runs (`/*! ... */`, `/*M! ... */`,
/// within its version) is entered instead: its code is lexed, and
/// `in_exec_comment` is set until its `*/`. Inside one, a nested
/// comment is an ordinary one.
#[inline]
fn block_comment(b: &[u8], i: usize, in_exec_comment: &mut bool) -> Result<usize, LexError> {
    let unterminated = LexError::UnterminatedComment(i as u32);
    if !*in_exec_comment {
        match executable_comment(b, i, ServerVersion::current()) {
            Some(Executable::Code(code)) => {
                *in_exec_comment = true;
                return Ok(code);
            }
            Some(Executable::Skipped(body)) => return skip_comment(b, body, 1).ok_or(unterminated),
            None => {}
        }
    }
    skip_comment(b, i + 2, 0).ok_or(unterminated)
}

/// A variable at `i` (its `@`): `@@name` / `@@session.name` (a system
/// variable) or `@name` / `@'name'` (a user variable), and where it ends.
#[inline]
fn scan_variable(
    b: &[u8],
    mut i: usize,
    is_escaping: bool,
) -> Result<(TokenKind, usize), LexError> {
    let n = b.len();
    let unterminated = LexError::UnterminatedString(i as u32);
    if i + 1 < n && b[i + 1] == b'@' {
        i += 2;
        while i < n && (is_ident_byte(b[i]) || b[i] == b'.') {
            i += 1;
        }
        // @@`quoted` is rare; treat the quoted part as part of the name.
        if i < n && b[i] == b'`' {
            i = skip_quoted(b, i, b'`', is_escaping).ok_or(unterminated)?;
        }
        return Ok((TokenKind::SysVar, i));
    }
    i += 1;
    if i < n && (b[i] == b'\'' || b[i] == b'"' || b[i] == b'`') {
        i = skip_quoted(b, i, b[i], is_escaping).ok_or(unterminated)?;
    } else {
        while i < n && (is_ident_byte(b[i]) || b[i] == b'.') {
            i += 1;
        }
    }
    Ok((TokenKind::UserVar, i))
}

/// The length in bytes of the operator or punctuation at `i`: one of
/// three or two characters, else one character (which may be a
/// multi-byte UTF-8 one).
#[inline]
fn punct_len(sql: &str, i: usize) -> usize {
    let rest = &sql.as_bytes()[i..];
    if rest.starts_with(b"<=>") || rest.starts_with(b"->>") {
        3
    } else if rest.len() >= 2
        && matches!(
            &rest[..2],
            b"<=" | b">=" | b"<>" | b"!=" | b":=" | b"||" | b"&&" | b"<<" | b">>" | b"->"
        )
    {
        2
    } else {
        sql[i..].chars().next().map(char::len_utf8).unwrap_or(1)
    }
}

/// The server behind hscale, as far as the lexer cares: which version
/// comments it runs. `id` is MariaDB's and MySQL's `MYSQL_VERSION_ID`
/// (major * 10000 + minor * 100 + patch: 101119 for MariaDB 10.11.19).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerVersion {
    pub id: u32,
    pub is_mariadb: bool,
}

/// What the lexer assumes until [`ServerVersion::set_current`] is called:
/// MariaDB 10.11.0, the version hscale is built and tested against.
pub const DEFAULT_SERVER_VERSION: ServerVersion = ServerVersion {
    id: 101100,
    is_mariadb: true,
};

/// The current [`ServerVersion`], packed: the id, and the top bit set for
/// MySQL. Set once when the proxy first reaches its main backend (a
/// process-wide fact like the binary's own version, which no test varies).
static CURRENT_SERVER: std::sync::atomic::AtomicU32 =
    std::sync::atomic::AtomicU32::new(DEFAULT_SERVER_VERSION.id);

const MYSQL_BIT: u32 = 1 << 31;

impl ServerVersion {
    /// Read a handshake's version string: `5.5.5-10.11.19-MariaDB-0+deb12u1`
    /// (MariaDB, behind its replication prefix), `10.11.6-MariaDB`,
    /// `8.0.36` (MySQL).
    pub fn parse(text: &str) -> Option<ServerVersion> {
        let is_mariadb = text.contains("MariaDB");
        let text = if is_mariadb {
            text.strip_prefix("5.5.5-").unwrap_or(text)
        } else {
            text
        };
        let mut parts = text.splitn(3, '.');
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u32 = parts.next()?.parse().ok()?;
        let rest = parts.next()?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let patch: u32 = rest[..digits].parse().ok()?;
        if minor > 99 || patch > 99 || major > 99 {
            return None;
        }
        Some(ServerVersion {
            id: major * 10000 + minor * 100 + patch,
            is_mariadb,
        })
    }

    /// The version the lexer decides version comments by.
    pub fn current() -> ServerVersion {
        let v = CURRENT_SERVER.load(std::sync::atomic::Ordering::Relaxed);
        ServerVersion {
            id: v & !MYSQL_BIT,
            is_mariadb: v & MYSQL_BIT == 0,
        }
    }

    /// Lex version comments as this server runs them from now on.
    pub fn set_current(self) {
        let packed = self.id | if self.is_mariadb { 0 } else { MYSQL_BIT };
        CURRENT_SERVER.store(packed, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What the server makes of an executable comment.
enum Executable {
    /// Code, starting at this index (after the marker and the version).
    Code(usize),
    /// A comment whose body (after the marker and the version) starts
    /// at this index.
    Skipped(usize),
}

/// The comment at `i` (`/*`), when it is an executable one: `/*!` (and on
/// MariaDB `/*M!`), optionally followed by a version of five or six digits.
/// As MariaDB's lexer (`sql_lex.cc`): without a version the content is
/// code; with one, code when the version is not above the server's and,
/// for a `/*!` comment, outside MySQL 5.7's range 50700-99999 (which
/// MariaDB skips, as it may hold syntax MariaDB does not know); else the
/// whole comment is one, which may hold one nested `/* */`.
fn executable_comment(b: &[u8], i: usize, server: ServerVersion) -> Option<Executable> {
    let is_maria_marker = server.is_mariadb && b.get(i + 2) == Some(&b'M');
    let marker = if is_maria_marker { i + 3 } else { i + 2 };
    if b.get(marker) != Some(&b'!') {
        return None;
    }
    let v = marker + 1;
    let digits = b[v.min(b.len())..]
        .iter()
        .take(6)
        .take_while(|c| c.is_ascii_digit())
        .count();
    if digits < 5 {
        return Some(Executable::Code(v));
    }
    let version: u32 = b[v..v + digits]
        .iter()
        .fold(0, |acc, d| acc * 10 + u32::from(d - b'0'));
    let is_mysql57 = server.is_mariadb && (50700..=99999).contains(&version);
    if version <= server.id && (!is_mysql57 || is_maria_marker) {
        Some(Executable::Code(v + digits))
    } else {
        Some(Executable::Skipped(v))
    }
}

/// Skip a comment's body from `i` to after its `*/`, entering up to
/// `nesting` nested `/* ... */` on the way (MariaDB's `consume_comment`).
/// `None` when it is not closed.
fn skip_comment(b: &[u8], mut i: usize, nesting: u32) -> Option<usize> {
    let n = b.len();
    while i < n {
        if nesting > 0 && b[i] == b'/' && i + 1 < n && b[i + 1] == b'*' {
            i = skip_comment(b, i + 2, nesting - 1)?;
            continue;
        }
        if b[i] == b'*' && i + 1 < n && b[i + 1] == b'/' {
            return Some(i + 2);
        }
        i += 1;
    }
    None
}

fn s_end(out: &[Token]) -> usize {
    out.last().map(|t| t.end as usize).unwrap_or(0)
}

/// `t.5col` style: a dot right after a name is a qualifier, not a decimal point.
fn prev_is_name(out: &[Token], prev_end: usize, i: usize) -> bool {
    prev_end == i
        && out
            .last()
            .is_some_and(|t| matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent))
}

/// Skip a quoted string starting at `i` (the opening quote); returns the
/// index after the closing quote. Backslash escapes (unless
/// `is_escaping` is off) and doubled quotes.
fn skip_quoted(b: &[u8], mut i: usize, q: u8, is_escaping: bool) -> Option<usize> {
    i += 1;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' && q != b'`' && is_escaping {
            i += 2;
            continue;
        }
        if c == q {
            if i + 1 < b.len() && b[i + 1] == q {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

fn scan_number(b: &[u8], mut i: usize) -> usize {
    let n = b.len();
    if b[i] == b'0' && i + 1 < n && (b[i + 1] == b'x' || b[i + 1] == b'b') {
        let hex = b[i + 1] == b'x';
        let mut j = i + 2;
        while j < n
            && (if hex {
                b[j].is_ascii_hexdigit()
            } else {
                b[j] == b'0' || b[j] == b'1'
            })
        {
            j += 1;
        }
        if j > i + 2 {
            return j;
        }
    }
    while i < n && b[i].is_ascii_digit() {
        i += 1;
    }
    if i < n && b[i] == b'.' {
        i += 1;
        while i < n && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < n && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < n && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < n && b[j].is_ascii_digit() {
            i = j;
            while i < n && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backslashes_doubled_and_undoubled() {
        let sql = r"INSERT INTO w (w, n) VALUES ('back\slash', 1), ('a\', 2), ('x', 3)";
        let doubled = backslashes_doubled(sql).unwrap();
        assert_eq!(
            doubled,
            r"INSERT INTO w (w, n) VALUES ('back\\slash', 1), ('a\\', 2), ('x', 3)"
        );
        assert_eq!(backslashes_undoubled(&doubled).as_deref(), Some(sql));
        // Nothing to double; a double-quoted string or a name holding one.
        assert_eq!(backslashes_doubled("SELECT 'x'"), None);
        assert_eq!(backslashes_doubled(r#"SELECT "a\b""#), None);
        assert_eq!(backslashes_doubled(r"SELECT `a\b`, 'c\d'"), None);
        // An escape hscale wrote itself cannot be undone.
        assert_eq!(backslashes_undoubled(r"SELECT 'it\'s'"), None);
        assert_eq!(
            backslashes_undoubled("SELECT 'plain'").as_deref(),
            Some("SELECT 'plain'")
        );
    }

    fn kinds(sql: &str) -> Vec<(TokenKind, String)> {
        tokenize(sql)
            .unwrap()
            .iter()
            .map(|t| (t.kind, t.text(sql).to_string()))
            .collect()
    }

    #[test]
    fn basic_select() {
        use TokenKind::*;
        let k = kinds("SELECT a, `b``c` FROM t WHERE x = 'it''s' AND y=-1.5e3 -- c\n /* d */ # e");
        assert_eq!(
            k,
            vec![
                (Word, "SELECT".into()),
                (Word, "a".into()),
                (Punct, ",".into()),
                (QuotedIdent, "`b``c`".into()),
                (Word, "FROM".into()),
                (Word, "t".into()),
                (Word, "WHERE".into()),
                (Word, "x".into()),
                (Punct, "=".into()),
                (Str, "'it''s'".into()),
                (Word, "AND".into()),
                (Word, "y".into()),
                (Punct, "=".into()),
                (Punct, "-".into()),
                (Number, "1.5e3".into()),
            ]
        );
    }

    #[test]
    fn variables_and_exec_comments() {
        use TokenKind::*;
        let k = kinds("/*!40101 SET @x := @@session.sql_mode */; select ?, 0x1F, t.5c");
        assert_eq!(k[0], (Word, "SET".into()));
        assert_eq!(k[1], (UserVar, "@x".into()));
        assert_eq!(k[2], (Punct, ":=".into()));
        assert_eq!(k[3], (SysVar, "@@session.sql_mode".into()));
        assert_eq!(k[4], (Semicolon, ";".into()));
        assert!(k.contains(&(Placeholder, "?".into())));
        assert!(k.contains(&(Number, "0x1F".into())));
        assert!(k.contains(&(Word, "5c".into())));
    }

    /// The content of an executable comment as lexed for `server`: the
    /// index code starts at, or `None` for a skipped comment.
    fn code_at(sql: &str, server: ServerVersion) -> Option<Option<usize>> {
        match executable_comment(sql.as_bytes(), 0, server)? {
            Executable::Code(i) => Some(Some(i)),
            Executable::Skipped(_) => Some(None),
        }
    }

    #[test]
    fn version_comments_follow_the_server() {
        let maria = ServerVersion::parse("5.5.5-10.11.19-MariaDB-0+deb12u1").unwrap();
        assert_eq!(
            maria,
            ServerVersion {
                id: 101119,
                is_mariadb: true
            }
        );
        let mysql = ServerVersion::parse("8.0.36").unwrap();
        assert_eq!(
            mysql,
            ServerVersion {
                id: 80036,
                is_mariadb: false
            }
        );
        assert_eq!(ServerVersion::parse("10.6.4-MariaDB").unwrap().id, 100604);
        assert_eq!(ServerVersion::parse("nonsense"), None);
        // Code: no version, or one not above the server's.
        assert_eq!(code_at("/*! x */", maria), Some(Some(3)));
        assert_eq!(code_at("/*M! x */", maria), Some(Some(4)));
        assert_eq!(code_at("/*!40101 x */", maria), Some(Some(8)));
        assert_eq!(code_at("/*!101119 x */", maria), Some(Some(9)));
        assert_eq!(code_at("/*M!100000 x */", maria), Some(Some(10)));
        assert_eq!(code_at("/*!1234 x */", maria), Some(Some(3)));
        assert_eq!(code_at("/*!1011190 x */", maria), Some(Some(9)));
        // Comments: above the server's, or MySQL 5.7's range unless `M`.
        assert_eq!(code_at("/*!101120 x */", maria), Some(None));
        assert_eq!(code_at("/*M!999999 x */", maria), Some(None));
        assert_eq!(code_at("/*!50700 x */", maria), Some(None));
        assert_eq!(code_at("/*!99999 x */", maria), Some(None));
        assert_eq!(code_at("/*M!50700 x */", maria), Some(Some(9)));
        assert_eq!(code_at("/*!50700 x */", mysql), Some(Some(8)));
        assert_eq!(code_at("/*!80037 x */", mysql), Some(None));
        // Not executable: `/*m!` on MariaDB, `/*M!` on MySQL.
        assert_eq!(code_at("/*m!100000 x */", maria), None);
        assert_eq!(code_at("/*M!100000 x */", mysql), None);
        // A skipped comment may hold one nested comment.
        let sql = "/*!999999 a /* b */ c */ d";
        let Some(Executable::Skipped(body)) = executable_comment(sql.as_bytes(), 0, maria) else {
            panic!("not skipped");
        };
        assert_eq!(&sql[skip_comment(sql.as_bytes(), body, 1).unwrap()..], " d");
        assert_eq!(skip_comment(b"/*!999999 a /* b */ c", 3, 1), None);
        // The lexer as set up (MariaDB 10.11 until a proxy learns its own).
        assert_eq!(kinds("x /*M!999999 AND y */ z").len(), 2);
        assert_eq!(kinds("x /*!999999 AND /* q */ y */ z").len(), 2);
        assert_eq!(kinds("x /*M!100000 AND y */ z").len(), 4);
    }

    #[test]
    fn escapes_and_errors() {
        assert_eq!(kinds(r"select 'a\'b'").len(), 2);
        assert!(tokenize("select 'abc").is_err());
        assert!(tokenize("select /* abc").is_err());
        assert_eq!(kinds("select 'é☃', x").len(), 4);
        assert_eq!(kinds("select a--b").len(), 5);
    }
}
