//! The statements of a multi-statement query (CLIENT_MULTI_STATEMENTS),
//! split at their top-level semicolons; compound statements (BEGIN ...
//! END, stored program bodies), whose semicolons are inside one
//! statement, are not split. The proxy runs each through the whole
//! COM_QUERY path (`hscale/src/session/batch.rs`).

use crate::lexer::TokenKind;

/// Words that start or mark a compound statement or stored program.
const COMPOUND: &[&str] = &[
    "PROCEDURE",
    "FUNCTION",
    "TRIGGER",
    "EVENT",
    "DECLARE",
    "LOOP",
    "WHILE",
    "REPEAT",
    "ATOMIC",
    "ELSEIF",
    "PACKAGE",
];

/// The statements of a multi-statement query, or `None` when it is not
/// one (a single statement, or a trailing semicolon) or holds a compound
/// statement.
pub fn split(sql: &str) -> Option<Vec<&str>> {
    let tokens = crate::tokenize(sql).ok()?;
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut has_tokens = false;
    for (i, t) in tokens.iter().enumerate() {
        if t.kind == TokenKind::Semicolon {
            if has_tokens {
                out.push(sql[start..t.start as usize].trim());
            }
            start = t.end as usize;
            has_tokens = false;
            continue;
        }
        if t.kind == TokenKind::Word {
            let w = t.text(sql);
            let next_is_end = tokens
                .get(i + 1)
                .is_none_or(|n| n.kind == TokenKind::Semicolon);
            let is_call = tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, "("));
            if (!is_call && COMPOUND.iter().any(|c| w.eq_ignore_ascii_case(c)))
                || (w.eq_ignore_ascii_case("BEGIN")
                    && !next_is_end
                    && !tokens[i + 1].is_word(sql, "WORK"))
                || (w.eq_ignore_ascii_case("END") && !has_tokens)
            {
                return None;
            }
        }
        has_tokens = true;
    }
    if has_tokens {
        out.push(sql[start..].trim());
    }
    (out.len() > 1).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_at_top_level_semicolons() {
        assert_eq!(
            split("SELECT 1; UPDATE t SET v = ';' WHERE k = 2 ;SELECT REPEAT('x', 2);"),
            Some(vec![
                "SELECT 1",
                "UPDATE t SET v = ';' WHERE k = 2",
                "SELECT REPEAT('x', 2)"
            ])
        );
        assert_eq!(split("SELECT 1;"), None);
        assert_eq!(split("SELECT 1"), None);
        assert_eq!(
            split("BEGIN; SELECT 1; COMMIT"),
            Some(vec!["BEGIN", "SELECT 1", "COMMIT"])
        );
        assert_eq!(split("BEGIN NOT ATOMIC SELECT 1; SELECT 2; END"), None);
        assert_eq!(
            split("CREATE PROCEDURE p() BEGIN SELECT 1; END; CALL p()"),
            None
        );
    }
}
