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

log() { printf '%s\n' "profile: $*" >&2; }
die() { log "$*"; exit 1; }
for tool in sysbench perf python3; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found (perf: apt-get install linux-perf)"
done
[[ -x "$HSCALE" ]] || die "$HSCALE not found (run: make build)"

PG="$OUT/pg"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$HSCALE" playground --shards 1 --listen "127.0.0.1:$PORT" --data-dir "$PG" \
  >"$OUT/playground.out" 2>"$OUT/playground.log" </dev/null &
PID=$!
trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
for ((i = 0; ; i++)); do
  grep -q '^ready:' "$OUT/playground.out" && break
  kill -0 "$PID" 2>/dev/null || die "playground exited: $(tail -n 5 "$OUT/playground.log")"
  ((i < 1200)) || die "playground not ready after 120 s"
  sleep 0.1
done

SB=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=root
  --mysql-password= --mysql-db=sbtest --tables=4 --table-size=10000 --rand-type=uniform
  --db-ps-mode=disable)
mariadb -h127.0.0.1 -P"$PORT" -uroot -e 'CREATE DATABASE IF NOT EXISTS sbtest'
sysbench oltp_read_only "${SB[@]}" prepare >"$OUT/prepare.log" 2>&1 || die "prepare failed"
if [[ $TARGET == haproxy ]]; then
  command -v haproxy >/dev/null 2>&1 || die "haproxy not found (run: make deps)"
  backend=$(awk -F'"' '/^address = "127\.0\.0\.1:/ { print $2; exit }' "$PG/hscale.toml")
  HAPROXY_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat >"$OUT/haproxy.cfg" <<CFG
global
    maxconn 8192
defaults
    mode tcp
    maxconn 8192
    timeout connect 10s
    timeout client 1h
    timeout server 1h
frontend mysql
    bind 127.0.0.1:$HAPROXY_PORT
    default_backend mariadb
backend mariadb
    server db1 $backend
CFG
  haproxy -db -f "$OUT/haproxy.cfg" >"$OUT/haproxy.log" 2>&1 </dev/null &
  HAPROXY_PID=$!
  PLAYGROUND_PID=$PID
  trap 'kill -TERM $PLAYGROUND_PID $HAPROXY_PID 2>/dev/null; wait $PLAYGROUND_PID $HAPROXY_PID 2>/dev/null || true' EXIT
  sleep 0.5
  kill -0 "$HAPROXY_PID" 2>/dev/null || die "haproxy exited: $(cat "$OUT/haproxy.log")"
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
