//! Prepared statements with every parameter type, reads and writes.

use mysql_async::Value;

use super::statements::{step, How, Step};

pub fn push(s: &mut Vec<Step>) {
    // Prepared statements with every parameter type (queries.md,
    // "Prepared statements").
    let p = |s: &mut Vec<Step>, sql: &str, params: Vec<Value>, how: How| {
        s.push(step(sql, Some(params), how))
    };
    let q_k = "SELECT id FROM ty WHERE k = ? ORDER BY id";
    for v in [
        Value::Int(1),
        Value::UInt(2),
        Value::Bytes(b"3".to_vec()),
        Value::Bytes(b"-3 ".to_vec()),
        Value::Double(1.0),
        Value::Float(2.0),
        Value::NULL,
    ] {
        p(s, q_k, vec![v], How::Ordered);
    }
    p(
        s,
        "SELECT id FROM ty WHERE bu = ? ORDER BY id",
        vec![Value::UInt(u64::MAX)],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE bi = ? ORDER BY id",
        vec![Value::Int(i64::MIN)],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE de = ? ORDER BY id",
        vec![Value::Bytes(b"1.5".to_vec())],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE de = ? ORDER BY id",
        vec![Value::Double(1.5)],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ev WHERE at = ? ORDER BY id",
        vec![Value::Date(2024, 2, 10, 10, 0, 0, 0)],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ev WHERE at = ? ORDER BY id",
        vec![Value::Bytes(b"2024-01-31 23:59:59".to_vec())],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ev WHERE at BETWEEN ? AND ? ORDER BY id",
        vec![
            Value::Date(2024, 1, 31, 0, 0, 0, 0),
            Value::Date(2024, 2, 2, 0, 0, 0, 0),
        ],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE tm = ? ORDER BY id",
        vec![Value::Time(false, 0, 12, 30, 0, 0)],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE tm = ? ORDER BY id",
        vec![Value::Time(true, 34, 22, 59, 59, 0)],
        How::Ordered,
    );
    p(
        s,
        "SELECT name, v FROM sk WHERE name = ?",
        vec![Value::Bytes(b"ALPHA".to_vec())],
        How::Ordered,
    );
    p(
        s,
        "SELECT name, v FROM sk WHERE name = ?",
        vec![Value::Bytes("ÉPSILON".as_bytes().to_vec())],
        How::Ordered,
    );
    p(
        s,
        "SELECT k, COUNT(*), SUM(price) FROM od WHERE qty > ? GROUP BY k ORDER BY k",
        vec![Value::Int(1)],
        How::Ordered,
    );
    p(
        s,
        "SELECT oid FROM od ORDER BY oid LIMIT ?",
        vec![Value::Int(3)],
        How::Ordered,
    );
    p(
        s,
        "SELECT oid FROM od ORDER BY oid DESC LIMIT ?, ?",
        vec![Value::UInt(2), Value::Int(3)],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE vb = ? ORDER BY id",
        vec![Value::Bytes(vec![0xff])],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE da BETWEEN ? AND ? ORDER BY id",
        vec![
            Value::Date(2023, 12, 31, 0, 0, 0, 0),
            Value::Bytes(b"2024-02-29".to_vec()),
        ],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE k IN (?, ?, ?) ORDER BY id",
        vec![
            Value::Int(-1),
            Value::Bytes(b"2".to_vec()),
            Value::Double(3.0),
        ],
        How::Ordered,
    );
    p(
        s,
        "SELECT SUM(qty) FROM od WHERE k = ?",
        vec![Value::Bytes(b"1abc".to_vec())],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE JSON_EXTRACT(js, ?) IS NOT NULL ORDER BY id",
        vec![Value::Bytes(b"$.a".to_vec())],
        How::Ordered,
    );
    p(
        s,
        "SELECT MIN(bu), MAX(de), MIN(dt), MAX(tm), SUM(bt) FROM ty WHERE k <> ?",
        vec![Value::Int(0)],
        How::Ordered,
    );
    p(
        s,
        "SELECT DISTINCT en FROM ty WHERE id > ? ORDER BY en",
        vec![Value::Int(5)],
        How::Ordered,
    );
    p(
        s,
        "INSERT INTO od VALUES (?, ?, ?, ?, ?)",
        vec![
            Value::Int(700),
            Value::Bytes(b"1".to_vec()),
            Value::UInt(3),
            Value::Double(2.5),
            Value::NULL,
        ],
        How::Write,
    );
    p(
        s,
        "INSERT INTO od VALUES (?, ?, ?, ?, ?)",
        vec![
            Value::Int(701),
            Value::Double(2.0),
            Value::Int(3),
            Value::Bytes(b"2.25".to_vec()),
            Value::Bytes(b"p701".to_vec()),
        ],
        How::Write,
    );
    p(
        s,
        "INSERT INTO od VALUES (?, ?, ?, ?, ?)",
        vec![
            Value::Int(702),
            Value::Int(3),
            Value::NULL,
            Value::NULL,
            Value::NULL,
        ],
        How::Write,
    );
    p(
        s,
        "INSERT INTO od VALUES (?, ?, ?, ?, ?)",
        vec![
            Value::Int(1),
            Value::Int(0),
            Value::Int(1),
            Value::NULL,
            Value::NULL,
        ],
        How::Write,
    );
    p(
        s,
        "UPDATE od SET qty = ? WHERE k = ? AND oid = ?",
        vec![Value::Int(42), Value::Int(1), Value::Int(700)],
        How::Write,
    );
    p(
        s,
        "UPDATE od SET qty = qty + ? WHERE k IN (?, ?)",
        vec![Value::Int(1), Value::Int(1), Value::Int(2)],
        How::Write,
    );
    p(
        s,
        "DELETE FROM od WHERE k = ? AND oid = ?",
        vec![Value::Int(2), Value::Int(701)],
        How::Write,
    );
    p(
        s,
        "INSERT INTO ev (at, kind, amt) VALUES (?, ?, ?)",
        vec![
            Value::Date(2024, 3, 9, 8, 7, 6, 0),
            Value::Bytes(b"prep".to_vec()),
            Value::Double(1.25),
        ],
        How::Write,
    );
    p(s, "SELECT LAST_INSERT_ID()", vec![], How::Ordered);
    p(
        s,
        "INSERT INTO sk VALUES (?, ?) ON DUPLICATE KEY UPDATE v = v + ?",
        vec![
            Value::Bytes(b"KAPPA".to_vec()),
            Value::Int(1),
            Value::Int(1000),
        ],
        How::Write,
    );
}
