//! A running change's connections and its row work: capture triggers,
//! the changelog, replays of captured keys in lanes, and the moved rows'
//! deletion. `mod.rs` sequences these steps; `takeover.rs` repeats some.

use hscale_wire::resultset::ColumnInfo;

use super::{Move, IN_LIST, KEY, RENAME_ATTEMPTS, REPLAY_BATCH};

/// Attempts at one capture trigger (`Running::create_trigger`): about
/// 45 s of waits and pauses in all.
const TRIGGER_ATTEMPTS: u32 = 20;
use crate::admin::wrong;
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::partition::copy::{push_literal, stream_rows};
use crate::partition::store::{exec, server_error};
use crate::partition::{qualified, quote_ident, quote_str};
use hscale_wire::resultset::decode_row_into;

/// The primary key columns of `db`.`table` (name and column type), in
/// index order.
pub(in crate::admin) async fn primary_key(
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
pub(in crate::admin) struct Running<'m> {
    pub(in crate::admin) m: &'m Move,
    pub(in crate::admin) id: u64,
    /// Names this move's triggers and changelog apart from another move's
    /// of the same change (`Move::companion`, tagged [`super::COMPANION`]).
    pub(in crate::admin) tag: String,
    /// The epoch its owner runs it at (`fence.rs`): every connection below
    /// is registered under it before its first write.
    pub(in crate::admin) epoch: u64,
    /// Connection to the source's backend (its result charset is raw bytes).
    pub(in crate::admin) src: PooledConn,
    /// Connection to the destination's backend.
    pub(in crate::admin) dst: PooledConn,
    pub(in crate::admin) pk: Vec<(String, String)>,
    /// Where copied rows go: the destination, or its staging table.
    pub(in crate::admin) into: String,
    /// The source's current name (it changes at the cutover).
    pub(in crate::admin) src_name: String,
    /// Changelog entries replayed so far.
    pub(in crate::admin) replayed: u64,
    /// More (source, destination) connections that replay keys beside
    /// `src` and `dst` (`apply`).
    pub(in crate::admin) lanes: Vec<(PooledConn, PooledConn)>,
    /// How rows are read so their text writes the same values back
    /// (`ddl::exact_select_list`).
    pub(in crate::admin) columns: String,
    /// A split's connection writing its rest table (`Move::rest`), on the
    /// source's backend: the copy and the verification's copies write it;
    /// replays write it from the source's connections (same server).
    pub(in crate::admin) rest: Option<PooledConn>,
    /// The source's column names, quoted, in order (`ddl::column_names`).
    pub(in crate::admin) names: String,
    /// The changelog's own column names.
    pub(in crate::admin) log: Changelog,
}

/// The columns of a changelog (`hscale.changes_<operation>`): its
/// sequence number, then one per primary key column of the source. Named
/// by position (`hscale_seq`, `hscale_key_1`, ...), never after the
/// source's columns, so any column name of the user's table fits beside
/// them (a key column named `seq` made the table definition fail with
/// 1060 before). A changelog that exists already keeps its own names: one
/// that a proxy of an earlier version made (`seq`, then the key columns'
/// own names) is read and finished by a later one after an upgrade.
#[derive(Debug, Clone)]
pub(in crate::admin) struct Changelog {
    seq: String,
    keys: Vec<String>,
}

impl Changelog {
    /// The names of a new changelog for a key of `n` columns.
    pub(in crate::admin) fn fresh(n: usize) -> Changelog {
        Changelog {
            seq: "hscale_seq".into(),
            keys: (1..=n).map(|i| format!("hscale_key_{i}")).collect(),
        }
    }

    /// The names of `hscale`.`table` on `c`'s backend if it exists, else
    /// [`Changelog::fresh`] ones.
    pub(in crate::admin) async fn of(
        c: &mut BackendConn,
        table: &str,
        n: usize,
    ) -> Result<Changelog, ProxyError> {
        let sql = format!(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'hscale' AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION",
            quote_str(table)
        );
        let r = c
            .query_rows(&sql)
            .await?
            .map_err(|e| server_error(c, &sql, e))?;
        let mut names = r.strings().into_iter().filter_map(|r| r[0].clone());
        match names.next() {
            Some(seq) => Ok(Changelog {
                seq,
                keys: names.collect(),
            }),
            None => Ok(Changelog::fresh(n)),
        }
    }

    fn seq(&self) -> String {
        quote_ident(&self.seq)
    }

    fn keys(&self) -> String {
        self.keys
            .iter()
            .map(|k| quote_ident(k))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Running<'_> {
    pub(in crate::admin) fn changelog(&self) -> String {
        qualified("hscale", &changelog_name(self.id, &self.tag))
    }

    fn trigger(&self, event: &str) -> String {
        qualified(&self.m.db, &trigger_name(self.id, &self.tag, event))
    }

    /// `column + ` for a journal figure that a change's second move adds
    /// to the first's, nothing for the first.
    pub(in crate::admin) fn after_first(&self, column: &str) -> String {
        if self.tag.is_empty() {
            String::new()
        } else {
            format!("{column} + ")
        }
    }

    /// The destination's rows this move wrote (see `Move::dst_filter`).
    pub(in crate::admin) fn written(&self, column: &str) -> String {
        match &self.m.dst_filter {
            Some(f) => f.replace(KEY, column),
            None => "1 = 1".to_string(),
        }
    }

    /// The moving rows' condition for a column expression (`None`: all).
    pub(in crate::admin) fn moving(&self, column: &str) -> String {
        match &self.m.filter {
            Some(f) => f.replace(KEY, column),
            None => "1 = 1".to_string(),
        }
    }

    /// The condition of the source's rows that stay (a split's rest):
    /// every row the moving condition does not hold for, NULL included.
    pub(in crate::admin) fn staying(&self, column: &str) -> String {
        format!("({}) IS NOT TRUE", self.moving(column))
    }

    /// The rows whose changes the triggers capture: the moving ones, or
    /// every row in a split (its rest is a copy too).
    fn captured(&self, column: &str) -> String {
        match self.m.rest {
            Some(_) => "1 = 1".to_string(),
            None => self.moving(column),
        }
    }

    /// The changelog's key columns, quoted, in order.
    pub(in crate::admin) fn log_keys(&self) -> String {
        self.log.keys()
    }

    pub(in crate::admin) fn pk_list(&self, prefix: &str) -> String {
        self.pk
            .iter()
            .map(|(c, _)| format!("{prefix}{}", quote_ident(c)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Changelog table and triggers on the source.
    pub(in crate::admin) async fn capture(&mut self) -> Result<(), ProxyError> {
        let cols: Vec<String> = self
            .pk
            .iter()
            .zip(&self.log.keys)
            .map(|((_, t), k)| format!("{} {t} NULL", quote_ident(k)))
            .collect();
        let src_q = qualified(&self.m.db, &self.src_name);
        let key = quote_ident(&self.m.key_column);
        let statements = vec![
            "CREATE DATABASE IF NOT EXISTS `hscale`".to_string(),
            format!(
                "CREATE TABLE IF NOT EXISTS {} ({} BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, {}) ENGINE=InnoDB",
                self.changelog(),
                self.log.seq(),
                cols.join(", ")
            ),
            // Each attempt at a trigger waits at most 1 s for the
            // transactions holding the source (writers queue behind the
            // pending lock meanwhile), then lets them run before the next.
            "SET SESSION lock_wait_timeout = 1".to_string(),
        ];
        let insert = |row: &str| {
            format!(
                "INSERT INTO {} ({}) VALUES ({})",
                self.changelog(),
                self.log.keys(),
                self.pk_list(&format!("{row}."))
            )
        };
        let log = |row: &str| {
            format!(
                "IF {} THEN {}; END IF",
                self.captured(&format!("{row}.{key}")),
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
        // connection (`is_stale_trigger_error`). For the same reason a changelog
        // is only dropped once its triggers are gone (`clean_up`).
        let mut triggers = Vec::with_capacity(3);
        for (event, body) in [
            ("ai", format!("BEGIN {}; END", log("NEW"))),
            // An update that keeps the key logs it once.
            (
                "au",
                format!(
                    "BEGIN IF {same} THEN IF {} OR {} THEN {}; END IF; ELSE {}; {}; END IF; END",
                    self.captured(&format!("OLD.{key}")),
                    self.captured(&format!("NEW.{key}")),
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
            triggers.push(format!(
                "CREATE TRIGGER IF NOT EXISTS {} AFTER {what} ON {src_q} FOR EACH ROW {body}",
                self.trigger(event)
            ));
        }
        exec(&mut self.src, &statements).await?;
        for sql in &triggers {
            self.create_trigger(sql).await?;
        }
        self.check_triggers().await?;
        exec(
            &mut self.src,
            &["SET SESSION lock_wait_timeout = 5".to_string()],
        )
        .await
    }

    /// Every capture trigger is this change's: a trigger of the user's
    /// with the same name would have been kept by `CREATE TRIGGER IF NOT
    /// EXISTS`, and writes would go uncaptured.
    async fn check_triggers(&mut self) -> Result<(), ProxyError> {
        let log = changelog_name(self.id, &self.tag);
        for e in ["ai", "au", "ad"] {
            let name = trigger_name(self.id, &self.tag, e);
            let sql = format!(
                "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = {} AND TRIGGER_NAME = {} AND EVENT_OBJECT_TABLE = {} AND LOCATE({}, ACTION_STATEMENT) > 0",
                quote_str(&self.m.db),
                quote_str(&name),
                quote_str(&self.src_name),
                quote_str(&format!("`hscale`.`{log}`"))
            );
            let r = self
                .src
                .query_rows(&sql)
                .await?
                .map_err(|err| server_error(&self.src, &sql, err))?;
            if r.strings().first().and_then(|r| r[0].as_deref()) != Some("1") {
                return Err(wrong(format!(
                    "trigger {}.{name} exists and is not hscale's capture trigger of this change: rename it and run the command again",
                    self.m.db
                )));
            }
        }
        Ok(())
    }

    /// `CREATE TRIGGER IF NOT EXISTS` on the source, again while
    /// transactions hold the table past the lock wait (1205): a
    /// transaction across backends waiting on a deadlock holds its locks
    /// up to `cross_backend_lock_wait_ms` (10 s by default), longer than
    /// one attempt waits.
    async fn create_trigger(&mut self, sql: &str) -> Result<(), ProxyError> {
        let what = "a capture trigger waits for long transactions";
        self.again_on_lock_wait(sql, TRIGGER_ATTEMPTS, what)
            .await
            .map(|_| ())
    }

    /// Run `sql` on the source, again after a growing pause (up to
    /// `attempts` times) while it fails with 1205 (a lock wait timeout:
    /// transactions hold the table).
    async fn again_on_lock_wait(
        &mut self,
        sql: &str,
        attempts: u32,
        what: &str,
    ) -> Result<(), ProxyError> {
        let mut last = None;
        for attempt in 0..attempts {
            match self
                .src
                .command(&BackendConn::payload_for_query(sql))
                .await?
            {
                Ok(_) => return Ok(()),
                Err(e) if e.code == 1205 => {
                    tracing::info!(operation = self.id, attempt, "{what}");
                    last = Some(e);
                    tokio::time::sleep(std::time::Duration::from_millis(100 << attempt.min(4)))
                        .await;
                }
                Err(e) => return Err(server_error(&self.src, sql, e)),
            }
        }
        Err(match last {
            Some(e) => server_error(&self.src, sql, e),
            None => wrong(format!("{sql}: no attempt ran")),
        })
    }

    /// Replay up to [`REPLAY_BATCH`] captured keys: re-read those rows from
    /// the source, replace them on the destination (or delete them there
    /// when they left the moving set), then delete exactly the changelog
    /// entries read. Entries are never skipped by sequence number: writers
    /// commit out of sequence order, so an entry with a smaller number can
    /// become visible after a larger one was replayed. Returns how many
    /// entries were replayed.
    pub(in crate::admin) async fn replay(&mut self) -> Result<usize, ProxyError> {
        if self.pk.is_empty() {
            return Ok(0); // nothing captured: see `has_moving_rows`
        }
        let sql = format!(
            "SELECT {seq}, {} FROM {} ORDER BY {seq} LIMIT {REPLAY_BATCH}",
            self.log.keys(),
            self.changelog(),
            seq = self.log.seq()
        );
        let (seqs, keys) = entries(&mut self.src, &sql).await?;
        self.apply(&seqs, keys).await?;
        Ok(seqs.len())
    }

    /// The cutover's replay, after the source's rename: every transaction
    /// that wrote the source (and so its changelog) has ended, and none
    /// can write it again, so the changelog is complete. It is read once
    /// in sequence order, in batches, and its entries are left for
    /// `clean_up` to drop with it (one round trip less while writes wait;
    /// a take-over that finishes this cutover replays them again, which
    /// changes nothing). Returns how many entries were replayed.
    pub(in crate::admin) async fn replay_final(&mut self) -> Result<u64, ProxyError> {
        if self.pk.is_empty() {
            return Ok(0);
        }
        let mut after = String::from("0");
        let mut n = 0;
        loop {
            let sql = format!(
                "SELECT {seq}, {} FROM {} WHERE {seq} > {after} ORDER BY {seq} LIMIT {REPLAY_BATCH}",
                self.log.keys(),
                self.changelog(),
                seq = self.log.seq()
            );
            let (seqs, keys) = entries(&mut self.src, &sql).await?;
            let Some(last) = seqs.last() else {
                return Ok(n);
            };
            after = last.clone();
            n += seqs.len() as u64;
            let full = seqs.len() == REPLAY_BATCH;
            self.replay_keys(keys).await?;
            self.replayed += seqs.len() as u64;
            if !full {
                return Ok(n);
            }
        }
    }

    /// Replay the changelog entries `seqs`, which name the primary keys
    /// `keys` (literals, one per entry): the rows are read again from the
    /// source and replace those keys on the destination in one transaction,
    /// then exactly these entries are deleted.
    pub(in crate::admin) async fn apply(
        &mut self,
        seqs: &[String],
        keys: Vec<String>,
    ) -> Result<(), ProxyError> {
        if seqs.is_empty() {
            return Ok(());
        }
        let n = self.replay_keys(keys).await?;
        for chunk in seqs.chunks(IN_LIST) {
            let done = format!(
                "DELETE FROM {} WHERE {} IN ({})",
                self.changelog(),
                self.log.seq(),
                chunk.join(", ")
            );
            exec(&mut self.src, &[done]).await?;
        }
        self.replayed += seqs.len() as u64;
        tracing::debug!(
            operation = self.id,
            entries = seqs.len(),
            keys = n,
            "replayed"
        );
        Ok(())
    }

    /// Re-read the rows of `keys` (primary keys as row literals) from the
    /// source and replace them on the destination, in lanes (see
    /// [`Running::apply`]). Returns how many distinct keys there were.
    async fn replay_keys(&mut self, mut keys: Vec<String>) -> Result<usize, ProxyError> {
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
        // A split's rest is on the source's server: its keys are replaced
        // there by the source's connection, server-side, every column named
        // (`SELECT *` leaves out INVISIBLE ones).
        let rest = self.m.rest.as_ref().map(|rest| {
            (
                qualified(&self.m.db, rest),
                qualified(&self.m.db, &self.src_name),
                self.staying(&quote_ident(&self.m.key_column)),
            )
        });
        let names = &self.names;
        // Only this move's rows of a destination another move writes too
        // (`Move::companion`): a key can leave one source for the other
        // (deleted there, inserted here), and each move's replay deletes
        // and copies only what its own source holds.
        let written = &self.written(&quote_ident(&self.m.key_column));
        let rest = &rest;
        // The keys' chunks are dealt to the lanes, each a (source,
        // destination) pair of connections with its own transaction on the
        // destination: the copy is not visible before the cutover, and each
        // key is replayed whole by one lane.
        let chunks: Vec<&[String]> = keys.chunks(IN_LIST).collect();
        // A reshape's shadow is on the source's server: each lane replays
        // its keys there, server-side, through the column mapping.
        if let Some(rs) = &self.m.reshape {
            let src_q = &qualified(&self.m.db, &self.src_name);
            let mut dsts = vec![&mut self.dst];
            dsts.extend(self.lanes.iter_mut().map(|(_, d)| d));
            let n = dsts.len();
            let lanes = dsts.into_iter().enumerate().map(|(i, dst)| {
                let mine: Vec<&[String]> = chunks.iter().skip(i).step_by(n).copied().collect();
                async move {
                    if mine.is_empty() {
                        return Ok(());
                    }
                    super::reshape::replay_lane(rs, dst, into_q, src_q, pk, &mine).await
                }
            });
            futures_util::future::try_join_all(lanes).await?;
            return Ok(keys.len());
        }
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
                            let in_list = key_in_list(pk, chunk);
                            exec(
                                dst,
                                &[format!("DELETE FROM {into_q} WHERE {in_list} AND {written}")],
                            )
                            .await?;
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
                        Err(e) => return Err(e),
                        Ok(()) => break,
                    }
                }
                let Some((rest_q, src_q, staying)) = rest else {
                    return Ok(());
                };
                // READ COMMITTED: the source's rows are read without
                // locking them against the application's writers.
                let mut attempt = 0;
                loop {
                    let mut statements = vec![
                        "SET TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string(),
                        "BEGIN".to_string(),
                    ];
                    for chunk in &mine {
                        let in_list = key_in_list(pk, chunk);
                        statements.push(format!("DELETE FROM {rest_q} WHERE {in_list}"));
                        statements.push(format!(
                            "INSERT INTO {rest_q} ({names}) SELECT {names} FROM {src_q} WHERE {in_list} AND {staying}"
                        ));
                    }
                    statements.push("COMMIT".to_string());
                    match exec(src, &statements).await {
                        Err(ProxyError::Backend { err, .. })
                            if matches!(err.code, 1205 | 1213) && attempt < 5 =>
                        {
                            attempt += 1;
                            tracing::debug!(code = err.code, attempt, "a replay lane runs again");
                            exec(src, &["ROLLBACK".to_string()]).await?;
                        }
                        other => return other,
                    }
                }
            }
        });
        futures_util::future::try_join_all(lanes).await?;
        Ok(keys.len())
    }

    /// Before [`Running::rename_source`], and before writes wait: each
    /// attempt at the rename waits at most 2 s for the transactions that
    /// hold the source.
    pub(in crate::admin) async fn prepare_rename(&mut self) -> Result<(), ProxyError> {
        exec(
            &mut self.src,
            &["SET SESSION lock_wait_timeout = 2".to_string()],
        )
        .await
    }

    /// Rename the source to its name after the cutover (after
    /// [`Running::prepare_rename`]), again while transactions hold it.
    pub(in crate::admin) async fn rename_source(&mut self) -> Result<(), ProxyError> {
        let sql = format!(
            "RENAME TABLE {} TO {}",
            qualified(&self.m.db, &self.src_name),
            qualified(&self.m.db, &self.m.src_after)
        );
        self.again_on_lock_wait(&sql, RENAME_ATTEMPTS, "rename waits for long transactions")
            .await?;
        self.src_name = self.m.src_after.clone();
        Ok(())
    }

    /// Triggers, changelog and staging table gone. The changelog goes only
    /// once every trigger is gone; a trigger that cannot be dropped now
    /// (long transactions on the table) is retried for a while, and left
    /// (harmless, see `capture`) with a warning after that. Returns whether
    /// everything is gone.
    pub(in crate::admin) async fn clean_up(&mut self) -> bool {
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

/// What removes the capture of operation `id`'s move tagged `tag` from
/// `db`: its three triggers, then its changelog (only once the triggers
/// are gone, see `Running::capture`; `exec` stops at the first failure).
pub(in crate::admin) fn capture_drops(db: &str, id: u64, tag: &str) -> Vec<String> {
    let mut out: Vec<String> = ["ai", "au", "ad"]
        .iter()
        .map(|e| {
            format!(
                "DROP TRIGGER IF EXISTS {}",
                qualified(db, &trigger_name(id, tag, e))
            )
        })
        .collect();
    out.push(format!(
        "DROP TABLE IF EXISTS {}",
        qualified("hscale", &changelog_name(id, tag))
    ));
    out
}

/// The changelog table (in the `hscale` schema) of operation `id`'s move
/// tagged `tag`.
pub(in crate::admin) fn changelog_name(id: u64, tag: &str) -> String {
    format!("changes_{id}{tag}")
}

/// The capture trigger for `event` (`ai`, `au`, `ad`) of operation `id`'s
/// move tagged `tag`.
pub(in crate::admin) fn trigger_name(id: u64, tag: &str, event: &str) -> String {
    format!("hscale_{id}{tag}_{event}")
}

/// Changelog entries read by `sql` (the sequence, then the key columns):
/// their sequence numbers and their keys as SQL row literals. Streamed,
/// each key written once into its literal: a round reads up to
/// `REPLAY_BATCH` entries, and whole rows plus a string per value had the
/// proxy's RSS jump 5-6 MB at the first rounds after a copy.
pub(in crate::admin) async fn entries(
    c: &mut BackendConn,
    sql: &str,
) -> Result<(Vec<String>, Vec<String>), ProxyError> {
    c.ensure_utf8().await?;
    let cols = c
        .query_stream(sql)
        .await?
        .map_err(|e| server_error(c, sql, e))?;
    let n = cols.len();
    let (mut seqs, mut keys) = (Vec::new(), Vec::new());
    while let Some(row) = c.next_row_payload(n).await? {
        let payload = row.map_err(|e| server_error(c, sql, e))?;
        let mut values = Vec::with_capacity(n);
        decode_row_into(&payload, n, &mut values).map_err(|e| c.protocol_error(e))?;
        let seq = values
            .first()
            .copied()
            .flatten()
            .and_then(|b| std::str::from_utf8(b).ok())
            .filter(|s| s.bytes().all(|c| c.is_ascii_digit()))
            .ok_or_else(|| wrong("unreadable changelog sequence"))?;
        seqs.push(seq.to_string());
        keys.push(key_literal(&cols[1..], &values[1..]));
    }
    Ok((seqs, keys))
}

/// `(columns) IN (keys)` for the row literals `keys`. A single key is
/// named twice: MariaDB 10.11 plans `DELETE ... WHERE (a, b) IN ((1, 2))`
/// as a scan of the whole table (a one-row list of row constructors gets
/// no range), so a replay of one key read every row of the destination,
/// for seconds, while two equal keys are a one-row range.
pub(in crate::admin) fn key_in_list(columns: &str, keys: &[String]) -> String {
    match keys {
        [one] => format!("({columns}) IN ({one}, {one})"),
        _ => format!("({columns}) IN ({})", keys.join(", ")),
    }
}

/// A primary key read from a backend as an SQL row literal `(v1, v2)`.
pub(in crate::admin) fn key_literal(cols: &[ColumnInfo], row: &[Option<&[u8]>]) -> String {
    let mut out = String::from("(");
    for (i, (v, c)) in row.iter().zip(cols).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_literal(&mut out, *v, c);
    }
    out.push(')');
    out
}
