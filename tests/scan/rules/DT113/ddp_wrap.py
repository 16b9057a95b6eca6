import argparse

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()


def wrap(model):
    model = model.to(args.gpu)  # expect: DT113
    return DDP(model, device_ids=[args.gpu])  # expect: DT113


def wrap_cpu(model):
    return DDP(model)
