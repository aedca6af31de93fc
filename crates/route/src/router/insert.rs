//! `INSERT` / `REPLACE ... VALUES`: rows split by partition.

use hscale_sql::{Token, TokenKind};

use super::{is_name, literal, rewrite, unquote, Plan, StatementKind, TableRef};
use crate::dictionary::{Dictionary, PartitionedTable, TableName, Target};
use crate::known::Known;

/// An INSERT's VALUES rows, as token ranges.
pub(super) struct InsertRows {
    pub columns: usize,
    /// The column list's names, as written (unquoted).
    pub names: Vec<String>,
    /// `None`: the column list does not name the key column (every row
    /// takes the column's default).
    pub key_pos: Option<usize>,
    /// Each row's `(` and `)` token indexes.
    pub rows: Vec<(usize, usize)>,
    /// The first token after the rows.
    pub tail_start: usize,
}

/// Read an INSERT's column list and VALUES rows; `Err` says why it cannot
/// be planned.
pub(super) fn insert_rows(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
) -> Result<InsertRows, String> {
    let mut i = r.end;
    if !tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
        return Err("INSERT must list its columns, including the partition key".into());
    }
    let close = match tokens[i..].iter().position(|t| t.is_punct(sql, ")")) {
        Some(p) => i + p,
        None => return Err("unreadable column list".into()),
    };
    let columns: Vec<String> = tokens[i + 1..close]
        .split(|t| t.is_punct(sql, ","))
        .map(|c| c.last().map(|t| unquote(t, sql)).unwrap_or_default())
        .collect();
    let key_pos = columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case(&table.column));
    i = close + 1;
    if !tokens
        .get(i)
        .is_some_and(|t| t.is_word(sql, "VALUES") || t.is_word(sql, "VALUE"))
    {
        return Err("only INSERT ... VALUES is supported".into());
    }
    i += 1;
    // Each row: ( ... ) at depth 1, separated by commas.
    let mut rows: Vec<(usize, usize)> = Vec::new();
    loop {
        if !tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
            return Err("unreadable VALUES row".into());
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
            return Err("unreadable VALUES row".into());
        };
        rows.push((i, end));
        i = end + 1;
        if tokens.get(i).is_some_and(|t| t.is_punct(sql, ",")) {
            i += 1;
            continue;
        }
        break;
    }
    Ok(InsertRows {
        columns: columns.len(),
        names: columns,
        key_pos,
        rows,
        tail_start: i,
    })
}

/// For an INSERT into a table with auto-partitioning: the partition values
/// of its rows that have no partition (each once), to create partitions
/// for. Empty for anything else.
pub fn unplaced_values(
    sql: &str,
    session_db: Option<&str>,
    dict: &Dictionary,
    known: &Known<'_>,
) -> Option<(TableName, Vec<String>)> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let first = tokens.first()?.text(sql).to_ascii_uppercase();
    if first != "INSERT" && first != "REPLACE" {
        return None;
    }
    let refs = super::refs::table_refs(sql, &tokens, session_db, dict);
    let r = refs.first()?;
    let table = dict.table(&r.name).filter(|t| t.auto.is_some())?;
    let parsed = insert_rows(sql, &tokens, r, table).ok()?;
    let key_pos = parsed.key_pos?;
    let mut out: Vec<String> = Vec::new();
    for (a, b) in parsed.rows {
        let values = top_level_items(sql, &tokens[a + 1..b]);
        let Some(key) = values
            .get(key_pos)
            .and_then(|v| literal(sql, v))
            .and_then(|k| table.stored_key(k))
            // A number the column cannot hold is stored as another value:
            // no partition is made for the number as written.
            .filter(|k| table.holds(k))
        else {
            continue;
        };
        if let Ok(Some(v)) = table.partition_value_of(&key, known) {
            if !table.values.contains_key(&v) && !out.contains(&v) {
                out.push(v);
            }
        }
    }
    (!out.is_empty()).then(|| (r.name.clone(), out))
}

/// The target of a key value (`value`, its tokens) that routing is not
/// sure of, by the value the backend said the column makes of it
/// (`conversions.rs`); `None` (the literal noted) when it has not said,
/// or when the value is not a constant the backend can be asked about
/// (an expression, a parameter of a prepared statement).
fn converted(
    sql: &str,
    value: &[Token],
    table: &PartitionedTable,
    prepared: bool,
    known: &Known<'_>,
) -> Option<Result<Target, crate::HashError>> {
    if prepared || !super::syntax::is_constant(sql, value) {
        return None;
    }
    let (first, last) = (value.first()?, value.last()?);
    let text = &sql[first.start as usize..last.end as usize];
    // Sent inside a compound statement of the proxy's: only text that
    // ends where it ends under any sql_mode (a backslash escapes the
    // quote or not by NO_BACKSLASH_ESCAPES, a double-quoted string is a
    // name under ANSI_QUOTES).
    if text.contains(['\\', '"']) {
        return None;
    }
    crate::conversions::route_converted(table, text, known)
}

/// INSERT / REPLACE ... VALUES: split the rows by partition.
pub(super) fn plan_insert(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    prepared: bool,
    known: &Known<'_>,
) -> Plan {
    let plan = plan_insert_parts(sql, tokens, r, table, prepared, known);
    // `t.col` (`db.t.col`) after the target, in ON DUPLICATE KEY UPDATE:
    // an INSERT takes no alias, so each part names its physical table.
    let names_table = tokens[r.end..].windows(3).enumerate().any(|(k, w)| {
        is_name(&w[0])
            && w[1].is_punct(sql, ".")
            && is_name(&w[2])
            && unquote(&w[0], sql) == r.name.table
            && !(k > 0 && tokens[r.end + k - 1].is_punct(sql, "."))
    });
    match plan {
        Plan::Targets { kind, parts } if names_table => Plan::Targets {
            kind,
            parts: parts
                .into_iter()
                .map(|(t, s)| {
                    let renamed = qualifiers_renamed(&s, &r.name, &t);
                    (t, renamed)
                })
                .collect(),
        },
        other => other,
    }
}

/// `sql` (a part of an INSERT, its target already renamed) with the
/// qualifiers that name the partitioned table `name` (`t.col`,
/// `db.t.col`) naming the part's physical table instead.
pub(super) fn qualifiers_renamed(sql: &str, name: &TableName, target: &Target) -> String {
    let Ok(tokens) = hscale_sql::tokenize(sql) else {
        return sql.to_string();
    };
    let physical = format!("`{}`", target.physical_table.replace('`', "``"));
    let mut out = String::with_capacity(sql.len() + 32);
    let mut at = 0;
    // After the target itself (`db`.`physical`).
    let mut k = tokens
        .iter()
        .position(|t| is_name(t) && unquote(t, sql) == target.physical_table)
        .map_or(0, |p| p + 1);
    while k + 2 < tokens.len() {
        let after_dot = k > 0 && tokens[k - 1].is_punct(sql, ".");
        let qualifies = |i: usize| {
            is_name(&tokens[i]) && tokens[i + 1].is_punct(sql, ".") && is_name(&tokens[i + 2])
        };
        if after_dot || !qualifies(k) {
            k += 1;
            continue;
        }
        // `db.t.col`: the database and the table.
        let three = k + 4 < tokens.len()
            && qualifies(k + 2)
            && unquote(&tokens[k], sql) == name.db
            && unquote(&tokens[k + 2], sql) == name.table;
        if three {
            out.push_str(&sql[at..tokens[k].start as usize]);
            out.push_str(&format!("`{}`.{physical}", name.db.replace('`', "``")));
            at = tokens[k + 2].end as usize;
            k += 3;
        } else if unquote(&tokens[k], sql) == name.table {
            out.push_str(&sql[at..tokens[k].start as usize]);
            out.push_str(&physical);
            at = tokens[k].end as usize;
            k += 2;
        } else {
            k += 1;
        }
    }
    out.push_str(&sql[at..]);
    out
}

fn plan_insert_parts(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    prepared: bool,
    known: &Known<'_>,
) -> Plan {
    let refuse = |why: &str| Plan::Refuse(format!("{why} (partitioned table {})", table.name));
    let InsertRows {
        columns,
        key_pos,
        rows,
        tail_start,
        ..
    } = match insert_rows(sql, tokens, r, table) {
        Ok(p) => p,
        Err(why) => return refuse(&why),
    };
    let has_returning = tokens[tail_start..]
        .iter()
        .any(|t| t.is_word(sql, "RETURNING"));
    if let Some(why) = refused_tail(sql, &tokens[tail_start..], table, has_returning && prepared) {
        return refuse(why);
    }
    let Some(key_pos) = key_pos else {
        return plan_insert_without_key(sql, tokens, r, table, prepared, known);
    };
    // A prepared INSERT whose keys are all parameters: every partition is
    // a candidate; each execution picks one by the key parameters.
    let key_tokens: Vec<&[Token]> = rows
        .iter()
        .filter_map(|&(a, b)| {
            top_level_items(sql, &tokens[a + 1..b])
                .into_iter()
                .nth(key_pos)
        })
        .collect();
    let is_param = |v: &&[Token]| matches!(v, [p] if p.kind == TokenKind::Placeholder);
    if prepared && !key_tokens.is_empty() && key_tokens.iter().all(is_param) {
        return every_partition(sql, tokens, r, table);
    }
    let groups = match rows_by_target(
        sql,
        tokens,
        table,
        prepared,
        known,
        &rows,
        (columns, key_pos),
    ) {
        Ok(groups) => groups,
        Err(RowsStop::Refused(why)) => return Plan::Refuse(why),
        // The server answers it (1136, naming the row) before it writes
        // anything: send it whole to one partition.
        Err(RowsStop::WrongCount) => {
            let t = table.default_target();
            let s = rewrite(sql, tokens, r, &t, false);
            return Plan::Targets {
                kind: StatementKind::Insert,
                parts: vec![(t, s)],
            };
        }
    };
    // RETURNING on one partition: the server's rows come back as they
    // are. Over several, each part's rows would have to wait for the
    // commit across backends.
    if has_returning && groups.len() > 1 {
        return refuse("INSERT or REPLACE ... RETURNING whose rows go to several partitions is not supported yet");
    }
    Plan::Targets {
        kind: StatementKind::Insert,
        parts: insert_parts(sql, tokens, r, prepared, groups, tail_start),
    }
}

/// Why the INSERT's tail (what follows its rows) is refused, if it is:
/// INSERT ... SELECT, a prepared RETURNING (`prepared_returning`), and an
/// ON DUPLICATE KEY UPDATE of the partition key, which would move the row.
fn refused_tail(
    sql: &str,
    tail: &[Token],
    table: &PartitionedTable,
    prepared_returning: bool,
) -> Option<&'static str> {
    if tail.iter().any(|t| t.is_word(sql, "SELECT")) || prepared_returning {
        return Some(
            "INSERT ... SELECT, and a prepared INSERT ... RETURNING, are not supported yet",
        );
    }
    // ON DUPLICATE KEY UPDATE key = ... would move the row.
    let up = tail.iter().position(|t| t.is_word(sql, "UPDATE"))?;
    let assigns_key = tail[up + 1..].split(|t| t.is_punct(sql, ",")).any(|a| {
        // `k = ...`, `t.k = ...`, `db.t.k = ...`
        let eq = a
            .iter()
            .position(|e| e.is_punct(sql, "=") || e.is_punct(sql, ":="));
        eq.is_some_and(|eq| {
            a[..eq]
                .last()
                .is_some_and(|c| is_name(c) && unquote(c, sql).eq_ignore_ascii_case(&table.column))
        })
    });
    assigns_key.then_some("ON DUPLICATE KEY UPDATE of the partition key is not supported")
}

/// The statement whole on every partition: each execution of the
/// prepared form picks one.
fn every_partition(sql: &str, tokens: &[Token], r: &TableRef, table: &PartitionedTable) -> Plan {
    let parts = table
        .all_targets()
        .into_iter()
        .map(|t| {
            let s = rewrite(sql, tokens, r, &t, false);
            (t, s)
        })
        .collect();
    Plan::Targets {
        kind: StatementKind::Insert,
        parts,
    }
}

/// An INSERT that does not name the partition key column.
fn plan_insert_without_key(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    table: &PartitionedTable,
    prepared: bool,
    known: &Known<'_>,
) -> Plan {
    // Prepared: every partition is a candidate; each execution picks
    // the one of the key's default, as the text form does
    // (`insert_without_key_column`).
    if prepared {
        return every_partition(sql, tokens, r, table);
    }
    // Every row takes the key column's default: the statement goes
    // whole to its partition, where the server stores the default or
    // answers 1364 as one server would (`conversions::route_default`).
    match crate::conversions::route_default(table, known) {
        Some(Ok(t)) => {
            let s = rewrite(sql, tokens, r, &t, false);
            Plan::Targets {
                kind: StatementKind::Insert,
                parts: vec![(t, s)],
            }
        }
        Some(Err(e)) => Plan::Refuse(e.to_string()),
        None => Plan::Refuse(format!(
            "INSERT without the partition key column {}: its default is not known yet (partitioned table {})",
            table.column, table.name
        )),
    }
}

/// The rows of an INSERT (token ranges of their parentheses) grouped by
/// the partition their key routes to, in the statement's order.
type Groups = Vec<(Target, Vec<(usize, usize)>)>;

/// The partition of each row of an INSERT (token ranges of their
/// parentheses), in the statement's order; `Err` says why one cannot be
/// routed.
pub(super) fn row_targets(
    sql: &str,
    tokens: &[Token],
    table: &PartitionedTable,
    known: &Known<'_>,
    rows: &[(usize, usize)],
    shape: (usize, usize),
) -> Result<Vec<Target>, String> {
    rows.iter()
        .map(
            |&row| match rows_by_target(sql, tokens, table, false, known, &[row], shape) {
                Ok(mut groups) if groups.len() == 1 => Ok(groups.remove(0).0),
                Err(RowsStop::Refused(why)) => Err(why),
                _ => Err(format!(
                    "a row of an INSERT into {} that cannot be routed alone",
                    table.name
                )),
            },
        )
        .collect()
}

/// Why `rows_by_target` stops at a row.
enum RowsStop {
    /// A row's count of values is not the columns'.
    WrongCount,
    /// A row's key cannot be routed: the statement is refused, saying why.
    Refused(String),
}

/// The rows grouped by the partition their key routes to (`Groups`).
fn rows_by_target(
    sql: &str,
    tokens: &[Token],
    table: &PartitionedTable,
    prepared: bool,
    known: &Known<'_>,
    rows: &[(usize, usize)],
    (columns, key_pos): (usize, usize),
) -> Result<Groups, RowsStop> {
    let refuse = |why: &str| format!("{why} (partitioned table {})", table.name);
    let mut groups: Groups = Vec::new();
    let mut unweighed = None;
    let mut unconverted = None;
    for &(a, b) in rows {
        let values = top_level_items(sql, &tokens[a + 1..b]);
        if values.len() != columns {
            return Err(RowsStop::WrongCount);
        }
        let given = literal(sql, values[key_pos]);
        let stored = given
            .clone()
            .and_then(|g| table.stored_key(g))
            .filter(|v| table.holds(v));
        let target = match stored.as_ref().map(|v| table.route(v, known)) {
            Some(Ok(t)) => t,
            // Noted for the proxy (`weights.rs`): the other rows' keys are
            // noted too, so one round trip finds them all.
            Some(Err(e @ crate::HashError::WeightUnknown { .. })) => {
                unweighed = Some(e);
                continue;
            }
            // Not sure what the column makes of it: the backend's answer,
            // when it gave one (`conversions.rs`; every row's literal is
            // noted, so one round trip finds them all).
            routed => match converted(sql, values[key_pos], table, prepared, known) {
                Some(Ok(t)) => t,
                Some(Err(e)) => return Err(RowsStop::Refused(e.to_string())),
                None if given.is_none() => {
                    unconverted = Some(refuse("the partition key value must be a literal"));
                    continue;
                }
                None if stored.is_none() => {
                    let given = given.unwrap_or(crate::KeyValue::Null);
                    unconverted = Some(refuse(&match &table.key_enum {
                        Some(e) => format!(
                            "the partition key value {given} is not one of the ENUM's members ({})",
                            e.members.join(", ")
                        ),
                        None => format!("the partition key value {given} must be an integer"),
                    }));
                    continue;
                }
                None => {
                    let why = match routed {
                        Some(Err(e)) => e.to_string(),
                        _ => "the partition key value has no partition".to_string(),
                    };
                    unconverted = Some(why);
                    continue;
                }
            },
        };
        match groups.iter_mut().find(|g| g.0 == target) {
            Some(g) => g.1.push((a, b)),
            None => groups.push((target, vec![(a, b)])),
        }
    }
    if let Some(why) = unconverted {
        return Err(RowsStop::Refused(why));
    }
    if let Some(e) = unweighed {
        return Err(RowsStop::Refused(e.to_string()));
    }
    Ok(groups)
}

/// The statement of each partition: the head renamed for it, then its
/// rows, then the tail.
fn insert_parts(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    prepared: bool,
    groups: Groups,
    tail_start: usize,
) -> Vec<(Target, String)> {
    let first_row = rows_first_start(tokens, sql, r);
    let head_end = tokens[first_row].start as usize;
    let tail = tokens
        .get(tail_start)
        .map_or("", |t| &sql[t.start as usize..]);
    let is_many = groups.iter().map(|g| g.1.len()).sum::<usize>() > 1;
    groups
        .into_iter()
        .map(|(target, rows)| {
            let s = match rows.as_slice() {
                // One row of several: the server must still take it as a
                // statement of several rows (sql_mode without strict, a
                // NULL for a NOT NULL column is then a warning 1048 and
                // the column's implicit default, not the error a one-row
                // INSERT gets). INSERT ... SELECT of the row's values is
                // such a statement, and counts its record in its info.
                &[(a, b)] if is_many && !prepared => {
                    selected_row(sql, tokens, r, &target, first_row, (a, b), tail)
                }
                _ => None,
            };
            let s = s.unwrap_or_else(|| {
                let head = rewrite(&sql[..head_end], tokens, r, &target, false);
                let values: Vec<&str> = rows
                    .iter()
                    .map(|&(a, b)| &sql[tokens[a].start as usize..tokens[b].end as usize])
                    .collect();
                format!("{head}{} {tail}", values.join(", "))
            });
            (target, s.trim_end().to_string())
        })
        .collect()
}

/// One row of a multi-row INSERT, as `INSERT ... SELECT values tail`
/// (see `plan_insert`); `None` when its values cannot stand in a SELECT
/// list (`DEFAULT`, an empty row) or may name a column: in VALUES a name
/// reads the row's own earlier value (`VALUES (5000, 1, k + 1)`), in a
/// SELECT list it is unknown (1054).
fn selected_row(
    sql: &str,
    tokens: &[Token],
    r: &TableRef,
    target: &Target,
    first_row: usize,
    (a, b): (usize, usize),
    tail: &str,
) -> Option<String> {
    let values_kw = first_row.checked_sub(1)?;
    let inner = &tokens[a + 1..b];
    let is_selectable = !inner.is_empty()
        && !may_name_a_column(sql, inner)
        && top_level_items(sql, inner)
            .iter()
            .all(|v| !v.is_empty() && !v.iter().any(|t| t.is_word(sql, "DEFAULT")));
    if !is_selectable {
        return None;
    }
    let head_end = tokens[values_kw].start as usize;
    let head = rewrite(&sql[..head_end], tokens, r, target, false);
    let values = &sql[inner[0].start as usize..inner[inner.len() - 1].end as usize];
    Some(format!("{head}SELECT {values} {tail}"))
}

/// Whether values may name a column: a quoted name, or a bare word that is
/// neither a function's name (followed by `(`), a charset introducer nor
/// one of the few keywords a literal expression uses.
fn may_name_a_column(sql: &str, tokens: &[Token]) -> bool {
    const LITERAL_WORDS: &[&str] = &[
        "NULL",
        "TRUE",
        "FALSE",
        "AND",
        "OR",
        "NOT",
        "XOR",
        "IS",
        "IN",
        "LIKE",
        "BETWEEN",
        "DIV",
        "MOD",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "END",
        "DATE",
        "TIME",
        "TIMESTAMP",
        "INTERVAL",
        "MICROSECOND",
        "SECOND",
        "MINUTE",
        "HOUR",
        "DAY",
        "WEEK",
        "MONTH",
        "QUARTER",
        "YEAR",
        "CURRENT_DATE",
        "CURRENT_TIME",
        "CURRENT_TIMESTAMP",
        "LOCALTIME",
        "LOCALTIMESTAMP",
        "BINARY",
        "ESCAPE",
    ];
    tokens.iter().enumerate().any(|(i, t)| match t.kind {
        TokenKind::QuotedIdent => true,
        TokenKind::Word => {
            let is_call = tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, "("));
            let word = t.text(sql);
            !is_call
                && !word.starts_with('_')
                && !LITERAL_WORDS.iter().any(|w| w.eq_ignore_ascii_case(word))
        }
        _ => false,
    })
}

/// Whether an INSERT in the `(columns) VALUES` form leaves the partition
/// key `column` out of its column list (every row takes its default; a
/// prepared one runs on the partition of that default,
/// `conversions::route_default`).
pub fn insert_without_key_column(sql: &str, column: &str) -> bool {
    let Ok(tokens) = hscale_sql::tokenize(sql) else {
        return false;
    };
    let Some(open) = tokens.iter().position(|t| t.is_punct(sql, "(")) else {
        return false;
    };
    let Some(close) = tokens[open..]
        .iter()
        .position(|t| t.is_punct(sql, ")"))
        .map(|k| open + k)
    else {
        return false;
    };
    let is_values = tokens
        .get(close + 1)
        .is_some_and(|t| t.is_word(sql, "VALUES") || t.is_word(sql, "VALUE"));
    is_values
        && !tokens[open + 1..close]
            .split(|t| t.is_punct(sql, ","))
            .any(|c| {
                c.last()
                    .is_some_and(|t| unquote(t, sql).eq_ignore_ascii_case(column))
            })
}

/// For a prepared INSERT: the ordinals of the `?` giving each row's key,
/// when every row's key is a parameter.
pub fn insert_key_placeholders(sql: &str, column: &str) -> Option<Vec<usize>> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let open = tokens.iter().position(|t| t.is_punct(sql, "("))?;
    let close = open + tokens[open..].iter().position(|t| t.is_punct(sql, ")"))?;
    let key_pos = tokens[open + 1..close]
        .split(|t| t.is_punct(sql, ","))
        .position(|c| {
            c.last()
                .is_some_and(|t| unquote(t, sql).eq_ignore_ascii_case(column))
        })?;
    let values = close + 1;
    if !tokens
        .get(values)
        .is_some_and(|t| t.is_word(sql, "VALUES") || t.is_word(sql, "VALUE"))
    {
        return None;
    }
    let mut out = Vec::new();
    let mut i = values + 1;
    // Placeholders before token `i`, counted as `i` moves on.
    let (mut counted, mut counted_to) = (0, 0);
    while tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
        let mut depth = 0;
        let end = i + tokens[i..].iter().position(|t| {
            if t.is_punct(sql, "(") {
                depth += 1;
            } else if t.is_punct(sql, ")") {
                depth -= 1;
            }
            depth == 0
        })?;
        let row = &tokens[i + 1..end];
        let mut start = 0;
        let mut depth = 0;
        let mut fields = Vec::new();
        for (k, t) in row.iter().enumerate() {
            if t.is_punct(sql, "(") {
                depth += 1;
            } else if t.is_punct(sql, ")") {
                depth -= 1;
            } else if depth == 0 && t.is_punct(sql, ",") {
                fields.push(&row[start..k]);
                start = k + 1;
            }
        }
        fields.push(&row[start..]);
        match fields.get(key_pos)? {
            [p] if p.kind == TokenKind::Placeholder => {
                let at = counted_to + tokens[counted_to..].iter().position(|t| t == p)?;
                counted += tokens[counted_to..at]
                    .iter()
                    .filter(|t| t.kind == TokenKind::Placeholder)
                    .count();
                counted_to = at;
                out.push(counted);
            }
            _ => return None,
        }
        i = end + 1;
        if tokens.get(i).is_some_and(|t| t.is_punct(sql, ",")) {
            i += 1;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A row's values: its tokens split at the commas outside parentheses.
pub(super) fn top_level_items<'t>(sql: &str, row: &'t [Token]) -> Vec<&'t [Token]> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (k, t) in row.iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && t.is_punct(sql, ",") {
            out.push(&row[start..k]);
            start = k + 1;
        }
    }
    out.push(&row[start..]);
    out
}

/// Index of the first VALUES row's `(`: after the keyword VALUES (or
/// VALUE) outside parentheses, not a column of that name in the column
/// list (`(id, value) VALUES ...`).
pub(super) fn rows_first_start(tokens: &[Token], sql: &str, r: &TableRef) -> usize {
    let mut depth = 0usize;
    let values_kw = tokens[r.end..]
        .iter()
        .position(|t| {
            if t.is_punct(sql, "(") {
                depth += 1;
            } else if t.is_punct(sql, ")") {
                depth = depth.saturating_sub(1);
            }
            depth == 0 && (t.is_word(sql, "VALUES") || t.is_word(sql, "VALUE"))
        })
        .map_or(tokens.len() - 1, |p| r.end + p);
    (values_kw + 1).min(tokens.len() - 1)
}
