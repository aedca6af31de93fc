//! User variables in queries over partitioned tables: the `@n := @n + 1`
//! row numbers over an ORDER BY, running totals, variables as filters and
//! keys, variables set by a read and read back, and ordinary statements on
//! other backends while variables are set. Each sequence runs on one
//! connection per side (variables are session state), as separate
//! statements and as one multi-statement query.

use super::Harness;

/// Sequences of statements, each run in order on the same connections.
const SEQUENCES: &[&[&str]] = &[
    &[
        "SET @n := 0",
        "SELECT @n := @n + 1 AS rn, id, n FROM t ORDER BY n, id LIMIT 25",
        "SELECT @n",
    ],
    &[
        "SET @n = 0",
        "SELECT id, @n := @n + 1 AS rn FROM t WHERE k IN (1, 2) ORDER BY id DESC",
        "SELECT @n AS last",
    ],
    &[
        "SELECT @r := @r + IFNULL(n, 0) AS running, id FROM t, (SELECT @r := 0) init ORDER BY id LIMIT 40",
        "SELECT @r",
    ],
    &[
        "SET @k := 2",
        "SELECT id, n FROM t WHERE k = @k ORDER BY id",
        "SELECT COUNT(*) FROM t WHERE k <> @k",
        "SELECT id FROM t WHERE n BETWEEN @k AND @k + 3 ORDER BY id",
    ],
    &[
        "SELECT @m := MAX(n) AS m FROM t",
        "SELECT id FROM t WHERE n = @m ORDER BY id",
        "SELECT @lo := MIN(id), @hi := MAX(id) FROM t WHERE k = 3",
        "SELECT @lo, @hi",
    ],
    &[
        "SET @prev := NULL, @grp := 0",
        "SELECT id, s, @grp := IF(@prev = s, @grp, @grp + 1) AS grp, @prev := s AS p FROM t WHERE id < 50 ORDER BY s, id",
    ],
    &[
        "SET @day := '2024-02-01'",
        "SELECT id, v FROM ev WHERE day < @day ORDER BY id",
        "SELECT @cnt := COUNT(*) FROM ev WHERE day >= @day",
        "SELECT @cnt + 1",
    ],
    // Variables set, then statements that use none, on every backend.
    &[
        "SET @unused := 42",
        "SELECT id, n FROM t WHERE k = 1 ORDER BY id",
        "SELECT COUNT(*), SUM(n) FROM t",
        "SELECT id, k FROM t ORDER BY n DESC, id LIMIT 5",
        "SELECT t.id, g.label FROM t JOIN g ON g.gid = t.k WHERE t.id < 20 ORDER BY t.id",
        "UPDATE t SET n = n + 1 WHERE k = 2",
        "INSERT INTO t VALUES (3000, 7, 1, 'var', NULL)",
        "SELECT id, k, n FROM t WHERE id = 3000",
        "DELETE FROM t WHERE id = 3000 AND k = 7",
        "SELECT @unused",
    ],
    // Variables in a single-partition statement on another backend.
    &[
        "SET @v := 5",
        "SELECT id, n + @v FROM t WHERE k = 3 ORDER BY id",
        "SELECT @w := n FROM t WHERE k = 1 AND id = (SELECT MIN(id) FROM t WHERE k = 1)",
        "SELECT @w",
    ],
];

pub async fn run(h: &mut Harness) {
    for seq in SEQUENCES {
        for sql in *seq {
            h.check(sql, true).await;
        }
        h.same_contents(seq[0]).await;
        // The same statements as one query, on fresh connections.
        fresh_connections(h).await;
        let joined = seq.join("; ");
        h.check(&joined, true).await;
        fresh_connections(h).await;
    }
}

/// New connections on both sides: no variables, no pinned connection.
async fn fresh_connections(h: &mut Harness) {
    let p = crate::common::proxy_conn(Some(&h.part)).await;
    let r = crate::common::proxy_conn(Some(&h.reference)).await;
    let old_p = std::mem::replace(&mut h.p, p);
    let old_r = std::mem::replace(&mut h.r, r);
    // A connection whose last query was refused midway may still hold
    // unread results: closing it is all that matters.
    let _ = old_p.disconnect().await;
    let _ = old_r.disconnect().await;
}
