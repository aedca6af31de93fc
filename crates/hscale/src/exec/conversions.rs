//! What a key column makes of a write's literal, asked of the backend
//! (`hscale_route::conversions`): routing met an INSERT key it is not sure
//! of (`'7abc'` or `1.5` for an INT key, a number outside the column's
//! range, a time whose fraction may round into the next hour), and the
//! session asks here before planning again.
//!
//! The backend stores each literal into a variable of the column's own
//! type (`TYPE OF db.table.column`, the table's default partition) in one
//! compound statement, on a pooled connection brought to the session's
//! state: its time zone, character set and sql_mode (TIME_ROUND_FRACTIONAL
//! rounds, no strict mode truncates) apply as they do to the INSERT. Strict
//! mode is lifted for the conversion alone: where it applies, the INSERT
//! fails on whichever partition it goes to, with the server's own error;
//! where it does not (INSERT IGNORE), the row holds the converted value.
//! The INSERT itself is sent with the client's literal, so the server's
//! warnings and errors are its own.

use hscale_route::conversions::{Ask, Converted};

use super::bindings::Bindings;
use crate::error::ProxyError;
use crate::partition::quote_ident;

/// What the planning driver reads of a session (`crate::planning`).
impl crate::planning::Session for Bindings {
    fn ctx(&self) -> &crate::runtime::Context {
        &self.ctx
    }

    fn worker(&self) -> usize {
        self.worker
    }

    fn db(&self) -> Option<&str> {
        self.state.db.as_deref()
    }

    fn is_client_utf8(&self) -> bool {
        self.state.vars.is_client_utf8()
    }

    async fn convert_keys(&mut self, asks: Vec<Ask>) -> Result<Vec<Converted>, ProxyError> {
        self.convert_keys(asks).await
    }
}

impl Bindings {
    /// The values `asks`' columns make of their literals, one compound
    /// statement per backend. An error leaves the statement refused as
    /// routing refused it.
    pub async fn convert_keys(&mut self, asks: Vec<Ask>) -> Result<Vec<Converted>, ProxyError> {
        let mut out = Vec::with_capacity(asks.len());
        let mut backends: Vec<_> = asks.iter().map(|a| a.backend).collect();
        backends.sort();
        backends.dedup();
        for backend in backends {
            let mine: Vec<&Ask> = asks.iter().filter(|a| a.backend == backend).collect();
            let mut conn = self
                .ctx
                .pool_as(self.worker, backend, self.identity)
                .get_as(self.tenant.claim(), self.is_found_rows)
                .await?;
            // The session's variables and database only: a deferred BEGIN
            // waits for the statement that needs it.
            let begin = self.pending_begin.take();
            let synced = self.sync(&mut conn, false).await;
            self.pending_begin = begin;
            if let Some(err) = synced? {
                return Err(ProxyError::Refused(format!(
                    "the key values could not be converted: {}",
                    err.message
                )));
            }
            // A statement read with its backslashes doubled
            // (`sql_mode.rs`): its literals as the client wrote them,
            // which the server reads in the session's NO_BACKSLASH_ESCAPES.
            let sent: Vec<Ask> = if self.is_undoubling {
                mine.iter()
                    .map(|a| {
                        let literal = hscale_sql::backslashes_undoubled(&a.literal)?;
                        Some(Ask {
                            literal,
                            ..(*a).clone()
                        })
                    })
                    .collect::<Option<_>>()
                    .ok_or_else(|| {
                        ProxyError::Refused(
                            "a key literal holding a backslash under NO_BACKSLASH_ESCAPES that hscale cannot convert".into(),
                        )
                    })?
            } else {
                mine.iter().map(|a| (*a).clone()).collect()
            };
            let sql = block(&sent.iter().collect::<Vec<_>>());
            let rows = conn.query_block_rows(&sql).await?.map_err(|e| {
                ProxyError::Refused(format!(
                    "the backend could not convert the key values: {}",
                    e.message
                ))
            })?;
            let row = rows.strings().into_iter().next().unwrap_or_default();
            if row.len() != mine.len() {
                return Err(ProxyError::Wrong(
                    "internal: key conversions answered another number of values".into(),
                ));
            }
            out.extend(mine.into_iter().zip(row).map(|(a, value)| Converted {
                table: a.table.clone(),
                literal: a.literal.clone(),
                value,
            }));
        }
        Ok(out)
    }
}

/// The compound statement that stores each literal into a variable of its
/// column's type, without strict mode, and selects them.
fn block(asks: &[&Ask]) -> String {
    let mut sql =
        String::from("BEGIN NOT ATOMIC DECLARE hscale_mode TEXT DEFAULT @@session.sql_mode; ");
    for (i, a) in asks.iter().enumerate() {
        sql.push_str(&format!(
            "DECLARE hscale_{i} TYPE OF {}.{}.{}; ",
            quote_ident(&a.table.db),
            quote_ident(&a.physical),
            quote_ident(&a.column)
        ));
    }
    sql.push_str("SET @@session.sql_mode = REPLACE(REPLACE(hscale_mode, 'STRICT_TRANS_TABLES', ''), 'STRICT_ALL_TABLES', ''); ");
    for (i, a) in asks.iter().enumerate() {
        match &a.implicit {
            // The column's default, as information_schema writes it (an
            // expression: `3`, `'ab'`, `NULL`, `current_timestamp()`),
            // evaluated; none (a NOT NULL column without one): its
            // implicit default.
            Some(implicit) => sql.push_str(&format!(
                "BEGIN DECLARE hscale_d LONGTEXT DEFAULT NULL; \
                 SELECT COLUMN_DEFAULT INTO hscale_d FROM information_schema.COLUMNS \
                 WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND COLUMN_NAME = {}; \
                 IF hscale_d IS NULL THEN SET hscale_{i} = {implicit}; \
                 ELSE EXECUTE IMMEDIATE CONCAT('SET @hscale_default = ', hscale_d); \
                 SET hscale_{i} = @hscale_default; SET @hscale_default = NULL; END IF; END; ",
                string(&a.table.db),
                string(&a.physical),
                string(&a.column)
            )),
            None => sql.push_str(&format!("SET hscale_{i} = {}; ", a.literal)),
        }
    }
    sql.push_str("SET @@session.sql_mode = hscale_mode; SELECT ");
    let names: Vec<String> = (0..asks.len()).map(|i| format!("hscale_{i}")).collect();
    sql.push_str(&names.join(", "));
    sql.push_str("; END");
    sql
}

/// A name as a string literal (`'` doubled, a backslash doubled: a name
/// holding one is not found under NO_BACKSLASH_ESCAPES, and its column
/// then counts as having no default).
fn string(name: &str) -> String {
    format!("'{}'", name.replace('\\', "\\\\").replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hscale_route::dictionary::TableName;
    use hscale_route::BackendId;

    #[test]
    fn each_literal_is_stored_into_its_columns_type() {
        let ask = |lit: &str| Ask {
            table: TableName::new("d", "t"),
            physical: "t_default".into(),
            backend: BackendId::MAIN,
            column: "k".into(),
            literal: lit.into(),
            implicit: None,
        };
        let (a, b) = (ask("'7abc'"), ask("1.5"));
        assert_eq!(
            block(&[&a, &b]),
            "BEGIN NOT ATOMIC DECLARE hscale_mode TEXT DEFAULT @@session.sql_mode; \
             DECLARE hscale_0 TYPE OF `d`.`t_default`.`k`; DECLARE hscale_1 TYPE OF `d`.`t_default`.`k`; \
             SET @@session.sql_mode = REPLACE(REPLACE(hscale_mode, 'STRICT_TRANS_TABLES', ''), 'STRICT_ALL_TABLES', ''); \
             SET hscale_0 = '7abc'; SET hscale_1 = 1.5; SET @@session.sql_mode = hscale_mode; \
             SELECT hscale_0, hscale_1; END"
        );
    }

    #[test]
    fn a_default_is_read_from_information_schema() {
        let ask = Ask {
            table: TableName::new("d", "t"),
            physical: "t_default".into(),
            backend: BackendId::MAIN,
            column: "k".into(),
            literal: "DEFAULT(`k`)".into(),
            implicit: Some("''".into()),
        };
        let sql = block(&[&ask]);
        assert!(
            sql.contains(
                "WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 't_default' AND COLUMN_NAME = 'k'"
            ),
            "{sql}"
        );
        assert!(
            sql.contains("IF hscale_d IS NULL THEN SET hscale_0 = '';"),
            "{sql}"
        );
        assert_eq!(string("it's\\"), "'it''s\\\\'");
    }
}
