# A Triton kernel is one DT207 at its first decorator: @triton.autotune above @triton.jit.
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})], key=["n"])  # expect: DT207
@triton.jit
def scale_kernel(x_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * s, mask=offs < n)


def scale(x, s):
    if x.is_cuda:
        grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)
        scale_kernel[grid](x, x.numel(), s)  # expect-guarded: DT207
        return x
    return x * s
