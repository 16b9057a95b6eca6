import argparse
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()
local_rank = int(os.environ["LOCAL_RANK"])


def prepare(model, batch):
    model = model.to(args.gpu)  # expect: DT113
    batch = batch.to(local_rank)  # expect: DT113
    return model, batch


device = torch.device("cpu")
x = torch.zeros(2).to(device)
y = torch.zeros(2).to(torch.float16)
