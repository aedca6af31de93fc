#!/usr/bin/env bash
# Transactions across backends (issue 13, item 8), in one run, 8 clients:
#   direct   transfers (BEGIN; 2 UPDATEs; COMMIT) in one MariaDB server directly
#   cross    the same transfers through hscale between two backends (two-phase
#            commit: the second backend is an XA branch, the decision is a row
#            on the home backend)
#   single   transfers through hscale whose two rows are on one backend
#            (plain COMMIT, no XA)
#   direct1  single-backend transfers directly on that backend, for the
#            single/direct1 ratio (the cost of the proxy alone)
#   base     with BASE_HSCALE set: the single transfers through that binary
#            (an earlier build, "before"), a second proxy on the same
#            backends and dictionary, for single/base (item 8: single-backend
#            transactions unchanged)
# Aim: cross >= 0.5 x direct. Markdown on stdout, progress on stderr.
#
# Environment: THREADS (default 8), TIME (seconds per run, default 20),
# ACCOUNTS (default 10000), HSCALE (binary, default ./target/release/hscale),
# BASE_HSCALE (optional, the binary to compare single-backend runs with),
# FLUSH_AT_COMMIT (the backends' innodb_flush_log_at_trx_commit, bench/lib.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

THREADS=${THREADS:-8}
TIME=${TIME:-20}
ACCOUNTS=${ACCOUNTS:-10000}
HSCALE=${HSCALE:-./target/release/hscale}
export ACCOUNTS

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb sysbench python3
start_playground 2 txnbench
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
# shard1's own copy for direct1 (odd ids only matter).
direct "$SECOND_PORT" -e "DROP DATABASE IF EXISTS txn_direct1; CREATE DATABASE txn_direct1; USE txn_direct1; $TABLE; INSERT INTO accounts (id, balance) VALUES $(values)"

BASE_PID=""
if [[ -n "${BASE_HSCALE:-}" ]]; then
  BASE_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  sed "s/^listen = \"127.0.0.1:$PORT\"/listen = \"127.0.0.1:$BASE_PORT\"/" "$TMP/pg/hscale.toml" >"$TMP/base.toml"
  grep -q "127.0.0.1:$BASE_PORT" "$TMP/base.toml" || die "no proxy listen line in $TMP/pg/hscale.toml"
  "$BASE_HSCALE" serve --config "$TMP/base.toml" >"$TMP/base.out" 2>&1 &
  BASE_PID=$!
  trap '[[ -n "$BASE_PID" ]] && kill "$BASE_PID" 2>/dev/null; cleanup_playground' EXIT
  for _ in $(seq 1 100); do
    mariadb -h127.0.0.1 -P"$BASE_PORT" -uroot --skip-ssl -e "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.1
  done
fi

# Transactions per second: $1 mode, $2 port, $3 user, $4 password, $5 db.
run() {
  local out
  out=$(MODE=$1 sysbench bench/transactions.lua --mysql-host=127.0.0.1 --mysql-port="$2" \
    --mysql-user="$3" --mysql-password="$4" --mysql-db="$5" --threads="$THREADS" --time="$TIME" \
    --mysql-ignore-errors=1213,1205 --db-ps-mode=disable run 2>&1) || die "sysbench failed: $out"
  grep -q 'ignored errors:  *0 ' <<<"$out" || log "$1 on $2: $(grep 'ignored errors' <<<"$out")"
  awk '/transactions:/ {gsub(/[()]/, "", $3); printf "%d", $3}' <<<"$out"
}

log "direct"; d=$(run cross "$MAIN_PORT" hscale hscale txn_direct)
log "cross";  x=$(run cross "$PORT" root "" txn_bench)
log "single"; s=$(run single "$PORT" root "" txn_bench)
log "direct1"; d1=$(run single "$SECOND_PORT" hscale hscale txn_direct1)
if [[ -n "$BASE_PID" ]]; then
  log "base"; b=$(run single "$BASE_PORT" root "" txn_bench)
fi
sum=$(proxy -N -D txn_bench -e "SELECT CAST(SUM(balance) AS SIGNED) FROM accounts")
[[ "$sum" == "$((ACCOUNTS * 1000))" ]] || die "the total changed through hscale: $sum"
prepared=$( (direct "$MAIN_PORT" -N -e "XA RECOVER"; direct "$SECOND_PORT" -N -e "XA RECOVER") | wc -l)
[[ "$prepared" == 0 ]] || die "$prepared branches left prepared"

ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
echo "## Transactions across backends (bench/transactions.sh, issue 13)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), nproc: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "- sysbench bench/transactions.lua, $THREADS threads, ${TIME}s per run, $ACCOUNTS accounts; a transaction is BEGIN, two single-row UPDATEs, COMMIT"
echo "- backends' innodb_flush_log_at_trx_commit: ${FLUSH_AT_COMMIT:-2, as the playground starts them}"
echo "- afterwards: total unchanged through hscale, nothing prepared on either backend"
echo
echo "| run | transactions/s | ratio |"
echo "|---|---:|---:|"
echo "| direct: one MariaDB, both rows in it | $d | 1.00 |"
echo "| hscale: rows on two backends (XA, decision row) | $x | $(ratio "$x" "$d") |"
echo "| hscale: both rows on one backend (plain COMMIT) | $s | $(ratio "$s" "$d") |"
echo "| direct on that backend (single-backend baseline) | $d1 | $(ratio "$d1" "$d") |"
if [[ -n "$BASE_PID" ]]; then
  echo "| $BASE_HSCALE: both rows on one backend (before) | $b | $(ratio "$b" "$d") |"
fi
echo
echo "- single-backend transactions through hscale vs directly: $(ratio "$s" "$d1")"
if [[ -n "$BASE_PID" ]]; then
  echo "- single-backend transactions through hscale, after vs before: $(ratio "$s" "$b")"
fi
