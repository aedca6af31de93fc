//! Statements about the server whose answer through the proxy is the
//! proxy's own: `SHOW [FULL] PROCESSLIST` and reads of
//! `information_schema.PROCESSLIST` (hscale's client sessions and ids, not
//! the backend's threads), `SHOW VARIABLES` (the limits hscale
//! enforces) and `SHOW [SESSION] STATUS` (`Ssl_cipher` / `Ssl_version` of
//! the client's own TLS session). The proxy answers them by rewriting: the rows it knows go
//! into a derived table the backend evaluates the client's statement on,
//! so every WHERE, ORDER BY or expression works as on a server.
//! `SHOW TABLE STATUS` of a database with partitioned tables becomes the
//! SELECT over information_schema.TABLES it is on a server
//! ([`table_status_sql`]), which the proxy then shows with logical tables.

use crate::lexer::{tokenize, Token, TokenKind};

/// A SHOW statement the proxy rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show<'a> {
    /// `SHOW [FULL] PROCESSLIST`.
    Processlist { is_full: bool },
    /// `SHOW [GLOBAL | SESSION | LOCAL] VARIABLES [LIKE ... | WHERE ...]`:
    /// `filter` is the text after `VARIABLES` (trailing `;` removed).
    Variables { is_global: bool, filter: &'a str },
    /// `SHOW [SESSION | LOCAL] STATUS [LIKE ... | WHERE ...]` (not GLOBAL).
    Status { filter: &'a str },
    /// `SHOW TABLE STATUS [FROM | IN db] [LIKE ... | WHERE ...]`: `db` as
    /// written (see [`ident`]).
    TableStatus {
        db: Option<&'a str>,
        filter: &'a str,
    },
}

/// The tokens of `sql` when it is one SHOW statement (trailing `;`
/// dropped); `None` for anything else (another statement, several, text
/// the lexer refuses). Cheap for the rest: a look at the first word.
pub fn show_tokens(sql: &str) -> Option<Vec<Token>> {
    let head = sql.trim_start();
    if head.len() < 4 || !head.as_bytes()[..4].eq_ignore_ascii_case(b"SHOW") {
        return None;
    }
    let mut tokens = tokenize(sql).ok()?;
    while tokens
        .last()
        .is_some_and(|t| t.kind == TokenKind::Semicolon)
    {
        tokens.pop();
    }
    if tokens.iter().any(|x| x.kind == TokenKind::Semicolon)
        || !tokens.first()?.is_word(sql, "SHOW")
    {
        return None;
    }
    Some(tokens)
}

/// `sql` as one of the SHOW statements of [`Show`], or `None`.
pub fn classify(sql: &str) -> Option<Show<'_>> {
    let tokens = show_tokens(sql)?;
    let t = &tokens[..];
    let words: Vec<&Token> = t.iter().skip(1).take(2).collect();
    match words.as_slice() {
        [p] if p.is_word(sql, "PROCESSLIST") && t.len() == 2 => {
            return Some(Show::Processlist { is_full: false })
        }
        [f, p] if f.is_word(sql, "FULL") && p.is_word(sql, "PROCESSLIST") && t.len() == 3 => {
            return Some(Show::Processlist { is_full: true })
        }
        _ => {}
    }
    if t.get(1).is_some_and(|w| w.is_word(sql, "TABLE"))
        && t.get(2).is_some_and(|w| w.is_word(sql, "STATUS"))
    {
        let mut at = 3;
        let mut db = None;
        if t.get(at)
            .is_some_and(|w| w.is_word(sql, "FROM") || w.is_word(sql, "IN"))
        {
            let name = t
                .get(at + 1)
                .filter(|n| matches!(n.kind, TokenKind::Word | TokenKind::QuotedIdent))?;
            db = Some(name.text(sql));
            at += 2;
        }
        let filter = match t.get(at) {
            None => "",
            Some(n) if n.is_word(sql, "LIKE") || n.is_word(sql, "WHERE") => {
                &sql[n.start as usize..t[t.len() - 1].end as usize]
            }
            Some(_) => return None,
        };
        return Some(Show::TableStatus { db, filter });
    }
    let (is_global, at) = match t.get(1) {
        Some(w) if w.is_word(sql, "GLOBAL") => (true, 2),
        Some(w) if w.is_word(sql, "SESSION") || w.is_word(sql, "LOCAL") => (false, 2),
        _ => (false, 1),
    };
    let v = t.get(at)?;
    let is_status = v.is_word(sql, "STATUS");
    if (is_global || !is_status) && !v.is_word(sql, "VARIABLES") {
        return None;
    }
    let filter = match t.get(at + 1) {
        None => "",
        Some(n) if n.is_word(sql, "LIKE") || n.is_word(sql, "WHERE") => {
            &sql[n.start as usize..t[t.len() - 1].end as usize]
        }
        Some(_) => return None,
    };
    if is_status {
        return Some(Show::Status { filter });
    }
    Some(Show::Variables { is_global, filter })
}

/// An identifier as written (bare or `backquoted`) as the name it means.
pub fn ident(raw: &str) -> String {
    match raw.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        Some(inner) => inner.replace("``", "`"),
        None => raw.to_string(),
    }
}

/// SHOW TABLE STATUS's columns: information_schema.TABLES' column and the
/// name SHOW gives it (MariaDB 10.x), in SHOW's order.
const TABLE_STATUS: &[(&str, &str)] = &[
    ("TABLE_NAME", "Name"),
    ("ENGINE", "Engine"),
    ("VERSION", "Version"),
    ("ROW_FORMAT", "Row_format"),
    ("TABLE_ROWS", "Rows"),
    ("AVG_ROW_LENGTH", "Avg_row_length"),
    ("DATA_LENGTH", "Data_length"),
    ("MAX_DATA_LENGTH", "Max_data_length"),
    ("INDEX_LENGTH", "Index_length"),
    ("DATA_FREE", "Data_free"),
    ("AUTO_INCREMENT", "Auto_increment"),
    ("CREATE_TIME", "Create_time"),
    ("UPDATE_TIME", "Update_time"),
    ("CHECK_TIME", "Check_time"),
    ("TABLE_COLLATION", "Collation"),
    ("CHECKSUM", "Checksum"),
    ("CREATE_OPTIONS", "Create_options"),
    ("TABLE_COMMENT", "Comment"),
    ("MAX_INDEX_LENGTH", "Max_index_length"),
    ("TEMPORARY", "Temporary"),
];

/// A string the planner does not read as a literal naming a table (it
/// reads every string literal of a statement about information_schema as
/// a possible table name): `CONVERT(X'...' USING utf8mb3)`, of
/// information_schema's own character set.
pub fn hidden_literal(s: &str) -> String {
    let hex: String = s.bytes().map(|b| format!("{b:02X}")).collect();
    format!("CONVERT(X'{hex}' USING utf8mb3)")
}

/// A string literal token's value (`'it''s'`, `"a\\b"`).
pub(crate) fn string_value(raw: &str) -> Option<String> {
    let q = raw.chars().next()?;
    let inner = raw.get(1..raw.len().checked_sub(1)?)?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                // `\%` and `\_` stay escaped: LIKE reads them.
                c @ ('%' | '_') => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            },
            c if c == q && chars.peek() == Some(&q) => {
                chars.next();
                out.push(q);
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// A partitioned table's figures summed over its partitions, shown by
/// [`table_status_sql`] in place of one physical table's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summed {
    /// The logical table's name.
    pub table: String,
    pub rows: u64,
    pub avg_row_length: u64,
    pub data_length: u64,
    pub index_length: u64,
    pub data_free: u64,
}

/// `SHOW TABLE STATUS` of database `db` with `filter` (`LIKE 'pattern'`,
/// `WHERE ...` or empty) as the SELECT over information_schema.TABLES
/// that answers it on a server: the same columns, names and types, the
/// rows in the server's order (bytewise by name), a LIKE pattern matched
/// as the server matches table names (case-sensitive unless
/// `lower_case_table_names` is set), and the figures of `summed` tables
/// in place of the row's own. Names are written as [`hidden_literal`]s.
/// `None` for a LIKE without one string.
pub fn table_status_sql(db: &str, filter: &str, summed: &[Summed]) -> Option<String> {
    let case = |pick: fn(&Summed) -> u64, column: &str| {
        if summed.is_empty() {
            return column.to_string();
        }
        let mut s = String::from("CASE");
        for t in summed {
            s.push_str(&format!(
                " WHEN TABLE_NAME = {} THEN CAST({} AS UNSIGNED)",
                hidden_literal(&t.table),
                pick(t)
            ));
        }
        format!("{s} ELSE {column} END")
    };
    let columns: Vec<String> = TABLE_STATUS
        .iter()
        .map(|(column, name)| {
            let expr = match *column {
                "TABLE_ROWS" => case(|t| t.rows, column),
                "AVG_ROW_LENGTH" => case(|t| t.avg_row_length, column),
                "DATA_LENGTH" => case(|t| t.data_length, column),
                "INDEX_LENGTH" => case(|t| t.index_length, column),
                "DATA_FREE" => case(|t| t.data_free, column),
                _ => column.to_string(),
            };
            format!("{expr} AS `{name}`")
        })
        .collect();
    let mut sql = format!(
        "SELECT * FROM (SELECT {} FROM information_schema.TABLES WHERE TABLE_SCHEMA = {}) AS `TABLES`",
        columns.join(", "),
        hidden_literal(db)
    );
    let is_like = filter
        .get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("LIKE"))
        && filter[4..].starts_with(|c: char| c.is_whitespace() || c == '\'');
    if is_like {
        let tokens = tokenize(filter).ok()?;
        let [_, p] = &tokens[..] else {
            return None;
        };
        if p.kind != TokenKind::Str {
            return None;
        }
        let pattern = hidden_literal(&string_value(p.text(filter))?);
        sql.push_str(&format!(
            " WHERE (`Name` COLLATE utf8mb3_bin LIKE {pattern} OR @@lower_case_table_names <> 0 AND `Name` LIKE {pattern})"
        ));
    } else if !filter.is_empty() {
        sql.push(' ');
        sql.push_str(filter);
    }
    sql.push_str(" ORDER BY BINARY `Name`");
    Some(sql)
}

/// Words after a table reference that are not its alias.
const NOT_ALIAS: &[&str] = &[
    "WHERE",
    "ORDER",
    "GROUP",
    "HAVING",
    "LIMIT",
    "JOIN",
    "INNER",
    "LEFT",
    "RIGHT",
    "CROSS",
    "NATURAL",
    "STRAIGHT_JOIN",
    "ON",
    "USING",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "FOR",
    "LOCK",
    "INTO",
    "WINDOW",
    "PROCEDURE",
];

/// Whether token `t` names `name` (a bare or `backquoted` identifier,
/// case-insensitive).
fn is_ident(t: &Token, sql: &str, name: &str) -> bool {
    match t.kind {
        TokenKind::Word => t.text(sql).eq_ignore_ascii_case(name),
        TokenKind::QuotedIdent => t.text(sql).trim_matches('`').eq_ignore_ascii_case(name),
        _ => false,
    }
}

/// `sql` with every table reference `schema.table` (after FROM, JOIN or a
/// comma) replaced by the derived table `(derived)`, aliased `table`
/// unless the reference has an alias of its own; `None` when there is
/// none.
pub fn replace_table(sql: &str, schema: &str, table: &str, derived: &str) -> Option<String> {
    let tokens = tokenize(sql).ok()?;
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 1;
    while i + 2 < tokens.len() {
        let is_ref = is_ident(&tokens[i], sql, schema)
            && tokens.get(i + 1).is_some_and(|d| d.is_punct(sql, "."))
            && tokens.get(i + 2).is_some_and(|n| is_ident(n, sql, table))
            && {
                let p = tokens[i - 1];
                p.is_word(sql, "FROM") || p.is_word(sql, "JOIN") || p.is_punct(sql, ",")
            }
            && !tokens.get(i + 3).is_some_and(|n| n.is_punct(sql, "."));
        if !is_ref {
            i += 1;
            continue;
        }
        let has_alias = tokens.get(i + 3).is_some_and(|n| {
            n.is_word(sql, "AS")
                || n.kind == TokenKind::QuotedIdent
                || (n.kind == TokenKind::Word && !NOT_ALIAS.iter().any(|w| n.is_word(sql, w)))
        });
        out.push_str(&sql[copied..tokens[i].start as usize]);
        out.push('(');
        out.push_str(derived);
        out.push(')');
        if !has_alias {
            out.push_str(" AS `");
            out.push_str(&table.replace('`', "``"));
            out.push('`');
        }
        copied = tokens[i + 2].end as usize;
        i += 3;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&sql[copied..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_show_statements_the_proxy_answers() {
        assert_eq!(
            classify("SHOW PROCESSLIST"),
            Some(Show::Processlist { is_full: false })
        );
        assert_eq!(
            classify(" show full processlist ;"),
            Some(Show::Processlist { is_full: true })
        );
        assert_eq!(classify("SHOW PROCESSLIST; SELECT 1"), None);
        assert_eq!(
            classify("SHOW VARIABLES LIKE 'max_allowed_packet'"),
            Some(Show::Variables {
                is_global: false,
                filter: "LIKE 'max_allowed_packet'"
            })
        );
        assert_eq!(
            classify("show global variables where Variable_name = 'x';"),
            Some(Show::Variables {
                is_global: true,
                filter: "where Variable_name = 'x'"
            })
        );
        assert_eq!(
            classify("SHOW SESSION VARIABLES"),
            Some(Show::Variables {
                is_global: false,
                filter: ""
            })
        );
        assert_eq!(classify("SHOW STATUS"), Some(Show::Status { filter: "" }));
        assert_eq!(
            classify("show session status like 'Ssl_%';"),
            Some(Show::Status {
                filter: "like 'Ssl_%'"
            })
        );
        assert_eq!(
            classify("SHOW LOCAL STATUS WHERE Variable_name = 'x'"),
            Some(Show::Status {
                filter: "WHERE Variable_name = 'x'"
            })
        );
        assert_eq!(classify("SHOW GLOBAL STATUS"), None);
        assert_eq!(classify("SHOW SLAVE STATUS"), None);
        assert_eq!(classify("SHOW TABLES"), None);
        assert_eq!(classify("SELECT 1"), None);
        assert_eq!(
            classify("SHOW TABLE STATUS"),
            Some(Show::TableStatus {
                db: None,
                filter: ""
            })
        );
        assert_eq!(
            classify("show table status from `my db` like 't%';"),
            Some(Show::TableStatus {
                db: Some("`my db`"),
                filter: "like 't%'"
            })
        );
        assert_eq!(
            classify("SHOW TABLE STATUS IN d WHERE Name = 't'"),
            Some(Show::TableStatus {
                db: Some("d"),
                filter: "WHERE Name = 't'"
            })
        );
        assert_eq!(classify("SHOW TABLE STATUS FROM"), None);
        let summed = Summed {
            table: "t".into(),
            rows: 600,
            avg_row_length: 27,
            data_length: 16384,
            index_length: 0,
            data_free: 0,
        };
        let sql = table_status_sql("d", "LIKE 't\\_%'", &[summed]).unwrap_or_default();
        assert!(sql.contains("WHEN TABLE_NAME = CONVERT(X'74' USING utf8mb3) THEN CAST(600 AS UNSIGNED) ELSE TABLE_ROWS END AS `Rows`"), "{sql}");
        assert!(
            sql.contains("TABLE_SCHEMA = CONVERT(X'64' USING utf8mb3)"),
            "{sql}"
        );
        assert!(
            sql.contains("LIKE CONVERT(X'745C5F25' USING utf8mb3)"),
            "{sql}"
        );
        assert_eq!(table_status_sql("d", "LIKE 'a' 'b'", &[]), None);
        assert_eq!(ident("`my ``db`"), "my `db");
        assert_eq!(ident("d"), "d");
    }

    #[test]
    fn replaces_table_references_and_keeps_aliases() {
        let r = |sql| replace_table(sql, "information_schema", "PROCESSLIST", "D");
        assert_eq!(
            r("SELECT * FROM information_schema.PROCESSLIST").as_deref(),
            Some("SELECT * FROM (D) AS `PROCESSLIST`")
        );
        assert_eq!(
            r("select id from INFORMATION_SCHEMA.`processlist` p where p.id = 1").as_deref(),
            Some("select id from (D) p where p.id = 1")
        );
        assert_eq!(
            r("SELECT COUNT(*) FROM information_schema.processlist WHERE 1").as_deref(),
            Some("SELECT COUNT(*) FROM (D) AS `PROCESSLIST` WHERE 1")
        );
        assert_eq!(
            r("SELECT a.x FROM t a JOIN information_schema.PROCESSLIST AS q ON 1").as_deref(),
            Some("SELECT a.x FROM t a JOIN (D) AS q ON 1")
        );
        assert_eq!(r("SELECT 'information_schema.PROCESSLIST'"), None);
        assert_eq!(r("SELECT * FROM information_schema.TABLES"), None);
    }
}
