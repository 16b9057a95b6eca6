import argparse

from utils import bool_flag

parser = argparse.ArgumentParser()
# On unless the user turns it off: every default run asks for CUDA.
parser.add_argument("--use_cuda", default=True, type=bool_flag, help="keep features on GPU")  # expect: DT120
parser.add_argument("--gpu-mode", action="store_false")  # expect: DT120
# Off by default, or a switch that turns CUDA off: the default run selects nothing.
parser.add_argument("--cuda", action="store_true")
parser.add_argument("--no_cuda", default=False)
parser.add_argument("--use_cpu", default=True)
parser.add_argument("--use_fp16", default=True)
