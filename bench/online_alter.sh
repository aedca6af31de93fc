#!/usr/bin/env bash
# An online ALTER TABLE of a partitioned table under write load (issue 32
# item 2).
#
# Two backends. `oa.t` (id BIGINT PK, k INT, payload VARCHAR(100), v INT)
# is partitioned with MOD(2) on id: p0 on shard0, p1 on shard1, the (empty)
# default partition on shard0. ROWS rows (half in each partition) are
# loaded directly into the physical tables on the backends (names from
# HSCALE SHOW PARTITIONS). WRITERS client processes then write through the
# proxy as fast as they can, each statement autocommitted and timed:
# UPDATE ... SET v = v + 1 of a random loaded row (70%) or an INSERT of a
# new row (30%). After BEFORE s measured,
#   ALTER TABLE t MODIFY v BIGINT NOT NULL, ADD COLUMN added INT NOT NULL DEFAULT 7
# (a column type change: MariaDB runs it by copying the table, so hscale
# runs it online) goes through the proxy while the writers go on, then
# AFTER s more.
#
# Reported: copy rate (rows the ALTER answered / its seconds), write
# throughput during the ALTER over before it, the longest single write
# latency the clients saw during the ALTER (any statement that overlapped
# it) next to the operation's own longest_pause_ms (HSCALE SHOW
# OPERATIONS: the cutover), and p99 latencies. Afterwards the backends are
# checked directly: per partition COUNT(*) = loaded + inserts the clients
# saw succeed, SUM(v) = updates the clients saw change a row, every row's
# `added` is 7, every physical table has the new definition, and no
# capture trigger, changelog or retired table is left.
#
# Markdown on stdout, progress on stderr. Exits 1 if the ALTER or a check
# fails; the aims (longest write pause <= 100 ms, throughput during the
# change >= 0.7 of before) are reported, not enforced.
#
# Environment: ROWS (default 1000000), WRITERS (default 16), BEFORE
# (default 10), AFTER (default 5), COPY_RATE (`[proxy]
# change_copy_rows_per_s`, default 0: no limit), BUFFER_POOL_MB (default
# 512), HSCALE (binary, default ./target/release/hscale).
#
# Run: cargo build --release && bench/online_alter.sh > /tmp/oa.md
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"
export RUST_LOG=${RUST_LOG:-info,hscale::admin::change=debug}

ROWS=${ROWS:-1000000}
WRITERS=${WRITERS:-16}
BEFORE=${BEFORE:-10}
AFTER=${AFTER:-5}
HSCALE=${HSCALE:-./target/release/hscale}
COPY_RATE=${COPY_RATE:-0}
BUFFER_POOL_MB=${BUFFER_POOL_MB:-512}
PLAYGROUND_ARGS="--buffer-pool-mb $BUFFER_POOL_MB"
if [[ $COPY_RATE != 0 ]]; then PLAYGROUND_ARGS="$PLAYGROUND_ARGS --copy-rows-per-s $COPY_RATE"; fi

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb python3
python3 -c 'import pymysql' 2>/dev/null || die "PyMySQL not found (run: make deps)"
start_playground 2 online_alter

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
backend() { local b=$1; shift; mariadb -h127.0.0.1 -P"${BACKEND_PORTS[$b]}" -uhscale -phscale --skip-ssl "$@"; }

log "creating oa.t, MOD(2) on id: p0 on shard0, p1 on shard1"
proxy -e "CREATE DATABASE oa; CREATE TABLE oa.t (id BIGINT NOT NULL PRIMARY KEY, k INT NOT NULL, payload VARCHAR(100) NOT NULL, v INT NOT NULL)"
proxy -e "HSCALE SETUP_TABLE('oa.t', 'id', 't_default', 'shard0', 'MOD(2)')" >/dev/null
proxy -e "HSCALE ADD_PARTITION('oa.t', 'p0', '0', 'shard0')" >/dev/null
proxy -e "HSCALE ADD_PARTITION('oa.t', 'p1', '1', 'shard1')" >/dev/null

# physical PARTITION: "backend-index physical-table" from HSCALE SHOW PARTITIONS.
physical() {
  proxy -N --batch -e "HSCALE SHOW PARTITIONS('oa.t')" |
    awk -F'\t' -v p="$1" '$2 == p { sub(/^shard/, "", $4); print $4, $5 }'
}

HALF=$((ROWS / 2))
for value in 0 1; do
  read -r b table <<<"$(physical "p$value")"
  [[ -n "$table" ]] || die "no physical table for p$value"
  log "loading $HALF rows into p$value ($table on shard$b)"
  # Row i of value r: id = 2 * i + r, k = i, a 65-character payload, v = 0.
  backend "$b" oa -e "INSERT INTO $table SELECT 2 * seq + $value, seq, CONCAT(MD5(seq), '-', LEFT(SHA1(seq), 32)), 0 FROM seq_0_to_$((HALF - 1))"
done

status=0
python3 - "$PORT" "${BACKEND_PORTS[0]}" "${BACKEND_PORTS[1]}" "$HALF" "$WRITERS" "$BEFORE" "$AFTER" <<'PY' || status=$?
import multiprocessing as mp
import random
import sys
import time
from array import array

import pymysql

port, shard0, shard1, half, writers, before, after = map(int, sys.argv[1:8])
ALTER = ("ALTER TABLE t MODIFY v BIGINT NOT NULL, "
         "ADD COLUMN added INT NOT NULL DEFAULT 7")


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def proxy_conn():
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                           database="oa", autocommit=True)


def backend_conn(p):
    return pymysql.connect(host="127.0.0.1", port=p, user="hscale", password="hscale",
                           database="oa", autocommit=True)


def writer(w, stop, out):
    rng = random.Random(w)
    cur = proxy_conn().cursor()
    starts, ends = array("q"), array("q")
    upd, ins, errors = [0, 0], [0, 0], {}
    j = 0
    base = 10_000_000 * (w + 1)
    while not stop.is_set():
        if rng.random() < 0.7:
            i = rng.randrange(2 * half)
            sql, kind = "UPDATE t SET v = v + 1 WHERE id = %d" % i, 0
        else:
            i = base + j
            j += 1
            sql, kind = ("INSERT INTO t (id, k, payload, v) VALUES (%d, %d, 'w%d', 0)"
                         % (i, j, w)), 1
        t0 = time.monotonic_ns()
        try:
            n = cur.execute(sql)
            if kind == 0:
                upd[i % 2] += n
            else:
                ins[i % 2] += 1
        except pymysql.err.MySQLError as e:
            code = e.args[0] if e.args else -1
            errors[code] = errors.get(code, 0) + 1
        starts.append(t0)
        ends.append(time.monotonic_ns())
    out.send((starts.tobytes(), ends.tobytes(), upd, ins, errors))
    out.close()


ctx = mp.get_context("fork")
stop = ctx.Event()
pipes, procs = [], []
for w in range(writers):
    rd, wr = ctx.Pipe(duplex=False)
    p = ctx.Process(target=writer, args=(w, stop, wr), daemon=True)
    p.start()
    wr.close()
    pipes.append(rd)
    procs.append(p)
log(f"{writers} writers running; {before} s measured before the ALTER")
time.sleep(1)
t_before = time.monotonic_ns()
time.sleep(before)
admin = proxy_conn()
cur = admin.cursor()
log(ALTER)
t_alter = time.monotonic_ns()
try:
    affected = cur.execute(ALTER)
    alter_error = None
except pymysql.err.MySQLError as e:
    affected, alter_error = None, e
t_done = time.monotonic_ns()
log(f"ALTER answered {affected if alter_error is None else alter_error} after {(t_done - t_alter) / 1e9:.1f} s; {after} s more")
time.sleep(after)
stop.set()
results = [rd.recv() for rd in pipes]
for p in procs:
    p.join()
if alter_error is not None:
    log(f"FAIL: ALTER: {alter_error}")
    sys.exit(1)

starts, ends = array("q"), array("q")
upd, ins, errors = [0, 0], [0, 0], {}
for s, e, u, i, err in results:
    starts.frombytes(s)
    ends.frombytes(e)
    upd = [a + b for a, b in zip(upd, u)]
    ins = [a + b for a, b in zip(ins, i)]
    for k, v in err.items():
        errors[k] = errors.get(k, 0) + v
lat = [(e - s) / 1e6 for s, e in zip(starts, ends)]


def window(a, b):
    return sum(1 for e in ends if a <= e < b) / ((b - a) / 1e9)


def longest(a, b):
    return max((l for s, e, l in zip(starts, ends, lat) if e > a and s < b), default=0.0)


def p99(a, b):
    xs = sorted(l for s, e, l in zip(starts, ends, lat) if a <= e < b)
    return xs[int(len(xs) * 0.99)] if xs else 0.0


cur.execute("HSCALE SHOW OPERATIONS")
op = next(r for r in cur.fetchall() if r[1] == "oa.t" and r[2].startswith("ALTER"))
state, pause_ms = op[3], op[8]
seconds = (t_done - t_alter) / 1e9
tp_before, tp_alter = window(t_before, t_alter), window(t_alter, t_done)

# The backends, directly.
failures = []
if state != "done":
    failures.append(f"operation state {state}")
if errors:
    failures.append(f"write errors {errors}")
cur.execute("HSCALE SHOW PARTITIONS('oa.t')")
parts = {r[1]: (int(r[3][len("shard"):]), r[4]) for r in cur.fetchall()}
for value in (0, 1):
    b, table = parts[f"p{value}"]
    bc = backend_conn((shard0, shard1)[b]).cursor()
    bc.execute(f"SELECT COUNT(*), SUM(v), SUM(added <> 7) FROM `{table}`")
    n, v, bad = bc.fetchone()
    if n != half + ins[value]:
        failures.append(f"p{value}: {n} rows, want {half + ins[value]}")
    if int(v) != upd[value]:
        failures.append(f"p{value}: SUM(v) {v}, want {upd[value]}")
    if int(bad or 0) != 0:
        failures.append(f"p{value}: {bad} rows with added <> 7")
    bc.execute(f"SHOW CREATE TABLE `{table}`")
    ddl = bc.fetchone()[1]
    if "`v` bigint(20) NOT NULL" not in ddl or "`added` int(11) NOT NULL DEFAULT 7" not in ddl:
        failures.append(f"p{value}: definition {ddl}")
    bc.execute("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'oa'")
    if bc.fetchone()[0]:
        failures.append(f"shard{b}: capture triggers left")
    bc.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE (TABLE_SCHEMA = 'hscale' AND TABLE_NAME LIKE 'changes%') OR (TABLE_SCHEMA = 'oa' AND TABLE_NAME LIKE '%retired%')")
    if bc.fetchone()[0]:
        failures.append(f"shard{b}: changelog or retired table left")

print(f"| rows | writers | seconds | copy rows/s | longest write (ms) | longest_pause_ms | writes/s before | during (ratio) | p99 before / during (ms) |")
print(f"|---|---|---|---|---|---|---|---|---|")
print(f"| {2 * half:,} | {writers} | {seconds:.1f} | {affected / seconds:,.0f} | "
      f"{longest(t_alter, t_done):.0f} | {pause_ms} | {tp_before:,.0f} | {tp_alter:,.0f} "
      f"({tp_alter / tp_before:.2f}) | {p99(t_before, t_alter):.1f} / {p99(t_alter, t_done):.1f} |")
if failures:
    for f in failures:
        log(f"FAIL: {f}")
    sys.exit(1)
log("checks passed: every acknowledged write present, every row's new column 7, new definition everywhere, nothing left")
PY
exit $status
