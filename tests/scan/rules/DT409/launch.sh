#!/bin/bash
sbatch --nodes=4 --gpus-per-node=8 --ntasks-per-node=8 train.sbatch  # expect: DT409
salloc --gres=gpu:1 bash  # expect: DT409
# A container's GPUs are not a scheduler's: DT420, not DT409.
docker run --gpus all proj
