import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

os.environ["TORCH_CUDA_ARCH_LIST"] = "7.0;8.0;8.6"  # expect: DT302

setup(
    name="fused_ops",
    ext_modules=[
        CUDAExtension(
            "fused_ops",
            ["fused.cpp", "fused_kernel.cu"],
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "--use_fast_math"]},  # expect: DT302
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
