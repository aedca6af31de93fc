//! What is still refused of issue 15's "Refused, but one server answers"
//! (writes through views of partitioned tables, LOAD DATA, non-ASCII text
//! from clients in single-byte character sets other than latin1):
//! each construct answered with 1235 naming it (docs/src/refusals.md, *What hscale
//! refuses*), never with a different answer, and nothing written.

use super::Harness;
use crate::common::raw::{err_code, Raw, CLIENT_CAPS};
use crate::common::*;
use mysql_async::prelude::*;

pub async fn run(h: &mut Harness) {
    let db = h.part.clone();
    let cases: &[(&str, &str)] = &[
        // Writes through a view of partitioned tables (one server writes
        // through updatable views).
        (
            "INSERT INTO v1 (id, k, n) VALUES (900, 1, 1)",
            "through view",
        ),
        ("UPDATE v1 SET n = 0 WHERE k = 2", "through view"),
        ("DELETE FROM v1 WHERE id = 3", "through view"),
        (
            "LOAD DATA INFILE '/nonexistent/rows.tsv' INTO TABLE ev",
            "LOAD DATA INFILE without LOCAL",
        ),
        (
            "LOAD XML LOCAL INFILE '/nonexistent/rows.xml' INTO TABLE t",
            "LOAD XML",
        ),
    ];
    for c in [&mut h.p, &mut h.r] {
        c.query_drop("CREATE VIEW v1 AS SELECT id, k, n FROM t")
            .await
            .unwrap();
    }
    for (sql, construct) in cases {
        let e = h.p.query_drop(*sql).await.unwrap_err();
        assert_eq!(code(&e), 1235, "{sql}: {e}");
        assert!(e.to_string().contains(construct), "{sql}: {e}");
        // One server answers it (the views' writes: nothing left
        // behind that the contents below would show).
        if !sql.starts_with("LOAD") {
            h.r.query_drop(*sql).await.unwrap();
        }
    }
    h.reset().await;

    // An sjis connection (a multi-byte set other than UTF-8) sending a
    // non-ASCII key: refused naming the character set; ASCII statements
    // on the same connection work. (Single-byte sets' keys are read as the
    // server reads them: `latin1.rs`, `single_byte.rs`.)
    let info = cluster(4);
    let (mut raw, ok) = Raw::login_as(info.proxy_port, "root", "", CLIENT_CAPS, 13).await;
    assert_eq!(ok.first(), Some(0x00), "login as sjis");
    assert!(raw.query(&format!("USE {db}")).await.is_ok());
    let mut payload = vec![hscale_wire::consts::com::QUERY];
    payload.extend_from_slice(b"UPDATE t SET s = 'caf\x83\x4a' WHERE k = 2");
    raw.send(0, &payload).await;
    let answer = raw.read().await.unwrap();
    assert_eq!(err_code(&answer.payload), Some(1235));
    let message = String::from_utf8_lossy(&answer.payload).into_owned();
    assert!(message.contains("not UTF-8"), "{message}");
    // sjis bytes that happen to be valid UTF-8 ('\xc3\xa9' are two
    // half-width katakana to the server, "é" as UTF-8) are refused too: routed as UTF-8 text they
    // would be placed by another string than the one the server stores.
    let mut payload = vec![hscale_wire::consts::com::QUERY];
    payload.extend_from_slice(b"UPDATE t SET n = n WHERE s = 'caf\xc3\xa9'");
    raw.send(0, &payload).await;
    let answer = raw.read().await.unwrap();
    assert_eq!(err_code(&answer.payload), Some(1235));
    // ASCII statements on the same connection work.
    let rows = raw
        .query("SELECT COUNT(*), SUM(n) FROM t WHERE k = 2 OR s = 's4'")
        .await
        .unwrap();
    let want: Vec<(i64, Option<String>)> =
        h.r.query("SELECT COUNT(*), CAST(SUM(n) AS CHAR) FROM t WHERE k = 2 OR s = 's4'")
            .await
            .unwrap();
    assert_eq!(rows[0][0].as_deref(), Some(want[0].0.to_string().as_str()));
    assert_eq!(rows[0][1], want[0].1);
}
