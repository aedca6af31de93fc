//! Partition changes that lose no row, whatever other proxies do: the
//! engine behind SETUP_TABLE (to another backend), ADD_PARTITION,
//! DROP_PARTITION and MOVE_PARTITION.
//!
//! **The fence.** A physical table that loses keys in a change is renamed
//! at the change's cutover, to a name never used before (`_g<operation id>`),
//! after its writes drained and before the new dictionary commits. MariaDB's
//! `RENAME TABLE` waits for every transaction holding the table, and
//! statements that reach the old name afterwards fail with 1146. So a proxy
//! holding any older dictionary can never read or write a key in a table
//! that is no longer the key's home: it gets 1146, reloads, and runs the
//! statement again (`session/fence.rs`). No clock, lease or count of proxies
//! is involved.
//!
//! **A change**, one per table at a time (the journal's `active` key):
//! ```text
//!  journal 'copying' ─► destination table (fresh, or a staging table when the
//!  destination already holds keys) ─► capture triggers on the source ─► copy
//!  in bounded REPLACE batches ─► replay captured keys until few are left
//!  ─► journal 'cutover' ─► RENAME source ─► replay the rest ─► delete the
//!  moved rows from what stays / merge the staging table ─► commit the new
//!  dictionary with the journal's 'done' (one CAS transaction) ─► drop
//!  triggers, changelog and retired tables
//! ```
//! Writes pause only between the rename and the commit. The triggers
//! record the primary key of every row of the moving set that changes
//! (old and new key of an update) in `hscale.changes_<operation>` on the
//! source's backend, in the writer's own transaction, so no change escapes.
//! A replay re-reads the rows by key from the source and replaces or
//! deletes them on the destination, so copy and replay are idempotent.
//!
//! The owner holds a named lock for the whole change; when it dies another
//! proxy rolls the change back or finishes its cutover (`takeover.rs`).
//! `HSCALE CANCEL_OPERATION` (`cancel.rs`) moves a change from 'copying' to
//! 'cancelling' by compare-and-set, as `mark_cutover` moves it to 'cutover':
//! one of the two wins. The owner sees the cancel within [`CANCEL_POLL`] and
//! undoes the change; a dead owner's change is undone by a take-over.

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_wire::resultset::ColumnInfo;

use super::{conn, reload, wrong};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::partition::copy::{stream_rows, value_literal};
use crate::partition::store::{self, exec, server_error};
use crate::partition::{ddl, qualified, quote_ident, quote_str};
use crate::runtime::Context;

/// Captured keys replayed per round; the cutover starts once a round finds
/// fewer than [`CUTOVER_BACKLOG`].
pub(super) const REPLAY_BATCH: usize = 5000;
/// Keys per `IN (...)` list of a replay: MariaDB turns longer lists into a
/// join with a temporary table (`in_predicate_conversion_threshold`, 1000),
/// which scans the whole table here instead of looking the keys up.
const IN_LIST: usize = 900;
/// Connection pairs that replay at once: writers on many connections
/// otherwise get most of the servers' time, and the backlog drains slowly.
const REPLAY_LANES: usize = 3;
/// How long a change catches up with writers before its cutover at most.
const CATCH_UP_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);
const CUTOVER_BACKLOG: usize = 200;
/// Attempts at renaming the source, each waiting at most 2 s for the
/// transactions that hold it.
const RENAME_ATTEMPTS: u32 = 10;

/// Where the key column's expression goes in a [`Move::filter`].
pub(super) const KEY: &str = "\u{1}key\u{1}";

/// One row move of a change.
pub(super) struct Move {
    pub db: String,
    /// The source: backend and physical table.
    pub src: (usize, String),
    /// Which rows of the source move: an SQL condition with [`KEY`] where
    /// the key column goes (`col` in a table, `NEW.col` in a trigger).
    /// `None`: every row (the source retires).
    pub filter: Option<String>,
    /// The destination: backend and physical table.
    pub dst: (usize, String),
    /// The destination is in the dictionary already (it gains keys): rows
    /// are staged beside it and merged at the cutover, so no reader sees
    /// them twice before.
    pub is_dst_live: bool,
    /// The source's name after the cutover: its next generation when it
    /// keeps other keys, a retired name (dropped afterwards) when not.
    pub src_after: String,
    /// The partition key column (for the filter).
    pub key_column: String,
    /// The dictionary's rows for the change, committed at the cutover (a
    /// proxy that takes over a dead owner's cutover commits exactly these).
    pub dictionary: Vec<String>,
}

/// What a change did.
pub(super) struct Report {
    pub rows: u64,
    pub seconds: f64,
    pub longest_pause_ms: u64,
}

/// The row that answers a change: rows moved, seconds, longest write pause.
pub(super) fn report_output(r: &Report, info: &str) -> super::AdminOutput {
    super::AdminOutput::Rows {
        columns: super::cols(&["rows_moved", "seconds", "longest_write_pause_ms", "info"]),
        rows: vec![vec![
            Some(r.rows.to_string()),
            Some(format!("{:.3}", r.seconds)),
            Some(r.longest_pause_ms.to_string()),
            Some(info.to_string()),
        ]],
    }
}

/// Whether a server error is a statement's failure to write a change's
/// changelog: a statement prepared before the change's triggers existed runs
/// with the tables it locked then, and MariaDB answers 1146 for the
/// changelog the new trigger writes. Nothing of the statement was applied;
/// it must run again, prepared anew.
pub fn is_capture_error(err: &hscale_wire::response::ErrPacket) -> bool {
    err.code == hscale_wire::consts::code::ER_NO_SUCH_TABLE
        && err.message.contains("'hscale.changes_")
}

/// A pause for tests, in ms, from the environment variable `name`
/// (`HSCALE_TEST_PAUSE_AFTER_RENAME_MS`: right after the cutover's rename,
/// so tests can kill an owner in its cutover; `..._AFTER_COPY_MS`: after the
/// copy, so tests can damage it). Unset in production.
fn test_pause(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The session every connection of a copy runs in, whatever a client left
/// on it: TIMESTAMPs read and written in one time zone, and a 0 written to
/// an AUTO_INCREMENT column stays 0.
pub(super) fn copy_session() -> Vec<String> {
    vec![
        "SET SESSION time_zone = '+00:00'".to_string(),
        "SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO'".to_string(),
    ]
}

/// [`copy_session`] for connections that write the destination: READ
/// COMMITTED, so the replay lanes' deletes of absent keys lock no gaps.
pub(super) fn dst_session() -> Vec<String> {
    let mut s = copy_session();
    s.push("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string());
    s
}

/// The server's estimate of a table's rows (0 if unknown).
async fn table_rows(c: &mut BackendConn, db: &str, table: &str) -> u64 {
    let sql = format!(
        "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
        quote_str(db),
        quote_str(table)
    );
    match c.query_rows(&sql).await {
        Ok(Ok(r)) => r
            .strings()
            .first()
            .and_then(|row| row[0].as_deref().and_then(|v| v.parse().ok()))
            .unwrap_or(0),
        _ => 0,
    }
}

/// Who runs a change, for the journal.
pub(super) fn owner(ctx: &Context) -> String {
    format!("pid {} on {}", std::process::id(), ctx.config.proxy.listen)
}

/// The named lock on the main backend that a change's owner holds for the
/// whole change (on a connection of its own, closed when the change ends or
/// the owner dies). Another proxy that can take it knows the owner is gone.
fn owner_lock(name: &TableName) -> String {
    // FNV-1a: stable across processes, and lock names are at most 64 bytes.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    quote_str(&format!("hscale_op_{h:016x}"))
}

/// Holds the owner lock of a running change; dropping it (or the owner's
/// death) releases the lock.
pub(super) struct Owner {
    _conn: PooledConn,
}

/// Take `name`'s owner lock on a connection of its own; `None` when another
/// proxy holds it.
pub(super) async fn lock_owner(
    ctx: &Context,
    worker: usize,
    name: &TableName,
) -> Result<Option<Owner>, ProxyError> {
    let mut c = conn(ctx, worker, 0).await?;
    c.is_broken = true; // closed, never pooled: closing releases the lock
    let sql = format!("SELECT GET_LOCK({}, 0)", owner_lock(name));
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(&c, &sql, e))?;
    let got = r.strings().first().and_then(|r| r[0].clone()) == Some("1".into());
    Ok(got.then_some(Owner { _conn: c }))
}

/// What starting a change found.
pub(super) enum Began {
    /// This proxy runs operation `.0`, holding the owner lock.
    Started(u64, Box<Owner>),
    /// The same command, run through another proxy, was running and is
    /// done now (operation `.0`): nothing to do.
    AlreadyDone(u64),
}

/// [`begin`] for a command: `Err(answer)` when the same command, run
/// through another proxy, already did the work.
pub(super) async fn start(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    command: &str,
) -> Result<Result<(u64, Box<Owner>), super::AdminOutput>, ProxyError> {
    Ok(match begin(ctx, worker, name, command).await? {
        Began::Started(op, owner) => Ok((op, owner)),
        Began::AlreadyDone(id) => Err(super::AdminOutput::Ok {
            info: format!(
                "already done by operation {id} (the same command, through another proxy)"
            ),
        }),
    })
}

/// After [`start`], under the owner lock: derive the change from the
/// dictionary as it is now (the command may have waited for another change
/// of the table, which `f` must see). `Ok(None)`: nothing to do any more;
/// the operation is discarded from the journal, as on an error of `f`.
pub(super) async fn recheck<T>(
    ctx: &Context,
    worker: usize,
    op: u64,
    f: impl FnOnce(&Dictionary) -> Result<Option<T>, ProxyError>,
) -> Result<Option<T>, ProxyError> {
    let checked = match reload(ctx, worker).await {
        Ok(d) => f(&d),
        Err(e) => Err(e),
    };
    if !matches!(checked, Ok(Some(_))) {
        let sql = format!("DELETE FROM `hscale`.`operations` WHERE id = {op}");
        if let Err(e) = journal(ctx, worker, sql).await {
            tracing::warn!(operation = op, error = %e, "cannot discard the operation");
        }
    }
    checked
}

/// How long the same command waits for a running twin at most.
const TWIN_WAIT: std::time::Duration = std::time::Duration::from_secs(1800);

/// Start an operation on `name`: its owner lock, then its journal row. The
/// same command already running (through any proxy) is waited for, and
/// reported done if it succeeded; another change of the table is refused.
pub(super) async fn begin(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    command: &str,
) -> Result<Began, ProxyError> {
    let started = std::time::Instant::now();
    let mut twin: Option<u64> = None;
    loop {
        let mut main = conn(ctx, worker, 0).await?;
        if let Some(owner_lock) = lock_owner(ctx, worker, name).await? {
            if let Some(id) = twin {
                let q = format!("SELECT state FROM `hscale`.`operations` WHERE id = {id}");
                let state = main
                    .query_rows(&q)
                    .await?
                    .map_err(|e| server_error(&main, &q, e))?
                    .strings()
                    .first()
                    .and_then(|r| r[0].clone());
                if state.as_deref() == Some("done") {
                    return Ok(Began::AlreadyDone(id));
                }
            }
            let sql = format!(
                "INSERT INTO `hscale`.`operations` (db, tbl, command, state, active, owner, started_at) VALUES ({}, {}, {}, 'copying', {}, {}, NOW(3))",
                quote_str(&name.db),
                quote_str(&name.table),
                quote_str(command),
                quote_str(&name.to_string()),
                quote_str(&owner(ctx))
            );
            match main.command(&BackendConn::payload_for_query(&sql)).await? {
                Ok(ok) => return Ok(Began::Started(ok.last_insert_id, Box::new(owner_lock))),
                Err(e) if e.code == 1062 => {}
                Err(e) => return Err(server_error(&main, &sql, e)),
            }
        }
        // Busy: wait for the same command, refuse another.
        match running_op(&mut main, name).await? {
            Some((id, running)) if running == command && started.elapsed() < TWIN_WAIT => {
                twin = Some(id);
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            None if started.elapsed() < std::time::Duration::from_secs(2) => {
                // Between a change's lock and its journal row: look again.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            _ => {
                let running = running_description(&mut main, name).await?;
                return Err(wrong(format!(
                    "{running} is changing {name}; wait for it to end (HSCALE SHOW OPERATIONS)"
                )));
            }
        }
    }
}

/// The running operation on `name`: its id and command.
async fn running_op(
    main: &mut BackendConn,
    name: &TableName,
) -> Result<Option<(u64, String)>, ProxyError> {
    let q = format!(
        "SELECT id, command FROM `hscale`.`operations` WHERE active = {}",
        quote_str(&name.to_string())
    );
    Ok(main
        .query_rows(&q)
        .await?
        .map_err(|e| server_error(main, &q, e))?
        .strings()
        .into_iter()
        .next()
        .and_then(|r| Some((r[0].as_deref()?.parse().ok()?, r[1].clone()?))))
}

/// The running operation on `name`, described for an error message.
async fn running_description(
    main: &mut BackendConn,
    name: &TableName,
) -> Result<String, ProxyError> {
    let q = format!(
        "SELECT id, command, state, owner FROM `hscale`.`operations` WHERE active = {}",
        quote_str(&name.to_string())
    );
    Ok(main
        .query_rows(&q)
        .await?
        .ok()
        .and_then(|r| r.strings().into_iter().next())
        .map(|r| {
            format!(
                "operation {} ({}, {} by {})",
                r[0].clone().unwrap_or_default(),
                r[1].clone().unwrap_or_default(),
                r[2].clone().unwrap_or_default(),
                r[3].clone().unwrap_or_default()
            )
        })
        .unwrap_or_else(|| "another proxy (a change starting, or a take-over)".into()))
}

/// The journal statement that ends operation `id` in `state`.
pub(super) fn end_sql(id: u64, state: &str, report: Option<&Report>) -> String {
    let (rows, pause) = report.map_or((0, 0), |r| (r.rows, r.longest_pause_ms));
    format!(
        "UPDATE `hscale`.`operations` SET state = {}, active = NULL, ended_at = NOW(3), rows_copied = GREATEST(rows_copied, {rows}), longest_pause_ms = {pause} WHERE id = {id}",
        quote_str(state)
    )
}

/// Operation `id` enters its cutover: statements that run into a renamed
/// table wait for the new dictionary from now on (`admin::await_newer_dictionary`).
pub(super) async fn mark_cutover(ctx: &Context, worker: usize, id: u64) -> Result<(), ProxyError> {
    let sql = format!(
        "UPDATE `hscale`.`operations` SET state = 'cutover' WHERE id = {id} AND state = 'copying' AND active IS NOT NULL"
    );
    let mut main = conn(ctx, worker, 0).await?;
    match main.command(&BackendConn::payload_for_query(&sql)).await? {
        Ok(ok) if ok.affected_rows == 1 => Ok(()),
        Ok(_) => {
            let q = format!("SELECT state FROM `hscale`.`operations` WHERE id = {id}");
            let state = main
                .query_rows(&q)
                .await?
                .ok()
                .and_then(|r| r.strings().into_iter().next())
                .and_then(|r| r[0].clone());
            Err(if state.as_deref() == Some("cancelling") {
                ProxyError::Cancelled(id)
            } else {
                wrong(format!(
                    "operation {id} was rolled back by another proxy (its owner looked gone)"
                ))
            })
        }
        Err(e) => Err(server_error(&main, &sql, e)),
    }
}

pub(super) async fn journal(ctx: &Context, worker: usize, sql: String) -> Result<(), ProxyError> {
    let mut main = conn(ctx, worker, 0).await?;
    exec(&mut main, &[sql]).await
}

/// The journal state of a change undone before its cutover: 'cancelled'
/// when asked to stop, 'failed' otherwise.
pub(super) const UNDONE_STATE: &str = "IF(state = 'cancelling', 'cancelled', 'failed')";

/// Mark operation `id` failed, or cancelled (best effort: the error that
/// failed it is what the client sees).
pub(super) async fn fail(ctx: &Context, worker: usize, id: u64, why: &ProxyError) {
    let sql = format!(
        "UPDATE `hscale`.`operations` SET state = {UNDONE_STATE}, active = NULL, ended_at = NOW(3), detail = {} WHERE id = {id}",
        quote_str(&why.to_string())
    );
    if let Err(e) = journal(ctx, worker, sql).await {
        tracing::warn!(operation = id, error = %e, "cannot end the operation in the journal");
    }
}

/// Commit the dictionary change `apply` makes, with the journal's end of
/// operation `id`, by compare-and-set; another proxy's change to another
/// table in between makes it reload and apply again.
pub(super) async fn commit_with_journal(
    ctx: &Context,
    worker: usize,
    id: u64,
    report: &Report,
    mut apply: impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<(), ProxyError> {
    for _ in 0..10 {
        let mut d = (*reload(ctx, worker).await?).clone();
        let statements = apply(&mut d)?;
        // Only a change still in its cutover commits: one another proxy
        // rolled back (its owner looked gone) does not.
        let guard = format!(
            "{} AND state = 'cutover'",
            end_sql(id, "done", Some(report))
        );
        let mut main = conn(ctx, worker, 0).await?;
        match store::commit_change_guarded(&mut main, d.stored_version, &guard, &statements).await {
            Ok(_) => {
                // What was committed, read back (a take-over commits rows
                // it did not apply to `d`).
                reload(ctx, worker).await?;
                return Ok(());
            }
            Err(ProxyError::Wrong(_)) => continue, // the version moved on: apply again
            Err(e) => return Err(e),
        }
    }
    Err(wrong(
        "the dictionary kept changing; the operation's commit did not go through",
    ))
}

/// The primary key columns of `db`.`table` (name and column type), in
/// index order.
pub(super) async fn primary_key(
    c: &mut BackendConn,
    db: &str,
    table: &str,
) -> Result<Vec<(String, String)>, ProxyError> {
    let sql = format!(
        "SELECT s.COLUMN_NAME, c.COLUMN_TYPE FROM information_schema.STATISTICS s JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = s.COLUMN_NAME WHERE s.TABLE_SCHEMA = {} AND s.TABLE_NAME = {} AND s.INDEX_NAME = 'PRIMARY' ORDER BY s.SEQ_IN_INDEX",
        quote_str(db),
        quote_str(table)
    );
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(c, &sql, e))?;
    Ok(r.strings()
        .into_iter()
        .map(|r| {
            (
                r[0].clone().unwrap_or_default(),
                r[1].clone().unwrap_or_default(),
            )
        })
        .collect())
}

/// Everything a running change holds.
pub(super) struct Running<'m> {
    pub(super) m: &'m Move,
    pub(super) id: u64,
    /// Connection to the source's backend (its result charset is raw bytes).
    pub(super) src: PooledConn,
    /// Connection to the destination's backend.
    pub(super) dst: PooledConn,
    pub(super) pk: Vec<(String, String)>,
    /// Where copied rows go: the destination, or its staging table.
    pub(super) into: String,
    /// The source's current name (it changes at the cutover).
    pub(super) src_name: String,
    /// Changelog entries replayed so far.
    pub(super) replayed: u64,
    /// More (source, destination) connections that replay keys beside
    /// `src` and `dst` (`apply`).
    pub(super) lanes: Vec<(PooledConn, PooledConn)>,
    /// How rows are read so their text writes the same values back
    /// (`ddl::exact_select_list`).
    pub(super) columns: String,
}

impl Running<'_> {
    pub(super) fn changelog(&self) -> String {
        qualified("hscale", &format!("changes_{}", self.id))
    }

    fn trigger(&self, event: &str) -> String {
        qualified(&self.m.db, &format!("hscale_{}_{event}", self.id))
    }

    /// The moving rows' condition for a column expression (`None`: all).
    pub(super) fn moving(&self, column: &str) -> String {
        match &self.m.filter {
            Some(f) => f.replace(KEY, column),
            None => "1 = 1".to_string(),
        }
    }

    pub(super) fn pk_list(&self, prefix: &str) -> String {
        self.pk
            .iter()
            .map(|(c, _)| format!("{prefix}{}", quote_ident(c)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Changelog table and triggers on the source.
    async fn capture(&mut self) -> Result<(), ProxyError> {
        let cols: Vec<String> = self
            .pk
            .iter()
            .map(|(c, t)| format!("{} {t} NULL", quote_ident(c)))
            .collect();
        let src_q = qualified(&self.m.db, &self.src_name);
        let key = quote_ident(&self.m.key_column);
        let mut statements = vec![
            "CREATE DATABASE IF NOT EXISTS `hscale`".to_string(),
            format!(
                "CREATE TABLE IF NOT EXISTS {} (seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, {}) ENGINE=InnoDB",
                self.changelog(),
                cols.join(", ")
            ),
            "SET SESSION lock_wait_timeout = 5".to_string(),
        ];
        let insert = |row: &str| {
            format!(
                "INSERT INTO {} ({}) VALUES ({})",
                self.changelog(),
                self.pk_list(""),
                self.pk_list(&format!("{row}."))
            )
        };
        let log = |row: &str| {
            format!(
                "IF {} THEN {}; END IF",
                self.moving(&format!("{row}.{key}")),
                insert(row)
            )
        };
        let same = self
            .pk
            .iter()
            .map(|(c, _)| format!("OLD.{0} <=> NEW.{0}", quote_ident(c)))
            .collect::<Vec<_>>()
            .join(" AND ");
        // No error handler in the triggers: a statement prepared before
        // they existed can run with its old list of tables to lock, and
        // then fails with 1146 on the changelog instead of writing without
        // capture. The proxy runs such a statement again on a fresh
        // connection (`is_capture_error`). For the same reason a changelog
        // is only dropped once its triggers are gone (`clean_up`).
        for (event, body) in [
            ("ai", format!("BEGIN {}; END", log("NEW"))),
            // An update that keeps the key logs it once.
            (
                "au",
                format!(
                    "BEGIN IF {same} THEN IF {} OR {} THEN {}; END IF; ELSE {}; {}; END IF; END",
                    self.moving(&format!("OLD.{key}")),
                    self.moving(&format!("NEW.{key}")),
                    insert("NEW"),
                    log("OLD"),
                    log("NEW")
                ),
            ),
            ("ad", format!("BEGIN {}; END", log("OLD"))),
        ] {
            let what = match event {
                "ai" => "INSERT",
                "au" => "UPDATE",
                _ => "DELETE",
            };
            statements.push(format!(
                "CREATE TRIGGER IF NOT EXISTS {} AFTER {what} ON {src_q} FOR EACH ROW {body}",
                self.trigger(event)
            ));
        }
        exec(&mut self.src, &statements).await
    }

    /// Replay up to [`REPLAY_BATCH`] captured keys: re-read those rows from
    /// the source, replace them on the destination (or delete them there
    /// when they left the moving set), then delete exactly the changelog
    /// entries read. Entries are never skipped by sequence number: writers
    /// commit out of sequence order, so an entry with a smaller number can
    /// become visible after a larger one was replayed. Returns how many
    /// entries were replayed.
    pub(super) async fn replay(&mut self) -> Result<usize, ProxyError> {
        let sql = format!(
            "SELECT seq, {} FROM {} ORDER BY seq LIMIT {REPLAY_BATCH}",
            self.pk_list(""),
            self.changelog()
        );
        let (seqs, keys) = entries(&mut self.src, &sql).await?;
        self.apply(&seqs, keys).await?;
        Ok(seqs.len())
    }

    /// Replay the changelog entries `seqs`, which name the primary keys
    /// `keys` (literals, one per entry): the rows are read again from the
    /// source and replace those keys on the destination in one transaction,
    /// then exactly these entries are deleted.
    pub(super) async fn apply(
        &mut self,
        seqs: &[String],
        mut keys: Vec<String>,
    ) -> Result<(), ProxyError> {
        if seqs.is_empty() {
            return Ok(());
        }
        keys.sort();
        keys.dedup();
        let into_q = &qualified(&self.m.db, &self.into);
        let pk = &self.pk_list("");
        let from = &format!(
            "{} FROM {}",
            self.columns,
            qualified(&self.m.db, &self.src_name)
        );
        let moving = &self.moving(&quote_ident(&self.m.key_column));
        // The keys' chunks are dealt to the lanes, each a (source,
        // destination) pair of connections with its own transaction on the
        // destination: the copy is not visible before the cutover, and each
        // key is replayed whole by one lane.
        let chunks: Vec<&[String]> = keys.chunks(IN_LIST).collect();
        let mut pairs = vec![(&mut self.src, &mut self.dst)];
        pairs.extend(self.lanes.iter_mut().map(|(s, d)| (s, d)));
        let n = pairs.len();
        let lanes = pairs.into_iter().enumerate().map(|(i, (src, dst))| {
            let mine: Vec<&[String]> = chunks.iter().skip(i).step_by(n).copied().collect();
            async move {
                if mine.is_empty() {
                    return Ok::<(), ProxyError>(());
                }
                // Lanes write disjoint keys, but InnoDB's locks on the gaps
                // between them can still deadlock two lanes: the loser's
                // transaction was rolled back whole, and runs again.
                let mut attempt = 0;
                loop {
                    let run = async {
                        exec(dst, &["BEGIN".to_string()]).await?;
                        for chunk in &mine {
                            let in_list = format!("({pk}) IN ({})", chunk.join(", "));
                            exec(dst, &[format!("DELETE FROM {into_q} WHERE {in_list}")]).await?;
                            let select = format!("SELECT {from} WHERE {in_list} AND {moving}");
                            stream_rows(src, &select, dst, into_q, true).await?;
                        }
                        exec(dst, &["COMMIT".to_string()]).await
                    };
                    match run.await {
                        Err(ProxyError::Backend { err, .. })
                            if matches!(err.code, 1205 | 1213) && attempt < 5 =>
                        {
                            attempt += 1;
                            tracing::debug!(code = err.code, attempt, "a replay lane runs again");
                            exec(dst, &["ROLLBACK".to_string()]).await?;
                        }
                        other => return other,
                    }
                }
            }
        });
        futures_util::future::try_join_all(lanes).await?;
        for chunk in seqs.chunks(IN_LIST) {
            let done = format!(
                "DELETE FROM {} WHERE seq IN ({})",
                self.changelog(),
                chunk.join(", ")
            );
            exec(&mut self.src, &[done]).await?;
        }
        self.replayed += seqs.len() as u64;
        tracing::debug!(
            operation = self.id,
            entries = seqs.len(),
            keys = keys.len(),
            "replayed"
        );
        Ok(())
    }

    /// Rename the source to its name after the cutover, waiting at most
    /// 2 s per attempt for the transactions that hold it.
    async fn rename_source(&mut self) -> Result<(), ProxyError> {
        let sql = format!(
            "RENAME TABLE {} TO {}",
            qualified(&self.m.db, &self.src_name),
            qualified(&self.m.db, &self.m.src_after)
        );
        exec(
            &mut self.src,
            &["SET SESSION lock_wait_timeout = 2".to_string()],
        )
        .await?;
        let mut last = None;
        for attempt in 0..RENAME_ATTEMPTS {
            match self
                .src
                .command(&BackendConn::payload_for_query(&sql))
                .await?
            {
                Ok(_) => {
                    self.src_name = self.m.src_after.clone();
                    return Ok(());
                }
                Err(e) if e.code == 1205 => {
                    tracing::info!(
                        operation = self.id,
                        attempt,
                        "rename waits for long transactions"
                    );
                    last = Some(e);
                    tokio::time::sleep(std::time::Duration::from_millis(100 << attempt.min(4)))
                        .await;
                }
                Err(e) => return Err(server_error(&self.src, &sql, e)),
            }
        }
        Err(match last {
            Some(e) => server_error(&self.src, &sql, e),
            None => wrong("the source table could not be renamed"),
        })
    }

    /// Triggers, changelog and staging table gone. The changelog goes only
    /// once every trigger is gone; a trigger that cannot be dropped now
    /// (long transactions on the table) is retried for a while, and left
    /// (harmless, see `capture`) with a warning after that. Returns whether
    /// everything is gone.
    pub(super) async fn clean_up(&mut self) -> bool {
        let _ = exec(
            &mut self.src,
            &["SET SESSION lock_wait_timeout = 5".to_string()],
        )
        .await;
        let mut is_clean = true;
        for e in ["ai", "au", "ad"] {
            let sql = format!("DROP TRIGGER IF EXISTS {}", self.trigger(e));
            let mut dropped = false;
            for attempt in 0..6u32 {
                match exec(&mut self.src, std::slice::from_ref(&sql)).await {
                    Ok(()) => {
                        dropped = true;
                        break;
                    }
                    Err(err) => {
                        tracing::warn!(operation = self.id, attempt, error = %err, "cannot drop a capture trigger yet");
                        if !matches!(&err, ProxyError::Backend { err, .. } if err.code == 1205) {
                            break; // not a lock wait: the backend is gone
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(200 << attempt)).await;
                    }
                }
            }
            is_clean &= dropped;
        }
        if is_clean {
            let sql = format!("DROP TABLE IF EXISTS {}", self.changelog());
            is_clean &= exec(&mut self.src, &[sql]).await.is_ok();
        }
        if self.m.is_dst_live {
            is_clean &= exec(
                &mut self.dst,
                &[format!(
                    "DROP TABLE IF EXISTS {}",
                    qualified(&self.m.db, &self.into)
                )],
            )
            .await
            .is_ok();
        }
        is_clean
    }
}

/// Changelog entries read by `sql` (`seq`, then the primary key columns):
/// their sequence numbers and their keys as SQL row literals.
pub(super) async fn entries(
    c: &mut BackendConn,
    sql: &str,
) -> Result<(Vec<String>, Vec<String>), ProxyError> {
    let r = c
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(c, sql, e))?;
    let seqs: Vec<String> = r
        .rows
        .iter()
        .map(|row| {
            row[0]
                .as_deref()
                .and_then(|b| std::str::from_utf8(b).ok())
                .filter(|s| s.bytes().all(|c| c.is_ascii_digit()))
                .map(str::to_string)
                .ok_or_else(|| wrong("unreadable changelog sequence"))
        })
        .collect::<Result<_, _>>()?;
    let keys = key_literals(&r.columns[1..], r.rows.iter().map(|row| &row[1..]));
    Ok((seqs, keys))
}

/// Primary keys read from a backend as SQL row literals `(v1, v2)`.
pub(super) fn key_literals<'a>(
    cols: &[ColumnInfo],
    rows: impl Iterator<Item = &'a [Option<Vec<u8>>]>,
) -> Vec<String> {
    rows.map(|row| {
        let vals: Vec<String> = row
            .iter()
            .zip(cols)
            .map(|(v, c)| value_literal(v.as_deref(), c))
            .collect();
        format!("({})", vals.join(", "))
    })
    .collect()
}

/// Carry out `m` as operation `id` and commit `apply`'s dictionary change
/// at its cutover. On an error before the cutover everything is undone
/// and the journal says 'failed'.
pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    id: u64,
    m: &Move,
    apply: impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<Report, ProxyError> {
    let started = std::time::Instant::now();
    // Nothing is created before the spec is recorded: an error here only
    // ends the operation.
    let set_up = async {
        let mut src = conn(ctx, worker, m.src.0).await?;
        src.is_broken = true; // session settings change below: never pooled again
        let pk = primary_key(&mut src, &m.db, &m.src.1).await?;
        if pk.is_empty() {
            return Err(wrong(format!(
                "{}.{} has no primary key: rows cannot be moved while it is written",
                m.db, m.src.1
            )));
        }
        let mut dst = conn(ctx, worker, m.dst.0).await?;
        dst.is_broken = true;
        exec(&mut src, &copy_session()).await?;
        exec(&mut dst, &dst_session()).await?;
        let columns = ddl::exact_select_list(&mut src, &m.db, &m.src.1).await?;
        Ok((src, dst, pk, columns))
    };
    let (src, dst, pk, columns) = match set_up.await {
        Ok(x) => x,
        Err(e) => {
            fail(ctx, worker, id, &e).await;
            return Err(e);
        }
    };
    let into = if m.is_dst_live {
        format!("{}_stage{id}", m.dst.1)
    } else {
        m.dst.1.clone()
    };
    if let Err(e) = record_spec(ctx, worker, id, m, &into).await {
        fail(ctx, worker, id, &e).await;
        return Err(e);
    }
    let mut r = Running {
        m,
        id,
        src,
        dst,
        pk,
        into,
        src_name: m.src.1.clone(),
        replayed: 0,
        lanes: Vec::new(),
        columns,
    };
    for _ in 1..REPLAY_LANES {
        let mut lane = (
            conn(ctx, worker, m.src.0).await?,
            conn(ctx, worker, m.dst.0).await?,
        );
        lane.0.is_broken = true;
        lane.1.is_broken = true;
        exec(&mut lane.0, &copy_session()).await?;
        exec(&mut lane.1, &dst_session()).await?;
        r.lanes.push(lane);
    }
    // A cancel (HSCALE CANCEL_OPERATION, through any proxy) is seen within
    // CANCEL_POLL; the copy or replay it interrupts is dropped mid-way (the
    // undo, `abandon`, runs on fresh connections).
    let prepared = tokio::select! {
        p = prepare(ctx, worker, &mut r) => Some(p),
        () = cancel_requested(ctx, worker, id) => None,
    };
    let prepared = prepared.unwrap_or(Err(ProxyError::Cancelled(id)));
    if let Err(e) = prepared {
        abandon(ctx, worker, &mut r, &e).await;
        return Err(e);
    }
    let rows = prepared.unwrap_or(0);
    cut_over(ctx, worker, &mut r, rows, started, apply).await
}

/// How often a change's owner looks for a cancel in the journal.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// Returns once operation `id` is asked to stop (its journal state is
/// 'cancelling'); errors reading the journal are ignored (the next look
/// may succeed; the cutover's guard catches a cancel anyway).
async fn cancel_requested(ctx: &Context, worker: usize, id: u64) {
    let q = format!("SELECT state FROM `hscale`.`operations` WHERE id = {id}");
    loop {
        tokio::time::sleep(CANCEL_POLL).await;
        if let Ok(mut main) = conn(ctx, worker, 0).await {
            if let Ok(Ok(r)) = main.query_rows(&q).await {
                if r.strings().first().and_then(|r| r[0].as_deref()) == Some("cancelling") {
                    tracing::info!(operation = id, "cancelled: undoing the change");
                    return;
                }
            }
        }
    }
}

/// Before the cutover: destination, capture, copy, replays. Returns the
/// rows copied.
async fn prepare(ctx: &Context, worker: usize, r: &mut Running<'_>) -> Result<u64, ProxyError> {
    let m = r.m;
    {
        let mut like = conn(ctx, worker, m.src.0).await?;
        ddl::create_like(&mut like, &m.db, &m.src.1, &mut r.dst, &r.into).await?;
    }
    r.capture().await?;
    let select = format!(
        "SELECT {} FROM {} WHERE {}",
        r.columns,
        qualified(&m.db, &r.src_name),
        r.moving(&quote_ident(&m.key_column))
    );
    let mut reader = conn(ctx, worker, m.src.0).await?;
    reader.is_broken = true;
    exec(&mut reader, &copy_session()).await?;
    // The journal's estimate of the rows to copy: the source's statistics
    // (all its rows; the moving share is unknown without a scan).
    journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET rows_estimate = {} WHERE id = {}",
            table_rows(&mut reader, &m.db, &r.src_name).await,
            r.id
        ),
    )
    .await?;
    let into_q = qualified(&m.db, &r.into);
    tracing::debug!(operation = r.id, "copy starts");
    let rows = stream_rows(&mut reader, &select, &mut r.dst, &into_q, true).await?;
    tracing::debug!(operation = r.id, rows, "copy done");
    drop(reader);
    journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET rows_copied = {rows} WHERE id = {}",
            r.id
        ),
    )
    .await?;
    if let Some(ms) = test_pause("HSCALE_TEST_PAUSE_AFTER_COPY_MS") {
        // Tests damage the copy here: the verification must repair it.
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    catch_up(ctx, worker, r).await?;
    let v = super::verify::verify(ctx, worker, r).await?;
    journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET ranges_verified = {}, ranges_recopied = {} WHERE id = {}",
            v.ranges, v.recopied, r.id
        ),
    )
    .await?;
    // The backlog that grew while the ranges were summed.
    catch_up(ctx, worker, r).await?;
    Ok(rows)
}

/// Replay until the backlog is small, so the cutover's replay (during
/// which writes to the moving rows wait) is short. Writers faster than the
/// replays keep it going; after CATCH_UP_LIMIT the cutover starts anyway,
/// with a longer pause.
async fn catch_up(ctx: &Context, worker: usize, r: &mut Running<'_>) -> Result<(), ProxyError> {
    let catching_up = std::time::Instant::now();
    loop {
        let n = r.replay().await?;
        journal(
            ctx,
            worker,
            format!(
                "UPDATE `hscale`.`operations` SET backlog = {n} WHERE id = {}",
                r.id
            ),
        )
        .await?;
        if n < CUTOVER_BACKLOG {
            break;
        }
        if catching_up.elapsed() > CATCH_UP_LIMIT {
            tracing::warn!(
                operation = r.id,
                backlog = n,
                "writers outpace the change's replays; cutting over with a backlog"
            );
            break;
        }
    }
    Ok(())
}

/// Undo a change that failed before its cutover.
/// Undo a change that failed before its cutover. What cannot be undone now
/// (a backend is down) is left to the take-over: the journal row stays
/// active, in 'rolling_back' (or 'cancelling'), and every proxy tries
/// again each reload interval (`takeover::roll_back`) until the backend is
/// back; the table cannot be changed meanwhile.
async fn abandon(ctx: &Context, worker: usize, r: &mut Running<'_>, why: &ProxyError) {
    tracing::warn!(operation = r.id, error = %why, "partition change failed before its cutover; undoing it");
    // Fresh connections: the failure may have broken the change's own.
    for (b, c) in [(r.m.src.0, &mut r.src), (r.m.dst.0, &mut r.dst)] {
        if let Ok(fresh) = conn(ctx, worker, b).await {
            *c = fresh;
            c.is_broken = true;
        }
    }
    let mut is_clean = r.clean_up().await;
    if !r.m.is_dst_live {
        is_clean &= exec(
            &mut r.dst,
            &[format!(
                "DROP TABLE IF EXISTS {}",
                qualified(&r.m.db, &r.into)
            )],
        )
        .await
        .is_ok();
    }
    if is_clean {
        fail(ctx, worker, r.id, why).await;
        return;
    }
    tracing::warn!(
        operation = r.id,
        "a backend is unreachable: the change's tables are dropped by a take-over once it is back"
    );
    let sql = format!(
        "UPDATE `hscale`.`operations` SET state = IF(state = 'cancelling', 'cancelling', 'rolling_back') WHERE id = {} AND active IS NOT NULL",
        r.id
    );
    if let Err(e) = journal(ctx, worker, sql).await {
        tracing::warn!(operation = r.id, error = %e, "cannot mark the operation for a take-over");
    }
}

async fn cut_over(
    ctx: &Context,
    worker: usize,
    r: &mut Running<'_>,
    rows: u64,
    started: std::time::Instant,
    apply: impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<Report, ProxyError> {
    let m = r.m;
    let id = r.id;
    if let Err(e) = mark_cutover(ctx, worker, id).await {
        abandon(ctx, worker, r, &e).await;
        return Err(e);
    }
    let pause = std::time::Instant::now();
    tracing::debug!(operation = id, "rename");
    if let Err(e) = r.rename_source().await {
        abandon(ctx, worker, r, &e).await;
        return Err(e);
    }
    if let Some(ms) = test_pause("HSCALE_TEST_PAUSE_AFTER_RENAME_MS") {
        // Tests kill the owner here: the cutover is finished by another proxy.
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    // From here on writes to the source wait for the new dictionary: roll
    // forward. A failure leaves the journal in 'cutover' for an operator.
    loop {
        if r.replay().await? == 0 {
            break;
        }
    }
    finish_rows(r).await?;
    let mut report = Report {
        rows,
        seconds: 0.0,
        longest_pause_ms: 0,
    };
    report.longest_pause_ms = pause.elapsed().as_millis() as u64;
    commit_with_journal(ctx, worker, id, &report, apply).await?;
    report.longest_pause_ms = pause.elapsed().as_millis() as u64;
    r.clean_up().await;
    if m.filter.is_none() {
        let _ = exec(&mut r.src, &retire_sql(ctx, &m.db, &r.src_name)).await;
    }
    report.seconds = started.elapsed().as_secs_f64();
    let _ = journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET longest_pause_ms = {} WHERE id = {id}",
            report.longest_pause_ms
        ),
    )
    .await;
    tracing::info!(
        operation = id,
        rows,
        pause_ms = report.longest_pause_ms,
        "partition change done"
    );
    Ok(report)
}

/// Retire `db`.`table` (a source every key left): dropped, or moved to
/// `[proxy] keep_retired_db` under the same (never reused) name.
pub(super) fn retire_sql(ctx: &Context, db: &str, table: &str) -> Vec<String> {
    let keep = &ctx.config.proxy.keep_retired_db;
    if keep.is_empty() {
        return vec![format!("DROP TABLE IF EXISTS {}", qualified(db, table))];
    }
    vec![
        format!("CREATE DATABASE IF NOT EXISTS {}", quote_ident(keep)),
        format!(
            "RENAME TABLE {} TO {}",
            qualified(db, table),
            qualified(keep, table)
        ),
    ]
}

/// Record how to undo operation `id` before anything is created.
pub(super) async fn record_spec(
    ctx: &Context,
    worker: usize,
    id: u64,
    m: &Move,
    into: &str,
) -> Result<(), ProxyError> {
    let names: Vec<&str> = ctx
        .config
        .backends
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    let spec = super::takeover::Spec {
        db: m.db.clone(),
        src_backend: names[m.src.0].to_string(),
        dst_backend: names[m.dst.0].to_string(),
        into: into.to_string(),
        is_dst_live: m.is_dst_live,
        src_table: m.src.1.clone(),
        src_after: m.src_after.clone(),
        dst_table: m.dst.1.clone(),
        key_column: m.key_column.clone(),
        filter: m.filter.clone(),
        dictionary: m.dictionary.clone(),
    };
    let text = toml::to_string(&spec).map_err(|e| wrong(e.to_string()))?;
    journal(
        ctx,
        worker,
        format!(
            "UPDATE `hscale`.`operations` SET detail = {} WHERE id = {id}",
            quote_str(&text)
        ),
    )
    .await
}

/// After the last replay: the moved rows leave what stays of the source,
/// and the staging table joins the destination (both can run again).
pub(super) async fn finish_rows(r: &mut Running<'_>) -> Result<(), ProxyError> {
    let m = r.m;
    if m.filter.is_some() {
        let sql = format!(
            "DELETE FROM {} WHERE {}",
            qualified(&m.db, &r.src_name),
            r.moving(&quote_ident(&m.key_column))
        );
        exec(&mut r.src, &[sql]).await?;
    }
    if m.is_dst_live {
        let sql = format!(
            "REPLACE INTO {} SELECT * FROM {}",
            qualified(&m.db, &m.dst.1),
            qualified(&m.db, &r.into)
        );
        exec(&mut r.dst, &[sql]).await?;
    }
    Ok(())
}
