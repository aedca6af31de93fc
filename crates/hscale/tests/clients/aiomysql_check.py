#!/usr/bin/env python3
"""Exercises hscale through aiomysql (asyncio) as applications use it, and
compares what it answers with what one MariaDB server answers.

Usage: python3 aiomysql_check.py HOST PORT USER PASSWORD DB REF_PORT REF_USER REF_PASSWORD REF_DB

HOST:PORT is hscale, with backends shard0 and shard1; DB must exist and be
empty. The script creates its tables there partitioned by `id` with MOD(2)
(even ids on shard0, odd ids on shard1). HOST:REF_PORT is one MariaDB server
(the reference); REF_DB must exist and be empty, and gets the same tables
unpartitioned. Each check runs its statements on both and requires the same
answer from both (rows, column descriptions, affected rows, insert ids,
status flags, error codes and messages) on top of the values it knows.
Exits non-zero naming the first mismatch; prints `aiomysql ok` when every
check passed. With AIOMYSQL_CHECK_SHOW=1 in the environment it also prints
what hscale answered to each compared observation.
"""

import asyncio
import datetime
import os
import sys
import time
import traceback
import warnings
from decimal import Decimal

import aiomysql

TASKS = 50
STATEMENTS_PER_TASK = 20  # 10 inserts and 10 point selects; then a count

ITEMS_DDL = """
CREATE TABLE aio_items (
  id INT NOT NULL PRIMARY KEY,
  task INT NOT NULL,
  val VARCHAR(64) NOT NULL,
  KEY (task)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
"""
T_DDL = """
CREATE TABLE aio_t (
  id INT NOT NULL PRIMARY KEY,
  k INT NOT NULL,
  name VARCHAR(40) NULL,
  amount DECIMAL(10,2) NOT NULL DEFAULT 0,
  created DATETIME NULL,
  note TEXT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
"""
SEQ_DDL = """
CREATE TABLE aio_seq (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(40) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
"""
TABLES = (("aio_items", ITEMS_DDL), ("aio_t", T_DDL), ("aio_seq", SEQ_DDL))
T_INSERT = "INSERT INTO aio_t (id, k, name, amount, created, note) VALUES (%s, %s, %s, %s, %s, %s)"
# The rows every check starts from: ids 1..20 (both partitions), names
# with non-ASCII text, a NULL name and note every few rows.
BASE = datetime.datetime(2024, 2, 29, 12, 30, 45)
T_ROWS = [
    (
        i,
        i % 4,
        None if i % 7 == 0 else ["Zoë ☃", "José", "日本語", "🙂 four bytes", "plain"][i % 5] + f" {i}",
        Decimal(f"{i * 3}.{i:02d}"),
        BASE + datetime.timedelta(days=i, seconds=i),
        None if i % 3 == 0 else f"note {i}",
    )
    for i in range(1, 21)
]


class CheckFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def expect_equal(actual, expected, what):
    check(
        type(actual) is type(expected) and actual == expected,
        f"{what}: expected {expected!r}, got {actual!r}",
    )


class Target:
    """hscale (partitioned tables) or the reference server (plain tables)."""

    def __init__(self, label, host, port, user, password, db, partitioned):
        self.label = label
        self.kwargs = dict(host=host, port=port, user=user, password=password, db=db,
                           charset="utf8mb4", connect_timeout=10)
        self.db = db
        self.partitioned = partitioned

    async def connect(self, **kwargs):
        return await aiomysql.connect(**{"autocommit": True, **self.kwargs, **kwargs})

    async def pool(self, **kwargs):
        return await aiomysql.create_pool(**{"autocommit": True, **self.kwargs, **kwargs})


def same(what, proxy, ref):
    """hscale's observations must be the reference server's; a mismatch
    names the first observation that differs."""
    for got, want in zip(proxy, ref):
        check(got == want, f"{what}: one server answered\n  {want!r}\nhscale answered\n  {got!r}")
    check(len(proxy) == len(ref), f"{what}: {len(ref)} observations on one server, {len(proxy)} through hscale")


async def both(proxy, ref, scenario, what):
    """Run `scenario(target)` on both targets; its observations must match."""
    got_ref = await scenario(ref)
    got_proxy = await scenario(proxy)
    if os.environ.get("AIOMYSQL_CHECK_SHOW"):
        for o in got_proxy:
            print(f"  {what}: {o!r}"[:300])
    same(what, got_proxy, got_ref)
    return got_proxy


async def scalar(cur, sql, args=None):
    await cur.execute(sql, args)
    rows = await cur.fetchall()
    check(len(rows) == 1 and len(rows[0]) == 1, f"{sql!r}: expected one value, got {rows!r}")
    return rows[0][0]


def error_of(e, target):
    """An error's code and message, with the reference's database named as hscale's."""
    code, message = e.args[0], str(e.args[1]) if len(e.args) > 1 else ""
    return (type(e).__name__, code, message.replace(target.db, "<db>"))


async def setup(target):
    conn = await target.connect()
    async with conn.cursor() as cur:
        for name, ddl in TABLES:
            await cur.execute(f"DROP TABLE IF EXISTS {name}")
            await cur.execute(ddl)
            if target.partitioned:
                await cur.execute(
                    f"HSCALE SETUP_TABLE('{name}', 'id', '{name}_even', 'shard0', 'MOD(2)')"
                )
                await cur.execute(f"HSCALE ADD_PARTITION('{name}', 'odd', '1', 'shard1')")
        await cur.executemany(T_INSERT, T_ROWS)
        expect_equal(cur.rowcount, len(T_ROWS), f"{target.label}: rows of the first aio_t insert")
    conn.close()


# --- a pool with many coroutines --------------------------------------------

async def pool_task(pool, task):
    """10 inserts by key (ids alternate between the partitions), each read
    back by key; then the task's count over both partitions."""
    ids = [task * 100 + j for j in range(STATEMENTS_PER_TASK // 2)]
    for n, row_id in enumerate(ids, 1):
        async with pool.acquire() as conn:
            async with conn.cursor() as cur:
                val = f"task {task} row {row_id} ☃"
                await cur.execute(
                    "INSERT INTO aio_items (id, task, val) VALUES (%s, %s, %s)", (row_id, task, val)
                )
                expect_equal(cur.rowcount, 1, f"task {task}: rowcount of INSERT id={row_id}")
                expect_equal(cur.lastrowid, 0, f"task {task}: lastrowid of INSERT id={row_id}")
        # Another acquire: maybe another connection of the pool.
        async with pool.acquire() as conn:
            async with conn.cursor() as cur:
                await cur.execute("SELECT id, task, val FROM aio_items WHERE id = %s", (row_id,))
                rows = await cur.fetchall()
                expect_equal(rows, ((row_id, task, val),), f"task {task}: point select id={row_id}")
        if n % 5 == 0:
            async with pool.acquire() as conn:
                async with conn.cursor() as cur:
                    count = await scalar(cur, "SELECT COUNT(*) FROM aio_items WHERE task = %s", (task,))
                    expect_equal(count, n, f"task {task}: its rows after {n} inserts")
    return len(ids)


async def check_pool_concurrency(proxy):
    pool = await proxy.pool(minsize=4, maxsize=10)
    try:
        check(pool.size >= 4, f"pool minsize: {pool.size} connections")
        started = time.monotonic()
        done = await asyncio.gather(*(pool_task(pool, t) for t in range(1, TASKS + 1)))
        elapsed = time.monotonic() - started
        expect_equal(sum(done), TASKS * STATEMENTS_PER_TASK // 2, "inserts of all tasks")
        check(pool.size <= 10, f"pool grew past maxsize: {pool.size}")
        async with pool.acquire() as conn:
            async with conn.cursor() as cur:
                await cur.execute(
                    "SELECT COUNT(*), CAST(SUM(id) AS SIGNED), COUNT(DISTINCT task), "
                    "SUM(id % 2 = 1) FROM aio_items"
                )
                got = await cur.fetchall()
        ids = [t * 100 + j for t in range(1, TASKS + 1) for j in range(STATEMENTS_PER_TASK // 2)]
        want = ((len(ids), sum(ids), TASKS, Decimal(sum(i % 2 for i in ids))),)
        expect_equal(got, want, "count, sum, tasks and odd ids of aio_items after the tasks")
        print(f"pool: {TASKS} tasks x {STATEMENTS_PER_TASK} statements in {elapsed:.2f}s")
    finally:
        pool.close()
        await pool.wait_closed()


# --- transactions ------------------------------------------------------------

async def txn_scenario(target):
    """begin() / rollback() / commit() over rows on both partitions, seen
    from the transaction's connection and from another one; and a
    connection given back to the pool inside a transaction."""
    obs = []
    pool = await target.pool(minsize=2, maxsize=2)
    try:
        async with pool.acquire() as conn, pool.acquire() as other:
            cur, ocur = await conn.cursor(), await other.cursor()
            count = "SELECT COUNT(*) FROM aio_t WHERE id IN (%s, %s, %s, %s)"
            mine = (100, 101, 2, 3)  # two new rows, one existing row per partition

            await conn.begin()
            obs.append(("in trans after begin", conn.get_transaction_status()))
            await cur.execute(T_INSERT, (100, 9, "txn even", Decimal("1.00"), None, None))
            obs.append(("insert even", cur.rowcount, cur.lastrowid))
            await cur.execute(T_INSERT, (101, 9, "txn odd", Decimal("2.00"), None, None))
            obs.append(("insert odd", cur.rowcount, cur.lastrowid))
            await cur.execute("UPDATE aio_t SET amount = amount + 100 WHERE id IN (2, 3)")
            obs.append(("update both", cur.rowcount, cur.lastrowid))
            own = await scalar(cur, count, mine)
            expect_equal(own, 4, f"{target.label}: own rows inside the transaction")
            await cur.execute("SELECT id, name, amount FROM aio_t WHERE id IN (2, 3, 100, 101) ORDER BY id")
            obs.append(("own read", await cur.fetchall()))
            expect_equal(await scalar(ocur, count, mine), 2, f"{target.label}: uncommitted rows seen by another")
            obs.append(("in trans before rollback", conn.get_transaction_status()))
            await conn.rollback()
            obs.append(("in trans after rollback", conn.get_transaction_status()))
            expect_equal(await scalar(ocur, count, mine), 2, f"{target.label}: rows left by rollback")
            await ocur.execute("SELECT id, amount FROM aio_t WHERE id IN (2, 3) ORDER BY id")
            after = await ocur.fetchall()
            expect_equal(after, ((2, Decimal("6.02")), (3, Decimal("9.03"))), f"{target.label}: amounts after rollback")

            await conn.begin()
            await cur.execute(T_INSERT, (102, 9, "kept even", Decimal("3.00"), None, None))
            await cur.execute(T_INSERT, (103, 9, "kept odd", Decimal("4.00"), None, None))
            await cur.execute("DELETE FROM aio_t WHERE id IN (102, 103) AND k = 0")
            obs.append(("delete nothing", cur.rowcount))
            await conn.commit()
            obs.append(("in trans after commit", conn.get_transaction_status()))
            await ocur.execute("SELECT id, name FROM aio_t WHERE id IN (102, 103) ORDER BY id")
            seen = await ocur.fetchall()
            expect_equal(seen, ((102, "kept even"), (103, "kept odd")), f"{target.label}: rows after commit")
            obs.append(("committed", seen))
            await cur.close()
            await ocur.close()

        # A connection given back inside a transaction is closed by the
        # pool (aiomysql reads SERVER_STATUS_IN_TRANS); its work is lost.
        async with pool.acquire() as conn:
            await conn.begin()
            async with conn.cursor() as cur:
                await cur.execute(T_INSERT, (104, 9, "forgotten", Decimal("5.00"), None, None))
                await cur.execute(T_INSERT, (105, 9, "forgotten", Decimal("6.00"), None, None))
            obs.append(("in trans at release", conn.get_transaction_status()))
            held = conn
        check(held.closed, f"{target.label}: the pool kept a connection inside a transaction")
        for _ in range(100):
            async with pool.acquire() as conn:
                async with conn.cursor() as cur:
                    left = await scalar(cur, "SELECT COUNT(*) FROM aio_t WHERE id IN (104, 105)")
            if left == 0:
                break
            await asyncio.sleep(0.05)
        expect_equal(left, 0, f"{target.label}: rows of a transaction dropped by the pool")
        obs.append(("dropped transaction's rows", left))

        # autocommit off (aiomysql's default): a read opens a transaction.
        conn = await target.connect(autocommit=False)
        async with conn.cursor() as cur:
            obs.append(("autocommit off: in trans at start", conn.get_transaction_status()))
            await cur.execute("SELECT name FROM aio_t WHERE id = 5")
            obs.append(("autocommit off: point read", await cur.fetchall(), conn.get_transaction_status()))
            await cur.execute("SELECT COUNT(*) FROM aio_t")
            obs.append(("autocommit off: count", await cur.fetchall(), conn.get_transaction_status()))
            await conn.commit()
            obs.append(("autocommit off: after commit", conn.get_transaction_status()))
        conn.close()
    finally:
        pool.close()
        await pool.wait_closed()
    return obs


async def check_transactions(proxy, ref):
    obs = {o[0]: o[1:] for o in await both(proxy, ref, txn_scenario, "transactions")}
    expect_equal(obs["in trans after begin"], (True,), "IN_TRANS after BEGIN")
    expect_equal(obs["in trans after rollback"], (False,), "IN_TRANS after ROLLBACK")
    expect_equal(obs["in trans after commit"], (False,), "IN_TRANS after COMMIT")
    expect_equal(obs["in trans at release"], (True,), "IN_TRANS when given back to the pool")


# --- executemany --------------------------------------------------------------

async def many_scenario(target):
    obs = []
    conn = await target.connect()
    async with conn.cursor() as cur:
        # Explicit keys over both partitions: one multi-row INSERT.
        rows = [(200 + i, i % 3, f"many {i}", Decimal(i), None, "m") for i in range(15)]
        await cur.executemany(T_INSERT, rows)
        expect_equal(cur.rowcount, 15, f"{target.label}: executemany rowcount")
        obs.append(("explicit keys", cur.rowcount, cur.lastrowid))
        await cur.execute("SELECT COUNT(*), CAST(SUM(id) AS SIGNED) FROM aio_t WHERE note = 'm'")
        obs.append(("explicit keys stored", await cur.fetchall()))

        # Generated ids (AUTO_INCREMENT) on a fresh table: the first id is
        # the insert id, the ids of one statement are consecutive.
        names = [f"seq {i}" for i in range(7)]
        await cur.executemany("INSERT INTO aio_seq (name) VALUES (%s)", [(n,) for n in names])
        expect_equal(cur.rowcount, 7, f"{target.label}: executemany rowcount on aio_seq")
        expect_equal(cur.lastrowid, 1, f"{target.label}: lastrowid of the first generated ids")
        obs.append(("generated ids", cur.rowcount, cur.lastrowid))
        await cur.execute("SELECT id, name FROM aio_seq ORDER BY id")
        got = await cur.fetchall()
        expect_equal(got, tuple((i + 1, n) for i, n in enumerate(names)), f"{target.label}: generated rows")
        obs.append(("generated rows", got))
        expect_equal(await scalar(cur, "SELECT LAST_INSERT_ID()"), 1, f"{target.label}: LAST_INSERT_ID()")

        # A second batch: its first id is the insert id, its ids are
        # consecutive and above the first batch's (hscale may leave a gap
        # between statements: ids come in blocks, see docs/src/sequences.md).
        more = [f"more {i}" for i in range(5)]
        await cur.executemany("INSERT INTO aio_seq (name) VALUES (%s)", [(n,) for n in more])
        expect_equal(cur.rowcount, 5, f"{target.label}: rowcount of the second batch")
        first = cur.lastrowid
        check(first > 7, f"{target.label}: second batch's lastrowid {first} not above the first batch")
        await cur.execute("SELECT id, name FROM aio_seq WHERE id > 7 ORDER BY id")
        got = await cur.fetchall()
        expect_equal(got, tuple((first + i, n) for i, n in enumerate(more)), f"{target.label}: second batch's rows")
        expect_equal(await scalar(cur, "SELECT LAST_INSERT_ID()"), first, f"{target.label}: LAST_INSERT_ID() of the second batch")

        # executemany of an UPDATE: one statement per row, rowcount summed.
        await cur.executemany("UPDATE aio_t SET k = k + 10 WHERE id = %s", [(i,) for i in (200, 201, 202, 999)])
        obs.append(("update many", cur.rowcount))
        expect_equal(cur.rowcount, 3, f"{target.label}: rowcount of executemany UPDATE")

        # Batches split by max_stmt_length: several multi-row INSERTs.
        cur.max_stmt_length = 2000
        rows = [(300 + i, 7, f"split {i}", Decimal("0.50"), BASE, "s" * 40) for i in range(60)]
        await cur.executemany(T_INSERT, rows)
        expect_equal(cur.rowcount, 60, f"{target.label}: rowcount of a split executemany")
        obs.append(("split batches", cur.rowcount, cur.lastrowid))
        await cur.execute("SELECT COUNT(*), MIN(id), MAX(id) FROM aio_t WHERE note LIKE 'sss%'")
        obs.append(("split stored", await cur.fetchall()))
    conn.close()
    return obs


async def check_executemany(proxy, ref):
    await both(proxy, ref, many_scenario, "executemany")


# --- DictCursor and SSCursor --------------------------------------------------

READ = ("SELECT id, k, name AS who, amount, amount * 2 AS doubled, created, note FROM aio_t "
        "WHERE id <= 20 OR id >= 300 ORDER BY k DESC, id")


async def cursors_scenario(target):
    obs = []
    conn = await target.connect()
    async with conn.cursor(aiomysql.DictCursor) as cur:
        n = await cur.execute(READ)
        rows = await cur.fetchall()
        expect_equal(n, 80, f"{target.label}: DictCursor row count")
        expect_equal(len(rows), 80, f"{target.label}: DictCursor rows")
        expect_equal(list(rows[0].keys()), ["id", "k", "who", "amount", "doubled", "created", "note"],
                     f"{target.label}: DictCursor keys")
        keys = [(r["k"], r["id"]) for r in rows]
        check(keys == sorted(keys, key=lambda x: (-x[0], x[1])), f"{target.label}: DictCursor order {keys}")
        obs.append(("dict rows", rows))
        obs.append(("dict description", cur.description))
        one = {r["id"]: r for r in rows}[2]
        expect_equal(one["who"], "日本語 2", f"{target.label}: name of id 2")
        expect_equal(one["doubled"], Decimal("12.04"), f"{target.label}: doubled amount of id 2")
        expect_equal(one["note"], "note 2", f"{target.label}: note of id 2")
        expect_equal({r["id"]: r for r in rows}[3]["note"], None, f"{target.label}: note of id 3")

    async with conn.cursor(aiomysql.SSCursor) as cur:
        await cur.execute(READ)
        obs.append(("streamed description", cur.description))
        names = [d[0] for d in cur.description]
        expect_equal(names, ["id", "k", "who", "amount", "doubled", "created", "note"], f"{target.label}: SSCursor columns")
        first = await cur.fetchmany(7)
        rest = []
        while True:
            row = await cur.fetchone()
            if row is None:
                break
            rest.append(row)
        streamed = list(first) + rest
        expect_equal(len(streamed), 80, f"{target.label}: SSCursor rows")
        obs.append(("streamed rows", streamed))

        # A streamed read abandoned half way; the connection goes on.
        await cur.execute(READ)
        half = await cur.fetchmany(30)
        expect_equal(len(half), 30, f"{target.label}: half a streamed read")
    async with conn.cursor(aiomysql.SSDictCursor) as cur:
        await cur.execute("SELECT k, COUNT(*) AS n, SUM(amount) AS total FROM aio_t GROUP BY k ORDER BY k")
        grouped = [row async for row in cur]
        obs.append(("streamed groups", grouped))
        expect_equal([g["k"] for g in grouped], [0, 1, 2, 3, 7, 9, 10, 11, 12], f"{target.label}: groups")
    async with conn.cursor() as cur:
        expect_equal(await scalar(cur, "SELECT COUNT(*) FROM aio_t"), 97, f"{target.label}: rows after the streamed reads")
    conn.close()
    return obs


async def check_cursors(proxy, ref):
    obs = await both(proxy, ref, cursors_scenario, "DictCursor and SSCursor")
    streamed = dict(obs)["streamed rows"]
    dicts = dict(obs)["dict rows"]
    expect_equal([tuple(d.values()) for d in dicts], streamed, "streamed rows against DictCursor rows")


# --- errors -------------------------------------------------------------------

async def errors_scenario(target):
    obs = []
    conn = await target.connect()
    async with conn.cursor() as cur:
        for sql, args in [
            ("INSERT INTO aio_t (id, k) VALUES (%s, %s)", (4, 0)),  # shard0
            ("INSERT INTO aio_t (id, k) VALUES (%s, %s)", (5, 0)),  # shard1
            # (Not `SELEC id FROM aio_t` nor an INSERT cut short inside its
            # VALUES row: hscale refuses those with 1235 where one server
            # answers 1064.)
            ("SELECT * FROM aio_t ORDER BY", None),
            ("SELECT id FROM aio_t WHERE", None),
            ("UPDATE aio_t SET k = WHERE id = 1", None),
        ]:
            try:
                await cur.execute(sql, args)
                raise CheckFailed(f"{target.label}: {sql!r} did not fail")
            except (aiomysql.IntegrityError, aiomysql.ProgrammingError) as e:
                obs.append((sql, error_of(e, target)))
            expect_equal(await scalar(cur, "SELECT COUNT(*) FROM aio_t WHERE id <= 20"), 20,
                         f"{target.label}: the connection after {sql!r}")
        codes = [o[1][:2] for o in obs]
        expect_equal(codes, [("IntegrityError", 1062)] * 2 + [("ProgrammingError", 1064)] * 3,
                     f"{target.label}: error classes and codes")

        # A duplicate in a multi-row INSERT over both partitions: nothing of it stays.
        try:
            await cur.executemany(T_INSERT, [(400, 1, "a", 0, None, None), (401, 1, "b", 0, None, None),
                                             (3, 1, "dup", 0, None, None)])
            raise CheckFailed(f"{target.label}: duplicate in executemany accepted")
        except aiomysql.IntegrityError as e:
            obs.append(("executemany duplicate", error_of(e, target)))
        expect_equal(await scalar(cur, "SELECT COUNT(*) FROM aio_t WHERE id IN (400, 401)"), 0,
                     f"{target.label}: rows of a failed multi-row INSERT")

        # Inside a transaction: the failed statement is undone, the rest stays.
        await conn.begin()
        await cur.execute(T_INSERT, (402, 1, "in txn", 0, None, None))
        await cur.execute(T_INSERT, (403, 1, "in txn", 0, None, None))
        try:
            await cur.executemany(T_INSERT, [(404, 1, "undone", 0, None, None), (2, 1, "dup", 0, None, None)])
            raise CheckFailed(f"{target.label}: duplicate accepted in a transaction")
        except aiomysql.IntegrityError as e:
            obs.append(("duplicate in transaction", error_of(e, target)))
        obs.append(("in trans after the error", conn.get_transaction_status()))
        try:
            await cur.execute("SELEC 2")
            raise CheckFailed(f"{target.label}: syntax error accepted in a transaction")
        except aiomysql.ProgrammingError as e:
            obs.append(("syntax in transaction", error_of(e, target)))
        await conn.commit()
        await cur.execute("SELECT id, name FROM aio_t WHERE id IN (402, 403, 404) ORDER BY id")
        kept = await cur.fetchall()
        expect_equal(kept, ((402, "in txn"), (403, "in txn")), f"{target.label}: rows around failed statements")
        obs.append(("kept", kept))
    conn.close()
    return obs


async def check_errors(proxy, ref):
    await both(proxy, ref, errors_scenario, "errors")


# --- killed connections: ping(reconnect=True) and the pool -------------------

async def wait_eof(conn):
    for _ in range(200):
        if conn._reader.at_eof() or conn._reader.exception():
            return True
        await asyncio.sleep(0.025)
    return False


async def reconnect_scenario(target):
    obs = []
    admin = await target.connect()
    acur = await admin.cursor()

    conn = await target.connect()
    async with conn.cursor() as cur:
        first = await scalar(cur, "SELECT CONNECTION_ID()")
        await acur.execute("KILL %s", (first,))
        obs.append(("kill", acur.rowcount))
        obs.append(("socket closed after KILL", await wait_eof(conn)))
        try:
            await cur.execute("SELECT 1")
            obs.append(("query on a killed connection", "answered"))
        except aiomysql.OperationalError as e:
            obs.append(("query on a killed connection", e.args[0]))
        await conn.ping(reconnect=True)
        second = await scalar(cur, "SELECT CONNECTION_ID()")
        check(second != first, f"{target.label}: ping(reconnect=True) kept the killed id {first}")
        expect_equal(await scalar(cur, "SELECT name FROM aio_t WHERE id = 1"), "José 1",
                     f"{target.label}: a read after ping(reconnect=True)")
        await conn.ping(reconnect=False)  # alive: no reconnect
        expect_equal(await scalar(cur, "SELECT CONNECTION_ID()"), second, f"{target.label}: id after a live ping")
    conn.close()

    # The pool drops a connection the server closed and opens another.
    pool = await target.pool(minsize=1, maxsize=1)
    async with pool.acquire() as conn:
        async with conn.cursor() as cur:
            victim = await scalar(cur, "SELECT CONNECTION_ID()")
    await acur.execute("KILL %s", (victim,))
    obs.append(("pooled socket closed after KILL", await wait_eof(conn)))
    async with pool.acquire() as conn:
        async with conn.cursor() as cur:
            fresh = await scalar(cur, "SELECT CONNECTION_ID()")
            check(fresh != victim, f"{target.label}: the pool handed out the killed connection {victim}")
            expect_equal(await scalar(cur, "SELECT COUNT(*) FROM aio_t WHERE id IN (1, 2)"), 2,
                         f"{target.label}: a read on the pool's new connection")
    pool.close()
    await pool.wait_closed()

    # pool_recycle: an idle connection older than it is replaced.
    pool = await target.pool(minsize=1, maxsize=1, pool_recycle=0.2)
    async with pool.acquire() as conn:
        async with conn.cursor() as cur:
            old = await scalar(cur, "SELECT CONNECTION_ID()")
    await asyncio.sleep(0.5)
    async with pool.acquire() as conn:
        async with conn.cursor() as cur:
            new = await scalar(cur, "SELECT CONNECTION_ID()")
            check(new != old, f"{target.label}: pool_recycle kept connection {old}")
            expect_equal(await scalar(cur, "SELECT k FROM aio_t WHERE id = 3"), 3,
                         f"{target.label}: a read on a recycled pool's connection")
    pool.close()
    await pool.wait_closed()
    await acur.close()
    admin.close()
    return obs


async def check_reconnect(proxy, ref):
    obs = await both(proxy, ref, reconnect_scenario, "killed connections")
    expect_equal(dict(obs)["socket closed after KILL"], True, "socket closed after KILL")


async def run(argv):
    host, port, user, password, db = argv[1], int(argv[2]), argv[3], argv[4], argv[5]
    ref_port, ref_user, ref_password, ref_db = int(argv[6]), argv[7], argv[8], argv[9]
    proxy = Target("hscale", host, port, user, password, db, True)
    ref = Target("one server", host, ref_port, ref_user, ref_password, ref_db, False)
    # DROP TABLE IF EXISTS warns about the missing tables.
    warnings.filterwarnings("ignore", category=aiomysql.Warning)
    for target in (proxy, ref):
        await setup(target)
    for name, step in [
        ("pool", lambda: check_pool_concurrency(proxy)),
        ("transactions", lambda: check_transactions(proxy, ref)),
        ("executemany", lambda: check_executemany(proxy, ref)),
        ("cursors", lambda: check_cursors(proxy, ref)),
        ("errors", lambda: check_errors(proxy, ref)),
        ("reconnect", lambda: check_reconnect(proxy, ref)),
    ]:
        started = time.monotonic()
        print(f"{name}: ...", flush=True)
        await step()
        print(f"{name}: ok in {time.monotonic() - started:.2f}s")


def main(argv):
    if len(argv) != 10:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    asyncio.run(asyncio.wait_for(run(argv), timeout=300))
    print("aiomysql ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except CheckFailed as e:
        print(f"aiomysql check failed: {e}", file=sys.stderr)
        sys.exit(1)
    except aiomysql.MySQLError as e:
        traceback.print_exc()
        print(f"aiomysql check failed with an unexpected error: {e!r}", file=sys.stderr)
        sys.exit(1)
