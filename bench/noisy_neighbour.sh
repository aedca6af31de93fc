#!/usr/bin/env bash
# Issue 31's noisy neighbour: tenant A runs heavy scans (a full scan of
# sbtest1 per statement) from many clients, tenant B point selects from a
# few; each alone, then both together. Three ways in: the MariaDB server
# directly, hscale with no tenant settings (fair queueing across users is
# the default), and hscale with A's backend_share = 0.5 and B's priority =
# "high". Prints a Markdown table on stdout (progress on stderr): B's qps
# and p99 alone and beside A, their ratios, and A's qps alone and beside B.
#
# Environment:
#   HSCALE        binary (default ./target/release/hscale)
#   A_CLIENTS     tenant A's clients (default 256)
#   B_CLIENTS     tenant B's clients (default 16)
#   DURATION      seconds per run (default 10)
#   TABLE_SIZE    rows of sbtest1 (default 200000)
#   BACKEND_CONNECTIONS  hscale's [[backends]] max_connections (default 32)
#   ENDPOINTS     which rows to run (default "direct hscale limited")
#   LIMIT_A       tenant A's settings in the limited row (default
#                 'backend_share = 0.5'; B's is always priority = "high")
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"
HSCALE=${HSCALE:-./target/release/hscale}
A_CLIENTS=${A_CLIENTS:-256}
B_CLIENTS=${B_CLIENTS:-16}
DURATION=${DURATION:-10}
TABLE_SIZE=${TABLE_SIZE:-200000}
BACKEND_CONNECTIONS=${BACKEND_CONNECTIONS:-32}
ENDPOINTS=${ENDPOINTS:-direct hscale limited}
LIMIT_A=${LIMIT_A:-backend_share = 0.5}

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start noisy_neighbour sysbench mariadb python3

log "starting a playground with one server"
start_server pg --max-connections=2000
BACKEND=(-uhscale -phscale --skip-ssl)
MARIADB_VERSION=$(mariadb -h127.0.0.1 -P"$DB_PORT" "${BACKEND[@]}" -N -B -e 'SELECT VERSION()')
mariadb -h127.0.0.1 -P"$DB_PORT" "${BACKEND[@]}" -e 'CREATE DATABASE IF NOT EXISTS sbtest'
SB_COMMON=(--tables=1 --table-size="$TABLE_SIZE" --mysql-db=sbtest --rand-type=uniform
  --db-ps-mode=disable --percentile=99 --mysql-ssl=off --mysql-host=127.0.0.1)
log "preparing sbtest1 with $TABLE_SIZE rows"
sysbench oltp_point_select "${SB_COMMON[@]}" --mysql-port="$DB_PORT" --mysql-user=hscale \
  --mysql-password=hscale prepare >"$TMP/prepare.log" 2>&1 ||
  die "sysbench prepare failed: $(tail -n 5 "$TMP/prepare.log")"

# Tenant A's statement: a full scan (no index on c).
cat >"$TMP/scan.lua" <<'LUA'
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end
function event()
  con:query("SELECT COUNT(*) FROM sbtest1 WHERE c LIKE '%zz%'")
end
function thread_done()
  con:disconnect()
end
LUA

# hscale_config PORT A-LIMITS B-LIMITS: the playground's config with users
# a and b (password "pw") and BACKEND_CONNECTIONS backend connections.
hscale_config() {
  python3 - "$TMP/pg/hscale.toml" "$TMP/hscale-$1.toml" "$1" "$BACKEND_CONNECTIONS" "$2" "$3" <<'PY'
import re, sys
src, dst, port, conns, a, b = sys.argv[1:]
text = open(src).read()
text = re.sub(r'(?m)^listen = "127\.0\.0\.1:\d+"', f'listen = "127.0.0.1:{port}"', text, count=1)
text = re.sub(r'(?m)^max_connections = 64$', f'max_connections = {conns}', text)
users = f'[[users]]\nname = "a"\npassword = "pw"\n{a}\n\n[[users]]\nname = "b"\npassword = "pw"\n{b}\n\n'
text = text.replace('[[users]]\n', users + '[[users]]\n', 1)
open(dst, 'w').write(text)
PY
}

# start_hscale A-LIMITS B-LIMITS: an `hscale serve` of its own; sets
# HSCALE_PORT and HSCALE_PID.
start_hscale() {
  HSCALE_PORT=$(free_port)
  hscale_config "$HSCALE_PORT" "$1" "$2"
  "$HSCALE" serve -c "$TMP/hscale-$HSCALE_PORT.toml" >"$TMP/hscale.out" 2>"$TMP/hscale-$HSCALE_PORT.log" </dev/null &
  HSCALE_PID=$!
  PIDS+=("$HSCALE_PID")
  for _ in $(seq 1 100); do
    mariadb -h127.0.0.1 -P"$HSCALE_PORT" -ub -ppw --skip-ssl -e 'SELECT 1' >/dev/null 2>&1 && return
    sleep 0.1
  done
  die "hscale did not start: $(tail -n 5 "$TMP/hscale-$HSCALE_PORT.log")"
}
stop_hscale() {
  kill -TERM "$HSCALE_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$HSCALE_PID" 2>/dev/null || break; sleep 0.1; done
}

# bench OUT TENANT PORT: one tenant's sysbench run in the background.
bench() {
  local out=$1 tenant=$2 port=$3 user pass
  case $endpoint in
    direct) user=hscale pass=hscale ;;
    *) user=$tenant pass=pw ;;
  esac
  if [[ $tenant == a ]]; then
    sysbench "$TMP/scan.lua" "${SB_COMMON[@]}" --mysql-port="$port" --mysql-user="$user" \
      --mysql-password="$pass" --threads="$A_CLIENTS" --time="$DURATION" --events=0 \
      --mysql-ignore-errors=all run >"$out" 2>&1 &
  else
    sysbench oltp_point_select "${SB_COMMON[@]}" --mysql-port="$port" --mysql-user="$user" \
      --mysql-password="$pass" --threads="$B_CLIENTS" --time="$DURATION" --events=0 \
      --mysql-ignore-errors=all run >"$out" 2>&1 &
  fi
}
qps() { awk '$1 == "queries:" { gsub(/\(/, "", $3); printf "%.0f", $3; exit }' "$1"; }
p99() { awk '/99th percentile:/ { print $3; exit }' "$1"; }
errors() { awk '$1 == "ignored" && $2 == "errors:" { print $3; exit }' "$1"; }

declare -A R
for endpoint in $ENDPOINTS; do
  case $endpoint in
    direct) port=$DB_PORT ;;
    hscale) start_hscale "" ""; port=$HSCALE_PORT ;;
    limited) start_hscale "$LIMIT_A" 'priority = "high"'; port=$HSCALE_PORT ;;
    *) die "unknown endpoint $endpoint" ;;
  esac
  log "$endpoint: B alone ($B_CLIENTS clients, ${DURATION}s)"
  bench "$TMP/$endpoint-b-alone.log" b "$port"; wait $!
  log "$endpoint: A alone ($A_CLIENTS clients, ${DURATION}s)"
  bench "$TMP/$endpoint-a-alone.log" a "$port"; wait $!
  log "$endpoint: A and B together"
  bench "$TMP/$endpoint-a-both.log" a "$port"; a_pid=$!
  sleep 2
  bench "$TMP/$endpoint-b-both.log" b "$port"; b_pid=$!
  wait "$b_pid"; wait "$a_pid"
  for f in b-alone a-alone a-both b-both; do
    R[$endpoint/$f/qps]=$(qps "$TMP/$endpoint-$f.log")
    R[$endpoint/$f/p99]=$(p99 "$TMP/$endpoint-$f.log")
    R[$endpoint/$f/err]=$(errors "$TMP/$endpoint-$f.log")
  done
  [[ $endpoint == direct ]] || stop_hscale
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
echo "# noisy neighbour: tenant A $A_CLIENTS clients of full scans, tenant B $B_CLIENTS clients of point selects"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "- MariaDB $MARIADB_VERSION, $(sysbench --version), $(nproc) cores; sbtest1 of $TABLE_SIZE rows; ${DURATION}s per run (B starts 2 s after A in the run together)"
echo "- hscale: $BACKEND_CONNECTIONS backend connections; limited: a $LIMIT_A, b priority = \"high\""
echo "- qps / p99 ms (errors); ratios: B together / B alone"
echo
echo "| way in | B alone | A alone | B beside A | A beside B | B qps ratio | B p99 ratio |"
echo "|---|---|---|---|---|---:|---:|"
for endpoint in $ENDPOINTS; do
  cell() { printf '%s / %s (%s)' "${R[$endpoint/$1/qps]:--}" "${R[$endpoint/$1/p99]:--}" "${R[$endpoint/$1/err]:-0}"; }
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$endpoint" "$(cell b-alone)" "$(cell a-alone)" \
    "$(cell b-both)" "$(cell a-both)" \
    "$(ratio "${R[$endpoint/b-both/qps]:-}" "${R[$endpoint/b-alone/qps]:-}")" \
    "$(ratio "${R[$endpoint/b-both/p99]:-}" "${R[$endpoint/b-alone/p99]:-}")"
done
