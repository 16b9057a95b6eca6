import torch
import torch.nn as nn

model = nn.Linear(8, 8)
model = torch.compile(model)  # expect: DT208


@torch.compile(mode="max-autotune")  # expect: DT208
def fused(x):
    return torch.relu(x) * 2


# torch.compile is optional
compile_flag = False
