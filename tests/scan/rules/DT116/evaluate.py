# torch.load without map_location restores tensors on the device they were saved from: a checkpoint
# written on CUDA fails to load on a Mac. Passing map_location (keyword, second argument, or maybe
# through **kwargs) is the portable form.
import io

import torch
from torch import nn

model = nn.Linear(4, 2)
checkpoint = torch.load("checkpoints/best_model.pth")  # expect: DT116
model.load_state_dict(checkpoint["model_state_dict"])
state = torch.load(  # expect: DT116
    io.BytesIO(b""),
    weights_only=True,
)
resume = torch.load("last.pth", weights_only=False)  # expect: DT116
if torch.cuda.is_available():
    gpu_state = torch.load("gpu.pth")  # expect-guarded: DT116

cpu_state = torch.load("a.pth", map_location="cpu")
dev_state = torch.load("a.pth", torch.device("cpu"))
any_state = torch.load("a.pth", map_location=lambda storage, loc: storage)


def load(path, **kwargs):
    return torch.load(path, **kwargs)


loader = torch.load
cfg = {"loader": "torch.load"}
