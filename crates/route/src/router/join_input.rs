//! Multi-table UPDATE and DELETE whose rows lie on several partitions or
//! backends, run as Vitess runs a DML "with input": the join is read
//! first, then each target row is written by its primary key.
//!
//! ```text
//!  UPDATE t1 a JOIN t2 b ON .. SET a.x = a.x + b.y WHERE w
//!    0. the columns and primary key of each table of the list
//!       (information_schema, `columns_query`), which tell which table
//!       each column of the SET belongs to ([`input`])
//!    1. SELECT a.<primary key>, b.y FROM t1 a JOIN t2 b ON .. WHERE w
//!       (the proxy's own read: merged or shipped like a client's join)
//!    2. each target row once (the first join row that matched it, as the
//!       server writes a row matched several times once), routed by the
//!       partition key its primary key holds
//!    3. per partition: UPDATE <partition> AS a SET a.x = a.x + <b.y of the
//!       row> WHERE <its primary key>; one statement per row when a value
//!       reads another table, one per partition and chunk of rows when not;
//!       DELETE FROM <partition> WHERE <primary keys>
//! ```
//!
//! All steps run in one transaction (its own in autocommit, behind the
//! statement savepoint inside the client's): `exec/join_write.rs`. The
//! server computes every new value in step 3 (strict mode, conversions,
//! warnings are its own); the columns other tables give are written in as
//! literals of their type. Shapes whose one-server answer depends on the
//! order the server joins in are refused (a SET that reads a column it
//! assigns, a row matched several times with different values to write),
//! and so are UPDATEs of a partition key, ORDER BY or LIMIT, and writes to
//! global tables.

use hscale_sql::{Token, TokenKind};

use super::key_move::assignments;
use super::{is_any_word, is_name, unquote, Plan, StatementKind};
use crate::dictionary::{Dictionary, TableName};

/// A multi-table UPDATE or DELETE run from the rows of its join (see the
/// module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinWrite {
    pub kind: StatementKind,
    /// `IGNORE` when the statement says it (each write step says it too).
    pub is_ignore: bool,
    /// The tables of the statement's table list, in order.
    pub tables: Vec<ListTable>,
    /// DELETE: the tables (of `tables`) it deletes from.
    pub deleted: Vec<usize>,
    /// UPDATE: its assignments, in order.
    pub assignments: Vec<Assignment>,
    /// The table list as written.
    pub list: String,
    /// The WHERE clause as written (empty without one).
    pub where_clause: String,
}

/// A table of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListTable {
    pub name: TableName,
    /// How the statement names its columns: its alias, or its name.
    pub qualifier: String,
    /// Its partition key column, when it is partitioned.
    pub key_column: Option<String>,
    pub is_global: bool,
}

/// One `column = value` of an UPDATE's SET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub qualifier: Option<String>,
    pub column: String,
    /// The assigned column as written.
    pub column_text: String,
    /// The value as written.
    pub value: String,
    /// The names in the value that may be columns.
    pub refs: Vec<ColumnRef>,
}

/// A name in a value that may be a column: qualified, or a bare name that
/// is a column when a table of the list has one of that name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnRef {
    pub qualifier: Option<String>,
    pub column: String,
    /// Byte range in the value's text.
    pub at: (usize, usize),
}

/// A table's columns (in order) and its primary key's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Columns {
    pub names: Vec<String>,
    pub primary: Vec<String>,
}

/// Step 1's read and what its columns hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub select: String,
    pub targets: Vec<InputTarget>,
}

/// A table the statement writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputTarget {
    /// Of [`JoinWrite::tables`].
    pub table: usize,
    /// The read's column where its primary key starts (as many columns
    /// as the key has).
    pub key_at: usize,
    /// UPDATE: its assignments (of [`JoinWrite::assignments`]).
    pub assignments: Vec<usize>,
    /// The values other tables give it: (assignment, ref, read column).
    pub foreign: Vec<(usize, usize, usize)>,
}

/// Why [`input`] gives no read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoInput {
    /// Refused, with the reason.
    Refuse(String),
    /// A name that no table of the list has, or several: the server's
    /// error is the answer (`JoinWrite::names_read`).
    ServerDecides,
}

fn quote(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// A string literal that reads the same in every sql_mode.
fn text_literal(s: &str) -> String {
    if s.bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'\'' && b != b'\\')
    {
        format!("'{s}'")
    } else {
        let hex: String = s.bytes().map(|b| format!("{b:02X}")).collect();
        format!("CONVERT(_binary X'{hex}' USING utf8mb4)")
    }
}

/// Step 0: the columns of `db`.`table` and whether each is in its
/// primary key (`COLUMN_KEY` is `PRI`), in the table's order (a LIMIT of
/// its own: the session's sql_select_limit is not this read's).
pub fn columns_query(db: &str, table: &str) -> String {
    format!(
        "SELECT COLUMN_NAME, COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION LIMIT 18446744073709551615",
        text_literal(db),
        text_literal(table)
    )
}

/// Index of the first `word` at parenthesis depth 0 in `t[from..to]`.
fn top_level(sql: &str, t: &[Token], from: usize, to: usize, words: &[&str]) -> Option<usize> {
    let mut depth = 0i32;
    for (i, x) in t.iter().enumerate().take(to).skip(from) {
        if x.is_punct(sql, "(") {
            depth += 1;
        } else if x.is_punct(sql, ")") {
            depth -= 1;
        } else if depth == 0 && is_any_word(x, sql, words) {
            return Some(i);
        }
    }
    None
}

fn text(sql: &str, t: &[Token], a: usize, b: usize) -> String {
    if a >= b {
        return String::new();
    }
    sql[t[a].start as usize..t[b - 1].end as usize].to_string()
}

/// `[q .] column` of tokens `t[a..b]`; `None` for any other shape.
fn column_name(sql: &str, t: &[Token]) -> Option<(Option<String>, String)> {
    match t {
        [c] if is_name(c) => Some((None, unquote(c, sql))),
        [q, dot, c] if is_name(q) && dot.is_punct(sql, ".") && is_name(c) => {
            Some((Some(unquote(q, sql)), unquote(c, sql)))
        }
        _ => None,
    }
}

/// The names of a value's tokens that may be columns (offsets from
/// `base`, the value's first byte); `None` for a name of three parts.
fn value_refs(sql: &str, t: &[Token], base: usize) -> Option<Vec<ColumnRef>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let x = &t[i];
        let after_dot = i > 0 && t[i - 1].is_punct(sql, ".");
        if !is_name(x) || after_dot {
            i += 1;
            continue;
        }
        let dotted = t.get(i + 1).is_some_and(|d| d.is_punct(sql, "."));
        if dotted {
            let c = t.get(i + 2).filter(|c| is_name(c))?;
            if t.get(i + 3).is_some_and(|d| d.is_punct(sql, ".")) {
                return None;
            }
            out.push(ColumnRef {
                qualifier: Some(unquote(x, sql)),
                column: unquote(c, sql),
                at: (x.start as usize - base, c.end as usize - base),
            });
            i += 3;
            continue;
        }
        let is_call = t.get(i + 1).is_some_and(|p| p.is_punct(sql, "("));
        if !is_call {
            out.push(ColumnRef {
                qualifier: None,
                column: unquote(x, sql),
                at: (x.start as usize - base, x.end as usize - base),
            });
        }
        i += 1;
    }
    Some(out)
}

/// The plan of a multi-table UPDATE or DELETE whose rows the join write
/// of one backend (`join_write.rs`) could not hold; `None` when it is not
/// of a form this module reads (the caller refuses it).
pub(super) fn plan(
    sql: &str,
    t: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<Plan> {
    let first = t.first()?;
    let what = if first.is_word(sql, "UPDATE") {
        "UPDATE"
    } else {
        "DELETE"
    };
    if t.iter().any(|x| x.kind == TokenKind::Placeholder) {
        return Some(Plan::PreparedAsText(format!(
            "a prepared multi-table {what} whose rows lie on several partitions or backends"
        )));
    }
    let mut i = 1;
    let mut is_ignore = false;
    while let Some(x) = t.get(i) {
        if !is_any_word(x, sql, &["LOW_PRIORITY", "IGNORE", "QUICK"]) {
            break;
        }
        is_ignore |= x.is_word(sql, "IGNORE");
        i += 1;
    }
    let (kind, list, deleted_names, where_at, assigned) = if what == "UPDATE" {
        let set = top_level(sql, t, i, t.len(), &["SET"])?;
        let list = assignments(sql, t, set);
        let end = list.last().map_or(set + 1, |(_, (_, e))| *e);
        if top_level(sql, t, end, t.len(), &["ORDER", "LIMIT"]).is_some() {
            return Some(Plan::Refuse(
                "multi-table UPDATE with ORDER BY or LIMIT whose rows lie on several partitions or backends".into(),
            ));
        }
        let where_at = top_level(sql, t, end, t.len(), &["WHERE"]);
        if where_at.is_none() && end < t.len() {
            return None;
        }
        (StatementKind::Update, (i, set), Vec::new(), where_at, list)
    } else {
        // DELETE t.. FROM list [WHERE] | DELETE FROM t.. USING list [WHERE]
        let from = top_level(sql, t, i, t.len(), &["FROM"])?;
        let (names, list_start) = match top_level(sql, t, from + 1, t.len(), &["USING"]) {
            Some(using) => ((from + 1, using), using + 1),
            None => ((i, from), from + 1),
        };
        if top_level(sql, t, list_start, t.len(), &["ORDER", "LIMIT"]).is_some() {
            // The server's syntax error (a multi-table DELETE has neither).
            return Some(Plan::Passthrough);
        }
        let where_at = top_level(sql, t, list_start, t.len(), &["WHERE"]);
        let end = where_at.unwrap_or(t.len());
        let mut deleted = Vec::new();
        for item in t[names.0..names.1].split(|x| x.is_punct(sql, ",")) {
            let item = match item {
                [rest @ .., dot, star] if dot.is_punct(sql, ".") && star.is_punct(sql, "*") => rest,
                _ => item,
            };
            deleted.push(column_name(sql, item)?);
        }
        (
            StatementKind::Delete,
            (list_start, end),
            deleted,
            where_at,
            Vec::new(),
        )
    };
    if list.0 >= list.1 {
        return None;
    }
    let list_text = text(sql, t, list.0, list.1);
    let read = format!("SELECT 1 FROM {list_text}");
    let rt = hscale_sql::tokenize(&read).ok()?;
    let mut tables = Vec::new();
    for (db, table, qualifier) in super::join::from_list(&read, &rt, 2).ok()? {
        let name = TableName::new(db.as_deref().or(session_db)?, &table);
        if dict.view(&name).is_some() {
            return None;
        }
        tables.push(ListTable {
            key_column: dict.table(&name).map(|x| x.column.clone()),
            is_global: dict.is_global(&name),
            name,
            qualifier,
        });
    }
    if tables.is_empty() {
        return None;
    }
    let mut deleted = Vec::new();
    for (db, name) in deleted_names {
        // `DELETE a ...` names a table by its qualifier; `db.t` by its name.
        let k = tables.iter().position(|x| match &db {
            None => x.qualifier == name,
            Some(db) => x.name.db == *db && x.name.table == name,
        })?;
        if tables[k].is_global {
            return Some(Plan::Refuse(format!(
                "multi-table DELETE from global table {} whose rows lie on several partitions or backends",
                tables[k].name
            )));
        }
        if !deleted.contains(&k) {
            deleted.push(k);
        }
    }
    let mut list_out = Vec::new();
    for (lhs, (a, b)) in assigned {
        let (qualifier, column) = column_name(sql, &t[lhs.0..lhs.1])?;
        let base = t.get(a)?.start as usize;
        list_out.push(Assignment {
            qualifier,
            column,
            column_text: text(sql, t, lhs.0, lhs.1),
            value: text(sql, t, a, b),
            refs: value_refs(sql, &t[a..b], base)?,
        });
    }
    Some(Plan::JoinWrite(Box::new(JoinWrite {
        kind,
        is_ignore,
        list: list_text,
        where_clause: where_at.map_or_else(String::new, |w| text(sql, t, w, t.len())),
        tables,
        deleted,
        assignments: list_out,
    })))
}

impl JoinWrite {
    /// The statement's names as a read (`SELECT <assigned columns>,
    /// <values> FROM <list> WHERE .. LIMIT 0`): the server's error when a
    /// name is unknown or ambiguous, which is one server's answer.
    pub fn names_read(&self) -> String {
        let mut items: Vec<String> = Vec::new();
        for a in &self.assignments {
            items.push(a.column_text.clone());
            items.push(format!("({})", a.value));
        }
        if items.is_empty() {
            items.push("1".into());
        }
        format!(
            "SELECT {} FROM {} {} LIMIT 0",
            items.join(", "),
            self.list,
            self.where_clause
        )
    }

    /// The table (of `tables`) a column named `qualifier.column` belongs
    /// to: `Ok(None)` when no table has such a column, `Err` when several.
    fn table_of(
        &self,
        columns: &[Columns],
        qualifier: Option<&str>,
        column: &str,
    ) -> Result<Option<usize>, ()> {
        let has = |k: usize| {
            columns[k]
                .names
                .iter()
                .any(|n| n.eq_ignore_ascii_case(column))
        };
        let found: Vec<usize> = (0..self.tables.len())
            .filter(|&k| qualifier.is_none_or(|q| self.tables[k].qualifier == q) && has(k))
            .collect();
        match found.as_slice() {
            [] => Ok(None),
            [k] => Ok(Some(*k)),
            _ => Err(()),
        }
    }
}

/// Steps 0 and 1 (see the module): which table each assignment writes
/// and each of its names reads, given each table's `columns` (in the
/// order of [`JoinWrite::tables`]), and the read of the join.
pub fn input(w: &JoinWrite, columns: &[Columns]) -> Result<Input, NoInput> {
    let what = match w.kind {
        StatementKind::Update => "multi-table UPDATE",
        _ => "multi-table DELETE",
    };
    let mut targets: Vec<InputTarget> = Vec::new();
    let target_of = |k: usize, targets: &mut Vec<InputTarget>| -> usize {
        match targets.iter().position(|x| x.table == k) {
            Some(p) => p,
            None => {
                targets.push(InputTarget {
                    table: k,
                    key_at: 0,
                    assignments: Vec::new(),
                    foreign: Vec::new(),
                });
                targets.len() - 1
            }
        }
    };
    for &k in &w.deleted {
        target_of(k, &mut targets);
    }
    // Each assignment's table, and each name of its value's.
    let mut assigned: Vec<(usize, String)> = Vec::new();
    let mut reads: Vec<Vec<Option<usize>>> = Vec::new();
    for (n, a) in w.assignments.iter().enumerate() {
        let k = match w.table_of(columns, a.qualifier.as_deref(), &a.column) {
            Ok(Some(k)) => k,
            _ => return Err(NoInput::ServerDecides),
        };
        let p = target_of(k, &mut targets);
        targets[p].assignments.push(n);
        assigned.push((k, a.column.to_ascii_lowercase()));
        let mut of_refs = Vec::new();
        for r in &a.refs {
            match w.table_of(columns, r.qualifier.as_deref(), &r.column) {
                Ok(Some(k)) => of_refs.push(Some(k)),
                // A bare word no table has: a keyword, left alone.
                Ok(None) if r.qualifier.is_none() => of_refs.push(None),
                _ => return Err(NoInput::ServerDecides),
            }
        }
        reads.push(of_refs);
    }
    // Refusals: what one server answers by the order it joins in.
    for (n, (k, c)) in assigned.iter().enumerate() {
        let table = &w.tables[*k];
        if table.is_global {
            return Err(NoInput::Refuse(format!(
                "{what} of global table {} whose rows lie on several partitions or backends",
                table.name
            )));
        }
        if table
            .key_column
            .as_ref()
            .is_some_and(|key| key.eq_ignore_ascii_case(c))
        {
            return Err(NoInput::Refuse(format!(
                "{what} that assigns the partition key {} of {}, whose rows lie on several partitions or backends (update the key with a single-table UPDATE)",
                w.assignments[n].column, table.name
            )));
        }
        if assigned[..n].contains(&(*k, c.clone())) {
            return Err(NoInput::Refuse(format!(
                "{what} that assigns {}.{} twice, whose rows lie on several partitions or backends",
                table.qualifier, w.assignments[n].column
            )));
        }
        if w.tables.iter().enumerate().any(|(j, x)| {
            j != *k && x.name == table.name && assigned.iter().any(|(aj, _)| *aj == j)
        }) {
            return Err(NoInput::Refuse(format!(
                "{what} that writes table {} under two names, whose rows lie on several partitions or backends",
                table.name
            )));
        }
    }
    for (n, of_refs) in reads.iter().enumerate() {
        for (r, k) in of_refs.iter().enumerate() {
            let Some(k) = k else { continue };
            let column = w.assignments[n].refs[r].column.to_ascii_lowercase();
            let is_assigned = assigned.iter().enumerate().any(|(m, (ak, ac))| {
                m != n && w.tables[*ak].name == w.tables[*k].name && *ac == column
            });
            if is_assigned {
                return Err(NoInput::Refuse(format!(
                    "{what} whose SET reads column {} that it also assigns (one server's answer depends on the order it joins in), whose rows lie on several partitions or backends",
                    w.assignments[n].refs[r].column
                )));
            }
        }
    }
    // The read: each target's primary key, then the values other tables
    // give.
    let mut items: Vec<String> = Vec::new();
    for x in &mut targets {
        let table = &w.tables[x.table];
        let key = &columns[x.table].primary;
        if key.is_empty() {
            return Err(NoInput::Refuse(format!(
                "{what} of table {} without a primary key, whose rows lie on several partitions or backends",
                table.name
            )));
        }
        x.key_at = items.len();
        for c in key {
            items.push(format!("{}.{}", quote(&table.qualifier), quote(c)));
        }
    }
    for x in &mut targets {
        for &n in &x.assignments {
            for (r, k) in reads[n].iter().enumerate() {
                match k {
                    Some(k) if *k != x.table => {
                        x.foreign.push((n, r, items.len()));
                        items.push(format!(
                            "{}.{}",
                            quote(&w.tables[*k].qualifier),
                            quote(&w.assignments[n].refs[r].column)
                        ));
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(Input {
        select: format!(
            "SELECT {} FROM {} {}",
            items.join(", "),
            w.list,
            w.where_clause
        ),
        targets,
    })
}

/// The condition that picks rows by primary key: `key` the columns,
/// `rows` each row's key values as literals.
fn key_condition(qualifier: &str, key: &[String], rows: &[&[String]]) -> String {
    let col = |c: &String| format!("{}.{}", quote(qualifier), quote(c));
    if let [c] = key {
        let values: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        return format!("{} IN ({})", col(c), values.join(", "));
    }
    let ors: Vec<String> = rows
        .iter()
        .map(|r| {
            let ands: Vec<String> = key
                .iter()
                .zip(r.iter())
                .map(|(c, v)| format!("{} = {v}", col(c)))
                .collect();
            format!("({})", ands.join(" AND "))
        })
        .collect();
    ors.join(" OR ")
}

/// Step 3 for target `x` on the partition (or table) `db`.`physical`:
/// the rows whose primary keys are `keys` (literals, in the order of
/// `key`); `foreign`: the values other tables give the one row `keys`
/// holds then (literals, in the order of [`InputTarget::foreign`]), or
/// empty.
pub fn write_sql(
    w: &JoinWrite,
    x: &InputTarget,
    key: &[String],
    db: &str,
    physical: &str,
    keys: &[&[String]],
    foreign: &[String],
) -> String {
    let table = &w.tables[x.table];
    let ignore = if w.is_ignore { " IGNORE" } else { "" };
    let name = format!(
        "{}.{} AS {}",
        quote(db),
        quote(physical),
        quote(&table.qualifier)
    );
    let cond = key_condition(&table.qualifier, key, keys);
    if w.kind == StatementKind::Delete {
        // DELETE .. AS a needs the multi-table form's aliases: name the
        // alias as the table to delete from.
        return format!(
            "DELETE{ignore} {q} FROM {name} WHERE {cond}",
            q = quote(&table.qualifier)
        );
    }
    let mut sets = Vec::new();
    for &n in &x.assignments {
        let a = &w.assignments[n];
        let mut value = String::new();
        let mut at = 0;
        for (m, &(fa, r, _)) in x.foreign.iter().enumerate() {
            if fa != n {
                continue;
            }
            let (s, e) = a.refs[r].at;
            value.push_str(&a.value[at..s]);
            value.push_str(&foreign[m]);
            at = e;
        }
        value.push_str(&a.value[at..]);
        sets.push(format!("{} = {value}", a.column_text));
    }
    format!("UPDATE{ignore} {name} SET {} WHERE {cond}", sets.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dictionary::Dictionary;

    fn planned(sql: &str, dict: &Dictionary) -> JoinWrite {
        let t = hscale_sql::tokenize(sql).unwrap();
        match plan(sql, &t, Some("d"), dict) {
            Some(Plan::JoinWrite(w)) => *w,
            other => panic!("{other:?}"),
        }
    }

    fn cols(names: &[&str], primary: &[&str]) -> Columns {
        Columns {
            names: names.iter().map(|s| s.to_string()).collect(),
            primary: primary.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn an_update_reads_keys_and_foreign_values() {
        let dict = Dictionary::default();
        let w = planned(
            "UPDATE o JOIN c ON o.cid = c.id SET o.amt = o.amt + credit * 2 WHERE c.region = 'EU'",
            &dict,
        );
        let columns = [
            cols(&["oid", "cid", "amt"], &["oid", "cid"]),
            cols(&["id", "region", "credit"], &["id"]),
        ];
        let i = input(&w, &columns).unwrap();
        assert_eq!(
            i.select,
            "SELECT `o`.`oid`, `o`.`cid`, `c`.`credit` FROM o JOIN c ON o.cid = c.id WHERE c.region = 'EU'"
        );
        let x = &i.targets[0];
        assert_eq!(x.foreign, vec![(0, 1, 2)]);
        let keys = ["1".to_string(), "2".to_string()];
        assert_eq!(
            write_sql(&w, x, &columns[0].primary, "d", "o_p1", &[&keys], &["1.50".into()]),
            "UPDATE `d`.`o_p1` AS `o` SET o.amt = o.amt + 1.50 * 2 WHERE (`o`.`oid` = 1 AND `o`.`cid` = 2)"
        );
    }

    #[test]
    fn a_delete_names_its_targets() {
        let dict = Dictionary::default();
        let w = planned(
            "DELETE a, b.* FROM t a JOIN u b ON a.x = b.y WHERE a.z = 1",
            &dict,
        );
        assert_eq!(w.deleted, vec![0, 1]);
        let w = planned("DELETE FROM b USING t a JOIN u b ON a.x = b.y", &dict);
        assert_eq!(w.deleted, vec![1]);
        let columns = [cols(&["x", "z"], &["x"]), cols(&["y"], &["y"])];
        let i = input(&w, &columns).unwrap();
        assert_eq!(i.select, "SELECT `b`.`y` FROM t a JOIN u b ON a.x = b.y ");
        let keys = ["3".to_string()];
        assert_eq!(
            write_sql(
                &w,
                &i.targets[0],
                &columns[1].primary,
                "d",
                "u",
                &[&keys],
                &[]
            ),
            "DELETE `b` FROM `d`.`u` AS `b` WHERE `b`.`y` IN (3)"
        );
    }

    #[test]
    fn order_dependent_shapes_are_refused() {
        let dict = Dictionary::default();
        let columns = [cols(&["x", "y"], &["x"]), cols(&["x", "y"], &["x"])];
        for sql in [
            "UPDATE t a JOIN u b ON a.x = b.x SET a.y = 1, b.y = a.y",
            "UPDATE t a JOIN u b ON a.x = b.x SET a.y = 1, a.y = 2",
            "UPDATE t a JOIN t b ON a.x = b.x SET a.y = 1, b.y = 2",
        ] {
            let w = planned(sql, &dict);
            assert!(
                matches!(input(&w, &columns), Err(NoInput::Refuse(_))),
                "{sql}"
            );
        }
        let w = planned("UPDATE t a JOIN u b ON a.x = b.x SET y = 1", &dict);
        assert_eq!(input(&w, &columns), Err(NoInput::ServerDecides));
    }
}
