import torch

# A float64 constant made on the CPU and cast when it is moved is no float64 on the device.
ALPHA = torch.tensor([1 / 5, 3 / 10, 4 / 5], dtype=torch.float64)


def step(y0):
    alpha = ALPHA.to(device=y0.device, dtype=y0.dtype)
    return y0 * alpha.sum()


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        # Module state moves with the model: float64 reaches the device.
        self.register_buffer("sigmas", torch.tensor([0.1, 1.0], dtype=torch.float64))  # expect: DT204
        self.scale = torch.nn.Parameter(torch.ones(2, dtype=torch.float64))  # expect: DT204


def on_device(y0):
    t = torch.zeros(3, dtype=torch.float64, device=y0.device)  # expect: DT204
    return t + torch.ones(3, dtype=torch.float64).to(y0.device)  # expect: DT204
