import torch

try:
    from flash_attn import flash_attn_func
    HAS_FLASH = True
except (ImportError, ModuleNotFoundError):
    HAS_FLASH = False


def attn(q, k, v):
    if HAS_FLASH:
        return flash_attn_func(q, k, v, causal=True)  # expect-guarded: DT202
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
