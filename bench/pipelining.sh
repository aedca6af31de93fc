#!/usr/bin/env bash
# What pipelining saves the server (the measurement behind pipelined lanes,
# backend/lane.rs): point selects sent straight to one MariaDB by a small
# Python client (bench/pipelining.py) over CONNS connections, each writing
# DEPTH statements in one write and then reading their answers, for each
# "CONNS DEPTH" pair of SHAPES. Prints qps and the server's CPU per
# statement (utime + stime of mariadbd over the statements counted); no
# proxy is involved. The client's own CPU differs between shapes, so
# compare the server's CPU per statement, not qps.
#
# Environment: HSCALE (binary that starts the playground, default
# ./target/release/hscale), SHAPES (default "8 1;2 1;8 8;16 4;2 32"),
# DURATION (seconds per shape, default 10). Run it with nothing else on
# the machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
HSCALE=${HSCALE:-./target/release/hscale}
SHAPES=${SHAPES:-"8 1;2 1;8 8;16 4;2 32"}
DURATION=${DURATION:-10}
# shellcheck source=lib.sh
source bench/lib.sh
bench_start pipelining sysbench mariadb python3
python3 -c 'import pymysql' 2>/dev/null || die "pymysql not installed (make deps)"
start_server pg
mariadb -h127.0.0.1 -P"$DB_PORT" -uroot --skip-ssl -e 'CREATE DATABASE IF NOT EXISTS sbtest'
sysbench oltp_read_only --db-driver=mysql --mysql-host=127.0.0.1 --mysql-user=root --mysql-password= \
  --mysql-db=sbtest --tables=1 --table-size=10000 --mysql-ssl=off --mysql-port="$DB_PORT" prepare >/dev/null
SPID=$(pgrep -f "mariadbd.*$TMP" | head -n 1)
CLK_TCK=$(getconf CLK_TCK)
IFS=';' read -ra shapes <<<"$SHAPES"
for shape in "${shapes[@]}"; do
  read -r conns depth <<<"$shape"
  python3 bench/pipelining.py "$DB_PORT" "$conns" "$depth" "$DURATION" >"$TMP/out" &
  client=$!
  until grep -q START "$TMP/out" 2>/dev/null; do sleep 0.05; done
  a=$(cpu_ticks "$SPID")
  wait "$client"
  b=$(cpu_ticks "$SPID")
  n=$(awk '/STMTS/ {print $2}' "$TMP/out")
  q=$(awk '/STMTS/ {print $4}' "$TMP/out")
  python3 -c "print('connections $conns, depth $depth: qps %.0f, server CPU/stmt %.1f us' % ($q, ($b - $a) * 1e6 / $CLK_TCK / $n))"
done
