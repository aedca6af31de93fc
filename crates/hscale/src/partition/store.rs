//! The dictionary's home: tables in the `hscale` database on the main
//! backend, created on first start. Backends are stored by name, so that
//! reordering `[[backends]]` in the config does not move partitions.
//!
//! Every change of the dictionary commits through [`commit_change`]: one
//! transaction that raises `hscale.dictionary_version` by compare-and-set,
//! so two proxies changing the dictionary at once cannot both succeed on
//! the same version, and a reader sees every change or none
//! ([`load`] reads in one consistent snapshot).

use hscale_route::dictionary::{Dictionary, Lookup, Placement, TableName};
use hscale_route::key_compare::KeyCompare;
use hscale_route::view::{self, View};
use hscale_route::BackendId;
use hscale_route::HashingFunction;

use super::{qualified, quote_str};
/// A server error of a statement the proxy ran itself (defined beside
/// the proxy's own queries, `backend/conn/query.rs`).
pub use crate::backend::conn::server_error;
use crate::backend::BackendConn;
use crate::error::ProxyError;

const SCHEMA: &[&str] = &[
    "CREATE DATABASE IF NOT EXISTS `hscale`",
    "CREATE TABLE IF NOT EXISTS `hscale`.`partitioned_tables` (\
       db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, key_column VARCHAR(64) NOT NULL, \
       hashing_function VARCHAR(200) NOT NULL, default_table VARCHAR(64) NOT NULL, \
       default_backend VARCHAR(200) NOT NULL, key_type TEXT NOT NULL, \
       PRIMARY KEY (db, tbl)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS `hscale`.`partitions` (\
       db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, partition_value VARCHAR(255) NOT NULL, \
       partition_name VARCHAR(64) NOT NULL, backend VARCHAR(200) NOT NULL, \
       PRIMARY KEY (db, tbl, partition_value)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS `hscale`.`global_tables` (\
       db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, PRIMARY KEY (db, tbl)) ENGINE=InnoDB",
    // A partition's physical table; NULL in dictionaries written before it
    // existed, which means `tbl_partition`.
    "ALTER TABLE `hscale`.`partitions` ADD COLUMN IF NOT EXISTS physical_table VARCHAR(64) NULL",
    "CREATE TABLE IF NOT EXISTS `hscale`.`dictionary_version` (\
       id TINYINT UNSIGNED NOT NULL PRIMARY KEY, version BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB",
    "INSERT IGNORE INTO `hscale`.`dictionary_version` VALUES (1, 0)",
    // The operations journal: one row per partition change. `active` is
    // 'db.tbl' while the change runs (one change per table at a time) and
    // NULL once it ended.
    "CREATE TABLE IF NOT EXISTS `hscale`.`operations` (\
       id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
       db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, command TEXT NOT NULL, \
       state VARCHAR(16) NOT NULL, active VARCHAR(200) NULL UNIQUE, owner VARCHAR(200) NOT NULL, \
       started_at DATETIME(3) NOT NULL, ended_at DATETIME(3) NULL, \
       rows_copied BIGINT UNSIGNED NOT NULL DEFAULT 0, rows_estimate BIGINT UNSIGNED NOT NULL DEFAULT 0, \
       backlog BIGINT UNSIGNED NOT NULL DEFAULT 0, longest_pause_ms BIGINT UNSIGNED NOT NULL DEFAULT 0, \
       detail TEXT NULL) ENGINE=InnoDB",
    // Auto-partitioning's placement rule (`Placement`); NULL: off.
    "ALTER TABLE `hscale`.`partitioned_tables` ADD COLUMN IF NOT EXISTS auto_partition VARCHAR(32) NULL",
    // Verification before the cutover (`admin/change/verify.rs`): ranges compared
    // and ranges that differed and were copied again.
    "ALTER TABLE `hscale`.`operations` ADD COLUMN IF NOT EXISTS ranges_verified INT UNSIGNED NOT NULL DEFAULT 0, \
       ADD COLUMN IF NOT EXISTS ranges_recopied INT UNSIGNED NOT NULL DEFAULT 0",
    // The owner fence (`admin/change/fence.rs`): the owner's heartbeat, the
    // epoch a take-over raises by compare-and-set, and the backend
    // connections the owners registered (`epoch/backend/thread id;`).
    "ALTER TABLE `hscale`.`operations` ADD COLUMN IF NOT EXISTS heartbeat TIMESTAMP(6) NULL DEFAULT NULL, \
       ADD COLUMN IF NOT EXISTS epoch BIGINT UNSIGNED NOT NULL DEFAULT 0, \
       ADD COLUMN IF NOT EXISTS fence TEXT NULL",
    // A partition change's clean-up (capture triggers, changelogs, retired
    // tables) is still owed: 1 from its cutover until its owner, or a
    // take-over after the owner died (`admin/change/takeover.rs::clean_after`),
    // has cleaned up.
    "ALTER TABLE `hscale`.`operations` ADD COLUMN IF NOT EXISTS cleanup_pending TINYINT UNSIGNED NOT NULL DEFAULT 0, \
       ADD INDEX IF NOT EXISTS owed (cleanup_pending, state)",
    // Sequences (`crate::seq`): the AUTO_INCREMENT column a table's
    // sequence serves, and the sequence's generation (the SETUP_TABLE's
    // operation id); NULL / 0: no sequence.
    "ALTER TABLE `hscale`.`partitioned_tables` ADD COLUMN IF NOT EXISTS auto_column VARCHAR(64) NULL, \
       ADD COLUMN IF NOT EXISTS sequence_generation BIGINT UNSIGNED NOT NULL DEFAULT 0",
    // One counter per table with a sequence: the next id no proxy holds.
    // Proxies reserve blocks with `next_id = LAST_INSERT_ID(next_id + n)`.
    "CREATE TABLE IF NOT EXISTS `hscale`.`sequences` (\
       db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, generation BIGINT UNSIGNED NOT NULL, \
       next_id BIGINT UNSIGNED NOT NULL, PRIMARY KEY (db, tbl)) ENGINE=InnoDB",
    // How the key column compares (`hscale_route::key_compare`): keys are
    // normalised before hashing. NULL in tables set up before: raw keys.
    "ALTER TABLE `hscale`.`partitioned_tables` ADD COLUMN IF NOT EXISTS key_compare VARCHAR(100) NULL",
    // The dictionary version that made a global table global: its main
    // copy's fence triggers refuse writes planned with an older one
    // (`admin/setup_global_table.rs`). NULL: set up before the triggers.
    "ALTER TABLE `hscale`.`global_tables` ADD COLUMN IF NOT EXISTS since_version BIGINT UNSIGNED NULL",
    // The fleet (`crate::fleet`): one row per running proxy, refreshed by
    // its heartbeat; times are the main backend's clock.
    "CREATE TABLE IF NOT EXISTS `hscale`.`proxies` (\
       id VARCHAR(32) NOT NULL PRIMARY KEY, address VARCHAR(255) NOT NULL, \
       version VARCHAR(64) NOT NULL, pid INT UNSIGNED NOT NULL, \
       dictionary_version BIGINT UNSIGNED NOT NULL, started_at TIMESTAMP(6) NOT NULL, \
       heartbeat TIMESTAMP(6) NOT NULL) ENGINE=InnoDB",
    // Views over partitioned or global tables (`hscale_route::view`): the
    // SELECT with its table names qualified; lists as quoted identifiers.
    "CREATE TABLE IF NOT EXISTS `hscale`.`views` (\
       db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, select_sql MEDIUMTEXT NOT NULL, \
       column_list TEXT NULL, inner_columns TEXT NOT NULL, algorithm VARCHAR(16) NOT NULL, \
       definer VARCHAR(400) NOT NULL, security VARCHAR(16) NOT NULL, check_option VARCHAR(16) NULL, \
       reads_tables TEXT NOT NULL, PRIMARY KEY (db, tbl)) ENGINE=InnoDB",
    // Where a backend's primary is when it is not the config's address: a
    // switchover or failover (`admin/failover.rs`) promoted one of its
    // replicas. Part of the dictionary: written with its version raised,
    // so every proxy moves to the new primary at once.
    "CREATE TABLE IF NOT EXISTS `hscale`.`backend_addresses` (\
       backend VARCHAR(200) NOT NULL PRIMARY KEY, address VARCHAR(255) NOT NULL, \
       changed_at DATETIME(3) NOT NULL, changed_by VARCHAR(200) NOT NULL, \
       reason TEXT NOT NULL) ENGINE=InnoDB",
    // The main backend's row carries an epoch (`backend/addresses.rs`,
    // `locate_main`): raised by every switch of the main backend, so a
    // proxy that asks each of its servers where the primary is takes the
    // record with the highest one, and a returning old primary, whose own
    // record is older, is never taken. 0: no switch yet.
    "ALTER TABLE `hscale`.`backend_addresses` ADD COLUMN IF NOT EXISTS epoch BIGINT UNSIGNED NOT NULL DEFAULT 0",
    // The switchovers' journal (`admin/switch_journal.rs`): a backend's
    // last switch, `switching` until it ends `done` or `undone`, so a
    // switch whose proxy died half-way is finished or undone by another.
    "CREATE TABLE IF NOT EXISTS `hscale`.`switches` (\
       backend VARCHAR(200) NOT NULL PRIMARY KEY, from_address VARCHAR(255) NOT NULL, \
       to_address VARCHAR(255) NOT NULL, position TEXT NOT NULL, state VARCHAR(16) NOT NULL, \
       owner VARCHAR(200) NOT NULL, started_at DATETIME(3) NOT NULL, ended_at DATETIME(3) NULL, \
       was_read_only TINYINT UNSIGNED NOT NULL DEFAULT 0) ENGINE=InnoDB",
    // Global unique indexes (`hscale_route::dictionary::Lookup`,
    // docs/src/unique-keys.md): the UNIQUE key `key_name` on `key_column`
    // of db.tbl, kept in the partitioned table db.lookup_table.
    "CREATE TABLE IF NOT EXISTS `hscale`.`unique_lookups` (\
       db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, key_name VARCHAR(64) NOT NULL, \
       key_column VARCHAR(64) NOT NULL, lookup_table VARCHAR(64) NOT NULL, \
       PRIMARY KEY (db, tbl, key_name)) ENGINE=InnoDB",
];

/// Operations in their cutover now, described for an error message: a
/// statement that ran into a renamed table waits for them.
pub async fn cutovers(conn: &mut BackendConn) -> Result<Vec<String>, ProxyError> {
    let sql = "SELECT CONCAT('operation ', id, ' (', command, ')') FROM `hscale`.`operations` WHERE active IS NOT NULL AND state = 'cutover'";
    let r = conn
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(conn, sql, e))?;
    Ok(r.strings()
        .into_iter()
        .filter_map(|r| r[0].clone())
        .collect())
}

/// The backends whose primary is not the config's address, and where it is.
pub async fn addresses(conn: &mut BackendConn) -> Result<Vec<BackendAddress>, ProxyError> {
    let sql = "SELECT backend, address FROM `hscale`.`backend_addresses`";
    let r = conn
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(conn, sql, e))?;
    Ok(r.strings()
        .into_iter()
        .filter_map(|r| Some((r.first()?.clone()?, r.get(1)?.clone()?)))
        .collect())
}

/// Name `address` as `backend`'s primary (inside [`commit_change`]), with
/// `epoch` (the main backend's; 0 for the others).
pub fn set_address_sql(backend: &str, address: &str, by: &str, reason: &str, epoch: u64) -> String {
    format!(
        "REPLACE INTO `hscale`.`backend_addresses` (backend, address, changed_at, changed_by, reason, epoch) VALUES ({}, {}, NOW(3), {}, {}, {epoch})",
        quote_str(backend),
        quote_str(address),
        quote_str(by),
        quote_str(reason)
    )
}

/// Create the dictionary's tables where missing (once per process).
///
/// An `ALTER TABLE ... ADD COLUMN IF NOT EXISTS` whose columns all exist is
/// not sent: a proxy starting while others write must not run DDL on the
/// dictionary's tables, which the global tables' fence triggers read.
pub async fn ensure_schema(conn: &mut BackendConn) -> Result<(), ProxyError> {
    let have = conn
        .query_rows(
            "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = 'hscale'",
        )
        .await?
        .map_err(|e| server_error(conn, "reading the dictionary's columns", e))?;
    let have: std::collections::HashSet<(String, String)> = have
        .strings()
        .into_iter()
        .map(|r| {
            let f = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            (f(0).to_ascii_lowercase(), f(1).to_ascii_lowercase())
        })
        .collect();
    let schema: Vec<String> = SCHEMA
        .iter()
        .filter(|s| !adds_only_existing_columns(s, &have))
        .map(|s| s.to_string())
        .collect();
    exec(conn, &schema).await
}

/// `ALTER TABLE `hscale`.`t` ADD COLUMN IF NOT EXISTS c ...[, ADD COLUMN IF
/// NOT EXISTS d ...]` whose every column is in `have`.
fn adds_only_existing_columns(
    sql: &str,
    have: &std::collections::HashSet<(String, String)>,
) -> bool {
    const ADD: &str = "ADD COLUMN IF NOT EXISTS ";
    let Some(rest) = sql.strip_prefix("ALTER TABLE `hscale`.`") else {
        return false;
    };
    let Some((table, _)) = rest.split_once('`') else {
        return false;
    };
    let columns: Vec<&str> = sql
        .match_indices(ADD)
        .filter_map(|(at, _)| sql[at + ADD.len()..].split_whitespace().next())
        .collect();
    !columns.is_empty()
        && columns
            .iter()
            .all(|c| have.contains(&(table.to_ascii_lowercase(), c.to_ascii_lowercase())))
}

/// Commit a change of the dictionary: `statements` and the version raised
/// from `expected` to `expected + 1`, in one transaction on the main
/// backend. Fails, changing nothing, when another change committed first.
/// Returns the new version.
pub async fn commit_change(
    conn: &mut BackendConn,
    expected: u64,
    statements: &[String],
) -> Result<u64, ProxyError> {
    commit_change_inner(conn, expected, None, statements).await
}

/// [`commit_change`], committing only if `guard` (an UPDATE, run first in
/// the transaction) changes exactly one row.
pub async fn commit_change_guarded(
    conn: &mut BackendConn,
    expected: u64,
    guard: &str,
    statements: &[String],
) -> Result<u64, ProxyError> {
    commit_change_inner(conn, expected, Some(guard), statements).await
}

async fn commit_change_inner(
    conn: &mut BackendConn,
    expected: u64,
    guard: Option<&str>,
    statements: &[String],
) -> Result<u64, ProxyError> {
    exec(conn, &["START TRANSACTION".to_string()]).await?;
    let cas = format!(
        "UPDATE `hscale`.`dictionary_version` SET version = version + 1 WHERE id = 1 AND version = {expected}"
    );
    let ok = match conn.command(&BackendConn::payload_for_query(&cas)).await? {
        Ok(ok) => ok,
        Err(e) => {
            conn.is_broken = true;
            return Err(server_error(conn, &cas, e));
        }
    };
    if ok.affected_rows != 1 {
        conn.is_broken = true;
        return Err(ProxyError::DictionaryMoved);
    }
    if let Some(guard) = guard {
        match conn.command(&BackendConn::payload_for_query(guard)).await? {
            Ok(ok) if ok.affected_rows == 1 => {}
            Ok(_) => {
                conn.is_broken = true;
                return Err(ProxyError::Refused(
                    "this partition change was rolled back by another proxy (its owner looked gone); nothing was committed".into(),
                ));
            }
            Err(e) => {
                conn.is_broken = true;
                return Err(server_error(conn, guard, e));
            }
        }
    }
    let mut all = statements.to_vec();
    all.push("COMMIT".to_string());
    exec(conn, &all).await?;
    Ok(expected + 1)
}

/// Run statements on `conn`, failing on the first server error.
pub async fn exec(conn: &mut BackendConn, statements: &[String]) -> Result<(), ProxyError> {
    conn.ensure_utf8().await?;
    for sql in statements {
        if let Err(e) = conn.command(&BackendConn::payload_for_query(sql)).await? {
            // It may be inside a transaction now: never reuse it.
            conn.is_broken = true;
            return Err(server_error(conn, sql, e));
        }
    }
    Ok(())
}

/// Read the dictionary, in one consistent snapshot.
pub async fn load(conn: &mut BackendConn, backends: &[&str]) -> Result<Dictionary, ProxyError> {
    load_with_cutovers(conn, backends).await.map(|(d, _, _)| d)
}

/// A backend's primary as the dictionary names it: (backend, address).
pub type BackendAddress = (String, String);

/// Read the dictionary, the operations in their cutover and the backends'
/// addresses, in one consistent snapshot: a change that committed in
/// between shows as its new version, never as neither.
pub async fn load_with_cutovers(
    conn: &mut BackendConn,
    backends: &[&str],
) -> Result<(Dictionary, Vec<String>, Vec<BackendAddress>), ProxyError> {
    exec(
        conn,
        &[
            "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ".to_string(),
            "START TRANSACTION WITH CONSISTENT SNAPSHOT".to_string(),
        ],
    )
    .await?;
    let d = async {
        let d = load_in_snapshot(conn, backends).await?;
        let c = cutovers(conn).await?;
        let a = addresses(conn).await?;
        Ok((d, c, a))
    }
    .await;
    // Never reuse a connection whose snapshot may still be open.
    if d.is_err() || exec(conn, &["COMMIT".to_string()]).await.is_err() {
        conn.is_broken = true;
    }
    d
}

async fn load_in_snapshot(
    conn: &mut BackendConn,
    backends: &[&str],
) -> Result<Dictionary, ProxyError> {
    let backend_index = |name: &str| {
        backends
            .iter()
            .position(|b| *b == name)
            .map(BackendId::new)
            .ok_or_else(|| {
                ProxyError::Wrong(format!(
                    "the dictionary names backend {name:?}, which is not in the config"
                ))
            })
    };
    let mut d = Dictionary::default();
    let version = conn
        .query_rows("SELECT version FROM `hscale`.`dictionary_version` WHERE id = 1")
        .await?
        .map_err(|e| server_error(conn, "reading the dictionary", e))?;
    d.stored_version = version
        .strings()
        .first()
        .and_then(|r| r[0].as_deref().and_then(|v| v.parse().ok()))
        .unwrap_or(0);
    let tables = conn
        .query_rows("SELECT db, tbl, key_column, hashing_function, default_table, default_backend, key_type, auto_partition, auto_column, sequence_generation, key_compare FROM `hscale`.`partitioned_tables`")
        .await?
        .map_err(|e| server_error(conn, "reading the dictionary", e))?;
    for r in tables.strings() {
        let f = |i: usize| r[i].clone().unwrap_or_default();
        let function =
            HashingFunction::parse(&f(3)).map_err(|e| ProxyError::Wrong(e.to_string()))?;
        let name = TableName::new(&f(0), &f(1));
        d.setup_table(name.clone(), &f(2), &f(4), backend_index(&f(5))?, function)
            .map_err(|e| ProxyError::Wrong(e.to_string()))?;
        d.set_key_type(&name, &f(6));
        if let Some(c) = r[10].as_deref() {
            let compare = KeyCompare::parse(c).ok_or_else(|| {
                ProxyError::Wrong(format!(
                    "the dictionary names an unknown key comparison {c:?} for {name}"
                ))
            })?;
            d.set_key_compare(&name, Some(compare));
        }
        if let Some(p) = r[7].as_deref().and_then(Placement::parse) {
            d.set_auto(&name, Some(p))
                .map_err(|e| ProxyError::Wrong(e.to_string()))?;
        }
        if let Some(column) = r[8].as_deref() {
            let generation = r[9].as_deref().and_then(|g| g.parse().ok()).unwrap_or(0);
            d.set_auto_column(&name, Some(column), generation);
        }
    }
    let parts = conn
        .query_rows("SELECT db, tbl, partition_value, partition_name, backend, IFNULL(physical_table, CONCAT(tbl, '_', partition_name)) FROM `hscale`.`partitions` ORDER BY db, tbl, partition_name, partition_value")
        .await?
        .map_err(|e| server_error(conn, "reading the dictionary", e))?;
    for r in parts.strings() {
        let f = |i: usize| r[i].clone().unwrap_or_default();
        let name = TableName::new(&f(0), &f(1));
        let backend = backend_index(&f(4))?;
        d.add_partition(&name, &f(3), &f(2), backend)
            .map_err(|e| ProxyError::Wrong(e.to_string()))?;
        d.move_partition(&name, &f(3), backend, &f(5))
            .map_err(|e| ProxyError::Wrong(e.to_string()))?;
    }
    load_lookups(conn, &mut d).await?;
    let globals = conn
        .query_rows("SELECT db, tbl FROM `hscale`.`global_tables`")
        .await?
        .map_err(|e| server_error(conn, "reading the dictionary", e))?;
    for r in globals.strings() {
        let f = |i: usize| r[i].clone().unwrap_or_default();
        d.add_global(TableName::new(&f(0), &f(1)))
            .map_err(|e| ProxyError::Wrong(e.to_string()))?;
    }
    load_cache_rules(conn, &mut d).await?;
    load_views(conn, &mut d).await?;
    Ok(d)
}

/// The dictionary's global unique indexes (`hscale.unique_lookups`).
async fn load_lookups(conn: &mut BackendConn, d: &mut Dictionary) -> Result<(), ProxyError> {
    // Global unique indexes: a table created by `ensure_schema`, absent
    // from a dictionary no proxy of this version wrote yet.
    match conn
        .query_rows("SELECT db, tbl, key_name, key_column, lookup_table FROM `hscale`.`unique_lookups` ORDER BY db, tbl, key_name")
        .await?
    {
        Ok(rows) => {
            let mut by_table: std::collections::BTreeMap<TableName, Vec<Lookup>> =
                std::collections::BTreeMap::new();
            for r in rows.strings() {
                let f = |i: usize| r[i].clone().unwrap_or_default();
                let name = TableName::new(&f(0), &f(1));
                by_table.entry(name).or_default().push(Lookup {
                    key: f(2),
                    column: f(3),
                    table: TableName::new(&f(0), &f(4)),
                });
            }
            for (name, lookups) in by_table {
                d.set_lookups(&name, lookups);
            }
        }
        Err(e) if e.code == 1146 => {}
        Err(e) => return Err(server_error(conn, "reading the dictionary", e)),
    }
    Ok(())
}

/// The result cache's rules (`hscale.cached_tables`, `cached_statements`).
async fn load_cache_rules(conn: &mut BackendConn, d: &mut Dictionary) -> Result<(), ProxyError> {
    use hscale_route::dictionary::CacheRule;
    // The result cache's rules: a table created by the first
    // CACHE_TABLE (`admin/cache.rs`), so none before.
    let rules = conn
        .query_rows("SELECT db, tbl, mode, ttl_ms FROM `hscale`.`cached_tables`")
        .await?;
    match rules {
        Ok(rules) => {
            for r in rules.strings() {
                let f = |i: usize| r[i].clone().unwrap_or_default();
                if let Some(rule) = CacheRule::parse(&f(2), f(3).parse().unwrap_or(0)) {
                    d.set_cache_rule(TableName::new(&f(0), &f(1)), Some(rule));
                }
            }
        }
        // ER_NO_SUCH_TABLE: nothing was ever cached.
        Err(e) if e.code == 1146 => {}
        Err(e) => return Err(server_error(conn, "reading the dictionary", e)),
    }
    match conn
        .query_rows("SELECT statement, ttl_ms FROM `hscale`.`cached_statements`")
        .await?
    {
        Ok(rules) => {
            for r in rules.strings() {
                let statement = r[0].clone().unwrap_or_default();
                let ttl = r[1].as_deref().and_then(|v| v.parse().ok()).unwrap_or(0);
                // `ttl_ms` 0 is EXACT (`versions::STATEMENTS`).
                let rule = match ttl {
                    0 => CacheRule::Exact,
                    ms => CacheRule::Ttl(ms),
                };
                if let Some(fp) = hscale_sql::analyze(&statement).fingerprint {
                    d.set_statement_rule(fp.hash, &statement, Some(rule));
                }
            }
        }
        Err(e) if e.code == 1146 => {}
        Err(e) => return Err(server_error(conn, "reading the dictionary", e)),
    }
    Ok(())
}

/// The views hscale keeps (`hscale.views`).
async fn load_views(conn: &mut BackendConn, d: &mut Dictionary) -> Result<(), ProxyError> {
    let views = conn
        .query_rows("SELECT db, tbl, select_sql, column_list, inner_columns, algorithm, definer, security, check_option, reads_tables FROM `hscale`.`views`")
        .await?
        .map_err(|e| server_error(conn, "reading the dictionary", e))?;
    for r in views.strings() {
        let f = |i: usize| r[i].clone().unwrap_or_default();
        d.put_view(View {
            name: TableName::new(&f(0), &f(1)),
            select: f(2),
            columns: r[3].as_deref().map(view::decode_names),
            inner: view::decode_names(&f(4)),
            algorithm: f(5),
            definer: f(6),
            security: f(7),
            check_option: r[8].clone(),
            reads: view::decode_tables(&f(9)),
        });
    }
    Ok(())
}

/// Store `v`, replacing the view of its name.
pub fn put_view_sql(v: &View) -> Vec<String> {
    let opt = |s: Option<String>| s.map_or("NULL".to_string(), |s| quote_str(&s));
    vec![
        delete_view_sql(&v.name),
        format!(
            "INSERT INTO {} (db, tbl, select_sql, column_list, inner_columns, algorithm, definer, security, check_option, reads_tables) VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {})",
            qualified("hscale", "views"),
            quote_str(&v.name.db),
            quote_str(&v.name.table),
            quote_str(&v.select),
            opt(v.columns.as_deref().map(view::encode_names)),
            quote_str(&view::encode_names(&v.inner)),
            quote_str(&v.algorithm),
            quote_str(&v.definer),
            quote_str(&v.security),
            opt(v.check_option.clone()),
            quote_str(&view::encode_tables(&v.reads)),
        ),
    ]
}

pub fn delete_view_sql(name: &TableName) -> String {
    format!(
        "DELETE FROM {} WHERE db = {} AND tbl = {}",
        qualified("hscale", "views"),
        quote_str(&name.db),
        quote_str(&name.table)
    )
}

pub fn insert_global_sql(name: &TableName) -> String {
    format!(
        "INSERT INTO {} VALUES ({}, {})",
        qualified("hscale", "global_tables"),
        quote_str(&name.db),
        quote_str(&name.table)
    )
}

pub fn delete_global_sql(name: &TableName) -> String {
    format!(
        "DELETE FROM {} WHERE db = {} AND tbl = {}",
        qualified("hscale", "global_tables"),
        quote_str(&name.db),
        quote_str(&name.table)
    )
}

/// A table's dictionary row, with the key column's type and how it
/// compares; `sequence`: the AUTO_INCREMENT column its
/// sequence serves and the sequence's generation.
pub fn insert_table_sql(
    name: &TableName,
    column: &str,
    function: &HashingFunction,
    default_table: &str,
    backend: &str,
    (key_type, key_compare): (&str, Option<&KeyCompare>),
    sequence: Option<(&str, u64)>,
) -> String {
    format!(
        "INSERT INTO {} (db, tbl, key_column, hashing_function, default_table, default_backend, key_type, key_compare, auto_column, sequence_generation) VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {})",
        qualified("hscale", "partitioned_tables"),
        quote_str(&name.db),
        quote_str(&name.table),
        quote_str(column),
        quote_str(&function.to_string()),
        quote_str(default_table),
        quote_str(backend),
        quote_str(key_type),
        key_compare.map_or("NULL".to_string(), |c| quote_str(&c.to_string())),
        sequence.map_or("NULL".to_string(), |(c, _)| quote_str(c)),
        sequence.map_or(0, |(_, g)| g)
    )
}

/// A global unique index's dictionary row (`Lookup`).
pub fn insert_lookup_sql(name: &TableName, lookup: &Lookup) -> String {
    format!(
        "INSERT INTO {} (db, tbl, key_name, key_column, lookup_table) VALUES ({}, {}, {}, {}, {})",
        qualified("hscale", "unique_lookups"),
        quote_str(&name.db),
        quote_str(&name.table),
        quote_str(&lookup.key),
        quote_str(&lookup.column),
        quote_str(&lookup.table.table)
    )
}

/// Start the sequence of `name` (generation `generation`) above every id
/// `column` holds in `db`.`physical` and above that table's own
/// AUTO_INCREMENT counter. Run inside the dictionary's commit, after the
/// table was renamed (no write reaches it any more): no id slips in
/// between the read and the counter.
pub fn start_sequence_sql(
    name: &TableName,
    generation: u64,
    column: &str,
    physical: &str,
) -> String {
    format!(
        "INSERT INTO {seq} (db, tbl, generation, next_id) \
         SELECT {db}, {tbl}, {generation}, GREATEST(1, IFNULL(MAX({col}), 0) + 1, \
           IFNULL((SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = {db} AND TABLE_NAME = {phys}), 1)) \
         FROM {table} \
         ON DUPLICATE KEY UPDATE generation = VALUES(generation), next_id = VALUES(next_id)",
        seq = qualified("hscale", "sequences"),
        db = quote_str(&name.db),
        tbl = quote_str(&name.table),
        col = super::quote_ident(column),
        phys = quote_str(physical),
        table = qualified(&name.db, physical),
    )
}

pub fn insert_partition_sql(
    name: &TableName,
    value: &str,
    partition: &str,
    backend: &str,
    physical: &str,
) -> String {
    format!(
        "INSERT INTO {} (db, tbl, partition_value, partition_name, backend, physical_table) VALUES ({}, {}, {}, {}, {}, {})",
        qualified("hscale", "partitions"),
        quote_str(&name.db),
        quote_str(&name.table),
        quote_str(value),
        quote_str(partition),
        quote_str(backend),
        quote_str(physical)
    )
}

/// A partition's new home (every value row of it).
pub fn move_partition_sql(
    name: &TableName,
    partition: &str,
    backend: &str,
    physical: &str,
) -> String {
    format!(
        "UPDATE {} SET backend = {}, physical_table = {} WHERE db = {} AND tbl = {} AND partition_name = {}",
        qualified("hscale", "partitions"),
        quote_str(backend),
        quote_str(physical),
        quote_str(&name.db),
        quote_str(&name.table),
        quote_str(partition)
    )
}

/// The default partition's new physical table.
pub fn set_default_table_sql(name: &TableName, physical: &str) -> String {
    format!(
        "UPDATE {} SET default_table = {} WHERE db = {} AND tbl = {}",
        qualified("hscale", "partitioned_tables"),
        quote_str(physical),
        quote_str(&name.db),
        quote_str(&name.table)
    )
}

/// Remove a table and its partitions from the dictionary.
pub fn delete_table_sql(name: &TableName) -> Vec<String> {
    [
        "partitions",
        "partitioned_tables",
        "sequences",
        "unique_lookups",
    ]
    .iter()
    .map(|t| {
        format!(
            "DELETE FROM {} WHERE db = {} AND tbl = {}",
            qualified("hscale", t),
            quote_str(&name.db),
            quote_str(&name.table)
        )
    })
    .collect()
}

/// Rename a table in the dictionary (inside [`commit_change`]; the
/// partitions' physical tables are set with [`move_partition_sql`]).
pub fn rename_table_sql(from: &TableName, to: &TableName, default_table: &str) -> Vec<String> {
    let filter = format!(
        "WHERE db = {} AND tbl = {}",
        quote_str(&from.db),
        quote_str(&from.table)
    );
    vec![
        format!(
            "UPDATE {} SET tbl = {}, default_table = {} {filter}",
            qualified("hscale", "partitioned_tables"),
            quote_str(&to.table),
            quote_str(default_table)
        ),
        format!(
            "UPDATE {} SET tbl = {} {filter}",
            qualified("hscale", "partitions"),
            quote_str(&to.table)
        ),
        // Its global unique indexes follow it (their lookup tables keep
        // their names).
        format!(
            "UPDATE {} SET tbl = {} {filter}",
            qualified("hscale", "unique_lookups"),
            quote_str(&to.table)
        ),
        // The sequence follows the table (with its generation, so blocks
        // proxies reserved under the old name stay valid).
        format!(
            "DELETE FROM {} WHERE db = {} AND tbl = {}",
            qualified("hscale", "sequences"),
            quote_str(&to.db),
            quote_str(&to.table)
        ),
        format!(
            "UPDATE {} SET tbl = {} {filter}",
            qualified("hscale", "sequences"),
            quote_str(&to.table)
        ),
    ]
}

pub fn delete_partition_sql(name: &TableName, partition: &str) -> String {
    format!(
        "DELETE FROM {} WHERE db = {} AND tbl = {} AND partition_name = {}",
        qualified("hscale", "partitions"),
        quote_str(&name.db),
        quote_str(&name.table),
        quote_str(partition)
    )
}

#[cfg(test)]
mod schema_tests {
    use super::*;

    #[test]
    fn alters_of_existing_columns_are_skipped() {
        let have: std::collections::HashSet<(String, String)> = [
            ("global_tables", "since_version"),
            ("operations", "ranges_verified"),
        ]
        .iter()
        .map(|(t, c)| (t.to_string(), c.to_string()))
        .collect();
        let global = SCHEMA
            .iter()
            .find(|s| s.contains("`global_tables` ADD COLUMN"))
            .unwrap();
        assert!(adds_only_existing_columns(global, &have));
        // Several columns: skipped only when every one exists.
        let ops = SCHEMA
            .iter()
            .find(|s| s.contains("ADD COLUMN IF NOT EXISTS ranges_verified"))
            .unwrap();
        assert!(!adds_only_existing_columns(ops, &have));
        assert!(!adds_only_existing_columns(SCHEMA[0], &have));
        assert!(!adds_only_existing_columns(global, &Default::default()));
    }
}
