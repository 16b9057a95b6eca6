"""Build the fused GELU CUDA extension: `python setup.py install`.

Needs nvcc from a CUDA 12.x toolkit and a PyTorch built against the same CUDA
major version. The resulting module is imported by model.py as fused_gelu_cuda.
"""

import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

# A100 (8.0), A6000 / RTX 30xx (8.6) and H100 (9.0), the cards in the lab.
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "8.0;8.6;9.0")

setup(
    name="fused_gelu_cuda",
    version="0.2.0",
    ext_modules=[
        CUDAExtension(
            name="fused_gelu_cuda",
            sources=["fused_gelu.cpp", "fused_gelu_kernel.cu"],
            extra_compile_args={
                "cxx": ["-O3"],
                "nvcc": ["-O3", "-gencode", "arch=compute_80,code=sm_80"],
            },
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
