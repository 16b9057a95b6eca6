# `.to(device=args.gpu)` is the keyword form of `.to(args.gpu)`: an integer CUDA index.
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()


def prepare(model):
    return model.to(device=args.gpu)  # expect: DT113


def prepare_half(model, local_rank):
    model = model.to(dtype=torch.float16, device=local_rank)  # expect: DT113
    return model.to(dtype=torch.float16)
