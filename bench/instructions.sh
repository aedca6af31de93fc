#!/usr/bin/env bash
# Instructions per statement on the statement path, counted by callgrind
# (repeatable for the same binary and workload, whatever else the machine
# does): each binary serves one MariaDB (the playground), sysbench runs a
# fixed workload (EVENTS transactions of TEST at 8 clients, seeded), and
# callgrind counts only what runs inside `Session::dispatch` (one command,
# from its bytes to its answer: analysis, planning, forwarding, metrics;
# not the runtime's polling or the kernel). Prints instructions per
# statement for each binary, after/before, and each binary's costliest
# functions (inclusive) so a regression points at its place.
#
# Usage: BEFORE=old/hscale AFTER=new/hscale bench/instructions.sh
# Environment: TEST (default oltp_read_only), EVENTS (default 300),
# TOP (functions listed, default 25), OUT (kept directory, default temporary),
# TOGGLE (the function whose inside is counted, default dispatch; `all`
# counts every instruction of the process during the run: the runtime's
# polling and the session loop too).
set -euo pipefail
# Profilers name functions from the binary's file mapping: keep the
# code there, not on anonymous huge pages (crates/hscale/src/huge_text.rs).
export HSCALE_HUGE_TEXT=0

cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${BEFORE:?set BEFORE to the old hscale binary}"
: "${AFTER:?set AFTER to the new hscale binary}"
TEST=${TEST:-oltp_read_only}
EVENTS=${EVENTS:-300}
TOP=${TOP:-25}
TOGGLE=${TOGGLE:-'hscale::session::Session<S>::dispatch::{{closure}}'}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/hscale-instructions.XXXXXX")}
mkdir -p "$OUT"

log() { printf '%s\n' "instructions: $*" >&2; }
die() { log "$*"; exit 1; }
for tool in valgrind callgrind_control callgrind_annotate sysbench mariadb python3; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found"
done

# The playground under valgrind: stopped on any exit, so a failed run does
# not leave it serving (and holding the machine lock it was started under).
CURRENT_PID=""
trap '[[ -z "$CURRENT_PID" ]] || kill -TERM "$CURRENT_PID" 2>/dev/null || true' EXIT

# count LABEL BINARY: instructions inside dispatch, and the statements run.
count() {
  local label=$1 bin=$2 dir="$OUT/$1" port pid i
  mkdir -p "$dir"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local toggle=(--toggle-collect="$TOGGLE")
  [[ "$TOGGLE" != all ]] || toggle=()
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" --instr-atstart=no \
    "${toggle[@]}" \
    "$bin" playground --shards 1 --listen "127.0.0.1:$port" --data-dir "$dir/pg" \
    >"$dir/playground.out" 2>"$dir/valgrind.log" </dev/null &
  pid=$!
  CURRENT_PID=$pid
  for ((i = 0; ; i++)); do
    grep -q '^ready:' "$dir/playground.out" && break
    kill -0 "$pid" 2>/dev/null || die "$label: playground exited"
    ((i < 1800)) || die "$label: playground not ready"
    sleep 0.1
  done
  local sb=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root
    --mysql-password= --mysql-db=sbtest --tables=2 --table-size=1000 --rand-type=uniform
    --db-ps-mode=disable --rand-seed=1)
  mariadb -h127.0.0.1 -P"$port" -uroot -e 'CREATE DATABASE IF NOT EXISTS sbtest'
  sysbench oltp_read_only "${sb[@]}" prepare >/dev/null 2>&1 || die "$label: prepare failed"
  # Warm: plan cache, pools, digests.
  sysbench "$TEST" "${sb[@]}" --threads=8 --time=3 run >/dev/null 2>&1 || true
  callgrind_control -i on "$pid" >/dev/null
  sysbench "$TEST" "${sb[@]}" --threads=8 --events="$EVENTS" --time=0 run >"$dir/sysbench.txt" 2>&1 ||
    die "$label: sysbench failed"
  callgrind_control -i off "$pid" >/dev/null
  callgrind_control -d "$pid" >/dev/null
  sleep 1
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  CURRENT_PID=""
  local data
  data=$(ls "$dir"/cg.out.* | head -n 1)
  local ir queries
  ir=$(awk '/^totals:/ { print $2; exit }' "$data")
  queries=$(awk '/queries:/ { print $2; exit }' "$dir/sysbench.txt")
  echo "$ir $queries" >"$dir/count"
  callgrind_annotate --inclusive=yes "$data" 2>/dev/null | grep -E '^ *[0-9,]+ \(' |
    sed -E 's|/root/.cargo/registry/src/[^/]+/||; s|/rustc/[0-9a-f]+/library/||; s|\[[^]]*\]$||' |
    sed -n "2,$((TOP + 1))p" >"$dir/top.txt"
}

count before "$BEFORE"
count after "$AFTER"
read -r bir bq <"$OUT/before/count"
read -r air aq <"$OUT/after/count"
[[ "$TOGGLE" == all ]] && WHAT="the whole process" || WHAT="inside $TOGGLE"
python3 - "$bir" "$bq" "$air" "$aq" "$TEST" "$EVENTS" "$WHAT" <<'PY'
import sys
bir, bq, air, aq = (int(x) for x in sys.argv[1:5])
b, a = bir / max(bq, 1), air / max(aq, 1)
print(f"## Instructions per statement, {sys.argv[7]} ({sys.argv[5]}, {sys.argv[6]} transactions at 8 clients)")
print()
print("| binary | statements | instructions | per statement |")
print("|---|---:|---:|---:|")
print(f"| before | {bq} | {bir:,} | {b:,.0f} |")
print(f"| after | {aq} | {air:,} | {a:,.0f} |")
print()
print(f"after/before: {a / b:.2f}")
PY
for label in before after; do
  echo
  echo "### $label: costliest functions (inclusive instructions)"
  echo '```'
  cut -c1-160 "$OUT/$label/top.txt"
  echo '```'
done
log "callgrind data in $OUT"
