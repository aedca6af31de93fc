//! A seventh pass (issue 29, round three, transp13), in classes the
//! earlier passes do not reach: GROUP_CONCAT with ORDER BY, DISTINCT,
//! SEPARATOR and its length limit over several partitions; HAVING on
//! aliases and on aggregates not selected; UNION ALL / UNION DISTINCT of
//! partitioned tables with ORDER BY and LIMIT; string collations and
//! NULLs in ORDER BY across partitions; DECIMAL and integer sums at the
//! edges of their precision; JSON functions over partitioned rows;
//! writes in order (INSERT ... SELECT ... ORDER BY ... LIMIT, UPDATE and
//! DELETE with ORDER BY and LIMIT over several partitions); multi-row
//! INSERTs whose rows raise different warnings; prepared statements with
//! NULL and edge parameters.

use mysql_async::Value;

use super::statements::{o, step, u, w, How, Step};

fn p(s: &mut Vec<Step>, sql: &str, params: Vec<Value>, how: How) {
    s.push(step(sql, Some(params), how))
}

pub fn push(s: &mut Vec<Step>) {
    group_concat(s);
    having(s);
    unions(s);
    orders(s);
    sums(s);
    json(s);
    ordered_writes(s);
    warnings(s);
    prepared(s);
}

fn group_concat(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT GROUP_CONCAT(oid ORDER BY oid DESC SEPARATOR '|') FROM od WHERE oid < 12",
            "SELECT k, GROUP_CONCAT(DISTINCT qty ORDER BY qty SEPARATOR ';') AS g FROM od GROUP BY k ORDER BY k",
            "SELECT GROUP_CONCAT(note ORDER BY note, oid SEPARATOR '') FROM od WHERE oid BETWEEN 3 AND 9",
            "SELECT k, GROUP_CONCAT(vc ORDER BY vc DESC, id) AS g FROM ty GROUP BY k ORDER BY k",
            "SELECT GROUP_CONCAT(name ORDER BY name SEPARATOR ', ') FROM sk",
            "SELECT k, GROUP_CONCAT(id ORDER BY id LIMIT 2) AS g FROM ty GROUP BY k ORDER BY k",
            "SELECT GROUP_CONCAT(DISTINCT k ORDER BY k DESC) FROM ty",
            "SELECT k, COUNT(*), GROUP_CONCAT(en ORDER BY en, id) AS g FROM ty GROUP BY k ORDER BY k",
            "SELECT GROUP_CONCAT(CONCAT(oid, ':', k) ORDER BY qty DESC, oid, k SEPARATOR ' ') FROM od WHERE qty > 3",
            "SELECT k, GROUP_CONCAT(price ORDER BY price IS NULL, price) AS g FROM od GROUP BY k ORDER BY k",
            "SELECT LENGTH(GROUP_CONCAT(vc)) FROM ty",
            "SELECT k, GROUP_CONCAT(DISTINCT note) IS NULL FROM od GROUP BY k ORDER BY k",
        ],
    );
    s.push(step(
        "SET SESSION group_concat_max_len = 20",
        None,
        How::Ordered,
    ));
    o(
        s,
        &[
            "SELECT GROUP_CONCAT(oid ORDER BY oid) FROM od",
            "SELECT k, GROUP_CONCAT(id ORDER BY id DESC) AS g FROM ty GROUP BY k ORDER BY k",
        ],
    );
    s.push(step(
        "SET SESSION group_concat_max_len = DEFAULT",
        None,
        How::Ordered,
    ));
}

fn having(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT k, SUM(qty) AS total FROM od GROUP BY k HAVING total > 10 ORDER BY k",
            "SELECT k AS kk, COUNT(*) AS n FROM od GROUP BY kk HAVING n >= 2 AND kk <> 0 ORDER BY kk",
            "SELECT k, MAX(price) AS m FROM od GROUP BY k HAVING MIN(qty) > 0 ORDER BY m DESC, k",
            "SELECT k, AVG(qty) AS a FROM od GROUP BY k HAVING a BETWEEN 1 AND 100 ORDER BY a, k",
            "SELECT k FROM od GROUP BY k HAVING SUM(qty) = MAX(qty) * COUNT(*) ORDER BY k",
            "SELECT k, COUNT(DISTINCT qty) AS d FROM od GROUP BY k HAVING d > 1 ORDER BY d DESC, k",
            "SELECT k, SUM(de) AS s FROM ty GROUP BY k HAVING s IS NOT NULL ORDER BY s, k",
            "SELECT k, GROUP_CONCAT(id ORDER BY id) AS g FROM ty GROUP BY k HAVING g LIKE '%1%' ORDER BY k",
            "SELECT k % 2 AS parity, SUM(qty) AS s FROM od GROUP BY parity HAVING s > 0 ORDER BY parity",
            "SELECT kind, SUM(amt) AS total FROM ev GROUP BY kind HAVING total > 0 OR total IS NULL ORDER BY kind",
            "SELECT k, COUNT(*) FROM ty GROUP BY k HAVING COUNT(*) > (SELECT COUNT(*) FROM gl) / 10 ORDER BY k",
            "SELECT k, MIN(vc) AS lo FROM ty GROUP BY k HAVING lo < 'm' ORDER BY lo, k",
        ],
    );
}

fn unions(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT oid FROM od WHERE k = 1 UNION ALL SELECT oid FROM od WHERE k = 2 ORDER BY oid LIMIT 5",
            "SELECT k FROM od UNION SELECT k FROM ty ORDER BY k",
            "(SELECT oid, k FROM od ORDER BY oid DESC LIMIT 3) UNION ALL (SELECT id, k FROM ty ORDER BY id LIMIT 2) ORDER BY 1, 2",
            "SELECT qty FROM od UNION DISTINCT SELECT gid FROM gl ORDER BY qty DESC LIMIT 4",
            "SELECT name FROM sk UNION ALL SELECT name FROM gl ORDER BY name LIMIT 3 OFFSET 2",
            "SELECT k, COUNT(*) FROM od GROUP BY k UNION ALL SELECT k, COUNT(*) FROM ty GROUP BY k ORDER BY 1, 2",
            "SELECT oid AS x FROM od WHERE oid < 5 UNION SELECT id FROM ty WHERE id < 5 ORDER BY x DESC",
            "SELECT COUNT(*) FROM (SELECT k FROM od UNION ALL SELECT k FROM ty) AS t",
            "SELECT COUNT(*) FROM (SELECT k FROM od UNION SELECT k FROM ty) AS t",
            "SELECT vc FROM ty WHERE k = 1 UNION SELECT note FROM od WHERE k = 1 ORDER BY 1 LIMIT 4",
        ],
    );
}

fn orders(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT name FROM sk ORDER BY name COLLATE utf8mb4_bin",
            "SELECT name FROM sk ORDER BY name COLLATE utf8mb4_unicode_ci, name COLLATE utf8mb4_bin",
            "SELECT name FROM sk ORDER BY LOWER(name) DESC, name COLLATE utf8mb4_bin",
            "SELECT id, vc FROM ty ORDER BY vc IS NULL, vc, id",
            "SELECT id, vc FROM ty ORDER BY vc DESC, id LIMIT 10",
            "SELECT id, price FROM ty JOIN od ON od.oid = ty.id ORDER BY price, id LIMIT 8",
            "SELECT oid, k, price FROM od ORDER BY price DESC, oid, k LIMIT 6",
            "SELECT oid, k, note FROM od ORDER BY note IS NOT NULL, note DESC, oid, k LIMIT 7",
            "SELECT id, k, en FROM ty ORDER BY en, id, k LIMIT 9",
            "SELECT id, k, st FROM ty ORDER BY st DESC, id, k LIMIT 9",
            "SELECT id, k, db FROM ty ORDER BY db, id, k LIMIT 9",
            "SELECT id, k, bt FROM ty ORDER BY bt, id, k LIMIT 6",
            "SELECT id, k, yr FROM ty ORDER BY -yr, id, k LIMIT 6",
            "SELECT id, k, tm FROM ty ORDER BY tm DESC, id, k LIMIT 6",
            "SELECT name, v FROM sk ORDER BY v IS NULL DESC, v, name",
            "SELECT id, ch FROM ty ORDER BY ch COLLATE utf8mb4_bin, id LIMIT 8",
        ],
    );
}

fn sums(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT SUM(de), SUM(de) * 2, SUM(-de) FROM ty",
            "SELECT k, SUM(de) FROM ty GROUP BY k ORDER BY k",
            "SELECT SUM(de / 3), AVG(de / 3) FROM ty",
            "SELECT SUM(bi) FROM ty WHERE bi > 0",
            "SELECT SUM(bu) FROM ty",
            "SELECT SUM(CAST(bu AS DECIMAL(30,0))) FROM ty",
            "SELECT SUM(price * qty), SUM(price) / SUM(qty) FROM od",
            "SELECT AVG(price), AVG(DISTINCT price), STD(price), VAR_SAMP(price) FROM od",
            "SELECT k, AVG(de), SUM(de) / COUNT(de) FROM ty GROUP BY k ORDER BY k",
            "SELECT SUM(ti), SUM(su), AVG(ti), AVG(su) FROM ty",
            "SELECT MIN(de), MAX(de), MIN(bi), MAX(bu) FROM ty",
            "SELECT SUM(de) + 0.0000001, ROUND(SUM(de), 2), TRUNCATE(AVG(de), 3) FROM ty",
            "SELECT BIT_AND(bu), BIT_OR(bu), BIT_XOR(bu) FROM ty",
            "SELECT COUNT(de), COUNT(DISTINCT de), SUM(DISTINCT de) FROM ty",
        ],
    );
}

fn json(s: &mut Vec<Step>) {
    o(
        s,
        &[
            "SELECT id, JSON_EXTRACT(js, '$.a') FROM ty ORDER BY id LIMIT 8",
            "SELECT id, JSON_TYPE(js), JSON_VALID(js) FROM ty ORDER BY id LIMIT 8",
            "SELECT JSON_ARRAYAGG(oid) FROM (SELECT oid FROM od WHERE oid < 6 ORDER BY oid) AS t",
            "SELECT k, JSON_OBJECTAGG(oid, qty) FROM od WHERE oid < 8 GROUP BY k ORDER BY k",
            "SELECT id FROM ty WHERE JSON_CONTAINS_PATH(js, 'one', '$.a') ORDER BY id",
            "SELECT COUNT(*) FROM ty WHERE JSON_LENGTH(js) > 0",
            "SELECT id, JSON_UNQUOTE(JSON_EXTRACT(js, '$.b')) AS b FROM ty WHERE js IS NOT NULL ORDER BY b, id LIMIT 6",
            "SELECT JSON_ARRAY(k, qty), JSON_OBJECT('oid', oid) FROM od ORDER BY oid, k LIMIT 5",
            "SELECT k, MAX(JSON_LENGTH(js)) FROM ty GROUP BY k ORDER BY k",
            "SELECT id, JSON_SET(js, '$.z', k) FROM ty WHERE id < 5 ORDER BY id",
        ],
    );
}

fn ordered_writes(s: &mut Vec<Step>) {
    w(
        s,
        &[
            "INSERT INTO od (oid, k, qty, price, note) SELECT id + 8000, k, 1, de, CONCAT('c', id) FROM ty WHERE de IS NOT NULL AND ABS(de) < 1000000 ORDER BY id LIMIT 5",
            "INSERT INTO od (oid, k, qty) SELECT oid + 100, k, qty FROM od WHERE oid >= 8000 ORDER BY oid DESC LIMIT 2",
            "UPDATE od SET qty = qty + 100 WHERE oid >= 8000 ORDER BY oid LIMIT 3",
            "UPDATE od SET note = CONCAT(note, '!') WHERE oid >= 8000 ORDER BY qty DESC, oid LIMIT 2",
            "DELETE FROM od WHERE oid >= 8000 ORDER BY oid DESC LIMIT 2",
            "DELETE FROM od WHERE oid >= 8000 ORDER BY price, oid LIMIT 1",
            "UPDATE ty SET ti = 1 WHERE k = 2 ORDER BY id LIMIT 2",
            "DELETE FROM sk WHERE v IS NULL ORDER BY name LIMIT 1",
            "UPDATE sk SET v = v + 1 ORDER BY name DESC LIMIT 3",
            "INSERT INTO sk (name, v) SELECT CONCAT('g', gid), gid FROM gl ORDER BY gid LIMIT 3",
        ],
    );
}

fn warnings(s: &mut Vec<Step>) {
    s.push(step("SET sql_mode = ''", None, How::Ordered));
    w(
        s,
        &[
            "INSERT INTO od (oid, k, qty, price, note) VALUES (8101, 1, 'x', 1, 'w1'), (8102, 2, 2, 123456789, 'w2'), (8103, 3, 3, 1.005, 'abcdefghijklmnopqrstuvwxyz')",
            "INSERT INTO od (oid, k, qty, price, note) VALUES (8104, 0, NULL, 1, 'w4'), (8105, 1, 5, 'abc', 'w5')",
            "INSERT IGNORE INTO od (oid, k, qty, price, note) VALUES (8101, 1, 1, 1, 'dup'), (8106, 2, 6, 6, 'w6')",
            "INSERT INTO ty (id, k, ti, su) VALUES (900, 1, 300, -1), (901, 2, -300, 70000)",
            "UPDATE od SET price = price * 1000000 WHERE oid BETWEEN 8101 AND 8106",
        ],
    );
    s.push(step("SET sql_mode = DEFAULT", None, How::Ordered));
    w(
        s,
        &[
            "INSERT INTO od (oid, k, qty, price, note) VALUES (8110, 1, 1, 1, 'ok'), (8111, 2, 'x', 1, 'bad')",
            "INSERT IGNORE INTO od (oid, k, qty, price, note) VALUES (8112, 1, 'x', 1, 'i1'), (8113, 3, 3, 99999999, 'i2')",
            "INSERT INTO ty (id, k, ti) VALUES (902, 1, 1), (903, 2, 1000)",
        ],
    );
}

fn prepared(s: &mut Vec<Step>) {
    p(
        s,
        "SELECT oid, k FROM od WHERE note = ? ORDER BY oid, k",
        vec![Value::NULL],
        How::Ordered,
    );
    p(
        s,
        "SELECT COUNT(*) FROM od WHERE note <=> ?",
        vec![Value::NULL],
        How::Ordered,
    );
    p(
        s,
        "SELECT oid, k FROM od WHERE k = ? ORDER BY oid LIMIT ?",
        vec![Value::Int(1), Value::Int(3)],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE bu = ? ORDER BY id",
        vec![Value::UInt(18446744073709551615)],
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
        "SELECT id, k FROM ty WHERE k IN (?, ?, ?) ORDER BY id, k LIMIT 5",
        vec![Value::Int(-3), Value::NULL, Value::Int(3)],
        How::Ordered,
    );
    p(
        s,
        "SELECT SUM(qty) FROM od WHERE k = ? OR ? IS NULL",
        vec![Value::Int(2), Value::NULL],
        How::Ordered,
    );
    p(
        s,
        "SELECT name FROM sk WHERE name = ?",
        vec![Value::Bytes(b"".to_vec())],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE de = ? ORDER BY id",
        vec![Value::Bytes(b"99999999999999.999999".to_vec())],
        How::Ordered,
    );
    p(
        s,
        "SELECT id FROM ty WHERE db < ? ORDER BY id LIMIT 4",
        vec![Value::Double(-1.0e300)],
        How::Ordered,
    );
    p(
        s,
        "INSERT INTO od (oid, k, qty, price, note) VALUES (?, ?, ?, ?, ?)",
        vec![
            Value::Int(8200),
            Value::Int(-1),
            Value::Int(0),
            Value::NULL,
            Value::NULL,
        ],
        How::Write,
    );
    p(
        s,
        "UPDATE od SET note = ? WHERE oid = ? AND k = ?",
        vec![Value::NULL, Value::Int(8200), Value::Int(-1)],
        How::Write,
    );
    p(
        s,
        "DELETE FROM od WHERE oid = ? AND k = ?",
        vec![Value::Int(8200), Value::Int(-1)],
        How::Write,
    );
    u(
        s,
        &["SELECT oid, k, qty, price, note FROM od WHERE oid >= 8000"],
    );
}
