//! Finding references to partitioned tables in a statement, and writing
//! the physical name of a partition in their place.

use std::borrow::Cow;
use std::collections::HashSet;

use hscale_sql::{Token, TokenKind};

use super::{is_name, unquote};
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

/// Every reference to a partitioned table (table positions, not `t.col`
/// qualifiers), and how often any partitioned table's name is mentioned.
/// Names are case-sensitive, as table names are on Linux.
pub(super) fn table_refs(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> (Vec<TableRef>, usize) {
    let mut refs: Vec<TableRef> = Vec::new();
    let mut mentions = 0;
    // Most names are not partitioned tables: rule them out without
    // allocating or hashing.
    let table_names: HashSet<&str> = dict.tables().map(|p| p.name.table.as_str()).collect();
    for (i, t) in tokens.iter().enumerate() {
        let name = match t.kind {
            TokenKind::Word => Cow::Borrowed(t.text(sql)),
            TokenKind::QuotedIdent => Cow::Owned(unquote(t, sql)),
            _ => continue,
        };
        if !table_names.contains(name.as_ref()) {
            continue;
        }
        let qualified_db = (i >= 2 && tokens[i - 1].is_punct(sql, ".") && is_name(&tokens[i - 2]))
            .then(|| unquote(&tokens[i - 2], sql));
        let db = match (&qualified_db, session_db) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) => d.to_string(),
            (None, None) => continue,
        };
        let Some(table) = dict.table(&TableName::new(&db, &name)) else {
            continue;
        };
        mentions += 1;
        // `t.col`: a column qualifier, not a table reference.
        if tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, ".")) {
            continue;
        }
        let start = if qualified_db.is_some() { i - 2 } else { i };
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
    (refs, mentions)
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
