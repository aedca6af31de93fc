//! Online schema changes: an ALTER TABLE of a partitioned table that the
//! backends would run by copying the table (writes blocked for as long as
//! the copy takes) runs as a partition change instead (`change/`), one
//! move per partition whose destination is a shadow table with the new
//! definition on the partition's own backend (`change/reshape.rs`).
//!
//! ```text
//!  decide: the ALTER on an empty copy of the default partition with
//!  LOCK=NONE ─ accepted ─► in place (`table_ddl.rs`, all or nothing)
//!            └ refused (1845/1846) and accepted without it ─► online:
//!  per partition: shadow `<physical>_g<op>` LIKE it, altered while empty
//!  ─► capture triggers ─► batched INSERT ... SELECT in primary key order
//!  (columns mapped by name) ─► verification ─► replays ─► one cutover
//!  (every partition renamed to its retired name, last replays, the
//!  dictionary names the shadows, one compare-and-set) ─► retired dropped
//! ```
//!
//! Everything before the cutover leaves the partitions untouched, so a
//! failure, a cancel (`HSCALE CANCEL_OPERATION`) or a take-over before it
//! only drops the shadows and the capture; after it a take-over finishes.
//! A row the new definition refuses fails the copy: the client then gets
//! one server's error, found as the in-place path finds it
//! (`all_or_nothing::check` on copies of the partitions).
//!
//! The statement takes this path only when it can: an ALTER TABLE (not
//! CREATE / DROP INDEX), without an explicit `ALGORITHM` or `LOCK` (those
//! run in place, as the client asked one server to), of a table with a
//! primary key whose columns the new definition keeps under their names.

use hscale_route::dictionary::{generation_name, TableName};

use super::all_or_nothing;
use super::change::reshape::Reshape;
use super::change::{self, Move};
use super::table_ddl::DdlSpec;
use super::{backend_names, conn, wrong, AdminOutput};
use crate::backend::BackendConn;
use crate::config::OnlineSchemaChanges;
use crate::error::ProxyError;
use crate::partition::store::{self, exec, server_error};
use crate::partition::{qualified, quote_ident, quote_str};
use crate::runtime::Context;

/// Server errors that say an ALTER cannot run with the LOCK asked:
/// ER_ALTER_OPERATION_NOT_SUPPORTED (1845) and ..._REASON (1846).
const NEEDS_COPY: &[u16] = &[1845, 1846];

/// One column of a table: name, type, collation.
struct Column {
    name: String,
    ty: String,
    collation: String,
}

/// The mapping of the new definition's columns to the old ones', found on
/// the empty copy: what every partition's [`Reshape`] holds.
struct Mapping {
    read: String,
    write: String,
    same_source: String,
    same_shadow: String,
}

/// Whether `spec` (the steps of ALTER `sql` on every partition, the
/// default partition's first) runs online, and how: `None` runs it in
/// place. Asked of the default partition's backend on an empty copy
/// (`<db>.hscale_online_check_<op>`, dropped after).
pub(super) async fn decide(
    ctx: &Context,
    worker: usize,
    op: u64,
    spec: &DdlSpec,
    sql: &str,
) -> Result<Option<Vec<Reshape>>, ProxyError> {
    let mode = ctx.config.proxy.online_schema_changes;
    if mode == OnlineSchemaChanges::Off || !is_candidate(sql) {
        return Ok(None);
    }
    let Some(first) = spec.ddl_steps.first() else {
        return Ok(None);
    };
    if spec
        .ddl_steps
        .iter()
        .any(|s| s.op != "run" || !s.sql.contains(&qualified(&s.db, &s.table)) || s.db != first.db)
    {
        return Ok(None);
    }
    let b = ctx
        .backend_named(&first.backend)
        .ok_or_else(|| wrong(format!("backend {:?} is not in the config", first.backend)))?;
    let mut c = conn(ctx, worker, b).await?;
    c.is_broken = true;
    let db = &first.db;
    let check = format!("hscale_online_check_{op}");
    let check_q = qualified(db, &check);
    exec(
        &mut c,
        &[
            format!("DROP TABLE IF EXISTS {check_q}"),
            format!(
                "CREATE TABLE {check_q} LIKE {}",
                qualified(db, &first.table)
            ),
        ],
    )
    .await?;
    let decided = async {
        let on_check = first
            .sql
            .replacen(&qualified(db, &first.table), &check_q, 1);
        if mode == OnlineSchemaChanges::Auto {
            let without_copy = format!("{on_check}, LOCK=NONE");
            match c
                .command(&BackendConn::payload_for_query(&without_copy))
                .await?
            {
                Ok(_) => return Ok(None),
                Err(e) if NEEDS_COPY.contains(&e.code) => {}
                // A statement the server refuses: the in-place path
                // answers its error.
                Err(_) => return Ok(None),
            }
        }
        if c.command(&BackendConn::payload_for_query(&on_check))
            .await?
            .is_err()
        {
            return Ok(None);
        }
        mapping(&mut c, db, &first.table, &check, sql).await
    };
    let mapped = decided.await;
    exec(&mut c, &[format!("DROP TABLE IF EXISTS {check_q}")]).await?;
    let Some(mapped) = mapped? else {
        return Ok(None);
    };
    Ok(Some(
        spec.ddl_steps
            .iter()
            .map(|s| Reshape {
                alter: s.sql.replacen(
                    &qualified(&s.db, &s.table),
                    &qualified(&s.db, &generation_name(&s.table, op)),
                    1,
                ),
                read: mapped.read.clone(),
                write: mapped.write.clone(),
                same_source: mapped.same_source.clone(),
                same_shadow: mapped.same_shadow.clone(),
            })
            .collect(),
    ))
}

/// Whether `sql` may run online: an ALTER TABLE without ALGORITHM or LOCK
/// (judged by its words: a word inside a name or string only keeps it in
/// place).
fn is_candidate(sql: &str) -> bool {
    let upper = sql.trim_start().to_ascii_uppercase();
    let words: Vec<&str> = upper
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    upper.starts_with("ALTER")
        && !words
            .iter()
            .any(|w| ["ALGORITHM", "LOCK", "PARTITION", "PARTITIONING"].contains(w))
}

/// The columns of `db`.`table` a row stores (not generated ones), in order.
async fn columns(c: &mut BackendConn, db: &str, table: &str) -> Result<Vec<Column>, ProxyError> {
    let sql = format!(
        "SELECT COLUMN_NAME, COLUMN_TYPE, IFNULL(COLLATION_NAME, '') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND IS_GENERATED = 'NEVER' ORDER BY ORDINAL_POSITION",
        quote_str(db),
        quote_str(table)
    );
    let r = c
        .query_rows(&sql)
        .await?
        .map_err(|e| server_error(c, &sql, e))?;
    Ok(r.strings()
        .into_iter()
        .map(|r| Column {
            name: r[0].clone().unwrap_or_default(),
            ty: r[1].clone().unwrap_or_default(),
            collation: r[2].clone().unwrap_or_default(),
        })
        .collect())
}

/// The column mapping from `table` to `check` (altered by `sql`): a new
/// column takes the old one of its name (or the one `sql` renames to it);
/// new columns are left to their defaults, dropped ones not read. `None`
/// when the table cannot change online: no primary key, or a primary key
/// column the new definition drops or renames (the replays find rows by
/// it in the shadow).
async fn mapping(
    c: &mut BackendConn,
    db: &str,
    table: &str,
    check: &str,
    sql: &str,
) -> Result<Option<Mapping>, ProxyError> {
    let pk = change::primary_key(c, db, table).await?;
    let old = columns(c, db, table).await?;
    let new = columns(c, db, check).await?;
    let renames = crate::partition::definition::column_renames(sql);
    let renamed = |name: &str| -> String {
        renames
            .iter()
            .find(|(from, _)| from.eq_ignore_ascii_case(name))
            .map_or_else(|| name.to_string(), |(_, to)| to.clone())
    };
    if pk.is_empty() {
        return Ok(None);
    }
    for (k, _) in &pk {
        let kept = renamed(k).eq_ignore_ascii_case(k)
            && new.iter().any(|n| n.name.eq_ignore_ascii_case(k));
        if !kept {
            return Ok(None);
        }
    }
    let (mut read, mut write, mut same_source, mut same_shadow) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for n in &new {
        let Some(o) = old
            .iter()
            .find(|o| renamed(&o.name).eq_ignore_ascii_case(&n.name))
        else {
            continue;
        };
        read.push(quote_ident(&o.name));
        write.push(quote_ident(&n.name));
        if o.ty.eq_ignore_ascii_case(&n.ty) && o.collation == n.collation {
            same_source.push(quote_ident(&o.name));
            same_shadow.push(quote_ident(&n.name));
        }
    }
    if write.is_empty() {
        return Ok(None);
    }
    Ok(Some(Mapping {
        read: read.join(", "),
        write: write.join(", "),
        same_source: same_source.join(", "),
        same_shadow: same_shadow.join(", "),
    }))
}

/// Run ALTER `spec` of `name` online as operation `op` (whose owner lock
/// the caller holds), with the partitions' `reshapes` from [`decide`].
/// Answers what one server's ALTER answers: the rows copied.
pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    op: u64,
    name: &TableName,
    spec: &DdlSpec,
    reshapes: Vec<Reshape>,
) -> Result<AdminOutput, ProxyError> {
    let d = ctx.partitioning.dictionary();
    let t = super::partitioned(&d, name)?;
    let names = backend_names(ctx);
    // The moves, one per step (the default partition first), chained.
    let mut moves = Vec::with_capacity(spec.ddl_steps.len());
    let mut renames: Vec<(String, Option<String>, hscale_route::BackendId)> = Vec::new();
    for (s, rs) in spec.ddl_steps.iter().zip(reshapes) {
        let b = ctx
            .backend_named(&s.backend)
            .ok_or_else(|| wrong(format!("backend {:?} is not in the config", s.backend)))?;
        let dst = generation_name(&s.table, op);
        let partition = if s.table == t.default_table && b == t.default_backend {
            None
        } else {
            let p = t
                .partitions
                .values()
                .find(|p| p.physical == s.table && p.backend == b)
                .ok_or_else(|| wrong(format!("{name} changed while the statement waited")))?;
            Some(p.name.clone())
        };
        let row = match &partition {
            None => store::set_default_table_sql(name, &dst),
            Some(p) => store::move_partition_sql(name, p, names[b.index()], &dst),
        };
        renames.push((dst.clone(), partition, b));
        moves.push(Move {
            db: s.db.clone(),
            src: (b, s.table.clone()),
            filter: None,
            dst: (b, dst.clone()),
            is_dst_live: false,
            src_after: generation_name(&format!("{}_retired", s.table), op),
            rest: None,
            dst_filter: None,
            companion: None,
            key_column: t.column.clone(),
            dictionary: vec![row],
            reshape: Some(rs),
        });
    }
    drop(d);
    let rows: Vec<String> = moves.iter().flat_map(|m| m.dictionary.clone()).collect();
    let mut chain: Option<Move> = None;
    for mut m in moves.into_iter().rev() {
        m.companion = chain.map(Box::new);
        m.dictionary.clone_from(&rows);
        chain = Some(m);
    }
    let m = chain.ok_or_else(|| wrong(format!("{name} has no partition to change")))?;
    let shadows: Vec<(String, String)> = m
        .with_companion()
        .map(|(mv, _)| (mv.dst.1.clone(), mv.src.1.clone()))
        .collect();
    let done = change::run(ctx, worker, op, &m, |d| {
        for (dst, partition, b) in &renames {
            match partition {
                None => d.set_default_table(name, dst).map_err(wrong)?,
                Some(p) => d.move_partition(name, p, *b, dst).map_err(wrong)?,
            }
        }
        Ok(rows.clone())
    })
    .await;
    match done {
        Ok(report) => Ok(AdminOutput::Altered {
            affected: report.rows,
            info: format!("Records: {}  Duplicates: 0  Warnings: 0", report.rows),
        }),
        Err(e) => Err(refusal(ctx, worker, op, spec, &shadows, e).await),
    }
}

/// The client's error for a failed online change: a row the new
/// definition refuses is answered as one server would (the in-place
/// path's check on copies of the partitions finds it, numbered over the
/// whole table); any other error with the shadows named as the client's
/// table.
async fn refusal(
    ctx: &Context,
    worker: usize,
    op: u64,
    spec: &DdlSpec,
    shadows: &[(String, String)],
    e: ProxyError,
) -> ProxyError {
    let (err, during) = match e {
        ProxyError::Backend { err, during, .. } => (err, during),
        ProxyError::Statement { err } => (err, String::new()),
        other => return other,
    };
    if let Err(found @ ProxyError::Statement { .. }) =
        all_or_nothing::check(ctx, worker, op, spec).await
    {
        return found;
    }
    // The check could not find it (a partition it cannot copy, a row
    // written meanwhile): the copy's own error, its row numbered over the
    // whole table when the copy of a partition (named in `during`) gave it.
    let mut err = err;
    let step = shadows
        .iter()
        .position(|(shadow, _)| during.contains(&format!("`{shadow}`")));
    if let (Some(i), Some(n)) = (step, all_or_nothing::row_of(&err.message)) {
        if let Ok(Some(n)) = all_or_nothing::whole_table_row(ctx, worker, spec, i, n).await {
            err = all_or_nothing::with_row(err, n);
        }
    }
    for (shadow, physical) in shadows {
        err.message = err.message.replace(shadow, physical);
    }
    if let Some(m) = ctx.partitioning.dictionary().user_message(&err.message) {
        err.message = m;
    }
    ProxyError::Statement { err }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_statements_may_run_online() {
        for sql in [
            "ALTER TABLE t MODIFY k BIGINT",
            "alter table t add column c int default 7, modify k varchar(20)",
        ] {
            assert!(is_candidate(sql), "{sql}");
        }
        for sql in [
            "ALTER TABLE t MODIFY k BIGINT, ALGORITHM=COPY",
            "ALTER TABLE t MODIFY k BIGINT, LOCK = SHARED",
            "CREATE INDEX i ON t (a)",
            "DROP INDEX i ON t",
        ] {
            assert!(!is_candidate(sql), "{sql}");
        }
    }
}
