import torch
from flash_attn import flash_attn_func
from apex.normalization import FusedLayerNorm

try:
    import xformers.ops as xops
except ImportError:
    xops = None


def attend(q, k, v):
    return flash_attn_func(q, k, v, causal=True)  # expect: DT202


norm = FusedLayerNorm(512)  # expect: DT202


def attend_mem(q, k, v):
    if xops is not None:
        return xops.memory_efficient_attention(q, k, v)  # expect-guarded: DT202
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)
