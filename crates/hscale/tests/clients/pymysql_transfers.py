#!/usr/bin/env python3
"""An ORM-style PyMySQL session through hscale: transfers across two backends.

Usage: python3 pymysql_transfers.py HOST PORT USER PASSWORD DB

DB must exist and be empty; hscale must have backends shard0 and shard1.
The script creates `accounts` partitioned by id with MOD(2) (even ids on
shard0, odd ids on shard1), then works as an ORM does: one connection with
autocommit off (PyMySQL's default), statements on both backends, commit()
and rollback(). A second, autocommit connection checks what others see and
that the total never changes. Exits non-zero naming the first mismatch;
prints `pymysql transfers ok` when every check passed.
"""

import random
import sys

import pymysql

ACCOUNTS = 10
TOTAL = 100 * ACCOUNTS


class CheckFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def connect(host, port, user, password, db, autocommit):
    return pymysql.connect(
        host=host,
        port=port,
        user=user,
        password=password,
        database=db,
        autocommit=autocommit,
    )


def balance(cur, account):
    cur.execute("SELECT balance FROM accounts WHERE id = %s", (account,))
    return cur.fetchone()[0]


def total(cur):
    cur.execute("SELECT CAST(SUM(balance) AS SIGNED) FROM accounts")
    return cur.fetchone()[0]


def transfer(cur, src, dst, amount):
    cur.execute("UPDATE accounts SET balance = balance - %s WHERE id = %s", (amount, src))
    cur.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s", (amount, dst))


def main(argv):
    if len(argv) != 6:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    host, port, user, password, db = argv[1], int(argv[2]), argv[3], argv[4], argv[5]

    admin = connect(host, port, user, password, db, True)
    with admin.cursor() as a:
        a.execute("CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance INT NOT NULL)")
        a.execute("HSCALE SETUP_TABLE('accounts', 'id', 'accounts_even', 'shard0', 'MOD(2)')")
        a.execute("HSCALE ADD_PARTITION('accounts', 'odd', '1', 'shard1')")
        a.executemany(
            "INSERT INTO accounts (id, balance) VALUES (%s, 100)",
            [(i,) for i in range(1, ACCOUNTS + 1)],
        )

    orm = connect(host, port, user, password, db, False)
    cur = orm.cursor()
    cur.execute("SELECT @@autocommit")
    check(cur.fetchone()[0] == 0, "PyMySQL's session should have autocommit off")

    # A transfer from an odd (shard1) to an even (shard0) account, committed.
    with admin.cursor() as a:
        transfer(cur, 1, 2, 30)
        check(balance(cur, 1) == 70 and balance(cur, 2) == 130, "own writes not seen")
        # (No ORDER BY: a merged read inside a transaction is refused for now, 1235.)
        cur.execute("SELECT id, balance FROM accounts WHERE id IN (1, 2)")
        rows = tuple(sorted(cur.fetchall()))
        check(rows == ((1, 70), (2, 130)), f"own writes not seen over both partitions: {rows!r}")
        check(balance(a, 1) == 100 and balance(a, 2) == 100, "uncommitted writes seen by another")
        orm.commit()
        check(balance(a, 1) == 70 and balance(a, 2) == 130, "commit not seen by another")

        # Rolled back: neither side changes.
        transfer(cur, 3, 4, 50)
        orm.rollback()
        check(balance(a, 3) == 100 and balance(a, 4) == 100, "rollback left a change")

        # The next transaction starts on the other backend.
        transfer(cur, 6, 5, 10)
        orm.commit()
        check(balance(a, 6) == 90 and balance(a, 5) == 110, "second commit not seen")

        # An error inside a transaction (a duplicate key on one backend)
        # leaves the transaction open; the application rolls back.
        transfer(cur, 7, 8, 5)
        try:
            cur.execute("INSERT INTO accounts (id, balance) VALUES (2, 0)")
            raise CheckFailed("duplicate key accepted")
        except pymysql.err.IntegrityError as e:
            check(e.args[0] == 1062, f"expected 1062, got {e.args!r}")
        orm.rollback()
        check(balance(a, 7) == 100 and balance(a, 8) == 100, "rollback after an error left a change")

        # Many transfers, committed or rolled back at random.
        rng = random.Random(13)
        committed = 0
        for _ in range(60):
            src, dst = rng.sample(range(1, ACCOUNTS + 1), 2)
            transfer(cur, src, dst, rng.randint(1, 20))
            if rng.random() < 0.3:
                orm.rollback()
            else:
                orm.commit()
                committed += 1
        check(committed > 20, f"only {committed} transfers committed")
        check(total(a) == TOTAL, f"total changed: {total(a)}")

    # Statements over both partitions in the ORM's transaction: rolled back
    # whole; one that fails on one partition is undone alone and the
    # transaction goes on to commit the rest.
    with admin.cursor() as a:
        before = {i: balance(a, i) for i in (1, 2, 3, 4)}
        cur.execute("UPDATE accounts SET balance = balance + 5 WHERE id IN (1, 2, 3, 4)")
        check(cur.rowcount == 4, f"affected {cur.rowcount}")
        cur.execute("UPDATE accounts SET balance = balance - 7 WHERE id IN (3, 4)")
        orm.rollback()
        after = {i: balance(a, i) for i in (1, 2, 3, 4)}
        check(after == before, f"rollback over both partitions left a change: {after} != {before}")
        transfer(cur, 1, 2, 3)
        try:
            cur.execute(
                "UPDATE accounts SET balance = IF(id = 4, NULL, balance + 1000) WHERE id IN (1, 2, 3, 4)"
            )
            raise CheckFailed("NULL into a NOT NULL column accepted")
        except pymysql.err.IntegrityError as e:
            check(e.args[0] == 1048, f"expected 1048, got {e.args!r}")
        mine = {i: balance(cur, i) for i in (1, 2, 3, 4)}
        want = {1: before[1] - 3, 2: before[2] + 3, 3: before[3], 4: before[4]}
        check(mine == want, f"a failed statement left part of itself: {mine} != {want}")
        orm.commit()
        after = {i: balance(a, i) for i in (1, 2, 3, 4)}
        check(after == want, f"commit after a failed statement: {after} != {want}")
        check(total(a) == TOTAL, f"total changed: {total(a)}")

    # begin() on the same connection works the same way.
    orm.begin()
    transfer(cur, 9, 10, 1)
    orm.commit()
    with admin.cursor() as a:
        check(total(a) == TOTAL, f"total changed after begin(): {total(a)}")
    cur.close()
    orm.close()
    admin.close()
    print("pymysql transfers ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except CheckFailed as e:
        print(f"pymysql transfers check failed: {e}", file=sys.stderr)
        sys.exit(1)
