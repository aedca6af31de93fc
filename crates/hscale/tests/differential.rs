#![allow(clippy::unwrap_used)]
//! The differential suite: the same schema and data behind hscale (tables
//! partitioned over four backends) and in one database of one server (the
//! reference), and several hundred SELECTs, hand-written and generated, run
//! on both. Every query must give exactly the reference's result (column
//! names, values, NULLs; in order where ORDER BY fixes it, as a multiset
//! otherwise) or a clear error from hscale (1235 unsupported, 1038 too
//! big); a different answer fails the test. The counts are printed.

#[path = "differential/classes.rs"]
mod classes;
mod common;
#[path = "differential/prepared.rs"]
mod prepared;
#[path = "differential/random.rs"]
mod random;

use common::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

const DB: &str = "diff_part";
const REF: &str = "diff_ref";

/// A deterministic generator (an LCG): the same queries on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE orders (id INT NOT NULL, customer_id INT NOT NULL, amount DECIMAL(10,2) NULL, qty INT NOT NULL, cat VARCHAR(10) NULL, tag VARCHAR(10) NOT NULL, created DATE NOT NULL, flag TINYINT NOT NULL, score DOUBLE NULL, PRIMARY KEY (id, customer_id))",
    "CREATE TABLE items (id INT NOT NULL, customer_id INT NOT NULL, order_id INT NOT NULL, sku VARCHAR(12) NOT NULL, price DECIMAL(8,3) NOT NULL, PRIMARY KEY (id, customer_id))",
    "CREATE TABLE events (id INT NOT NULL, day DATE NOT NULL, kind VARCHAR(8) NOT NULL, n BIGINT NULL, PRIMARY KEY (id, day))",
    "CREATE TABLE ranges (id INT NOT NULL, k INT NOT NULL, v INT NULL, label VARCHAR(6) NULL, PRIMARY KEY (id, k))",
    "CREATE TABLE cust (customer_id INT NOT NULL PRIMARY KEY, name VARCHAR(20) NOT NULL, region VARCHAR(8) NULL)",
    "CREATE TABLE notes (customer_id INT NOT NULL PRIMARY KEY, note VARCHAR(20) NOT NULL)",
];

const CATS: &[&str] = &["alpha", "beta", "gamma", "delta"];
const TAGS: &[&str] = &["x", "X", "y", "Y ", "z", "zz", "Zz"];

fn data() -> Vec<String> {
    let mut r = Rng(7);
    let mut out = Vec::new();
    let mut rows = Vec::new();
    for id in 1..=1200 {
        let customer = r.below(40) as i64 - 5;
        let amount = if r.below(9) == 0 {
            "NULL".to_string()
        } else {
            format!("{}.{:02}", r.below(5000) as i64 - 500, r.below(100))
        };
        let cat = if r.below(7) == 0 {
            "NULL".to_string()
        } else {
            format!("'{}'", r.pick(CATS))
        };
        let score = if r.below(5) == 0 {
            "NULL".to_string()
        } else {
            format!("{}.5", r.below(100))
        };
        rows.push(format!(
            "({id}, {customer}, {amount}, {}, {cat}, '{}', '2024-{:02}-{:02}', {}, {score})",
            r.below(50),
            r.pick(TAGS),
            1 + r.below(12),
            1 + r.below(28),
            r.below(2)
        ));
    }
    out.push(format!("INSERT INTO orders (id, customer_id, amount, qty, cat, tag, created, flag, score) VALUES {}", rows.join(", ")));
    let mut rows = Vec::new();
    for id in 1..=1500 {
        let order = 1 + r.below(1200);
        rows.push(format!(
            "({id}, {}, {order}, 'sku-{}', {}.{:03})",
            r.below(40) as i64 - 5,
            r.below(30),
            r.below(200),
            r.below(1000)
        ));
    }
    out.push(format!(
        "INSERT INTO items (id, customer_id, order_id, sku, price) VALUES {}",
        rows.join(", ")
    ));
    let mut rows = Vec::new();
    for id in 1..=600 {
        let n = if r.below(6) == 0 {
            "NULL".to_string()
        } else {
            (r.below(100_000) as i64 - 50_000).to_string()
        };
        rows.push(format!(
            "({id}, '2024-{:02}-{:02}', '{}', {n})",
            1 + r.below(12),
            1 + r.below(28),
            r.pick(&["open", "close", "move"])
        ));
    }
    out.push(format!(
        "INSERT INTO events (id, day, kind, n) VALUES {}",
        rows.join(", ")
    ));
    let mut rows = Vec::new();
    for id in 1..=500 {
        let v = if r.below(8) == 0 {
            "NULL".to_string()
        } else {
            r.below(1000).to_string()
        };
        let label = if r.below(5) == 0 {
            "NULL".to_string()
        } else {
            format!("'l{}'", r.below(9))
        };
        rows.push(format!("({id}, {}, {v}, {label})", r.below(500)));
    }
    out.push(format!(
        "INSERT INTO ranges (id, k, v, label) VALUES {}",
        rows.join(", ")
    ));
    let mut rows = Vec::new();
    for c in -5i64..35 {
        let region = if c % 6 == 0 {
            "NULL".to_string()
        } else {
            format!(
                "'{}'",
                ["north", "south", "east"][(c.rem_euclid(3)) as usize]
            )
        };
        rows.push(format!("({c}, 'customer {c}', {region})"));
    }
    out.push(format!("INSERT INTO cust VALUES {}", rows.join(", ")));
    let rows: Vec<String> = (-5i64..35)
        .step_by(3)
        .map(|c| format!("({c}, 'note {}')", c * 7 % 5))
        .collect();
    out.push(format!("INSERT INTO notes VALUES {}", rows.join(", ")));
    out
}

/// Partitioning of the hscale copy: four backends, five functions.
const PARTITIONING: &[&str] = &[
    // cust: global, a copy on every backend; notes: unpartitioned.
    "HSCALE SETUP_GLOBAL_TABLE('cust')",
    "HSCALE SETUP_TABLE('orders', 'customer_id', 'orders_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('orders', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('orders', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('orders', 'm3', '3', 'shard3')",
    "HSCALE ADD_PARTITION('orders', 'm1', '-1', 'shard1')",
    "HSCALE ADD_PARTITION('orders', 'm3', '-3', 'shard3')",
    // items: partitioned the same way as orders (co-partitioned).
    "HSCALE SETUP_TABLE('items', 'customer_id', 'items_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('items', 'm1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('items', 'm2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('items', 'm3', '3', 'shard3')",
    "HSCALE ADD_PARTITION('items', 'm1', '-1', 'shard1')",
    "HSCALE ADD_PARTITION('items', 'm3', '-3', 'shard3')",
    "HSCALE SETUP_TABLE('events', 'day', 'events_default', 'shard3', \"DATE('%Y-%m')\")",
    "HSCALE ADD_PARTITION('events', 'q1', '2024-01', 'shard1')",
    "HSCALE ADD_PARTITION('events', 'q1', '2024-02', 'shard1')",
    "HSCALE ADD_PARTITION('events', 'q1', '2024-03', 'shard1')",
    "HSCALE ADD_PARTITION('events', 'q2', '2024-04', 'shard2')",
    "HSCALE ADD_PARTITION('events', 'q2', '2024-05', 'shard2')",
    "HSCALE ADD_PARTITION('events', 'q3', '2024-07', 'shard0')",
    "HSCALE SETUP_TABLE('ranges', 'k', 'ranges_default', 'shard1', 'DIV(100)')",
    "HSCALE ADD_PARTITION('ranges', 'r0', '0', 'shard0')",
    "HSCALE ADD_PARTITION('ranges', 'r1', '1', 'shard2')",
    "HSCALE ADD_PARTITION('ranges', 'r2', '2', 'shard3')",
    "HSCALE ADD_PARTITION('ranges', 'r3', '3', 'shard3')",
];

/// Hand-written queries: `true` when the result order is fixed.
const HAND: &[(&str, bool)] = &[
    ("SELECT COUNT(*) FROM orders", true),
    ("SELECT COUNT(*), COUNT(amount), COUNT(cat), SUM(amount), AVG(amount), MIN(amount), MAX(amount) FROM orders", true),
    ("SELECT SUM(qty), AVG(qty), MIN(qty), MAX(qty), BIT_OR(qty), BIT_AND(qty), BIT_XOR(qty) FROM orders", true),
    ("SELECT MIN(created), MAX(created), MIN(cat), MAX(cat) FROM orders", true),
    ("SELECT MIN(score), MAX(score) FROM orders", true),
    ("SELECT SUM(score) FROM orders", true),
    ("SELECT cat, COUNT(*) FROM orders GROUP BY cat ORDER BY cat", true),
    ("SELECT cat, COUNT(*) AS n, SUM(amount) AS total, AVG(amount) FROM orders GROUP BY cat ORDER BY total DESC, cat", true),
    ("SELECT customer_id, COUNT(*), SUM(qty) FROM orders GROUP BY customer_id ORDER BY 3 DESC, 1 LIMIT 7", true),
    ("SELECT flag, cat, COUNT(*), MIN(id), MAX(id) FROM orders GROUP BY flag, cat ORDER BY flag, cat", true),
    ("SELECT cat AS c, COUNT(*) FROM orders GROUP BY c ORDER BY c DESC", true),
    ("SELECT DISTINCT cat FROM orders ORDER BY cat", true),
    ("SELECT DISTINCT flag, cat FROM orders ORDER BY cat, flag", true),
    ("SELECT DISTINCT customer_id FROM orders WHERE qty > 40", false),
    ("SELECT id, amount FROM orders ORDER BY amount, id", true),
    ("SELECT id, amount FROM orders ORDER BY amount DESC, id DESC LIMIT 10", true),
    ("SELECT id, tag FROM orders ORDER BY tag, id", true),
    ("SELECT id, tag FROM orders ORDER BY tag DESC, id LIMIT 20, 15", true),
    ("SELECT id, created FROM orders ORDER BY created, id LIMIT 25", true),
    ("SELECT id, score FROM orders ORDER BY score DESC, id LIMIT 12", true),
    ("SELECT id, cat FROM orders ORDER BY cat, id LIMIT 10 OFFSET 100", true),
    ("SELECT * FROM orders ORDER BY id LIMIT 5", true),
    ("SELECT o.id, o.qty FROM orders AS o WHERE o.qty < 3 ORDER BY o.qty, o.id", true),
    ("SELECT id FROM orders WHERE customer_id IN (1, 2, 3) ORDER BY id", true),
    ("SELECT id FROM orders WHERE customer_id = 7", false),
    ("SELECT * FROM orders WHERE customer_id = -3 ORDER BY id", true),
    ("SELECT tag, COUNT(*) FROM orders WHERE tag = 'x' GROUP BY tag", true),
    ("SELECT COUNT(*) FROM orders WHERE tag = 'y'", true),
    ("SELECT COUNT(*) FROM orders WHERE customer_id > 100", true),
    ("SELECT SUM(amount), AVG(amount), MAX(cat) FROM orders WHERE customer_id > 100", true),
    ("SELECT cat, COUNT(*) FROM orders WHERE customer_id > 100 GROUP BY cat", true),
    ("SELECT COUNT(*) FROM items", true),
    ("SELECT sku, COUNT(*), SUM(price), AVG(price) FROM items GROUP BY sku ORDER BY sku", true),
    ("SELECT customer_id, MAX(price), MIN(sku) FROM items GROUP BY customer_id ORDER BY customer_id", true),
    ("SELECT o.id, i.id, i.price FROM orders o JOIN items i ON i.customer_id = o.customer_id WHERE o.customer_id = 6 ORDER BY o.id, i.id", true),
    ("SELECT o.id, i.sku FROM orders o LEFT JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id WHERE o.customer_id = 13 ORDER BY o.id, i.sku", true),
    ("SELECT o.id, c.name FROM orders o JOIN cust c ON c.customer_id = o.customer_id WHERE o.customer_id = 8 ORDER BY o.id", true),
    ("SELECT o.id FROM orders o JOIN items i ON i.customer_id = o.customer_id ORDER BY o.id, i.id", true),
    ("SELECT o.id, i.id FROM orders o JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id", false),
    ("SELECT o.customer_id, COUNT(*), SUM(i.price) FROM orders o JOIN items i ON i.customer_id = o.customer_id WHERE o.qty > 25 GROUP BY o.customer_id ORDER BY o.customer_id", true),
    ("SELECT o.id, i.sku FROM orders o LEFT JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id WHERE i.id IS NULL ORDER BY o.id LIMIT 40", true),
    ("SELECT c.region, COUNT(*), SUM(o.amount) FROM orders o JOIN cust c ON c.customer_id = o.customer_id GROUP BY c.region ORDER BY c.region", true),
    ("SELECT o.id, c.name FROM orders o JOIN cust c ON c.customer_id = o.customer_id WHERE c.region = 'north' ORDER BY o.id", true),
    ("SELECT c.name, COUNT(*) FROM cust c JOIN orders o ON o.customer_id = c.customer_id GROUP BY c.name HAVING COUNT(*) > 30 ORDER BY c.name", true),
    ("SELECT region, COUNT(*) FROM cust GROUP BY region ORDER BY region", true),
    ("SELECT o.id, n.note FROM orders o JOIN notes n ON n.customer_id = o.customer_id WHERE o.customer_id = 4 ORDER BY o.id", true),
    ("SELECT o.id, n.note FROM orders o JOIN notes n ON n.customer_id = o.customer_id ORDER BY o.id", true),
    // Joins that are not co-partitioned: the other table is shipped.
    ("SELECT o.id, e.id FROM orders o JOIN events e ON e.day = o.created WHERE o.qty = 7 ORDER BY o.id, e.id", true),
    ("SELECT r.id, o.id FROM ranges r JOIN orders o ON o.qty = r.k WHERE r.v < 100 ORDER BY r.id, o.id", true),
    ("SELECT o.id, i.id FROM orders o JOIN items i ON i.order_id = o.id WHERE o.qty > 45 ORDER BY o.id, i.id", true),
    ("SELECT o.cat, COUNT(*), SUM(i.price) FROM orders o JOIN items i ON i.order_id = o.id GROUP BY o.cat ORDER BY o.cat", true),
    ("SELECT o.id, n.note FROM orders o LEFT JOIN notes n ON n.customer_id = o.customer_id WHERE o.qty < 2 ORDER BY o.id", true),
    ("SELECT e.kind, COUNT(*) FROM events e JOIN ranges r ON r.k = e.id GROUP BY e.kind ORDER BY e.kind", true),
    ("SELECT n.note, COUNT(o.id) FROM notes n LEFT JOIN orders o ON o.customer_id = n.customer_id GROUP BY n.note", false),
    // Found in review: each once a wrong answer.
    ("SELECT o.id FROM orders o LEFT JOIN items i ON i.order_id = o.id WHERE i.customer_id IS NULL ORDER BY o.id", true),
    ("SELECT cat, COUNT(*) FROM orders GROUP BY cat LIMIT 2", true),
    ("SELECT customer_id, SUM(qty) FROM orders WHERE qty > 10 GROUP BY customer_id", true),
    ("SELECT VAR_POP(qty), STDDEV_SAMP(qty) FROM orders", true),
    ("SELECT id, LAG(id) OVER (ORDER BY id) FROM orders WHERE qty = 4 ORDER BY id", true),
    ("SELECT id FROM orders ORDER BY id OFFSET 5 ROWS FETCH NEXT 10 ROWS ONLY", true),
    ("SELECT COUNT(*) FROM orders offset WHERE offset.qty > 5", true),
    ("SELECT * FROM orders WHERE id IN (SELECT 1 UNION ALL SELECT 2) ORDER BY id", true),
    ("SELECT c.customer_id, COUNT(o.id), SUM(o.qty) FROM cust c LEFT JOIN orders o ON o.customer_id = c.customer_id AND o.qty > 40 GROUP BY c.customer_id ORDER BY c.customer_id", true),
    ("SELECT c.name, o.id FROM cust c JOIN orders o ON o.customer_id = c.customer_id WHERE o.qty = 3 ORDER BY o.id", true),
    ("SELECT COUNT(*) FROM events", true),
    ("SELECT kind, COUNT(*), SUM(n), AVG(n), MIN(day), MAX(day) FROM events GROUP BY kind ORDER BY kind", true),
    ("SELECT id, day FROM events WHERE day >= '2024-02-10' AND day < '2024-04-20' ORDER BY day, id", true),
    ("SELECT COUNT(*), SUM(n) FROM events WHERE day BETWEEN '2024-04-01' AND '2024-05-31'", true),
    ("SELECT id, n FROM events ORDER BY n DESC, id LIMIT 15", true),
    ("SELECT DISTINCT kind FROM events ORDER BY kind DESC", true),
    ("SELECT k, v FROM ranges WHERE k BETWEEN 150 AND 320 ORDER BY k, id", true),
    ("SELECT label, COUNT(*), SUM(v), MIN(k), MAX(k) FROM ranges GROUP BY label ORDER BY label", true),
    ("SELECT COUNT(*), SUM(v) FROM ranges WHERE k < 100 OR k >= 400", true),
    ("SELECT id, label FROM ranges ORDER BY label DESC, id LIMIT 30", true),
    ("SELECT DISTINCT label FROM ranges", false),
    ("SELECT cat, COUNT(*) FROM orders GROUP BY cat HAVING COUNT(*) > 100", false),
    ("SELECT cat, COUNT(*) AS n FROM orders GROUP BY cat HAVING n BETWEEN 150 AND 300 OR cat IS NULL ORDER BY cat", true),
    ("SELECT customer_id FROM orders GROUP BY customer_id HAVING SUM(amount) > 30000 AND MAX(qty) >= 49 ORDER BY customer_id", true),
    ("SELECT customer_id, AVG(qty) FROM orders GROUP BY customer_id HAVING AVG(qty) * 2 - 1 < 45 ORDER BY 2, 1", true),
    ("SELECT flag FROM orders GROUP BY flag HAVING NOT COUNT(amount) = COUNT(*)", false),
    ("SELECT cat FROM orders GROUP BY cat HAVING cat > 'b'", false),
    ("SELECT COUNT(DISTINCT cat) FROM orders", true),
    ("SELECT COUNT(DISTINCT customer_id), COUNT(*), SUM(qty) FROM orders WHERE qty > 10", true),
    ("SELECT cat, COUNT(DISTINCT tag), COUNT(DISTINCT tag) AS again, MAX(qty) FROM orders GROUP BY cat ORDER BY cat", true),
    ("SELECT flag, COUNT(DISTINCT created) FROM orders GROUP BY flag ORDER BY 2 DESC, 1", true),
    ("SELECT COUNT(DISTINCT cat) FROM orders WHERE customer_id > 1000", true),
    ("SELECT COUNT(DISTINCT sku) FROM items", true),
    ("SELECT GROUP_CONCAT(id) FROM orders WHERE qty = 1", true),
    ("SELECT cat, GROUP_CONCAT(id), COUNT(*) FROM orders WHERE qty < 3 GROUP BY cat ORDER BY cat", true),
    ("SELECT GROUP_CONCAT(sku ORDER BY sku) FROM items WHERE price > 190", true),
    ("SELECT SUM(amount) / COUNT(*) FROM orders", true),
    ("SELECT id FROM orders WHERE id IN (SELECT order_id FROM items WHERE price > 100)", false),
    ("SELECT id, qty FROM orders WHERE qty > 45 UNION ALL SELECT id, customer_id FROM items WHERE price > 195", false),
    ("SELECT customer_id, name FROM cust WHERE customer_id < 3 UNION ALL SELECT customer_id, sku FROM items WHERE customer_id = 2", false),
    ("(SELECT id FROM orders WHERE customer_id = 5) UNION ALL (SELECT id FROM events WHERE day = '2024-03-03')", false),
    ("SELECT cat FROM orders UNION SELECT kind FROM events", false),
    ("SELECT id FROM orders UNION ALL SELECT id FROM items ORDER BY id LIMIT 3", true),
    // Subqueries in the select list keep their own text as label.
    ("SELECT id, (SELECT MAX(price) FROM items) FROM orders WHERE qty = 3 ORDER BY id", true),
    ("SELECT (SELECT COUNT(*) FROM items i WHERE i.customer_id = 3), (SELECT  MIN(day)  FROM events) FROM cust WHERE customer_id < 2", false),
    ("SELECT o.id, (SELECT COUNT(*) FROM items i WHERE i.order_id = o.id) FROM orders o WHERE o.qty = 5 ORDER BY o.id", true),
    ("SELECT o.id, 1 + (SELECT MAX(k) FROM ranges) AS top, (SELECT MIN(k) FROM ranges) FROM orders o WHERE o.qty = 9 ORDER BY o.id", true),
];

/// A generated query and whether its order is fixed.
fn generate(r: &mut Rng) -> (String, bool) {
    let table = *r.pick(&["orders", "orders", "orders", "items", "events", "ranges"]);
    let (cols, groupable, numeric, key, key_values): (
        &[&str],
        &[&str],
        &[&str],
        &str,
        Vec<String>,
    ) = match table {
        "orders" => (
            &[
                "id",
                "customer_id",
                "amount",
                "qty",
                "cat",
                "tag",
                "created",
                "flag",
                "score",
            ],
            &["cat", "flag", "customer_id", "created"],
            &["amount", "qty", "customer_id"],
            "customer_id",
            (-5..35).map(|v| v.to_string()).collect(),
        ),
        "items" => (
            &["id", "customer_id", "order_id", "sku", "price"],
            &["sku", "customer_id"],
            &["price", "order_id"],
            "customer_id",
            (-5..35).map(|v| v.to_string()).collect(),
        ),
        "events" => (
            &["id", "day", "kind", "n"],
            &["kind", "day"],
            &["n"],
            "day",
            (1..=12)
                .map(|m| format!("'2024-{m:02}-{:02}'", 1 + (m * 7) % 28))
                .collect(),
        ),
        _ => (
            &["id", "k", "v", "label"],
            &["label", "k"],
            &["v", "k"],
            "k",
            (0..50).map(|v| (v * 11).to_string()).collect(),
        ),
    };
    // WHERE: nothing, a key restriction, or other predicates.
    let mut conds = Vec::new();
    for _ in 0..r.below(3) {
        let c = match r.below(7) {
            0 => format!("{key} = {}", r.pick(&key_values)),
            1 => format!(
                "{key} IN ({}, {})",
                r.pick(&key_values),
                r.pick(&key_values)
            ),
            2 => format!("{key} >= {}", r.pick(&key_values)),
            3 => format!(
                "({key} = {} OR {key} < {})",
                r.pick(&key_values),
                r.pick(&key_values)
            ),
            4 => format!("{} > {}", r.pick(numeric), r.below(300) as i64 - 20),
            5 => format!("{} IS NOT NULL", r.pick(cols)),
            _ => format!("id % {} = {}", 2 + r.below(5), r.below(2)),
        };
        conds.push(c);
    }
    let where_ = if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
    };
    match r.below(4) {
        // Plain rows, ordered with a unique tiebreaker.
        0 | 1 => {
            let a = *r.pick(cols);
            let b = *r.pick(cols);
            let dir = *r.pick(&["", " DESC"]);
            let limit = match r.below(3) {
                0 => String::new(),
                1 => format!(" LIMIT {}", 1 + r.below(40)),
                _ => format!(" LIMIT {}, {}", r.below(50), 1 + r.below(30)),
            };
            (
                format!("SELECT id, {a}, {b} FROM {table}{where_} ORDER BY {a}{dir}, id{limit}"),
                true,
            )
        }
        // Aggregates without grouping.
        2 => {
            let n = *r.pick(numeric);
            let any = *r.pick(cols);
            (
                format!(
                    "SELECT COUNT(*), COUNT({any}), SUM({n}), AVG({n}), MIN({any}), MAX({n}) FROM {table}{where_}"
                ),
                true,
            )
        }
        // Grouped, ordered by an aggregate or the key, the key breaking ties.
        _ => {
            let g = *r.pick(groupable);
            let n = *r.pick(numeric);
            let order = match r.below(3) {
                0 => g.to_string(),
                1 => format!("COUNT(*) DESC, {g}"),
                _ => format!("SUM({n}), {g} DESC"),
            };
            let limit = if r.below(2) == 0 {
                format!(" LIMIT {}", 1 + r.below(10))
            } else {
                String::new()
            };
            let having = match r.below(3) {
                0 => format!(" HAVING COUNT(*) > {}", r.below(20)),
                1 => format!(" HAVING SUM({n}) >= {} OR MIN({n}) IS NULL", r.below(5000)),
                _ => String::new(),
            };
            (
                format!(
                    "SELECT {g}, COUNT(*), SUM({n}), MIN({n}), MAX({n}), AVG({n}), COUNT(DISTINCT {n}) FROM {table}{where_} GROUP BY {g}{having} ORDER BY {order}{limit}"
                ),
                true,
            )
        }
    }
}

type Table = (Vec<String>, Vec<Vec<Option<String>>>);

fn cell(v: &Value) -> Option<String> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        other => Some(other.as_sql(true)),
    }
}

async fn run(c: &mut Conn, sql: &str) -> Result<Table, mysql_async::Error> {
    let rows: Vec<Row> = c.query(sql).await?;
    let names = match rows.first() {
        Some(r) => r
            .columns_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect(),
        None => Vec::new(),
    };
    let values = rows
        .iter()
        .map(|r| {
            (0..r.len())
                .map(|i| cell(&r.as_ref(i).unwrap().clone()))
                .collect()
        })
        .collect();
    Ok((names, values))
}

#[derive(Default, Debug)]
struct Tally {
    identical: usize,
    /// Identical except that a string value is another one equal to it
    /// under the column's collation ('x' for 'X', 'Y ' for 'y'): which of
    /// several equal values MIN, MAX, GROUP BY or DISTINCT shows is not
    /// defined, and one server picks whichever it met first.
    equal_under_collation: usize,
    refused: usize,
    wrong: Vec<String>,
}

/// The values with strings folded as utf8mb4_general_ci compares them, and
/// GROUP_CONCAT lists (whose order is unspecified without ORDER BY) sorted.
fn folded(t: &Table) -> Table {
    let fold = |c: &Option<String>, name: &String| {
        c.as_ref().map(|s| {
            if name.to_ascii_uppercase().starts_with("GROUP_CONCAT(") {
                let mut parts: Vec<&str> = s.split(',').collect();
                parts.sort();
                parts.join(",")
            } else {
                s.trim_end_matches(' ').to_lowercase()
            }
        })
    };
    let rows =
        t.1.iter()
            .map(|r| r.iter().zip(&t.0).map(|(c, name)| fold(c, name)).collect())
            .collect();
    (t.0.clone(), rows)
}

/// `true` when hscale refused the query.
async fn check(p: &mut Conn, r: &mut Conn, sql: &str, ordered: bool, t: &mut Tally) -> bool {
    let want = run(r, sql).await;
    let got = run(p, sql).await;
    judge(sql, ordered, got, want, t)
}

/// The query prepared with its literals as parameters (the binary
/// protocol), through hscale and on one server: refused only where the
/// query is.
async fn check_prepared(
    p: &mut Conn,
    r: &mut Conn,
    (sql, ordered): (&str, bool),
    salt: u64,
    is_query_refused: bool,
    t: &mut Tally,
) {
    let (sql, params) = prepared::parametrize(sql, salt);
    let table = |a: prepared::Answer| -> Table { (a.0.into_iter().map(|m| m.0).collect(), a.1) };
    let want = prepared::exec(r, &sql, &params).await.map(table);
    let got = prepared::exec(p, &sql, &params).await.map(table);
    let label = format!("{sql} -- prepared, parameters {params:?}");
    if judge(&label, ordered, got, want, t) && !is_query_refused {
        t.wrong
            .push(format!("{label}\n  refused, but answered as a query"));
    }
}

/// Compare hscale's answer with one server's; `true` when hscale refused.
fn judge(
    sql: &str,
    ordered: bool,
    got: Result<Table, mysql_async::Error>,
    want: Result<Table, mysql_async::Error>,
    t: &mut Tally,
) -> bool {
    match (got, want) {
        (Ok(mut g), Ok(mut w)) => {
            if !ordered {
                g.1.sort();
                w.1.sort();
            }
            if g == w {
                t.identical += 1;
            } else if folded(&g) == folded(&w) {
                t.equal_under_collation += 1;
            } else {
                t.wrong.push(format!(
                    "{sql}\n  hscale:    {:?} {:?}\n  reference: {:?} {:?}",
                    g.0,
                    &g.1[..g.1.len().min(6)],
                    w.0,
                    &w.1[..w.1.len().min(6)]
                ));
            }
        }
        (Err(e), Ok(_)) if [1235, 1038].contains(&code(&e)) => {
            t.refused += 1;
            println!("refused: {sql}\n  {e}");
            return true;
        }
        (Err(e), Err(f)) if code(&e) == code(&f) => t.identical += 1,
        (g, w) => t.wrong.push(format!(
            "{sql}\n  hscale:    {:?}\n  reference: {:?}",
            g.map(|x| x.1.len()),
            w.map(|x| x.1.len())
        )),
    }
    false
}

#[tokio::test]
async fn queries_match_one_server() {
    cluster(4);
    let mut setup = proxy_conn(None).await;
    for db in [DB, REF] {
        setup
            .query_drop(format!("CREATE DATABASE {db}"))
            .await
            .unwrap();
        setup.query_drop(format!("USE {db}")).await.unwrap();
        for s in SCHEMA {
            setup.query_drop(*s).await.unwrap();
        }
    }
    setup.query_drop(format!("USE {DB}")).await.unwrap();
    for s in PARTITIONING {
        setup
            .query_drop(*s)
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    for db in [DB, REF] {
        setup.query_drop(format!("USE {db}")).await.unwrap();
        for s in data() {
            setup.query_drop(&s).await.unwrap();
        }
    }
    setup.disconnect().await.unwrap();
    let mut p = proxy_conn(Some(DB)).await;
    let mut r = proxy_conn(Some(REF)).await;
    let mut tally = Tally::default();
    for (i, (sql, ordered)) in HAND.iter().enumerate() {
        let is_refused = check(&mut p, &mut r, sql, *ordered, &mut tally).await;
        check_prepared(
            &mut p,
            &mut r,
            (sql, *ordered),
            i as u64,
            is_refused,
            &mut tally,
        )
        .await;
    }
    let hand = tally.identical + tally.equal_under_collation + tally.refused + tally.wrong.len();
    let mut rng = Rng(2026);
    for _ in 0..400 {
        let (sql, ordered) = generate(&mut rng);
        check(&mut p, &mut r, &sql, ordered, &mut tally).await;
    }
    println!(
        "differential: {} queries ({hand} hand-written): {} identical, {} identical up to collation-equal strings or GROUP_CONCAT order, {} refused, {} wrong",
        tally.identical + tally.equal_under_collation + tally.refused + tally.wrong.len(),
        tally.identical,
        tally.equal_under_collation,
        tally.refused,
        tally.wrong.len()
    );
    for w in &tally.wrong {
        println!("WRONG: {w}");
    }
    assert!(
        tally.wrong.is_empty(),
        "{} wrong answers",
        tally.wrong.len()
    );
    assert!(tally.identical >= 300, "{tally:?}");
    p.disconnect().await.unwrap();
    r.disconnect().await.unwrap();
}

/// Writes to a global table whose values one server would compute
/// differently from another (UUID(), RAND(), NOW(6), @@port, ...): each
/// is refused with 1235 naming the function or variable, or computed once
/// (CONNECTION_ID() is the session's hscale id); the copies on the four
/// backends stay identical.
#[tokio::test]
async fn global_writes_keep_copies_identical() {
    let info = cluster(4);
    let mut c = proxy_conn(None).await;
    for s in [
        "CREATE DATABASE diff_global",
        "USE diff_global",
        "CREATE TABLE g (id INT NOT NULL PRIMARY KEY, v VARCHAR(200) NULL)",
        "HSCALE SETUP_GLOBAL_TABLE('g')",
        "INSERT INTO g (id, v) VALUES (1, 'same everywhere')",
    ] {
        c.query_drop(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    let writes: &[(&str, &str)] = &[
        ("INSERT INTO g (id, v) VALUES (2, UUID())", "UUID"),
        ("INSERT INTO g (id, v) VALUES (3, `UUID`())", "UUID"),
        (
            "INSERT INTO g (id, v) VALUES (4, uuid_short())",
            "UUID_SHORT",
        ),
        ("INSERT INTO g (id, v) VALUES (5, RAND())", "RAND"),
        ("INSERT INTO g (id, v) VALUES (6, NOW(6))", "NOW"),
        ("INSERT INTO g (id, v) VALUES (7, SYSDATE(6))", "SYSDATE"),
        (
            "INSERT INTO g (id, v) VALUES (8, UNIX_TIMESTAMP(CURRENT_TIMESTAMP(6)))",
            "UNIX_TIMESTAMP",
        ),
        ("INSERT INTO g (id, v) VALUES (9, @@hostname)", "@@hostname"),
        ("INSERT INTO g (id, v) VALUES (10, @@port)", "@@port"),
        (
            "INSERT INTO g (id, v) VALUES (11, @@server_id)",
            "@@server_id",
        ),
        (
            "INSERT INTO g (id, v) VALUES (12, @@global.port)",
            "@@global.port",
        ),
        (
            "INSERT INTO g (id, v) VALUES (13, @@session.pseudo_thread_id)",
            "@@session.pseudo_thread_id",
        ),
        ("INSERT INTO g (id, v) VALUES (14, @@datadir)", "@@datadir"),
        ("INSERT INTO g (id, v) VALUES (15, /*! UUID() */)", "UUID"),
        (
            "INSERT INTO g (id, v) VALUES (16, /*M!100000 @@port */)",
            "@@port",
        ),
        ("UPDATE g SET v = @@port WHERE id = 1", "@@port"),
        ("UPDATE g SET v = CONCAT(v, RAND()) WHERE id = 1", "RAND"),
        ("INSERT INTO g (id, v) VALUES (17, CONNECTION_ID())", ""),
    ];
    let mut refused = 0;
    for (sql, name) in writes {
        match c.query_drop(*sql).await {
            Ok(()) => assert!(name.is_empty(), "{sql} was accepted"),
            Err(e) => {
                assert_eq!(code(&e), 1235, "{sql}: {e}");
                assert!(
                    !name.is_empty() && e.to_string().contains(name),
                    "{sql}: the refusal does not name {name}: {e}"
                );
                refused += 1;
            }
        }
    }
    assert_eq!(refused, writes.len() - 1);
    let mut copies = Vec::new();
    for port in &info.backend_ports {
        let mut b = mysql_async::Conn::new(backend_opts(*port, Some("diff_global")))
            .await
            .unwrap();
        let rows: Vec<(i32, Option<String>)> =
            b.query("SELECT id, v FROM g ORDER BY id").await.unwrap();
        b.disconnect().await.unwrap();
        copies.push(rows);
    }
    assert_eq!(copies[0].len(), 2, "{:?}", copies[0]);
    for (i, copy) in copies.iter().enumerate() {
        assert_eq!(copy, &copies[0], "the copy on backend {i} differs");
    }
    c.disconnect().await.unwrap();
}
