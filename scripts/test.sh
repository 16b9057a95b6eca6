#!/usr/bin/env bash
# Runs every test: the C++ suite (warnings as errors), the self-contained wheel (`pip wheel .`), pytest for the CLI,
# the Python package and the example, a short libFuzzer run of every tensor-file reader, then the C++
# suite again under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)

echo "== setup and build (warnings are errors)"
scripts/setup.sh

echo "== formatters and linters"
scripts/lint.sh

echo "== pip wheel . (self-contained: executable and Python package; no compiler needed to install)"
rm -rf build/wheel build/pip-venv
"$PYTHON" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w build/wheel/raw .
case "$(uname -s)" in
  Linux) "$PYTHON" -m auditwheel repair -w build/wheel build/wheel/raw/*.whl ;;
  Darwin) "$PYTHON" -m delocate.cmd.delocate_wheel -w build/wheel build/wheel/raw/*.whl ;;
  *) cp build/wheel/raw/*.whl build/wheel/ ;;
esac
wheel=$(ls "$PWD"/build/wheel/*.whl)
"$PYTHON" -m venv --system-site-packages build/pip-venv
build/pip-venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --no-index "$wheel"

echo "== C++ tests"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== Python tests"
DUALTRACK_BIN="$PWD/build/dualtrack" DUALTRACK_PIP_VENV="$PWD/build/pip-venv" DUALTRACK_WHEEL="$wheel" \
  "$PYTHON" -m pytest -q -p no:cacheprovider tests

echo "== libFuzzer: each tensor-file reader for ${FUZZ_SECONDS:=10}s"
FUZZ_SECONDS=$FUZZ_SECONDS scripts/fuzz.sh

echo "== C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer"
if [ ! -f build-asan/CMakeCache.txt ]; then
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B build-asan "${gen[@]}" -DCMAKE_BUILD_TYPE=Debug -DDUALTRACK_SANITIZE=ON \
    -DDUALTRACK_WERROR=ON >/dev/null
fi
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
