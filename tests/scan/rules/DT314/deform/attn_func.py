# The extension's wrapper keeps a pure-PyTorch version of the kernel beside it ("for debug and
# test"): the project has the replacement, so its callers have a replacement (DT314), no dead end (DT312). The
# extension's own uses are still reported (DT305, a replacement).
import torch

import chamfer_cuda


class ChamferFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return chamfer_cuda.forward(a, b)


def chamfer_pytorch(a, b):
    return torch.cdist(a, b).min(-1).values
