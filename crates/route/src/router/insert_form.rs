//! The forms of INSERT / REPLACE one server takes that the router splits
//! only as `INSERT INTO t (columns) VALUES (...), ...`: each is turned into
//! that form before ids are filled in and rows routed.
//!
//! - `INSERT INTO t SET a = x, b = y` is `INSERT INTO t (a, b) VALUES (x, y)`
//!   (an expression may name a column set before it in both forms);
//! - `INSERT INTO t VALUES (...)` needs t's column list, which the proxy
//!   reads from t's default partition (`InsertForm::NeedsColumns`);
//! - `INSERT INTO t [(columns)] SELECT ...` that reads or writes a
//!   partitioned table: the proxy runs the SELECT as a read of its own and
//!   inserts the rows it returned as literal VALUES
//!   (`InsertForm::Select`), so the rows go to the partitions of their
//!   keys, ids come from the sequence and LAST_INSERT_ID() is the first of
//!   them, as one server does it.
//!
//! Pure: no I/O. `hscale::exec::insert_form` does the reading.

use hscale_sql::{Token, TokenKind};

use super::refs::table_refs;
use super::{is_any_word, is_name, unquote, Plan};
use crate::dictionary::{Dictionary, TableName, Target};
use crate::known::Known;

/// What the proxy does to an INSERT before it plans it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertForm {
    /// The same statement in the `(columns) VALUES` form.
    Rewritten(String),
    /// No column list: `with_columns(sql, at, columns)` once the columns of
    /// `table` (`physical` on `target`'s backend) are known.
    NeedsColumns {
        table: TableName,
        target: Target,
        at: usize,
    },
    /// `INSERT ... SELECT`: run `select`, then `head VALUES <rows> tail`.
    Select {
        head: String,
        select: String,
        tail: String,
    },
    /// Partition keys given as expressions (`NOW()`, `1 + 2`, `CAST(..)`,
    /// `@k`): `select` evaluates them all at once, in the session's state,
    /// and its values replace the byte ranges `keys` of the statement.
    EvaluateKeys {
        select: String,
        keys: Vec<(usize, usize)>,
    },
}

/// `INSERT ... SELECT` naming a partitioned table (`Plan::InsertSelect`),
/// as it runs: step 1, the SELECT planned like any read and run into the
/// proxy's memory; step 2, `head VALUES <its rows> tail`, planned once the
/// rows are known, so each row goes to the partition of its key, ids come
/// from the sequence and LAST_INSERT_ID() is the first of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertSelect {
    /// The SELECT, as the client wrote it.
    pub select: String,
    /// Its plan: step 1.
    pub read: Plan,
    /// The INSERT before its SELECT, and what follows it (ON DUPLICATE
    /// KEY UPDATE ...): step 2 is `head VALUES <rows> tail`.
    pub head: String,
    pub tail: String,
}

impl InsertSelect {
    /// Step 2's statement, the rows shown as `rows`.
    pub fn write(&self, rows: &str) -> String {
        format!("{} VALUES {rows} {}", self.head, self.tail)
            .trim_end()
            .to_string()
    }
}

/// The plan of `sql` (lexed as `tokens`) when it is an INSERT ... SELECT
/// the proxy runs as a read, then a write (see [`InsertSelect`]).
pub(super) fn insert_select(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
    known: &Known<'_>,
) -> Option<Plan> {
    let first = tokens.first()?;
    if !first.is_word(sql, "INSERT") && !first.is_word(sql, "REPLACE") {
        return None;
    }
    let Some(InsertForm::Select { head, select, tail }) = insert_form(sql, session_db, dict) else {
        return None;
    };
    let read = super::plan(&select, session_db, dict, known);
    // A read the proxy refuses refuses the statement, with its reason.
    if let Plan::Refuse(why) = read {
        return Some(Plan::Refuse(why));
    }
    Some(Plan::InsertSelect(Box::new(InsertSelect {
        select,
        read,
        head,
        tail,
    })))
}

/// The names an `INSERT ... SELECT ... ON DUPLICATE KEY UPDATE` reads in
/// its UPDATE values (outside `VALUES(..)`), and the tables they may name.
/// One server resolves them in the inserted table and the SELECT's
/// tables together: a name both have is its error 1052 ("Column 'qty' in
/// UPDATE is ambiguous"), and a name only the SELECT's tables have reads
/// the SELECT's row. The proxy writes the SELECT's rows as VALUES, where
/// neither holds; `hscale::exec::insert_form` asks the tables' columns
/// and answers as the server would (1052), or refuses (1235).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpsertNames {
    /// The inserted table.
    pub table: TableName,
    /// The SELECT's tables, each with its qualifier.
    pub select_tables: Vec<(TableName, String)>,
    /// `(qualifier, column)` of each name read.
    pub names: Vec<(Option<String>, String)>,
}

/// [`UpsertNames`] of `head SELECT .. tail`; `None` when the tail is no
/// ON DUPLICATE KEY UPDATE, reads no name, or the SELECT's tables are
/// hidden from it (GROUP BY, aggregates, DISTINCT, UNION: the server then
/// resolves the names in the inserted table alone) or not plain tables.
pub fn upsert_names(
    head: &str,
    select: &str,
    tail: &str,
    session_db: Option<&str>,
) -> Option<UpsertNames> {
    let tt = hscale_sql::tokenize(tail).ok()?;
    if !tt.first()?.is_word(tail, "ON") {
        return None;
    }
    let update = tt.iter().position(|x| x.is_word(tail, "UPDATE"))?;
    // Names in the values: after each top-level `=`, up to its `,`.
    let mut names = Vec::new();
    let mut depth = 0i32;
    let mut in_value = false;
    let mut values_depth: Option<i32> = None;
    let mut i = update + 1;
    while let Some(x) = tt.get(i) {
        if x.is_punct(tail, "(") {
            depth += 1;
        } else if x.is_punct(tail, ")") {
            if values_depth == Some(depth) {
                values_depth = None;
            }
            depth -= 1;
        } else if depth == 0 && x.is_punct(tail, ",") {
            in_value = false;
        } else if depth == 0 && x.is_punct(tail, "=") && !in_value {
            in_value = true;
        } else if in_value && values_depth.is_none() && is_name(x) {
            let is_call = tt.get(i + 1).is_some_and(|p| p.is_punct(tail, "("));
            let after_dot = i > 0 && tt[i - 1].is_punct(tail, ".");
            if is_call && (x.is_word(tail, "VALUES") || x.is_word(tail, "VALUE")) {
                values_depth = Some(depth + 1);
            } else if !is_call && !after_dot {
                let dotted = tt.get(i + 1).is_some_and(|d| d.is_punct(tail, "."));
                match (dotted, tt.get(i + 2)) {
                    (true, Some(c)) if is_name(c) => {
                        if tt.get(i + 3).is_some_and(|d| d.is_punct(tail, ".")) {
                            return None;
                        }
                        names.push((Some(unquote(x, tail)), unquote(c, tail)));
                        i += 3;
                        continue;
                    }
                    (true, _) => return None,
                    _ => names.push((None, unquote(x, tail))),
                }
            }
        }
        i += 1;
    }
    if names.is_empty() {
        return None;
    }
    let ht = hscale_sql::tokenize(head).ok()?;
    let into = target_of(head, &ht)?;
    let table = match into.end - into.start {
        1 => TableName::new(session_db?, &unquote(&ht[into.start], head)),
        _ => TableName::new(
            &unquote(&ht[into.start], head),
            &unquote(&ht[into.start + 2], head),
        ),
    };
    let st = hscale_sql::tokenize(select).ok()?;
    let hides = st.iter().any(|x| {
        is_any_word(
            x,
            select,
            &["GROUP", "DISTINCT", "UNION", "INTERSECT", "EXCEPT", "WITH"],
        ) || is_any_word(
            x,
            select,
            &[
                "COUNT",
                "SUM",
                "AVG",
                "MIN",
                "MAX",
                "GROUP_CONCAT",
                "BIT_AND",
                "BIT_OR",
                "BIT_XOR",
                "STD",
                "STDDEV",
                "VARIANCE",
                "JSON_ARRAYAGG",
                "JSON_OBJECTAGG",
            ],
        )
    });
    if hides || !st.first()?.is_word(select, "SELECT") {
        return None;
    }
    let from = st.iter().position(|x| x.is_word(select, "FROM"))?;
    let mut select_tables = Vec::new();
    for (db, name, qualifier) in super::join::from_list(select, &st, from).ok()? {
        select_tables.push((
            TableName::new(db.as_deref().or(session_db)?, &name),
            qualifier,
        ));
    }
    Some(UpsertNames {
        table,
        select_tables,
        names,
    })
}

/// What one server answers for [`UpsertNames`] once the columns of the
/// inserted table (`own`) and of each SELECT table (`theirs`, in order)
/// are known: `Err(Ok(name))` its error 1052 naming `name`, `Err(Err(name))`
/// a name reading the SELECT's row (refused), `Ok(())` nothing to say.
pub fn upsert_resolution(
    u: &UpsertNames,
    own: &[String],
    theirs: &[Vec<String>],
) -> Result<(), Result<String, String>> {
    let has = |cols: &[String], c: &str| cols.iter().any(|x| x.eq_ignore_ascii_case(c));
    for (q, c) in &u.names {
        let (mine, other) = match q {
            Some(q) => (
                q.eq_ignore_ascii_case(&u.table.table) && has(own, c),
                u.select_tables
                    .iter()
                    .zip(theirs)
                    .any(|((_, sq), cols)| sq.eq_ignore_ascii_case(q) && has(cols, c)),
            ),
            None => (has(own, c), theirs.iter().any(|cols| has(cols, c))),
        };
        let shown = match q {
            Some(q) => format!("{q}.{c}"),
            None => c.clone(),
        };
        match (mine, other) {
            (true, true) => return Err(Ok(shown)),
            (false, true) => return Err(Err(shown)),
            _ => {}
        }
    }
    Ok(())
}

/// Where an INSERT's target table is: the token range of `[db .] name`.
struct Into {
    start: usize,
    end: usize,
}

/// The target table of an INSERT / REPLACE: after the modifiers and INTO.
fn target_of(sql: &str, tokens: &[Token]) -> Option<Into> {
    let first = tokens.first()?;
    if !first.is_word(sql, "INSERT") && !first.is_word(sql, "REPLACE") {
        return None;
    }
    let mut i = 1;
    while tokens.get(i).is_some_and(|t| {
        is_any_word(
            t,
            sql,
            &["LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"],
        )
    }) {
        i += 1;
    }
    let start = i;
    if !tokens.get(i).is_some_and(is_name) {
        return None;
    }
    if tokens.get(i + 1).is_some_and(|t| t.is_punct(sql, "."))
        && tokens.get(i + 2).is_some_and(is_name)
    {
        i += 2;
    }
    Some(Into { start, end: i + 1 })
}

/// The index of the `)` closing the `(` at `open`.
fn closing(sql: &str, tokens: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, t) in tokens[open..].iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(open + k);
            }
        }
    }
    None
}

/// The first top-level `ON DUPLICATE KEY UPDATE` or `RETURNING` at or
/// after `from` (the end of the rows or of the SELECT).
fn tail_start(sql: &str, tokens: &[Token], from: usize) -> usize {
    let mut depth = 0usize;
    for (k, t) in tokens.iter().enumerate().skip(from) {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth = depth.saturating_sub(1);
        } else if depth == 0
            && ((t.is_word(sql, "ON")
                && tokens
                    .get(k + 1)
                    .is_some_and(|n| n.is_word(sql, "DUPLICATE")))
                || t.is_word(sql, "RETURNING"))
        {
            return k;
        }
    }
    tokens.len()
}

/// For an INSERT or REPLACE the router takes only in another form: what
/// to do first. `None`: plan it as it is.
pub fn insert_form(sql: &str, session_db: Option<&str>, dict: &Dictionary) -> Option<InsertForm> {
    if dict.is_empty() {
        return None;
    }
    let trimmed = sql.trim_start();
    if trimmed.starts_with(|c: char| c.is_ascii_alphabetic()) {
        let first = trimmed.get(..7).unwrap_or(trimmed).to_ascii_uppercase();
        if !first.starts_with("INSERT") && !first.starts_with("REPLACE") {
            return None;
        }
    }
    let tokens = hscale_sql::tokenize(sql).ok()?;
    if tokens.iter().any(|t| t.kind == TokenKind::Semicolon) {
        return None;
    }
    let target = target_of(sql, &tokens)?;
    let refs = table_refs(sql, &tokens, session_db, dict);
    let into = refs.iter().find(|r| r.start == target.start);
    let mut i = target.end;
    // An alias of the target is not allowed by MariaDB; a PARTITION
    // clause names the server's own partitions: leave both as they are.
    if tokens.get(i).is_some_and(|t| t.is_word(sql, "PARTITION")) {
        return None;
    }
    let columns_at = i;
    let has_columns = tokens.get(i).is_some_and(|t| t.is_punct(sql, "("))
        && !tokens.get(i + 1).is_some_and(|t| {
            t.is_word(sql, "SELECT") || t.is_word(sql, "WITH") || t.is_punct(sql, "(")
        });
    if has_columns {
        i = closing(sql, &tokens, i)? + 1;
    }
    let next = tokens.get(i)?;
    let is_select = next.is_word(sql, "SELECT")
        || next.is_word(sql, "WITH")
        || (next.is_punct(sql, "(")
            && tokens[i..]
                .iter()
                .find(|t| !t.is_punct(sql, "("))
                .is_some_and(|t| t.is_word(sql, "SELECT") || t.is_word(sql, "WITH")));
    if is_select {
        // Only when a partitioned table takes part; one server answers
        // the rest as it is.
        if refs.is_empty() {
            return None;
        }
        let tail = tail_start(sql, &tokens, i);
        if tokens
            .get(tail)
            .is_some_and(|t| t.is_word(sql, "RETURNING"))
        {
            return None;
        }
        let end = tokens.get(tail).map_or(sql.len(), |t| t.start as usize);
        let select_start = next.start as usize;
        return Some(InsertForm::Select {
            head: sql[..select_start].trim_end().to_string(),
            select: sql[select_start..end].trim().to_string(),
            tail: sql[end..].trim().to_string(),
        });
    }
    let table = dict.table(&into?.name)?;
    if next.is_word(sql, "SET") && !has_columns {
        return set_form(sql, &tokens, i).map(InsertForm::Rewritten);
    }
    if has_columns && (next.is_word(sql, "VALUES") || next.is_word(sql, "VALUE")) {
        return key_expressions(sql, &tokens, columns_at, i + 1, &table.column);
    }
    if !has_columns && (next.is_word(sql, "VALUES") || next.is_word(sql, "VALUE")) {
        return Some(InsertForm::NeedsColumns {
            table: table.name.clone(),
            target: table.default_target(),
            at: tokens[columns_at - 1].end as usize,
        });
    }
    None
}

/// The rows' partition keys that are expressions, if any: the column
/// list's `(` is at `open`, the first row's `(` at `rows`.
fn key_expressions(
    sql: &str,
    tokens: &[Token],
    open: usize,
    rows: usize,
    column: &str,
) -> Option<InsertForm> {
    let close = closing(sql, tokens, open)?;
    let key_pos = super::insert::top_level_items(sql, &tokens[open + 1..close])
        .iter()
        .position(|c| {
            c.last()
                .is_some_and(|t| is_name(t) && unquote(t, sql).eq_ignore_ascii_case(column))
        })?;
    let mut keys = Vec::new();
    let mut i = rows;
    while tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
        let end = closing(sql, tokens, i)?;
        let items = super::insert::top_level_items(sql, &tokens[i + 1..end]);
        if let Some(k) = items.get(key_pos) {
            // A constant is routed by what the column makes of it
            // (`insert.rs`, `conversions.rs`), not by what a SELECT of it
            // shows (`2.5e0` is 2 in an INT column, `SELECT 2.5e0` 2.5).
            let is_plain = super::literal(sql, k).is_some()
                || super::syntax::is_constant(sql, k)
                || matches!(k, [t] if t.kind == TokenKind::Placeholder || t.is_word(sql, "DEFAULT"))
                || k.is_empty()
                // Another column's value, or a subquery: not evaluated alone.
                || k.iter().any(|t| {
                    t.is_word(sql, "SELECT") || t.is_word(sql, "VALUES") || t.is_word(sql, "DEFAULT")
                })
                || k.iter().enumerate().any(|(n, t)| {
                    is_name(t)
                        && t.kind == TokenKind::QuotedIdent
                        && !k.get(n + 1).is_some_and(|x| x.is_punct(sql, "("))
                });
            if !is_plain {
                let (a, b) = (k.first()?, k.last()?);
                keys.push((a.start as usize, b.end as usize));
            }
        }
        i = end + 1;
        if tokens.get(i).is_some_and(|t| t.is_punct(sql, ",")) {
            i += 1;
        }
    }
    if keys.is_empty() {
        return None;
    }
    let exprs: Vec<&str> = keys.iter().map(|&(a, b)| &sql[a..b]).collect();
    Some(InsertForm::EvaluateKeys {
        select: format!("SELECT {}", exprs.join(", ")),
        keys,
    })
}

/// The statement with the byte ranges `keys` replaced by `values`.
pub fn with_keys(sql: &str, keys: &[(usize, usize)], values: &[String]) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut at = 0;
    for (&(a, b), v) in keys.iter().zip(values) {
        out.push_str(&sql[at..a]);
        out.push_str(v);
        at = b;
    }
    out.push_str(&sql[at..]);
    out
}

/// `... t SET a = x, b = y [tail]` as `... t (a, b) VALUES (x, y) [tail]`;
/// `set` is the index of SET.
fn set_form(sql: &str, tokens: &[Token], set: usize) -> Option<String> {
    let tail = tail_start(sql, tokens, set + 1);
    let mut columns = Vec::new();
    let mut values = Vec::new();
    let mut depth = 0usize;
    let mut start = set + 1;
    let mut push = |a: usize, b: usize| -> Option<()> {
        let item = &tokens[a..b];
        let eq = item
            .iter()
            .position(|t| t.is_punct(sql, "=") || t.is_punct(sql, ":="))?;
        // `col`, `t.col` or `db.t.col`: the column is the last name.
        let col = item[..eq].last().filter(|c| is_name(c))?;
        if eq == 0 || item[..eq].len().is_multiple_of(2) {
            return None;
        }
        let value = item.get(eq + 1..)?;
        let (first, last) = (value.first()?, value.last()?);
        columns.push(format!("`{}`", unquote(col, sql).replace('`', "``")));
        values.push(&sql[first.start as usize..last.end as usize]);
        Some(())
    };
    for (k, t) in tokens.iter().enumerate().take(tail).skip(set + 1) {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth = depth.checked_sub(1)?;
        } else if depth == 0 && t.is_punct(sql, ",") {
            push(start, k)?;
            start = k + 1;
        }
    }
    push(start, tail)?;
    let head = &sql[..tokens[set].start as usize];
    let rest = tokens.get(tail).map_or("", |t| &sql[t.start as usize..]);
    Some(
        format!(
            "{}({}) VALUES ({}) {rest}",
            head.trim_end().to_string() + " ",
            columns.join(", "),
            values.join(", ")
        )
        .trim_end()
        .to_string(),
    )
}

/// The statement with `(columns)` written at byte `at` (after its table).
pub fn with_columns(sql: &str, at: usize, columns: &[String]) -> String {
    let list: Vec<String> = columns
        .iter()
        .map(|c| format!("`{}`", c.replace('`', "``")))
        .collect();
    format!("{} ({}){}", &sql[..at], list.join(", "), &sql[at..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BackendId, HashingFunction};

    fn orders_dict() -> Dictionary {
        let mut d = Dictionary::default();
        let t = TableName::new("shop", "orders");
        d.setup_table(
            t.clone(),
            "customer_id",
            "orders_default",
            BackendId::MAIN,
            HashingFunction::Mod(4),
        )
        .unwrap();
        d.add_partition(&t, "p1", "1", BackendId::new(1)).unwrap();
        d
    }

    #[test]
    fn set_becomes_values() {
        let d = orders_dict();
        let f = insert_form(
            "INSERT INTO orders SET id = 1, customer_id = (2 + 3), note = 'a,b' ON DUPLICATE KEY UPDATE note = 'x'",
            Some("shop"),
            &d,
        );
        assert_eq!(
            f,
            Some(InsertForm::Rewritten(
                "INSERT INTO orders (`id`, `customer_id`, `note`) VALUES (1, (2 + 3), 'a,b') ON DUPLICATE KEY UPDATE note = 'x'".into()
            ))
        );
    }

    #[test]
    fn key_expressions_are_evaluated() {
        let d = orders_dict();
        let sql = "INSERT INTO orders (id, customer_id) VALUES (1, 1 + 2), (2, 5), (3, CAST('7' AS SIGNED))";
        let Some(InsertForm::EvaluateKeys { select, keys }) = insert_form(sql, Some("shop"), &d)
        else {
            panic!("not evaluated");
        };
        assert_eq!(select, "SELECT 1 + 2, CAST('7' AS SIGNED)");
        assert_eq!(
            with_keys(sql, &keys, &["3".into(), "7".into()]),
            "INSERT INTO orders (id, customer_id) VALUES (1, 3), (2, 5), (3, 7)"
        );
    }

    #[test]
    fn values_without_columns_need_them() {
        let d = orders_dict();
        let sql = "REPLACE INTO shop.orders VALUES (1, 2)";
        let Some(InsertForm::NeedsColumns { at, .. }) = insert_form(sql, None, &d) else {
            panic!("no columns needed");
        };
        assert_eq!(
            with_columns(sql, at, &["id".into(), "customer_id".into()]),
            "REPLACE INTO shop.orders (`id`, `customer_id`) VALUES (1, 2)"
        );
    }

    #[test]
    fn insert_select_is_split() {
        let d = orders_dict();
        let f = insert_form(
            "INSERT IGNORE INTO plain (a, b) SELECT id, customer_id FROM orders WHERE id > 3 ON DUPLICATE KEY UPDATE b = VALUES(b)",
            Some("shop"),
            &d,
        );
        assert_eq!(
            f,
            Some(InsertForm::Select {
                head: "INSERT IGNORE INTO plain (a, b)".into(),
                select: "SELECT id, customer_id FROM orders WHERE id > 3".into(),
                tail: "ON DUPLICATE KEY UPDATE b = VALUES(b)".into(),
            })
        );
        // Nothing partitioned: as it is.
        assert_eq!(
            insert_form("INSERT INTO plain SELECT * FROM other", Some("shop"), &d),
            None
        );
        assert_eq!(
            insert_form(
                "INSERT INTO orders (id, customer_id) VALUES (1, 2)",
                Some("shop"),
                &d
            ),
            None
        );
    }
}
