//! Reads whose partitions' answers hscale merges: executable comments
//! that decide pruning, integer overflow in HAVING, ORDER BY aliases in
//! expressions, the labels of select items over shipped tables, SUM and
//! AVG of DECIMAL divisions, MIN / MAX of ENUMs and SETs.

use super::*;

// ---- 3. Executable comments steer pruning -------------------------------

/// Issue 29, item 3: a comment for version 99.99.99 is skipped by MariaDB
/// 10.11, so the row with id 1 is found.
#[tokio::test]
async fn executable_comment_above_the_server_version_does_not_prune() {
    let mut h = pl("ec_issue").await;
    h.check("SELECT id, plan FROM pl WHERE id = 1 /*M!999999 AND id = 2 */")
        .await;
    h.report("version comments", 1);
}

/// The class: `/*!` and `/*M!` comments with versions below and above the
/// server's, MySQL 5.7's range (skipped by MariaDB unless marked `M`),
/// comments without a version, one nested comment inside a skipped one,
/// in reads, writes and the select list.
#[tokio::test]
async fn executable_comments_are_code_only_where_the_server_runs_them() {
    let mut h = pl("ec_class").await;
    for sql in [
        "SELECT id, plan FROM pl WHERE id = 1 /*!999999 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*M!999999 AND id = 2 */ ORDER BY id",
        "SELECT id, plan FROM pl WHERE id = 1 /*!100000 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*M!100000 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*!40000 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*!50700 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*!80023 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*M!50700 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*! AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*M! AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 1 /*!999999 AND id = 2 /* nested */ */",
        "SELECT id, plan FROM pl WHERE id = 1 /*!99999 AND id = 2 */",
        "SELECT id, plan FROM pl WHERE id = 3 /*!999999 OR id = 2 */ ORDER BY id",
        "SELECT id, plan FROM pl WHERE id = 3 /*!100000 OR id = 2 */ ORDER BY id",
        "SELECT id, plan FROM pl WHERE /*!999999 id = 2 AND */ id = 1",
        "SELECT id, plan FROM pl WHERE id IN (1 /*!999999 , 2 */) ORDER BY id",
        "SELECT id, plan FROM pl WHERE id IN (1 /*!100000 , 2 */) ORDER BY id",
        "SELECT /*!999999 plan, */ id FROM pl WHERE id = 3",
        "SELECT COUNT(*) FROM pl WHERE id = 1 /*!999999 AND id = 2 */",
        "SELECT id FROM pl WHERE id = 1 /*!999999 AND id = 2 */ UNION ALL SELECT id FROM pl WHERE id = 4 /*!999999 AND id = 3 */ ORDER BY id",
        "SELECT id, plan FROM pl WHERE id = 1 /*M!999999 AND id = 2 */ /*!40000 AND u > 0 */",
    ] {
        h.check(sql).await;
    }
    for sql in [
        "UPDATE pl SET u = 7 WHERE id = 1 /*!999999 OR id = 2 */",
        "UPDATE pl SET u = u + 1 WHERE id = 3 /*M!100000 OR id = 2 */",
        "DELETE FROM pl WHERE id = 4 /*!999999 OR id = 3 */",
        "INSERT INTO pl VALUES (5, 'pro', 3) /*!999999 , (6, 'pro', 3) */",
        "INSERT INTO pl VALUES (7, 'pro', 3) /*!100000 , (8, 'free', 4) */",
    ] {
        h.check_write(sql).await;
    }
    h.report("version comments", 26);
}

// ---- 2. Integer overflow in HAVING over a merge --------------------------

/// Issue 29, item 2: `m + 1` of a BIGINT UNSIGNED maximum is 1690 on one
/// server.
#[tokio::test]
async fn having_overflow_of_an_unsigned_maximum_is_an_error() {
    let mut h = pl("hv_issue").await;
    h.check("SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m + 1 > 0")
        .await;
    h.report("HAVING overflow", 1);
}

/// Issue 29, item 2: `m - 1` of an UNSIGNED minimum of 0 is 1690 too.
#[tokio::test]
async fn having_underflow_of_an_unsigned_minimum_is_an_error() {
    let mut h = pl("hv_issue_min").await;
    h.both("INSERT INTO pl VALUES (6, 'pro', 0)").await;
    h.check("SELECT id % 2 AS g, MIN(u) AS m FROM pl GROUP BY g HAVING m - 1 < 100")
        .await;
    h.report("HAVING overflow", 1);
}

/// The class: integer arithmetic in HAVING over merged groups follows
/// the server's BIGINT (signed or UNSIGNED) rules: +, -, * and unary
/// minus, over MAX / MIN / COUNT of signed and unsigned columns, hidden
/// aggregates, decimals (no overflow), NO_UNSIGNED_SUBTRACTION, and
/// conditions that stop before the overflowing operand.
#[tokio::test]
async fn having_integer_arithmetic_is_the_servers() {
    let schema = &[
        PL_SCHEMA[0],
        "CREATE TABLE nums (id INT PRIMARY KEY, b BIGINT, i INT, ui INT UNSIGNED, d DECIMAL(20,2))",
    ];
    let partitioning: Vec<&str> = PL_PARTITIONING
        .iter()
        .copied()
        .chain([
            "HSCALE SETUP_TABLE('nums', 'id', 'nums_default', 'shard0', 'MOD(4)')",
            "HSCALE ADD_PARTITION('nums', 'n1', '1', 'shard1')",
            "HSCALE ADD_PARTITION('nums', 'n2', '2', 'shard2')",
            "HSCALE ADD_PARTITION('nums', 'n3', '3', 'shard3')",
        ])
        .collect();
    let data = &[
        PL_DATA[0],
        "INSERT INTO nums VALUES (1, 9223372036854775807, 5, 3, 1.50), (2, -9223372036854775808, -7, 0, 2.25), (3, 10, 2147483647, 4294967295, -3.00), (4, -10, -2147483648, 9, NULL), (5, 0, 0, 1, 0.01), (6, NULL, NULL, NULL, 99999999999999999.99)",
    ];
    let mut h = Pair::new("hv_class", schema, &partitioning, data).await;
    for sql in [
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m + 1 > 0",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m + 0 > 0 ORDER BY g",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m * 2 > 0",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING -m < 0",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m * -1 < 0",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m + 1.5 > 0 ORDER BY g",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m - 18446744073709551615 = 0",
        "SELECT id % 2 AS g FROM pl GROUP BY g HAVING MAX(u) + 1 > 0",
        "SELECT id % 2 AS g, COUNT(*) AS c FROM pl GROUP BY g HAVING MIN(u) - 2 >= 0 ORDER BY g",
        "SELECT id % 2 AS g, MIN(u) AS m FROM pl GROUP BY g HAVING m - 1 >= 0 ORDER BY g",
        "SELECT id % 2 AS g, MIN(u) AS m FROM pl GROUP BY g HAVING m < 3 AND m - 2 < 0 ORDER BY g",
        "SELECT id % 2 AS g, COUNT(*) AS c FROM pl GROUP BY g HAVING c - 5 < 0 ORDER BY g",
        "SELECT id % 2 AS g, COUNT(*) AS c FROM pl GROUP BY g HAVING c * 9223372036854775807 > 0",
        "SELECT id % 2 AS g, MAX(b) AS m FROM nums GROUP BY g HAVING m + 1 > 0",
        "SELECT id % 2 AS g, MAX(b) AS m FROM nums GROUP BY g HAVING m - 1 > 0 ORDER BY g",
        "SELECT id % 2 AS g, MIN(b) AS m FROM nums GROUP BY g HAVING m - 1 < 0",
        "SELECT id % 2 AS g, MIN(b) AS m FROM nums GROUP BY g HAVING m + 1 < 0 ORDER BY g",
        "SELECT id % 2 AS g, MIN(b) AS m FROM nums GROUP BY g HAVING -m > 0",
        "SELECT id % 2 AS g, MAX(ui) AS m FROM nums GROUP BY g HAVING m - 5 > 0",
        "SELECT id % 2 AS g, MIN(ui) AS m FROM nums GROUP BY g HAVING m - 1 < 10",
        "SELECT id % 2 AS g, MAX(i) AS m FROM nums GROUP BY g HAVING m * m > 0 ORDER BY g",
        "SELECT id % 2 AS g, MAX(i) AS m FROM nums GROUP BY g HAVING m * m * m * 10 > 0",
        "SELECT id % 2 AS g, SUM(i) AS s FROM nums GROUP BY g HAVING s * 1000000000000 > 0 ORDER BY g",
        "SELECT id % 2 AS g, SUM(b) AS s FROM nums GROUP BY g HAVING s + 1 > 0 ORDER BY g",
        "SELECT id % 2 AS g, MAX(d) AS m FROM nums GROUP BY g HAVING m * 100 > 0 ORDER BY g",
        "SELECT id % 3 AS g, MAX(b) AS m FROM nums GROUP BY g HAVING m IS NULL OR m + 1 > 0",
        "SELECT id % 3 AS g, MAX(ui) AS m FROM nums GROUP BY g HAVING m < 4 AND m - 3 < 0",
    ] {
        h.check(sql).await;
    }
    h.both("SET sql_mode = 'STRICT_TRANS_TABLES,NO_UNSIGNED_SUBTRACTION'")
        .await;
    for sql in [
        "SELECT id % 2 AS g, MIN(u) AS m FROM pl GROUP BY g HAVING m - 5 < 100 ORDER BY g",
        "SELECT id % 2 AS g, MAX(ui) AS m FROM nums GROUP BY g HAVING m - 10 < 0 ORDER BY g",
        "SELECT id % 2 AS g, MAX(u) AS m FROM pl GROUP BY g HAVING m - 1 > 0",
    ] {
        h.check(sql).await;
    }
    h.report("HAVING integer arithmetic", 30);
}

// ---- 4. ORDER BY an alias inside an expression --------------------------

/// Issue 29, item 4.
#[tokio::test]
async fn order_by_an_alias_inside_an_expression() {
    let mut h = acct("oa_issue").await;
    h.check("SELECT uid, balance AS b FROM acct ORDER BY b + 1, uid LIMIT 5")
        .await;
    h.report("ORDER BY alias expressions", 1);
}

/// The class: aliases inside ORDER BY expressions (arithmetic, functions,
/// several aliases, quoted ones, with OFFSET, DESC, WHERE, DISTINCT); a
/// table column of the alias's name, which wins inside an expression;
/// names that are neither (1054, as on one server).
#[tokio::test]
async fn order_by_aliases_inside_expressions() {
    let mut h = acct("oa_class").await;
    for sql in [
        "SELECT uid, balance AS b FROM acct ORDER BY b + 1, uid LIMIT 5",
        "SELECT uid, balance AS b FROM acct ORDER BY -b, uid",
        "SELECT uid, balance AS b FROM acct ORDER BY b * 2 DESC, uid LIMIT 7",
        "SELECT uid, balance AS b FROM acct ORDER BY ABS(b), uid LIMIT 9",
        "SELECT uid, balance AS b FROM acct ORDER BY COALESCE(b, 0), uid LIMIT 9",
        "SELECT uid, handle AS h FROM acct ORDER BY CONCAT(h, 'x') DESC, uid LIMIT 6",
        "SELECT uid, balance AS b, flags AS f FROM acct ORDER BY b + f, uid LIMIT 8",
        "SELECT uid, balance AS `b b` FROM acct ORDER BY `b b` + 1, uid LIMIT 3",
        "SELECT uid, balance + flags AS t FROM acct ORDER BY t % 7, uid",
        "SELECT uid AS id, balance AS b FROM acct ORDER BY id % 3, b, id",
        "SELECT uid, balance AS b FROM acct ORDER BY IF(b > 5, 0, 1), uid LIMIT 10",
        "SELECT uid, balance AS b FROM acct ORDER BY b + 1, uid LIMIT 2, 3",
        "SELECT uid, balance AS b FROM acct WHERE flags = 3 ORDER BY b - 1 DESC, uid LIMIT 4",
        "SELECT uid, balance AS B FROM acct ORDER BY b / 2, uid LIMIT 4",
        "SELECT uid, flags AS balance FROM acct ORDER BY balance + 0, uid LIMIT 6",
        "SELECT uid, flags AS handle FROM acct ORDER BY CONCAT(handle, ''), uid LIMIT 6",
        "SELECT uid, balance AS b FROM acct ORDER BY acct.b + 1, uid",
        "SELECT uid, balance AS b FROM acct ORDER BY nope + 1, uid",
        "SELECT DISTINCT flags AS f FROM acct ORDER BY f + 1",
        "SELECT flags AS f, COUNT(*) AS c FROM acct GROUP BY flags ORDER BY c + 0, f",
        "SELECT uid, balance AS b FROM acct WHERE uid IN (1001, 1002, 1003, 1004, 1005) ORDER BY b + 1",
    ] {
        h.check(sql).await;
    }
    h.report("ORDER BY alias expressions", 21);
}

// ---- 5. Labels of scalar subqueries over shipped tables -----------------

/// `orders` MOD(8) on customer_id and `customers` MOD(8) on id, eight
/// partitions each over the four backends.
async fn shop(name: &str) -> Pair {
    let schema = &[
        "CREATE TABLE orders (id INT NOT NULL, customer_id INT NOT NULL, amount DECIMAL(10,2), PRIMARY KEY (id, customer_id))",
        "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(20))",
    ];
    let mut partitioning = vec![
        "HSCALE SETUP_TABLE('orders', 'customer_id', 'orders_default', 'shard0', 'MOD(8)')"
            .to_string(),
        "HSCALE SETUP_TABLE('customers', 'id', 'customers_default', 'shard0', 'MOD(8)')"
            .to_string(),
    ];
    for v in 1..8 {
        for t in ["orders", "customers"] {
            partitioning.push(format!(
                "HSCALE ADD_PARTITION('{t}', '{t}{v}', '{v}', 'shard{}')",
                v % 4
            ));
        }
    }
    let partitioning: Vec<&str> = partitioning.iter().map(String::as_str).collect();
    let orders: Vec<String> = (1..=60)
        .map(|id| format!("({id}, {}, {}.{:02})", id % 23, (id * 17) % 300, id % 100))
        .collect();
    let customers: Vec<String> = (0..23).map(|id| format!("({id}, 'c{}')", id % 7)).collect();
    let data = [
        format!("INSERT INTO orders VALUES {}", orders.join(", ")),
        format!("INSERT INTO customers VALUES {}", customers.join(", ")),
    ];
    let data: Vec<&str> = data.iter().map(String::as_str).collect();
    Pair::new(name, schema, &partitioning, &data).await
}

/// Issue 29, item 5.
#[tokio::test]
async fn scalar_subqueries_over_shipped_tables_keep_their_labels() {
    let mut h = shop("sl_issue").await;
    h.check("SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM customers)")
        .await;
    h.report("subquery labels", 1);
}

/// The class: select items without an alias that read partitioned
/// tables, in statements without FROM, with FROM DUAL, beside other
/// items, inside expressions, EXISTS, IN, joins, modifiers, derived
/// tables and UNION ALL: each labelled with the client's own text.
#[tokio::test]
async fn select_items_over_partitioned_tables_are_labelled_with_the_clients_text() {
    let mut h = shop("sl_class").await;
    for sql in [
        "SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM customers)",
        "SELECT (select count(*) from orders)",
        "SELECT   (SELECT  SUM(amount)   FROM orders)",
        "SELECT (SELECT COUNT(*) FROM orders) FROM DUAL",
        "SELECT (SELECT COUNT(*) FROM orders) AS n, (SELECT MAX(id) FROM customers)",
        "SELECT 1 + (SELECT COUNT(*) FROM customers), 'x'",
        "SELECT EXISTS(SELECT 1 FROM orders WHERE amount > 250)",
        "SELECT 5 IN (SELECT customer_id FROM orders)",
        "SELECT (SELECT name FROM customers WHERE id = 9)",
        "SELECT (SELECT MAX(amount) FROM orders WHERE customer_id = 3) + 1",
        "SELECT (SELECT COUNT(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.name = 'c2')",
        "SELECT SQL_NO_CACHE (SELECT COUNT(*) FROM orders)",
        "SELECT DISTINCT (SELECT MIN(name) FROM customers)",
        "SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM customers) UNION ALL SELECT 1, 2",
        "SELECT * FROM (SELECT (SELECT COUNT(*) FROM orders)) AS x",
        "SELECT (SELECT COUNT(*) FROM orders WHERE orders.customer_id = customers.id) FROM customers ORDER BY id LIMIT 5",
        "SELECT name, (SELECT COUNT(*) FROM orders) FROM customers WHERE id = 4",
    ] {
        h.check(sql).await;
    }
    h.report("subquery labels", 17);
}

// ---- SUM / AVG of DECIMAL division --------------------------------------

/// Issue 29 ("Other classes"): a division's SUM and AVG over partitions
/// carry the server's inner digits, rounded once for the total.
#[tokio::test]
async fn sums_and_averages_of_decimal_divisions_keep_the_servers_digits() {
    let schema = &[
        "CREATE TABLE cust (cid INT PRIMARY KEY, credit DECIMAL(12,2), qty INT, rate DECIMAL(5,3), f DOUBLE)",
    ];
    let partitioning = &[
        "HSCALE SETUP_TABLE('cust', 'cid', 'cust_default', 'shard0', 'MOD(4)')",
        "HSCALE ADD_PARTITION('cust', 'c1', '1', 'shard1')",
        "HSCALE ADD_PARTITION('cust', 'c2', '2', 'shard2')",
        "HSCALE ADD_PARTITION('cust', 'c3', '3', 'shard3')",
    ];
    let rows: Vec<String> = (1..=400)
        .map(|cid| {
            format!(
                "({cid}, {}.{:02}, {}, {}.{:03}, {}.25)",
                (cid * 7919) % 250_000,
                (cid * 37) % 100,
                cid % 13,
                1 + cid % 4,
                (cid * 7) % 1000,
                cid % 9
            )
        })
        .collect();
    let data = [format!("INSERT INTO cust VALUES {}", rows.join(", "))];
    let data: Vec<&str> = data.iter().map(String::as_str).collect();
    let mut h = Pair::new("dv", schema, partitioning, &data).await;
    // The two.
    h.check("SELECT SUM(credit / 3) FROM cust").await;
    h.check("SELECT AVG(credit / 7) FROM cust").await;
    for sql in [
        "SELECT SUM(credit / 3), AVG(credit / 7), COUNT(*) FROM cust",
        "SELECT SUM(credit / 7) FROM cust WHERE cid > 100",
        "SELECT qty, SUM(credit / 3) AS s FROM cust GROUP BY qty ORDER BY qty",
        "SELECT qty % 3 AS g, AVG(credit / 11) FROM cust GROUP BY g ORDER BY g",
        "SELECT SUM(credit / rate), AVG(credit / rate) FROM cust",
        "SELECT SUM(credit / 3 / 7), AVG(credit / 3 / 7) FROM cust",
        "SELECT SUM(qty / 3), AVG(qty / 7) FROM cust",
        "SELECT SUM(credit * 1.5 / 9) FROM cust",
        "SELECT SUM(f / 3) FROM cust",
        "SELECT AVG(f / 3) FROM cust",
        "SELECT qty, SUM(credit / 3) AS s FROM cust GROUP BY qty HAVING s > 1000000 ORDER BY qty",
        "SELECT SUM(credit) / 3, SUM(credit / 3) FROM cust",
        "SELECT MAX(credit / 3), MIN(credit / 7) FROM cust",
        "SELECT SUM(DISTINCT credit / 3) FROM cust",
        "SELECT qty, SUM(credit / 3) FROM cust WHERE qty IN (1, 5, 9) GROUP BY qty ORDER BY 2 DESC",
    ] {
        h.check(sql).await;
    }
    h.report("SUM/AVG of divisions", 17);
}

// ---- 1. ENUM order in merges ---------------------------------------------

/// Issue 29, item 1: MIN and MAX of an ENUM with an index on it (one
/// server reads the index's ends: member order).
#[tokio::test]
async fn min_and_max_of_an_enum_over_partitions() {
    let mut h = pl("en_issue").await;
    h.check_defs("SELECT MIN(plan), MAX(plan) FROM pl").await;
    h.report("ENUM MIN/MAX", 1);
}

/// Issue 29, item 1: an ENUM partition key, one partition per member.
#[tokio::test]
async fn min_and_max_of_an_enum_partition_key() {
    let mut h = Pair::new(
        "en_key",
        &["CREATE TABLE ekey (color ENUM('red','green','blue'), id INT, PRIMARY KEY (color, id))"],
        &[
            "HSCALE SETUP_TABLE('ekey', 'color', 'ekey_default', 'shard0', 'NONE()')",
            "HSCALE ADD_PARTITION('ekey', 'red', 'red', 'shard1')",
            "HSCALE ADD_PARTITION('ekey', 'green', 'green', 'shard2')",
            "HSCALE ADD_PARTITION('ekey', 'blue', 'blue', 'shard3')",
        ],
        &["INSERT INTO ekey VALUES ('red', 1), ('green', 2), ('blue', 3), ('red', 4)"],
    )
    .await;
    h.check_defs("SELECT MIN(color), MAX(color) FROM ekey")
        .await;
    h.report("ENUM MIN/MAX", 1);
}

/// Issue 29, item 1: MAX of an ENUM grouped, ordered by it: its column
/// type (254 with the ENUM flag) and the rows' order.
#[tokio::test]
async fn max_of_an_enum_grouped_and_ordered() {
    let mut h = pl("en_group").await;
    h.check_defs("SELECT id % 2 AS g, MAX(plan) AS m FROM pl GROUP BY g ORDER BY m, g")
        .await;
    h.report("ENUM MIN/MAX", 1);
}

/// The class: MIN and MAX of ENUM and SET columns with and without an
/// index, with WHERE (no index read), beside other aggregates, grouped,
/// DISTINCT, ordered; and strings, which merge as before.
#[tokio::test]
async fn min_and_max_of_enums_and_sets_answer_as_one_server() {
    let schema = &[
        PL_SCHEMA[0],
        "CREATE TABLE tags (id INT PRIMARY KEY, flags SET('x','y','z'), mood ENUM('sad','ok','glad'), name VARCHAR(10), KEY (flags))",
    ];
    let partitioning: Vec<&str> = PL_PARTITIONING
        .iter()
        .copied()
        .chain([
            "HSCALE SETUP_TABLE('tags', 'id', 'tags_default', 'shard0', 'MOD(4)')",
            "HSCALE ADD_PARTITION('tags', 't1', '1', 'shard1')",
            "HSCALE ADD_PARTITION('tags', 't2', '2', 'shard2')",
            "HSCALE ADD_PARTITION('tags', 't3', '3', 'shard3')",
        ])
        .collect();
    let data = &[
        PL_DATA[0],
        "INSERT INTO tags VALUES (1, 'z', 'glad', 'b'), (2, 'x,y', 'sad', 'a'), (3, 'y', 'ok', NULL), (4, '', NULL, 'c'), (5, 'x,z', 'glad', 'aa'), (6, NULL, 'sad', 'B')",
    ];
    let mut h = Pair::new("en_class", schema, &partitioning, data).await;
    for sql in [
        "SELECT MIN(plan), MAX(plan) FROM pl",
        "SELECT MIN(plan) FROM pl",
        "SELECT MAX(plan), COUNT(*) FROM pl",
        "SELECT MIN(plan), MAX(plan) FROM pl WHERE u > 0",
        "SELECT MIN(plan), MAX(plan) FROM pl WHERE id < 10",
        "SELECT MIN(pl.plan) AS lo, MAX(pl.plan) AS hi FROM pl",
        "SELECT MIN(flags), MAX(flags) FROM tags",
        "SELECT MIN(mood), MAX(mood) FROM tags",
        "SELECT MIN(mood), MAX(name), MIN(name) FROM tags",
        "SELECT MIN(name), MAX(name) FROM tags",
        "SELECT id % 2 AS g, MIN(plan) AS m FROM pl GROUP BY g ORDER BY g",
        "SELECT id % 2 AS g, MIN(mood) AS m, MAX(flags) AS f FROM tags GROUP BY g ORDER BY m, g",
        "SELECT DISTINCT plan FROM pl ORDER BY plan",
        "SELECT plan, COUNT(*) FROM pl GROUP BY plan ORDER BY plan",
        "SELECT MAX(mood) FROM tags WHERE name IS NOT NULL",
    ] {
        h.check_defs(sql).await;
    }
    h.report("ENUM MIN/MAX", 15);
}
