# `.to(device=args.gpu)` is the keyword form of the documented `.to(args.gpu)` (an integer CUDA index), but only the positional form is reported.
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()


def prepare(model):
    return model.to(device=args.gpu)  # expect: DT113
