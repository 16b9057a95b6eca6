# A call of a name whose import has an ImportError fallback is reported unguarded (guarded: false) by DT209; like DT202, it should be guarded (the fallback is another path).
import torch

try:
    from ops.fused import fused_relu  # expect-guarded: DT209
except ImportError:
    fused_relu = torch.relu


def act(x):
    return fused_relu(x)  # expect-guarded: DT209
