#!/usr/bin/env python3
"""Exercises a MySQL server (or hscale in front of one) through PyMySQL.

Usage: python3 pymysql_check.py HOST PORT USER PASSWORD DB

DB must exist. The script creates and drops the table `py_t` in it. It exits
non-zero with a message naming the first mismatch, and prints `pymysql ok`
when every check passed.
"""

import datetime
import sys
from decimal import Decimal

import pymysql
from pymysql.constants import CLIENT

TABLE_DDL = """
CREATE TABLE py_t (
  id INT PRIMARY KEY,
  name VARCHAR(50),
  price DECIMAL(10,2),
  created DATETIME,
  data BLOB,
  note TEXT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
"""
COLUMNS = "id, name, price, created, data, note"
INSERT = f"INSERT INTO py_t ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)"
BIG_ROWS = 20000
UNICODE_NAMES = ["Zoë ☃", "José Müller", "日本語の名前", "emoji 🙂 four bytes", "Ωμέγα"]


class CheckFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def expect_equal(actual, expected, what):
    check(
        type(actual) is type(expected) and actual == expected,
        f"{what}: expected {expected!r} ({type(expected).__name__}), "
        f"got {actual!r} ({type(actual).__name__})",
    )


def scalar(cursor, sql, args=None):
    cursor.execute(sql, args)
    rows = cursor.fetchall()
    check(len(rows) == 1 and len(rows[0]) == 1, f"{sql!r}: expected one value, got {rows!r}")
    return rows[0][0]


def make_rows():
    """100 rows covering NULLs, non-ASCII text, binary with zero bytes and edge decimals."""
    base = datetime.datetime(2024, 1, 31, 23, 59, 58)
    rows = []
    for i in range(1, 101):
        name = UNICODE_NAMES[i % len(UNICODE_NAMES)] if i % 3 == 0 else f"name {i}"
        price = Decimal(f"{i * 7}.{i % 100:02d}")
        created = base + datetime.timedelta(days=i, hours=i, seconds=i)
        data = bytes([0, i, 0, 255]) + bytes((i * j) % 256 for j in range(i))
        note = None if i % 4 == 0 else f"note {i}: it's \"quoted\", back\\slash; semi"
        rows.append((i, name, price, created, data, note))
    # Edge values.
    rows[0] = (1, "", Decimal("0.00"), datetime.datetime(1000, 1, 1, 0, 0, 0), b"", "")
    rows[1] = (2, "x" * 50, Decimal("-99999999.99"), datetime.datetime(9999, 12, 31, 23, 59, 59),
               b"\x00" * 1000, None)
    rows[2] = (3, "Zoë ☃", Decimal("99999999.99"), base, bytes(range(256)) * 200, "☃" * 1000)
    return rows


def connect(host, port, user, password, db, **kwargs):
    return pymysql.connect(
        host=host,
        port=port,
        user=user,
        password=password,
        database=db,
        charset="utf8mb4",
        autocommit=True,
        connect_timeout=10,
        read_timeout=120,
        write_timeout=120,
        **kwargs,
    )


def check_round_trip(cur):
    cur.execute("DROP TABLE IF EXISTS py_t")
    cur.execute(TABLE_DDL)
    rows = make_rows()
    cur.executemany(INSERT, rows)
    expect_equal(cur.rowcount, len(rows), "executemany rowcount")

    cur.execute(f"SELECT {COLUMNS} FROM py_t ORDER BY id")
    got = cur.fetchall()
    expect_equal(len(got), len(rows), "row count after insert")
    names = COLUMNS.split(", ")
    for expected_row, got_row in zip(rows, got):
        for name, expected, actual in zip(names, expected_row, got_row):
            expect_equal(actual, expected, f"row id={expected_row[0]} column {name}")
    return rows


def check_update(cur, rows):
    cur.execute("UPDATE py_t SET price = price + 1 WHERE id BETWEEN %s AND %s", (11, 20))
    expect_equal(cur.rowcount, 10, "UPDATE rowcount")
    cur.execute("SELECT id, price FROM py_t WHERE id BETWEEN 11 AND 20 ORDER BY id")
    for (row_id, price), row in zip(cur.fetchall(), rows[10:20]):
        expect_equal(price, row[2] + 1, f"price of id={row_id} after UPDATE")
    cur.execute("UPDATE py_t SET price = price WHERE id = 11")
    expect_equal(cur.rowcount, 0, "rowcount of an UPDATE that changes nothing")


def check_transactions(conn, cur, other):
    count = "SELECT COUNT(*) FROM py_t WHERE id = %s"
    row = (1001, "rolled back", Decimal("1.00"), datetime.datetime(2024, 5, 1), b"\x00", None)
    conn.begin()
    cur.execute(INSERT, row)
    expect_equal(scalar(cur, count, (1001,)), 1, "own uncommitted row inside the transaction")
    with other.cursor() as other_cur:
        expect_equal(scalar(other_cur, count, (1001,)), 0, "other connection sees uncommitted row")
    conn.rollback()
    expect_equal(scalar(cur, count, (1001,)), 0, "row present after ROLLBACK")

    row = (1002, "committed", Decimal("2.00"), datetime.datetime(2024, 5, 2), b"\x01", "kept")
    conn.begin()
    cur.execute(INSERT, row)
    conn.commit()
    expect_equal(scalar(cur, count, (1002,)), 1, "row missing after COMMIT")
    with other.cursor() as other_cur:
        expect_equal(scalar(other_cur, count, (1002,)), 1, "committed row seen by other connection")


def check_error(cur):
    try:
        cur.execute("SELECT * FROM py_missing_table")
    except pymysql.err.ProgrammingError as e:
        expect_equal(e.args[0], 1146, "errno for a missing table")
    else:
        raise CheckFailed("SELECT from a missing table did not raise ProgrammingError")
    expect_equal(scalar(cur, "SELECT 1"), 1, "SELECT 1 after an error")


def check_autocommit(conn, cur):
    expect_equal(scalar(cur, "SELECT @@autocommit"), 1, "@@autocommit at start")
    conn.autocommit(False)
    expect_equal(scalar(cur, "SELECT @@autocommit"), 0, "@@autocommit after autocommit(False)")
    conn.commit()
    conn.autocommit(True)
    expect_equal(scalar(cur, "SELECT @@autocommit"), 1, "@@autocommit after autocommit(True)")


def check_big_result(conn, cur):
    # Both servers stop recursive CTEs at 1000 levels by default (MariaDB silently).
    is_mariadb = "mariadb" in scalar(cur, "SELECT VERSION()").lower()
    limit = "max_recursive_iterations" if is_mariadb else "cte_max_recursion_depth"
    cur.execute(f"SET SESSION {limit} = {BIG_ROWS + 1}")
    sql = (
        "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM s WHERE n<%d) "
        "SELECT n, REPEAT('x', 100) FROM s" % BIG_ROWS
    )
    expected_sum = BIG_ROWS * (BIG_ROWS + 1) // 2
    cur.execute(sql)
    rows = cur.fetchall()
    expect_equal(len(rows), BIG_ROWS, "rows of the recursive CTE")
    expect_equal(sum(int(n) for n, _ in rows), expected_sum, "sum of the recursive CTE")
    check(all(pad == "x" * 100 for _, pad in rows), "REPEAT('x', 100) column mangled")

    # The same result streamed row by row (unbuffered cursor).
    with conn.cursor(pymysql.cursors.SSCursor) as stream:
        stream.execute(sql)
        count = total = 0
        for n, _ in stream:
            count += 1
            total += int(n)
    expect_equal(count, BIG_ROWS, "rows of the streamed recursive CTE")
    expect_equal(total, expected_sum, "sum of the streamed recursive CTE")
    expect_equal(scalar(cur, "SELECT 2"), 2, "SELECT after a streamed result")


def check_multi_statements(host, port, user, password, db):
    conn = connect(host, port, user, password, db, client_flag=CLIENT.MULTI_STATEMENTS)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1; SELECT 2")
            first = tuple(cur.fetchall())
            expect_equal(first, ((1,),), "first result set of 'SELECT 1; SELECT 2'")
            check(cur.nextset(), "no second result set for 'SELECT 1; SELECT 2'")
            second = tuple(cur.fetchall())
            expect_equal(second, ((2,),), "second result set of 'SELECT 1; SELECT 2'")
            check(not cur.nextset(), "unexpected third result set for 'SELECT 1; SELECT 2'")
            expect_equal(scalar(cur, "SELECT 3"), 3, "SELECT after a multi-statement")
    finally:
        conn.close()


def check_wrong_password(host, port, user, password, db):
    wrong = password + "-wrong" if password else "wrong-password"
    try:
        conn = connect(host, port, user, wrong, db)
    except pymysql.err.OperationalError as e:
        expect_equal(e.args[0], 1045, "errno for a wrong password")
    else:
        conn.close()
        raise CheckFailed("connecting with a wrong password succeeded")


def main(argv):
    if len(argv) != 6:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    host, port, user, password, db = argv[1], int(argv[2]), argv[3], argv[4], argv[5]

    conn = connect(host, port, user, password, db)
    other = connect(host, port, user, password, db)
    try:
        conn.select_db(db)  # COM_INIT_DB on top of the database in the handshake
        with conn.cursor() as cur:
            rows = check_round_trip(cur)
            check_update(cur, rows)
            check_transactions(conn, cur, other)
            check_error(cur)
            check_autocommit(conn, cur)
            check_big_result(conn, cur)
            cur.execute("DROP TABLE py_t")
    finally:
        other.close()
        conn.close()
    check_multi_statements(host, port, user, password, db)
    check_wrong_password(host, port, user, password, db)
    print("pymysql ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except CheckFailed as e:
        print(f"pymysql check failed: {e}", file=sys.stderr)
        sys.exit(1)
    except pymysql.err.MySQLError as e:
        print(f"pymysql check failed with an unexpected error: {e!r}", file=sys.stderr)
        sys.exit(1)
