//! INSERT and REPLACE in the forms the router takes only as
//! `(columns) VALUES` (`hscale_route::router::insert_form`): `SET a = x`,
//! no column list, and `INSERT ... SELECT` that reads or writes partitioned
//! tables. Each is turned into the VALUES form here, before ids are filled
//! in and the rows routed.
//!
//! ```text
//!  INSERT ... SET ─────────► (columns) VALUES (...)              pure
//!  INSERT INTO t VALUES ───► t's columns from its default partition
//!  INSERT ... SELECT ──────► the SELECT planned and run like any read,
//!                            its answer kept in memory (`exec::sink`),
//!                            rows written back as literal VALUES
//! ```
//!
//! The SELECT runs through the same `Exec::run` as a client's SELECT
//! (merges, shipped joins, the fence), into the executor's row sink
//! instead of the socket; so INSERT ... SELECT sees exactly what the
//! SELECT alone would show. The rows are bounded by `[proxy] ship_max_rows`
//! and `exec::sink::MAX_BYTES`.

use bytes::Bytes;
use hscale_route::router::{self, InsertForm};
use hscale_wire::reply::OkParts;
use hscale_wire::response::ErrPacket;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::backend::BackendConn;
use crate::error::ProxyError;

use crate::exec::sink::{self, literal_rows, Selected};
use crate::exec::{send, Exec};
use crate::partition::quote_str;

/// What became of an INSERT before planning.
pub(crate) enum Normal {
    /// Plan it as it is.
    AsIs,
    /// Plan this statement instead.
    Payload(Bytes),
    /// The client has its answer (the SELECT's error, or the OK of an
    /// INSERT ... SELECT that found no rows).
    Answered,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// The statement in the form the router splits (see the module).
    pub(crate) async fn insert_form(&mut self, sql: &str) -> Result<Normal, ProxyError> {
        let mut current = sql.to_string();
        let mut changed = false;
        // SELECT → VALUES without columns → VALUES with them: at most three.
        for _ in 0..3 {
            let form = {
                let dict = self.b.ctx.partitioning.dictionary();
                router::insert_form(&current, self.b.state.db.as_deref(), &dict)
            };
            let Some(form) = form else { break };
            current = match form {
                InsertForm::Rewritten(s) => s,
                InsertForm::NeedsColumns { table, target, at } => {
                    let columns = self.columns_of(&table.db, &target).await?;
                    router::with_columns(&current, at, &columns)
                }
                InsertForm::Select { head, select, tail } => {
                    if self.upsert_names_answered(&head, &select, &tail).await? {
                        return Ok(Normal::Answered);
                    }
                    match self.select_rows_as_stored(&select).await? {
                        Selected::Error(err) => {
                            self.write_server_error(1, &err).await?;
                            return Ok(Normal::Answered);
                        }
                        Selected::Rows(rows) if rows.is_empty() => {
                            let st = self.b.status();
                            let ok = OkParts {
                                info: "Records: 0  Duplicates: 0  Warnings: 0",
                                ..OkParts::new(st, 0)
                            };
                            send(self.reply(1).ok(ok)).await?;
                            return Ok(Normal::Answered);
                        }
                        Selected::Rows(rows) => {
                            let rows: Vec<String> =
                                rows.iter().map(|r| format!("({})", r.join(", "))).collect();
                            let s = format!("{head} VALUES {} {tail}", rows.join(", "))
                                .trim_end()
                                .to_string();
                            if rows.len() == 1 {
                                self.scratch.one_row_select = Some(s.clone());
                            }
                            s
                        }
                    }
                }
                InsertForm::EvaluateKeys { select, keys } => {
                    let mark = self.scratch.gathered.mark();
                    let selected = self.select_rows(&select).await?;
                    if let Some(err) = self.strict_error_since(mark).await? {
                        self.write_server_error(1, &err).await?;
                        return Ok(Normal::Answered);
                    }
                    match selected {
                        Selected::Error(err) if err.code == 1054 => {
                            return Err(ProxyError::Refused(
                                "a partition key computed from other columns of its row".into(),
                            ))
                        }
                        Selected::Error(err) => {
                            self.write_server_error(1, &err).await?;
                            return Ok(Normal::Answered);
                        }
                        Selected::Rows(rows) => match rows.first() {
                            Some(values) if rows.len() == 1 => {
                                router::with_keys(&current, &keys, values)
                            }
                            _ => {
                                return Err(ProxyError::Wrong(
                                    "internal: partition keys evaluated to no row".into(),
                                ))
                            }
                        },
                    }
                }
            };
            changed = true;
        }
        Ok(if changed {
            Normal::Payload(BackendConn::payload_for_query(&current))
        } else {
            Normal::AsIs
        })
    }

    /// The error one server answers an INSERT with when evaluating its
    /// keys (the SELECT since `mark`) raised a warning in a strict
    /// sql_mode: the server makes a write's first warning its error
    /// (`'pi' || 'pe'` is 1292 there, not the key `0`). `None` when the
    /// SELECT raised none or the session is not strict (the row is then
    /// stored with the value the SELECT showed).
    async fn strict_error_since(
        &mut self,
        mark: crate::exec::conditions::Mark,
    ) -> Result<Option<ErrPacket>, ProxyError> {
        let Some((code, message)) = self.scratch.gathered.first_warning_since(mark) else {
            return Ok(None);
        };
        // The SELECT's own conditions are not the statement's: without
        // strict mode the row is stored with the value the SELECT showed
        // and without the server's warnings of it (docs/src/queries.md).
        self.scratch.gathered.rewind(mark);
        if !self.b.sql_mode().await?.is_strict {
            return Ok(None);
        }
        let sql_state = *match code {
            1292 | 1366 => b"22007",
            1365 => b"22012",
            1264 | 1690 => b"22003",
            1406 => b"22001",
            1048 => b"23000",
            1265 => b"01000",
            _ => b"HY000",
        };
        Ok(Some(ErrPacket {
            code,
            sql_state,
            message,
        }))
    }

    /// A statement being prepared in the `(columns) VALUES` form the router
    /// splits, when it is an INSERT ... SET or an INSERT without a column
    /// list into a partitioned table (its placeholders keep their order);
    /// `None` for anything else (INSERT ... SELECT and keys given as
    /// expressions stay as they are, refused when prepared).
    pub(crate) async fn prepared_insert_form(
        &mut self,
        sql: &str,
    ) -> Result<Option<String>, ProxyError> {
        let mut current = sql.to_string();
        let mut changed = false;
        for _ in 0..2 {
            let form = {
                let dict = self.b.ctx.partitioning.dictionary();
                router::insert_form(&current, self.b.state.db.as_deref(), &dict)
            };
            current = match form {
                Some(InsertForm::Rewritten(s)) => s,
                Some(InsertForm::NeedsColumns { table, target, at }) => {
                    let columns = self.columns_of(&table.db, &target).await?;
                    router::with_columns(&current, at, &columns)
                }
                _ => break,
            };
            changed = true;
        }
        Ok(changed.then_some(current))
    }

    /// The columns an INSERT without a column list fills, in order: those
    /// of the table's default partition, without INVISIBLE ones.
    async fn columns_of(
        &mut self,
        db: &str,
        target: &hscale_route::dictionary::Target,
    ) -> Result<Vec<String>, ProxyError> {
        let sql = format!(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND EXTRA NOT LIKE '%INVISIBLE%' ORDER BY ORDINAL_POSITION",
            quote_str(db),
            quote_str(&target.physical_table)
        );
        let mut c = self
            .b
            .ctx
            .pool(self.b.worker, target.backend)
            .get(false)
            .await?;
        let rows = c.query_rows(&sql).await?.map_err(|e| {
            ProxyError::Wrong(format!(
                "reading the columns of {}: {}",
                target.physical_table, e.message
            ))
        })?;
        Ok(rows
            .strings()
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect())
    }

    /// An `INSERT ... SELECT ... ON DUPLICATE KEY UPDATE` whose UPDATE
    /// reads a name of the SELECT's tables (`router::upsert_names`): one
    /// server's 1052 when the inserted table has it too (nothing written),
    /// a refusal when only the SELECT's row has it (the rows are written
    /// as VALUES, which have no such name). `true`: the client has its
    /// answer.
    async fn upsert_names_answered(
        &mut self,
        head: &str,
        select: &str,
        tail: &str,
    ) -> Result<bool, ProxyError> {
        let Some(u) = router::upsert_names(head, select, tail, self.b.state.db.as_deref()) else {
            return Ok(false);
        };
        let target_of = |this: &Self, name: &hscale_route::dictionary::TableName| {
            let dict = this.b.ctx.partitioning.dictionary();
            match dict.table(name) {
                Some(t) => t.default_target(),
                None => hscale_route::dictionary::Target {
                    backend: hscale_route::BackendId::MAIN,
                    physical_table: name.table.clone(),
                },
            }
        };
        let own_target = target_of(self, &u.table);
        let own = self.columns_of(&u.table.db, &own_target).await?;
        let mut theirs = Vec::new();
        for (name, _) in &u.select_tables {
            let target = target_of(self, name);
            theirs.push(self.columns_of(&name.db, &target).await?);
        }
        match router::upsert_resolution(&u, &own, &theirs) {
            Ok(()) => Ok(false),
            Err(Ok(name)) => {
                let err = ErrPacket {
                    code: 1052,
                    sql_state: *b"23000",
                    message: format!("Column '{name}' in UPDATE is ambiguous"),
                };
                self.write_server_error(1, &err).await?;
                Ok(true)
            }
            Err(Err(name)) => Err(ProxyError::Refused(format!(
                "INSERT ... SELECT ... ON DUPLICATE KEY UPDATE reading {name} of the SELECT's row, over partitioned tables"
            ))),
        }
    }

    /// [`Self::select_rows`] for the rows an INSERT writes: when they
    /// hold dates with a day past their month's end, which one server
    /// copies as they are, the write runs with ALLOW_INVALID_DATES
    /// (`StatementScratch::write_vars`); values their text cannot carry
    /// are refused (`lost_copies.rs`).
    async fn select_rows_as_stored(&mut self, select: &str) -> Result<Selected, ProxyError> {
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        let (answer, origins) =
            sink::read_with_origins(self.b, self.scratch, select, "INSERT ... SELECT", max_rows)
                .await?;
        self.refuse_lost_copies(&answer, &origins).await?;
        if sink::has_invalid_days(&answer) {
            self.scratch.write_vars = self.b.vars_allowing_invalid_dates().await?;
        }
        self.literals(answer)
    }

    /// Run `select` as the client's read (planned, merged, fenced) and
    /// keep its rows as `(literal, ...)` row texts.
    async fn select_rows(&mut self, select: &str) -> Result<Selected, ProxyError> {
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        let answer =
            sink::read(self.b, self.scratch, select, "INSERT ... SELECT", max_rows).await?;
        self.literals(answer)
    }

    fn literals(&self, answer: sink::Answer) -> Result<Selected, ProxyError> {
        literal_rows(answer, self.b.ctx.collations())
    }
}
