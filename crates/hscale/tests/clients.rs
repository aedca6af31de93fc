#![allow(clippy::unwrap_used)]
//! The clients people really use, run against hscale: the mariadb CLI, JDBC,
//! mariadb-slap, sysbench (both prepared-statement modes), PyMySQL and
//! aiomysql.

mod common;

use std::process::Command;

use common::*;

fn port() -> u16 {
    cluster(2).proxy_port
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (run `make deps`)"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}:\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

fn mariadb(args: &[&str]) -> Command {
    let mut c = Command::new("mariadb");
    c.args([
        "-h127.0.0.1",
        &format!("-P{}", port()),
        "-uroot",
        "--batch",
        "--skip-ssl",
    ]);
    c.args(args);
    c
}

#[test]
fn mariadb_cli() {
    let out = run(&mut mariadb(&["-e", "SELECT 1+1 AS two, 'héllo' AS s"]));
    assert_eq!(out, "two\ts\n2\théllo\n");
    let script = "CREATE DATABASE IF NOT EXISTS cli_db;\nUSE cli_db;\nDROP TABLE IF EXISTS t;\n\
                  CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10));\n\
                  INSERT INTO t VALUES (1,'a'),(2,'b'),(3,NULL);\n\
                  SELECT id, v FROM t ORDER BY id;\nSELECT COUNT(*) AS n FROM t WHERE v IS NULL;\n";
    let mut cmd = mariadb(&[]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("mariadb");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "id\tv\n1\ta\n2\tb\n3\tNULL\nn\n1\n"
    );
    // OK packets hscale writes itself (here with an info message) and its
    // own result sets read cleanly in libmariadb.
    let out = run(&mut mariadb(&["-e", "HSCALE RELOAD"]));
    assert_eq!(out, "");
    let out = run(&mut mariadb(&["-e", "HSCALE SHOW BACKENDS"]));
    assert!(
        out.starts_with("name\taddress\tstatus\topen\tidle\tdown_since\nshard0\t127.0.0.1:"),
        "{out}"
    );
    // Errors come back with the server's code and message.
    let out = mariadb(&["-e", "SELECT * FROM cli_db.missing"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ERROR 1146"));
}

#[test]
fn mariadb_slap() {
    run(Command::new("mariadb-slap").args([
        "-h127.0.0.1",
        &format!("-P{}", port()),
        "-uroot",
        "--concurrency=10",
        "--iterations=2",
        "--number-of-queries=2000",
        "--auto-generate-sql",
        "--auto-generate-sql-load-type=mixed",
    ]));
}

#[test]
fn sysbench_read_write_both_ps_modes() {
    let p = port().to_string();
    let base = [
        "--mysql-host=127.0.0.1".to_string(),
        format!("--mysql-port={p}"),
        "--mysql-user=root".into(),
        "--mysql-password=".into(),
        "--mysql-db=sbtest_ci".into(),
        "--tables=2".into(),
        "--table-size=20000".into(),
    ];
    run(&mut mariadb(&[
        "-e",
        "DROP DATABASE IF EXISTS sbtest_ci; CREATE DATABASE sbtest_ci",
    ]));
    run(Command::new("sysbench")
        .arg("oltp_read_write")
        .args(&base)
        .arg("prepare"));
    for mode in ["auto", "disable"] {
        let out = run(Command::new("sysbench")
            .arg("oltp_read_write")
            .args(&base)
            .args([
                "--threads=4",
                "--time=5",
                // Only InnoDB deadlocks (which oltp_read_write meets against
                // one server too, rarely) are retried by sysbench; any other
                // error fails the run.
                "--mysql-ignore-errors=1213",
                &format!("--db-ps-mode={mode}"),
            ])
            .arg("run"));
        let tx = out
            .lines()
            .find(|l| l.trim_start().starts_with("transactions:"))
            .unwrap_or_else(|| panic!("no transaction count in:\n{out}"));
        let n: u64 = tx.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(n > 50, "too few transactions in ps mode {mode}: {tx}");
        // Only deadlocks are ignored (see above); they stay rare.
        let errors = out.lines().find(|l| l.contains("ignored errors:")).unwrap();
        let ignored: u64 = errors
            .split_whitespace()
            .nth(2)
            .and_then(|v| v.parse().ok())
            .unwrap_or(u64::MAX);
        assert!(ignored * 100 <= n, "mode {mode}: {errors} ({tx})");
    }
}

#[test]
fn pymysql() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/pymysql_check.py"
    );
    run(&mut mariadb(&["-e", "CREATE DATABASE IF NOT EXISTS py_db"]));
    let out = run(Command::new("python3").args([
        script,
        "127.0.0.1",
        &port().to_string(),
        "root",
        "",
        "py_db",
    ]));
    assert!(out.contains("pymysql ok"), "{out}");
}

/// aiomysql (asyncio) as applications use it, on tables partitioned over
/// both backends: a pool of many coroutines, begin()/commit()/rollback(),
/// executemany, DictCursor and SSCursor, errors, KILLed connections
/// (ping(reconnect=True), the pool) and pool_recycle. The script runs each
/// check on one server too (plain tables in `aio_ref` on shard0) and
/// requires the same answers.
#[test]
fn aiomysql() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/aiomysql_check.py"
    );
    let info = cluster(2);
    run(&mut mariadb(&[
        "-e",
        "DROP DATABASE IF EXISTS aio_db; CREATE DATABASE aio_db",
    ]));
    let rt = rt();
    rt.block_on(fresh_db("aio_ref"));
    let out = run(Command::new("python3").args([
        script,
        "127.0.0.1",
        &info.proxy_port.to_string(),
        "root",
        "",
        "aio_db",
        &info.backend_ports[0].to_string(),
        "hscale",
        "hscale",
        "aio_ref",
    ]));
    assert!(out.contains("aiomysql ok"), "{out}");
    // On the backends themselves: even ids on shard0, odd ids on shard1,
    // the committed transaction's rows on both, nothing of the rolled-back,
    // dropped or failed ones.
    rt.block_on(async {
        use mysql_async::prelude::*;
        let mut seen = Vec::new();
        for (backend, table) in physical_tables("aio_db.aio_t").await.into_values() {
            let mut c = backend_conn(backend, Some("aio_db")).await;
            let (n, odd): (i64, i64) = c
                .query_first(format!(
                    "SELECT COUNT(*), CAST(COALESCE(SUM(id % 2), 0) AS SIGNED) FROM {table}"
                ))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(odd, if backend == 0 { 0 } else { n }, "{table} on shard{backend}");
            let ids: Vec<i64> = c
                .query(format!(
                    "SELECT id FROM {table} WHERE id BETWEEN 100 AND 105 OR id BETWEEN 400 AND 404 ORDER BY id"
                ))
                .await
                .unwrap();
            seen.push((backend, n, ids));
            c.disconnect().await.unwrap();
        }
        seen.sort();
        assert_eq!(
            seen,
            vec![(0, 50, vec![102, 402]), (1, 49, vec![103, 403])],
            "aio_t's rows on the backends"
        );
    });
}

/// Download Connector/J and compile the JDBC programs, once per test
/// process (the JDBC tests share `target/`).
fn jdbc_build() -> &'static str {
    static BUILT: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/jdbc");
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if !*built {
        run(Command::new("mvn").current_dir(dir).args([
            "-q",
            "-B",
            "dependency:copy-dependencies",
            "-DoutputDirectory=target/lib",
        ]));
        std::fs::create_dir_all(format!("{dir}/target/classes")).unwrap();
        run(Command::new("javac").current_dir(dir).args([
            "-d",
            "target/classes",
            "-cp",
            "target/lib/*",
            "src/main/java/JdbcCheck.java",
            "src/main/java/JdbcTransfers.java",
        ]));
        *built = true;
    }
    dir
}

/// MySQL Connector/J: server-side and client-side prepared statements,
/// batches, generated keys, transactions, isolation level as session state,
/// cursor fetch (COM_STMT_FETCH) and concurrent connections.
#[test]
fn jdbc_connector_j() {
    let dir = jdbc_build();
    run(&mut mariadb(&[
        "-e",
        "CREATE DATABASE IF NOT EXISTS jdbc_db",
    ]));
    let out = run(Command::new("java").current_dir(dir).args([
        "-cp",
        "target/classes:target/lib/*",
        "JdbcCheck",
        "127.0.0.1",
        &port().to_string(),
        "jdbc_db",
    ]));
    assert!(out.contains("jdbc ok"), "{out}");
}

/// An ORM-style PyMySQL session (autocommit off, PyMySQL's default):
/// transfers between accounts on two backends, commit() and rollback(),
/// read-your-writes, an error inside a transaction; the total never changes.
#[test]
fn pymysql_transfers_across_backends() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/pymysql_transfers.py"
    );
    run(&mut mariadb(&[
        "-e",
        "DROP DATABASE IF EXISTS py_txn; CREATE DATABASE py_txn",
    ]));
    let out = run(Command::new("python3").args([
        script,
        "127.0.0.1",
        &port().to_string(),
        "root",
        "",
        "py_txn",
    ]));
    assert!(out.contains("pymysql transfers ok"), "{out}");
    // The total on the backends themselves: nothing of a rolled-back or
    // failed statement stayed in either partition's table.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let total = rt.block_on(async {
        use mysql_async::prelude::*;
        let mut total = 0i64;
        for (backend, table) in physical_tables("py_txn.accounts").await.into_values() {
            let mut c = backend_conn(backend, Some("py_txn")).await;
            let sum: Option<i64> = c
                .query_first(format!(
                    "SELECT CAST(COALESCE(SUM(balance), 0) AS SIGNED) FROM {table}"
                ))
                .await
                .unwrap();
            total += sum.unwrap_or(0);
            c.disconnect().await.unwrap();
        }
        total
    });
    assert_eq!(total, 1000);
}

/// A Java pool session (`setAutoCommit(false)`) with server-side and
/// client-side prepared statements: transfers across two backends, commit,
/// rollback, a savepoint, `setAutoCommit(true)` committing; the total never
/// changes.
#[test]
fn jdbc_transfers_across_backends() {
    let dir = jdbc_build();
    run(&mut mariadb(&[
        "-e",
        "DROP DATABASE IF EXISTS jdbc_txn; CREATE DATABASE jdbc_txn",
    ]));
    let out = run(Command::new("java").current_dir(dir).args([
        "-cp",
        "target/classes:target/lib/*",
        "JdbcTransfers",
        "127.0.0.1",
        &port().to_string(),
        "jdbc_txn",
    ]));
    assert!(out.contains("jdbc transfers ok"), "{out}");
}
