#!/bin/bash
export TORCH_CUDA_ARCH_LIST="8.0;8.6+PTX"  # expect: DT302
pip install -e .
# TORCH_CUDA_ARCH_LIST=9.0 for H100
