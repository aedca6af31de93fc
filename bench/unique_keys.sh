#!/usr/bin/env bash
# Issue 35 item 5: what a global unique index costs and what it saves
# (docs/src/unique-keys.md). Two measurements through one hscale playground
# with two backends, in one run:
#
# 1. Inserts into `users (id AUTO_INCREMENT PRIMARY KEY, email UNIQUE, name)`
#    partitioned by id with MOD(8) (4 partitions per backend), its email
#    index spread over both backends (lookup hash values 0..31 on shard1),
#    against the same inserts into a table whose UNIQUE key holds the
#    partition column (`UNIQUE (email, id)`: a local key, no index rows),
#    partitioned the same way. Single-row INSERTs with distinct emails.
# 2. Point reads by email: `WHERE email = '...'` through the index (the
#    lookup read, then one partition) against the same read on the local-key
#    table, which asks every partition (a scatter).
#
# Markdown on stdout, progress on stderr. Driven by sysbench
# (bench/unique_keys.lua: emails are literals, which the index needs).
# Environment: TIME (seconds per run, default 20), CONCURRENCY (threads,
# default "1 8 32"), REPEAT (runs per cell, the median is shown; default
# 3), HSCALE (binary, default ./target/release/hscale), FLUSH_AT_COMMIT
# (bench/lib.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

TIME=${TIME:-20}
CONCURRENCY=${CONCURRENCY:-1 8 32}
HSCALE=${HSCALE:-./target/release/hscale}
REPEAT=${REPEAT:-3}
BENCH_NAME=unique_keys
ROWS=10000

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb sysbench python3
start_playground 2 uniquebench
MAIN_PORT=${BACKEND_PORTS[0]}

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
direct() { mariadb -h127.0.0.1 -P"$MAIN_PORT" -uhscale -phscale --skip-ssl "$@"; }

GLOBAL="CREATE TABLE users (id BIGINT AUTO_INCREMENT PRIMARY KEY, email VARCHAR(190) UNIQUE, name VARCHAR(50))"
LOCAL="CREATE TABLE users (id BIGINT AUTO_INCREMENT PRIMARY KEY, email VARCHAR(190), name VARCHAR(50), UNIQUE (email, id))"
direct -e "DROP DATABASE IF EXISTS uk_global; CREATE DATABASE uk_global; USE uk_global; $GLOBAL"
direct -e "DROP DATABASE IF EXISTS uk_local; CREATE DATABASE uk_local; USE uk_local; $LOCAL"
for db in uk_global uk_local; do
  proxy -e "HSCALE SETUP_TABLE('$db.users', 'id', 'users_default', 'shard0', 'MOD(8)')" >&2
  for v in 1 2 3 4 5 6 7; do
    proxy -e "HSCALE ADD_PARTITION('$db.users', 'p$v', '$v', 'shard$((v % 2))')" >&2
  done
done
for v in $(seq 0 31); do
  proxy -e "HSCALE ADD_PARTITION('uk_global.hscale_lookup_users_email', 'l1', '$v', 'shard1')" >&2
done

log "loading $ROWS rows with known emails into each table"
for db in uk_global uk_local; do
  for chunk in $(seq 0 $((ROWS / 100 - 1))); do
    values=$(for i in $(seq 0 99); do printf "('known%d@example.com', 'k')," $((chunk * 100 + i)); done)
    proxy -D "$db" -e "INSERT INTO users (email, name) VALUES ${values%,}"
  done
done

# Events per second: MODE $1 into db $2 with $3 threads (the median of
# REPEAT runs). Each run's emails carry a tag of its own (this function
# runs in a subshell: a counter would not survive it).
per_second() {
  local runs=() out tag
  for _ in $(seq 1 "$REPEAT"); do
    tag="$3-$(date +%s%N)"
    out=$(MODE=$1 ROWS=$ROWS RUN=$tag sysbench bench/unique_keys.lua --mysql-host=127.0.0.1 \
      --mysql-port="$PORT" --mysql-user=root --mysql-db="$2" --threads="$3" --time="$TIME" \
      --db-ps-mode=disable run 2>&1) || die "sysbench failed: $out"
    runs+=("$(awk '/transactions:/ {gsub(/[()]/, "", $3); printf "%d", $3}' <<<"$out")")
  done
  printf '%s\n' "${runs[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

rows=()
for c in $CONCURRENCY; do
  log "concurrency $c"
  l=$(per_second insert uk_local "$c")
  g=$(per_second insert uk_global "$c")
  rl=$(per_second read uk_local "$c")
  rg=$(per_second read uk_global "$c")
  ratio=$(python3 -c "print(f'{$g / $l:.2f}')")
  speedup=$(python3 -c "print(f'{$rg / $rl:.2f}')")
  rows+=("| $c | $l | $g | $ratio | $rl | $rg | $speedup |")
done

echo "## Global unique keys (bench/unique_keys.sh)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), nproc: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "- backends' innodb_flush_log_at_trx_commit: ${FLUSH_AT_COMMIT:-2, as the playground starts them}"
echo "- two backends; users partitioned by id with MOD(8), 4 partitions each; the email index's lookup table half on each backend"
echo "- sysbench bench/unique_keys.lua, ${TIME}s per run, median of $REPEAT runs; inserts: single rows, fresh literal emails; reads: WHERE email = literal among $ROWS rows"
echo "- local key: UNIQUE (email, id), enforced by each partition (no index rows; a read by email asks all 8 partitions); global index: UNIQUE (email)"
echo
echo "| threads | local key inserts/s | global index inserts/s | ratio | scatter reads/s | lookup reads/s | speedup |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
