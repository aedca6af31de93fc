//! The invariant checker of `online.rs`: what every proxy and every
//! backend hold against the writers' model of acknowledged rows
//! ([`assert_invariants`]), and the dictionary as stored.

use super::*;

/// Where a physical table lives.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Place {
    pub(super) backend: usize,
    pub(super) table: String,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shard{}.{}", self.backend, self.table)
    }
}

/// A dictionary row as column name -> value.
pub(super) type Columns = BTreeMap<String, String>;

/// The physical table of a partition as the dictionary names it. Today the
/// proxy derives it as `<table>_<partition name>`
/// (`Partition::physical_table`); if the dictionary comes to store it (a
/// generation in the name, DESIGN-NOTES §2), a `physical_table` column is
/// taken instead. This and [`default_table_of`] are the only places the
/// checker derives physical names: change them here.
pub(super) fn physical_table_of(table: &str, partition: &Columns) -> String {
    match partition.get("physical_table") {
        Some(t) if !t.is_empty() => t.clone(),
        _ => format!("{table}_{}", partition["partition_name"]),
    }
}

/// The default partition's physical table, from `partitioned_tables`.
pub(super) fn default_table_of(table: &Columns) -> String {
    table["default_table"].clone()
}

/// Tables in the test database that are not named by the dictionary yet may
/// stay (none today; if retired generations are kept per a retention
/// setting, recognize them here, and only them).
pub(super) fn may_linger(_table: &str) -> bool {
    false
}

/// The dictionary of one partitioned table, read from the main backend.
#[derive(Debug)]
pub(super) struct DictView {
    pub(super) default: Place,
    /// Partition value -> where its rows live.
    pub(super) by_value: BTreeMap<String, Place>,
    /// Every physical table the dictionary names.
    pub(super) named: BTreeSet<Place>,
}

impl DictView {
    pub(super) fn target(&self, k: i64) -> &Place {
        self.by_value
            .get(&k.rem_euclid(MODULUS).to_string())
            .unwrap_or(&self.default)
    }
}

pub(super) fn columns(r: &mysql_async::Row) -> Columns {
    r.columns_ref()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            // Text for every column (numbers too: the binary protocol
            // sends them as numbers).
            let v = match r.as_ref(i) {
                Some(mysql_async::Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
                Some(mysql_async::Value::NULL) | None => String::new(),
                Some(other) => other.as_sql(true),
            };
            (c.name_str().to_string(), v)
        })
        .collect()
}

pub(super) async fn read_dictionary(db: &str, table: &str) -> DictView {
    let names: Vec<String> = cluster_config()
        .backends
        .iter()
        .map(|b| b.name.clone())
        .collect();
    let index = |name: &str| {
        names
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("the dictionary names unknown backend {name:?}"))
    };
    let mut c = backend_conn(0, None).await;
    let t: Vec<mysql_async::Row> = c
        .exec(
            "SELECT * FROM hscale.partitioned_tables WHERE db = ? AND tbl = ?",
            (db, table),
        )
        .await
        .unwrap();
    assert_eq!(t.len(), 1, "{db}.{table} is not in the dictionary");
    let t = columns(&t[0]);
    let default = Place {
        backend: index(&t["default_backend"]),
        table: default_table_of(&t),
    };
    let parts: Vec<mysql_async::Row> = c
        .exec(
            "SELECT * FROM hscale.partitions WHERE db = ? AND tbl = ?",
            (db, table),
        )
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    let mut named = BTreeSet::from([default.clone()]);
    let mut by_value = BTreeMap::new();
    for p in &parts {
        let p = columns(p);
        let place = Place {
            backend: index(&p["backend"]),
            table: physical_table_of(table, &p),
        };
        named.insert(place.clone());
        by_value.insert(p["partition_value"].clone(), place);
    }
    DictView {
        default,
        by_value,
        named,
    }
}

/// Violations by category, each with its examples.
#[derive(Debug, Default)]
pub(super) struct Report {
    pub(super) violations: BTreeMap<String, Vec<String>>,
    pub(super) facts: Vec<String>,
}

impl Report {
    pub(super) fn add(&mut self, category: impl Into<String>, example: String) {
        self.violations
            .entry(category.into())
            .or_default()
            .push(example);
    }

    pub(super) fn summary(&self) -> String {
        let mut s = String::new();
        for f in &self.facts {
            s.push_str(&format!("  {f}\n"));
        }
        if self.violations.is_empty() {
            s.push_str("  no violations\n");
        }
        for (cat, ex) in &self.violations {
            s.push_str(&format!("  {cat}: {}\n", ex.len()));
            for e in ex.iter().take(6) {
                s.push_str(&format!("      {e}\n"));
            }
            if ex.len() > 6 {
                s.push_str(&format!("      ... and {} more\n", ex.len() - 6));
            }
        }
        s
    }
}

/// Compare rows found somewhere (id -> every copy found) with the model.
pub(super) fn compare(
    place: &str,
    found: &BTreeMap<i64, Vec<Acct>>,
    model: &Model,
    rep: &mut Report,
) {
    for (id, copies) in found {
        if copies.len() > 1 {
            rep.add(
                format!("{place}: row found twice"),
                format!("id {id}: {copies:?}"),
            );
        }
        if !model.ids.contains_key(id) {
            rep.add(
                format!("{place}: row no writer wrote"),
                format!("id {id}: {copies:?}"),
            );
        }
    }
    for (id, allowed) in &model.ids {
        let got: State = found.get(id).map(|c| c[0]);
        if allowed.contains(&got) {
            continue;
        }
        let want = allowed.iter().map(show).collect::<Vec<_>>().join(" or ");
        let cat = if got.is_none() && allowed.iter().all(Option::is_some) {
            "acknowledged row missing (lost)"
        } else if got.is_some() && allowed.iter().all(Option::is_none) {
            "acknowledged delete undone (row present)"
        } else {
            "wrong value (acknowledged update lost or applied twice)"
        };
        rep.add(
            format!("{place}: {cat}"),
            format!("id {id}: found {}, expected {want}", show(&got)),
        );
    }
}

/// Through one proxy: every key's rows read by key (routed to the one
/// partition the proxy names for it), a full scan, COUNT(*), and point
/// lookups by id and key (prepared).
pub(super) async fn check_through_proxy(
    scene: Scene,
    port: u16,
    model: &Model,
    rng: &mut Rng,
    rep: &mut Report,
) {
    let t = scene.table;
    let place = format!("proxy :{port}");
    let mut c = match Conn::new(proxy_opts(port, Some(scene.db))).await {
        Ok(c) => c,
        Err(e) => {
            rep.add(format!("{place}: cannot connect"), describe(&e));
            return;
        }
    };
    let mut by_key: BTreeMap<i64, Vec<Acct>> = BTreeMap::new();
    for k in 0..K_SPAN {
        let sql = format!("SELECT id, v FROM {t} WHERE k = {k}");
        match c.query::<(i64, i64), _>(&sql).await {
            Ok(rows) => {
                for (id, v) in rows {
                    by_key.entry(id).or_default().push(Acct { k, v });
                }
            }
            Err(e) => rep.add(
                format!("{place}: read failed"),
                format!("{sql}: {}", describe(&e)),
            ),
        }
    }
    compare(&format!("{place} by key"), &by_key, model, rep);

    let sql = format!("SELECT id, k, v FROM {t}");
    match c.query::<(i64, i64, i64), _>(&sql).await {
        Ok(rows) => {
            let mut scan: BTreeMap<i64, Vec<Acct>> = BTreeMap::new();
            for (id, k, v) in rows {
                scan.entry(id).or_default().push(Acct { k, v });
            }
            compare(&format!("{place} full scan"), &scan, model, rep);
        }
        Err(e) => rep.add(
            format!("{place}: read failed"),
            format!("{sql}: {}", describe(&e)),
        ),
    }

    let (lo, hi) = model.live_range();
    match c
        .query_first::<i64, _>(format!("SELECT COUNT(*) FROM {t}"))
        .await
    {
        Ok(Some(n)) if (lo..=hi).contains(&n) => {}
        Ok(n) => rep.add(
            format!("{place}: COUNT(*) outside the model"),
            format!("COUNT(*) = {n:?}, model allows {lo}..={hi}"),
        ),
        Err(e) => rep.add(
            format!("{place}: read failed"),
            format!("COUNT(*): {}", describe(&e)),
        ),
    }

    // Point lookups on the planned/cached path, for a sample of ids.
    let ids: Vec<(&i64, &Vec<State>)> = model.ids.iter().collect();
    for _ in 0..ids.len().min(150) {
        let (id, allowed) = ids[rng.below(ids.len() as u64) as usize];
        let Some(k) = allowed.iter().flatten().map(|a| a.k).next() else {
            continue;
        };
        let r = c
            .exec_first::<(i64, i64), _, _>(
                format!("SELECT k, v FROM {t} WHERE id = ? AND k = ?"),
                (id, k),
            )
            .await;
        match r {
            Ok(got) => {
                let got = got.map(|(k, v)| Acct { k, v });
                if !allowed.contains(&got) {
                    let want = allowed.iter().map(show).collect::<Vec<_>>().join(" or ");
                    rep.add(
                        format!("{place} point lookup: wrong answer"),
                        format!("id {id} k {k}: found {}, expected {want}", show(&got)),
                    );
                }
            }
            Err(e) => rep.add(
                format!("{place}: read failed"),
                format!("point lookup id {id}: {}", describe(&e)),
            ),
        }
    }
    let _ = c.disconnect().await;
}

/// On the backends themselves: the database holds exactly the tables the
/// dictionary names, each row sits in exactly one of them, the one the
/// dictionary names for MOD(k, 8), with the model's value.
pub(super) async fn check_backends(scene: Scene, model: &Model, rep: &mut Report) {
    let db = scene.db;
    let dict = read_dictionary(db, scene.table).await;
    rep.facts.push(format!(
        "dictionary: default {}, values {}",
        dict.default,
        dict.by_value
            .iter()
            .map(|(v, p)| format!("{v}->{p}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let backends = cluster_config().backends.len();
    let mut present = BTreeSet::new();
    for b in 0..backends {
        let mut c = backend_conn(b, None).await;
        let tables: Vec<String> = c
            .exec(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
                (db,),
            )
            .await
            .unwrap();
        c.disconnect().await.unwrap();
        for t in tables {
            present.insert(Place {
                backend: b,
                table: t,
            });
        }
    }
    for p in dict.named.difference(&present) {
        rep.add(
            "backends: the dictionary names a table that does not exist",
            p.to_string(),
        );
    }
    // Every row of every table in the database, named or not.
    let mut at: BTreeMap<i64, Vec<(Place, Acct)>> = BTreeMap::new();
    for p in &present {
        let mut c = backend_conn(p.backend, Some(db)).await;
        let rows = c
            .query::<(i64, i64, i64), _>(format!("SELECT id, k, v FROM `{}`", p.table))
            .await;
        c.disconnect().await.unwrap();
        let rows = match rows {
            Ok(rows) => rows,
            Err(e) => {
                rep.add(
                    "backends: unreadable table",
                    format!("{p}: {}", describe(&e)),
                );
                Vec::new()
            }
        };
        if !dict.named.contains(p) && !may_linger(&p.table) {
            rep.add(
                "backends: table the dictionary does not name (leftover)",
                format!("{p} with {} rows", rows.len()),
            );
        }
        for (id, k, v) in rows {
            at.entry(id).or_default().push((p.clone(), Acct { k, v }));
        }
    }
    let mut routed: BTreeMap<i64, Vec<Acct>> = BTreeMap::new();
    let mut unnamed = 0;
    let mut misplaced = 0;
    for (id, copies) in &at {
        if copies.len() > 1 {
            let list = copies
                .iter()
                .map(|(p, a)| format!("{p} {}", show(&Some(*a))))
                .collect::<Vec<_>>()
                .join(", ");
            rep.add(
                "backends: row in more than one physical table",
                format!("id {id}: {list}"),
            );
        }
        for (p, a) in copies {
            let want = dict.target(a.k);
            if !dict.named.contains(p) {
                unnamed += 1;
                rep.add(
                    "backends: row in a table the dictionary does not name",
                    format!("id {id} k {} in {p}; the dictionary names {want}", a.k),
                );
            } else if p != want {
                misplaced += 1;
                rep.add(
                    "backends: row in the wrong partition",
                    format!(
                        "id {id} k {} (value {}) in {p}; the dictionary names {want}",
                        a.k,
                        a.k.rem_euclid(MODULUS)
                    ),
                );
            } else {
                routed.entry(*id).or_default().push(*a);
            }
        }
    }
    rep.facts.push(format!(
        "backends: {} distinct ids stored, {unnamed} copies in unnamed tables, {misplaced} in the wrong partition",
        at.len()
    ));
    compare(
        "backends (rows where the dictionary routes them)",
        &routed,
        model,
        rep,
    );
}

/// The one call: writers' errors and anomalies, failed admin commands, the
/// invariants through every proxy in `proxies` and on the backends. Prints
/// the numbers, then fails with them if anything is wrong.
pub(super) async fn assert_invariants(test: &str, scene: Scene, proxies: &[u16], out: &Outcome) {
    let mut rep = Report::default();
    let (lo, hi) = out.model.live_range();
    rep.facts.push(format!(
        "{} acknowledged operations {:?} (by proxy port), {} ids, live rows {lo}..={hi}, {} unknown after errors",
        out.acked,
        out.per_proxy,
        out.model.ids.len(),
        out.model.unknowns()
    ));
    // Every statement error, each with its code, and a tally by code.
    let mut by_code: BTreeMap<String, usize> = BTreeMap::new();
    for e in &out.errors {
        eprintln!("{test}: {e}");
        let code = e
            .split_once(": error ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .unwrap_or("client-side");
        *by_code.entry(code.to_string()).or_default() += 1;
    }
    if !by_code.is_empty() {
        rep.facts
            .push(format!("statement errors by code: {by_code:?}"));
    }
    for e in &out.errors {
        rep.add(
            "writers: autocommit statement failed (must be retried by the proxy)",
            e.clone(),
        );
    }
    for e in &out.anomalies {
        rep.add(
            "writers: acknowledged with the wrong affected-row count",
            e.clone(),
        );
    }
    for e in &out.admin {
        rep.add("admin: HSCALE command failed", e.clone());
    }
    let mut rng = Rng(out.acked);
    for &port in proxies {
        check_through_proxy(scene, port, &out.model, &mut rng, &mut rep).await;
    }
    check_backends(scene, &out.model, &mut rep).await;
    let summary = rep.summary();
    eprintln!("{test}:\n{summary}");
    // The history of every id a violation names, to place it among the changes.
    for (id, ms, what) in &out.history {
        if summary.contains(&format!("id {id}:")) {
            eprintln!("{test}: history of {id}: at {ms} ms: {what}");
        }
    }
    assert!(
        rep.violations.is_empty(),
        "{test}: {} kinds of violation:\n{summary}",
        rep.violations.len()
    );
}
