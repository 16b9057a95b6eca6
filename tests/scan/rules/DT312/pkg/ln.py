from torch.utils.cpp_extension import load

_ext = load(name="fused_ln", sources=["csrc/ln.cpp", "csrc/ln_kernel.cu"])


def layer_norm(x, w):
    return _ext.forward(x, w)


def layer_norm_plain(x, w):
    return (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True) * w


class FusedLayerNorm:
    def __call__(self, x, w):
        return _ext.forward(x, w)
