#!/usr/bin/env bash
# Sets everything up, then runs dualtrack's main job on the bundled example project.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
build/dualtrack --version
python3 examples/cuda-research/train.py --device cpu --steps 2
