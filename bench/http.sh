#!/usr/bin/env bash
# The HTTP API (issue 36) against the MySQL protocol, same reads, same
# proxy: a key get (`GET /v1/hb/t/{key}`) against a point select over one
# PyMySQL connection, and a batch get of KEYS keys (`POST
# /v1/hb/t/_get`) against KEYS point selects over one connection (and, for
# reference, one `IN` list of the same keys). The table is partitioned
# with MOD(4) over two backends, so a batch's keys spread over 4
# partitions. One client thread per cell, plain HTTP/1.1 with one request
# per connection (as the listener serves it), Basic auth as root.
# Markdown on stdout, progress on stderr.
#
# Environment: SECONDS_PER_CELL (default 5), KEYS (default 100),
# ROWS (default 10000), HSCALE (default ./target/release/hscale), BUILD
# (what the binary is, for the output; default this checkout's commit).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

SECONDS_PER_CELL=${SECONDS_PER_CELL:-5}
KEYS=${KEYS:-100}
ROWS=${ROWS:-10000}
HSCALE=${HSCALE:-./target/release/hscale}

# shellcheck source=bench/lib.sh
source bench/lib.sh
BENCH_NAME=http
require mariadb python3
python3 -c 'import pymysql' 2>/dev/null || die "PyMySQL is needed (pip install pymysql)"

start_playground 2 http
HTTP=$(sed -n 's|^playground: HTTP API at http://\([0-9.:]*\)/v1/sql.*|\1|p' "$TMP/pg.err")
[[ -n "$HTTP" ]] || die "the playground serves no HTTP API: $(cat "$TMP/pg.err")"
p="mariadb -h127.0.0.1 -P$PORT -uroot --skip-ssl"
$p -e "DROP DATABASE IF EXISTS hb; CREATE DATABASE hb;
  CREATE TABLE hb.t (id INT NOT NULL PRIMARY KEY, v VARCHAR(32) NOT NULL)" >&2
$p hb -e "HSCALE SETUP_TABLE('t', 'id', 't_default', 'shard0', 'MOD(4)')" >&2
for v in 1 2 3; do
  $p hb -e "HSCALE ADD_PARTITION('t', 'p$v', '$v', 'shard$((v % 2))')" >&2
done
python3 - "$ROWS" <<'PY' | $p hb
import sys
rows = int(sys.argv[1])
for a in range(1, rows + 1, 1000):
    print("INSERT INTO t VALUES " + ", ".join(f"({i}, 'value {i}')" for i in range(a, min(a + 1000, rows + 1))) + ";")
PY
log "filled hb.t with $ROWS rows; HTTP API at $HTTP"

python3 - "$HTTP" "$PORT" "$SECONDS_PER_CELL" "$KEYS" "$ROWS" "${BUILD:-$(git rev-parse --short HEAD)}" <<'PY'
import base64, http.client, json, random, sys, time
import pymysql

host, port = sys.argv[1].rsplit(":", 1)
mysql_port, seconds, keys, rows, commit = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
auth = "Basic " + base64.b64encode(b"root:").decode()
rng = random.Random(7)

def http_call(method, path, body=None):
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    headers = {"Authorization": auth, "Content-Type": "application/json"}
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        raise SystemExit(f"{method} {path}: {r.status} {data[:200]!r}")
    return json.loads(data)

def key_get():
    k = rng.randrange(1, rows + 1)
    assert http_call("GET", f"/v1/hb/t/{k}")["row"]["id"] == k

def batch_get():
    ks = rng.sample(range(1, rows + 1), keys)
    assert len(http_call("POST", "/v1/hb/t/_get", json.dumps(ks))["rows"]) == keys

conn = pymysql.connect(host="127.0.0.1", port=mysql_port, user="root", password="", database="hb")
cur = conn.cursor()

def point_select():
    k = rng.randrange(1, rows + 1)
    cur.execute("SELECT * FROM t WHERE id = %s", (k,))
    assert cur.fetchone()[0] == k

def point_selects():
    for k in rng.sample(range(1, rows + 1), keys):
        cur.execute("SELECT * FROM t WHERE id = %s", (k,))
        assert cur.fetchone()[0] == k

def in_list():
    ks = rng.sample(range(1, rows + 1), keys)
    cur.execute("SELECT * FROM t WHERE id IN (" + ", ".join(map(str, ks)) + ")")
    assert len(cur.fetchall()) == keys

def cell(name, op):
    for _ in range(20):
        op()
    lat = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.monotonic()
        op()
        lat.append(time.monotonic() - t)
    lat.sort()
    total = sum(lat)
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000
    print(f"| {name} | {len(lat) / total:.0f} | {p(0.5):.2f} | {p(0.99):.2f} |", flush=True)
    print(f"http: {name} done", file=sys.stderr)

print(f"Build: {commit}; {seconds:g} s per cell, one client thread, {rows} rows, keys at random.\n")
print("| operation | ops/s | p50 ms | p99 ms |")
print("|---|---:|---:|---:|")
cell("HTTP key get (`GET /v1/hb/t/{key}`)", key_get)
cell("MySQL point select (PyMySQL, one connection)", point_select)
cell(f"HTTP batch get of {keys} keys (`POST _get`)", batch_get)
cell(f"MySQL {keys} point selects (one connection)", point_selects)
cell(f"MySQL one IN list of {keys} keys", in_list)
PY
