#!/usr/bin/env bash
# The regression guard of the statement path (the speed issue's item 5):
# the working tree's hscale against BASE's (default: the commit before
# HEAD), both serving the same MariaDB at once, sysbench at CLIENTS clients
# alternating between them (before, after, after, before, ...), ROUNDS runs
# of DURATION seconds each. Prints proxy CPU per statement and qps of each
# and after/before, as a line to paste into the commit message:
#
#   guard: oltp_read_only 64 clients vs 3318ee7: CPU/stmt 24.1 -> 23.0 us (0.95), qps 0.99 -> 1.01 (1.02)
#
# About a minute when both binaries are built; BASE's build is cached in
# target/guard/ (a worktree and target directory of its own, so the first
# build of an old commit takes a few minutes and later ones seconds).
# Exits 1 when after/before CPU per statement exceeds MAX_RATIO (default
# 1.05): run it before committing a change to the statement path.
#
# Environment: BASE (a commit, default HEAD~1), BEFORE (a binary instead
# of BASE's), AFTER (binary, default: a
# release build of the working tree), TEST (default oltp_read_only),
# CLIENTS (default 64), ROUNDS (default 3), DURATION (default 6),
# MAX_RATIO (default 1.05), BEFORE_PROXY / AFTER_PROXY (`[proxy]` lines
# of one side, separated by `;`).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"
BASE=${BASE:-HEAD~1}
TEST=${TEST:-oltp_read_only}
CLIENTS=${CLIENTS:-64}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-6}
MAX_RATIO=${MAX_RATIO:-1.05}

log() { printf '%s\n' "guard: $*" >&2; }
die() { log "$*"; exit 2; }
for tool in sysbench mariadb python3 getconf git cargo; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run: make deps)"
done

GUARD=target/guard
mkdir -p "$GUARD/bin"
if [[ -n "${BEFORE:-}" ]]; then
  sha=$(basename "$BEFORE")
else
  sha=$(git rev-parse --short "$BASE") || die "no commit $BASE"
  BEFORE="$GUARD/bin/hscale-$sha"
fi
if [[ ! -x "$BEFORE" ]]; then
  log "building $sha (cached in $GUARD)"
  src="$GUARD/src"
  if [[ -d "$src" ]]; then
    git -C "$src" checkout -q --detach "$sha"
  else
    git worktree add -q --detach "$src" "$sha"
  fi
  CARGO_TARGET_DIR="$PWD/$GUARD/target" cargo build -q --release --manifest-path "$src/Cargo.toml" -p hscale ||
    die "building $sha failed"
  cp "$GUARD/target/release/hscale" "$BEFORE"
fi
if [[ -z "${AFTER:-}" ]]; then
  log "building the working tree"
  cargo build -q --release -p hscale || die "building the working tree failed"
  AFTER=target/release/hscale
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hscale-guard.XXXXXX")
PIDS=()
cleanup() {
  local pid
  set +e
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cpu_ticks() {
  local stat fields
  stat=$(<"/proc/$1/stat")
  read -r -a fields <<<"${stat##*") "}"
  echo $((fields[11] + fields[12]))
}
# Context switches of every thread of a process (voluntary + involuntary):
# a wake-up more per statement shows here before it shows in the CPU.
ctx_switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }'
}

PG_PORT=$(free_port)
"$AFTER" playground --shards 1 --listen "127.0.0.1:$PG_PORT" --data-dir "$TMP/pg" \
  >"$TMP/pg.out" 2>"$TMP/pg.log" </dev/null &
PIDS+=($!)
for ((i = 0; ; i++)); do
  grep -q '^ready:' "$TMP/pg.out" 2>/dev/null && break
  kill -0 "${PIDS[0]}" 2>/dev/null || die "playground exited: $(tail -n 5 "$TMP/pg.log")"
  ((i < 1200)) || die "playground not ready"
  sleep 0.1
done
# Each binary serves the playground's MariaDB with the playground's config.
declare -A PORT PID
for side in before after; do
  PORT[$side]=$(free_port)
  sed -E "0,/^listen = \"127\\.0\\.0\\.1:[0-9]+\"/s//listen = \"127.0.0.1:${PORT[$side]}\"/" \
    "$TMP/pg/hscale.toml" >"$TMP/$side.toml"
  # BEFORE_PROXY / AFTER_PROXY: `[proxy]` settings of one side only
  # (`coalesce = false`), to weigh a setting with one binary.
  extra=${BEFORE_PROXY:-}
  [[ $side == after ]] && extra=${AFTER_PROXY:-}
  if [[ -n "$extra" ]]; then
    grep -q '^\[proxy\]' "$TMP/$side.toml" || die "no [proxy] section in the playground's config"
    python3 - "$TMP/$side.toml" "$extra" <<'PY'
import sys
path, extra = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
i = lines.index("[proxy]")
lines[i + 1:i + 1] = extra.split(";")
open(path, "w").write("\n".join(lines))
PY
  fi
  bin=$BEFORE
  [[ $side == after ]] && bin=$AFTER
  "$bin" serve -c "$TMP/$side.toml" >"$TMP/$side.out" 2>"$TMP/$side.log" </dev/null &
  PID[$side]=$!
  PIDS+=("${PID[$side]}")
done
for side in before after; do
  for ((i = 0; ; i++)); do
    mariadb -h127.0.0.1 -P"${PORT[$side]}" -uroot --skip-ssl -e 'SELECT 1' >/dev/null 2>&1 && break
    kill -0 "${PID[$side]}" 2>/dev/null || die "$side exited: $(tail -n 5 "$TMP/$side.log")"
    ((i < 300)) || die "$side not answering"
    sleep 0.1
  done
done

SB=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user=root --mysql-password= --mysql-db=sbtest
  --tables=4 --table-size=10000 --rand-type=uniform --db-ps-mode=disable --mysql-ssl=off)
mariadb -h127.0.0.1 -P"${PORT[after]}" -uroot --skip-ssl -e 'CREATE DATABASE sbtest'
sysbench oltp_read_only "${SB[@]}" --mysql-port="${PORT[after]}" prepare >"$TMP/prepare.log" 2>&1 ||
  die "prepare failed: $(tail -n 5 "$TMP/prepare.log")"
for side in before after; do
  sysbench "$TEST" "${SB[@]}" --mysql-port="${PORT[$side]}" --threads="$CLIENTS" --time=2 run >/dev/null 2>&1 || true
done

CLK_TCK=$(getconf CLK_TCK)
declare -A TICKS QUERIES SECS SWITCHES
run() {
  local side=$1 t0 t1 c0 c1 out="$TMP/run.txt" n s
  c0=$(ctx_switches "${PID[$side]}")
  t0=$(cpu_ticks "${PID[$side]}")
  sysbench "$TEST" "${SB[@]}" --mysql-port="${PORT[$side]}" --threads="$CLIENTS" --time="$DURATION" \
    --report-interval=0 run >"$out" 2>&1 || die "$side: sysbench failed: $(tail -n 3 "$out")"
  t1=$(cpu_ticks "${PID[$side]}")
  c1=$(ctx_switches "${PID[$side]}")
  n=$(awk '$1 == "queries:" { print $2; exit }' "$out")
  s=$(awk '/total time:/ { gsub(/s/, "", $3); print $3; exit }' "$out")
  TICKS[$side]=$((${TICKS[$side]:-0} + t1 - t0))
  QUERIES[$side]=$((${QUERIES[$side]:-0} + n))
  SECS[$side]=$(awk -v a="${SECS[$side]:-0}" -v b="$s" 'BEGIN { print a + b }')
  SWITCHES[$side]=$((${SWITCHES[$side]:-0} + c1 - c0))
  log "$side: $n statements, $((t1 - t0)) ticks, $((c1 - c0)) context switches"
}
for ((r = 0; r < ROUNDS; r++)); do
  if ((r % 2 == 0)); then run before; run after; else run after; run before; fi
done

python3 - "$TEST" "$CLIENTS" "$sha" "$CLK_TCK" "$MAX_RATIO" \
  "${TICKS[before]}" "${QUERIES[before]}" "${SECS[before]}" \
  "${TICKS[after]}" "${QUERIES[after]}" "${SECS[after]}" \
  "${SWITCHES[before]}" "${SWITCHES[after]}" <<'PY'
import sys
test, clients, sha, hz, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
bt, bq, bs, at, aq, as_, bsw, asw = (float(x) for x in sys.argv[6:14])
bc, ac = bt / hz * 1e6 / bq, at / hz * 1e6 / aq
bqps, aqps = bq / bs, aq / as_
print(f"guard: {test} {clients} clients vs {sha}: CPU/stmt {bc:.1f} -> {ac:.1f} us ({ac / bc:.2f}), "
      f"qps {bqps:,.0f} -> {aqps:,.0f} ({aqps / bqps:.2f}), "
      f"context switches/stmt {bsw / bq:.2f} -> {asw / aq:.2f}")
sys.exit(1 if ac / bc > limit else 0)
PY
