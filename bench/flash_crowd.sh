#!/usr/bin/env bash
# The flash-crowd table of issue 33: every client runs one identical
# aggregate (`bench/flash_crowd.lua`: SELECT COUNT(*), SUM(k), MAX(c) FROM
# sbtest1 WHERE id BETWEEN 1 AND 5000) against one MariaDB reached
# directly, through haproxy in TCP mode, and through hscale with
# coalescing off and on (`[proxy] coalesce`, exec/coalesce.rs). Prints a
# Markdown table on stdout (progress on stderr): qps, p50 and p99 latency
# (ms), failed statements, the server's executions per statement
# (Com_select over the statements sysbench counted: below 1 when reads
# were coalesced) and the proxy's CPU per statement.
#
# Environment:
#   HSCALE       binary (default ./target/release/hscale)
#   CLIENTS      client counts (default "64 512 2048")
#   ENDPOINTS    columns to run (default "direct haproxy hscale_off hscale_on")
#   DURATION     seconds per cell (default 10)
#   TABLE_SIZE   rows of sbtest1 (default 10000)
#   BACKEND_CONNECTIONS  hscale's [[backends]] max_connections (default 64)
# Run it with nothing else on the machine; 2,048 clients need `ulimit -n`
# above 5,000 (the script raises its own soft limit). Everything it
# starts is stopped on any exit.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"
HSCALE=${HSCALE:-./target/release/hscale}
CLIENTS=${CLIENTS:-64 512 2048}
ENDPOINTS=${ENDPOINTS:-direct haproxy hscale_off hscale_on}
DURATION=${DURATION:-10}
TABLE_SIZE=${TABLE_SIZE:-10000}
BACKEND_CONNECTIONS=${BACKEND_CONNECTIONS:-64}
LUA=$PWD/bench/flash_crowd.lua

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start flash_crowd sysbench haproxy mariadb python3 getconf
CLK_TCK=$(getconf CLK_TCK)

log "starting one server (a playground of one backend)"
start_server pg --max-connections=6000 --thread-cache-size=256

# start_hscale NAME COALESCE: an `hscale serve` of the playground's config
# with `[proxy] coalesce` set; sets its port in PORT_<NAME>, pid in PID_<NAME>.
declare -A PORTS PIDOF
start_hscale() {
  local name=$1 coalesce=$2 port
  port=$(free_port)
  python3 - "$TMP/pg/hscale.toml" "$TMP/$name.toml" "$port" "$BACKEND_CONNECTIONS" "$coalesce" <<'PY'
import re, sys
src, dst, port, conns, coalesce = sys.argv[1:]
text = open(src).read()
text = re.sub(r'(?m)^listen = "127\.0\.0\.1:\d+"', f'listen = "127.0.0.1:{port}"', text, count=1)
text = re.sub(r'(?m)^max_connections = 64$', f'max_connections = {conns}', text)
text = re.sub(r'(?m)^coalesce = .*\n', '', text)
text = text.replace('[proxy]\n', f'[proxy]\ncoalesce = {coalesce}\n', 1)
open(dst, 'w').write(text)
PY
  "$HSCALE" serve -c "$TMP/$name.toml" >"$TMP/$name.out" 2>"$TMP/$name.log" </dev/null &
  PIDS+=($!)
  PIDOF[$name]=$!
  PORTS[$name]=$port
  for _ in $(seq 1 100); do
    mariadb -h127.0.0.1 -P"$port" -uroot --skip-ssl -e 'SELECT 1' >/dev/null 2>&1 && return
    sleep 0.1
  done
  die "hscale $name did not start: $(tail -n 5 "$TMP/$name.log")"
}
start_hscale hscale_off false
start_hscale hscale_on true

start_haproxy "$DB_PORT"
PIDOF[haproxy]=$HAPROXY_PID

BACKEND=(-uhscale -phscale --skip-ssl)
MARIADB_VERSION=$(mariadb -h127.0.0.1 -P"$DB_PORT" "${BACKEND[@]}" -N -B -e 'SELECT VERSION()')
mariadb -h127.0.0.1 -P"$DB_PORT" "${BACKEND[@]}" -e 'CREATE DATABASE IF NOT EXISTS sbtest'
SB_COMMON=(--tables=1 --table-size="$TABLE_SIZE" --mysql-db=sbtest --rand-type=uniform
  --db-ps-mode=disable --percentile=99 --histogram=on --mysql-ssl=off)
sysbench oltp_read_only "${SB_COMMON[@]}" --mysql-host=127.0.0.1 --mysql-port="$DB_PORT" \
  --mysql-user=hscale --mysql-password=hscale prepare >"$TMP/prepare.log" 2>&1 ||
  die "sysbench prepare failed: $(tail -n 5 "$TMP/prepare.log")"

com_select() {
  mariadb -h127.0.0.1 -P"$DB_PORT" "${BACKEND[@]}" -N -B -e "SHOW GLOBAL STATUS LIKE 'Com_select'" | awk '{ print $2 }'
}

declare -A QPS P50 P99 ERR CPU EXEC
run() {
  local target=$1 clients=$2 key="$1/$2" out="$TMP/$1-$2.log"
  local -a conn
  local pid="" before after total fatal ignored sel_before sel_after
  case $target in
    direct) conn=(--mysql-port="$DB_PORT" --mysql-user=hscale --mysql-password=hscale) ;;
    haproxy) conn=(--mysql-port="$HAPROXY_PORT" --mysql-user=hscale --mysql-password=hscale) pid=${PIDOF[haproxy]} ;;
    hscale_off | hscale_on) conn=(--mysql-port="${PORTS[$target]}" --mysql-user=root --mysql-password=) pid=${PIDOF[$target]} ;;
    *) die "unknown endpoint $target" ;;
  esac
  log "$target $clients clients (${DURATION}s)"
  [[ -z "$pid" ]] || before=$(cpu_ticks "$pid")
  sel_before=$(com_select)
  sysbench "$LUA" "${SB_COMMON[@]}" --mysql-host=127.0.0.1 "${conn[@]}" --threads="$clients" \
    --time="$DURATION" --events=0 --report-interval=0 --mysql-ignore-errors=all run >"$out" 2>&1 || true
  sel_after=$(com_select)
  [[ -z "$pid" ]] || after=$(cpu_ticks "$pid")
  total=$(awk '$1 == "queries:" { print $2; exit }' "$out")
  QPS[$key]=$(awk '$1 == "queries:" { gsub(/\(/, "", $3); printf "%.0f", $3; exit }' "$out")
  P99[$key]=$(awk '/99th percentile:/ { print $3; exit }' "$out")
  P50[$key]=$(awk '$2 ~ /^\|/ && $1 ~ /^[0-9.]+$/ { v[n] = $1; c[n] = $NF; t += $NF; n++ }
    END { for (i = 0; i < n; i++) { s += c[i]; if (s * 2 >= t) { print v[i]; exit } } }' "$out")
  fatal=$(grep -c 'FATAL' "$out" || true)
  ignored=$(awk '$1 == "ignored" && $2 == "errors:" { print $3; exit }' "$out")
  ERR[$key]=$((fatal + ${ignored:-0}))
  if [[ -n "$total" && "$total" -gt 0 ]]; then
    EXEC[$key]=$(awk -v s="$((sel_after - sel_before))" -v n="$total" 'BEGIN { printf "%.3f", s / n }')
    if [[ -n "$pid" ]]; then
      CPU[$key]=$(awk -v t="$((after - before))" -v hz="$CLK_TCK" -v n="$total" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
    fi
  fi
  [[ -n "${QPS[$key]}" ]] || { QPS[$key]=fail; log "$key failed: $(tail -n 3 "$out")"; }
}

for clients in $CLIENTS; do
  for target in $ENDPOINTS; do
    run "$target" "$clients"
  done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
cell() { local k=$1; [[ -n "${QPS[$k]:-}" ]] && printf '%s / %s / %s / %s' "${QPS[$k]}" "${P50[$k]:--}" "${P99[$k]:--}" "${ERR[$k]:-0}" || printf -- '-'; }
echo "# flash crowd: one identical aggregate from every client"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "- MariaDB $MARIADB_VERSION, $(sysbench --version), $(haproxy -v | head -n 1 | cut -d' ' -f1-3), $(nproc) cores"
echo "- ${DURATION}s per cell, sbtest1 of $TABLE_SIZE rows, hscale backend connections: $BACKEND_CONNECTIONS"
echo "- qps / p50 ms / p99 ms / failed statements; exec: server executions (Com_select) per statement; CPU: µs of proxy CPU per statement"
echo
echo "| clients | direct | haproxy | hscale coalesce off | hscale coalesce on | on/direct | off/direct | exec off | exec on | CPU off | CPU on |"
echo "|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|"
for clients in $CLIENTS; do
  d="direct/$clients" h="haproxy/$clients" off="hscale_off/$clients" on="hscale_on/$clients"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$clients" \
    "$(cell "$d")" "$(cell "$h")" "$(cell "$off")" "$(cell "$on")" \
    "$(ratio "${QPS[$on]:-}" "${QPS[$d]:-}")" "$(ratio "${QPS[$off]:-}" "${QPS[$d]:-}")" \
    "${EXEC[$off]:--}" "${EXEC[$on]:--}" "${CPU[$off]:--}" "${CPU[$on]:--}"
done
