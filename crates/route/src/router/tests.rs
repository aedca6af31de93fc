//! Router unit tests: properties, the plan cache, and plan details the
//! golden plan files (`tests/plans/`, `tests/golden.rs`) do not show.

use super::*;
use crate::{BackendId, HashingFunction};

fn dict() -> Dictionary {
    let mut d = Dictionary::default();
    let t = TableName::new("app", "orders");
    d.setup_table(
        t.clone(),
        "customer_id",
        "orders_default",
        BackendId::MAIN,
        HashingFunction::Mod(4),
    )
    .unwrap();
    d.add_partition(&t, "p1", "1", BackendId::new(1)).unwrap();
    d.add_partition(&t, "p2", "2", BackendId::new(2)).unwrap();
    d.set_key_exact(&t, true);
    d
}

fn parts(p: Plan) -> Vec<(usize, String)> {
    match p {
        Plan::Targets { parts, .. } => parts
            .into_iter()
            .map(|(t, s)| (t.backend.index(), s))
            .collect(),
        other => panic!("expected targets, got {other:?}"),
    }
}

#[test]
fn show_tables() {
    let d = dict();
    assert_eq!(
        plan(
            "SHOW FULL TABLES LIKE 'ord%'",
            Some("app"),
            &d,
            &crate::known::Known::nothing()
        ),
        Plan::ShowTables {
            db: "app".into(),
            is_full: true,
            like: Some("ord%".into())
        }
    );
    assert!(like_matches("ord%", "orders"));
    assert!(like_matches("o_ders", "orders"));
    assert!(!like_matches("Ord%", "orders"));
    assert!(like_matches("a\\_b", "a_b") && !like_matches("a\\_b", "axb"));
}

#[test]
fn key_placeholders() {
    assert_eq!(
        key_placeholder(
            "SELECT c FROM t WHERE a = ? AND customer_id = ?",
            "customer_id"
        ),
        Some(1)
    );
    assert_eq!(
        key_placeholder("UPDATE t SET x = ? WHERE t.customer_id = ?", "customer_id"),
        Some(1)
    );
    assert_eq!(
        key_placeholder(
            "SELECT c FROM t WHERE customer_id = ? OR a = 1",
            "customer_id"
        ),
        None
    );
    assert_eq!(
        key_placeholder("SELECT c FROM t WHERE customer_id > ?", "customer_id"),
        None
    );
    assert_eq!(
        key_placeholder("DELETE FROM t WHERE ? = customer_id LIMIT 1", "customer_id"),
        Some(0)
    );
}

fn backends(p: Plan) -> Vec<usize> {
    parts(p).into_iter().map(|(b, _)| b).collect()
}

fn ranged() -> Dictionary {
    let mut d = Dictionary::default();
    let t = TableName::new("app", "r");
    d.setup_table(
        t.clone(),
        "k",
        "r_default",
        BackendId::MAIN,
        HashingFunction::Div(100),
    )
    .unwrap();
    for (p, v, b) in [("a", "0", 1), ("a", "1", 1), ("b", "2", 2), ("c", "3", 3)] {
        d.add_partition(&t, p, v, BackendId::new(b)).unwrap();
    }
    d.set_key_type(&t, "int");
    let t = TableName::new("app", "ev");
    d.setup_table(
        t.clone(),
        "day",
        "ev_default",
        BackendId::MAIN,
        HashingFunction::parse("DATE('%Y-%m')").unwrap(),
    )
    .unwrap();
    d.add_partition(&t, "m03", "2024-03", BackendId::new(1))
        .unwrap();
    d.add_partition(&t, "m04", "2024-04", BackendId::new(2))
        .unwrap();
    d.add_partition(&t, "m05", "2024-05", BackendId::new(3))
        .unwrap();
    d.set_key_type(&t, "date");
    let t = TableName::new("app", "s");
    d.setup_table(
        t.clone(),
        "name",
        "s_default",
        BackendId::MAIN,
        HashingFunction::None,
    )
    .unwrap();
    d.add_partition(&t, "x", "x", BackendId::new(1)).unwrap();
    d.set_key_type(&t, "varchar");
    d
}

fn copartitioned() -> Dictionary {
    let mut d = dict();
    let t = TableName::new("app", "items");
    d.setup_table(
        t.clone(),
        "customer_id",
        "items_default",
        BackendId::MAIN,
        HashingFunction::Mod(4),
    )
    .unwrap();
    d.add_partition(&t, "p1", "1", BackendId::new(1)).unwrap();
    d.add_partition(&t, "p2", "2", BackendId::new(2)).unwrap();
    d.set_key_exact(&t, true);
    d
}

#[test]
fn enum_keys_name_members() {
    use crate::dictionary::EnumKey;
    let e = EnumKey::parse("enum('books','Music','it''s') COLLATE utf8mb4_general_ci").unwrap();
    assert_eq!(e.members, vec!["books", "Music", "it's"]);
    assert_eq!(e.member("BOOKS"), Some("books"));
    assert_eq!(e.member("music  "), Some("Music"));
    assert_eq!(e.member("IT'S"), Some("it's"));
    assert_eq!(e.member("böoks"), None);
    assert_eq!(e.member("book"), None);
    let bin = EnumKey::parse("enum('a','B') COLLATE utf8mb4_bin").unwrap();
    assert_eq!(bin.member("A"), None);
    assert_eq!(bin.member("a "), Some("a"));
    let nopad = EnumKey::parse("enum('a') COLLATE utf8mb4_nopad_bin").unwrap();
    assert_eq!(nopad.member("a "), None);
    assert!(EnumKey::parse("varchar(10) COLLATE utf8mb4_general_ci").is_none());

    let mut d = Dictionary::default();
    let t = TableName::new("app", "small");
    d.setup_table(
        t.clone(),
        "category",
        "small_default",
        BackendId::MAIN,
        HashingFunction::None,
    )
    .unwrap();
    d.set_key_type(
        &t,
        "enum('books','music','films') COLLATE utf8mb4_general_ci",
    );
    let v = d
        .table(&t)
        .unwrap()
        .partition_value("Books", &crate::known::Known::nothing())
        .unwrap();
    assert_eq!(v, "books");
    assert!(d
        .table(&t)
        .unwrap()
        .partition_value("toys", &crate::known::Known::nothing())
        .is_err());
}

/// The plan cache answers exactly what the planner answers, for statements
/// of one shape with all kinds of literals, and hits when it can.
#[test]
fn cached_plans_equal_fresh_plans() {
    let mut d = ranged();
    let t = TableName::new("app", "small");
    d.setup_table(
        t.clone(),
        "category",
        "small_default",
        BackendId::MAIN,
        HashingFunction::None,
    )
    .unwrap();
    d.set_key_type(&t, "enum('books','music') COLLATE utf8mb4_general_ci");
    d.add_partition(&t, "b", "books", BackendId::new(1))
        .unwrap();
    let mut cache = PlanCache::new();
    let templates = [
        "SELECT * FROM r WHERE k = {v}",
        "SELECT * FROM r WHERE k = {v} ORDER BY id LIMIT 3",
        "SELECT x.a FROM app.r AS x WHERE x.k = {v} AND x.b > {v}",
        "SELECT * FROM r WHERE {v} = k",
        "SELECT * FROM r WHERE k = {v} OR k = 250",
        "SELECT * FROM r WHERE k = {v} AND k = 5",
        "UPDATE r SET b = {v} WHERE k = {v}",
        "DELETE FROM r WHERE k = {v}",
        "SELECT * FROM R WHERE k = {v}",
        "SELECT * FROM small WHERE category = {v}",
        "SELECT '{v}', k FROM r WHERE k = {v}",
        "INSERT INTO r (k, b) VALUES ({v}, 1)",
        "SELECT * FROM other WHERE k = {v}",
    ];
    let values = [
        "5", "-5", "250", "'250'", "' 7'", "'abc'", "1.5", "NULL", "399", "400", "'books'",
        "'BOOKS '", "'music'", "'toys'", "1", "-0",
    ];
    for db in [Some("app"), None, Some("other")] {
        for round in 0..2 {
            for tpl in templates {
                for v in values {
                    let sql = tpl.replace("{v}", v);
                    let fresh = plan(&sql, db, &d, &crate::known::Known::nothing());
                    let cached = cache.plan(&sql, db, &d, &crate::known::Known::nothing());
                    assert_eq!(cached, fresh, "{sql} (db {db:?}, round {round})");
                }
            }
        }
    }
    assert!(cache.stats.hits > 300, "{:?}", cache.stats);
    // A new dictionary version is never served an old plan.
    let mut d2 = d.clone();
    d2.add_partition(&TableName::new("app", "r"), "e", "50", BackendId::new(2))
        .unwrap();
    let sql = "SELECT * FROM r WHERE k = 5000";
    assert_eq!(
        cache.plan(sql, Some("app"), &d2, &crate::known::Known::nothing()),
        plan(sql, Some("app"), &d2, &crate::known::Known::nothing())
    );
    assert_eq!(
        backends(cache.plan(sql, Some("app"), &d2, &crate::known::Known::nothing())),
        vec![2]
    );
}

#[test]
fn prepared_insert_key_placeholders() {
    let f = |sql: &str| insert_key_placeholders(sql, "customer_id");
    assert_eq!(
        f("INSERT INTO orders (id, customer_id) VALUES (?, ?)"),
        Some(vec![1])
    );
    assert_eq!(
        f("INSERT INTO orders (customer_id, id, v) VALUES (?, ?, CONCAT(?, 'x')), (?, 5, ?)"),
        Some(vec![0, 3])
    );
    assert_eq!(
        f("INSERT INTO orders (id, customer_id) VALUES (?, 5)"),
        None
    );
    assert_eq!(
        f("INSERT INTO orders (id, customer_id) VALUES (?, ?), (?, 5)"),
        None
    );
}

fn merge_plan(sql: &str) -> MergePlan {
    match plan(sql, Some("app"), &dict(), &crate::known::Known::nothing()) {
        Plan::Merge(m) => m,
        other => panic!("{sql}: expected a merge, got {other:?}"),
    }
}

#[test]
fn merges_push_fragments_down() {
    let m =
        merge_plan("SELECT id, note FROM orders WHERE x > 1 ORDER BY note DESC, id LIMIT 5, 10");
    assert_eq!(m.parts.len(), 3);
    assert_eq!(
        m.parts[1].1,
        "SELECT id, note, note AS `hscale_sort_0`, WEIGHT_STRING(note) AS `hscale_sort_1`, WEIGHT_STRING(IF(CONCAT(LEFT(note, 0), ' ') = LEFT(note, 0), LEFT(CONCAT(' ', note), 1), LEFT(note, 0))) AS `hscale_sort_2`, id AS `hscale_sort_3`, WEIGHT_STRING(id) AS `hscale_sort_4`, WEIGHT_STRING(IF(CONCAT(LEFT(id, 0), ' ') = LEFT(id, 0), LEFT(CONCAT(' ', id), 1), LEFT(id, 0))) AS `hscale_sort_5` FROM `app`.`orders_p1` AS `orders` WHERE x > 1 ORDER BY note DESC, id LIMIT 15"
    );
    assert_eq!(m.mode, Mode::Sort { hidden: 6 });
    assert_eq!((m.offset, m.limit), (5, Some(10)));
    assert_eq!(
        m.order,
        vec![
            OrderKey {
                col: 0,
                weight: Some((1, 2)),
                desc: true
            },
            OrderKey {
                col: 3,
                weight: Some((4, 5)),
                desc: false
            }
        ]
    );
    let m = merge_plan(
        "SELECT customer_id AS c, COUNT(*), SUM(amount) AS s, AVG(amount), MAX(note) FROM orders GROUP BY c ORDER BY s DESC LIMIT 3",
    );
    assert_eq!(
        m.parts[0].1,
        "SELECT customer_id AS c, WEIGHT_STRING(customer_id), WEIGHT_STRING(IF(CONCAT(LEFT(customer_id, 0), ' ') = LEFT(customer_id, 0), LEFT(CONCAT(' ', customer_id), 1), LEFT(customer_id, 0))), COUNT(*), SUM(amount), SUM(amount), COUNT(amount), MAX(note), WEIGHT_STRING(MAX(note)), WEIGHT_STRING(IF(CONCAT(LEFT(MAX(note), 0), ' ') = LEFT(MAX(note), 0), LEFT(CONCAT(' ', MAX(note)), 1), LEFT(MAX(note), 0))) FROM `app`.`orders_default` AS `orders` GROUP BY c"
    );
    let Mode::Group(g) = &m.mode else { panic!() };
    assert_eq!(
        g.outputs,
        vec![
            Output::Key(0),
            Output::Count(3),
            Output::Sum(4),
            Output::Avg { sum: 5, count: 6 },
            Output::Max(Val {
                col: 7,
                weight: Some((8, 9))
            })
        ]
    );
    assert_eq!(
        g.meta.1,
        "SELECT customer_id AS c, COUNT(*), SUM(amount) AS s, AVG(amount), MAX(note) FROM `app`.`orders_default` AS `orders` GROUP BY c ORDER BY s DESC LIMIT 0"
    );
    assert_eq!(
        m.order,
        vec![OrderKey {
            col: 2,
            weight: None,
            desc: true
        }]
    );
    let m = merge_plan("SELECT DISTINCT note FROM orders");
    assert_eq!(
        m.parts[2].1,
        "SELECT note, WEIGHT_STRING(note), WEIGHT_STRING(IF(CONCAT(LEFT(note, 0), ' ') = LEFT(note, 0), LEFT(CONCAT(' ', note), 1), LEFT(note, 0))) FROM `app`.`orders_p2` AS `orders` GROUP BY note"
    );
}

/// A shipped table's temporary copy is created like its source (the
/// default partition of a partitioned table), which the golden plans do
/// not show.
#[test]
fn shipped_tables_are_created_like_their_source() {
    let d = copartitioned();
    let like = |sql: &str| match plan(sql, Some("app"), &d, &crate::known::Known::nothing()) {
        Plan::Merge(m) => m.ship.iter().map(|s| s.like.clone()).collect::<Vec<_>>(),
        other => panic!("{sql}: {other:?}"),
    };
    assert_eq!(
        like("SELECT * FROM orders o JOIN items i ON i.id = o.id WHERE o.customer_id = 5"),
        vec![(BackendId::MAIN, "items_default".to_string())]
    );
    assert_eq!(
        like("SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.customer_id = 5"),
        vec![(BackendId::MAIN, "customers".to_string())]
    );
}

#[test]
fn having_reads_outputs_and_hidden_aggregates() {
    let m = merge_plan(
        "SELECT note, COUNT(*) AS n FROM orders GROUP BY note HAVING n > 1 AND SUM(amount) BETWEEN -5 AND 10 OR note IS NULL",
    );
    let Mode::Group(g) = &m.mode else { panic!() };
    assert_eq!(g.visible, 2);
    assert_eq!(g.outputs.len(), 3);
    assert!(matches!(g.outputs[2], Output::Sum(_)));
    assert!(m.parts[0].1.contains("SUM(amount)"), "{}", m.parts[0].1);
    let Some(Having::Or(_, null_check)) = &g.having else {
        panic!("{:?}", g.having)
    };
    assert_eq!(
        **null_check,
        Having::IsNull(Box::new(Having::Out(0)), false)
    );
}

#[test]
fn group_concat_joins_partial_lists() {
    let m = merge_plan("SELECT note, GROUP_CONCAT(id SEPARATOR '; ') FROM orders GROUP BY note");
    assert!(
        m.parts[0]
            .1
            .contains("GROUP_CONCAT(id SEPARATOR '; '), @@group_concat_max_len"),
        "{}",
        m.parts[0].1
    );
    let Mode::Group(g) = &m.mode else { panic!() };
    assert_eq!(g.separators, vec!["; ".to_string()]);
}

/// Findings of a review, each once a wrong answer or a crash (those that
/// are plans live in the golden files under `tests/plans/`).
#[test]
fn review_findings_stay_fixed() {
    let d = copartitioned();
    // Prepared key parameters only in single-table statements.
    assert_eq!(
        key_placeholder(
            "SELECT i.* FROM items i JOIN products p ON i.x = p.id WHERE p.customer_id = ?",
            "customer_id"
        ),
        None
    );
    // Integer partition values as routing writes them.
    let t = d.table(&TableName::new("app", "orders")).unwrap();
    assert_eq!(
        t.partition_value("05", &crate::known::Known::nothing())
            .unwrap(),
        "5"
    );
    // GROUP BY without ORDER BY is ordered by the keys, as MariaDB does.
    let m = merge_plan("SELECT COUNT(*) FROM orders GROUP BY note LIMIT 2");
    let Mode::Group(g) = &m.mode else { panic!() };
    assert_eq!(g.visible, 1);
    assert_eq!(m.order.len(), 1);
    assert_eq!(g.outputs[m.order[0].col], Output::Key(0));
    let m = merge_plan("SELECT COUNT(*) FROM orders GROUP BY note ORDER BY NULL");
    assert!(m.order.is_empty());
    // Two-digit years are not dates hscale can place.
    assert!(HashingFunction::parse("DATE('%Y-%m')")
        .unwrap()
        .apply(&crate::KeyValue::Str("24-01-15".into()))
        .is_err());
}

#[test]
fn like_matches_as_the_recursive_definition() {
    fn reference(p: &[char], s: &[char]) -> bool {
        match p.first() {
            None => s.is_empty(),
            Some('%') => (0..=s.len()).any(|k| reference(&p[1..], &s[k..])),
            Some('_') => !s.is_empty() && reference(&p[1..], &s[1..]),
            Some('\\') if p.len() > 1 => s.first() == Some(&p[1]) && reference(&p[2..], &s[1..]),
            Some(c) => s.first() == Some(c) && reference(&p[1..], &s[1..]),
        }
    }
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    runner
        .run(&("[ab%_\\\\]{0,8}", "[ab%_\\\\]{0,6}"), |(p, s)| {
            let (pc, sc): (Vec<char>, Vec<char>) = (p.chars().collect(), s.chars().collect());
            proptest::prop_assert_eq!(like_matches(&p, &s), reference(&pc, &sc), "{} {}", p, s);
            Ok(())
        })
        .unwrap();
    // A long pattern of `%` is linear, not exponential, and recursion-free.
    assert!(!like_matches(&"%".repeat(100_000).replace("%%", "%a"), "b"));
}

#[test]
fn table_references_are_where_tables_go() {
    let mut d = dict();
    for name in ["r", "s"] {
        let t = TableName::new("app", name);
        d.setup_table(
            t.clone(),
            "k",
            &format!("{name}_default"),
            BackendId::MAIN,
            HashingFunction::Mod(2),
        )
        .unwrap();
    }
    // Each reference as `table` or `table alias`.
    let names = |sql: &str| -> Vec<String> {
        let tokens = hscale_sql::tokenize(sql).unwrap();
        table_refs(sql, &tokens, Some("app"), &d)
            .iter()
            .map(|r| match &r.alias {
                Some(a) => format!("{} {a}", r.name.table),
                None => r.name.table.clone(),
            })
            .collect()
    };
    // Every place a table goes.
    for (sql, want) in [
        (
            "SELECT * FROM orders o, (r JOIN s ON r.k = s.k) WHERE 1",
            &["orders o", "r", "s"][..],
        ),
        (
            "SELECT * FROM orders o JOIN r ON r.k = o.id, s",
            &["orders o", "r", "s"],
        ),
        (
            "SELECT * FROM `orders` USE INDEX FOR JOIN (i) JOIN app.r x ON 1",
            &["orders", "r x"],
        ),
        (
            "SELECT (SELECT 1 FROM r) FROM orders WHERE id IN (SELECT k FROM s)",
            &["r", "orders", "s"],
        ),
        ("UPDATE LOW_PRIORITY orders, r SET a = 1", &["orders", "r"]),
        ("DELETE o FROM orders o JOIN r ON 1", &["orders o", "r"]),
        (
            "DELETE QUICK FROM orders USING orders, r",
            &["orders", "orders", "r"],
        ),
        ("INSERT IGNORE r (k) SELECT k FROM s", &["r", "s"]),
        ("EXPLAIN UPDATE r SET a = 1", &["r"]),
        ("DESC r", &["r"]),
        ("SHOW KEYS IN r", &["r"]),
        ("DROP TABLE IF EXISTS r, s", &["r", "s"]),
        ("CREATE INDEX i ON r (k)", &["r"]),
        ("LOAD DATA INFILE 'f' INTO TABLE r", &["r"]),
        ("SELECT * FROM orders FETCH FIRST 1 ROWS ONLY", &["orders"]),
    ] {
        assert_eq!(names(sql), want, "{sql}");
    }
    // (The words after the name are taken for aliases here; harmless, as
    // these statements are not rewritten.)
    assert_eq!(names("RENAME TABLE r TO s").len(), 2);
    assert_eq!(names("LOCK TABLES r READ, s WRITE").len(), 2);
    // Columns, aliases and qualifiers spelled like a partitioned table.
    for sql in [
        "SELECT r, s.k, id AS s FROM other s GROUP BY r ORDER BY s",
        "UPDATE other SET r = 1 WHERE s = 2",
        "INSERT INTO other (r) VALUES (1) ON DUPLICATE KEY UPDATE r = 2",
        "SELECT * FROM other o JOIN other2 p USING (r)",
        "SELECT STRAIGHT_JOIN r FROM other",
        "ALTER TABLE other ADD INDEX (r)",
    ] {
        assert!(names(sql).is_empty(), "{sql}: {:?}", names(sql));
    }
}

#[test]
fn a_string_converted_per_row_is_not_pruned_on() {
    // One server converts '5 ' for every row an IN list mixing strings
    // and numbers (or BETWEEN) compares, with a warning each time: every
    // partition is asked, so every row is compared, as there.
    let d = dict();
    let n = |sql: &str| parts(plan(sql, Some("app"), &d, &crate::known::Known::nothing())).len();
    assert_eq!(n("SELECT * FROM orders WHERE customer_id IN ('5', 6)"), 2);
    assert_eq!(
        n("SELECT * FROM orders WHERE customer_id IN ('5 ', '6')"),
        2
    );
    assert_eq!(n("SELECT * FROM orders WHERE customer_id IN ('5 ', 6)"), 3);
    assert_eq!(n("SELECT * FROM orders WHERE customer_id = '5 '"), 1);
    assert_eq!(
        n("SELECT * FROM orders WHERE customer_id IN ('5 ', 6) AND customer_id = 5"),
        3
    );
    // Another column's: pruned unless the string reads as a number and
    // is not a plain one.
    assert_eq!(
        n("SELECT * FROM orders WHERE qty IN ('5 ', 6) AND customer_id = 5"),
        3
    );
    assert_eq!(
        n("SELECT * FROM orders WHERE qty BETWEEN '-5 ' AND '3' AND customer_id = 5"),
        3
    );
    assert_eq!(
        n("SELECT * FROM orders WHERE d BETWEEN '2024-01-01' AND '2024-02-01' AND customer_id = 5"),
        1
    );
    assert_eq!(
        n("SELECT * FROM orders WHERE qty IN ('5', 6.5, 'abc') AND customer_id = 5"),
        1
    );
}

#[test]
fn part_rows_are_the_statements_rows() {
    let t = |p: &str| Target {
        backend: BackendId::MAIN,
        physical_table: p.into(),
    };
    let sql = "INSERT INTO t (k, v) VALUES (1, 'a'), (2, f(1, 2)), (1, 'a'), (3, '),(')";
    let parts = vec![
        (
            t("t_1"),
            "INSERT INTO t_1 (k, v) VALUES (1, 'a'), (1, 'a'), (3, '),(')".to_string(),
        ),
        (
            t("t_2"),
            "INSERT INTO t_2 (k, v) VALUES (2, f(1, 2)) ON DUPLICATE KEY UPDATE v = VALUES(v)"
                .to_string(),
        ),
    ];
    assert_eq!(
        insert_part_rows(sql, &parts),
        Some(vec![vec![1, 3, 4], vec![2]])
    );
    let stray = vec![(
        t("t_1"),
        "INSERT INTO t_1 (k, v) VALUES (9, 'z')".to_string(),
    )];
    assert_eq!(insert_part_rows(sql, &stray), None);
}

#[test]
fn doubtful_insert_keys_are_asked_about_and_only_plain_constants() {
    let mut d = dict();
    let t = TableName::new("app", "orders");
    d.set_key_type(&t, "int(11)");
    let ask = |sql: &str| {
        let known = crate::known::Known::nothing();
        let p = plan(sql, Some("app"), &d, &known);
        (p, known.questions().conversions)
    };
    // Sure: no question, one partition.
    let (p, asked) = ask("INSERT INTO orders (id, customer_id) VALUES (1, 2)");
    assert!(asked.is_empty());
    assert_eq!(parts(p).len(), 1);
    // Doubtful: each row's constant noted, the statement refused.
    let (p, asked) = ask(
        "INSERT INTO orders (id, customer_id) VALUES (1, '7abc'), (2, 1.5), (3, 3000000000), (4, X'13')",
    );
    assert!(matches!(p, Plan::Refuse(_)));
    let literals: Vec<&str> = asked.iter().map(|a| a.literal.as_str()).collect();
    assert_eq!(literals, ["'7abc'", "1.5", "3000000000", "X'13'"]);
    assert_eq!(asked[0].physical, "orders_default");
    assert_eq!(asked[0].column, "customer_id");
    // Answered: routed by the column's values.
    let answers: Vec<crate::conversions::Converted> = asked
        .iter()
        .zip(["7", "2", "2147483647", "0"])
        .map(|(a, v)| crate::conversions::Converted {
            table: a.table.clone(),
            literal: a.literal.clone(),
            value: Some(v.into()),
        })
        .collect();
    let answers = crate::known::answers(&answers);
    let known = crate::known::Known::new(None, Some(&answers));
    let p = plan(
        "INSERT INTO orders (id, customer_id) VALUES (1, '7abc'), (2, 1.5), (3, 3000000000), (4, X'13')",
        Some("app"),
        &d,
        &known,
    );
    assert!(known.questions().is_empty());
    let backends: Vec<usize> = parts(p).iter().map(|(b, _)| *b).collect();
    // 7 % 4 = 3 and 2147483647 % 4 = 3: the default; 2: p2; 0: the default.
    assert_eq!(backends.len(), 2, "{backends:?}");
    // Text whose end depends on the sql_mode (a backslash, a double-quoted
    // string) is never sent inside the proxy's compound statement.
    for sql in [
        "INSERT INTO orders (id, customer_id) VALUES (1, '7\\'; DROP TABLE x; SELECT \\'')",
        "INSERT INTO orders (id, customer_id) VALUES (1, \"7abc\")",
    ] {
        let (p, asked) = ask(sql);
        assert!(asked.is_empty(), "{sql}: {asked:?}");
        assert!(matches!(p, Plan::Refuse(_)), "{sql}: {p:?}");
    }
}

#[test]
fn auto_partitioning_makes_no_partition_for_a_number_the_column_cannot_hold() {
    let mut d = dict();
    let t = TableName::new("app", "orders");
    d.set_key_type(&t, "int(11)");
    d.set_auto(&t, Some(crate::dictionary::Placement::RoundRobin))
        .unwrap();
    let values = |sql: &str| {
        unplaced_values(sql, Some("app"), &d, &crate::known::Known::nothing()).map(|(_, v)| v)
    };
    assert_eq!(
        values("INSERT INTO orders (id, customer_id) VALUES (1, 7)"),
        Some(vec!["3".to_string()])
    );
    // 3000000000 is stored as 2147483647 without strict mode: no
    // partition for 3000000000 % 4.
    assert_eq!(
        values("INSERT INTO orders (id, customer_id) VALUES (1, 3000000000)"),
        None
    );
}
