import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

KEEP_CUDA_BUILD = os.getenv("KEEP_CUDA_BUILD", "FALSE") == "TRUE"
ext_modules = []
if KEEP_CUDA_BUILD:
    ext_modules.append(
        CUDAExtension(name="selective_scan_cuda", sources=["selective_scan.cpp", "selective_scan_kernel.cu"])
    )

setup(name="selective", ext_modules=ext_modules, cmdclass={"build_ext": BuildExtension})
