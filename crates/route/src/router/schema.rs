//! Schema statements on partitioned tables and `SHOW TABLES`.

use std::collections::HashSet;

use hscale_sql::{Token, TokenKind};

use super::{
    is_name, is_named, rewrite, unescape, unquote, Maintenance, Plan, StatementKind, TableRef,
};
use crate::dictionary::{Dictionary, PartitionedTable, TableName, Target};

/// `SHOW [FULL] TABLES [FROM | IN db] [LIKE 'pattern']` where `db` has
/// partitioned tables; `None` when this is not such a statement.
pub(super) fn plan_show_tables(
    sql: &str,
    t: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<Plan> {
    if !t.first()?.is_word(sql, "SHOW") {
        return None;
    }
    let mut i = 1;
    let is_full = t.get(i).is_some_and(|x| x.is_word(sql, "FULL"));
    if is_full {
        i += 1;
    }
    if !t.get(i)?.is_word(sql, "TABLES") {
        return None;
    }
    i += 1;
    let mut db = session_db.map(str::to_string);
    if t.get(i)
        .is_some_and(|x| x.is_word(sql, "FROM") || x.is_word(sql, "IN"))
    {
        db = Some(unquote(t.get(i + 1)?, sql));
        i += 2;
    }
    let db = db?;
    if !dict.tables().any(|p| p.name.db == db) && !dict.views().any(|v| v.name.db == db) {
        return None;
    }
    let mut like = None;
    if t.get(i).is_some_and(|x| x.is_word(sql, "LIKE")) {
        let pat = t.get(i + 1).filter(|x| x.kind == TokenKind::Str)?;
        like = Some(unescape(pat.text(sql)));
        i += 2;
    }
    if i != t.len() {
        return Some(Plan::Refuse(format!(
            "SHOW TABLES with WHERE in database {db}, which has partitioned tables, is not supported yet"
        )));
    }
    Some(Plan::ShowTables { db, is_full, like })
}

/// A question to information_schema naming a partitioned table T in a
/// string literal: asked of T's default partition (which has T's columns and
/// indexes) with the literal renamed, and the answer relabeled to T. `None`
/// when no literal names a partitioned table.
pub(super) fn plan_information_schema(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<Plan> {
    if sql.contains(super::info_schema::MARK) {
        return None;
    }
    let literals: Vec<(&Token, String)> = tokens
        .iter()
        .filter(|t| t.kind == TokenKind::Str)
        .map(|t| (t, unescape(t.text(sql))))
        .collect();
    let lowercase: HashSet<String> = literals
        .iter()
        .map(|(_, v)| v.to_ascii_lowercase())
        .collect();
    let named: Vec<&PartitionedTable> = dict
        .tables()
        .filter(|p| lowercase.contains(&p.name.table.to_ascii_lowercase()))
        .collect();
    // The schema must be named too: by a literal, or by DATABASE() when
    // the session's database is T's.
    let uses_current_db = tokens.windows(2).any(|w| {
        (w[0].is_word(sql, "DATABASE") || w[0].is_word(sql, "SCHEMA")) && w[1].is_punct(sql, "(")
    });
    let in_schema = |p: &PartitionedTable| {
        literals.iter().any(|(_, v)| *v == p.name.db)
            || (uses_current_db && session_db == Some(p.name.db.as_str()))
    };
    let table = match named.as_slice() {
        [] => return None,
        [one] if in_schema(one) => *one,
        [one] => {
            return Some(Plan::Refuse(format!(
                "information_schema queries naming partitioned table {} must also name its schema (TABLE_SCHEMA = '{}')",
                one.name.table, one.name.db
            )))
        }
        _ => {
            return Some(Plan::Refuse(
                "information_schema queries about several partitioned tables at once are not supported yet".into(),
            ))
        }
    };
    if !tokens.first()?.is_word(sql, "SELECT") {
        return Some(Plan::Refuse(format!(
            "this information_schema statement about partitioned table {} is not supported",
            table.name
        )));
    }
    // On a default partition away from the main backend, only questions
    // about T itself: anything else would be answered by the wrong server.
    let about_only_t = literals
        .iter()
        .all(|(_, v)| table.name.table.eq_ignore_ascii_case(v) || table.name.db == *v);
    if !table.default_backend.is_main() && !about_only_t {
        return Some(Plan::Refuse(format!(
            "information_schema queries about partitioned table {} together with other objects are not supported (its definition is on another backend)",
            table.name
        )));
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut at = 0;
    for (t, v) in &literals {
        if table.name.table.eq_ignore_ascii_case(v) {
            out.push_str(&sql[at..t.start as usize]);
            out.push('\'');
            out.push_str(
                &table
                    .default_table
                    .replace('\\', "\\\\")
                    .replace('\'', "''"),
            );
            out.push('\'');
            at = t.end as usize;
        }
    }
    out.push_str(&sql[at..]);
    Some(Plan::Relabeled {
        target: table.default_target(),
        sql: out,
        from: table.default_table.clone(),
        to: table.name.table.clone(),
    })
}

/// SQL `LIKE` with `%` and `_` (and `\` escapes), case-sensitive as table
/// names are on Linux. The pattern is the client's: matched in
/// `pattern × name` steps with no recursion and no backtracking.
pub fn like_matches(pattern: &str, s: &str) -> bool {
    enum El {
        Any,
        One,
        Lit(char),
    }
    let mut els = Vec::new();
    let mut p = pattern.chars();
    while let Some(c) = p.next() {
        els.push(match c {
            '%' => El::Any,
            '_' => El::One,
            '\\' => El::Lit(p.next().unwrap_or('\\')),
            c => El::Lit(c),
        });
    }
    let s: Vec<char> = s.chars().collect();
    // `reach[k]`: the pattern so far can match exactly `s[..k]`.
    let mut reach = vec![false; s.len() + 1];
    reach[0] = true;
    for el in &els {
        let mut next = vec![false; s.len() + 1];
        match el {
            El::Any => {
                let mut on = false;
                for (k, r) in reach.iter().enumerate() {
                    on |= *r;
                    next[k] = on;
                }
            }
            El::One => {
                next[1..].copy_from_slice(&reach[..s.len()]);
            }
            El::Lit(c) => {
                for k in 0..s.len() {
                    next[k + 1] = reach[k] && s[k] == *c;
                }
            }
        }
        reach = next;
    }
    reach[s.len()]
}

/// Whether `rest` (an ALTER TABLE's tokens after the table) is exactly one
/// `ADD PRIMARY KEY (...)` or `ADD UNIQUE [KEY | INDEX] [name] (...)`
/// whose columns hold `key`: unique over the whole table, since equal
/// entries have equal keys and so live in one partition.
fn adds_key_holding(sql: &str, rest: &[Token], key: &str) -> bool {
    let word = |i: usize, w: &str| rest.get(i).is_some_and(|t| t.is_word(sql, w));
    if !word(0, "ADD") {
        return false;
    }
    let mut i = if word(1, "PRIMARY") && word(2, "KEY") {
        3
    } else if word(1, "UNIQUE") {
        2 + usize::from(word(2, "KEY") || word(2, "INDEX"))
    } else {
        return false;
    };
    if rest
        .get(i)
        .is_some_and(|t| is_name(t) && !t.is_punct(sql, "("))
    {
        i += 1; // the index's name
    }
    if !rest.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
        return false;
    }
    let end = super::skip_parens(sql, rest, i);
    let columns = &rest[i..end.min(rest.len())];
    // One clause: no comma after the column list.
    columns.iter().any(|t| is_named(t, sql, key))
        && !rest[end.min(rest.len())..]
            .iter()
            .any(|t| t.is_punct(sql, ",") || t.is_word(sql, "PARTITION"))
}

/// Schema statements on a partitioned table: descriptions answered by the
/// default partition, DDL applied to every partition; `None` for the rest.
pub(super) fn plan_schema(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    first: &str,
    selects: usize,
) -> Option<Plan> {
    let before = r
        .start
        .checked_sub(1)
        .map(|p| tokens[p].text(sql).to_ascii_uppercase());
    let word = |w: &str| tokens.iter().any(|t| t.is_word(sql, w));
    let refuse = |what: &str| {
        Some(Plan::Refuse(format!(
            "{what} on partitioned table {} is not supported yet",
            r.name
        )))
    };
    let parts = |targets: Vec<Target>| parts_on(sql, tokens, r, targets);
    let on = |targets: Vec<Target>, kind: StatementKind| {
        Some(Plan::Targets {
            kind,
            parts: parts(targets),
        })
    };
    let change = || {
        Some(Plan::SchemaChange {
            table: r.name.clone(),
            parts: parts(table.all_targets()),
        })
    };
    let mentions_key = tokens.iter().any(|t| is_named(t, sql, &table.column));
    // ALTER TABLE T ... RENAME [TO | AS] U (not RENAME COLUMN / INDEX / KEY)
    let renames_table = tokens.windows(2).any(|w| {
        w[0].is_word(sql, "RENAME")
            && !["COLUMN", "INDEX", "KEY"]
                .iter()
                .any(|k| w[1].is_word(sql, k))
    });
    match first {
        "RENAME" if r.start == 2 && before.as_deref() == Some("TABLE") => {
            renamed(sql, tokens, r, first, false)
                .or_else(|| refuse("RENAME TABLE with several tables"))
        }
        "ALTER" if before.as_deref() == Some("TABLE") && renames_table => {
            renamed(sql, tokens, r, first, true)
                .or_else(|| refuse("ALTER TABLE ... RENAME with other changes"))
        }
        "DESC" | "DESCRIBE" | "EXPLAIN" if r.start == 1 && selects == 0 => {
            on(vec![table.default_target()], StatementKind::Select)
        }
        "SHOW" if word("CREATE") && before.as_deref() == Some("TABLE") && r.end == tokens.len() => {
            Some(Plan::ShowCreate(r.name.clone()))
        }
        "DROP"
            if matches!(before.as_deref(), Some("TABLE" | "EXISTS"))
                && r.end == tokens.len()
                && !word("TEMPORARY") =>
        {
            Some(Plan::DropTable(r.name.clone()))
        }
        "SHOW" => plan_show(sql, tokens, r, table, before.as_deref())
            .or_else(|| refuse("this SHOW statement")),
        "TRUNCATE" if r.start == 1 || before.as_deref() == Some("TABLE") => change(),
        "ALTER" if before.as_deref() == Some("TABLE") => {
            if adds_key_holding(sql, &tokens[r.end..], &table.column) {
                change()
            } else if word("PARTITION") || mentions_key {
                refuse("ALTER TABLE that uses PARTITION or touches the partition key")
            } else if word("UNIQUE") || word("PRIMARY") {
                refuse("a UNIQUE or PRIMARY KEY added by ALTER TABLE (it would only be unique within each partition)")
            } else {
                change()
            }
        }
        "CREATE" if word("INDEX") && before.as_deref() == Some("ON") => {
            // A unique index holding the key column is unique over the
            // whole table: equal entries have equal keys, so one partition.
            let has_key = tokens[r.end..]
                .iter()
                .any(|t| is_named(t, sql, &table.column));
            if word("UNIQUE") && !has_key {
                refuse("a UNIQUE index (it would only be unique within each partition)")
            } else {
                change()
            }
        }
        "DROP" if word("INDEX") && before.as_deref() == Some("ON") => change(),
        "SELECT" | "INSERT" | "REPLACE" | "UPDATE" | "DELETE" => None,
        // Named in their own refusals (`plan_statement`).
        "CREATE" if word("VIEW") => None,
        "LOAD" => None,
        // CREATE TABLE u LIKE t: a plain table with t's definition, which
        // its default partition holds; on the main backend, where plain
        // tables live.
        "CREATE"
            if before.as_deref() == Some("LIKE")
                && tokens
                    .get(r.end)
                    .is_none_or(|t| t.is_punct(sql, ")") && r.end + 1 == tokens.len()) =>
        {
            create_like(sql, tokens, r, table).or_else(|| {
                refuse("CREATE TABLE ... LIKE (no partition of it is on the main backend, where the new table goes)")
            })
        }
        "CREATE" if word("SELECT") => refuse("CREATE TABLE ... SELECT"),
        // Table maintenance: run on every partition, answered with one
        // row set named like the client's table (`Maintenance`).
        "CHECKSUM" | "ANALYZE" | "CHECK" | "OPTIMIZE" | "REPAIR"
            if before.as_deref() == Some("TABLE") =>
        {
            // (A list of several tables is refused in `plan_statement`.)
            Some(Plan::Maintenance(Maintenance {
                table: r.name.clone(),
                is_checksum: first == "CHECKSUM",
                parts: parts(table.all_targets()),
            }))
        }
        _ => refuse(&format!("{first} statements")),
    }
}

/// The statement renamed for each of `targets`.
fn parts_on(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    targets: Vec<Target>,
) -> Vec<(Target, String)> {
    targets
        .into_iter()
        .map(|t| {
            let s = rewrite(sql, tokens, r, &t, false);
            (t, s)
        })
        .collect()
}

/// RENAME TABLE T {TO | AS} [db.]U (`after_rename` false) and ALTER TABLE
/// T RENAME [TO | AS] [db.]U (true): the rename, refused into another
/// database; `None` when the statement is not just that.
fn renamed(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    first: &str,
    after_rename: bool,
) -> Option<Plan> {
    let rest = &tokens[r.end..];
    let name = if after_rename {
        // ALTER TABLE T RENAME [TO | AS] U
        if !rest.first()?.is_word(sql, "RENAME") {
            return None;
        }
        let skip = usize::from(
            rest.get(1)
                .is_some_and(|t| t.is_word(sql, "TO") || t.is_word(sql, "AS")),
        );
        &rest[1 + skip..]
    } else {
        // `... T {TO | AS} [db.]U` ending the statement: the new name.
        let (to, name) = rest.split_first()?;
        if !(to.is_word(sql, "TO") || to.is_word(sql, "AS") && first == "ALTER") {
            return None;
        }
        name
    };
    let to = match name {
        [t] if is_name(t) => TableName::new(&r.name.db, &unquote(t, sql)),
        [db, dot, t] if is_name(db) && dot.is_punct(sql, ".") && is_name(t) => {
            TableName::new(&unquote(db, sql), &unquote(t, sql))
        }
        _ => return None,
    };
    Some(if to.db != r.name.db {
        Plan::Refuse(format!(
            "renaming partitioned table {} into another database is not supported",
            r.name
        ))
    } else {
        Plan::RenameTable {
            from: r.name.clone(),
            to,
        }
    })
}

/// SHOW COLUMNS and SHOW INDEX of a partitioned table, answered by its
/// default partition (the index's table named as the client's); `None`
/// for another SHOW.
fn plan_show(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    before: Option<&str>,
) -> Option<Plan> {
    let word = |w: &str| tokens.iter().any(|t| t.is_word(sql, w));
    let is_columns = word("COLUMNS") || word("FIELDS");
    let has_db_suffix = tokens[r.end..]
        .iter()
        .any(|t| t.is_word(sql, "FROM") || t.is_word(sql, "IN"));
    let is_index = word("INDEX") || word("INDEXES") || word("KEYS");
    if !matches!(before, Some("FROM" | "IN")) || has_db_suffix {
        return None;
    }
    if is_columns {
        Some(Plan::Targets {
            kind: StatementKind::Select,
            parts: parts_on(sql, tokens, r, vec![table.default_target()]),
        })
    } else if is_index {
        let target = table.default_target();
        Some(Plan::Relabeled {
            sql: rewrite(sql, tokens, r, &target, false),
            from: target.physical_table.clone(),
            target,
            to: table.name.table.clone(),
        })
    } else {
        None
    }
}

/// CREATE TABLE u LIKE t: on a partition of t on the main backend (the
/// default partition first), where the new plain table goes; `None` when
/// no partition is there.
fn create_like(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
) -> Option<Plan> {
    // Every partition has the table's definition: the default
    // partition, else any partition on the main backend.
    let target = std::iter::once(table.default_target())
        .chain(table.all_targets())
        .find(|t| t.backend == crate::BackendId::MAIN)?;
    Some(Plan::Targets {
        kind: StatementKind::Schema,
        parts: parts_on(sql, tokens, r, vec![target]),
    })
}
