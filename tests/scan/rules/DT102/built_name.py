import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()

# A device name built by concatenation: the literal head is the CUDA device string.
device = torch.device("cuda:" + str(args.gpu))  # expect: DT102
fallback = torch.device("cuda:" + str(args.gpu) if torch.cuda.is_available() else "cpu")  # expect-guarded: DT102
print("cuda:", torch.cuda.is_available())  # prose, not a device
