from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

nvcc_args = ["-gencode", "arch=compute_80,code=sm_80"]  # expect: DT302
setup(name="ops", ext_modules=[CUDAExtension("ops", ["ops.cu"], extra_compile_args={"cxx": ["-O2"]})],
      cmdclass={"build_ext": BuildExtension})
