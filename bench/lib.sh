# Shared by the bench scripts: logging, tool checks, and a playground of
# hscale with N MariaDB backends that is stopped on exit. Source it after
# setting HSCALE; call `start_playground N name`, which sets TMP, PORT,
# PG_PID and BACKEND_PORTS (main backend first).
#
# The benches of one server reached directly, through haproxy and through
# hscale (cache.sh, flash_crowd.sh, side_by_side.sh, noisy_neighbour.sh)
# call `bench_start NAME TOOL...` instead, then `start_server`,
# `start_haproxy`, `free_port` and `cpu_ticks` (below).

log() { printf '%s\n' "${BENCH_NAME:-bench}: $*" >&2; }
die() { log "$*"; exit 1; }

# require TOOL... : every tool on PATH, and the hscale binary built.
require() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run: make deps)"
  done
  [[ -x "$HSCALE" ]] || die "$HSCALE not found (run: make build)"
}

PG_PID=""
TMP=""
cleanup_playground() {
  set +e
  if [[ -n "$PG_PID" ]]; then
    kill -TERM "$PG_PID" 2>/dev/null
    for _ in $(seq 1 300); do kill -0 "$PG_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PG_PID" 2>/dev/null
  fi
  [[ -n "$TMP" ]] && rm -rf "$TMP"
}

# start_playground SHARDS NAME
start_playground() {
  local shards=$1 name=$2
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/hscale-$name.XXXXXX")
  trap cleanup_playground EXIT INT TERM
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  log "starting a playground with $shards backends on port $PORT"
  # PLAYGROUND_ARGS: more options of `hscale playground` (word-split).
  # shellcheck disable=SC2086
  "$HSCALE" playground --shards "$shards" --listen "127.0.0.1:$PORT" --data-dir "$TMP/pg" \
    ${PLAYGROUND_ARGS:-} >"$TMP/pg.out" 2>"$TMP/pg.err" &
  PG_PID=$!
  for _ in $(seq 1 600); do
    grep -q '^ready:' "$TMP/pg.out" 2>/dev/null && break
    kill -0 "$PG_PID" 2>/dev/null || die "playground exited: $(cat "$TMP/pg.err")"
    sleep 0.1
  done
  grep -q '^ready:' "$TMP/pg.out" || die "playground not ready"
  mapfile -t BACKEND_PORTS < <(grep '^address = ' "$TMP/pg/hscale.toml" | sed 's/.*:\([0-9]*\)"/\1/')
  # FLUSH_AT_COMMIT: the backends' innodb_flush_log_at_trx_commit (the
  # playground's servers run with 2, no fsync per commit; MariaDB's
  # default, 1, makes every commit durable on disk before its OK).
  if [[ -n "${FLUSH_AT_COMMIT:-}" ]]; then
    local p
    for p in "${BACKEND_PORTS[@]}"; do
      mariadb -h127.0.0.1 -P"$p" -uhscale -phscale --skip-ssl \
        -e "SET GLOBAL innodb_flush_log_at_trx_commit = $FLUSH_AT_COMMIT" ||
        die "setting innodb_flush_log_at_trx_commit on port $p"
    done
    log "backends: innodb_flush_log_at_trx_commit = $FLUSH_AT_COMMIT"
  fi
}

# bench_start NAME TOOL...: log as NAME; every TOOL on PATH and the hscale
# binary built; the soft limit of open files raised to the hard one; TMP
# made; every pid in PIDS, and anything started with TMP on its command
# line (the playground's servers), stopped on any exit.
bench_start() {
  BENCH_NAME=$1
  shift
  require "$@"
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/hscale-$BENCH_NAME.XXXXXX")
  PIDS=()
  trap stop_bench EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

stop_bench() {
  local status=$? pid
  trap - EXIT INT TERM
  set +e
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  done
  while read -r pid; do kill -KILL "$pid" 2>/dev/null; done < <(grep -lsF -- "$TMP/" /proc/[0-9]*/cmdline | cut -d/ -f3)
  rm -rf "$TMP"
  exit "$status"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# cpu_ticks PID: the process's utime + stime, in clock ticks.
cpu_ticks() {
  local stat fields
  stat=$(<"/proc/$1/stat")
  read -r -a fields <<<"${stat##*") "}"
  echo $((fields[11] + fields[12]))
}

# proc_usage PID: utime, stime (clock ticks) and context switches
# (voluntary + involuntary, every thread) of a process, on one line.
proc_usage() {
  local stat fields cs
  stat=$(<"/proc/$1/stat")
  read -r -a fields <<<"${stat##*") "}"
  cs=$(cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }')
  echo "${fields[11]} ${fields[12]} $cs"
}

# start_server NAME SERVER-OPTION...: a playground of one server (256 MB
# buffer pool) in TMP/NAME, started by PLAYGROUND (default HSCALE); sets
# PG_PORT (its proxy) and DB_PORT (its server).
start_server() {
  local name=$1 i o
  shift
  local -a opts=()
  for o in "$@"; do opts+=("--server-option=$o"); done
  PG_PORT=$(free_port)
  "${PLAYGROUND:-$HSCALE}" playground --shards 1 --listen "127.0.0.1:$PG_PORT" --data-dir "$TMP/$name" \
    --buffer-pool-mb 256 "${opts[@]}" >"$TMP/$name.out" 2>"$TMP/$name.log" </dev/null &
  PIDS+=($!)
  for ((i = 0; ; i++)); do
    grep -q '^ready:' "$TMP/$name.out" 2>/dev/null && break
    kill -0 "${PIDS[-1]}" 2>/dev/null || die "playground $name exited: $(tail -n 5 "$TMP/$name.log")"
    ((i < 1200)) || die "playground $name not ready"
    sleep 0.1
  done
  DB_PORT=$(grep '^address = ' "$TMP/$name/hscale.toml" | head -n 1 | sed 's/.*:\([0-9]*\)"/\1/')
}

# start_haproxy DB-PORT: haproxy in TCP mode in front of that server; sets
# HAPROXY_PORT and HAPROXY_PID.
start_haproxy() {
  HAPROXY_PORT=$(free_port)
  cat >"$TMP/haproxy.cfg" <<CFG
global
    maxconn 8192
defaults
    mode tcp
    maxconn 8192
    timeout connect 10s
    timeout client 1h
    timeout server 1h
frontend mysql
    bind 127.0.0.1:$HAPROXY_PORT
    default_backend mariadb
backend mariadb
    server db1 127.0.0.1:$1
CFG
  haproxy -db -f "$TMP/haproxy.cfg" >"$TMP/haproxy.log" 2>&1 </dev/null &
  HAPROXY_PID=$!
  PIDS+=("$HAPROXY_PID")
  sleep 0.5
  kill -0 "$HAPROXY_PID" 2>/dev/null || die "haproxy exited: $(cat "$TMP/haproxy.log")"
}
