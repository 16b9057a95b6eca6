#!/usr/bin/env bash
# Installs what dualtrack needs (system and Python packages) and builds it into build/.
# Idempotent: on a machine that already has everything it only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
BUILD_DIR=${BUILD_DIR:-build}

packages() { grep -v '^\s*#' "$1" | grep -v '^\s*$'; }

case "$(uname -s)" in
  Linux)
    missing=()
    for p in $(packages scripts/deps/apt.txt); do
      dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      echo "setup: installing Debian packages: ${missing[*]}" >&2
      sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
      $sudo_cmd apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    ;;
  Darwin)
    command -v brew >/dev/null || { echo "setup: Homebrew is required on macOS" >&2; exit 2; }
    brew install --quiet $(packages scripts/deps/brew.txt)
    ;;
esac

if ! "$PYTHON" -m pip install -q --disable-pip-version-check -r requirements-dev.txt; then
  echo "setup: pip could not install requirements-dev.txt" >&2
  exit 2
fi

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDUALTRACK_WERROR=ON "$@" >/dev/null
fi
cmake --build "$BUILD_DIR" -j "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
