//! Statements nested 10 to 100,000 deep (issue 11): each plans, or is
//! refused with a reason, on a thread with a 256 KiB stack, so no walk over
//! a client's statement recurses with its nesting. The time of each plan
//! is printed (`--nocapture`); `benches/plan.rs` measures planning time
//! against statement size in a release build.
//!
//! Also a property: random nesting and garbage never panic the planner.

use std::time::{Duration, Instant};

use hscale_route::dictionary::{Dictionary, TableName};
use hscale_route::router::{
    insert_key_placeholders, key_placeholder, like_matches, plan_prepared, Plan, PlanCache,
    MAX_DEPTH,
};
use hscale_route::{BackendId, HashingFunction};
use proptest::prelude::*;

/// Nesting depths (or chain lengths) of the ladder.
const DEPTHS: [usize; 5] = [10, 100, 1_000, 10_000, 100_000];

/// Up to this depth a statement is planned every way the proxy plans one;
/// deeper, through the plan cache only (as a client's query is), to keep
/// the test fast in a debug build.
const EVERY_WAY: usize = 1_000;

/// A small stack, as a worker thread might have.
const STACK: usize = 256 * 1024;

fn dictionary() -> Dictionary {
    let mut d = Dictionary::default();
    for name in ["orders", "items"] {
        let t = TableName::new("app", name);
        d.setup_table(
            t.clone(),
            "customer_id",
            &format!("{name}_default"),
            BackendId::MAIN,
            HashingFunction::Mod(4),
        )
        .expect("setup_table");
        d.add_partition(&t, "p1", "1", BackendId::new(1))
            .expect("add_partition");
        d.add_partition(&t, "p2", "2", BackendId::new(2))
            .expect("add_partition");
        d.set_key_type(&t, "int");
    }
    d.add_global(TableName::new("app", "countries"))
        .expect("add_global");
    d
}

/// `open` n times, `inner`, `close` n times.
fn nest(n: usize, open: &str, inner: &str, close: &str) -> String {
    format!("{}{inner}{}", open.repeat(n), close.repeat(n))
}

/// What a shape's plan must be at depth `n`.
#[derive(Clone, Copy)]
enum Expect {
    /// Anything but a panic or an overflow.
    Any,
    /// Refused (by `plan_prepared`, which never falls back to shipping
    /// the tables) deeper than this, with a reason that says so.
    TooDeepPast(usize),
}

/// A statement shape: its name, the statement `n` deep, what its plan must
/// be, and its deepest rung.
type Shape = (&'static str, fn(usize) -> String, Expect, usize);

const ALL: usize = 100_000;
/// Shapes long per level (or extra to the list) stop here.
const SHORT: usize = 10_000;

const HAVING: &str = "SELECT note, COUNT(*) FROM orders GROUP BY note HAVING ";
const JOIN: &str = "SELECT * FROM orders o JOIN items i ON ";

fn where_shapes() -> Vec<Shape> {
    use Expect::*;
    vec![
        (
            "WHERE parentheses",
            |n| {
                format!(
                    "SELECT * FROM orders WHERE {}",
                    nest(n, "(", "customer_id = 1", ")")
                )
            },
            Any,
            ALL,
        ),
        (
            "WHERE NOT",
            |n| {
                format!(
                    "SELECT * FROM orders WHERE {}customer_id = 1",
                    "NOT ".repeat(n)
                )
            },
            Any,
            ALL,
        ),
        (
            "WHERE AND chain",
            |n| {
                format!(
                    "SELECT * FROM orders WHERE customer_id = 1{}",
                    " AND 1".repeat(n)
                )
            },
            Any,
            ALL,
        ),
        (
            "WHERE OR chain",
            |n| {
                format!(
                    "SELECT * FROM orders WHERE customer_id = 1{}",
                    " OR 0".repeat(n)
                )
            },
            Any,
            ALL,
        ),
        (
            "WHERE nested AND/OR",
            |n| {
                let open: String = (0..n).map(|i| ["(1 OR ", "(1 AND "][i % 2]).collect();
                format!(
                    "SELECT * FROM orders WHERE {open}customer_id = 1{}",
                    ")".repeat(n)
                )
            },
            Any,
            ALL,
        ),
        (
            "WHERE function calls",
            |n| {
                format!(
                    "SELECT * FROM orders WHERE customer_id = {}",
                    nest(n, "f(", "1", ")")
                )
            },
            Any,
            ALL,
        ),
        (
            "WHERE subqueries",
            |n| {
                format!(
                    "SELECT * FROM orders WHERE customer_id = {}",
                    nest(n, "(SELECT ", "1", ")")
                )
            },
            Any,
            ALL,
        ),
        (
            "WHERE left-deep ORs",
            |n| {
                format!(
                    "SELECT * FROM orders WHERE {}",
                    nest(n, "(", "customer_id = 0", " OR 0)")
                )
            },
            Any,
            SHORT,
        ),
        (
            "WHERE IN subqueries",
            |n| {
                let open = "customer_id IN (SELECT customer_id FROM orders WHERE ";
                format!(
                    "SELECT * FROM orders WHERE {}",
                    nest(n, open, "customer_id = 1", ")")
                )
            },
            Any,
            SHORT,
        ),
        (
            "WHERE IN list",
            |n| {
                format!(
                    "SELECT * FROM orders WHERE customer_id IN (1{})",
                    ",1".repeat(n)
                )
            },
            Any,
            SHORT,
        ),
        (
            "WHERE garbage parentheses",
            |n| format!("SELECT * FROM orders WHERE {}", ")(".repeat(n)),
            Any,
            SHORT,
        ),
    ]
}

fn having_shapes() -> Vec<Shape> {
    use Expect::*;
    vec![
        (
            "HAVING parentheses",
            |n| format!("{HAVING}{}", nest(n, "(", "COUNT(*) > 1", ")")),
            TooDeepPast(MAX_DEPTH),
            ALL,
        ),
        (
            "HAVING NOT",
            |n| format!("{HAVING}{}COUNT(*) > 1", "NOT ".repeat(n)),
            TooDeepPast(MAX_DEPTH),
            ALL,
        ),
        (
            "HAVING OR chain",
            |n| format!("{HAVING}COUNT(*) = 1{}", " OR 0".repeat(n)),
            Any,
            ALL,
        ),
        (
            "HAVING unary minus",
            |n| format!("{HAVING}{}COUNT(*) > 1", "-".repeat(n)),
            TooDeepPast(MAX_DEPTH),
            SHORT,
        ),
        (
            "HAVING NOT and parentheses",
            |n| format!("{HAVING}{}", nest(n, "NOT (", "COUNT(*) > 1", ")")),
            TooDeepPast(MAX_DEPTH / 2),
            SHORT,
        ),
        (
            "HAVING AND chain",
            |n| format!("{HAVING}COUNT(*) = 1{}", " AND note".repeat(n)),
            Any,
            SHORT,
        ),
        (
            "HAVING sum chain",
            |n| format!("{HAVING}COUNT(*){} > 1", "+1".repeat(n)),
            TooDeepPast(MAX_DEPTH),
            SHORT,
        ),
        (
            "HAVING nested BETWEEN",
            |n| format!("{HAVING}{}", nest(n, "(", "COUNT(*)", " BETWEEN 0 AND 1)")),
            Any,
            SHORT,
        ),
        (
            "HAVING function calls",
            |n| format!("{HAVING}COUNT(*) > {}", nest(n, "f(", "1", ")")),
            Any,
            SHORT,
        ),
    ]
}

fn select_list_and_join_shapes() -> Vec<Shape> {
    use Expect::*;
    vec![
        (
            "select-list parentheses",
            |n| format!("SELECT {} FROM orders ORDER BY 1", nest(n, "(", "id", ")")),
            Any,
            ALL,
        ),
        (
            "select-list function calls",
            |n| {
                format!(
                    "SELECT note, SUM({}) FROM orders GROUP BY note",
                    nest(n, "f(", "amount", ")")
                )
            },
            Any,
            ALL,
        ),
        (
            "JOIN ON parentheses",
            |n| {
                format!(
                    "{JOIN}{} WHERE o.customer_id = 1",
                    nest(n, "(", "o.customer_id = i.customer_id", ")")
                )
            },
            Any,
            ALL,
        ),
        (
            "JOIN ON AND chain",
            |n| format!("{JOIN}o.customer_id = i.customer_id{}", " AND 1".repeat(n)),
            Any,
            ALL,
        ),
        (
            "select-list subqueries",
            |n| {
                format!(
                    "SELECT {} FROM orders LIMIT 1",
                    nest(n, "(SELECT ", "1", ")")
                )
            },
            Any,
            SHORT,
        ),
        (
            "select items",
            |n| format!("SELECT id{} FROM orders ORDER BY id", ",id".repeat(n)),
            Any,
            SHORT,
        ),
        (
            "ORDER BY repeats a long item",
            |n| {
                let item = nest(n.min(1000), "(", "id", ")");
                format!("SELECT {item} FROM orders ORDER BY 1{}", ",1".repeat(n))
            },
            Any,
            SHORT,
        ),
        (
            "GROUP BY repeats a long item",
            |n| {
                let item = nest(n.min(1000), "(", "note", ")");
                format!(
                    "SELECT {item} AS x, COUNT(*) FROM orders GROUP BY x{}",
                    ",x".repeat(n)
                )
            },
            Any,
            SHORT,
        ),
        (
            "JOIN ON NOT",
            |n| {
                format!(
                    "{JOIN}o.customer_id = i.customer_id AND {}o.a = 1",
                    "NOT ".repeat(n)
                )
            },
            Any,
            SHORT,
        ),
        (
            "JOIN ON equality chain",
            |n| {
                let eqs: String = (0..n)
                    .rev()
                    .map(|i| format!(" AND o.c{} = o.c{i}", i + 1))
                    .collect();
                format!("{JOIN}i.customer_id = o.c0{eqs} WHERE o.customer_id = 1")
            },
            Any,
            SHORT,
        ),
        (
            "JOIN ON function calls",
            |n| {
                format!(
                    "{JOIN}o.customer_id = {}",
                    nest(n, "f(", "i.customer_id", ")")
                )
            },
            Any,
            SHORT,
        ),
        (
            "JOIN of many tables",
            |n| {
                let joins: String = (0..n)
                    .map(|i| format!(" JOIN items i{i} ON i{i}.customer_id = o.customer_id"))
                    .collect();
                format!("SELECT * FROM orders o{joins}")
            },
            Any,
            SHORT,
        ),
    ]
}

fn other_shapes() -> Vec<Shape> {
    use Expect::*;
    vec![
        (
            "nested UNION ALL",
            |n| {
                format!(
                    "SELECT id FROM orders UNION ALL {}",
                    nest(n, "(SELECT id FROM items UNION ALL ", "SELECT 1", ")")
                )
            },
            Any,
            1_000,
        ),
        (
            "UNION ALL chain",
            |n| {
                format!(
                    "SELECT id FROM orders{}",
                    " UNION ALL SELECT id FROM orders".repeat(n)
                )
            },
            Any,
            SHORT,
        ),
        (
            "many references (shipped)",
            |n| {
                format!(
                    "SELECT * FROM orders WHERE 1{}",
                    " AND id IN (SELECT id FROM orders)".repeat(n)
                )
            },
            Any,
            SHORT,
        ),
        (
            "INSERT rows",
            |n| {
                format!(
                    "INSERT INTO orders (customer_id, id) VALUES (1,1){}",
                    ",(1,1)".repeat(n)
                )
            },
            Any,
            SHORT,
        ),
        (
            "INSERT placeholders",
            |n| {
                format!(
                    "INSERT INTO orders (customer_id, id) VALUES (?,?){}",
                    ",(?,?)".repeat(n)
                )
            },
            Any,
            SHORT,
        ),
        (
            "INSERT nested value",
            |n| {
                format!(
                    "INSERT INTO orders (customer_id, id) VALUES (1, {})",
                    nest(n, "(", "1", ")")
                )
            },
            Any,
            SHORT,
        ),
        (
            "UPDATE SET parentheses",
            |n| {
                format!(
                    "UPDATE orders SET a = {} WHERE customer_id = 1",
                    nest(n, "(", "1", ")")
                )
            },
            Any,
            SHORT,
        ),
        (
            "DELETE WHERE parentheses",
            |n| {
                format!(
                    "DELETE FROM orders WHERE {}",
                    nest(n, "(", "customer_id = ?", ")")
                )
            },
            Any,
            SHORT,
        ),
        (
            "global write",
            |n| {
                format!(
                    "UPDATE countries SET a = {} WHERE id = 1",
                    nest(n, "(", "1", ")")
                )
            },
            Any,
            SHORT,
        ),
        (
            "db-qualified columns",
            |n| {
                format!(
                    "SELECT app.orders.id{} FROM orders WHERE customer_id = 1",
                    ",app.orders.id".repeat(n)
                )
            },
            Any,
            SHORT,
        ),
        (
            "information_schema literals",
            |n| {
                format!("SELECT * FROM information_schema.columns WHERE table_schema = 'app' AND table_name IN ('orders'{})", ",'t'".repeat(n))
            },
            Any,
            SHORT,
        ),
        (
            "SHOW TABLES LIKE",
            |n| format!("SHOW TABLES LIKE '{}'", "%a".repeat(n)),
            Any,
            SHORT,
        ),
    ]
}

/// What planning `sql` gave: the plan (through the plan cache), the
/// prepared plan (when asked), and the time of the first.
struct Planned {
    plan: Plan,
    prepared: Option<Plan>,
    took: Duration,
}

/// Plan `sql` on a thread with a small stack: through the plan cache, and
/// with `every_way` also prepared, for prepared keys, analyzed and
/// fingerprinted.
fn plan_on_small_stack(sql: String, every_way: bool) -> Planned {
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || {
            let d = dictionary();
            let start = Instant::now();
            let plan = PlanCache::new().plan(
                &sql,
                Some("app"),
                &d,
                &hscale_route::known::Known::nothing(),
            );
            let took = start.elapsed();
            let mut prepared = None;
            if every_way {
                prepared = Some(plan_prepared(
                    &sql,
                    Some("app"),
                    &d,
                    &hscale_route::known::Known::nothing(),
                ));
                let _ = key_placeholder(&sql, "customer_id");
                let _ = insert_key_placeholders(&sql, "customer_id");
                let _ = hscale_sql::analyze(&sql);
                let _ = hscale_sql::fingerprint(&sql);
                if let Plan::ShowTables { like: Some(p), .. } = &plan {
                    let _ = like_matches(p, "orders");
                }
            }
            Planned {
                plan,
                prepared,
                took,
            }
        })
        .expect("spawn")
        .join()
        .expect("the planner panicked")
}

/// Plan every shape at each of its rungs; print the times.
fn ladder(shapes: Vec<Shape>) {
    let started = Instant::now();
    for (name, make, expect, deepest) in shapes {
        let mut line = format!("{name:<30}");
        for n in DEPTHS.into_iter().filter(|&n| n <= deepest) {
            let sql = make(n);
            let kb = sql.len() / 1024;
            let check = matches!(expect, Expect::TooDeepPast(_));
            let p = plan_on_small_stack(sql, n <= EVERY_WAY || check);
            let ms = p.took.as_secs_f64() * 1e3;
            line.push_str(&format!(" {n}: {ms:.1} ms ({kb} KB),"));
            if let (Expect::TooDeepPast(limit), Some(prepared)) = (expect, &p.prepared) {
                match (prepared, n > limit) {
                    (Plan::Refuse(why), true) => {
                        assert!(why.contains("nested more than"), "{name} at {n}: {why}")
                    }
                    (other, true) => panic!("{name} at {n}: not refused: {other:?}"),
                    (Plan::Refuse(why), false) => {
                        assert!(!why.contains("nested"), "{name} at {n}: {why}")
                    }
                    _ => {}
                }
            }
            drop(p.plan);
        }
        println!("{line}");
    }
    println!("{:.2} s", started.elapsed().as_secs_f64());
}

#[test]
fn where_nested_10_to_100000_deep() {
    ladder(where_shapes());
}

#[test]
fn having_nested_10_to_100000_deep() {
    ladder(having_shapes());
}

#[test]
fn select_list_and_join_on_nested_10_to_100000_deep() {
    ladder(select_list_and_join_shapes());
}

#[test]
fn other_statements_nested_10_to_10000_deep() {
    ladder(other_shapes());
}

/// Pieces of statements, most of them about nesting.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "(",
        "(",
        "(",
        ")",
        ")",
        ")",
        "NOT",
        "-",
        "!",
        "AND",
        "OR",
        "XOR",
        "&&",
        "||",
        "=",
        "<",
        ">=",
        "<=>",
        "+",
        "*",
        "/",
        ",",
        "IN",
        "BETWEEN",
        "IS",
        "NULL",
        "SELECT",
        "FROM",
        "WHERE",
        "GROUP BY",
        "HAVING",
        "ORDER BY",
        "LIMIT",
        "JOIN",
        "LEFT JOIN",
        "ON",
        "USING",
        "UNION ALL",
        "AS",
        "DISTINCT",
        "COUNT(*)",
        "SUM(",
        "MIN(",
        "GROUP_CONCAT(",
        "SEPARATOR",
        "orders",
        "items",
        "o",
        "i",
        "app.orders",
        "o.customer_id",
        "i.customer_id",
        "customer_id",
        "note",
        "1",
        "2",
        "'a'",
        "?",
        ";",
        "INSERT INTO",
        "VALUES",
        "UPDATE",
        "SET",
        "DELETE",
        "f(",
        "CASE",
        "WHEN",
        "THEN",
        "END",
        "FETCH",
        "OFFSET",
        "information_schema",
    ])
}

/// A statement start and random pieces, some repeated to nest deeply.
fn statement() -> impl Strategy<Value = String> {
    let start = prop::sample::select(vec![
        "SELECT * FROM orders WHERE ",
        "SELECT note, COUNT(*) FROM orders GROUP BY note HAVING ",
        "SELECT * FROM orders o JOIN items i ON ",
        "SELECT ",
        "UPDATE orders SET a = 1 WHERE ",
        "",
    ]);
    let run = (piece(), 1..300usize).prop_map(|(p, n)| vec![p; n].join(" "));
    let part = prop_oneof![4 => piece().prop_map(str::to_string), 1 => run];
    (start, prop::collection::vec(part, 0..40))
        .prop_map(|(s, parts)| format!("{s}{}", parts.join(" ")))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        rng_seed: prop::test_runner::RngSeed::Fixed(11),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_nesting_never_panics(sql in statement()) {
        plan_on_small_stack(sql, true);
    }
}
