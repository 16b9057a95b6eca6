import numpy as np
import torch


def pairwise(x):
    x = x.to(torch.float64)  # expect: DT204
    acc = torch.zeros(3, dtype=torch.double, device=x.device)  # expect: DT204
    return torch.cdist(x, x), acc


y = torch.zeros(3, dtype=torch.float32)
z = np.zeros(3, dtype=np.float64)
# torch.float64 is not supported on MPS
