//! `HSCALE SETUP_TABLE('t', 'column', 'default_table', 'backend', 'FUNCTION(n)')`:
//! make `t` a partitioned table whose rows all start in its default
//! partition (renamed in place on the main backend, or moved to another).

use hscale_route::BackendId;
use hscale_route::HashingFunction;

use hscale_route::admin::BackendRef;
use hscale_route::dictionary::{generation_name, Dictionary, Lookup, TableName};
use hscale_route::key_compare::{KeyCompare, UnsupportedCollation};

use super::change::{self, Move};
use super::{backend_names, conn, reload, wrong, AdminOutput};
use crate::error::ProxyError;
use crate::partition::store::{self, exec};
use crate::partition::{ddl, qualified};
use crate::runtime::Context;

pub(super) async fn run(
    ctx: &Context,
    worker: usize,
    name: TableName,
    column: &str,
    default_table: &str,
    backend: &BackendRef,
    function: HashingFunction,
) -> Result<AdminOutput, ProxyError> {
    let _g = ctx.partitioning.admin_lock.lock().await;
    let names = backend_names(ctx);
    let b = backend.resolve(&names).map_err(wrong)?;
    let mut d = (*reload(ctx, worker).await?).clone();
    // Checked against a copy first: nothing starts for a refused change.
    d.setup_table(name.clone(), column, default_table, b, function.clone())
        .map_err(wrong)?;
    let (key_type, key_compare, auto_column, indexes) =
        read_key(ctx, worker, &name, column, &function).await?;
    for index in &indexes {
        d.setup_table(
            index.lookup.table.clone(),
            &index.lookup.column,
            &index.physical,
            BackendId::MAIN,
            lookup_function(),
        )
        .map_err(wrong)?;
    }
    {
        let mut target = conn(ctx, worker, b).await?;
        if ddl::table_exists(&mut target, &name.db, default_table).await? {
            return Err(wrong(format!(
                "table {}.{default_table} already exists on backend {:?}",
                name.db,
                names[b.index()]
            )));
        }
    }
    let command = format!(
        "SETUP_TABLE('{name}', '{column}', '{default_table}', '{}', '{function}')",
        names[b.index()]
    );
    let (op, _owner) = match change::start(ctx, worker, &name, &command).await? {
        Ok(started) => started,
        Err(done) => return Ok(done),
    };
    if let Err(e) = create_lookup_tables(ctx, worker, &name, &key_type, column, &indexes).await {
        change::fail(ctx, worker, op, &e).await;
        return Err(e);
    }
    let sequence = auto_column.as_deref().map(|c| (c, op));
    let row = store::insert_table_sql(
        &name,
        column,
        &function,
        default_table,
        names[b.index()],
        (&key_type, key_compare.as_ref()),
        sequence,
    );
    // The sequence starts above every id of the table as it is after its
    // rename (in place: the default partition; moved: the retired source,
    // which stays on the main backend until the commit): no write reaches
    // it any more, so no id slips in between.
    let after_rename = if b.is_main() {
        default_table.to_string()
    } else {
        generation_name(&format!("{}_retired", name.table), op)
    };
    let mut rows = vec![row];
    if let Some(c) = auto_column.as_deref() {
        rows.push(store::start_sequence_sql(&name, op, c, &after_rename));
    }
    rows.extend(index_rows(
        &name,
        column,
        &indexes,
        &after_rename,
        names[BackendId::MAIN.index()],
    ));
    let apply = |d: &mut Dictionary| {
        d.setup_table(name.clone(), column, default_table, b, function.clone())
            .map_err(wrong)?;
        d.set_key_type(&name, &key_type);
        d.set_key_compare(&name, key_compare.clone());
        d.set_auto_column(&name, auto_column.as_deref(), op);
        for index in &indexes {
            let l = &index.lookup;
            d.setup_table(
                l.table.clone(),
                &l.column,
                &index.physical,
                BackendId::MAIN,
                lookup_function(),
            )
            .map_err(wrong)?;
            d.set_key_type(&l.table, &index.column_type);
            d.set_key_compare(&l.table, index.compare.clone());
        }
        if !indexes.is_empty() {
            d.set_lookups(&name, indexes.iter().map(|i| i.lookup.clone()).collect());
        }
        Ok(rows.clone())
    };
    let m = Move {
        db: name.db.clone(),
        src: (BackendId::MAIN, name.table.clone()),
        filter: None,
        dst: (b, default_table.to_string()),
        is_dst_live: false,
        src_after: after_rename.clone(),
        rest: None,
        dst_filter: None,
        companion: None,
        key_column: column.to_string(),
        dictionary: rows.clone(),
        reshape: None,
    };
    let report = if b.is_main() {
        partition_in_place(ctx, worker, op, &m, (&name, default_table), apply).await?
    } else {
        change::run(ctx, worker, op, &m, apply).await?
    };
    Ok(change::report_output(
        &report,
        &format!(
            "{name} is partitioned by {column} with {function}; default partition {default_table} on {}",
            names[b.index()]
        ),
    ))
}

/// Partitioning in place, the default partition on the main backend:
/// the table renamed to it (`rename_in_place`), then the dictionary
/// committed with the journal; the longest pause is the rename's.
async fn partition_in_place(
    ctx: &Context,
    worker: usize,
    op: u64,
    m: &Move,
    (name, default_table): (&TableName, &str),
    apply: impl FnMut(&mut Dictionary) -> Result<Vec<String>, ProxyError>,
) -> Result<change::Report, ProxyError> {
    // In place: the table's new name is its default partition. Other
    // proxies that still route `t` as a plain table run into the rename
    // and wait for the new dictionary (the journal says 'cutover').
    // The journal records the plan first: a take-over finishes the
    // change once the table was renamed, and undoes it before.
    let started = std::time::Instant::now();
    let renamed = rename_in_place(ctx, worker, op, m, name, default_table).await;
    if let Err(e) = renamed {
        change::fail(ctx, worker, op, &e).await;
        return Err(e);
    }
    if let Some(ms) = change::test_pause("HSCALE_TEST_PAUSE_AFTER_RENAME_MS") {
        // Tests kill the owner here: the take-over commits.
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let mut report = change::Report {
        rows: 0,
        seconds: 0.0,
        longest_pause_ms: 0,
    };
    report.longest_pause_ms = started.elapsed().as_millis() as u64;
    change::commit_with_journal(ctx, worker, op, change::FIRST_EPOCH, &report, apply).await?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Each global unique index's rows in the dictionary's commit: its
/// lookup table (on the main backend, named `main`), the index itself,
/// and its rows read from the table once no write reaches it any more
/// (`after_rename`: its own UNIQUE key held them unique).
fn index_rows(
    name: &TableName,
    column: &str,
    indexes: &[NewIndex],
    after_rename: &str,
    main: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for index in indexes {
        let l = &index.lookup;
        out.push(store::insert_table_sql(
            &l.table,
            &l.column,
            &lookup_function(),
            &index.physical,
            main,
            (&index.column_type, index.compare.as_ref()),
            None,
        ));
        out.push(store::insert_lookup_sql(name, l));
        out.push(format!(
            "INSERT INTO {} ({c}, {k}) SELECT {c}, {k} FROM {} WHERE {c} IS NOT NULL",
            qualified(&name.db, &index.physical),
            qualified(&name.db, after_rename),
            c = crate::partition::quote_ident(&l.column),
            k = crate::partition::quote_ident(column),
        ));
    }
    out
}

/// How a lookup table is partitioned: by a hash of the indexed value, so
/// that ADD_PARTITION and MOVE_PARTITION of the lookup table spread it
/// over the backends (all of it starts in its default partition on the
/// main backend).
fn lookup_function() -> HashingFunction {
    HashingFunction::Hash(64)
}

/// A global unique index SETUP_TABLE makes (`Lookup`), with its lookup
/// table's physical table and its column's type.
struct NewIndex {
    lookup: Lookup,
    physical: String,
    column_type: String,
    compare: Option<KeyCompare>,
}

/// The key column's type and how it compares, and the table's
/// AUTO_INCREMENT column, read on the main backend, where the table must
/// exist with unique keys the partitioning keeps or that a global unique
/// index keeps (returned).
async fn read_key(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    column: &str,
    function: &HashingFunction,
) -> Result<(String, Option<KeyCompare>, Option<String>, Vec<NewIndex>), ProxyError> {
    let mut main = conn(ctx, worker, BackendId::MAIN).await?;
    if !ddl::table_exists(&mut main, &name.db, &name.table).await? {
        return Err(wrong(format!(
            "table {name} does not exist on the main backend"
        )));
    }
    let key_type = ddl::column_type(&mut main, &name.db, &name.table, column)
        .await?
        .ok_or_else(|| wrong(format!("table {name} has no column {column:?}")))?;
    let key_compare = key_compare_for(
        function,
        ddl::key_compare(&mut main, &name.db, &name.table, column).await?,
    )?;
    let auto = ddl::auto_increment_column(&mut main, &name.db, &name.table).await?;
    let keys = ddl::unique_keys(&mut main, &name.db, &name.table).await?;
    let mut indexes = Vec::new();
    for (key, indexed) in check_unique_keys(name, column, auto.as_deref(), &keys)? {
        let lookup = Lookup {
            table: Lookup::table_name(name, &key),
            key,
            column: indexed,
        };
        let physical = format!("{}_0", lookup.table.table);
        if physical.len() > 64 {
            return Err(wrong(format!(
                "the lookup table of UNIQUE key {} of {name} would be named {physical}, longer than 64 characters (rename the key)",
                lookup.key
            )));
        }
        // A column the INSERT leaves out takes its default: the index
        // holds no row for NULL, and writes no other.
        if let Some(d) = ddl::column_default(&mut main, &name.db, &name.table, &lookup.column)
            .await?
            .filter(|d| d != "NULL")
        {
            return Err(ProxyError::Unsupported {
                what: format!(
                    "a global unique index on column {} of {name}, whose DEFAULT is {d} (only DEFAULT NULL)",
                    lookup.column
                ),
            });
        }
        let column_type = ddl::column_type(&mut main, &name.db, &name.table, &lookup.column)
            .await?
            .ok_or_else(|| wrong(format!("table {name} has no column {:?}", lookup.column)))?;
        let compare = key_compare_for(
            &lookup_function(),
            ddl::key_compare(&mut main, &name.db, &name.table, &lookup.column).await?,
        )?;
        indexes.push(NewIndex {
            lookup,
            physical,
            column_type,
            compare,
        });
    }
    Ok((key_type, key_compare, auto, indexes))
}

/// Each index's lookup table, empty, on the main backend: `(indexed
/// column, partition key)`, the indexed column its PRIMARY KEY, both
/// typed as the table types them (so the lookup table calls the same
/// values equal and names them as the table would in a duplicate's
/// error). One left by a SETUP_TABLE that failed is made again.
async fn create_lookup_tables(
    ctx: &Context,
    worker: usize,
    name: &TableName,
    key_type: &str,
    column: &str,
    indexes: &[NewIndex],
) -> Result<(), ProxyError> {
    if indexes.is_empty() {
        return Ok(());
    }
    let mut main = conn(ctx, worker, BackendId::MAIN).await?;
    for index in indexes {
        let table = qualified(&name.db, &index.physical);
        exec(
            &mut main,
            &[
                format!("DROP TABLE IF EXISTS {table}"),
                format!(
                    "CREATE TABLE {table} ({c} {} NOT NULL, {k} {key_type} NOT NULL, PRIMARY KEY ({c})) ENGINE=InnoDB",
                    index.column_type,
                    c = crate::partition::quote_ident(&index.lookup.column),
                    k = crate::partition::quote_ident(column),
                ),
            ],
        )
        .await?;
    }
    Ok(())
}

/// Partitioning in place: the plan recorded, the journal in 'cutover',
/// and the table renamed to its default partition on a connection a
/// take-over can kill.
async fn rename_in_place(
    ctx: &Context,
    worker: usize,
    op: u64,
    m: &Move,
    name: &TableName,
    default_table: &str,
) -> Result<(), ProxyError> {
    change::record_spec(ctx, worker, op, m, true).await?;
    change::mark_cutover(ctx, worker, op, change::FIRST_EPOCH).await?;
    let mut main = conn(ctx, worker, BackendId::MAIN).await?;
    main.is_broken = true;
    // A take-over kills it: a stopped owner cannot rename later.
    change::register(
        ctx,
        worker,
        op,
        change::FIRST_EPOCH,
        BackendId::MAIN,
        &mut main,
    )
    .await?;
    if let Some(ms) = change::test_pause("HSCALE_TEST_PAUSE_BEFORE_RENAME_MS") {
        // Tests kill the owner here: the take-over rolls back.
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    exec(
        &mut main,
        &[format!(
            "RENAME TABLE {} TO {}",
            qualified(&name.db, &name.table),
            qualified(&name.db, default_table)
        )],
    )
    .await
}

/// How the key's column compares, for the dictionary. A string key under
/// a collation whose weights hscale could not read from the backend is
/// refused for the functions that read the string (NONE, PREFIX, HASH):
/// values the column calls equal could land in different partitions; so is
/// PREFIX under a collation the backend weighs. MOD, DIV and DATE read numbers and
/// dates, which no supported collation makes equal in another spelling.
fn key_compare_for(
    function: &HashingFunction,
    compare: Option<Result<Option<KeyCompare>, UnsupportedCollation>>,
) -> Result<Option<KeyCompare>, ProxyError> {
    let reads_string = matches!(
        function,
        HashingFunction::None | HashingFunction::Prefix(_) | HashingFunction::Hash(_)
    );
    match compare {
        // PREFIX(n) reads characters, which a collation that expands or
        // contracts them ('ß' = 'ss') does not keep apart.
        Some(Ok(Some(KeyCompare::Weighed(w)))) if matches!(function, HashingFunction::Prefix(_)) => {
            Err(ProxyError::Unsupported {
                what: format!(
                    "PREFIX on a string key under collation {} (hscale takes its weights from the backend: use NONE() or HASH(n))",
                    w.name
                ),
            })
        }
        // MOD, DIV and DATE read the raw number or date, as before.
        Some(Ok(Some(KeyCompare::Weighed(_)))) if !reads_string => Ok(None),
        Some(Ok(c)) => Ok(c),
        Some(Err(e)) if reads_string => Err(ProxyError::Unsupported {
            what: e.to_string(),
        }),
        Some(Err(_)) | None => Ok(None),
    }
}

/// The PRIMARY or UNIQUE keys no backend can enforce once the table is
/// partitioned by `column` (one without the partition column, unless it
/// holds the AUTO_INCREMENT column the table's sequence serves: generated
/// ids are unique across partitions; docs/src/sequences.md for explicit
/// ids): a UNIQUE key of one column gets a global unique index (its name
/// and column returned, docs/src/unique-keys.md); any other is refused.
fn check_unique_keys(
    name: &TableName,
    column: &str,
    auto_column: Option<&str>,
    keys: &[(String, Vec<String>)],
) -> Result<Vec<(String, String)>, ProxyError> {
    let has = |cols: &[String], c: &str| cols.iter().any(|k| k.eq_ignore_ascii_case(c));
    let mut indexes = Vec::new();
    for (key, cols) in keys {
        if has(cols, column) || auto_column.is_some_and(|a| has(cols, a)) {
            continue;
        }
        if let [one] = cols.as_slice() {
            if key != "PRIMARY" {
                indexes.push((key.clone(), one.clone()));
                continue;
            }
        }
        return Err(ProxyError::UniqueKeyNeedsPartitionColumn {
            table: name.to_string(),
            column: column.to_string(),
            key: if key == "PRIMARY" {
                "PRIMARY KEY".to_string()
            } else {
                format!("UNIQUE INDEX `{key}`")
            },
            columns: cols.join(", "),
        });
    }
    Ok(indexes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_keys_need_the_partition_column_or_the_sequence() {
        let name = TableName::new("db", "t");
        let keys = |k: &[(&str, &[&str])]| -> Vec<(String, Vec<String>)> {
            k.iter()
                .map(|(n, c)| (n.to_string(), c.iter().map(|c| c.to_string()).collect()))
                .collect()
        };
        let with_key = keys(&[("PRIMARY", &["id"]), ("u", &["Tenant", "email"])]);
        assert!(check_unique_keys(
            &name,
            "tenant",
            None,
            &keys(&[("PRIMARY", &["tenant", "id"])])
        )
        .is_ok());
        // The AUTO_INCREMENT primary key is served by the sequence.
        assert!(check_unique_keys(&name, "tenant", Some("id"), &with_key).is_ok());
        let e = check_unique_keys(&name, "tenant", None, &with_key).unwrap_err();
        assert_eq!(e.to_mysql().0, 1503);
        assert!(e.to_string().contains("PRIMARY KEY"), "{e}");
        // A UNIQUE key of one column gets a global unique index.
        assert_eq!(
            check_unique_keys(
                &name,
                "tenant",
                Some("id"),
                &keys(&[("PRIMARY", &["id"]), ("u_email", &["email"])]),
            )
            .unwrap(),
            vec![("u_email".to_string(), "email".to_string())]
        );
        let e = check_unique_keys(
            &name,
            "tenant",
            Some("id"),
            &keys(&[("PRIMARY", &["id"]), ("u_pair", &["email", "name"])]),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("UNIQUE INDEX `u_pair` (email, name)"),
            "{e}"
        );
    }
}
