//! `SHOW TABLE STATUS` and `SHOW INDEX` of partitioned tables with the
//! figures one server holding all the rows would show: Rows,
//! Avg_row_length, Data_length, Index_length and Data_free, and each
//! index's Cardinality, summed over the partitions' physical tables
//! (`admin/figures.rs`; estimates, as the server's own are).
//!
//! - `SHOW TABLE STATUS [FROM db] [LIKE 'p' | WHERE ...]` in a database
//!   with partitioned tables becomes a SELECT over
//!   information_schema.TABLES (which `rewrite.rs` then shows with the
//!   logical tables, `hscale_route::router::logical_views`) with the
//!   columns named as SHOW names them and the sums in place;
//! - `SHOW INDEX FROM t` of a partitioned table runs on its default
//!   partition and is answered with the server's column definitions, the
//!   table's name and the summed Cardinality.
//!
//! Text statements only; a prepared one shows the default partition's
//! figures. A statement that starts otherwise than with SHOW costs one
//! comparison here.

use bytes::Bytes;
use hscale_route::dictionary::{PartitionedTable, TableName};
use hscale_sql::{Token, TokenKind};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{send, Session};
use crate::admin::figures::{index_cardinality, table_figures};
use crate::error::ProxyError;
use crate::exec::forward::Outcome;
use crate::exec::Effects;

/// What [`Session::show_figures`] did with a statement.
pub(super) enum Figured {
    /// Not a SHOW it answers: the statement runs as it is.
    No,
    /// Answered.
    Answered,
    /// Run this statement instead.
    Rewritten(Bytes),
}

/// A string the planner does not read as a literal naming a table.
fn hidden_literal(s: &str) -> String {
    let hex: String = s.bytes().map(|b| format!("{b:02X}")).collect();
    format!("CONVERT(X'{hex}' USING utf8mb3)")
}

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

/// A string literal token's value.
fn string(t: &Token, sql: &str) -> Option<String> {
    if t.kind != TokenKind::Str {
        return None;
    }
    let s = t.text(sql);
    let q = s.chars().next()?;
    let inner = s.get(1..s.len().saturating_sub(1))?;
    Some(
        inner
            .replace(&format!("{q}{q}"), &q.to_string())
            .replace("\\\\", "\\"),
    )
}

/// The columns of SHOW TABLE STATUS and the information_schema.TABLES
/// column each is; the summed ones are `None`.
const STATUS: &[(&str, Option<&str>)] = &[
    ("Name", Some("TABLE_NAME")),
    ("Engine", Some("ENGINE")),
    ("Version", Some("VERSION")),
    ("Row_format", Some("ROW_FORMAT")),
    ("Rows", None),
    ("Avg_row_length", None),
    ("Data_length", None),
    ("Max_data_length", Some("MAX_DATA_LENGTH")),
    ("Index_length", None),
    ("Data_free", None),
    ("Auto_increment", Some("AUTO_INCREMENT")),
    ("Create_time", Some("CREATE_TIME")),
    ("Update_time", Some("UPDATE_TIME")),
    ("Check_time", Some("CHECK_TIME")),
    ("Collation", Some("TABLE_COLLATION")),
    ("Checksum", Some("CHECKSUM")),
    ("Create_options", Some("CREATE_OPTIONS")),
    ("Comment", Some("TABLE_COMMENT")),
    ("Max_index_length", Some("MAX_INDEX_LENGTH")),
    ("Temporary", Some("TEMPORARY")),
];

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// `SHOW TABLE STATUS` in a database with partitioned tables and
    /// `SHOW INDEX` of a partitioned table, with summed figures.
    pub(super) async fn show_figures(&mut self, payload: &Bytes) -> Result<Figured, ProxyError> {
        let head = payload.get(1..).unwrap_or_default().trim_ascii_start();
        if head.len() < 4 || !head[..4].eq_ignore_ascii_case(b"SHOW") {
            return Ok(Figured::No);
        }
        if self.b.ctx.partitioning.is_empty() {
            return Ok(Figured::No);
        }
        let Ok(sql) = std::str::from_utf8(&payload[1..]) else {
            return Ok(Figured::No);
        };
        let Some(tokens) = hscale_sql::show::show_tokens(sql) else {
            return Ok(Figured::No);
        };
        let t = &tokens[..];
        let word = |i: usize, w: &str| t.get(i).is_some_and(|x| x.is_word(sql, w));
        if word(1, "TABLE") && word(2, "STATUS") {
            return self.table_status(sql, &t[3..]).await;
        }
        if (word(1, "INDEX") || word(1, "INDEXES") || word(1, "KEYS"))
            && (word(2, "FROM") || word(2, "IN"))
        {
            return self.show_index(sql, &t[3..]).await;
        }
        Ok(Figured::No)
    }

    /// The partitioned table `name` (`db` if unqualified: the session's).
    fn partitioned(&self, db: Option<&str>, table: &str) -> Option<PartitionedTable> {
        let db = db.map(str::to_string).or_else(|| self.b.state.db.clone())?;
        let dict = self.b.ctx.partitioning.dictionary();
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

    /// `SHOW TABLE STATUS [FROM | IN db] [LIKE 'p' | WHERE ...]`, `rest`
    /// the tokens after STATUS.
    async fn table_status(&mut self, sql: &str, rest: &[Token]) -> Result<Figured, ProxyError> {
        let (db, rest) = match rest {
            [f, d, rest @ ..] if f.is_word(sql, "FROM") || f.is_word(sql, "IN") => {
                (ident(d, sql), rest)
            }
            _ => (self.b.state.db.clone(), rest),
        };
        let Some(db) = db else {
            return Ok(Figured::No);
        };
        let filter = match rest {
            [] => String::new(),
            [l, p] if l.is_word(sql, "LIKE") => match string(p, sql) {
                Some(p) => format!(" WHERE Name LIKE {}", hidden_literal(&p)),
                None => return Ok(Figured::No),
            },
            [w, ..] if w.is_word(sql, "WHERE") => {
                format!(" {}", &sql[w.start as usize..])
            }
            _ => return Ok(Figured::No),
        };
        let dict = self.b.ctx.partitioning.dictionary();
        let tables: Vec<&PartitionedTable> = dict.tables().filter(|t| t.name.db == db).collect();
        if tables.is_empty() {
            return Ok(Figured::No);
        }
        let figures = table_figures(&self.b.ctx, self.b.worker, &tables).await?;
        let case = |pick: &dyn Fn(&crate::admin::figures::Figures) -> u64, column: &str| {
            let mut s = String::from("CASE");
            for (t, f) in tables.iter().zip(&figures) {
                s.push_str(&format!(
                    " WHEN TABLE_NAME = {} THEN CAST({} AS UNSIGNED)",
                    hidden_literal(&t.name.table),
                    pick(f)
                ));
            }
            format!("{s} ELSE {column} END")
        };
        let inner: Vec<String> = STATUS
            .iter()
            .map(|(name, column)| {
                let expr = match (name, column) {
                    (_, Some(c)) => c.to_string(),
                    (&"Rows", None) => case(&|f| f.rows, "TABLE_ROWS"),
                    (&"Avg_row_length", None) => case(&|f| f.avg_row_length(), "AVG_ROW_LENGTH"),
                    (&"Data_length", None) => case(&|f| f.data_length, "DATA_LENGTH"),
                    (&"Index_length", None) => case(&|f| f.index_length, "INDEX_LENGTH"),
                    _ => case(&|f| f.data_free, "DATA_FREE"),
                };
                format!("{expr} AS `{name}`")
            })
            .collect();
        let outer: Vec<String> = STATUS.iter().map(|(n, _)| format!("`{n}`")).collect();
        let sql = format!(
            "SELECT {} FROM (SELECT {} FROM information_schema.TABLES WHERE TABLE_SCHEMA = {}) AS s{filter} ORDER BY `Name`",
            outer.join(", "),
            inner.join(", "),
            crate::partition::quote_str(&db),
        );
        Ok(Figured::Rewritten(
            crate::backend::BackendConn::payload_for_query(&sql),
        ))
    }

    /// `SHOW INDEX FROM t [FROM db]` of a partitioned table, `rest` the
    /// tokens after FROM.
    async fn show_index(&mut self, sql: &str, rest: &[Token]) -> Result<Figured, ProxyError> {
        let (db, table) = match rest {
            [d, dot, n] if dot.is_punct(sql, ".") => (ident(d, sql), ident(n, sql)),
            [n] => (None, ident(n, sql)),
            [n, f, d] if f.is_word(sql, "FROM") || f.is_word(sql, "IN") => {
                (ident(d, sql), ident(n, sql))
            }
            _ => return Ok(Figured::No),
        };
        let Some(table) = table.and_then(|n| self.partitioned(db.as_deref(), &n)) else {
            return Ok(Figured::No);
        };
        let target = table.default_target();
        let mut conn = match self.b.lease(target.backend, false).await? {
            Ok(c) => c,
            Err(err) => {
                self.write_server_error(1, &err).await?;
                return Ok(Figured::Answered);
            }
        };
        let q = format!(
            "SHOW INDEX FROM {}.{}",
            crate::partition::quote_ident(&table.name.db),
            crate::partition::quote_ident(&target.physical_table)
        );
        let (defs, mut rows) = match conn.query_raw(&q).await {
            Ok(Ok(r)) => {
                self.b.finish(conn, Outcome::default(), &Effects::default());
                r
            }
            Ok(Err(err)) => {
                self.b.finish(conn, Outcome::default(), &Effects::default());
                self.write_server_error(1, &err).await?;
                return Ok(Figured::Answered);
            }
            Err(e) => return Err(self.b.backend_lost(conn, e.to_string())),
        };
        let sums = index_cardinality(&self.b.ctx, self.b.worker, &table).await?;
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
                if let Some(sum) = sums.get(&(key, seq)) {
                    row[card_at] = sum.map(|n| n.to_string().into_bytes());
                }
            }
        }
        let st = self.b.status();
        let mut header = self.reply(1).columns(defs.len());
        for d in &defs {
            header.column_def(d);
        }
        let mut out = header.rows(st);
        for row in &rows {
            let cells: Vec<Option<&[u8]>> = row.iter().map(|c| c.as_deref()).collect();
            out.text_row(&cells);
        }
        let n = out.count();
        send(out.finish(st, 0)).await?;
        self.b.note.rows += n;
        self.b.note.is_result = true;
        Ok(Figured::Answered)
    }
}
