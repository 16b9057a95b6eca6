"""TinyHybrid: a small convolutional stem feeding a transformer encoder.

The model was written for the lab's A100 nodes, so the fast paths assume a CUDA
device: attention goes through FlashAttention and the MLP activation through the
fused GELU kernel in ext/. Both are optional. Without them (no GPU, or the
packages are not installed) the model uses scaled_dot_product_attention and
F.gelu, which give the same results up to floating-point rounding.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

# FlashAttention 2 is only installed on the cluster image (see requirements.txt).
try:
    from flash_attn import flash_attn_func
except ImportError:
    flash_attn_func = None

# Compiled from ext/ with `python setup.py install`; needs nvcc and a CUDA toolkit.
try:
    import fused_gelu_cuda
except ImportError:
    fused_gelu_cuda = None


class _FusedGELUFunction(torch.autograd.Function):
    """Autograd wrapper around the forward and backward kernels of ext/."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return fused_gelu_cuda.forward(x.contiguous())

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return fused_gelu_cuda.backward(grad_out.contiguous(), x)


def fused_gelu(x: torch.Tensor, use_extension: bool = True) -> torch.Tensor:
    # The kernel only accepts tensors that already live on the GPU; anything
    # else (CPU smoke tests, tensors not moved with .cuda()) takes the PyTorch path.
    if use_extension and fused_gelu_cuda is not None and x.is_cuda:
        return _FusedGELUFunction.apply(x)
    return F.gelu(x)


class FusedGELU(nn.Module):
    def __init__(self, use_extension: bool = True):
        super().__init__()
        self.use_extension = use_extension

    def forward(self, x):
        return fused_gelu(x, self.use_extension)


class ConvStem(nn.Module):
    """Two conv-BN-ReLU-pool stages: 3x16x16 images to a 4x4 grid of features."""

    def __init__(self, in_channels: int = 3, dim: int = 64):
        super().__init__()
        hidden = dim // 2
        self.layers = nn.Sequential(
            nn.Conv2d(in_channels, hidden, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(hidden, dim, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(dim),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )

    def forward(self, x):
        return self.layers(x)


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float = 0.0, use_flash: bool = True):
        super().__init__()
        if dim % heads != 0:
            raise ValueError(f"dim {dim} is not divisible by heads {heads}")
        self.heads = heads
        self.head_dim = dim // heads
        self.dropout = dropout
        self.use_flash = use_flash
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def _can_use_flash(self, x: torch.Tensor) -> bool:
        # flash_attn_func only supports half precision inputs on the GPU,
        # i.e. the --amp runs on the cluster.
        return (
            self.use_flash
            and flash_attn_func is not None
            and x.is_cuda
            and x.dtype in (torch.float16, torch.bfloat16)
        )

    def forward(self, x):
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).view(batch, tokens, 3, self.heads, self.head_dim)
        dropout = self.dropout if self.training else 0.0
        if self._can_use_flash(qkv):
            q, k, v = qkv.unbind(dim=2)  # (batch, tokens, heads, head_dim)
            out = flash_attn_func(q, k, v, dropout_p=dropout, causal=False)
        else:
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(dim=0)  # (batch, heads, tokens, head_dim)
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout)
            out = out.transpose(1, 2)
        return self.proj(out.reshape(batch, tokens, dim))


class TransformerBlock(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: int = 2, use_flash: bool = True,
                 use_fused_gelu: bool = True):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads, use_flash=use_flash)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp_ratio * dim),
            FusedGELU(use_extension=use_fused_gelu),
            nn.Linear(mlp_ratio * dim, dim),
        )

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyHybrid(nn.Module):
    """Conv stem, learned position embedding, transformer blocks, mean-pooled head.

    `portable=True` turns off both CUDA-only kernels so that the same weights run
    through plain PyTorch operators on any device.
    """

    def __init__(self, num_classes: int = 10, dim: int = 64, depth: int = 2, heads: int = 4,
                 image_size: int = 16, portable: bool = False):
        super().__init__()
        self.stem = ConvStem(3, dim)
        grid = image_size // 4
        self.pos_embed = nn.Parameter(torch.zeros(1, grid * grid, dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        self.blocks = nn.ModuleList(
            TransformerBlock(dim, heads, use_flash=not portable, use_fused_gelu=not portable)
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, images):
        x = self.stem(images)                   # (batch, dim, 4, 4)
        x = x.flatten(2).transpose(1, 2)        # (batch, 16, dim)
        x = x + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(dim=1))
