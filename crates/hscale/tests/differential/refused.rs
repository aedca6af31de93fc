//! What is still refused of issue 15's "Refused, but one server answers":
//! each construct answered with 1235 naming it (README, *What hscale
//! refuses*), never with a different answer, and nothing written.

use super::Harness;
use crate::common::raw::{err_code, Raw, CLIENT_CAPS};
use crate::common::*;
use mysql_async::prelude::*;

pub async fn run(h: &mut Harness) {
    let db = h.part.clone();
    // CREATE VIEW over a partitioned table (one server answers; the
    // reference database has no partitioned table, so it passes through).
    let cases: &[(&str, &str)] = &[
        ("CREATE VIEW v1 AS SELECT id, n FROM t", "CREATE VIEW"),
        (
            "CREATE OR REPLACE ALGORITHM = MERGE VIEW v2 AS SELECT k, COUNT(*) AS c FROM t GROUP BY k",
            "CREATE VIEW",
        ),
        ("CREATE VIEW v3 AS SELECT * FROM ev WHERE v > 3", "CREATE VIEW"),
        (
            "LOAD DATA INFILE '/nonexistent/rows.tsv' INTO TABLE ev",
            "LOAD DATA INFILE without LOCAL",
        ),
        ("LOAD XML LOCAL INFILE '/nonexistent/rows.xml' INTO TABLE t", "LOAD XML"),
    ];
    for (sql, construct) in cases {
        let e = h.p.query_drop(*sql).await.unwrap_err();
        assert_eq!(code(&e), 1235, "{sql}: {e}");
        assert!(e.to_string().contains(construct), "{sql}: {e}");
        if sql.starts_with("CREATE") {
            // One server answers it.
            h.r.query_drop(*sql).await.unwrap();
        }
    }
    let views: Vec<String> = h
        .p
        .query("SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = DATABASE()")
        .await
        .unwrap();
    assert!(views.is_empty(), "{views:?}");

    // A latin1 connection sending a non-ASCII key: refused naming the
    // character set; ASCII statements on the same connection work.
    let info = cluster(4);
    let (mut raw, ok) = Raw::login_as(info.proxy_port, "root", "", CLIENT_CAPS, 8).await;
    assert_eq!(ok.first(), Some(0x00), "login as latin1");
    assert!(raw.query(&format!("USE {db}")).await.is_ok());
    let mut payload = vec![hscale_wire::consts::com::QUERY];
    payload.extend_from_slice(b"UPDATE t SET s = 'caf\xe9' WHERE k = 2");
    raw.send(0, &payload).await;
    let answer = raw.read().await.unwrap();
    assert_eq!(err_code(&answer.payload), Some(1235));
    let message = String::from_utf8_lossy(&answer.payload).into_owned();
    assert!(message.contains("not UTF-8"), "{message}");
    // Latin1 bytes that happen to be valid UTF-8 ('\xc3\xa9' is "Ã©" to
    // the server, "é" as UTF-8) are refused too: routed as UTF-8 text they
    // would be placed by another string than the one the server stores.
    let mut payload = vec![hscale_wire::consts::com::QUERY];
    payload.extend_from_slice(b"UPDATE t SET n = n WHERE s = 'caf\xc3\xa9'");
    raw.send(0, &payload).await;
    let answer = raw.read().await.unwrap();
    assert_eq!(err_code(&answer.payload), Some(1235));
    // ASCII statements on the same latin1 connection work.
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
