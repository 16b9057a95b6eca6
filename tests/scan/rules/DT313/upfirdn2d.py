import os

from torch.utils.cpp_extension import load

_here = os.path.dirname(__file__)
_ext = load("upfirdn2d", sources=[os.path.join(_here, "k.cpp"), os.path.join(_here, "k.cu")])  # expect: DT313


def native(x):
    return x * 2


def upfirdn2d(x):
    # The reference implementation for CPU tensors; MPS tensors take the kernel branch.
    if x.device.type == "cpu":
        return native(x)
    return _ext.upfirdn2d(x)
