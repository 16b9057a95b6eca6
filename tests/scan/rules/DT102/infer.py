import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")  # expect: DT102
args = parser.parse_args()

device = torch.device("cuda")  # expect: DT102
x = torch.randn(4, 4, device="cuda:0")  # expect: DT102
y = x.to("cuda")  # expect: DT102

dev = "cuda" if torch.cuda.is_available() else "cpu"  # expect-guarded: DT102
if x.device.type == "cuda":
    print("running on the GPU")
# .to("cuda") was the old way
label = "cuda kernels are fast"
cfg = {"device": "cuda"}  # expect: DT102
parser.add_argument("--gpu-device", type=str, help='device, e.g. "cuda" or "mps"')
