//! The result cache's version rows and triggers on a backend
//! (`exec/cache.rs` reads them, `admin/cache.rs` puts them in place and
//! removes them): `hscale.table_versions` holds, per physical table and
//! slot, a counter that AFTER INSERT, UPDATE and DELETE triggers on the
//! table raise in the writer's own transaction. A writer bumps slot
//! `CONNECTION_ID() % SLOTS`, so concurrent writers of one table rarely
//! wait on one row; a reader sums the slots.

use super::{qualified, quote_ident, quote_str, store};
use crate::backend::BackendConn;
use crate::error::ProxyError;

/// Version slots per table.
pub const SLOTS: u32 = 32;

const VERSIONS: &str = "CREATE TABLE IF NOT EXISTS `hscale`.`table_versions` (\
    db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, slot SMALLINT UNSIGNED NOT NULL, \
    version BIGINT UNSIGNED NOT NULL, PRIMARY KEY (db, tbl, slot)) ENGINE=InnoDB";

/// The dictionary's table of rules (created on first use, so a dictionary
/// an older hscale reads is unchanged until a table is cached).
pub const RULES: &str = "CREATE TABLE IF NOT EXISTS `hscale`.`cached_tables` (\
    db VARCHAR(64) NOT NULL, tbl VARCHAR(64) NOT NULL, mode VARCHAR(8) NOT NULL, \
    ttl_ms BIGINT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (db, tbl)) ENGINE=InnoDB";

/// The dictionary's table of statements cached for a TTL, by the
/// statement given (its fingerprint is computed again when read).
pub const STATEMENTS: &str = "CREATE TABLE IF NOT EXISTS `hscale`.`cached_statements` (\
    digest BIGINT UNSIGNED NOT NULL PRIMARY KEY, statement MEDIUMTEXT NOT NULL, \
    ttl_ms BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB";

const EVENTS: [(&str, &str); 3] = [("i", "INSERT"), ("u", "UPDATE"), ("d", "DELETE")];

/// The name of `table`'s version trigger for `event` (in its database).
fn trigger_name(table: &str, event: &str) -> String {
    let name = format!("hscale_v{event}_{table}");
    if name.len() <= 64 {
        return name;
    }
    let h = xxhash_rust::xxh3::xxh3_64(table.as_bytes());
    format!("hscale_v{event}_{h:016x}")
}

/// Whether `db`.`table` has its three version triggers (read from
/// information_schema, which takes no lock a writer waits for).
async fn is_armed(conn: &mut BackendConn, db: &str, table: &str) -> Result<bool, ProxyError> {
    let names: Vec<String> = EVENTS
        .iter()
        .map(|(e, _)| quote_str(&trigger_name(table, e)))
        .collect();
    let sql = format!(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = {} AND EVENT_OBJECT_TABLE = {} AND TRIGGER_NAME IN ({})",
        quote_str(db),
        quote_str(table),
        names.join(", ")
    );
    let rows = conn
        .query_rows(&sql)
        .await?
        .map_err(|e| store::server_error(conn, &sql, e))?
        .strings();
    Ok(rows.first().and_then(|r| r[0].as_deref()) == Some("3"))
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
    if is_armed(conn, db, table).await? {
        return Ok(());
    }
    let prefix = lock_wait_s.map_or(String::new(), |s| {
        format!("SET STATEMENT lock_wait_timeout = {s} FOR ")
    });
    let mut sql = vec![
        "CREATE DATABASE IF NOT EXISTS `hscale`".to_string(),
        VERSIONS.to_string(),
    ];
    for (e, event) in EVENTS {
        sql.push(format!(
            "{prefix}CREATE TRIGGER IF NOT EXISTS {}.{} AFTER {event} ON {} FOR EACH ROW \
             INSERT INTO `hscale`.`table_versions` VALUES ({}, {}, CONNECTION_ID() % {SLOTS}, 1) \
             ON DUPLICATE KEY UPDATE version = version + 1",
            quote_ident(db),
            quote_ident(&trigger_name(table, e)),
            qualified(db, table),
            quote_str(db),
            quote_str(table),
        ));
    }
    store::exec(conn, &sql).await
}

/// Drop `db`.`table`'s version triggers and its version rows.
pub async fn disarm(conn: &mut BackendConn, db: &str, table: &str) -> Result<(), ProxyError> {
    let mut sql: Vec<String> = EVENTS
        .iter()
        .map(|(e, _)| {
            format!(
                "DROP TRIGGER IF EXISTS {}.{}",
                quote_ident(db),
                quote_ident(&trigger_name(table, e))
            )
        })
        .collect();
    sql.push(VERSIONS.to_string());
    sql.push(format!(
        "DELETE FROM `hscale`.`table_versions` WHERE db = {} AND tbl = {}",
        quote_str(db),
        quote_str(table)
    ));
    store::exec(conn, &sql).await
}
