#!/bin/bash
docker run --gpus all -it --rm proj:latest python train.py  # expect: DT420
docker run --runtime=nvidia -v "$PWD":/work proj:latest  # expect: DT420
docker run -it --rm proj:latest python train.py --device cpu
