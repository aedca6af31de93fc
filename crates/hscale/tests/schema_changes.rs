#![allow(clippy::unwrap_used)]
//! Issue 32: schema changes across partitions. Each example of the issue
//! is a test of its own, compared with one plain database of the same
//! server (`REF`, not partitioned); the cases around each follow it.
//!
//! Two backends; tables partitioned MOD(2) or by DATE.

mod common;

use common::*;
use mysql_async::prelude::*;
use mysql_async::Conn;

const DB: &str = "sc_part";
const REF: &str = "sc_ref";

type Rows = Vec<Vec<Option<String>>>;

async fn rows(c: &mut Conn, sql: &str) -> Rows {
    let rows: Vec<mysql_async::Row> = c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.into_iter()
        .map(|r| {
            (0..r.len())
                .map(|i| match r.as_ref(i).unwrap() {
                    mysql_async::Value::NULL => None,
                    mysql_async::Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                    v => Some(v.as_sql(true)),
                })
                .collect()
        })
        .collect()
}

/// What a statement answered: an error (code and message), or OK.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Err(u16, String),
    Ok,
}

async fn run(c: &mut Conn, sql: &str) -> Answer {
    match c.query_drop(sql).await {
        Ok(()) => Answer::Ok,
        Err(mysql_async::Error::Server(e)) => Answer::Err(e.code, e.message),
        Err(e) => panic!("{sql}: {e}"),
    }
}

static SET_UP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

async fn connections() -> (Conn, Conn) {
    SET_UP
        .get_or_init(|| async {
            cluster(2);
            let mut c = proxy_conn(None).await;
            for db in [DB, REF] {
                c.query_drop(format!("CREATE DATABASE {db}")).await.unwrap();
            }
        })
        .await;
    (proxy_conn(Some(DB)).await, proxy_conn(Some(REF)).await)
}

/// `create` in both databases with `rows` inserted, then partitioned in
/// `DB` by `partitioning` (`{t}` is the table's name).
async fn table(name: &str, create: &str, insert: &str, partitioning: &[&str]) -> (Conn, Conn) {
    let (mut p, mut r) = connections().await;
    for c in [&mut p, &mut r] {
        c.query_drop(format!("DROP TABLE IF EXISTS {name}"))
            .await
            .unwrap();
        c.query_drop(create).await.unwrap();
        if !insert.is_empty() {
            c.query_drop(insert).await.unwrap();
        }
    }
    for s in partitioning {
        let s = s.replace("{t}", name);
        p.query_drop(&s)
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    (p, r)
}

/// `SET_UP` of `name` partitioned MOD(2) on `column`: default partition on
/// shard0, value 0 on shard0 and 1 on shard1.
fn mod2(column: &str) -> Vec<String> {
    vec![
        format!(
            "HSCALE SETUP_TABLE('{DB}.{{t}}', '{column}', '{{t}}_default', 'shard0', 'MOD(2)')"
        ),
        format!("HSCALE ADD_PARTITION('{DB}.{{t}}', '{{t}}_0', '0', 'shard0')"),
        format!("HSCALE ADD_PARTITION('{DB}.{{t}}', '{{t}}_1', '1', 'shard1')"),
    ]
}

/// SHOW CREATE TABLE of every physical table of `DB.name` on its backend,
/// with the physical name and the AUTO_INCREMENT counter taken out: what
/// must not change when a schema change fails.
async fn definitions(name: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut tables: Vec<_> = physical_tables(&format!("{DB}.{name}"))
        .await
        .into_values()
        .collect();
    tables.sort();
    for (b, physical) in tables {
        let mut c = backend_conn(b, Some(DB)).await;
        let (_, ddl): (String, String) = c
            .query_first(format!("SHOW CREATE TABLE `{physical}`"))
            .await
            .unwrap()
            .unwrap();
        c.disconnect().await.unwrap();
        out.push((physical.clone(), normalized(&ddl, &physical)));
    }
    out
}

fn normalized(ddl: &str, table: &str) -> String {
    let ddl = ddl.replacen(&format!("CREATE TABLE `{table}`"), "CREATE TABLE `x`", 1);
    ddl.split(' ')
        .filter(|w| !w.starts_with("AUTO_INCREMENT="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The logical table's SHOW CREATE TABLE through hscale equals the
/// reference's, and every physical table has that definition.
async fn same_definition(p: &mut Conn, r: &mut Conn, name: &str) {
    let (_, a): (String, String) = p
        .query_first(format!("SHOW CREATE TABLE {name}"))
        .await
        .unwrap()
        .unwrap();
    let (_, b): (String, String) = r
        .query_first(format!("SHOW CREATE TABLE {name}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(normalized(&a, name), normalized(&b, name));
    for (physical, d) in definitions(name).await {
        assert_eq!(d, normalized(&b, name), "{physical}");
    }
}

/// The statement fails through hscale as on one server (code and
/// message), and leaves every partition's definition and the rows as
/// they were.
async fn fails_alike(p: &mut Conn, r: &mut Conn, name: &str, sql: &str) -> Answer {
    let before = definitions(name).await;
    let want = run(r, sql).await;
    assert!(matches!(want, Answer::Err(..)), "{sql}: {want:?}");
    let got = run(p, sql).await;
    assert_eq!(got, want, "{sql}");
    assert_eq!(definitions(name).await, before, "{sql} changed a partition");
    // Sorted here: an ORDER BY over the partitions of a table with a
    // FULLTEXT key fails today (1796, the merge's temporary table).
    let contents = format!("SELECT * FROM {name}");
    let (mut a, mut b) = (rows(p, &contents).await, rows(r, &contents).await);
    a.sort();
    b.sort();
    assert_eq!(a, b, "{sql}");
    same_definition(p, r, name).await;
    got
}

/// The first example: a MODIFY that one row of one partition
/// refuses fails as on one server (1264 naming `k` and row 2, the row's
/// place in the whole table), and no partition is changed.
#[tokio::test]
async fn a_modify_refused_by_one_partition_changes_no_partition() {
    let parts = mod2("id");
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (mut p, mut r) = table(
        "ddlx",
        "CREATE TABLE ddlx (id INT NOT NULL PRIMARY KEY, k INT NULL)",
        "INSERT INTO ddlx VALUES (1, 3), (2, -5), (3, 4), (4, NULL)",
        &parts,
    )
    .await;
    let got = fails_alike(
        &mut p,
        &mut r,
        "ddlx",
        "ALTER TABLE ddlx MODIFY k INT UNSIGNED NULL",
    )
    .await;
    assert_eq!(
        got,
        Answer::Err(1264, "Out of range value for column 'k' at row 2".into())
    );
    let q = "SELECT id, k - 10 FROM ddlx WHERE id = 1";
    assert_eq!(
        rows(&mut p, q).await,
        vec![vec![Some("1".into()), Some("-7".into())]]
    );
    assert_eq!(rows(&mut p, q).await, rows(&mut r, q).await);
    // Without the refused row the same statement changes every partition.
    for c in [&mut p, &mut r] {
        c.query_drop("UPDATE ddlx SET k = 5 WHERE id = 2")
            .await
            .unwrap();
        c.query_drop("ALTER TABLE ddlx MODIFY k INT UNSIGNED NULL")
            .await
            .unwrap();
    }
    same_definition(&mut p, &mut r, "ddlx").await;
}

/// Data errors the server finds in one partition's rows: the row number
/// one server reports (counted over the whole table in primary key
/// order), wherever the row is, and no partition changed.
#[tokio::test]
async fn data_errors_of_one_partition_are_one_servers() {
    let parts = mod2("id");
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (mut p, mut r) = table(
        "dx",
        "CREATE TABLE dx (id INT NOT NULL PRIMARY KEY, k INT NULL, s VARCHAR(20) NULL)",
        "INSERT INTO dx VALUES (1, 3, 'a'), (2, 4, 'bb'), (3, 5, 'a much longer text'), (4, NULL, 'c'), (5, -1, 'd'), (6, 7, NULL), (7, 8, 'e')",
        &parts,
    )
    .await;
    // Row 5 (id 5, on partition 1) is the first a server refuses.
    let got = fails_alike(&mut p, &mut r, "dx", "ALTER TABLE dx MODIFY k INT UNSIGNED").await;
    assert_eq!(
        got,
        Answer::Err(1264, "Out of range value for column 'k' at row 5".into())
    );
    // A NULL in partition 0 (id 4) against NOT NULL: 1265 at row 4.
    let got = fails_alike(&mut p, &mut r, "dx", "ALTER TABLE dx MODIFY k INT NOT NULL").await;
    assert!(matches!(got, Answer::Err(1265, _)), "{got:?}");
    // A text too long for the new type, on partition 1 (id 3).
    fails_alike(&mut p, &mut r, "dx", "ALTER TABLE dx MODIFY s VARCHAR(5)").await;
    // Two statements each refused by another partition's row: the first
    // row in the table's order decides, as on one server.
    fails_alike(
        &mut p,
        &mut r,
        "dx",
        "ALTER TABLE dx MODIFY k INT UNSIGNED NOT NULL",
    )
    .await;
}

/// Definition errors (1060, 1072, 1091, 1054, 1068) are found before any
/// partition changes: the server's error, with the client's table name.
#[tokio::test]
async fn definition_errors_change_no_partition() {
    let parts = mod2("id");
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (mut p, mut r) = table(
        "defx",
        "CREATE TABLE defx (id INT NOT NULL PRIMARY KEY, v INT NULL, w INT NULL, KEY i_v (v))",
        "INSERT INTO defx VALUES (1, 1, 1), (2, 2, 2), (3, 3, 3)",
        &parts,
    )
    .await;
    for sql in [
        "ALTER TABLE defx ADD COLUMN v INT NOT NULL",
        "ALTER TABLE defx ADD COLUMN z INT NULL, ADD COLUMN v INT NOT NULL",
        "ALTER TABLE defx ADD KEY i_nothing (nothing)",
        "ALTER TABLE defx DROP COLUMN nothing",
        "ALTER TABLE defx ADD COLUMN z INT NULL, DROP KEY i_nothing",
        "DROP INDEX i_nothing ON defx",
        "CREATE INDEX i_v ON defx (w)",
        "ALTER TABLE defx RENAME COLUMN nothing TO something",
        "ALTER TABLE defx CHANGE w v INT NULL",
    ] {
        fails_alike(&mut p, &mut r, "defx", sql).await;
    }
}

/// The class of changes that work: indexes, column renames, added
/// columns, table options; every partition and one server agree after
/// each.
#[tokio::test]
async fn schema_changes_apply_to_every_partition_as_on_one_server() {
    let parts = mod2("id");
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (mut p, mut r) = table(
        "okx",
        "CREATE TABLE okx (id INT NOT NULL PRIMARY KEY, v INT NULL, w VARCHAR(10) NULL)",
        "INSERT INTO okx VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c'), (4, 4, 'd')",
        &parts,
    )
    .await;
    for sql in [
        "CREATE INDEX i_v ON okx (v)",
        "ALTER TABLE okx ADD COLUMN z INT NOT NULL DEFAULT 7 AFTER v",
        "ALTER TABLE okx RENAME COLUMN w TO w2",
        "DROP INDEX i_v ON okx",
        "ALTER TABLE okx COMMENT = 'partitioned', ROW_FORMAT = DYNAMIC",
        "CREATE UNIQUE INDEX u_id_v ON okx (id, v)",
        "ALTER TABLE okx MODIFY v BIGINT NULL",
    ] {
        assert_eq!(run(&mut p, sql).await, run(&mut r, sql).await, "{sql}");
        same_definition(&mut p, &mut r, "okx").await;
    }
    let q = "SELECT * FROM okx ORDER BY id";
    assert_eq!(rows(&mut p, q).await, rows(&mut r, q).await);
}

/// A unique key that one partition's rows break (1062): no partition
/// gets it, and the message names the entry as one server's does.
#[tokio::test]
async fn a_unique_key_one_partition_breaks_changes_no_partition() {
    let parts = mod2("k");
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (mut p, mut r) = table(
        "uqx",
        "CREATE TABLE uqx (id INT NOT NULL, k INT NOT NULL, v INT NULL, PRIMARY KEY (id, k))",
        "INSERT INTO uqx VALUES (1, 2, 10), (2, 1, 20), (3, 1, 20), (4, 2, 30), (5, 3, 7)",
        &parts,
    )
    .await;
    let got = fails_alike(
        &mut p,
        &mut r,
        "uqx",
        "CREATE UNIQUE INDEX u_kv ON uqx (k, v)",
    )
    .await;
    assert!(matches!(got, Answer::Err(1062, _)), "{got:?}");
    // A column added NOT NULL, every row's value the same: a unique key
    // on it and the key column finds the duplicates of one partition.
    let add = "ALTER TABLE uqx ADD COLUMN z INT NOT NULL DEFAULT 0";
    assert_eq!(run(&mut p, add).await, run(&mut r, add).await);
    // Both partitions hold duplicates of it: hscale names one partition's
    // (the first it runs on), one server the smallest in the key's order;
    // docs/src/refusals.md says so.
    let sql = "CREATE UNIQUE INDEX u_kz ON uqx (k, z)";
    let before = definitions("uqx").await;
    assert_eq!(
        run(&mut r, sql).await,
        Answer::Err(1062, "Duplicate entry '1-0' for key 'u_kz'".into())
    );
    let got = run(&mut p, sql).await;
    assert!(
        [
            Answer::Err(1062, "Duplicate entry '1-0' for key 'u_kz'".into()),
            Answer::Err(1062, "Duplicate entry '2-0' for key 'u_kz'".into())
        ]
        .contains(&got),
        "{got:?}"
    );
    assert_eq!(definitions("uqx").await, before);
    same_definition(&mut p, &mut r, "uqx").await;
}

/// A data error that appears after the check (a row written between the
/// check and the ALTER, here while the proxy pauses there): the
/// partitions already altered are brought back, and the client gets the
/// server's error.
#[tokio::test]
async fn a_partition_failing_after_the_check_has_the_others_brought_back() {
    let parts = mod2("id");
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (mut p, _r) = table(
        "racex",
        "CREATE TABLE racex (id INT NOT NULL PRIMARY KEY, k INT NULL, note VARCHAR(5) NULL, KEY i_k (k))",
        "INSERT INTO racex VALUES (1, 3, 'a'), (2, 5, 'b'), (3, 4, 'c'), (4, 6, 'd')",
        &parts,
    )
    .await;
    let before = definitions("racex").await;
    // In place (this ALTER would run online otherwise, and a row written
    // during an online change's copy fails it before its cutover).
    let mut config = cluster_config();
    config.proxy.online_schema_changes = hscale::config::OnlineSchemaChanges::Off;
    let other =
        ProxyProcess::start_with_env(config, &[("HSCALE_TEST_PAUSE_AFTER_DDL_CHECK_MS", "3000")]);
    let mut o = Conn::new(proxy_opts(other.port, Some(DB))).await.unwrap();
    let alter = tokio::spawn(async move {
        let r = run(
            &mut o,
            "ALTER TABLE racex MODIFY k INT UNSIGNED NULL, ADD COLUMN z INT NOT NULL DEFAULT 1 FIRST, DROP KEY i_k, RENAME COLUMN note TO note2, ADD KEY i_note (note2), COMMENT = 'changed'",
        )
        .await;
        (r, o)
    });
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    // Id 3 is in the last partition altered.
    p.query_drop("UPDATE racex SET k = -2 WHERE id = 3")
        .await
        .unwrap();
    let (got, mut o) = alter.await.unwrap();
    assert_eq!(
        got,
        Answer::Err(1264, "Out of range value for column 'k' at row 3".into())
    );
    assert_eq!(definitions("racex").await, before);
    let q = "SELECT id, k, note FROM racex ORDER BY id";
    assert_eq!(rows(&mut o, q).await, rows(&mut p, q).await);
    assert_eq!(rows(&mut p, q).await.len(), 4);
    let show = format!("HSCALE SHOW PARTITIONS('{DB}.racex')");
    assert!(rows(&mut p, &show)
        .await
        .iter()
        .all(|r| r[6].as_deref() == Some("same")));

    // A dropped column's values cannot come back: the error says which
    // partitions were left changed, and SHOW PARTITIONS shows them.
    let (mut p, _r) = table(
        "racey",
        "CREATE TABLE racey (id INT NOT NULL PRIMARY KEY, k INT NULL, gone INT NULL)",
        "INSERT INTO racey VALUES (1, 3, 1), (2, 5, 2), (3, 4, 3), (4, 6, 4)",
        &parts,
    )
    .await;
    let alter = tokio::spawn(async move {
        let r = run(
            &mut o,
            "ALTER TABLE racey DROP COLUMN gone, MODIFY k INT UNSIGNED NULL",
        )
        .await;
        (r, o)
    });
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    p.query_drop("UPDATE racey SET k = -2 WHERE id = 3")
        .await
        .unwrap();
    let (got, o) = alter.await.unwrap();
    let Answer::Err(code, message) = got else {
        panic!("{got:?}")
    };
    assert_eq!(code, 1210, "{message}");
    assert!(
        message.contains("Out of range value for column 'k' at row 3")
            && message.contains("could not all be brought back")
            && message.contains("`gone`"),
        "{message}"
    );
    let shown = rows(&mut p, &format!("HSCALE SHOW PARTITIONS('{DB}.racey')")).await;
    let differs: Vec<_> = shown
        .iter()
        .filter(|r| r[6].as_deref() != Some("same"))
        .map(|r| r[1].clone())
        .collect();
    // The default partition is the reference: the last one differs.
    assert_eq!(differs, vec![Some("racey_1".to_string())], "{shown:?}");
    o.disconnect().await.unwrap();
}

/// A partition whose definition differs from the default partition's
/// (changed behind hscale's back) is shown by HSCALE SHOW PARTITIONS.
#[tokio::test]
async fn a_partition_with_another_definition_is_reported() {
    let parts = mod2("id");
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (mut p, _r) = table(
        "diffx",
        "CREATE TABLE diffx (id INT NOT NULL PRIMARY KEY, k INT NULL)",
        "INSERT INTO diffx VALUES (1, 1), (2, 2)",
        &parts,
    )
    .await;
    let show = format!("HSCALE SHOW PARTITIONS('{DB}.diffx')");
    let shown = rows(&mut p, &show).await;
    assert!(
        shown.iter().all(|r| r[6].as_deref() == Some("same")),
        "{shown:?}"
    );
    let (b, physical) = physical_tables(&format!("{DB}.diffx"))
        .await
        .remove("diffx_1")
        .unwrap();
    let mut c = backend_conn(b, Some(DB)).await;
    c.query_drop(format!("ALTER TABLE `{physical}` MODIFY k BIGINT NULL"))
        .await
        .unwrap();
    let shown = rows(&mut p, &show).await;
    let differs: Vec<_> = shown
        .iter()
        .filter(|r| r[6].as_deref() != Some("same"))
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(differs, vec![Some("diffx_1".to_string())], "{shown:?}");
    c.query_drop(format!("ALTER TABLE `{physical}` MODIFY k INT NULL"))
        .await
        .unwrap();
}

/// A proxy starting (and any proxy after a dictionary change) compares
/// the partitions' definitions and logs each that differs: a partition
/// changed behind hscale's back is reported without anyone asking.
#[tokio::test]
async fn a_starting_proxy_logs_a_partition_with_another_definition() {
    let parts = mod2("id");
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (_p, _r) = table(
        "diffy",
        "CREATE TABLE diffy (id INT NOT NULL PRIMARY KEY, k INT NULL)",
        "INSERT INTO diffy VALUES (1, 1), (2, 2)",
        &parts,
    )
    .await;
    let (b, physical) = physical_tables(&format!("{DB}.diffy"))
        .await
        .remove("diffy_1")
        .unwrap();
    let mut c = backend_conn(b, Some(DB)).await;
    c.query_drop(format!("ALTER TABLE `{physical}` ADD COLUMN behind INT"))
        .await
        .unwrap();
    let mut config = cluster_config();
    let port = hscale::playground::mariadb::free_port().unwrap();
    config.proxy.listen = format!("127.0.0.1:{port}");
    let path = std::env::temp_dir().join(format!("hscale-test-{port}.toml"));
    std::fs::write(&path, toml::to_string(&config).unwrap()).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hscale"))
        .args(["serve", "--config"])
        .arg(&path)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut seen = Vec::new();
    let found = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if line.contains("a partition's definition is not its table's")
                    && line.contains("diffy_1")
                    && line.contains(&physical)
                {
                    break Some(line);
                }
                seen.push(line);
            }
            Err(_) => break None,
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    c.query_drop(format!("ALTER TABLE `{physical}` DROP COLUMN behind"))
        .await
        .unwrap();
    let line =
        found.unwrap_or_else(|| panic!("no warning logged; the log said:\n{}", seen.join("\n")));
    assert!(line.contains("differs"), "{line}");
}

/// The second example: a table with a column named `seq` (the
/// name of the changelog's own column) gets a partition; its rows move.
#[tokio::test]
async fn a_table_with_a_column_named_seq_gets_a_partition() {
    let (mut p, mut r) = table(
        "daily",
        "CREATE TABLE daily (at DATETIME NOT NULL, seq INT NOT NULL, PRIMARY KEY (at, seq))",
        "INSERT INTO daily VALUES ('2024-01-01 10:00:00', 1), ('2024-01-01 11:00:00', 2), ('2024-01-02 09:00:00', 1), ('2024-01-02 09:00:00', 2), ('2024-01-03 00:00:00', 1)",
        &["HSCALE SETUP_TABLE('sc_part.daily', 'at', 'daily_default', 'shard0', 'DATE(\"%Y-%m-%d\")')"],
    )
    .await;
    p.query_drop("HSCALE ADD_PARTITION('sc_part.daily', 'd0102', '2024-01-02', 'shard1')")
        .await
        .unwrap();
    p.query_drop("HSCALE ADD_PARTITION('sc_part.daily', 'd0101', '2024-01-01', 'shard0')")
        .await
        .unwrap();
    let q = "SELECT at, seq FROM daily ORDER BY at, seq";
    assert_eq!(rows(&mut p, q).await, rows(&mut r, q).await);
    let (b, physical) = physical_tables("sc_part.daily")
        .await
        .remove("d0102")
        .unwrap();
    assert_eq!(b, 1);
    let mut c = backend_conn(1, Some(DB)).await;
    let n: Vec<i64> = c
        .query(format!("SELECT seq FROM `{physical}` ORDER BY seq"))
        .await
        .unwrap();
    assert_eq!(n, vec![1, 2]);
    p.query_drop("HSCALE MOVE_PARTITION('sc_part.daily', 'd0102', 'shard0')")
        .await
        .unwrap();
    assert_eq!(rows(&mut p, q).await, rows(&mut r, q).await);
}

/// The class around it: primary key columns named as any of the
/// proxy's own columns, or with names needing quotes, move with their rows.
#[tokio::test]
async fn key_columns_named_like_the_proxys_own_move() {
    let (mut p, mut r) = table(
        "names",
        "CREATE TABLE names (`hscale_seq` INT NOT NULL, `seq` INT NOT NULL, `key_1` INT NOT NULL, `a``b c` INT NOT NULL, v INT NULL, PRIMARY KEY (`hscale_seq`, `seq`, `key_1`, `a``b c`))",
        "INSERT INTO names VALUES (1, 1, 1, 1, 10), (2, 2, 2, 2, 20), (3, 3, 3, 3, 30), (4, 4, 4, 4, 40)",
        &["HSCALE SETUP_TABLE('sc_part.names', 'seq', 'names_default', 'shard0', 'MOD(2)')"],
    )
    .await;
    p.query_drop("HSCALE ADD_PARTITION('sc_part.names', 'n1', '1', 'shard1')")
        .await
        .unwrap();
    p.query_drop("HSCALE ADD_PARTITION('sc_part.names', 'n0', '0', 'shard1')")
        .await
        .unwrap();
    p.query_drop("HSCALE MOVE_PARTITION('sc_part.names', 'n0', 'shard0')")
        .await
        .unwrap();
    let q = "SELECT * FROM names ORDER BY 1";
    assert_eq!(rows(&mut p, q).await, rows(&mut r, q).await);
    for c in [&mut p, &mut r] {
        c.query_drop("UPDATE names SET v = v + 1 WHERE seq > 1")
            .await
            .unwrap();
    }
    assert_eq!(rows(&mut p, q).await, rows(&mut r, q).await);
}

/// The third example: a table without a primary key gets a
/// partition when no row has to move; when rows would move, the refusal
/// names the cause and the fix, and nothing changes.
#[tokio::test]
async fn a_table_without_a_primary_key_gets_a_partition_when_no_row_moves() {
    let (mut p, _r) = table(
        "nopk",
        "CREATE TABLE nopk (id INT NOT NULL, v INT)",
        "",
        &["HSCALE SETUP_TABLE('sc_part.nopk', 'id', 'nopk_default', 'shard0', 'MOD(3)')"],
    )
    .await;
    p.query_drop("HSCALE ADD_PARTITION('sc_part.nopk', 'p1', '1', 'shard1')")
        .await
        .unwrap();
    p.query_drop("INSERT INTO nopk VALUES (1, 10), (3, 30), (4, 40), (6, 60)")
        .await
        .unwrap();
    // Rows 3 and 6 stay in the default partition: no row moves.
    p.query_drop("HSCALE ADD_PARTITION('sc_part.nopk', 'p2', '2', 'shard1')")
        .await
        .unwrap();
    let before = physical_tables("sc_part.nopk").await;
    let e = p
        .query_drop("HSCALE ADD_PARTITION('sc_part.nopk', 'p0', '0', 'shard1')")
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("no primary key") && msg.contains("ADD PRIMARY KEY"),
        "{msg}"
    );
    assert_eq!(physical_tables("sc_part.nopk").await, before);
    let q = "SELECT id, v FROM nopk ORDER BY id";
    assert_eq!(
        rows(&mut p, q).await,
        rows(
            &mut p,
            "SELECT 1, 10 UNION ALL SELECT 3, 30 UNION ALL SELECT 4, 40 UNION ALL SELECT 6, 60"
        )
        .await
    );
    let where2: Vec<i64> = p.query("SELECT id FROM nopk WHERE id = 4").await.unwrap();
    assert_eq!(where2, vec![4]);
    // Moving a partition with rows is refused the same way; an empty one moves.
    let e = p
        .query_drop("HSCALE MOVE_PARTITION('sc_part.nopk', 'p1', 'shard0')")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("no primary key"), "{e}");
    p.query_drop("HSCALE MOVE_PARTITION('sc_part.nopk', 'p2', 'shard0')")
        .await
        .unwrap();
    assert_eq!(physical_tables("sc_part.nopk").await["p2"].0, 0);
    p.query_drop("HSCALE DROP_PARTITION('sc_part.nopk', 'p2')")
        .await
        .unwrap();
    assert_eq!(rows(&mut p, q).await.len(), 4);
    // The fix the refusal names: a primary key holding the partition key
    // (added to every partition), then the rows move.
    p.query_drop("ALTER TABLE nopk ADD PRIMARY KEY (id)")
        .await
        .unwrap();
    p.query_drop("HSCALE ADD_PARTITION('sc_part.nopk', 'p0', '0', 'shard1')")
        .await
        .unwrap();
    let (b, physical) = physical_tables("sc_part.nopk").await.remove("p0").unwrap();
    let mut c = backend_conn(b, Some(DB)).await;
    let moved: Vec<i64> = c
        .query(format!("SELECT id FROM `{physical}` ORDER BY id"))
        .await
        .unwrap();
    assert_eq!(moved, vec![3, 6]);
    assert_eq!(rows(&mut p, q).await.len(), 4);
}

/// A table whose copy the check cannot make as a temporary table (a
/// FULLTEXT key) still changes, and still refuses as one server does.
#[tokio::test]
async fn a_table_with_a_fulltext_key_changes_as_on_one_server() {
    let parts = mod2("id");
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let (mut p, mut r) = table(
        "ftx",
        "CREATE TABLE ftx (id INT NOT NULL PRIMARY KEY, k INT NULL, body TEXT NULL, FULLTEXT KEY f (body))",
        "INSERT INTO ftx VALUES (1, 1, 'one'), (2, -2, 'two'), (3, 3, 'three')",
        &parts,
    )
    .await;
    fails_alike(
        &mut p,
        &mut r,
        "ftx",
        "ALTER TABLE ftx MODIFY k INT UNSIGNED NULL",
    )
    .await;
    fails_alike(
        &mut p,
        &mut r,
        "ftx",
        "ALTER TABLE ftx ADD COLUMN k INT NULL",
    )
    .await;
    let sql = "ALTER TABLE ftx MODIFY body MEDIUMTEXT NULL";
    assert_eq!(run(&mut p, sql).await, run(&mut r, sql).await);
    same_definition(&mut p, &mut r, "ftx").await;
}

/// A row that would move, written to a table without a primary key after
/// its change looked (here while the change's proxy pauses after its
/// empty copy): the cutover finds it once the source is fenced, names the
/// source back and refuses; the row stays where it was, readable.
#[tokio::test]
async fn a_row_written_during_a_change_of_a_table_without_a_primary_key_undoes_it() {
    let (mut p, _r) = table(
        "nopk2",
        "CREATE TABLE nopk2 (id INT NOT NULL, v INT)",
        "INSERT INTO nopk2 VALUES (3, 30)",
        &["HSCALE SETUP_TABLE('sc_part.nopk2', 'id', 'nopk2_default', 'shard0', 'MOD(3)')"],
    )
    .await;
    let before = physical_tables("sc_part.nopk2").await;
    let other = ProxyProcess::start_with_env(
        cluster_config(),
        &[("HSCALE_TEST_PAUSE_AFTER_COPY_MS", "3000")],
    );
    let mut o = Conn::new(proxy_opts(other.port, Some(DB))).await.unwrap();
    let add = tokio::spawn(async move {
        let r = o
            .query_drop("HSCALE ADD_PARTITION('sc_part.nopk2', 'p1', '1', 'shard1')")
            .await;
        (r, o)
    });
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    p.query_drop("INSERT INTO nopk2 VALUES (4, 40)")
        .await
        .unwrap();
    let (got, o) = add.await.unwrap();
    let e = got.unwrap_err();
    assert!(
        e.to_string()
            .contains("`sc_part`.`nopk2` has no primary key"),
        "{e}"
    );
    assert_eq!(physical_tables("sc_part.nopk2").await, before);
    let q = "SELECT id, v FROM nopk2 ORDER BY id";
    assert_eq!(
        rows(&mut p, q).await,
        vec![
            vec![Some("3".into()), Some("30".into())],
            vec![Some("4".into()), Some("40".into())]
        ]
    );
    let one: Vec<i64> = p.query("SELECT v FROM nopk2 WHERE id = 4").await.unwrap();
    assert_eq!(one, vec![40]);
    o.disconnect().await.unwrap();
}
