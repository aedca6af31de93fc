#!/usr/bin/env bash
# Run one integration test file of crates/hscale N times in a row, each
# run with its own seed (HSCALE_SEED=1..N, which seeded tests read), one
# invocation at a time, and print how many passed and the seeds that
# failed. Used for issue 33's "the read-your-writes test passes 20 times
# in a row":
#
#     tools/repeat_test.sh 20 read_your_writes
#
# LOCK, when set, prefixes each run (e.g. LOCK=/tmp/locked on a machine
# whose runs take a lock). Extra arguments go to the test binary.
set -u
runs=${1:?runs}
file=${2:?test file}
shift 2
cd "$(dirname "$0")/.."
${LOCK:-} cargo test -p hscale --test "$file" --no-run --quiet || exit 1
passed=0
failed=()
for seed in $(seq 1 "$runs"); do
    if HSCALE_SEED=$seed ${LOCK:-} cargo test -p hscale --test "$file" --quiet -- "$@" \
        >"${TMPDIR:-/tmp}/repeat_test.$file.$seed.log" 2>&1; then
        passed=$((passed + 1))
        echo "run $seed: passed"
    else
        failed+=("$seed")
        echo "run $seed: FAILED (log: ${TMPDIR:-/tmp}/repeat_test.$file.$seed.log)"
    fi
done
echo "$file: $passed of $runs runs passed${failed[*]:+; failed seeds: ${failed[*]}}"
[ "$passed" -eq "$runs" ]
