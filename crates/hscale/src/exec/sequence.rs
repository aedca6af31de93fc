//! Filling in a statement's AUTO_INCREMENT ids from the table's sequence
//! (`crate::seq`), before it is planned: the id may be the partition key.
//! The statement then runs with its ids as explicit values; its OK packet
//! reports the first generated id, which becomes the session's
//! LAST_INSERT_ID() (`StatementScratch::generated_id`, read by the forwarder, the
//! scatter's total and `Bindings::finish`). Prepared INSERTs are read at
//! PREPARE (`PreparedIds`: the backends prepare the statement with a `?`
//! wherever an id may be generated) and filled at each execution, by
//! rewriting the execute packet.

use crate::exec::scratch::StatementScratch;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use hscale_route::router::{IdParam, PreparedIds};
use hscale_route::{BackendId, KeyValue};
use hscale_wire::consts::com;
use hscale_wire::stmt::Execute;

use super::params::{self, Bound};
use super::Bindings;
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::runtime::Context;

/// Where the sequences' counters are for `worker`'s statements.
fn sequence_main(ctx: &Context, worker: usize) -> crate::seq::Main<'_> {
    crate::seq::Main {
        pool: ctx.pool(worker, BackendId::MAIN),
        metrics: &ctx.metrics,
    }
}

impl Bindings {
    /// For an INSERT or REPLACE into a table with a sequence: the statement
    /// with its ids filled in (`None`: run it as it is). An explicit id at
    /// or above the counter moves the counter past it first.
    pub async fn fill_ids(
        &mut self,
        sql: &str,
        scratch: &mut StatementScratch,
    ) -> Result<Option<Bytes>, ProxyError> {
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
            scratch.passed = ctx
                .sequences
                .pass(sequence_main(&ctx, worker), &auto.table, generation, id)
                .await?;
        }
        if auto.needed == 0 {
            // Explicit ids only: LAST_INSERT_ID() stays as it was.
            scratch.generated_id = Some(0);
            return Ok(None);
        }
        let ids = ctx
            .sequences
            .take(
                sequence_main(&ctx, worker),
                &auto.table,
                generation,
                auto.needed,
            )
            .await?;
        scratch.generated_id = ids.first().copied();
        let filled = auto.fill(sql, &ids);
        scratch.generated_ids = ids;
        Ok(Some(BackendConn::payload_for_query(&filled)))
    }

    /// After a statement that called `LAST_INSERT_ID(expr)` on `conn`
    /// (and generated no id): the value the server now holds becomes the
    /// session's. A result set does not carry it, and an OK packet
    /// carries 0 for `LAST_INSERT_ID(0)`: it is read back.
    pub async fn read_back_last_insert_id(
        &mut self,
        conn: &mut crate::backend::PooledConn,
    ) -> Result<(), ProxyError> {
        let r = conn.query_rows("SELECT LAST_INSERT_ID()").await?;
        let value = r
            .ok()
            .and_then(|t| t.rows.into_iter().next())
            .and_then(|row| row.into_iter().next().flatten())
            .and_then(|v| std::str::from_utf8(&v).ok()?.parse::<u64>().ok());
        if let Some(v) = value {
            self.state.last_insert_id = v;
            conn.last_insert_id = v;
        }
        Ok(())
    }

    /// Before an INSERT on `conn` (`supplied`: what it gives its rows):
    /// when the connection's LAST_INSERT_ID() is one of the values the
    /// statement may give (or not known), it is set to the session's
    /// first, so that [`Bindings::is_generated`] can tell an explicit
    /// value from a generated one afterwards (both would leave that value
    /// there). One round trip, only then.
    pub async fn sync_for_insert(
        &mut self,
        conn: &mut crate::backend::PooledConn,
        supplied: &super::insert_id::Supplied<'_>,
        scratch: &mut StatementScratch,
    ) -> Result<Option<hscale_wire::response::ErrPacket>, ProxyError> {
        let held = conn.last_insert_id;
        let is_unknown = held == crate::backend::conn::UNKNOWN_INSERT_ID;
        if matches!(supplied, super::insert_id::Supplied::Nothing)
            || scratch.generated_id.is_some()
            || held == self.state.last_insert_id
            || !(is_unknown || supplied.may_hold(held))
        {
            return Ok(None);
        }
        let sql = format!("DO LAST_INSERT_ID({})", self.state.last_insert_id);
        if let Err(e) = conn
            .command(&crate::backend::BackendConn::payload_for_query(&sql))
            .await?
        {
            return Ok(Some(e));
        }
        conn.last_insert_id = self.state.last_insert_id;
        Ok(None)
    }

    /// After an INSERT on `conn` whose OK reported `id`, which may be an
    /// AUTO_INCREMENT value the statement gave (`insert_id.rs`): whether
    /// the server generated it, which its LAST_INSERT_ID() tells: a
    /// generated id is the OK's, an explicit value leaves what the
    /// connection held before. When the connection held `id` already,
    /// [`Bindings::sync_for_insert`] had made that the session's value,
    /// which is then the session's either way.
    pub async fn is_generated(
        &mut self,
        conn: &mut crate::backend::PooledConn,
        id: u64,
        supplied: &super::insert_id::Supplied<'_>,
    ) -> Result<bool, ProxyError> {
        if self.is_explicit(conn, id, supplied).await? {
            return Ok(false);
        }
        let r = conn.query_rows("SELECT LAST_INSERT_ID()").await?;
        let value = r
            .ok()
            .and_then(|t| t.rows.into_iter().next())
            .and_then(|row| row.into_iter().next().flatten())
            .and_then(|v| std::str::from_utf8(&v).ok()?.parse::<u64>().ok());
        match value {
            Some(v) if v == id => Ok(conn.last_insert_id != id || self.state.last_insert_id == id),
            Some(v) => {
                conn.last_insert_id = v;
                Ok(false)
            }
            None => Ok(true),
        }
    }

    /// Whether `id`, the OK's, is the last row's value of the table's
    /// AUTO_INCREMENT column, which every row gave a positive integer:
    /// then the server generated nothing and LAST_INSERT_ID() kept its
    /// value, known without asking (the column as the backend described
    /// it a moment ago, `Context::auto_increment`; described on `conn`
    /// when not known). False when that cannot be told this way.
    async fn is_explicit(
        &mut self,
        conn: &mut crate::backend::PooledConn,
        id: u64,
        supplied: &super::insert_id::Supplied<'_>,
    ) -> Result<bool, ProxyError> {
        // A temporary table may hide the table information_schema shows.
        if self.pins.contains(hscale_sql::Pins::TEMPORARY_TABLE) {
            return Ok(false);
        }
        let Some(values) = supplied.insert_values() else {
            return Ok(false);
        };
        let Some(db) = values.db.as_deref().or(self.state.db.as_deref()) else {
            return Ok(false);
        };
        let backend = conn.backend.clone();
        let column = match self.ctx.auto_increment.get(&backend, db, &values.table) {
            Some(c) => c,
            None => {
                let sql = format!(
                    "SELECT COLUMN_NAME, EXTRA LIKE '%auto_increment%' FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
                    crate::partition::quote_str(db),
                    crate::partition::quote_str(&values.table)
                );
                let Ok(t) = conn.query_rows(&sql).await? else {
                    return Ok(false);
                };
                if t.rows.is_empty() {
                    // Not a table there (a partitioned table's logical name).
                    return Ok(false);
                }
                let column = t.rows.into_iter().find_map(|row| {
                    let mut cells = row.into_iter();
                    let name = cells.next().flatten()?;
                    let is_auto = cells.next().flatten()?;
                    (is_auto.as_slice() == b"1").then(|| String::from_utf8_lossy(&name).into())
                });
                self.ctx
                    .auto_increment
                    .put(&backend, db, &values.table, column.clone());
                column
            }
        };
        Ok(column.is_some_and(|c| values.explicit_value(supplied, &c) == Some(id)))
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

    /// For a statement being prepared: how each execution fills in its
    /// ids when it inserts into a table with a sequence (`None`: it does
    /// not). The backends prepare [`PreparedIds::sql`].
    pub fn prepared_ids(&self, sql: &[u8]) -> Result<Option<Arc<PreparedIds>>, ProxyError> {
        if !self.ctx.partitioning.has_sequences() {
            return Ok(None);
        }
        let dict = self.ctx.partitioning.dictionary();
        if !dict.has_sequences() {
            return Ok(None);
        }
        let Ok(sql) = std::str::from_utf8(sql) else {
            return Ok(None);
        };
        match hscale_route::router::prepared_ids(sql, self.state.db.as_deref(), &dict) {
            Some(Ok(ids)) => Ok(Some(Arc::new(ids))),
            Some(Err(what)) => Err(ProxyError::Unsupported {
                what: format!("a prepared statement: {what}"),
            }),
            None => Ok(None),
        }
    }

    /// One execution of a prepared INSERT into a table with a sequence:
    /// the ids taken (an explicit id at or above the counter moves it
    /// first) and the execute packet for the backends' statement, with
    /// the client's parameters in their places and the ids in theirs.
    /// `num_params`: the client's parameters.
    pub async fn fill_prepared_ids(
        &mut self,
        ids: &PreparedIds,
        exec: &Execute<'_>,
        types: &[u8],
        num_params: usize,
        long_data: &[(u16, Bytes)],
        scratch: &mut StatementScratch,
    ) -> Result<FilledExecute, ProxyError> {
        enum Src {
            Client(usize),
            New,
            Zero,
        }
        let long: Vec<u16> = long_data.iter().map(|(p, _)| *p).collect();
        let bound = params::split(exec, types, num_params, &long).map_err(ProxyError::Refused)?;
        let is_zero_kept = self.is_zero_kept();
        let mut max_explicit = ids.max_explicit;
        let mut needed = 0;
        let mut srcs = Vec::with_capacity(ids.params.len());
        for p in &ids.params {
            let src = match *p {
                IdParam::Client(i) => Src::Client(i as usize),
                IdParam::New => Src::New,
                IdParam::Zero if is_zero_kept => Src::Zero,
                IdParam::Zero => Src::New,
                IdParam::ClientId(i) => {
                    let i = i as usize;
                    let n = match params::key_value(exec, types, i, &long) {
                        Ok(KeyValue::Null) => None,
                        Ok(KeyValue::Int(n)) => Some(n),
                        Ok(KeyValue::Str(s)) => match s.trim().parse::<i128>() {
                            Ok(n) => Some(n),
                            Err(_) => return Err(refusal(ids, "a value that is not an integer")),
                        },
                        Err(e) => return Err(refusal(ids, &e)),
                    };
                    match n {
                        None => Src::New,
                        Some(0) if !is_zero_kept => Src::New,
                        Some(n) => {
                            if n > 0 {
                                let n = u64::try_from(n).unwrap_or(u64::MAX);
                                max_explicit = Some(max_explicit.map_or(n, |m| m.max(n)));
                            }
                            Src::Client(i)
                        }
                    }
                }
            };
            needed += usize::from(matches!(src, Src::New));
            srcs.push(src);
        }
        let generation = {
            let dict = self.ctx.partitioning.dictionary();
            dict.table(&ids.table).map(|t| t.sequence_generation)
        };
        let Some(generation) = generation else {
            return Err(ProxyError::Refused(format!(
                "{} is no longer partitioned",
                ids.table
            )));
        };
        let (ctx, worker) = (self.ctx.clone(), self.worker);
        if let Some(id) = max_explicit {
            scratch.passed = ctx
                .sequences
                .pass(sequence_main(&ctx, worker), &ids.table, generation, id)
                .await?;
        }
        let fresh = if needed == 0 {
            Vec::new()
        } else {
            ctx.sequences
                .take(sequence_main(&ctx, worker), &ids.table, generation, needed)
                .await?
        };
        // Explicit ids only: LAST_INSERT_ID() stays as it was.
        scratch.generated_id = Some(fresh.first().copied().unwrap_or(0));
        scratch.generated_ids.clone_from(&fresh);
        let n = srcs.len();
        let mut nulls = vec![0u8; n.div_ceil(8)];
        let mut new_types = Vec::with_capacity(2 * n);
        let mut values = BytesMut::with_capacity(exec.values.len() + 8 * needed);
        let mut out_long = Vec::new();
        let mut fresh = fresh.into_iter();
        for (j, src) in srcs.iter().enumerate() {
            let id = match src {
                Src::Client(i) => {
                    new_types.extend_from_slice(&types[2 * i..2 * i + 2]);
                    match bound[*i] {
                        Bound::Null => nulls[j / 8] |= 1 << (j % 8),
                        Bound::Long => out_long.extend(
                            long_data
                                .iter()
                                .filter(|(p, _)| *p as usize == *i)
                                .map(|(_, d)| (j as u16, d.clone())),
                        ),
                        Bound::Value(b) => values.put_slice(b),
                    }
                    continue;
                }
                Src::New => fresh.next().unwrap_or(0),
                Src::Zero => 0,
            };
            // BIGINT UNSIGNED.
            new_types.extend_from_slice(&[0x08, 0x80]);
            values.put_u64_le(id);
        }
        let mut packet = BytesMut::with_capacity(11 + nulls.len() + 2 * n + values.len());
        packet.put_u8(com::STMT_EXECUTE);
        packet.put_u32_le(exec.statement_id);
        packet.put_u8(exec.flags);
        packet.put_u32_le(1);
        if n > 0 {
            packet.put_slice(&nulls);
            packet.put_u8(1);
            packet.put_slice(&new_types);
        }
        packet.put_slice(&values);
        Ok(FilledExecute {
            packet: packet.freeze(),
            num_params: n,
            long_data: out_long,
        })
    }
}

/// An execute packet with a prepared INSERT's ids filled in.
pub struct FilledExecute {
    /// For the backends' statement ([`PreparedIds::sql`]).
    pub packet: Bytes,
    pub num_params: usize,
    /// The client's long data, renumbered for the backends' statement.
    pub long_data: Vec<(u16, Bytes)>,
}

impl FilledExecute {
    pub fn execute(&self) -> Result<Execute<'_>, ProxyError> {
        Execute::decode(&self.packet, self.num_params).map_err(ProxyError::ClientProtocol)
    }
}

fn refusal(ids: &PreparedIds, what: &str) -> ProxyError {
    ProxyError::Unsupported {
        what: format!(
            "an AUTO_INCREMENT parameter bound as {what} in a prepared INSERT into {}, whose ids hscale fills from a sequence",
            ids.table
        ),
    }
}
