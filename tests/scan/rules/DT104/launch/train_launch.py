import argparse

import torch
from dist_utils import init_distributed_mode


def main(args):
    init_distributed_mode(args)
    if args.distributed:
        # The option's default (True) is replaced at run time by init_distributed_mode.
        torch.cuda.set_device(args.gpu)  # expect-guarded: DT104


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--distributed", default=True, type=bool)
    main(parser.parse_args())
