#!/usr/bin/env bash
# HSCALE MOVE_PARTITION under write load (issue 12 item 9).
#
# Two backends. `mv.t` (id BIGINT PK, k INT, payload VARCHAR(100), v BIGINT)
# is partitioned with MOD(4) on k (k = id): p1 (value 1) and p3 on shard0,
# p0 and p2 on shard1, the (empty) default partition on shard0. p1 is loaded
# with ROWS rows and the others with OTHER_ROWS rows each, directly into their
# physical tables on the backends (names from HSCALE SHOW PARTITIONS). Then
# WRITERS client processes write through the proxy as fast as they can, each
# statement autocommitted and timed: UPDATE ... SET v = v + 1 of a random
# existing row (70%) or an INSERT of a new row (30%), the partition value
# picked at random, so a quarter of the writes go to the moving partition.
# During the WARMUP s, a reference move of p0 (OTHER_ROWS rows, shard1 to
# shard0) runs under the same load. Then BEFORE s are measured, then
# `HSCALE MOVE_PARTITION('mv.t', 'p1', 'shard1')` runs through the proxy
# while the writers go on, then AFTER s more.
#
# Reported: copy rate (rows_moved / seconds of the MOVE's answer), write
# throughput during the move over before it, the longest single write
# latency the clients saw during the move (any statement that overlapped it)
# next to the proxy's own longest_write_pause_ms, and the peak RSS of the
# hscale process (VmHWM, reset through /proc/PID/clear_refs) during the
# reference move, the BEFORE window and the move. Flat, as in
# bench/add_partition.sh: the move's peak is at most 10% + 5 MB above the
# reference move's (a streamed copy's peak must not grow with the rows).
# Afterwards the backends are checked directly: for every partition,
# COUNT(*) = loaded + inserts the clients saw succeed, and SUM(v) = updates
# the clients saw change a row (no write lost or applied twice); p1 lives on
# shard1, no table of p1 is left on shard0, and no capture trigger or
# changelog on either backend. The log (stderr) has writes per second around
# the move, the slowest writes during it and VmRSS every 0.5 s.
#
# Markdown on stdout, progress on stderr. Exits 1 if a move or a check
# fails; the aims (pause < 100 ms, >= 50,000 rows/s, throughput >= 0.7 of
# before, RSS flat) are reported, not enforced.
#
# Environment: COPY_RATE (the proxy's `[proxy] change_copy_rows_per_s`,
# default 0: no limit), BUFFER_POOL_MB (the servers' InnoDB buffer pool, default 512), ROWS (default 1000000), OTHER_ROWS (default 100000), WRITERS
# (default 16), WARMUP (default 3, at least the reference move), BEFORE
# (default 10), AFTER (default 5), HSCALE (binary, default
# ./target/release/hscale), KEEP_LOG (a file to copy the proxy's log to),
# RUST_LOG (default: debug for admin::change (with its verify) and partition::copy; the phases of the
# move, copy, catch-up replays and cutover, are read from the log).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"
# The phases of a move (copy, catch-up, cutover) are read from the proxy's log.
export RUST_LOG=${RUST_LOG:-info,hscale::admin::change=debug,hscale::partition::copy=debug}

ROWS=${ROWS:-1000000}
OTHER_ROWS=${OTHER_ROWS:-100000}
WRITERS=${WRITERS:-16}
WARMUP=${WARMUP:-3}
BEFORE=${BEFORE:-10}
AFTER=${AFTER:-5}
HSCALE=${HSCALE:-./target/release/hscale}
COPY_RATE=${COPY_RATE:-0}
# The servers' buffer pool, MiB: large enough for the moved partition
# (~113 MB at 1M rows), as on a server sized for its data. At the
# harness's 64 MiB the verification's scan of the destination reads from
# disk (O_DIRECT) and takes 7-9 s instead of ~3 (bench/RESULTS.md).
BUFFER_POOL_MB=${BUFFER_POOL_MB:-512}
PLAYGROUND_ARGS="--buffer-pool-mb $BUFFER_POOL_MB"
if [[ $COPY_RATE != 0 ]]; then PLAYGROUND_ARGS="$PLAYGROUND_ARGS --copy-rows-per-s $COPY_RATE"; fi

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb python3
python3 -c 'import pymysql' 2>/dev/null || die "PyMySQL not found (run: make deps)"
start_playground 2 moves

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
backend() { local b=$1; shift; mariadb -h127.0.0.1 -P"${BACKEND_PORTS[$b]}" -uhscale -phscale --skip-ssl "$@"; }

TABLE="(id BIGINT NOT NULL, k INT NOT NULL, payload VARCHAR(100) NOT NULL, v BIGINT NOT NULL, PRIMARY KEY (id, k))"
log "creating mv.t, MOD(4) on k: p1, p3 on shard0; p0, p2 on shard1"
proxy -e "CREATE DATABASE mv; CREATE TABLE mv.t $TABLE"
proxy -e "HSCALE SETUP_TABLE('mv.t', 'k', 't_default', 'shard0', 'MOD(4)')" >/dev/null
for p in "1 shard0" "0 shard1" "2 shard1" "3 shard0"; do
  read -r value where <<<"$p"
  proxy -e "HSCALE ADD_PARTITION('mv.t', 'p$value', '$value', '$where')" >/dev/null
done

# physical PARTITION: "backend-index physical-table" from HSCALE SHOW PARTITIONS.
physical() {
  proxy -N --batch -e "HSCALE SHOW PARTITIONS('mv.t')" |
    awk -F'\t' -v p="$1" '$2 == p { sub(/^shard/, "", $4); print $4, $5 }'
}

for value in 0 1 2 3; do
  read -r b table <<<"$(physical "p$value")"
  [[ -n "$table" ]] || die "no physical table for p$value"
  n=$OTHER_ROWS
  [[ $value == 1 ]] && n=$ROWS
  log "loading $n rows into p$value ($table on shard$b)"
  # Row i of value r: id = k = 4 * i + r, a 65-character payload, v = 0.
  backend "$b" mv -e "INSERT INTO $table SELECT 4 * seq + $value, 4 * seq + $value, CONCAT(MD5(seq), '-', LEFT(SHA1(seq), 32)), 0 FROM seq_0_to_$((n - 1))"
done
read -r _ OLD_P1 <<<"$(physical p1)"

status=0
python3 - "$PORT" "${BACKEND_PORTS[0]}" "${BACKEND_PORTS[1]}" "$PG_PID" "$ROWS" "$OTHER_ROWS" \
  "$WRITERS" "$WARMUP" "$BEFORE" "$AFTER" "$OLD_P1" "$TMP/pg.err" <<'PY' || status=$?
import multiprocessing as mp
import os
import random
import subprocess
import sys
import threading
import time
from array import array

import pymysql

(port, shard0, shard1, pg_pid, rows, other_rows, writers, warmup, before,
 after) = map(int, sys.argv[1:11])
old_p1, proxy_log = sys.argv[11], sys.argv[12]
UPDATE_SHARE = 0.7
loaded = {r: (rows if r == 1 else other_rows) for r in range(4)}


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def proxy_conn():
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                           database="mv", autocommit=True)


def backend_conn(p):
    return pymysql.connect(host="127.0.0.1", port=p, user="hscale", password="hscale",
                           database="mv", autocommit=True)


def writer(w, stop, out):
    """Writes until `stop`; sends back every statement's start and end
    (monotonic ns), and what the clients saw succeed per partition value."""
    rng = random.Random(w)
    c = proxy_conn()
    cur = c.cursor()
    starts, ends, what = array("q"), array("q"), array("b")
    upd = [0] * 4      # updates that changed a row, per value
    ins = [0] * 4      # inserts that succeeded, per value
    errors = {}        # error code -> count
    unsure = 0         # statements whose outcome is unknown (connection lost)
    j = 0
    base = rows + 1_000_000 * (w + 1)  # this writer's ids for new rows
    while not stop.is_set():
        r = rng.randrange(4)
        if rng.random() < UPDATE_SHARE:
            i = rng.randrange(loaded[r])
            sql = "UPDATE t SET v = v + 1 WHERE k = %d AND id = %d" % (4 * i + r, 4 * i + r)
            kind = 0
        else:
            i = base + j
            j += 1
            sql = ("INSERT INTO t (id, k, payload, v) VALUES (%d, %d, '%s', 0)"
                   % (4 * i + r, 4 * i + r, "w%d-%d" % (w, j)))
            kind = 1
        t0 = time.monotonic_ns()
        try:
            n = cur.execute(sql)
            t1 = time.monotonic_ns()
            if kind == 0:
                upd[r] += n
            else:
                ins[r] += 1
        except pymysql.err.OperationalError as e:
            t1 = time.monotonic_ns()
            code = e.args[0]
            errors[code] = errors.get(code, 0) + 1
            if code in (2006, 2013, 2014):
                unsure += 1
                c = proxy_conn()
                cur = c.cursor()
        except pymysql.err.MySQLError as e:
            t1 = time.monotonic_ns()
            code = e.args[0] if e.args else -1
            errors[code] = errors.get(code, 0) + 1
        starts.append(t0)
        ends.append(t1)
        what.append(kind * 4 + r)
    out.send((starts.tobytes(), ends.tobytes(), what.tobytes(), upd, ins, errors, unsure))
    out.close()


def status_kb(field):
    with open(f"/proc/{pg_pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pg_pid}")


def clear_refs():
    with open(f"/proc/{pg_pid}/clear_refs", "w") as f:
        f.write("5")


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
admin = proxy_conn()
log(f"{writers} writers running; warm-up {warmup} s with the reference move of p0, then {before} s measured before the move")
time.sleep(1)
# The reference: a move of OTHER_ROWS rows (p0, shard1 to shard0) under the
# same load. Its peak RSS is what the big move's peak is held against, as
# bench/add_partition.sh does: a streamed copy's peak must not grow with N.
clear_refs()
cur = admin.cursor()
t_ref = time.monotonic_ns()
cur.execute("HSCALE MOVE_PARTITION('mv.t', 'p0', 'shard0')")
ref_answer = cur.fetchone()
ref_seconds = (time.monotonic_ns() - t_ref) / 1e9
hwm_ref = status_kb("VmHWM")
log(f"reference move of p0 answered {ref_answer}")
time.sleep(max(0, warmup - 1 - ref_seconds))
t_before = time.monotonic_ns()
clear_refs()
time.sleep(before)
hwm_load = status_kb("VmHWM")
clear_refs()
log("HSCALE MOVE_PARTITION('mv.t', 'p1', 'shard1')")
trace = []  # (monotonic ns, VmRSS kB) every 50 ms during the move
moving = threading.Event()
moving.set()


def sample():
    while moving.is_set():
        trace.append((time.monotonic_ns(), status_kb("VmRSS")))
        time.sleep(0.05)


sampler = threading.Thread(target=sample)
t_move = time.monotonic_ns()
wall_move = time.time()  # the same instant on the wall clock (the proxy log's)
log(f"move starts at {time.strftime('%H:%M:%S', time.gmtime())}.{int(time.time() * 1000) % 1000:03d} UTC")
sampler.start()
cur = admin.cursor()
try:
    cur.execute("HSCALE MOVE_PARTITION('mv.t', 'p1', 'shard1')")
    answer = cur.fetchone()
    move_error = None
except pymysql.err.MySQLError as e:
    answer, move_error = None, e
t_moved = time.monotonic_ns()
moving.clear()
sampler.join()
hwm_move = status_kb("VmHWM")
log(f"move answered {answer or move_error} after {(t_moved - t_move) / 1e9:.1f} s; {after} s more")
time.sleep(after)
stop.set()
t_stop = time.monotonic_ns()
results = [rd.recv() for rd in pipes]
for p in procs:
    p.join()
rss_end = status_kb("VmRSS")
if move_error is not None:
    log(f"FAIL: MOVE_PARTITION: {move_error}")
    sys.exit(1)

starts, ends, what = array("q"), array("q"), array("b")
upd, ins, errors, unsure = [0] * 4, [0] * 4, {}, 0
for s, e, wh, u, i, err, uns in results:
    starts.frombytes(s)
    ends.frombytes(e)
    what.frombytes(wh)
    upd = [a + b for a, b in zip(upd, u)]
    ins = [a + b for a, b in zip(ins, i)]
    for k, v in err.items():
        errors[k] = errors.get(k, 0) + v
    unsure += uns
lat = [(e - s) / 1e6 for s, e in zip(starts, ends)]


def window(a, b):
    """Statements that ended in [a, b): their count per second."""
    return sum(1 for e in ends if a <= e < b) / ((b - a) / 1e9)


def longest(a, b):
    """The longest statement that overlapped [a, b): ms, and when it began (s after a)."""
    best = (0.0, 0.0)
    for s, e, l in zip(starts, ends, lat):
        if e > a and s < b and l > best[0]:
            best = (l, (s - a) / 1e9)
    return best


def p99(a, b):
    xs = sorted(l for s, e, l in zip(starts, ends, lat) if a <= e < b)
    return xs[int(len(xs) * 0.99)] if xs else 0.0


tp_before = window(t_before, t_move)
tp_move = window(t_move, t_moved)
tp_after = window(t_moved, t_stop)
long_before, _ = longest(t_before, t_move)
long_move, long_at = longest(t_move, t_moved)
# Throughput per second around the move, for the log.
t0 = t_move - 3 * 10**9
secs = int((t_stop - t0) / 1e9)
per_s = [0] * (secs + 1)
for e in ends:
    if e >= t0:
        k = int((e - t0) / 1e9)
        if k <= secs:
            per_s[k] += 1
log("writes per second from 3 s before the move (move at s=3, answered at s=%.1f): %s"
    % ((t_moved - t0) / 1e9, " ".join(map(str, per_s[:-1]))))

def text(x):
    return x.decode() if isinstance(x, (bytes, bytearray)) else x


rows_moved, seconds, pause_ms, info = map(text, answer[:4])
slow = sorted(((l, (s - t_move) / 1e9, w) for s, e, l, w in zip(starts, ends, lat, what)
               if e > t_move and s < t_moved), reverse=True)[:8]
log("slowest writes during the move (ms, began s into the move, statement): "
    + "; ".join(f"{l:.0f} @{at:.2f} {('UPDATE', 'INSERT')[w // 4]} p{w % 4}" for l, at, w in slow))
log("VmRSS MB during the move, every 0.5 s: "
    + " ".join(f"{kb / 1024:.1f}" for _, kb in trace[::10]))
log("VmRSS rises during the move (s into the move: MB): " + ", ".join(
    f"{(t - t_move) / 1e9:.2f}: {kb / 1024:.1f}" for (_, a), (t, kb) in zip(trace, trace[1:]) if kb > a + 256))
rows_moved, seconds, pause_ms = int(rows_moved), float(seconds), int(pause_ms)

# ---- phases of the move, from the proxy's log (debug lines of admin::change) ----
def phases():
    """Seconds of copy, catch-up and cutover, rows copied, and changelog
    entries replayed before and during the cutover; None without the log."""
    import datetime
    import re
    marks, entries, op, phase = {}, {"catch-up": 0, "cutover": 0}, None, None
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    for line in open(proxy_log, errors="replace"):
        line = ansi.sub("", line)
        if "MOVE_PARTITION('mv.t', 'p1'" in line and "admin command" in line:
            marks, op = {}, None
            marks["start"] = line.split()[0]
            continue
        if "start" not in marks:
            continue
        m = re.search(r"operation=(\d+)", line)
        if "copy starts" in line and m:
            op = m.group(1)
        if op is None or not m or m.group(1) != op:
            continue
        for what, key in (("copy starts", "copy"), ("copy done", "copied"),
                          ("verification starts", "verify"), (" verified ", "verified"),
                          (" rename ", "rename"), ("partition change done", "done")):
            if what in line:
                marks[key] = line.split()[0]
                phase = {"copied": "catch-up", "rename": "cutover", "done": None}.get(key, phase)
        e = re.search(r"entries=(\d+)", line)
        if e and phase:
            entries[phase] += int(e.group(1))
        r = re.search(r"copy done.* rows=(\d+)", line)
        if r:
            marks["rows"] = int(r.group(1))
        c = re.search(r"cutover steps.* rename_ms=([\d.]+) replay_ms=([\d.]+).* commit_ms=([\d.]+)", line)
        if c:
            marks["steps"] = tuple(float(x) for x in c.groups())
    if not all(k in marks for k in ("copy", "copied", "rename", "done")):
        return None
    ts = {k: datetime.datetime.fromisoformat(v.rstrip("Z")[:26]) for k, v in marks.items()
          if k in ("start", "copy", "copied", "verify", "verified", "rename", "done")}
    sec = lambda a, b: (ts[b] - ts[a]).total_seconds()
    # Monotonic ns of each mark, through the wall clock at the move's start.
    mono = {k: t_move + int((v.replace(tzinfo=datetime.timezone.utc).timestamp() - wall_move) * 1e9)
            for k, v in ts.items()}
    return {"setup": sec("start", "copy"), "copy": sec("copy", "copied"),
            "catch-up": sec("copied", "rename"), "cutover": sec("rename", "done"),
            "rows": marks.get("rows", 0), "entries": entries, "mono": mono,
            "steps": marks.get("steps")}


try:
    ph = phases()
except (OSError, ValueError):
    ph = None
if ph:
    log(f"phases: setup {ph['setup']:.1f} s, copy {ph['copy']:.1f} s, catch-up {ph['catch-up']:.1f} s "
        f"({ph['entries']['catch-up']} changelog entries), cutover {ph['cutover']:.2f} s "
        f"({ph['entries']['cutover']} entries)")

# ---- checks on the backends -------------------------------------------------
failures = []
pc = proxy_conn().cursor()
pc.execute("HSCALE SHOW PARTITIONS('mv.t')")
where = {}
for row in pc.fetchall():
    row = [text(x) for x in row]
    if row[1]:
        where[row[1]] = (int(row[3].removeprefix("shard")), row[4])
bconn = {0: backend_conn(shard0).cursor(), 1: backend_conn(shard1).cursor()}
checks = []
for r in range(4):
    b, table = where[f"p{r}"]
    bconn[b].execute(f"SELECT COUNT(*), COALESCE(SUM(v), 0), COALESCE(SUM(k MOD 4 <> {r}), 0) FROM {table}")
    count, total, strays = map(int, bconn[b].fetchone())
    want = (loaded[r] + ins[r], upd[r], 0)
    ok = (count, total, strays) == want
    checks.append(f"p{r} ({table} on shard{b}): {count} rows (want {want[0]}), SUM(v) {total} (want {want[1]})")
    if not ok:
        failures.append(checks[-1] + f", {strays} rows of another value")
p1_backend, new_p1 = where["p1"]
if p1_backend != 1:
    failures.append(f"p1 is on shard{p1_backend}, not shard1")
bconn[0].execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mv' AND TABLE_NAME LIKE 't\\_p1\\_%'")
left = [row[0] for row in bconn[0].fetchall()]
if left:
    failures.append(f"tables of p1 left on shard0: {left}")
for b in (0, 1):
    bconn[b].execute("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'mv'")
    triggers = bconn[b].fetchone()[0]
    bconn[b].execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'hscale' AND TABLE_NAME LIKE 'changes\\_%'")
    changelogs = bconn[b].fetchone()[0]
    bconn[b].execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mv'")
    tables = bconn[b].fetchone()[0]
    log(f"shard{b}: {tables} tables in mv, {triggers} triggers, {changelogs} changelogs")
    if triggers or changelogs:
        failures.append(f"{triggers} triggers and {changelogs} changelogs left on shard{b}")
for c in checks:
    log("check: " + c)
if unsure:
    log(f"{unsure} statements lost their connection: the counts cannot be exact")

# ---- report -------------------------------------------------------------------
def yes(ok):
    return "**met**" if ok else "**not met**"


mb = lambda kb: kb / 1024
rate = rows_moved / seconds if seconds else 0.0
ratio = tp_move / tp_before if tp_before else 0.0
flat_limit = hwm_ref * 1.10 + 5 * 1024
is_flat = hwm_move <= flat_limit
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
err_text = ", ".join(f"{k}: {v}" for k, v in sorted(errors.items())) or "none"
print("## MOVE_PARTITION under write load (bench/moves.sh)")
print()
print(f"- date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, nproc: {os.cpu_count()}, {cpu}, {ram:.0f} GB RAM")
print(f"- 2 backends (one machine); `mv.t` MOD(4) on k; p1 ({rows} rows, `{old_p1}` on shard0) moves to shard1; p0, p2 on shard1 and p3 on shard0 hold {other_rows} rows each")
print(f"- {writers} writer processes (PyMySQL, autocommit, text protocol) through the proxy: 70% `UPDATE t SET v = v + 1 WHERE k = ? AND id = ?` of a random row, 30% INSERT of a new row, value 0-3 at random (a quarter of the writes hit p1)")
print(f"- copy rate limit (`[proxy] change_copy_rows_per_s`): {os.environ.get('COPY_RATE', '0')} (0: none)")
print(f"- {warmup} s warm-up, {before} s measured before the move, {after} s after it; latency = one statement's round trip seen by its client")
print(f"- MOVE answered: rows_moved {rows_moved}, seconds {seconds:.3f}, longest_write_pause_ms {pause_ms}, info `{info}`")
print(f"- checked on the backends: every partition's COUNT(*) = loaded + client-acknowledged inserts and SUM(v) = client-acknowledged updates; p1 is `{new_p1}` on shard1; no `t_p1_*` table is left on shard0, no trigger or changelog on either backend: {'ok' if not failures else 'FAILED'}")
print(f"- client errors: {err_text}; statements of unknown outcome: {unsure}")
print(f"- reference move during the warm-up, same load: `HSCALE MOVE_PARTITION('mv.t', 'p0', 'shard0')`, {text(ref_answer[0])} rows in {float(text(ref_answer[1])):.1f} s")
print(f"- RSS of the hscale process (proxy plus the servers' supervisor): peaks are VmHWM, reset through clear_refs before the reference move, at the start of the {before} s window and at the move; flat (as in bench/add_partition.sh) = peak during the move <= 1.10 x peak during the reference move + 5 MB = {mb(flat_limit):.1f} MB")
print()
print("| measure | value | aim | |")
print("|---|---:|---|---|")
print(f"| copy rate (rows_moved / seconds) | {rate:,.0f} rows/s ({rows_moved} rows in {seconds:.1f} s) | >= 50,000 rows/s | {yes(rate >= 50000)} |")
if ph:
    copy_rate = ph["rows"] / ph["copy"] if ph["copy"] else 0.0
    print(f"| phases (proxy log): setup / copy / catch-up replays / cutover | {ph['setup']:.1f} / {ph['copy']:.1f} / {ph['catch-up']:.1f} / {ph['cutover']:.2f} s | | |")
    print(f"| copy phase alone | {copy_rate:,.0f} rows/s | | |")
    print(f"| changelog entries replayed: catch-up / during the cutover | {ph['entries']['catch-up']} / {ph['entries']['cutover']} | | |")
    if "verify" in ph["mono"] and "verified" in ph["mono"]:
        mk = ph["mono"]
        print(f"| verification (destination's scan, replays beside it) | {(mk['verified'] - mk['verify']) / 1e9:.1f} s | | |")
    if ph["steps"]:
        print("| the pause's steps (proxy log): rename / last replay / commit and reload | "
              + " / ".join(f"{x:.1f}" for x in ph["steps"]) + " ms | | |")
print(f"| writes/s before the move | {tp_before:,.0f} | | |")
if ph:
    # Where the throughput goes: writes/s in each phase over the BEFORE
    # window's, all partitions and the moving one (p1) apart.
    def rate_of(a, b, only_p1):
        n = sum(1 for e, w in zip(ends, what) if a <= e < b and (w % 4 == 1) == only_p1)
        return n / ((b - a) / 1e9) if b > a else 0.0
    before_p1, before_rest = rate_of(t_before, t_move, True), rate_of(t_before, t_move, False)
    mk = ph["mono"]
    spans = [("copy", "copy", "copied"), ("verification (replays beside it)", "verify", "verified"),
             ("catch-up after it", "verified", "rename"), ("cutover", "rename", "done")]
    for name, a, b in spans:
        if a in mk and b in mk and mk[b] > mk[a]:
            p1, rest = rate_of(mk[a], mk[b], True), rate_of(mk[a], mk[b], False)
            print(f"| writes/s during the {name} ({(mk[b] - mk[a]) / 1e9:.1f} s): p1 / other partitions | "
                  f"{p1:,.0f} / {rest:,.0f} ({p1 / before_p1 if before_p1 else 0:.2f} / "
                  f"{rest / before_rest if before_rest else 0:.2f} of before) | | |")
print(f"| writes/s during the move | {tp_move:,.0f} ({ratio:.2f} of before) | >= 0.7 of before | {yes(ratio >= 0.7)} |")
print(f"| writes/s after the move | {tp_after:,.0f} ({tp_after / tp_before if tp_before else 0:.2f} of before) | | |")
print(f"| longest write latency, clients, during the move | {long_move:.1f} ms (began {long_at:.1f} s into the move) | < 100 ms | {yes(long_move < 100)} |")
print(f"| longest write latency, clients, {before} s before | {long_before:.1f} ms | | |")
print(f"| p99 write latency before / during | {p99(t_before, t_move):.1f} / {p99(t_move, t_moved):.1f} ms | | |")
print(f"| longest_write_pause_ms (proxy) | {pause_ms} ms | < 100 ms | {yes(pause_ms < 100)} |")
print(f"| peak RSS: reference move ({other_rows} rows) / {before} s of writes before / the move / RSS at the end | {mb(hwm_ref):.1f} / {mb(hwm_load):.1f} / {mb(hwm_move):.1f} / {mb(rss_end):.1f} MB | flat | {yes(is_flat)} |")
if failures:
    for f in failures:
        log("FAIL: " + f)
    sys.exit(1)
log("ok: checks passed")
PY
if [[ -n "${KEEP_LOG:-}" ]]; then cp "$TMP/pg.err" "$KEEP_LOG"; fi
exit "$status"
