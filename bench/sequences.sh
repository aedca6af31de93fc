#!/usr/bin/env bash
# Inserts into a partitioned AUTO_INCREMENT table through hscale (ids from
# its sequence, filled in by the proxy) against the same inserts into one
# plain AUTO_INCREMENT table directly on MariaDB, in one run. mariadb-slap
# sends single-row INSERTs without an id (keys spread over 8 values; the
# table is partitioned on them with MOD(8): 4 partitions on each of two
# backends). Two more columns split the ratio: the same inserts through
# hscale into the table unpartitioned, and into a partitioned table without
# AUTO_INCREMENT. Markdown on stdout, progress on stderr.
#
# Environment: QUERIES (default 20000), CONCURRENCY (default "1 8 32"),
# REPEAT (runs per cell, the median is shown; default 3),
# HSCALE (binary, default ./target/release/hscale), FLUSH_AT_COMMIT
# (the backends' innodb_flush_log_at_trx_commit, bench/lib.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

QUERIES=${QUERIES:-20000}
CONCURRENCY=${CONCURRENCY:-1 8 32}
HSCALE=${HSCALE:-./target/release/hscale}
REPEAT=${REPEAT:-3}

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb mariadb-slap python3
start_playground 2 seqbench
MAIN_PORT=${BACKEND_PORTS[0]}

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
direct() { mariadb -h127.0.0.1 -P"$MAIN_PORT" -uhscale -phscale --skip-ssl "$@"; }

TABLE="CREATE TABLE t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, v VARCHAR(20) NOT NULL)"
# The same table without AUTO_INCREMENT (each backend makes the id with
# UUID_SHORT()), partitioned the same way: what partitioning costs without
# the sequence.
NOSEQ="CREATE TABLE t (id BIGINT UNSIGNED NOT NULL DEFAULT (UUID_SHORT()), k INT NOT NULL, v VARCHAR(20) NOT NULL, PRIMARY KEY (id, k))"
for db in seq_direct seq_part seq_plain; do
  direct -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db; USE $db; $TABLE"
done
direct -e "DROP DATABASE IF EXISTS seq_noseq; CREATE DATABASE seq_noseq; USE seq_noseq; $NOSEQ"
for db in seq_part seq_noseq; do
  proxy -e "HSCALE SETUP_TABLE('$db.t', 'k', 't_default', 'shard0', 'MOD(8)')" >&2
  for v in 1 2 3 4 5 6 7; do
    proxy -e "HSCALE ADD_PARTITION('$db.t', 'p$v', '$v', 'shard$((v % 2))')" >&2
  done
done

QUERY_FILE=$(mktemp)
trap 'rm -f "$QUERY_FILE"; cleanup_playground' EXIT
for i in $(seq 0 999); do
  echo "INSERT INTO t (k, v) VALUES ($((i % 8)), 'row $i');"
done >"$QUERY_FILE"

slap() {
  local runs=()
  for _ in $(seq 1 "$REPEAT"); do runs+=("$(slap1 "$@")"); done
  printf '%s\n' "${runs[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# Inserts per second for QUERIES inserts at concurrency $1 against port $2 as user $3 in db $4.
slap1() {
  local c=$1 port=$2 user=$3 db=$4 pass=() out
  [[ "$user" == hscale ]] && pass=(-phscale)
  # --skip-ssl: the client turns TLS on by default and the playground's
  # proxy offers it while the backends do not, so without it every
  # hscale column paid for TLS and the direct one did not.
  out=$(mariadb-slap --skip-ssl -h127.0.0.1 -P"$port" -u"$user" "${pass[@]}" --create-schema="$db" --no-drop \
    --query="$QUERY_FILE" --delimiter=";" --concurrency="$c" --number-of-queries="$QUERIES" --iterations=1 2>&1) \
    || die "mariadb-slap failed: $out"
  awk -v q="$QUERIES" '/Average number of seconds to run all queries/ {printf "%d", q / $9}' <<<"$out"
}

rows=()
for c in $CONCURRENCY; do
  log "concurrency $c"
  d=$(slap "$c" "$MAIN_PORT" hscale seq_direct)
  h=$(slap "$c" "$PORT" root seq_part)
  p=$(slap "$c" "$PORT" root seq_plain)
  n=$(slap "$c" "$PORT" root seq_noseq)
  ratio=$(python3 -c "print(f'{$h / $d:.2f}')")
  rows+=("| $c | $d | $h | $ratio | $p | $n |")
done
seq_rows=$(direct -N -e "SELECT COUNT(*) FROM hscale.sequences WHERE db = 'seq_part'")
[[ "$seq_rows" == 1 ]] || die "no sequence row for seq_part.t"

echo "## Sequences (bench/sequences.sh)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), nproc: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "- backends' innodb_flush_log_at_trx_commit: ${FLUSH_AT_COMMIT:-2, as the playground starts them}"
echo "- $QUERIES single-row INSERTs without an id per run, median of $REPEAT runs"
echo "- direct: one AUTO_INCREMENT table on one MariaDB; hscale: the same table partitioned with MOD(8) over two backends, ids from its sequence"
echo
echo "- to split the ratio: hscale plain = the AUTO_INCREMENT table not partitioned, through hscale (the proxy hop alone; the backend generates ids); hscale no seq = a table without AUTO_INCREMENT partitioned the same way (routing without the sequence)"
echo
echo "| concurrency | MariaDB inserts/s | hscale inserts/s | ratio | hscale plain | hscale no seq |"
echo "|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
