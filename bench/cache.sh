#!/usr/bin/env bash
# The result cache of issue 33 (item 2, exec/cache.rs): one MariaDB, one
# hscale with `[cache] max_bytes` set, sbtest1 cached EXACT or not
# (`HSCALE CACHE_TABLE` / `UNCACHE_TABLE` between cells, on the same
# proxy). Three tables on stdout (progress on stderr), each cell qps /
# p50 ms / p99 ms / failed statements, with the server's executions per
# statement (Com_select over the statements sysbench counted) where reads
# are measured (the exact cache's version reads are SELECTs too: a hit
# counts one per backend involved, a miss one more than the statement):
#
#   read   every client runs the flash crowd's one aggregate
#          (bench/flash_crowd.lua's statement): coalescing alone, and
#          coalescing with the exact cache; direct access beside them;
#   write  every client updates one random row (`UPDATE sbtest1 SET k = k
#          + 1 WHERE id = ?`): the table uncached, then cached EXACT (its
#          triggers bump hscale.cache_versions): what the cache costs
#          writers, also directly on the server (the triggers fire there
#          too);
#   mixed  90% reads of 50 hot aggregates, 10% of those writes: uncached
#          and cached EXACT (the cache's gain and the invalidations), all
#          on sbtest1 (every write invalidates every hot answer: the
#          worst case);
#   spread the same over SPREAD_TABLES tables (hot statement h reads table
#          h % n + 1, each write goes to one at random): a schema whose
#          writes touch some of the hot answers' tables.
#
# Environment:
#   HSCALE       binary (default ./target/release/hscale)
#   CLIENTS      client counts (default "8 64 512")
#   WORKLOADS    tables to run (default "read write mixed spread")
#   SPREAD_TABLES  tables of the spread workload (default 10)
#   DURATION     seconds per cell (default 10)
#   TABLE_SIZE   rows of sbtest1 (default 10000)
#   MAX_BYTES    [cache] max_bytes (default 268435456)
#   BACKEND_CONNECTIONS  hscale's [[backends]] max_connections (default 64)
# Run it with nothing else on the machine. Everything it starts is stopped
# on any exit.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"
HSCALE=${HSCALE:-./target/release/hscale}
CLIENTS=${CLIENTS:-8 64 512}
WORKLOADS=${WORKLOADS:-read write mixed spread}
SPREAD_TABLES=${SPREAD_TABLES:-10}
DURATION=${DURATION:-10}
TABLE_SIZE=${TABLE_SIZE:-10000}
MAX_BYTES=${MAX_BYTES:-268435456}
BACKEND_CONNECTIONS=${BACKEND_CONNECTIONS:-64}
LUA=$PWD/bench/cache_mixed.lua
export TABLE_SIZE

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start cache sysbench mariadb python3 getconf

log "starting one server (a playground of one backend)"
start_server pg --max-connections=4000 --thread-cache-size=256

HS_PORT=$(free_port)
python3 - "$TMP/pg/hscale.toml" "$TMP/hscale.toml" "$HS_PORT" "$BACKEND_CONNECTIONS" "$MAX_BYTES" <<'PY'
import re, sys
src, dst, port, conns, max_bytes = sys.argv[1:]
text = open(src).read()
text = re.sub(r'(?m)^listen = "127\.0\.0\.1:\d+"', f'listen = "127.0.0.1:{port}"', text, count=1)
text = re.sub(r'(?m)^max_connections = 64$', f'max_connections = {conns}', text)
text += f'\n[cache]\nmax_bytes = {max_bytes}\n'
open(dst, 'w').write(text)
PY
"$HSCALE" serve -c "$TMP/hscale.toml" >"$TMP/hscale.out" 2>"$TMP/hscale.log" </dev/null &
PIDS+=($!)
for _ in $(seq 1 100); do
  mariadb -h127.0.0.1 -P"$HS_PORT" -uroot --skip-ssl -e 'SELECT 1' >/dev/null 2>&1 && break
  sleep 0.1
done
mariadb -h127.0.0.1 -P"$HS_PORT" -uroot --skip-ssl -e 'SELECT 1' >/dev/null 2>&1 ||
  die "hscale did not start: $(tail -n 5 "$TMP/hscale.log")"

BACKEND=(-uhscale -phscale --skip-ssl)
MARIADB_VERSION=$(mariadb -h127.0.0.1 -P"$DB_PORT" "${BACKEND[@]}" -N -B -e 'SELECT VERSION()')
mariadb -h127.0.0.1 -P"$DB_PORT" "${BACKEND[@]}" -e 'CREATE DATABASE IF NOT EXISTS sbtest'
SB_COMMON=(--table-size="$TABLE_SIZE" --mysql-db=sbtest --rand-type=uniform
  --db-ps-mode=disable --percentile=99 --histogram=on --mysql-ssl=off)
PREPARED=1
[[ " $WORKLOADS " == *" spread "* ]] && PREPARED=$SPREAD_TABLES
sysbench oltp_read_only "${SB_COMMON[@]}" --tables="$PREPARED" --mysql-host=127.0.0.1 --mysql-port="$DB_PORT" \
  --mysql-user=hscale --mysql-password=hscale prepare >"$TMP/prepare.log" 2>&1 ||
  die "sysbench prepare failed: $(tail -n 5 "$TMP/prepare.log")"

admin() { mariadb -h127.0.0.1 -P"$HS_PORT" -uroot --skip-ssl sbtest -N -B -e "$1"; }
# cache on|off [TABLES]: sbtest1 .. sbtestN cached EXACT, or not.
cache() {
  local i
  for ((i = 1; i <= ${2:-1}; i++)); do
    case $1 in
      on) admin "HSCALE CACHE_TABLE('sbtest.sbtest$i', 'EXACT')" >/dev/null ;;
      off) admin "HSCALE UNCACHE_TABLE('sbtest.sbtest$i')" >/dev/null 2>&1 || true ;;
    esac
  done
}
com_select() {
  mariadb -h127.0.0.1 -P"$DB_PORT" "${BACKEND[@]}" -N -B -e "SHOW GLOBAL STATUS LIKE 'Com_select'" | awk '{ print $2 }'
}

declare -A QPS P50 P99 ERR EXEC
# run KEY MODE ENDPOINT CLIENTS [TABLES]
run() {
  local key=$1 mode=$2 endpoint=$3 clients=$4 tables=${5:-1} out="$TMP/$1.log" total fatal ignored sel_before sel_after
  local -a conn
  case $endpoint in
    direct) conn=(--mysql-port="$DB_PORT" --mysql-user=hscale --mysql-password=hscale) ;;
    hscale) conn=(--mysql-port="$HS_PORT" --mysql-user=root --mysql-password=) ;;
  esac
  log "$key: $mode via $endpoint, $clients clients (${DURATION}s)"
  sel_before=$(com_select)
  MODE=$mode TABLES=$tables sysbench "$LUA" "${SB_COMMON[@]}" --tables="$tables" --mysql-host=127.0.0.1 "${conn[@]}" --threads="$clients" \
    --time="$DURATION" --events=0 --report-interval=0 --mysql-ignore-errors=all run >"$out" 2>&1 || true
  sel_after=$(com_select)
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
  fi
  [[ -n "${QPS[$key]}" ]] || { QPS[$key]=fail; log "$key failed: $(tail -n 3 "$out")"; }
}

for workload in $WORKLOADS; do
  for clients in $CLIENTS; do
    case $workload in
      read)
        cache off
        run "read-direct-$clients" read direct "$clients"
        run "read-off-$clients" read hscale "$clients"
        cache on
        run "read-on-$clients" read hscale "$clients"
        ;;
      write)
        cache off
        run "write-direct-off-$clients" write direct "$clients"
        run "write-off-$clients" write hscale "$clients"
        cache on
        run "write-direct-on-$clients" write direct "$clients"
        run "write-on-$clients" write hscale "$clients"
        ;;
      mixed)
        cache off
        run "mixed-off-$clients" mixed hscale "$clients"
        cache on
        run "mixed-on-$clients" mixed hscale "$clients"
        cache off
        ;;
      spread)
        cache off "$SPREAD_TABLES"
        run "spread-off-$clients" mixed hscale "$clients" "$SPREAD_TABLES"
        cache on "$SPREAD_TABLES"
        run "spread-on-$clients" mixed hscale "$clients" "$SPREAD_TABLES"
        cache off "$SPREAD_TABLES"
        ;;
    esac
  done
done
cache off "$PREPARED"
METRICS=$(admin "HSCALE SHOW CACHE" 2>/dev/null || true)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
cell() { local k=$1; [[ -n "${QPS[$k]:-}" ]] && printf '%s / %s / %s / %s' "${QPS[$k]}" "${P50[$k]:--}" "${P99[$k]:--}" "${ERR[$k]:-0}" || printf -- '-'; }
echo "# result cache (EXACT): flash crowd, writers' cost, mixed"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "- MariaDB $MARIADB_VERSION, $(sysbench --version), $(nproc) cores"
echo "- ${DURATION}s per cell, sbtest1 of $TABLE_SIZE rows, [cache] max_bytes $MAX_BYTES, backend connections $BACKEND_CONNECTIONS"
echo "- qps / p50 ms / p99 ms / failed statements; exec: server executions (Com_select) per statement"
for workload in $WORKLOADS; do
  echo
  case $workload in
    read)
      echo "| clients | direct | hscale (coalescing) | hscale + exact cache | cache/direct | exec coalescing | exec cache |"
      echo "|---:|---|---|---|---:|---:|---:|"
      for c in $CLIENTS; do
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$(cell "read-direct-$c")" "$(cell "read-off-$c")" \
          "$(cell "read-on-$c")" "$(ratio "${QPS[read-on-$c]:-}" "${QPS[read-direct-$c]:-}")" \
          "${EXEC[read-off-$c]:--}" "${EXEC[read-on-$c]:--}"
      done
      ;;
    write)
      echo "| clients | direct, uncached | direct, cached (triggers) | hscale, uncached | hscale, cached | cached/uncached direct | cached/uncached hscale |"
      echo "|---:|---|---|---|---|---:|---:|"
      for c in $CLIENTS; do
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$(cell "write-direct-off-$c")" "$(cell "write-direct-on-$c")" \
          "$(cell "write-off-$c")" "$(cell "write-on-$c")" \
          "$(ratio "${QPS[write-direct-on-$c]:-}" "${QPS[write-direct-off-$c]:-}")" \
          "$(ratio "${QPS[write-on-$c]:-}" "${QPS[write-off-$c]:-}")"
      done
      ;;
    mixed | spread)
      [[ $workload == spread ]] && echo "Spread over $SPREAD_TABLES tables:" && echo
      echo "| clients | hscale, uncached | hscale, exact cache | cached/uncached | exec uncached | exec cached |"
      echo "|---:|---|---|---:|---:|---:|"
      for c in $CLIENTS; do
        printf '| %s | %s | %s | %s | %s | %s |\n' "$c" "$(cell "$workload-off-$c")" "$(cell "$workload-on-$c")" \
          "$(ratio "${QPS[$workload-on-$c]:-}" "${QPS[$workload-off-$c]:-}")" "${EXEC[$workload-off-$c]:--}" "${EXEC[$workload-on-$c]:--}"
      done
      ;;
  esac
done
[[ -z "$METRICS" ]] || { echo; echo "HSCALE SHOW CACHE at the end: $METRICS"; }
