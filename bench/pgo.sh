#!/usr/bin/env bash
# A profile-guided release build of hscale (the speed issue): the
# statement path is a few hundred kilobytes of a 12 MB binary, and laid
# out by a profile of real traffic it runs with fewer instruction-cache
# and branch misses.
#
#   1. build hscale instrumented (-Cprofile-generate), in target/pgo/gen;
#   2. train it: a playground served by the instrumented binary, sysbench
#      oltp_point_select, oltp_read_only and oltp_read_write at 8 and 64
#      clients (TRAIN_SECONDS each), then a clean stop (SIGTERM: the
#      profile is written at exit);
#   3. merge the profile with the toolchain's own llvm-profdata (rustup's
#      llvm-tools component, installed here when missing: the system's
#      LLVM is older than rustc's and cannot read its profiles);
#   4. build hscale again with -Cprofile-use: target/pgo/hscale.
#
# About 12 minutes on 2 cores (two release builds with fat LTO). Compare
# it with the plain release build in one run:
#   BEFORE=target/release/hscale AFTER=target/pgo/hscale bench/guard.sh
#
# Environment: TRAIN_SECONDS (default 10); REUSE_PROFILE=1 skips steps
# 1-3 and builds with the profile merged last time.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"
TRAIN_SECONDS=${TRAIN_SECONDS:-10}
log() { printf '%s\n' "pgo: $*" >&2; }
die() { log "$*"; exit 2; }
for tool in sysbench mariadb python3 cargo rustc rustup; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run: make deps)"
done

HOST=$(rustc -vV | awk '/^host:/ { print $2 }')
PROFDATA="$(rustc --print sysroot)/lib/rustlib/$HOST/bin/llvm-profdata"
if [[ ! -x "$PROFDATA" ]]; then
  log "installing rustup's llvm-tools (llvm-profdata of rustc's own LLVM)"
  rustup component add llvm-tools-preview >&2 || die "rustup component add llvm-tools-preview failed"
fi
[[ -x "$PROFDATA" ]] || die "no llvm-profdata at $PROFDATA"

PGO=$PWD/target/pgo
DATA=$PGO/data
if [[ -n "${REUSE_PROFILE:-}" && -f "$PGO/hscale.profdata" ]]; then
  log "building with the profile of the last training"
  RUSTFLAGS="-Cprofile-use=$PGO/hscale.profdata" CARGO_TARGET_DIR="$PGO/use" \
    cargo build -q --release -p hscale || die "profile-guided build failed"
  cp "$PGO/use/release/hscale" "$PGO/hscale"
  log "done: $PGO/hscale"
  exit 0
fi
rm -rf "$DATA"
mkdir -p "$DATA"
log "building the instrumented binary"
RUSTFLAGS="-Cprofile-generate=$DATA" CARGO_TARGET_DIR="$PGO/gen" \
  cargo build -q --release -p hscale || die "instrumented build failed"
GEN="$PGO/gen/release/hscale"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hscale-pgo.XXXXXX")
PG_PID=
cleanup() {
  set +e
  if [[ -n "$PG_PID" ]]; then
    kill -TERM "$PG_PID" 2>/dev/null
    for _ in $(seq 1 300); do kill -0 "$PG_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PG_PID" 2>/dev/null
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

PORT=$(free_port)
"$GEN" playground --shards 1 --listen "127.0.0.1:$PORT" --data-dir "$TMP/pg" \
  >"$TMP/pg.out" 2>"$TMP/pg.log" </dev/null &
PG_PID=$!
for ((i = 0; ; i++)); do
  grep -q '^ready:' "$TMP/pg.out" 2>/dev/null && break
  kill -0 "$PG_PID" 2>/dev/null || die "playground exited: $(tail -n 5 "$TMP/pg.log")"
  ((i < 1200)) || die "playground not ready"
  sleep 0.1
done
SB=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=root --mysql-password=
  --mysql-db=sbtest --tables=4 --table-size=10000 --rand-type=uniform --db-ps-mode=disable --mysql-ssl=off)
mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl -e 'CREATE DATABASE sbtest'
sysbench oltp_read_write "${SB[@]}" prepare >"$TMP/prepare.log" 2>&1 ||
  die "prepare failed: $(tail -n 5 "$TMP/prepare.log")"
for test in oltp_point_select oltp_read_only oltp_read_write; do
  for clients in 8 64; do
    log "training: $test at $clients clients, ${TRAIN_SECONDS}s"
    sysbench "$test" "${SB[@]}" --threads="$clients" --time="$TRAIN_SECONDS" run >"$TMP/run.log" 2>&1 ||
      die "$test failed: $(tail -n 3 "$TMP/run.log")"
  done
done
# The same statements prepared (the binary protocol's path).
sysbench oltp_read_only "${SB[@]/--db-ps-mode=disable/--db-ps-mode=auto}" --threads=8 \
  --time="$TRAIN_SECONDS" run >"$TMP/run.log" 2>&1 || die "prepared run failed: $(tail -n 3 "$TMP/run.log")"
kill -TERM "$PG_PID"
for _ in $(seq 1 600); do kill -0 "$PG_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PG_PID" 2>/dev/null && die "the instrumented playground did not stop"
PG_PID=
ls "$DATA"/*.profraw >/dev/null 2>&1 || die "no profile written in $DATA"

"$PROFDATA" merge -o "$PGO/hscale.profdata" "$DATA"/*.profraw || die "llvm-profdata merge failed"
log "building with the profile"
RUSTFLAGS="-Cprofile-use=$PGO/hscale.profdata" \
  CARGO_TARGET_DIR="$PGO/use" cargo build -q --release -p hscale || die "profile-guided build failed"
cp "$PGO/use/release/hscale" "$PGO/hscale"
log "done: $PGO/hscale"
