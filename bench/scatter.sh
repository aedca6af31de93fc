#!/usr/bin/env bash
# Scatter queries (issue 4): an aggregate with GROUP BY and an
# ORDER BY ... LIMIT 10 over a table split into 1, 4, 16 and 64 partitions
# on 4 backends, next to the same query on one MariaDB holding all the rows.
# Latency is the mean at concurrency 1; throughput is queries per second at
# concurrency 8 (mariadb-slap). Markdown on stdout, progress on stderr.
#
# Environment: ROWS (default 100000), QUERIES (per run, default 400),
# PARTITIONS (default "1 4 16 64"), HSCALE (binary, default
# ./target/release/hscale).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

ROWS=${ROWS:-100000}
QUERIES=${QUERIES:-400}
PARTITIONS=${PARTITIONS:-1 4 16 64}
HSCALE=${HSCALE:-./target/release/hscale}

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb mariadb-slap python3
start_playground 4 scatter

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
backend() { local b=$1; shift; mariadb -h127.0.0.1 -P"${BACKEND_PORTS[$b]}" -uhscale -phscale --skip-ssl "$@"; }

TABLE="(id INT NOT NULL, k INT NOT NULL, grp INT NOT NULL, v INT NOT NULL, pad CHAR(20) NOT NULL, PRIMARY KEY (id, k))"
SELECT_ROWS="SELECT seq, seq, seq % 50, (seq * 7919) % 100000, 'pad' FROM seq_1_to_$ROWS"

log "loading $ROWS rows into the reference database"
backend 0 -e "CREATE DATABASE ref; USE ref; CREATE TABLE s $TABLE; INSERT INTO s $SELECT_ROWS"

for n in $PARTITIONS; do
  db="p$n"
  log "$n partition(s): setting up $db"
  proxy -e "CREATE DATABASE $db; CREATE TABLE $db.s $TABLE"
  proxy -e "HSCALE SETUP_TABLE('$db.s', 'k', 's_default', 'shard0', 'MOD($n)')"
  if (( n == 1 )); then
    backend 0 "$db" -e "INSERT INTO s_default $SELECT_ROWS"
  else
    for ((i = 0; i < n; i++)); do
      proxy -e "HSCALE ADD_PARTITION('$db.s', 'p$i', '$i', 'shard$((i % 4))')"
    done
    pids=()
    for ((i = 0; i < n; i++)); do
      backend $((i % 4)) "$db" -e "INSERT INTO s_p$i $SELECT_ROWS WHERE seq % $n = $i" &
      pids+=($!)
    done
    wait "${pids[@]}"
  fi
done

GROUP_Q="SELECT grp, COUNT(*), SUM(v) FROM s GROUP BY grp"
TOP_Q="SELECT id, v FROM s ORDER BY v DESC, id LIMIT 10"

# Seconds for QUERIES queries of $1 at concurrency $2, through port $3 as $4 in db $5.
slap() {
  local q=$1 c=$2 port=$3 user=$4 db=$5 pass=() out
  [[ "$user" == hscale ]] && pass=(-phscale)
  out=$(mariadb-slap -h127.0.0.1 -P"$port" -u"$user" "${pass[@]}" --create-schema="$db" --no-drop \
    --query="$q" --concurrency="$c" --number-of-queries="$QUERIES" --iterations=1 2>&1) \
    || die "mariadb-slap failed: $out"
  awk '/Average number of seconds to run all queries/ {print $9}' <<<"$out"
}

row() {
  local name=$1 q=$2 label=$3 port=$4 user=$5 db=$6 t1 t8
  t1=$(slap "$q" 1 "$port" "$user" "$db")
  t8=$(slap "$q" 8 "$port" "$user" "$db")
  python3 -c "print(f'| $name | $label | {1000 * $t1 / $QUERIES:.2f} | {$QUERIES / $t8:.0f} |')"
}

rows=()
for query in GROUP TOP; do
  if [[ $query == GROUP ]]; then q=$GROUP_Q; else q=$TOP_Q; fi
  log "$query: one server"
  rows+=("$(row "$query" "$q" "one MariaDB, all rows" "${BACKEND_PORTS[0]}" hscale ref)")
  for n in $PARTITIONS; do
    log "$query: $n partition(s)"
    rows+=("$(row "$query" "$q" "hscale, $n partition(s)" "$PORT" root "p$n")")
  done
done

echo "## Scatter queries (bench/scatter.sh)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), nproc: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "- $ROWS rows; 4 backends (one machine); MOD(n) partitions spread round-robin, plus the (empty) default partition; $QUERIES queries per run"
echo "- GROUP: \`$GROUP_Q\` (50 groups); TOP: \`$TOP_Q\`"
echo
echo "| query | where | latency ms (c=1) | queries/s (c=8) |"
echo "|---|---|---:|---:|"
printf '%s\n' "${rows[@]}"
