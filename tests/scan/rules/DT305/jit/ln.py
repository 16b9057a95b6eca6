from torch.utils.cpp_extension import load

_ext = load(name="fused_ln", sources=["csrc/ln.cpp", "csrc/ln_kernel.cu"])


def layer_norm(x, w):
    return _ext.forward(x, w)  # expect: DT305
