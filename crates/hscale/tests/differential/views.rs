//! Views over partitioned tables (kept by hscale in its dictionary) against
//! the same views of one server: CREATE / OR REPLACE / ALTER VIEW with
//! column lists, views over views, views joining a partitioned table with
//! a global and with an unpartitioned table, ALGORITHM / SQL SECURITY /
//! WITH CHECK OPTION clauses; queries over every view (filters that prune
//! to one partition, aggregates, ORDER BY ... LIMIT, joins, subqueries)
//! with the same rows and column names; the errors one server gives (1050,
//! 1347, 1353, 1054, 1146, 4092); SHOW FULL TABLES and information_schema
//! TABLES / VIEWS; and DROP TABLE under a view (the view stays, reading it
//! is 1356). Writes through such a view are refused with 1235 (one server
//! allows writes through updatable views).

use super::{answer, Harness, Res};

/// Views created on both sides; `CREATE OR REPLACE` and ALTER replace
/// earlier ones.
const VIEWS: &[&str] = &[
    "CREATE VIEW v_all AS SELECT id, k, n, s, d FROM t",
    "CREATE OR REPLACE VIEW v_all AS SELECT id, k, n, s, d FROM t WHERE id > 0",
    "CREATE VIEW v_cols (vid, vk, vn) AS SELECT id, k, n FROM t WHERE n IS NOT NULL",
    "CREATE VIEW v_join AS SELECT t.id, t.k, t.n, g.label FROM t JOIN g ON g.gid = t.k",
    "CREATE VIEW v_plain AS SELECT t.id, t.k, p.b FROM t JOIN plain p ON p.a = t.id",
    "CREATE VIEW v_agg AS SELECT k, COUNT(*) AS cnt, SUM(n) AS total FROM t GROUP BY k",
    "CREATE VIEW v_vv AS SELECT vid, vn FROM v_cols WHERE vk = 2",
    "CREATE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW v_ev AS SELECT id, day, v FROM ev WITH CASCADED CHECK OPTION",
    "CREATE VIEW v_tmp AS SELECT id FROM t",
    "ALTER VIEW v_tmp (x, y) AS SELECT id, k FROM t WHERE k = 3",
];

/// Statements one server refuses, and hscale must with the same code.
const ERRORS: &[&str] = &[
    "CREATE VIEW v_all AS SELECT id FROM t",
    "CREATE VIEW t AS SELECT 1",
    "CREATE OR REPLACE VIEW t AS SELECT id FROM t",
    "ALTER VIEW nope AS SELECT id FROM t",
    "ALTER VIEW t AS SELECT id FROM t",
    "CREATE VIEW v_bad AS SELECT nocol FROM t",
    "CREATE VIEW v_bad AS SELECT id FROM t JOIN nope ON nope.x = t.id",
    "CREATE VIEW v_bad (a) AS SELECT id, k FROM t",
    "DROP VIEW nope",
    "DROP VIEW t",
    "DROP VIEW v_tmp, nope",
    "SHOW CREATE VIEW t",
    "SELECT * FROM v_tmp",
];

/// Outer queries over a view `V` with columns `A` (a key-like column) and
/// `B`.
const OUTERS: &[&str] = &[
    "SELECT * FROM {V}",
    "SELECT * FROM {V} ORDER BY {A}, {B} LIMIT 7",
    "SELECT COUNT(*), MIN({A}), MAX({A}) FROM {V}",
    "SELECT {B}, COUNT(*) AS c FROM {V} GROUP BY {B} ORDER BY {B}",
    "SELECT {A} FROM {V} WHERE {A} < 40 ORDER BY {A} DESC LIMIT 5",
    "SELECT DISTINCT {B} FROM {V} ORDER BY {B}",
    "SELECT x.{A}, x.{B} FROM {V} AS x WHERE x.{A} IN (3, 14, 27, 200) ORDER BY x.{A}, x.{B}",
    "SELECT COUNT(*) FROM {V} x JOIN g ON g.gid = x.{A} % 12",
    "SELECT {A} FROM {V} WHERE {A} IN (SELECT id FROM t WHERE k = 2) ORDER BY {A}",
    "SELECT q.{A} FROM (SELECT {A} FROM {V} ORDER BY {A} LIMIT 10) AS q ORDER BY q.{A}",
    "SELECT SUM({B}) FROM {V} WHERE {B} IS NOT NULL",
];

/// Each view with its A and B columns, and filters that prune to one
/// partition where the view's key passes through.
const QUERIED: &[(&str, &str, &str, &[&str])] = &[
    ("v_all", "id", "n", &["k = 2", "k IN (1, 3)"]),
    ("v_cols", "vid", "vn", &["vk = 1"]),
    ("v_join", "id", "n", &["k = 3", "label = 'g2'"]),
    ("v_plain", "id", "b", &["k = 0"]),
    ("v_agg", "k", "cnt", &["k = 2"]),
    ("v_vv", "vid", "vn", &["vid > 100"]),
    ("v_ev", "id", "v", &["day < '2024-02-01'"]),
];

pub async fn run(h: &mut Harness) {
    for v in VIEWS {
        h.check(v, true).await;
    }
    for q in QUERIED {
        let (view, a, b, filters) = *q;
        for o in OUTERS {
            let sql = o.replace("{V}", view).replace("{A}", a).replace("{B}", b);
            // Rows without ORDER BY compared as multisets.
            h.check(&sql, sql.contains("ORDER BY")).await;
        }
        for f in filters {
            h.check(&format!("SELECT * FROM {view} WHERE {f}"), false)
                .await;
            h.check(
                &format!("SELECT COUNT(*), SUM({b} IS NULL) FROM {view} WHERE {f}"),
                true,
            )
            .await;
        }
    }
    // The same reads prepared (binary protocol), a parameter in WHERE.
    for q in QUERIED {
        let (view, a, _, _) = *q;
        for sql in [
            format!("SELECT * FROM {view} WHERE {a} = ?"),
            format!("SELECT COUNT(*) FROM {view} WHERE {a} > ?"),
            format!("SELECT * FROM {view} ORDER BY {a} DESC LIMIT ?"),
        ] {
            let got = prepared(&mut h.p, &sql).await;
            let want = prepared(&mut h.r, &sql).await;
            if got == want {
                h.identical += 1;
            } else {
                h.wrong.push(format!(
                    "prepared {sql}\n  hscale:    {got:?}\n  reference: {want:?}"
                ));
            }
        }
    }
    for e in ERRORS {
        h.check(e, true).await;
    }
    // What lists tables, in either database (names only: the column
    // titles name the database).
    for sql in [
        "SHOW FULL TABLES",
        "SHOW TABLES LIKE 'v\\_%'",
        "SELECT TABLE_NAME, TABLE_TYPE, TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME",
        "SELECT TABLE_NAME, CHECK_OPTION, SECURITY_TYPE, ALGORITHM FROM information_schema.VIEWS WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME",
    ] {
        let got = rows_of(answer(&mut h.p, sql).await);
        let want = rows_of(answer(&mut h.r, sql).await);
        if got == want {
            h.identical += 1;
        } else {
            h.wrong
                .push(format!("{sql}\n  hscale:    {got:?}\n  reference: {want:?}"));
        }
    }
    // Writes through a view of partitioned tables: 1235 naming the view.
    for w in [
        "INSERT INTO v_all (id, k, n) VALUES (999, 1, 1)",
        "UPDATE v_all SET n = 0 WHERE id = 3",
        "DELETE FROM v_cols WHERE vid = 4",
    ] {
        match query_code(&mut h.p, w).await {
            Some((1235, msg)) if msg.contains("v_") => h.identical += 1,
            other => h.wrong.push(format!("{w}: {other:?}, not 1235")),
        }
    }
    // The view's definition, as hscale keeps it.
    match answer(&mut h.p, "SHOW CREATE VIEW v_ev").await.as_slice() {
        [Res::Set { rows, .. }]
            if rows.len() == 1
                && rows[0][1].as_deref().is_some_and(|d| {
                    d.starts_with("CREATE ALGORITHM=MERGE DEFINER=")
                        && d.contains(" SQL SECURITY INVOKER VIEW `v_ev` AS ")
                        && d.ends_with("WITH CASCADED CHECK OPTION")
                }) =>
        {
            h.identical += 1
        }
        other => h.wrong.push(format!("SHOW CREATE VIEW v_ev: {other:?}")),
    }
    // The table under views dropped: the views stay, reading them is 1356.
    h.check("DROP TABLE ev", true).await;
    for sql in [
        "SELECT * FROM v_ev",
        "SELECT COUNT(*) FROM v_ev WHERE id > 3",
    ] {
        h.check(sql, true).await;
    }
    let sql = "SHOW FULL TABLES LIKE 'v\\_ev'";
    let (got, want) = (
        rows_of(answer(&mut h.p, sql).await),
        rows_of(answer(&mut h.r, sql).await),
    );
    if got == want && got.as_ref().is_ok_and(|r| !r.is_empty()) {
        h.identical += 1;
    } else {
        h.wrong.push(format!(
            "{sql}\n  hscale:    {got:?}\n  reference: {want:?}"
        ));
    }
    for d in ["DROP VIEW v_vv", "DROP VIEW IF EXISTS v_ev"] {
        h.check(d, true).await;
    }
}

/// The rows of a single result, or its error.
fn rows_of(r: Vec<Res>) -> Result<Vec<Vec<Option<String>>>, u16> {
    match r.into_iter().next() {
        Some(Res::Set { rows, .. }) => Ok(rows),
        Some(Res::Error(c)) => Err(c),
        None => Ok(Vec::new()),
    }
}

/// Error code and message of a statement, `None` when it succeeded.
async fn query_code(c: &mut mysql_async::Conn, sql: &str) -> Option<(u16, String)> {
    use mysql_async::prelude::*;
    match c.query_drop(sql).await {
        Ok(()) => None,
        Err(mysql_async::Error::Server(e)) => Some((e.code, e.message)),
        Err(e) => Some((0, e.to_string())),
    }
}

/// Column names and sorted rows of `sql` prepared and executed with 5 as
/// its parameter, or the error code.
async fn prepared(c: &mut mysql_async::Conn, sql: &str) -> Result<(Vec<String>, Vec<String>), u16> {
    use mysql_async::prelude::*;
    let st = c.prep(sql).await.map_err(|e| super::code(&e))?;
    let columns = st
        .columns()
        .iter()
        .map(|c| c.name_str().into_owned())
        .collect();
    let rows: Vec<mysql_async::Row> = c.exec(&st, (5,)).await.map_err(|e| super::code(&e))?;
    let mut rows: Vec<String> = rows
        .into_iter()
        .map(|r| format!("{:?}", r.unwrap()))
        .collect();
    rows.sort();
    c.close(st).await.map_err(|e| super::code(&e))?;
    Ok((columns, rows))
}
