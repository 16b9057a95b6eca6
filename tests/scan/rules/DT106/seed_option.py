import argparse
import random

import torch
import torch.backends.cudnn as cudnn

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=None)
parser.add_argument("--fast_conv", action="store_true")
parser.add_argument("--tf32", action="store_true")
args = parser.parse_args()

if args.seed is not None:
    # A seed, not a CUDA mode: the option's body runs off CUDA too.
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    cudnn.deterministic = True  # expect: DT106

if args.fast_conv:
    # The option's whole body is the CUDA setting it turns on.
    cudnn.benchmark = True  # expect-guarded: DT106

if args.tf32:
    torch.backends.cuda.matmul.allow_tf32 = True  # expect-guarded: DT106
else:
    torch.backends.cuda.matmul.allow_tf32 = False  # expect: DT106
