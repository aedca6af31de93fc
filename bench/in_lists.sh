#!/usr/bin/env bash
# Key IN lists over several partitions (route/in_lists.rs): point reads of
# KEYS keys at a time (`SELECT ... WHERE id IN (...)`, the ORM prefetch
# pattern) and UPDATEs of the same shape, over a table partitioned with
# MOD(8) over two backends, through hscale, against the same statements
# on one table directly, in one run. With BASE_HSCALE set, the same
# statements also through that binary (before), on a second playground.
# Markdown on stdout, progress on stderr.
#
# Environment: KEYS (keys per list, default 100), ROWS (default 100000),
# QUERIES (per run, default 2000), CONCURRENCY (default 8),
# HSCALE (default ./target/release/hscale), BASE_HSCALE (optional).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

KEYS=${KEYS:-100}
ROWS=${ROWS:-100000}
QUERIES=${QUERIES:-2000}
CONCURRENCY=${CONCURRENCY:-8}
HSCALE=${HSCALE:-./target/release/hscale}

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb mariadb-slap python3

READS=$(mktemp)
WRITES=$(mktemp)
python3 - "$KEYS" "$ROWS" "$READS" "$WRITES" <<'PY'
import random, sys
keys, rows, reads, writes = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = random.Random(7)
with open(reads, "w") as r, open(writes, "w") as w:
    for _ in range(200):
        ids = ", ".join(str(rng.randrange(1, rows + 1)) for _ in range(keys))
        r.write(f"SELECT id, v FROM t WHERE id IN ({ids});\n")
        w.write(f"UPDATE t SET v = v + 1 WHERE id IN ({ids});\n")
PY

# Inserts ROWS rows into db.t on port $1 as user $2.
fill() {
  local port=$1 user=$2 pass=()
  [[ "$user" == hscale ]] && pass=(-phscale)
  python3 - "$ROWS" <<'PY' | mariadb -h127.0.0.1 -P"$port" -u"$user" "${pass[@]}" --skip-ssl inb
import sys
rows = int(sys.argv[1])
for a in range(1, rows + 1, 1000):
    print("INSERT INTO t (id, v) VALUES " + ", ".join(f"({i}, 0)" for i in range(a, min(a + 1000, rows + 1))) + ";")
PY
}

# Statements per second: file $1 at port $2 as user $3.
slap() {
  local file=$1 port=$2 user=$3 pass=() out
  [[ "$user" == hscale ]] && pass=(-phscale)
  out=$(mariadb-slap --skip-ssl -h127.0.0.1 -P"$port" -u"$user" "${pass[@]}" --create-schema=inb --no-drop \
    --query="$file" --delimiter=";" --concurrency="$CONCURRENCY" --number-of-queries="$QUERIES" --iterations=1 2>&1) \
    || die "mariadb-slap failed: $out"
  awk -v q="$QUERIES" '/Average number of seconds to run all queries/ {printf "%d", q / $9}' <<<"$out"
}

# A playground of binary $1 with inb.t partitioned and filled; the
# direct table too. Sets PORT, MAIN_PORT.
setup() {
  HSCALE=$1 start_playground 2 inlists
  trap 'rm -f "$READS" "$WRITES"; cleanup_playground' EXIT
  MAIN_PORT=${BACKEND_PORTS[0]}
  mariadb -h127.0.0.1 -P"$MAIN_PORT" -uhscale -phscale --skip-ssl -e \
    "DROP DATABASE IF EXISTS inb; CREATE DATABASE inb; CREATE TABLE inb.t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)"
  local p="mariadb -h127.0.0.1 -P$PORT -uroot --skip-ssl inb"
  $p -e "HSCALE SETUP_TABLE('t', 'id', 't_default', 'shard0', 'MOD(8)')" >&2
  for v in 1 2 3 4 5 6 7; do
    $p -e "HSCALE ADD_PARTITION('t', 'p$v', '$v', 'shard$((v % 2))')" >&2
  done
  fill "$PORT" root
}

setup "$HSCALE"
mariadb -h127.0.0.1 -P"$MAIN_PORT" -uhscale -phscale --skip-ssl -e \
  "DROP DATABASE IF EXISTS inb_d; CREATE DATABASE inb_d; CREATE TABLE inb_d.t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)"
log "filling the direct table"
python3 - "$ROWS" <<'PY' | mariadb -h127.0.0.1 -P"$MAIN_PORT" -uhscale -phscale --skip-ssl inb_d
import sys
rows = int(sys.argv[1])
for a in range(1, rows + 1, 1000):
    print("INSERT INTO t (id, v) VALUES " + ", ".join(f"({i}, 0)" for i in range(a, min(a + 1000, rows + 1))) + ";")
PY
# The same statements on the direct table.
direct() { sed 's/ t / inb_d.t /' "$1" >"$1.d"; echo "$1.d"; }
dr=$(direct "$READS"); dw=$(direct "$WRITES")
log "reads"
read_direct=$(slap "$dr" "$MAIN_PORT" hscale)
read_new=$(slap "$READS" "$PORT" root)
log "writes"
write_direct=$(slap "$dw" "$MAIN_PORT" hscale)
write_new=$(slap "$WRITES" "$PORT" root)
read_base=""; write_base=""
if [[ -n "${BASE_HSCALE:-}" ]]; then
  cleanup_playground
  set -e
  PG_PID=""
  setup "$BASE_HSCALE"
  log "reads and writes through the base binary"
  read_base=$(slap "$READS" "$PORT" root)
  write_base=$(slap "$WRITES" "$PORT" root)
fi
rm -f "$dr" "$dw"

ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
echo "## Key IN lists over several partitions (bench/in_lists.sh)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), nproc: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "- $ROWS rows, MOD(8) over two backends; $KEYS random keys per statement; $QUERIES statements per run at concurrency $CONCURRENCY (mariadb-slap)"
echo
echo "| statement | direct/s | hscale/s | ratio | base hscale/s | hscale / base |"
echo "|---|---:|---:|---:|---:|---:|"
for row in "SELECT ... WHERE id IN (...)|$read_direct|$read_new|$read_base" "UPDATE ... WHERE id IN (...)|$write_direct|$write_new|$write_base"; do
  IFS='|' read -r what d n b <<<"$row"
  if [[ -n "$b" ]]; then
    echo "| $what | $d | $n | $(ratio "$n" "$d") | $b | $(ratio "$n" "$b") |"
  else
    echo "| $what | $d | $n | $(ratio "$n" "$d") | | |"
  fi
done
