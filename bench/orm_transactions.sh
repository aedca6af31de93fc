#!/usr/bin/env bash
# ORM-style sessions (PyMySQL's default autocommit off) running transfers
# between two backends through two hscale binaries on the same playground:
# HSCALE (after) serves the playground, BASE_HSCALE (before) a second
# proxy on the same backends and dictionary. Runs alternate before, after,
# after, before, ... (ROUNDS per binary). Each run: THREADS sessions, each
# `SET autocommit=0` (as PyMySQL connects), then transfers (UPDATE on an
# odd id, UPDATE on an even id, COMMIT) for TIME seconds. Reports
# transactions/s and the connections the backends accepted during the run
# (`Connections`): a proxy that closes a branch's connection at the end of
# each transaction opens one per transaction. Markdown on stdout.
#
# Environment: HSCALE, BASE_HSCALE (required), THREADS (default 4), TIME
# (default 10), ROUNDS (default 2), ACCOUNTS (default 1000).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

: "${BASE_HSCALE:?set BASE_HSCALE to the old hscale binary}"
HSCALE=${HSCALE:-./target/release/hscale}
THREADS=${THREADS:-4}
TIME=${TIME:-10}
ROUNDS=${ROUNDS:-2}
ACCOUNTS=${ACCOUNTS:-1000}

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb python3
python3 -c 'import pymysql' 2>/dev/null || die "PyMySQL not installed"
start_playground 2 ormbench

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
TABLE="CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance INT NOT NULL)"
values() { python3 -c "print(','.join(f'({i},1000)' for i in range(1, $ACCOUNTS + 1)))"; }
proxy -e "DROP DATABASE IF EXISTS orm_bench; CREATE DATABASE orm_bench; USE orm_bench; $TABLE" >&2
proxy -e "HSCALE SETUP_TABLE('orm_bench.accounts', 'id', 'accounts_even', 'shard0', 'MOD(2)')" >&2
proxy -e "HSCALE ADD_PARTITION('orm_bench.accounts', 'odd', '1', 'shard1')" >&2
proxy -D orm_bench -e "INSERT INTO accounts (id, balance) VALUES $(values)"

BASE_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed "s/^listen = \"127.0.0.1:$PORT\"/listen = \"127.0.0.1:$BASE_PORT\"/" "$TMP/pg/hscale.toml" >"$TMP/base.toml"
grep -q "127.0.0.1:$BASE_PORT" "$TMP/base.toml" || die "no proxy listen line in $TMP/pg/hscale.toml"
# An older binary refuses settings it does not know yet: they are left
# out of its config (at their defaults), one at a time.
start_base() {
  "$BASE_HSCALE" serve --config "$TMP/base.toml" >"$TMP/base.out" 2>&1 &
  BASE_PID=$!
  for _ in $(seq 1 300); do
    mariadb -h127.0.0.1 -P"$BASE_PORT" -uroot --skip-ssl -e "SELECT 1" >/dev/null 2>&1 && return 0
    kill -0 "$BASE_PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
BASE_PID=""
trap '[[ -n "$BASE_PID" ]] && kill "$BASE_PID" 2>/dev/null || true; cleanup_playground' EXIT
for _ in $(seq 1 20); do
  start_base && break
  unknown=$(grep -o 'unknown field `[a-z_]*`' "$TMP/base.out" | head -n 1 | tr -d '`' | awk '{print $3}' || true)
  [[ -n "$unknown" ]] || die "the before proxy did not start: $(tail -n 5 "$TMP/base.out")"
  log "the before binary does not know $unknown: left out of its config"
  sed -i "/^$unknown *=/d" "$TMP/base.toml"
done

# One run through port $1: "<transactions/s> <backend connections opened>".
run() {
  python3 - "$1" "${BACKEND_PORTS[@]}" <<PY
import sys, threading, time, random
import pymysql
port, backends = int(sys.argv[1]), [int(p) for p in sys.argv[2:]]
def accepted():
    n = 0
    for p in backends:
        c = pymysql.connect(host="127.0.0.1", port=p, user="hscale", password="hscale")
        with c.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE 'Connections'")
            n += int(cur.fetchone()[1])
        c.close()
    return n
done = [0] * $THREADS
def work(i):
    c = pymysql.connect(host="127.0.0.1", port=port, user="root", database="orm_bench", autocommit=False)
    rng = random.Random(i)
    cur = c.cursor()
    end = time.monotonic() + $TIME
    while time.monotonic() < end:
        odd = 2 * rng.randrange($ACCOUNTS // 2) + 1
        even = 2 * rng.randrange($ACCOUNTS // 2) + 2
        cur.execute("UPDATE accounts SET balance = balance - 1 WHERE id = %s", (odd,))
        cur.execute("UPDATE accounts SET balance = balance + 1 WHERE id = %s", (even,))
        c.commit()
        done[i] += 1
    c.close()
before = accepted()
threads = [threading.Thread(target=work, args=(i,)) for i in range($THREADS)]
for t in threads: t.start()
for t in threads: t.join()
# The two connections accepted() itself opened on each backend.
print(sum(done) / $TIME, accepted() - before - len(backends))
PY
}

declare -A tps opened
for ((r = 0; r < ROUNDS; r++)); do
  if ((r % 2 == 0)); then order="before after"; else order="after before"; fi
  for who in $order; do
    if [[ $who == before ]]; then p=$BASE_PORT; else p=$PORT; fi
    log "round $((r + 1)): $who"
    read -r t o < <(run "$p")
    tps[$who]+="${t%.*} "
    opened[$who]+="$o "
  done
done

mean() { python3 -c "import sys; v=[float(x) for x in sys.argv[1:]]; print(round(sum(v)/len(v)))" "$@"; }
# shellcheck disable=SC2086
tb=$(mean ${tps[before]}) ta=$(mean ${tps[after]})
echo "| binary | transactions/s per run | mean | backend connections opened per run |"
echo "|---|---|---:|---|"
echo "| before ($BASE_HSCALE) | ${tps[before]}| $tb | ${opened[before]}|"
echo "| after ($HSCALE) | ${tps[after]}| $ta | ${opened[after]}|"
echo
echo "after/before: $(python3 -c "print(round($ta / $tb, 2))")"
