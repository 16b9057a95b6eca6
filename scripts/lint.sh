#!/usr/bin/env bash
# The tree's formatting and lint, as CI checks them: clang-format (the repository's .clang-format)
# on the C++ sources, ruff (pyproject.toml's [tool.ruff]) on the Python package, benchmarks and
# tools, and mypy ([tool.mypy]) on the package. `scripts/lint.sh --fix` rewrites instead of
# checking (mypy only checks).
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

if [ $fix = 1 ]; then
  "$PYTHON" -m ruff format "${python[@]}"
  "$PYTHON" -m ruff check --fix "${python[@]}"
else
  "$PYTHON" -m ruff format --check "${python[@]}"
  "$PYTHON" -m ruff check "${python[@]}"
fi
"$PYTHON" -m mypy
