//! Finding references to partitioned tables in a statement, and writing
//! the physical name of a partition in their place.

use std::borrow::Cow;
use std::collections::HashSet;

use hscale_sql::{Token, TokenKind};

use super::{is_name, skip_parens, unquote};
use crate::dictionary::{Dictionary, TableName, Target};

/// A reference to a partitioned table in the statement.
pub(super) struct TableRef {
    /// Token range of `[db .] table`.
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) name: TableName,
    /// The alias, if the statement gives one.
    pub(super) alias: Option<String>,
}

pub(super) const CLAUSE_WORDS: &[&str] = &[
    "WHERE",
    "GROUP",
    "ORDER",
    "LIMIT",
    "HAVING",
    "FOR",
    "LOCK",
    "SET",
    "VALUES",
    "VALUE",
    "ON",
    "JOIN",
    "INNER",
    "LEFT",
    "RIGHT",
    "CROSS",
    "NATURAL",
    "STRAIGHT_JOIN",
    "UNION",
    "INTO",
    "PROCEDURE",
    "WINDOW",
    "USE",
    "IGNORE",
    "FORCE",
    "PARTITION",
    "SELECT",
    "RETURNING",
    "FETCH",
    "USING",
    "EXCEPT",
    "INTERSECT",
];

/// The statement without the `db.` of column references `db.T.col` to a
/// partitioned table T; `None` when there are none.
pub(super) fn strip_db_qualifiers(
    sql: &str,
    tokens: &[Token],
    dict: &Dictionary,
) -> Option<String> {
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    for i in 0..tokens.len().saturating_sub(4) {
        let [db, d1, t, d2, col] = &tokens[i..i + 5] else {
            continue;
        };
        if is_name(db)
            && d1.is_punct(sql, ".")
            && is_name(t)
            && d2.is_punct(sql, ".")
            && (is_name(col) || col.is_punct(sql, "*"))
            && dict
                .table(&TableName::new(&unquote(db, sql), &unquote(t, sql)))
                .is_some()
        {
            cuts.push((db.start as usize, t.start as usize));
        }
    }
    if cuts.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len());
    let mut at = 0;
    for (a, b) in cuts {
        out.push_str(&sql[at..a]);
        at = b;
    }
    out.push_str(&sql[at..]);
    Some(out)
}

/// Every reference to a partitioned table: a name (or `db . name`) where
/// the statement names a table (`table_starts`), never a column, alias or
/// `t.col` qualifier that happens to be spelled like one. Names are
/// case-sensitive, as table names are on Linux.
pub(super) fn table_refs(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Vec<TableRef> {
    let mut refs: Vec<TableRef> = Vec::new();
    // Most names are not partitioned tables: rule them out without
    // allocating or hashing.
    let table_names: HashSet<&str> = dict.tables().map(|p| p.name.table.as_str()).collect();
    // Common table expressions named like a partitioned table hide it
    // where they are in scope.
    let ctes = if tokens.first().is_some_and(|t| t.is_word(sql, "WITH")) {
        cte_scopes(sql, tokens)
    } else {
        Vec::new()
    };
    for start in table_starts(sql, tokens) {
        let qualified = tokens.get(start + 1).is_some_and(|d| d.is_punct(sql, "."))
            && tokens.get(start + 2).is_some_and(is_name);
        let i = if qualified { start + 2 } else { start };
        let t = &tokens[i];
        let name = match t.kind {
            TokenKind::Word => Cow::Borrowed(t.text(sql)),
            TokenKind::QuotedIdent => Cow::Owned(unquote(t, sql)),
            _ => continue,
        };
        if !table_names.contains(name.as_ref()) {
            continue;
        }
        if !qualified && ctes.iter().any(|c| c.hides(&name, start)) {
            continue;
        }
        let db = match (qualified, session_db) {
            (true, _) => unquote(&tokens[start], sql),
            (false, Some(d)) => d.to_string(),
            (false, None) => continue,
        };
        let Some(table) = dict.table(&TableName::new(&db, &name)) else {
            continue;
        };
        let mut alias = None;
        let mut j = i + 1;
        if tokens.get(j).is_some_and(|n| n.is_word(sql, "AS")) {
            j += 1;
        }
        if let Some(a) = tokens.get(j) {
            let is_clause = a.kind == TokenKind::Word
                && CLAUSE_WORDS
                    .iter()
                    .any(|w| a.text(sql).eq_ignore_ascii_case(w));
            if is_name(a) && !is_clause {
                alias = Some(unquote(a, sql));
            }
        }
        refs.push(TableRef {
            start,
            end: i + 1,
            name: table.name.clone(),
            alias,
        });
    }
    refs
}

/// Words that keep a table name coming (`DELETE QUICK FROM`, `DROP TABLE
/// IF EXISTS t`, `INSERT LOW_PRIORITY IGNORE INTO t`).
const MODIFIERS: &[&str] = &[
    "LOW_PRIORITY",
    "DELAYED",
    "HIGH_PRIORITY",
    "IGNORE",
    "QUICK",
    "IF",
    "NOT",
    "EXISTS",
    "TEMPORARY",
    "ONLY",
    "LATERAL",
    "LOCAL",
    "NO_WRITE_TO_BINLOG",
    "ONLINE",
    "OFFLINE",
];

/// Words that end a list of tables (`FROM a, b WHERE`, `UPDATE a, b SET`).
const LIST_ENDS: &[&str] = &[
    "WHERE",
    "SET",
    "GROUP",
    "ORDER",
    "LIMIT",
    "HAVING",
    "VALUES",
    "VALUE",
    "SELECT",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "WINDOW",
    "PROCEDURE",
    "RETURNING",
    "FETCH",
];

/// The token indices where a table name (`name` or `db . name`) starts:
/// after FROM and the JOINs and commas of its list (and `(` there); after
/// a statement's UPDATE, DELETE (and its USING), INSERT or REPLACE [INTO],
/// TRUNCATE, DESC, EXPLAIN, HANDLER; after INTO, TABLE and TABLES
/// (DROP/RENAME/LOCK/... TABLE lists); after ON in CREATE/DROP INDEX and
/// GRANT, IN in SHOW, LIKE in CREATE TABLE, TO in RENAME/ALTER, REFERENCES.
/// One pass.
pub(super) fn table_starts(sql: &str, t: &[Token]) -> Vec<usize> {
    let upper = |x: &Token| x.text(sql).to_ascii_uppercase();
    let mut out = Vec::new();
    // Per parenthesis level: whether it is a list of tables.
    let mut is_list = vec![false];
    let mut expect = false;
    // The statement's first word, and whether token i starts it (or the
    // statement EXPLAIN / DESC explains).
    let mut first = String::new();
    let mut at_start = true;
    let mut i = 0;
    while i < t.len() {
        let x = &t[i];
        let starts = std::mem::replace(&mut at_start, false);
        if x.kind == TokenKind::Semicolon {
            (is_list, expect, first, at_start) = (vec![false], false, String::new(), true);
            i += 1;
            continue;
        }
        if x.is_punct(sql, "(") {
            // `FROM (a JOIN b)`, `FROM (a, b)`; not a derived table.
            let tables = expect
                && !t
                    .get(i + 1)
                    .is_some_and(|n| n.is_word(sql, "SELECT") || n.is_word(sql, "WITH"));
            is_list.push(tables);
            expect = tables;
            at_start = starts && first.is_empty();
            i += 1;
            continue;
        }
        if x.is_punct(sql, ")") {
            if is_list.len() > 1 {
                is_list.pop();
            }
            expect = false;
            i += 1;
            continue;
        }
        let level = is_list.len() - 1;
        if x.is_punct(sql, ",") {
            expect = is_list[level];
            i += 1;
            continue;
        }
        if x.kind == TokenKind::Word {
            let w = upper(x);
            if first.is_empty() {
                first = w.clone();
            }
            let keyword = match w.as_str() {
                "FROM" => {
                    is_list[level] = true;
                    expect = true;
                    true
                }
                "JOIN" | "STRAIGHT_JOIN" => {
                    expect = is_list[level];
                    true
                }
                "UPDATE" | "DELETE" | "INSERT" | "REPLACE" | "TRUNCATE" | "DESC" | "DESCRIBE"
                | "EXPLAIN" | "HANDLER"
                    if starts =>
                {
                    is_list[level] = matches!(w.as_str(), "UPDATE" | "DELETE");
                    expect = true;
                    // The statement EXPLAIN or DESC explains starts next.
                    at_start = matches!(w.as_str(), "EXPLAIN" | "DESC" | "DESCRIBE");
                    true
                }
                "EXTENDED" | "PARTITIONS" | "ANALYZE" if starts => {
                    at_start = true;
                    true
                }
                "INTO" => {
                    expect = true;
                    true
                }
                "TABLE" | "TABLES" => {
                    is_list[level] = matches!(
                        first.as_str(),
                        "DROP"
                            | "RENAME"
                            | "LOCK"
                            | "FLUSH"
                            | "ANALYZE"
                            | "OPTIMIZE"
                            | "CHECK"
                            | "REPAIR"
                            | "CHECKSUM"
                    );
                    expect = true;
                    true
                }
                "USING" if first == "DELETE" => {
                    is_list[level] = true;
                    expect = true;
                    true
                }
                "ON" if matches!(first.as_str(), "CREATE" | "DROP" | "GRANT" | "REVOKE") => {
                    expect = true;
                    true
                }
                // SHOW COLUMNS / INDEX / KEYS IN t
                "IN" if first == "SHOW" => {
                    expect = true;
                    true
                }
                "LIKE" if first == "CREATE" => {
                    expect = true;
                    true
                }
                "TO" if matches!(first.as_str(), "RENAME" | "ALTER") => {
                    expect = true;
                    true
                }
                "REFERENCES" => {
                    expect = true;
                    true
                }
                w if LIST_ENDS.contains(&w) => {
                    is_list[level] = false;
                    expect = false;
                    true
                }
                w => expect && MODIFIERS.contains(&w),
            };
            if keyword {
                i += 1;
                continue;
            }
        }
        if expect && is_name(x) {
            out.push(i);
            expect = false;
            let qualified = t.get(i + 1).is_some_and(|d| d.is_punct(sql, "."))
                && t.get(i + 2).is_some_and(is_name);
            i += if qualified { 3 } else { 1 };
            continue;
        }
        expect = false;
        i += 1;
    }
    out
}

/// The physical name for one target: `` `db`.`T_p` `` and, where the
/// statement gave no alias, `` AS `T` `` so qualified columns still work.
pub(super) fn physical_name(r: &TableRef, target: &Target, keep_name_as_alias: bool) -> String {
    let mut physical = format!(
        "`{}`.`{}`",
        r.name.db.replace('`', "``"),
        target.physical_table.replace('`', "``")
    );
    if keep_name_as_alias && r.alias.is_none() {
        physical.push_str(&format!(" AS `{}`", r.name.table.replace('`', "``")));
    }
    physical
}

/// `text` with the reference's span replaced by its physical name.
pub(super) fn rewrite(
    text: &str,
    tokens: &[Token],
    r: &TableRef,
    target: &Target,
    keep_name_as_alias: bool,
) -> String {
    let a = tokens[r.start].start as usize;
    let b = tokens[r.end - 1].end as usize;
    format!(
        "{}{}{}",
        &text[..a],
        physical_name(r, target, keep_name_as_alias),
        &text[b..]
    )
}

/// A common table expression of a statement's leading WITH clause: its
/// name hides a table of that name after its body (in the later common
/// table expressions and the statement), and inside its body when the
/// clause is RECURSIVE.
#[derive(Debug)]
struct CteScope {
    name: String,
    /// The token range of its body, parentheses included.
    body: (usize, usize),
    is_recursive: bool,
}

impl CteScope {
    /// Whether an unqualified `name` at token `at` names this expression.
    fn hides(&self, name: &str, at: usize) -> bool {
        self.name.eq_ignore_ascii_case(name)
            && (at >= self.body.1 || (self.is_recursive && at >= self.body.0))
    }
}

/// The common table expressions of `WITH [RECURSIVE] name [(columns)] AS
/// (body), ...`.
fn cte_scopes(sql: &str, tokens: &[Token]) -> Vec<CteScope> {
    let mut out = Vec::new();
    let is_recursive = tokens.get(1).is_some_and(|t| t.is_word(sql, "RECURSIVE"));
    let mut i = 1 + usize::from(is_recursive);
    while let Some(name) = tokens.get(i).filter(|t| is_name(t)) {
        let name = unquote(name, sql);
        i += 1;
        if tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
            i = skip_parens(sql, tokens, i);
        }
        if !tokens.get(i).is_some_and(|t| t.is_word(sql, "AS")) {
            break;
        }
        let start = i + 1;
        i = skip_parens(sql, tokens, start);
        out.push(CteScope {
            name,
            body: (start, i),
            is_recursive,
        });
        if !tokens.get(i).is_some_and(|t| t.is_punct(sql, ",")) {
            break;
        }
        i += 1;
    }
    out
}

/// Every table a statement names where tables go (`table_starts`: DROP,
/// RENAME and TRUNCATE lists, CREATE and ALTER TABLE, RENAME ... TO),
/// with the session's database for an unqualified name (left out
/// without one). The result cache's DDL hook (`exec/cache.rs`).
pub fn tables_named(sql: &str, tokens: &[Token], session_db: Option<&str>) -> Vec<TableName> {
    let mut out: Vec<TableName> = Vec::new();
    for start in table_starts(sql, tokens) {
        let qualified = tokens.get(start + 1).is_some_and(|d| d.is_punct(sql, "."))
            && tokens.get(start + 2).is_some_and(is_name);
        let (db, t) = if qualified {
            (unquote(&tokens[start], sql), &tokens[start + 2])
        } else {
            match session_db {
                Some(d) => (d.to_string(), &tokens[start]),
                None => continue,
            }
        };
        let name = TableName::new(&db, &unquote(t, sql));
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}
