#!/bin/bash
deepspeed train.py \
    --model_name_or_path ./base \
    --bf16 True \
    --tf32 True  # expect: DT106
python train.py --tf32 False
