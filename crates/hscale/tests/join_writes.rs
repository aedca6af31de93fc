#![allow(clippy::unwrap_used)]
//! Issue 29, refused list (e): a multi-table UPDATE or DELETE naming a
//! partitioned table, joined with itself or with another table, was
//! refused (1235). When every partitioned table it names is limited by
//! its conditions to one partition and those lie on one backend (with
//! unpartitioned tables only on the main backend), the statement now
//! runs there as written, as one server runs it; otherwise it runs from
//! its join's rows (`join_writes_spread.rs`). Each statement is compared with one plain
//! database of the same server (`REF`): affected rows and warning count
//! or the error code, then the tables' rows.
//!
//! Four backends; `acct` and `ord` partitioned MOD(4) on uid alike.

mod common;

use common::twin::*;

const SCHEMA: &[&str] = &[
    "CREATE TABLE acct (uid INT NOT NULL PRIMARY KEY, handle VARCHAR(20), flags INT NOT NULL DEFAULT 0)",
    "CREATE TABLE ord (oid INT NOT NULL, uid INT NOT NULL, amt INT, PRIMARY KEY (oid, uid))",
    "CREATE TABLE plain_t (uid INT NOT NULL PRIMARY KEY, note VARCHAR(10))",
];

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('acct', 'uid', 'acct_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('acct', 'acct1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('acct', 'acct2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('acct', 'acct3', '3', 'shard3')",
    "HSCALE SETUP_TABLE('ord', 'uid', 'ord_default', 'shard0', 'MOD(4)')",
    "HSCALE ADD_PARTITION('ord', 'ord1', '1', 'shard1')",
    "HSCALE ADD_PARTITION('ord', 'ord2', '2', 'shard2')",
    "HSCALE ADD_PARTITION('ord', 'ord3', '3', 'shard3')",
];

const CONTENTS: &str = "SELECT 'acct', uid, handle, flags, NULL FROM acct UNION ALL SELECT 'ord', oid, uid, amt, NULL FROM ord UNION ALL SELECT 'plain', uid, note, NULL, NULL FROM plain_t ORDER BY 1, 2, 3, 4";

fn twin(name: &'static str, reference: &'static str) -> Twin<'static> {
    Twin {
        shards: 4,
        db: name,
        reference,
        schema: SCHEMA,
        partitioning: PARTITIONING,
    }
}

async fn create(t: &Twin<'_>) {
    let accts: Vec<String> = (1001..=1012)
        .map(|u| format!("({u}, 'h{u}', {})", u % 3))
        .collect();
    let ords: Vec<String> = (1..=20)
        .map(|o| format!("({o}, {}, {})", 1001 + (o * 7) % 12, (o * 5) % 11))
        .collect();
    t.create(&[
        format!("INSERT INTO acct VALUES {}", accts.join(", ")),
        format!("INSERT INTO ord VALUES {}", ords.join(", ")),
        "INSERT INTO plain_t VALUES (1004, 'p4'), (1008, 'p8'), (1001, 'p1')".into(),
    ])
    .await;
}

/// The refused list's example, limited to one partition by its key: a
/// table joined with itself.
#[tokio::test]
async fn update_of_a_table_joined_with_itself_on_one_partition() {
    let t = twin("jw_self", "jw_self_ref");
    create(&t).await;
    let (mut p, mut r) = t.conns().await;
    same_writes(
        &mut p,
        &mut r,
        &["UPDATE acct a JOIN acct b ON a.uid = b.uid SET a.flags = b.flags + 1 WHERE a.uid = 1003"],
        CONTENTS,
    )
    .await;
}

/// The class: self-joins and joins of tables partitioned alike, UPDATE
/// and DELETE (one table and two), comma joins, LEFT JOIN, IGNORE,
/// LOW_PRIORITY, IN lists of one partition, an unpartitioned table beside
/// a partition on the main backend; then the shapes this once refused
/// (rows on every partition, on two backends, an unpartitioned table
/// beside a partition elsewhere), which now run from the join's rows.
#[tokio::test]
async fn multi_table_writes_on_one_backend() {
    let t = twin("jw_class", "jw_class_ref");
    create(&t).await;
    let (mut p, mut r) = t.conns().await;
    same_writes(
        &mut p,
        &mut r,
        &[
            "DELETE a FROM acct a JOIN acct b ON a.uid = b.uid WHERE a.uid = 1002",
            "UPDATE acct JOIN ord ON ord.uid = acct.uid SET acct.flags = acct.flags + ord.amt WHERE acct.uid = 1001",
            "UPDATE acct a, ord o SET o.amt = o.amt * 2 WHERE a.uid = o.uid AND a.uid = 1005",
            "DELETE o FROM ord o JOIN acct a ON a.uid = o.uid WHERE a.uid = 1001 AND o.amt > 5",
            "DELETE a, o FROM acct a JOIN ord o ON o.uid = a.uid WHERE a.uid = 1006",
            "UPDATE acct a JOIN plain_t p ON p.uid = a.uid SET a.handle = p.note WHERE a.uid = 1004",
            "UPDATE acct a JOIN ord o ON o.uid = a.uid SET a.flags = 0 WHERE a.uid IN (1001, 1005)",
            "UPDATE LOW_PRIORITY acct a JOIN acct b ON b.uid = a.uid SET a.flags = a.flags | 4 WHERE b.uid = 1007",
            "UPDATE IGNORE acct a JOIN ord o ON o.uid = a.uid SET o.oid = 1 WHERE a.uid = 1003",
            "DELETE acct FROM acct JOIN ord ON ord.uid = acct.uid WHERE acct.uid = 1009 AND ord.amt = 0",
            "UPDATE acct a LEFT JOIN ord o ON o.uid = a.uid SET a.flags = COALESCE(o.amt, -1) WHERE a.uid = 1008",
            "UPDATE acct a JOIN acct b ON a.uid = b.uid SET a.handle = 'dup' WHERE a.uid = 1012 AND b.flags = 99",
            "UPDATE acct a JOIN ord o ON o.uid = a.uid SET o.amt = NULL, a.handle = CONCAT(a.handle, '!') WHERE o.uid = 1011",
        ],
        CONTENTS,
    )
    .await;
    // Rows on every partition, on two backends, an unpartitioned table
    // beside a partition elsewhere: the join read, then each row written
    // by key (`join_writes_spread.rs` tests the class).
    same_writes(
        &mut p,
        &mut r,
        &[
            "UPDATE acct a JOIN acct b ON a.uid = b.uid SET a.flags = b.flags",
            "UPDATE acct a JOIN acct b ON b.uid = 1001 SET a.flags = b.flags WHERE a.uid = 1002",
            "UPDATE acct a JOIN plain_t p ON p.uid = a.uid SET a.handle = p.note WHERE a.uid = 1001",
            "DELETE a FROM acct a JOIN ord o ON o.uid = a.uid WHERE o.amt = 3",
        ],
        CONTENTS,
    )
    .await;
}
