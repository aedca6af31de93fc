#!/usr/bin/env bash
# Two hscale binaries compared on the same cells, alternating per cell: the
# seed benchmark (bench/partitioned.sh) one concurrency at a time and the
# point selects of bench/passthrough.sh one thread count at a time, each
# script run once per binary per round, in the order before, after, after,
# before, ... (ROUNDS runs per binary and cell), so drift of the machine
# hits both alike. Each run starts its own playground. Prints one Markdown
# table per benchmark: every run's figure, the means and after/before, and
# the spread of the binary-independent columns (MariaDB directly, haproxy)
# across the runs of a cell as the measure of this machine's noise. Raw
# script outputs go to OUT (default: a temporary directory, removed).
#
# Before each run it waits up to IDLE_WAIT s (default 120) for the machine
# to be at least 80% idle over 2 s (other work on the two cores), and logs
# how idle it found it.
#
# Environment: BEFORE, AFTER (binaries, required), ROUNDS (default 2),
# QUERIES (default 5000), REPEAT (default 3), CONCURRENCY (default "1 10"),
# THREADS (default "1 8"), DURATION (default 5), AB_TEST (the sysbench test of
# the second table, default oltp_point_select), IDLE_WAIT, OUT. CONCURRENCY=""
# skips the seed benchmark.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

: "${BEFORE:?set BEFORE to the old hscale binary}"
: "${AFTER:?set AFTER to the new hscale binary}"
ROUNDS=${ROUNDS:-2}
QUERIES=${QUERIES:-5000}
REPEAT=${REPEAT:-3}
CONCURRENCY=${CONCURRENCY-1 10}
THREADS=${THREADS:-1 8}
DURATION=${DURATION:-5}
AB_TEST=${AB_TEST:-oltp_point_select}
IDLE_WAIT=${IDLE_WAIT:-120}

log() { printf '%s\n' "bench: $*" >&2; }
die() { log "$*"; exit 1; }
[[ -x "$BEFORE" && -x "$AFTER" ]] || die "BEFORE and AFTER must be hscale binaries"

if [[ -n "${OUT:-}" ]]; then
  mkdir -p "$OUT"
else
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/hscale-before-after.XXXXXX")
  trap 'rm -rf "$OUT"' EXIT
fi

# Percent of CPU time idle over 2 s.
idle_pct() {
  python3 - <<'PY'
import time
def read():
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:]))
    return v[3] + v[4], sum(v)
i0, t0 = read(); time.sleep(2); i1, t1 = read()
print(int(100 * (i1 - i0) / max(1, t1 - t0)))
PY
}

wait_idle() {
  local start=$SECONDS idle
  while :; do
    idle=$(idle_pct)
    ((idle >= 80 || SECONDS - start >= IDLE_WAIT)) && break
  done
  log "machine ${idle}% idle (waited $((SECONDS - start)) s)"
  echo "$idle" >>"$OUT/idle"
}

# order ROUND: the binaries' labels for this round (before first in even rounds).
order() { if (($1 % 2 == 0)); then echo "before after"; else echo "after before"; fi; }
binary() { if [[ $1 == before ]]; then echo "$BEFORE"; else echo "$AFTER"; fi; }

for c in $CONCURRENCY; do
  for ((r = 0; r < ROUNDS; r++)); do
    for who in $(order "$r"); do
      wait_idle
      log "seed benchmark, concurrency $c, $who (round $((r + 1)))"
      QUERIES=$QUERIES REPEAT=$REPEAT CONCURRENCY=$c HSCALE=$(binary "$who") \
        bench/partitioned.sh >"$OUT/seed-$c-$who-$r.md" 2>"$OUT/seed-$c-$who-$r.log" ||
        die "bench/partitioned.sh failed: $(tail -n 5 "$OUT/seed-$c-$who-$r.log")"
    done
  done
done
for t in $THREADS; do
  for ((r = 0; r < ROUNDS; r++)); do
    for who in $(order "$r"); do
      wait_idle
      log "point selects, $t threads, $who (round $((r + 1)))"
      DURATION=$DURATION TESTS=$AB_TEST THREADS=$t HSCALE=$(binary "$who") \
        bench/passthrough.sh >"$OUT/ps-$t-$who-$r.md" 2>"$OUT/ps-$t-$who-$r.log" ||
        die "bench/passthrough.sh failed: $(tail -n 5 "$OUT/ps-$t-$who-$r.log")"
    done
  done
done

python3 - "$OUT" "$ROUNDS" "$CONCURRENCY" "$THREADS" "$AB_TEST" <<'PY'
import sys
out, rounds = sys.argv[1], int(sys.argv[2])
conc, threads, test = sys.argv[3].split(), sys.argv[4].split(), sys.argv[5]


def row(path, first):
    """The cells of the table row of `path` whose first cell is `first`."""
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first:
            return cells
    raise SystemExit(f"no row {first!r} in {path}")


def runs(kind, cell, col, first):
    got = {}
    for who in ("before", "after"):
        got[who] = [float(row(f"{out}/{kind}-{cell}-{who}-{r}.md", first)[col]) for r in range(rounds)]
    return got


mean = lambda xs: sum(xs) / len(xs)
fmt = lambda xs, d: ", ".join(f"{x:.{d}f}" for x in xs)


def pair(g, d=0):
    b, a = mean(g["before"]), mean(g["after"])
    return f"{b:.{d}f} ({fmt(g['before'], d)})", f"{a:.{d}f} ({fmt(g['after'], d)})", f"{a / b:.2f}"


def spread(g):
    xs = g["before"] + g["after"]
    return f"{min(xs):.0f}-{max(xs):.0f} ({max(xs) / min(xs):.2f}x)"


order = ", ".join("before, after" if r % 2 == 0 else "after, before" for r in range(rounds))
if conc:
    print("Seed benchmark (bench/partitioned.sh): ms for the whole run (lower is better); each figure the median of the script's REPEAT runs; mean of the binary's runs, each run in parentheses; run order per cell: " + order + ".")
    print()
    print("| concurrency | MariaDB ms, all runs (max/min) | unpartitioned before | unpartitioned after | after/before | partitioned before | partitioned after | after/before |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for c in conc:
        d = runs("seed", c, 1, c)
        u = runs("seed", c, 2, c)
        p = runs("seed", c, 3, c)
        print(f"| {c} | {spread(d)} | " + " | ".join(pair(u)) + " | " + " | ".join(pair(p)) + " |")
    print()
print(f"Unpartitioned (bench/passthrough.sh, {test}): qps (higher is better) and the proxy's µs of CPU per statement (lower is better); same layout.")
print()
print("| threads | direct qps, all runs (max/min) | haproxy qps, all runs (max/min) | hscale qps before | hscale qps after | after/before | µs CPU/stmt before | µs CPU/stmt after | after/before |")
print("|---:|---|---|---:|---:|---:|---:|---:|---:|")
for t in threads:
    d = runs("ps", t, 2, test)
    h = runs("ps", t, 3, test)
    q = runs("ps", t, 4, test)
    cpu = runs("ps", t, 11, test)
    print(f"| {t} | {spread(d)} | {spread(h)} | " + " | ".join(pair(q)) + " | " + " | ".join(pair(cpu, 1)) + " |")
idle = [int(x) for x in open(f"{out}/idle")]
print()
print(f"Machine idle before each run (other work on the cores): {min(idle)}-{max(idle)}%.")
PY
