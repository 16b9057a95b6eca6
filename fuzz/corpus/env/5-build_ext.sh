#!/usr/bin/env bash
# Build and install the fused GELU extension into the active environment.
set -euo pipefail
cd "$(dirname "$0")/../ext"

if ! command -v nvcc >/dev/null 2>&1; then
    echo "nvcc not found: load the CUDA 12.1 module first (module load cuda/12.1)" >&2
    exit 1
fi
nvcc --version
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-8.0;8.6;9.0}"
python setup.py install
python -c "import fused_gelu_cuda; print('fused_gelu_cuda', fused_gelu_cuda.__file__)"
