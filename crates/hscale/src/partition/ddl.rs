//! Schema questions and DDL the partitioning layer asks of one backend:
//! does a table exist, what type is a column, create a table like another
//! (possibly on another backend). Server errors keep their codes
//! ([`super::store::server_error`]).

use super::store::{exec, server_error};
use super::{qualified, quote_ident, quote_str};
use crate::backend::BackendConn;
use crate::error::ProxyError;
use hscale_route::key_compare::{KeyCompare, UnsupportedCollation, Weighed};

/// The first value of the first row of `sql`'s result.
async fn scalar(c: &mut BackendConn, sql: &str) -> Result<Option<String>, ProxyError> {
    let r = c
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(c, sql, e))?;
    Ok(r.strings()
        .first()
        .and_then(|r| r.first().cloned().flatten()))
}

/// Whether `db`.`table` exists on this backend.
pub async fn table_exists(c: &mut BackendConn, db: &str, table: &str) -> Result<bool, ProxyError> {
    let sql = format!(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
        quote_str(db),
        quote_str(table)
    );
    Ok(scalar(c, &sql).await?.is_some_and(|n| n != "0"))
}

/// The column's type as the dictionary keeps it: COLUMN_TYPE, then
/// ` COLLATE name` for string types; `None` if there is no such column.
pub async fn column_type(
    c: &mut BackendConn,
    db: &str,
    table: &str,
    column: &str,
) -> Result<Option<String>, ProxyError> {
    let sql = format!(
        "SELECT CONCAT(COLUMN_TYPE, IFNULL(CONCAT(' COLLATE ', COLLATION_NAME), '')) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND COLUMN_NAME = {}",
        quote_str(db),
        quote_str(table),
        quote_str(column)
    );
    scalar(c, &sql).await
}

/// How the column compares, from DATA_TYPE, COLLATION_NAME and
/// NUMERIC_SCALE (`None`: no such column).
pub async fn key_compare(
    c: &mut BackendConn,
    db: &str,
    table: &str,
    column: &str,
) -> Result<Option<Result<Option<KeyCompare>, UnsupportedCollation>>, ProxyError> {
    let sql = format!(
        "SELECT DATA_TYPE, COLLATION_NAME, NUMERIC_SCALE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND COLUMN_NAME = {}",
        quote_str(db),
        quote_str(table),
        quote_str(column)
    );
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(c, &sql, e))?;
    let Some(r) = r.strings().into_iter().next() else {
        return Ok(None);
    };
    let scale = r[2].as_deref().and_then(|s| s.parse().ok());
    match KeyCompare::of_column(r[0].as_deref().unwrap_or_default(), r[1].as_deref(), scale) {
        // A collation without a table in hscale: the backend weighs it.
        Err(UnsupportedCollation(name)) => {
            let sql = Weighed::learn_sql(&name);
            let row = c
                .query_rows(&sql)
                .await?
                .map_err(|e| server_error(c, &sql, e))?;
            let row = row.strings().into_iter().next().unwrap_or_default();
            Ok(Some(
                Weighed::learn(&name, &row)
                    .map(|w| Some(KeyCompare::Weighed(w)))
                    .ok_or(UnsupportedCollation(name)),
            ))
        }
        known => Ok(Some(known)),
    }
}

/// The table's AUTO_INCREMENT column, if it has one.
pub async fn auto_increment_column(
    c: &mut BackendConn,
    db: &str,
    table: &str,
) -> Result<Option<String>, ProxyError> {
    let sql = format!(
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND EXTRA LIKE '%auto_increment%'",
        quote_str(db),
        quote_str(table)
    );
    scalar(c, &sql).await
}

/// The column's default as information_schema shows it (`NULL` for a
/// DEFAULT NULL); `None` for a column without one.
pub async fn column_default(
    c: &mut BackendConn,
    db: &str,
    table: &str,
    column: &str,
) -> Result<Option<String>, ProxyError> {
    let sql = format!(
        "SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND COLUMN_NAME = {} AND COLUMN_DEFAULT IS NOT NULL",
        quote_str(db),
        quote_str(table),
        quote_str(column)
    );
    scalar(c, &sql).await
}

/// The table's PRIMARY and UNIQUE keys: (name, columns).
pub async fn unique_keys(
    c: &mut BackendConn,
    db: &str,
    table: &str,
) -> Result<Vec<(String, Vec<String>)>, ProxyError> {
    let sql = format!(
        "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND NON_UNIQUE = 0 ORDER BY INDEX_NAME, SEQ_IN_INDEX",
        quote_str(db),
        quote_str(table)
    );
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(c, &sql, e))?;
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for row in r.strings() {
        let (Some(index), Some(column)) = (row[0].clone(), row[1].clone()) else {
            continue;
        };
        match out.last_mut() {
            Some((name, cols)) if *name == index => cols.push(column),
            _ => out.push((index, vec![column])),
        }
    }
    Ok(out)
}

/// `SHOW CREATE TABLE db.table`: the statement, starting with
/// ``CREATE TABLE `table` ``.
pub async fn show_create(c: &mut BackendConn, db: &str, table: &str) -> Result<String, ProxyError> {
    let sql = format!("SHOW CREATE TABLE {}", qualified(db, table));
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(c, &sql, e))?;
    let ddl = r
        .strings()
        .first()
        .and_then(|row| row.get(1).cloned().flatten())
        .ok_or_else(|| {
            ProxyError::Wrong(format!("SHOW CREATE TABLE {db}.{table} returned nothing"))
        })?;
    Ok(names_backquoted(ddl))
}

/// A `SHOW CREATE TABLE` answer with its names in double quotes (the
/// server's own sql_mode has ANSI_QUOTES; a session's is never left on
/// the proxy's connections, `BackendConn::own_session`) written with
/// backquotes, which any mode reads and [`definition_body`] expects.
fn names_backquoted(ddl: String) -> String {
    match ddl.starts_with("CREATE TABLE \"") {
        true => hscale_sql::ansi_names_backquoted(&ddl, true).unwrap_or(ddl),
        false => ddl,
    }
}

/// [`show_create`] with the column definitions the server sent (for an
/// answer to the client), written as the server writes it under
/// `sql_mode` (a client's: ANSI_QUOTES quotes names with `"`, the
/// NO_*_OPTIONS modes leave options out), or under the connection's own.
pub async fn show_create_raw(
    c: &mut BackendConn,
    db: &str,
    table: &str,
    sql_mode: Option<&str>,
) -> Result<(Vec<bytes::Bytes>, String), ProxyError> {
    let sql = match sql_mode {
        Some(mode) => format!(
            "SET STATEMENT sql_mode = {} FOR SHOW CREATE TABLE {}",
            super::quote_str(mode),
            qualified(db, table)
        ),
        None => format!("SHOW CREATE TABLE {}", qualified(db, table)),
    };
    let (defs, rows) = c
        .query_raw(&sql)
        .await?
        .map_err(|e| server_error(c, &sql, e))?;
    let ddl = rows
        .first()
        .and_then(|row| row.get(1).cloned().flatten())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .ok_or_else(|| {
            ProxyError::Wrong(format!("SHOW CREATE TABLE {db}.{table} returned nothing"))
        })?;
    Ok((defs, ddl))
}

/// The body of a `SHOW CREATE TABLE` result after its table name, so the
/// same definition can be created under another name.
pub fn definition_body<'a>(ddl: &'a str, table: &str) -> Result<&'a str, ProxyError> {
    ddl.strip_prefix(&format!("CREATE TABLE {}", quote_ident(table)))
        .ok_or_else(|| {
            ProxyError::Wrong(format!("unexpected SHOW CREATE TABLE output for {table}"))
        })
}

/// Create `db`.`dst` on `dst_conn`'s backend with the definition of
/// `db`.`src` on `src_conn`'s (if it does not exist yet).
pub async fn create_like(
    src_conn: &mut BackendConn,
    db: &str,
    src: &str,
    dst_conn: &mut BackendConn,
    dst: &str,
) -> Result<(), ProxyError> {
    let ddl = show_create(src_conn, db, src).await?;
    let body = definition_body(&ddl, src)?;
    let create = format!("CREATE TABLE IF NOT EXISTS {}{body}", qualified(db, dst));
    exec(
        dst_conn,
        &[
            format!("CREATE DATABASE IF NOT EXISTS {}", quote_ident(db)),
            create,
        ],
    )
    .await
}

/// Every column of `db`.`table` (INVISIBLE ones too), quoted, in the
/// table's order, for a server-side `INSERT ... SELECT` between two tables
/// of the same definition.
pub async fn column_names(
    c: &mut BackendConn,
    db: &str,
    table: &str,
) -> Result<String, ProxyError> {
    let names: Vec<String> = exact_expressions(c, db, table)
        .await?
        .into_iter()
        .map(|(name, _, _)| name)
        .collect();
    Ok(names.join(", "))
}

/// The select list that reads every column of `db`.`table` so that its
/// text writes the same value back: FLOAT columns as DOUBLE (a FLOAT's own
/// text has 6 significant digits and loses the value; every FLOAT is a
/// DOUBLE exactly, and the DOUBLE's text rounds back to it). In the
/// table's column order.
pub async fn exact_select_list(
    c: &mut BackendConn,
    db: &str,
    table: &str,
) -> Result<String, ProxyError> {
    let items: Vec<String> = exact_expressions(c, db, table)
        .await?
        .into_iter()
        .map(|(name, expr, _)| {
            if expr == name {
                name
            } else {
                format!("{expr} AS {name}")
            }
        })
        .collect();
    Ok(items.join(", "))
}

/// One text per row of `db`.`table` that differs whenever a column's value
/// differs (NULL included: `QUOTE` gives the bare word NULL for it and a
/// quoted string for the text 'NULL'), for checksums of rows compared
/// across backends in one time zone. A `NOT NULL` CHAR or VARCHAR column
/// is its length and its bytes instead of `QUOTE`'s escaped copy: as
/// exact (the length keeps a comma inside a value from reading as the next
/// column), and cheaper. Summing the 1,000,000 rows of `bench/moves.sh`'s
/// table on an idle server took 1.39-1.47 s with `QUOTE`, 0.85-1.03 s so,
/// 0.31 s to count them (the copy's source and the verification's
/// destination each compute it once per row).
pub async fn row_text(c: &mut BackendConn, db: &str, table: &str) -> Result<String, ProxyError> {
    let items: Vec<String> = exact_expressions(c, db, table)
        .await?
        .into_iter()
        .map(|(_, expr, is_plain_text)| {
            if is_plain_text {
                format!("LENGTH({expr}), {expr}")
            } else {
                format!("QUOTE({expr})")
            }
        })
        .collect();
    Ok(format!("CONCAT_WS(',', {})", items.join(", ")))
}

/// Each column of `db`.`table`: its quoted name, the expression that
/// reads its value exactly (FLOAT as DOUBLE: its text has only 6 digits),
/// and whether it is a `NOT NULL` CHAR or VARCHAR.
async fn exact_expressions(
    c: &mut BackendConn,
    db: &str,
    table: &str,
) -> Result<Vec<(String, String, bool)>, ProxyError> {
    let sql = format!(
        "SELECT COLUMN_NAME, DATA_TYPE, IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION",
        quote_str(db),
        quote_str(table)
    );
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(c, &sql, e))?;
    let items: Vec<(String, String, bool)> = r
        .strings()
        .into_iter()
        .map(|row| {
            let name = quote_ident(&row[0].clone().unwrap_or_default());
            let expr = match row[1].as_deref() {
                Some(t) if t.eq_ignore_ascii_case("float") => format!("CAST({name} AS DOUBLE)"),
                _ => name.clone(),
            };
            let is_text = row[1].as_deref().is_some_and(|t| {
                t.eq_ignore_ascii_case("char") || t.eq_ignore_ascii_case("varchar")
            });
            let is_plain_text = is_text && row[2].as_deref() == Some("NO");
            (name, expr, is_plain_text)
        })
        .collect();
    if items.is_empty() {
        return Err(ProxyError::Wrong(format!("{db}.{table} has no columns")));
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_under_ansi_quotes_has_the_same_body() {
        let ansi = "CREATE TABLE \"t_default\" (\n  \"id\" int(11) NOT NULL,\n  \"v\" varchar(20) DEFAULT 'a\"b',\n  PRIMARY KEY (\"id\")\n) ENGINE=InnoDB";
        let plain = "CREATE TABLE `t_default` (\n  `id` int(11) NOT NULL,\n  `v` varchar(20) DEFAULT 'a\"b',\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB";
        let ddl = names_backquoted(ansi.to_string());
        assert_eq!(ddl, plain);
        assert_eq!(
            definition_body(&ddl, "t_default").unwrap(),
            &plain["CREATE TABLE `t_default`".len()..]
        );
        assert_eq!(names_backquoted(plain.to_string()), plain);
    }
}
