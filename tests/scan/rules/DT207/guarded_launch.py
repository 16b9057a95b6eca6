import triton
import triton.language as tl


@triton.jit  # expect: DT207
def scale_kernel(x_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * s, mask=offs < n)


def scale(x, s):
    if x.is_cuda:
        scale_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), s, BLOCK=256)  # expect-guarded: DT207
        return x
    return x * s
