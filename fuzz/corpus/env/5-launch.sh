#!/usr/bin/env bash
# Two-GPU data-parallel run on one cluster node. Extra arguments go to train.py.
set -euo pipefail
cd "$(dirname "$0")/.."

nvidia-smi
nvcc --version

export CUDA_VISIBLE_DEVICES=0,1
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
export OMP_NUM_THREADS=4

torchrun --nproc_per_node=2 train.py --distributed --amp --steps "${STEPS:-2000}" "$@"
