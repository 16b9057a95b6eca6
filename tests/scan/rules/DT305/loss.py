import torch

import chamfer_cuda  # expect: DT305

try:
    import chamfer_cuda as _fast  # expect-guarded: DT305
except ImportError:
    _fast = None


def chamfer(a, b):
    return chamfer_cuda.forward(a, b)  # expect: DT305


# chamfer_cuda is built by setup.py
