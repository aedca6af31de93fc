//! The result cache's version rows and triggers on a backend
//! (`exec/cache.rs` reads them, `admin/cache.rs` puts them in place and
//! removes them), on the physical tables of a table ([`physical_tables`]): `hscale.cache_versions` holds, per physical table and
//! writing connection, a counter that AFTER INSERT, UPDATE and DELETE
//! triggers on the table raise in the writer's own transaction. A reader
//! sums a table's rows: the sum moves exactly when a write commits.
//!
//! Why no writer waits because of them (so no write fails with 1213 or
//! 1205 because a table is cached): a writer only ever writes the row of
//! its own connection (`slot = CONNECTION_ID()`), and a connection runs
//! one transaction at a time, so no two writers want one row. The bump
//! is `INSERT ... ON DUPLICATE KEY UPDATE`, which takes a record lock on
//! an existing row and only an insert intention lock for a new one (no
//! gap lock: a plain UPDATE that finds no row would take one, and two
//! first writes into the same gap would then deadlock). Readers take no
//! lock (a consistent read). [`fold`], which keeps the rows few, runs in
//! READ COMMITTED (no gap locks), skips rows a writer holds (`SKIP
//! LOCKED`) and adds them into the table's row of slot 0, which no
//! writer touches: it waits for nobody but another fold, and keeps every
//! sum as it was.

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::BackendId;

use super::{qualified, quote_ident, quote_str, store};
use crate::backend::BackendConn;
use crate::error::ProxyError;

/// The version rows: per table, one per connection that wrote it (and
/// slot 0, what [`fold`] gathered).
pub const TABLE: &str = "`hscale`.`cache_versions`";

const VERSIONS: &str = "CREATE TABLE IF NOT EXISTS `hscale`.`cache_versions` (\
    db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, slot BIGINT UNSIGNED NOT NULL, \
    version BIGINT UNSIGNED NOT NULL, PRIMARY KEY (db, tbl, slot)) ENGINE=InnoDB";

/// A table with more rows than this is folded (`exec/cache.rs` asks).
pub const FOLD_AT: u64 = 64;

/// Slots from here on are marks of a DDL statement in progress through a
/// proxy (`exec/cache_ddl.rs`): while a table has one, no answer of it is
/// stored or served.
pub const MARKED: u64 = 1 << 63;

/// The dictionary's table of rules (created on first use, so a dictionary
/// an older hscale reads is unchanged until a table is cached).
pub const RULES: &str = "CREATE TABLE IF NOT EXISTS `hscale`.`cached_tables` (\
    db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, mode VARCHAR(8) NOT NULL, \
    ttl_ms BIGINT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (db, tbl)) ENGINE=InnoDB";

/// The dictionary's table of cached statements, by the statement given
/// (its fingerprint is computed again when read): `ttl_ms` 0 is EXACT
/// (an hscale from before EXACT statements reads it as not cached).
pub const STATEMENTS: &str = "CREATE TABLE IF NOT EXISTS `hscale`.`cached_statements` (\
    digest BIGINT UNSIGNED NOT NULL PRIMARY KEY, statement MEDIUMTEXT NOT NULL, \
    ttl_ms BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB";

const EVENTS: [(&str, &str); 3] = [("i", "INSERT"), ("u", "UPDATE"), ("d", "DELETE")];

/// A physical table: its backend, database and name.
pub type Physical = (BackendId, String, String);

/// Where `name`'s rows live: every partition's physical table, every
/// global copy, or the table on `unpartitioned`, the backend an
/// unpartitioned table's reads go to.
/// `None` for a view hscale keeps (no triggers on a view).
pub fn physical_tables(
    d: &Dictionary,
    name: &TableName,
    unpartitioned: BackendId,
    backends: usize,
) -> Option<Vec<Physical>> {
    if d.view(name).is_some() {
        return None;
    }
    if let Some(t) = d.table(name) {
        return Some(
            t.all_targets()
                .into_iter()
                .map(|x| (x.backend, name.db.clone(), x.physical_table))
                .collect(),
        );
    }
    if d.is_global(name) {
        return Some(
            (0..backends)
                .map(|i| (BackendId::new(i), name.db.clone(), name.table.clone()))
                .collect(),
        );
    }
    Some(vec![(unpartitioned, name.db.clone(), name.table.clone())])
}

/// The tables the statements cached EXACT (`HSCALE CACHE_STATEMENT`)
/// read, as they name them: a name without a database is of whatever
/// database the reading session is in.
pub fn exact_statement_tables(d: &Dictionary) -> Vec<hscale_sql::reads::TableRead> {
    let mut out = Vec::new();
    for (_, sql, rule) in d.cached_statements() {
        if rule != hscale_route::dictionary::CacheRule::Exact {
            continue;
        }
        let Ok(tokens) = hscale_sql::tokenize(sql) else {
            continue;
        };
        for t in hscale_sql::reads::tables_read(sql, &tokens).unwrap_or_default() {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// Whether a statement cached EXACT may read `name` (of
/// [`exact_statement_tables`]): one names it with its database, or names
/// a table of its name without one.
pub fn is_read_by(tables: &[hscale_sql::reads::TableRead], name: &TableName) -> bool {
    tables
        .iter()
        .any(|t| t.table == name.table && t.db.as_deref().is_none_or(|db| db == name.db))
}

/// The name of `table`'s version trigger for `event` (in its database).
/// `hscale_w*` bump `cache_versions`; the `hscale_v*` of the first
/// release (`table_versions`, slots shared by connections) are replaced.
fn trigger_name(table: &str, event: &str) -> String {
    named("hscale_w", table, event)
}

fn named(prefix: &str, table: &str, event: &str) -> String {
    let name = format!("{prefix}{event}_{table}");
    if name.len() <= 64 {
        return name;
    }
    let h = xxhash_rust::xxh3::xxh3_64(table.as_bytes());
    format!("{prefix}{event}_{h:016x}")
}

/// The statement that bumps `db`.`table`'s version once, as its triggers
/// do (the proxy runs it after a TRUNCATE, which fires no trigger).
pub fn bump(db: &str, table: &str) -> String {
    format!(
        "INSERT INTO {TABLE} VALUES ({}, {}, CONNECTION_ID(), 1) \
         ON DUPLICATE KEY UPDATE version = version + 1",
        quote_str(db),
        quote_str(table),
    )
}

/// A part of a version read (`exec/cache/version_reads.rs`, a `UNION
/// ALL` of rows `(db, tbl, version, count, slot)`): how many of
/// `db`.`table`'s version triggers are on it, in `count`, with a NULL
/// `version`. A table dropped and created again, or renamed onto its
/// name, on a backend directly has fewer than three: its writes are not
/// counted. Reads one `.TRG` file (the lookup on EVENT_OBJECT_SCHEMA and
/// EVENT_OBJECT_TABLE opens no other table).
pub fn armed_count(db: &str, table: &str) -> String {
    let names: Vec<String> = EVENTS
        .iter()
        .map(|(e, _)| quote_str(&trigger_name(table, e)))
        .collect();
    format!(
        "SELECT {db}, {table}, NULL, COUNT(*), 0 FROM information_schema.TRIGGERS \
         WHERE EVENT_OBJECT_SCHEMA = {db} AND EVENT_OBJECT_TABLE = {table} \
         AND TRIGGER_NAME IN ({})",
        names.join(", "),
        db = quote_str(db),
        table = quote_str(table),
    )
}

/// The version triggers a table has ([`armed_count`]) when armed.
pub const ARMED: u64 = EVENTS.len() as u64;

/// Where `db`.`table`'s three version trigger names are: the tables
/// they are on (read from information_schema, which takes no lock a
/// writer waits for). A name on another table was renamed away with it.
async fn armed_on(
    conn: &mut BackendConn,
    db: &str,
    table: &str,
) -> Result<Vec<(String, String)>, ProxyError> {
    let names: Vec<String> = EVENTS
        .iter()
        .map(|(e, _)| quote_str(&trigger_name(table, e)))
        .collect();
    let sql = format!(
        "SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS \
         WHERE TRIGGER_SCHEMA = {} AND TRIGGER_NAME IN ({})",
        quote_str(db),
        names.join(", ")
    );
    let rows = conn
        .query_rows(&sql)
        .await?
        .map_err(|e| store::server_error(conn, &sql, e))?
        .strings();
    Ok(rows
        .into_iter()
        .map(|r| {
            let field = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            (field(0), field(1))
        })
        .collect())
}

/// Put `db`.`table`'s version triggers in place unless they are there.
/// `lock_wait_s`: how long CREATE TRIGGER may wait for the table's
/// metadata lock (behind long transactions; every statement of the table
/// queues behind a waiting DDL): a read's miss gives up soon and runs
/// uncached, a CACHE_TABLE waits as any DDL.
pub async fn arm(
    conn: &mut BackendConn,
    db: &str,
    table: &str,
    lock_wait_s: Option<u32>,
) -> Result<(), ProxyError> {
    let found = armed_on(conn, db, table).await?;
    if found.iter().filter(|(_, on)| on == table).count() == EVENTS.len() {
        return Ok(());
    }
    let prefix = lock_wait_s.map_or(String::new(), |s| {
        format!("SET STATEMENT lock_wait_timeout = {s} FOR ")
    });
    // Its version moves first: an answer stored before its triggers went
    // (a table dropped and created again on a backend directly, whose
    // writes since were not counted) is never served again, by any
    // proxy; until the three are in place version reads find it not
    // armed, and nothing of it is served or stored.
    let mut sql = vec![
        "CREATE DATABASE IF NOT EXISTS `hscale`".to_string(),
        VERSIONS.to_string(),
        bump(db, table),
    ];
    // Names another table took with it (RENAME): dropped there, so they
    // can be created on this one. Never one on this table: another
    // proxy may have just put it in place and stored an answer after.
    for (name, on) in &found {
        if on != table {
            sql.push(format!(
                "{prefix}DROP TRIGGER IF EXISTS {}.{}",
                quote_ident(db),
                quote_ident(name)
            ));
        }
    }
    for (e, event) in EVENTS {
        sql.push(format!(
            "{prefix}CREATE TRIGGER IF NOT EXISTS {}.{} AFTER {event} ON {} FOR EACH ROW {}",
            quote_ident(db),
            quote_ident(&trigger_name(table, e)),
            qualified(db, table),
            bump(db, table),
        ));
    }
    for (e, _) in EVENTS {
        sql.push(format!(
            "{prefix}DROP TRIGGER IF EXISTS {}.{}",
            quote_ident(db),
            quote_ident(&named("hscale_v", table, e))
        ));
    }
    store::exec(conn, &sql).await
}

/// Mark `tables` (database, table) as changed by a DDL statement in
/// progress, under `slot` (at least [`MARKED`]): autocommitted before
/// the statement runs.
pub async fn mark(
    conn: &mut BackendConn,
    tables: &[(String, String)],
    slot: u64,
) -> Result<(), ProxyError> {
    let mut sql = vec![
        "CREATE DATABASE IF NOT EXISTS `hscale`".to_string(),
        VERSIONS.to_string(),
    ];
    for (db, table) in tables {
        sql.push(format!(
            "INSERT INTO {TABLE} VALUES ({}, {}, {slot}, 1) ON DUPLICATE KEY UPDATE version = version + 1",
            quote_str(db),
            quote_str(table)
        ));
    }
    store::exec(conn, &sql).await
}

/// The DDL statement ended: its marks deleted and each table's version
/// bumped, in one transaction (the sum moves past every answer stored
/// before the mark).
pub async fn unmark(
    conn: &mut BackendConn,
    tables: &[(String, String)],
    slot: u64,
) -> Result<(), ProxyError> {
    let mut sql = vec!["BEGIN".to_string()];
    for (db, table) in tables {
        sql.push(format!(
            "DELETE FROM {TABLE} WHERE db = {} AND tbl = {} AND slot = {slot}",
            quote_str(db),
            quote_str(table)
        ));
        sql.push(bump(db, table));
    }
    sql.push("COMMIT".to_string());
    store::exec(conn, &sql).await
}

/// Delete every mark of `db`.`table` (a proxy that died in the middle of
/// a DDL statement left it) and bump its version: `HSCALE CACHE_TABLE`.
pub async fn clear_marks(conn: &mut BackendConn, db: &str, table: &str) -> Result<(), ProxyError> {
    let sql = [
        "BEGIN".to_string(),
        format!(
            "DELETE FROM {TABLE} WHERE db = {} AND tbl = {} AND slot >= {MARKED}",
            quote_str(db),
            quote_str(table)
        ),
        bump(db, table),
        "COMMIT".to_string(),
    ];
    store::exec(conn, &sql).await
}

/// Drop `db`.`table`'s version triggers and its version rows.
pub async fn disarm(conn: &mut BackendConn, db: &str, table: &str) -> Result<(), ProxyError> {
    let mut sql: Vec<String> = EVENTS
        .iter()
        .flat_map(|(e, _)| [trigger_name(table, e), named("hscale_v", table, e)])
        .map(|t| {
            format!(
                "DROP TRIGGER IF EXISTS {}.{}",
                quote_ident(db),
                quote_ident(&t)
            )
        })
        .collect();
    sql.push(VERSIONS.to_string());
    sql.push(format!(
        "DELETE FROM {TABLE} WHERE db = {} AND tbl = {}",
        quote_str(db),
        quote_str(table)
    ));
    store::exec(conn, &sql).await
}

/// Add the rows of `db`.`table` that no open transaction holds into its
/// row of slot 0, and delete them (see the module's comment: it never
/// waits for a writer, and every sum stays what it was). A connection
/// whose row was folded inserts a new one at its next write.
pub async fn fold(conn: &mut BackendConn, db: &str, table: &str) -> Result<(), ProxyError> {
    let (db, table) = (quote_str(db), quote_str(table));
    let begin = [
        "SET TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string(),
        "BEGIN".to_string(),
    ];
    store::exec(conn, &begin).await?;
    let sql = format!(
        "SELECT slot, version FROM {TABLE} WHERE db = {db} AND tbl = {table} AND slot > 0 \
         AND slot < {MARKED} FOR UPDATE SKIP LOCKED"
    );
    let rows = match conn.query_rows(&sql).await? {
        Ok(t) => t.strings(),
        Err(e) => {
            conn.is_broken = true;
            return Err(store::server_error(conn, &sql, e));
        }
    };
    let mut slots = Vec::new();
    let mut sum: u64 = 0;
    for r in &rows {
        if let (Some(Some(slot)), Some(Some(v))) = (r.first(), r.get(1)) {
            slots.push(slot.clone());
            sum = sum.saturating_add(v.parse().unwrap_or(0));
        }
    }
    let mut sql = Vec::new();
    if !slots.is_empty() {
        sql.push(format!(
            "INSERT INTO {TABLE} VALUES ({db}, {table}, 0, {sum}) \
             ON DUPLICATE KEY UPDATE version = version + {sum}"
        ));
        sql.push(format!(
            "DELETE FROM {TABLE} WHERE db = {db} AND tbl = {table} AND slot IN ({})",
            slots.join(", ")
        ));
    }
    sql.push("COMMIT".to_string());
    store::exec(conn, &sql).await
}
