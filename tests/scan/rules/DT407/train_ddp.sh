#!/bin/bash
torchrun --nproc_per_node=8 train.py --config configs/ddp.yaml  # expect: DT407
python -m torch.distributed.launch --nproc_per_node 4 train.py  # expect: DT407
torchrun --standalone train.py
python train.py --config configs/ddp.yaml
# torchrun --nproc_per_node=2 for debugging
