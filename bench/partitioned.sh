#!/usr/bin/env bash
# The seed benchmark (shared/seeds/001): mariadb-slap sends HSCALE's SELECT
# with comments against its `small` table at concurrency 1, 10, 20 and 40,
# 10,000 queries each: directly to MariaDB, through hscale with `small`
# unpartitioned, and through hscale with `small` partitioned on category over
# two backends. Prints the seed's table (ms per run) and the ms each query
# gains through hscale. Markdown on stdout, progress on stderr.
#
# Environment: QUERIES (default 10000), CONCURRENCY (default "1 10 20 40"),
# REPEAT (runs per cell, the median is shown; default 3),
# HSCALE (binary, default ./target/release/hscale).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

QUERIES=${QUERIES:-10000}
CONCURRENCY=${CONCURRENCY:-1 10 20 40}
HSCALE=${HSCALE:-./target/release/hscale}
REPEAT=${REPEAT:-3}

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb mariadb-slap python3
start_playground 2 partbench
MAIN_PORT=${BACKEND_PORTS[0]}

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
direct() { mariadb -h127.0.0.1 -P"$MAIN_PORT" -uhscale -phscale --skip-ssl "$@"; }

TABLE="CREATE TABLE small (id INT UNSIGNED NOT NULL, category ENUM('books', 'hardware', 'software') NOT NULL, PRIMARY KEY(id, category)) ENGINE=HEAP"
ROWS="INSERT INTO small (id, category) VALUES (1, 'books'), (2, 'hardware'), (3, 'software')"
for db in slap slap_part; do
  direct -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db; USE $db; $TABLE; $ROWS"
done
proxy -e "HSCALE SETUP_TABLE('slap_part.small', 'category', 'small_default', 'shard0', 'NONE()')"
proxy -e "HSCALE ADD_PARTITION('slap_part.small', 'books', 'books', 'shard1')"
proxy --batch -e "HSCALE EXPLAIN SELECT id FROM slap_part.small WHERE small.category='books'" >&2

QUERY="SELECT id, category FROM small WHERE small.category='books' /* Added */ /* some */ /* comments */ /* to */ /* produce */ /* a */ /* higher */ /* tokenizer */ /* load */"

# Median over REPEAT runs of slap1 (the VM's run-to-run noise is large).
slap() {
  local runs=()
  for _ in $(seq 1 "$REPEAT"); do runs+=("$(slap1 "$@")"); done
  printf '%s\n' "${runs[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# Milliseconds for QUERIES queries at concurrency $1 against port $2 as user $3 in db $4.
slap1() {
  local c=$1 port=$2 user=$3 db=$4 pass=() out
  [[ "$user" == hscale ]] && pass=(-phscale)
  # --skip-ssl: the playground's proxy offers TLS and MariaDB's client
  # takes it (about 25 ms of client CPU per connection), its servers do
  # not; the seed compares the hop, so every leg connects in plain text.
  out=$(mariadb-slap -h127.0.0.1 -P"$port" -u"$user" "${pass[@]}" --skip-ssl --create-schema="$db" --no-drop \
    --query="$QUERY" --concurrency="$c" --number-of-queries="$QUERIES" --iterations=1 2>&1) \
    || die "mariadb-slap failed: $out"
  awk '/Average number of seconds to run all queries/ {printf "%d", $9 * 1000}' <<<"$out"
}

rows=()
for c in $CONCURRENCY; do
  log "concurrency $c"
  d=$(slap "$c" "$MAIN_PORT" hscale slap)
  u=$(slap "$c" "$PORT" root slap)
  p=$(slap "$c" "$PORT" root slap_part)
  per_client=$(( QUERIES / c ))
  au=$(python3 -c "print(f'{($u - $d) / $per_client:.3f}')")
  ap=$(python3 -c "print(f'{($p - $d) / $per_client:.3f}')")
  rows+=("| $c | $d | $u | $p | $au | $ap |")
done

echo "## Seed benchmark (bench/partitioned.sh)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), nproc: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "- $QUERIES queries per run, median of $REPEAT runs; ms for the whole run, as in the seed's table; added ms per query = (hscale - MariaDB) / queries per client"
echo "- partitioned: \`small\` on category with NONE(), 'books' on shard1, the rest in small_default on shard0"
echo
echo "| concurrency | MariaDB ms | hscale unpartitioned ms | hscale partitioned ms | added ms/query unpartitioned | added ms/query partitioned |"
echo "|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
