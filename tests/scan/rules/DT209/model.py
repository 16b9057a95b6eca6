import torch
import torch.nn as nn

from ops.fused import fused_relu  # expect: DT209


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return fused_relu(self.fc(x))  # expect: DT209


def reference_relu(x):
    return torch.relu(x)
