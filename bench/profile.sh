#!/usr/bin/env bash
# Where the proxy's CPU goes per statement: one hscale binary in front of one
# MariaDB (the playground, 64 backend connections), a sysbench run at each
# of THREADS clients while `perf record` samples the proxy, then the
# hottest functions (self time) and the proxy's syscalls and context
# switches per statement (`perf stat`, or /proc when perf stat cannot
# count). Run it with nothing else on the machine.
#
# Environment: HSCALE (binary, default ./target/release/hscale), THREADS
# (default "64 1024"), TEST (default oltp_read_only), DURATION (seconds of
# each sampled run, default 15), OUT (directory for perf.data and the
# reports, default a temporary one that is kept and printed), TARGET
# (`hscale`, the default, or `haproxy`: haproxy in TCP mode in front of the
# same MariaDB is profiled the same way, for the floor any proxy compares with).
# The set-up (tool checks, the playground, haproxy, stopping them on exit)
# is bench/lib.sh's.
set -euo pipefail
# Profilers name functions from the binary's file mapping: keep the
# code there, not on anonymous huge pages (crates/hscale/src/huge_text.rs).
export HSCALE_HUGE_TEXT=0

cd "$(dirname "${BASH_SOURCE[0]}")/.."

HSCALE=${HSCALE:-./target/release/hscale}
THREADS=${THREADS:-64 1024}
TARGET=${TARGET:-hscale}
TEST=${TEST:-oltp_read_only}
DURATION=${DURATION:-15}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/hscale-profile.XXXXXX")}
mkdir -p "$OUT"

# shellcheck source=lib.sh
source bench/lib.sh
bench_start profile sysbench perf python3 mariadb
if [[ $TARGET == haproxy ]]; then require haproxy; fi

# The playground (one server, 256 MB buffer pool: the sysbench tables
# below take about 10 MB) in TMP, stopped and removed on exit.
start_server pg
PORT=$PG_PORT
PID=${PIDS[-1]}

SB=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=root
  --mysql-password= --mysql-db=sbtest --tables=4 --table-size=10000 --rand-type=uniform
  --db-ps-mode=disable)
mariadb -h127.0.0.1 -P"$PORT" -uroot -e 'CREATE DATABASE IF NOT EXISTS sbtest'
sysbench oltp_read_only "${SB[@]}" prepare >"$OUT/prepare.log" 2>&1 || die "prepare failed"
if [[ $TARGET == haproxy ]]; then
  start_haproxy "$DB_PORT"
  # The playground's backend account; the statements are the same.
  SB=("${SB[@]/--mysql-port=$PORT/--mysql-port=$HAPROXY_PORT}")
  SB=("${SB[@]/--mysql-user=root/--mysql-user=hscale}")
  SB=("${SB[@]/--mysql-password=/--mysql-password=hscale}")
  PID=$HAPROXY_PID
fi

ticks() { awk '{ print $14 + $15 }' "/proc/$PID/stat"; }
switches() { cat /proc/"$PID"/task/*/status | awk '/ctxt_switches/ { n += $2 } END { print n }'; }
for t in $THREADS; do
  log "$TEST, $t clients: warm-up 3 s, then $DURATION s sampled"
  sysbench "$TEST" "${SB[@]}" --threads="$t" --time=3 run >/dev/null 2>&1 || true
  t0=$(ticks) s0=$(switches)
  # First a run counted without perf (CPU per statement), then one with
  # syscalls counted, then one sampled: each tool perturbs the proxy.
  sysbench "$TEST" "${SB[@]}" --threads="$t" --time="$DURATION" --report-interval=0 run \
    >"$OUT/sysbench-$t.txt" 2>&1 || true
  t1=$(ticks) s1=$(switches)
  queries=$(awk '/queries:/ { print $2; exit }' "$OUT/sysbench-$t.txt")
  perf stat -e 'syscalls:sys_enter_*' -p "$PID" -o "$OUT/syscalls-$t.txt" -- sleep "$DURATION" \
    >/dev/null 2>&1 &
  st=$!
  sysbench "$TEST" "${SB[@]}" --threads="$t" --time="$DURATION" --report-interval=0 run \
    >"$OUT/sysbench-syscalls-$t.txt" 2>&1 || true
  wait "$st" || true
  counted=$(awk '/queries:/ { print $2; exit }' "$OUT/sysbench-syscalls-$t.txt")
  perf record -F 199 -g -p "$PID" -o "$OUT/perf-$t.data" -- sleep "$DURATION" \
    >/dev/null 2>"$OUT/perf-$t.log" &
  rec=$!
  sysbench "$TEST" "${SB[@]}" --threads="$t" --time="$DURATION" --report-interval=0 run \
    >/dev/null 2>&1 || true
  wait "$rec" || true
  hz=$(getconf CLK_TCK)
  perf report -i "$OUT/perf-$t.data" --no-children --sort dso --stdio 2>/dev/null |
    grep -E '^ +[0-9]' | awk '{ print $1, $2 }' >"$OUT/dso-$t.txt" || true
  perf report -i "$OUT/perf-$t.data" --no-children --sort symbol --percent-limit 0.5 --stdio \
    2>/dev/null | grep -E '^ +[0-9]' | awk '{ $NF = ""; $(NF - 1) = ""; print }' \
    | grep -F '[.]' >"$OUT/top-$t.txt" || true
  echo "## $TEST, $t clients"
  echo "- samples by object: $(tr '\n' ' ' <"$OUT/dso-$t.txt")"
  python3 - "$queries" "$((t1 - t0))" "$hz" "$((s1 - s0))" "$OUT/syscalls-$t.txt" "$counted" <<'PY'
import sys, re
q, ticks, hz, sw, path = int(sys.argv[1] or 0), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
q = max(q, 1)
counted = max(int(sys.argv[6] or 0), 1)
print(f"- statements: {q}; proxy CPU per statement: {ticks * 1e6 / hz / q:.1f} us; context switches per statement: {sw / q:.2f}")
calls = []
try:
    for line in open(path):
        m = re.match(r"\s*([\d,]+)\s+syscalls:sys_enter_(\w+)", line)
        if m:
            n = int(m.group(1).replace(",", ""))
            if n:
                calls.append((n, m.group(2)))
except OSError:
    pass
if calls:
    calls.sort(reverse=True)
    print("- syscalls per statement: " + ", ".join(f"{name} {n / counted:.2f}" for n, name in calls[:8]))
PY
  echo '- hottest user-space functions (self time, % of all the proxy samples):'
  sed 's/^/    /' "$OUT/top-$t.txt" | head -n 25
  echo
done
log "perf data and reports in $OUT"
