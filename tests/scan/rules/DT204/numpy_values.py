import numpy as np
import torch


def latents(seed, device):
    # numpy's samplers and ranges make float64; moved as they are, float64 reaches the device.
    z = torch.from_numpy(np.random.RandomState(seed).randn(1, 512)).to(device)  # expect: DT204
    t = torch.tensor(np.linspace(0.0, 1.0, 10)).to(device)  # expect: DT204
    u = torch.from_numpy(np.random.randn(4)).cuda()  # expect: DT204
    # Cast on the way, or a dtype given: float32 reaches the device.
    a = torch.from_numpy(np.random.randn(4).astype(np.float32)).to(device)
    b = torch.tensor(np.linspace(0.0, 1.0, 10), dtype=torch.float32).to(device)
    c = torch.tensor(np.arange(4)).to(device)  # integers
    return z, t, u, a, b, c
