#![allow(clippy::unwrap_used)]
//! Keys the column calls equal go to one partition: random pairs of strings
//! and DECIMALs that a real MariaDB calls equal (or not) get the same
//! partition value under HASH, PREFIX and NONE (or different NONE values),
//! for every collation hscale reproduces; the backend's SQL form of the
//! normalisation (used when ADD_PARTITION copies rows) equals hscale's.
//! Seeded: `HSCALE_SEED=n` repeats a run.

mod common;

use common::*;
use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::key_compare::{Collation, KeyCompare, Weighed};
use hscale_route::{BackendId, HashingFunction, KeyValue};
use mysql_async::prelude::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Characters in groups that some collation calls equal (case, accents,
/// expansions such as 'ß' = 'ss' and 'ü' = 'ue', contractions such as
/// Czech 'ch', ignorables, spaces and what pads like one).
const GROUPS: &[&[&str]] = &[
    &[
        "a", "A", "ä", "Ä", "á", "å", "Å", "aa", "ae", "æ", "Æ", "a\u{301}",
    ],
    &["e", "E", "é", "É", "è", "e\u{301}"],
    &["s", "S", "ß", "ss", "SS", "ſ"],
    &["y", "Y", "ü", "Ü", "ue", "u"],
    &["o", "O", "ö", "Ö", "Ø", "ø", "oe", "œ"],
    &["i", "I", "ı", "İ", "í"],
    &["c", "C", "ch", "CH", "Ch", "č"],
    &["l", "L", "ll", "LL", "ł"],
    &["n", "N", "ñ", "Ñ"],
    &["d", "D", "ð", "Đ", "ǆ", "dž"],
    &["f", "F", "fi", "ﬁ"],
    &["t", "T", "th", "þ"],
    &[" ", "\u{a0}", "\t", ""],
    &["-", "‐", "\u{ad}"],
    &["1", "¹", "①"],
    &["µ", "μ", "Μ"],
    &["😀", "?", "😁"],
    &["€", "E"],
];

/// Random words of (group, member) pairs.
fn random_word(r: &mut Rng) -> Vec<(usize, usize)> {
    (0..r.below(6))
        .map(|_| {
            let g = r.below(GROUPS.len());
            (g, r.below(GROUPS[g].len()))
        })
        .collect()
}

fn spell(w: &[(usize, usize)]) -> String {
    w.iter().map(|&(g, m)| GROUPS[g][m]).collect()
}

/// A variant of `w` that is often equal under case- and accent-insensitive
/// collations: members swapped for others of their group, trailing spaces
/// added or removed.
fn variant(r: &mut Rng, w: &[(usize, usize)]) -> String {
    let twin: Vec<(usize, usize)> = w
        .iter()
        .map(|&(g, m)| {
            if r.below(2) == 0 {
                (g, m)
            } else {
                (g, r.below(GROUPS[g].len()))
            }
        })
        .collect();
    let mut out = spell(&twin);
    match r.below(3) {
        0 => out.push_str(&" ".repeat(1 + r.below(3))),
        1 => out = out.trim_end_matches(' ').to_string(),
        _ => {}
    }
    out
}

/// Every utf8mb4 and latin1 collation the server offers (SHOW COLLATION,
/// and the uca1400 ones MariaDB 10.10+ lists per character set), and how
/// hscale compares keys under it: its own table, or the backend's weights.
async fn collations(b: &mut mysql_async::Conn) -> Vec<(String, KeyCompare)> {
    let mut names: Vec<String> = b
        .query("SELECT FULL_COLLATION_NAME FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE CHARACTER_SET_NAME IN ('utf8mb4', 'latin1') ORDER BY 1")
        .await
        .unwrap();
    let shown: Vec<mysql_async::Row> = b
        .query("SHOW COLLATION WHERE Charset IN ('utf8mb4', 'latin1')")
        .await
        .unwrap();
    for row in shown {
        let name: String = row.get(0).unwrap();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let compare = match Collation::parse(&name) {
            Some(c) => KeyCompare::Collated(c),
            None => {
                let row: mysql_async::Row = b
                    .query_first(Weighed::learn_sql(&name))
                    .await
                    .unwrap()
                    .unwrap();
                let row: Vec<Option<String>> =
                    (0..row.len()).map(|i| row.get(i).unwrap()).collect();
                KeyCompare::Weighed(
                    Weighed::learn(&name, &row).unwrap_or_else(|| panic!("{name}: {row:?}")),
                )
            }
        };
        out.push((name, compare));
    }
    out
}

fn table(
    compare: KeyCompare,
    function: HashingFunction,
) -> hscale_route::dictionary::PartitionedTable {
    let mut d = Dictionary::default();
    let name = TableName::new("d", "t");
    d.setup_table(name.clone(), "k", "t_default", BackendId::MAIN, function)
        .unwrap();
    d.set_key_compare(&name, Some(compare));
    d.table(&name).unwrap().clone()
}

fn seed() -> u64 {
    let s = std::env::var("HSCALE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    println!("collations: HSCALE_SEED={s}");
    s
}

#[tokio::test]
async fn keys_the_backend_calls_equal_share_a_partition() {
    let seed = seed();
    let mut r = Rng(seed);
    let mut b = backend_conn(0, None).await;
    b.query_drop("SET NAMES utf8mb4").await.unwrap();
    b.query_drop("CREATE DATABASE IF NOT EXISTS coll_prop")
        .await
        .unwrap();
    b.query_drop("DROP TABLE IF EXISTS coll_prop.pairs")
        .await
        .unwrap();
    b.query_drop("CREATE TABLE coll_prop.pairs (i INT PRIMARY KEY, a VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, b VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)")
        .await
        .unwrap();
    let mut pairs = Vec::new();
    for i in 0..600 {
        let w = random_word(&mut r);
        let a = spell(&w);
        let b = if i % 4 == 0 {
            spell(&random_word(&mut r))
        } else {
            variant(&mut r, &w)
        };
        pairs.push((i, a, b));
    }
    b.exec_batch(
        "INSERT INTO coll_prop.pairs VALUES (?, ?, ?)",
        pairs.iter().map(|(i, a, b)| (*i, a.as_str(), b.as_str())),
    )
    .await
    .unwrap();
    let all = collations(&mut b).await;
    assert!(all.len() >= 43, "{} collations", all.len());
    let mut weighed = 0;
    for (name, compare) in &all {
        let cs = name.split('_').next().unwrap();
        let is_weighed = matches!(compare, KeyCompare::Weighed(_));
        weighed += usize::from(is_weighed);
        let col = |c: &str| format!("CONVERT({c} USING {cs}) COLLATE {name}");
        let sql = format!(
            "SELECT i, {} = {}, CAST({} AS CHAR CHARACTER SET utf8mb4), CAST({} AS CHAR CHARACTER SET utf8mb4) FROM coll_prop.pairs ORDER BY i",
            col("a"),
            col("b"),
            compare.sql(&col("a")),
            compare.sql(&col("b")),
        );
        let rows: Vec<(i32, i64, String, String)> = b.query(sql).await.unwrap();
        let mut equal = 0;
        for (i, is_equal, sql_a, sql_b) in rows {
            let (_, a, bb) = &pairs[i as usize];
            let ka = KeyValue::Str(a.clone());
            let kb = KeyValue::Str(bb.clone());
            // What the proxy keeps after asking the backend
            // (`partition::weights`), computed as the copy filter does
            // (each just before it is used: a full cache starts over).
            let book = std::cell::RefCell::new(hscale_route::weights::WeightBook::new());
            let known = hscale_route::known::Known::new(Some(&book), None);
            let keep = |key: &str, weight: &str| {
                if let KeyCompare::Weighed(w) = compare {
                    book.borrow_mut()
                        .insert(w, key.to_string(), weight.to_string());
                }
            };
            let ctx = format!("seed {seed}, {name}: {a:?} vs {bb:?}");
            for (f, sql_side) in [("NONE()", true), ("PREFIX(3)", false), ("HASH(16)", false)] {
                // PREFIX is refused for keys the backend weighs.
                if is_weighed && f.starts_with("PREFIX") {
                    continue;
                }
                let t = table(compare.clone(), HashingFunction::parse(f).unwrap());
                keep(a, &sql_a);
                let pa = t.partition_value_of(&ka, &known).unwrap();
                keep(bb, &sql_b);
                let pb = t.partition_value_of(&kb, &known).unwrap();
                if is_equal == 1 {
                    assert_eq!(pa, pb, "{f} {ctx} ({sql_a} vs {sql_b})");
                } else if sql_side && !is_weighed {
                    // (Weighed keys are placed by their primary weights:
                    // keys that differ only in accent or case may share.)
                    assert_ne!(pa, pb, "NONE() of unequal keys, {ctx}");
                }
                if sql_side {
                    assert_eq!(pa.as_deref(), Some(sql_a.as_str()), "backend's SQL, {ctx}");
                    assert_eq!(pb.as_deref(), Some(sql_b.as_str()), "backend's SQL, {ctx}");
                }
            }
            equal += is_equal;
        }
        assert!(equal > 20, "{name}: only {equal} equal pairs");
    }
    println!(
        "collations: {} checked, {weighed} weighed by the backend",
        all.len()
    );
    assert!(weighed > 0);

    // DECIMAL(20,2): values the column calls equal (rounded to its scale,
    // as a non-strict server stores them).
    b.query_drop("SET sql_mode = ''").await.unwrap();
    b.query_drop("DROP TABLE IF EXISTS coll_prop.decimals")
        .await
        .unwrap();
    b.query_drop("CREATE TABLE coll_prop.decimals (i INT PRIMARY KEY, a VARCHAR(40), b VARCHAR(40), da DECIMAL(20,2), db DECIMAL(20,2))")
        .await
        .unwrap();
    let mut pairs = Vec::new();
    for i in 0..400 {
        let whole = r.below(2000) as i64 - 1000;
        let frac = r.below(100);
        let neg = if whole == 0 && r.below(2) == 0 {
            "-"
        } else {
            ""
        };
        let a = format!("{neg}{whole}.{frac:02}");
        let b = match r.below(4) {
            0 => format!(
                "{neg}{}{whole}.{frac:02}{}",
                "0".repeat(r.below(2)),
                "0".repeat(r.below(3))
            ),
            1 => format!("{whole}.{frac:02}"),
            2 => format!("{}.{}", whole, r.below(100)),
            _ => format!("{whole}.{frac:02}{}", r.below(10)),
        };
        pairs.push((i, a, b));
    }
    b.exec_batch(
        "INSERT INTO coll_prop.decimals VALUES (?, ?, ?, ?, ?)",
        pairs
            .iter()
            .map(|(i, a, b)| (*i, a.as_str(), b.as_str(), a.as_str(), b.as_str())),
    )
    .await
    .unwrap();
    let rows: Vec<(i32, i64, String)> = b
        .query("SELECT i, da = db, CAST(da AS CHAR) FROM coll_prop.decimals ORDER BY i")
        .await
        .unwrap();
    let compare = KeyCompare::Decimal { scale: 2 };
    let mut equal = 0;
    for (i, is_equal, stored) in rows {
        let (_, a, bb) = &pairs[i as usize];
        let ctx = format!("seed {seed}, DECIMAL(20,2): {a:?} vs {bb:?}");
        for f in ["NONE()", "PREFIX(3)", "HASH(16)"] {
            let t = table(compare.clone(), HashingFunction::parse(f).unwrap());
            let nothing = hscale_route::known::Known::nothing();
            let pa = t
                .partition_value_of(&KeyValue::Str(a.clone()), &nothing)
                .unwrap();
            let pb = t
                .partition_value_of(&KeyValue::Str(bb.clone()), &nothing)
                .unwrap();
            if is_equal == 1 {
                assert_eq!(pa, pb, "{f} {ctx}");
            } else if f == "NONE()" {
                assert_ne!(pa, pb, "{ctx}");
            }
            if f == "NONE()" {
                assert_eq!(pa.as_deref(), Some(stored.as_str()), "as stored, {ctx}");
            }
        }
        equal += is_equal;
    }
    assert!(equal > 50, "only {equal} equal decimal pairs");
    b.query_drop("DROP DATABASE coll_prop").await.unwrap();
}

async fn count(backend: usize, sql: &str) -> i64 {
    let mut b = backend_conn(backend, None).await;
    let n: Option<i64> = b.query_first(sql).await.unwrap();
    n.unwrap()
}

#[tokio::test]
async fn a_case_insensitive_key_is_one_key_across_partitions() {
    let mut c = proxy_conn(None).await;
    c.query_drop("CREATE DATABASE coll_db").await.unwrap();
    c.query_drop("USE coll_db").await.unwrap();
    c.query_drop("SET NAMES utf8mb4").await.unwrap();

    // A unique case-insensitive key, hashed over four partitions.
    c.query_drop("CREATE TABLE u (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, n INT)")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('u', 'k', 'u_default', 'shard0', 'HASH(4)')")
        .await
        .unwrap();
    for (p, backend) in [
        ("0", "shard0"),
        ("1", "shard1"),
        ("2", "shard1"),
        ("3", "shard0"),
    ] {
        c.query_drop(format!(
            "HSCALE ADD_PARTITION('u', 'h{p}', '{p}', '{backend}')"
        ))
        .await
        .unwrap();
    }
    let keys = ["abc", "hello", "World", "straße", "Zoë", "x y"];
    for (i, k) in keys.iter().enumerate() {
        c.exec_drop("INSERT INTO u (k, n) VALUES (?, ?)", (k, i))
            .await
            .unwrap();
    }
    for (k, twin) in [
        ("abc", "ABC"),
        ("hello", "HeLLo "),
        ("World", "world"),
        ("straße", "STRASE"),
        ("Zoë", "zoe"),
        ("x y", "X Y  "),
    ] {
        let n: Option<i64> = c
            .exec_first("SELECT n FROM u WHERE k = ?", (twin,))
            .await
            .unwrap();
        assert!(n.is_some(), "{twin:?} finds {k:?}");
        let e = c
            .exec_drop("INSERT INTO u (k, n) VALUES (?, 99)", (twin,))
            .await
            .unwrap_err();
        assert_eq!(code(&e), 1062, "{twin:?} duplicates {k:?}");
    }

    // ADD_PARTITION moves every row the collation calls equal, and new
    // rows follow.
    c.query_drop("CREATE TABLE v (id INT NOT NULL, k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL, PRIMARY KEY (id, k))")
        .await
        .unwrap();
    c.query_drop("INSERT INTO v (id, k) VALUES (1, 'abc'), (2, 'ABC'), (3, 'abc '), (4, 'Äbc'), (5, 'abd'), (6, 'ab')")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('v', 'k', 'v_default', 'shard0', 'NONE()')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('v', 'p', 'aBc  ', 'shard1')")
        .await
        .unwrap();
    let physical: String = backend_conn(1, None)
        .await
        .query_first("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'coll_db' AND TABLE_NAME LIKE 'v\\_p%'")
        .await
        .unwrap()
        .unwrap();
    let on_p = format!("SELECT COUNT(*) FROM coll_db.{physical}");
    assert_eq!(count(1, &on_p).await, 4);
    c.query_drop("INSERT INTO v (id, k) VALUES (7, 'ABC   ')")
        .await
        .unwrap();
    assert_eq!(count(1, &on_p).await, 5);
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM v WHERE k = 'abc'")
        .await
        .unwrap();
    assert_eq!(n, Some(5));

    // Equality on a case-insensitive key reads one partition, and answers
    // as one table would (the same rows in one plain table on a backend).
    let probes = [
        "'abc'",
        "'ABC '",
        "'HeLLo'",
        "'world'",
        "'STRASE'",
        "'zoe'",
        "'x y'",
        "'nothing'",
        "''",
        "'abc' COLLATE utf8mb4_bin",
        "5",
        "'Äbc'",
    ];
    let mut plain = backend_conn(1, None).await;
    plain.query_drop("SET NAMES utf8mb4").await.unwrap();
    plain
        .query_drop("CREATE DATABASE IF NOT EXISTS coll_plain")
        .await
        .unwrap();
    plain
        .query_drop("CREATE TABLE coll_plain.u (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, n INT)")
        .await
        .unwrap();
    for (i, k) in keys.iter().enumerate() {
        plain
            .exec_drop("INSERT INTO coll_plain.u (k, n) VALUES (?, ?)", (k, i))
            .await
            .unwrap();
    }
    for probe in probes {
        let q = |db: &str| format!("SELECT k, n FROM {db}u WHERE k = {probe} ORDER BY n");
        let via: Vec<(String, i32)> = c.query(q("")).await.unwrap();
        let direct: Vec<(String, i32)> = plain.query(q("coll_plain.")).await.unwrap();
        assert_eq!(via, direct, "{probe}");
        let q = format!("SELECT n FROM u WHERE k IN ({probe}, 'x') ORDER BY n");
        let via: Vec<i32> = c.query(&q).await.unwrap();
        let direct: Vec<i32> = plain
            .query(q.replace("FROM u", "FROM coll_plain.u"))
            .await
            .unwrap();
        assert_eq!(via, direct, "{q}");
    }
    // Prepared: a string parameter picks one partition, a number reads
    // them all (it compares as a number).
    // (No ORDER BY: the parameter itself picks the parts; rows sorted here.)
    let q = |db: &str| format!("SELECT k, n FROM {db}u WHERE k = ?");
    for probe in ["abc", "ABC ", "HeLLo", "STRASE", "zoe", "nothing", ""] {
        let mut via: Vec<(String, i32)> = c.exec(q(""), (probe,)).await.unwrap();
        let mut direct: Vec<(String, i32)> = plain.exec(q("coll_plain."), (probe,)).await.unwrap();
        via.sort_by_key(|r| r.1);
        direct.sort_by_key(|r| r.1);
        assert_eq!(via, direct, "prepared {probe:?}");
    }
    for probe in [0, 5] {
        let mut via: Vec<(String, i32)> = c.exec(q(""), (probe,)).await.unwrap();
        let mut direct: Vec<(String, i32)> = plain.exec(q("coll_plain."), (probe,)).await.unwrap();
        via.sort_by_key(|r| r.1);
        direct.sort_by_key(|r| r.1);
        assert_eq!(via, direct, "prepared {probe}");
    }
    for (probe, expected) in [
        ("'HELLO '", 1),
        ("'abc'", 1),
        ("5", 5),
        ("'abc' COLLATE utf8mb4_bin", 5),
    ] {
        let plan: Vec<(String, String, String)> = c
            .query(format!("HSCALE EXPLAIN SELECT n FROM u WHERE k = {probe}"))
            .await
            .unwrap();
        assert_eq!(plan.len(), expected, "{probe}: {plan:?}");
    }

    // Collations without a table in hscale: the backend weighs the keys
    // (utf8mb4_unicode_ci: 'ß' = 'ss', 'ﬁ' = 'fi').
    c.query_drop("CREATE TABLE w (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL PRIMARY KEY, n INT)")
        .await
        .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('w', 'k', 'w_default', 'shard0', 'HASH(4)')")
        .await
        .unwrap();
    for (p, backend) in [
        ("0", "shard0"),
        ("1", "shard1"),
        ("2", "shard1"),
        ("3", "shard0"),
    ] {
        c.query_drop(format!(
            "HSCALE ADD_PARTITION('w', 'h{p}', '{p}', '{backend}')"
        ))
        .await
        .unwrap();
    }
    c.query_drop("INSERT INTO w (k, n) VALUES ('straße', 1), ('ﬁle', 2), ('Åsa', 3), ('cote', 4)")
        .await
        .unwrap();
    c.exec_drop("INSERT INTO w (k, n) VALUES (?, 5)", ("noël",))
        .await
        .unwrap();
    for (k, twin) in [
        ("straße", "STRASSE"),
        ("ﬁle", "FILE "),
        ("Åsa", "asa"),
        ("cote", "CÔTE"),
        ("noël", "NOEL"),
    ] {
        let n: Option<i64> = c
            .exec_first("SELECT n FROM w WHERE k = ?", (twin,))
            .await
            .unwrap();
        assert!(n.is_some(), "{twin:?} finds {k:?}");
        let e = c
            .query_drop(format!("INSERT INTO w (k, n) VALUES ('{twin}', 99)"))
            .await
            .unwrap_err();
        assert_eq!(code(&e), 1062, "{twin:?} duplicates {k:?}");
        let e = c
            .exec_drop("INSERT INTO w (k, n) VALUES (?, 99)", (twin,))
            .await
            .unwrap_err();
        assert_eq!(code(&e), 1062, "prepared: {twin:?} duplicates {k:?}");
        let plan: Vec<(String, String, String)> = c
            .query(format!("HSCALE EXPLAIN SELECT n FROM w WHERE k = '{twin}'"))
            .await
            .unwrap();
        assert_eq!(plan.len(), 1, "{twin:?}: {plan:?}");
    }
    // PREFIX reads characters, which such a collation does not keep apart.
    c.query_drop("CREATE TABLE w2 (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_ai_ci NOT NULL PRIMARY KEY)")
        .await
        .unwrap();
    let e = c
        .query_drop("HSCALE SETUP_TABLE('w2', 'k', 'w2_default', 'shard0', 'PREFIX(2)')")
        .await
        .unwrap_err();
    assert_eq!(code(&e), 1235);
    assert!(e.to_string().contains("utf8mb4_uca1400_ai_ci"), "{e}");

    // ADD_PARTITION under an accent-sensitive, case-insensitive uca1400
    // collation: keys are placed by their primary weight ('ábc' goes with
    // 'abc', 'abd' stays), and the backend's copy filter moves exactly the
    // rows routing sends there.
    c.query_drop("CREATE TABLE x (id INT NOT NULL, k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_as_ci NOT NULL, PRIMARY KEY (id, k))")
        .await
        .unwrap();
    c.query_drop(
        "INSERT INTO x (id, k) VALUES (1, 'abc'), (2, 'ABC'), (3, 'abc '), (4, 'ábc'), (5, 'abd')",
    )
    .await
    .unwrap();
    c.query_drop("HSCALE SETUP_TABLE('x', 'k', 'x_default', 'shard0', 'NONE()')")
        .await
        .unwrap();
    c.query_drop("HSCALE ADD_PARTITION('x', 'p', 'aBc  ', 'shard1')")
        .await
        .unwrap();
    let physical: String = backend_conn(1, None)
        .await
        .query_first("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'coll_db' AND TABLE_NAME LIKE 'x\\_p%'")
        .await
        .unwrap()
        .unwrap();
    let on_p = format!("SELECT COUNT(*) FROM coll_db.{physical}");
    assert_eq!(count(1, &on_p).await, 4);
    c.query_drop("INSERT INTO x (id, k) VALUES (6, 'Abc   ')")
        .await
        .unwrap();
    assert_eq!(count(1, &on_p).await, 5);
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM x WHERE k = 'ABC'")
        .await
        .unwrap();
    assert_eq!(n, Some(4));
}
