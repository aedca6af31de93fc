#!/usr/bin/env bash
# A slow reader of a scan over partitions, and the proxy's memory (issue 11,
# item 3 and its "Done when").
#
# Two backends. `sr.t` (id BIGINT PK, pad VARCHAR(200)) is partitioned with
# MOD(4) on id: p0 and p2 on shard0, p1 and p3 on shard1; ROWS rows in all
# (200-byte pads), loaded directly into the physical tables. Both backends
# get `SET GLOBAL net_write_timeout = NET_WRITE_TIMEOUT` (default 2 s
# instead of 60), and the script waits until the proxy's pooled connections
# carry it. Then, one after another:
#
# - fast: `SELECT id, pad FROM sr.t` through hscale, read as fast as
#   PyMySQL's unbuffered cursor goes;
# - slow: the same statement through hscale, read at RATE rows/s (default:
#   the pace that makes the read last READ_SECONDS, 40), so the partition
#   sent ahead waits far longer than the backends' net_write_timeout;
# - direct: the same rows read from the backends themselves at the same
#   pace, each physical table in turn (a server streams one statement to a
#   slow reader without trouble): the same work without the proxy.
#
# Reported: rows delivered (every row, or the error after how many), the
# read's seconds and rows/s, and the RSS of the hscale process (the proxy
# plus the servers' supervisor, VmRSS sampled from /proc every 0.2 s; the
# peak is VmHWM, reset through /proc/PID/clear_refs before each read), next
# to the size of the result. Exits 1 if a read through the proxy misses rows.
#
# Environment: ROWS (default 2000000), READ_SECONDS (default 40),
# NET_WRITE_TIMEOUT (default 2), HSCALE (binary, default
# ./target/release/hscale).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

ROWS=${ROWS:-2000000}
READ_SECONDS=${READ_SECONDS:-40}
NET_WRITE_TIMEOUT=${NET_WRITE_TIMEOUT:-2}
HSCALE=${HSCALE:-./target/release/hscale}

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb python3
python3 -c 'import pymysql' 2>/dev/null || die "PyMySQL not found (run: make deps)"
start_playground 2 slow-reader

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
backend() { local b=$1; shift; mariadb -h127.0.0.1 -P"${BACKEND_PORTS[$b]}" -uhscale -phscale --skip-ssl "$@"; }

log "creating sr.t, MOD(4) on id: p0, p2 on shard0; p1, p3 on shard1"
proxy -e "CREATE DATABASE sr; CREATE TABLE sr.t (id BIGINT NOT NULL PRIMARY KEY, pad VARCHAR(200) NOT NULL)"
proxy -e "HSCALE SETUP_TABLE('sr.t', 'id', 't_default', 'shard0', 'MOD(4)')" >/dev/null
for p in "0 shard0" "1 shard1" "2 shard0" "3 shard1"; do
  read -r value where <<<"$p"
  proxy -e "HSCALE ADD_PARTITION('sr.t', 'p$value', '$value', '$where')" >/dev/null
done

# physical PARTITION: "backend-index physical-table" from HSCALE SHOW PARTITIONS.
physical() {
  proxy -N --batch -e "HSCALE SHOW PARTITIONS('sr.t')" |
    awk -F'\t' -v p="$1" '$2 == p { sub(/^shard/, "", $4); print $4, $5 }'
}

TABLES=()
per=$((ROWS / 4))
for value in 0 1 2 3; do
  read -r b table <<<"$(physical "p$value")"
  [[ -n "$table" ]] || die "no physical table for p$value"
  log "loading $per rows into p$value ($table on shard$b)"
  backend "$b" sr -e "INSERT INTO $table SELECT 4 * seq + $value, REPEAT(CHAR(97 + seq % 26), 200) FROM seq_0_to_$((per - 1))"
  TABLES+=("$b:$table")
done
for b in 0 1; do
  backend "$b" -e "SET GLOBAL net_write_timeout = $NET_WRITE_TIMEOUT"
done

python3 - "$PORT" "${BACKEND_PORTS[0]}" "${BACKEND_PORTS[1]}" "$PG_PID" "$((per * 4))" \
  "$READ_SECONDS" "$NET_WRITE_TIMEOUT" "${TABLES[@]}" <<'PY'
import os
import sys
import threading
import time

import pymysql
import pymysql.cursors

port, shard0, shard1, pg_pid, rows, read_seconds, nwt = map(int, sys.argv[1:8])
tables = [(int(b), t) for b, t in (x.split(":", 1) for x in sys.argv[8:])]
backend_ports = [shard0, shard1]
rate = rows / read_seconds
SQL = "SELECT id, pad FROM sr.t"


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def conn(p, user="root", password=""):
    return pymysql.connect(host="127.0.0.1", port=p, user=user, password=password,
                           database="sr", autocommit=True,
                           cursorclass=pymysql.cursors.SSCursor)


def status_kb(field):
    with open(f"/proc/{pg_pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pg_pid}")


def clear_refs():
    with open(f"/proc/{pg_pid}/clear_refs", "w") as f:
        f.write("5")


# The proxy's pooled connections pick up the new global default (the
# health check resets them): wait until both backends' show it.
c = conn(port)
deadline = time.monotonic() + 60
while True:
    cur = c.cursor(pymysql.cursors.Cursor)
    seen = set()
    for k in range(4):
        cur.execute(f"SELECT @@session.net_write_timeout FROM sr.t WHERE id = {k}")
        seen.add(cur.fetchone()[0])
    if seen == {nwt}:
        break
    if time.monotonic() > deadline:
        raise SystemExit(f"pooled connections still at net_write_timeout {seen}")
    time.sleep(0.5)
c.close()


def read(statements, paced):
    """Read every statement's rows in turn (at `rate` rows/s when
    `paced`); RSS of the hscale process every 0.2 s meanwhile. Returns rows,
    bytes, seconds, error, peak VmHWM and the VmRSS trace."""
    clear_refs()
    trace, done = [], threading.Event()

    def sample():
        while not done.wait(0.2):
            trace.append(status_kb("VmRSS"))

    t = threading.Thread(target=sample)
    t.start()
    n, size, err = 0, 0, None
    start = time.monotonic()
    try:
        for p, user, password, sql in statements:
            c = conn(p, user, password)
            cur = c.cursor()
            cur.execute(sql)
            while True:
                batch = cur.fetchmany(1000)
                if not batch:
                    break
                n += len(batch)
                size += sum(8 + len(r[1]) for r in batch)
                if paced:
                    ahead = n / rate - (time.monotonic() - start)
                    if ahead > 0:
                        time.sleep(ahead)
            c.close()
    except pymysql.err.MySQLError as e:
        err = f"{e.args[0]} {e.args[1] if len(e.args) > 1 else ''}"
    seconds = time.monotonic() - start
    done.set()
    t.join()
    return n, size, seconds, err, status_kb("VmHWM"), trace


idle = status_kb("VmRSS")
through = [(port, "root", "", SQL)]
direct = [(backend_ports[b], "hscale", "hscale", f"SELECT id, pad FROM {t}") for b, t in tables]
runs = {}
for name, statements, paced in [("fast, through hscale", through, False),
                                ("slow, through hscale", through, True),
                                ("slow, directly from the backends", direct, True)]:
    log(f"read: {name}")
    runs[name] = read(statements, paced)
    n, size, seconds, err, hwm, trace = runs[name]
    log(f"{name}: {n} rows, {seconds:.1f} s, error {err}, VmHWM {hwm / 1024:.1f} MB, "
        f"VmRSS MB every 0.2 s (every 10th): {[round(x / 1024, 1) for x in trace[::10]]}")

mb = lambda kb: kb / 1024
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print("## A slow reader of a scan over partitions (bench/slow_reader.sh)")
print()
print(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, nproc: {os.cpu_count()}, {cpu}")
print(f"- 2 backends (one machine), `sr.t` MOD(4) on id, 2 partitions on each; {rows} rows of 200-byte pads; backends' net_write_timeout {nwt} s")
print(f"- reader: PyMySQL unbuffered cursor, `{SQL}`; paced reads at {rate:,.0f} rows/s (the read should last {read_seconds} s, {read_seconds / nwt:.0f}x net_write_timeout)")
print("- RSS: the hscale process (proxy and the servers' supervisor, not the servers); peak = VmHWM reset before each read; idle = VmRSS before the first read")
print()
print("| read | rows delivered | error | seconds | rows/s | result MB | hscale peak RSS MB | peak - idle MB |")
print("|---|---:|---|---:|---:|---:|---:|---:|")
for name, (n, size, seconds, err, hwm, trace) in runs.items():
    print(f"| {name} | {n:,} of {rows:,} | {err or 'none'} | {seconds:.1f} | {n / seconds:,.0f} | {size / 2**20:.0f} | {mb(hwm):.1f} | {mb(hwm - idle):.1f} |")
print()
print(f"hscale RSS idle before the reads: {mb(idle):.1f} MB.")
failed = [name for name, r in runs.items() if r[0] != rows or r[3]]
if failed:
    log(f"rows missing: {failed}")
    sys.exit(1)
PY
