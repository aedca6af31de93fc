#!/usr/bin/env bash
# LOAD DATA LOCAL INFILE of one file (ROWS rows, tab-separated, keys over 8
# values) through hscale into a table partitioned on the key with MOD(8)
# over two backends, against the same load directly into one plain table
# on the main backend, in one run, with the mariadb client. Each load
# starts from an empty table (TRUNCATE before it); the median of REPEAT
# loads is shown. Markdown on stdout, progress on stderr.
#
# Environment: ROWS (default 200000), REPEAT (default 3),
# HSCALE (binary, default ./target/release/hscale).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

ROWS=${ROWS:-200000}
REPEAT=${REPEAT:-3}
HSCALE=${HSCALE:-./target/release/hscale}

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb python3
start_playground 2 loadbench
MAIN_PORT=${BACKEND_PORTS[0]}

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl --local-infile=1 "$@"; }
direct() { mariadb -h127.0.0.1 -P"$MAIN_PORT" -uhscale -phscale --skip-ssl --local-infile=1 "$@"; }

TABLE="CREATE TABLE t (id INT NOT NULL, k INT NOT NULL, v VARCHAR(40) NOT NULL, PRIMARY KEY (id, k))"
for db in load_direct load_part; do
  direct -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db; USE $db; $TABLE"
done
proxy -e "HSCALE SETUP_TABLE('load_part.t', 'k', 't_default', 'shard0', 'MOD(8)')" >&2
for v in 1 2 3 4 5 6 7; do
  proxy -e "HSCALE ADD_PARTITION('load_part.t', 'p$v', '$v', 'shard$((v % 2))')" >&2
done

FILE="$TMP/rows.tsv"
python3 -c "
import sys
with open(sys.argv[1], 'w') as f:
    for i in range(int(sys.argv[2])):
        f.write(f'{i}\t{i % 8}\tvalue number {i} of the file\n')
" "$FILE" "$ROWS"

# Seconds for one load: $1 = proxy or direct, $2 = database.
load1() {
  local how=$1 db=$2 start end
  "$how" "$db" -e "TRUNCATE TABLE t" >&2
  start=$(date +%s.%N)
  "$how" "$db" -e "LOAD DATA LOCAL INFILE '$FILE' INTO TABLE t" >&2
  end=$(date +%s.%N)
  n=$("$how" "$db" -N -e "SELECT COUNT(*) FROM t")
  [[ "$n" == "$ROWS" ]] || die "$how loaded $n rows, not $ROWS"
  python3 -c "print(f'{$end - $start:.3f}')"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

d=$(for _ in $(seq 1 "$REPEAT"); do load1 direct load_direct; done | median)
h=$(for _ in $(seq 1 "$REPEAT"); do load1 proxy load_part; done | median)
echo "| rows | direct, one table (s) | hscale, 8 partitions on 2 backends (s) | hscale / direct |"
echo "|---|---|---|---|"
python3 -c "print(f'| $ROWS | $d | $h | {$h / $d:.2f} |')"
