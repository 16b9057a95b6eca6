#!/usr/bin/env bash
# A script's options are the keyword arguments of the code it runs: `--optim paged_adamw_32bit`
# selects the bitsandbytes paged optimiser as `optim="paged_adamw_32bit"` does.
python qlora.py --model_name_or_path huggyllama/llama-7b --optim paged_adamw_32bit  # expect: DT220
python sft.py --attn_implementation=flash_attention_2 --bf16  # expect: DT220
python train.py --optim "adamw_8bit"  # expect: DT220
python train.py --optim adamw_torch --attn_implementation sdpa
echo "try --optim paged_adamw_32bit on small GPUs"
