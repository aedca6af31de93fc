//! Multi-table UPDATE and DELETE whose rows lie on several partitions or
//! backends (`hscale_route::router::JoinWrite`, whose module draws the
//! steps): the tables' columns read, the join read into memory
//! (`exec::sink::read`, planned like a client's join), then each target
//! row written once by its primary key on its partition. One statement:
//! in its own transaction in autocommit, behind the statement savepoint
//! inside the client's (`Exec::open_write` / `close_write`), so a failing
//! step leaves nothing behind. The client gets one OK: the write steps'
//! affected rows and `Rows matched` / `Changed` added up, and the warnings
//! of the read and of the writes; or the first error.
//!
//! The read takes no locks (the join may ship tables, whose reads cannot
//! lock): a row another client changes between the read and the write
//! is written as the write finds it, where one server would have waited
//! for it.

use std::collections::HashMap;

use hscale_route::dictionary::Target;
use hscale_route::router::{self, Columns, Input, JoinWrite, NoInput, Plan, StatementKind};
use hscale_route::{BackendId, KeyValue};
use hscale_wire::response::{OkInfo, OkPacket};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ProxyError;
use crate::exec::sink::{self, Answer};
use crate::exec::{Effects, Exec};
use crate::planning::Learnt;

const WHAT: &str = "multi-table UPDATE or DELETE over several partitions";

/// Rows per write statement when the rows share one statement.
const CHUNK: usize = 500;

/// The rows one target writes on one partition (or table): each row's
/// key literals and the literals other tables give it.
type Bucket = Vec<(Vec<String>, Vec<String>)>;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Run a multi-table write from its join's rows (see the module).
    pub(crate) async fn run_join_write(&mut self, w: JoinWrite) -> Result<(), ProxyError> {
        // Step 0: which table each column belongs to.
        let mut columns = Vec::with_capacity(w.tables.len());
        for t in &w.tables {
            columns.push(self.join_write_columns(&t.name).await?);
        }
        let input = match router::join_input(&w, &columns) {
            Ok(i) => i,
            Err(NoInput::Refuse(why)) => return Err(ProxyError::Refused(why)),
            Err(NoInput::ServerDecides) => return self.join_write_names(&w).await,
        };
        let is_implicit = self.b.needs_implicit_txn();
        let Some(scope) = self.open_write(is_implicit).await? else {
            return Ok(());
        };
        let kept = (self.scratch.generated_id, self.b.state.last_insert_id);
        let total = self.join_write_steps(&w, &input, &columns).await;
        (self.scratch.generated_id, self.b.state.last_insert_id) = kept;
        self.close_write(scope, total).await
    }

    /// A name of the SET that no table has, or several: the server's
    /// error for the statement's names read as a SELECT.
    async fn join_write_names(&mut self, w: &JoinWrite) -> Result<(), ProxyError> {
        match sink::read(self.b, self.scratch, &w.names_read(), WHAT, 0).await? {
            Answer::Error(err) => self.write_server_error(1, &err).await,
            _ => Err(ProxyError::Refused(format!(
                "a {WHAT} whose SET names a column hscale cannot tell the table of"
            ))),
        }
    }

    /// A table's columns and primary key, asked of the backend holding it
    /// (a partitioned table's default partition).
    async fn join_write_columns(
        &mut self,
        name: &hscale_route::dictionary::TableName,
    ) -> Result<Columns, ProxyError> {
        let target = {
            let dict = self.b.ctx.partitioning.dictionary();
            match dict.table(name) {
                Some(t) => t.default_target(),
                None => Target {
                    backend: BackendId::MAIN,
                    physical_table: name.table.clone(),
                },
            }
        };
        let sql = router::columns_query(&name.db, &target.physical_table);
        let plan = Plan::Targets {
            kind: StatementKind::Select,
            parts: vec![(target, sql.clone())],
        };
        let effects = Effects {
            is_read_only: true,
            ..Effects::default()
        };
        let mut out = Columns::default();
        if let Answer::Rows(_, rows) =
            sink::run(self.b, self.scratch, &sql, WHAT, plan, effects, usize::MAX).await?
        {
            for row in rows {
                let mut it = row.into_iter();
                let name = it.next().flatten().and_then(|b| String::from_utf8(b).ok());
                let key = it.next().flatten();
                if let Some(name) = name {
                    if key.as_deref() == Some(b"PRI") {
                        out.primary.push(name.clone());
                    }
                    out.names.push(name);
                }
            }
        }
        Ok(out)
    }

    /// Step 2: each target row once (the same row matched again with
    /// other values to write is refused, as one server's choice would
    /// depend on its join order), grouped by the target and the
    /// partition its key routes to (every partition when it cannot be
    /// routed, the main backend for a table that is not partitioned).
    fn join_write_buckets(
        &self,
        w: &JoinWrite,
        input: &Input,
        columns: &[Columns],
        raw: &[sink::Row],
        literals: &[Vec<String>],
    ) -> Result<Vec<(usize, Target, Bucket)>, ProxyError> {
        let mut writes: Vec<(usize, Target, Bucket)> = Vec::new();
        let mut seen: HashMap<(String, Vec<String>), Vec<String>> = HashMap::new();
        for (x_at, x) in input.targets.iter().enumerate() {
            let table = &w.tables[x.table];
            let key = &columns[x.table].primary;
            let range = x.key_at..x.key_at + key.len();
            let dict = self.b.ctx.partitioning.dictionary();
            let partitioned = dict.table(&table.name).cloned();
            drop(dict);
            let key_pos = partitioned
                .as_ref()
                .and_then(|p| key.iter().position(|c| c.eq_ignore_ascii_case(&p.column)));
            for (row, lits) in raw.iter().zip(literals) {
                let keys = &lits[range.clone()];
                if keys.iter().any(|k| k == "NULL") {
                    // The outer side of a LEFT JOIN: no row to write.
                    continue;
                }
                let foreign: Vec<String> = x.foreign.iter().map(|f| lits[f.2].clone()).collect();
                // One row of one table, whatever name it is written under.
                let id = (table.name.to_string(), keys.to_vec());
                if let Some(before) = seen.get(&id) {
                    if *before != foreign {
                        return Err(ProxyError::Refused(format!(
                        "a {WHAT} that matches a row of {} several times with different values to write (one server's choice depends on the order it joins in)",
                        table.name
                    )));
                    }
                    continue;
                }
                seen.insert(id, foreign.clone());
                let targets = match (&partitioned, key_pos) {
                    (None, _) => vec![Target {
                        backend: BackendId::MAIN,
                        physical_table: table.name.table.clone(),
                    }],
                    (Some(p), Some(at)) => {
                        let text = row[range.start + at]
                            .as_deref()
                            .and_then(|b| std::str::from_utf8(b).ok());
                        let routed = text.and_then(|s| {
                            let v = p.stored_key(KeyValue::Str(s.to_string()))?;
                            let (r, questions) = Learnt::new().attempt(|known| p.route(&v, known));
                            r.ok().filter(|_| questions.is_empty())
                        });
                        match routed {
                            Some(t) => vec![t],
                            None => p.all_targets(),
                        }
                    }
                    (Some(p), None) => p.all_targets(),
                };
                for t in targets {
                    match writes.iter_mut().find(|(a, b, _)| *a == x_at && *b == t) {
                        Some((_, _, rows)) => rows.push((keys.to_vec(), foreign.clone())),
                        None => writes.push((x_at, t, vec![(keys.to_vec(), foreign.clone())])),
                    }
                }
            }
        }
        Ok(writes)
    }

    /// Steps 1 to 3; `Ok(None)` when one failed and its error was
    /// written.
    async fn join_write_steps(
        &mut self,
        w: &JoinWrite,
        input: &Input,
        columns: &[Columns],
    ) -> Result<Option<OkPacket>, ProxyError> {
        let count_before = self.scratch.gathered.count;
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        // 1. The join's rows.
        let answer = sink::read(self.b, self.scratch, &input.select, WHAT, max_rows).await?;
        let raw: Vec<sink::Row> = match &answer {
            Answer::Rows(c, rows) => {
                if let Some(c) = c.iter().find(|c| c.column_type == 0x04) {
                    return Err(ProxyError::Refused(format!(
                        "a {WHAT} that reads FLOAT column {} of a table it does not write (its text form is rounded)",
                        c.name
                    )));
                }
                rows.clone()
            }
            _ => Vec::new(),
        };
        let Some(literals) = self.literal_rows_or_answer(answer).await? else {
            return Ok(None);
        };
        // 2. Each target's rows once, by partition.
        let writes = self.join_write_buckets(w, input, columns, &raw, &literals)?;
        // 3. The writes.
        let kind = w.kind;
        let mut total = OkPacket::default();
        let (mut matched, mut changed) = (0u64, 0u64);
        for (x_at, target, rows) in writes {
            let x = &input.targets[x_at];
            let table = &w.tables[x.table];
            let key = &columns[x.table].primary;
            let per_row = !x.foreign.is_empty();
            let step = if per_row { 1 } else { CHUNK };
            for chunk in rows.chunks(step) {
                let keys: Vec<&[String]> = chunk.iter().map(|(k, _)| k.as_slice()).collect();
                let foreign = if per_row { chunk[0].1.as_slice() } else { &[] };
                let sql = router::join_write_sql(
                    w,
                    x,
                    key,
                    &table.name.db,
                    &target.physical_table,
                    &keys,
                    foreign,
                );
                let plan = Plan::Targets {
                    kind,
                    parts: vec![(target.clone(), sql)],
                };
                match sink::run(self.b, self.scratch, "", WHAT, plan, Effects::default(), 0).await?
                {
                    Answer::Ok(ok) => {
                        total.affected_rows += ok.affected_rows;
                        total.status = ok.status;
                        if let OkInfo::Matched {
                            matched: m,
                            changed: c,
                            ..
                        } = ok.info
                        {
                            matched += m;
                            changed += c;
                        }
                    }
                    Answer::Error(err) => {
                        self.write_server_error(1, &err).await?;
                        return Ok(None);
                    }
                    Answer::Rows(..) => {
                        return Err(ProxyError::Wrong(format!(
                            "internal: a write step of a {WHAT} answered rows"
                        )))
                    }
                }
            }
        }
        let warnings = self.scratch.gathered.count.saturating_sub(count_before);
        total.warnings = u16::try_from(warnings).unwrap_or(u16::MAX);
        if kind == StatementKind::Update {
            total.info = OkInfo::Matched {
                matched,
                changed,
                warnings,
            };
        }
        Ok(Some(total))
    }
}
