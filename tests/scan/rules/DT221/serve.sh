#!/usr/bin/env bash
MODEL=meta-llama/Llama-2-7b-hf
python serve.py --model "$MODEL" --load-in-8bit  # expect: DT221
python chat.py --model "$MODEL" --load_in_4bit --max-new-tokens 256  # expect: DT221
python quant.py --quantize bitsandbytes  # expect: DT221
python serve.py --model "$MODEL" --dtype float16
# add --load-in-8bit on small GPUs
