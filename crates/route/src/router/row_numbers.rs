//! The row numbers of a split INSERT: which rows of the client's
//! statement each partition's statement holds, so that "at row N" in a
//! part's warnings and errors says the client's row as one server does
//! (`exec/conditions`).

use crate::dictionary::Target;

/// The rows of an INSERT's VALUES list, each as its text `( ... )`: the
/// rows after the first top-level VALUES (or VALUE).
fn values_rows(sql: &str) -> Option<Vec<&str>> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let mut depth = 0usize;
    let mut at = None;
    for (i, t) in tokens.iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && (t.is_word(sql, "VALUES") || t.is_word(sql, "VALUE")) {
            at = Some(i + 1);
            break;
        }
    }
    let mut i = at?;
    let mut rows = Vec::new();
    while tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
        let mut depth = 0usize;
        let end = tokens[i..].iter().position(|t| {
            if t.is_punct(sql, "(") {
                depth += 1;
            } else if t.is_punct(sql, ")") {
                depth -= 1;
                return depth == 0;
            }
            false
        })? + i;
        rows.push(&sql[tokens[i].start as usize..tokens[end].end as usize]);
        i = end + 1;
        if !tokens.get(i).is_some_and(|t| t.is_punct(sql, ",")) {
            break;
        }
        i += 1;
    }
    Some(rows)
}

/// For an INSERT `sql` split into `parts` (`plan_insert`): the row numbers
/// (from 1) in `sql` of each part's rows, in the part's order, so that
/// "at row N" in a part's warnings and errors can say the statement's row
/// as one server does. A part's rows are rows of `sql`, in their order;
/// rows of the same text have the same key, so they are in the same part.
/// `None` when a part's rows are not found so.
pub fn insert_part_rows(sql: &str, parts: &[(Target, String)]) -> Option<Vec<Vec<u32>>> {
    let mut by_text: std::collections::HashMap<&str, std::collections::VecDeque<u32>> =
        std::collections::HashMap::new();
    for (n, row) in values_rows(sql)?.into_iter().enumerate() {
        by_text.entry(row).or_default().push_back(n as u32 + 1);
    }
    parts
        .iter()
        .map(|(_, part)| match values_rows(part) {
            Some(rows) => rows
                .into_iter()
                .map(|row| by_text.get_mut(row)?.pop_front())
                .collect(),
            // A row run as `INSERT ... SELECT values tail` (`selected_row`):
            // the statement's row whose text its SELECT list starts with.
            None => {
                let list = selected_list(part)?;
                let row = by_text
                    .keys()
                    .filter(|r| {
                        list.strip_prefix(inner(r).trim())
                            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
                    })
                    .max_by_key(|r| r.len())
                    .copied()?;
                Some(vec![by_text.get_mut(row)?.pop_front()?])
            }
        })
        .collect()
}

/// A VALUES row's text without its parentheses.
fn inner(row: &str) -> &str {
    row.strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(row)
}

/// The text after the top-level SELECT of an INSERT ... SELECT.
fn selected_list(sql: &str) -> Option<&str> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let mut depth = 0usize;
    for t in &tokens {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && t.is_word(sql, "SELECT") {
            return sql.get(t.end as usize..).map(str::trim_start);
        }
    }
    None
}
