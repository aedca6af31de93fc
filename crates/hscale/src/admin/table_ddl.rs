//! DDL of partitioned tables as operations of the journal: `DROP TABLE`,
//! `RENAME TABLE` (and `ALTER TABLE ... RENAME`), and the statements run on
//! every partition (`ALTER TABLE`, `CREATE` / `DROP INDEX`, `TRUNCATE`),
//! and `DROP TABLE` of a global table (every copy), through any proxy
//! while others write. `DROP DATABASE` drops the database's partitioned
//! and global tables this way first.
//!
//! Each is one change of the table (`change::begin`: the journal's one
//! active change per table, so DDL never runs under a partition move, nor a
//! move under DDL), planned against the dictionary read under the owner
//! lock, recorded in the journal row (`detail`: the steps, one physical
//! table each, and the dictionary rows to commit), then run in the
//! operation's `cutover` state (`altering` for statements on every
//! partition) and committed with the journal's `done` by compare-and-set
//! (which raises the dictionary's version, so plans are made again). Every step can run again: a take-over
//! ([`take_over`]) repeats the steps not recorded done and commits, so a
//! dead or stopped owner's DDL is always finished, never left half-way.
//!
//! **The fence.** A rename gives every physical table a name never used
//! before (`<new name>_..._g<operation>`), and a drop removes them: a proxy
//! holding an older dictionary reaches a missing table (1146), waits while
//! the operation is in its cutover (`partition::refresh::await_newer_dictionary`), and
//! plans again with the new dictionary, where the old name is no
//! partitioned table. So no stale write lands in a table the dictionary
//! does not name. An ALTER keeps the names: statements prepared before it
//! are prepared again by the backends themselves (MariaDB re-prepares a
//! statement whose tables changed).

use hscale_route::dictionary::{generation_name, renamed_default, Dictionary, TableName};
use hscale_route::router::Plan;
use hscale_route::BackendId;

use super::all_or_nothing;
use super::change::{self, register, FIRST_EPOCH};
use super::{backend_names, conn, wrong, AdminOutput};
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::partition::store::{self, server_error};
use crate::partition::{ddl, qualified, quote_str};
use crate::runtime::Context;

/// What another proxy needs to finish a DDL operation; kept in the journal
/// row's `detail` (told from a partition change's spec by `ddl_steps`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct DdlSpec {
    pub(super) ddl_steps: Vec<Step>,
    /// The dictionary rows committed with the journal's `done`.
    pub(super) dictionary: Vec<String>,
}

/// One physical table's part of a DDL operation; each can run again.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Step {
    pub(super) backend: String,
    pub(super) db: String,
    /// `rename` (`table` to `to`), `drop` (`table`) or `run` (`sql`).
    pub(super) op: String,
    pub(super) table: String,
    #[serde(default)]
    pub(super) to: String,
    #[serde(default)]
    pub(super) sql: String,
}

/// Server errors that say a step that runs again was applied already:
/// duplicate column (1060) or key (1061), nothing to drop (1091), unknown
/// column (1054, a column renamed already), multiple primary keys (1068).
const ALREADY_APPLIED: &[u16] = &[1054, 1060, 1061, 1068, 1091];

/// `DROP TABLE T` for a partitioned table: every physical table, then the
/// dictionary entry; the same for the lookup tables of its global unique
/// indexes (docs/src/unique-keys.md).
pub async fn drop_table(
    ctx: &Context,
    worker: usize,
    name: &TableName,
) -> Result<AdminOutput, ProxyError> {
    let command = format!("DROP TABLE {name}");
    run(ctx, worker, name, &command, |d, _| {
        let table = super::partitioned(d, name)?;
        let names = backend_names(ctx);
        let mut steps = Vec::new();
        let mut dictionary = store::delete_table_sql(name);
        let lookups: Vec<_> = table
            .lookups
            .iter()
            .filter_map(|l| d.table(&l.table).cloned())
            .collect();
        for t in std::iter::once(table).chain(lookups) {
            steps.extend(t.all_targets().into_iter().map(|target| Step {
                backend: names[target.backend.index()].to_string(),
                db: t.name.db.clone(),
                op: "drop".into(),
                table: target.physical_table,
                to: String::new(),
                sql: String::new(),
            }));
            if t.name != *name {
                dictionary.extend(store::delete_table_sql(&t.name));
            }
        }
        Ok(DdlSpec {
            ddl_steps: steps,
            dictionary,
        })
    })
    .await
}

/// `DROP TABLE G` for a global table: every copy (the main one first, so
/// reads fail from the start; its fence triggers go with it), then its
/// entry. A proxy that has not heard of the drop writes every copy, meets
/// a missing one, waits while the operation is in its cutover and then
/// fails with 1146, as on a server; a dead owner's drop is finished by a
/// take-over.
pub async fn drop_global(
    ctx: &Context,
    worker: usize,
    name: &TableName,
) -> Result<AdminOutput, ProxyError> {
    let command = format!("DROP TABLE {name}");
    run(ctx, worker, name, &command, |d, _| {
        if !d.is_global(name) {
            return Err(wrong(format!("table {name} is not a global table")));
        }
        let steps = backend_names(ctx)
            .into_iter()
            .map(|b| Step {
                backend: b.to_string(),
                db: name.db.clone(),
                op: "drop".into(),
                table: name.table.clone(),
                to: String::new(),
                sql: String::new(),
            })
            .collect();
        Ok(DdlSpec {
            ddl_steps: steps,
            dictionary: vec![store::delete_global_sql(name)],
        })
    })
    .await
}

/// `RENAME TABLE T TO U`: every physical table gets a name never used
/// before (`U_p` becomes `U_p_g<operation>`; a default table `T_x`
/// becomes `U_x_g<operation>`), then the dictionary follows. The new
/// names are checked free first.
pub async fn rename_table(
    ctx: &Context,
    worker: usize,
    from: &TableName,
    to: &TableName,
) -> Result<AdminOutput, ProxyError> {
    let command = format!("RENAME TABLE {from} TO {to}");
    let _g = ctx.partitioning.admin_lock.lock().await;
    let (op, owner) = match change::start(ctx, worker, from, &command).await? {
        Ok(started) => started,
        Err(done) => return Ok(done),
    };
    let spec = change::recheck(ctx, worker, op, |d| {
        rename_spec(ctx, d, from, to, op).map(Some)
    })
    .await?;
    let Some(spec) = spec else {
        return Ok(AdminOutput::done());
    };
    // The new names must be free (checked under the owner lock).
    let check = async {
        let mut main = conn(ctx, worker, BackendId::MAIN).await?;
        if ddl::table_exists(&mut main, &to.db, &to.table).await? {
            return Err(wrong(format!("table {to} already exists")));
        }
        for s in &spec.ddl_steps {
            let b = backend(ctx, op, &s.backend)?;
            let mut c = conn(ctx, worker, b).await?;
            if ddl::table_exists(&mut c, &s.db, &s.to).await? {
                return Err(wrong(format!(
                    "table {}.{} already exists on backend {}",
                    s.db, s.to, s.backend
                )));
            }
        }
        Ok(())
    };
    if let Err(e) = check.await {
        change::fail(ctx, worker, op, &e).await;
        return Err(e);
    }
    carry_out(ctx, worker, op, owner, spec).await
}

/// The steps and dictionary rows of renaming `from` to `to` as operation
/// `op`.
fn rename_spec(
    ctx: &Context,
    d: &Dictionary,
    from: &TableName,
    to: &TableName,
    op: u64,
) -> Result<DdlSpec, ProxyError> {
    let table = super::partitioned(d, from)?;
    if d.table(to).is_some() || d.is_global(to) {
        return Err(wrong(format!("table {to} already exists")));
    }
    let names = backend_names(ctx);
    let fresh =
        |physical: &str| generation_name(&renamed_default(physical, &from.table, &to.table), op);
    let default = fresh(&table.default_table);
    let mut rows = store::rename_table_sql(from, to, &default);
    let mut steps = vec![Step {
        backend: names[table.default_backend.index()].to_string(),
        db: from.db.clone(),
        op: "rename".into(),
        table: table.default_table.clone(),
        to: default,
        sql: String::new(),
    }];
    for p in table.partitions.values() {
        let physical = fresh(&p.physical);
        rows.push(store::move_partition_sql(
            to,
            &p.name,
            names[p.backend.index()],
            &physical,
        ));
        steps.push(Step {
            backend: names[p.backend.index()].to_string(),
            db: from.db.clone(),
            op: "rename".into(),
            table: p.physical.clone(),
            to: physical,
            sql: String::new(),
        });
    }
    Ok(DdlSpec {
        ddl_steps: steps,
        dictionary: rows,
    })
}

/// DDL on every partition (`Plan::SchemaChange`): `sql` is planned again
/// under the owner lock, with the dictionary as it is then, so a partition
/// added meanwhile gets it too.
pub async fn schema_change(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    sql: &str,
    session_db: Option<&str>,
) -> Result<AdminOutput, ProxyError> {
    let command = sql.trim().to_string();
    let _g = ctx.partitioning.admin_lock.lock().await;
    let (op, owner) = match change::start(ctx, worker, name, &command).await? {
        Ok(started) => started,
        Err(done) => return Ok(done),
    };
    let plan = |d: &Dictionary| {
        let parts =
            match crate::planning::plan_now(d, sql, session_db, crate::planning::Form::Plain) {
                Plan::SchemaChange { table, parts } if table == *name => parts,
                Plan::Refuse(why) => return Err(ProxyError::Refused(why)),
                _ => {
                    return Err(wrong(format!(
                        "{name} changed while the statement waited; run it again"
                    )))
                }
            };
        let names = backend_names(ctx);
        Ok(DdlSpec {
            ddl_steps: parts
                .into_iter()
                .map(|(t, sql)| Step {
                    backend: names[t.backend.index()].to_string(),
                    db: name.db.clone(),
                    op: "run".into(),
                    table: t.physical_table,
                    to: String::new(),
                    sql,
                })
                .collect(),
            dictionary: Vec::new(),
        })
    };
    let spec = change::recheck(ctx, worker, op, |d| plan(d).map(Some)).await?;
    let Some(spec) = spec else {
        return Ok(AdminOutput::done());
    };
    // An ALTER the backends would run by copying the table runs online
    // (`online_alter.rs`), the others in place.
    match super::online_alter::decide(ctx, worker, op, &spec, &command).await {
        Ok(Some(reshapes)) => {
            super::online_alter::run(ctx, worker, op, name, &spec, reshapes).await
        }
        Ok(None) => carry_out(ctx, worker, op, owner, spec).await,
        Err(e) => {
            change::fail(ctx, worker, op, &e).await;
            Err(e)
        }
    }
}

/// `DROP DATABASE db` through hscale: its partitioned and global tables
/// are dropped as DDL operations (every backend, the dictionary) before
/// the statement itself goes to the main backend.
pub async fn forget_database(ctx: &Context, worker: usize, db: &str) -> Result<(), ProxyError> {
    let d = super::reload(ctx, worker).await?;
    let tables: Vec<TableName> = d
        .tables()
        .filter(|t| t.name.db == db)
        .map(|t| t.name.clone())
        .collect();
    let globals: Vec<TableName> = d.globals().filter(|g| g.db == db).cloned().collect();
    let views: Vec<TableName> = d
        .views()
        .filter(|v| v.name.db == db)
        .map(|v| v.name.clone())
        .collect();
    drop(d);
    for t in &tables {
        drop_table(ctx, worker, t).await?;
    }
    for g in &globals {
        drop_global(ctx, worker, g).await?;
    }
    // The views hscale keeps in it go with the database, as one server's.
    if !views.is_empty() {
        super::views::drop(ctx, worker, &views, true).await?;
    }
    Ok(())
}

/// Start operation `command` on `name`, derive its spec under the owner
/// lock (`plan` sees the dictionary as it is then, and the operation id),
/// and carry it out.
async fn run(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    command: &str,
    plan: impl FnOnce(&Dictionary, u64) -> Result<DdlSpec, ProxyError>,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let (op, owner) = match change::start(ctx, worker, name, command).await? {
        Ok(started) => started,
        Err(done) => return Ok(done),
    };
    let spec = change::recheck(ctx, worker, op, |d| plan(d, op).map(Some)).await?;
    let Some(spec) = spec else {
        return Ok(AdminOutput::done());
    };
    carry_out(ctx, worker, op, owner, spec).await
}

/// Record `spec`, enter the cutover, run every step and commit. A failure
/// of the first step (the statement is wrong, nothing changed) ends the
/// operation `failed`; later failures too, naming the steps done.
async fn carry_out(
    ctx: &Context,
    worker: usize,
    op: u64,
    _owner: Box<change::Owner>,
    spec: DdlSpec,
) -> Result<AdminOutput, ProxyError> {
    let started = std::time::Instant::now();
    let text = toml::to_string(&spec).map_err(|e| wrong(e.to_string()))?;
    let recorded = async {
        change::journal(
            ctx,
            worker,
            format!(
                "UPDATE `hscale`.`operations` SET detail = {}, rows_estimate = {} WHERE id = {op} AND epoch = {FIRST_EPOCH}",
                quote_str(&text),
                spec.ddl_steps.len()
            ),
        )
        .await?;
        change::enter(ctx, worker, op, FIRST_EPOCH, "copying", first_state(&spec)).await
    };
    if let Err(e) = recorded.await {
        change::fail(ctx, worker, op, &e).await;
        return Err(e);
    }
    // A statement on every partition is tried on a copy of each first
    // (`all_or_nothing.rs`): a refusal changes nothing.
    let saved = if first_state(&spec) == ALTERING {
        match all_or_nothing::check(ctx, worker, op, &spec).await {
            Ok(saved) => saved,
            Err(e) => {
                change::fail(ctx, worker, op, &e).await;
                return Err(e);
            }
        }
    } else {
        Vec::new()
    };
    if let Some(ms) = change::test_pause("HSCALE_TEST_PAUSE_AFTER_DDL_CHECK_MS") {
        // Tests write a row the statement refuses here.
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let done = async {
        let altered = steps(ctx, worker, op, FIRST_EPOCH, &spec, Some(&saved)).await?;
        if first_state(&spec) == ALTERING {
            change::enter(ctx, worker, op, FIRST_EPOCH, ALTERING, "cutover").await?;
        }
        Ok(altered)
    };
    let altered = match done.await {
        Ok(a) => a,
        Err(e) => {
            change::fail(ctx, worker, op, &e).await;
            return Err(e);
        }
    };
    let report = change::Report {
        rows: spec.ddl_steps.len() as u64,
        seconds: started.elapsed().as_secs_f64(),
        longest_pause_ms: 0,
    };
    let rows = spec.dictionary.clone();
    change::commit_with_journal(ctx, worker, op, FIRST_EPOCH, &report, |_| Ok(rows.clone()))
        .await?;
    // The client's statement on every partition answers what they did.
    Ok(if first_state(&spec) == ALTERING {
        altered.output()
    } else {
        AdminOutput::done()
    })
}

/// The journal state of a DDL operation whose statements run on every
/// partition: not `cutover`, which makes every statement that meets a
/// missing table wait (`partition::refresh::await_newer_dictionary`) and would do so
/// for as long as an ALTER runs. A take-over finishes it all the same.
const ALTERING: &str = "altering";

/// The state a DDL operation runs its steps in: `cutover` for renames and
/// drops (statements that meet the old tables wait for the new
/// dictionary), [`ALTERING`] for statements on every partition.
fn first_state(spec: &DdlSpec) -> &'static str {
    if spec.ddl_steps.iter().any(|s| s.op == "run") {
        ALTERING
    } else {
        "cutover"
    }
}

fn backend(ctx: &Context, op: u64, name: &str) -> Result<BackendId, ProxyError> {
    ctx.backend_named(name).ok_or_else(|| {
        wrong(format!(
            "operation {op} names backend {name:?}, not in the config"
        ))
    })
}

/// Run the steps of `spec`, as operation `op`'s owner at `epoch`, recording
/// each done (`rows_copied` counts the steps done). The owner passes the
/// definitions saved before (`all_or_nothing::check`): a partition's
/// statement refused by the server has the partitions changed before it
/// brought back. A take-over passes `None` and rolls forward from the
/// steps recorded done (`rows_copied`): the first it runs may be applied
/// already.
async fn steps(
    ctx: &Context,
    worker: usize,
    op: u64,
    epoch: u64,
    spec: &DdlSpec,
    saved: Option<&all_or_nothing::Saved>,
) -> Result<Altered, ProxyError> {
    let taken_over_at = match saved {
        Some(_) => None,
        None => Some(done_steps(ctx, worker, op).await?),
    };
    let from = taken_over_at.unwrap_or(0);
    let mut altered = Altered::default();
    for (i, s) in spec.ddl_steps.iter().enumerate().skip(from) {
        let b = backend(ctx, op, &s.backend)?;
        let mut c = conn(ctx, worker, b).await?;
        c.is_broken = true; // killed by a take-over; never pooled again
        register(ctx, worker, op, epoch, b, &mut c).await?;
        match step(&mut c, s, taken_over_at == Some(i)).await {
            // The client's statement failed on a partition: the ones
            // changed before are brought back, and the client gets the
            // error one server answers.
            Err(ProxyError::Backend { err, .. }) if s.op == "run" && saved.is_some() => {
                let saved = saved.map(Vec::as_slice).unwrap_or_default();
                return Err(all_or_nothing::back_out(ctx, worker, spec, saved, i, err).await);
            }
            Ok(Some(ok)) => altered.add(&ok),
            r => {
                r?;
            }
        }
        change::journal(
            ctx,
            worker,
            format!(
                "UPDATE `hscale`.`operations` SET rows_copied = {} WHERE id = {op} AND epoch = {epoch}",
                i + 1
            ),
        )
        .await?;
        if i == 0 {
            if let Some(ms) = change::test_pause("HSCALE_TEST_PAUSE_IN_DDL_MS") {
                // Tests kill the owner here: a take-over must finish.
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            }
        }
    }
    Ok(altered)
}

/// The steps of operation `id` recorded done (`rows_copied`).
async fn done_steps(ctx: &Context, worker: usize, id: u64) -> Result<usize, ProxyError> {
    let q = format!("SELECT rows_copied FROM `hscale`.`operations` WHERE id = {id}");
    let mut main = conn(ctx, worker, BackendId::MAIN).await?;
    Ok(main
        .query_rows(&q)
        .await?
        .map_err(|e| server_error(&main, &q, e))?
        .strings()
        .first()
        .and_then(|r| r[0].as_deref().and_then(|v| v.parse().ok()))
        .unwrap_or(0))
}

/// What the partitions' statements answered, added up.
#[derive(Debug, Default)]
struct Altered {
    affected: u64,
    /// `Records: r  Duplicates: d  Warnings: w`, when they said it.
    records: Option<(u64, u64, u64)>,
}

impl Altered {
    fn add(&mut self, ok: &hscale_wire::response::OkPacket) {
        self.affected += ok.affected_rows;
        if let hscale_wire::response::OkInfo::Records {
            records,
            duplicates,
            warnings,
        } = ok.info
        {
            let (r, d, w) = self.records.unwrap_or_default();
            self.records = Some((r + records, d + duplicates, w + warnings));
        }
    }

    fn output(&self) -> AdminOutput {
        AdminOutput::Altered {
            affected: self.affected,
            info: self.records.map_or(String::new(), |(r, d, w)| {
                format!("Records: {r}  Duplicates: {d}  Warnings: {w}")
            }),
        }
    }
}

/// One step, idempotent: a rename already done is skipped, a drop is `IF
/// EXISTS`, and a statement run again (`is_again`) may find itself
/// applied.
async fn step(
    c: &mut BackendConn,
    s: &Step,
    is_again: bool,
) -> Result<Option<hscale_wire::response::OkPacket>, ProxyError> {
    let sql = match s.op.as_str() {
        "rename" => {
            if !ddl::table_exists(c, &s.db, &s.table).await? {
                if ddl::table_exists(c, &s.db, &s.to).await? {
                    return Ok(None);
                }
                return Err(wrong(format!(
                    "neither {}.{} nor {}.{} exists on backend {}",
                    s.db, s.table, s.db, s.to, s.backend
                )));
            }
            format!(
                "RENAME TABLE {} TO {}",
                qualified(&s.db, &s.table),
                qualified(&s.db, &s.to)
            )
        }
        "drop" => format!("DROP TABLE IF EXISTS {}", qualified(&s.db, &s.table)),
        _ => s.sql.clone(),
    };
    match c.command(&BackendConn::payload_for_query(&sql)).await? {
        Ok(ok) => Ok(Some(ok)),
        Err(e) if is_again && ALREADY_APPLIED.contains(&e.code) => Ok(None),
        Err(e) => Err(server_error(c, &sql, e)),
    }
}

/// Whether a journal row's `detail` is a DDL operation's spec.
pub(super) fn spec_of(detail: &str) -> Option<DdlSpec> {
    toml::from_str(detail).ok()
}

/// Finish DDL operation `id` whose owner is gone (called by
/// `takeover::take_over` at `epoch`, holding the owner lock): once its
/// steps began (`cutover`, `altering`), the steps not recorded done run,
/// and the dictionary commits; before, nothing was changed and the
/// operation ends `failed`.
pub(super) async fn take_over(
    ctx: &Context,
    worker: usize,
    id: u64,
    epoch: u64,
    state: &str,
    spec: DdlSpec,
) -> Result<(), ProxyError> {
    if state != "cutover" && state != ALTERING {
        let sql = format!(
            "UPDATE `hscale`.`operations` SET state = {}, active = NULL, ended_at = NOW(3) WHERE id = {id} AND epoch = {epoch} AND active IS NOT NULL",
            change::UNDONE_STATE
        );
        return change::journal(ctx, worker, sql).await;
    }
    steps(ctx, worker, id, epoch, &spec, None).await?;
    if state == ALTERING {
        change::enter(ctx, worker, id, epoch, ALTERING, "cutover").await?;
    }
    let report = change::Report {
        rows: spec.ddl_steps.len() as u64,
        seconds: 0.0,
        longest_pause_ms: 0,
    };
    let rows = spec.dictionary.clone();
    change::commit_with_journal(ctx, worker, id, epoch, &report, |_| Ok(rows.clone())).await?;
    tracing::info!(operation = id, "DDL finished by a take-over");
    Ok(())
}
