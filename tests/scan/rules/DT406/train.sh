#!/bin/bash
export CUDA_VISIBLE_DEVICES=0,1  # expect: DT406
CUDA_VISIBLE_DEVICES=2 python train.py --config configs/base.yaml  # expect: DT406
python eval.py --ckpt last.ckpt
# CUDA_VISIBLE_DEVICES=3 for the ablation
gpu_list="${CUDA_VISIBLE_DEVICES:-0}"  # expect: DT406
echo "set CUDA_VISIBLE_DEVICES to pick the GPUs"
