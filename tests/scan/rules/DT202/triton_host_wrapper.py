# A host wrapper that launches a kernel of this file is reported at the launch (DT207); the Triton
# helpers around the launch (triton.cdiv for the grid, tl.float16 for a dtype) are part of it.
# Triton used elsewhere, with no launch, is still a library use of its own.
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def scale(x):
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    dtype = tl.float16 if x.dtype == torch.float16 else tl.float32
    _scale_kernel[grid](x, n, BLOCK=1024)
    return x, dtype


def blocks(n):
    return triton.cdiv(n, 1024)  # expect: DT202
