//! UPDATE that assigns the partition key, with one server's meaning: a
//! row whose new key belongs to another partition moves there, with its
//! other columns as the UPDATE left them, in one transaction.
//!
//! ```text
//!  UPDATE t SET .., key = E, .. WHERE w
//!    1. SELECT t.key, (E) FROM t WHERE w FOR UPDATE   (each row's key now
//!       and after; locked, so step 3 writes the same rows)
//!    2. movers: rows whose new key routes elsewhere (`key_moves`)
//!    3. the UPDATE on its partitions, as it is: the server computes every
//!       new value (its affected rows and info are the statement's)
//!    4. per source partition p with movers: the moved rows read from p by
//!       their new keys (no other row of p has such a key: every row of p
//!       routes to p), INSERTed into the table (routed by their new keys),
//!       then DELETEd from p
//! ```
//!
//! All steps run in one transaction (its own in autocommit, behind the
//! statement savepoint inside the client's): the session's
//! `session/key_move.rs`. Shapes whose new keys step 1 cannot compute as
//! step 3 stores them are refused ([`refusal`]).

use hscale_sql::{Token, TokenKind};

use super::{is_any_word, is_name, unquote, Plan, TableRef};
use crate::dictionary::{PartitionedTable, TableName, Target};
use crate::known::Known;
use crate::KeyValue;

/// An UPDATE that may move rows between partitions (see the module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMove {
    pub table: TableName,
    /// Step 1: two columns, each matched row's key and its new key.
    pub select: String,
    /// Step 3: the UPDATE on each partition it may match.
    pub parts: Vec<(Target, String)>,
}

/// A token range `[start, end)`.
pub(super) type Span = (usize, usize);

/// One assignment of a SET clause: its target column and its value.
pub(super) type Assignment = (Span, Span);

/// The rows moving out of each partition, by their new keys (`None`:
/// NULL).
pub type Moves = Vec<(Target, Vec<Option<String>>)>;

/// Functions whose value differs between step 1 and step 3, or that read
/// or change session state.
const VOLATILE: &[&str] = &[
    "RAND",
    "UUID",
    "UUID_SHORT",
    "SYS_GUID",
    "SYSDATE",
    "NOW",
    "CURRENT_TIMESTAMP",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "CURTIME",
    "CURRENT_TIME",
    "CURDATE",
    "CURRENT_DATE",
    "UTC_TIMESTAMP",
    "UTC_TIME",
    "UTC_DATE",
    "UNIX_TIMESTAMP",
    "NEXTVAL",
    "NEXT",
    "LASTVAL",
    "SETVAL",
    "LAST_INSERT_ID",
    "ROW_COUNT",
    "FOUND_ROWS",
    "CONNECTION_ID",
    "SLEEP",
    "GET_LOCK",
    "SELECT",
];

/// The SET clause's assignments at the statement's own level: for each,
/// the token range of its target column and of its value.
pub(super) fn assignments(sql: &str, tokens: &[Token], set_at: usize) -> Vec<Assignment> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = set_at + 1;
    let mut eq = None;
    let mut i = set_at + 1;
    while i <= tokens.len() {
        let t = tokens.get(i);
        let ends = match t {
            None => true,
            Some(t) if depth == 0 => {
                t.is_punct(sql, ",") || is_any_word(t, sql, &["WHERE", "ORDER", "LIMIT"])
            }
            Some(_) => false,
        };
        if ends {
            if let Some(e) = eq {
                out.push(((start, e), (e + 1, i)));
            }
            if t.is_some_and(|t| !t.is_punct(sql, ",")) {
                break;
            }
            start = i + 1;
            eq = None;
        } else if let Some(t) = t {
            if t.is_punct(sql, "(") {
                depth += 1;
            } else if t.is_punct(sql, ")") {
                depth -= 1;
            } else if depth == 0 && eq.is_none() && (t.is_punct(sql, "=") || t.is_punct(sql, ":="))
            {
                eq = Some(i);
            }
        }
        i += 1;
    }
    out
}

/// Why an UPDATE assigning the key cannot be run exactly by moving rows;
/// `None` when it can. `key_at`: the assignment of the key, of `list`.
fn refusal(
    sql: &str,
    tokens: &[Token],
    list: &[Assignment],
    key_at: usize,
    table: &PartitionedTable,
) -> Option<String> {
    let what = format!(
        "UPDATE of the partition key {} of {}",
        table.column, table.name
    );
    if tokens.iter().any(|t| t.kind == TokenKind::Placeholder) {
        return Some(format!("a prepared {what} (run it as a text statement)"));
    }
    if tokens.iter().take(4).any(|t| t.is_word(sql, "IGNORE")) {
        return Some(format!("{what} with IGNORE"));
    }
    if tokens.iter().any(|t| t.kind == TokenKind::Semicolon) {
        return Some(format!("{what} among several statements"));
    }
    let key_column = |(a, b): Span| tokens[a..b].last().map(|t| unquote(t, sql));
    let is_key =
        |span: Span| key_column(span).is_some_and(|c| c.eq_ignore_ascii_case(&table.column));
    if list.iter().filter(|(lhs, _)| is_key(*lhs)).count() > 1 {
        return Some(format!("{what} assigned twice"));
    }
    let (_, (a, b)) = list[key_at];
    let value = &tokens[a..b];
    if value.iter().any(|t| {
        matches!(t.kind, TokenKind::UserVar | TokenKind::SysVar) || is_any_word(t, sql, VOLATILE)
    }) {
        return Some(format!(
            "{what} to a value with a subquery, a variable or a function whose value changes ({})",
            VOLATILE.join(", ")
        ));
    }
    // One server evaluates assignments in order: a column assigned before
    // the key has its new value in the key's expression.
    let earlier: Vec<String> = list[..key_at]
        .iter()
        .filter_map(|(lhs, _)| key_column(*lhs))
        .collect();
    if let Some(c) = value
        .iter()
        .filter(|t| is_name(t))
        .map(|t| unquote(t, sql))
        .find(|n| earlier.iter().any(|e| e.eq_ignore_ascii_case(n)))
    {
        return Some(format!(
            "{what} to a value computed from column {c}, which the same SET assigns before it (assign the key first)"
        ));
    }
    None
}

/// The plan of an UPDATE of `table` that assigns its key (`eq_at`: the
/// token of that assignment's `=`), whose in-place statement on each
/// partition is `parts`; a refusal when it cannot be run exactly.
pub(super) fn plan(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    eq_at: usize,
    parts: Vec<(Target, String)>,
) -> Plan {
    let Some(set_at) = tokens.iter().position(|t| t.is_word(sql, "SET")) else {
        return Plan::Refuse("internal: an UPDATE without SET".into());
    };
    let list = assignments(sql, tokens, set_at);
    let Some(key_at) = list.iter().position(|(_, (v, _))| *v == eq_at + 1) else {
        return Plan::Refuse(format!(
            "UPDATE of the partition key {} of {} in this form",
            table.column, table.name
        ));
    };
    if tokens.iter().any(|t| t.kind == TokenKind::Placeholder) {
        // Each execution runs as the text statement, which moves rows.
        return Plan::PreparedAsText(format!(
            "a prepared UPDATE of the partition key {} of {}",
            table.column, table.name
        ));
    }
    if let Some(why) = refusal(sql, tokens, &list, key_at, table) {
        return Plan::Refuse(why);
    }
    let (_, (a, b)) = list[key_at];
    let value = &sql[tokens[a].start as usize..tokens[b - 1].end as usize];
    let select = match locking_read(sql, tokens, r, &list, &|q| {
        format!("{q}.{}, ({value})", quote_ident(&table.column))
    }) {
        Ok(s) => s,
        Err(why) => return Plan::Refuse(why),
    };
    Plan::KeyMove(KeyMove {
        table: table.name.clone(),
        select,
        parts,
    })
}

/// `SELECT <columns(qualifier)> FROM <the UPDATE's table> <its WHERE,
/// ORDER BY, LIMIT> FOR UPDATE`: the rows an UPDATE (assignments `list`)
/// matches, locked; `columns` gets the table's qualifier, quoted.
pub(super) fn locking_read(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    list: &[Assignment],
    columns: &dyn Fn(&str) -> String,
) -> Result<String, String> {
    let rest = list
        .last()
        .map(|(_, (_, end))| *end)
        .and_then(|end| tokens.get(end))
        .map_or("", |t| &sql[t.start as usize..]);
    let ref_text_end = {
        let after = r.end
            + usize::from(tokens.get(r.end).is_some_and(|t| t.is_word(sql, "AS")))
            + usize::from(r.alias.is_some());
        tokens[after - 1].end as usize
    };
    let from = &sql[tokens[r.start].start as usize..ref_text_end];
    let qualifier = match (&r.alias, tokens.get(r.end - 1)) {
        (Some(a), _) => a.clone(),
        (None, Some(t)) => unquote(t, sql),
        (None, None) => return Err("internal: an UPDATE without its table".into()),
    };
    Ok(format!(
        "SELECT {} FROM {from} {rest} FOR UPDATE",
        columns(&quote_ident(&qualifier))
    ))
}

fn quote_ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// A key value read back from the server as the key column holds it.
fn key_value(table: &PartitionedTable, text: Option<&str>) -> Result<KeyValue, String> {
    let Some(s) = text else {
        return Ok(KeyValue::Null);
    };
    let s = if table.is_key_integer {
        // `uid + 8.0` reads back as 1011.0, which the column stores as 1011.
        match s.split_once('.') {
            Some((int, frac)) if frac.bytes().all(|b| b == b'0') => int,
            Some(_) => {
                return Err(format!(
                    "UPDATE of the integer partition key {} of {} to the non-integer value {s} (the column rounds it)",
                    table.column, table.name
                ))
            }
            None => s,
        }
    } else {
        s
    };
    table
        .stored_key(KeyValue::Str(s.to_string()))
        .ok_or_else(|| {
            format!(
                "UPDATE of the partition key {} of {} to the value {s:?}, which the column does not hold as it is",
                table.column, table.name
            )
        })
}

/// Step 2 (see the module): from each matched row's key and new key, the
/// rows that move, as the new keys to look for in each source partition.
pub fn key_moves(
    table: &PartitionedTable,
    rows: &[(Option<String>, Option<String>)],
    known: &Known<'_>,
) -> Result<Moves, String> {
    let mut out: Moves = Vec::new();
    for (old, new) in rows {
        let from = table
            .route(&key_value(table, old.as_deref())?, known)
            .map_err(|e| e.to_string())?;
        let to = table
            .route(&key_value(table, new.as_deref())?, known)
            .map_err(|e| e.to_string())?;
        if from == to {
            continue;
        }
        match out.iter_mut().find(|(t, _)| *t == from) {
            Some((_, keys)) => keys.push(new.clone()),
            None => out.push((from, vec![new.clone()])),
        }
    }
    Ok(out)
}

/// A literal for a key value read back as text, which reads the same in
/// every sql_mode; compared with the key column in its collation.
fn key_literal(s: &str) -> String {
    if s.bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'\'' && b != b'\\')
    {
        format!("'{s}'")
    } else {
        let mut hex = String::with_capacity(s.len() * 2);
        for b in s.bytes() {
            hex.push_str(&format!("{b:02X}"));
        }
        format!("CONVERT(_binary X'{hex}' USING utf8mb4)")
    }
}

/// `key IN (..)` for the new keys of rows moving out of a partition.
fn keys_condition(column: &str, keys: &[Option<String>]) -> String {
    let values: Vec<String> = keys.iter().flatten().map(|k| key_literal(k)).collect();
    let mut parts = Vec::new();
    if !values.is_empty() {
        parts.push(format!(
            "{} IN ({})",
            quote_ident(column),
            values.join(", ")
        ));
    }
    if keys.iter().any(Option::is_none) {
        parts.push(format!("{} IS NULL", quote_ident(column)));
    }
    parts.join(" OR ")
}

/// The physical name of a partition of `table`.
fn physical(table: &PartitionedTable, target: &Target) -> String {
    format!(
        "{}.{}",
        quote_ident(&table.name.db),
        quote_ident(&target.physical_table)
    )
}

/// Step 4's reads on the source partition `from`: its stored (not
/// generated) columns, in order.
pub fn stored_columns_sql(table: &PartitionedTable, from: &Target) -> String {
    stored_columns_query(&table.name.db, &from.physical_table)
}

/// The read of `db`.`table`'s stored (not generated) column names, in the
/// table's order (a LIMIT of its own: the session's sql_select_limit,
/// which the connection it runs on holds, is not this read's).
pub fn stored_columns_query(db: &str, table: &str) -> String {
    format!(
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND IS_GENERATED = 'NEVER' ORDER BY ORDINAL_POSITION LIMIT 18446744073709551615",
        key_literal(db),
        key_literal(table)
    )
}

/// Step 4's statements for the rows moving out of `from`: the read of
/// their `columns` and their DELETE, both on `from` itself.
pub fn moved_rows_sql(
    table: &PartitionedTable,
    from: &Target,
    columns: &[String],
    keys: &[Option<String>],
) -> (String, String) {
    let list: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    let cond = keys_condition(&table.column, keys);
    let name = physical(table, from);
    (
        // Every moved row, whatever the session's sql_select_limit.
        format!(
            "SELECT {} FROM {name} WHERE {cond} LIMIT 18446744073709551615",
            list.join(", ")
        ),
        format!("DELETE FROM {name} WHERE {cond}"),
    )
}

/// Step 4's INSERT of moved rows (`rows`: each a list of literals) into
/// the table, which routes each by its new key.
pub fn moved_rows_insert(
    table: &PartitionedTable,
    columns: &[String],
    rows: &[Vec<String>],
) -> String {
    let list: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    let values: Vec<String> = rows.iter().map(|r| format!("({})", r.join(", "))).collect();
    format!(
        "INSERT INTO {}.{} ({}) VALUES {}",
        quote_ident(&table.name.db),
        quote_ident(&table.name.table),
        list.join(", "),
        values.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(sql: &str) -> Vec<(String, String)> {
        let tokens = hscale_sql::tokenize(sql).unwrap();
        let set = tokens.iter().position(|t| t.is_word(sql, "SET")).unwrap();
        assignments(sql, &tokens, set)
            .into_iter()
            .map(|((a, b), (c, d))| {
                let text = |x: usize, y: usize| {
                    sql[tokens[x].start as usize..tokens[y - 1].end as usize].to_string()
                };
                (text(a, b), text(c, d))
            })
            .collect()
    }

    #[test]
    fn reads_the_assignments() {
        assert_eq!(
            list("UPDATE t SET a = 1, b = f(a, 2) WHERE x = 1"),
            vec![("a".into(), "1".into()), ("b".into(), "f(a, 2)".into())]
        );
        assert_eq!(
            list("UPDATE t AS q SET q.uid = q.uid + 8"),
            vec![("q.uid".into(), "q.uid + 8".into())]
        );
        assert_eq!(
            list("UPDATE t SET uid = 3 ORDER BY uid LIMIT 1"),
            vec![("uid".into(), "3".into())]
        );
    }

    #[test]
    fn conditions_and_literals() {
        assert_eq!(
            keys_condition("k", &[Some("1".into()), None, Some("it's".into())]),
            "`k` IN ('1', CONVERT(_binary X'69742773' USING utf8mb4)) OR `k` IS NULL"
        );
        assert_eq!(keys_condition("k", &[None]), "`k` IS NULL");
    }
}
