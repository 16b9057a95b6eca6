#!/bin/bash
export CUDA_HOME=/usr/local/cuda-11.8  # expect: DT410
export LD_LIBRARY_PATH=$CUDA_HOME/lib64:$LD_LIBRARY_PATH
echo "$CUDA_HOME"
export OMP_NUM_THREADS=4
