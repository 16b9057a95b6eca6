import os

from plugins import builder

_plugin = None


def plugin():
    global _plugin
    srcs = ["fused.cpp", "fused.cu"]  # expect: DT301
    srcs = [os.path.join(os.path.dirname(__file__), s) for s in srcs]
    _plugin = builder.get_plugin("fused_plugin", sources=srcs, extra_cuda_cflags=["--use_fast_math"])  # expect: DT301
    return _plugin


def fast(x):
    if x.is_cuda:
        ext = builder.get_optional_plugin("opt_plugin", sources=["opt.cpp"], extra_cuda_cflags=["-O3"])  # expect-guarded: DT301
        return ext.run(x)
    return x


def cpu_op():
    return builder.get_cpu_plugin("cpu_op", sources=["op.cpp"])
