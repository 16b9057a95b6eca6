import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--distributed", action="store_true")
parser.add_argument("--local_rank", type=int, default=0)
args = parser.parse_args()

if args.distributed:
    torch.cuda.set_device(args.local_rank)  # expect-guarded: DT104
