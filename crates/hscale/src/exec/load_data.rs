//! `LOAD DATA LOCAL INFILE` into a partitioned table
//! (`hscale_route::router::LoadData`): the proxy asks the client for the
//! file, cuts it into rows and sends each partition its rows as the file
//! of the same statement on its physical table, so each backend parses its
//! rows exactly as one server would parse the whole file.
//!
//! ```text
//!  client without CLIENT_LOCAL_FILES ─► the server's error (4166)
//!  ─► on the default partition's backend: the key column, the session's
//!     sql_mode and the database's character set
//!  ─► 0xFB + the file name to the client ─► its file, held in memory
//!     (up to [proxy] load_data_max_bytes)
//!  ─► rows cut and routed (hscale_route::load_split, router::load_key);
//!     a row the proxy cannot place refuses the statement (1235) before
//!     anything is written
//!  ─► each partition with rows, one after another: its statement, the
//!     server's 0xFB, the ignored lines and its rows as the file, the empty
//!     packet, its OK (warnings gathered)
//!  ─► one OK: affected rows, warnings, Records / Deleted / Skipped /
//!     Warnings added up
//! ```
//!
//! In autocommit a load that reaches several partitions runs in the
//! statement's own transaction (`implicit.rs`): all of it or nothing.
//! Inside a client's transaction the partitions load on its branches, and
//! one that fails leaves the earlier ones' rows in the transaction.

use hscale_route::dictionary::PartitionedTable;
use hscale_route::dictionary::Target;
use hscale_route::known::Questions;
use hscale_route::load_split::{self, KeyField, Split};
use hscale_route::router::{self, LoadData, LoadKeyColumn, LoadKeyError};
use hscale_route::BackendId;
use hscale_wire::response::{ErrPacket, OkInfo, OkPacket};
use tokio::io::{AsyncRead, AsyncWrite};

use super::conditions::RowMap;
use super::forward::Outcome;
use super::prepared::Command;
use super::{Effects, Exec};
use crate::backend::PooledConn;
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::planning::{Asker, Learnt};

/// Bytes of the file in one packet to a backend.
const CHUNK: usize = 64 * 1024;

/// Times a file is read again after asking the backend for the weights
/// of keys met without one (each time up to the cache's noted misses).
const MAX_WEIGHT_ROUNDS: usize = 64;

/// What the default partition's backend says about the table and session.
struct TableFacts {
    columns: Vec<String>,
    key: LoadKeyColumn,
    /// Some column is INVISIBLE or generated: a load without a column list
    /// would not fill "every column" as the proxy reads it.
    has_hidden: bool,
    sql_mode: String,
    database_charset: String,
}

/// A load's table and what the checks before its file found.
struct LoadSetup {
    table: PartitionedTable,
    facts: TableFacts,
    /// The file's character set is UTF-8.
    is_utf8: bool,
    /// The statement planned again on the table's current dictionary, when
    /// it changed since the statement was planned.
    plan: Option<Box<LoadData>>,
}

/// One run of a LOAD DATA under the fence, from the file held.
struct LoadRun<'a> {
    load: &'a LoadData,
    /// The first run's setup; a retry plans the statement again on the
    /// newer dictionary.
    first: Option<LoadSetup>,
    file: &'a [u8],
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> super::fence::Attempt<Exec<'_, S>> for LoadRun<'_> {
    async fn attempt(&mut self, exec: &mut Exec<'_, S>) -> Result<(), ProxyError> {
        let setup = match self.first.take() {
            Some(s) => s,
            None => match exec.load_setup(self.load).await? {
                Some(s) => s,
                None => return Ok(()),
            },
        };
        exec.load_file(self.load, &setup, self.file).await
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Run a LOAD DATA LOCAL INFILE into a partitioned table.
    pub(crate) async fn run_load_data(&mut self, load: &LoadData) -> Result<(), ProxyError> {
        if !self.is_local_files {
            return Err(ProxyError::LocalInfileDisabled);
        }
        if load.is_global {
            // A global table's copies keep their names (their fence is the
            // triggers of a SETUP_GLOBAL_TABLE); the file cannot be asked
            // for again, so a 1146 reaches the client.
            self.is_fenced = false;
            return self.run_global_load(load).await;
        }
        let Some(setup) = self.load_setup(load).await? else {
            return Ok(());
        };
        let file = self.read_client_file(&load.file_name).await?;
        // The fence: a partition's table renamed by a change (1146) makes
        // the statement run again on a newer dictionary, from the file held
        // here (the client cannot be asked for it twice); in autocommit the
        // statement's own transaction rolled back what the other partitions
        // had loaded, inside a transaction the transaction is rolled back
        // and answered 1412 (`fence.rs`).
        self.is_fenced = true;
        let mut run = LoadRun {
            load,
            first: Some(setup),
            file: &file,
        };
        super::fence::run_fenced(self, &mut run).await
    }

    /// The table and what its default partition's backend says of it, with
    /// the checks made before the file is asked for; `None`: an error went
    /// to the client.
    async fn load_setup(&mut self, load: &LoadData) -> Result<Option<LoadSetup>, ProxyError> {
        // The table and its statements from one dictionary: a change since
        // the plan (or since the last attempt) plans the statement again.
        let (table, plan) = {
            let dict = self.b.ctx.partitioning.dictionary();
            let table = dict.table(&load.table).cloned();
            let is_current = table.as_ref().is_some_and(|t| {
                let mut now = t.all_targets();
                let mut planned: Vec<Target> = load.parts.iter().map(|(t, _)| t.clone()).collect();
                now.sort();
                planned.sort();
                now == planned
            });
            let plan = if is_current {
                None
            } else {
                match crate::planning::plan_now(
                    &dict,
                    &load.statement,
                    self.b.state.db.as_deref(),
                    crate::planning::Form::Plain,
                ) {
                    hscale_route::router::Plan::LoadData(l) if !l.is_global => Some(l),
                    _ => {
                        return Err(ProxyError::Refused(format!(
                            "LOAD DATA: {} changed while the statement ran; run it again",
                            load.table
                        )))
                    }
                }
            };
            (table, plan)
        };
        let Some(table) = table else {
            return Err(ProxyError::Wrong(format!(
                "internal: {} is no longer partitioned",
                load.table
            )));
        };
        let default = table.default_target();
        let facts = match self
            .table_facts(&load.table.db, &default, &table.column)
            .await?
        {
            Ok(f) => f,
            Err(err) => {
                self.write_server_error(1, &err).await?;
                return Ok(None);
            }
        };
        if load.fields.is_none() && facts.has_hidden {
            return Err(ProxyError::Refused(format!(
                "LOAD DATA without a column list into partitioned table {} with INVISIBLE or generated columns is not supported",
                load.table
            )));
        }
        let charset = load
            .charset
            .clone()
            .unwrap_or_else(|| facts.database_charset.clone());
        if !router::is_splittable_charset(&charset) {
            return Err(ProxyError::Refused(format!(
                "LOAD DATA into partitioned table {} in character set {charset} (multi-byte characters holding ASCII bytes) is not supported",
                load.table
            )));
        }
        let is_utf8 = router::is_utf8_charset(&charset);
        Ok(Some(LoadSetup {
            table,
            facts,
            is_utf8,
            plan,
        }))
    }

    /// Route the held file's rows by the plan `load` and load each
    /// partition its rows; the answer, or `ProxyError::StaleRoute` with
    /// nothing of the statement left.
    async fn load_file(
        &mut self,
        load: &LoadData,
        setup: &LoadSetup,
        file: &[u8],
    ) -> Result<(), ProxyError> {
        let LoadSetup {
            table,
            facts,
            is_utf8,
            plan,
        } = setup;
        let load = plan.as_deref().unwrap_or(load);
        let default = table.default_target();
        let (split, mut targets) = self.route_rows(load, table, facts, file, *is_utf8).await?;
        if targets.is_empty() {
            // No rows: the server's answer to the ignored lines alone.
            targets.push(default);
        }
        if targets.len() > 1 && self.b.pinned.is_some() && !self.b.is_branchable() {
            return Err(ProxyError::Unsupported {
                what: "a LOAD DATA over several partitions with connection-bound state (temporary tables, locks, user variables, ...)".into(),
            });
        }
        let prefix = &file[..split.prefix_end];
        // Over several partitions, one statement: all or none
        // (`statement.rs`).
        let scope = if targets.len() > 1 {
            let is_implicit = self.b.needs_implicit_txn();
            match self.open_write(is_implicit).await? {
                Some(scope) => Some(scope),
                None => return Ok(()),
            }
        } else {
            None
        };
        let mut total = OkPacket::default();
        let mut info = None;
        let mut done = Ok(Some(()));
        for (i, target) in targets.iter().enumerate() {
            let Some(sql) = load.statement_for(target) else {
                done = Err(ProxyError::Wrong(
                    "internal: a partition without its statement".into(),
                ));
                break;
            };
            let rows = split
                .rows
                .iter()
                .filter(|r| r.2 == i)
                .map(|&(a, b, _)| &file[a..b]);
            // "at row N" of this part's rows said as the file's row.
            if targets.len() > 1 {
                let numbers = (1u32..)
                    .zip(&split.rows)
                    .filter(|(_, r)| r.2 == i)
                    .map(|(n, _)| n)
                    .collect();
                self.scratch.gathered.row_map = RowMap::Rows(numbers);
            }
            let loaded = self
                .load_part(target.backend, sql, prefix, rows, &mut total)
                .await;
            self.scratch.gathered.row_map = RowMap::Same;
            match loaded {
                Ok(true) => {
                    let part = total.info;
                    info = Some(info.map_or(part, |i: OkInfo| i.plus(part)));
                }
                Ok(false) => {
                    done = Ok(None);
                    break;
                }
                Err(e) => {
                    done = Err(e);
                    break;
                }
            }
        }
        total.info = info.unwrap_or_default();
        let total = done.map(|d| d.map(|()| total));
        match scope {
            Some(scope) => self.close_write(scope, total).await,
            None => self.finish_write(total, false).await,
        }
    }

    /// Cut `file` into rows and pick each row's partition: the rows and
    /// the partitions (the rows' group numbers index them). Keys whose
    /// weight the backend gives (`partition/weights.rs`) are asked for in
    /// one query per round and the file read again.
    async fn route_rows(
        &mut self,
        load: &LoadData,
        table: &PartitionedTable,
        facts: &TableFacts,
        file: &[u8],
        is_utf8: bool,
    ) -> Result<(Split, Vec<Target>), ProxyError> {
        let format = load.format.escape_for(&facts.sql_mode);
        let (key, fields) = load
            .key_field(&table.column, &facts.columns)
            .ok_or_else(|| {
                ProxyError::Wrong(format!(
                    "internal: partition key {} is not a column of {}",
                    table.column, load.table
                ))
            })?;
        // What the key column makes of doubtful keys, asked once
        // (`exec/conversions.rs`); only for a UTF-8 session, whose
        // literals the conversion's connection reads as written. Weights
        // of keys the backend weighs, asked as often as the file needs
        // (each round asks for up to `weights::MAX_MISSES` keys).
        let mut learnt = Learnt::with_rounds(MAX_WEIGHT_ROUNDS);
        let mut may_ask = self.b.state.vars.is_client_utf8();
        loop {
            let mut targets: Vec<Target> = Vec::new();
            let mut is_unweighed = false;
            let mut is_unconverted = false;
            let (split, questions) = learnt.attempt(|known| {
                load_split::split(
                    file,
                    &format,
                    fields,
                    key,
                    load.ignore_lines,
                    &mut |field: KeyField<'_>| {
                        let t = match router::load_key(
                            table, &facts.key, is_utf8, may_ask, field, known,
                        ) {
                            Ok(t) => t,
                            Err(LoadKeyError::Unweighed) => {
                                is_unweighed = true;
                                return Ok(usize::MAX);
                            }
                            Err(LoadKeyError::Unconverted) => {
                                is_unconverted = true;
                                return Ok(usize::MAX);
                            }
                            Err(LoadKeyError::Unsure(why)) => return Err(why),
                        };
                        Ok(match targets.iter().position(|x| *x == t) {
                            Some(i) => i,
                            None => {
                                targets.push(t);
                                targets.len() - 1
                            }
                        })
                    },
                )
            });
            let split = split.map_err(|e| {
                ProxyError::Refused(format!(
                    "LOAD DATA into partitioned table {}: row {} of the file cannot be placed: {}",
                    load.table, e.row, e.why
                ))
            })?;
            let mut asker = Asker::Session(&mut *self.b);
            if is_unconverted {
                // Asked once; a file with very many such keys (or a failed
                // ask) is refused as before: the next round does not ask.
                may_ask = false;
                let conversions = Questions {
                    weights: Vec::new(),
                    conversions: questions.conversions,
                };
                learnt.ask(&mut asker, conversions, false).await?;
                continue;
            }
            if !is_unweighed {
                return Ok((split, targets));
            }
            let weights = Questions {
                weights: questions.weights,
                conversions: Vec::new(),
            };
            if !learnt.ask(&mut asker, weights, false).await? {
                break;
            }
        }
        Err(ProxyError::Refused(format!(
            "LOAD DATA into partitioned table {} of a file with more keys than {MAX_WEIGHT_ROUNDS} rounds of weights asked of the backend",
            load.table
        )))
    }

    /// The key column and the session facts the load needs, read on the
    /// default partition's backend (synced to the session).
    async fn table_facts(
        &mut self,
        db: &str,
        target: &Target,
        key: &str,
    ) -> Result<Result<TableFacts, ErrPacket>, ProxyError> {
        let Some(mut conn) = self.connect_part(target.backend, 1, Command::Query).await? else {
            return Err(ProxyError::Wrong(
                "internal: no connection for LOAD DATA".into(),
            ));
        };
        let columns_sql = format!(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_MAXIMUM_LENGTH, CHARACTER_SET_NAME, EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION",
            quote_str(db),
            quote_str(&target.physical_table)
        );
        let session_sql = "SELECT @@session.sql_mode, @@character_set_database";
        let read: Result<_, ProxyError> = async {
            let columns = conn.query_rows(&columns_sql).await?;
            let session = conn.query_rows(session_sql).await?;
            Ok((columns, session))
        }
        .await;
        self.b.give_back(conn);
        let (columns, session) = read?;
        let columns = match columns {
            Ok(c) => c.strings(),
            Err(e) => return Ok(Err(e)),
        };
        let session = match session {
            Ok(s) => s.strings(),
            Err(e) => return Ok(Err(e)),
        };
        let mut facts = TableFacts {
            columns: Vec::new(),
            key: LoadKeyColumn::default(),
            has_hidden: false,
            sql_mode: String::new(),
            database_charset: String::new(),
        };
        for row in columns {
            let col = |i: usize| row.get(i).cloned().flatten();
            let name = col(0).unwrap_or_default();
            let extra = col(6).unwrap_or_default().to_ascii_uppercase();
            facts.has_hidden |= ["INVISIBLE", "VIRTUAL", "PERSISTENT", "STORED", "GENERATED"]
                .iter()
                .any(|w| extra.contains(w));
            if name.eq_ignore_ascii_case(key) {
                facts.key = LoadKeyColumn::from_schema(
                    &col(1).unwrap_or_default(),
                    &col(2).unwrap_or_default(),
                    col(3).is_some_and(|n| n == "YES"),
                    col(4).and_then(|m| m.parse().ok()),
                    col(5).as_deref(),
                );
            }
            facts.columns.push(name);
        }
        if let Some(row) = session.first() {
            facts.sql_mode = row.first().cloned().flatten().unwrap_or_default();
            facts.database_charset = row.get(1).cloned().flatten().unwrap_or_default();
        }
        Ok(Ok(facts))
    }

    /// Ask the client for `name` (0xFB) and read the file it sends, up to
    /// its empty packet.
    async fn read_client_file(&mut self, name: &str) -> Result<Vec<u8>, ProxyError> {
        let mut request = Vec::with_capacity(1 + name.len());
        request.push(0xfb);
        request.extend_from_slice(name.as_bytes());
        self.client.write_packet(1, &request);
        self.client
            .flush()
            .await
            .map_err(|_| ProxyError::ClientGone)?;
        let limit = self.b.ctx.config.proxy.load_data_max_bytes;
        let mut file = Vec::new();
        let mut is_over = false;
        loop {
            let p = self
                .client
                .read_packet()
                .await
                .map_err(|_| ProxyError::ClientGone)?;
            if p.payload.is_empty() {
                // The answer follows the file's last packet.
                self.client.continue_after(p.seq);
                break;
            }
            if file.len() + p.payload.len() > limit {
                is_over = true;
                file = Vec::new();
            }
            if !is_over {
                file.extend_from_slice(&p.payload);
            }
        }
        if is_over {
            return Err(ProxyError::Refused(format!(
                "LOAD DATA LOCAL INFILE into a partitioned table of a file over {limit} bytes ([proxy] load_data_max_bytes) is not supported"
            )));
        }
        Ok(file)
    }

    /// Load one partition: its statement, then `prefix` and `rows` as the
    /// file the server asks for, its OK added to `total`. `Ok(false)`: an
    /// error went to the client.
    async fn load_part<'f>(
        &mut self,
        backend: BackendId,
        sql: &str,
        prefix: &'f [u8],
        rows: impl Iterator<Item = &'f [u8]>,
        total: &mut OkPacket,
    ) -> Result<bool, ProxyError> {
        match self.send_load(backend, sql, prefix, rows).await? {
            Some((conn, answer)) => self.add_ok(conn, answer, total).await,
            None => Ok(false),
        }
    }

    /// Run the load `sql` on `backend` with `prefix` and `rows` as its
    /// file: the connection and the server's answer, or `None` when an
    /// error went to the client.
    async fn send_load<'f>(
        &mut self,
        backend: BackendId,
        sql: &str,
        prefix: &'f [u8],
        rows: impl Iterator<Item = &'f [u8]>,
    ) -> Result<Option<(PooledConn, Answer)>, ProxyError> {
        let Some(mut conn) = self.connect_part(backend, 1, Command::Query).await? else {
            return Ok(None);
        };
        match self
            .send_part(&mut conn, sql.as_bytes(), Command::Query)
            .await
        {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                self.b.give_back(conn);
                self.write_server_error(1, &err).await?;
                return Ok(None);
            }
            Err(e) => return Err(self.b.backend_lost(conn, e.to_string())),
        }
        let running = self.b.running(&conn, backend);
        let first = conn.stream.read_packet().await;
        let sent = match first {
            Ok(p) if p.first() == Some(0xfb) => {
                send_file(&mut conn.stream, p.seq, prefix, rows).await
            }
            // The server answered without asking for the file (an error):
            // that is the answer.
            Ok(p) => {
                drop(running);
                let proto = |e: hscale_wire::WireError| ProxyError::BackendProtocol {
                    backend: conn.backend.to_string(),
                    reason: e.to_string(),
                };
                let r = match p.first() {
                    Some(0xff) => ErrPacket::decode(&p.payload).map(Err).map_err(proto),
                    _ => OkPacket::decode(&p.payload).map(Ok).map_err(proto),
                };
                return Ok(Some((conn, r)));
            }
            Err(e) => Err(e),
        };
        if let Err(e) = sent {
            drop(running);
            return Err(self.b.backend_lost(conn, e.to_string()));
        }
        let r = conn.read_response().await;
        drop(running);
        Ok(Some((conn, r)))
    }

    /// LOAD DATA LOCAL INFILE into a global table: the whole file loaded
    /// into every copy, the main backend's first, answered with its OK;
    /// in autocommit in one transaction of the statement's own and in the
    /// same order on every copy as other writes (`run_global_write`).
    async fn run_global_load(&mut self, load: &LoadData) -> Result<(), ProxyError> {
        let Some((_, sql)) = load.parts.first() else {
            return Err(ProxyError::Wrong(
                "internal: a load without its statement".into(),
            ));
        };
        let file = self.read_client_file(&load.file_name).await?;
        let ctx = self.b.ctx.clone();
        let is_implicit = self.b.needs_implicit_txn();
        let _serial = if is_implicit {
            Some(ctx.partitioning.global_write_lock.lock().await)
        } else {
            None
        };
        let Some(scope) = self.open_write(is_implicit).await? else {
            return Ok(());
        };
        let total = self
            .global_load_copies(load, sql, &file, scope.undoes_parts())
            .await;
        self.close_write(scope, total).await
    }

    async fn global_load_copies(
        &mut self,
        load: &LoadData,
        sql: &str,
        file: &[u8],
        is_undone: bool,
    ) -> Result<Option<OkPacket>, ProxyError> {
        let mut total = OkPacket::default();
        if !self
            .load_part(BackendId::MAIN, sql, file, std::iter::empty(), &mut total)
            .await?
        {
            return Ok(None);
        }
        for b in self.b.ctx.backend_ids().skip(1) {
            match self.send_load(b, sql, file, std::iter::empty()).await? {
                None => return Ok(None),
                Some((conn, Ok(Ok(ok)))) => {
                    let outcome = Outcome {
                        status: Some(ok.status),
                        ok: Some(ok),
                        ..Outcome::default()
                    };
                    self.b
                        .finish(conn, outcome, &Effects::default(), self.scratch);
                }
                Some((conn, Ok(Err(err)))) => {
                    self.b.give_back(conn);
                    return self.copy_failed(&load.table, b, err, is_undone).await;
                }
                Some((conn, Err(e))) => return Err(self.b.backend_lost(conn, e.to_string())),
            }
        }
        Ok(Some(total))
    }
}

/// A backend's answer to a load.
type Answer = Result<Result<OkPacket, ErrPacket>, ProxyError>;

/// The file a backend asked for (its request at `seq`): `prefix`, then
/// each row, in packets of about `CHUNK` bytes, then the empty packet.
async fn send_file<'f>(
    stream: &mut hscale_wire::PacketStream<crate::backend::stream::BackendStream>,
    seq: u8,
    prefix: &'f [u8],
    rows: impl Iterator<Item = &'f [u8]>,
) -> Result<(), hscale_wire::WireError> {
    let mut seq = seq;
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    for piece in std::iter::once(prefix).chain(rows) {
        let mut piece = piece;
        while !piece.is_empty() {
            let take = (CHUNK - buf.len()).min(piece.len());
            buf.extend_from_slice(&piece[..take]);
            piece = &piece[take..];
            if buf.len() == CHUNK {
                seq = seq.wrapping_add(1);
                stream.write_packet(seq, &buf);
                stream.maybe_flush().await?;
                buf.clear();
            }
        }
    }
    if !buf.is_empty() {
        seq = seq.wrapping_add(1);
        stream.write_packet(seq, &buf);
    }
    stream.write_packet(seq.wrapping_add(1), &[]);
    stream.flush().await
}
