# A Triton kernel is one DT207 at @triton.jit, even under @triton.autotune configs.
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit  # expect: DT207
def scale_kernel(x_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * s, mask=offs < n)


def scale(x, s):
    if x.is_cuda:
        grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)
        scale_kernel[grid](x, x.numel(), s)  # expect-guarded: DT207
        return x
    return x * s
