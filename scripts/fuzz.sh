#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (one per tensor-file reader, one per scanner family: Python,
# notebook, C/C++/CUDA and CMake, build and environment files, and one for the bundle files) with
# clang into build-fuzz/,
# with AddressSanitizer and UBSan, and runs each briefly from its seed corpus (fuzz/corpus/<reader>,
# copied to a scratch folder so new inputs never land in the repository). Exits non-zero on a crash.
# FUZZ_SECONDS sets the time per target (default 15), FUZZ_SEED the seed (default 1, so a run is
# repeatable); CXX_FUZZ the clang++ to use. macOS: Apple's
# clang has no libFuzzer; use Homebrew's llvm (CXX_FUZZ=$(brew --prefix llvm)/bin/clang++).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-15}
cxx=${CXX_FUZZ:-clang++}
command -v "$cxx" >/dev/null || { echo "fuzz: $cxx not found (apt-get install clang)" >&2; exit 2; }
readers=(safetensors npy npz torch pickle python notebook cpp env bundle)

gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  cmake -S . -B build-fuzz "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDUALTRACK_FUZZ=ON -DDUALTRACK_BUILD_TESTS=OFF \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all" >/dev/null
fi
targets=(); for r in "${readers[@]}"; do targets+=("fuzz_$r"); done
cmake --build build-fuzz -j "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)" --target "${targets[@]}"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for r in "${readers[@]}"; do
  mkdir -p "$scratch/$r"
  cp fuzz/corpus/"$r"/* "$scratch/$r/"
  echo "== fuzz_$r (${seconds}s)"
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      build-fuzz/fuzz/fuzz_"$r" -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -artifact_prefix="$scratch/" -print_final_stats=0 "$scratch/$r" \
      >"$scratch/$r.log" 2>&1; then
    echo "fuzz_$r: crash or leak; the input and log follow" >&2
    tail -n 60 "$scratch/$r.log" >&2
    for f in "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* "$scratch"/oom-*; do
      [ -e "$f" ] && { mkdir -p build-fuzz/artifacts; cp "$f" build-fuzz/artifacts/; echo "saved $f to build-fuzz/artifacts/" >&2; }
    done
    status=1
  else
    grep -E "^#[0-9]+ +DONE" "$scratch/$r.log" || tail -n 1 "$scratch/$r.log"
  fi
done
exit $status
