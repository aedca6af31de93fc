//! WITH (common table expressions, recursive ones too), derived tables and
//! window functions over partitioned tables: one partition's statements
//! run there whole, the rest on copies of the tables (one server's
//! answer). Generated from CTE bodies, outer queries and window specs;
//! orders end in a unique column so that row numbers and row order are
//! fixed.

use super::{Harness, Rng};

/// Bodies of a CTE named `c` (columns id, k, n, s).
const BODIES: &[&str] = &[
    "SELECT id, k, n, s FROM t",
    "SELECT id, k, n, s FROM t WHERE k = 2",
    "SELECT id, k, n, s FROM t WHERE n > 20",
    "SELECT id, k, n, s FROM t WHERE k IN (1, 3) AND id < 120",
    "SELECT t.id, t.k, t.n, g.label AS s FROM t JOIN g ON g.gid = t.k",
    "SELECT id, k, v AS n, 'ev' AS s FROM ev",
];

/// Outer queries over `c`.
const OUTERS: &[(&str, bool)] = &[
    ("SELECT COUNT(*), SUM(n), MIN(id), MAX(s) FROM c", true),
    (
        "SELECT k, COUNT(*) AS cnt, SUM(n) AS total FROM c GROUP BY k ORDER BY k",
        true,
    ),
    ("SELECT id, n FROM c ORDER BY n DESC, id LIMIT 5", true),
    (
        "SELECT c.id, c.n FROM c JOIN t ON t.id = c.id AND t.k = c.k WHERE c.id < 40 ORDER BY c.id",
        true,
    ),
    (
        "SELECT id, ROW_NUMBER() OVER (ORDER BY n, id) AS rn FROM c ORDER BY id LIMIT 20",
        true,
    ),
    (
        "SELECT id FROM c WHERE n = (SELECT MAX(n) FROM c) ORDER BY id",
        true,
    ),
    (
        "SELECT s, COUNT(*) FROM c GROUP BY s HAVING COUNT(*) > 2 ORDER BY s",
        true,
    ),
];

const WINDOWS: &[&str] = &[
    "ROW_NUMBER() OVER (ORDER BY n, id)",
    "RANK() OVER (PARTITION BY k ORDER BY n)",
    "DENSE_RANK() OVER (ORDER BY s)",
    "SUM(n) OVER (PARTITION BY k ORDER BY id)",
    "SUM(n) OVER (PARTITION BY k)",
    "COUNT(*) OVER ()",
    "LAG(n) OVER (ORDER BY id)",
    "LEAD(id, 2) OVER (PARTITION BY s ORDER BY id)",
    "FIRST_VALUE(id) OVER (PARTITION BY k ORDER BY n, id)",
    "AVG(n) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
    "NTILE(4) OVER (ORDER BY id)",
];

const FILTERS: &[&str] = &["", "WHERE k = 3", "WHERE id < 60", "WHERE k IN (0, 2)"];

pub async fn run(h: &mut Harness) {
    let mut rng = Rng(4242);
    for _ in 0..40 {
        let body = rng.pick(BODIES);
        let (outer, ordered) = rng.pick(OUTERS);
        let sql = format!("WITH c AS ({body}) {outer}");
        h.check(&sql, *ordered).await;
    }
    for _ in 0..30 {
        let w = rng.pick(WINDOWS);
        let f = rng.pick(FILTERS);
        let sql = format!("SELECT id, k, {w} AS x FROM t {f} ORDER BY id");
        h.check(&sql, true).await;
    }
    for _ in 0..20 {
        let body = rng.pick(BODIES);
        let sql = match rng.below(4) {
            0 => format!("SELECT COUNT(*), SUM(n) FROM ({body}) d"),
            1 => format!("SELECT d.k, MAX(d.n) AS m FROM ({body}) AS d GROUP BY d.k ORDER BY d.k"),
            2 => format!("SELECT * FROM ({body} ORDER BY id LIMIT 10) d ORDER BY id DESC"),
            _ => format!("SELECT d.id, t.s FROM ({body}) d JOIN t ON t.id = d.id AND t.k = d.k ORDER BY d.id LIMIT 15"),
        };
        h.check(&sql, true).await;
    }
    let fixed: &[(&str, bool)] = &[
        ("WITH RECURSIVE r (x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 10) SELECT r.x, COUNT(t.id) AS c FROM r LEFT JOIN t ON t.k = r.x GROUP BY r.x ORDER BY r.x", true),
        ("WITH RECURSIVE r (x) AS (SELECT MIN(id) FROM t UNION ALL SELECT x + 7 FROM r WHERE x < 100) SELECT x FROM r ORDER BY x", true),
        ("WITH RECURSIVE chain (id, k, depth) AS (SELECT id, k, 0 FROM t WHERE id = 1 UNION ALL SELECT t.id, t.k, chain.depth + 1 FROM t JOIN chain ON t.id = chain.id + 5 WHERE chain.depth < 8) SELECT id, k, depth FROM chain ORDER BY depth", true),
        ("WITH a AS (SELECT k, COUNT(*) AS c FROM t GROUP BY k), b AS (SELECT k, SUM(v) AS s FROM ev JOIN t USING (id) GROUP BY k) SELECT a.k, a.c, b.s FROM a LEFT JOIN b ON a.k = b.k ORDER BY a.k", true),
        ("WITH c AS (SELECT id, n FROM t WHERE k = 1) SELECT x.id, y.id FROM c x JOIN c y ON x.n = y.n AND x.id < y.id ORDER BY x.id, y.id LIMIT 10", true),
        ("WITH c (a, b) AS (SELECT id, n FROM t WHERE k = 2) SELECT a, b FROM c ORDER BY a", true),
        ("with lower_case as (select id from t where k = 0) select count(*) from lower_case", true),
        ("WITH c AS (SELECT * FROM t) SELECT COUNT(*) FROM c WHERE n IS NULL", true),
        ("SELECT id, k, n, ROW_NUMBER() OVER w AS rn, SUM(n) OVER w AS run FROM t WINDOW w AS (PARTITION BY k ORDER BY id) ORDER BY k, id LIMIT 30", true),
        ("SELECT k, n, PERCENT_RANK() OVER (PARTITION BY k ORDER BY n, id) AS pr FROM t WHERE k = 5 ORDER BY id", true),
        ("SELECT * FROM (SELECT id, k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY n DESC, id) AS rn FROM t) ranked WHERE rn <= 2 ORDER BY k, rn", true),
        ("SELECT MAX(x) FROM (SELECT n * 2 AS x FROM t WHERE k = 4) d", true),
        ("SELECT d.label, COUNT(*) FROM (SELECT g.label FROM t JOIN g ON g.gid = t.k) d GROUP BY d.label ORDER BY d.label", true),
        ("WITH nosuch_body AS (SELECT nosuch FROM t) SELECT * FROM nosuch_body", true),
    ];
    for (sql, ordered) in fixed {
        h.check(sql, *ordered).await;
    }
}
