//! Filling in a statement's AUTO_INCREMENT ids from the table's sequence
//! (`crate::seq`), before it is planned: the id may be the partition key.
//! The statement then runs with its ids as explicit values; its OK packet
//! reports the first generated id, which becomes the session's
//! LAST_INSERT_ID() (`Bindings::generated_id`, read by the forwarder, the
//! scatter's total and `Bindings::finish`).

use bytes::Bytes;

use super::Bindings;
use crate::backend::BackendConn;
use crate::error::ProxyError;

impl Bindings {
    /// For an INSERT or REPLACE into a table with a sequence: the statement
    /// with its ids filled in (`None`: run it as it is). An explicit id at
    /// or above the counter moves the counter past it first.
    pub async fn fill_ids(&mut self, sql: &str) -> Result<Option<Bytes>, ProxyError> {
        // Every statement passes here: no shared reference count touched
        // unless some table has a sequence.
        if !self.ctx.partitioning.has_sequences() {
            return Ok(None);
        }
        let dict = self.ctx.partitioning.dictionary();
        if !dict.has_sequences() {
            return Ok(None);
        }
        let is_zero_kept = self.is_zero_kept();
        let auto = match hscale_route::router::auto_insert(
            sql,
            self.state.db.as_deref(),
            &dict,
            is_zero_kept,
        ) {
            None => return Ok(None),
            Some(Err(what)) => return Err(ProxyError::Unsupported { what }),
            Some(Ok(a)) => a,
        };
        let Some(generation) = dict.table(&auto.table).map(|t| t.sequence_generation) else {
            return Ok(None);
        };
        drop(dict);
        let (ctx, worker) = (self.ctx.clone(), self.worker);
        if let Some(id) = auto.max_explicit {
            ctx.sequences
                .pass(&ctx, worker, &auto.table, generation, id)
                .await?;
        }
        if auto.needed == 0 {
            // Explicit ids only: LAST_INSERT_ID() stays as it was.
            self.generated_id = Some(0);
            return Ok(None);
        }
        let ids = ctx
            .sequences
            .take(&ctx, worker, &auto.table, generation, auto.needed)
            .await?;
        self.generated_id = ids.first().copied();
        let filled = auto.fill(sql, &ids);
        Ok(Some(BackendConn::payload_for_query(&filled)))
    }

    /// Whether the session's sql_mode has NO_AUTO_VALUE_ON_ZERO (0 is then
    /// stored as given instead of generating an id).
    fn is_zero_kept(&self) -> bool {
        self.state.vars.items().iter().any(|i| {
            i.key == "sql_mode"
                && i.assign
                    .to_ascii_uppercase()
                    .contains("NO_AUTO_VALUE_ON_ZERO")
        })
    }

    /// Prepared INSERTs into a table with a sequence are not filled in yet:
    /// refused (1235) at PREPARE and EXECUTE rather than letting each
    /// backend generate ids of its own (duplicates across partitions).
    pub fn refuse_prepared_into_sequence(&self, sql: &[u8]) -> Result<(), ProxyError> {
        if !self.ctx.partitioning.has_sequences() {
            return Ok(());
        }
        let dict = self.ctx.partitioning.dictionary();
        if !dict.has_sequences() {
            return Ok(());
        }
        let Ok(sql) = std::str::from_utf8(sql) else {
            return Ok(());
        };
        match hscale_route::router::auto_insert(sql, self.state.db.as_deref(), &dict, false) {
            Some(Ok(a)) => Err(ProxyError::Unsupported {
                what: format!(
                    "a prepared INSERT or REPLACE into {}, whose AUTO_INCREMENT column hscale fills from a sequence (send it as a text statement)",
                    a.table
                ),
            }),
            Some(Err(what)) => Err(ProxyError::Unsupported {
                what: format!("a prepared statement: {what}"),
            }),
            None => Ok(()),
        }
    }
}
