//! Global unique indexes at run time (`docs/src/unique-keys.md`; planned
//! by `hscale_route::router::lookups`).
//!
//! ```text
//!  UniqueWrite (INSERT) ─► open_write ─► each index's rows ─► the rows' parts ─► close_write
//!  UniqueWrite (INSERT IGNORE, ON DUPLICATE KEY UPDATE) ─► open_write ─► row by row
//!                                    (`unique_rows.rs`) ─► close_write
//!  UniqueWrite (DELETE) ─► open_write ─► each part with RETURNING the indexed columns
//!                                    ─► DELETE of those values from each lookup table ─► close_write
//!  ByLookup             ─► the lookup read ─► the keys routed ─► the inner plan on their partitions
//! ```
//!
//! A write and its index rows are one statement (`txn/statement.rs`): in
//! autocommit its own transaction, committed with two-phase commit when
//! the row and its index row sit on different backends; inside the
//! client's transaction behind the statement savepoint. A value another
//! row holds is refused by the lookup table's PRIMARY KEY, whose error
//! (1062) is given the key's name: `Duplicate entry 'x' for key 'email'`,
//! as one server says it. The lookup table's column has the indexed
//! column's type and collation, so it calls the same values equal and
//! prints the entry as one server prints it.

use hscale_route::dictionary::{PartitionedTable, Target};
use hscale_route::router::{ByLookup, Plan, StatementKind, UniqueWrite};
use hscale_route::KeyValue;
use hscale_wire::response::{ErrPacket, OkPacket};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ProxyError;
use crate::exec::sink::{self, Answer};
use crate::exec::{Effects, Exec};
use crate::planning::Learnt;

const WHAT: &str = "a write to a table with a global unique index";

/// The most keys a lookup read narrows a statement by; more scatter.
const MAX_LOOKUP_ROWS: usize = 10_000;

/// A lookup table's duplicate error (its PRIMARY KEY) as one server
/// names the table's key.
pub(super) fn duplicate_of_key(err: &ErrPacket, key: &str, table: &str) -> ErrPacket {
    let mut out = err.clone();
    if err.code != 1062 {
        return out;
    }
    if let Some(at) = err.message.rfind(" for key '") {
        let named = &err.message[at + " for key '".len()..];
        // MySQL 8 names `table.key`; MariaDB the key alone.
        let key = if named.contains('.') {
            format!("{table}.{key}")
        } else {
            key.to_string()
        };
        out.message = format!("{} for key '{key}'", &err.message[..at]);
    }
    out
}

/// The partition of a stored partition key, as an index row holds it
/// (its text); `None` when it cannot be routed without asking.
pub(super) fn route_stored_key(table: &PartitionedTable, key: String) -> Option<Target> {
    route_key(table, KeyValue::Str(key))
}

fn route_key(table: &PartitionedTable, key: KeyValue) -> Option<Target> {
    table.stored_key(key).and_then(|v| {
        let (r, questions) = Learnt::new().attempt(|known| table.route(&v, known));
        r.ok().filter(|_| questions.is_empty())
    })
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Run a write and its index writes as one statement (see the module).
    pub(crate) async fn run_unique_write(
        &mut self,
        w: UniqueWrite,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        let is_implicit = self.b.needs_implicit_txn();
        let Some(scope) = self.open_write(is_implicit).await? else {
            return Ok(());
        };
        let total = match (w.kind, &w.update, &w.row_by_row) {
            (_, _, Some(rr)) => self.unique_row_by_row(&w, rr, effects).await,
            (_, Some(u), _) => self.unique_update(&w, u, effects).await,
            (StatementKind::Delete, _, _) => self.unique_delete(&w).await,
            _ => self.unique_insert(&w, effects).await,
        };
        self.close_write(scope, total).await
    }

    /// Each index's rows, then the rows; `Ok(None)`: an error was
    /// written. The index rows first: the lookup table is where two
    /// statements writing one value meet, and the second waits there for
    /// the first's commit (then 1062) before it wrote anything a third
    /// could wait for.
    async fn unique_insert(
        &mut self,
        w: &UniqueWrite,
        effects: Effects<'_>,
    ) -> Result<Option<OkPacket>, ProxyError> {
        let kept = (self.scratch.generated_id, self.b.state.last_insert_id);
        for index in &w.inserts {
            let plan = Plan::Targets {
                kind: StatementKind::Insert,
                parts: index.parts.clone(),
            };
            let answer =
                sink::run(self.b, self.scratch, "", WHAT, plan, Effects::default(), 0).await;
            (self.scratch.generated_id, self.b.state.last_insert_id) = kept;
            match answer? {
                Answer::Ok(_) => {}
                Answer::Error(err) => {
                    let mut err = duplicate_of_key(&err, &index.lookup.key, &w.table.table);
                    if err.code == 1062 && w.is_one_row {
                        // One server checks PRIMARY (then the keys before
                        // this one) first: the row's own insert, undone
                        // with the statement, names it if it collides.
                        err = self.first_duplicate(w, err).await?;
                    }
                    self.write_error_packet(1, &err).await?;
                    return Ok(None);
                }
                Answer::Rows(..) => {
                    return Err(ProxyError::Wrong(format!(
                        "internal: the index rows of {} answered rows",
                        w.table
                    )))
                }
            }
        }
        let rows = Plan::Targets {
            kind: w.kind,
            parts: w.parts.clone(),
        };
        match sink::run(self.b, self.scratch, "", WHAT, rows, effects, 0).await? {
            Answer::Ok(ok) => Ok(Some(ok)),
            Answer::Error(err) => {
                self.write_server_error(1, &err).await?;
                Ok(None)
            }
            Answer::Rows(..) => Err(ProxyError::Refused(format!(
                "INSERT ... RETURNING into {}, which has a global unique index",
                w.table
            ))),
        }
    }

    /// `index_err`, the index's 1062 for a one-row INSERT, or the row's
    /// own 1062 when its partition refuses it too (a key one server
    /// checks before the indexed one). The row's insert runs in the
    /// statement scope, which the error then undoes.
    async fn first_duplicate(
        &mut self,
        w: &UniqueWrite,
        index_err: ErrPacket,
    ) -> Result<ErrPacket, ProxyError> {
        let rows = Plan::Targets {
            kind: w.kind,
            parts: w.parts.clone(),
        };
        let kept = (self.scratch.generated_id, self.b.state.last_insert_id);
        let answer = sink::run(self.b, self.scratch, "", WHAT, rows, Effects::default(), 0).await;
        (self.scratch.generated_id, self.b.state.last_insert_id) = kept;
        Ok(match answer? {
            Answer::Error(own) if own.code == 1062 => own,
            _ => index_err,
        })
    }

    /// Each part with RETURNING the indexed columns, then those values'
    /// lookup rows deleted; `Ok(None)`: an error was written.
    async fn unique_delete(&mut self, w: &UniqueWrite) -> Result<Option<OkPacket>, ProxyError> {
        let mut total = OkPacket::default();
        let mut values: Vec<Vec<String>> = vec![Vec::new(); w.deletes.len()];
        for (target, sql) in &w.parts {
            let plan = Plan::Targets {
                kind: StatementKind::Delete,
                parts: vec![(target.clone(), sql.clone())],
            };
            let answer = sink::run(
                self.b,
                self.scratch,
                "",
                WHAT,
                plan,
                Effects::default(),
                usize::MAX,
            )
            .await?;
            let answer = match answer {
                Answer::Ok(ok) => {
                    total.status = ok.status;
                    continue;
                }
                other => other,
            };
            let Some(rows) = self.literal_rows_or_answer(answer).await? else {
                return Ok(None);
            };
            total.affected_rows += rows.len() as u64;
            for row in rows {
                for (i, v) in row.into_iter().enumerate().take(values.len()) {
                    if v != "NULL" {
                        values[i].push(v);
                    }
                }
            }
        }
        for (lookup, values) in w.deletes.iter().zip(values) {
            for chunk in values.chunks(500) {
                let sql = format!(
                    "DELETE FROM {} WHERE {} IN ({})",
                    crate::partition::qualified(&lookup.table.db, &lookup.table.table),
                    crate::partition::quote_ident(&lookup.column),
                    chunk.join(", ")
                );
                let dict = self.b.ctx.partitioning.dictionary();
                let plan = crate::planning::plan(
                    crate::planning::Asker::Session(self.b),
                    &dict,
                    &sql,
                    crate::planning::Db::Given(None),
                    crate::planning::Form::Plain,
                )
                .await?;
                drop(dict);
                match sink::run(
                    self.b,
                    self.scratch,
                    &sql,
                    WHAT,
                    plan,
                    Effects::default(),
                    0,
                )
                .await?
                {
                    Answer::Ok(_) => {}
                    Answer::Error(err) => {
                        self.write_server_error(1, &err).await?;
                        return Ok(None);
                    }
                    Answer::Rows(..) => {
                        return Err(ProxyError::Wrong(format!(
                            "internal: deleting the index rows of {} answered rows",
                            w.table
                        )))
                    }
                }
            }
        }
        Ok(Some(total))
    }

    /// The lookup read, then the inner plan on the partitions of the keys
    /// it found (every part when a key cannot be routed here).
    pub(crate) async fn run_by_lookup(
        &mut self,
        mut l: ByLookup,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        if !self.narrow_by_lookup(&mut l).await? {
            return Ok(());
        }
        match *l.inner {
            Plan::UniqueWrite(w) => self.run_unique_write(*w, effects).await,
            inner => self.run(inner, effects).await,
        }
    }

    /// Run `l`'s lookup read and keep only the inner plan's parts of the
    /// keys it found; `Ok(false)`: the read failed and its error was
    /// written.
    pub(crate) async fn narrow_by_lookup(&mut self, l: &mut ByLookup) -> Result<bool, ProxyError> {
        let read = Plan::Targets {
            kind: StatementKind::Select,
            parts: l.read.clone(),
        };
        let read_effects = Effects {
            is_read_only: true,
            ..Effects::default()
        };
        let answer = sink::run(
            self.b,
            self.scratch,
            "",
            WHAT,
            read,
            read_effects,
            MAX_LOOKUP_ROWS,
        )
        .await;
        let rows = match answer {
            Ok(Answer::Rows(_, rows)) => Some(rows),
            Ok(Answer::Ok(_)) => Some(Vec::new()),
            Ok(Answer::Error(err)) => {
                self.write_server_error(1, &err).await?;
                return Ok(false);
            }
            // More keys than narrowing is worth: every partition.
            Err(ProxyError::ShipLimit { .. }) => None,
            Err(e) => return Err(e),
        };
        let table = self
            .b
            .ctx
            .partitioning
            .dictionary()
            .table(&l.table)
            .cloned();
        let (Some(rows), Some(table)) = (rows, table) else {
            return Ok(true);
        };
        let mut targets = Vec::new();
        for row in rows {
            let key = match row.into_iter().next().flatten() {
                None => KeyValue::Null,
                Some(b) => match String::from_utf8(b) {
                    Ok(s) => KeyValue::Str(s),
                    Err(_) => return Ok(true),
                },
            };
            let routed = match key {
                KeyValue::Str(s) => route_stored_key(&table, s),
                other => route_key(&table, other),
            };
            match routed {
                Some(t) => targets.push(t),
                None => return Ok(true),
            }
        }
        l.narrow(&targets);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_tables_duplicate_names_the_key() {
        let err = ErrPacket {
            code: 1062,
            sql_state: *b"23000",
            message: "Duplicate entry 'a@x' for key 'PRIMARY'".into(),
        };
        assert_eq!(
            duplicate_of_key(&err, "email", "users").message,
            "Duplicate entry 'a@x' for key 'email'"
        );
        let mysql = ErrPacket {
            message: "Duplicate entry 'a@x' for key 'hscale_lookup_users_email.PRIMARY'".into(),
            ..err
        };
        assert_eq!(
            duplicate_of_key(&mysql, "email", "users").message,
            "Duplicate entry 'a@x' for key 'users.email'"
        );
    }
}
