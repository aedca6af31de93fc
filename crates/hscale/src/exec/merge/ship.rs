//! Shipped tables of a merge (`MergePlan::ship`: a join of tables
//! partitioned differently, a subquery over another partitioned table):
//! the rows of the shipped table are read from its partitions and copied
//! into a temporary table on every part's connection before the part runs.
//!
//! Outside a transaction the rows are read on pooled connections and every
//! part's connection is closed after use, which drops its temporary
//! tables. Inside one, the rows are read on the transaction's branches, so
//! the copy holds the transaction's own writes (read-your-writes), and
//! each part drops its temporary tables once its rows were read
//! (`Part::cleanup`), so the branch goes on as before the statement.

use hscale_route::dictionary::Target;
use hscale_route::router::Ship;
use hscale_route::value::Kind;
use tokio::io::{AsyncRead, AsyncWrite};

use super::columns::kind_of;
use super::{Exec, Stop};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::partition::copy::InsertBatcher;
use crate::partition::copy::STORED_AS_IS;

/// Read with results in the columns' own bytes (saving the session's
/// setting inside a transaction, whose branch is used again after).
/// Every row, whatever the session's sql_select_limit. TIMESTAMPs in UTC,
/// as the copy is written ([`in_copy_state`]): in a zone with summer time two
/// stored instants of the hour the clocks go back read as one time.
const RAW_RESULTS: &str =
    "SET character_set_results = NULL, sql_select_limit = DEFAULT, time_zone = '+00:00'";
const SAVE_AND_RAW: &str =
    "SET @hscale_results = @@character_set_results, character_set_results = NULL, @hscale_limit = @@sql_select_limit, sql_select_limit = DEFAULT, @hscale_zone = @@time_zone, time_zone = '+00:00'";
const RESTORE: &str = "SET character_set_results = @hscale_results, @hscale_results = NULL, sql_select_limit = @hscale_limit, @hscale_limit = NULL, time_zone = @hscale_zone, @hscale_zone = NULL";

/// A copy is created and written in the state that stores every value
/// as it is (`partition/copy.rs`, `STORED_AS_IS`), whatever the session's, its
/// TIMESTAMPs in UTC as they were read: set for the set-up's statements
/// (not `SET STATEMENT ... FOR`: the text is parsed in the session's
/// mode first, where EMPTY_STRING_IS_NULL makes a `DEFAULT ''` NULL), and
/// the session's put back for the statement that reads the copy.
const TO_COPY_STATE: &str = "SET @hscale_mode = @@sql_mode, @hscale_checks = @@check_constraint_checks, @hscale_zone = @@time_zone, ";
const FROM_COPY_STATE: &str = "SET sql_mode = @hscale_mode, check_constraint_checks = @hscale_checks, time_zone = @hscale_zone, @hscale_mode = NULL, @hscale_checks = NULL, @hscale_zone = NULL";

/// `statements` (a copy's set-up) between the statements that enter the
/// copy's state and leave it.
pub(super) fn in_copy_state(statements: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(statements.len() + 2);
    out.push(format!(
        "{TO_COPY_STATE}{STORED_AS_IS}, time_zone = '+00:00'"
    ));
    out.extend(statements);
    out.push(FROM_COPY_STATE.to_string());
    out
}

/// The statement that puts the session's state back after a set-up that
/// failed on a connection the session keeps.
pub(super) const LEAVE_COPY_STATE: &str = FROM_COPY_STATE;

/// The statement that drops a statement's temporary copies from a part's
/// connection, inside a transaction.
pub(super) fn cleanup(ships: &[Ship]) -> String {
    let temps: Vec<String> = ships
        .iter()
        .map(|s| crate::partition::qualified(&s.db, &s.temp))
        .collect();
    format!("DROP TEMPORARY TABLE IF EXISTS {}", temps.join(", "))
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// The definition of a shipped table's temporary copy: `SHOW CREATE
    /// TABLE` of its model, after `CREATE TABLE name`, read on a pooled
    /// connection (never a transaction's branch: it is only a definition).
    pub(super) async fn ship_body(&mut self, ship: &Ship) -> Result<String, Stop> {
        let ddl = if self.b.has_temporary_tables_on(ship.like.0) {
            // It may be one of the session's temporary tables: asked on
            // the connection that holds them.
            let mut c = match self.b.lease(ship.like.0, false).await? {
                Ok(c) => c,
                Err(err) => return Err(Stop::Server(err)),
            };
            let r = c
                .query_rows(&format!(
                    "SHOW CREATE TABLE {}",
                    crate::partition::qualified(&ship.db, &ship.like.1)
                ))
                .await;
            self.b.give_back(c);
            let r = r?.map_err(Stop::Server)?;
            r.strings()
                .first()
                .and_then(|row| row.get(1).cloned().flatten())
                .map(|ddl| ddl.replacen("CREATE TEMPORARY TABLE", "CREATE TABLE", 1))
                .ok_or_else(|| {
                    Stop::Proxy(ProxyError::Wrong(
                        "SHOW CREATE TABLE returned nothing".into(),
                    ))
                })?
        } else {
            let mut c = self
                .b
                .ctx
                .pool_as(self.b.worker, ship.like.0, self.b.identity)
                .get_as(self.b.tenant.claim(), self.b.is_found_rows)
                .await?;
            let r = c
                .query_rows(&format!(
                    "SHOW CREATE TABLE {}",
                    crate::partition::qualified(&ship.db, &ship.like.1)
                ))
                .await?;
            let r = r.map_err(Stop::Server)?;
            r.strings()
                .first()
                .and_then(|row| row.get(1).cloned().flatten())
                .ok_or_else(|| {
                    Stop::Proxy(ProxyError::Wrong(
                        "SHOW CREATE TABLE returned nothing".into(),
                    ))
                })?
        };
        // Names in double quotes when the connection's sql_mode has
        // ANSI_QUOTES: written with backquotes, which any mode reads.
        let ddl = match ddl.starts_with("CREATE TABLE \"") {
            true => hscale_sql::ansi_names_backquoted(&ddl, true).unwrap_or(ddl),
            false => ddl,
        };
        let head = format!(
            "CREATE TABLE {}",
            crate::partition::quote_ident(&ship.like.1)
        );
        ddl.strip_prefix(&head).map(temporary_body).ok_or_else(|| {
            Stop::Proxy(ProxyError::Wrong(format!(
                "unexpected SHOW CREATE TABLE output for {}",
                ship.like.1
            )))
        })
    }

    /// The statements that create and fill the temporary tables of shipped
    /// tables on a part's connection: rows read from every source
    /// (bounded by `ship_max_rows`), inserted in batches.
    pub(super) async fn ship_statements(&mut self, ships: &[Ship]) -> Result<Vec<String>, Stop> {
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        let mut held = 0usize;
        let mut out = Vec::new();
        for ship in ships {
            let temp = crate::partition::qualified(&ship.db, &ship.temp);
            let body = self.ship_body(ship).await?;
            out.push(format!("DROP TEMPORARY TABLE IF EXISTS {temp}"));
            out.push(format!("CREATE TEMPORARY TABLE {temp}{body}"));
            for (target, sql) in &ship.sources {
                // Never read more than the bound allows.
                let cap = max_rows.saturating_sub(held) + 1;
                let read = format!("{sql} LIMIT {cap}");
                let mut copy = Copy {
                    columns: 0,
                    temp: &temp,
                    held: &mut held,
                    max_rows,
                    out: &mut out,
                };
                if self.b.holds_transaction() || self.b.has_temporary_tables_on(target.backend) {
                    // On the transaction's branch, or on the connection
                    // holding the session's temporary tables.
                    self.copy_in_transaction(target, &read, &mut copy).await?;
                } else {
                    // Read in the session's state (time zone, ...); the
                    // connection is closed after. A pooled one, never the
                    // session's pinned connection (which holds its user
                    // variables, ...) nor refused for being elsewhere.
                    let mut c = self
                        .b
                        .ctx
                        .pool_as(self.b.worker, target.backend, self.b.identity)
                        .get_as(self.b.tenant.claim(), self.b.is_found_rows)
                        .await?;
                    if let Some(err) = self.b.sync(&mut c, self.uses_last_insert_id).await? {
                        c.is_broken = true;
                        return Err(Stop::Server(err));
                    }
                    c.is_broken = true;
                    if let Ok(Err(e)) = c
                        .command(&BackendConn::payload_for_query(RAW_RESULTS))
                        .await
                    {
                        return Err(Stop::Server(e));
                    }
                    copy.rows(&mut c, &read).await?;
                }
            }
        }
        Ok(in_copy_state(out))
    }

    /// Read a source on the transaction's branch on its backend (opened
    /// now if needed), which then goes back to the transaction as it was.
    async fn copy_in_transaction(
        &mut self,
        target: &Target,
        read: &str,
        copy: &mut Copy<'_>,
    ) -> Result<(), Stop> {
        let mut c = match self.b.lease(target.backend, false).await? {
            Ok(c) => c,
            Err(err) => return Err(Stop::Server(err)),
        };
        let r = match c
            .command(&BackendConn::payload_for_query(SAVE_AND_RAW))
            .await
        {
            Ok(Ok(_)) => copy.rows(&mut c, read).await,
            Ok(Err(e)) => Err(Stop::Server(e)),
            Err(e) => Err(Stop::Proxy(e)),
        };
        if r.is_err() && copy.columns > 0 {
            // Read what is left of the result, so the branch can go on.
            while let Ok(Some(Ok(_))) = c.next_row(copy.columns).await {}
        }
        if !c.is_broken
            && !matches!(
                c.command(&BackendConn::payload_for_query(RESTORE)).await,
                Ok(Ok(_))
            )
        {
            c.is_broken = true;
        }
        if c.is_broken {
            // The branch (or the home) is lost: the transaction cannot go
            // on (`Bindings::close`: the session ends, nothing commits).
            let backend = c.backend.to_string();
            self.b
                .close(c, "while copying rows of a shipped table".into());
            return Err(r.err().unwrap_or_else(|| {
                Stop::Proxy(ProxyError::BackendLost {
                    backend,
                    reason: "while copying rows of a shipped table".into(),
                })
            }));
        }
        self.b.give_back(c);
        r
    }
}

/// Where a source's rows go: INSERT batches for the temporary copy.
struct Copy<'a> {
    /// The columns of the result being read (0: none open).
    columns: usize,
    temp: &'a str,
    held: &'a mut usize,
    max_rows: usize,
    out: &'a mut Vec<String>,
}

impl Copy<'_> {
    /// Run `read` on `c` and turn its rows into INSERT batches.
    async fn rows(&mut self, c: &mut PooledConn, read: &str) -> Result<(), Stop> {
        let columns = c.query_stream(read).await?.map_err(Stop::Server)?;
        self.columns = columns.len();
        if let Some(col) = columns
            .iter()
            .find(|col| kind_of(col) == Kind::Float && col.column_type == 0x04)
        {
            return Err(Stop::Proxy(ProxyError::Refused(format!(
                "copying FLOAT column {} between servers would change its values",
                col.name
            ))));
        }
        let mut batcher = InsertBatcher::new(self.temp, &columns);
        while let Some(row) = c.next_row(columns.len()).await? {
            let row = row.map_err(|e| {
                self.columns = 0; // an error ends the result
                Stop::Server(e)
            })?;
            *self.held += 1;
            if *self.held > self.max_rows {
                return Err(Stop::Proxy(ProxyError::ShipLimit {
                    limit: self.max_rows,
                }));
            }
            self.out.extend(batcher.push(&row));
        }
        self.out.extend(batcher.finish());
        self.columns = 0;
        Ok(())
    }
}

/// A table's definition (`SHOW CREATE TABLE` after its name) as a
/// temporary table can have it: without what InnoDB refuses there, which
/// the copy's reads never need: FULLTEXT keys (1796 "Cannot create
/// FULLTEXT index on temporary InnoDB table"), foreign keys (1005) and a
/// native PARTITION BY clause (1506). Every column, every other key and
/// CHECK constraint stays (a MATCH ... AGAINST over the copy then answers
/// the server's 1191: it needs the FULLTEXT key).
fn temporary_body(body: &str) -> String {
    let mut lines: Vec<&str> = Vec::new();
    let mut closed = false;
    for line in body.split('\n') {
        if closed {
            // After the definitions' closing line: PARTITION BY and its
            // partitions.
            break;
        }
        let t = line.trim_start();
        if line.starts_with(')') {
            closed = true;
        } else if line.starts_with("  ")
            && (t.starts_with("FULLTEXT KEY")
                || t.starts_with("FOREIGN KEY")
                || (t.starts_with("CONSTRAINT") && t.contains(" FOREIGN KEY ")))
        {
            continue;
        }
        lines.push(line);
    }
    // The definition before the closing line ends without a comma.
    if let Some(at) = lines.iter().position(|l| l.starts_with(')')) {
        if let Some(last) = at.checked_sub(1) {
            lines[last] = lines[last].strip_suffix(',').unwrap_or(lines[last]);
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::temporary_body;

    #[test]
    fn what_temporary_tables_refuse_is_left_out() {
        let body = " (\n  `id` int(11) NOT NULL,\n  `pid` int(11) DEFAULT NULL,\n  `body` text DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  KEY `pid` (`pid`),\n  FULLTEXT KEY `ft` (`body`),\n  CONSTRAINT `fkc` FOREIGN KEY (`pid`) REFERENCES `par` (`id`) ON DELETE CASCADE\n) ENGINE=InnoDB DEFAULT CHARSET=latin1\n PARTITION BY HASH (`id`)\nPARTITIONS 2";
        assert_eq!(
            temporary_body(body),
            " (\n  `id` int(11) NOT NULL,\n  `pid` int(11) DEFAULT NULL,\n  `body` text DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  KEY `pid` (`pid`)\n) ENGINE=InnoDB DEFAULT CHARSET=latin1"
        );
        let plain = " (\n  `id` int(11) NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB";
        assert_eq!(temporary_body(plain), plain);
    }
}
