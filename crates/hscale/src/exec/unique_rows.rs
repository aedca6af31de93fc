//! INSERT IGNORE and INSERT ... ON DUPLICATE KEY UPDATE on a table with
//! a global unique index (`docs/src/unique-keys.md`; planned row by row
//! by `hscale_route::router::lookup_rows`), inside the statement scope
//! `exec/unique.rs` opens.
//!
//! One server decides each row in turn: it checks PRIMARY, then the
//! other keys, and the first it collides with decides (IGNORE: the row
//! is skipped, warning 1062 naming that key; UPDATE: that row is
//! updated). Here, per row, in the statement's order:
//!
//! ```text
//!  1. each indexed value taken: INSERT IGNORE of its index row (0 rows: another row holds it)
//!  2. the row's statement on its partition, which checks PRIMARY and its own keys first
//!  3a. every value taken: the row stored (1 row inserted) or decided by its partition;
//!      then the values it took are released (its index rows deleted)
//!  3b. a value held: its partition decided (no row inserted: PRIMARY first, as one server), or
//!      the row was stored against the index: deleted again, then
//!        IGNORE  warning 1062 naming the key, as the index's INSERT IGNORE printed the entry
//!        UPDATE  the row's statement on the holder's partition, where it meets the holder
//!                by the partition's own UNIQUE key and updates it
//! ```
//!
//! The index rows a row takes hold their lock to the statement's end, so
//! a concurrent statement with the same value waits in step 1 and then
//! sees the value held.

use hscale_route::dictionary::{PartitionedTable, Target};
use hscale_route::router::{OnDuplicate, OneRow, Plan, RowByRow, StatementKind, UniqueWrite};
use hscale_wire::response::{OkInfo, OkPacket};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ProxyError;
use crate::exec::conditions::RowMap;
use crate::exec::sink::{self, Answer};
use crate::exec::{Effects, Exec};

const WHAT: &str =
    "an INSERT IGNORE or ON DUPLICATE KEY UPDATE on a table with a global unique index";

/// What one row's statement did.
struct RowDone {
    ok: OkPacket,
    /// No row inserted: skipped, or a stored row updated.
    is_duplicate: bool,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// The rows one by one (see the module); `Ok(None)`: an error was
    /// written.
    pub(crate) async fn unique_row_by_row(
        &mut self,
        w: &UniqueWrite,
        rr: &RowByRow,
        effects: Effects<'_>,
    ) -> Result<Option<OkPacket>, ProxyError> {
        self.scratch.gathered.part_rows = None;
        let count_before = self.scratch.gathered.count;
        let table = self
            .b
            .ctx
            .partitioning
            .dictionary()
            .table(&w.table)
            .cloned()
            .ok_or_else(|| {
                ProxyError::Refused(format!("internal: {} is no longer partitioned", w.table))
            })?;
        let mut total = OkPacket::default();
        let mut duplicates = 0;
        // With a sequence (`exec/sequence.rs`) the ids reach the backends
        // as explicit values: the statement's id is the first generated
        // one of a row it stored; a row skipped or updated instead
        // leaves LAST_INSERT_ID() as it was, as on one server.
        let sequenced = self.scratch.generated_id.map(|_| {
            let generated = std::mem::take(&mut self.scratch.generated_ids);
            (generated, self.b.state.last_insert_id)
        });
        let mut first_id = None;
        for (i, row) in rr.rows.iter().enumerate() {
            self.scratch.gathered.row_map = RowMap::Rows(vec![i as u32 + 1]);
            let done = self.one_row(&table, row, rr.on_duplicate, effects).await;
            self.scratch.gathered.row_map = RowMap::Same;
            let Some(done) = done? else {
                return Ok(None);
            };
            total.affected_rows += done.ok.affected_rows;
            // One server's info counts the rows skipped, or updated
            // (changed: 2 rows).
            duplicates += u64::from(match rr.on_duplicate {
                OnDuplicate::Ignore => done.is_duplicate,
                OnDuplicate::Update => done.ok.affected_rows == 2,
            });
            if total.last_insert_id == 0 {
                total.last_insert_id = done.ok.last_insert_id;
            }
            if let (Some((generated, _)), None) = (&sequenced, first_id) {
                first_id = row
                    .key
                    .parse::<u64>()
                    .ok()
                    .filter(|k| !done.is_duplicate && generated.contains(k));
            }
            total.status = done.ok.status;
        }
        if let Some((_, session_id)) = sequenced {
            self.b.state.last_insert_id = session_id;
            self.scratch.generated_id = Some(first_id.unwrap_or(0));
            total.last_insert_id = first_id.unwrap_or(0);
        }
        let warnings = self.scratch.gathered.count.saturating_sub(count_before);
        total.warnings = u16::try_from(warnings).unwrap_or(u16::MAX);
        if rr.rows.len() > 1 {
            total.info = OkInfo::Records {
                records: rr.rows.len() as u64,
                duplicates,
                warnings,
            };
        }
        Ok(Some(total))
    }

    /// Steps 1 to 3 for one row; `Ok(None)`: an error was written.
    async fn one_row(
        &mut self,
        table: &PartitionedTable,
        row: &OneRow,
        on_duplicate: OnDuplicate,
        effects: Effects<'_>,
    ) -> Result<Option<RowDone>, ProxyError> {
        let mut taken = Vec::new();
        let mut held = None;
        for v in &row.values {
            let mark = self.scratch.gathered.mark();
            let Some(ok) = self.lookup_step(&v.take, StatementKind::Insert).await? else {
                return Ok(None);
            };
            let printed = self.scratch.gathered.warning_since(mark, 1062);
            self.scratch.gathered.rewind(mark);
            if ok.affected_rows == 1 {
                taken.push(v);
                continue;
            }
            held = Some((v, printed));
            break;
        }
        // A held value's row, for ON DUPLICATE KEY UPDATE: locked, and
        // its partition.
        let holder = match (&held, on_duplicate) {
            (Some((v, _)), OnDuplicate::Update) => match self.holder_of(table, &v.holder).await? {
                Some(t) => Some(t),
                None => return Ok(None),
            },
            _ => None,
        };
        let kept = (self.scratch.generated_id, self.b.state.last_insert_id);
        let Some(ok) = self.row_step(&row.part, effects).await? else {
            return Ok(None);
        };
        let is_stored = match (row.values.first(), on_duplicate) {
            // Under CLIENT_FOUND_ROWS an update that changed nothing
            // counts one row too: the partition tells.
            (Some(v), OnDuplicate::Update) if self.b.is_found_rows && ok.affected_rows == 1 => {
                let is_own_partition = holder.as_ref() == Some(&row.part.0);
                !is_own_partition && self.is_stored(&row.part.0, &v.is_stored).await?
            }
            _ => ok.affected_rows == 1,
        };
        let Some((v, printed)) = held else {
            if !is_stored {
                for t in taken {
                    if self
                        .lookup_step(&t.release, StatementKind::Delete)
                        .await?
                        .is_none()
                    {
                        return Ok(None);
                    }
                }
            }
            return Ok(Some(RowDone {
                is_duplicate: !is_stored,
                ok,
            }));
        };
        for t in taken {
            if self
                .lookup_step(&t.release, StatementKind::Delete)
                .await?
                .is_none()
            {
                return Ok(None);
            }
        }
        if !is_stored {
            // Its partition decided: PRIMARY (or its own key) first.
            return Ok(Some(RowDone {
                ok,
                is_duplicate: true,
            }));
        }
        // Stored against the index: undone, then decided by the index.
        let unstore = (row.part.0.clone(), v.unstore.clone());
        if self
            .lookup_step(&unstore, StatementKind::Delete)
            .await?
            .is_none()
        {
            return Ok(None);
        }
        (self.scratch.generated_id, self.b.state.last_insert_id) = kept;
        match (on_duplicate, holder) {
            (OnDuplicate::Update, Some(holder)) => {
                let on_holder = (holder.clone(), row.on(&holder));
                let Some(ok) = self.row_step(&on_holder, effects).await? else {
                    return Ok(None);
                };
                Ok(Some(RowDone {
                    ok,
                    is_duplicate: true,
                }))
            }
            _ => {
                let message = printed
                    .map(|m| {
                        let err = hscale_wire::response::ErrPacket {
                            code: 1062,
                            sql_state: *b"23000",
                            message: m,
                        };
                        super::unique::duplicate_of_key(&err, &v.lookup.key, &table.name.table)
                            .message
                    })
                    .unwrap_or_else(|| format!("Duplicate entry for key '{}'", v.lookup.key));
                let g = &mut self.scratch.gathered;
                g.rows
                    .push([b"Warning".to_vec(), b"1062".to_vec(), message.into_bytes()]);
                g.count += 1;
                Ok(Some(RowDone {
                    ok: OkPacket {
                        status: ok.status,
                        ..OkPacket::default()
                    },
                    is_duplicate: true,
                }))
            }
        }
    }

    /// The row's statement on one partition, as the client's; `Ok(None)`:
    /// its error was written.
    async fn row_step(
        &mut self,
        part: &(Target, String),
        effects: Effects<'_>,
    ) -> Result<Option<OkPacket>, ProxyError> {
        let plan = Plan::Targets {
            kind: StatementKind::Insert,
            parts: vec![part.clone()],
        };
        let answer = sink::run(self.b, self.scratch, "", WHAT, plan, effects, 0).await?;
        self.ok_or_error(answer).await
    }

    /// A statement of the index's (or an undo on a partition), the
    /// session's insert ids kept; `Ok(None)`: its error was written.
    async fn lookup_step(
        &mut self,
        part: &(Target, String),
        kind: StatementKind,
    ) -> Result<Option<OkPacket>, ProxyError> {
        let plan = Plan::Targets {
            kind,
            parts: vec![part.clone()],
        };
        let kept = (self.scratch.generated_id, self.b.state.last_insert_id);
        let answer = sink::run(self.b, self.scratch, "", WHAT, plan, Effects::default(), 0).await;
        (self.scratch.generated_id, self.b.state.last_insert_id) = kept;
        self.ok_or_error(answer?).await
    }

    async fn ok_or_error(&mut self, answer: Answer) -> Result<Option<OkPacket>, ProxyError> {
        match answer {
            Answer::Ok(ok) => Ok(Some(ok)),
            Answer::Error(err) => {
                self.write_server_error(1, &err).await?;
                Ok(None)
            }
            Answer::Rows(..) => Err(ProxyError::Wrong(format!(
                "internal: a step of {WHAT} answered rows"
            ))),
        }
    }

    /// The partition of the row that holds a value (`read`, its locking
    /// read of the index); `Ok(None)`: an error was written.
    async fn holder_of(
        &mut self,
        table: &PartitionedTable,
        read: &(Target, String),
    ) -> Result<Option<Target>, ProxyError> {
        let key = match self.read_step(read).await? {
            Some(mut rows) if !rows.is_empty() => rows.swap_remove(0).into_iter().next().flatten(),
            Some(_) => None,
            None => return Ok(None),
        };
        let target = key
            .and_then(|k| String::from_utf8(k).ok())
            .and_then(|k| super::unique::route_stored_key(table, k));
        target.map(Some).ok_or_else(|| {
            ProxyError::Wrong(format!(
                "internal: the index of {} names no routable row for a value it holds",
                table.name
            ))
        })
    }

    /// Whether `probe` (a read on `target`) finds a row.
    async fn is_stored(&mut self, target: &Target, probe: &str) -> Result<bool, ProxyError> {
        let part = (target.clone(), probe.to_string());
        Ok(self
            .read_step(&part)
            .await?
            .is_some_and(|rows| !rows.is_empty()))
    }

    /// A read of one part, its rows; `Ok(None)`: its error was written.
    async fn read_step(
        &mut self,
        part: &(Target, String),
    ) -> Result<Option<Vec<sink::Row>>, ProxyError> {
        let plan = Plan::Targets {
            kind: StatementKind::Select,
            parts: vec![part.clone()],
        };
        match sink::run(self.b, self.scratch, "", WHAT, plan, Effects::default(), 10).await? {
            Answer::Rows(_, rows) => Ok(Some(rows)),
            Answer::Ok(_) => Ok(Some(Vec::new())),
            Answer::Error(err) => {
                self.write_server_error(1, &err).await?;
                Ok(None)
            }
        }
    }
}
