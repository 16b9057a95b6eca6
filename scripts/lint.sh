#!/usr/bin/env bash
# The tree's formatting and lint, as CI checks them: clang-format (the repository's .clang-format)
# on the C++ sources, clang-tidy (.clang-tidy, every warning an error) on the non-test C++ sources
# against build/compile_commands.json, scripts/limits.py (the house limits on function and class
# length) on the non-test C++ sources, ruff (pyproject.toml's [tool.ruff]) on the Python package,
# benchmarks and tools, and mypy ([tool.mypy]) on the package. `scripts/lint.sh --fix` rewrites
# instead of checking (mypy and the limits only check).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
fix=0
[ "${1:-}" = "--fix" ] && fix=1

# (No mapfile: macOS ships bash 3.2. No path here holds a space.)
cpp=$(find src fuzz bench -type f \( -name '*.cc' -o -name '*.h' \) | sort)
python=(python/dualtrack bench tools)

# The tree is formatted by clang-format 14 (Debian 12's); other releases format some constructs
# differently, so they are not asked to agree.
if command -v clang-format >/dev/null && clang-format --version | grep -q 'version 14\.'; then
  if [ $fix = 1 ]; then
    clang-format -i $cpp
  else
    clang-format --dry-run --Werror $cpp
  fi
  echo "clang-format: $(echo "$cpp" | wc -l | tr -d ' ') files"
else
  echo "clang-format 14 not found: C++ formatting not checked" >&2
fi

# Likewise clang-tidy 14: other releases bring other checks. It needs a configured build tree.
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [ -n "$tidy" ] && "$tidy" --version | grep -q 'version 14\.' && [ -f build/compile_commands.json ]; then
  sources=$(find src -name '*.cc' ! -name '*_test.cc' | sort)
  jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
  echo "$sources" | xargs -P "$jobs" -n 4 "$tidy" -p build --quiet 2>/dev/null
  echo "clang-tidy: $(echo "$sources" | wc -l | tr -d ' ') files"
else
  echo "clang-tidy 14 or build/compile_commands.json not found: C++ lint not checked" >&2
fi

# The house limits: no function over 120 lines, no class over 700 with its out-of-line members.
"$PYTHON" scripts/limits.py src

if [ $fix = 1 ]; then
  "$PYTHON" -m ruff format "${python[@]}"
  "$PYTHON" -m ruff check --fix "${python[@]}"
else
  "$PYTHON" -m ruff format --check "${python[@]}"
  "$PYTHON" -m ruff check "${python[@]}"
fi
"$PYTHON" -m mypy
