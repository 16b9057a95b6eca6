#!/usr/bin/env bash
# Times `dualtrack freeze --data` against `sha256sum` over the same data slice, in the same run,
# with a warm page cache for both; prints medians, the ratio and dualtrack's peak RSS.
# Usage: bench/env/bench_freeze.sh [BUILD_DIR] [FILES] [MIB_PER_FILE] [RUNS]
set -euo pipefail
BIN="${1:-build}/dualtrack"
FILES="${2:-9}"
MIB="${3:-256}"
RUNS="${4:-5}"
DIR="${DUALTRACK_BENCH_DIR:-/tmp/dualtrack-bench-env}"
mkdir -p "$DIR/slice"
for i in $(seq 1 "$FILES"); do
  f="$DIR/slice/part-$i.bin"
  if [ ! -f "$f" ] || [ "$(stat -c %s "$f")" -ne $((MIB * 1048576)) ]; then
    head -c $((MIB * 1048576)) /dev/urandom > "$f"
  fi
done
total_mib=$((FILES * MIB))
cat "$DIR"/slice/*.bin > /dev/null  # Warm the page cache for both tools.

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
time_it() {  # Prints "wall cpu" seconds of "$@" (cpu = user + sys, immune to other tenants' load).
  /usr/bin/time -f '%e %U %S' -o "$DIR/time.txt" "$@" > /dev/null 2>&1
  awk '{printf "%s %s\n", $1, $2 + $3}' "$DIR/time.txt"
}

sha=(); dt=(); full=(); sha_cpu=(); dt_cpu=()
for r in $(seq 1 "$RUNS"); do
  read -r w c < <(time_it sha256sum "$DIR"/slice/*.bin); sha+=("$w"); sha_cpu+=("$c")
  read -r w c < <(time_it "$BIN" freeze --data-only --data "$DIR/slice" -o "$DIR/baseline-data.json")
  dt+=("$w"); dt_cpu+=("$c")
  read -r w c < <(time_it "$BIN" freeze --data "$DIR/slice" -o "$DIR/baseline.json"); full+=("$w")
done
m_sha=$(printf '%s\n' "${sha[@]}" | median)
m_dt=$(printf '%s\n' "${dt[@]}" | median)
m_full=$(printf '%s\n' "${full[@]}" | median)
c_sha=$(printf '%s\n' "${sha_cpu[@]}" | median)
c_dt=$(printf '%s\n' "${dt_cpu[@]}" | median)
rss=$( { /usr/bin/time -f '%M' "$BIN" freeze --data-only --data "$DIR/slice" -o "$DIR/baseline-data.json"; } 2>&1 | tail -1)
# The digests must agree with sha256sum's.
python3 - "$DIR" <<'PY'
import json, subprocess, sys, os
d = sys.argv[1]
b = json.load(open(os.path.join(d, "baseline-data.json")))
ours = {os.path.basename(f["path"]): f["sha256"] for f in b["data"]["files"]}
out = subprocess.run(["sha256sum"] + sorted(os.path.join(d, "slice", n) for n in ours), capture_output=True, text=True).stdout
theirs = {os.path.basename(l.split()[1]): l.split()[0] for l in out.splitlines()}
assert ours == theirs, "digests differ from sha256sum"
PY
printf 'slice: %d files, %d MiB; runs: %d; cores: %s\n' "$FILES" "$total_mib" "$RUNS" "$(nproc)"
printf 'sha256sum (median):                 %.2f s  (%.0f MiB/s)\n' "$m_sha" "$(echo "$total_mib / $m_sha" | bc -l)"
printf 'dualtrack freeze --data-only:       %.2f s  (%.0f MiB/s)  ratio %.1fx\n' "$m_dt" \
  "$(echo "$total_mib / $m_dt" | bc -l)" "$(echo "$m_sha / $m_dt" | bc -l)"
printf 'dualtrack freeze --data (full):     %.2f s  ratio %.1fx (includes the env, git and pip probes)\n' \
  "$m_full" "$(echo "$m_sha / $m_full" | bc -l)"
printf 'CPU seconds (median):               sha256sum %.2f s, dualtrack %.2f s: ratio %.1fx\n' \
  "$c_sha" "$c_dt" "$(echo "$c_sha / $c_dt" | bc -l)"
printf 'load average during the run:        %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'dualtrack peak RSS (--data-only):   %s KiB\n' "$rss"
