#!/bin/bash
nvidia-smi  # expect: DT405
nvcc --version  # expect: DT405
nsys profile -o report python train.py  # expect: DT405
python -c "import torch; print(torch.__version__)"
echo "run nvidia-smi to see the GPUs"
# nvidia-smi -L
