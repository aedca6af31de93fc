# Shared by the bench scripts: logging, tool checks, and a playground of
# hscale with N MariaDB backends that is stopped on exit. Source it after
# setting HSCALE; call `start_playground N name`, which sets TMP, PORT,
# PG_PID and BACKEND_PORTS (main backend first).

log() { printf '%s\n' "bench: $*" >&2; }
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
