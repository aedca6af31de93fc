//! UPDATE and DELETE with ORDER BY ... LIMIT over several partitions: the
//! first n rows in that order over the whole table are written, as on one
//! server. Orders end in a unique column (ties at the LIMIT would let one
//! server pick any of the tied rows); LIMIT without ORDER BY only where
//! every matching row is written. Generated over WHERE clauses (none, a
//! range, IN over partitions, one partition, strings, dates, NULLs, no
//! row), orders, limits (0 to past every row) and writes, on a table
//! partitioned by MOD and one by month; then aliases, modifiers, errors
//! (the write refused on a partition leaves nothing), inside transactions.

use super::{Harness, Rng};

const WHERES: &[&str] = &[
    "",
    "WHERE n > 10",
    "WHERE k IN (1, 2, 5, -3)",
    "WHERE s LIKE 's1%'",
    "WHERE k = 4",
    "WHERE d < '2024-02-01'",
    "WHERE n IS NULL OR n < 3",
    "WHERE id > 1000",
    "WHERE k BETWEEN 0 AND 9 AND n <> 5",
];

const ORDERS: &[&str] = &[
    "ORDER BY n, id",
    "ORDER BY id DESC",
    "ORDER BY s DESC, id",
    "ORDER BY d, id DESC",
    "ORDER BY n DESC, k, id",
    "ORDER BY k, id",
    "ORDER BY n IS NULL, n, id",
];

const LIMITS: &[u32] = &[0, 1, 3, 7, 50, 1000];

const UPDATES: &[&str] = &[
    "UPDATE t SET n = n + 1000",
    "UPDATE t SET s = CONCAT(s, 'u'), d = d + INTERVAL 1 DAY",
    "UPDATE IGNORE t SET n = NULL",
    "UPDATE t AS x SET x.n = x.id",
];

pub async fn run(h: &mut Harness) {
    let mut rng = Rng(1515);
    for i in 0..160 {
        if i % 25 == 24 {
            h.reset().await;
        }
        let w = rng.pick(WHERES);
        let o = rng.pick(ORDERS);
        let l = rng.pick(LIMITS);
        let sql = if rng.below(4) == 0 {
            format!("DELETE FROM t {w} {o} LIMIT {l}")
        } else {
            let u = rng.pick(UPDATES);
            // The alias form names the columns through it.
            if u.contains(" AS x ") {
                let w = w.replace("WHERE ", "WHERE x.").replace(" AND ", " AND x.");
                format!("{u} {w} {o} LIMIT {l}")
            } else {
                format!("{u} {w} {o} LIMIT {l}")
            }
        };
        h.check(&sql, true).await;
        h.same_contents(&sql).await;
    }
    h.reset().await;
    let fixed: &[&str] = &[
        // Modifiers and forms one server takes.
        "UPDATE LOW_PRIORITY t SET n = n - 1 WHERE n > 30 ORDER BY n DESC, id LIMIT 4",
        "DELETE LOW_PRIORITY QUICK IGNORE FROM t WHERE s = 's3' ORDER BY id LIMIT 2",
        "DELETE FROM t ORDER BY `n` DESC, `id` LIMIT 3",
        "UPDATE `t` SET `n` = `n` * 2 ORDER BY `id` LIMIT 5",
        "UPDATE t SET n = n + 1 WHERE k = 2 ORDER BY n, id LIMIT 2",
        "DELETE FROM t WHERE k = -3 ORDER BY id DESC LIMIT 1",
        // Every matching row, with or without an order.
        "UPDATE t SET n = 0 WHERE id = 7 LIMIT 5",
        "DELETE FROM t WHERE id IN (8, 9, 10) LIMIT 3",
        "UPDATE t SET s = 'same' WHERE id > 1000 LIMIT 2",
        "UPDATE t SET n = n WHERE id < 20 ORDER BY id LIMIT 5",
        "DELETE FROM t WHERE id > 230 LIMIT 100",
        // The month-partitioned table.
        "UPDATE ev SET v = v + 100 ORDER BY v, id LIMIT 6",
        "DELETE FROM ev WHERE v > 5 ORDER BY day DESC, id LIMIT 4",
        "UPDATE ev SET v = v * 2 WHERE day >= '2024-02-10' ORDER BY day, id LIMIT 9",
        "DELETE FROM ev ORDER BY id LIMIT 2",
        // Errors one server gives; nothing applies.
        "UPDATE t SET nosuch = 1 ORDER BY id LIMIT 2",
        "UPDATE t SET n = 'not a number' ORDER BY id LIMIT 20",
        "DELETE FROM t ORDER BY nosuch LIMIT 2",
        // Inside a transaction, then rolled back or committed.
        "BEGIN",
        "UPDATE t SET n = n + 500 ORDER BY n DESC, id LIMIT 3",
        "SELECT id, k, n FROM t ORDER BY n DESC, id LIMIT 5",
        "DELETE FROM t ORDER BY id LIMIT 2",
        "ROLLBACK",
        "BEGIN",
        "UPDATE t SET n = n + 700 WHERE n IS NOT NULL ORDER BY n, id LIMIT 4",
        "COMMIT",
        // With a user variable set (the session is pinned to one backend).
        "SET @lim_base := 3",
        "UPDATE t SET n = n + 1 WHERE k = 1 ORDER BY id LIMIT 2",
    ];
    for sql in fixed {
        h.check(sql, true).await;
        h.same_contents(sql).await;
    }
}
