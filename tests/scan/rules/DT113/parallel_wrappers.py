import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def wrap(model, args):
    # A parallel wrapper's device_ids are GPU indexes, whatever expression holds them.
    model = nn.DataParallel(model, device_ids=args.gpus)  # expect: DT113
    model = DDP(model, device_ids=None)  # no device index
    return Other(model, device_ids=args.gpus)  # another callee's keyword says nothing


class Other:
    def __init__(self, model, device_ids):
        self.model = model
