//! Views that read partitioned or global tables: kept by hscale in the
//! dictionary (`hscale.views` on the main backend), since a view on one
//! backend cannot read the other backends' partitions. A query naming
//! such a view is planned with the view written in as a derived table
//! (`router::views::expand`), so the planner's pushdown, merge and ship
//! apply to it as to any derived table.
//!
//! The statements on views (`CREATE [OR REPLACE] VIEW`, `ALTER VIEW`,
//! `DROP VIEW`, `SHOW CREATE VIEW`) are read by `router::views`; the
//! errors one server gives for them are [`ViewError`].

use hscale_sql::TokenKind;

use crate::dictionary::TableName;

/// One view hscale keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub name: TableName,
    /// The view's own column list (`CREATE VIEW v (a, b) AS ...`).
    pub columns: Option<Vec<String>>,
    /// The SELECT, every table name in it qualified with its database
    /// (the view's database for unqualified ones), so that it reads the
    /// same tables whatever database the query naming the view is in.
    pub select: String,
    /// With a column list: the SELECT's own column names, in order (read
    /// when the view was created), which the list renames.
    pub inner: Vec<String>,
    pub algorithm: String,
    /// `` `user`@`host` ``, as SHOW CREATE VIEW prints it.
    pub definer: String,
    /// `DEFINER` or `INVOKER` (kept and shown; the proxy user's rights on
    /// the backends apply either way).
    pub security: String,
    /// `CASCADED` or `LOCAL` for WITH [CASCADED | LOCAL] CHECK OPTION.
    pub check_option: Option<String>,
    /// The partitioned tables, global tables and views the SELECT names:
    /// a view whose read is gone from the dictionary answers 1356, as one
    /// server answers for a view whose table was dropped.
    pub reads: Vec<TableName>,
}

impl View {
    /// The derived table standing for the view in a query.
    pub fn derived_table(&self) -> String {
        match &self.columns {
            None => format!("({})", self.select),
            Some(cols) => {
                let list: Vec<String> = self
                    .inner
                    .iter()
                    .zip(cols)
                    .map(|(i, c)| format!("{} AS {}", quote(i), quote(c)))
                    .collect();
                format!(
                    "(SELECT {} FROM ({}) AS {})",
                    list.join(", "),
                    self.select,
                    quote(&self.name.table)
                )
            }
        }
    }

    /// What SHOW CREATE VIEW prints as `Create View`.
    pub fn create_statement(&self) -> String {
        let mut s = format!(
            "CREATE ALGORITHM={} DEFINER={} SQL SECURITY {} VIEW {}",
            self.algorithm,
            self.definer,
            self.security,
            quote(&self.name.table)
        );
        if let Some(cols) = &self.columns {
            s.push_str(&format!(" ({})", encode_names(cols)));
        }
        s.push_str(" AS ");
        s.push_str(&self.select);
        if let Some(c) = &self.check_option {
            s.push_str(&format!(" WITH {c} CHECK OPTION"));
        }
        s
    }
}

/// A statement on views that one server refuses, with its error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// 1050
    #[error("Table '{0}' already exists")]
    Exists(String),
    /// 1347
    #[error("'{}.{}' is not of type 'VIEW'", .0.db, .0.table)]
    NotView(TableName),
    /// 4092
    #[error("Unknown VIEW: '{0}'")]
    Unknown(String),
    /// 1146
    #[error("Table '{}.{}' doesn't exist", .0.db, .0.table)]
    NoTable(TableName),
    /// 1356
    #[error("View '{}.{}' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them", .0.db, .0.table)]
    Invalid(TableName),
    /// 1353
    #[error("View's SELECT and view's field list have different column counts")]
    ColumnCount,
    /// 1046
    #[error("No database selected")]
    NoDatabase,
    /// 1747: `t PARTITION (p)` of a partitioned table, which is no
    /// partitioned table to its backends (nor to one server holding it).
    #[error("PARTITION () clause on non partitioned table")]
    PartitionClause,
}

impl ViewError {
    /// The server's error code and SQLSTATE.
    pub fn code(&self) -> (u16, &'static [u8; 5]) {
        match self {
            ViewError::Exists(_) => (1050, b"42S01"),
            ViewError::NotView(_) => (1347, b"HY000"),
            ViewError::Unknown(_) => (4092, b"42S02"),
            ViewError::NoTable(_) => (1146, b"42S02"),
            ViewError::Invalid(_) => (1356, b"HY000"),
            ViewError::ColumnCount => (1353, b"HY000"),
            ViewError::NoDatabase => (1046, b"3D000"),
            ViewError::PartitionClause => (1747, b"HY000"),
        }
    }
}

/// `` `name` `` with backquotes doubled.
pub fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// Names as a list of quoted identifiers, `` `a`,`b` ``.
pub fn encode_names(names: &[String]) -> String {
    names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(",")
}

/// The names of [`encode_names`]' list.
pub fn decode_names(list: &str) -> Vec<String> {
    let Ok(tokens) = hscale_sql::tokenize(list) else {
        return Vec::new();
    };
    tokens
        .iter()
        .filter(|t| matches!(t.kind, TokenKind::QuotedIdent | TokenKind::Word))
        .map(|t| {
            let s = t.text(list);
            if t.kind == TokenKind::QuotedIdent {
                s[1..s.len() - 1].replace("``", "`")
            } else {
                s.to_string()
            }
        })
        .collect()
}

/// Table names as `` `db`.`t`,`db`.`u` ``.
pub fn encode_tables(names: &[TableName]) -> String {
    names
        .iter()
        .map(|n| format!("{}.{}", quote(&n.db), quote(&n.table)))
        .collect::<Vec<_>>()
        .join(",")
}

/// The names of [`encode_tables`]' list.
pub fn decode_tables(list: &str) -> Vec<TableName> {
    decode_names(list)
        .chunks(2)
        .filter_map(|p| match p {
            [db, t] => Some(TableName::new(db, t)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip() {
        let names = vec!["a".to_string(), "we`ird, name".to_string()];
        assert_eq!(decode_names(&encode_names(&names)), names);
        let tables = vec![TableName::new("d", "t"), TableName::new("e`", "u v")];
        assert_eq!(decode_tables(&encode_tables(&tables)), tables);
    }
}
