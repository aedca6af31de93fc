//! Statement fingerprints: the statement with every literal replaced by `?`,
//! `IN (...)` lists and multi-row `VALUES` collapsed, whitespace, comments
//! and the case of reserved words normalized, hashed with xxh3. Other words
//! keep their case: table names and aliases are case-sensitive, so `Orders`
//! and `orders` must not share a plan. Statements that differ only
//! in their literals share a fingerprint, which keys the plan cache; the
//! literals are returned in order so a cached plan can be bound to them.

use xxhash_rust::xxh3::xxh3_64;

use crate::lexer::{tokenize, LexError, Token, TokenKind};

/// A literal of the statement, in order of appearance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Literal {
    pub token: Token,
    /// Preceded by a unary minus that was folded into it.
    pub is_negative: bool,
}

/// The fingerprint of a statement and its literals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    pub hash: u64,
    pub literals: Vec<Literal>,
    /// A list of literals was collapsed (so statements with this
    /// fingerprint may have different numbers of literals).
    pub collapsed: bool,
}

/// Reserved words (never unquoted identifiers), hashed in one case; sorted.
const RESERVED: [&str; 45] = [
    "ALL", "AND", "AS", "ASC", "BETWEEN", "BY", "CASE", "CROSS", "DELETE", "DESC", "DISTINCT",
    "ELSE", "END", "EXISTS", "FOR", "FROM", "GROUP", "HAVING", "IGNORE", "IN", "INNER", "INSERT",
    "INTO", "IS", "JOIN", "LEFT", "LIKE", "LIMIT", "NOT", "NULL", "ON", "OR", "ORDER", "REPLACE",
    "RIGHT", "SELECT", "SET", "THEN", "UNION", "UPDATE", "USING", "VALUES", "WHEN", "WHERE",
    "WITH",
];

/// A word of at most 8 bytes as a number, upper-cased, big-endian and
/// zero-padded: numbers compare as the words do.
const fn packed(w: &[u8]) -> Option<u64> {
    if w.len() > 8 {
        return None;
    }
    let mut out = 0u64;
    let mut i = 0;
    while i < 8 {
        let b = if i < w.len() {
            w[i].to_ascii_uppercase()
        } else {
            0
        };
        out = (out << 8) | b as u64;
        i += 1;
    }
    Some(out)
}

/// [`RESERVED`], packed; sorted as it is.
const RESERVED_PACKED: [u64; RESERVED.len()] = {
    let mut out = [0u64; RESERVED.len()];
    let mut i = 0;
    while i < RESERVED.len() {
        out[i] = match packed(RESERVED[i].as_bytes()) {
            Some(p) => p,
            None => panic!("a reserved word longer than 8 bytes"),
        };
        i += 1;
    }
    out
};

/// The reserved word `w` is, in [`RESERVED`]'s case. Runs for every word
/// of every statement: one number compared a few times.
fn reserved(w: &str) -> Option<&'static str> {
    let p = packed(w.as_bytes())?;
    RESERVED_PACKED.binary_search(&p).ok().map(|i| RESERVED[i])
}

fn is_literal(t: &Token) -> bool {
    matches!(
        t.kind,
        TokenKind::Str | TokenKind::Number | TokenKind::Placeholder
    )
}

/// Fingerprint a statement.
pub fn fingerprint(sql: &str) -> Result<Fingerprint, LexError> {
    let tokens = tokenize(sql)?;
    Ok(fingerprint_tokens(sql, &tokens))
}

/// Fingerprint already-lexed tokens.
pub fn fingerprint_tokens(sql: &str, tokens: &[Token]) -> Fingerprint {
    let (h, literals, collapsed) = normalize(sql, tokens);
    Fingerprint {
        hash: xxh3_64(&h),
        literals,
        collapsed,
    }
}

/// The fingerprint's hash and its normalized text (`SELECT c FROM t WHERE
/// id = ?`), for query digests: the same hash as [`fingerprint`].
pub fn normalized(sql: &str) -> Result<(u64, Vec<u8>), LexError> {
    let tokens = tokenize(sql)?;
    let (h, _, _) = normalize(sql, &tokens);
    Ok((xxh3_64(&h), h))
}

/// The normalized text (each token followed by one space), the literals,
/// and whether a list of literals was collapsed.
fn normalize(sql: &str, tokens: &[Token]) -> (Vec<u8>, Vec<Literal>, bool) {
    // The normalized text, hashed at once (faster than streaming updates).
    let mut h: Vec<u8> = Vec::with_capacity(sql.len() + 16);
    let mut literals = Vec::new();
    let mut collapsed = false;
    let mut i = 0;
    // Inside a list of literals (IN list or VALUES row) being collapsed.
    while i < tokens.len() {
        let t = &tokens[i];
        // A unary minus before a number: fold into the literal when the
        // previous token cannot end an operand.
        if t.is_punct(sql, "-")
            && tokens
                .get(i + 1)
                .is_some_and(|n| n.kind == TokenKind::Number)
            && !prev_ends_operand(sql, tokens, i)
        {
            literals.push(Literal {
                token: tokens[i + 1],
                is_negative: true,
            });
            h.extend_from_slice(b"? ");
            i += 2;
            continue;
        }
        if is_literal(t) {
            literals.push(Literal {
                token: *t,
                is_negative: false,
            });
            h.extend_from_slice(b"? ");
            i += 1;
            continue;
        }
        // `( lit , lit , ... )`: hash as `(?+)` so that list length does not matter.
        if t.is_punct(sql, "(") {
            if let Some(end) = literal_list_end(sql, tokens, i) {
                push_list_literals(sql, &tokens[i + 1..end], &mut literals);
                collapsed = true;
                h.extend_from_slice(b"(?+) ");
                i = end + 1;
                // VALUES (..), (..), ...: further rows collapse into the first.
                while tokens.get(i).is_some_and(|c| c.is_punct(sql, ","))
                    && tokens.get(i + 1).is_some_and(|p| p.is_punct(sql, "("))
                {
                    match literal_list_end(sql, tokens, i + 1) {
                        Some(e) => {
                            push_list_literals(sql, &tokens[i + 2..e], &mut literals);
                            i = e + 1;
                        }
                        None => break,
                    }
                }
                continue;
            }
        }
        match t.kind {
            TokenKind::Word => {
                let w = t.text(sql);
                match reserved(w) {
                    Some(r) => h.extend_from_slice(r.as_bytes()),
                    None => h.extend_from_slice(w.as_bytes()),
                }
            }
            _ => h.extend_from_slice(t.text(sql).as_bytes()),
        }
        h.extend_from_slice(b" ");
        i += 1;
    }
    (h, literals, collapsed)
}

/// The literals of a collapsed list, with their unary minus signs.
fn push_list_literals(sql: &str, list: &[Token], out: &mut Vec<Literal>) {
    for (j, tok) in list.iter().enumerate() {
        if is_literal(tok) {
            out.push(Literal {
                token: *tok,
                is_negative: j > 0 && list[j - 1].is_punct(sql, "-"),
            });
        }
    }
}

fn prev_ends_operand(sql: &str, tokens: &[Token], i: usize) -> bool {
    match i.checked_sub(1).map(|p| &tokens[p]) {
        None => false,
        Some(p) => match p.kind {
            TokenKind::Number
            | TokenKind::Str
            | TokenKind::QuotedIdent
            | TokenKind::UserVar
            | TokenKind::SysVar
            | TokenKind::Placeholder => true,
            TokenKind::Punct => p.text(sql) == ")",
            TokenKind::Word => !matches!(
                p.text(sql).to_ascii_uppercase().as_str(),
                "SELECT"
                    | "WHERE"
                    | "AND"
                    | "OR"
                    | "NOT"
                    | "IN"
                    | "BETWEEN"
                    | "VALUES"
                    | "SET"
                    | "ON"
                    | "WHEN"
                    | "THEN"
                    | "ELSE"
                    | "LIMIT"
                    | "OFFSET"
                    | "BY"
                    | "HAVING"
                    | "RETURN"
                    | "IS"
                    | "LIKE"
                    | "INTERVAL"
            ),
            TokenKind::Semicolon => false,
        },
    }
}

/// If `tokens[open]` starts `( literal [, literal]* )`, the index of `)`.
fn literal_list_end(sql: &str, tokens: &[Token], open: usize) -> Option<usize> {
    let mut i = open + 1;
    let mut expect_literal = true;
    let mut count = 0;
    loop {
        let t = tokens.get(i)?;
        if expect_literal {
            if t.is_punct(sql, "-")
                && tokens
                    .get(i + 1)
                    .is_some_and(|n| n.kind == TokenKind::Number)
            {
                i += 1;
            } else if !is_literal(t) {
                return None;
            }
            count += 1;
            expect_literal = false;
        } else if t.is_punct(sql, ")") {
            return (count > 0).then_some(i);
        } else if t.is_punct(sql, ",") {
            expect_literal = true;
        } else {
            return None;
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_words_are_found_in_any_case_and_only_they() {
        assert!(RESERVED_PACKED.windows(2).all(|w| w[0] < w[1]));
        for r in RESERVED {
            assert_eq!(reserved(r), Some(r));
            assert_eq!(reserved(&r.to_ascii_lowercase()), Some(r));
        }
        for w in [
            "S",
            "SELECTS",
            "FROMX",
            "DISTINCTS",
            "Orders",
            "",
            "INN",
            "ORDERS",
        ] {
            assert_eq!(reserved(w), None, "{w}");
        }
    }

    fn fp(s: &str) -> u64 {
        fingerprint(s).unwrap().hash
    }

    #[test]
    fn literals_do_not_change_the_fingerprint() {
        assert_eq!(
            fp("SELECT c FROM sbtest1 WHERE id=5"),
            fp("select c  from sbtest1 /* x */ where id = 123456")
        );
        assert_eq!(
            fp("SELECT * FROM t WHERE a IN (1, 2, 3)"),
            fp("SELECT * FROM t WHERE a IN ('x')")
        );
        assert_eq!(
            fp("INSERT INTO t VALUES (1, 'a'), (2, 'b')"),
            fp("INSERT INTO t VALUES (7, 'z')")
        );
        assert_eq!(
            fp("SELECT * FROM t WHERE a = -5"),
            fp("SELECT * FROM t WHERE a = 5")
        );
        assert_ne!(fp("SELECT a FROM t"), fp("SELECT b FROM t"));
        assert_ne!(
            fp("SELECT * FROM t WHERE a = 1"),
            fp("SELECT * FROM t WHERE a > 1")
        );
        assert_ne!(fp("SELECT a - 1 FROM t"), fp("SELECT a FROM t"));
        assert_ne!(fp("SELECT `A` FROM t"), fp("SELECT `a` FROM t"));
        assert_ne!(fp("SELECT a FROM Orders"), fp("SELECT a FROM orders"));
        assert!(RESERVED.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn literals_are_returned_in_order() {
        let sql = "SELECT * FROM t WHERE a = -5 AND b IN (1, 'x') AND c = ?";
        let f = fingerprint(sql).unwrap();
        let texts: Vec<(&str, bool)> = f
            .literals
            .iter()
            .map(|l| (l.token.text(sql), l.is_negative))
            .collect();
        assert_eq!(
            texts,
            vec![("5", true), ("1", false), ("'x'", false), ("?", false)]
        );
        let sql = "INSERT INTO t (a, b) VALUES (1, 2), (-3, 4)";
        let f = fingerprint(sql).unwrap();
        let texts: Vec<(&str, bool)> = f
            .literals
            .iter()
            .map(|l| (l.token.text(sql), l.is_negative))
            .collect();
        assert_eq!(
            texts,
            vec![("1", false), ("2", false), ("3", true), ("4", false)]
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,80}") {
            let _ = fingerprint(&s);
        }
    }
}
