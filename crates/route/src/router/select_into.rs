//! `SELECT ... INTO @a, @b` over partitioned tables: the SELECT is read
//! like any other (merged over its partitions), then one server assigns
//! the variables from a SELECT of the values it found, on the connection
//! that holds the session's variables (`exec/steps/select_into.rs`).
//!
//! ```text
//!  SELECT l1, l2 [..] INTO @a, @b [..]       one row:  SELECT v1, v2 INTO @a, @b
//!                                            no row:   SELECT NULL, NULL INTO @a, @b FROM DUAL WHERE FALSE   (1329)
//!                                            rows:     SELECT NULL, NULL INTO @a, @b FROM (two rows) AS r    (1172)
//! ```
//!
//! The server answers each as it answers the client's statement: affected
//! rows 1, warning 1329, error 1172, or 1222 when the variables are not
//! as many as the columns.

use hscale_sql::TokenKind;

/// The SELECT without its `INTO @vars` clause, and that clause's
/// variables as written; `None` when the statement is no SELECT into user
/// variables (INTO OUTFILE, DUMPFILE, local variables, several
/// statements).
pub fn select_into_variables(sql: &str) -> Option<SelectInto> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let first = tokens.iter().find(|t| !t.is_punct(sql, "("))?;
    if !first.is_word(sql, "SELECT") || tokens.iter().any(|t| t.kind == TokenKind::Semicolon) {
        return None;
    }
    let mut depth = 0i32;
    let mut into = None;
    for (i, t) in tokens.iter().enumerate() {
        if t.is_punct(sql, "(") {
            depth += 1;
        } else if t.is_punct(sql, ")") {
            depth -= 1;
        } else if t.is_word(sql, "INTO") {
            if depth != 0 || into.is_some() {
                return None;
            }
            into = Some(i);
        }
    }
    let at = into?;
    // @a [, @b ...]
    let mut end = at + 1;
    loop {
        if tokens.get(end)?.kind != TokenKind::UserVar {
            return None;
        }
        end += 1;
        match tokens.get(end) {
            Some(c) if c.is_punct(sql, ",") => end += 1,
            _ => break,
        }
    }
    let (a, b) = (tokens[at].start as usize, tokens[end - 1].end as usize);
    let vars = sql[tokens[at + 1].start as usize..b].to_string();
    let select = format!("{}{}", &sql[..a], &sql[b..]);
    // INTO after FROM: the server warns that the position is deprecated
    // (1287); the assignment keeps it there.
    let is_at_end = tokens[..at].iter().any(|t| t.is_word(sql, "FROM"));
    Some(SelectInto {
        select,
        vars,
        is_at_end,
    })
}

/// A SELECT into user variables, read as [`select_into_variables`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectInto {
    /// The SELECT without its INTO clause.
    pub select: String,
    /// The variables as written (`@a, @b`).
    pub vars: String,
    /// INTO came after FROM.
    pub is_at_end: bool,
}

impl SelectInto {
    /// The SELECT one server assigns the variables with, given the `rows`
    /// (each of `columns` literals) the client's SELECT found.
    pub fn assignment(&self, columns: usize, rows: &[Vec<String>]) -> String {
        let nulls = vec!["NULL"; columns.max(1)].join(", ");
        let (values, from) = match rows {
            [row] => (row.join(", "), "FROM DUAL"),
            [] => (nulls, "FROM DUAL WHERE FALSE"),
            // The server assigns the first row, then answers 1172.
            [row, ..] => (
                row.join(", "),
                "FROM (SELECT 1 UNION ALL SELECT 2) AS hscale_rows",
            ),
        };
        let vars = &self.vars;
        if self.is_at_end {
            format!("SELECT {values} {from} INTO {vars}")
        } else {
            format!("SELECT {values} INTO {vars} {from}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_clause() {
        let s = select_into_variables("SELECT COUNT(*) INTO @v FROM acct").unwrap();
        assert_eq!(
            (s.select.as_str(), s.vars.as_str(), s.is_at_end),
            ("SELECT COUNT(*)  FROM acct", "@v", false)
        );
        let s =
            select_into_variables("SELECT a, b FROM t ORDER BY a LIMIT 1 INTO @x, @`y`").unwrap();
        assert_eq!(
            (s.select.as_str(), s.vars.as_str(), s.is_at_end),
            ("SELECT a, b FROM t ORDER BY a LIMIT 1 ", "@x, @`y`", true)
        );
        assert_eq!(
            s.assignment(2, &[vec!["1".into(), "'x'".into()]]),
            "SELECT 1, 'x' FROM DUAL INTO @x, @`y`"
        );
        for no in [
            "SELECT a INTO OUTFILE '/tmp/x' FROM t",
            "SELECT a INTO x FROM t",
            "INSERT INTO t SELECT 1",
            "SELECT a FROM t",
            "SELECT (SELECT 1 INTO @a) FROM t",
        ] {
            assert_eq!(select_into_variables(no), None, "{no}");
        }
        let s = select_into_variables("SELECT a INTO @a FROM t").unwrap();
        assert_eq!(
            s.assignment(1, &[]),
            "SELECT NULL INTO @a FROM DUAL WHERE FALSE"
        );
    }
}
