#!/usr/bin/env bash
# Passthrough overhead of hscale with one backend, next to a plain TCP proxy.
#
# Runs sysbench oltp_point_select and oltp_read_only at 1, 8 and 64 threads
# against (a) one MariaDB directly, (b) haproxy in tcp mode in front of it and
# (c) hscale in front of it, and prints a Markdown report on stdout (progress
# goes to stderr, so `bench/passthrough.sh > report.md` works).
#
# Environment: DURATION (seconds per run, default 20), PS_MODE (sysbench
# --db-ps-mode, default disable), THREADS (default "1 8 64"), TESTS (default
# "oltp_point_select oltp_read_only"), HSCALE (binary, default
# ./target/release/hscale).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

DURATION=${DURATION:-20}
PS_MODE=${PS_MODE:-disable}
THREADS=${THREADS:-1 8 64}
TESTS=${TESTS:-oltp_point_select oltp_read_only}
HSCALE=${HSCALE:-./target/release/hscale}
TABLES=4
TABLE_SIZE=10000

log() { printf '%s\n' "bench: $*" >&2; }
die() { log "$*"; exit 1; }

for tool in sysbench haproxy mariadb python3 getconf; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run: make deps)"
done
[[ -x "$HSCALE" ]] || die "$HSCALE not found (run: make build)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hscale-bench.XXXXXX")
PLAYGROUND_PID=""
HAPROXY_PID=""

# Stops one process we started: SIGTERM, up to $2 seconds of grace, then SIGKILL.
stop_pid() {
  local pid=$1 grace=$2 i
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local status=$? pid
  trap - EXIT INT TERM
  set +e
  stop_pid "$HAPROXY_PID" 5
  # The playground stops its MariaDB servers itself on SIGTERM.
  stop_pid "$PLAYGROUND_PID" 30
  # If it could not, end the servers still running on our data directory.
  while read -r pid; do
    stop_pid "$pid" 10
  done < <(grep -lsF -- "$TMP/pg" /proc/[0-9]*/cmdline | cut -d/ -f3)
  if ((status != 0)) && [[ -f "$TMP/playground.log" ]]; then
    log "playground output and log (last 20 lines):"
    tail -n 20 "$TMP/playground.out" "$TMP/playground.log" >&2
  fi
  rm -rf "$TMP"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# Prints the pid of the process listening on TCP port $1 (nothing if none).
listener_pid() {
  python3 - "$1" <<'PY'
import os, sys
port = int(sys.argv[1])
inodes = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        with open(table) as f:
            next(f)
            for line in f:
                cols = line.split()
                if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add("socket:[%s]" % cols[9])
    except OSError:
        pass
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
        if any(os.readlink("/proc/%s/fd/%s" % (pid, fd)) in inodes for fd in fds):
            print(pid)
            break
    except OSError:
        pass
PY
}

# Waits until something listens on port $1 and prints its pid; $2 is a pid that must stay alive.
wait_listener() {
  local port=$1 owner=$2 pid i
  for ((i = 0; i < 300; i++)); do
    pid=$(listener_pid "$port")
    [[ -n "$pid" ]] && { echo "$pid"; return 0; }
    kill -0 "$owner" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

CLK_TCK=$(getconf CLK_TCK)

# utime + stime (fields 14 and 15 of /proc/PID/stat) in clock ticks.
cpu_ticks() {
  local stat fields
  stat=$(<"/proc/$1/stat")
  read -r -a fields <<<"${stat##*") "}" # fields[0] is field 3 (state)
  echo $((fields[11] + fields[12]))
}

# ---- MariaDB + hscale: the playground with one backend ----------------------

HSCALE_PORT=$(free_port)
log "starting hscale playground on 127.0.0.1:$HSCALE_PORT"
"$HSCALE" playground --shards 1 --listen "127.0.0.1:$HSCALE_PORT" --data-dir "$TMP/pg" \
  >"$TMP/playground.out" 2>"$TMP/playground.log" </dev/null &
PLAYGROUND_PID=$!
for ((i = 0; ; i++)); do
  grep -q '^ready:' "$TMP/playground.out" && break
  kill -0 "$PLAYGROUND_PID" 2>/dev/null || die "playground exited before it was ready"
  ((i < 1200)) || die "playground not ready after 120 s"
  sleep 0.1
done
HSCALE_PID=$(wait_listener "$HSCALE_PORT" "$PLAYGROUND_PID") ||
  die "nothing listens on 127.0.0.1:$HSCALE_PORT"

# The first address in the [[backends]] section of the written config.
BACKEND=$(awk '
  /^[[:space:]]*\[\[backends\]\]/ { in_backends = 1; next }
  /^[[:space:]]*\[/ { in_backends = 0 }
  in_backends && /^[[:space:]]*address[[:space:]]*=/ {
    sub(/^[^=]*=[[:space:]]*"/, ""); sub(/".*$/, ""); print; exit
  }' "$TMP/pg/hscale.toml")
[[ "$BACKEND" == *:* ]] || die "no backend address in $TMP/pg/hscale.toml"
DB_HOST=${BACKEND%:*}
DB_PORT=${BACKEND##*:}
log "MariaDB at $DB_HOST:$DB_PORT, hscale pid $HSCALE_PID"

# ---- haproxy in tcp mode in front of the same MariaDB -----------------------

HAPROXY_PORT=$(free_port)
cat >"$TMP/haproxy.cfg" <<EOF
global
    maxconn 4096

defaults
    mode tcp
    maxconn 4096
    timeout connect 10s
    timeout client 1h
    timeout server 1h

frontend mysql
    bind 127.0.0.1:$HAPROXY_PORT
    default_backend mariadb

backend mariadb
    server db1 $DB_HOST:$DB_PORT
EOF
haproxy -c -q -f "$TMP/haproxy.cfg" || die "invalid haproxy config"
log "starting haproxy on 127.0.0.1:$HAPROXY_PORT"
haproxy -db -f "$TMP/haproxy.cfg" >"$TMP/haproxy.log" 2>&1 </dev/null &
HAPROXY_PID=$!
HAPROXY_LISTENER_PID=$(wait_listener "$HAPROXY_PORT" "$HAPROXY_PID") ||
  die "haproxy did not start: $(cat "$TMP/haproxy.log")"

# ---- data -------------------------------------------------------------------

DB_ARGS=(-h"$DB_HOST" -P"$DB_PORT" -uhscale -phscale)
mariadb "${DB_ARGS[@]}" -e 'CREATE DATABASE IF NOT EXISTS sbtest'
MARIADB_VERSION=$(mariadb "${DB_ARGS[@]}" -N -B -e 'SELECT VERSION()')

SB_COMMON=(--tables="$TABLES" --table-size="$TABLE_SIZE" --mysql-db=sbtest)
DIRECT_CONN=(--mysql-host="$DB_HOST" --mysql-port="$DB_PORT" --mysql-user=hscale --mysql-password=hscale)
HAPROXY_CONN=(--mysql-host=127.0.0.1 --mysql-port="$HAPROXY_PORT" --mysql-user=hscale --mysql-password=hscale)
HSCALE_CONN=(--mysql-host=127.0.0.1 --mysql-port="$HSCALE_PORT" --mysql-user=root --mysql-password=)
log "preparing $TABLES sysbench tables of $TABLE_SIZE rows"
sysbench oltp_read_only "${SB_COMMON[@]}" "${DIRECT_CONN[@]}" prepare >"$TMP/prepare.log" 2>&1 ||
  die "sysbench prepare failed: $(tail -n 20 "$TMP/prepare.log")"

# ---- runs -------------------------------------------------------------------

declare -A QPS P95 CPU
FAILED=0

# run TARGET TEST THREADS: one sysbench run, results into QPS/P95/CPU[TARGET/TEST/THREADS].
run() {
  local target=$1 test=$2 threads=$3 key="$1/$2/$3" out="$TMP/$1-$2-$3.log"
  local -a conn
  local pid="" before after total
  case $target in
    direct) conn=("${DIRECT_CONN[@]}") ;;
    haproxy) conn=("${HAPROXY_CONN[@]}") pid=$HAPROXY_LISTENER_PID ;;
    hscale) conn=("${HSCALE_CONN[@]}") pid=$HSCALE_PID ;;
  esac
  log "$target $test threads=$threads (${DURATION}s)"
  [[ -z "$pid" ]] || before=$(cpu_ticks "$pid")
  if ! sysbench "$test" "${SB_COMMON[@]}" "${conn[@]}" --threads="$threads" \
    --time="$DURATION" --events=0 --report-interval=0 --rand-type=uniform \
    --db-ps-mode="$PS_MODE" run >"$out" 2>&1; then
    log "$target $test threads=$threads failed:"
    tail -n 20 "$out" >&2
    QPS[$key]=fail P95[$key]=fail CPU[$key]=fail
    FAILED=1
    return 0
  fi
  [[ -z "$pid" ]] || after=$(cpu_ticks "$pid")
  # "    queries:                             160000 (7994.71 per sec.)"
  total=$(awk '$1 == "queries:" { print $2; exit }' "$out")
  QPS[$key]=$(awk '$1 == "queries:" { gsub(/\(/, "", $3); printf "%.0f", $3; exit }' "$out")
  P95[$key]=$(awk '/95th percentile:/ { print $3; exit }' "$out")
  if [[ -n "$pid" && -n "$total" && "$total" -gt 0 ]]; then
    CPU[$key]=$(awk -v t="$((after - before))" -v hz="$CLK_TCK" -v n="$total" \
      'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
  fi
}

for test in $TESTS; do
  for threads in $THREADS; do
    for target in direct haproxy hscale; do
      run "$target" "$test" "$threads"
    done
  done
done

# ---- report -----------------------------------------------------------------

ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
}

cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "# hscale passthrough benchmark"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "- nproc: $(nproc)"
echo "- CPU: ${cpu_model:-unknown}"
echo "- MariaDB: $MARIADB_VERSION"
echo "- $(sysbench --version), $(haproxy -v | head -n 1 | cut -d' ' -f1-3)"
echo "- sysbench: ${DURATION}s per run, --db-ps-mode=$PS_MODE, --rand-type=uniform, $TABLES tables x $TABLE_SIZE rows"
echo "- CPU/stmt: proxy process utime+stime during the run divided by the queries sysbench counted"
echo
echo "| test | threads | direct qps | haproxy qps | hscale qps | hscale/direct | hscale/haproxy | direct p95 | haproxy p95 | hscale p95 | haproxy µs CPU/stmt | hscale µs CPU/stmt |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for test in $TESTS; do
  for threads in $THREADS; do
    d="direct/$test/$threads" h="haproxy/$test/$threads" s="hscale/$test/$threads"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
      "$test" "$threads" "${QPS[$d]:--}" "${QPS[$h]:--}" "${QPS[$s]:--}" \
      "$(ratio "${QPS[$s]:-}" "${QPS[$d]:-}")" "$(ratio "${QPS[$s]:-}" "${QPS[$h]:-}")" \
      "${P95[$d]:--}" "${P95[$h]:--}" "${P95[$s]:--}" "${CPU[$h]:--}" "${CPU[$s]:--}"
  done
done

((FAILED == 0)) || die "some runs failed (marked 'fail' above)"
