//! A partitioned database beside a reference database: the same tables
//! and rows twice on the shared cluster, one database partitioned through
//! hscale, the other plain (one server's answer), and the comparisons the
//! transparency tests make between them (issue 29: every statement answers
//! what one server holding all the data answers).

use mysql_async::prelude::*;
use mysql_async::{Conn, Params, Row, Value};

use super::{cluster, code, proxy_conn};

/// Two databases of the same tables: `db` partitioned as `partitioning`
/// says, `reference` not partitioned.
pub struct Twin<'a> {
    /// Backends of the cluster (the first call in a test binary decides).
    pub shards: usize,
    pub db: &'a str,
    pub reference: &'a str,
    /// CREATE TABLE statements, run in both databases.
    pub schema: &'a [&'a str],
    /// HSCALE statements, run in `db` only, after the schema.
    pub partitioning: &'a [&'a str],
}

impl Twin<'_> {
    /// Create both databases afresh (dropping earlier ones), then write
    /// `rows` (INSERT statements) into each after its partitioning.
    pub async fn create(&self, rows: &[String]) {
        self.create_in_order(rows, false).await
    }

    /// [`Twin::create`] with the rows written before the partitioning
    /// (which then moves them into their partitions and starts sequences
    /// past their ids).
    pub async fn create_rows_first(&self, rows: &[String]) {
        self.create_in_order(rows, true).await
    }

    async fn create_in_order(&self, rows: &[String], is_rows_first: bool) {
        cluster(self.shards);
        let mut c = proxy_conn(None).await;
        for db in [self.db, self.reference] {
            c.query_drop(format!("DROP DATABASE IF EXISTS {db}"))
                .await
                .unwrap();
            c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
            c.query_drop(format!("USE {db}")).await.unwrap();
            write(&mut c, self.schema).await;
            if is_rows_first {
                write(&mut c, rows).await;
            }
            if db == self.db {
                write(&mut c, self.partitioning).await;
            }
            if !is_rows_first {
                write(&mut c, rows).await;
            }
        }
        c.disconnect().await.unwrap();
    }

    /// A client of each: (through hscale in `db`, through hscale in
    /// `reference`).
    pub async fn conns(&self) -> (Conn, Conn) {
        (
            proxy_conn(Some(self.db)).await,
            proxy_conn(Some(self.reference)).await,
        )
    }
}

async fn write<S: AsRef<str>>(c: &mut Conn, statements: &[S]) {
    for s in statements {
        let s = s.as_ref();
        c.query_drop(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

pub type Rows = Vec<Vec<Option<String>>>;

/// A row's values as text (NULL as `None`).
pub fn cells(r: &Row) -> Vec<Option<String>> {
    (0..r.len())
        .map(|i| match r.as_ref(i).unwrap() {
            Value::NULL => None,
            Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            v => Some(v.as_sql(true)),
        })
        .collect()
}

/// The rows of a read that must succeed.
pub async fn rows(c: &mut Conn, sql: &str) -> Rows {
    let rows: Vec<Row> = c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.iter().map(cells).collect()
}

/// What a write answered: its OK's affected rows and warning count, or
/// its error code.
#[derive(Debug, PartialEq, Eq)]
pub enum Done {
    Err(u16),
    Ok(u64, u16),
}

pub async fn run(c: &mut Conn, sql: &str) -> Done {
    match c.query_drop(sql).await {
        Ok(()) => Done::Ok(c.affected_rows(), c.get_warnings()),
        Err(e) => Done::Err(code(&e)),
    }
}

/// `statements` on `p` and `r`: the same [`Done`] each, then the same
/// rows of `contents`.
pub async fn same_writes(p: &mut Conn, r: &mut Conn, statements: &[&str], contents: &str) {
    for s in statements {
        let want = run(r, s).await;
        assert_eq!(run(p, s).await, want, "{s}");
    }
    assert_eq!(
        rows(p, contents).await,
        rows(r, contents).await,
        "{contents}"
    );
}

/// What a write answered, as a client sees it all: affected rows, the
/// OK's info and the warnings listed after it (sorted: their order
/// follows the order rows are visited in), or the error code.
#[derive(Debug, PartialEq, Eq)]
pub enum Said {
    Ok {
        affected: u64,
        info: String,
        warnings: Vec<(String, String)>,
    },
    Err(u16),
}

pub async fn said(c: &mut Conn, sql: &str) -> Said {
    let done = c.query_drop(sql).await;
    said_after(c, sql, done).await
}

/// What a prepared write answered (binary protocol): as [`said`].
pub async fn said_prepared(c: &mut Conn, sql: &str, params: Vec<mysql_async::Value>) -> Said {
    let done = c.exec_drop(sql, params).await;
    said_after(c, sql, done).await
}

/// The answer of a write `c` just ran: its counts and warnings, or its
/// error's code.
async fn said_after(c: &mut Conn, sql: &str, done: Result<(), mysql_async::Error>) -> Said {
    match done {
        Ok(()) => {
            let affected = c.affected_rows();
            let info = c.info().into_owned();
            let mut warnings: Vec<(String, String)> = c
                .query::<(String, String, String), _>("SHOW WARNINGS")
                .await
                .unwrap()
                .into_iter()
                .map(|(_, code, message)| (code, without_row_number(&message)))
                .collect();
            warnings.sort();
            Said::Ok {
                affected,
                info,
                warnings,
            }
        }
        Err(e) => {
            eprintln!("{sql}: {e}");
            Said::Err(code(&e))
        }
    }
}

/// A warning's message without its row number: one server numbers the
/// rows of its join as it visits them, hscale the rows of each write step
/// (a difference listed in docs/src/queries.md).
pub fn without_row_number(message: &str) -> String {
    match message.rfind(" at row ") {
        Some(at) if message[at + 8..].bytes().all(|b| b.is_ascii_digit()) => {
            format!("{} at row N", &message[..at])
        }
        _ => message.to_string(),
    }
}

/// `statements` on `p` and `r`: the same [`Said`] each (affected rows,
/// info, warnings), then the same rows of `contents`.
pub async fn same_said(p: &mut Conn, r: &mut Conn, statements: &[&str], contents: &str) {
    for s in statements {
        let want = said(r, s).await;
        assert_eq!(said(p, s).await, want, "{s}");
    }
    assert_eq!(rows(p, contents).await, rows(r, contents).await);
}

/// A statement's answer: column names, rows and the warnings after it
/// (code and message), or an error code.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    Rows {
        columns: Vec<String>,
        rows: Rows,
        warnings: Vec<(String, String)>,
    },
    Err(u16),
}

impl Answer {
    pub fn row_count(&self) -> usize {
        match self {
            Answer::Rows { rows, .. } => rows.len(),
            Answer::Err(code) => panic!("error {code}"),
        }
    }

    pub fn warning_codes(&self) -> Vec<&str> {
        match self {
            Answer::Rows { warnings, .. } => warnings.iter().map(|w| w.0.as_str()).collect(),
            Answer::Err(code) => panic!("error {code}"),
        }
    }
}

/// `sql` as text, or prepared and executed with `params`.
pub async fn answer(c: &mut Conn, sql: &str, params: Option<Vec<Value>>) -> Answer {
    let got = match params {
        None => match c.query_iter(sql).await {
            Ok(mut r) => {
                let columns = names(r.columns_ref());
                r.collect::<Row>().await.map(|rows| (columns, rows))
            }
            Err(e) => Err(e),
        },
        Some(p) => match c.exec_iter(sql, Params::Positional(p)).await {
            Ok(mut r) => {
                let columns = names(r.columns_ref());
                r.collect::<Row>().await.map(|rows| (columns, rows))
            }
            Err(e) => Err(e),
        },
    };
    let (columns, rows) = match got {
        Ok(x) => x,
        Err(e) => return Answer::Err(code(&e)),
    };
    let warnings: Vec<(String, String)> = c
        .query::<(String, String, String), _>("SHOW WARNINGS")
        .await
        .unwrap()
        .into_iter()
        .map(|(_, code, message)| (code, message))
        .collect();
    Answer::Rows {
        columns,
        rows: rows.iter().map(cells).collect(),
        warnings,
    }
}

fn names(columns: &[mysql_async::Column]) -> Vec<String> {
    columns.iter().map(|c| c.name_str().into_owned()).collect()
}

/// A column definition as the client receives it: name, type, flags,
/// decimals, length and character set (what a merged answer must carry
/// as one server's does, byte for byte).
pub type ColumnDef = (String, String, u16, u8, u32, u16);

/// The column definitions of `sql`'s result set (an error panics).
pub async fn column_defs(c: &mut Conn, sql: &str) -> Vec<ColumnDef> {
    let r = c
        .query_iter(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let defs = r
        .columns_ref()
        .iter()
        .map(|col| {
            (
                col.name_str().into_owned(),
                format!("{:?}", col.column_type()),
                col.flags().bits(),
                col.decimals(),
                col.column_length(),
                col.character_set(),
            )
        })
        .collect();
    r.drop_result().await.unwrap();
    defs
}
