//! Clients whose character set is a single-byte one other than latin1
//! (cp1251, koi8r, latin2, greek, cp1250, hebrew) sending non-ASCII keys
//! in statements naming partitioned tables, against one server holding the
//! same rows: the same answers (the client's bytes both ways), and each
//! row in the physical table the dictionary names for its key, for a
//! utf8mb4 key column and one in the client's own character set. Bytes the
//! server reads as no character of their own are refused (1235), never
//! placed by another reading. And the proxy's tables of every single-byte
//! character set are the server's own conversions.

use hscale_route::single_byte::SingleByte;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

use super::common::*;

/// Each character set with three keys: two whose first letters have
/// partitions of their own (on shard1 and shard2) and a third, prepared,
/// that shares the first one's.
const SETS: &[(&str, [&str; 3])] = &[
    ("cp1251", ["Жар", "Щука", "Жук"]),
    ("koi8r", ["Жар", "Щука", "Жук"]),
    ("latin2", ["Łódź", "Šimek", "Łąka"]),
    ("cp1250", ["Řeka", "Źdźbło", "Říjen"]),
    ("greek", ["Αθήνα", "Ωμέγα", "Αύρα"]),
    ("hebrew", ["שלום", "אבא", "שמש"]),
];

/// `text` in `cs`'s bytes, as the client sends it.
fn encode(cs: &SingleByte, text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| {
            (0..=255u8)
                .find(|b| cs.char_of(*b) == Some(c))
                .unwrap_or_else(|| panic!("{c:?} is not in {}", cs.name))
        })
        .collect()
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

/// The proxy's table of every single-byte character set against the
/// server's own conversion of each byte: a wrong table would read a key
/// as another string than the server stores.
pub async fn tables_are_the_servers() {
    cluster(4);
    let mut c = backend_conn(0, Some("mysql")).await;
    let mut wrong = Vec::new();
    for cs in SingleByte::all() {
        let q = format!(
            "SELECT seq, HEX(CONVERT(CONVERT(UNHEX(LPAD(HEX(seq), 2, '0')) USING {}) USING utf8mb4)) FROM seq_0_to_255",
            cs.name
        );
        let got: Vec<(u8, String)> = c.query(&q).await.unwrap();
        assert_eq!(got.len(), 256, "{q}");
        for (b, hex) in got {
            let text = String::from_utf8(
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect(),
            )
            .unwrap();
            let mut chars = text.chars();
            let c = chars.next().unwrap();
            assert!(chars.next().is_none(), "{}: {b:#x} is {text:?}", cs.name);
            // What the proxy may read: one character of its own that reads
            // back as the byte (not `?`, not ASCII from a high byte, not
            // U+FFFD).
            let is_question_mark = c == '?' && b != b'?';
            let is_ascii_of_another =
                (b >= 0x80 && c.is_ascii()) || (b < 0x80 && c != char::from(b));
            let server =
                (!is_question_mark && !is_ascii_of_another && c != '\u{FFFD}').then_some(c);
            if cs.char_of(b) != server {
                wrong.push(format!(
                    "{} byte {b:#04x}: proxy {:?}, server {c:?}",
                    cs.name,
                    cs.char_of(b)
                ));
            }
        }
    }
    c.disconnect().await.unwrap();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

pub async fn run() {
    cluster(4);
    let mut wrong = Vec::new();
    for (name, keys) in SETS {
        wrong.extend(one_set(name, keys).await);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The differences for one character set; placement is asserted.
async fn one_set(name: &str, keys: &[&str; 3]) -> Vec<String> {
    let cs = SingleByte::by_name(name).unwrap();
    let (part, reference) = (format!("dc_sb_{name}_p"), format!("dc_sb_{name}_r"));
    let tables = [
        ("u", "utf8mb4 COLLATE utf8mb4_bin".to_string()),
        ("s", format!("{name} COLLATE {name}_bin")),
    ];
    // The utf8mb4 column by PREFIX(1); the other by NONE() (PREFIX under
    // a collation whose weights come from the backend is refused), so a
    // partition holds one key and the third key goes to the default.
    let function = |t: &str| if t == "u" { "PREFIX(1)" } else { "NONE()" };
    let value = |t: &str, k: &str| {
        if t == "u" {
            k.chars().next().unwrap().to_string()
        } else {
            k.to_string()
        }
    };
    let mut setup = proxy_conn(None).await;
    for db in [&part, &reference] {
        setup
            .query_drop(format!("CREATE DATABASE {db}"))
            .await
            .unwrap();
        for (t, cs) in &tables {
            setup
                .query_drop(format!(
                    "CREATE TABLE {db}.{t} (name VARCHAR(32) CHARACTER SET {cs} NOT NULL PRIMARY KEY, v INT)"
                ))
                .await
                .unwrap();
        }
    }
    setup.query_drop(format!("USE {part}")).await.unwrap();
    for (t, _) in &tables {
        for s in [
            format!(
                "HSCALE SETUP_TABLE('{t}', 'name', '{t}_default', 'shard0', '{}')",
                function(t)
            ),
            format!(
                "HSCALE ADD_PARTITION('{t}', 'pa', '{}', 'shard1')",
                value(t, keys[0])
            ),
            format!(
                "HSCALE ADD_PARTITION('{t}', 'pb', '{}', 'shard2')",
                value(t, keys[1])
            ),
        ] {
            setup
                .query_drop(&s)
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    }
    setup.disconnect().await.unwrap();
    let mut p = proxy_conn(Some(&part)).await;
    let mut r = proxy_conn(Some(&reference)).await;
    for c in [&mut p, &mut r] {
        c.query_drop(format!("SET NAMES {name}")).await.unwrap();
    }
    let (a, b) = (encode(cs, keys[0]), encode(cs, keys[1]));
    let mut wrong = Vec::new();
    for (t, _) in &tables {
        let t = t.as_bytes();
        let statements: Vec<(Vec<u8>, bool)> = vec![
            (
                [
                    b"INSERT INTO ".as_slice(),
                    t,
                    b" VALUES ('",
                    &a,
                    b"', 1), ('",
                    &b,
                    b"', 2), ('Zed', 3)",
                ]
                .concat(),
                true,
            ),
            (
                [
                    b"INSERT INTO ".as_slice(),
                    t,
                    b" (name, v) VALUES ('",
                    &b,
                    b"x', 4)",
                ]
                .concat(),
                true,
            ),
            (
                [b"SELECT name, v FROM ".as_slice(), t, b" ORDER BY v"].concat(),
                false,
            ),
            (
                [
                    b"SELECT v FROM ".as_slice(),
                    t,
                    b" WHERE name = '",
                    &a,
                    b"'",
                ]
                .concat(),
                false,
            ),
            (
                [
                    b"SELECT v, name FROM ".as_slice(),
                    t,
                    b" WHERE name IN ('",
                    &b,
                    b"', 'Zed') ORDER BY v",
                ]
                .concat(),
                false,
            ),
            (
                [
                    b"UPDATE ".as_slice(),
                    t,
                    b" SET v = v + 10 WHERE name = '",
                    &a,
                    b"'",
                ]
                .concat(),
                true,
            ),
            (
                [
                    b"SELECT name, v, LENGTH(name), HEX(name) FROM ".as_slice(),
                    t,
                    b" WHERE v > 10",
                ]
                .concat(),
                false,
            ),
            (
                [b"DELETE FROM ".as_slice(), t, b" WHERE name = '", &b, b"x'"].concat(),
                true,
            ),
            (
                [b"SELECT COUNT(*), MAX(name) FROM ".as_slice(), t].concat(),
                false,
            ),
        ];
        for (q, is_write) in statements {
            let one = |n: u64| vec![vec![Some(n.to_string().into_bytes())]];
            let (got, want) = if is_write {
                (
                    affected(&mut p, &q).await.map(one),
                    affected(&mut r, &q).await.map(one),
                )
            } else {
                (rows(&mut p, &q).await, rows(&mut r, &q).await)
            };
            if got != want || got.is_err() {
                wrong.push(format!(
                    "[{name}] {}\n  hscale:    {got:?}\n  reference: {want:?}",
                    String::from_utf8_lossy(&q)
                ));
            }
        }
        // Prepared (binary protocol): the client's bytes as key parameters.
        let t = std::str::from_utf8(t).unwrap();
        let ins = format!("INSERT INTO {t} (name, v) VALUES (?, ?)");
        let sel = format!("SELECT v, name FROM {t} WHERE name = ?");
        let c3 = encode(cs, keys[2]);
        for c in [&mut p, &mut r] {
            c.exec_drop(&ins, (Value::Bytes(c3.clone()), 7))
                .await
                .unwrap_or_else(|e| panic!("{ins}: {e}"));
        }
        for key in [&a, &c3, &b] {
            let got: Result<Vec<Row>, _> = p.exec(&sel, (Value::Bytes(key.clone()),)).await;
            let want: Result<Vec<Row>, _> = r.exec(&sel, (Value::Bytes(key.clone()),)).await;
            let (got, want) = (shown_rows(got), shown_rows(want));
            if got != want || got.as_ref().map_or(true, |g| g.is_empty()) {
                wrong.push(format!(
                    "[{name}] {sel} {key:?}\n  hscale:    {got:?}\n  reference: {want:?}"
                ));
            }
        }
    }
    let _ = p.disconnect().await;
    let _ = r.disconnect().await;
    // Each row where the dictionary names its key's partition, read on
    // the backends themselves (as UTF-8 text).
    for (t, _) in &tables {
        let physical = physical_tables(&format!("{part}.{t}")).await;
        let third = if *t == "u" { "pa" } else { "" };
        for (partition, key) in [
            ("pa", keys[0]),
            (third, keys[2]),
            ("pb", keys[1]),
            ("", "Zed"),
        ] {
            let mut total = 0;
            for (pname, (backend, table)) in &physical {
                let mut c = backend_conn(*backend, Some(&part)).await;
                let n: Option<u64> = c
                    .exec_first(
                        format!("SELECT COUNT(*) FROM `{table}` WHERE name = ?"),
                        (key,),
                    )
                    .await
                    .unwrap();
                c.disconnect().await.unwrap();
                let n = n.unwrap_or(0);
                if pname == partition {
                    assert_eq!(
                        n, 1,
                        "[{name}] {key} not in {t}'s partition {partition:?} ({table})"
                    );
                }
                total += n;
            }
            assert_eq!(total, 1, "[{name}] {key} held {total} times in {t}");
        }
    }
    wrong
}

/// Bytes a client's character set reads as no character of their own are
/// refused where they could be a key, text and prepared: cp1251's 0x98
/// (the server stores `?`), armscii8's 0xFF (an apostrophe to the server),
/// any non-ASCII byte from an ascii client, swe7's letters in ASCII's
/// places. Nothing is written.
pub async fn unreadable_bytes_are_refused() {
    cluster(4);
    let db = "dc_sb_refused";
    let mut setup = proxy_conn(None).await;
    setup
        .query_drop(format!("CREATE DATABASE {db}"))
        .await
        .unwrap();
    setup.query_drop(format!("USE {db}")).await.unwrap();
    setup
        .query_drop("CREATE TABLE t (name VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY, v INT)")
        .await
        .unwrap();
    for s in [
        "HSCALE SETUP_TABLE('t', 'name', 't_default', 'shard0', 'PREFIX(1)')",
        "HSCALE ADD_PARTITION('t', 'pq', '?', 'shard1')",
    ] {
        setup.query_drop(s).await.unwrap();
    }
    setup.disconnect().await.unwrap();
    for (cs, key) in [
        ("cp1251", b"a\x98".as_slice()),
        ("armscii8", b"a\xff"),
        ("ascii", b"\xe9t\xe9"),
        ("swe7", b"a@b"),
    ] {
        let mut c = proxy_conn(Some(db)).await;
        c.query_drop(format!("SET NAMES {cs}")).await.unwrap();
        let q = [b"INSERT INTO t VALUES ('".as_slice(), key, b"', 1)"].concat();
        let e = c.query_drop(&q).await.unwrap_err();
        assert_eq!(code(&e), 1235, "[{cs}] {e}");
        let e = c
            .exec_drop("INSERT INTO t VALUES (?, 1)", (Value::Bytes(key.to_vec()),))
            .await
            .unwrap_err();
        assert_eq!(code(&e), 1235, "[{cs}] prepared: {e}");
        // ASCII keys still work.
        c.query_drop("INSERT INTO t VALUES ('plain', 1)")
            .await
            .unwrap();
        c.query_drop("DELETE FROM t WHERE name = 'plain'")
            .await
            .unwrap();
        c.disconnect().await.unwrap();
    }
    let mut c = proxy_conn(Some(db)).await;
    let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM t").await.unwrap();
    assert_eq!(n, Some(0));
    c.disconnect().await.unwrap();
}
