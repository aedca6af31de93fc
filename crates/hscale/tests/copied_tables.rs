#![allow(clippy::unwrap_used)]
//! Issue 29, finding (b): a statement run on copies of its partitioned
//! tables (`SELECT * ... ORDER BY 1, 2` over several partitions, a join
//! of tables partitioned differently) copies each table into a temporary
//! table of its definition; a FULLTEXT key made that copy fail with 1796
//! "Cannot create FULLTEXT index on temporary InnoDB table", where one
//! server answers. The class: tables with the keys and attributes a
//! temporary table refuses or treats apart (FULLTEXT, SPATIAL, a long
//! UNIQUE key the server keeps as a hash, HASH and descending keys,
//! ignored keys, indexed virtual columns, invisible columns, CHECK
//! constraints), each read through the copies and compared with one plain
//! database of the same server (`REF`): columns, rows, warnings.
//!
//! Two backends; every table partitioned MOD(2) on `k`.

mod common;

use common::twin::*;

const DB: &str = "cp_part";
const REF: &str = "cp_ref";

const SCHEMA: &[&str] = &[
    "CREATE TABLE docs (id INT NOT NULL, k INT NOT NULL, title VARCHAR(40), body TEXT, PRIMARY KEY (id, k), FULLTEXT KEY ft (body))",
    "CREATE TABLE places (id INT NOT NULL, k INT NOT NULL, name VARCHAR(20), g POINT NOT NULL, PRIMARY KEY (id, k), SPATIAL KEY sp (g))",
    "CREATE TABLE notes (id INT NOT NULL, k INT NOT NULL, note TEXT, tag VARCHAR(10), PRIMARY KEY (id, k), UNIQUE KEY long_note (note, k), KEY by_tag (tag) USING HASH, KEY down (id DESC), KEY quiet (tag) IGNORED)",
    "CREATE TABLE calc (id INT NOT NULL, k INT NOT NULL, a INT, twice INT AS (a * 2) VIRTUAL, hidden INT INVISIBLE DEFAULT 7, PRIMARY KEY (id, k), KEY tw (twice), CONSTRAINT pos CHECK (a >= 0))",
    "CREATE TABLE both_keys (id INT NOT NULL, k INT NOT NULL, body TEXT, g POINT NOT NULL, PRIMARY KEY (id, k), FULLTEXT KEY ft (body), SPATIAL KEY sp (g))",
];

const PARTITIONING: &[&str] = &[
    "HSCALE SETUP_TABLE('docs', 'k', 'docs_default', 'shard0', 'MOD(2)')",
    "HSCALE ADD_PARTITION('docs', 'docs1', '1', 'shard1')",
    "HSCALE SETUP_TABLE('places', 'k', 'places_default', 'shard0', 'MOD(2)')",
    "HSCALE ADD_PARTITION('places', 'places1', '1', 'shard1')",
    "HSCALE SETUP_TABLE('notes', 'k', 'notes_default', 'shard0', 'MOD(2)')",
    "HSCALE ADD_PARTITION('notes', 'notes1', '1', 'shard1')",
    "HSCALE SETUP_TABLE('calc', 'k', 'calc_default', 'shard0', 'MOD(2)')",
    "HSCALE ADD_PARTITION('calc', 'calc1', '1', 'shard1')",
    "HSCALE SETUP_TABLE('both_keys', 'k', 'both_keys_default', 'shard0', 'MOD(2)')",
    "HSCALE ADD_PARTITION('both_keys', 'both_keys1', '1', 'shard1')",
];

const TWIN: Twin = Twin {
    shards: 2,
    db: DB,
    reference: REF,
    schema: SCHEMA,
    partitioning: PARTITIONING,
};

static SET_UP: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

async fn set_up() {
    SET_UP
        .get_or_init(|| async {
            TWIN.create(&[
                "INSERT INTO docs VALUES (1, 0, 'alpha', 'the quick brown fox'), (2, 1, 'beta', 'jumps over'), (3, 2, 'gamma', NULL), (4, 3, 'alpha', 'the lazy dog'), (5, 1, NULL, 'fox again')".into(),
                "INSERT INTO places VALUES (1, 0, 'a', POINT(1, 2)), (2, 1, 'b', POINT(3, 4)), (3, 2, 'c', POINT(-1, 0)), (4, 3, 'd', POINT(0.5, 0.25))".into(),
                "INSERT INTO notes VALUES (1, 0, 'one', 'x'), (2, 1, 'two', 'y'), (3, 2, NULL, 'x'), (4, 3, 'four', NULL), (5, 5, 'five', 'y')".into(),
                "INSERT INTO calc (id, k, a) VALUES (1, 0, 3), (2, 1, 0), (3, 2, NULL), (4, 3, 8)".into(),
                "INSERT INTO calc (id, k, a, hidden) VALUES (5, 1, 1, 70)".into(),
                "INSERT INTO both_keys VALUES (1, 0, 'x y', POINT(0, 0)), (2, 1, 'z', POINT(1, 1)), (3, 3, NULL, POINT(2, 2))".into(),
            ])
            .await
        })
        .await;
}

async fn same_answers(statements: &[&str]) {
    set_up().await;
    let (mut p, mut r) = TWIN.conns().await;
    for sql in statements {
        let want = answer(&mut r, sql, None).await;
        assert_eq!(answer(&mut p, sql, None).await, want, "{sql}");
    }
}

/// The finding's statement: ORDER BY positions through `*` over both
/// partitions of a table with a FULLTEXT key.
#[tokio::test]
async fn order_by_positions_over_a_table_with_a_fulltext_key() {
    same_answers(&["SELECT * FROM docs ORDER BY 1, 2"]).await;
}

/// The class: each table's copy, by ORDER BY positions, joins of tables
/// partitioned apart (shipped copies), and the same in a prepared form.
#[tokio::test]
async fn copies_of_tables_with_keys_temporary_tables_refuse() {
    same_answers(&[
        "SELECT * FROM docs ORDER BY 2 DESC, 1",
        "SELECT * FROM docs WHERE title = 'alpha' ORDER BY 1",
        "SELECT id, title FROM docs ORDER BY 2, 1",
        "SELECT id, k, name, ST_AsText(g) FROM places ORDER BY 4, 1",
        "SELECT * FROM notes ORDER BY 1, 2",
        "SELECT * FROM notes ORDER BY 4, 1",
        "SELECT * FROM calc ORDER BY 1, 2",
        "SELECT id, k, a, twice, hidden FROM calc ORDER BY 5, 1",
        "SELECT id, body, ST_AsText(g) FROM both_keys ORDER BY 3, 1",
        "SELECT d.id, n.note FROM docs d JOIN notes n ON n.id = d.id ORDER BY 1, 2",
        "SELECT d.title, p.name FROM docs d JOIN places p ON p.id = d.id AND p.k <> d.k ORDER BY 1, 2",
        "SELECT c.id, c.twice, b.body FROM calc c JOIN both_keys b ON b.id = c.id ORDER BY 1",
        "SELECT * FROM docs WHERE id IN (SELECT id FROM notes WHERE tag = 'y') ORDER BY 1, 2",
    ])
    .await;
}
