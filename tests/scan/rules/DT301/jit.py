import os

from torch.utils.cpp_extension import load, load_inline

_ext = load(name="fused_ln", sources=[os.path.join("csrc", "ln.cpp"), "csrc/ln_kernel.cu"])  # expect: DT301
_cpu = load(name="cpu_ln", sources=["csrc/ln_cpu.cpp"])
_multi = load(  # expect: DT301
    name="fused_bias",
    sources=[
        "csrc/bias.cpp",
        "csrc/bias_kernel.cu",  # expect: DT301
    ],
)
