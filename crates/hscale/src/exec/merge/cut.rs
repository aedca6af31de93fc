//! The warnings of the rows an ORDER BY ... LIMIT merge sends (issue 29,
//! F10). One server evaluates a select list only for the rows it sends:
//! neither the rows OFFSET skips nor the ones past the LIMIT raise its
//! warnings (an expression ORDER BY sorts by is evaluated for every row
//! it sorts, and again for each row sent; a WHERE condition for every row
//! examined). Each partition's statement runs with `LIMIT offset + n`, so
//! it warns for up to offset + n rows of its own. A part that warned and
//! had rows the merge skipped or cut is run again on its connection for
//! the rows the merge sent of it, `LIMIT skipped, sent` (after its rows
//! were read: nothing reaches the client twice); its connection then
//! lists that statement's warnings, which are gathered as the part's.

use super::part::Part;

/// The most rows (OFFSET + LIMIT) whose places in the statement's rows a
/// merge keeps, to number the warnings of the rows run again as one
/// server numbers them (the row's place, OFFSET's rows counted).
pub(super) const MAX_TRACKED_ROWS: u64 = 1 << 20;

/// The part's statement for the rows the merge used of it: its trailing
/// `LIMIT n` written `LIMIT skipped, sent`; `None` without one.
pub(super) fn used_rows_sql(fragment: &str, skipped: u64, sent: u64) -> Option<String> {
    let at = fragment.rfind(" LIMIT ")?;
    let n = &fragment[at + 7..];
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(format!("{} LIMIT {skipped}, {sent}", &fragment[..at]))
}

/// Whether `fragment` has a condition evaluated for every row examined
/// (WHERE, HAVING, a join's ON): its warnings are raised for rows one
/// server examines whether or not it sends them, and a run for fewer rows
/// (`LIMIT skipped, sent`, which the server may even skip for 0 rows)
/// examines others than the statement's did. Such a part keeps its own
/// run's warnings (the random differential found the count too low with
/// them run again: `WHERE d = '2.25 '` against a DECIMAL warns per row).
fn filters_rows(fragment: &str) -> bool {
    match hscale_sql::tokenize(fragment) {
        Ok(tokens) => tokens.iter().any(|t| {
            t.is_word(fragment, "WHERE")
                || t.is_word(fragment, "HAVING")
                || t.is_word(fragment, "ON")
        }),
        Err(_) => true,
    }
}

/// Run the part's statement again for the rows the merge used of it
/// (`skipped` by OFFSET, then `sent`) when the merge left some of its rows
/// unsent (`is_cut`) and it warned: its warning count becomes that run's
/// (`true`; its rows are numbered from skipped + 1, as the merge's).
/// `is_text_as_sent`: the fragment reads the same on the connection as
/// when it ran (a client whose text is UTF-8, or ASCII).
pub(super) async fn rewarn_used_rows(
    part: &mut Part,
    (skipped, sent): (u64, u64),
    is_cut: bool,
    is_text_as_sent: bool,
) -> bool {
    if part.warnings == 0 || !is_cut || part.branches != 1 || part.is_err {
        return false;
    }
    let Some(sql) = part
        .fragment
        .as_deref()
        .filter(|f| is_text_as_sent || f.is_ascii())
        .filter(|f| !filters_rows(f))
        .and_then(|f| used_rows_sql(f, skipped, sent))
    else {
        return false;
    };
    let Some(c) = part.conn.as_mut() else {
        return false;
    };
    if c.is_broken && !part.holds_copies {
        return false;
    }
    let count = match c.query_rows(&sql).await {
        Ok(Ok(_)) => match c.query_rows("SHOW COUNT(*) WARNINGS").await {
            Ok(Ok(r)) => r
                .rows
                .first()
                .and_then(|row| row.first().cloned().flatten())
                .and_then(|v| String::from_utf8(v).ok())
                .and_then(|v| v.parse::<u16>().ok()),
            _ => None,
        },
        _ => None,
    };
    match count {
        Some(n) => {
            part.warnings = n;
            true
        }
        // Its list is no longer the part's: not gathered, not reused.
        None => {
            c.is_broken = true;
            part.holds_copies = false;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trailing_limit_becomes_the_used_rows() {
        assert_eq!(
            used_rows_sql("SELECT a FROM t ORDER BY a LIMIT 13", 3, 2).as_deref(),
            Some("SELECT a FROM t ORDER BY a LIMIT 3, 2")
        );
        assert_eq!(used_rows_sql("SELECT a FROM t ORDER BY a", 0, 1), None);
        assert_eq!(
            used_rows_sql("SELECT a FROM t LIMIT 5 FOR UPDATE", 0, 1),
            None
        );
    }
}
