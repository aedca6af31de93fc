//! A latin1 client (`SET NAMES latin1`) sending non-ASCII keys in
//! statements naming partitioned tables, against one server holding the
//! same rows: the same answers (latin1 bytes both ways), and each row in
//! the physical table the dictionary names for its key, for a utf8mb4 and
//! a latin1 key column. Tables partitioned by PREFIX(1), so the keys
//! 'Müller' and 'Ærø' have partitions of their own on other backends.

use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

use super::common::*;

const TABLES: &[(&str, &str)] = &[
    ("u", "utf8mb4 COLLATE utf8mb4_bin"),
    ("l", "latin1 COLLATE latin1_bin"),
];

/// 'Müller', 'Ærø' and 'Zed' in latin1.
const MULLER: &[u8] = b"M\xfcller";
const AERO: &[u8] = b"\xc6r\xf8";

fn sql(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// Rows as bytes (or the error code).
async fn rows(c: &mut Conn, q: &[u8]) -> Result<Vec<Vec<Option<Vec<u8>>>>, u16> {
    let r: Vec<Row> = c.query(q).await.map_err(|e| code(&e))?;
    Ok(r.into_iter()
        .map(|r| {
            r.unwrap()
                .into_iter()
                .map(|v| match v {
                    Value::NULL => None,
                    Value::Bytes(b) => Some(b),
                    other => Some(other.as_sql(true).into_bytes()),
                })
                .collect()
        })
        .collect())
}

async fn affected(c: &mut Conn, q: &[u8]) -> Result<u64, u16> {
    c.query_drop(q).await.map_err(|e| code(&e))?;
    Ok(c.affected_rows())
}

pub async fn run() {
    cluster(4);
    let (part, reference) = ("dc_latin1_p", "dc_latin1_r");
    let mut setup = proxy_conn(None).await;
    for db in [part, reference] {
        setup
            .query_drop(format!("CREATE DATABASE {db}"))
            .await
            .unwrap();
        for (t, cs) in TABLES {
            setup
                .query_drop(format!(
                    "CREATE TABLE {db}.{t} (name VARCHAR(32) CHARACTER SET {cs} NOT NULL PRIMARY KEY, v INT)"
                ))
                .await
                .unwrap();
        }
    }
    setup.query_drop(format!("USE {part}")).await.unwrap();
    for (t, _) in TABLES {
        for s in [
            format!("HSCALE SETUP_TABLE('{t}', 'name', '{t}_default', 'shard0', 'PREFIX(1)')"),
            format!("HSCALE ADD_PARTITION('{t}', 'pm', 'M', 'shard1')"),
            format!("HSCALE ADD_PARTITION('{t}', 'pae', 'Æ', 'shard2')"),
        ] {
            setup
                .query_drop(&s)
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    }
    setup.disconnect().await.unwrap();
    let mut p = proxy_conn(Some(part)).await;
    let mut r = proxy_conn(Some(reference)).await;
    for c in [&mut p, &mut r] {
        c.query_drop("SET NAMES latin1").await.unwrap();
    }
    let mut wrong = Vec::new();
    for (t, _) in TABLES {
        let t = t.as_bytes();
        let statements: Vec<(Vec<u8>, bool)> = vec![
            (
                sql(&[
                    b"INSERT INTO ",
                    t,
                    b" VALUES ('",
                    MULLER,
                    b"', 1), ('",
                    AERO,
                    b"', 2), ('Zed', 3)",
                ]),
                true,
            ),
            (
                sql(&[b"INSERT INTO ", t, b" (name, v) VALUES ('", AERO, b"x', 4)"]),
                true,
            ),
            (sql(&[b"SELECT name, v FROM ", t, b" ORDER BY v"]), false),
            (
                sql(&[b"SELECT v FROM ", t, b" WHERE name = '", MULLER, b"'"]),
                false,
            ),
            (
                sql(&[
                    b"SELECT v, name FROM ",
                    t,
                    b" WHERE name IN ('",
                    AERO,
                    b"', 'Zed') ORDER BY v",
                ]),
                false,
            ),
            (
                sql(&[
                    b"UPDATE ",
                    t,
                    b" SET v = v + 10 WHERE name = '",
                    MULLER,
                    b"'",
                ]),
                true,
            ),
            (
                sql(&[
                    b"SELECT name, v, LENGTH(name), HEX(name) FROM ",
                    t,
                    b" WHERE v > 10",
                ]),
                false,
            ),
            (
                sql(&[b"DELETE FROM ", t, b" WHERE name = '", AERO, b"x'"]),
                true,
            ),
            (sql(&[b"SELECT COUNT(*), MAX(name) FROM ", t]), false),
        ];
        for (q, is_write) in statements {
            let (got, want) = if is_write {
                (
                    affected(&mut p, &q)
                        .await
                        .map(|n| vec![vec![Some(n.to_string().into_bytes())]]),
                    affected(&mut r, &q)
                        .await
                        .map(|n| vec![vec![Some(n.to_string().into_bytes())]]),
                )
            } else {
                (rows(&mut p, &q).await, rows(&mut r, &q).await)
            };
            if got != want || got.is_err() {
                wrong.push(format!(
                    "{}\n  hscale:    {got:?}\n  reference: {want:?}",
                    String::from_utf8_lossy(&q)
                ));
            }
        }
    }
    // Prepared (binary protocol): latin1 string parameters as keys.
    for (t, _) in TABLES {
        let ins = format!("INSERT INTO {t} (name, v) VALUES (?, ?)");
        let sel = format!("SELECT v, name FROM {t} WHERE name = ?");
        for c in [&mut p, &mut r] {
            c.exec_drop(&ins, (Value::Bytes(b"M\xf6ller".to_vec()), 7))
                .await
                .unwrap_or_else(|e| panic!("{ins}: {e}"));
        }
        for key in [MULLER, b"M\xf6ller".as_slice(), AERO] {
            let got: Result<Vec<Row>, _> = p.exec(&sel, (Value::Bytes(key.to_vec()),)).await;
            let want: Result<Vec<Row>, _> = r.exec(&sel, (Value::Bytes(key.to_vec()),)).await;
            let (got, want) = (shown_rows(got), shown_rows(want));
            if got != want || got.as_ref().map_or(true, |g| g.is_empty()) {
                wrong.push(format!(
                    "{sel} {key:?}\n  hscale:    {got:?}\n  reference: {want:?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Each row where the dictionary names its key's partition, read on
    // the backends themselves.
    for (t, _) in TABLES {
        let tables = physical_tables(&format!("{part}.{t}")).await;
        for (partition, key) in [
            ("pm", "Müller"),
            ("pm", "Möller"),
            ("pae", "Ærø"),
            ("", "Zed"),
        ] {
            let mut total = 0;
            for (name, (backend, physical)) in &tables {
                let mut c = backend_conn(*backend, Some(part)).await;
                let n: Option<u64> = c
                    .exec_first(
                        format!("SELECT COUNT(*) FROM `{physical}` WHERE name = ?"),
                        (key,),
                    )
                    .await
                    .unwrap();
                c.disconnect().await.unwrap();
                let n = n.unwrap_or(0);
                if name == partition {
                    assert_eq!(
                        n, 1,
                        "{key} not in {t}'s partition {partition:?} ({physical})"
                    );
                }
                total += n;
            }
            assert_eq!(total, 1, "{key} held {total} times in {t}");
        }
    }
}
