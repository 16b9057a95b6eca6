import torch


def sparse_mask(x):
    from xformers.sparse import SparseCSRTensor  # expect-guarded: DT201

    return SparseCSRTensor.from_dense(x)  # expect-guarded: DT202


def fused_attention(q, k, v):
    import xformers.ops as xops  # expect: DT201

    return xops.memory_efficient_attention(q, k, v)  # expect: DT202


class Layer(torch.nn.Module):
    # A parameter defaulting to False that no caller in the file turns on is an opt-in switch,
    # and so is the attribute __init__ copies it into: what runs only under it is guarded.
    def __init__(self, sparse: bool = False):
        super().__init__()
        self.sparse = sparse

    def forward(self, x):
        if self.sparse:
            return sparse_mask(x)
        return x


def attention(q, k, v, fused=False):
    if fused:
        return fused_attention(q, k, v)
    return torch.softmax(q @ k.transpose(-1, -2), -1) @ v


y = attention(1, 2, 3, fused=True)  # a caller turns `fused` on: fused_attention is on the path
