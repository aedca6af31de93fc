//! `SHOW INDEX` of a partitioned table with the figures one server
//! holding all the rows would show: answered with the server's column
//! definitions from its default partition, the table's name, and each
//! index's Cardinality estimated over every partition
//! (`admin/figures.rs`; estimates, as the server's own are). Text and
//! prepared (`commands.rs` answers an execution with binary rows).
//!
//! `SHOW TABLE STATUS` of a database with partitioned tables is a
//! rewrite (`exec/rewrite.rs`: the SELECT over
//! information_schema.TABLES it is on a server,
//! `hscale_sql::show::table_status_sql`, with the sums of
//! [`Bindings::summed_figures`] in place), text and prepared alike.
//!
//! A text statement that starts otherwise than with SHOW costs one
//! comparison (`session/query.rs`, before it asks [`Bindings::index_table`]).

use hscale_route::dictionary::{PartitionedTable, TableName};
use hscale_sql::show::Summed;
use hscale_sql::{Token, TokenKind};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{Bindings, Exec};
use crate::admin::figures::{index_cardinality, table_figures};
use crate::error::ProxyError;

/// An identifier token's name.
fn ident(t: &Token, sql: &str) -> Option<String> {
    match t.kind {
        TokenKind::Word => Some(t.text(sql).to_string()),
        TokenKind::QuotedIdent => {
            let s = t.text(sql);
            Some(s.get(1..s.len().saturating_sub(1))?.replace("``", "`"))
        }
        _ => None,
    }
}

impl Bindings {
    /// The partitioned table of `SHOW {INDEX | INDEXES | KEYS} {FROM | IN}
    /// t [{FROM | IN} db]`; `None` for any other statement.
    pub fn index_table(&self, sql: &str) -> Option<PartitionedTable> {
        if self.ctx.partitioning.is_empty() {
            return None;
        }
        let tokens = hscale_sql::show::show_tokens(sql)?;
        let t = &tokens[..];
        let word = |i: usize, w: &str| t.get(i).is_some_and(|x| x.is_word(sql, w));
        if !((word(1, "INDEX") || word(1, "INDEXES") || word(1, "KEYS"))
            && (word(2, "FROM") || word(2, "IN")))
        {
            return None;
        }
        let (db, table) = match &t[3..] {
            [d, dot, n] if dot.is_punct(sql, ".") => (ident(d, sql), ident(n, sql)),
            [n] => (None, ident(n, sql)),
            [n, f, d] if f.is_word(sql, "FROM") || f.is_word(sql, "IN") => {
                (ident(d, sql), ident(n, sql))
            }
            _ => return None,
        };
        self.partitioned(db.as_deref(), &table?)
    }

    /// The partitioned table `name` (`db` if unqualified: the session's).
    fn partitioned(&self, db: Option<&str>, table: &str) -> Option<PartitionedTable> {
        let db = db.map(str::to_string).or_else(|| self.state.db.clone())?;
        let dict = self.ctx.partitioning.dictionary();
        let name = TableName {
            db: db.clone(),
            table: table.to_string(),
        };
        dict.table(&name)
            .or_else(|| {
                dict.tables()
                    .find(|p| p.name.db == db && p.name.table.eq_ignore_ascii_case(table))
            })
            .cloned()
    }

    /// The figures of database `db`'s partitioned tables summed over
    /// their partitions, for `SHOW TABLE STATUS` (`exec/rewrite.rs`); empty
    /// when it has none.
    pub async fn summed_figures(&mut self, db: &str) -> Result<Vec<Summed>, ProxyError> {
        let dict = self.ctx.partitioning.dictionary();
        let tables: Vec<&PartitionedTable> = dict.tables().filter(|t| t.name.db == db).collect();
        if tables.is_empty() {
            return Ok(Vec::new());
        }
        let figures = table_figures(&self.ctx, self.worker, &tables).await?;
        Ok(tables
            .iter()
            .zip(figures)
            .map(|(t, f)| Summed {
                table: t.name.table.clone(),
                rows: f.rows,
                avg_row_length: f.avg_row_length(),
                data_length: f.data_length,
                index_length: f.index_length,
                data_free: f.data_free,
            })
            .collect())
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Answer `SHOW INDEX` of `table`: its default partition's rows with
    /// the table's name and the estimated Cardinality, in the binary
    /// format when `is_binary`.
    pub async fn answer_index(
        &mut self,
        table: &PartitionedTable,
        is_binary: bool,
    ) -> Result<(), ProxyError> {
        let target = table.default_target();
        let q = format!(
            "SHOW INDEX FROM {}.{}",
            crate::partition::quote_ident(&table.name.db),
            crate::partition::quote_ident(&target.physical_table)
        );
        let asked = self
            .b
            .ask(target.backend, async |conn| conn.query_raw(&q).await)
            .await?;
        let (defs, mut rows) = match asked {
            Ok(r) => r,
            Err(err) => return self.write_error_packet(1, &err).await,
        };
        let estimates = index_cardinality(&self.b.ctx, self.b.worker, table).await?;
        let names: Vec<String> = defs
            .iter()
            .map(|d| {
                hscale_wire::resultset::ColumnInfo::decode(d)
                    .map(|c| c.name)
                    .unwrap_or_default()
            })
            .collect();
        let at = |n: &str| names.iter().position(|c| c == n);
        let (Some(name_at), Some(key_at), Some(seq_at), Some(card_at)) = (
            at("Table"),
            at("Key_name"),
            at("Seq_in_index"),
            at("Cardinality"),
        ) else {
            return Err(ProxyError::Wrong(
                "SHOW INDEX without its usual columns".into(),
            ));
        };
        for row in rows.iter_mut() {
            row[name_at] = Some(table.name.table.clone().into_bytes());
            let key = row[key_at]
                .as_deref()
                .map(|k| String::from_utf8_lossy(k).into_owned());
            let seq = row[seq_at]
                .as_deref()
                .and_then(|s| std::str::from_utf8(s).ok()?.parse::<u64>().ok());
            if let (Some(key), Some(seq)) = (key, seq) {
                if let Some(n) = estimates.get(&(key, seq)) {
                    row[card_at] = n.map(|n| n.to_string().into_bytes());
                }
            }
        }
        self.write_result(&defs, &rows, is_binary).await
    }
}
