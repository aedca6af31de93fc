#!/usr/bin/env bash
# Writes over several partitions inside a transaction (issue 13): the cost
# of the statement savepoint (`hscale_statement` on every branch before
# such a write, released after, so a failed part undoes the statement
# whole), in one run:
#   after    BEGIN; UPDATE ... WHERE id = a; UPDATE ... WHERE id IN (a, b);
#            COMMIT through HSCALE, a and b on two partitions of two
#            backends (the second write is not the transaction's first, so
#            it takes the savepoint)
#   before   the same through BASE_HSCALE (an earlier build without the
#            savepoint), a second proxy on the same backends and dictionary
#   single   BEGIN; UPDATE ... WHERE id = a; UPDATE ... WHERE id = b;
#            COMMIT through HSCALE (two backends, one-partition writes: no
#            savepoint), for scale
#   direct   the same transaction as after on one MariaDB directly
# Markdown on stdout, progress on stderr.
#
# Environment: THREADS (default 8), TIME (seconds per run, default 15),
# HSCALE (default ./target/release/hscale), BASE_HSCALE (required).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

THREADS=${THREADS:-8}
TIME=${TIME:-15}
HSCALE=${HSCALE:-./target/release/hscale}
BASE_HSCALE=${BASE_HSCALE:?set BASE_HSCALE to the binary to compare with}
ROWS=10000

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb python3
python3 -c 'import pymysql' 2>/dev/null || die "pymysql missing (run: make deps)"
start_playground 2 txnscatter
MAIN_PORT=${BACKEND_PORTS[0]}

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
direct() { mariadb -h127.0.0.1 -P"$MAIN_PORT" -uhscale -phscale --skip-ssl "$@"; }

TABLE="CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)"
values() { python3 -c "print(','.join(f'({i},0)' for i in range(1, $ROWS + 1)))"; }
direct -e "DROP DATABASE IF EXISTS ts_direct; CREATE DATABASE ts_direct; USE ts_direct; $TABLE; INSERT INTO t VALUES $(values)"
proxy -e "DROP DATABASE IF EXISTS ts; CREATE DATABASE ts; USE ts; $TABLE" >&2
proxy -e "HSCALE SETUP_TABLE('ts.t', 'id', 't_even', 'shard0', 'MOD(2)')" >&2
proxy -e "HSCALE ADD_PARTITION('ts.t', 'odd', '1', 'shard1')" >&2
proxy -D ts -e "INSERT INTO t VALUES $(values)"

BASE_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed "s/^listen = \"127.0.0.1:$PORT\"/listen = \"127.0.0.1:$BASE_PORT\"/" "$TMP/pg/hscale.toml" >"$TMP/base.toml"
grep -q "127.0.0.1:$BASE_PORT" "$TMP/base.toml" || die "no proxy listen line in $TMP/pg/hscale.toml"
"$BASE_HSCALE" serve --config "$TMP/base.toml" >"$TMP/base.out" 2>&1 &
BASE_PID=$!
trap 'kill "$BASE_PID" 2>/dev/null; cleanup_playground' EXIT
for _ in $(seq 1 100); do
  mariadb -h127.0.0.1 -P"$BASE_PORT" -uroot --skip-ssl -e 'SELECT 1' >/dev/null 2>&1 && break
  sleep 0.1
done

# run PORT USER PASSWORD DB SHAPE: transactions per second over THREADS
# processes for TIME seconds.
run() {
  python3 - "$@" <<'EOF'
import multiprocessing, random, sys, time
import pymysql

port, user, password, db, shape = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
threads, seconds, rows = int(sys.argv[6]), float(sys.argv[7]), int(sys.argv[8])

def worker(i, out):
    c = pymysql.connect(host="127.0.0.1", port=port, user=user, password=password,
                        database=db, autocommit=True, ssl_disabled=True)
    cur = c.cursor()
    rnd = random.Random(i)
    n = 0
    end = time.time() + seconds
    while time.time() < end:
        a = rnd.randrange(1, rows // 2) * 2          # even: shard0
        b = rnd.randrange(0, rows // 2) * 2 + 1      # odd: shard1
        cur.execute("BEGIN")
        # A first statement on one row, so the write over two partitions
        # is not the transaction's first (that one needs no savepoint).
        cur.execute(f"UPDATE t SET v = v + 1 WHERE id = {a}")
        if shape == "two":
            cur.execute(f"UPDATE t SET v = v + 1 WHERE id IN ({a}, {b})")
        else:
            cur.execute(f"UPDATE t SET v = v + 1 WHERE id = {b}")
        cur.execute("COMMIT")
        n += 1
    out.put(n)

q = multiprocessing.Queue()
ps = [multiprocessing.Process(target=worker, args=(i, q)) for i in range(threads)]
for p in ps: p.start()
total = sum(q.get() for _ in ps)
for p in ps: p.join()
print(f"{total / seconds:.0f}")
EOF
}

log "direct"
DIRECT=$(run "$MAIN_PORT" hscale hscale ts_direct two "$THREADS" "$TIME" "$ROWS")
log "after (HSCALE): two partitions"
AFTER=$(run "$PORT" root "" ts two "$THREADS" "$TIME" "$ROWS")
log "before (BASE_HSCALE): two partitions"
BEFORE=$(run "$BASE_PORT" root "" ts two "$THREADS" "$TIME" "$ROWS")
log "after again"
AFTER2=$(run "$PORT" root "" ts two "$THREADS" "$TIME" "$ROWS")
log "before again"
BEFORE2=$(run "$BASE_PORT" root "" ts two "$THREADS" "$TIME" "$ROWS")
log "single partition (HSCALE)"
SINGLE=$(run "$PORT" root "" ts one "$THREADS" "$TIME" "$ROWS")

ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), nproc: $(nproc), $THREADS client processes (PyMySQL), $TIME s per run"
echo "- HSCALE=$HSCALE, BASE_HSCALE=$BASE_HSCALE"
echo
echo "| run | transactions/s | ratio to direct |"
echo "|---|---:|---:|"
echo "| direct: BEGIN; UPDATE 1 row; UPDATE 2 rows; COMMIT on one MariaDB | $DIRECT | 1.00 |"
echo "| before: the rows on two backends (no statement savepoint) | $BEFORE / $BEFORE2 | $(ratio "$BEFORE" "$DIRECT") / $(ratio "$BEFORE2" "$DIRECT") |"
echo "| after: the same with the statement savepoint | $AFTER / $AFTER2 | $(ratio "$AFTER" "$DIRECT") / $(ratio "$AFTER2" "$DIRECT") |"
echo "| after: two one-row writes on the two backends (no savepoint) | $SINGLE | $(ratio "$SINGLE" "$DIRECT") |"
echo
echo "after/before: $(ratio "$((AFTER + AFTER2))" "$((BEFORE + BEFORE2))")"
