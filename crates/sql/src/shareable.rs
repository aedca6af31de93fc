//! Whether one execution of a read may answer several sessions
//! ([`is_shareable`]): hscale's coalescing of identical reads
//! (`hscale/src/exec/coalesce.rs`) asks it of a single SELECT the session
//! already found free of pins, user variables, system variables and the
//! names hscale answers itself (`Facts`), reading the tokens that analysis
//! kept: the text is not lexed again.
//!
//! A statement is shareable when its answer depends on nothing but its
//! text, the database and session state the caller compares: no function
//! whose value differs per call or per session (RAND, UUID, NOW and its
//! friends, CONNECTION_ID, USER, LAST_INSERT_ID, FOUND_ROWS, GET_LOCK,
//! SLEEP, sequences' NEXTVAL ...), no locking read (FOR UPDATE, LOCK IN
//! SHARE MODE, FOR SHARE), no INTO (files or variables). Calls are read
//! against a list of deterministic built-in functions: any other call
//! (a stored function, which may write or differ per call, or a built-in
//! missing from the list) is not shared.

use crate::lexer::{Token, TokenKind};

/// Words that make a statement unshareable wherever they appear as words
/// (not in strings or names in backquotes): functions callable without
/// parentheses, locking clauses, INTO, sequences.
const NEVER: &[&str] = &[
    "CURRENT_DATE",
    "CURRENT_ROLE",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "CURRENT_USER",
    "DUMPFILE",
    "INTO",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "NEXT",
    "OUTFILE",
    "PREVIOUS",
    "SESSION_USER",
    "SHARE",
    "SYSTEM_USER",
    "UPDATE",
    "UTC_DATE",
    "UTC_TIME",
    "UTC_TIMESTAMP",
];

/// Words that may stand before `(`: keywords of the grammar, type names in
/// CAST, and built-in functions whose value depends only on their
/// arguments and on the session state coalescing compares (the time zone
/// for FROM_UNIXTIME and CONVERT_TZ, lc_time_names for DAYNAME and
/// MONTHNAME, ...). Sorted, upper case.
const CALLABLE: &[&str] = &[
    "ABS",
    "ACOS",
    "ADDDATE",
    "ADDTIME",
    "AGAINST",
    "ALL",
    "AND",
    "ANY",
    "AS",
    "ASC",
    "ASCII",
    "ASIN",
    "ATAN",
    "ATAN2",
    "AVG",
    "BETWEEN",
    "BIGINT",
    "BIN",
    "BINARY",
    "BIT_AND",
    "BIT_COUNT",
    "BIT_LENGTH",
    "BIT_OR",
    "BIT_XOR",
    "BY",
    "CASE",
    "CAST",
    "CEIL",
    "CEILING",
    "CHAR",
    "CHARACTER_LENGTH",
    "CHAR_LENGTH",
    "COALESCE",
    "COLLATE",
    "CONCAT",
    "CONCAT_WS",
    "CONV",
    "CONVERT",
    "CONVERT_TZ",
    "COS",
    "COT",
    "COUNT",
    "CRC32",
    "CUME_DIST",
    "DATE",
    "DATEDIFF",
    "DATETIME",
    "DATE_ADD",
    "DATE_FORMAT",
    "DATE_SUB",
    "DAY",
    "DAYNAME",
    "DAYOFMONTH",
    "DAYOFWEEK",
    "DAYOFYEAR",
    "DECIMAL",
    "DEGREES",
    "DENSE_RANK",
    "DESC",
    "DISTINCT",
    "DIV",
    "DOUBLE",
    "ELSE",
    "ELT",
    "ESCAPE",
    "EXCEPT",
    "EXISTS",
    "EXP",
    "EXTRACT",
    "FIELD",
    "FIND_IN_SET",
    "FIRST_VALUE",
    "FLOAT",
    "FLOOR",
    "FORCE",
    "FORMAT",
    "FROM",
    "FROM_BASE64",
    "FROM_DAYS",
    "FROM_UNIXTIME",
    "GREATEST",
    "GROUP_CONCAT",
    "HAVING",
    "HEX",
    "HOUR",
    "IF",
    "IFNULL",
    "IGNORE",
    "IN",
    "INDEX",
    "INET6_ATON",
    "INET6_NTOA",
    "INET_ATON",
    "INET_NTOA",
    "INSTR",
    "INT",
    "INTEGER",
    "INTERSECT",
    "INTERVAL",
    "IS",
    "ISNULL",
    "JOIN",
    "JSON_ARRAY",
    "JSON_ARRAYAGG",
    "JSON_CONTAINS",
    "JSON_EXTRACT",
    "JSON_KEYS",
    "JSON_LENGTH",
    "JSON_OBJECT",
    "JSON_OBJECTAGG",
    "JSON_TYPE",
    "JSON_UNQUOTE",
    "JSON_VALID",
    "JSON_VALUE",
    "KEY",
    "LAG",
    "LAST_DAY",
    "LAST_VALUE",
    "LATERAL",
    "LCASE",
    "LEAD",
    "LEAST",
    "LEFT",
    "LENGTH",
    "LIKE",
    "LIMIT",
    "LN",
    "LOCATE",
    "LOG",
    "LOG10",
    "LOG2",
    "LOWER",
    "LPAD",
    "LTRIM",
    "MAKEDATE",
    "MAKETIME",
    "MATCH",
    "MAX",
    "MD5",
    "MICROSECOND",
    "MIN",
    "MINUTE",
    "MOD",
    "MONTH",
    "MONTHNAME",
    "NCHAR",
    "NOT",
    "NTH_VALUE",
    "NTILE",
    "NULLIF",
    "NUMERIC",
    "OCT",
    "OCTET_LENGTH",
    "OFFSET",
    "ON",
    "OR",
    "ORD",
    "OVER",
    "PARTITION",
    "PERCENT_RANK",
    "PERIOD_ADD",
    "PERIOD_DIFF",
    "PI",
    "POSITION",
    "POW",
    "POWER",
    "QUARTER",
    "QUOTE",
    "RADIANS",
    "RANGE",
    "RANK",
    "RECURSIVE",
    "REGEXP",
    "REGEXP_INSTR",
    "REGEXP_REPLACE",
    "REGEXP_SUBSTR",
    "REPEAT",
    "REPLACE",
    "REVERSE",
    "RIGHT",
    "RLIKE",
    "ROUND",
    "ROW",
    "ROWS",
    "ROW_NUMBER",
    "RPAD",
    "RTRIM",
    "SECOND",
    "SEC_TO_TIME",
    "SELECT",
    "SHA",
    "SHA1",
    "SHA2",
    "SIGN",
    "SIGNED",
    "SIN",
    "SOME",
    "SOUNDEX",
    "SPACE",
    "SQRT",
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "STRCMP",
    "STR_TO_DATE",
    "SUBDATE",
    "SUBSTR",
    "SUBSTRING",
    "SUBSTRING_INDEX",
    "SUBTIME",
    "SUM",
    "TAN",
    "THEN",
    "TIME",
    "TIMEDIFF",
    "TIMESTAMP",
    "TIMESTAMPADD",
    "TIMESTAMPDIFF",
    "TIME_FORMAT",
    "TIME_TO_SEC",
    "TO_BASE64",
    "TO_DAYS",
    "TO_SECONDS",
    "TRIM",
    "TRUNCATE",
    "UCASE",
    "UNHEX",
    "UNION",
    "UNSIGNED",
    "UPPER",
    "USE",
    "USING",
    "VALUES",
    "VARCHAR",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
    "WEEK",
    "WEEKDAY",
    "WEEKOFYEAR",
    "WHEN",
    "WHERE",
    "WINDOW",
    "WITH",
    "XOR",
    "YEAR",
    "YEARWEEK",
];

/// The lengths of [`NEVER`]'s words, as bits, by their first letter.
const NEVER_LENGTHS: [u32; 26] = {
    let mut bits = [0; 26];
    let mut i = 0;
    while i < NEVER.len() {
        let w = NEVER[i].as_bytes();
        bits[(w[0] - b'A') as usize] |= 1 << w.len();
        i += 1;
    }
    bits
};

/// Whether `word`, in any case, is in [`NEVER`]: most words of a
/// statement (names, short keywords) have a first letter and a length no
/// listed word has, and are passed over without a comparison.
fn is_never(word: &str) -> bool {
    let n = word.len();
    let first = word
        .as_bytes()
        .first()
        .map_or(0, |b| b.to_ascii_uppercase());
    first.is_ascii_uppercase()
        && n < 32
        && NEVER_LENGTHS[(first - b'A') as usize] & (1 << n) != 0
        && NEVER
            .iter()
            .any(|w| w.len() == n && w.eq_ignore_ascii_case(word))
}

/// Whether `word`, in any case, is in `list` (sorted, upper case): a
/// binary search comparing without a copy.
fn listed(list: &[&str], word: &str) -> bool {
    let upper = || word.bytes().map(|b| b.to_ascii_uppercase());
    list.binary_search_by(|w| w.bytes().cmp(upper())).is_ok()
}

/// Whether one execution of the statement `sql` (lexed as `tokens`) may
/// answer several sessions whose database and session state are equal.
/// The caller has already excluded pins, user and system variables and
/// the names hscale answers itself (`Facts`).
pub fn is_shareable(sql: &str, tokens: &[Token]) -> bool {
    for (i, t) in tokens.iter().enumerate() {
        match t.kind {
            TokenKind::Word => {
                let text = t.text(sql);
                if is_never(text) {
                    return false;
                }
                let is_call = tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, "("));
                // `db.f(...)`: a stored function, whatever its name.
                let is_qualified = i > 0 && tokens[i - 1].is_punct(sql, ".");
                if is_call && (is_qualified || !listed(CALLABLE, text)) {
                    return false;
                }
            }
            // `f`(...) or `db`.`f`(...): a stored function.
            TokenKind::QuotedIdent if tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, "(")) => {
                return false
            }
            TokenKind::UserVar | TokenKind::SysVar | TokenKind::Placeholder => return false,
            TokenKind::Semicolon => return false,
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shareable(sql: &str) -> bool {
        is_shareable(sql, &crate::tokenize(sql).unwrap())
    }

    #[test]
    fn never_is_read_by_length() {
        assert!(NEVER
            .iter()
            .all(|w| w.len() < 32 && w.as_bytes()[0].is_ascii_uppercase()));
        for w in NEVER {
            assert!(is_never(w) && is_never(&w.to_ascii_lowercase()), "{w}");
        }
        for w in [
            "SELECT", "c", "id", "sbtest1", "WHERE", "FROM", "INTOX", "UPDATES", "", "_x", "9",
        ] {
            assert!(!is_never(w), "{w}");
        }
    }

    #[test]
    fn lists_are_sorted_upper_case() {
        for list in [NEVER, CALLABLE] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
            assert!(list.iter().all(|w| *w == w.to_ascii_uppercase()));
        }
    }

    #[test]
    fn deterministic_reads_are_shareable() {
        for sql in [
            "SELECT COUNT(*), SUM(k), MAX(c) FROM sbtest1 WHERE id BETWEEN 1 AND 5000",
            "SELECT c FROM sbtest1 WHERE id IN (1, 2, 3) ORDER BY c LIMIT 10",
            "select a, concat(b, 'x') from t where d > date_sub('2020-01-01', interval 1 day)",
            "SELECT CAST(a AS DECIMAL(10, 2)) FROM t WHERE EXISTS (SELECT 1 FROM u)",
            "WITH RECURSIVE c AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT * FROM c",
            "SELECT 'NOW()', `now` FROM t /* RAND() */",
            "SELECT a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY a) FROM t",
            "SELECT updated_at FROM t FORCE INDEX (k)",
        ] {
            assert!(shareable(sql), "{sql}");
        }
    }

    #[test]
    fn volatile_or_session_bound_reads_are_not() {
        for sql in [
            "SELECT NOW(6)",
            "SELECT now()",
            "SELECT SYSDATE()",
            "SELECT CURRENT_TIMESTAMP",
            "SELECT RAND() FROM t",
            "SELECT UUID()",
            "SELECT UUID_SHORT()",
            "SELECT UNIX_TIMESTAMP()",
            "SELECT CONNECTION_ID()",
            "SELECT LAST_INSERT_ID()",
            "SELECT FOUND_ROWS()",
            "SELECT GET_LOCK('a', 1)",
            "SELECT SLEEP(1)",
            "SELECT NEXTVAL(s)",
            "SELECT NEXT VALUE FOR s",
            "SELECT a FROM t FOR UPDATE",
            "SELECT a FROM t LOCK IN SHARE MODE",
            "SELECT a FROM t FOR SHARE",
            "SELECT a INTO OUTFILE '/tmp/x' FROM t",
            "SELECT a INTO @x FROM t",
            "SELECT @x",
            "SELECT @@warning_count",
            "SELECT my_function(a) FROM t",
            "SELECT db.f(a) FROM t",
            "SELECT `f`(a) FROM t",
            "SELECT CURRENT_USER",
            "SELECT USER()",
            "SELECT /*!50000 RAND() */ FROM t",
            "SELECT 1; SELECT 2",
        ] {
            assert!(!shareable(sql), "{sql}");
        }
    }
}
