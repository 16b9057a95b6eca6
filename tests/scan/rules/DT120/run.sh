#!/bin/bash
set -e
python train.py --config configs/train.yaml --device cuda  # expect: DT120
python eval.py --accelerator gpu --ckpt last.ckpt  # expect: DT120
python eval.py --device cpu --ckpt last.ckpt
# python train.py --device cuda
echo "--device cuda is the default"
