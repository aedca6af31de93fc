//! The dictionary's home: two tables in the `hscale` database on the main
//! backend, created on first start. Backends are stored by name, so that
//! reordering `[[backends]]` in the config does not move partitions.

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::HashingFunction;

use super::{qualified, quote_str};
use crate::backend::BackendConn;
use crate::error::ProxyError;
use hscale_wire::response::ErrPacket;

const SCHEMA: &[&str] = &[
    "CREATE DATABASE IF NOT EXISTS `hscale`",
    "CREATE TABLE IF NOT EXISTS `hscale`.`partitioned_tables` (\
       db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, key_column VARCHAR(64) NOT NULL, \
       hashing_function VARCHAR(200) NOT NULL, default_table VARCHAR(64) NOT NULL, \
       default_backend VARCHAR(200) NOT NULL, key_type TEXT NOT NULL, \
       PRIMARY KEY (db, tbl)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS `hscale`.`partitions` (\
       db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, partition_value VARCHAR(255) NOT NULL, \
       partition_name VARCHAR(64) NOT NULL, backend VARCHAR(200) NOT NULL, \
       PRIMARY KEY (db, tbl, partition_value)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS `hscale`.`global_tables` (\
       db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, PRIMARY KEY (db, tbl)) ENGINE=InnoDB",
];

/// A server error met while the proxy ran `sql` itself: the code and
/// SQLSTATE are the server's.
pub fn server_error(conn: &BackendConn, sql: &str, err: ErrPacket) -> ProxyError {
    let sql = match sql.char_indices().nth(120) {
        Some((i, _)) => format!("{}...", &sql[..i]),
        None => sql.to_string(),
    };
    ProxyError::Backend {
        backend: conn.backend.to_string(),
        during: format!("hscale: {sql}"),
        err,
    }
}

/// Run statements on `conn`, failing on the first server error.
pub async fn exec(conn: &mut BackendConn, statements: &[String]) -> Result<(), ProxyError> {
    for sql in statements {
        if let Err(e) = conn.command(&BackendConn::payload_for_query(sql)).await? {
            // It may be inside a transaction now: never reuse it.
            conn.is_broken = true;
            return Err(server_error(conn, sql, e));
        }
    }
    Ok(())
}

/// Create the dictionary tables if needed and read the dictionary.
pub async fn load(conn: &mut BackendConn, backends: &[&str]) -> Result<Dictionary, ProxyError> {
    let schema: Vec<String> = SCHEMA.iter().map(|s| s.to_string()).collect();
    exec(conn, &schema).await?;
    let backend_index = |name: &str| {
        backends.iter().position(|b| *b == name).ok_or_else(|| {
            ProxyError::Wrong(format!(
                "the dictionary names backend {name:?}, which is not in the config"
            ))
        })
    };
    let mut d = Dictionary::default();
    let tables = conn
        .query_rows("SELECT db, tbl, key_column, hashing_function, default_table, default_backend, key_type FROM `hscale`.`partitioned_tables`")
        .await?
        .map_err(|e| server_error(conn, "reading the dictionary", e))?;
    for r in tables.strings() {
        let f = |i: usize| r[i].clone().unwrap_or_default();
        let function =
            HashingFunction::parse(&f(3)).map_err(|e| ProxyError::Wrong(e.to_string()))?;
        let name = TableName::new(&f(0), &f(1));
        d.setup_table(name.clone(), &f(2), &f(4), backend_index(&f(5))?, function)
            .map_err(|e| ProxyError::Wrong(e.to_string()))?;
        d.set_key_type(&name, &f(6));
    }
    let parts = conn
        .query_rows("SELECT db, tbl, partition_value, partition_name, backend FROM `hscale`.`partitions` ORDER BY db, tbl, partition_name, partition_value")
        .await?
        .map_err(|e| server_error(conn, "reading the dictionary", e))?;
    for r in parts.strings() {
        let f = |i: usize| r[i].clone().unwrap_or_default();
        d.add_partition(
            &TableName::new(&f(0), &f(1)),
            &f(3),
            &f(2),
            backend_index(&f(4))?,
        )
        .map_err(|e| ProxyError::Wrong(e.to_string()))?;
    }
    let globals = conn
        .query_rows("SELECT db, tbl FROM `hscale`.`global_tables`")
        .await?
        .map_err(|e| server_error(conn, "reading the dictionary", e))?;
    for r in globals.strings() {
        let f = |i: usize| r[i].clone().unwrap_or_default();
        d.add_global(TableName::new(&f(0), &f(1)))
            .map_err(|e| ProxyError::Wrong(e.to_string()))?;
    }
    Ok(d)
}

pub fn insert_global_sql(name: &TableName) -> String {
    format!(
        "INSERT INTO {} VALUES ({}, {})",
        qualified("hscale", "global_tables"),
        quote_str(&name.db),
        quote_str(&name.table)
    )
}

pub fn delete_global_sql(name: &TableName) -> String {
    format!(
        "DELETE FROM {} WHERE db = {} AND tbl = {}",
        qualified("hscale", "global_tables"),
        quote_str(&name.db),
        quote_str(&name.table)
    )
}

pub fn insert_table_sql(
    name: &TableName,
    column: &str,
    function: &HashingFunction,
    default_table: &str,
    backend: &str,
    key_type: &str,
) -> String {
    format!(
        "INSERT INTO {} VALUES ({}, {}, {}, {}, {}, {}, {})",
        qualified("hscale", "partitioned_tables"),
        quote_str(&name.db),
        quote_str(&name.table),
        quote_str(column),
        quote_str(&function.to_string()),
        quote_str(default_table),
        quote_str(backend),
        quote_str(key_type)
    )
}

pub fn insert_partition_sql(
    name: &TableName,
    value: &str,
    partition: &str,
    backend: &str,
) -> String {
    format!(
        "INSERT INTO {} VALUES ({}, {}, {}, {}, {})",
        qualified("hscale", "partitions"),
        quote_str(&name.db),
        quote_str(&name.table),
        quote_str(value),
        quote_str(partition),
        quote_str(backend)
    )
}

/// Remove a table and its partitions from the dictionary.
pub fn delete_table_sql(name: &TableName) -> Vec<String> {
    ["partitions", "partitioned_tables"]
        .iter()
        .map(|t| {
            format!(
                "DELETE FROM {} WHERE db = {} AND tbl = {}",
                qualified("hscale", t),
                quote_str(&name.db),
                quote_str(&name.table)
            )
        })
        .collect()
}

/// Rename a table in the dictionary, in one transaction.
pub fn rename_table_sql(from: &TableName, to: &TableName, default_table: &str) -> Vec<String> {
    let filter = format!(
        "WHERE db = {} AND tbl = {}",
        quote_str(&from.db),
        quote_str(&from.table)
    );
    vec![
        "START TRANSACTION".to_string(),
        format!(
            "UPDATE {} SET tbl = {}, default_table = {} {filter}",
            qualified("hscale", "partitioned_tables"),
            quote_str(&to.table),
            quote_str(default_table)
        ),
        format!(
            "UPDATE {} SET tbl = {} {filter}",
            qualified("hscale", "partitions"),
            quote_str(&to.table)
        ),
        "COMMIT".to_string(),
    ]
}

pub fn delete_partition_sql(name: &TableName, partition: &str) -> String {
    format!(
        "DELETE FROM {} WHERE db = {} AND tbl = {} AND partition_name = {}",
        qualified("hscale", "partitions"),
        quote_str(&name.db),
        quote_str(&name.table),
        quote_str(partition)
    )
}
