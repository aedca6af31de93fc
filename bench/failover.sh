#!/usr/bin/env bash
# A backend's primary lost under writes (issue 34 item 3).
#
# A playground of two backends, each with REPLICAS replicas (GTID
# replication, binary logs on every server), the proxy's
# `failover_after_ms` = FAILOVER_AFTER_MS. `fo.t` (id BIGINT, k INT, v INT,
# PRIMARY KEY (id, k)) is partitioned with NONE() on k: partition p1
# (value 1) on shard1, the default partition on shard0. WRITERS client
# loops insert rows with k = 1 (all on shard1) through the proxy, one
# autocommitted INSERT per `mariadb` call, each logging the time of its
# acknowledgement or failure. After BEFORE s, MODE happens:
#   failover    shard1's primary is killed (SIGKILL, its pid file); a
#               replica takes over after FAILOVER_AFTER_MS
#   switchover  HSCALE SWITCHOVER('shard1', its first replica)
# then AFTER s more.
#
# Reported (markdown on stdout, progress on stderr): writes per second
# before, during (from the event to the first acknowledgement after the
# longest gap) and after; the time without service (the longest time no
# write was acknowledged, from the event on); what the clients saw (errors
# by message); and acknowledged writes lost: acknowledged ids missing from
# `fo.t` read through the proxy afterwards (from the new primary).
# SEMI_SYNC=1 (the default) runs every server with semi-synchronous
# replication (AFTER_SYNC, a 10 s timeout); SEMI_SYNC=0 without, where a
# failover may lose the writes the dead primary acknowledged last.
#
# Environment: MODE (failover), SEMI_SYNC (1), FAILOVER_AFTER_MS (5000),
# REPLICAS (2), WRITERS (4), BEFORE (5), AFTER (15), HSCALE (binary,
# default ./target/release/hscale). Exits 1 if the proxy never served
# writes again.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

MODE=${MODE:-failover}
SEMI_SYNC=${SEMI_SYNC:-1}
FAILOVER_AFTER_MS=${FAILOVER_AFTER_MS:-5000}
REPLICAS=${REPLICAS:-2}
WRITERS=${WRITERS:-4}
BEFORE=${BEFORE:-5}
AFTER=${AFTER:-15}
HSCALE=${HSCALE:-./target/release/hscale}

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb python3

PLAYGROUND_ARGS="--replicas $REPLICAS --failover-after-ms $FAILOVER_AFTER_MS"
if [[ "$SEMI_SYNC" == 1 ]]; then
  for o in rpl-semi-sync-master-enabled=ON rpl-semi-sync-slave-enabled=ON \
    rpl-semi-sync-master-timeout=10000 rpl-semi-sync-master-wait-point=AFTER_SYNC; do
    PLAYGROUND_ARGS+=" --server-option=--$o"
  done
fi
export PLAYGROUND_ARGS
start_playground 2 failover

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl -N -B "$@"; }
backend() { local p=$1; shift; mariadb -h127.0.0.1 -P"$p" -uhscale -phscale --skip-ssl -N -B "$@"; }

SHARD1_PORT=${BACKEND_PORTS[1]}
REPLICA=$(python3 - "$TMP/pg/hscale.toml" <<'EOF'
import sys, re
text = open(sys.argv[1]).read()
blocks = text.split("[[backends]]")
shard1 = [b for b in blocks if 'name = "shard1"' in b][0]
print(re.search(r'replicas = \[\s*"([^"]+)"', shard1).group(1))
EOF
)
log "shard1: primary 127.0.0.1:$SHARD1_PORT, first replica $REPLICA; mode $MODE, semi-sync $SEMI_SYNC"

if [[ "$SEMI_SYNC" == 1 ]]; then
  for _ in $(seq 1 200); do
    n=$(backend "$SHARD1_PORT" -e "SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'" | cut -f2)
    [[ "$n" == "$REPLICAS" ]] && break
    sleep 0.1
  done
  log "semi-synchronous replicas of shard1: ${n:-0}"
fi

proxy -e "CREATE DATABASE fo; CREATE TABLE fo.t (id BIGINT, k INT, v INT, PRIMARY KEY (id, k));
  HSCALE SETUP_TABLE('fo.t', 'k', 't_default', 'shard0', 'NONE()');
  HSCALE ADD_PARTITION('fo.t', 'p1', '1', 'shard1')"

# writer W: "time_ms ok id" or "time_ms err message" per statement.
writer() {
  local w=$1 n=0 id out
  while [[ ! -e "$TMP/stop" ]]; do
    n=$((n + 1))
    id=$((w * 100000000 + n))
    if out=$(proxy -e "INSERT INTO fo.t (id, k, v) VALUES ($id, 1, $w)" 2>&1); then
      printf '%s ok %s\n' "${EPOCHREALTIME/./}" "$id"
    else
      printf '%s err %s\n' "${EPOCHREALTIME/./}" "$(tr '\n' ' ' <<<"$out" | cut -c1-120)"
      sleep 0.02
    fi
  done >"$TMP/writer$w.log"
}

WRITER_PIDS=()
for w in $(seq 1 "$WRITERS"); do
  writer "$w" &
  WRITER_PIDS+=($!)
done
sleep "$BEFORE"
EVENT_US=${EPOCHREALTIME/./}
log "event at $(date -u -d "@${EVENT_US:0:10}.${EVENT_US:10}" +%H:%M:%S.%3N) UTC"
case "$MODE" in
  failover)
    pid=$(cat "$TMP/pg/shard1/mysqld.pid")
    log "killing shard1's primary (pid $pid)"
    kill -KILL "$pid"
    ;;
  switchover)
    log "HSCALE SWITCHOVER('shard1', '$REPLICA')"
    proxy -e "HSCALE SWITCHOVER('shard1', '$REPLICA')" >&2
    ;;
  *) die "MODE is failover or switchover" ;;
esac
sleep "$AFTER"
touch "$TMP/stop"
# (Not a bare `wait`: the playground is a child too.)
wait "${WRITER_PIDS[@]}"

proxy -e "SELECT id FROM fo.t WHERE k = 1" >"$TMP/present.raw" || die "reading fo.t after the $MODE: $(proxy -e "HSCALE SHOW BACKENDS" 2>&1)"
sort -n "$TMP/present.raw" >"$TMP/present"
proxy -e "HSCALE SHOW BACKENDS" >"$TMP/backends"
cat "$TMP"/writer*.log >"$TMP/all.log"

python3 - "$TMP/all.log" "$TMP/present" "$EVENT_US" "$BEFORE" "$AFTER" "$MODE" "$SEMI_SYNC" "$FAILOVER_AFTER_MS" "$WRITERS" <<'EOF'
import sys, collections, re
log, present, event, before, after, mode, semi, fo_ms, writers = sys.argv[1:]
event = int(event); before = float(before); after = float(after)
oks, errs = [], collections.Counter()
for line in open(log):
    t, kind, rest = (line.rstrip("\n").split(" ", 2) + [""])[:3]
    if kind == "ok":
        oks.append((int(t), int(rest)))
    else:
        m = re.search(r"ERROR (\d+) \((\w+)\)[^:]*: (.*)", rest)
        errs[f"{m.group(1)}: {m.group(3)[:70]}" if m else rest[:80]] += 1
oks.sort()
times = [t for t, _ in oks]
later = [t for t in times if t >= event]
last_before = max([t for t in times if t < event], default=event)
gap, resumed = 0, None
prev = last_before
for t in later:
    if t - prev > gap:
        gap, resumed = t - prev, t
    prev = t
if not later:
    print("no write was acknowledged after the event"); sys.exit(1)
have = set(int(l) for l in open(present) if l.strip())
lost = [i for _, i in oks if i not in have]
rate = lambda a, b: sum(1 for t in times if a <= t < b) / max((b - a) / 1e6, 1e-9)
end = max(times)
print(f"## {mode}, semi-sync {'on' if semi == '1' else 'off'}, failover_after_ms {fo_ms}, {writers} writers\n")
print("| | value |\n|---|---|")
print(f"| writes/s before | {rate(event - before * 1e6, event):.0f} |")
print(f"| writes/s during (event to resumption) | {rate(event, resumed or event + 1):.0f} |")
print(f"| writes/s after | {rate(resumed or event, end):.0f} |")
print(f"| time without service | {gap / 1000:.0f} ms |")
print(f"| acknowledged writes | {len(oks)} |")
print(f"| acknowledged writes lost | {len(lost)} |")
print(f"| failed statements | {sum(errs.values())} |")
for msg, n in errs.most_common(5):
    print(f"| clients saw ({n}x) | `{msg}` |")
EOF
log "backends afterwards:"
cat "$TMP/backends" >&2
# Where the time went: the proxy's own account (timestamps in UTC), and
# each writer's first acknowledgement after the event.
log "the proxy's log about the switch:"
grep -E "failover|primary|moved|switch" "$TMP/pg.err" | cut -c1-400 | tail -20 >&2 || true
for f in "$TMP"/writer*.log; do
  awk -v e="$EVENT_US" '$1 >= e && $2 == "ok" { printf "%s: first ok %d ms after the event\n", FILENAME, ($1 - e) / 1000; exit }' "$f" >&2
done
