//! The router: from a statement that names a partitioned table to the
//! partitions it must run on, with the table name rewritten for each.
//!
//! Version 1 handles single-table statements and refuses the rest with a
//! reason (joins, subqueries, unions, schema statements, aggregates or
//! ordering over several partitions). Keys are pruned only on `=` and
//! `IN (...)` with literals, for keys whose comparison is exact (integers,
//! binary strings); for any other key every partition is scanned, which is
//! always correct.

use hscale_sql::{Token, TokenKind};

use crate::dictionary::{Dictionary, PartitionedTable, TableName, Target};
use crate::KeyValue;

/// What to do with a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// It names no partitioned table: send it to the main backend as it is.
    Passthrough,
    /// Run `sql` on each target; several targets: concatenate row results
    /// or add up affected rows.
    Targets {
        kind: StatementKind,
        parts: Vec<(Target, String)>,
    },
    /// A clear reason why hscale does not run it.
    Refuse(String),
    /// `DROP TABLE T`: every physical table and the dictionary entry.
    DropTable(TableName),
    /// `SHOW CREATE TABLE T`: the default partition's definition, named T.
    ShowCreate(TableName),
    /// `SHOW [FULL] TABLES [FROM db] [LIKE 'pattern']` in a database with
    /// partitioned tables: list them, hide their physical tables.
    ShowTables {
        db: String,
        is_full: bool,
        like: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    Select,
    Insert,
    Update,
    Delete,
    /// DDL applied to every partition (TRUNCATE, ALTER TABLE, CREATE/DROP INDEX).
    Schema,
}

/// A reference to a partitioned table in the statement.
struct TableRef {
    /// Token range of `[db .] table`.
    start: usize,
    end: usize,
    name: TableName,
    /// The alias, if the statement gives one.
    alias: Option<String>,
}

fn unquote(t: &Token, sql: &str) -> String {
    let s = t.text(sql);
    if t.kind == TokenKind::QuotedIdent {
        s[1..s.len() - 1].replace("``", "`")
    } else {
        s.to_string()
    }
}

fn is_name(t: &Token) -> bool {
    matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent)
}

const CLAUSE_WORDS: &[&str] = &[
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

/// Plan a statement.
pub fn plan(sql: &str, session_db: Option<&str>, dict: &Dictionary) -> Plan {
    if dict.is_empty() {
        return Plan::Passthrough;
    }
    let Ok(tokens) = hscale_sql::tokenize(sql) else {
        return Plan::Passthrough;
    };
    if let Some(p) = plan_show_tables(sql, &tokens, session_db, dict) {
        return p;
    }
    // Every mention of a partitioned table's name, resolved to a table.
    let mut refs: Vec<TableRef> = Vec::new();
    let mut mentions = 0;
    for (i, t) in tokens.iter().enumerate() {
        if !is_name(t) {
            continue;
        }
        let name = unquote(t, sql);
        let qualified_db = (i >= 2 && tokens[i - 1].is_punct(sql, ".") && is_name(&tokens[i - 2]))
            .then(|| unquote(&tokens[i - 2], sql));
        let db = match (&qualified_db, session_db) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) => d.to_string(),
            (None, None) => continue,
        };
        let candidates: Vec<&PartitionedTable> = dict
            .tables()
            .filter(|p| p.name.table.eq_ignore_ascii_case(&name) && p.name.db == db)
            .collect();
        let Some(table) = candidates.first() else {
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
    if mentions == 0 {
        return Plan::Passthrough;
    }
    let word = |w: &str| tokens.iter().any(|t| t.is_word(sql, w));
    let selects = tokens.iter().filter(|t| t.is_word(sql, "SELECT")).count();
    if refs.len() != 1 {
        return Plan::Refuse(
            "statements that name a partitioned table more than once (joins, self-joins) are not supported yet".into(),
        );
    }
    if word("JOIN")
        || word("UNION")
        || word("STRAIGHT_JOIN")
        || tokens.iter().any(|t| t.kind == TokenKind::Semicolon)
    {
        return Plan::Refuse(
            "joins, unions and multi-statements with partitioned tables are not supported yet"
                .into(),
        );
    }
    let r = &refs[0];
    let Some(table) = dict.table(&r.name) else {
        return Plan::Passthrough;
    };
    let first = tokens
        .first()
        .map(|t| t.text(sql).to_ascii_uppercase())
        .unwrap_or_default();
    if let Some(p) = plan_schema(sql, &tokens, r, table, &first, selects) {
        return p;
    }
    let kind = match first.as_str() {
        "SELECT" => StatementKind::Select,
        "INSERT" | "REPLACE" => StatementKind::Insert,
        "UPDATE" => StatementKind::Update,
        "DELETE" => StatementKind::Delete,
        _ => {
            return Plan::Refuse(format!(
                "{first} statements on partitioned table {} are not supported yet",
                r.name
            ))
        }
    };
    let max_selects = usize::from(kind == StatementKind::Select);
    if selects > max_selects {
        return Plan::Refuse("subqueries on partitioned tables are not supported yet".into());
    }
    // Only one table: the reference must be the only thing in FROM / UPDATE / INTO.
    let before = r
        .start
        .checked_sub(1)
        .map(|p| tokens[p].text(sql).to_ascii_uppercase());
    let ok_position = match kind {
        StatementKind::Select | StatementKind::Delete => before.as_deref() == Some("FROM"),
        StatementKind::Schema => false,
        StatementKind::Update => {
            r.start == 1
                || before.as_deref() == Some("IGNORE")
                || before.as_deref() == Some("LOW_PRIORITY")
        }
        StatementKind::Insert => {
            before.as_deref() == Some("INTO") || before.as_deref() == Some("IGNORE")
        }
    };
    let after_alias = r.end
        + usize::from(r.alias.is_some())
        + usize::from(tokens.get(r.end).is_some_and(|t| t.is_word(sql, "AS")));
    if !ok_position
        || tokens
            .get(after_alias)
            .is_some_and(|t| t.is_punct(sql, ","))
    {
        return Plan::Refuse(format!(
            "only single-table statements on partitioned table {} are supported yet",
            r.name
        ));
    }
    match kind {
        StatementKind::Insert => plan_insert(sql, &tokens, r, table),
        _ => plan_filtered(sql, &tokens, r, table, kind),
    }
}

/// `SHOW [FULL] TABLES [FROM | IN db] [LIKE 'pattern']` where `db` has
/// partitioned tables; `None` when this is not such a statement.
fn plan_show_tables(
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
    if !dict.tables().any(|p| p.name.db == db) {
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

/// SQL `LIKE` with `%` and `_` (and `\` escapes), case-sensitive as table
/// names are on Linux.
pub fn like_matches(pattern: &str, s: &str) -> bool {
    fn go(p: &[char], s: &[char]) -> bool {
        match p.first() {
            None => s.is_empty(),
            Some('%') => (0..=s.len()).any(|k| go(&p[1..], &s[k..])),
            Some('_') => !s.is_empty() && go(&p[1..], &s[1..]),
            Some('\\') if p.len() > 1 => s.first() == Some(&p[1]) && go(&p[2..], &s[1..]),
            Some(c) => s.first() == Some(c) && go(&p[1..], &s[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = s.chars().collect();
    go(&p, &s)
}

/// Schema statements on a partitioned table: descriptions answered by the
/// default partition, DDL applied to every partition; `None` for the rest.
fn plan_schema(
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
    let on = |targets: Vec<Target>, kind: StatementKind| {
        let parts = targets
            .into_iter()
            .map(|t| {
                let s = rewrite(sql, tokens, r, &t, false);
                (t, s)
            })
            .collect();
        Some(Plan::Targets { kind, parts })
    };
    let mentions_key = tokens
        .iter()
        .any(|t| is_name(t) && unquote(t, sql).eq_ignore_ascii_case(&table.column));
    match first {
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
        "SHOW" => {
            let is_columns = word("COLUMNS") || word("FIELDS");
            let has_db_suffix = tokens[r.end..]
                .iter()
                .any(|t| t.is_word(sql, "FROM") || t.is_word(sql, "IN"));
            if is_columns && matches!(before.as_deref(), Some("FROM" | "IN")) && !has_db_suffix {
                on(vec![table.default_target()], StatementKind::Select)
            } else {
                refuse("this SHOW statement")
            }
        }
        "TRUNCATE" if r.start == 1 || before.as_deref() == Some("TABLE") => {
            on(table.all_targets(), StatementKind::Schema)
        }
        "ALTER" if before.as_deref() == Some("TABLE") => {
            if word("RENAME") || word("PARTITION") || mentions_key {
                refuse("ALTER TABLE that renames the table, uses PARTITION or touches the partition key")
            } else {
                on(table.all_targets(), StatementKind::Schema)
            }
        }
        "CREATE" if word("INDEX") && before.as_deref() == Some("ON") => {
            if word("UNIQUE") {
                refuse("a UNIQUE index (it would only be unique within each partition)")
            } else {
                on(table.all_targets(), StatementKind::Schema)
            }
        }
        "DROP" if word("INDEX") && before.as_deref() == Some("ON") => {
            on(table.all_targets(), StatementKind::Schema)
        }
        "SELECT" | "INSERT" | "REPLACE" | "UPDATE" | "DELETE" => None,
        _ => refuse(&format!("{first} statements")),
    }
}

/// The physical name for one target: `` `db`.`T_p` `` and, where the
/// statement gave no alias, `` AS `T` `` so qualified columns still work.
fn physical_name(r: &TableRef, target: &Target, keep_name_as_alias: bool) -> String {
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
fn rewrite(
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

/// SELECT, UPDATE, DELETE: prune by the WHERE clause.
fn plan_filtered(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    kind: StatementKind,
) -> Plan {
    let qualifiers: Vec<&str> = [Some(r.name.table.as_str()), r.alias.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let is_key = |t: &[Token]| -> bool {
        match t {
            [c] => is_name(c) && unquote(c, sql).eq_ignore_ascii_case(&table.column),
            [q, dot, c] => {
                is_name(q)
                    && dot.is_punct(sql, ".")
                    && is_name(c)
                    && qualifiers
                        .iter()
                        .any(|x| unquote(q, sql).eq_ignore_ascii_case(x))
                    && unquote(c, sql).eq_ignore_ascii_case(&table.column)
            }
            _ => false,
        }
    };
    if kind == StatementKind::Update {
        // SET key = ...: the row could belong to another partition afterwards.
        if let Some(set) = tokens.iter().position(|t| t.is_word(sql, "SET")) {
            let end = tokens
                .iter()
                .position(|t| t.is_word(sql, "WHERE"))
                .unwrap_or(tokens.len());
            for (i, t) in tokens[set..end].iter().enumerate() {
                let at = set + i;
                if t.is_punct(sql, "=") {
                    let lhs_start = (set + 1).max(at.saturating_sub(3));
                    let lhs = &tokens[lhs_start..at];
                    let lhs = lhs
                        .iter()
                        .rposition(|x| x.is_punct(sql, ",") || x.is_word(sql, "SET"))
                        .map_or(lhs, |p| &lhs[p + 1..]);
                    if is_key(lhs) {
                        return Plan::Refuse(format!(
                            "UPDATE of the partition key {} of {} is not supported (the row could move to another partition)",
                            table.column, table.name
                        ));
                    }
                }
            }
        }
    }
    let where_at = tokens.iter().position(|t| t.is_word(sql, "WHERE"));
    let values = where_at.and_then(|w| {
        let end = tokens[w + 1..]
            .iter()
            .position(|t| {
                [
                    "GROUP",
                    "ORDER",
                    "LIMIT",
                    "HAVING",
                    "FOR",
                    "LOCK",
                    "INTO",
                    "WINDOW",
                    "PROCEDURE",
                    "RETURNING",
                ]
                .iter()
                .any(|k| t.is_word(sql, k))
            })
            .map_or(tokens.len(), |p| w + 1 + p);
        key_values(sql, &tokens[w + 1..end], &is_key)
    });
    let exact = table.is_key_exact;
    // Integer keys compare numerically: '05' = 5. A literal that is not a
    // plain integer is not pruned on.
    let values = values.and_then(|vs| {
        if !table.is_key_integer {
            return Some(vs);
        }
        vs.into_iter()
            .map(|v| match v {
                KeyValue::Str(s) => s.trim().parse::<i128>().ok().map(KeyValue::Int),
                other => Some(other),
            })
            .collect::<Option<Vec<_>>>()
    });
    let mut targets: Vec<Target> = match values.filter(|_| exact) {
        Some(vs) => {
            let mut ts = Vec::new();
            for v in &vs {
                match table.route(v) {
                    Ok(t) => ts.push(t),
                    // A value the function cannot take (e.g. 'abc' for MOD):
                    // no pruning, scan everything.
                    Err(_) => {
                        ts = table.all_targets();
                        break;
                    }
                }
            }
            ts
        }
        None => table.all_targets(),
    };
    targets.sort();
    targets.dedup();
    if targets.is_empty() {
        targets.push(table.default_target());
    }
    if targets.len() > 1 {
        let depth0_word = |w: &str| tokens.iter().any(|t| t.is_word(sql, w));
        let aggregate = tokens.windows(2).any(|p| {
            p[1].is_punct(sql, "(")
                && [
                    "COUNT",
                    "SUM",
                    "MIN",
                    "MAX",
                    "AVG",
                    "GROUP_CONCAT",
                    "BIT_AND",
                    "BIT_OR",
                    "BIT_XOR",
                    "STD",
                    "STDDEV",
                    "VARIANCE",
                    "JSON_ARRAYAGG",
                    "JSON_OBJECTAGG",
                    "FOUND_ROWS",
                    "ROW_NUMBER",
                    "RANK",
                ]
                .iter()
                .any(|f| p[0].is_word(sql, f))
        });
        let ordering = [
            "ORDER",
            "GROUP",
            "LIMIT",
            "HAVING",
            "DISTINCT",
            "DISTINCTROW",
            "SQL_CALC_FOUND_ROWS",
            "INTO",
            "OFFSET",
            "WINDOW",
        ]
        .iter()
        .any(|w| depth0_word(w));
        if aggregate || ordering {
            return Plan::Refuse(format!(
                "this statement needs {} partitions of {} merged (ordering, grouping, limits or aggregates across partitions are not supported yet); restrict it to one partition with {} = <value>",
                targets.len(),
                table.name,
                table.column
            ));
        }
    }
    let keep_alias = kind != StatementKind::Delete;
    let parts = targets
        .into_iter()
        .map(|t| {
            let s = rewrite(sql, tokens, r, &t, keep_alias);
            (t, s)
        })
        .collect();
    Plan::Targets { kind, parts }
}

/// The key values a WHERE clause limits the statement to, or `None` if it
/// does not (only top-level AND-ed `key = literal` / `key IN (literals)`).
fn key_values(
    sql: &str,
    cond: &[Token],
    is_key: &dyn Fn(&[Token]) -> bool,
) -> Option<Vec<KeyValue>> {
    let mut conjuncts: Vec<&[Token]> = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, t) in cond.iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 {
            if t.is_word(sql, "OR") || t.is_word(sql, "XOR") || t.is_punct(sql, "||") {
                return None;
            }
            if t.is_word(sql, "AND") || t.is_punct(sql, "&&") {
                conjuncts.push(&cond[start..i]);
                start = i + 1;
            }
        }
    }
    conjuncts.push(&cond[start..]);
    let mut result: Option<Vec<KeyValue>> = None;
    for c in conjuncts {
        let found = conjunct_values(sql, c, is_key);
        if let Some(vs) = found {
            result = Some(match result {
                None => vs,
                Some(prev) => prev.into_iter().filter(|v| vs.contains(v)).collect(),
            });
        }
    }
    result
}

fn literal(sql: &str, t: &[Token]) -> Option<KeyValue> {
    match t {
        [l] if l.kind == TokenKind::Str => Some(KeyValue::Str(unescape(l.text(sql)))),
        [l] if l.kind == TokenKind::Number => number(l.text(sql), false),
        [m, l] if m.is_punct(sql, "-") && l.kind == TokenKind::Number => number(l.text(sql), true),
        [l] if l.is_word(sql, "NULL") => Some(KeyValue::Null),
        _ => None,
    }
}

fn number(text: &str, negative: bool) -> Option<KeyValue> {
    // Only plain integers; decimals, exponents and hex are not pruned.
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i128 = text.parse().ok()?;
    Some(KeyValue::Int(if negative { -v } else { v }))
}

/// The text of a quoted string literal.
fn unescape(q: &str) -> String {
    let quote = q.chars().next().unwrap_or('\'');
    let inner = &q[1..q.len().saturating_sub(1).max(1)];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('0') => out.push('\0'),
                Some('Z') => out.push('\x1a'),
                Some('b') => out.push('\x08'),
                Some(other) => out.push(other),
                None => {}
            }
        } else if c == quote && chars.peek() == Some(&quote) {
            chars.next();
            out.push(quote);
        } else {
            out.push(c);
        }
    }
    out
}

fn conjunct_values(
    sql: &str,
    c: &[Token],
    is_key: &dyn Fn(&[Token]) -> bool,
) -> Option<Vec<KeyValue>> {
    // key = lit, lit = key
    if let Some(eq) = c.iter().position(|t| t.is_punct(sql, "=")) {
        let (l, r) = (&c[..eq], &c[eq + 1..]);
        if is_key(l) {
            return literal(sql, r).map(|v| vec![v]);
        }
        if is_key(r) {
            return literal(sql, l).map(|v| vec![v]);
        }
        return None;
    }
    // key IN (lit, ...)
    let in_at = c.iter().position(|t| t.is_word(sql, "IN"))?;
    if !is_key(&c[..in_at]) {
        return None;
    }
    let list = &c[in_at + 1..];
    if list.len() < 3 || !list[0].is_punct(sql, "(") || !list[list.len() - 1].is_punct(sql, ")") {
        return None;
    }
    let mut out = Vec::new();
    for item in list[1..list.len() - 1].split(|t| t.is_punct(sql, ",")) {
        out.push(literal(sql, item)?);
    }
    Some(out)
}

/// INSERT / REPLACE ... VALUES: split the rows by partition.
fn plan_insert(sql: &str, tokens: &[Token], r: &TableRef, table: &PartitionedTable) -> Plan {
    let refuse = |why: &str| Plan::Refuse(format!("{why} (partitioned table {})", table.name));
    let mut i = r.end;
    if !tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
        return refuse("INSERT must list its columns, including the partition key");
    }
    let close = match tokens[i..].iter().position(|t| t.is_punct(sql, ")")) {
        Some(p) => i + p,
        None => return refuse("unreadable column list"),
    };
    let columns: Vec<String> = tokens[i + 1..close]
        .split(|t| t.is_punct(sql, ","))
        .map(|c| c.last().map(|t| unquote(t, sql)).unwrap_or_default())
        .collect();
    let Some(key_pos) = columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case(&table.column))
    else {
        return refuse(&format!(
            "INSERT without the partition key column {}",
            table.column
        ));
    };
    i = close + 1;
    if !tokens
        .get(i)
        .is_some_and(|t| t.is_word(sql, "VALUES") || t.is_word(sql, "VALUE"))
    {
        return refuse("only INSERT ... VALUES is supported");
    }
    i += 1;
    // Each row: ( ... ) at depth 1, separated by commas.
    let mut rows: Vec<(usize, usize)> = Vec::new();
    loop {
        if !tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
            return refuse("unreadable VALUES row");
        }
        let mut depth = 0;
        let mut end = None;
        for (k, t) in tokens[i..].iter().enumerate() {
            if t.is_punct(sql, "(") {
                depth += 1;
            } else if t.is_punct(sql, ")") {
                depth -= 1;
                if depth == 0 {
                    end = Some(i + k);
                    break;
                }
            }
        }
        let Some(end) = end else {
            return refuse("unreadable VALUES row");
        };
        rows.push((i, end));
        i = end + 1;
        if tokens.get(i).is_some_and(|t| t.is_punct(sql, ",")) {
            i += 1;
            continue;
        }
        break;
    }
    let tail_start = i;
    if tokens[tail_start..]
        .iter()
        .any(|t| t.is_word(sql, "SELECT") || t.is_word(sql, "RETURNING"))
    {
        return refuse("INSERT ... SELECT and RETURNING are not supported yet");
    }
    // ON DUPLICATE KEY UPDATE key = ... would move the row.
    if let Some(up) = tokens[tail_start..]
        .iter()
        .position(|t| t.is_word(sql, "UPDATE"))
    {
        let after = &tokens[tail_start + up + 1..];
        let assigns_key = after.split(|t| t.is_punct(sql, ",")).any(|a| {
            a.first()
                .is_some_and(|c| is_name(c) && unquote(c, sql).eq_ignore_ascii_case(&table.column))
                && a.get(1).is_some_and(|e| e.is_punct(sql, "="))
        });
        if assigns_key {
            return refuse("ON DUPLICATE KEY UPDATE of the partition key is not supported");
        }
    }
    // Group rows by target, keeping their order.
    let mut groups: Vec<(Target, Vec<(usize, usize)>)> = Vec::new();
    for (a, b) in rows {
        let values: Vec<&[Token]> = tokens[a + 1..b].split(|t| t.is_punct(sql, ",")).collect();
        if values.len() != columns.len() {
            return refuse("a VALUES row has a different number of values than columns");
        }
        let Some(mut v) = literal(sql, values[key_pos]) else {
            return refuse("the partition key value must be a literal");
        };
        if table.is_key_integer {
            if let KeyValue::Str(text) = &v {
                match text.trim().parse::<i128>() {
                    Ok(i) => v = KeyValue::Int(i),
                    Err(_) => return refuse("the partition key value must be an integer"),
                }
            }
        }
        let target = match table.route(&v) {
            Ok(t) => t,
            Err(e) => return Plan::Refuse(e.to_string()),
        };
        match groups.iter_mut().find(|g| g.0 == target) {
            Some(g) => g.1.push((a, b)),
            None => groups.push((target, vec![(a, b)])),
        }
    }
    let head_end = tokens[rows_first_start(tokens, sql, r)].start as usize;
    let tail = tokens
        .get(tail_start)
        .map_or("", |t| &sql[t.start as usize..]);
    let parts = groups
        .into_iter()
        .map(|(target, rows)| {
            let head = rewrite(&sql[..head_end], tokens, r, &target, false);
            let values: Vec<&str> = rows
                .iter()
                .map(|&(a, b)| &sql[tokens[a].start as usize..tokens[b].end as usize])
                .collect();
            let s = format!("{head}{} {tail}", values.join(", "));
            (target, s.trim_end().to_string())
        })
        .collect();
    Plan::Targets {
        kind: StatementKind::Insert,
        parts,
    }
}

/// Index of the first VALUES row's `(`.
fn rows_first_start(tokens: &[Token], sql: &str, r: &TableRef) -> usize {
    let values_kw = tokens[r.end..]
        .iter()
        .position(|t| t.is_word(sql, "VALUES") || t.is_word(sql, "VALUE"))
        .map_or(tokens.len() - 1, |p| r.end + p);
    (values_kw + 1).min(tokens.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashingFunction;

    fn dict() -> Dictionary {
        let mut d = Dictionary::default();
        let t = TableName::new("app", "orders");
        d.setup_table(
            t.clone(),
            "customer_id",
            "orders_default",
            0,
            HashingFunction::Mod(4),
        )
        .unwrap();
        d.add_partition(&t, "p1", "1", 1).unwrap();
        d.add_partition(&t, "p2", "2", 2).unwrap();
        d.set_key_exact(&t, true);
        d
    }

    fn parts(p: Plan) -> Vec<(usize, String)> {
        match p {
            Plan::Targets { parts, .. } => parts.into_iter().map(|(t, s)| (t.backend, s)).collect(),
            other => panic!("expected targets, got {other:?}"),
        }
    }

    #[test]
    fn single_partition_select_is_rewritten() {
        let d = dict();
        let p = plan(
            "SELECT * FROM orders WHERE customer_id = 5 AND x > 1",
            Some("app"),
            &d,
        );
        assert_eq!(
            parts(p),
            vec![(
                1,
                "SELECT * FROM `app`.`orders_p1` AS `orders` WHERE customer_id = 5 AND x > 1"
                    .to_string()
            )]
        );
        let p = plan(
            "SELECT o.id FROM app.orders o WHERE o.customer_id IN (2, 6)",
            None,
            &d,
        );
        assert_eq!(
            parts(p),
            vec![(
                2,
                "SELECT o.id FROM `app`.`orders_p2` o WHERE o.customer_id IN (2, 6)".to_string()
            )]
        );
        assert_eq!(
            plan("SELECT * FROM other", Some("app"), &d),
            Plan::Passthrough
        );
        assert_eq!(
            plan("SELECT * FROM orders", Some("elsewhere"), &d),
            Plan::Passthrough
        );
    }

    #[test]
    fn full_scans_and_refusals() {
        let d = dict();
        let p = plan(
            "SELECT id FROM orders WHERE customer_id > 3",
            Some("app"),
            &d,
        );
        assert_eq!(parts(p).len(), 3);
        let p = plan(
            "SELECT id FROM orders WHERE customer_id = 1 OR customer_id = 2",
            Some("app"),
            &d,
        );
        assert_eq!(parts(p).len(), 3);
        for sql in [
            "SELECT COUNT(*) FROM orders",
            "SELECT id FROM orders ORDER BY id",
            "SELECT id FROM orders LIMIT 1",
            "SELECT * FROM orders JOIN c ON c.id = orders.customer_id",
            "SELECT * FROM orders WHERE id IN (SELECT id FROM x)",
            "UPDATE orders SET customer_id = 3 WHERE customer_id = 1",
            "INSERT INTO orders VALUES (1, 2)",
            "INSERT INTO orders (id) VALUES (1)",
            "SELECT * FROM orders, other",
            "ALTER TABLE orders RENAME TO x",
            "ALTER TABLE orders MODIFY customer_id BIGINT",
            "CREATE UNIQUE INDEX u ON orders (id)",
            "DROP TABLE orders, other",
        ] {
            assert!(
                matches!(plan(sql, Some("app"), &d), Plan::Refuse(_)),
                "{sql}"
            );
        }
        // One partition: ordering and aggregates are fine.
        assert_eq!(
            parts(plan(
                "SELECT COUNT(*) FROM orders WHERE customer_id = 9 ORDER BY 1",
                Some("app"),
                &d
            ))
            .len(),
            1
        );
    }

    #[test]
    fn schema_statements() {
        let d = dict();
        let p = parts(plan("DESC orders", Some("app"), &d));
        assert_eq!(p, vec![(0, "DESC `app`.`orders_default`".to_string())]);
        let p = parts(plan(
            "SHOW FULL COLUMNS FROM orders LIKE 'id'",
            Some("app"),
            &d,
        ));
        assert_eq!(
            p,
            vec![(
                0,
                "SHOW FULL COLUMNS FROM `app`.`orders_default` LIKE 'id'".to_string()
            )]
        );
        assert_eq!(
            parts(plan("TRUNCATE TABLE orders", Some("app"), &d)).len(),
            3
        );
        let p = parts(plan(
            "ALTER TABLE orders ADD COLUMN note TEXT",
            Some("app"),
            &d,
        ));
        assert_eq!(
            p[1],
            (
                1,
                "ALTER TABLE `app`.`orders_p1` ADD COLUMN note TEXT".to_string()
            )
        );
        assert_eq!(
            parts(plan("CREATE INDEX i ON orders (id)", Some("app"), &d)).len(),
            3
        );
        assert_eq!(
            parts(plan("DROP INDEX i ON orders", Some("app"), &d)).len(),
            3
        );
        let t = TableName::new("app", "orders");
        assert_eq!(
            plan("DROP TABLE IF EXISTS orders", Some("app"), &d),
            Plan::DropTable(t.clone())
        );
        assert_eq!(
            plan("DROP TABLE orders", Some("app"), &d),
            Plan::DropTable(t.clone())
        );
        assert_eq!(
            plan("SHOW CREATE TABLE app.orders", None, &d),
            Plan::ShowCreate(t)
        );
    }

    #[test]
    fn show_tables() {
        let d = dict();
        assert_eq!(
            plan("SHOW FULL TABLES LIKE 'ord%'", Some("app"), &d),
            Plan::ShowTables {
                db: "app".into(),
                is_full: true,
                like: Some("ord%".into())
            }
        );
        assert_eq!(plan("SHOW TABLES", Some("other"), &d), Plan::Passthrough);
        assert!(matches!(
            plan("SHOW TABLES FROM app WHERE x", None, &d),
            Plan::Refuse(_)
        ));
        assert!(like_matches("ord%", "orders"));
        assert!(like_matches("o_ders", "orders"));
        assert!(!like_matches("Ord%", "orders"));
        assert!(like_matches("a\\_b", "a_b") && !like_matches("a\\_b", "axb"));
    }

    #[test]
    fn inserts_are_split_by_partition() {
        let d = dict();
        let p = plan("INSERT INTO orders (id, customer_id) VALUES (1, 1), (2, 2), (3, 5), (4, 3) ON DUPLICATE KEY UPDATE id = id", Some("app"), &d);
        assert_eq!(
            parts(p),
            vec![
                (1, "INSERT INTO `app`.`orders_p1` (id, customer_id) VALUES (1, 1), (3, 5) ON DUPLICATE KEY UPDATE id = id".to_string()),
                (2, "INSERT INTO `app`.`orders_p2` (id, customer_id) VALUES (2, 2) ON DUPLICATE KEY UPDATE id = id".to_string()),
                (0, "INSERT INTO `app`.`orders_default` (id, customer_id) VALUES (4, 3) ON DUPLICATE KEY UPDATE id = id".to_string()),
            ]
        );
        assert!(matches!(
            plan(
                "INSERT INTO orders (id, customer_id) VALUES (1, 'x')",
                Some("app"),
                &d
            ),
            Plan::Refuse(_)
        ));
    }

    #[test]
    fn inexact_keys_are_never_pruned() {
        let mut d = dict();
        d.set_key_exact(&TableName::new("app", "orders"), false);
        assert_eq!(
            parts(plan(
                "SELECT * FROM orders WHERE customer_id = 5",
                Some("app"),
                &d
            ))
            .len(),
            3
        );
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;
    use crate::HashingFunction;

    #[test]
    fn int_key_type_prunes_with_order_by() {
        let mut d = Dictionary::default();
        let t = TableName::new("part_route", "orders");
        d.setup_table(
            t.clone(),
            "customer_id",
            "orders_default",
            0,
            HashingFunction::Mod(4),
        )
        .unwrap();
        d.set_key_type(&t, "int");
        d.add_partition(&t, "p1", "1", 1).unwrap();
        d.add_partition(&t, "p2", "2", 2).unwrap();
        let p = plan(
            "SELECT id FROM orders WHERE customer_id = 6 ORDER BY amount DESC, id LIMIT 3",
            Some("part_route"),
            &d,
        );
        assert!(
            matches!(&p, Plan::Targets { parts, .. } if parts.len() == 1),
            "{p:?}"
        );
    }
}
