import os

import torch


def init_distributed_mode(args):
    # `args.distributed` is True only past the launcher's tests: a launch flag for the project.
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args.gpu = int(os.environ["LOCAL_RANK"])
    else:
        args.distributed = False
        return
    args.distributed = True
    torch.cuda.set_device(args.gpu)  # expect-guarded: DT104
