#!/bin/bash
python main.py --dist-backend nccl --world-size 1  # expect: DT205
python main.py --dist-backend gloo --world-size 1
