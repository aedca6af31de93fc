//! `SELECT SQL_CALC_FOUND_ROWS ...` over several partitions: FOUND_ROWS()
//! after it is the rows the SELECT finds without its LIMIT, over the whole
//! table. No partition knows that number, so the session counts it first
//! with a read of its own, planned like any other
//! (`session/query.rs::calc_found_rows`), then runs the SELECT without
//! SQL_CALC_FOUND_ROWS.
//!
//! ```text
//!  SELECT SQL_CALC_FOUND_ROWS l FROM f WHERE w ORDER BY o LIMIT n
//!    count:  SELECT COUNT(*) FROM f WHERE w
//!  ... with GROUP BY, HAVING, DISTINCT, aggregates or window functions:
//!    count:  SELECT COUNT(*) FROM (SELECT l FROM f WHERE w GROUP BY ..) AS hscale_found_rows
//! ```

use hscale_sql::{Token, TokenKind};

use super::is_any_word;
use super::merge::select::{AGGREGATES, UNMERGED_AGGREGATES};

/// The SELECT without SQL_CALC_FOUND_ROWS, and the read that counts its
/// rows without LIMIT; `None` for shapes this does not count (several
/// statements, UNION, INTO, no FROM).
pub fn calc_found_rows(sql: &str) -> Option<(String, String)> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    if !tokens.first()?.is_word(sql, "SELECT") {
        return None;
    }
    let mut depth = 0i32;
    let mut calc = None;
    let mut from = None;
    let mut cut = None;
    let mut is_grouped = false;
    for (i, t) in tokens.iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
            continue;
        }
        if t.is_punct(sql, ")") {
            depth -= 1;
            continue;
        }
        if t.kind == TokenKind::Semicolon
            || is_any_word(
                t,
                sql,
                &["UNION", "EXCEPT", "INTERSECT", "INTO", "PROCEDURE"],
            )
        {
            return None;
        }
        if is_aggregate_call(sql, &tokens, i) {
            is_grouped = true;
        }
        if depth != 0 {
            continue;
        }
        if t.is_word(sql, "SQL_CALC_FOUND_ROWS") && from.is_none() {
            calc = Some(i);
        } else if t.is_word(sql, "FROM") && from.is_none() {
            from = Some(i);
        } else if from.is_some()
            && cut.is_none()
            && is_any_word(t, sql, &["ORDER", "LIMIT", "FOR", "LOCK"])
        {
            cut = Some(i);
        } else if is_any_word(
            t,
            sql,
            &["GROUP", "HAVING", "DISTINCT", "DISTINCTROW", "WINDOW"],
        ) {
            is_grouped = true;
        }
    }
    let calc = &tokens[calc?];
    let from = &tokens[from?];
    let end = cut.map_or(sql.len(), |c| tokens[c].start as usize);
    let stripped = format!(
        "{}{}{}",
        &sql[..calc.start as usize],
        " ".repeat((calc.end - calc.start) as usize),
        &sql[calc.end as usize..]
    );
    let count = if is_grouped {
        let select_end = tokens[0].end as usize;
        format!(
            "SELECT COUNT(*) FROM (SELECT{}) AS hscale_found_rows",
            stripped[select_end..end].trim_end()
        )
    } else {
        format!("SELECT COUNT(*) {}", &sql[from.start as usize..end])
    };
    Some((count.trim_end().to_string(), stripped))
}

/// An aggregate's name followed by `(` (or OVER: a window function).
/// Whether token `i` calls a group aggregate (the merge's lists: every
/// function that makes a SELECT's rows not its FROM and WHERE's rows) or
/// is a window's OVER.
fn is_aggregate_call(sql: &str, tokens: &[Token], i: usize) -> bool {
    (is_any_word(&tokens[i], sql, AGGREGATES) || is_any_word(&tokens[i], sql, UNMERGED_AGGREGATES))
        && tokens.get(i + 1).is_some_and(|n| n.is_punct(sql, "("))
        || tokens[i].is_word(sql, "OVER")
}

#[cfg(test)]
mod tests {
    use super::calc_found_rows;

    #[test]
    fn counts_without_the_limit() {
        let (count, stripped) = calc_found_rows(
            "SELECT SQL_CALC_FOUND_ROWS uid FROM acct WHERE flags = 3 ORDER BY uid LIMIT 4",
        )
        .unwrap();
        assert_eq!(count, "SELECT COUNT(*) FROM acct WHERE flags = 3");
        assert_eq!(
            stripped,
            "SELECT                     uid FROM acct WHERE flags = 3 ORDER BY uid LIMIT 4"
        );
        let (count, _) = calc_found_rows(
            "SELECT SQL_CALC_FOUND_ROWS flags, COUNT(*) FROM acct GROUP BY flags LIMIT 2",
        )
        .unwrap();
        assert_eq!(
            count,
            "SELECT COUNT(*) FROM (SELECT                     flags, COUNT(*) FROM acct GROUP BY flags) AS hscale_found_rows"
        );
        let (count, _) = calc_found_rows(
            "SELECT SQL_CALC_FOUND_ROWS DISTINCT handle FROM acct WHERE uid IN (SELECT 1) LIMIT 3",
        )
        .unwrap();
        assert!(count.starts_with("SELECT COUNT(*) FROM (SELECT"), "{count}");
        for no in [
            "SELECT SQL_CALC_FOUND_ROWS 1",
            "SELECT SQL_CALC_FOUND_ROWS a FROM t UNION SELECT b FROM u",
            "SELECT SQL_CALC_FOUND_ROWS a INTO @x FROM t LIMIT 1",
            "SELECT a FROM t LIMIT 1",
        ] {
            assert_eq!(calc_found_rows(no), None, "{no}");
        }
    }
}
