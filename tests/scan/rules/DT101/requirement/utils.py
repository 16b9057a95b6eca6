import os
import sys

import torch
import torch.distributed as dist


def init_distributed_mode(args):
    # Launched, or one GPU; otherwise the run stops: what follows a call runs only with CUDA.
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args.rank = int(os.environ["RANK"])
    elif torch.cuda.is_available():
        args.rank = 0
    else:
        print("Does not support training without GPU.")
        sys.exit(1)
    dist.init_process_group(backend="gloo", world_size=1, rank=args.rank)


def log_setup(args):
    print(args)
