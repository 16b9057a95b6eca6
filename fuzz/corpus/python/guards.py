import warnings

try:
    from xformers.ops import fmha
except ImportError:
    raise AssertionError("xFormers is required")


def run_cuda(x):
    from .kern import k
    k[(1,)](x)


def run(x, engine=False):
    if x.is_cuda:
        try:
            return run_cuda(x)
        except RuntimeError:
            warnings.warn("fallback")
    elif engine:
        import tensorrt as trt
        return trt.Runtime(None)
    return x
