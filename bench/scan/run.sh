#!/usr/bin/env bash
# Benchmark of `dualtrack scan` against the articles' grep and ripgrep on the same corpus.
#
# Builds (once) a corpus of real Python / C / C++ / CUDA source under /tmp by copying the source
# files of an installed site-packages (torch's .py files and headers included) and replicating
# the copy until it reaches CORPUS_MB, then times each tool RUNS times in the same run and
# prints the medians and the peak memory (/usr/bin/time -v). Not run in CI.
#
#   bench/scan/run.sh [build/dualtrack]
#   CORPUS_MB=500 RUNS=5 SITE_PACKAGES=/path/to/site-packages bench/scan/run.sh
set -euo pipefail

BIN=${1:-build/dualtrack}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
SITE_PACKAGES=${SITE_PACKAGES:-$(python3 -c 'import site; print(site.getsitepackages()[0])')}
CORPUS=${CORPUS:-/tmp/dualtrack-scan-corpus}
CORPUS_MB=${CORPUS_MB:-500}
RUNS=${RUNS:-5}
PATTERN='cuda|CUDAExtension|nvcc|\.cu|cudnn|nccl|cublas'
OUT=$(mktemp -d /tmp/dualtrack-scan-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

corpus_bytes() { du -sb "$CORPUS" | cut -f1; }

if [[ ! -f "$CORPUS/.complete" ]]; then
  rm -rf "$CORPUS"
  mkdir -p "$CORPUS/copy0"
  echo "building corpus from $SITE_PACKAGES ..." >&2
  (cd "$SITE_PACKAGES" && find . -type f \( -name '*.py' -o -name '*.pyi' -o -name '*.h' \
      -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' -o -name '*.c' -o -name '*.cu' \
      -o -name '*.cuh' \) -print0 | xargs -0 cp --parents -t "$CORPUS/copy0")
  i=1
  while (( $(corpus_bytes) < CORPUS_MB * 1000 * 1000 )); do
    cp -r "$CORPUS/copy0" "$CORPUS/copy$i"
    i=$((i + 1))
  done
  touch "$CORPUS/.complete"
fi
FILES=$(find "$CORPUS" -type f | wc -l)
BYTES=$(corpus_bytes)
echo "corpus: $CORPUS, $((BYTES / 1000000)) MB, $FILES files; cores: $(nproc); runs: $RUNS"

# Warm the page cache so every tool reads from memory.
find "$CORPUS" -type f -print0 | xargs -0 cat > /dev/null

# Each command writes its output to a file: GNU grep stops at the first match of a file when
# stdout is /dev/null, which would not be the same work.
declare -A CMDS=(
  [dualtrack]="\"$BIN\" scan \"$CORPUS\" --format json --fail-on never --threads 2 --no-gitignore"
  [grep]="grep -RInE '$PATTERN' \"$CORPUS\""
  [rg]="rg -n --no-ignore --hidden -j 2 '$PATTERN' \"$CORPUS\""
)
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for name in dualtrack grep rg; do
  : > "$OUT/$name.times"
  : > "$OUT/$name.mem"
done
for ((r = 1; r <= RUNS; r++)); do
  for name in dualtrack grep rg; do  # Interleaved so that noise hits all three alike.
    /usr/bin/time -f '%e %M' -o "$OUT/$name.time1" bash -c "${CMDS[$name]} > $OUT/$name.out" || true
    read -r secs kb < "$OUT/$name.time1"
    echo "$secs" >> "$OUT/$name.times"
    echo "$kb" >> "$OUT/$name.mem"
  done
done
printf '%-10s %10s %10s %12s %12s\n' tool median_s min_s peak_MiB output_lines
for name in dualtrack grep rg; do
  med=$(median < "$OUT/$name.times")
  min=$(sort -n "$OUT/$name.times" | head -1)
  mem=$(sort -n "$OUT/$name.mem" | tail -1)
  lines=$(wc -l < "$OUT/$name.out")
  printf '%-10s %10s %10s %12d %12d\n' "$name" "$med" "$min" $((mem / 1024)) "$lines"
done
python3 - "$OUT/dualtrack.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
print(f"dualtrack: {s['findings']} findings in {s['files_scanned']} files, {len(d['skipped'])} skipped")
PY
