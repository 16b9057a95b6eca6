#!/bin/bash
conda install -y -c nvidia cuda-compiler  # expect: DT408
conda install -y -c conda-forge numpy
