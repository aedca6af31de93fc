#!/usr/bin/env bash
# Where the time of a transfer goes (issue 13, item 8): the runs of
# bench/transactions.sh, each followed by what it cost per transaction:
# statements and round trips (Com_* and Questions) on each backend, CPU
# seconds of sysbench, of the proxy and of each server, the machine's idle
# share, and InnoDB log writes and fsyncs. Markdown on stdout.
#
# Environment: THREADS (default 8), TIME (default 10), ACCOUNTS (default
# 10000), HSCALE (default ./target/release/hscale), RUNS (default
# "direct cross single direct1").
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

THREADS=${THREADS:-8}
TIME=${TIME:-10}
ACCOUNTS=${ACCOUNTS:-10000}
HSCALE=${HSCALE:-./target/release/hscale}
RUNS=${RUNS:-direct cross single direct1}
export ACCOUNTS

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb sysbench python3
start_playground 2 txnprof
trap cleanup_playground EXIT
MAIN_PORT=${BACKEND_PORTS[0]}
SECOND_PORT=${BACKEND_PORTS[1]}

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
direct() { mariadb -h127.0.0.1 -P"$1" -uhscale -phscale --skip-ssl "${@:2}"; }

TABLE="CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance INT NOT NULL)"
values() { python3 -c "print(','.join(f'({i},1000)' for i in range(1, $ACCOUNTS + 1)))"; }
direct "$MAIN_PORT" -e "DROP DATABASE IF EXISTS txn_direct; CREATE DATABASE txn_direct; USE txn_direct; $TABLE; INSERT INTO accounts (id, balance) VALUES $(values)"
proxy -e "DROP DATABASE IF EXISTS txn_bench; CREATE DATABASE txn_bench; USE txn_bench; $TABLE" >&2
proxy -e "HSCALE SETUP_TABLE('txn_bench.accounts', 'id', 'accounts_even', 'shard0', 'MOD(2)')" >&2
proxy -e "HSCALE ADD_PARTITION('txn_bench.accounts', 'odd', '1', 'shard1')" >&2
proxy -D txn_bench -e "INSERT INTO accounts (id, balance) VALUES $(values)"
direct "$SECOND_PORT" -e "DROP DATABASE IF EXISTS txn_direct1; CREATE DATABASE txn_direct1; USE txn_direct1; $TABLE; INSERT INTO accounts (id, balance) VALUES $(values)"

# The servers' pids, by the port each listens on.
server_pid() { pgrep -f -- "mariadbd .*--port=$1( |\$)" | head -1; }
PID0=$(server_pid "$MAIN_PORT")
PID1=$(server_pid "$SECOND_PORT")
[[ -n "$PID0" && -n "$PID1" ]] || die "the servers' processes were not found"
# utime + stime of a process and its threads, in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
idle() { awk '/^cpu / {print $5 + $6}' /proc/stat; }
STATUS="'Questions','Com_begin','Com_commit','Com_rollback','Com_update','Com_insert','Com_delete','Com_select','Com_set_option','Com_xa_start','Com_xa_end','Com_xa_prepare','Com_xa_commit','Com_xa_rollback','Innodb_log_writes','Innodb_os_log_fsyncs','Innodb_data_fsyncs'"
counters() { direct "$1" -N -e "SHOW GLOBAL STATUS WHERE Variable_name IN ($STATUS)"; }

declare -A PORT_OF=([direct]=$MAIN_PORT [cross]=$PORT [single]=$PORT [direct1]=$SECOND_PORT)
declare -A MODE_OF=([direct]=cross [cross]=cross [single]=single [direct1]=single)
declare -A DB_OF=([direct]=txn_direct [cross]=txn_bench [single]=txn_bench [direct1]=txn_direct1)

echo "## Where a transfer's time goes (bench/transactions_profile.sh)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), nproc: $(nproc), $THREADS threads, ${TIME}s per run"
echo "- per transaction; CPU in microseconds (clock ticks of 10 ms, so +-1 tick per run)"
echo
for r in $RUNS; do
  user=root pass=""
  [[ "${PORT_OF[$r]}" == "$PORT" ]] || { user=hscale; pass=hscale; }
  a0=$(counters "$MAIN_PORT"); a1=$(counters "$SECOND_PORT")
  c_pg=$(cpu "$PG_PID") c0=$(cpu "$PID0") c1=$(cpu "$PID1") i0=$(idle)
  out=$(MODE=${MODE_OF[$r]} /usr/bin/time -f 'SBCPU %U %S' sysbench bench/transactions.lua --mysql-host=127.0.0.1 \
    --mysql-port="${PORT_OF[$r]}" --mysql-user="$user" --mysql-password="$pass" --mysql-db="${DB_OF[$r]}" \
    --threads="$THREADS" --time="$TIME" --mysql-ignore-errors=1213,1205 --db-ps-mode=disable run 2>&1)
  c_pg=$(($(cpu "$PG_PID") - c_pg)) c0=$(($(cpu "$PID0") - c0)) c1=$(($(cpu "$PID1") - c1)) i0=$(($(idle) - i0))
  b0=$(counters "$MAIN_PORT"); b1=$(counters "$SECOND_PORT")
  n=$(awk '/transactions:/ {print $2}' <<<"$out")
  tps=$(awk '/transactions:/ {gsub(/[()]/, "", $3); printf "%d", $3}' <<<"$out")
  sb=$(awk '/^SBCPU/ {printf "%d", ($2 + $3) * 100}' <<<"$out")
  echo "### $r: $tps transactions/s ($n in ${TIME}s)"
  echo
  python3 - "$n" "$c_pg" "$c0" "$c1" "$sb" "$i0" <<PY
import sys
n, pg, s0, s1, sb, idle = (int(x) for x in sys.argv[1:])
us = lambda ticks: f"{ticks * 10000 / n:.0f}"
print(f"| CPU µs/txn | sysbench {us(sb)} | proxy {us(pg)} | shard0 {us(s0)} | shard1 {us(s1)} | idle {us(idle)} |")
print("|---|---|---|---|---|---|")
def parse(s):
    return dict(l.split('\t') for l in s.strip().splitlines())
for name, a, b in (("shard0", """$a0""", """$b0"""), ("shard1", """$a1""", """$b1""")):
    a, b = parse(a), parse(b)
    d = {k: (int(b[k]) - int(a[k])) / n for k in a}
    d["Questions"] -= 1 / n  # the SHOW STATUS itself
    cells = " ".join(f"{k.replace('Com_', '').replace('Innodb_', '')}={v:.2f}" for k, v in d.items() if abs(v) >= 0.005)
    print(f"| {name} per txn | {cells} | | | | |")
print()
PY
done
