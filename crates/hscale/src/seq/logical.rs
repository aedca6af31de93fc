//! The logical AUTO_INCREMENT of partitioned tables with a sequence, for
//! the rows hscale shows for them in `information_schema.TABLES` and
//! `SHOW TABLE STATUS` (each partition's own counter is not the table's:
//! the sequence hands out the ids). `SHOW CREATE TABLE` uses
//! [`super::next_value`] for one table; these read every table in one
//! query and write the value into the SQL that answers those rows.

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::BackendId;

use crate::error::ProxyError;
use crate::partition::{qualified, quote_str};
use crate::runtime::Context;

/// The sequence's next value of every table of `dict` with a sequence
/// (one query on the main backend; none when no table has one).
pub async fn auto_increments(
    ctx: &Context,
    worker: usize,
    dict: &Dictionary,
) -> Result<Vec<(TableName, u64)>, ProxyError> {
    let keys: Vec<String> = dict
        .tables()
        .filter(|t| t.auto_column.is_some())
        .map(|t| {
            format!(
                "({}, {}, {})",
                quote_str(&t.name.db),
                quote_str(&t.name.table),
                t.sequence_generation
            )
        })
        .collect();
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT db, tbl, next_id FROM {} WHERE (db, tbl, generation) IN ({})",
        qualified("hscale", "sequences"),
        keys.join(", ")
    );
    let mut c = ctx.pool(worker, BackendId::MAIN).get(false).await?;
    let rows = c
        .query_rows(&sql)
        .await?
        .map_err(|err| ProxyError::Backend {
            backend: ctx.config.backends[BackendId::MAIN.index()].name.clone(),
            during: "reading the sequences".into(),
            err,
        })?;
    Ok(rows
        .strings()
        .into_iter()
        .filter_map(|r| match r.as_slice() {
            [Some(db), Some(tbl), Some(next)] => {
                Some((TableName::new(db, tbl), next.parse().ok()?))
            }
            _ => None,
        })
        .collect())
}

/// The SQL value of the AUTO_INCREMENT column of a row naming the table
/// `schema`.`table` (column expressions of the query that answers the
/// rows): the sequence's next value for the tables in `values`, `own`
/// (the backend's column) for any other.
pub fn auto_increment_sql(
    values: &[(TableName, u64)],
    schema: &str,
    table: &str,
    own: &str,
) -> String {
    if values.is_empty() {
        return own.to_string();
    }
    let mut out = String::from("CASE");
    for (t, next) in values {
        out.push_str(&format!(
            " WHEN {schema} = {} AND {table} = {} THEN {next}",
            quote_str(&t.db),
            quote_str(&t.table)
        ));
    }
    out.push_str(&format!(" ELSE {own} END"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_answers_for_its_table() {
        let v = vec![
            (TableName::new("d", "t"), 42),
            (TableName::new("d", "o'k"), 7),
        ];
        assert_eq!(
            auto_increment_sql(&v, "TABLE_SCHEMA", "TABLE_NAME", "AUTO_INCREMENT"),
            "CASE WHEN TABLE_SCHEMA = 'd' AND TABLE_NAME = 't' THEN 42 WHEN TABLE_SCHEMA = 'd' AND TABLE_NAME = 'o''k' THEN 7 ELSE AUTO_INCREMENT END"
        );
        assert_eq!(
            auto_increment_sql(&[], "s", "t", "AUTO_INCREMENT"),
            "AUTO_INCREMENT"
        );
    }
}
