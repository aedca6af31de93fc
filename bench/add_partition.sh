#!/usr/bin/env bash
# Row copy behind HSCALE ADD_PARTITION: N rows of one partition value move
# from the default partition on shard0 to a new partition on shard1, so every
# row streams through the proxy (read from shard0, written to shard1 as
# batched INSERTs). For each N: seconds, rows/s, and the proxy's RSS before
# and its peak during the copy (VmHWM of the hscale process, reset through
# /proc/PID/clear_refs just before the statement). Afterwards the backends
# are checked directly: the new partition holds the N rows (same count and
# checksum as before the move), the default table none of that value.
# Markdown on stdout, progress on stderr.
#
# Fails (exit 1) if the copy fails, the check fails, or the peak RSS of the
# largest N is more than 10% + SLACK_MB above that of the smallest N: with a
# streamed copy the peak must not grow with the rows copied. SLACK_MB
# (default 5) absorbs allocator and page-granularity noise on small peaks.
#
# Then DROP_PARTITION merges the rows back into the default partition, and
# the default partition is checked again. Fails too if either command's
# longest write pause (its answer's longest_write_pause_ms) is over
# MAX_PAUSE_MS (default 100).
#
# Environment: SIZES (default "1000000 2000000"), SLACK_MB (default 5),
# HSCALE (binary, default ./target/release/hscale).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/sbin"

SIZES=${SIZES:-1000000 2000000}
SLACK_MB=${SLACK_MB:-5}
MAX_PAUSE_MS=${MAX_PAUSE_MS:-100}
HSCALE=${HSCALE:-./target/release/hscale}
MODULUS=10
VALUE=3 # every row's k MOD $MODULUS

# shellcheck source=bench/lib.sh
source bench/lib.sh
require mariadb python3
start_playground 2 addpart

proxy() { mariadb -h127.0.0.1 -P"$PORT" -uroot --skip-ssl "$@"; }
backend() { local b=$1; shift; mariadb -h127.0.0.1 -P"${BACKEND_PORTS[$b]}" -uhscale -phscale --skip-ssl "$@"; }

# About 100 bytes a row: 8 + 4 + 65 (a) + 8 + 5 (c) plus InnoDB's overhead.
TABLE="(id BIGINT NOT NULL, k INT NOT NULL, a VARCHAR(100) NOT NULL, b DOUBLE NOT NULL, c DATETIME NOT NULL, PRIMARY KEY (id, k))"
select_rows() {
  echo "SELECT seq, seq * $MODULUS + $VALUE, CONCAT(MD5(seq), '-', LEFT(SHA1(seq), 32)), seq / 7, TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND FROM seq_1_to_$1"
}
# Rows of the moved value, and a checksum of their contents.
CHECK="COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS('|', id, k, a, b, c))), 0)"

kb() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$PG_PID/status"; }
# The physical table of PARTITION of DB.t (NULL: the default partition),
# from HSCALE SHOW PARTITIONS: names carry a generation (`t_default_g3`).
physical() {
  proxy -N --batch -e "HSCALE SHOW PARTITIONS('$1.t')" |
    awk -F'\t' -v p="$2" '$2 == p { print $5 }'
}
mb() { python3 -c "print(f'{$1 / 1024:.1f}')"; }

rows=()
peaks=()
for n in $SIZES; do
  db="ap$n"
  log "N=$n: creating $db.t, partitioned with MOD($MODULUS), default partition on shard0"
  proxy -e "CREATE DATABASE $db; CREATE TABLE $db.t $TABLE"
  proxy -e "HSCALE SETUP_TABLE('$db.t', 'k', 't_default', 'shard0', 'MOD($MODULUS)')"
  proxy --batch -e "HSCALE SHOW TABLES" | grep -q "t_default" || die "t_default not in HSCALE SHOW TABLES"
  default=$(physical "$db" NULL)
  [[ -n "$default" ]] || die "no default partition in HSCALE SHOW PARTITIONS"
  log "N=$n: loading $n rows (k MOD $MODULUS = $VALUE) into $db.$default on shard0"
  backend 0 "$db" -e "INSERT INTO $default $(select_rows "$n")"
  before_check=$(backend 0 "$db" -N -e "SELECT $CHECK FROM $default WHERE k MOD $MODULUS = $VALUE")
  [[ "$(cut -f1 <<<"$before_check")" == "$n" ]] || die "loaded $before_check rows, wanted $n"

  log "N=$n: HSCALE ADD_PARTITION to shard1"
  echo 5 >"/proc/$PG_PID/clear_refs" || die "cannot reset VmHWM of pid $PG_PID"
  rss_before=$(kb VmRSS)
  start=$(date +%s.%N)
  out=$(proxy --batch -e "HSCALE ADD_PARTITION('$db.t', 'p$VALUE', '$VALUE', 'shard1')" 2>&1) \
    || die "ADD_PARTITION failed for N=$n: $out"
  end=$(date +%s.%N)
  hwm=$(kb VmHWM)
  [[ -z "$out" ]] || log "N=$n: $out"

  moved=$(physical "$db" "p$VALUE")
  default=$(physical "$db" NULL)
  after_check=$(backend 1 "$db" -N -e "SELECT $CHECK FROM $moved")
  left=$(backend 0 "$db" -N -e "SELECT COUNT(*) FROM $default WHERE k MOD $MODULUS = $VALUE")
  [[ "$after_check" == "$before_check" ]] \
    || die "N=$n: $moved on shard1 has (count, checksum) $after_check, the default table had $before_check"
  [[ "$left" == 0 ]] || die "N=$n: $left rows of value $VALUE left in $default on shard0"
  log "N=$n: checked: $moved on shard1 holds $n rows (checksum equal), $default none of value $VALUE"

  add_pause=$(awk -F'\t' 'NR == 2 { print $3 }' <<<"$out")

  # And back: DROP_PARTITION merges the rows into the default partition.
  log "N=$n: HSCALE DROP_PARTITION"
  drop_start=$(date +%s.%N)
  dropped=$(proxy --batch -e "HSCALE DROP_PARTITION('$db.t', 'p$VALUE')" 2>&1) \
    || die "DROP_PARTITION failed for N=$n: $dropped"
  drop_end=$(date +%s.%N)
  drop_pause=$(awk -F'\t' 'NR == 2 { print $3 }' <<<"$dropped")
  default=$(physical "$db" NULL)
  back_check=$(backend 0 "$db" -N -e "SELECT $CHECK FROM $default WHERE k MOD $MODULUS = $VALUE")
  [[ "$back_check" == "$before_check" ]] \
    || die "N=$n: after DROP_PARTITION $default has (count, checksum) $back_check of value $VALUE, wanted $before_check"
  log "N=$n: checked: $default on shard0 holds the $n rows again (checksum equal)"
  for p in "$add_pause" "$drop_pause"; do
    (( p <= MAX_PAUSE_MS )) || die "N=$n: a write pause of $p ms (ADD $add_pause, DROP $drop_pause), over $MAX_PAUSE_MS"
  done

  secs=$(python3 -c "print(f'{$end - $start:.1f}')")
  rate=$(python3 -c "print(f'{$n / ($end - $start):.0f}')")
  drop_secs=$(python3 -c "print(f'{$drop_end - $drop_start:.1f}')")
  rows+=("| $n | $secs | $rate | $add_pause | $drop_secs | $drop_pause | $(mb "$rss_before") | $(mb "$hwm") | $(mb $((hwm - rss_before))) |")
  peaks+=("$hwm")
  # Free the backends' disk and buffer pool for the next size.
  proxy -e "DROP TABLE $db.t"
done

first=${peaks[0]}
last=${peaks[${#peaks[@]} - 1]}
limit=$(( first * 110 / 100 + SLACK_MB * 1024 ))

echo "## ADD_PARTITION row copy (bench/add_partition.sh)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), nproc: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/^Mem:/ {print $2}') GB RAM"
echo "- 2 backends (one machine); \`t\` partitioned with MOD($MODULUS) on k, every row's k MOD $MODULUS = $VALUE, loaded into t_default on shard0; \`HSCALE ADD_PARTITION('t', 'p$VALUE', '$VALUE', 'shard1')\` through the proxy, so every row is read by the proxy and INSERTed on shard1; then \`HSCALE DROP_PARTITION('t', 'p$VALUE')\` merges them back into the default partition; a command's longest write pause is its answer's \`longest_write_pause_ms\`"
echo "- row: \`$TABLE\`, a is 65 characters"
echo "- RSS of the hscale process (the playground: proxy plus the servers' supervisor; the servers are other processes): VmRSS before the statement, VmHWM reset by \`clear_refs\` before it and read after it"
echo "- pass: peak of N=${SIZES##* } <= 1.10 x peak of N=${SIZES%% *} + $SLACK_MB MB = $(mb "$limit") MB"
echo
echo "| rows | ADD seconds | ADD rows/s | ADD longest write pause ms | DROP seconds | DROP longest write pause ms | RSS before MB | peak RSS during ADD MB | peak - before MB |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"

if (( last > limit )); then
  log "FAIL: peak RSS $(mb "$last") MB at N=${SIZES##* } is more than 10% + $SLACK_MB MB above $(mb "$first") MB at N=${SIZES%% *}"
  exit 1
fi
log "ok: peak RSS $(mb "$last") MB <= $(mb "$limit") MB"
