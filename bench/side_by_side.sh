#!/usr/bin/env bash
# The speed issue's side-by-side table: one MariaDB reached directly, through
# MariaDB's own thread pool (a second server, the same options plus
# thread_handling=pool-of-threads, the same sysbench data), through haproxy
# in TCP mode and through hscale, at each client count, in one run. Prints a
# Markdown table on stdout (progress on stderr): qps, p50 and p99 latency (ms),
# failed statements and the proxy's CPU per statement (utime+stime of the
# proxy process over the statements sysbench counted), split into user and
# system time, with the proxy's context switches per statement.
#
# Environment:
#   HSCALE       binary (default ./target/release/hscale)
#   PLAYGROUND   binary that starts the servers (default HSCALE; an older
#                HSCALE may lack `playground --server-option`)
#   CLIENTS      client counts (default "1 16 64 256 1024 4096")
#   TESTS        sysbench tests (default "oltp_point_select oltp_read_only oltp_read_write")
#   ENDPOINTS    which columns to run (default "direct pool haproxy hscale")
#   DURATION     seconds per cell (default 10)
#   BACKEND_CONNECTIONS  hscale's [[backends]] max_connections (default 64)
#   HSCALE_EXTRA lines appended to hscale's [proxy] section (e.g. "workers = 1")
# Run it with nothing else on the machine. 4,096 clients need `ulimit -n`
# above 10,000 (the script raises its own soft limit).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"
HSCALE=${HSCALE:-./target/release/hscale}
PLAYGROUND=${PLAYGROUND:-$HSCALE}
CLIENTS=${CLIENTS:-1 16 64 256 1024 4096}
TESTS=${TESTS:-oltp_point_select oltp_read_only oltp_read_write}
ENDPOINTS=${ENDPOINTS:-direct pool haproxy hscale}
DURATION=${DURATION:-10}
BACKEND_CONNECTIONS=${BACKEND_CONNECTIONS:-64}
HSCALE_EXTRA=${HSCALE_EXTRA:-}
TABLES=4
TABLE_SIZE=10000

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start side_by_side sysbench haproxy mariadb python3 getconf
(($(ulimit -n) > 10000)) || log "warning: ulimit -n is $(ulimit -n); 4,096 clients need more"
CLK_TCK=$(getconf CLK_TCK)


SERVER_OPTS=(--max-connections=6000 --thread-cache-size=256)
log "starting the server reached directly, through haproxy and through hscale"
start_server plain "${SERVER_OPTS[@]}"
PLAIN_DB=$DB_PORT
log "starting the thread-pool server"
start_server pool "${SERVER_OPTS[@]}" --thread-handling=pool-of-threads
POOL_DB=$DB_PORT

# hscale under test: its own `serve` with the plain playground's config, its
# backend connections set to BACKEND_CONNECTIONS.
HSCALE_PORT=$(free_port)
python3 - "$TMP/plain/hscale.toml" "$TMP/hscale.toml" "$HSCALE_PORT" "$BACKEND_CONNECTIONS" "$HSCALE_EXTRA" <<'PY'
import re, sys
src, dst, port, conns, extra = sys.argv[1:]
text = open(src).read()
text = re.sub(r'(?m)^listen = "127\.0\.0\.1:\d+"', f'listen = "127.0.0.1:{port}"', text, count=1)
text = re.sub(r'(?m)^max_connections = 64$', f'max_connections = {conns}', text)
for line in filter(None, (l.strip() for l in extra.replace('\\n', '\n').split('\n'))):
    key = line.split('=', 1)[0].strip()
    if re.search(rf'(?m)^{re.escape(key)} = ', text):
        text = re.sub(rf'(?m)^{re.escape(key)} = .*$', line, text, count=1)
    else:
        text = text.replace('[proxy]\n', '[proxy]\n' + line + '\n', 1)
open(dst, 'w').write(text)
PY
"$HSCALE" serve -c "$TMP/hscale.toml" >"$TMP/hscale.out" 2>"$TMP/hscale.log" </dev/null &
HSCALE_PID=$!
PIDS+=("$HSCALE_PID")

start_haproxy "$PLAIN_DB"
for _ in $(seq 1 100); do
  mariadb -h127.0.0.1 -P"$HSCALE_PORT" -uroot --skip-ssl -e 'SELECT 1' >/dev/null 2>&1 && break
  sleep 0.1
done

BACKEND=(-uhscale -phscale --skip-ssl)
MARIADB_VERSION=$(mariadb -h127.0.0.1 -P"$PLAIN_DB" "${BACKEND[@]}" -N -B -e 'SELECT VERSION()')
[[ $(mariadb -h127.0.0.1 -P"$POOL_DB" "${BACKEND[@]}" -N -B -e 'SELECT @@thread_handling') == pool-of-threads ]] ||
  die "the thread-pool server does not run pool-of-threads"
SB_COMMON=(--tables="$TABLES" --table-size="$TABLE_SIZE" --mysql-db=sbtest --rand-type=uniform
  --db-ps-mode=disable --percentile=99 --histogram=on --mysql-ssl=off)
for db in "$PLAIN_DB" "$POOL_DB"; do
  mariadb -h127.0.0.1 -P"$db" "${BACKEND[@]}" -e 'CREATE DATABASE IF NOT EXISTS sbtest'
  sysbench oltp_read_write "${SB_COMMON[@]}" --mysql-host=127.0.0.1 --mysql-port="$db" \
    --mysql-user=hscale --mysql-password=hscale prepare >"$TMP/prepare-$db.log" 2>&1 ||
    die "sysbench prepare failed: $(tail -n 5 "$TMP/prepare-$db.log")"
done

declare -A QPS P50 P99 ERR CPU
run() {
  local target=$1 test=$2 clients=$3 key="$1/$2/$3" out="$TMP/$1-$2-$3.log"
  local -a conn
  local pid="" u0 s0 c0 u1 s1 c1 total fatal ignored
  case $target in
    direct) conn=(--mysql-port="$PLAIN_DB" --mysql-user=hscale --mysql-password=hscale) ;;
    pool) conn=(--mysql-port="$POOL_DB" --mysql-user=hscale --mysql-password=hscale) ;;
    haproxy) conn=(--mysql-port="$HAPROXY_PORT" --mysql-user=hscale --mysql-password=hscale) pid=$HAPROXY_PID ;;
    hscale) conn=(--mysql-port="$HSCALE_PORT" --mysql-user=root --mysql-password=) pid=$HSCALE_PID ;;
  esac
  log "$target $test $clients clients (${DURATION}s)"
  [[ -z "$pid" ]] || read -r u0 s0 c0 < <(proc_usage "$pid")
  sysbench "$test" "${SB_COMMON[@]}" --mysql-host=127.0.0.1 "${conn[@]}" --threads="$clients" \
    --time="$DURATION" --events=0 --report-interval=0 --mysql-ignore-errors=all run >"$out" 2>&1 || true
  [[ -z "$pid" ]] || read -r u1 s1 c1 < <(proc_usage "$pid")
  total=$(awk '$1 == "queries:" { print $2; exit }' "$out")
  QPS[$key]=$(awk '$1 == "queries:" { gsub(/\(/, "", $3); printf "%.0f", $3; exit }' "$out")
  P99[$key]=$(awk '/99th percentile:/ { print $3; exit }' "$out")
  # The median from sysbench's latency histogram ("value |*** count").
  P50[$key]=$(awk '$2 ~ /^\|/ && $1 ~ /^[0-9.]+$/ { v[n] = $1; c[n] = $NF; t += $NF; n++ }
    END { for (i = 0; i < n; i++) { s += c[i]; if (s * 2 >= t) { print v[i]; exit } } }' "$out")
  fatal=$(grep -c 'FATAL' "$out" || true)
  ignored=$(awk '$1 == "ignored" && $2 == "errors:" { print $3; exit }' "$out")
  ERR[$key]=$((fatal + ${ignored:-0}))
  if [[ -n "$pid" && -n "$total" && "$total" -gt 0 ]]; then
    CPU[$key]=$(awk -v u="$((u1 - u0))" -v s="$((s1 - s0))" -v c="$((c1 - c0))" -v hz="$CLK_TCK" -v n="$total" \
      'BEGIN { printf "%.1f (%.1f usr, %.1f sys, %.2f cs)", (u + s) / hz * 1e6 / n, u / hz * 1e6 / n, s / hz * 1e6 / n, c / n }')
  fi
  [[ -n "${QPS[$key]}" ]] || { QPS[$key]=fail; log "$key failed: $(tail -n 3 "$out")"; }
}

for test in $TESTS; do
  for clients in $CLIENTS; do
    for target in $ENDPOINTS; do
      run "$target" "$test" "$clients"
    done
  done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
echo "# side by side: direct, MariaDB thread pool, haproxy, hscale"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "- MariaDB $MARIADB_VERSION, $(sysbench --version), $(haproxy -v | head -n 1 | cut -d' ' -f1-3), $(nproc) cores"
echo "- ${DURATION}s per cell, $TABLES tables x $TABLE_SIZE rows, hscale backend connections: $BACKEND_CONNECTIONS${HSCALE_EXTRA:+, [proxy] $HSCALE_EXTRA}"
echo "- qps / p50 ms / p99 ms / failed statements; CPU: µs of proxy CPU per statement (user, system) and its context switches per statement; ratios to direct"
echo
echo "| test | clients | direct | pool | haproxy | hscale | pool/direct | haproxy/direct | hscale/direct | hscale/haproxy | haproxy CPU | hscale CPU |"
echo "|---|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|"
cell() { local k=$1; [[ -n "${QPS[$k]:-}" ]] && printf '%s / %s / %s / %s' "${QPS[$k]}" "${P50[$k]:--}" "${P99[$k]:--}" "${ERR[$k]:-0}" || printf -- '-'; }
for test in $TESTS; do
  for clients in $CLIENTS; do
    d="direct/$test/$clients" p="pool/$test/$clients" h="haproxy/$test/$clients" s="hscale/$test/$clients"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$test" "$clients" \
      "$(cell "$d")" "$(cell "$p")" "$(cell "$h")" "$(cell "$s")" \
      "$(ratio "${QPS[$p]:-}" "${QPS[$d]:-}")" "$(ratio "${QPS[$h]:-}" "${QPS[$d]:-}")" \
      "$(ratio "${QPS[$s]:-}" "${QPS[$d]:-}")" "$(ratio "${QPS[$s]:-}" "${QPS[$h]:-}")" \
      "${CPU[$h]:--}" "${CPU[$s]:--}"
  done
done
