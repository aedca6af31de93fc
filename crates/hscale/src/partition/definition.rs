//! A table's definition as `SHOW CREATE TABLE` prints it, read into its
//! columns, keys and options: compared across partitions (a partition
//! whose definition differs is reported, `admin/show.rs`), and the ALTER
//! that brings a table back to a saved definition (an ALTER that failed
//! on a later partition is undone on the ones it changed,
//! `admin/all_or_nothing.rs`). No I/O.

use super::quote_ident;

/// One `SHOW CREATE TABLE` answer, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// (name, the rest of its line), in the table's order.
    pub columns: Vec<(String, String)>,
    /// Keys and constraints: each line as printed (`PRIMARY KEY (...)`,
    /// `KEY `i` (...)`, `CONSTRAINT `c` CHECK (...)`, ...).
    pub keys: Vec<String>,
    /// The table options after the closing parenthesis, without
    /// `AUTO_INCREMENT=n` (a counter, not a definition).
    pub options: Vec<String>,
}

impl Definition {
    /// Read `ddl` (`SHOW CREATE TABLE`'s second column); `None` when it is
    /// not in the server's layout.
    pub fn parse(ddl: &str) -> Option<Definition> {
        let open = ddl.find("(\n")?;
        let close = ddl.rfind("\n)")?;
        let body = ddl.get(open + 2..close)?;
        let mut columns = Vec::new();
        let mut keys = Vec::new();
        for line in body.lines() {
            let line = line.trim();
            let line = line.strip_suffix(',').unwrap_or(line);
            if line.starts_with('`') {
                let (name, rest) = split_ident(line)?;
                columns.push((name, rest.trim_start().to_string()));
            } else {
                keys.push(line.to_string());
            }
        }
        let options = options(ddl.get(close + 2..)?.trim());
        Some(Definition {
            columns,
            keys,
            options,
        })
    }

    /// The same definition: columns in the same order, the same options,
    /// the same keys in any order (a key added back is listed where the
    /// server puts it).
    pub fn is_same(&self, other: &Definition) -> bool {
        let sorted = |k: &[String]| {
            let mut k = k.to_vec();
            k.sort();
            k
        };
        self.columns == other.columns
            && self.options == other.options
            && sorted(&self.keys) == sorted(&other.keys)
    }

    /// The `ALTER TABLE` clauses that turn a table of definition `self`
    /// into one of definition `want`, or why they cannot: a column of
    /// `want` that `self` lacks (dropped: its values are gone). `renamed`
    /// are the statement's column renames (old name, new name,
    /// [`column_renames`]): renamed back.
    pub fn alter_to(
        &self,
        want: &Definition,
        renamed: &[(String, String)],
    ) -> Result<Vec<String>, String> {
        let has = |cols: &[(String, String)], n: &str| cols.iter().any(|(c, _)| c == n);
        let mut clauses = Vec::new();
        // Keys and constraints that `want` lacks go first.
        for k in self.keys.iter().filter(|k| !want.keys.contains(k)) {
            clauses.push(drop_key(k)?);
        }
        // (name now, name before) of the columns renamed back.
        let renamed: Vec<(String, String)> = renamed
            .iter()
            .filter(|(old, new)| {
                has(&self.columns, new)
                    && !has(&want.columns, new)
                    && has(&want.columns, old)
                    && !has(&self.columns, old)
            })
            .map(|(old, new)| (new.clone(), old.clone()))
            .collect();
        for (name, _) in &self.columns {
            if !has(&want.columns, name) && !renamed.iter().any(|(now, _)| now == name) {
                clauses.push(format!("DROP COLUMN {}", quote_ident(name)));
            }
        }
        let mut previous: Option<&str> = None;
        for (name, def) in &want.columns {
            let place = match previous {
                None => "FIRST".to_string(),
                Some(p) => format!("AFTER {}", quote_ident(p)),
            };
            let from = renamed.iter().find(|(_, old)| old == name).map(|(n, _)| n);
            match from {
                Some(now) => clauses.push(format!(
                    "CHANGE COLUMN {} {} {def} {place}",
                    quote_ident(now),
                    quote_ident(name)
                )),
                None if has(&self.columns, name) => {
                    clauses.push(format!("MODIFY COLUMN {} {def} {place}", quote_ident(name)))
                }
                None => {
                    return Err(format!(
                        "column {} was dropped: its values are gone",
                        quote_ident(name)
                    ))
                }
            }
            previous = Some(name);
        }
        for k in want.keys.iter().filter(|k| !self.keys.contains(k)) {
            clauses.push(format!("ADD {k}"));
        }
        if self.options != want.options {
            for o in &self.options {
                let key = option_key(o);
                if !want.options.iter().any(|w| option_key(w) == key) {
                    match key {
                        "COMMENT" => clauses.push("COMMENT=''".into()),
                        "ROW_FORMAT" => clauses.push("ROW_FORMAT=DEFAULT".into()),
                        "KEY_BLOCK_SIZE" => clauses.push("KEY_BLOCK_SIZE=0".into()),
                        _ => return Err(format!("table option {o} cannot be taken back")),
                    }
                }
            }
            clauses.extend(want.options.iter().cloned());
        }
        Ok(clauses)
    }
}

/// The column renames of an ALTER TABLE's text: `RENAME COLUMN a TO b`
/// and `CHANGE [COLUMN] a b`, as (old name, new name). Names with spaces
/// are not read (their partition is then reported as not brought back).
pub fn column_renames(sql: &str) -> Vec<(String, String)> {
    let words: Vec<String> = sql
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(|w| {
            w.strip_prefix('`')
                .and_then(|w| w.strip_suffix('`'))
                .unwrap_or(w)
                .replace("``", "`")
        })
        .collect();
    let is = |i: usize, w: &str| words.get(i).is_some_and(|x| x.eq_ignore_ascii_case(w));
    let mut out = Vec::new();
    for i in 0..words.len() {
        if is(i, "RENAME") && is(i + 1, "COLUMN") && is(i + 3, "TO") {
            if let (Some(a), Some(b)) = (words.get(i + 2), words.get(i + 4)) {
                out.push((a.clone(), b.clone()));
            }
        } else if is(i, "CHANGE") {
            let at = i + 1 + usize::from(is(i + 1, "COLUMN"));
            if let (Some(a), Some(b)) = (words.get(at), words.get(at + 1)) {
                out.push((a.clone(), b.clone()));
            }
        }
    }
    out
}

/// A backquoted identifier at the start of `s` and what follows it.
fn split_ident(s: &str) -> Option<(String, &str)> {
    let mut name = String::new();
    let mut chars = s.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        if c == '`' {
            if chars.peek().map(|&(_, n)| n) == Some('`') {
                chars.next();
                name.push('`');
                continue;
            }
            return Some((name, &s[i + 1..]));
        }
        name.push(c);
    }
    None
}

/// Table options (`ENGINE=InnoDB DEFAULT CHARSET=latin1 COMMENT='a b'`),
/// one each, quotes respected; without `AUTO_INCREMENT=n`.
fn options(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut quote = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' if quote && chars.peek() == Some(&'\'') => {
                cur.push_str("''");
                chars.next();
            }
            '\'' => {
                quote = !quote;
                cur.push(c);
            }
            ' ' if !quote => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    // `DEFAULT CHARSET=x` is one option printed as two words.
    let mut joined: Vec<String> = Vec::new();
    for o in out {
        match joined.last_mut() {
            Some(last) if last == "DEFAULT" => {
                last.push(' ');
                last.push_str(&o);
            }
            _ => joined.push(o),
        }
    }
    joined.retain(|o| !o.starts_with("AUTO_INCREMENT="));
    joined
}

fn option_key(o: &str) -> &str {
    o.split('=').next().unwrap_or(o)
}

/// The clause that drops key or constraint line `k`.
fn drop_key(k: &str) -> Result<String, String> {
    let named = |rest: &str| split_ident(rest.trim_start()).map(|(n, _)| quote_ident(&n));
    let unknown = || format!("cannot drop {k}");
    if k.starts_with("PRIMARY KEY") {
        return Ok("DROP PRIMARY KEY".into());
    }
    if let Some(rest) = k.strip_prefix("CONSTRAINT ") {
        let (name, after) = split_ident(rest.trim_start()).ok_or_else(unknown)?;
        let what = if after.trim_start().starts_with("FOREIGN KEY") {
            "FOREIGN KEY"
        } else {
            "CONSTRAINT"
        };
        return Ok(format!("DROP {what} {}", quote_ident(&name)));
    }
    for prefix in ["UNIQUE KEY ", "FULLTEXT KEY ", "SPATIAL KEY ", "KEY "] {
        if let Some(rest) = k.strip_prefix(prefix) {
            return Ok(format!("DROP KEY {}", named(rest).ok_or_else(unknown)?));
        }
    }
    Err(unknown())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `k` int(11) DEFAULT NULL,\n  `w` varchar(10) DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  KEY `i_k` (`k`)\n) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci";

    #[test]
    fn reads_columns_keys_and_options() {
        let d = Definition::parse(BEFORE).unwrap();
        assert_eq!(d.columns[1], ("k".into(), "int(11) DEFAULT NULL".into()));
        assert_eq!(d.keys, vec!["PRIMARY KEY (`id`)", "KEY `i_k` (`k`)"]);
        assert_eq!(
            d.options,
            vec![
                "ENGINE=InnoDB",
                "DEFAULT CHARSET=latin1",
                "COLLATE=latin1_swedish_ci"
            ]
        );
    }

    #[test]
    fn the_way_back_from_a_changed_table() {
        let after = "CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `k` int(10) unsigned DEFAULT NULL,\n  `z` int(11) NOT NULL DEFAULT 1,\n  `w2` varchar(10) DEFAULT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci COMMENT='it''s'";
        let (now, want) = (
            Definition::parse(after).unwrap(),
            Definition::parse(BEFORE).unwrap(),
        );
        assert_eq!(now.options.last().unwrap(), "COMMENT='it''s'");
        let renames =
            column_renames("ALTER TABLE t MODIFY k INT UNSIGNED, RENAME COLUMN `w` TO w2");
        assert_eq!(renames, vec![("w".to_string(), "w2".to_string())]);
        let clauses = now.alter_to(&want, &renames).unwrap();
        assert_eq!(
            clauses,
            vec![
                "DROP COLUMN `z`",
                "MODIFY COLUMN `id` int(11) NOT NULL FIRST",
                "MODIFY COLUMN `k` int(11) DEFAULT NULL AFTER `id`",
                "CHANGE COLUMN `w2` `w` varchar(10) DEFAULT NULL AFTER `k`",
                "ADD KEY `i_k` (`k`)",
                "COMMENT=''",
                "ENGINE=InnoDB",
                "DEFAULT CHARSET=latin1",
                "COLLATE=latin1_swedish_ci",
            ]
        );
        // A dropped column cannot come back.
        let dropped = Definition::parse(
            "CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `w` varchar(10) DEFAULT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB",
        )
        .unwrap();
        assert!(dropped.alter_to(&want, &[]).unwrap_err().contains("`k`"));
        // Without the rename in the statement, `w2` is no `w`.
        assert!(now.alter_to(&want, &[]).unwrap_err().contains("`w`"));
        assert_eq!(
            column_renames("ALTER TABLE t CHANGE COLUMN a b INT, CHANGE c d INT"),
            vec![("a".into(), "b".into()), ("c".into(), "d".into())]
        );
    }

    #[test]
    fn keys_and_constraints_are_dropped_by_name() {
        assert_eq!(
            drop_key("UNIQUE KEY `u``x` (`a`)").unwrap(),
            "DROP KEY `u``x`"
        );
        assert_eq!(
            drop_key("CONSTRAINT `c` CHECK (`k` > 0)").unwrap(),
            "DROP CONSTRAINT `c`"
        );
        assert_eq!(
            drop_key("CONSTRAINT `f` FOREIGN KEY (`a`) REFERENCES `p` (`id`)").unwrap(),
            "DROP FOREIGN KEY `f`"
        );
    }
}
