//! A statement on every partition (ALTER TABLE, CREATE / DROP INDEX) that
//! applies to all of them or to none, answering the error one server
//! would (`table_ddl.rs` runs the steps; this file checks before and
//! undoes after).
//!
//! **Before any partition changes** ([`check`]): each partition's
//! definition is saved (`SHOW CREATE TABLE`), and the statement runs on a
//! temporary copy of each partition (`CREATE TEMPORARY TABLE ... LIKE`,
//! on a connection of its own, never pooled again): an empty one for
//! statements that only change the definition, one holding the
//! partition's rows for statements a row can refuse ([`may_fail_on_data`]:
//! column types, UNIQUE and PRIMARY keys, constraints, character sets,
//! engines). Every partition is checked; if any refuses, the client gets
//! the error of the row one server would have refused first (below) and
//! no partition is changed.
//!
//! **If a partition still refuses** (a row written between the check and
//! its ALTER): the partitions already changed are brought back to their
//! saved definitions ([`back_out`]: the ALTER that turns each one's
//! definition now into the saved one, `partition::definition`), then the
//! client gets the server's error. What cannot be brought back (a dropped
//! column's values; a row written meanwhile that the old definition
//! refuses) is said in the error, and `HSCALE SHOW PARTITIONS` shows the
//! partition's definition as differing until an operator repairs it.
//!
//! **The error one server answers**: the client's table name instead of
//! the physical one, and for errors that name a row (`... at row N`) the
//! row's place in the whole table: a server scans an InnoDB table in
//! primary key order, so row N of a partition is the row with N - 1
//! partition rows before it in that order, and the whole table's number
//! counts every partition's rows before it. Of several partitions'
//! refusals, the one of the earliest row is the one a server meets first.
//! Without a primary key (scan order is the order rows were inserted in,
//! which hscale does not know) the partition's own number is kept.

use hscale_route::BackendId;
use hscale_wire::response::ErrPacket;

use super::table_ddl::{DdlSpec, Step};
use super::{conn, wrong};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::partition::definition::Definition;
use crate::partition::store::{exec, server_error};
use crate::partition::{ddl, qualified, quote_ident};
use crate::runtime::Context;

/// Each step's definition before the statement (`None`: a step that is
/// not a statement on a partition).
pub(super) type Saved = Vec<Option<String>>;

/// Words after which a statement may be refused by a row (a type that
/// cannot hold a value, a key that finds a duplicate, a constraint a row
/// breaks, a character set a text has no place in).
const DATA_WORDS: &[&str] = &[
    "MODIFY",
    "CHANGE",
    "UNIQUE",
    "PRIMARY",
    "CHECK",
    "CONSTRAINT",
    "CONVERT",
    "CHARACTER",
    "CHARSET",
    "COLLATE",
    "ENGINE",
    "DROP",
];

/// Whether a row can make `sql` fail, judged by its words (a word inside a
/// name or a string only costs a copy of the rows). Dropping a key or a
/// constraint cannot.
fn may_fail_on_data(sql: &str) -> bool {
    let upper = sql.to_ascii_uppercase();
    let words: Vec<&str> = upper
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let drops_no_column = |i: usize| {
        words.get(i + 1).is_some_and(|n| {
            ["INDEX", "KEY", "PRIMARY", "CONSTRAINT", "CHECK", "FOREIGN"].contains(n)
        })
    };
    words.iter().enumerate().any(|(i, w)| {
        DATA_WORDS.contains(w)
            && !(*w == "DROP" && drops_no_column(i))
            && !(i > 0 && words[i - 1] == "DROP")
    })
}

/// Errors a statement tried on a copy answers as it would on the
/// partition itself: definition errors and the refusals of a row. Any
/// other (something a temporary table cannot do, an ALGORITHM it does
/// not offer) does not decide: the statement runs, and a partition that
/// refuses it has the others brought back ([`back_out`]).
const DECIDING: &[u16] = &[
    1048, 1054, 1060, 1061, 1062, 1063, 1064, 1067, 1068, 1071, 1072, 1073, 1074, 1075, 1089, 1091,
    1101, 1118, 1138, 1149, 1166, 1167, 1170, 1171, 1221, 1264, 1265, 1283, 1292, 1366, 1406, 1553,
    1825, 1828, 1832, 3780, 4025, 4092,
];

/// Whether `sql` can be tried on a copy: ALTER TABLE and CREATE / DROP
/// INDEX, not foreign keys (a temporary table has none).
fn is_checkable(sql: &str) -> bool {
    let upper = sql.trim_start().to_ascii_uppercase();
    (upper.starts_with("ALTER") || upper.starts_with("CREATE") || upper.starts_with("DROP"))
        && !upper.contains("FOREIGN")
        && !upper.contains("REFERENCES")
}

fn backend(ctx: &Context, s: &Step) -> Result<BackendId, ProxyError> {
    ctx.backend_named(&s.backend)
        .ok_or_else(|| wrong(format!("backend {:?} is not in the config", s.backend)))
}

/// A connection that is never pooled again (temporary tables, session
/// settings).
async fn own_conn(ctx: &Context, worker: usize, s: &Step) -> Result<PooledConn, ProxyError> {
    let mut c = conn(ctx, worker, backend(ctx, s)?).await?;
    c.is_broken = true;
    Ok(c)
}

/// Save every partition's definition and try the statement on a copy of
/// each (see the module's text). A refusal is returned as the client's
/// error, nothing changed.
pub(super) async fn check(
    ctx: &Context,
    worker: usize,
    op: u64,
    spec: &DdlSpec,
) -> Result<Saved, ProxyError> {
    let mut saved = Vec::with_capacity(spec.ddl_steps.len());
    let mut refusals: Vec<(usize, ErrPacket)> = Vec::new();
    let copy = format!("hscale_ddl_check_{op}");
    for (i, s) in spec.ddl_steps.iter().enumerate() {
        if s.op != "run" {
            saved.push(None);
            continue;
        }
        let mut c = own_conn(ctx, worker, s).await?;
        saved.push(Some(ddl::show_create(&mut c, &s.db, &s.table).await?));
        let named = qualified(&s.db, &s.table);
        if !is_checkable(&s.sql) || !s.sql.contains(&named) {
            continue;
        }
        let on_copy = s.sql.replacen(&named, &qualified(&s.db, &copy), 1);
        let copy_q = qualified(&s.db, &copy);
        let mut set_up = vec![
            format!("DROP TEMPORARY TABLE IF EXISTS {copy_q}"),
            format!("CREATE TEMPORARY TABLE {copy_q} LIKE {named}"),
        ];
        if may_fail_on_data(&s.sql) {
            let columns = stored_columns(&mut c, &s.db, &s.table).await?;
            set_up
                .push("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')".into());
            set_up.push(format!(
                "INSERT INTO {copy_q} ({columns}) SELECT {columns} FROM {named}"
            ));
        }
        // A copy that cannot be made (a FULLTEXT key, which temporary
        // tables refuse) leaves the partition unchecked.
        if let Err(e) = exec(&mut c, &set_up).await {
            tracing::info!(table = %s.table, error = %e, "schema change not checked on a copy");
            continue;
        }
        match c.command(&BackendConn::payload_for_query(&on_copy)).await? {
            Ok(_) => {}
            Err(mut e) if DECIDING.contains(&e.code) => {
                e.message = e.message.replace(&copy, &s.table);
                refusals.push((i, e));
            }
            Err(e) => {
                tracing::info!(table = %s.table, code = e.code, error = %e.message, "a copy's refusal that does not decide");
            }
        }
        exec(
            &mut c,
            &[format!("DROP TEMPORARY TABLE IF EXISTS {copy_q}")],
        )
        .await?;
    }
    if refusals.is_empty() {
        return Ok(saved);
    }
    Err(ProxyError::Statement {
        err: first_refusal(ctx, worker, spec, refusals).await?,
    })
}

/// The columns a row stores (not generated ones), quoted, in order.
async fn stored_columns(c: &mut BackendConn, db: &str, table: &str) -> Result<String, ProxyError> {
    let sql = hscale_route::router::stored_columns_query(db, table);
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(c, &sql, e))?;
    let names: Vec<String> = r
        .strings()
        .into_iter()
        .filter_map(|r| r[0].clone())
        .map(|n| quote_ident(&n))
        .collect();
    Ok(names.join(", "))
}

/// Of the partitions' refusals, the one a server scanning the whole table
/// meets first, as it would word it.
async fn first_refusal(
    ctx: &Context,
    worker: usize,
    spec: &DdlSpec,
    refusals: Vec<(usize, ErrPacket)>,
) -> Result<ErrPacket, ProxyError> {
    let mut best: Option<(u64, ErrPacket)> = None;
    let mut first = None;
    for (i, e) in refusals {
        let row = match row_of(&e.message) {
            Some(n) => whole_table_row(ctx, worker, spec, i, n).await?,
            None => None,
        };
        match row {
            Some(n) if best.as_ref().is_none_or(|(b, _)| n < *b) => best = Some((n, e)),
            Some(_) => {}
            None => {
                first.get_or_insert(e);
            }
        }
    }
    let err = match (best, first) {
        (Some((n, e)), _) => with_row(e, n),
        (None, Some(e)) => e,
        (None, None) => return Err(wrong("a refusal without an error")),
    };
    Ok(client_error(ctx, err))
}

/// `... at row N`: N.
pub(super) fn row_of(message: &str) -> Option<u64> {
    let (_, n) = message.rsplit_once(" at row ")?;
    n.parse().ok()
}

pub(super) fn with_row(mut e: ErrPacket, n: u64) -> ErrPacket {
    if let Some((head, _)) = e.message.rsplit_once(" at row ") {
        e.message = format!("{head} at row {n}");
    }
    e
}

/// The message with the client's table names (`Dictionary::user_message`).
fn client_error(ctx: &Context, mut e: ErrPacket) -> ErrPacket {
    if let Some(m) = ctx.partitioning.dictionary().user_message(&e.message) {
        e.message = m;
    }
    e
}

/// Row `n` of step `i`'s partition, numbered over the whole table in
/// primary key order; `None` without a primary key.
pub(super) async fn whole_table_row(
    ctx: &Context,
    worker: usize,
    spec: &DdlSpec,
    i: usize,
    n: u64,
) -> Result<Option<u64>, ProxyError> {
    let s = &spec.ddl_steps[i];
    let mut c = conn(ctx, worker, backend(ctx, s)?).await?;
    let pk = super::change::primary_key(&mut c, &s.db, &s.table).await?;
    if pk.is_empty() || n == 0 {
        return Ok(None);
    }
    let cols: Vec<String> = pk.iter().map(|(c, _)| quote_ident(c)).collect();
    let cols = cols.join(", ");
    let quoted: Vec<String> = pk
        .iter()
        .map(|(c, _)| format!("QUOTE({})", quote_ident(c)))
        .collect();
    let sql = format!(
        "SELECT CONCAT_WS(', ', {}) FROM {} ORDER BY {cols} LIMIT {}, 1",
        quoted.join(", "),
        qualified(&s.db, &s.table),
        n - 1
    );
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(&c, &sql, e))?;
    let Some(key) = r.strings().first().and_then(|r| r[0].clone()) else {
        return Ok(None);
    };
    let mut before = 0u64;
    for t in spec.ddl_steps.iter().filter(|t| t.op == "run") {
        let mut c = conn(ctx, worker, backend(ctx, t)?).await?;
        let sql = format!(
            "SELECT COUNT(*) FROM {} WHERE ({cols}) < ({key})",
            qualified(&t.db, &t.table)
        );
        let r = c
            .query_rows(&sql)
            .await?
            .map_err(|e| server_error(&c, &sql, e))?;
        before += r
            .strings()
            .first()
            .and_then(|r| r[0].as_deref().and_then(|v| v.parse().ok()))
            .unwrap_or(0);
    }
    Ok(Some(before + 1))
}

/// Step `failed` refused with `err` after steps before it changed their
/// partitions: each of those is brought back to its saved definition, and
/// the error the client gets is returned (one server's, or one naming
/// what could not be brought back).
pub(super) async fn back_out(
    ctx: &Context,
    worker: usize,
    spec: &DdlSpec,
    saved: &[Option<String>],
    failed: usize,
    err: ErrPacket,
) -> ProxyError {
    let mut left = Vec::new();
    for (s, before) in spec.ddl_steps[..failed].iter().zip(saved) {
        let Some(before) = before else { continue };
        if let Err(e) = restore(ctx, worker, s, before).await {
            tracing::error!(table = %s.table, backend = %s.backend, error = %e, "a partition changed by a failed schema change cannot be brought back");
            left.push(format!("{} on {}: {e}", s.table, s.backend));
        }
    }
    let err = match row_of(&err.message) {
        Some(n) => match whole_table_row(ctx, worker, spec, failed, n).await {
            Ok(Some(n)) => with_row(err, n),
            _ => err,
        },
        None => err,
    };
    let err = client_error(ctx, err);
    if left.is_empty() {
        tracing::warn!(error = %err.message, "a schema change failed on a partition; the others were brought back");
        return ProxyError::Statement { err };
    }
    wrong(format!(
        "{} (error {}); the partitions it changed before could not all be brought back: {}. HSCALE SHOW PARTITIONS shows their definitions",
        err.message,
        err.code,
        left.join("; ")
    ))
}

/// Bring step `s`'s partition back to definition `before`.
async fn restore(ctx: &Context, worker: usize, s: &Step, before: &str) -> Result<(), ProxyError> {
    let mut c = own_conn(ctx, worker, s).await?;
    let now = ddl::show_create(&mut c, &s.db, &s.table).await?;
    let parse = |ddl: &str| {
        Definition::parse(ddl).ok_or_else(|| wrong(format!("unreadable definition of {}", s.table)))
    };
    let (now, want) = (parse(&now)?, parse(before)?);
    if now.is_same(&want) {
        return Ok(());
    }
    let renames = crate::partition::definition::column_renames(&s.sql);
    let clauses = now.alter_to(&want, &renames).map_err(wrong)?;
    let sql = format!(
        "ALTER TABLE {} {}",
        qualified(&s.db, &s.table),
        clauses.join(", ")
    );
    exec(&mut c, &[sql]).await?;
    let after = parse(&ddl::show_create(&mut c, &s.db, &s.table).await?)?;
    if !after.is_same(&want) {
        return Err(wrong("its definition still differs after the way back"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_statements_a_row_can_refuse() {
        for sql in [
            "ALTER TABLE t MODIFY k INT UNSIGNED",
            "ALTER TABLE t CHANGE a b INT NOT NULL",
            "CREATE UNIQUE INDEX u ON t (a, b)",
            "ALTER TABLE t DROP COLUMN c",
            "ALTER TABLE t DROP c, ADD KEY (d)",
            "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4",
            "ALTER TABLE t ADD CONSTRAINT c CHECK (k > 0)",
        ] {
            assert!(may_fail_on_data(sql), "{sql}");
        }
        for sql in [
            "ALTER TABLE t ADD COLUMN c INT NOT NULL",
            "CREATE INDEX i ON t (a)",
            "DROP INDEX i ON t",
            "ALTER TABLE t DROP KEY i, DROP CONSTRAINT c, DROP PRIMARY KEY",
            "ALTER TABLE t RENAME COLUMN a TO b",
            "ALTER TABLE t COMMENT = 'x'",
        ] {
            assert!(!may_fail_on_data(sql), "{sql}");
        }
    }
}
