#!/bin/bash
# A script's options are the settings of the program it runs, with the script's variables read.
n_gpus_per_node=4
cpu_only=0
python -u ./train.py configs/data.py \
    --num_nodes=1 --batch_size=2 \
    --gpus=${n_gpus_per_node} --accelerator="ddp"  # expect: DT120
python -u ./test.py --gpus=${cpu_only} --batch_size=1
python -u ./test.py --num-gpus $NGPUS  # expect: DT120
python -u ./test.py --gpus "${GPUS:-0}"
python main.py --base configs/vqgan.yaml -t True --gpus 0,1  # expect: DT120
python main.py --base configs/vqgan.yaml -t True --gpus 0,  # expect: DT120 (Lightning: a list, GPU 0)
python main.py --gpus 0 --lr 1e-4,2e-4
