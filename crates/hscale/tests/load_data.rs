#![allow(clippy::unwrap_used)]
//! `LOAD DATA LOCAL INFILE` into a partitioned table, compared with one
//! server: the same files (quoted fields holding terminators, escaped
//! line breaks, `\N`, IGNORE n LINES, column lists with `@var` and SET,
//! bad values that warn, short and long rows, duplicates under IGNORE and
//! REPLACE, LINES STARTING BY, an empty file) loaded through hscale into a
//! table partitioned over three backends and, directly, into one server's
//! table. After each load: the same affected rows, warnings, info text and
//! warning codes, then the same rows in both tables; at the end every row
//! sits in the physical table the dictionary names for its key (keys the
//! column converts, `'7abc'`, `1.5`, beyond its range, included). Loads the
//! proxy cannot place exactly are refused with 1235 and load nothing; a
//! client without CLIENT_LOCAL_FILES gets the server's own error; the
//! mariadb command-line client loads through hscale.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, OptsBuilder, WhiteListFsHandler};

const DB: &str = "ld_part";
const REF: &str = "ld_ref";

const SCHEMA: &str = "CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, s VARCHAR(20) NULL, n INT NULL, note VARCHAR(40) NULL, PRIMARY KEY (id, k))";

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('t', 'k', 't_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('t', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('t', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('t', 'm3', '3', 'shard0')",
    "HSCALE ADD_PARTITION('t', 'm1', '-1', 'shard1')",
];

/// A file for one load, under the cluster's directory.
fn file(name: &str, contents: &[u8]) -> PathBuf {
    let dir = cluster(3).dir.join("load_data");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{name}.txt"));
    std::fs::write(&p, contents).unwrap();
    p
}

/// What a load answered: an error code, or (affected rows, warnings,
/// info, the conditions SHOW WARNINGS lists, code and message, sorted).
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Err(u16),
    Ok(u64, u16, String, Vec<(u16, String)>),
}

/// A message naming `db`.`table`.`column` with the database left out (the
/// two sides' databases differ).
fn without_db(m: &str) -> String {
    match m.find("`.`") {
        Some(end) => match m[..end].rfind('`') {
            Some(start) => format!("{}`<db>{}", &m[..start], &m[end..]),
            None => m.to_string(),
        },
        None => m.to_string(),
    }
}

async fn run(c: &mut Conn, sql: &str) -> Answer {
    match c.query_drop(sql).await {
        Ok(()) => {
            let (affected, warnings, info) =
                (c.affected_rows(), c.get_warnings(), c.info().into_owned());
            let mut codes: Vec<(u16, String)> = c
                .query_map(
                    "SHOW WARNINGS",
                    |(_, code, message): (String, u16, String)| (code, without_db(&message)),
                )
                .await
                .unwrap();
            codes.sort_unstable();
            Answer::Ok(affected, warnings, info, codes)
        }
        Err(e) => Answer::Err(code(&e)),
    }
}

async fn rows(c: &mut Conn) -> Vec<(i64, i64, Option<String>, Option<i64>, Option<String>)> {
    c.query("SELECT id, k, s, n, note FROM t ORDER BY id, k")
        .await
        .unwrap()
}

/// Check that every row of `db.t` sits in the physical table the
/// dictionary names for its key, on the backends themselves; the rows
/// seen.
async fn placed_rows(db: &str) -> u64 {
    let partitions = physical_tables(&format!("{db}.t")).await;
    let mut seen = 0;
    for (partition, (backend, physical)) in &partitions {
        let mut b = backend_conn(*backend, Some(db)).await;
        let keys: Vec<i64> = b.query(format!("SELECT k FROM {physical}")).await.unwrap();
        for k in &keys {
            let want = match k % 4 {
                1 | -1 => "m1",
                2 => "m2",
                3 => "m3",
                _ => "",
            };
            assert_eq!(partition, want, "key {k} in {physical}");
        }
        seen += keys.len() as u64;
        b.disconnect().await.unwrap();
    }
    seen
}

/// The loads, as (file name, contents, statement with `{f}` for the file).
fn loads() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let mut tab = Vec::new();
    for id in 0..40i64 {
        let k = id % 9 - 2; // -2 ..= 6: every partition and the default
        tab.extend_from_slice(format!("{id}\t{k}\ts{id}\\\tx\\\nline2\t{id}\t\\N\n").as_bytes());
    }
    vec![
        // Tab-separated, the defaults: escaped tab and line break, \N.
        ("tab", tab, "LOAD DATA LOCAL INFILE '{f}' INTO TABLE t"),
        // CSV with a header, quoted fields holding commas, quotes and CRLF.
        (
            "csv",
            b"id,k,s,n,note\r\n100,1,\"a,b\",1,\"say \"\"hi\"\"\"\r\n101,2,\"line\r\nbreak\",2,NULL\r\n102,0,plain,3,\"NULL\"\r\n103,7,\"x\",4,last\r\n104,-1,\"\",5,\r\n".to_vec(),
            "LOAD DATA LOCAL INFILE '{f}' INTO TABLE t FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES",
        ),
        // A column list with variables and a SET clause.
        (
            "vars",
            b"200;3;hello;7\n201;4;world;8\n202;5;again;9\n203;-2;neg;10\n".to_vec(),
            "LOAD DATA LOCAL INFILE '{f}' INTO TABLE t FIELDS TERMINATED BY ';' (id, k, @raw, @num) SET s = UPPER(@raw), n = @num * 10, note = CONCAT(@raw, '-', k)",
        ),
        // Bad values, short and long rows: warnings.
        (
            "bad",
            b"300\t1\tok\tnot a number\tx\n301\t2\n302\t3\ttoo long for the column s!\t1\tnote\textra\tmore\n303\t0\t\t12abc\n".to_vec(),
            "LOAD DATA LOCAL INFILE '{f}' INTO TABLE t",
        ),
        // Duplicates: LOCAL skips them (as IGNORE), REPLACE replaces them.
        (
            "dups",
            b"0\t-2\tdup\t0\t\\N\n1\t-1\tdup\t0\t\\N\n304\t4\tnew\t0\t\\N\n".to_vec(),
            "LOAD DATA LOCAL INFILE '{f}' INTO TABLE t",
        ),
        (
            "dups_ignore",
            b"2\t0\tdup\t0\t\\N\n305\t5\tnew\t0\t\\N\n".to_vec(),
            "LOAD DATA LOCAL INFILE '{f}' IGNORE INTO TABLE t",
        ),
        (
            "dups_replace",
            b"3\t1\treplaced\t1\t\\N\n4\t2\treplaced\t2\t\\N\n306\t6\tnew\t3\t\\N\n".to_vec(),
            "LOAD DATA LOCAL INFILE '{f}' REPLACE INTO TABLE t",
        ),
        // LINES STARTING BY: junk before the prefix, lines without it.
        (
            "starting",
            b"junk>>400|1|a\nno prefix here\n>>401|2|b\nx>>402|3|c\n".to_vec(),
            "LOAD DATA LOCAL INFILE '{f}' INTO TABLE t FIELDS TERMINATED BY '|' LINES STARTING BY '>>' (id, k, s)",
        ),
        // Only the ignored lines; then nothing at all.
        (
            "header_only",
            b"a header line\n".to_vec(),
            "LOAD DATA LOCAL INFILE '{f}' INTO TABLE t IGNORE 1 LINES",
        ),
        ("empty", Vec::new(), "LOAD DATA LOCAL INFILE '{f}' INTO TABLE t"),
        // Keys the column stores as another value (asked of the backend,
        // `exec/conversions.rs`): truncated text, a fraction, an exponent,
        // beyond INT's range, leading spaces.
        (
            "converted_keys",
            b"500\tx5\n501\t7abc\n502\t1.5\n503\t99999999999\n504\t-2.5\n505\t  3\n506\t2e0\n507\t-99999999999\n508\t13e1x\n509\t7abc\n".to_vec(),
            "LOAD DATA LOCAL INFILE '{f}' INTO TABLE t (id, k)",
        ),
        // A large file: many packets, every partition.
        (
            "large",
            (0..20_000)
                .flat_map(|i: i64| format!("{},{},{}\n", 10_000 + i, i % 11 - 3, "v".repeat((i % 50) as usize)).into_bytes())
                .collect(),
            "LOAD DATA LOCAL INFILE '{f}' INTO TABLE t FIELDS TERMINATED BY ',' (id, k, s)",
        ),
    ]
}

fn with_files(opts: mysql_async::Opts, files: &[PathBuf]) -> mysql_async::Opts {
    OptsBuilder::from_opts(opts)
        .local_infile_handler(Some(WhiteListFsHandler::new(files.to_vec())))
        .into()
}

#[tokio::test]
async fn loads_match_one_server() {
    let info = cluster(3);
    let mut setup = proxy_conn(None).await;
    for db in [DB, REF] {
        setup
            .query_drop(format!("DROP DATABASE IF EXISTS {db}"))
            .await
            .unwrap();
        setup
            .query_drop(format!("CREATE DATABASE {db}"))
            .await
            .unwrap();
        setup.query_drop(format!("USE {db}")).await.unwrap();
        setup.query_drop(SCHEMA).await.unwrap();
    }
    setup.query_drop(format!("USE {DB}")).await.unwrap();
    for s in PARTITIONING {
        setup
            .query_drop(*s)
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    setup.disconnect().await.unwrap();
    let loads = loads();
    let paths: Vec<PathBuf> = loads.iter().map(|(n, c, _)| file(n, c)).collect();
    let mut p = Conn::new(with_files(proxy_opts(info.proxy_port, Some(DB)), &paths))
        .await
        .unwrap();
    let mut r = Conn::new(with_files(
        backend_opts(info.backend_ports[0], Some(REF)),
        &paths,
    ))
    .await
    .unwrap();
    let mut wrong = Vec::new();
    for ((name, _, sql), path) in loads.iter().zip(&paths) {
        let sql = sql.replace("{f}", &path.display().to_string());
        let want = run(&mut r, &sql).await;
        let got = run(&mut p, &sql).await;
        assert!(
            matches!(want, Answer::Ok(..)),
            "{name}: the reference refused: {want:?}"
        );
        if got != want {
            wrong.push(format!("{name}: hscale {got:?}\n  reference {want:?}"));
        }
        if rows(&mut p).await != rows(&mut r).await {
            wrong.push(format!("{name}: the rows differ afterwards"));
            break;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let n: u64 = p
        .query_first("SELECT COUNT(*) FROM t")
        .await
        .unwrap()
        .unwrap();
    assert!(n > 20_000, "{n}");
    assert_eq!(placed_rows(DB).await, n);
    p.disconnect().await.unwrap();
    r.disconnect().await.unwrap();
}

#[tokio::test]
async fn loads_the_proxy_cannot_place_are_refused_whole() {
    let info = cluster(3);
    fresh_db("ld_refuse").await;
    let mut c = proxy_conn(Some("ld_refuse")).await;
    c.query_drop(SCHEMA).await.unwrap();
    for s in PARTITIONING {
        c.query_drop(*s).await.unwrap();
    }
    c.disconnect().await.unwrap();
    let bad_key = file("bad_key", b"1\t1\n2\t2\n3\tx5\n");
    let null_key = file("null_key", b"1\t1\n2\t\\N\n");
    let short = file("short", b"1\t1\n2\n");
    let paths = [bad_key.clone(), null_key.clone(), short.clone()];
    let mut c = Conn::new(with_files(
        proxy_opts(info.proxy_port, Some("ld_refuse")),
        &paths,
    ))
    .await
    .unwrap();
    let cases = [
        format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE t (id, k)",
            null_key.display()
        ),
        format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE t (id, k)",
            short.display()
        ),
        format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE t (id, @k) SET k = @k",
            bad_key.display()
        ),
        format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE t (id, s)",
            bad_key.display()
        ),
        format!("LOAD DATA INFILE '{}' INTO TABLE t", bad_key.display()),
        format!("LOAD XML LOCAL INFILE '{}' INTO TABLE t", bad_key.display()),
    ];
    for sql in &cases {
        let e = c.query_drop(sql).await.unwrap_err();
        assert_eq!(code(&e), 1235, "{sql}: {e}");
        // The connection goes on: the file (if asked for) was read whole.
        let n: u64 = c
            .query_first("SELECT COUNT(*) FROM t")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 0, "{sql} loaded rows");
    }
    // Then a load the proxy places goes through on the same connection.
    let good = format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE t (id, k)",
        short.display()
    );
    let e = c.query_drop(&good).await.unwrap_err();
    assert_eq!(code(&e), 1235, "{e}");
    let fine = file("fine", b"1\t1\n2\t2\n3\t0\n");
    let mut c2 = Conn::new(with_files(
        proxy_opts(info.proxy_port, Some("ld_refuse")),
        std::slice::from_ref(&fine),
    ))
    .await
    .unwrap();
    c2.query_drop(format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE t (id, k)",
        fine.display()
    ))
    .await
    .unwrap();
    assert_eq!(c2.affected_rows(), 3);
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM t")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 3);
    c.disconnect().await.unwrap();
    c2.disconnect().await.unwrap();
}

#[tokio::test]
async fn a_load_that_fails_on_one_partition_loads_nothing_as_on_one_server() {
    let info = cluster(3);
    let (db, reference) = ("ld_atomic", "ld_atomic_ref");
    fresh_db(db).await;
    fresh_db(reference).await;
    let mut c = proxy_conn(Some(db)).await;
    c.query_drop(SCHEMA).await.unwrap();
    for s in PARTITIONING {
        c.query_drop(*s).await.unwrap();
    }
    // A trigger that fails the row 'boom': on one server's table, and on
    // the physical table of partition m2 only.
    let trigger = |table: &str| {
        format!(
            "CREATE TRIGGER boom BEFORE INSERT ON {table} FOR EACH ROW IF NEW.s = 'boom' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'boom'; END IF"
        )
    };
    let mut r = backend_conn(0, Some(reference)).await;
    r.query_drop(SCHEMA).await.unwrap();
    r.query_drop(trigger("t")).await.unwrap();
    let (backend, m2) = physical_tables(&format!("{db}.t")).await["m2"].clone();
    let mut b = backend_conn(backend, Some(db)).await;
    b.query_drop(trigger(&m2)).await.unwrap();
    b.disconnect().await.unwrap();
    // Rows for every partition first, the failing one last.
    let f = file(
        "atomic",
        b"1\t1\ta\n2\t3\tb\n3\t0\tc\n4\t-1\td\n5\t2\te\n6\t6\tboom\n",
    );
    let sql = format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE t (id, k, s)",
        f.display()
    );
    let files = std::slice::from_ref(&f);
    let mut p = Conn::new(with_files(proxy_opts(info.proxy_port, Some(db)), files))
        .await
        .unwrap();
    let mut r = Conn::new(with_files(
        backend_opts(info.backend_ports[0], Some(reference)),
        files,
    ))
    .await
    .unwrap();
    let want = run(&mut r, &sql).await;
    let got = run(&mut p, &sql).await;
    assert_eq!(want, Answer::Err(1644));
    assert_eq!(got, want);
    for conn in [&mut p, &mut r] {
        let n: u64 = conn
            .query_first("SELECT COUNT(*) FROM t")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 0);
    }
    // Inside a transaction the load is one statement of it.
    p.query_drop("BEGIN").await.unwrap();
    let ok = format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE t (id, k, s) SET s = 'x'",
        f.display()
    );
    p.query_drop(&ok).await.unwrap();
    assert_eq!(p.affected_rows(), 6);
    p.query_drop("ROLLBACK").await.unwrap();
    let n: u64 = p
        .query_first("SELECT COUNT(*) FROM t")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 0);
    // A load that fails inside a transaction is undone whole, as one
    // server rolls back a failed statement, and the transaction goes on:
    // as its first statement and after another write, opened by BEGIN or
    // by autocommit=0. Before, the partitions loaded before the failing
    // one kept their rows, and COMMIT made them durable.
    let scripts: &[&[&str]] = &[
        &[
            "BEGIN",
            "LOAD",
            "INSERT INTO t VALUES (100, 1, 'after', NULL, NULL)",
            "COMMIT",
        ],
        &[
            "BEGIN",
            "INSERT INTO t VALUES (101, 2, 'before', NULL, NULL)",
            "LOAD",
            "INSERT INTO t VALUES (102, 3, 'after', NULL, NULL)",
            "COMMIT",
        ],
        &[
            "SET autocommit = 0",
            "INSERT INTO t VALUES (103, 0, 'before', NULL, NULL)",
            "LOAD",
            "COMMIT",
            "SET autocommit = 1",
        ],
        &[
            "SET autocommit = 0",
            "LOAD",
            "INSERT INTO t VALUES (104, -1, 'after', NULL, NULL)",
            "COMMIT",
            "SET autocommit = 1",
        ],
    ];
    for script in scripts {
        for conn in [&mut p, &mut r] {
            for step in script.iter() {
                if *step == "LOAD" {
                    assert_eq!(run(conn, &sql).await, Answer::Err(1644), "{script:?}");
                } else {
                    conn.query_drop(*step).await.unwrap();
                }
            }
        }
        assert_eq!(rows(&mut p).await, rows(&mut r).await, "{script:?}");
    }
    assert_eq!(rows(&mut p).await.len(), 5);
    assert_eq!(placed_rows(db).await, 5);
    c.disconnect().await.unwrap();
    p.disconnect().await.unwrap();
    r.disconnect().await.unwrap();
}

/// The mariadb client, `--local-infile=<on>`, running `sql` on `port`.
fn mariadb(port: u16, user: &str, password: &str, on: bool, sql: &str) -> (bool, String) {
    let mut cmd = Command::new("mariadb");
    cmd.args(["-h127.0.0.1", &format!("-P{port}"), &format!("-u{user}")]);
    if !password.is_empty() {
        cmd.arg(format!("-p{password}"));
    }
    let out = cmd
        .args([
            "--skip-ssl",
            &format!("--local-infile={}", u8::from(on)),
            "ld_cli",
            "-e",
            sql,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.success(), text)
}

#[tokio::test]
async fn the_mariadb_client_loads_and_a_client_without_local_files_gets_the_servers_error() {
    let info = cluster(3);
    fresh_db("ld_cli").await;
    let mut c = proxy_conn(Some("ld_cli")).await;
    c.query_drop(SCHEMA).await.unwrap();
    for s in PARTITIONING {
        c.query_drop(*s).await.unwrap();
    }
    let f = file("cli", b"1\t1\ta\n2\t2\tb\n3\t3\tc\n4\t4\td\n5\t-1\te\n");
    let sql = format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE t (id, k, s)",
        f.display()
    );
    // Refused by the client's own capability, through hscale and directly.
    let (ok, through) = mariadb(info.proxy_port, "root", "", false, &sql);
    assert!(!ok);
    let (ok, direct) = mariadb(info.backend_ports[0], "hscale", "hscale", false, &sql);
    assert!(!ok);
    let head = |s: &str| s.split(':').next().unwrap_or("").trim().to_string();
    assert_eq!(head(&through), head(&direct), "{through} / {direct}");
    assert!(through.contains("4166"), "{through}");
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM t")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 0);
    let (ok, err) = mariadb(info.proxy_port, "root", "", true, &sql);
    assert!(ok, "{err}");
    let got: Vec<(i64, i64, String)> = c.query("SELECT id, k, s FROM t ORDER BY id").await.unwrap();
    assert_eq!(got.len(), 5, "{got:?}");
    assert_eq!(got[4], (5, -1, "e".to_string()));
    c.disconnect().await.unwrap();
}

#[tokio::test]
async fn a_load_into_a_global_table_reaches_every_copy_as_on_one_server() {
    let info = cluster(3);
    let (db, reference) = ("ld_global", "ld_global_ref");
    fresh_db(db).await;
    fresh_db(reference).await;
    let g = "CREATE TABLE g (id INT NOT NULL PRIMARY KEY, name VARCHAR(10) NULL, n INT NULL)";
    let mut c = proxy_conn(Some(db)).await;
    c.query_drop(g).await.unwrap();
    c.query_drop("HSCALE SETUP_GLOBAL_TABLE('g')")
        .await
        .unwrap();
    let mut r = backend_conn(0, Some(reference)).await;
    r.query_drop(g).await.unwrap();
    r.query_drop("INSERT INTO g VALUES (1, 'old', 0)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO g VALUES (1, 'old', 0)")
        .await
        .unwrap();
    let f = file(
        "global",
        b"id,name,n\n1,dup,1\n2,\"b,c\",x\n3,longer than ten,3\n4,d\n",
    );
    let sql = format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE g FIELDS TERMINATED BY ',' ENCLOSED BY '\"' IGNORE 1 LINES",
        f.display()
    );
    let files = std::slice::from_ref(&f);
    let mut p = Conn::new(with_files(proxy_opts(info.proxy_port, Some(db)), files))
        .await
        .unwrap();
    let mut r = Conn::new(with_files(
        backend_opts(info.backend_ports[0], Some(reference)),
        files,
    ))
    .await
    .unwrap();
    let want = run(&mut r, &sql).await;
    assert!(matches!(want, Answer::Ok(3, 4, ..)), "{want:?}");
    assert_eq!(run(&mut p, &sql).await, want);
    let read = "SELECT id, name, n FROM g ORDER BY id";
    let want: Vec<(i64, Option<String>, Option<i64>)> = r.query(read).await.unwrap();
    for b in 0..3 {
        let mut copy = backend_conn(b, Some(db)).await;
        let got: Vec<(i64, Option<String>, Option<i64>)> = copy.query(read).await.unwrap();
        assert_eq!(got, want, "copy on backend {b}");
        copy.disconnect().await.unwrap();
    }
    let e = p
        .query_drop(format!("LOAD DATA INFILE '{}' INTO TABLE g", f.display()))
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235);
    c.disconnect().await.unwrap();
    p.disconnect().await.unwrap();
    r.disconnect().await.unwrap();
}

#[tokio::test]
async fn string_keys_the_backend_weighs_land_where_reads_find_them() {
    let info = cluster(3);
    let (db, reference) = ("ld_weighed", "ld_weighed_ref");
    fresh_db(db).await;
    fresh_db(reference).await;
    let w = "CREATE TABLE w (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL PRIMARY KEY, n INT)";
    let mut c = proxy_conn(Some(db)).await;
    c.query_drop(w).await.unwrap();
    c.query_drop("HSCALE SETUP_TABLE('w', 'k', 'w_default', 'shard0', 'HASH(4)')")
        .await
        .unwrap();
    for (p, backend) in [
        ("0", "shard0"),
        ("1", "shard1"),
        ("2", "shard2"),
        ("3", "shard1"),
    ] {
        c.query_drop(format!(
            "HSCALE ADD_PARTITION('w', 'h{p}', '{p}', '{backend}')"
        ))
        .await
        .unwrap();
    }
    let mut r = backend_conn(0, Some(reference)).await;
    r.query_drop(w).await.unwrap();
    let f = file(
        "weighed",
        "straße\t1\nﬁle\t2\nÅsa\t3\nSTRASSE\t4\ncote\t5\nnoël\t6\nFILE \t7\n".as_bytes(),
    );
    let sql = format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE w CHARACTER SET utf8mb4",
        f.display()
    );
    let files = std::slice::from_ref(&f);
    let mut p = Conn::new(with_files(proxy_opts(info.proxy_port, Some(db)), files))
        .await
        .unwrap();
    let mut r = Conn::new(with_files(
        backend_opts(info.backend_ports[0], Some(reference)),
        files,
    ))
    .await
    .unwrap();
    let want = run(&mut r, &sql).await;
    assert!(matches!(want, Answer::Ok(5, 2, ..)), "{want:?}");
    assert_eq!(run(&mut p, &sql).await, want);
    let read = "SELECT k, n FROM w ORDER BY n";
    let got: Vec<(String, i64)> = p.query(read).await.unwrap();
    let want: Vec<(String, i64)> = r.query(read).await.unwrap();
    assert_eq!(got, want);
    for (twin, n) in [
        ("STRASSE", 1),
        ("FILE", 2),
        ("asa", 3),
        ("CÔTE", 5),
        ("NOEL", 6),
    ] {
        let found: Option<i64> = p
            .exec_first("SELECT n FROM w WHERE k = ?", (twin,))
            .await
            .unwrap();
        assert_eq!(found, Some(n), "{twin}");
    }
    c.disconnect().await.unwrap();
    p.disconnect().await.unwrap();
    r.disconnect().await.unwrap();
}

/// Loads through one proxy process while partitions move and the default
/// partition is carved up through another: the fence runs a load that met
/// a renamed table again from the file it holds, so every load is answered
/// with all its rows, and every row sits once in the table its partition
/// names on the backends themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_while_partitions_move_lose_nothing() {
    const MOVES_DB: &str = "ld_moves";
    // Files are written just before their load, so the loads cannot run
    // out before the changes end on a slow machine.
    const FILES: i64 = 100_000;
    const ROWS: i64 = 300;
    cluster(3);
    let mut admin = proxy_conn(None).await;
    admin
        .query_drop(format!("CREATE DATABASE {MOVES_DB}"))
        .await
        .unwrap();
    admin.query_drop(format!("USE {MOVES_DB}")).await.unwrap();
    admin.query_drop(SCHEMA).await.unwrap();
    for s in &PARTITIONING[..4] {
        admin.query_drop(*s).await.unwrap();
    }
    let dir = cluster(3).dir.join("load_data");
    std::fs::create_dir_all(&dir).unwrap();
    let paths: Vec<PathBuf> = (0..FILES)
        .map(|f| dir.join(format!("moves_{f}.txt")))
        .collect();
    let loader_proxy = ProxyProcess::start(cluster_config());
    let opts = with_files(proxy_opts(loader_proxy.port, Some(MOVES_DB)), &paths);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let loader = tokio::spawn({
        let (paths, stop) = (paths.clone(), stop.clone());
        async move {
            let mut c = Conn::new(opts).await.unwrap();
            let mut loaded = 0;
            for (f, p) in (0i64..).zip(&paths) {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let rows: Vec<u8> = (0..ROWS)
                    .flat_map(|i| format!("{},{},f{f}\n", f * 1000 + i, i % 8).into_bytes())
                    .collect();
                std::fs::write(p, rows).unwrap();
                let sql = format!(
                    "LOAD DATA LOCAL INFILE '{}' INTO TABLE t FIELDS TERMINATED BY ',' (id, k, s)",
                    p.display()
                );
                c.query_drop(&sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                assert_eq!(c.affected_rows(), ROWS as u64, "{sql}");
                loaded += 1;
            }
            c.disconnect().await.unwrap();
            loaded
        }
    });
    // A carve of the default partition and three moves, each renaming the
    // tables it takes keys from, while the loads go on.
    for change in [
        "HSCALE MOVE_PARTITION('t', 'm1', 'shard2')",
        "HSCALE ADD_PARTITION('t', 'm0', '0', 'shard1')",
        "HSCALE MOVE_PARTITION('t', 'm2', 'shard0')",
        "HSCALE MOVE_PARTITION('t', 'm1', 'shard1')",
    ] {
        admin.query_drop(change).await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let loaded = loader.await.unwrap();
    assert!(loaded < FILES, "the loads ran out before the changes ended");
    let count: Option<i64> = admin.query_first("SELECT COUNT(*) FROM t").await.unwrap();
    assert_eq!(count, Some(loaded * ROWS));
    let mut ids = Vec::new();
    for (name, (backend, table)) in physical_tables(&format!("{MOVES_DB}.t")).await {
        let mut b = backend_conn(backend, Some(MOVES_DB)).await;
        let rows: Vec<(i64, i64)> = b
            .query(format!("SELECT id, k FROM `{table}`"))
            .await
            .unwrap();
        for (id, k) in rows {
            let home = match (k % 4, name.as_str()) {
                (0, "m0") | (1, "m1") | (2, "m2") | (3, "m3") => true,
                (v, "") => v != 0 && !(1..=3).contains(&v),
                _ => false,
            };
            assert!(
                home,
                "id {id} k {k} in {table} on shard{backend} (partition {name:?})"
            );
            ids.push(id);
        }
        b.disconnect().await.unwrap();
    }
    ids.sort_unstable();
    let want: Vec<i64> = (0..loaded)
        .flat_map(|f| (0..ROWS).map(move |i| f * 1000 + i))
        .collect();
    assert_eq!(ids, want);
    admin.disconnect().await.unwrap();
}
