//! UPDATE that assigns the partition key (`hscale_route::router::KeyMove`,
//! whose module draws the steps): run as one statement, in its own
//! transaction in autocommit or behind the statement savepoint inside the
//! client's (`Exec::open_write` / `close_write`), so a failing step leaves
//! nothing behind. Each step runs through `Exec::run` into memory, like
//! the reads of `insert_form.rs`; the client gets the in-place UPDATE's
//! OK (its affected rows and info are one server's: the moves change
//! nothing a client counts), or the first step's error.
//!
//! The moved rows are written back as literals with their stored columns
//! (generated ones are computed again where they land) and their values as
//! the UPDATE left them; the sequence is not asked for ids (none is
//! missing) and LAST_INSERT_ID() stays as it was.

use hscale_route::dictionary::{PartitionedTable, Target};
use hscale_route::router::{self, KeyMove, Plan, StatementKind};
use hscale_wire::response::OkPacket;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ProxyError;
use crate::exec::sink::{self, Answer};
use crate::exec::{Effects, Exec};
use crate::planning::Learnt;

/// What a step left: its OK, or its error, already written to the client.
enum Step {
    Ok(OkPacket),
    Failed,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Run a key-changing UPDATE (see the module).
    pub(crate) async fn run_key_move(
        &mut self,
        m: KeyMove,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        let is_implicit = self.b.needs_implicit_txn();
        let Some(scope) = self.open_write(is_implicit).await? else {
            return Ok(());
        };
        let kept = (self.scratch.generated_id, self.b.state.last_insert_id);
        let total = self.key_move_steps(&m, effects).await;
        (self.scratch.generated_id, self.b.state.last_insert_id) = kept;
        self.close_write(scope, total).await
    }

    /// The steps; `Ok(None)` when one failed and its error was written.
    async fn key_move_steps(
        &mut self,
        m: &KeyMove,
        effects: Effects<'_>,
    ) -> Result<Option<OkPacket>, ProxyError> {
        let what = "UPDATE of the partition key";
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        // 1. Each matched row's key and new key.
        let rows = match sink::read(self.b, self.scratch, &m.select, what, max_rows).await? {
            Answer::Error(err) => {
                self.write_server_error(1, &err).await?;
                return Ok(None);
            }
            Answer::Ok(_) => Vec::new(),
            Answer::Rows(_, rows) => rows,
        };
        let text = |v: Option<Vec<u8>>| -> Result<Option<String>, ProxyError> {
            v.map(|b| {
                String::from_utf8(b).map_err(|_| {
                    ProxyError::Refused(format!(
                        "{what} of {} to keys that are not UTF-8 in the connection's character set",
                        m.table
                    ))
                })
            })
            .transpose()
        };
        let mut pairs = Vec::with_capacity(rows.len());
        for row in rows {
            let mut it = row.into_iter();
            pairs.push((text(it.next().flatten())?, text(it.next().flatten())?));
        }
        // 2. The rows that move.
        let (moves, table) = {
            let dict = self.b.ctx.partitioning.dictionary();
            let Some(table) = dict.table(&m.table).cloned() else {
                return Err(ProxyError::Refused(format!(
                    "internal: {} is no longer partitioned",
                    m.table
                )));
            };
            let moves = Learnt::new()
                .attempt(|known| router::key_moves(&table, &pairs, known))
                .0
                .map_err(ProxyError::Refused)?;
            (moves, table)
        };
        // One server updates the rows one by one in key order: a new key
        // that is another matched row's key, not moved yet, is its 1062,
        // which the partitions' steps do not meet (the rows are in
        // different tables).
        if let Some(first) = moves.first().map(|(from, _)| from.clone()) {
            if let Some(err) = self.chain_duplicate(&table, &first, &pairs).await? {
                self.write_server_error(1, &err).await?;
                return Ok(None);
            }
        }
        // 3. The UPDATE in place.
        let plan = Plan::Targets {
            kind: StatementKind::Update,
            parts: m.parts.clone(),
        };
        let Step::Ok(ok) = self.key_move_step(plan, effects).await? else {
            return Ok(None);
        };
        // 4. The moves, one source partition at a time.
        for (from, keys) in moves {
            let columns = self.key_move_columns(&table, &from).await?;
            let (select, delete) = router::moved_rows_sql(&table, &from, &columns, &keys);
            // Read and written back in UTC: a TIMESTAMP keeps its instant.
            let select = crate::partition::copy::in_utc(&select);
            let read = Plan::Targets {
                kind: StatementKind::Select,
                parts: vec![(from.clone(), select.clone())],
            };
            let answer = sink::run(
                self.b,
                self.scratch,
                &select,
                what,
                read,
                read_only(),
                max_rows,
            )
            .await?;
            let Some(rows) = self.literal_rows_or_answer(answer).await? else {
                return Ok(None);
            };
            if rows.len() != keys.len() {
                return Err(ProxyError::Wrong(format!(
                    "internal: {} rows of {} to move out of {} were found there, not {}",
                    rows.len(),
                    m.table,
                    from.physical_table,
                    keys.len()
                )));
            }
            let insert = router::moved_rows_insert(&table, &columns, &rows);
            let dict = self.b.ctx.partitioning.dictionary();
            let plan = crate::planning::plan(
                crate::planning::Asker::Session(self.b),
                &dict,
                &insert,
                crate::planning::Db::Given(None),
                crate::planning::Form::Plain,
            )
            .await?;
            // The row's other columns as stored, whatever the session's
            // sql_mode and time zone (one server's UPDATE leaves them as
            // they are).
            let plan = match plan {
                Plan::Refuse(why) => return Err(ProxyError::Refused(why)),
                Plan::Targets { kind, parts } => Plan::Targets {
                    kind,
                    parts: parts
                        .into_iter()
                        .map(|(t, sql)| (t, crate::partition::copy::stored_as_is_in_utc(&sql)))
                        .collect(),
                },
                other => other,
            };
            if let Step::Failed = self.key_move_step(plan, Effects::default()).await? {
                return Ok(None);
            }
            let plan = Plan::Targets {
                kind: StatementKind::Delete,
                parts: vec![(from, delete)],
            };
            if let Step::Failed = self.key_move_step(plan, Effects::default()).await? {
                return Ok(None);
            }
        }
        Ok(Some(ok))
    }

    /// The stored (not generated) columns of a partition's table, in order.
    async fn key_move_columns(
        &mut self,
        table: &PartitionedTable,
        from: &Target,
    ) -> Result<Vec<String>, ProxyError> {
        let sql = router::stored_columns_sql(table, from);
        let plan = Plan::Targets {
            kind: StatementKind::Select,
            parts: vec![(from.clone(), sql.clone())],
        };
        let what = "UPDATE of the partition key";
        let answer = sink::run(
            self.b,
            self.scratch,
            &sql,
            what,
            plan,
            read_only(),
            usize::MAX,
        )
        .await?;
        let bad = || {
            ProxyError::Wrong(format!(
                "internal: the columns of {} could not be read",
                from.physical_table
            ))
        };
        match answer {
            Answer::Rows(_, rows) if !rows.is_empty() => rows
                .into_iter()
                .map(|r| {
                    r.into_iter()
                        .next()
                        .flatten()
                        .and_then(|b| String::from_utf8(b).ok())
                        .ok_or_else(bad)
                })
                .collect(),
            _ => Err(bad()),
        }
    }

    /// One server's 1062 for a key-changing UPDATE whose rows, updated
    /// in ascending key order (its scan of the primary key), meet another
    /// matched row's key before that row moved: checked when the
    /// partition key is the whole primary key and every key is an
    /// integer; a chain otherwise (a new key that is another matched
    /// row's key) is refused, its outcome depending on the server's row
    /// order.
    async fn chain_duplicate(
        &mut self,
        table: &PartitionedTable,
        from: &Target,
        pairs: &[(Option<String>, Option<String>)],
    ) -> Result<Option<hscale_wire::response::ErrPacket>, ProxyError> {
        let olds: std::collections::HashSet<&str> =
            pairs.iter().filter_map(|(k, _)| k.as_deref()).collect();
        let is_chain = pairs.iter().any(|(k, n)| {
            n.as_deref()
                .is_some_and(|n| Some(n) != k.as_deref() && olds.contains(n))
        });
        if !is_chain {
            return Ok(None);
        }
        let refuse = || {
            ProxyError::Refused(format!(
                "an UPDATE of the partition key of {} giving rows the keys of other rows it updates, \
                 unless the key is the whole primary key and an integer",
                table.name
            ))
        };
        let mut keyed = Vec::with_capacity(pairs.len());
        for (k, n) in pairs {
            let parse = |v: &Option<String>| v.as_deref().and_then(|v| v.parse::<i128>().ok());
            match (parse(k), parse(n)) {
                (Some(k), Some(n)) => keyed.push((k, n)),
                _ => return Err(refuse()),
            }
        }
        let sql = format!(
            "SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND INDEX_NAME = 'PRIMARY'",
            crate::partition::quote_str(&table.name.db),
            crate::partition::quote_str(&from.physical_table)
        );
        let plan = Plan::Targets {
            kind: StatementKind::Select,
            parts: vec![(from.clone(), sql.clone())],
        };
        let what = "UPDATE of the partition key";
        let primary =
            match sink::run(self.b, self.scratch, &sql, what, plan, read_only(), 1).await? {
                Answer::Rows(_, rows) => rows
                    .into_iter()
                    .next()
                    .and_then(|r| r.into_iter().next().flatten()),
                _ => None,
            };
        if primary.as_deref() != Some(table.column.as_bytes()) {
            return Err(refuse());
        }
        keyed.sort_unstable();
        let mut held: std::collections::HashSet<i128> = keyed.iter().map(|(k, _)| *k).collect();
        for (k, n) in keyed {
            if n != k && held.contains(&n) {
                return Ok(Some(hscale_wire::response::ErrPacket {
                    code: 1062,
                    sql_state: *b"23000",
                    message: format!("Duplicate entry '{n}' for key 'PRIMARY'"),
                }));
            }
            held.remove(&k);
            held.insert(n);
        }
        Ok(None)
    }

    /// Run a write step into memory: its OK, or its error written to the
    /// client.
    async fn key_move_step(
        &mut self,
        plan: Plan,
        effects: Effects<'_>,
    ) -> Result<Step, ProxyError> {
        let what = "UPDATE of the partition key";
        match sink::run(self.b, self.scratch, "", what, plan, effects, 0).await? {
            Answer::Ok(ok) => Ok(Step::Ok(ok)),
            Answer::Error(err) => {
                self.write_server_error(1, &err).await?;
                Ok(Step::Failed)
            }
            Answer::Rows(..) => Err(ProxyError::Wrong(
                "internal: a step of an UPDATE of the partition key answered no OK".into(),
            )),
        }
    }
}

fn read_only() -> Effects<'static> {
    Effects {
        is_read_only: true,
        ..Effects::default()
    }
}
