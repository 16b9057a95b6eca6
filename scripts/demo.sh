#!/usr/bin/env bash
# Sets everything up, then runs dualtrack's main job on the bundled example project: scan, host
# diagnosis, a traced CPU run of the declared training step with CUDA redirected, the MPS coverage
# prediction, and the verdict with its checklist (HTML, Markdown and JSON in dualtrack-report/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
build/dualtrack audit examples/cuda-research --trust-project-run "$@"
